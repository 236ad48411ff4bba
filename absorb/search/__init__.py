"""Exact index-set search: is there S with ‖D[:,S] U[S,:] − T‖_F ≤ tol·‖T‖_F?

This package answers the combinatorial core of theory.md §4: with ``a_i = vec(w_i u_i^T)``
and ``K = [a_1 … a_n]`` (d²×n), find ``b ∈ {0,1}^n`` with ``K b ≈ vec(T)``, or prove that
none exists, or say "unknown".  One dispatcher, :func:`find_index_set`, sits in front of
small backends (one module each); every backend returns a
:class:`~absorb.search._types.SearchResult`.

Soundness is the contract (theory.md §5):

* ``found`` is only ever returned after :func:`relative_residual` — a plain float64
  recomputation of ``‖D[:,S]U[S,:] − T‖_F / ‖T‖_F`` — is ≤ ``tol``; the dispatcher
  recomputes it again itself, whatever backend produced ``S``.
* ``infeasible`` needs a rigorous proof (exhaustive search with explicit floating-point
  error bounds, Z3 ``unsat`` over exact rationals, or a dual matrix ``Y`` checked with
  rounding bounds) and a rigorous lower bound ``bound > tol``.  A floating-point solver
  claim alone (HiGHS "infeasible") never gives this status.
* everything else, including a spent budget, is ``unknown`` with a reason.

The helpers below (rigorous norms, the exact residual, the dual bound of theory.md §4) are
shared by the backends; they do no work at import time and the backends are imported
lazily by the dispatcher.

Example::

    >>> import numpy as np
    >>> from absorb.search import find_index_set
    >>> U = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 5.0]])
    >>> D = np.array([[-1.0, 0.0, 7.0], [0.0, -1.0, 2.0]])
    >>> find_index_set(U, D, -np.eye(2)).S
    (0, 1)
"""

from __future__ import annotations

import math
import sys
import time
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ._types import SearchResult, SearchStatus

__all__ = [
    "METHODS",
    "SearchResult",
    "SearchStatus",
    "dual_bound",
    "exact_relative_residual_bounds",
    "find_index_set",
    "relative_residual",
    "relaxation_bound",
]

METHODS: tuple[str, ...] = ("auto", "linalg", "enumerate", "mitm", "milp", "z3", "z3-pb")

#: ``auto`` runs the narrow-regime backends (which build K, d²×n) only up to this size
NARROW_MAX_ENTRIES = 4_000_000

#: ``auto`` runs meet-in-the-middle before the box relaxation when it expects it to take
#: no longer than this (seconds): then the relaxation's least squares is only paid for
#: when MITM proves infeasibility (for a re-checkable certificate), not when it finds a set
QUICK_MITM_SECONDS = 0.005

#: unit roundoff of IEEE binary64 (round to nearest)
UNIT_ROUNDOFF = 2.0**-53

#: the rounding analyses of this package hold for inputs whose nonzero entries lie in
#: [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT] (:func:`magnitudes_ok`)
SAFE_EXPONENT = 200


def gamma(k: int) -> float:
    """Higham's γ_k = k·u/(1 − k·u), inflated by 1 % to absorb its own rounding.

    Any sum of k+1 floats computed in any order (and any product of k+1 floats) differs
    from the exact value by at most γ_k times the sum of the absolute values of its terms
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1 and §4.2).
    """
    ku = k * UNIT_ROUNDOFF
    assert ku < 0.01
    return 1.01 * ku / (1.0 - ku)


# ---------------------------------------------------------------------------------------
# exact and rigorous arithmetic shared by the backends


def magnitudes_ok(*arrays: np.ndarray) -> bool:
    """True when every entry of every array is finite and every nonzero one has
    ``2^-SAFE_EXPONENT ≤ |x| ≤ 2^SAFE_EXPONENT``: the range in which the rounding analyses
    here (Higham's γ_k, relative errors only) hold.

    Why: γ_k models every rounding as relative, which underflow and overflow break (a
    product of weights near 2^-270 squared to 2^-1080 loses all its bits; one near 2^540
    overflows).  In this range a product of up to three nonzero entries lies in
    [2^-600, 2^600], and squares of sums of n ≤ 2^20 such products stay below 2^1024, so
    nothing overflows, and a product or square underflows only after a cancellation, by at
    most 2^-1074 each.  Such errors are covered either by an explicit absolute term
    (the enumeration's norms) or by an error term γ·(sum of the absolute values of the same
    terms) ≥ 2^-53·2^-600 (that sum is exact when all terms are zero) whose 1 % inflation
    in :func:`gamma` exceeds 2^40 of them (the dual bound; the MITM windows also carry an
    absolute 8u).
    Outside the range a rigorous routine proves nothing; :func:`find_index_set` first
    rescales by exact powers of two (:func:`_rescaled`)."""
    lo, hi = 2.0**-SAFE_EXPONENT, 2.0**SAFE_EXPONENT
    for a in arrays:
        a = np.atleast_2d(np.asarray(a))
        a = a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a
        step = max(1, (1 << 20) // max(1, a.shape[1]))
        for k in range(0, a.shape[0], step):  # row blocks (views, also of a transposed array):
            x = np.abs(a[k:k + step].astype(np.float64, copy=False))  # no full-size temporaries
            if x.size == 0:
                continue
            if not float(x.max()) <= hi:  # also catches nan and inf
                return False
            nz = x[x != 0]
            if nz.size and float(nz.min()) < lo:
                return False
    return True


def _rescaled(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``U, D, T`` rescaled by exact powers of two into the range of :func:`magnitudes_ok`
    when they are outside it and the rescaling loses no bit; else unchanged.

    Unit i's row of U is multiplied by 2^c_i and its column of D by 2^-c_i (so each product
    D_ji U_ik is unchanged; c_i balances the two), then all of U by 2^-a, all of D by
    2^-b and T by 2^-(a+b): every ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F is unchanged, exactly.  A dual
    matrix Y for the rescaled problem is one for the original (⟨Y, ·⟩ scales by 2^-(a+b))."""
    if magnitudes_ok(U, D, T):
        return U, D, T

    def exponent(x: np.ndarray) -> np.ndarray:
        return np.frexp(x)[1].astype(np.int64)  # x = f·2^e with f in [0.5, 1); e = 0 for 0

    mu, mw = np.abs(U).max(axis=1), np.abs(D).max(axis=0)
    c = np.where((mu > 0) & (mw > 0), (exponent(mw) - exponent(mu)) // 2, 0)
    a = int(exponent(np.max(np.ldexp(mu, c), initial=0.0)))
    b = int(exponent(np.max(np.ldexp(mw, -c), initial=0.0)))
    U2 = np.ldexp(U, (c - a)[:, None])
    D2 = np.ldexp(D, (-c - b)[None, :])
    T2 = np.ldexp(T, -(a + b))
    exact = (np.array_equal(np.ldexp(U2, (a - c)[:, None]), U) and np.array_equal(np.ldexp(D2, (c + b)[None, :]), D)
             and np.array_equal(np.ldexp(T2, a + b), T))
    return (U2, D2, T2) if exact else (U, D, T)


def khatri_rao(U: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``K`` (d_out·d_in × n) with column i = vec(w_i u_i^T) (row-major vec), in float64.

    Each entry is one rounded product ``D[j,i]·U[i,k]``, so ``|K̂ − K| ≤ u·|K̂|·(1+2u)``.
    Only for the narrow regime (small d): never call it at real model sizes.
    """
    n = U.shape[0]
    return np.einsum("ji,ik->jki", D, U).reshape(-1, n)


def relative_residual(U: np.ndarray, D: np.ndarray, T: np.ndarray, S: Iterable[int]) -> float:
    """The float64 relative residual ``‖D[:,S]U[S,:] − T‖_F / ‖T‖_F`` that ``found`` means."""
    idx = np.asarray(sorted(S), dtype=np.intp)
    with np.errstate(over="ignore", invalid="ignore"):  # out of float range: nan, never ≤ tol
        R = D[:, idx] @ U[idx, :] - T
        return float(np.linalg.norm(R) / np.linalg.norm(T))


def _fractions(A: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.atleast_2d(A)]


def _sqrt_guess(q: Fraction) -> float:
    """√q to within a few ulps for any positive rational (scaled by 4^e so that neither
    ``float(q)`` overflows nor the root lands far into the subnormals)."""
    e = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    scaled = q / Fraction(4) ** e if e >= 0 else q * Fraction(4) ** (-e)
    try:
        return math.ldexp(math.sqrt(float(scaled)), e)
    except OverflowError:
        return math.inf


def sqrt_down(q: Fraction) -> float:
    """Largest convenient float ``x ≥ 0`` with ``x² ≤ q`` (a rigorous lower bound of √q)."""
    if q <= 0:
        return 0.0
    x = min(_sqrt_guess(q), sys.float_info.max)
    while x > 0 and Fraction(x) ** 2 > q:
        x = math.nextafter(x, 0.0)
    return x


def sqrt_up(q: Fraction) -> float:
    """Smallest convenient float ``x`` with ``x² ≥ q`` (a rigorous upper bound of √q)."""
    if q <= 0:
        return 0.0
    x = _sqrt_guess(q)
    while x < math.inf and Fraction(x) ** 2 < q:
        x = math.nextafter(x, math.inf)
    return x


def frobenius_bounds(T: np.ndarray) -> tuple[float, float]:
    """Rigorous floats ``lo ≤ ‖T‖_F ≤ hi``.

    In float64 with Higham's bound when no square can underflow or overflow: the computed
    ``s = Σ x²`` (m squares, m − 1 additions) is within γ_m·s of the exact sum, and the
    scaling, the square root and the final factor each round once more (covered by the
    extra 4u of slack).  Otherwise over exact rationals.
    """
    x = np.ravel(np.asarray(T, dtype=np.float64))
    a = np.abs(x)
    big = float(a.max(initial=0.0))
    if 1e-150 < big < 1e150 and not np.any((a > 0) & (a < 1e-150)):
        s = float(np.dot(x, x))
        g = gamma(x.size + 4)
        return (math.sqrt(s * (1.0 - g)) * (1.0 - 4.0 * UNIT_ROUNDOFF),
                math.sqrt(s * (1.0 + g)) * (1.0 + 4.0 * UNIT_ROUNDOFF))
    q = sum((Fraction(float(v)) ** 2 for v in x), Fraction(0))
    return sqrt_down(q), sqrt_up(q)


def exact_residual_sq(U: np.ndarray, D: np.ndarray, T: np.ndarray, S: Iterable[int]) -> Fraction:
    """``‖D[:,S]U[S,:] − T‖_F²`` over exact rationals (floats are dyadic rationals)."""
    idx = sorted(S)
    d_out, d_in = T.shape
    Df = _fractions(D[:, idx]) if idx else [[] for _ in range(d_out)]
    Uf = _fractions(U[idx, :]) if idx else []
    Tf = _fractions(T)
    total = Fraction(0)
    for j in range(d_out):
        for k in range(d_in):
            acc = -Tf[j][k]
            for s in range(len(idx)):
                acc += Df[j][s] * Uf[s][k]
            total += acc * acc
    return total


def exact_relative_residual_bounds(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, S: Iterable[int]
) -> tuple[float, float]:
    """Rigorous floats ``lo ≤ ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F ≤ hi`` (exact rationals)."""
    r2 = exact_residual_sq(U, D, T, S)
    t2 = sum((Fraction(float(x)) ** 2 for x in np.ravel(T)), Fraction(0))
    q = r2 / t2
    return sqrt_down(q), sqrt_up(q)


def classify_candidates(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, candidates: Iterable[Sequence[int]], tol: float
) -> tuple[tuple[int, ...] | None, float, float]:
    """Check candidate sets: ``(S_found or None, its float residual, lower bound of the rest)``.

    A candidate is *found* when its float64 :func:`relative_residual` is ≤ ``tol``.  The
    others get an exact-rational lower bound on their relative residual; the minimum of
    those is returned (``inf`` when there were no other candidates).  A candidate whose
    exact residual is ≤ tol but whose float residual is not gives a lower bound ≤ tol,
    which stops the caller from claiming ``infeasible`` (it then answers ``unknown``).
    """
    lowest = math.inf
    for S in candidates:
        S = tuple(sorted(int(i) for i in S))
        res = relative_residual(U, D, T, S)
        if res <= tol:
            return S, res, lowest
        lo, _ = exact_relative_residual_bounds(U, D, T, S)
        lowest = min(lowest, lo)
    return None, math.nan, lowest


# ---------------------------------------------------------------------------------------
# the dual bound of theory.md §4


def dual_bound(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, Y: np.ndarray, *, fixed_one: np.ndarray | None = None,
    free: np.ndarray | None = None,
) -> float:
    """Rigorous lower bound on ``‖D diag(b) U − T‖_F / ‖T‖_F`` over all ``b ∈ [0,1]^n``.

    For any ``Y``, with ``c_i = w_i^T Y u_i = ⟨Y, w_i u_i^T⟩`` and ``τ = ⟨Y, T⟩``,
    ``⟨Y, D diag(b) U − T⟩ = Σ b_i c_i − τ`` lies in ``[Σ min(0,c_i) − τ, Σ max(0,c_i) − τ]``,
    and ``‖·‖_F ≥ |⟨Y, ·⟩| / ‖Y‖_F`` (Cauchy–Schwarz).  This is the one-sided (sharper) form
    of theory.md §4's ``(|⟨T,Y⟩| − Σ|c_i|)/‖Y‖_F``.  Optional ``fixed_one`` (indices with
    b_i = 1) and ``free`` (the indices still in [0,1]; the rest are 0) restrict to a node
    of a search tree.

    Every float operation is covered by an explicit error term (Higham's γ_k): the products
    ``D_ji Y_jk U_ik`` and their sum over m = d_out·d_in terms err by ≤ γ_{m+2}·Σ|·|, the
    sums over i by ≤ γ_n·Σ|·|, the norms by ≤ γ_{m+2}; each is added in the safe direction,
    and the final division is shrunk by 8u.  The result is 0.0 when nothing is proved,
    and when an entry of ``U, D, T, Y`` is outside the range of :func:`magnitudes_ok`.
    """
    n = U.shape[0]
    m = T.size
    Y = np.asarray(Y, dtype=np.float64)
    if not magnitudes_ok(U, D, T, Y):
        return 0.0
    c = np.einsum("ji,jk,ik->i", D, Y, U)
    A = np.einsum("ji,jk,ik->i", np.abs(D), np.abs(Y), np.abs(U))
    err = 2.0 * gamma(m + 3) * A
    tau = float(np.sum(Y * T))
    err_tau = 2.0 * gamma(m + 3) * float(np.sum(np.abs(Y) * np.abs(T)))
    g_n = 2.0 * gamma(n + 2)
    if fixed_one is None:
        fixed_one = np.zeros(0, dtype=np.intp)
    if free is None:
        free = np.setdiff1d(np.arange(n), fixed_one)
    base_hi = float(np.sum(c[fixed_one] + err[fixed_one]))
    base_lo = float(np.sum(c[fixed_one] - err[fixed_one]))
    abs_base = float(np.sum(np.abs(c[fixed_one]) + err[fixed_one]))
    pos = float(np.sum(np.maximum(0.0, c[free] + err[free])))
    neg = float(np.sum(np.minimum(0.0, c[free] - err[free])))
    # every partial sum error: ≤ γ_n (Σ|terms|); the terms' absolute sum is ≤ scale
    scale = abs_base + pos - neg + abs(tau) + err_tau
    slack = g_n * scale + 4 * UNIT_ROUNDOFF * scale
    hi = base_hi + pos  # ≥ Σ b_i c_i for all b in the node, up to slack
    lo = base_lo + neg
    gap = max(tau - err_tau - hi - slack, lo - tau - err_tau - slack, 0.0)
    if gap <= 0.0:
        return 0.0
    y_norm = math.sqrt(float(np.sum(Y * Y))) * (1.0 + 2.0 * gamma(m + 2))
    _, t_norm = frobenius_bounds(T)
    if y_norm == 0.0 or t_norm == 0.0:
        return 0.0
    return gap / y_norm / t_norm * (1.0 - 8.0 * UNIT_ROUNDOFF)


def relaxation_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Box-relaxation bound: ``(bound, Y)`` with ``Y = T − D diag(x*) U`` for the bounded
    least-squares optimum ``x* = argmin_{x∈[0,1]^n} ‖D diag(x) U − T‖_F``.

    By the optimality conditions of ``x*``, this ``Y`` makes the dual bound equal to the
    relaxation's distance, which covers the rank bound (``T`` outside the span of the
    ``w_i u_i^T``) and, for generic ``n ≤ d²``, the unique real solution leaving the box.
    ``bound`` is then re-derived rigorously by :func:`dual_bound`, whatever ``x*`` is.
    """
    from scipy.optimize import lsq_linear

    K = khatri_rao(U, D)
    t = T.ravel()
    sol = lsq_linear(K, t, bounds=(0.0, 1.0), method="bvls" if K.shape[1] <= 200 else "trf",
                     tol=1e-14, max_iter=10_000)
    x = np.clip(sol.x, 0.0, 1.0)
    Y = (t - K @ x).reshape(T.shape)
    return dual_bound(U, D, T, Y), Y


# ---------------------------------------------------------------------------------------
# the dispatcher


def _backend(method: str) -> Callable[..., SearchResult] | None:
    """The backend function for ``method``, imported lazily; ``None`` if not installed."""
    if method == "linalg":
        try:
            from .linalg import solve_linalg  # owned elsewhere; may not exist yet
        except ImportError:
            return None
        return solve_linalg
    if method == "enumerate":
        from .enumerate import solve_enumerate

        return solve_enumerate
    if method == "mitm":
        from .mitm import solve_mitm

        return solve_mitm
    if method == "milp":
        from .milp import solve_milp

        return solve_milp
    if method == "z3":
        from .smt import solve_z3

        return solve_z3
    if method == "z3-pb":
        from .smt import solve_z3_pb

        return solve_z3_pb
    raise AssertionError(f"unknown method {method!r}")


def _checked(result: SearchResult, U: np.ndarray, D: np.ndarray, T: np.ndarray, tol: float) -> SearchResult:
    """Independent re-check of a backend's verdict (style habit 6)."""
    if result.status is SearchStatus.FOUND:
        assert result.S is not None
        res = relative_residual(U, D, T, result.S)
        if not res <= tol:
            return SearchResult(
                SearchStatus.UNKNOWN, result.method,
                f"{result.method} returned S={result.S} but its recomputed residual {res:.3e} "
                f"exceeds tol={tol:g}; rejected", elapsed=result.elapsed,
            )
    if result.status is SearchStatus.INFEASIBLE:
        if not (result.bound is not None and result.bound > tol):
            return SearchResult(
                SearchStatus.UNKNOWN, result.method,
                f"{result.method} claimed infeasible with bound {result.bound!r} ≤ tol={tol:g}; "
                "rejected", elapsed=result.elapsed,
            )
    return result


def _cores() -> int:
    """CPU cores this process may use (capped at 8): the MITM backend's worker threads."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _relaxation_result(U: np.ndarray, D: np.ndarray, T: np.ndarray, tol: float, t0: float) -> SearchResult:
    if not magnitudes_ok(U, D, T):  # its bound would be 0; K may not even be finite
        return SearchResult(SearchStatus.UNKNOWN, "dual-bound",
                            f"an entry of U, D or T is outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}] even after "
                            "rescaling by powers of two: the rounding bounds do not hold", elapsed=time.perf_counter() - t0)
    bound, Y = relaxation_bound(U, D, T)
    elapsed = time.perf_counter() - t0
    if bound > tol:
        return SearchResult(
            SearchStatus.INFEASIBLE, "dual-bound",
            "the box relaxation is already infeasible: dual matrix Y certifies the bound",
            bound=bound, elapsed=elapsed,
            certificate={"kind": "dual", "Y": Y.tolist(), "check": "dual_bound(U, D, T, Y)"},
        )
    return SearchResult(SearchStatus.UNKNOWN, "dual-bound",
                        f"box relaxation feasible (dual bound {bound:.3e} ≤ tol)", elapsed=elapsed)


def find_index_set(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray,
    *,
    tol: float = 1e-9,
    timeout: float = 60.0,
    method: str = "auto",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> SearchResult:
    """Find ``S`` with ``‖D[:,S]U[S,:] − T‖_F ≤ tol·‖T‖_F``, prove none exists, or give up.

    ``U`` is W_up (n×d_in), ``D`` is W_down (d_out×n), ``T`` the target (d_out×d_in, e.g.
    ``-I``). ``method`` is one of :data:`METHODS`; ``"auto"`` runs a portfolio, cheapest
    proofs first, within ``timeout`` seconds of wall clock:

    1. the box-relaxation dual bound (rank bound included);
    2. exact linear algebra (``linalg``, when installed and n ≤ d²);
    3. exhaustive enumeration for n ≤ 20;
    4. meet-in-the-middle over pivoted partial sums (the workhorse for n > d²; one worker
       thread per core), preceded, when it is expected to take over 0.01 s, by a short
       HiGHS slice (5 % of that estimate, at least 10 ms), and past 0.1 s also a Z3-PB
       slice (at least 40 ms): these often find planted sets at once;
    5. Z3 pseudo-Boolean, then HiGHS, with what is left (these mostly *find* sets).

    When MITM is expected to finish within :data:`QUICK_MITM_SECONDS`, it runs first; an
    infeasibility it proves is then returned only if step 1 proves less (step 1's dual
    matrix is the certificate ``absorb verify`` can re-check).

    It stops at the first ``found`` or ``infeasible``.  Every verdict is re-checked here:
    a found ``S`` by recomputing its residual, an infeasibility by ``bound > tol``.
    ``progress`` (optional) is called with a short note when a step starts and, during a
    long meet-in-the-middle run, every quarter second or so (``"meet-in-the-middle: 120/2048
    regions"``).
    """
    from absorb._validate import check_search_inputs  # bad arguments: one-line InvalidInput, also under python -O

    U, D, T = check_search_inputs(U, D, T, tol=tol, timeout=timeout, seed=seed, method=method)
    t0 = time.perf_counter()
    kw: dict[str, Any] = {"tol": tol, "seed": seed}
    # The backends see U, D, T rescaled by exact powers of two into the range where their
    # rounding analyses hold (unchanged when already inside it); relative residuals, and so
    # every verdict and bound, are the same for both.  Found sets are re-checked on the
    # caller's own arrays.
    U0, D0, T0 = U, D, T
    U, D, T = _rescaled(U, D, T)
    if method != "auto":
        fn = _backend(method)
        if fn is None:
            return SearchResult(SearchStatus.UNKNOWN, method, f"backend {method!r} is not installed",
                                elapsed=time.perf_counter() - t0)
        return _checked(fn(U, D, T, timeout=timeout, **kw), U0, D0, T0, tol)

    n = U.shape[0]
    m = T.size
    trail: list[dict[str, Any]] = []

    def left() -> float:
        return timeout - (time.perf_counter() - t0)

    def finish(res: SearchResult) -> SearchResult:
        cert = dict(res.certificate or {})
        cert["portfolio"] = trail
        return SearchResult(res.status, res.method, res.reason, S=res.S, residual=res.residual,
                            bound=res.bound, elapsed=time.perf_counter() - t0, certificate=cert)

    def attempt(name: str, run: Callable[[], SearchResult]) -> SearchResult | None:
        if progress is not None:
            progress(name)
        res = _checked(run(), U0, D0, T0, tol)
        trail.append({"method": res.method, "status": res.status.value,
                      "elapsed": round(res.elapsed, 4), "reason": res.reason})
        if res.status is not SearchStatus.UNKNOWN:
            return finish(res)
        return None

    steps: list[tuple[str, Callable[[], SearchResult]]] = []
    narrow = m * n <= NARROW_MAX_ENTRIES
    if narrow:
        steps.append(("dual-bound", lambda: _relaxation_result(U, D, T, tol, time.perf_counter())))
    if n <= m and _backend("linalg") is not None:
        steps.append(("linalg", lambda: _backend("linalg")(U, D, T, timeout=left(), **kw)))  # type: ignore[misc]
    if not narrow:
        # Real model sizes: K (d²×n) must never be materialised; only linalg applies.
        for name, run in steps:
            out = attempt(name, run)
            if out is not None:
                return out
        return finish(SearchResult(
            SearchStatus.UNKNOWN, "auto",
            f"d²·n = {m * n} exceeds {NARROW_MAX_ENTRIES}: the narrow-regime backends do not "
            "apply" + ("" if steps else " and the linalg backend is not installed")
            + "".join(f"; {t['method']}: {t['reason']}" for t in trail),
            elapsed=time.perf_counter() - t0))
    if n <= 20:
        steps.append(("enumerate", lambda: _backend("enumerate")(U, D, T, timeout=left(), **kw)))  # type: ignore[misc]
    from .mitm import mitm_plan

    cores = _cores()
    plan = mitm_plan(U, D, T, tol=tol, seed=seed)
    est = plan.seconds(cores)  # inf when no run can work

    def finder_slice(floor: float) -> float:  # budget of a finder tried before MITM: 5 % of est
        return max(floor, min(0.05 * est, 2.0, 0.05 * left()))

    mitm_step = ("mitm", lambda: _backend("mitm")(  # type: ignore[misc]
        U, D, T, timeout=left(), threads=cores, plan=plan, progress=progress, **kw))
    # A complete MITM run expected within QUICK_MITM_SECONDS goes first, ahead of the
    # relaxation's least squares (0.4–4 ms): it decides alone when it finds a set, and an
    # infeasibility it proves is held back while the dual bound is tried, whose dual matrix
    # is a certificate `absorb verify` can re-check (a MITM run is not).
    quick = est <= QUICK_MITM_SECONDS and bool(steps) and steps[0][0] == "dual-bound"
    if quick:
        steps.insert(0, mitm_step)
    else:
        if 0.01 < est:
            # A complete MITM run takes a while; a short HiGHS slice (≥ 10 ms) first often
            # finds a planted set at once (its "infeasible" is no proof and is ignored).
            # (HiGHS finds most planted sets in 1–7 ms; e.g. planted d = 3, n = 48 seed
            # 3481 takes HiGHS 1.8 ms and MITM 75 ms.)  Past 1.5×timeout MITM refuses and
            # Z3-PB gets most of the budget next: then HiGHS only has a 10 ms look.
            steps.append(("milp", lambda: _backend("milp")(  # type: ignore[misc]
                U, D, T, timeout=finder_slice(0.01) if est <= 1.5 * timeout else 0.01, **kw)))
        if 0.1 < est <= 1.5 * timeout:
            # Z3-PB finds other planted sets fast (d = 2, n = 48 seed 2482: 35 ms, where
            # HiGHS needs 140 ms and MITM 250 ms); its encoding alone costs ~10 ms, so
            # only in front of longer MITM runs, with at least 40 ms.
            steps.append(("z3-pb", lambda: _backend("z3-pb")(U, D, T, timeout=finder_slice(0.04), **kw)))  # type: ignore[misc]
        steps.append(mitm_step)
    # Finders for what MITM could not cover: Z3-PB is quick on planted sets; HiGHS last.
    steps.append(("z3-pb", lambda: _backend("z3-pb")(U, D, T, timeout=max(0.5 * left(), 0.01), **kw)))  # type: ignore[misc]
    steps.append(("milp", lambda: _backend("milp")(U, D, T, timeout=left(), **kw)))  # type: ignore[misc]

    reasons = []
    held: SearchResult | None = None  # a quick MITM proof, while the dual bound is tried
    for name, run in steps:
        if left() <= 0:
            reasons.append(f"time budget {timeout:g}s spent before {name}")
            break
        out = attempt(name, run)
        if out is not None and quick and name == "mitm" and out.status is SearchStatus.INFEASIBLE:
            held = out
            continue
        if out is not None:
            return out
        if held is not None:  # the dual bound proved less than MITM did
            return finish(held)
        reasons.append(f"{trail[-1]['method']}: {trail[-1]['reason']}")
    if held is not None:
        return finish(held)
    return finish(SearchResult(SearchStatus.UNKNOWN, "auto", "; ".join(reasons),
                               elapsed=time.perf_counter() - t0))
