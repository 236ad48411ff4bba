"""Benchmark of the degree-2 / gated skeletons' Gram route (docs/results/skeleton2.md).

    python benchmarks/bench_gram.py [--d 64 --n 256] [--gated] [--seed 0]

Seeded Gaussian blocks (U, D ~ N(0, 1), biases N(0, 1), skip = I). Every time is printed next
to a baseline measured in the same process (the machine is shared, so absolute seconds are
noise): one float64 ``G @ G`` of the n×n Gram matrix (n³ multiply-adds). Three phases:
the producer's Gram matrix and error bound, its λ_min lower bound (eigvalsh + Cholesky +
residual), and the checker's Sylvester-inertia proof of the recorded μ.
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb import Block, get_activation
from absorb.engine import skeleton2 as sk2
from absorb.verify import _skeleton2 as vsk2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--gated", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    d, n = a.d, a.n
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    if a.gated:
        blk = Block(U, D, get_activation("silu"), W_gate=rng.standard_normal((n, d)), b_gate=rng.standard_normal(n),
                    b_up=rng.standard_normal(n))
        build, check = sk2.gram_gated, vsk2.gram_gated
    else:
        blk = Block(U, D, get_activation("relu2"), b_up=rng.standard_normal(n))
        build, check = sk2.gram_skeleton2, vsk2.gram_s2
    blk = blk.float64()
    t = time.perf_counter()
    gram = build(blk)
    t_build = time.perf_counter() - t
    assert gram is not None
    t = time.perf_counter()
    _ = gram[0] @ gram[0]
    t_base = time.perf_counter() - t
    t = time.perf_counter()
    res = sk2.gram_route(gram, blk.M, 1e-9)
    t_route = time.perf_counter() - t
    print(f"d = {d}, n = {n}, {'gated' if a.gated else 'ReLU²'}: baseline G@G {t_base:.3f} s")
    print(f"  build Ĝ, E   {t_build:8.3f} s  ({t_build / t_base:6.2f}× baseline)")
    print(f"  gram route   {t_route:8.3f} s  ({t_route / t_base:6.2f}× baseline)  -> "
          f"{None if res is None else (res.status.value, res.bound)}")
    if res is None:
        return
    mu = Fraction(res.certificate["mu"])
    lam = float(np.linalg.eigvalsh(gram[0])[0])
    print(f"  μ = {float(mu):.4g}, computed λ_min = {lam:.4g} (μ/λ = {float(mu) / lam:.3f})")
    t = time.perf_counter()
    bound, why = vsk2.gram_bound(check(blk), res.certificate["mu"], blk.M)
    t_check = time.perf_counter() - t
    print(f"  checker      {t_check:8.3f} s  ({t_check / t_base:6.2f}× baseline)  -> bound {bound} {why}")


if __name__ == "__main__":
    main()
