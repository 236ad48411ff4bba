"""Benchmark of the narrow regime (n > d²): our portfolio against Z3 and HiGHS baselines.

Usage::

    python benchmarks/bench_narrow.py            # d ∈ {2,3,4}, n ∈ {24,32,48}, 3 seeds, 60 s
    python benchmarks/bench_narrow.py --stretch  # also n = 64
    python benchmarks/bench_narrow.py --quick    # about a minute
    python benchmarks/bench_narrow.py --widths 64 --seeds 1   # one width only

For each seeded instance (planted: Gaussian U, a random S with |S| ≥ d and
D[:,S] = −pinv(U[S]); generic: Gaussian U, D) it runs, in this process and under the same
budget, the ``auto`` portfolio and the baselines ``z3`` (If-sum over rationals), ``z3-pb``
(pseudo-Boolean) and ``milp`` (HiGHS).  A run under 0.1 s is repeated (the median of 5 is
kept), for every method alike.  It prints per class the median time of each method
(an unsolved run counts as the budget), the solved counts, the speed-up of ``auto`` over the
best of {Z3-PB, HiGHS} on the instances where those finish, and the peak memory (tracemalloc
for ``auto``, peak RSS of the process).  HiGHS "infeasible" is a floating-point claim, not a
proof: it counts as *finished* for the baseline's timing (marked ``*``) but never as a verdict.

A baseline that used the whole budget on every seed of a class is not run again on the same
(d, kind) at larger n (marked ``skip``, counted unsolved): instances only get harder with n.

Exit status 1 if two methods give contradictory verdicts (found vs infeasible) on one
instance, or if any method calls a planted instance infeasible.

Two further tables (each alone, instead of the one above)::

    python benchmarks/bench_narrow.py --lattice [--quick]   # planted |S| = n/2, d ≤ 4, n to 256
    python benchmarks/bench_narrow.py --lattice --dims 2 --widths 128 256 --methods auto cp-sat   # a part of it
    python benchmarks/bench_narrow.py --lattice --dims 2 3 4 --widths 128 192 256 --lattice-seeds 8 --methods auto
    python benchmarks/bench_narrow.py --market [--quick]    # Cornuéjols–Dawande market split
    python benchmarks/bench_narrow.py --market --ms 6 7 --methods auto lattice   # a part of it

``--lattice``: planted sets of exactly n/2 columns (D[:,S] = −pinv(U[S])), seeds
``1000·d + n + s``, (d, n) in (2, 64), (2, 96), (2, 128), (2, 256), (3, 128), (4, 128),
(4, 256) (``--dims``/``--widths`` keep some; both given, every (d, n) of them, with
``--lattice-seeds`` seeds each, as in the third command above); methods ``auto``,
``lattice`` (LLL/BKZ alone), ``milp`` (HiGHS), ``z3-pb`` and, when ``ortools`` is
importable, ``cp-sat`` (the backend
``method="cp-sat"``: one worker, the same entrywise box as HiGHS with coefficients scaled to
integers, a finder only; ``auto`` gives it a slice where MITM cannot run).
``--market``: m rows of coefficients uniform in 0..99 and n = 10(m − 1) columns (numpy
``default_rng(seed)``, seeds ``100·m``, and for ``cd`` m = 8 also seed 821); ``cd``: the
original right-hand side ⌊Σ_i a_ji / 2⌋ (seed 400 at m = 4 has no solution, seeds 500–800
have one; at m = 8, n = 70 every seed of 800–824 has one but 821); ``planted``: the
right-hand side A x of a random 0/1 x (``default_rng(seed + 50)``); ``shifted``
(``--kinds``): ⌊Σ_i a_ji / 2⌋ + (−1)^j·SHIFT (SHIFT = 200: the rows' targets pulled apart;
m = 8 seeds 800 and 801 have no solution, and the LP relaxation does not show it).
As an index-set problem: U = ones (n×1), D = A, T = b (m×1), so K = A.  CP-SAT gets the
exact integer equations.  A row with an ``infeasible`` verdict also gets the checker's own
lattice enumeration (``verify``: seconds, on max(30 s, 10× the search's seconds))::

    python benchmarks/bench_narrow.py --market --ms 8 --kinds cd --market-seeds 821 --methods auto --budget 3000
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb.search import SearchStatus, find_index_set

OURS = "auto"
BASELINES = ("z3", "z3-pb", "milp")


def planted(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    k = int(rng.integers(d, n))
    S = np.sort(rng.choice(n, size=k, replace=False))
    D[:, S] = -np.linalg.pinv(U[S])
    return U, D, -np.eye(d)


def generic(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((d, n)), -np.eye(d)


#: a run shorter than this (seconds) is timed REPEATS times and the median kept: at a few
#: milliseconds one timing moves by tens of percent between runs (both sides' ratios did)
REPEAT_BELOW = 0.1
REPEATS = 5


def run_one(method: str, U, D, T, budget: float, track: bool) -> dict:
    """Time one method on one instance (the median of REPEATS runs when one takes under
    REPEAT_BELOW seconds); with ``track``, another (untimed) run measures peak traced memory.
    ``verdicts`` holds every run's status, so that a method contradicting itself between
    repeats is caught like two methods contradicting each other."""
    times, verdicts = [], set()
    while True:
        t0 = time.perf_counter()
        res = find_index_set(U, D, T, tol=1e-9, timeout=budget, method=method, seed=0)
        times.append(time.perf_counter() - t0)
        verdicts.add(res.status.value)
        if times[0] >= REPEAT_BELOW or len(times) == REPEATS:
            break
    wall = statistics.median(times)
    peak = 0
    if track:
        tracemalloc.start()
        find_index_set(U, D, T, tol=1e-9, timeout=budget, method=method, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    claim = (res.certificate or {}).get("highs") == "infeasible"
    status = res.status.value
    finished = res.status is not SearchStatus.UNKNOWN or claim
    return {"status": status, "verdicts": verdicts, "claim": claim, "time": wall,
            "finished": finished and wall <= budget * 1.05, "peak": peak, "by": res.method}


def calibration() -> str:
    """Two fixed reference timings, so that tables from different runs (or machines) can be
    compared: the seconds of each method move with the machine, the ratios much less."""
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**60, size=2**20)
    A = rng.standard_normal((1000, 1000))

    def best(f) -> float:
        return min(_timed(f) for _ in range(5))

    return (f"np.sort of 2^20 int64 {best(lambda: np.sort(keys)) * 1e3:.1f} ms, "
            f"1000x1000 float64 matmul {best(lambda: A @ A) * 1e3:.1f} ms")


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def fmt_time(times: list[float], solved: int, budget: float) -> str:
    med = statistics.median(times)
    return f">{budget:g}" if solved * 2 <= len(times) and med >= budget * 0.99 else f"{med:.2f}"


def planted_half(d: int, n: int, seed: int):
    """Gaussian U, D with exactly n/2 columns planted (the lattice regime's hard case)."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    S = np.sort(rng.choice(n, size=n // 2, replace=False))
    D[:, S] = -np.linalg.pinv(U[S])
    return U, D, -np.eye(d)


#: the "shifted" market split's offset k: b_j = ⌊Σ_i a_ji / 2⌋ + (−1)^j·k
SHIFT = 200
#: market-split rows added to the default table: the one cd m = 8 seed of 800–824 without a
#: solution (the others all have one), so that the table holds an infeasibility proof at m = 8
INFEASIBLE_SEEDS = {("cd", 8): [821]}


def market_split(m: int, seed: int, kind: str):
    """A Cornuéjols–Dawande instance as (U, D, T) = (ones, A, b): K = A, t = b (``kind``:
    ``cd``, ``planted`` or ``shifted``, the right side ⌊Σ/2⌋ + (−1)^j·SHIFT in row j)."""
    n = 10 * (m - 1)
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m, n))
    if kind == "cd":
        b = A.sum(axis=1) // 2
    elif kind == "shifted":
        b = A.sum(axis=1) // 2 + SHIFT * (-1) ** np.arange(m)
    else:
        x = np.random.default_rng(seed + 50).integers(0, 2, size=n)
        b = A @ x
    return np.ones((n, 1)), A.astype(np.float64), b.astype(np.float64)[:, None]


def cpsat_exact(U, D, T, budget: float) -> dict:
    """OR-tools CP-SAT (2 workers) on the exact integer rows K b = t (market split): a
    baseline of this benchmark only (the backend ``method="cp-sat"`` takes the rounded box of
    every instance, and its 'infeasible' is no proof; here the model is exact, so it is)."""
    from ortools.sat.python import cp_model

    from absorb.search import relative_residual
    from absorb.search._common import khatri_rao

    K, t = khatri_rao(U, D), T.ravel()
    n = K.shape[1]
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}") for i in range(n)]
    for row, rhs in zip(K, t):
        model.add(sum(int(a) * xi for a, xi in zip(row, x)) == int(rhs))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = budget
    solver.parameters.num_workers = 2
    t0 = time.perf_counter()
    st = solver.solve(model)
    wall = time.perf_counter() - t0
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        S = tuple(i for i in range(n) if solver.value(x[i]))
        ok = relative_residual(U, D, T, S) <= 1e-9
        return {"status": "found" if ok else "unknown", "time": wall, "finished": ok}
    if st == cp_model.INFEASIBLE:  # exact integer model: CP-SAT's proof
        return {"status": "infeasible", "time": wall, "finished": True}
    return {"status": "unknown", "time": wall, "finished": False}


def _have_ortools() -> bool:
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except ImportError:
        return False
    return True


def extra_table(which: str, quick: bool, budget: float | None, only: list[str] | None = None,
                ms: list[int] | None = None, kinds: list[str] | None = None,
                market_seeds: list[int] | None = None, dims: list[int] | None = None,
                widths: list[int] | None = None, lattice_seeds: int | None = None, first_seed: int = 0) -> int:
    """The --lattice or --market table: one row per instance, seconds per method (``only``:
    these methods of auto, lattice, milp, z3-pb, cp-sat; ``dims``, ``widths``: --lattice
    sizes with these d and n only, or, both given, every (d, n) of them; ``lattice_seeds``:
    seeds a --lattice size (default 2), s = ``first_seed``, … (held-out seeds: 8); ``ms``: these market sizes m;
    ``kinds``: these market right sides; ``market_seeds``: these seeds instead of 100·m).
    An ``infeasible`` row also gets the checker's seconds (``verify._lattice``, its own
    enumeration, on a budget of max(30 s, 10× the slowest method that said infeasible))."""
    # --lattice: CP-SAT is the backend method="cp-sat"; --market: the exact integer model above
    backends = ("auto", "lattice", "milp", "z3-pb") + (("cp-sat",) if which == "lattice" and _have_ortools() else ())
    methods = [m for m in backends if only is None or m in only]
    have_cp = which == "lattice" and "cp-sat" in methods or (
        which == "market" and _have_ortools() and (only is None or "cp-sat" in only))
    if which == "lattice":
        sizes = [(3, 128), (4, 128)] if quick else [(2, 64), (2, 96), (2, 128), (2, 256), (3, 128), (4, 128),
                                                     (4, 256)]
        sizes = [(d, n) for d in dims for n in widths] if dims and widths else \
            [(d, n) for d, n in sizes if (dims is None or d in dims) and (widths is None or n in widths)]
        seeds = lattice_seeds or (1 if quick else 2)
        budget = budget or (10.0 if quick else 60.0)
        cases = [(f"planted d={d} n={n}", 1000 * d + n + s, planted_half(d, n, 1000 * d + n + s))
                 for d, n in sizes for s in range(first_seed, first_seed + seeds)]
    else:
        ms = ms or ([4, 5] if quick else [4, 5, 6, 7, 8])
        budget = budget or (10.0 if quick else 300.0)
        cases = [(f"{kind} m={m} n={10 * (m - 1)}", seed, market_split(m, seed, kind))
                 for m in ms for kind in (kinds or ["cd", "planted"])
                 for seed in (market_seeds or [100 * m] + INFEASIBLE_SEEDS.get((kind, m), []))]
    U0, D0, T0 = planted(2, 8, 0)
    for m in methods:  # warm-up (imports)
        find_index_set(U0, D0, T0, method=m, timeout=5.0)
    if _have_ortools():  # auto imports ortools (~1 s, pandas included) at its first CP-SAT step
        import ortools.sat.python.cp_model  # noqa: F401
    print(f"# bench_narrow --{which}: budget {budget:g}s, tol 1e-9, CP-SAT {'on' if have_cp else 'not selected' if _have_ortools() else 'not installed'}")
    print(f"# python {' '.join(sys.argv)}")
    print(f"# machine speed: {calibration()}")
    cols = methods + (["cp-sat"] if have_cp and which == "market" else []) + (["verify"] if which == "market" else [])
    print("| instance | seed | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    failures = []
    for name, seed, (U, D, T) in cases:
        cells, verdicts, proofs = [], set(), []
        for m in methods:
            t0 = time.perf_counter()
            res = find_index_set(U, D, T, tol=1e-9, timeout=budget, method=m, seed=0)
            wall = time.perf_counter() - t0
            verdicts.add(res.status.value)
            if res.status is SearchStatus.INFEASIBLE:
                proofs.append((wall, res.bound))
            by = f" [{res.method}]" if m == "auto" else ""
            nodes = (res.certificate or {}).get("nodes") if res.status is SearchStatus.INFEASIBLE else None
            how = f" ({nodes:.3g} nodes)" if isinstance(nodes, (int, float)) else ""
            cells.append(f"{wall:.2f} {res.status.value}{by}{how}" if res.status is not SearchStatus.UNKNOWN
                         else f"{wall:.2f} unknown")
        if have_cp and which == "market":
            r = cpsat_exact(U, D, T, budget)
            verdicts.add(r["status"])
            cells.append(f"{r['time']:.2f} {r['status']}")
        if which == "market":
            cells.append(_verify_cell(U, D, T, proofs))
        if {"found", "infeasible"} <= verdicts or (name.startswith("planted") and "infeasible" in verdicts):
            failures.append(f"{name} seed={seed}: {sorted(verdicts)}")
        print(f"| {name} | {seed} | " + " | ".join(cells) + " |", flush=True)
    for f in failures:
        print("DISAGREEMENT:", f)
    return 1 if failures else 0


#: --cpsat-work: a search that has not found the set after this much work is a miss
CPSAT_WORK_CAP = 20.0


def cpsat_work_table(dims: list[int], widths: list[int], seeds: int, first: int, k: int) -> int:
    """CP-SAT's work to the planted set (``max_deterministic_time`` units, the unit its rounds
    are measured in: it does not move with the machine's load), one search per CP-SAT seed
    0..k-1 with ``solve_cpsat``'s settings (search c's LP level too) and its seed's LP-vertex hint; "miss" past
    :data:`CPSAT_WORK_CAP`. The last column is the lesser of seeds 0 and 1 (auto's round 0 on
    two idle cores runs those two side by side)."""
    from ortools.sat.python import cp_model

    import absorb.search.cpsat as cs
    from absorb.search._common import khatri_rao

    print(f"# bench_narrow --lattice --cpsat-work {k}: work units to the set, cap {CPSAT_WORK_CAP:g}")
    print(f"# python {' '.join(sys.argv)}")
    print("| instance | seed | " + " | ".join(f"CP-SAT seed {c}" for c in range(k)) + " | lesser of 0, 1 |")
    print("|---|---|" + "---|" * (k + 1))
    for d in dims:
        for n in widths:
            for s in range(first, first + seeds):
                seed = 1000 * d + n + s
                U, D, T = planted_half(d, n, seed)
                model, x = cs._model(cp_model, U, D, T, 1e-9)
                hint = cs._lp_vertex(khatri_rao(U, D), T.ravel().astype(np.float64))
                works = []
                for c in range(k):
                    model.clear_hints()
                    for xi, bi in zip(x, hint(c)):
                        model.add_hint(xi, bi)
                    solver = cp_model.CpSolver()
                    solver.parameters.num_workers = cs.WORKERS
                    solver.parameters.linearization_level = cs.linearization_level(n, c)
                    solver.parameters.random_seed = c
                    solver.parameters.max_deterministic_time = CPSAT_WORK_CAP
                    found = solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
                    works.append(solver.deterministic_time if found else math.inf)
                cells = [f"{w:.2f}" if math.isfinite(w) else "miss" for w in works + [min(works[:2])]]
                print(f"| planted d={d} n={n} | {seed} | " + " | ".join(cells) + " |", flush=True)
    return 0


def _verify_cell(U, D, T, proofs: list[tuple[float, float]]) -> str:
    """The checker's own lattice enumeration on the smallest bound an infeasible verdict
    recorded, on max(30 s, 10× the slowest such verdict's seconds) as `absorb verify` allows: its
    seconds and outcome."""
    if not proofs:
        return "-"
    from absorb.verify._lattice import LatticeResult, lattice_no_set_closer

    budget = max(30.0, 10 * max(w for w, _ in proofs))  # as `absorb verify` gives its lattice check
    t0 = time.perf_counter()
    chk = lattice_no_set_closer(U, D, T, min(b for _, b in proofs), budget=budget)
    wall = time.perf_counter() - t0
    if isinstance(chk, LatticeResult):
        return f"{wall:.2f} {'confirmed' if not chk.closer else 'REJECTED'} ({chk.nodes:.3g} nodes)"
    return f"{wall:.2f} declined ({chk})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n in {24, 32}, 1 seed, 5 s budget")
    ap.add_argument("--stretch", action="store_true", help="also n = 64")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--dims", type=int, nargs="+", help="d values (default 2 3 4; --lattice: filters its sizes)")
    ap.add_argument("--widths", type=int, nargs="+", help="n values (default 24 32 48; --lattice: filters its sizes)")
    ap.add_argument("--baselines", nargs="*", default=list(BASELINES), choices=BASELINES,
                    help="baselines to run (default: all)")
    ap.add_argument("--lattice", action="store_true",
                    help="only the planted |S| = n/2 table (d ≤ 4, n to 256), with the lattice backend")
    ap.add_argument("--market", action="store_true", help="only the market-split table")
    ap.add_argument("--methods", nargs="+", choices=("auto", "lattice", "milp", "z3-pb", "cp-sat"),
                    help="--lattice/--market: only these methods")
    ap.add_argument("--ms", type=int, nargs="+", help="--market: only these sizes m (n = 10(m − 1))")
    ap.add_argument("--kinds", nargs="+", choices=("cd", "planted", "shifted"),
                    help="--market: these right sides (default: cd planted)")
    ap.add_argument("--market-seeds", type=int, nargs="+", help="--market: these seeds (default: 100·m)")
    ap.add_argument("--lattice-seeds", type=int, help="--lattice: seeds a size (default 2)")
    ap.add_argument("--lattice-first-seed", type=int, default=0,
                    help="--lattice: the first s of the seeds 1000·d + n + s (default 0; 8: held-out seeds)")
    ap.add_argument("--cpsat-work", type=int, metavar="K",
                    help="--lattice: instead of timing methods, CP-SAT's work to a set (deterministic time, load-free) "
                         "of one search each for CP-SAT seeds 0..K-1, each from its seed's LP-vertex hint, as auto runs them")
    args = ap.parse_args(argv)
    if args.lattice and args.cpsat_work:
        return cpsat_work_table(args.dims or [2], args.widths or [256], args.lattice_seeds or 2, args.lattice_first_seed,
                                args.cpsat_work)
    if args.lattice or args.market:
        explicit = args.budget if "--budget" in (argv if argv is not None else sys.argv) else None
        return extra_table("lattice" if args.lattice else "market", args.quick, explicit, args.methods, args.ms,
                           args.kinds, args.market_seeds, args.dims, args.widths, args.lattice_seeds,
                           args.lattice_first_seed)
    dims, widths = tuple(args.dims or (2, 3, 4)), list(args.widths or (24, 32, 48))
    seeds, budget = args.seeds, args.budget
    if args.stretch:
        widths.append(64)
    if args.quick:
        widths, seeds, budget = [24, 32], 1, 5.0
    methods = (OURS,) + tuple(b for b in BASELINES if b in args.baselines)
    # warm-up: first calls pay for imports (scipy.optimize, z3), not for the search
    U0, D0, T0 = planted(2, 8, 0)
    for m in methods:
        find_index_set(U0, D0, T0, method=m, timeout=5.0)
    print(f"# bench_narrow: d in {dims}, n in {widths}, {seeds} seed(s), budget {budget:g}s, tol 1e-9")
    print(f"# python {' '.join(sys.argv)}")
    print(f"# machine speed: {calibration()}")
    rows = []
    failures: list[str] = []
    warnings: list[str] = []
    speedups_all: list[tuple[float, float]] = []  # (best baseline seconds, speed-up)
    misses: list[str] = []  # best baseline ≥ 10 ms and speed-up < 10x
    peak_ours = 0
    hopeless: set[tuple[str, int, str]] = set()  # (kind, d, method) that timed out everywhere
    for kind in ("planted", "generic"):
        for d in dims:
            for n in widths:
                results = {m: [] for m in methods}
                for s in range(seeds):
                    seed = 1000 * d + 10 * n + s
                    U, D, T = (planted if kind == "planted" else generic)(d, n, seed)
                    per = {}
                    for m in methods:
                        if (kind, d, m) in hopeless:
                            per[m] = {"status": "skip", "claim": False, "time": budget,
                                      "finished": False, "peak": 0, "by": m}
                        else:
                            per[m] = run_one(m, U, D, T, budget, track=(m == OURS))
                        results[m].append(per[m])
                    verdicts = {m: r["status"] for m, r in per.items() if r["status"] in ("found", "infeasible")}
                    decided = set().union(*(r.get("verdicts", set()) for r in per.values())) & {"found", "infeasible"}
                    if len(decided) > 1:
                        failures.append(f"{kind} d={d} n={n} seed={seed}: {verdicts}")
                    if kind == "planted" and "infeasible" in decided:
                        failures.append(f"{kind} d={d} n={n} seed={seed}: planted called infeasible {verdicts}")
                    if "milp" in per and per["milp"]["claim"] and "found" in verdicts.values():
                        warnings.append(f"{kind} d={d} n={n} seed={seed}: HiGHS claimed infeasible, "
                                        f"but a set was found")
                    peak_ours = max(peak_ours, per[OURS]["peak"])
                    fin = {m: per[m]["time"] for m in ("z3-pb", "milp") if m in per and per[m]["finished"]}
                    if per[OURS]["finished"] and fin:
                        best_m = min(fin, key=fin.get)
                        sp = fin[best_m] / per[OURS]["time"]
                        speedups_all.append((fin[best_m], sp))
                        per[OURS]["speedup"] = sp
                        if fin[best_m] >= 0.01 and sp < 10:
                            misses.append(f"{kind} d={d} n={n} seed={seed}: auto {per[OURS]['time'] * 1e3:.1f} ms "
                                          f"(decided by {per[OURS]['by']}), {best_m} {fin[best_m] * 1e3:.1f} ms, {sp:.1f}x")
                for m in methods[1:]:
                    if all(not r["finished"] for r in results[m]):
                        hopeless.add((kind, d, m))
                rows.append((kind, d, n, results))
                cells = []
                for m in methods:
                    rs = results[m]
                    solved = sum(r["finished"] for r in rs)
                    star = "*" if any(r["claim"] for r in rs) else ""
                    skip = " skip" if all(r["status"] == "skip" for r in rs) else ""
                    cells.append(f"{fmt_time([r['time'] for r in rs], solved, budget)}{star} "
                                 f"({solved}/{len(rs)}){skip}")
                sp = [r["speedup"] for r in results[OURS] if "speedup" in r]
                sp_cell = f"{statistics.median(sp):.1f}x" if sp else "n/a"
                by = sorted({r["by"] for r in results[OURS]})
                pk = max(r["peak"] for r in results[OURS]) / 2**20
                rows[-1] = (kind, d, n, cells, sp_cell, by, pk)
                print(f"  done {kind} d={d} n={n}: " + " | ".join(cells) + f" | {sp_cell}", flush=True)

    print()
    names = {"z3": "z3 If-sum", "z3-pb": "z3-pb", "milp": "HiGHS"}
    print("| class | d | n | auto (ours) | " + " | ".join(names[m] for m in methods[1:])
          + " | speed-up vs best(z3-pb, HiGHS) | decided by | auto peak MiB |")
    print("|---|---|---|---|" + "---|" * (len(methods) - 1) + "---|---|---|")
    for kind, d, n, cells, sp_cell, by, pk in rows:
        print(f"| {kind} | {d} | {n} | " + " | ".join(cells) + f" | {sp_cell} | {', '.join(by)} | {pk:.0f} |")
    print()
    print("cells: median seconds over seeds (unsolved runs count as the budget) and (solved/seeds); "
          "* = HiGHS 'infeasible' claims counted as finished (not proofs); skip = not run, the "
          "baseline spent the whole budget at a smaller n of the same class")
    if speedups_all:
        ratios = [sp for _, sp in speedups_all]
        print(f"speed-up of auto over best(z3-pb, HiGHS) where both finish: min {min(ratios):.1f}x, "
              f"median {statistics.median(ratios):.1f}x, max {max(ratios):.1f}x "
              f"over {len(ratios)} instances")
        # The same, by how long the best baseline took: at a few milliseconds both sides
        # mostly measure fixed per-call costs.
        for lo, hi, label in ((0.0, 0.01, "< 10 ms"), (0.01, 0.1, "10-100 ms"),
                              (0.1, 1.0, "0.1-1 s"), (1.0, math.inf, ">= 1 s")):
            sel = [sp for tb, sp in speedups_all if lo <= tb < hi]
            if sel:
                print(f"  best baseline {label:>9}: {len(sel):3d} instances, speed-up min "
                      f"{min(sel):.1f}x, median {statistics.median(sel):.1f}x, "
                      f">= 10x on {sum(x >= 10 for x in sel)}")
    if misses:
        print("instances where the best baseline took >= 10 ms and auto was < 10x faster:")
        for line in misses:
            print("  " + line)
    print(f"peak traced memory of auto: {peak_ours / 2**20:.0f} MiB; "
          f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    for w in warnings:
        print("WARNING:", w)
    for f in failures:
        print("DISAGREEMENT:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
