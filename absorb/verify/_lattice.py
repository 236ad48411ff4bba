"""The checker's own lattice enumeration: no index set S has ‖D_S U_S − T‖_F < ρ = R·‖T‖_F.

Written for the checker alone (it shares nothing with the search; fpylll is a library).
With ``K`` the d²×n matrix of columns ``k_i = vec(w_i u_iᵀ)`` (exact reals: products of two
floats), ``t = vec(T)`` and ``b ∈ {0,1}^n`` the indicator of S, the question is whether
``‖K b − t‖ < ρ``.

Embedding. For a power of two σ and an integer c ≥ 1, with any integers ``A`` (m×n) and
``a`` (m) (here the rounded σK̂ and σt), the rows

    row i (i < n):  2c·e_i        | 0 | A[:, i]
    row n:          c·(1, …, 1)   | c | a

span a lattice holding, for every S, ``v_S = Σ_{i∈S} row_i − row_n = (c(2b − 1), −c, A b − a)``
with ‖v_S‖² = c²(n + 1) + ‖A b − a‖².  Over exact reals
``A b − a = σ(K b − t) + (A − σK) b − (a − σt)``, so with
``δ_j = Σ_i |A_ji − σK_ji| + |a_j − σt_j|`` (computed here in exact rationals, K's entries
being exact products of the weights' floats),

    ‖K b − t‖ < ρ  ⇒  ‖A b − a‖ < σρ + ‖δ‖ ≤ τ := ⌈σρ⌉ + ⌈‖δ‖⌉  ⇒  ‖v_S‖² ≤ R² := c²(n+1) + τ².

ρ is bounded above by R·t_hi with t_hi ≥ ‖T‖_F (an exact sum of squares, then a square root
rounded up).  fpylll reduces the basis (LLL, BKZ-20) and enumerates every lattice vector of
squared norm ≤ R²·(1 + 2^-8) (the margin covers its floating-point Gram–Schmidt data); each
vector of the form (±c, …, ±c | ±c | ·) is read back as a set and measured in exact
rationals; the others are no sets.  An enumeration stopped by the time budget, or one that
returned its cap of vectors, proves nothing (a string says why).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.verify._mitm import _exact_rel_sq
from absorb.verify._numerics import _in_range

MAX_N = 400
"""Widest block the checker's enumeration takes on (lattice dimension n + 1 + d²)."""
MAX_SOLUTIONS = 4096
_MARGIN = 2.0**-8


@dataclass(frozen=True)
class LatticeResult:
    """``closer`` lists (S, exact relative distance) of the sets found closer than R (empty:
    proved that every S is at relative distance ≥ R); plus the work done."""

    closer: list[tuple[list[int], float]]
    nodes: float
    vectors: int
    reduction: str


def _isqrt_up(q: Fraction) -> int:
    """The least integer ≥ √q (q ≥ 0, exact)."""
    k = math.isqrt(math.ceil(q))
    return k if k * k >= q else k + 1


def _embedding(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float) -> tuple[list[list[int]], int, int]:
    """The basis, R² (an integer) and c of the module docstring."""
    n, d = U.shape
    m = d * d
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, m).T  # m×n floats (only to pick A)
    t = T.reshape(-1).astype(np.float64)
    t_sq = sum((Fraction(float(x)) ** 2 for x in t), Fraction(0))
    t_hi = math.sqrt(float(t_sq)) * (1 + 2.0**-40)
    while Fraction(t_hi) ** 2 < t_sq:
        t_hi *= 1 + 2.0**-40
    rho = Fraction(R) * Fraction(t_hi)
    rounding = math.sqrt(m) * (n + 1) / 4  # typical ‖δ‖: σρ about six times it
    e = int(round(math.log2(6 * rounding / float(rho))))
    if not -900 <= e <= 300:
        raise ValueError(f"the scale 2^{e} leaves the float range")
    sigma = Fraction(2) ** e
    A = np.rint(K * float(sigma))
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(t * float(sigma)))):
        raise ValueError(f"the scale 2^{e} leaves the float range")
    a = np.rint(t * float(sigma))
    Uq = [[Fraction(float(v)) for v in row] for row in U]
    Dq = [[Fraction(float(v)) for v in row] for row in D]
    delta_sq = Fraction(0)
    for j in range(m):
        r_, c_ = divmod(j, d)
        dj = abs(Fraction(int(a[j])) - sigma * Fraction(float(t[j])))
        dj += sum((abs(Fraction(int(A[j, i])) - sigma * Dq[r_][i] * Uq[i][c_]) for i in range(n)), Fraction(0))
        delta_sq += dj * dj
    tau = math.ceil(sigma * rho) + _isqrt_up(delta_sq)
    c = 1 << max(0, math.ceil(math.log2(4 * tau / math.sqrt(n + 1))))
    basis = []
    for i in range(n):
        row = [0] * (n + 1) + [int(x) for x in A[:, i]]
        row[i] = 2 * c
        basis.append(row)
    basis.append([c] * (n + 1) + [int(x) for x in a])
    return basis, c * c * (n + 1) + tau * tau, c


def lattice_no_set_closer(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float,
                          budget: float = 60.0) -> LatticeResult | str:
    """Prove that every S has ‖D_S U_S − T‖_F ≥ R·‖T‖_F, or return the sets that do not (in
    ``closer``, exact); a string says why the check was not done.  ``budget`` (seconds)
    stops the enumeration (in the main thread; elsewhere it runs to its end)."""
    try:
        from fpylll import BKZ, GSO, LLL, Enumeration, EnumerationError, IntegerMatrix
    except ImportError:
        return "fpylll is not installed (pip install absorb[lattice])"
    n, d = U.shape
    if not (R > 0 and math.isfinite(R)):
        return "the radius must be a positive number"
    if n > MAX_N:
        return f"n = {n} > {MAX_N}: out of the enumeration's reach"
    if not _in_range(U, D, T) or not np.any(T):
        return "an entry is outside the range where the checker's float64 bounds hold (or T = 0)"
    U, D = U.astype(np.float64, copy=False), D.astype(np.float64, copy=False)
    t0 = time.perf_counter()
    try:
        basis, R2, c = _embedding(U, D, T, R)
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        return f"no embedding: {exc}"
    M = IntegerMatrix.from_matrix(basis)
    try:
        LLL.reduction(M)
    except RuntimeError as exc:  # fplll gives up in floating point on some bases
        return f"fpylll's LLL failed: {exc}"
    reduction = "LLL"
    if M.nrows > 20:
        try:  # a failed BKZ leaves a basis of the same lattice: the enumeration is only slower
            BKZ.reduction(M, BKZ.Param(block_size=20, max_loops=4, flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS))
            reduction = "BKZ-20"
        except RuntimeError:
            pass
    G = GSO.Mat(M)
    G.update_gso()
    E = Enumeration(G, nr_solutions=MAX_SOLUTIONS)
    timer = threading.current_thread() is threading.main_thread()
    if timer:
        from cysignals.alarm import AlarmInterrupt, alarm, cancel_alarm

        alarm(max(budget - (time.perf_counter() - t0), 0.01))
    try:
        try:
            sols = E.enumerate(0, M.nrows, float(R2) * (1 + _MARGIN), 0)
        finally:  # (an alarm due just now is caught below, whichever line it lands on)
            if timer:
                cancel_alarm()
    except EnumerationError:  # no vector within the radius
        sols = []
    except KeyboardInterrupt as exc:  # cysignals' AlarmInterrupt is one
        if timer and isinstance(exc, AlarmInterrupt):
            return f"the enumeration was stopped at the checker's budget of {budget:g}s ({E.get_nodes()} nodes)"
        raise
    if len(sols) >= MAX_SOLUTIONS:
        return f"the enumeration returned its cap of {MAX_SOLUTIONS} vectors"
    closer: list[tuple[list[int], float]] = []
    seen: set[tuple[int, ...]] = set()
    Rq = Fraction(R)
    for _, coeffs in sols:
        v = M.multiply_left([int(round(x)) for x in coeffs])
        if abs(v[n]) != c or any(abs(x) != c for x in v[:n]):
            continue
        sign = -1 if v[n] > 0 else 1  # the set's own vector has −c in column n
        S = [i for i in range(n) if sign * v[i] > 0]
        if tuple(S) in seen:
            continue
        seen.add(tuple(S))
        num, den = _exact_rel_sq(U, D, T, S)
        if num < Rq * Rq * den:
            closer.append((S, math.sqrt(num / den)))
    return LatticeResult(closer, float(E.get_nodes()), len(sols), reduction)
