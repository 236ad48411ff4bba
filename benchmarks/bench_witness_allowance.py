"""The cost of the sampled witness check's rounding allowance (absorb.engine.witness).

    python benchmarks/bench_witness_allowance.py [--n 2048] [--d 256] [--repeat 3]

A ReLU block with a planted flip S (|S| = d), its exact flip witness and a wrong one (one
column of W_down off by 1e-3): ``evaluation_error(..., accept=thr)`` with the allowance and,
in the same process, with it switched off (the baseline: the measure as it was). Prints the
best of ``--repeat`` times and the ratio. The allowance runs only at points whose error
exceeds the threshold, so an exact witness should cost the same (ratio ≈ 1) and a wrong one
at most about twice (each failing point is evaluated again with its rounding bound).
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

import absorb.engine.witness as W
from absorb import Block, get_activation


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((a.n, a.d)), rng.standard_normal((a.d, a.n))
    S = list(range(a.d))
    blk = Block(U, D, get_activation("relu"), skip=-(D[:, S] @ U[S]))
    good = W.flip_block(blk, tuple(S), Fraction(1))
    Dg = good.W_down.copy()
    Dg[:, 0] *= 1 + 1e-3
    bad = good.replace(W_down=Dg)
    thr = W.eval_threshold(1e-9, a.n)
    real = W._within_rounding
    off = lambda *args, **kw: None  # noqa: E731
    for name, g in (("exact witness", good), ("wrong witness", bad)):
        best = {}
        for mode, fn in (("baseline", off), ("allowance", real)):
            W._within_rounding = fn
            times = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                err, _m = W.evaluation_error(blk, g, a.d, seed=0, accept=thr)
                times.append(time.perf_counter() - t)
            best[mode] = min(times)
        W._within_rounding = real
        print(f"{name}: baseline {best['baseline']:.3f} s, with the allowance {best['allowance']:.3f} s, "
              f"ratio {best['allowance'] / best['baseline']:.2f} (error {err:.3g} against {thr:.3g})")


if __name__ == "__main__":
    main()
