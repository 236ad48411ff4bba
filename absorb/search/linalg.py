"""Linear-algebra backend of the index-set search for real model sizes (docs/mathematics.md §4, §5).

Question (see :mod:`absorb.search._types`): with ``U = W_up`` (n×d), ``D = W_down`` (d×n)
and a target ``T`` (d×d, ``−I`` for the plain residual), is there an index set S with
``‖D[:,S] U[S,:] − T‖_F ≤ tol·‖T‖_F``? In Khatri–Rao form: ``K b = vec(T)`` with
``b ∈ {0,1}^n`` and ``K = [vec(w_i u_iᵀ)]`` (d²×n), never materialised here.

Method: one sketched least-squares solve serves both answers.

* Fix ``B`` (d×r) with orthonormal columns, drawn from ``numpy.random.default_rng(seed)``,
  and ``P = U B`` (n×r). The linear map ``L: R^{d×r} → R^n``,
  ``L(A)_i = (w_iᵀ A)·P_i = w_iᵀ (A Bᵀ) u_i``, has adjoint ``Lᵀ z = D diag(z) U B``.
  Both cost one product with ``D`` and a d×r or n×r matrix: O(n·d·r), memory bound.
* The sketched primal ``min_b ‖D diag(b) U B − T B‖_F = min_b ‖Lᵀ b − C‖`` (``C = T B``)
  has normal equations ``(L Lᵀ) b = L(C)`` with ``L Lᵀ = (DᵀD) ∘ (P Pᵀ)`` — the Gram/Hadamard
  system of docs/mathematics.md §4 with ``UUᵀ`` replaced by its rank-r sketch. It is solved by
  Jacobi-preconditioned conjugate gradients; with ``d·r ≥ n`` the map ``Lᵀ`` is injective
  for generic weights, so a planted 0/1 solution is *the* solution, and the iterates are
  rounded to 0/1 once every entry is within 0.1 of 0 or 1.
* The residual ``A = C − Lᵀ b`` of the same iterates is a dual certificate ``Y = A Bᵀ``:
  ``L(A)`` is the CG residual, which tends to 0, so ``Σ_i |w_iᵀ Y u_i| → 0`` while
  ``⟨T, Y⟩ = ⟨C, A⟩ → ‖A‖²``; the dual bound of docs/mathematics.md §4 tends to ``‖A‖_F``, the
  sketched least-squares residual (positive for generic weights, 0 for planted ones).

Verdicts are never taken from the solver's own arithmetic: ``infeasible`` only when the
search's own rigorous bound :func:`absorb.search._scale_bounds.check_dual_bound` returns a
relative bound > tol; ``found`` only when :func:`absorb.search._scale_bounds.check_residual`
gives a rigorous upper bound ≤ tol on the recomputed relative residual.

Precision and memory: the products with ``U`` and ``D`` run in the weights' own dtype
(float32 weights stay float32: no float64 copy of a model is ever made); vectors of length
n and d×r matrices are float64. The checkers convert float32 blocks of at most 64 MiB to
float64 exactly. Peak memory beyond the weights: a few n×r and d×r arrays, plus a d×d
float64 accumulator when a candidate set is verified.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from absorb._errors import InvalidInput

from ._scale_bounds import ResidualBound, check_dual_bound, check_residual
from ._types import SearchResult, SearchStatus

__all__ = ["solve_linalg", "default_rank"]

METHOD = "linalg-sketch-pcg"

#: Stop refining the dual once the estimated leak Σ|w_iᵀYu_i| is below this fraction of
#: |⟨T,Y⟩|: the certified bound is then within ~1% of the sketched optimum ‖A‖_F.
_LEAK_FRACTION = 1e-2
#: Round the primal iterate once every entry is within this distance of 0 or 1.
_ROUND_DISTANCE = 0.1
#: Recompute the CG residual from scratch this often, to stop recurrence drift.
_REFRESH_EVERY = 25
#: Once a rounded nonempty set has been verified and missed tol, give up when the CG
#: residual has not halved over this many iterations (the rounding floor, e.g. float32
#: weights whose planted set misses tol=1e-9 by their own rounding).
_STAGNATION_WINDOW = 50
#: ... or at once when a refresh finds the true residual this many times the recursive one
#: with the iterate still rounding to that set: CG's attainable accuracy is bounded by
#: the gap between the two, so the true residual has reached its floor (float32 weights
#: reach it in about 25 iterations, where the window would take 50 more).
_GAP_FACTOR = 10.0


def default_rank(n: int, d: int) -> int:
    """Sketch rank r: ``d·r ≥ 4n`` keeps ``L Lᵀ`` well conditioned (for Gaussian-like
    weights its condition number is about ``((1+√(n/dr))/(1−√(n/dr)))²`` ≈ 9), and r ≥ 32
    costs nothing extra because products with ``D`` are memory bound up to r ≈ 64 on the
    machines measured (docs/performance-scale.md). Never more than d."""
    return int(min(d, max(32, math.ceil(4 * n / d))))


def _validate(U: object, D: object, T: object) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    U = np.asarray(U)
    D = np.asarray(D)
    for name, X in (("W_up (U)", U), ("W_down (D)", D)):
        if X.ndim != 2:
            raise InvalidInput(f"{name}: expected a 2-d array, got shape {X.shape}")
        if X.dtype not in (np.float32, np.float64):
            raise InvalidInput(f"{name}: dtype {X.dtype} unsupported; cast it to float32 or float64")
    n, d = U.shape
    if D.shape != (d, n):
        raise InvalidInput(f"W_down (D): expected shape {(d, n)} to match W_up {U.shape}, got {D.shape}")
    if T is not None:
        T = np.asarray(T, dtype=np.float64)
        if T.shape != (d, d):
            raise InvalidInput(f"target T: expected shape {(d, d)}, got {T.shape}")
        if not np.isfinite(T).all():
            raise InvalidInput("target T: has non-finite entries; pass a finite matrix")
    return U, D, T


def _unknown(reason: str, t0: float, **cert: object) -> SearchResult:
    return SearchResult(SearchStatus.UNKNOWN, METHOD, reason,
                        elapsed=time.perf_counter() - t0, certificate=dict(cert) or None)


def _col_sqnorms(D: np.ndarray) -> np.ndarray:
    """Σ_j D_ji² in float64 (float32/16 D widened by einsum's own buffers: no full upcast)."""
    return np.einsum("ij,ij->j", D, D, dtype=np.float64)


def solve_linalg(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray | None = None,
    *,
    tol: float = 1e-9,
    timeout: float = 60.0,
    seed: int = 0,
    rank: int | None = None,
    max_iter: int = 2000,
    verify: Callable[[tuple[int, ...]], ResidualBound] | None = None,
) -> SearchResult:
    """Decide the index-set question for ``n ≤ d²`` by a sketched least-squares solve.

    ``U`` is W_up (n×d), ``D`` is W_down (d×n), ``T`` the target (d×d; ``None`` = ``−I_d``).
    Returns ``found`` (S with rigorously bounded relative residual ≤ ``tol``),
    ``infeasible`` (certificate ``{"kind": "dual-low-rank", "A", "B", ...}`` whose bound,
    recomputed by the independent checker, exceeds ``tol``) or ``unknown`` with a reason
    (``n > d²``, timeout, no convergence, a near-solution above tol). ``rank`` overrides
    :func:`default_rank`; ``seed`` fixes the sketch. ``verify`` (optional) recomputes the
    residual bound of a rounded set in place of :func:`~absorb.search._scale_bounds.check_residual`
    on these arrays: :func:`~absorb.search.find_index_set` passes its own re-check (on the
    arrays it hands to the backends), so that a found set's residual is computed once, and
    not by this backend.

    Example::

        >>> import numpy as np
        >>> rng = np.random.default_rng(1)
        >>> U = rng.standard_normal((40, 8)); D = rng.standard_normal((8, 40))
        >>> solve_linalg(U, D).status.value
        'infeasible'
        >>> D[:, :10] = -np.linalg.pinv(U[:10])     # plant S = {0..9}
        >>> res = solve_linalg(U, D); res.status.value, res.S
        ('found', (0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
    """
    t0 = time.perf_counter()
    _check_budget(tol, timeout)
    U, D, T = _validate(U, D, T)
    # An overflow (T near float64's top) shows as inf/nan: the iteration breaks down and says so
    # (unknown); a found set's residual is re-checked rigorously either way. No warning to stderr.
    with np.errstate(over="ignore", invalid="ignore"):
        sk = _sketch(U, D, T, seed=seed, rank=rank, t0=t0)
        if isinstance(sk, SearchResult):
            return sk
        check = verify if verify is not None else (lambda S: check_residual(sk.U, sk.D, sk.T, S))
        return _Iteration(sk, tol, t0, check).run(max_iter, timeout)


def _check_budget(tol: object, timeout: object) -> None:
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
        raise InvalidInput(f"tol: expected a finite number ≥ 0, got {tol!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise InvalidInput(f"timeout: expected seconds > 0, got {timeout!r}")


@dataclass
class _Sketch:
    """The sketched problem: ``B`` (d×r, orthonormal), ``P = U B``, ``C = T B`` and the
    Jacobi preconditioner of ``L Lᵀ`` (``active``: units with a nonzero diagonal)."""

    U: np.ndarray
    D: np.ndarray
    T: np.ndarray | None
    r: int
    B: np.ndarray
    P: np.ndarray
    C: np.ndarray
    t_norm: float
    active: np.ndarray
    inv_diag: np.ndarray

    def Lt(self, z: np.ndarray) -> np.ndarray:  # n → d×r:  D diag(z) U B
        return np.asarray(self.D @ (z[:, None] * self.P).astype(self.D.dtype), dtype=np.float64)

    def L(self, A: np.ndarray) -> np.ndarray:  # d×r → n:  (w_iᵀ A B ᵀ u_i)_i
        return np.einsum("ik,ik->i", np.asarray(self.D.T @ A.astype(self.D.dtype), dtype=np.float64), self.P)


def _sketch(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, *, seed: int, rank: int | None,
            t0: float) -> _Sketch | SearchResult:
    """The sketch for validated inputs, or ``unknown`` where this route does not apply."""
    n, d = U.shape
    if n > d * d:
        return _unknown(f"n = {n} > d² = {d * d}: K has a null space, the index-set problem is a "
                        "multi-dimensional subset sum; use an exact backend", t0)
    if n == 0:
        return _unknown("n = 0: no hidden units", t0)
    r = default_rank(n, d) if rank is None else int(rank)
    if not 1 <= r <= d:
        raise InvalidInput(f"rank: expected 1 ≤ rank ≤ d = {d}, got {rank!r}")

    rng = np.random.default_rng(seed)
    B, _ = np.linalg.qr(rng.standard_normal((d, r)))
    P = np.asarray(U @ B.astype(U.dtype), dtype=np.float64)  # n×r, in U's precision
    if not np.isfinite(P).all():
        if not np.isfinite(U).all():
            raise InvalidInput("W_up (U): has non-finite entries")
        return _unknown("W_up·B overflows in float64 (entries of W_up too large); this route does not apply", t0)
    wsq = _col_sqnorms(D)
    if not np.isfinite(wsq).all():
        if not np.isfinite(D).all():
            raise InvalidInput("W_down (D): has non-finite entries")
        return _unknown("a column norm of W_down overflows in float64; this route does not apply", t0)
    C = -B if T is None else T @ B
    t_norm = math.sqrt(d) if T is None else float(np.linalg.norm(T))
    if t_norm == 0.0:
        return _unknown("T = 0: the relative tolerance tol·‖T‖_F is undefined", t0)
    diag = wsq * np.einsum("ik,ik->i", P, P)
    active = diag > 0.0
    inv_diag = np.zeros(n)
    inv_diag[active] = 1.0 / diag[active]
    return _Sketch(U, D, T, r, B, P, C, t_norm, active, inv_diag)


_HINT_MAX_D = 4096
"""Largest d for which the hint of :func:`accepting_tol` forms the d×d identity of the target −I."""


def accepting_tol(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, S: tuple[int, ...], rel: float) -> float | None:
    """The least power of ten τ < 1 at which the witness check accepts the flip of S (when σ's
    flip constant is 1, so that T = −M): τ ≥ the float64 relative residual ``rel`` and τ ≥ a
    rigorous upper bound of the absolute ∞-operator norm ‖D_S U_S − T‖_∞ (= ‖M + D_S U_S‖_∞, the
    linear part of the witness's error per unit of |x|_∞, :func:`absorb.rigorous.flip_inf_upper`).
    None when no τ < 1 does, or d is past :data:`_HINT_MAX_D` with T = −I.

    Computed on the arrays this backend sees: when the portfolio rescaled them by powers of two
    (weights outside [2^-200, 2^200]), the ∞-norm is in the rescaled units (the relative
    residual is not affected) and the hint is indicative only."""
    from fractions import Fraction

    from absorb.rigorous import flip_inf_upper

    d = D.shape[0]
    if T is None and d > _HINT_MAX_D:
        return None
    M = None if T is None else -np.asarray(T, dtype=np.float64)  # (None: the identity)
    rho, _how = flip_inf_upper(U, D, M, Fraction(1), S, rel)
    need = max(rel * (1 + 1e-6), rho)
    if not (0 < need < 1):
        return None
    k = math.ceil(math.log10(need))
    while 10.0**k < need:
        k += 1
    return 10.0**k if 10.0**k < 1 else None


class _Iteration:
    """Jacobi-preconditioned CG on ``(L Lᵀ) x = L(C)``, with the primal rounding and the
    dual certificate tried after every step."""

    def __init__(self, sk: _Sketch, tol: float, t0: float, check: Callable[[tuple[int, ...]], ResidualBound]) -> None:
        self.sk, self.tol, self.t0, self.check = sk, tol, t0, check
        self.x = np.zeros(sk.P.shape[0])
        self.A = sk.C.copy()
        res = sk.L(self.A)
        res[~sk.active] = 0.0
        self.res = res
        self.r0 = float(np.linalg.norm(res))
        z = res * sk.inv_diag
        self.p = z.copy()
        self.rz = float(res @ z)
        self.tried: set[tuple[int, ...]] = set()
        self.near: tuple[float, tuple[int, ...]] | None = None
        self.leak_fraction = _LEAK_FRACTION
        self.last_check: object = None
        self.history: list[float] = []
        self.gap = False  # the last refresh found the true residual far above the recursive one

    def run(self, max_iter: int, timeout: float) -> SearchResult:
        deadline = self.t0 + timeout
        stop = "max_iter"
        it = 0
        for it in range(1, max_iter + 1):
            if time.perf_counter() > deadline:
                stop = "timeout"
                break
            if self.rz <= 0.0 or self.r0 == 0.0:
                stop = "converged"
                break
            if not self.step(it):
                stop = "breakdown"
                break
            out = self.rounded(it)
            if out is None:
                out = self.certified(it)
            if out is not None:
                return out
            why = self.advance()
            if why is not None:
                stop = why
                break
        return self.give_up(stop, it, max_iter, timeout)

    def step(self, it: int) -> bool:
        """One CG step on x, A and the residual; False on a breakdown."""
        sk = self.sk
        Ltp = sk.Lt(self.p)
        q = sk.L(Ltp)
        q[~sk.active] = 0.0
        pq = float(self.p @ q)
        if not pq > 0.0:
            return False
        alpha = self.rz / pq
        self.x += alpha * self.p
        self.A -= alpha * Ltp
        if it % _REFRESH_EVERY == 0:
            recursive = float(np.linalg.norm(self.res - alpha * q))
            self.res = sk.L(self.A)
            self.res[~sk.active] = 0.0
            self.gap = float(np.linalg.norm(self.res)) > _GAP_FACTOR * recursive
        else:
            self.res -= alpha * q
        return True

    def _rounding(self) -> tuple[int, ...] | None:
        """The 0/1 point the iterate rounds to, once within _ROUND_DISTANCE of it."""
        x = self.x
        if not float(np.max(np.minimum(np.abs(x), np.abs(1.0 - x)))) < _ROUND_DISTANCE:
            return None
        return tuple(int(i) for i in np.flatnonzero(x > 0.5))

    def _rounds_to_tried(self) -> bool:
        """The iterate rounds to a 0/1 point already verified."""
        S = self._rounding()
        return S is not None and S in self.tried

    def rounded(self, it: int) -> SearchResult | None:
        """Primal: round once the iterate is 0/1 to within _ROUND_DISTANCE, verify exactly."""
        sk = self.sk
        S = self._rounding()
        if S is None or S in self.tried:
            return None
        self.tried.add(S)
        chk = self.check(S)
        if chk.relative_upper <= self.tol:
            return SearchResult(
                SearchStatus.FOUND, METHOD,
                f"sketched least squares (rank {sk.r}) rounded to 0/1 after {it} CG "
                "iterations; residual recomputed in float64 with a rigorous bound",
                S=S, residual=chk.relative, elapsed=time.perf_counter() - self.t0,
                certificate={"kind": "index-set", "residual_upper": chk.relative_upper,
                             "rank": sk.r, "iterations": it})
        if self.near is None or chk.relative < self.near[0]:
            self.near = (chk.relative, S)
        return None

    def certified(self, it: int) -> SearchResult | None:
        """Dual: certify once the leak is a small fraction of the trace."""
        sk, A, tol = self.sk, self.A, self.tol
        trace = abs(float(np.einsum("ij,ij->", sk.C, A)))
        a_norm = float(np.linalg.norm(A))
        leak = float(np.abs(self.res).sum())
        if not (a_norm > 0 and trace > 0 and leak <= self.leak_fraction * trace
                and (trace - leak) / a_norm > 2.0 * tol * sk.t_norm):
            return None
        chk = check_dual_bound(sk.U, sk.D, sk.T, A, sk.B)
        self.last_check = chk
        if chk.relative > tol:
            return SearchResult(
                SearchStatus.INFEASIBLE, METHOD,
                f"dual certificate Y = A Bᵀ of rank {sk.r} after {it} CG iterations; bound "
                "recomputed by absorb.search._scale_bounds.check_dual_bound",
                bound=chk.relative, elapsed=time.perf_counter() - self.t0,
                certificate={"kind": "dual-low-rank", "A": A.copy(), "B": sk.B,
                             "bound_abs": chk.absolute, "bound_rel": chk.relative,
                             "rank": sk.r, "iterations": it, "tol": tol})
        self.leak_fraction /= 10.0  # the estimate was too optimistic: refine further
        return None

    def advance(self) -> str | None:
        """The next search direction; a reason to stop (converged, stagnated) or None."""
        res = self.res
        rnorm = float(np.linalg.norm(res))
        if rnorm <= 1e-15 * self.r0:
            return "converged"
        history = self.history
        history.append(rnorm)
        if self.near is not None and self.near[1]:
            if len(history) > _STAGNATION_WINDOW and rnorm > 0.5 * min(history[:-_STAGNATION_WINDOW]):
                return "stagnated"
            if self.gap and self._rounds_to_tried():
                return "floor"
        self.gap = False
        z = res * self.sk.inv_diag
        rz_new = float(res @ z)
        self.p = z + (rz_new / self.rz) * self.p
        self.rz = rz_new
        return None

    def give_up(self, stop: str, it: int, max_iter: int, timeout: float) -> SearchResult:
        why = {"timeout": f"timeout after {timeout:g} s",
               "max_iter": f"no decision after {max_iter} CG iterations",
               "converged": "CG converged without a 0/1 solution or a certificate",
               "stagnated": f"CG stagnated near a 0/1 point (residual not halved in "
                            f"{_STAGNATION_WINDOW} iterations: rounding floor of the weights)",
               "floor": f"CG reached its attainable accuracy at a 0/1 point (recomputed residual over "
                        f"{_GAP_FACTOR:g}× the recursive one: rounding floor of the weights)",
               "breakdown": "CG broke down (L Lᵀ singular on the search direction: duplicate or "
                            "collinear units?)"}[stop]
        a_norm = float(np.linalg.norm(self.A))
        near = self.near
        parts = [why, f"rank {self.sk.r}, {it} iterations, sketched residual ‖A‖/‖T‖ = "
                      f"{a_norm / self.sk.t_norm:.3e}"]
        if near is not None:
            accept = accepting_tol(self.sk.U, self.sk.D, self.sk.T, near[1], near[0])
            hint = ("" if accept is None else
                    f" (weights stored in float32 or bf16 leave residuals of about 1e-7 or 1e-3 by rounding alone; "
                    f"--tol {accept:g} would accept this set: it bounds both its relative residual and the ∞-norm residual "
                    "‖D_S U_S − T‖_∞ that the witness check bounds (for a flip constant c = 1; |c| times it otherwise))")
            parts.append(f"nearest rounded set |S| = {len(near[1])} has relative residual "
                         f"{near[0]:.3e} > tol = {self.tol:g}{hint}")
        if self.last_check is not None:
            parts.append(f"last checked dual bound {self.last_check.relative:.3e} ≤ tol")
        return _unknown("; ".join(parts), self.t0, rank=self.sk.r,
                        nearest_S=None if near is None else near[1],
                        nearest_residual=None if near is None else near[0])
