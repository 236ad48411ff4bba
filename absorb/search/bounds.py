"""The dual bound of the index-set problem (docs/mathematics.md §4) in the narrow regime, and the
box relaxation that supplies its dual matrix.

For any ``Y`` the bound is a rigorous lower bound on ``‖D diag(b) U − T‖_F / ‖T‖_F`` over
the whole box ``b ∈ [0,1]^n`` (so over every index set); ``Y`` from the box-constrained
least squares makes it as large as the relaxation allows.
"""

from __future__ import annotations

import time

import numpy as np

from absorb.rigorous import SAFE_EXPONENT, magnitudes_ok

from ._common import khatri_rao
from ._scale_bounds import check_dual_bound
from ._types import SearchResult, SearchStatus

__all__ = ["dual_bound", "relaxation_bound", "relaxation_result"]


def dual_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray, Y: np.ndarray) -> float:
    """Rigorous lower bound on ``‖D diag(b) U − T‖_F / ‖T‖_F`` over all ``b ∈ [0,1]^n``.

    For any ``Y``, with ``c_i = w_i^T Y u_i = ⟨Y, w_i u_i^T⟩`` and ``τ = ⟨Y, T⟩``,
    ``⟨Y, D diag(b) U − T⟩ = Σ b_i c_i − τ`` lies in ``[Σ min(0,c_i) − τ, Σ max(0,c_i) − τ]``,
    and ``‖·‖_F ≥ |⟨Y, ·⟩| / ‖Y‖_F`` (Cauchy–Schwarz).  This is the one-sided (sharper) form
    of docs/mathematics.md §4's ``(|⟨T,Y⟩| − Σ|c_i|)/‖Y‖_F``.

    It is the producer's one dual bound, :func:`~absorb.search._scale_bounds.check_dual_bound`,
    for ``Y = A Bᵀ`` with ``A = Y`` and ``B = I`` (every float operation covered by an
    explicit error term in the safe direction).  The result is 0.0 when nothing is proved,
    and when an entry of ``U, D, T, Y`` is outside the range of
    :func:`~absorb.rigorous.magnitudes_ok` (the narrow regime's backends refuse such inputs
    too; :func:`~absorb.search.find_index_set` rescales first).
    """
    U, D, T, Y = (np.asarray(x, dtype=np.float64) for x in (U, D, T, Y))
    if not magnitudes_ok(U, D, T, Y):
        return 0.0
    return check_dual_bound(U, D, T, Y, np.eye(U.shape[1])).relative


def relaxation_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """Box-relaxation bound: ``(bound, Y)`` with ``Y = T − D diag(x*) U`` for the bounded
    least-squares optimum ``x* = argmin_{x∈[0,1]^n} ‖D diag(x) U − T‖_F``.

    By the optimality conditions of ``x*``, this ``Y`` makes the dual bound equal to the
    relaxation's distance, which covers the rank bound (``T`` outside the span of the
    ``w_i u_i^T``) and, for generic ``n ≤ d²``, the unique real solution leaving the box.
    ``bound`` is then re-derived rigorously by :func:`dual_bound`, whatever ``x*`` is.
    """
    K = khatri_rao(U, D)
    t = T.ravel()
    x = _box_least_squares(K, t) if K.shape[1] <= _ACTIVE_SET_MAX_N else None
    if x is None:
        from scipy.optimize import lsq_linear

        # past 200 columns 'trf' with its dense solver factors an (m + n) × n matrix every
        # iteration (minutes at n = 1000); LSMR and 100 iterations keep it to seconds. Any x
        # gives a valid Y: a rougher x only weakens the bound, which dual_bound re-derives.
        small = K.shape[1] <= _ACTIVE_SET_MAX_N
        sol = lsq_linear(K, t, bounds=(0.0, 1.0), method="bvls" if small else "trf", tol=1e-14,
                         max_iter=10_000 if small else 100, **({} if small else {"lsq_solver": "lsmr"}))
        x = sol.x
    x = np.clip(x, 0.0, 1.0)
    Y = (t - K @ x).reshape(T.shape)
    return dual_bound(U, D, T, Y), Y


_ACTIVE_SET_MAX_N = 200  # where scipy's lsq_linear used its own active-set method (bvls)
RELAXATION_MAX_N = 5000
"""The widest block whose box relaxation the portfolio's first step solves (LSMR, ~3 s at d = 8)."""


def _box_least_squares(K: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """``argmin_{x∈[0,1]^n} ‖K x − t‖``, by Lawson and Hanson's active-set method with two
    bounds (Stark and Parker's BVLS), in numpy; ``None`` when it has not converged within
    its iteration cap (the caller then asks scipy's ``lsq_linear``).

    Only the strength of the dual bound depends on this optimum being exact: the bound is
    re-derived rigorously from whatever x it returns. In numpy because the first index-set
    step of a small block otherwise imports scipy.optimize (a third of a second) for a
    least squares of a few dozen columns.

    The start is the unconstrained least squares clipped to the box; a first pass then fixes
    at their bound all the free variables whose least squares leaves the box, until none
    does (as scipy's bvls starts). Each inner step solves
    least squares over the free variables and, when that leaves the box, moves to the box's
    edge on the segment towards it and fixes the variables that reached a bound; each outer
    step then frees the fixed variable whose bound the gradient most wants to leave."""
    n = K.shape[1]
    x = np.clip(np.linalg.lstsq(K, t, rcond=None)[0], 0.0, 1.0)  # Stark and Parker's start
    free = (x > 0.0) & (x < 1.0)
    while free.any():  # a quick first pass: every free variable that leaves the box is fixed at once
        F = np.flatnonzero(free)
        z = np.linalg.lstsq(K[:, F], t - K[:, ~free] @ x[~free], rcond=None)[0]
        inside = (z > 0.0) & (z < 1.0)
        x[F] = np.clip(z, 0.0, 1.0)
        if inside.all():
            break
        free[F[~inside]] = False
    scale = float(np.abs(K).sum(axis=0).max(initial=0.0)) * max(float(np.abs(t).max(initial=0.0)), 1.0)
    kkt_tol = 1e-13 * max(scale, 1e-300)
    for _ in range(3 * n + 10):
        for _inner in range(n + 1):  # x: the least squares over the free variables, inside the box
            if not free.any():
                break
            F = np.flatnonzero(free)
            z = np.linalg.lstsq(K[:, F], t - K[:, ~free] @ x[~free], rcond=None)[0]
            inside = (z > 0.0) & (z < 1.0)
            if inside.all():
                x[F] = z
                break
            # move from x towards z, stopping where the first free variable reaches a bound
            xF, out = x[F], ~inside
            with np.errstate(divide="ignore", invalid="ignore"):
                to_bound = np.where(z[out] <= 0.0, xF[out] / (xF[out] - z[out]), (1.0 - xF[out]) / (z[out] - xF[out]))
            to_bound = np.where(np.isfinite(to_bound), to_bound, 0.0)
            k = int(np.argmin(to_bound))
            xF = xF + float(np.clip(to_bound[k], 0.0, 1.0)) * (z - xF)
            xF[np.flatnonzero(out)[k]] = 0.0 if z[out][k] <= 0.0 else 1.0  # the variable that stopped the step
            at_bound = (xF <= 0.0) | (xF >= 1.0)
            x[F] = np.clip(xF, 0.0, 1.0)
            free[F[at_bound]] = False
        else:
            return None
        w = K.T @ (t - K @ x)  # minus the gradient of ½‖Kx − t‖²: KKT at x unless a bound pulls away
        want = ~free & (((x <= 0.0) & (w > kkt_tol)) | ((x >= 1.0) & (w < -kkt_tol)))
        if not want.any():
            return x
        free[int(np.argmax(np.where(want, np.abs(w), -1.0)))] = True
    return None


def relaxation_result(U: np.ndarray, D: np.ndarray, T: np.ndarray, tol: float, t0: float) -> SearchResult:
    """The portfolio's first step: ``infeasible`` with the dual matrix as certificate when
    :func:`relaxation_bound` exceeds ``tol``, else ``unknown`` (also out of range)."""
    if U.shape[0] > RELAXATION_MAX_N:  # (the relaxation of so many columns is feasible whenever d² < n, and slow)
        return SearchResult(SearchStatus.UNKNOWN, "dual-bound", f"n = {U.shape[0]} > {RELAXATION_MAX_N}: the box relaxation "
                            "is not solved past that width (its solver would take minutes)", elapsed=time.perf_counter() - t0)
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
