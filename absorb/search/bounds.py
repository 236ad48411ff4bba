"""The dual bound of the index-set problem (theory.md §4) in the narrow regime, and the
box relaxation that supplies its dual matrix.

For any ``Y`` the bound is a rigorous lower bound on ``‖D diag(b) U − T‖_F / ‖T‖_F`` over
the whole box ``b ∈ [0,1]^n`` (so over every index set); ``Y`` from the box-constrained
least squares makes it as large as the relaxation allows.
"""

from __future__ import annotations

import math
import time

import numpy as np

from absorb.rigorous import SAFE_EXPONENT, UNIT_ROUNDOFF, frobenius_bounds, gamma, magnitudes_ok

from ._common import khatri_rao
from ._types import SearchResult, SearchStatus

__all__ = ["dual_bound", "relaxation_bound", "relaxation_result"]


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
