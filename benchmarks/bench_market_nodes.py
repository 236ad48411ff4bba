"""Node counts of the market-split proof: ℓ2 against ℓ2 + ∞-norm (Hölder) pruned enumeration.

Usage::

    python benchmarks/bench_market_nodes.py                  # m = 5, 6, 7; seeds 100·m + 0..2
    python benchmarks/bench_market_nodes.py --ms 7 --seeds 5 --l2   # also fplll's ℓ2 count

For each Cornuéjols–Dawande instance (``bench_narrow.market_split``, ``cd``: right side
⌊Σ/2⌋) it builds the search's kernel lattice (``lattice.lattice_plan``: LLL, then BKZ up to
30 within a 60 s budget), prints the Gaussian-heuristic estimate of the plain ℓ2
enumeration at radius √(n + 1), with ``--l2`` fplll's actual ℓ2 node count, and the nodes,
CPU seconds and nodes a CPU second of the complete ∞-norm pruned enumeration
(``absorb.search._kernel.holder_enumerate``, re-exported by ``lattice``: every solution, not only the first; one thread a core).
CPU seconds (process time, all threads) and wall seconds: on a shared machine the CPU
seconds are the comparable figure.
The last lines fit log(nodes) against m and extrapolate to the next m.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb.search import lattice as lat
from benchmarks.bench_narrow import market_split


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=int, nargs="+", default=[5, 6, 7])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--l2", action="store_true", help="also fplll's complete ℓ2 enumeration (m = 7: ~10^9 nodes)")
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds per enumeration")
    args = ap.parse_args(argv)
    print(f"# python {' '.join(sys.argv)}")
    print(f"# numba: {'yes' if lat._jitted() is not None else 'no (plain Python: slow)'}")
    warm = market_split(3, 0, "cd")  # compile (or load) numba's enumeration once, untimed
    plan = lat.lattice_plan(*warm, tol=1e-9)
    lat.holder_enumerate([list(plan.basis[i]) for i in range(plan.basis.nrows)], time.perf_counter() + 60)
    print("| m | n | seed | reduction | ℓ2 estimate | ℓ2 nodes | ∞-norm nodes | solutions | CPU s | nodes/CPU s | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    per_m: dict[int, list[float]] = {}
    for m in args.ms:
        for s in range(args.seeds):
            seed = 100 * m + s
            U, D, T = market_split(m, seed, "cd")
            plan = lat.lattice_plan(U, D, T, tol=1e-9, budget=60.0)
            assert plan.route == "kernel", plan.why_not
            l2_est = lat._enum_nodes(plan.basis, float(plan.R2) * (1 + lat._ENUM_MARGIN))
            l2 = "-"
            if args.l2:
                _, nodes, why = lat._enumerate(plan.basis, plan.R2, time.perf_counter() + args.budget)
                l2 = f"{nodes:.3g}" + (" (stopped)" if why else "")
            B = [list(plan.basis[i]) for i in range(plan.basis.nrows)]
            c0, w0 = time.process_time(), time.perf_counter()
            vecs, nodes, why = lat.holder_enumerate(B, time.perf_counter() + args.budget)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            sols = "stopped" if vecs is None else str(len(vecs))
            if vecs is not None:
                per_m.setdefault(m, []).append(nodes)
            print(f"| {m} | {D.shape[1]} | {seed} | {plan.reduction} | {l2_est:.3g} | {l2} | {nodes:.3g} | {sols} "
                  f"| {cpu:.2f} | {nodes / max(cpu, 1e-9):.3g} | {wall:.2f} |", flush=True)
    ms = sorted(per_m)
    if len(ms) >= 2:
        xs = [float(m) for m in ms]
        ys = [sum(math.log(v) for v in per_m[m]) / len(per_m[m]) for m in ms]  # geometric means
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        nxt = ms[-1] + 1
        print("geometric-mean ∞-norm nodes per m: " + ", ".join(f"m={m}: {math.exp(y):.3g}" for m, y in zip(ms, ys)))
        print(f"growth ×{math.exp(slope):.1f} per unit of m; extrapolated m={nxt}: "
              f"{math.exp(my + slope * (nxt - mx)):.3g} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
