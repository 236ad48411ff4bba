"""Benchmark of the real-model-scale index-set route (docs/mathematics.md §4; docs/performance-scale.md).

    python benchmarks/bench_scale.py [--d 4096 --n 11008] [--quick] [--seed 0] [--lsqr-cap 60]

Every time is printed next to a baseline measured in the same process (the machine is
shared, so absolute seconds are noise): ``U @ U.T`` in float64 for deciding, one "pass"
(``np.abs(U).sum() + np.abs(D).sum()``) for checking. Instances are seeded Gaussians:
``generic`` (U ~ N(0,1/d), D ~ N(0,1/n)), the same in float32, and ``planted`` (a random S
with |S| = 1.25·d and ``D[:,S] = −pinv(U[S,:])``, so ``D_S U_S = −I`` up to rounding).
Plain LSQR on the Khatri–Rao operator (never materialised: each product costs 2·d²·n
flops) is the second baseline, run under a time cap.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb.search._types import SearchStatus
from absorb.search.linalg import solve_linalg
from absorb.verify.dual_bound import check_dual_bound


def timed(f: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """Best of ``repeat`` wall times, and the last result."""
    best, out = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_mib(f: Callable[[], object]) -> float:
    """Peak traced allocation (MiB) while running f — numpy reports to tracemalloc."""
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def lsqr_baseline(U: np.ndarray, D: np.ndarray, cap: float) -> tuple[float, int, float]:
    """Plain LSQR on K b = −vec(I), K = [vec(w_i u_iᵀ)], capped at about ``cap`` seconds."""
    from scipy.sparse.linalg import LinearOperator, lsqr

    n, d = U.shape
    K = LinearOperator((d * d, n), dtype=np.float64,
                       matvec=lambda b: ((D * np.ravel(b)) @ U).ravel(),
                       rmatvec=lambda y: np.einsum("ij,ij->i", D.T @ np.reshape(y, (d, d)), U))
    t0 = time.perf_counter()
    K.rmatvec(K.matvec(np.ones(n)))  # one product pair: the price of one LSQR iteration
    per_iter = time.perf_counter() - t0
    iters = max(1, int((cap - per_iter) / per_iter))
    rhs = -np.eye(d).ravel()
    sol = lsqr(K, rhs, iter_lim=iters, atol=0.0, btol=0.0)
    elapsed = time.perf_counter() - t0
    return elapsed, iters, float(sol[3] / np.linalg.norm(rhs))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--n", type=int, default=11008)
    ap.add_argument("--quick", action="store_true", help="d=1024, n=2752, short LSQR cap")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lsqr-cap", type=float, default=None, help="seconds (default 60; quick 10)")
    args = ap.parse_args(argv)
    d, n = (1024, 2752) if args.quick else (args.d, args.n)
    cap = args.lsqr_cap if args.lsqr_cap is not None else (10.0 if args.quick else 60.0)
    rng = np.random.default_rng(args.seed)
    print(f"# bench_scale d={d} n={n} seed={args.seed}  (numpy {np.__version__})")

    U = rng.standard_normal((n, d)) / math.sqrt(d)
    D = rng.standard_normal((d, n)) / math.sqrt(n)
    weights_mib = (U.nbytes + D.nbytes) / 2**20

    print(f"weights: {weights_mib:.0f} MiB (float64); baselines re-timed next to every "
          "measurement, since the machine is shared")

    rows = []

    def run(label: str, Ux: np.ndarray, Dx: np.ndarray, planted: list[int] | None) -> None:
        # Baselines in the same process, right before the measured runs: U@U.T in float64
        # for deciding, one pass over *these* arrays (their dtype) for checking.
        t_mm, _ = timed(lambda: U @ U.T, repeat=1)
        t_dec, res = timed(lambda: solve_linalg(Ux, Dx, None), repeat=2)
        t_mm = min(t_mm, timed(lambda: U @ U.T, repeat=1)[0])
        t_pass, _ = timed(lambda: np.abs(Ux).sum() + np.abs(Dx).sum(), repeat=3)
        line = {"instance": label, "status": res.status.value, "decide_s": t_dec,
                "decide_ratio": t_dec / t_mm, "reason": res.reason}
        if res.status is SearchStatus.INFEASIBLE:
            A, B = res.certificate["A"], res.certificate["B"]
            t_chk, chk = timed(lambda: check_dual_bound(Ux, Dx, None, A, B), repeat=3)
            line.update(check_s=t_chk, check_ratio=t_chk / t_pass, delta_abs=chk.absolute,
                        delta_rel=chk.relative, rank=A.shape[1], agree=chk.relative == res.bound)
        if res.status is SearchStatus.FOUND:
            line.update(residual=res.residual, size=len(res.S),
                        confirmed=planted is not None and list(res.S) == planted)
        line["peak_mib"] = peak_mib(lambda: solve_linalg(Ux, Dx, None))
        line["weights_mib"] = (Ux.nbytes + Dx.nbytes) / 2**20
        rows.append(line)
        line["mm_s"] = t_mm
        print(f"{label:>16}: {res.status.value:<10} decide {t_dec:6.2f} s = "
              f"{t_dec / t_mm:.3f}x U@U.T   peak {line['peak_mib']:.0f} MiB "
              f"({line['peak_mib'] / line['weights_mib']:.2f}x weights)", flush=True)
        if "check_s" in line:
            print(f"{'':>16}  check {line['check_s']:.3f} s = {line['check_ratio']:.2f} passes "
                  f"({t_pass:.3f} s, {Ux.dtype});"
                  f" certified delta >= {line['delta_abs']:.4f} (Frobenius) = "
                  f"{line['delta_rel']:.3e} x ||I||_F  (rank {line['rank']}, checker agrees: "
                  f"{line['agree']})")
        if "residual" in line:
            print(f"{'':>16}  |S| = {line['size']}, relative residual {line['residual']:.2e}, "
                  f"planted set confirmed: {line['confirmed']}")
        print(f"{'':>16}  {res.reason}")

    run("generic float64", U, D, None)
    run("generic float32", U.astype(np.float32), D.astype(np.float32), None)

    S = sorted(int(i) for i in rng.choice(n, size=int(1.25 * d), replace=False))
    Dp = D.copy()
    t0 = time.perf_counter()
    US = U[S]
    Dp[:, S] = -cho_solve(cho_factor(US.T @ US), US.T)  # −pinv(U_S) = −(U_SᵀU_S)⁻¹U_Sᵀ
    print(f"(planting |S| = {len(S)} took {time.perf_counter() - t0:.1f} s)")
    run("planted float64", U, Dp, S)

    t_mm, _ = timed(lambda: U @ U.T, repeat=1)
    t_lsqr, iters, rel = lsqr_baseline(U, D, cap)
    print(f"{'plain LSQR':>16}: {iters} iterations in {t_lsqr:.1f} s = {t_lsqr / t_mm:.2f}x U@U.T"
          f" (cap {cap:g} s), relative residual {rel:.4f}; no certificate")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {rss:.0f} MiB")

    print("\n| instance | verdict | decide / U@U.T (U@U.T s) | check / pass | certified δ (abs) | δ / ‖I‖_F |"
          " peak MiB (× weights) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        chk = f"{r['check_ratio']:.2f}" if "check_ratio" in r else "—"
        da = f"{r['delta_abs']:.3f}" if "delta_abs" in r else "—"
        dr = f"{r['delta_rel']:.2e}" if "delta_rel" in r else "—"
        verdict = r["status"] + (f" (res {r['residual']:.1e}, S confirmed {r['confirmed']})"
                                 if "residual" in r else "")
        print(f"| {r['instance']} | {verdict} | {r['decide_ratio']:.3f} ({r['mm_s']:.1f}) | {chk} | {da} | {dr} | "
              f"{r['peak_mib']:.0f} ({r['peak_mib'] / r['weights_mib']:.2f}×) |")
    print(f"| plain LSQR (cap {cap:g} s) | none, {iters} it., rel. residual {rel:.3f} | "
          f"{t_lsqr / t_mm:.2f} ({t_mm:.1f}) | — | — | — | — |")
    ok = all(r["status"] == ("found" if r["instance"].startswith("planted") else "infeasible")
             for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
