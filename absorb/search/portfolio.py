"""The dispatcher :func:`find_index_set`: one backend by name, or the ``auto`` portfolio.

Backends are looked up in :data:`_BACKENDS`, a table keyed by the method names of
:data:`Method`, and imported only when first used.  Every verdict a backend returns is
re-checked here (:func:`_checked`) on the caller's own arrays.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from absorb._validate import METHODS, Backend, Method, check_search_inputs
from absorb.rigorous import frobenius_bounds, relative_residual, rescaled

from ._scale_bounds import ResidualBound, check_residual
from ._types import SearchResult, SearchStatus
from .bounds import relaxation_result

__all__ = ["METHODS", "Method", "find_index_set"]

#: a backend by name; ``auto`` is the portfolio below

Solver = Callable[..., SearchResult]

#: the module and function of each backend (imported lazily: z3, scipy and the tables of
#: the exact engines cost nothing until a method needs them)
_BACKENDS: dict[Backend, tuple[str, str]] = {
    "linalg": ("linalg", "solve_linalg"),
    "enumerate": ("enumerate", "solve_enumerate"),
    "mitm": ("mitm", "solve_mitm"),
    "milp": ("milp", "solve_milp"),
    "z3": ("smt", "solve_z3"),
    "z3-pb": ("smt", "solve_z3_pb"),
    "lattice": ("lattice", "solve_lattice"),
    "cp-sat": ("cpsat", "solve_cpsat"),  # a finder; imports ortools (optional) only when it runs
}

#: ``auto`` runs the narrow-regime backends (which build K, d²×n) only up to this size
NARROW_MAX_ENTRIES = 4_000_000

#: ``auto`` runs meet-in-the-middle before the box relaxation when it expects it to take
#: no longer than this (seconds): then the relaxation's least squares is only paid for
#: when MITM proves infeasibility (for a re-checkable certificate), not when it finds a set
QUICK_MITM_SECONDS = 0.005

#: ``auto`` tries exhaustive enumeration up to this many units
ENUMERATE_MAX_N = 20

#: ``auto`` gives lattice reduction a slice in front of a complete MITM run expected to take
#: longer than this (seconds); when MITM cannot run within the budget at all, lattice
#: reduction gets LATTICE_SHARE of what is left, ahead of Z3-PB and HiGHS
LATTICE_BEFORE_MITM_SECONDS = 5.0
LATTICE_SHARE = 0.4

#: ``auto`` gives CP-SAT (when ortools is installed) this share of what is left when MITM
#: cannot run within the budget, in front of the lattice finder's LATTICE_SHARE.  Half: it is
#: the finder that finds planted d = 2 sets at n = 96–256 (the lattice finder needs BKZ-40 at
#: n = 96 and found none of n = 192 seeds 2192–2194 in 13–66 s after CP-SAT's 25 % slice),
#: and its work to a set is heavy-tailed: at load 6–8 on the 2 cores a 25 % slice (14 s of
#: wall clock, about 1–1.5 work units) missed 2192 and 2194, which need 1.7 and 1.8 with seed 0
CPSAT_SHARE = 0.5
#: ... and this share when no lattice finder slice follows it (its LLL is expected to outlast
#: LATTICE_SHARE of the budget: d = 2, n = 256), where only the Z3-PB and HiGHS steps, which
#: found none of the planted d = 2, n = 192–256 sets, would get the other half: n = 256 seed
#: 2263 was missed with a 60 s budget, and seed 2268 needs 7.7 work units with CP-SAT seed 1
#: after seed 0's round (none within 10 units): 11.7 in all, ~25–40 s of wall clock at load 2–6
CPSAT_ALONE_SHARE = 0.85

#: ``auto`` tries the lattice enumeration's proof (fpylll) in front of a complete MITM run
#: expected to take longer than this (seconds): it reduces for at most a tenth of that
LATTICE_PROOF_AFTER_MITM_SECONDS = 0.1


def _backend(method: Backend) -> Solver | None:
    """The backend function for ``method``, imported lazily; ``None`` if not installed."""
    module, name = _BACKENDS[method]
    try:
        mod = importlib.import_module(f"{__package__}.{module}")
    except ImportError:
        return None
    fn: Solver = getattr(mod, name)
    return fn


class _Verifier:
    """The re-check of found sets: ``verifier(S)`` is the rigorous
    :func:`~absorb.search._scale_bounds.check_residual` of S (float32 weights read in float64
    blocks) on the arrays the backends see — the caller's, rescaled by exact powers of two
    into the range where that bound holds, which changes no relative residual — remembered,
    so that a set the linalg backend proposes after this very check is not recomputed by
    :func:`_checked` (one d×|S|×d product per found set, not two)."""

    def __init__(self, U: np.ndarray, D: np.ndarray, T: np.ndarray | None) -> None:
        self.arrays = (U, D, T)
        self.memo: dict[tuple[int, ...], ResidualBound] = {}

    def options(self, method: str) -> dict[str, Any]:
        """The keyword a backend takes this verifier by (only linalg checks its own rounded sets)."""
        return {"verify": self} if method == "linalg" else {}

    @staticmethod
    def key(S: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted(int(i) for i in S))

    def __call__(self, S: tuple[int, ...]) -> ResidualBound:
        key = self.key(S)
        if key not in self.memo:
            self.memo.clear()  # only the latest set is ever asked again
            self.memo[key] = check_residual(*self.arrays, key, block_bytes=32 << 20)
        return self.memo[key]


def _checked(result: SearchResult, U: np.ndarray, D: np.ndarray, T: np.ndarray | None, tol: float,
             verifier: _Verifier | None = None) -> SearchResult:
    """Independent re-check of a backend's verdict (style habit 6): a found S by its residual
    on the caller's arrays, or by the verifier's when it has checked S (then its rigorous
    upper bound must be ≤ tol too); an infeasibility by its bound."""
    if result.status is SearchStatus.FOUND:
        assert result.S is not None
        chk = None if verifier is None else verifier.memo.get(verifier.key(result.S))
        res = relative_residual(U, D, T, result.S) if chk is None else chk.relative
        if not (res <= tol and (chk is None or chk.relative_upper <= tol)):
            return SearchResult(
                SearchStatus.UNKNOWN, result.method,
                f"{result.method} returned S={result.S} but its recomputed residual {res:.3e} "
                f"exceeds tol={tol:g}; rejected", elapsed=result.elapsed,
            )
        return dataclasses.replace(result, residual=res)  # the recomputed value, which callers may reuse
    if result.status is SearchStatus.INFEASIBLE:
        if not (result.bound is not None and result.bound > tol):
            return SearchResult(
                SearchStatus.UNKNOWN, result.method,
                f"{result.method} claimed infeasible with bound {result.bound!r} ≤ tol={tol:g}; "
                "rejected", elapsed=result.elapsed,
            )
    return result


def _cores() -> int:
    """CPU cores this process may use (:func:`absorb._dask.cores`), capped at 8: the MITM backend's worker threads."""
    from absorb._dask import cores

    return max(1, min(cores(), 8))


def _idle_cores() -> int:
    """Cores free for a second CP-SAT search: :func:`_cores` less the 1-minute load average
    beyond this search's own 1 (rounded, at least 1).  Two searches gain only when each has a
    core: at load 11 on the 2 cores, planted d = 2, n = 256 seeds 2256/2257 took CP-SAT 21–30 s
    with two searches against 14–23 s with one (the process got no more CPU time for its
    second thread)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix
        return 1
    return max(1, min(_cores(), round(_cores() - max(0.0, load - 1.0))))


def _validate(U: Any, D: Any, T: Any, tol: float, timeout: float, method: str, seed: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The one place where :func:`find_index_set` checks its arguments; ``U, D, T`` as
    float64 arrays (or large float32 ``U``, ``D``)."""
    return check_search_inputs(U, D, T, tol=tol, timeout=timeout, seed=seed, method=method)


Step = tuple[str, Callable[[], SearchResult]]


@dataclass
class _Portfolio:
    """One ``auto`` run: the (rescaled) problem, the caller's arrays for the re-check, the
    clock and the trail of steps tried."""

    U: np.ndarray
    D: np.ndarray
    T: np.ndarray | None  # None: −I (the wide route only; linalg takes it so)
    original: tuple[np.ndarray, np.ndarray, np.ndarray | None]
    tol: float
    timeout: float
    seed: int
    progress: Callable[[str], None] | None
    t0: float
    verifier: _Verifier
    trail: list[dict[str, Any]] = field(default_factory=list)

    def left(self) -> float:
        return self.timeout - (time.perf_counter() - self.t0)

    def call(self, method: Backend, timeout: Callable[[], float], **extra: Any) -> Step:
        """A step running backend ``method`` with the budget ``timeout()`` at its start."""
        def run() -> SearchResult:
            fn = _backend(method)
            assert fn is not None
            return fn(self.U, self.D, self.T, timeout=timeout(), tol=self.tol, seed=self.seed, **extra,
                      **self.verifier.options(method))
        return method, run

    def finish(self, res: SearchResult) -> SearchResult:
        cert = dict(res.certificate or {})
        cert["portfolio"] = self.trail
        return SearchResult(res.status, res.method, res.reason, S=res.S, residual=res.residual,
                            bound=res.bound, elapsed=time.perf_counter() - self.t0, certificate=cert)

    def attempt(self, step: Step) -> SearchResult | None:
        """Run one step; its re-checked verdict (finished), or ``None`` when unknown."""
        name, run = step
        if self.progress is not None:
            self.progress(name)
        res = _checked(run(), *self.original, self.tol, self.verifier)
        self.trail.append({"method": res.method, "status": res.status.value,
                           "elapsed": round(res.elapsed, 4), "reason": res.reason})
        if res.status is not SearchStatus.UNKNOWN:
            return self.finish(res)
        return None

    def unknown(self, reason: str) -> SearchResult:
        return self.finish(SearchResult(SearchStatus.UNKNOWN, "auto", reason,
                                        elapsed=time.perf_counter() - self.t0))


def _entries(U: np.ndarray, D: np.ndarray) -> int:
    """d_out·d_in·n: the size by which the narrow regime is told from the wide one."""
    return D.shape[0] * U.shape[1] * U.shape[0]


def _first_steps(run: _Portfolio, narrow: bool) -> list[Step]:
    """The relaxation's dual bound (narrow regime) and exact linear algebra (n ≤ d²)."""
    U, D, T, tol = run.U, run.D, run.T, run.tol
    steps: list[Step] = []
    if narrow:
        steps.append(("dual-bound", lambda: relaxation_result(U, D, T, tol, time.perf_counter())))
    if U.shape[0] <= D.shape[0] * U.shape[1] and _backend("linalg") is not None:
        steps.append(run.call("linalg", run.left))
    return steps


def _wide(run: _Portfolio, steps: list[Step]) -> SearchResult:
    """Real model sizes: K (d²×n) must never be materialised; only linalg applies."""
    for step in steps:
        out = run.attempt(step)
        if out is not None:
            return out
    entries = _entries(run.U, run.D)
    return run.unknown(
        f"d²·n = {entries} exceeds {NARROW_MAX_ENTRIES}: the narrow-regime backends do not "
        "apply" + ("" if steps else " and the linalg backend is not installed")
        + "".join(f"; {t['method']}: {t['reason']}" for t in run.trail))


def _narrow_steps(run: _Portfolio, steps: list[Step], quick: bool, est: float, mitm_step: Step) -> list[Step]:
    """The rest of the narrow portfolio after the first steps: enumeration, MITM with its
    short finder slices in front, then Z3-PB and HiGHS with what is left."""
    if run.U.shape[0] <= ENUMERATE_MAX_N:
        steps.append(run.call("enumerate", run.left))

    def finder_slice(floor: float) -> float:  # budget of a finder tried before MITM: 5 % of est
        return max(floor, min(0.05 * est, 2.0, 0.05 * run.left()))

    # A complete MITM run expected within QUICK_MITM_SECONDS goes first, ahead of the
    # relaxation's least squares (0.4–4 ms): it decides alone when it finds a set, and an
    # infeasibility it proves is held back while the dual bound is tried, whose dual matrix
    # is a certificate `absorb verify` can re-check (a MITM run is not).
    if quick:
        steps.insert(0, mitm_step)
    else:
        affordable = est <= 1.5 * run.timeout
        if 0.01 < est:
            # A complete MITM run takes a while; a short HiGHS slice (≥ 10 ms) first often
            # finds a planted set at once (its "infeasible" is no proof and is ignored).
            # (HiGHS finds most planted sets in 1–7 ms; e.g. planted d = 3, n = 48 seed
            # 3481 takes HiGHS 1.8 ms and MITM 75 ms.)  Past 1.5×timeout MITM refuses and
            # Z3-PB and lattice reduction get most of the budget next: then HiGHS has a look
            # of 1 % of the budget, 10–100 ms (planted |S| = n/2 sets at d = 3–4, n = 128–256
            # take HiGHS 10–40 ms: with a 10 ms look, d = 4, n = 256 seed 4256 took 10 s).
            steps.append(run.call("milp", lambda: finder_slice(0.01) if affordable
                                  else min(0.1, max(0.01, 0.01 * run.left()))))
        if 0.1 < est and affordable:
            # Z3-PB finds other planted sets fast (d = 2, n = 48 seed 2482: 35 ms, where
            # HiGHS needs 140 ms and MITM 250 ms); its encoding alone costs ~10 ms, so
            # only in front of longer MITM runs, with at least 40 ms.
            steps.append(run.call("z3-pb", lambda: finder_slice(0.04)))
        steps.append(mitm_step)
        at = len(steps) - 1 if affordable else len(steps)  # before MITM, or after its refusal
        lattice = _lattice_steps(run, est, affordable)
        if not affordable:  # CP-SAT after the proof's step and the Z3-PB look, before the finder
            names = [name for name, _ in lattice]
            finder = "z3-pb" in names  # the Z3-PB look comes only with the lattice finder's slice
            cut = names.index("z3-pb") + 1 if finder else len(lattice)
            lattice[cut:cut] = _cpsat_steps(run, CPSAT_SHARE if finder else CPSAT_ALONE_SHARE)
        steps[at:at] = lattice
    # Finders for what MITM could not cover: Z3-PB is quick on planted sets; HiGHS last.
    steps.append(run.call("z3-pb", lambda: max(0.5 * run.left(), 0.01)))
    steps.append(run.call("milp", run.left))
    return steps


def _lattice_steps(run: _Portfolio, est: float, affordable: bool) -> list[Step]:
    """Lattice reduction (:mod:`.lattice`, a finder of planted sets at low density): the
    steps to run in front of MITM (when it runs) or of the long Z3-PB step (when it cannot).

    First, with fpylll, the proof's step (:func:`~.lattice.solve_lattice` with
    ``find=False``, ``rival`` = MITM's estimate): it decides (found or infeasible) when its
    enumeration is estimated under half of MITM's run, else answers unknown at once.
    In front of a MITM run expected to take over LATTICE_BEFORE_MITM_SECONDS: a short slice
    (LLL and the first BKZ blocks: 4× the LLL estimate, at least 1 s, at most 10 % of what
    is left and of MITM's estimate).  When MITM cannot run within the budget: a Z3-PB look of
    at most 1 s (it finds planted d = 2, n = 64 sets in 0.07–0.5 s, as fast as LLL or
    faster), then LATTICE_SHARE of what is left (d = 2, n = 96 planted sets need BKZ-40:
    4–20 s; Z3-PB and HiGHS rarely find those at all).  A slice shorter than twice the LLL
    estimate is left out (the reduction, in a child process, would be stopped at the slice's
    end before it shows a set).  When neither fpylll nor python-flint is installed the step
    answers at once that it is not, which the portfolio's reason then says."""
    from .lattice import LATTICE_MAX_N, lattice_engine, lattice_seconds

    n = run.U.shape[0]
    if n > LATTICE_MAX_N or est <= LATTICE_PROOF_AFTER_MITM_SECONDS:
        return []
    lll = lattice_seconds(n, run.D.shape[0] * run.U.shape[1])
    # the proof (fpylll): reduce the tolerance-scaled embedding (≤ 10 % of MITM's estimate),
    # estimate the enumeration, and run it when under half MITM's estimate (d = 2, n = 64
    # generic: ~1 s against MITM's ~400 s; d = 3, n = 64: 0.3 s against 23 s; d = 2,
    # n = 48: 0.05 s against 3 s)
    proof = [run.call("lattice", run.left, find=False, rival=est)] \
        if lattice_engine() == "fpylll" and 2 * lll <= run.left() else []
    if affordable and est <= LATTICE_BEFORE_MITM_SECONDS:
        return proof

    def short() -> float:
        return max(min(max(1.0, 4 * lll), 0.1 * run.left(), 0.1 * est), 0.01)

    def long() -> float:
        return max(LATTICE_SHARE * run.left(), 0.01)

    budget = short if affordable else long
    if 2 * lll > budget():
        return proof
    if affordable:
        return [*proof, run.call("lattice", budget, prove=False)]
    return [*proof, run.call("z3-pb", lambda: max(min(1.0, 0.05 * run.left()), 0.04)),
            run.call("lattice", budget, prove=False)]


def _cpsat_steps(run: _Portfolio, share: float) -> list[Step]:
    """CP-SAT (:mod:`.cpsat`, a finder; optional ortools) where MITM cannot run within the
    budget: ``share`` of what is left, after the lattice proof's step and the Z3-PB look,
    in front of the lattice finder (planted d = 2, |S| = n/2: CP-SAT finds n = 96–256 in
    0.3–7 s on one worker, where the lattice finder needs BKZ-40 at n = 96 and declines at
    n = 256, and HiGHS and Z3-PB stop at the budget), with one search an idle core (at most
    :data:`~.cpsat.CHAINS`, each its own seed: the first set found ends them all).  On an
    instance without a set the slice is budget spent: only finders come after it (the proofs
    come before)."""
    from . import cpsat

    if not cpsat.available():
        return []
    return [run.call("cp-sat", lambda: max(share * run.left(), 0.05), threads=_idle_cores())]


def _narrow(run: _Portfolio, steps: list[Step]) -> SearchResult:
    from .mitm import mitm_plan

    cores = _cores()
    plan = mitm_plan(run.U, run.D, run.T, tol=run.tol, seed=run.seed)
    est = plan.seconds(cores)  # inf when no run can work
    mitm_step = run.call("mitm", run.left, threads=cores, plan=plan, progress=run.progress)
    quick = est <= QUICK_MITM_SECONDS  # (steps[0] is the dual bound: MITM goes before it)
    steps = _narrow_steps(run, steps, quick, est, mitm_step)

    reasons = []
    held: SearchResult | None = None  # a quick MITM proof, while the dual bound is tried
    for step in steps:
        name = step[0]
        if run.left() <= 0:
            reasons.append(f"time budget {run.timeout:g}s spent before {name}")
            break
        out = run.attempt(step)
        if out is not None and quick and name == "mitm" and out.status is SearchStatus.INFEASIBLE:
            held = out
            continue
        if out is not None:
            return out
        if held is not None:  # the dual bound proved less than MITM did
            return run.finish(held)
        reasons.append(f"{run.trail[-1]['method']}: {run.trail[-1]['reason']}")
    if held is not None:
        return run.finish(held)
    return run.unknown("; ".join(reasons))


def find_index_set(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray | None,
    *,
    tol: float = 1e-9,
    timeout: float = 60.0,
    method: Method = "auto",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> SearchResult:
    """Find ``S`` with ``‖D[:,S]U[S,:] − T‖_F ≤ tol·‖T‖_F``, prove none exists, or give up.

    ``U`` is W_up (n×d_in), ``D`` is W_down (d_out×n), ``T`` the target (d_out×d_in, e.g.
    ``-I``; ``None`` means ``-I`` without a d×d array, for model-sized d). ``method`` is one of :data:`METHODS`; ``"auto"`` runs a portfolio, cheapest
    proofs first, within ``timeout`` seconds of wall clock:

    1. the box-relaxation dual bound (rank bound included);
    2. exact linear algebra (``linalg``, when installed and n ≤ d²);
    3. exhaustive enumeration for n ≤ 20;
    4. meet-in-the-middle over pivoted partial sums (the workhorse for n > d²; one worker
       thread per core), preceded, when it is expected to take over 0.01 s, by a short
       HiGHS slice (5 % of that estimate, at least 10 ms), and past 0.1 s also a Z3-PB
       slice (at least 40 ms): these often find planted sets at once;
    5. Z3 pseudo-Boolean, then HiGHS, with what is left (these mostly *find* sets).

    Lattice enumeration (``lattice``, with the optional fpylll) goes in front of a MITM run
    expected to take over :data:`LATTICE_PROOF_AFTER_MITM_SECONDS`: it reduces for at most a
    tenth of MITM's estimate and enumerates (a complete enumeration inside a rigorous radius:
    ``found`` or ``infeasible``) only when its own estimate is under half of MITM's.  Lattice
    reduction as a finder of planted sets (fpylll or python-flint) gets a short slice (about
    1 s) in front of a MITM run expected to take over 5 s; when MITM cannot run within the
    budget, 40 % of what is left in front of step 5 (after a Z3-PB look of at most 1 s).
    CP-SAT (``cp-sat``, with the optional ortools; a finder) gets :data:`CPSAT_SHARE` of what
    is left when MITM cannot run within the budget, after the lattice proof's step and the
    Z3-PB look, in front of the lattice finder (one search an idle core, up to two seeds at
    once); :data:`CPSAT_ALONE_SHARE` when the lattice finder gets no slice.

    When MITM is expected to finish within :data:`QUICK_MITM_SECONDS`, it runs first; an
    infeasibility it proves is then returned only if step 1 proves less (step 1's dual
    matrix is the certificate ``absorb verify`` can re-check).

    It stops at the first ``found`` or ``infeasible``.  Every verdict is re-checked here:
    a found ``S`` by recomputing its residual, an infeasibility by ``bound > tol``.
    ``progress`` (optional) is called with a short note when a step starts and, during a
    long meet-in-the-middle run, every quarter second or so (``"meet-in-the-middle: 120/2048
    regions"``).
    """
    U, D, T = _validate(U, D, T, tol, timeout, method, seed)
    t0 = time.perf_counter()
    # The backends see U, D, T rescaled by exact powers of two into the range where their
    # rounding analyses hold (unchanged when already inside it); relative residuals, and so
    # every verdict and bound, are the same for both.  Found sets are re-checked on the
    # caller's own arrays.
    narrow = _entries(U, D) <= NARROW_MAX_ENTRIES
    if method not in ("auto", "linalg") or (method == "auto" and narrow):
        # only linalg reads float32 weights and T = None (−I) as they are; the others get
        # exact float64 copies and the d×d target
        U, D = (a if a.dtype == np.float64 else a.astype(np.float64) for a in (U, D))
        T = -np.eye(D.shape[0]) if T is None else T
    U0, D0, T0 = U, D, T
    U, D, T = rescaled(U, D, T)
    if T is not None and not math.isfinite(frobenius_bounds(T)[1]):
        # ‖T‖_F past float64's range even after the exact rescaling (T far larger than every
        # D_i U_i): the backends' windows and radii are floats scaled by it
        return SearchResult(SearchStatus.UNKNOWN, method, "‖T‖_F exceeds float64's range even after rescaling by powers of "
                            "two, so no backend's rounding account holds", elapsed=time.perf_counter() - t0)
    if method != "auto":
        fn = _backend(method)
        if fn is None:
            return SearchResult(SearchStatus.UNKNOWN, method, f"backend {method!r} is not installed",
                                elapsed=time.perf_counter() - t0)
        verifier = _Verifier(U, D, T)  # the rescaled arrays: check_residual's bound holds in their range
        return _checked(fn(U, D, T, timeout=timeout, tol=tol, seed=seed, **verifier.options(method)), U0, D0, T0, tol, verifier)

    run = _Portfolio(U, D, T, (U0, D0, T0), tol, timeout, seed, progress, t0, _Verifier(U, D, T))
    steps = _first_steps(run, narrow)
    return _narrow(run, steps) if narrow else _wide(run, steps)
