"""Near-collinear rows of ``W_up`` (the nondegeneracy hypothesis of result 5).

Blocked Gram computation: exact enough for the sizes the core handles; the scale work
replaces it with a screen that avoids the n×d×n product.
"""

from __future__ import annotations

import numpy as np


def near_collinear_pairs(U: np.ndarray, *, tau: float) -> list[tuple[int, int, float]]:
    """Pairs (i, j), i < j, of nonzero rows with |cos(u_i, u_j)| ≥ 1 − tau."""
    norms = np.linalg.norm(U, axis=1)
    live = np.flatnonzero(norms > 0)
    V = U[live] / norms[live, None]
    out: list[tuple[int, int, float]] = []
    step = 2048
    for a in range(0, len(live), step):
        C = np.abs(V[a:a + step] @ V.T)
        ii, jj = np.nonzero(C >= 1.0 - tau)
        for i, j in zip(ii, jj):
            gi, gj = a + int(i), int(j)
            if gi < gj:
                out.append((int(live[gi]), int(live[gj]), float(C[i, j])))
    return out


def max_abs_cosine(U: np.ndarray) -> float:
    """max over pairs of nonzero rows of |cos(u_i, u_j)| (0 when fewer than two rows)."""
    norms = np.linalg.norm(U, axis=1)
    V = U[norms > 0] / norms[norms > 0, None]
    if len(V) < 2:
        return 0.0
    best = 0.0
    step = 2048
    for a in range(0, len(V), step):
        C = np.abs(V[a:a + step] @ V.T)
        idx = np.arange(C.shape[0])
        C[idx, a + idx] = 0.0
        best = max(best, float(C.max()))
    return best
