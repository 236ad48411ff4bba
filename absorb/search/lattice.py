"""Lattice reduction backend: a *finder* of index sets in the narrow regime (n > d²).

Why: for n > d² the problem ``K b = t`` (K is m×n, m = d², b ∈ {0,1}^n) is a
multi-dimensional subset sum whose coefficients are real numbers known to ~50 bits.  With r
equations of ~50 bits each and n unknowns its *density* n / (50·r) is low once d ≥ 3 (d = 3,
n = 128: 0.28), and there lattice reduction finds a planted solution as an unusually short
lattice vector (Lagarias–Odlyzko; Coster et al.), where meet-in-the-middle would need 2^{n/4}
sums per side.  For d = 2 (4 equations) the density is near 0.5 at n = 96 and reduction
needs large BKZ blocks: the backend then mostly spends its budget.

The embedding (Coster, Joux, LaMacchia, Odlyzko, Schnorr, Stern: the ±1 form, which needs
half the density of the 0/1 one when |S| ≈ n/2).  With ``R`` the r×n rows of ``K`` rotated
onto its row space (an SVD; dependent rows only add noise) and an integer scale ``σ``,
``A = round(σ R)``, ``a = round(σ W_rᵀ t)``, the basis rows are

    row i (i < n):  2c·e_i        | 0 | 2·A[:, i]
    row n:          c·(1, …, 1)   | c | 2·a

so a set S gives Σ_{i∈S} row_i − row_n = (c(2b − 1), −c, 2(A b − a)): entries ±c, then a
tail of a few units (the rounding of A and a, and the float error of the planted set).  Its
norm is about c·√(n+1), far below the lattice's typical shortest vector at low density.
LLL, then BKZ with growing block sizes (fpylll; block sizes 10, 20, 30, 40, …, with BKZ 2.0
preprocessing and linear pruning), reduce the basis; after each reduction every
basis vector of the form (±c, …, ±c | ±c | ·) is read back as a set S and handed to
:func:`~absorb.rigorous.relative_residual` (the check every finder makes; the dispatcher
re-checks S again on the caller's arrays).  ``σ`` is chosen so that the largest |R| entry is
2^bits with bits = 53, the precision a set planted in float64 holds, or fewer when r rows
of fewer bits already give 4(n + 1) bits in all (more only slow LLL down).  A set whose
residual is near ``tol`` = 1e-9 leaves a tail of ~10^6 units and is not found this way;
MITM and the MILP finders cover those.

Proving that no set exists (enumeration, fpylll only).  A second embedding of the same
shape, scaled to the tolerance rather than to float64's precision, is reduced (LLL, then
BKZ-10/20/… while the enumeration's estimated cost falls) and *every* lattice vector of
norm ≤ ρ is enumerated (Schnorr–Euchner, fpylll's ``Enumeration``); each vector of the
±c form is read back as a set and classified (float64 residual ≤ tol: ``found``; else an
exact-rational lower bound).  None within tol: ``infeasible``.

*The radius (rigorous).*  ε' = SEARCH_FACTOR·tol·t_hi (t_hi ≥ ‖T‖_F; the same search radius
and bound as :mod:`.mitm`), σ a power of two, ``A = rint(σ K̂)``, ``a = rint(σ t)`` (K̂ the
float64 K of :func:`khatri_rao`, t = vec T exactly), and the basis rows

    row i (i < n):  2c·e_i        | 0 | A[:, i]
    row n:          c·(1, …, 1)   | c | a.

A set S (indicator b) with ‖K b − t‖ ≤ ε' (exact reals; this is every S with relative residual
≤ ε'/‖T‖_F) gives the lattice vector v_S = Σ_{i∈S} row_i − row_n = (c(2b − 1), −c, A b − a)
of squared norm c²(n + 1) + ‖A b − a‖², and

    A b − a = σ(K b − t) + σ(K̂ − K) b + (A − σK̂) b − (a − σ t),

so, row by row with the triangle inequality,
‖A b − a‖ ≤ σ ε' + σ‖κ‖ + ‖ρ‖ =: τ, where κ_j = u(1+2u)·Σ_i |K̂_ji| bounds Σ_i |K̂_ji − K_ji|
(each K̂ entry is one rounded product, :func:`khatri_rao`) and ρ_j = Σ_i |A_ji − σK̂_ji| +
|a_j − σ t_j| (σK̂ and σt are exact, σ being a power of two inside the range of
:func:`~absorb.rigorous.magnitudes_ok`, and so is each difference with its rounding; the
sums are taken upwards with Higham's γ).  Hence every such S is a lattice vector of squared
norm ≤ R² := c²(n+1) + ⌈τ⌉² (an integer), whatever b.  The enumeration runs at radius
R²·(1 + 2^-8) to cover the rounding of fplll's floating-point Gram–Schmidt data and of its
walk, returns ±v once, and is complete unless it is stopped (time budget) or returns its cap
of solutions: both give ``unknown``.  That the margin covers the rounding is *checked*, not
assumed: :func:`~._kernel.certify_float_gso` computes the basis's Gram–Schmidt data exactly
(integers) once, measures fplll's float μ and ‖b*‖² against them and bounds the walk's float
error level by level (its docstring holds the argument; the walk's arithmetic is fplll's
double recurrence); where the bound may exceed the margin the list is not complete
(``unknown``).  Every S with relative residual ≤ ε'/t_hi is therefore among the ±c-form
vectors read back; the ``bound`` is min(ε'/t_hi·(1 − 4u), the exact lower bounds of the
candidates that failed), > tol unless a candidate within tol was missed by float64 only
(then ``unknown``).  Vectors not of the ±c form are no sets and are skipped.
σ is chosen so that σε' ≈ 6·(typical rounding √r·(n+1)/4), c so that c√(n+1) ≈ 4τ (the
±c part dominates the radius; d = 2, n = 64 generic: ~10^6 nodes, under a second).

*Integer data: the kernel route.*  When U, D and T are integers after one power-of-two
scale each (:func:`integer_system`: K = 2^-e·Ki, t = 2^-e·ti exactly; market split), K b − t
is 2^-e times an integer vector, so every set with relative residual < 2^-e/‖T‖ solves
Ki b = ti exactly, and when 2^-e/t_hi > tol the question is exactly that.  Its solutions are
the vectors with all n + 1 entries ±1 of L0 = {Σ_i a_i·2e_i + λ·(1, …, 1) : Ki a + λ ti = 0}
(λ = −1, a = b; Aardal–Hurkens–Lenstra's kernel lattice in the ±1 form).  A basis of L0 is
read off an LLL-reduced embedding with a large tail weight (:func:`kernel_basis`: the rows
whose tail vanished, a basis of L0 when the other rows' tails are linearly independent,
which is checked in exact integers), reduced by BKZ (10, …, 40 while the estimate says it
pays), and enumerated by :func:`holder_enumerate`: Schnorr–Euchner with, besides the ℓ2 bound
‖π_t(v)‖² ≤ n + 1, the ∞-norm (Hölder) prunes of Ritter and Wassermann ("Attacking the market
split problem with lattice point enumeration", 2002): ‖π_t(v)‖² = ⟨v, π_t(v)⟩ ≤ ‖π_t(v)‖_1 and
|y_t| ≤ ‖b*_t‖_1/‖b*_t‖², both implied by ‖v‖_∞ ≤ 1.  Every vector it returns is an exact
integer combination of the basis and is read back and re-checked like the other routes';
no ±1 vector means no set within 2^-e/t_hi (the ``bound``).  The Gram–Schmidt data are
float64 with the same relative margin 2^-8 on every prune as the ℓ2 route's radius, and an
empty (or any complete) list is returned only after :func:`~._kernel.certify_float_gso` has
proved from the exact data that no float error of the walk exceeds that margin.
Measured (market split, ``benchmarks/bench_market_nodes.py``): m = 5, 6, 7 need about
6·10^3, 2·10^5 and 1.3·10^7 nodes against the ℓ2 enumeration's 1.2·10^5, 10^7 and 1.4·10^9.
The enumeration is compiled by numba (optional, ``absorb[lattice]``; 3.5–4.8·10^6 nodes a
CPU second, one thread a core); without numba the kernel lattice is enumerated by fplll's
ℓ2 enumeration instead (m ≤ 6 in seconds).

Soundness of the finder: a reduction that finds nothing proves nothing (``unknown``).

Optional dependency: ``fpylll`` (LLL and BKZ, ``pip install absorb[lattice]``); without it
``python-flint``'s LLL is used (no BKZ: fewer sets found); without both the backend answers
``unknown`` saying so, and the ``auto`` portfolio skips it.
"""

from __future__ import annotations

import importlib
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from absorb._dask import cores
from absorb._sandbox import BudgetExceeded, run_limited, start_limited
from absorb.rigorous import UNIT_ROUNDOFF, frobenius_bounds, gamma, magnitudes_ok, relative_residual

from ._common import classify_candidates, khatri_rao
from ._embedding import candidates, embedding
from ._kernel import (
    _ENUM_MARGIN,
    _MAX_SOLUTIONS,
    _jitted,
    certify_float_gso,
    holder_enumerate,
    integer_system,
    kernel_basis,
)
from ._types import SearchResult, SearchStatus
from .mitm import SEARCH_FACTOR

__all__ = ["LATTICE_MAX_N", "LatticePlan", "lattice_engine", "lattice_plan", "lattice_seconds", "solve_lattice"]

#: the lattice has dimension n + 1 + r; past this many units a reduction is out of budget
LATTICE_MAX_N = 400
#: BKZ block sizes tried in turn after LLL (each with at most _TOURS tours)
_BLOCKS = (10, 20, 30, 40, 46, 52, 58)
_TOURS = 4
#: a BKZ block size costs about this many times the previous one (measured 30 → 40: 3.75)
_GROWTH = 4.0
#: LLL's measured cost (seconds) ≈ _LLL_RATE · dim³ for the rows here (fpylll on a loaded
#: 2-core machine: d = 2, n = 64 ≈ 0.3–0.5 s; d = 3, n = 128 ≈ 1.4–4 s); a rough gate
_LLL_RATE = 1.5e-6
#: the proof's enumeration: nodes a second (fplll, loaded 2-core machine: d = 2, n = 64,
#: ~10^6 nodes in 0.13–0.2 s; counted at half that), the radius's margin for fplll's float
#: Gram–Schmidt data, the most solutions one enumeration may return (past it: unknown), the
#: BKZ block sizes tried while the estimated enumeration still outweighs the reduction
_NODE_RATE = 4.0e6
_PROOF_BLOCKS = (10, 20, 30, 40)
#: σε' ≈ _TAIL × the typical rounding of the tail (√r·(n+1)/4), c√(n+1) ≈ _C_WEIGHT·τ: the
#: fewest nodes on d = 2, n = 64 generic among σε'/rounding ∈ {2, 6, 25}, c√(n+1)/τ ∈ {1, 4, 16}
_TAIL = 6.0
_C_WEIGHT = 4.0
#: the exact route (integer data: market split): entries of at most this many bits after a
#: power-of-two scale; the measured nodes of the ∞-norm pruned enumeration ≈ (the ℓ2
#: estimate)^_HOLDER_EXP (market split m = 5, 6, 7, seeds 100m + 0..2, after BKZ-10/30:
#: exponents 0.74–0.77); its nodes a second with numba (3.5–4.8·10^6 a CPU second measured
#: for one thread, counted at half); the bound it proves is 2^-e/t_hi shrunk by _EXACT_SLACK
#: (so that the checker's own t_hi, rounded differently, never finds it overstated); the
#: BKZ block sizes (market split m = 7: BKZ-40 cuts the nodes 1.6× against BKZ-30)
_HOLDER_EXP = 0.78
_HOLDER_RATE_JIT = 2.0e6
_EXACT_SLACK = 2.0**-20
_KERNEL_BLOCKS = (10, 20, 30, 40)
_FPLLL_SECONDS = 1.0
_u = UNIT_ROUNDOFF


def lattice_engine() -> str | None:
    """The reduction library this backend will use: ``"fpylll"``, ``"flint"`` or ``None``
    (imported, not only looked up: fpylll installed without cysignals fails to import)."""
    for name in ("fpylll", "flint"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return name
    return None


def lattice_seconds(n: int, r: int) -> float:
    """Rough seconds of the first (LLL) reduction of the (n + 1 + r)-dimensional basis."""
    return _LLL_RATE * float(n + 1 + r) ** 3


def _reduce(engine: str, basis: list[list[int]], deadline: float) -> Iterator[tuple[str, list[list[int]]]]:
    """The reduced basis vectors after LLL and after each BKZ block size (fpylll only), until
    ``deadline`` (perf_counter seconds): ``(step, vectors)``.  LLL itself cannot be cut
    short, nor a BKZ tour (fplll checks its time between tours): :func:`_reduced` runs this
    in a child process, killed at the deadline."""
    if engine == "flint":
        import flint

        R = flint.fmpz_mat(basis).lll()
        yield "LLL", [[int(R[i, j]) for j in range(R.ncols())] for i in range(R.nrows())]
        return
    from fpylll import BKZ, LLL, IntegerMatrix, Pruning
    from fpylll.fplll.bkz_param import Strategy

    # fpylll's wheels lack fplll's strategy file: BKZ 2.0 preprocessing and linear pruning
    # by hand (d = 2, n = 96 planted: BKZ-40 reached in 41 s instead of 85 s, loaded machine)
    strategies = [Strategy(b, preprocessing_block_sizes=[b - 16] if b > 26 else [],
                           pruning_parameters=[Pruning.LinearPruningParams(b, b // 2)] if b > 20 else [])
                  for b in range(max(_BLOCKS) + 1)]

    M = IntegerMatrix.from_matrix(basis)
    LLL.reduction(M)
    yield "LLL", [list(M[i]) for i in range(M.nrows)]
    last = 0.0  # seconds of the previous block size
    for block in _BLOCKS:
        left = deadline - time.perf_counter()
        # fplll checks max_time only between tours: a block whose first tour is expected
        # (from the previous block, ×_GROWTH) to outlast the budget is not started
        if block > M.nrows or left <= 0.01 or _GROWTH * last / _TOURS > left:
            return
        start = time.perf_counter()
        param = BKZ.Param(block_size=block, strategies=strategies, max_loops=_TOURS, max_time=left,
                          flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS | BKZ.MAX_TIME)
        try:
            BKZ.reduction(M, param)
        except RuntimeError:
            # fplll gives up in double precision on some large bases ("infinite loop in
            # babai"); once more in long double, else stop with what LLL and the previous
            # blocks gave (the basis is still a basis of the same lattice)
            try:
                BKZ.reduction(M, param, float_type="ld")
            except RuntimeError:
                return
        last = time.perf_counter() - start
        yield f"BKZ-{block}", [list(M[i]) for i in range(M.nrows)]


def _stages(engine: str, basis: list[list[int]], deadline: float) -> Iterator[tuple[str, list[list[int]]] | None]:
    """:func:`_reduce`'s stages, then ``None`` (the end), in :func:`_reduced`'s child process."""
    yield from _reduce(engine, basis, deadline)
    yield None


def _reduced(engine: str, basis: list[list[int]], deadline: float, note: list[str]
             ) -> Iterator[tuple[str, list[list[int]]]]:
    """:func:`_reduce`'s stages, computed in a child process (:func:`~absorb._sandbox.start_limited`,
    the next stage while this one's sets are checked) that is killed at ``deadline``: LLL
    cannot be interrupted, and its cost estimate assumes a quiet machine (under load a
    finder slice of the ``auto`` portfolio once outlasted a 60 s budget by 23 s).  Why it
    stopped early (the deadline, memory, a crash) is appended to ``note``."""
    job = start_limited(_stages, engine, basis, deadline, ahead=True)
    try:
        while True:
            try:
                stage = job.next(max(deadline - time.perf_counter(), 0.01))
            except BudgetExceeded as exc:
                note.append(f"the reduction was stopped ({exc.kind}: {exc})")
                return
            if stage is None:
                return
            yield stage
    finally:
        job.close()


def _integral(K: np.ndarray, t: np.ndarray, e: int) -> bool:
    """Whether 2^e·K and 2^e·t are integers (exact: scaling by a power of two is)."""
    return bool(np.all(np.ldexp(K, e) % 1 == 0) and np.all(np.ldexp(t, e) % 1 == 0))


def proof_embedding(K: np.ndarray, t: np.ndarray, eps: float) -> tuple[list[list[int]], int, int, int]:
    """The proof's basis (rows of Python ints), the integer R² every set with ‖K b − t‖ ≤ eps
    lies within, c, and log2 σ (module docstring, *Proving that no set exists*)."""
    m, n = K.shape
    absK = np.abs(K)
    up = 1 + 4 * gamma(n + m + 8)  # a computed sum of ≤ n + m + 8 non-negative terms, times up: ≥ exact
    rounding = math.sqrt(m) * (n + 1) / 4
    e = int(round(math.log2(_TAIL * rounding / eps)))
    # exact data (integers, or dyadic numbers with few bits: market split) round to nothing
    # at a smaller σ: then the tail's granularity (4 units) is what keeps the non-solutions
    # out, and the radius is c²(n+1) plus a unit or two instead of (c√(n+1)/4)²
    f = e
    while f > e - 64 and _integral(K, t, f - 1):
        f -= 1
    if f < e - 2 and _integral(K, t, f):
        e = f + 2
    sigma = math.ldexp(1.0, e)
    SK, st = K * sigma, t * sigma  # exact: powers of two, in range (checked by the caller)
    if not (np.all(np.isfinite(SK)) and np.all(np.isfinite(st))) or not -900 <= e <= 300:
        raise ValueError(f"the scale 2^{e} leaves the float range (tol too small or too large)")
    A, a = np.rint(SK), np.rint(st)
    rho = (np.abs(A - SK).sum(axis=1) + np.abs(a - st)) * up  # each difference exact
    kappa = sigma * _u * (1 + 2 * _u) * absK.sum(axis=1) * up
    tau = (sigma * eps * (1 + 2 * _u) + float(np.sqrt(np.sum(rho * rho))) * up
           + float(np.sqrt(np.sum(kappa * kappa))) * up) * up
    tau_int = math.ceil(tau * (1 + 2.0**-30)) + 1
    c = 1 << max(0, math.ceil(math.log2(_C_WEIGHT * tau_int / math.sqrt(n + 1))))
    basis = []
    for i in range(n):
        row = [0] * (n + 1) + [int(x) for x in A[:, i]]
        row[i] = 2 * c
        basis.append(row)
    basis.append([c] * (n + 1) + [int(x) for x in a])
    return basis, c * c * (n + 1) + tau_int * tau_int, c, e


@dataclass
class LatticePlan:
    """The proof's reduced basis and its enumeration's estimated cost, computed once by
    :func:`lattice_plan` (the portfolio compares :meth:`seconds` with MITM's estimate)."""

    why_not: str | None = None
    basis: Any = None  # fpylll IntegerMatrix, reduced
    R2: int = 0
    c: int = 0
    sigma_log2: int = 0
    eps_search: float = 0.0
    t_hi: float = 0.0
    nodes: float = math.inf
    reduction: str = ""
    elapsed: float = 0.0
    #: "embedding" (the tolerance-scaled lattice, fplll's ℓ2 enumeration) or "kernel" (exact
    #: integer data: the kernel lattice and :func:`holder_enumerate`; ``sigma_log2`` is then
    #: e of :func:`integer_system`, the data's granularity 2^-e)
    route: str = "embedding"
    rate: float = _NODE_RATE
    #: the kernel route's enumeration: "numba" (:func:`holder_enumerate`, ∞-norm pruned) or
    #: "fplll" (ℓ2 only: without numba, or when fplll's estimate is under _FPLLL_SECONDS,
    #: where numba's first compilation, 5–10 s, would cost more than it saves)
    engine: str = "fplll"

    def seconds(self) -> float:
        """Estimated seconds of the enumeration (``inf`` when none can be made)."""
        return math.inf if self.why_not is not None else self.nodes / self.rate


def _enum_nodes(M: Any, R2: float) -> float:
    """Estimated nodes of a full enumeration of radius √R2 (Gaussian heuristic per level:
    Σ_k V_k(√R2) / Π of the last k Gram–Schmidt norms, halved for ±v; in logs, so a
    hopeless radius gives a huge number rather than an overflow)."""
    from fpylll import GSO

    G = GSO.Mat(M)
    G.update_gso()
    dim = M.nrows
    logs = [0.5 * math.log(G.get_r(i, i)) for i in range(dim)]
    log_r = 0.5 * math.log(R2)
    terms, tail = [], 0.0
    for k in range(1, dim + 1):
        tail += logs[dim - k]
        terms.append(0.5 * k * math.log(math.pi) + k * log_r - math.lgamma(0.5 * k + 1) - tail)
    top = max(terms)
    if top > 700:
        return math.inf
    return 0.5 * math.exp(top) * sum(math.exp(x - top) for x in terms)


def lattice_plan(U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, budget: float = 10.0) -> LatticePlan:
    """Build and reduce the proof's embedding (LLL, then BKZ blocks while the estimated
    enumeration costs more than the next block is expected to, within ``budget`` seconds)."""
    t0 = time.perf_counter()
    if lattice_engine() != "fpylll":
        return LatticePlan("the enumeration that proves infeasibility needs fpylll (pip install absorb[lattice])")
    n = U.shape[0]
    if n > LATTICE_MAX_N:
        return LatticePlan(f"n = {n} > {LATTICE_MAX_N}: a reduction of that dimension is out of reach")
    if not (tol > 0 and magnitudes_ok(U, D, T)):
        return LatticePlan("tol must be positive and every entry in the range where the radius's rounding bounds hold")
    K = khatri_rao(U, D)
    if not np.any(K):
        return LatticePlan("K = 0: nothing to embed")
    if lattice_seconds(n, K.shape[0]) > 2 * budget:
        return LatticePlan(f"LLL of the {n + 1}-row basis is expected to take over twice the budget {budget:g}s")
    _, t_hi = frobenius_bounds(T)
    eps = SEARCH_FACTOR * tol * t_hi
    from fpylll import BKZ, LLL, IntegerMatrix

    exact = integer_system(U, D, T)
    ker = None
    if exact is not None and math.ldexp(1.0, -exact[2]) / t_hi * (1 - _EXACT_SLACK) > tol:
        ker = kernel_basis(exact[0], exact[1])
    if ker is not None:  # the exact route: every set within tol solves K b = t exactly
        route, rate, blocks, e, c, R2 = "kernel", _NODE_RATE, _KERNEL_BLOCKS, exact[2], 1, n + 1
        M = IntegerMatrix.from_matrix(ker)
    else:
        try:
            basis, R2, c, e = proof_embedding(K, T.ravel().astype(np.float64), eps)
        except ValueError as exc:
            return LatticePlan(str(exc))
        route, rate, blocks = "embedding", _NODE_RATE, _PROOF_BLOCKS
        M = IntegerMatrix.from_matrix(basis)
    try:
        LLL.reduction(M)
    except RuntimeError as exc:  # fplll gives up in floating point on some bases
        return LatticePlan(f"fpylll's LLL failed: {exc}")
    done, last = "LLL", time.perf_counter() - t0
    R2f = float(R2) * (1 + _ENUM_MARGIN)

    engine = "fplll"

    def estimate() -> float:  # numba's kernel enumeration prunes by the ∞-norm too: measured exponent
        nonlocal engine, rate
        nodes = _enum_nodes(M, R2f)
        if route == "kernel" and nodes / _NODE_RATE > _FPLLL_SECONDS and _jitted() is not None:
            engine, rate = "numba", _HOLDER_RATE_JIT * min(cores(), 8)  # one thread a core
            return nodes ** _HOLDER_EXP
        engine, rate = "fplll", _NODE_RATE
        return nodes

    nodes = estimate()
    for block in blocks:
        left = budget - (time.perf_counter() - t0)
        # stop once the enumeration is cheap next to the last block, or hopeless after BKZ-20
        # (a block size cuts the estimate by 4–6× at d = 2, n = 64–80; at n = 80 ~10^12
        # nodes remain; market split m = 8 by the embedding route: ~10^11 after BKZ-40), or
        # the next block would not fit (fplll stops only between tours)
        hopeless = block > 20 and nodes / rate > 30 * budget
        if block > M.nrows or nodes / rate <= 2 * last or hopeless or _GROWTH * last > left:
            break
        start = time.perf_counter()
        param = BKZ.Param(block_size=block, max_loops=_TOURS, max_time=max(left, 0.01),
                          flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS | BKZ.MAX_TIME)
        try:
            BKZ.reduction(M, param)
        except RuntimeError:
            break
        done, last = f"BKZ-{block}", time.perf_counter() - start
        nodes = estimate()
    return LatticePlan(None, M, R2, c, e, eps, t_hi, nodes, done, time.perf_counter() - t0, route, rate, engine)


def _enumerate(M: Any, R2: int, deadline: float) -> tuple[list[list[int]] | None, float, str]:
    """Every vector of the lattice spanned by M's rows with squared norm ≤ R²·(1 + margin)
    (one of ±v): ``(vectors, nodes, "")``, or ``(None, nodes, why)`` when the enumeration
    was stopped at the deadline (main thread only: elsewhere the caller's estimate gates it)
    or returned its cap of solutions."""
    from fpylll import GSO, Enumeration, EnumerationError

    if time.perf_counter() >= deadline:
        return None, 0.0, "the time budget was spent before the enumeration"
    G = GSO.Mat(M)
    G.update_gso()
    E = Enumeration(G, nr_solutions=_MAX_SOLUTIONS)
    timer = threading.current_thread() is threading.main_thread()
    if timer:
        from cysignals.alarm import AlarmInterrupt, alarm, cancel_alarm

        alarm(max(deadline - time.perf_counter(), 0.01))
    try:
        try:
            sols = E.enumerate(0, M.nrows, float(R2) * (1 + _ENUM_MARGIN), 0)
        finally:  # (an alarm due just now is caught below, whichever line it lands on)
            if timer:
                cancel_alarm()
    except EnumerationError:  # fplll: "no solution found"
        sols = []
    except KeyboardInterrupt as exc:  # cysignals' AlarmInterrupt is one
        if timer and isinstance(exc, AlarmInterrupt):
            return None, float(E.get_nodes()), "the enumeration was stopped at the time budget"
        raise
    if len(sols) >= _MAX_SOLUTIONS:
        return None, float(E.get_nodes()), f"the enumeration returned its cap of {_MAX_SOLUTIONS} vectors"
    # the list is complete only if fplll's float Gram–Schmidt data are close enough to the exact
    # ones (checked once, in integers; the walk's arithmetic is fplll's double recurrence)
    k = M.nrows
    mu = np.array([[G.get_mu(i, j) if j < i else 0.0 for j in range(k)] for i in range(k)])
    rr = np.array([G.get_r(i, i) for i in range(k)])
    why = certify_float_gso([list(M[i]) for i in range(k)], mu, rr, None, None, int(R2), _ENUM_MARGIN)
    if why:
        return None, float(E.get_nodes()), f"fplll's float Gram–Schmidt data failed their exact check ({why})"
    out = []
    for _, coeffs in sols:
        x = [int(round(v)) for v in coeffs]
        out.append([int(v) for v in M.multiply_left(x)])
    return out, float(E.get_nodes()), ""


def prove_lattice(U: np.ndarray, D: np.ndarray, T: np.ndarray, plan: LatticePlan, *, tol: float,
                  deadline: float, t0: float) -> SearchResult:
    """Enumerate the plan's reduced lattice inside the rigorous radius: ``found``,
    ``infeasible`` (complete enumeration, no set within tol) or ``unknown``."""
    n = U.shape[0]
    if plan.route == "kernel":
        if plan.engine == "numba":
            basis = [list(plan.basis[i]) for i in range(plan.basis.nrows)]
            # the first ±1 vector is an exact solution of K b = t (residual 0): found, stop there
            vectors, nodes, why = holder_enumerate(basis, deadline, first=True)
            what = "∞-norm pruned (numba)"
        else:
            vectors, nodes, why = _enumerate(plan.basis, plan.R2, deadline)
            what = "fplll ℓ2"
        cert = {"kind": "lattice-enumeration", "route": "kernel", "engine": f"fpylll+{plan.engine}",
                "reduction": plan.reduction, "nodes": nodes, "granularity_log2": -plan.sigma_log2}
        exact_bound = math.ldexp(1.0, -plan.sigma_log2) / plan.t_hi * (1 - _EXACT_SLACK)
        how = f"fpylll {plan.reduction}, kernel lattice, {what} enumeration of {nodes:.3g} nodes"
    else:
        vectors, nodes, why = _enumerate(plan.basis, plan.R2, deadline)
        cert = {"kind": "lattice-enumeration", "engine": "fpylll", "reduction": plan.reduction, "nodes": nodes,
                "radius_sq": str(plan.R2), "c": plan.c, "sigma_log2": plan.sigma_log2,
                "search_radius": plan.eps_search}
        exact_bound = plan.eps_search / plan.t_hi * (1 - 4 * _u)
        how = f"fpylll {plan.reduction}, enumeration of {nodes:.3g} nodes"
    if vectors is None:
        return SearchResult(SearchStatus.UNKNOWN, "lattice", why, elapsed=time.perf_counter() - t0, certificate=cert)
    cands = [S for S in dict.fromkeys(candidates(iter(vectors), n, plan.c)) if S]
    S, res, lower = classify_candidates(U, D, T, cands, tol)
    if S is not None:
        return SearchResult(SearchStatus.FOUND, "lattice", f"{how}, re-verified in float64", S=S, residual=res,
                            elapsed=time.perf_counter() - t0, certificate={**cert, "kind": "lattice"})
    bound = min(exact_bound, lower)
    cert["candidates"] = len(cands)
    if bound > tol:
        return SearchResult(SearchStatus.INFEASIBLE, "lattice",
                            f"complete enumeration of the lattice inside the rigorous radius ({how}, "
                            f"{len(cands)} candidate sets, none within tol)", bound=bound,
                            elapsed=time.perf_counter() - t0, certificate=cert)
    return SearchResult(SearchStatus.UNKNOWN, "lattice", f"a candidate has exact residual ≤ tol but float64 "
                        f"residual > tol (bound {bound:.3e})", elapsed=time.perf_counter() - t0, certificate=cert)


def solve_lattice(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0, plan: LatticePlan | None = None, prove: bool = True, find: bool = True,
    rival: float = math.inf,
) -> SearchResult:
    """With fpylll and ``prove``: the proof's enumeration first when its estimate fits in
    the budget (``found``, ``infeasible`` or ``unknown``); then, with what is left, reduce
    the finder's embedding of ``K b = vec(T)`` and verify every set read off it: ``found``
    (float64 residual ≤ tol) or ``unknown``.  ``plan`` is :func:`lattice_plan`'s result for
    the same arrays and tol when the caller has it.  ``find=False`` skips the finder;
    ``rival`` (seconds: another backend's estimate for a complete run) caps the plan's
    reduction at a tenth of it and the enumeration at half of it.  ``seed`` is unused
    (deterministic)."""
    t0 = time.perf_counter()
    deadline = t0 + timeout
    proof_note = ""

    def unknown(reason: str, **cert: object) -> SearchResult:
        return SearchResult(SearchStatus.UNKNOWN, "lattice", reason + proof_note, elapsed=time.perf_counter() - t0,
                            certificate=dict(cert) or None)

    if prove and lattice_engine() == "fpylll":
        if plan is None:  # reduced in a child process, killed when the step's budget is spent
            try:
                plan = run_limited(lattice_plan, U, D, T, tol=tol, timeout=timeout,
                                   budget=min((0.25 if find else 0.1) * timeout, max(0.2, 0.1 * rival)))
            except BudgetExceeded as exc:
                plan = LatticePlan(f"the reduction was stopped ({exc.kind}: {exc})")
        left = min(timeout - (time.perf_counter() - t0), 0.5 * rival)
        if plan.why_not is not None:
            proof_note = f"; no proof: {plan.why_not}"
        elif plan.seconds() > left:
            proof_note = (f"; no proof: the enumeration after {plan.reduction} is estimated at {plan.nodes:.2g} "
                          f"nodes (~{plan.seconds():.3g}s), over the {max(left, 0):.3g}s it may take")
        else:
            out = prove_lattice(U, D, T, plan, tol=tol, deadline=deadline, t0=t0)
            if out.status is not SearchStatus.UNKNOWN:
                return out
            proof_note = f"; no proof: {out.reason}"
        timeout = max(timeout - (time.perf_counter() - t0), 0.0)
        if find and timeout <= 0.01:
            return unknown("time budget spent on the proof")
    if not find:
        return SearchResult(SearchStatus.UNKNOWN, "lattice", proof_note[2:] or "no proof: fpylll is not installed",
                            elapsed=time.perf_counter() - t0)

    engine = lattice_engine()
    if engine is None:
        return unknown("neither fpylll nor python-flint is installed (pip install absorb[lattice])")
    n = U.shape[0]
    if n > LATTICE_MAX_N:
        return unknown(f"n = {n} > {LATTICE_MAX_N}: a reduction of that dimension is out of reach")
    K = khatri_rao(U, D)
    lll = lattice_seconds(n, K.shape[0])
    if lll > 2 * timeout:  # the slice would be spent before LLL ends (it is stopped then)
        return unknown(f"LLL of the {n + 1}-row basis is expected to take ~{lll:.0f}s, over twice "
                       f"the budget {timeout:g}s")
    t = T.ravel().astype(np.float64)
    if not (np.all(np.isfinite(K)) and np.any(K)):
        return unknown("K is zero or not finite: nothing to embed")
    basis = embedding(K, t)
    if basis is None:
        return unknown("the rows scaled to integers leave float64's range (entries near the subnormals against the target)")
    tried: set[tuple[int, ...]] = set()
    done, stopped = "nothing", []
    for done, vectors in _reduced(engine, basis, deadline, stopped):
        for S in candidates(iter(vectors), n):
            if S in tried or not S:
                continue
            tried.add(S)
            res = relative_residual(U, D, T, S)
            if res <= tol:
                return SearchResult(SearchStatus.FOUND, "lattice", f"{engine} {done} reduced basis, "
                                    "re-verified in float64", S=S, residual=res,
                                    elapsed=time.perf_counter() - t0,
                                    certificate={"engine": engine, "reduction": done})
    return unknown(f"{engine} reduction up to {done} found no set within tol "
                   f"({len(tried)} candidate sets failed verification; budget {timeout:g}s)"
                   + "".join(f"; {why}" for why in stopped),
                   engine=engine, reduction=done, failed_candidates=len(tried))
