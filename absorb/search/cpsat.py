"""OR-tools CP-SAT backend (``method="cp-sat"``): a candidate finder, never a prover.

Why: planted sets of d = 2 past meet-in-the-middle's reach (|S| = n/2, n = 128–256: four
equations in n binaries) are where the other finders are slow or miss — HiGHS and Z3-PB
stop at the budget, lattice reduction needs BKZ-40 at n = 96 and declines at n = 256 — and
CP-SAT finds them in seconds (docs/performance.md, the narrow regime's lattice table).

The encoding is HiGHS's entrywise box ``t_j − ε ≤ (K b)_j ≤ t_j + ε`` (``ε = tol·‖T‖_F``,
which every set within the tolerance satisfies), with K and t scaled by one power of two
(max |K| to about 2^40) and rounded to integers, and the box widened by ``n + 1`` units for
the rounding of the n coefficients and of t.

Soundness: the integer model is a rounded copy of the question, so

* a CP-SAT solution is only a *candidate*: its float64 residual is recomputed here (and the
  dispatcher re-checks it again, as every backend's set); a candidate outside the tolerance
  (the box allows Frobenius residuals up to d·ε) is cut off by a no-good clause and CP-SAT
  runs again while the budget lasts;
* CP-SAT "infeasible" on the rounded box is no proof: it gives ``unknown``.

``ortools`` is optional (the ``cpsat`` extra) and imported only when this backend runs
(0.7–0.8 s: it loads pandas).
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time
from typing import Any

import numpy as np

from absorb.rigorous import frobenius_bounds, relative_residual

from ._common import khatri_rao
from ._types import SearchResult, SearchStatus

#: K's largest entry is scaled to about 2^SCALE_BITS: n·2^40 stays far inside int64 for every
#: n the narrow regime takes, and the rounding (half a unit a coefficient) is ~2^-40 relative
SCALE_BITS = 40


def available() -> bool:
    """Whether ``ortools`` is installed (looked up, not imported: its import takes ~1 s, pandas
    included; the portfolio leaves the step out when it is not)."""
    return importlib.util.find_spec("ortools") is not None


#: CP-SAT's search workers and LP level, chosen by measurement (planted d = 2, |S| = n/2, n =
#: 128 and 256, seeds 2128/2129, 2256/2257; 2 cores at load 4–6): one worker with
#: linearization_level 2 (the LP with more cuts) found each with seed 0 in 0.3–4.6 CPU
#: seconds (2257 with seeds 1 and 2 too, in 4.5 and 7.5; 2256 with those not within ~10);
#: the default level 1 took 7–12 CPU s at n = 256.  Two workers (the default LP solver with
#: the feasibility-jump worker, or with a second full solver, or two LP levels) spent 7–12
#: CPU seconds on each n = 256 instance without finding it: the solutions come from the
#: LP-guided search, and the second worker and its helpers only share the cores.  One worker
#: also searches the same way for a seed.  (search_branching LP_SEARCH and
#: PSEUDO_COST_SEARCH gave the same searches as the default, to the work unit.)
WORKERS = 1
LINEARIZATION_LEVEL = 2
#: ... but from HINT_FIRST_N on (every search hinted) the even-numbered searches (seed + 0, 2, …:
#: round 0's first of the two side by side) use level 1: how hard an instance is depends on the
#: configuration more than on the seed, so two configurations racing are more independent draws
#: than two seeds of one.  Work units to the set (``benchmarks/bench_narrow.py --lattice
#: --cpsat-work``'s model, cap 10–20; planted d = 2, |S| = n/2, n = 256): the lesser of level 2
#: with seeds 0 and 1 against level 1 seed 0 with level 2 seed 1, instances 2256–2279 max 9.52
#: against 4.49 (over 6 units: 2259 7.54, 2268 6.90, 2274 6.17, 2277 9.52 against none; mean 2.26
#: against 1.64), held-out 2280–2303 max 5.86 against 4.90 (mean 1.74 against 1.77).  On 2259,
#: level 2 missed 4 units with 11 of seeds 0–11 (seed 1: 7.54), level 1 found it with seeds 0
#: and 5 (3.59, 1.97)
DIVERSE_LEVELS = (1, 2)


def linearization_level(n: int, search: int) -> int:
    """The LP level of the ``search``-th search (seed offset; round k's search c is k·chains + c)
    on a model with ``n`` variables."""
    return DIVERSE_LEVELS[search % 2] if n >= HINT_FIRST_N else LINEARIZATION_LEVEL
#: with ``threads`` ≥ 2, this many such one-worker searches run side by side, each with its
#: own random seed, and the first solution stops the others: the work to a set is
#: heavy-tailed in the seed, and the least of two draws has a much shorter tail than one.
#: Planted d = 2, |S| = n/2, seeds 2192–2199 and 2256–2257, CP-SAT seeds 0–3 each: the
#: expected work under the rounds below (seeds as independent draws) is, for n = 192, mean
#: 1.82 / max 5.27 with one search and 1.36 / 3.39 with two; for n = 256, 4.89 / 5.99 and
#: 2.58 / 2.72 (work units; two searches take two cores)
CHAINS = 2
#: each search but the first (round 0's with the caller's seed, which stays the search the
#: portfolio's tables were measured with: the hint made some of those slower, e.g. n = 128
#: seed 2129 0.8 → 2.7–3.0 s) starts from a solution hint: a vertex of the LP relaxation {K b = t,
#: 0 ≤ b ≤ 1} for a random objective drawn with the search's seed, rounded (a vertex has at
#: most d_out·d_in fractional entries, so the hint is an LP-feasible corner up to those).
#: Work units to a set with CP-SAT seeds 0 / 1, planted d = 2, |S| = n/2, with the hint
#: against without: n = 256 seeds 2256–2261: 1.8/4.4, 0.7/0.8, 1.9/2.3, >12/2.5, 1.1/2.4,
#: 1.6/2.8 against 1.7/10.5, 2.2/2.1, 2.8/4.9, >16/3.3, 7.0/5.5, 3.8/>12 (mean about 2.9
#: against 6.0, counting a miss as its cap); 2262 with it 1.3/2.2; n = 192 seeds 2192, 2193,
#: 2196: 2.4/0.8, 2.0/0.4, 0.9/1.0 against 1.7/1.7, 4.9/1.6, 2.5/0.8 (at n = 256 both seeds
#: had the vertex of seed 0's objective)
HINT = True
#: ... and from this width on the first search starts from a vertex too: the slowdown above was
#: at n = 128, while past it the hint cut the tail (all searches hinted: n = 192 8/8 in
#: 2.7–9.4 s against 3.5–10.3; n = 256 8/8, 2259 / 2263 in 19.1 / 26.9 s, against 7/8 with
#: 2263 `unknown`); seed 0's search with the hint against without, work units: n = 256 seeds
#: 2257 0.68 / 2.22, 2268 6.9 / > 10, 2256 1.83 / 1.67, 2259 > 12 / > 12; 2263 4.49 with it
HINT_FIRST_N = 192
#: the model's build in Python, which no time limit cuts short, costs about 1e-5 s a term of
#: K (d_out·d_in·n terms; measured 2.5–3.1 s for 2.6–2.9e5 terms at load 3.5, counted
#: double): a model expected to take over half the budget to build is not built
BUILD_SECONDS_PER_TERM = 2e-5
#: the search runs in rounds, each with the next random seed and twice the work of the one
#: before, this much first, in CP-SAT's deterministic time (about 0.5–0.6 a CPU second here;
#: a round's end does not move with the machine's load): the work to a set is heavy-tailed in
#: the seed.  Planted d = 2 with seed 0: n = 128 seeds 2128/2129 0.14/0.40, n = 256 seeds
#: 2256/2257/2258 1.7/2.2/2.8, n = 192 seed 2193 4.9, and n = 256 seed 2259 nothing in ~8;
#: with seed 1, 2193 takes 1.6 and 2259 3.3 (rounds: 4 + 1.6 and 4 + 3.3).  That was before the
#: LP hint; with it (every search hinted from n = 192), the lesser of the work to a set of seed
#: 0's and seed 1's search (one search each, its seed's vertex as hint; planted d = 2, |S| = n/2,
#: n = 256, seeds 2256–2279; `benchmarks/bench_narrow.py --lattice --cpsat-work 2 --dims 2 --widths
#: 256 --lattice-seeds 24`) is ≤ 3.0 for 19 of the 24 instances and 4.49 (2263), 6.17 (2274),
#: 6.90 (2268), 7.54 (2259) and 9.52 (2277) for the five others: with 4 first, those miss round 0
#: (2259, 2263, 2268 took 22–32 s of wall clock on a quiet machine); with 8, round 0 finds all
#: but 2277, and an instance that needs a second round pays 4 more work units (~6 s here)
FIRST_ROUND_WORK = 8.0


def solve_cpsat(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0, threads: int = 1,
) -> SearchResult:
    """Ask CP-SAT for a 0/1 point in the rounded box; ``found`` (verified) or ``unknown``.

    ``min(threads, CHAINS)`` searches run side by side (threads; CP-SAT releases the GIL).
    Search c of round k has ``random_seed`` ``seed + k·chains + c`` (one worker and rounds of
    deterministic work: the same seeds, the same searches, until the budget's wall clock or
    another search's solution stops them)."""
    t0 = time.perf_counter()

    def unknown(reason: str, **cert: object) -> SearchResult:
        return SearchResult(SearchStatus.UNKNOWN, "cp-sat", reason, elapsed=time.perf_counter() - t0,
                            certificate=dict(cert) or None)

    n = U.shape[0]
    terms = D.shape[0] * U.shape[1] * n
    if BUILD_SECONDS_PER_TERM * terms > 0.5 * timeout:
        return unknown(f"the model's {terms} terms would take ~{BUILD_SECONDS_PER_TERM * terms:.2g}s to build, "
                       f"over half the budget {timeout:g}s")
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        return unknown("ortools is not installed (pip install 'absorb[cpsat]')")
    built = _model(cp_model, U, D, T, tol)
    if isinstance(built, str):
        return unknown(built)
    model, x = built
    hint = _lp_vertex(khatri_rao(U, D), T.ravel().astype(np.float64)) if HINT else None
    chains = max(1, min(int(threads), CHAINS))
    models = [model] + [model.clone() for _ in range(chains - 1)]  # one each: no-goods go to all
    solvers = [cp_model.CpSolver() for _ in range(chains)]
    for solver in solvers:
        solver.parameters.num_workers = WORKERS
    tried: set[tuple[int, ...]] = set()
    rounds, work = 0, FIRST_ROUND_WORK
    while True:
        left = timeout - (time.perf_counter() - t0)
        if left <= 0.005:
            return unknown(f"time budget {timeout:g}s spent ({len(tried)} CP-SAT candidates failed verification, "
                           f"{rounds} rounds of {chains} searches)")
        seeds = [(int(seed) + rounds * chains + c) % 2**31 for c in range(chains)]
        for c, solver in enumerate(solvers):
            solver.parameters.linearization_level = linearization_level(n, rounds * chains + c)
        if hint is not None:
            for m, sd in zip(models, seeds):
                m.clear_hints()
                if sd != seeds[0] or rounds or n >= HINT_FIRST_N:  # below: the unhinted one of before
                    for xi, bi in zip(x, hint(sd)):
                        m.add_hint(xi, bi)
        answers = _round(cp_model, solvers, models, x, seeds, work, left)
        fresh = {S for _, _, S in answers if S is not None and S not in tried}
        for S in sorted(fresh):
            r = relative_residual(U, D, T, S)
            if r <= tol:
                return SearchResult(SearchStatus.FOUND, "cp-sat", "CP-SAT solution, re-verified in float64",
                                    S=S, residual=r, elapsed=time.perf_counter() - t0)
            tried.add(S)  # no-good clause: some b_i differs from this candidate
            for m in models:
                m.add_bool_or([x[i].Not() if i in S else x[i] for i in range(n)])
        if fresh:
            continue  # the candidates are cut off: the same round again
        statuses = {st for st, _, _ in answers}
        if cp_model.INFEASIBLE in statuses:
            return unknown("CP-SAT reports the rounded box infeasible (not a proof)", cpsat="infeasible",
                           failed_candidates=len(tried))
        if statuses == {cp_model.UNKNOWN}:  # the round's work or the budget spent: other seeds, twice the work
            rounds, work = rounds + 1, 2 * work
            continue
        names = ", ".join(sorted({name for _, name, _ in answers}))
        return unknown(f"CP-SAT stopped without a solution ({names}); budget {timeout:g}s", cpsat=names)


def _model(cp_model: Any, U: np.ndarray, D: np.ndarray, T: np.ndarray, tol: float) -> tuple[Any, list[Any]] | str:
    """The rounded box as a CP-SAT model and its n Boolean variables, or why there is none."""
    n = U.shape[0]
    K = khatri_rao(U, D)
    t = T.ravel().astype(np.float64)
    top = float(np.max(np.abs(K))) if K.size else 0.0
    if not (math.isfinite(top) and top > 0 and np.all(np.isfinite(t))):
        return "K is zero or not finite: nothing to encode"
    exp = SCALE_BITS - math.frexp(top)[1]
    if exp > 1023:  # K's largest entry below ~2^-970 (subnormal weights): the scale would leave float64
        return f"K's largest entry {top:.3g} is too small to scale to integers in float64"
    scale = math.ldexp(1.0, exp)  # a power of two: K·scale exact
    _, t_hi = frobenius_bounds(T)
    slack = n + 1 + tol * t_hi * scale
    coeffs = np.rint(K * scale).astype(np.int64)
    lo = np.ceil(t * scale - slack)
    hi = np.floor(t * scale + slack)
    if not (np.all(np.abs(lo) < 2.0**62) and np.all(np.abs(hi) < 2.0**62)):
        return "the target scaled with K leaves int64's range"
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"b{i}") for i in range(n)]
    for row, a, b in zip(coeffs, lo, hi):
        nz = np.nonzero(row)[0]
        model.add_linear_constraint(cp_model.LinearExpr.weighted_sum([x[i] for i in nz], row[nz].tolist()),
                                    int(a), int(b))
    return model, x


def _lp_vertex(K: np.ndarray, t: np.ndarray) -> Any:
    """``hint(seed)``: the rounded vertex of {K b = t, 0 ≤ b ≤ 1} (HiGHS) that
    minimises a Gaussian objective drawn with ``seed``, as n Booleans (all False when the LP
    fails: a hint is only where the search starts, never a verdict)."""
    from scipy.optimize import linprog

    def hint(seed: int) -> list[bool]:
        c = np.random.default_rng(seed).standard_normal(K.shape[1])
        res = linprog(c, A_eq=K, b_eq=t, bounds=(0, 1), method="highs")
        return [bool(v > 0.5) for v in res.x] if res.status == 0 else [False] * K.shape[1]
    return hint


def _round(cp_model: Any, solvers: list[Any], models: list[Any], x: list[Any], seeds: list[int], work: float,
           left: float) -> list[tuple[int, str, tuple[int, ...] | None]]:
    """One round: solver c searches model c (its own copy) with seed c, side by side when
    there are several; the first to end with a solution or "infeasible" stops the others
    (one not yet started is skipped).  Each search's status, its name and the solution's set
    (``None`` without one)."""
    for solver, sd in zip(solvers, seeds):
        solver.parameters.random_seed = sd
        solver.parameters.max_time_in_seconds = left
        solver.parameters.max_deterministic_time = work
    answers: list[tuple[int, str, tuple[int, ...] | None]] = [(cp_model.UNKNOWN, "UNKNOWN", None)] * len(seeds)
    done = threading.Event()

    def search(c: int) -> None:
        if done.is_set():
            return
        solver = solvers[c]
        status = solver.solve(models[c])
        S = tuple(i for i in range(len(x)) if solver.boolean_value(x[i])) \
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
        answers[c] = (status, solver.status_name(status), S)
        if S is not None or status == cp_model.INFEASIBLE:
            done.set()
            for other in solvers:
                if other is not solver:
                    other.stop_search()

    if len(seeds) == 1:
        search(0)
        return answers
    workers = [threading.Thread(target=search, args=(c,), daemon=True) for c in range(len(seeds))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answers
