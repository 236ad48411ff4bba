"""Index-set search (temporary core dispatcher: exhaustive enumeration for small n).

Replaced by the portfolio dispatcher of the search work; same signature.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from absorb.search._types import SearchResult, SearchStatus

METHODS = ("auto", "enumerate")
_EPS = np.finfo(float).eps


def find_index_set(U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
                   method: str = "auto", seed: int = 0) -> SearchResult:
    n, d = U.shape
    t0 = time.perf_counter()
    if n > 18:
        return SearchResult(SearchStatus.UNKNOWN, "enumerate", f"n = {n} is too large for enumeration", elapsed=0.0)
    K = np.einsum("ji,ik->ijk", D, U).reshape(n, d * d)
    t = T.reshape(-1)
    tn = float(np.linalg.norm(t))
    best, bestS = np.inf, None
    for r in range(n + 1):
        for S in itertools.combinations(range(n), r):
            v = K[list(S)].sum(axis=0) - t if S else -t
            e = float(np.linalg.norm(v)) / tn
            if e < best:
                best, bestS = e, S
    err = (n + d + 2) * _EPS * (float(np.abs(K).sum(axis=0).max()) + float(np.abs(t).max())) * d / tn
    el = time.perf_counter() - t0
    if best <= tol:
        return SearchResult(SearchStatus.FOUND, "enumerate", "exhaustive", S=tuple(bestS), residual=best, elapsed=el)
    if best - err > tol:
        return SearchResult(SearchStatus.INFEASIBLE, "enumerate", "all subsets enumerated", bound=best - err, elapsed=el)
    return SearchResult(SearchStatus.UNKNOWN, "enumerate", "minimum within rounding of tol", elapsed=el)
