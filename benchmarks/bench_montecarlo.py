"""Throughput of the vectorised Monte Carlo decisions against the single-instance engine.

    python benchmarks/bench_montecarlo.py [--threads 2] [--quick]

Prints, from one run: instances per second of ``absorb.engine.decide_block`` in a Python
loop at d = 3, n = 9; of the vectorised decision (``decide_batch`` + ``degenerate_batch``)
on the same kind of weights, and of a whole sweep cell (sampling, decisions, re-checks,
statistics); their ratio; and instances per second at d = 256, n = 1024 (dual route).
Targets (docs/genericity.md): ratio ≥ 50, ≥ 1e5 instances/s at d = 3, n = 9 on 2 cores,
several instances/s at d = 256, n = 1024.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads (set before numpy loads; default 2)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

    import numpy as np

    from absorb import Block, decide_block, get_activation
    from absorb.montecarlo import Cell, decide_batch, degenerate_batch, run_cell, sample_weights

    rng = np.random.default_rng(0)
    relu = get_activation("relu")
    d, n = 3, 9
    loops = 100 if args.quick else 400
    U, D = sample_weights(rng, "gaussian", loops, n, d)
    decide_block(Block(U[0], D[0], relu))  # warm the symbolic caches
    t = time.perf_counter()
    for b in range(loops):
        decide_block(Block(U[b], D[b], relu))
    loop_rate = loops / (time.perf_counter() - t)

    B = 1 << (14 if args.quick else 17)
    U, D = sample_weights(rng, "gaussian", B, n, d)
    decide_batch(U[:256], D[:256])
    best = 0.0
    for _ in range(3):
        t = time.perf_counter()
        res = decide_batch(U, D)
        degenerate_batch(U, D)
        best = max(best, B / (time.perf_counter() - t))
    assert (res.status == 1).sum() > 0.99 * B
    N = 1 << (15 if args.quick else 18)
    cell = Cell(d, n, "gaussian", "relu", N, 0)
    t = time.perf_counter()
    run_cell(cell, index=0, seed=0, batch=1 << 14)
    cell_rate = N / (time.perf_counter() - t)

    dl, nl, m = 256, 1024, (2 if args.quick else 8)
    Ul, Dl = sample_weights(rng, "gaussian", m, nl, dl)
    decide_batch(Ul[:1], Dl[:1])
    t = time.perf_counter()
    for b in range(m):
        r = decide_batch(Ul[b:b + 1], Dl[b:b + 1])
        degenerate_batch(Ul[b:b + 1], Dl[b:b + 1])
    large_rate = m / (time.perf_counter() - t)

    print(f"threads (BLAS)                                   {args.threads}")
    print(f"decide_block loop, d=3 n=9                       {loop_rate:12.0f} instances/s")
    print(f"vectorised decide_batch+degenerate, d=3 n=9      {best:12.0f} instances/s  (batch {B})")
    print(f"whole sweep cell (sample, decide, stats), d=3 n=9 {cell_rate:11.0f} instances/s  (N = {N})")
    print(f"ratio vectorised / loop                          {best / loop_rate:12.0f} x")
    print(f"ratio sweep cell / loop                          {cell_rate / loop_rate:12.0f} x")
    print(f"dual route, d=256 n=1024                         {large_rate:12.2f} instances/s  (lower bound {r.lower_bound[0]:.3f}, {r.route})")


if __name__ == "__main__":
    main()
