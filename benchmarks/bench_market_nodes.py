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

``--gso``: instead, the seconds of the exact Gram–Schmidt checks that every complete
enumeration now rests on (``_kernel.certify_float_gso`` on the search's reduced kernel basis,
and the checker's own ``verify._lattice._float_ok`` on its basis, both data sets of the
walks: ∞-norm and ℓ2-only), next to one float64 QR of the same basis (the baseline, same
process), with the load average.
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
    ap.add_argument("--gso", action="store_true", help="time the exact Gram–Schmidt checks instead")
    args = ap.parse_args(argv)
    print(f"# python {' '.join(sys.argv)}")
    if args.gso:
        return gso_table(args.ms, args.seeds)
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


def gso_table(ms: list[int], seeds: int) -> int:
    """Seconds of the exact checks of the float Gram–Schmidt data, per market-split instance."""
    import os

    import numpy as np
    from fpylll import BKZ, GSO, LLL, IntegerMatrix

    from absorb.search import _kernel
    from absorb.verify import _lattice as vl

    print("| m | n | seed | k × N | QR s (baseline) | search check s | × QR | checker check s | × QR | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in ms:
        for s in range(seeds):
            seed = 100 * m + s
            U, D, T = market_split(m, seed, "cd")
            plan = lat.lattice_plan(U, D, T, tol=1e-9, budget=60.0)
            B = [list(plan.basis[i]) for i in range(plan.basis.nrows)]
            k, N = len(B), len(B[0])
            w0 = time.perf_counter()
            mu, rr, Bs = _kernel._float_gso(B)
            qr = time.perf_counter() - w0
            yb = np.abs(Bs).sum(axis=1) / rr * (1 + lat._ENUM_MARGIN)
            w0 = time.perf_counter()
            why = _kernel.certify_float_gso(B, mu, rr, Bs, yb, N, lat._ENUM_MARGIN)
            ours = time.perf_counter() - w0
            assert why == "", why
            K, t, _, _ = vl._integer_data(U, D, T)  # the checker's own basis, as it builds it
            M = IntegerMatrix.from_matrix(vl._l0_basis(K, t))
            LLL.reduction(M)
            BKZ.reduction(M, BKZ.Param(block_size=20, max_loops=4, flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS))
            G = GSO.Mat(M)
            G.update_gso()
            kk = M.nrows
            cmu = np.array([[G.get_mu(i, j) if j < i else float(i == j) for j in range(kk)] for i in range(kk)])
            CB = [list(M[i]) for i in range(kk)]
            CBs = np.array(CB, dtype=np.float64)
            for i in range(kk):
                CBs[i] -= cmu[i, :i] @ CBs[:i]
            w0 = time.perf_counter()
            why = vl._float_ok(CB, cmu, (CBs * CBs).sum(axis=1), CBs, N)
            theirs = time.perf_counter() - w0
            assert why == "", why
            print(f"| {m} | {N - 1} | {seed} | {k} × {N} | {qr:.4f} | {ours:.2f} | {ours / qr:.0f} | {theirs:.2f} "
                  f"| {theirs / qr:.0f} | {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
