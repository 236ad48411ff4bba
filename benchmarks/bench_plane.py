"""Held-out random ReLU stacks in the plane (d = 2): how many `absorb check` decides, by which
result, how long each takes, and whether `absorb verify` accepts every certificate; planted
stacks of absorbable blocks as the control (each must come out absorbable).

    python benchmarks/bench_plane.py [--count 50] [--seed 1000]

Weights as in `absorb explore-depth`: W_up ~ N(0, 1/d), W_down ~ N(0, 1/n); seeds start at
--seed (the tests use seeds below 100). Prints one row per (widths): the verdict counts, the
median and max decision time, and the verification result.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import Counter

import numpy as np

from absorb import Block, Stack, decide, get_activation
from absorb.certificate import build_certificate
from absorb.verify.checker import verify_certificate

RELU = get_activation("relu")


def random_stack(seed: int, widths: list[int], d: int = 2) -> Stack:
    rng = np.random.default_rng(seed)
    return Stack(tuple(Block(rng.standard_normal((n, d)) / math.sqrt(d), rng.standard_normal((d, n)) / math.sqrt(n), RELU,
                             name=f"blocks.{i}") for i, n in enumerate(widths)))


def planted_stack(seed: int, widths: list[int], d: int = 2) -> Stack:
    """Every block absorbable: D[:, S] = −U[S]⁻¹ on the first d units (a flip witness exists)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for i, n in enumerate(widths):
        U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
        D[:, :d] = -np.linalg.inv(U[:d])
        blocks.append(Block(U, D, RELU, name=f"blocks.{i}"))
    return Stack(tuple(blocks))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()
    cases = [("random", [2, 2]), ("random", [3, 3]), ("random", [2, 2, 2]), ("random", [3, 3, 3]), ("random", [4, 2]),
             ("random", [4, 4]), ("random", [4, 4, 4]), ("random", [5, 2]), ("random", [5, 5]), ("planted", [2, 2]),
             ("planted", [3, 3]), ("planted", [4, 4])]
    print(f"{'stacks':>8} {'widths':>10}  verdicts (theorem)                          median s   max s  verified")
    for kind, widths in cases:
        counts: Counter[str] = Counter()
        times, verified = [], 0
        for k in range(args.count):
            st = (random_stack if kind == "random" else planted_stack)(args.seed + k, widths)
            t0 = time.perf_counter()
            dec = decide(st)
            times.append(time.perf_counter() - t0)
            counts[f"{dec.verdict.value} ({dec.theorem.value})"] += 1
            rep = verify_certificate(build_certificate(dec, st, seed=0).to_json(), st)
            verified += bool(rep.accepted and not rep.not_rechecked)
        text = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        print(f"{kind:>8} {str(widths):>10}  {text:<44} {statistics.median(times):8.3f} {max(times):7.3f}  "
              f"{verified}/{args.count}")


if __name__ == "__main__":
    main()
