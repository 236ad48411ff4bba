"""Helpers of the narrow regime shared by the index-set backends: the matrix ``K`` of the
vectorised products and the check of candidate sets (float residual for ``found``, an
exact-rational lower bound for the rest)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from absorb.rigorous import exact_relative_residual_bounds, relative_residual

__all__ = ["classify_candidates", "khatri_rao"]


def khatri_rao(U: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``K`` (d_out·d_in × n) with column i = vec(w_i u_i^T) (row-major vec), in float64.

    Each entry is one rounded product ``D[j,i]·U[i,k]``, so ``|K̂ − K| ≤ u·|K̂|·(1+2u)``.
    Only for the narrow regime (small d): never call it at real model sizes.
    """
    n = U.shape[0]
    return np.einsum("ji,ik->jki", D, U).reshape(-1, n)


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
