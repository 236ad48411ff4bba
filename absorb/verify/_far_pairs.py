"""The checker's own search for nearly collinear unit rows where every pair's cosine costs too much (n²·d past 2³⁵):
rows scaled to unit length and signed so that their largest entry is positive (nearly antipodal rows then meet),
projected on 6 random directions, sorted by each of the first two; each row's 12 next rows in either order whose
projections all lie within the pair's window are kept, and their exact cosines decide. A screen: what it finds only
leaves a not_absorbable not re-checked (exit 4)."""

from __future__ import annotations

import numpy as np


def far_pairs(unit: np.ndarray, amp: np.ndarray, tol: float, most: int) -> list[tuple[int, int, float]]:
    """Pairs (a, b, cos), a < b, of the unit rows ``unit`` with |cos| < 1 − 10⁻¹⁰ and sin θ times the smaller
    amplitude at most 2τ — θ ≤ 2τ/amp, so two such rows differ by at most 10θ in a Gaussian projection but for a
    chance below 10⁻²² — the ``most`` least."""
    n, d = unit.shape
    lead = unit[np.arange(n), np.argmax(np.abs(unit), axis=1)]
    sgn = np.where(lead < 0, -1.0, 1.0)
    S = unit * sgn[:, None]
    P = S @ np.random.default_rng(104723).standard_normal((d, 6))
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.where(np.isfinite(amp) & (amp > 0), 20.0 * tol / amp, 0.0)
    found = []
    for col in (0, 1):
        idx = np.argsort(P[:, col], kind="mergesort")
        for k in range(1, min(13, n)):
            a, b = idx[:-k], idx[k:]
            ok = np.all(np.abs(P[a] - P[b]) <= np.maximum(width[a], width[b])[:, None], axis=1)
            found.append(np.stack([np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])], axis=1))
    if not found:
        return []
    pairs = np.unique(np.concatenate(found), axis=0)
    if not len(pairs):
        return []
    cos = np.empty(len(pairs))
    for t in range(0, len(pairs), 2048):
        blk = pairs[t:t + 2048]
        cos[t:t + 2048] = np.sum(S[blk[:, 0]] * S[blk[:, 1]], axis=1)
    cos = np.clip(cos, -1.0, 1.0) * sgn[pairs[:, 0]] * sgn[pairs[:, 1]]
    val = np.sqrt(np.maximum(0.0, 1.0 - cos**2)) * np.minimum(amp[pairs[:, 0]], amp[pairs[:, 1]])
    keep = np.flatnonzero((np.abs(cos) < 1 - 1e-10) & (val <= 2 * tol) & np.isfinite(val))
    keep = keep[np.argsort(val[keep], kind="mergesort")][:most]
    return [(int(pairs[t, 0]), int(pairs[t, 1]), float(cos[t])) for t in keep]


__all__ = ["far_pairs"]
