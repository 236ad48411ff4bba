"""Constructive side of the open problem in the plane: fit residual-free ReLU stacks of the
same widths to the random stacks that no proved result decides (numerical evidence only).

    python benchmarks/search_plane.py [--widths 4,4] [--count 4] [--restarts 8] [--maxiter 1000]

Targets are the `bench_plane` stacks (seeds from --seed) that `absorb check` leaves
`unknown`; for each, the best relative error of `absorb explore-depth`'s L-BFGS fit (the
constructed start and --restarts random ones) and the target's winding number on the circle.
A fit reaching rounding level would be a candidate counterexample, to be confirmed exactly.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_plane import random_stack  # benchmarks/ is on sys.path when run as a script

from absorb import Verdict, decide
from absorb.explore.depth import _best_fit
from absorb.plane import stack_map


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="4,4")
    ap.add_argument("--count", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=8)
    ap.add_argument("--maxiter", type=int, default=1000)
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    if len(set(widths)) != 1:
        raise SystemExit("search_plane: the fit uses one width for every block (e.g. --widths 4,4)")
    found, seed = 0, args.seed
    rng = np.random.default_rng(0)
    while found < args.count:
        st = random_stack(seed, widths)
        seed += 1
        if decide(st).verdict is not Verdict.UNKNOWN:
            continue
        found += 1
        F = stack_map([(b.W_up, b.W_down, b.skip) for b in st.blocks])
        X, Xt = rng.standard_normal((256, 2)), rng.standard_normal((256, 2))
        t0 = time.perf_counter()
        tr, te, start, _, _ = _best_fit(list(st.blocks), widths[0], 2, args.restarts, rng, (X, st(X), Xt, st(Xt)), "relu", args.maxiter)
        print(f"seed {seed - 1}: winding {F.winding_number()}, kink rays {len(F.kink_rays())}, best fit {tr:.2e} "
              f"(held out {te:.2e}, {start}, {time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
