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
    from scipy.optimize import lsq_linear

    K = khatri_rao(U, D)
    t = T.ravel()
    sol = lsq_linear(K, t, bounds=(0.0, 1.0), method="bvls" if K.shape[1] <= 200 else "trf",
                     tol=1e-14, max_iter=10_000)
    x = np.clip(sol.x, 0.0, 1.0)
    Y = (t - K @ x).reshape(T.shape)
    return dual_bound(U, D, T, Y), Y


def relaxation_result(U: np.ndarray, D: np.ndarray, T: np.ndarray, tol: float, t0: float) -> SearchResult:
    """The portfolio's first step: ``infeasible`` with the dual matrix as certificate when
    :func:`relaxation_bound` exceeds ``tol``, else ``unknown`` (also out of range)."""
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
