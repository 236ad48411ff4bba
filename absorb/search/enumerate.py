"""Exhaustive enumeration of all 2^n index sets, with a rigorous rounding bound.

Why: for small ``n`` (≤ 26) this is the simplest complete method and an independent
cross-check for the cleverer ones (meet-in-the-middle, Z3, HiGHS).  It is vectorised: a
table of the 2^L subset sums of the last L columns of ``K`` (d²-vectors) is built once by
doubling, and each chunk of high bits adds one vector to the whole table.

Soundness.  Write ``a_i`` for the exact column ``vec(w_i u_i^T)``, ``â_i`` for its float,
``t = vec(T)``.  For any S the computed residual ``r̂_S`` is a float sum of ``|S|+1`` terms
(in some order) of the ``â_i`` and ``−t``, so entrywise

    |r̂_S − r_S| ≤ e := γ_{n+1}·(Σ_i |â_i| + |t|) + u(1+2u)·Σ_i |â_i|        (Higham §3.1)

(the second term is the rounding of the products ``D_ji U_ik``).  The computed norm obeys
``‖r̂‖ ≤ fl‖r̂‖·(1+γ_{m+2})``, hence the rigorous lower bound

    ‖r_S‖ ≥ fl‖r̂_S‖·(1 − γ_{m+2}) − ‖e‖·(1 + γ_{m+2}).

This needs no overflow and no underflow of products: inputs outside the range of
:func:`~absorb.rigorous.magnitudes_ok` get ``unknown``. Inside it a square may still underflow
after a cancellation (by ≤ 2^-1074), which the term √m·2^-537 added to ‖e‖ covers.

Every S whose lower bound does not exceed ``tol·‖T‖`` is a *candidate*: it is checked by
its float64 residual (``found``) or, failing that, bounded over exact rationals.  When all
2^n sets are covered, ``infeasible`` carries ``bound`` = the minimum of all those lower
bounds divided by an upper bound of ‖T‖.
"""

from __future__ import annotations

import math
import time

import numpy as np

from absorb.rigorous import SAFE_EXPONENT, frobenius_bounds, gamma, magnitudes_ok

from ._common import classify_candidates, khatri_rao
from ._types import SearchResult, SearchStatus

#: largest n this backend accepts (2^26 sets of d² floats is seconds of work)
MAX_N = 26
#: rows of the low-bit table (2^LOW_BITS subset sums per chunk)
LOW_BITS = 16


def subset_sums(cols: np.ndarray) -> np.ndarray:
    """All 2^k subset sums of the rows of ``cols`` (k×m): row ``mask`` = Σ_{bit i of mask} cols[i].

    Built by doubling; each entry is a float sum of at most k terms.
    """
    k, m = cols.shape
    out = np.zeros((1, m), dtype=np.float64)
    for i in range(k):
        out = np.concatenate([out, out + cols[i]], axis=0)
    return out


def solve_enumerate(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray,
    *,
    tol: float = 1e-9,
    timeout: float = 60.0,
    seed: int = 0,
) -> SearchResult:
    """Try all 2^n index sets; ``found``, ``infeasible`` (rigorous) or ``unknown``.

    ``seed`` is unused (the method is deterministic); it is accepted for a uniform API.
    """
    t0 = time.perf_counter()
    n = U.shape[0]
    if n > MAX_N:
        return SearchResult(SearchStatus.UNKNOWN, "enumerate",
                            f"n={n} > {MAX_N}: 2^n sets is too many to enumerate",
                            elapsed=time.perf_counter() - t0)
    if not magnitudes_ok(U, D, T):
        return SearchResult(SearchStatus.UNKNOWN, "enumerate",
                            f"an entry of U, D or T is outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where "
                            "the rounding bound holds (find_index_set rescales by powers of two first)",
                            elapsed=time.perf_counter() - t0)
    K = khatri_rao(U, D).T.copy()  # n × m, row i = â_i
    t = T.ravel()
    m = t.size
    _, t_hi = frobenius_bounds(T)
    eps = tol * t_hi  # every S with ‖r‖ ≤ tol‖T‖ has ‖r‖ ≤ eps
    absK = np.abs(K).sum(axis=0)
    e = gamma(n + 1) * (absK + np.abs(t)) + 1.01 * 2.0**-53 * absK
    # + √(m·2^-1074): the m squares in each norm may underflow, by ≤ 2^-1074 each
    e_norm = math.sqrt(float(np.sum(e * e))) * (1 + gamma(m + 2)) + math.sqrt(m) * 2.0**-537
    shrink = 1.0 - gamma(m + 2)

    low = min(n, LOW_BITS)
    table = subset_sums(K[:low]) - t  # 2^low × m; residual of the low part
    high_cols = K[low:]
    n_high = n - low
    high_tab = subset_sums(high_cols) if n_high <= 12 else None
    best_lower = math.inf
    candidates: list[tuple[int, ...]] = []
    per_chunk = max(1, (1 << 20) >> low)
    n_chunks = 1 << n_high
    for start in range(0, n_chunks, per_chunk):
        if time.perf_counter() - t0 > timeout:
            return SearchResult(SearchStatus.UNKNOWN, "enumerate",
                                f"time budget {timeout:g}s spent after {start}/{n_chunks} chunks",
                                elapsed=time.perf_counter() - t0)
        hs = np.arange(start, min(start + per_chunk, n_chunks), dtype=np.int64)
        if high_tab is not None:
            hv = high_tab[hs]
        else:
            bits = ((hs[:, None] >> np.arange(n_high)) & 1).astype(np.float64)
            hv = bits @ high_cols
        R = table[None, :, :] + hv[:, None, :]  # chunk × 2^low × m
        norms = np.sqrt(np.einsum("abm,abm->ab", R, R))
        lower = norms * shrink - e_norm
        hit = lower <= eps
        if np.any(hit):
            for a, b in zip(*np.nonzero(hit)):
                mask = (int(hs[a]) << low) | int(b)
                candidates.append(tuple(i for i in range(n) if (mask >> i) & 1))
            lower = np.where(hit, np.inf, lower)
        best_lower = min(best_lower, float(lower.min()))
        if len(candidates) > 10_000:
            return SearchResult(SearchStatus.UNKNOWN, "enumerate",
                                "more than 10000 near-solutions: the rounding bound is too loose",
                                elapsed=time.perf_counter() - t0)
    S, res, cand_lower = classify_candidates(U, D, T, candidates, tol)
    elapsed = time.perf_counter() - t0
    if S is not None:
        return SearchResult(SearchStatus.FOUND, "enumerate", "exhaustive enumeration",
                            S=S, residual=res, elapsed=elapsed)
    bound = min(max(best_lower, 0.0) / t_hi * (1 - 4 * 2.0**-53), cand_lower)
    if bound > tol:
        return SearchResult(
            SearchStatus.INFEASIBLE, "enumerate",
            f"all 2^{n} sets enumerated with a rigorous rounding bound", bound=bound,
            elapsed=elapsed,
            certificate={"kind": "enumeration", "sets": 1 << n, "candidates": len(candidates)},
        )
    return SearchResult(SearchStatus.UNKNOWN, "enumerate",
                        f"a set has exact residual ≤ tol but float64 residual > tol (bound {bound:.3e})",
                        elapsed=elapsed)
