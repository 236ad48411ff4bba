"""Units within the tolerance of collinear: the part of the spare-unit screen (:mod:`absorb.engine._spare`) that
withholds a not_absorbable outright. The exact arguments need non-collinear rows; where two units that are not
negligible come within the tolerance of collinear (:func:`_near_collinear`, pairs chosen by a first-order cost read
far out, :func:`_amplitudes`) and moving one row onto the other's line changes f by at most τ at sampled inputs
(:func:`_moved_onto_line`), f is within τ of a block those arguments do not cover."""

from __future__ import annotations

import math

import numpy as np

from absorb.engine._collinear import _normalised_block
from absorb.model.block import Block

_ALL_PAIRS_MAX = 1 << 22
"""n·d past this: nearly collinear pairs by projections, not by every pair's cosine (n²·d of them cost seconds)."""
_NEAR_MAX = 256
"""Nearly collinear pairs whose moves :func:`_moved_onto_line` samples."""


def _amplitudes(P: np.ndarray, U: np.ndarray, wmax: np.ndarray, X: np.ndarray, den: np.ndarray, gated: bool) -> np.ndarray:
    """What moving unit i's row (up row, or gate row) by an angle θ costs f per unit of θ, to first order where f is
    read at its largest sampled inputs: |w_i|∞·‖p_i‖₂ over max den(x)/|x|∞ there (σ's slope taken as 1), and for a
    gated unit times ‖u_i‖₂ over max den(x)/|x|∞² (the gate's change meets the value u_i·x)."""
    xs = np.max(np.abs(X), axis=1)
    far = xs >= max(float(xs.max()) / 100, 1.0)
    if not np.any(far):
        return np.full(len(P), np.inf)
    size = _row_norms(P) * wmax
    if gated:
        return size * _row_norms(U) / float(np.max(den[far] / xs[far] ** 2))
    return size / float(np.max(den[far] / xs[far]))


def _row_norms(P: np.ndarray) -> np.ndarray:
    """‖p_i‖₂, each row scaled by its largest entry first (no overflow at 10³⁰⁸)."""
    top = np.max(np.abs(P), axis=1) if len(P) else np.zeros(0)
    with np.errstate(all="ignore"):
        if len(P) and 1e-150 < float(top.min()) and float(top.max()) < 1e150:  # (no overflow or underflow: no copy)
            return np.sqrt(np.einsum("ij,ij->i", P, P))
        return top * np.linalg.norm(P / np.where(top > 0, top, 1.0)[:, None], axis=1)


def _near_collinear(P: np.ndarray, amps: list[np.ndarray], tol: float, mosts: list[int]) -> list[list[tuple[int, int, float]]]:
    """For each amplitude vector of ``amps`` (:func:`_amplitudes`; a unit whose amplitude is inf is left out): the pairs
    (i, j, cos) of rows of P (up rows, or gate rows, without their biases) that the exact arguments count as
    non-collinear (|cos| < 1 − 10⁻¹⁰) but whose angle is small for the tolerance — sin θ · min(amp_i, amp_j) ≤ 2τ:
    moving the smaller unit onto the other's line costs about that where f is read far out — the ``most`` with the
    least product. One pass of cosines by blocks of rows (unit rows by
    :func:`absorb.engine._collinear._normalised_block`: no overflow at 10³⁰⁸); past n·d = 2²² (or n²·d = 2³⁵) by
    projections (:func:`_projected_pairs`)."""
    n, d = P.shape
    if not np.all(np.any(P != 0, axis=1)) or not np.all(np.isfinite(P)) or any(np.any(np.isnan(a)) for a in amps):
        return [[] for _ in amps]
    Pn = _normalised_block(P, 0, n)
    if float(n) * n * d > 2.0**35 or n * d > _ALL_PAIRS_MAX:
        return [_projected_pairs(Pn, amp, tol, most) for amp, most in zip(amps, mosts)]
    got: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in amps]
    for lo in range(0, n, 512):
        C = np.clip(Pn[lo:lo + 512] @ Pn.T, -1.0, 1.0)
        sin = np.sqrt(np.maximum(0.0, 1.0 - C * C))
        base = np.abs(C) < 1 - 1e-10
        base[np.arange(C.shape[0])[:, None] >= np.arange(n)[None, :] - lo] = False  # (pairs i < j only)
        for amp, most, out in zip(amps, mosts, got):
            with np.errstate(invalid="ignore"):  # (0·inf where a unit left out has amplitude inf)
                prod = sin * np.minimum(amp[lo:lo + 512, None], amp[None, :])
            ii, jj = np.nonzero(base & (prod <= 2 * tol) & np.isfinite(prod))
            if len(ii) > most:  # (the block's own least first: no sort of every pair of a wide layer)
                part = np.argpartition(prod[ii, jj], most)[:most]
                ii, jj = ii[part], jj[part]
            out.append((ii + lo, jj, prod[ii, jj], C[ii, jj]))
    res = []
    for most, g in zip(mosts, got):
        a, b, prod, cos = (np.concatenate([x[t] for x in g]) for t in range(4))
        res.append([(int(a[t]), int(b[t]), float(cos[t])) for t in np.argsort(prod, kind="stable")[:most]])
    return res


def _moved_onto_line(blk: Block, near: list[tuple[int, int, float]], R: np.ndarray, wmax: np.ndarray, X: np.ndarray,
                     den: np.ndarray, scales: list[float], tol: float, f0: float, worst: int = 16) -> str | None:
    """Why f is within the tolerance of a block whose rows are collinear, or None: for each pair of
    :func:`_near_collinear`, unit b's row (up row, or gate row) moved onto unit a's line with b's length (or its
    projection's), orientation and bias kept, by sample — at the screen's inputs and along the ``worst`` closest pairs' worst directions (the sign vector
    of the move, and its part on a's hyperplane). The exact arguments need non-collinear rows, so a block that merges,
    cancels or rescales such a pair is not ruled out (where the move costs about τ, it is within the tolerance)."""
    d = blk.d
    P, q = R[:, :d], R[:, d]
    norms = _row_norms(P)
    extra = []
    for i, j, cos in near[:worst]:
        for a, b in ((i, j), (j, i)):
            sv = np.sign(math.copysign(1.0, cos) * float(norms[b] / norms[a]) * P[a] - P[b])
            on = sv - float(sv @ P[a]) / float(P[a] @ P[a]) * P[a]
            extra += [sv, -sv] + ([on, -on] if np.all(np.isfinite(on)) and np.any(on) else [])
    if extra:
        X2 = np.vstack([np.array(extra) * t for t in scales])
        den2 = np.max(np.abs(blk(X2)), axis=1) + np.max(np.abs(X2), axis=1) + f0
        keep = np.isfinite(den2) & (den2 > 0)
        X, den = np.vstack([X, X2[keep]]), np.concatenate([den, den2[keep]])
    U = np.asarray(blk.W_up, dtype=np.float64)
    cu = np.zeros(blk.n) if blk.b_up is None else np.asarray(blk.b_up, dtype=np.float64)
    for i, j, cos in near:
        for a, b, lam in ((i, j, 1.0), (j, i, 1.0), (i, j, abs(cos)), (j, i, abs(cos))):  # (length kept, or projected)
            pb = math.copysign(lam, cos) * float(norms[b] / norms[a]) * P[a]
            diff = np.abs(blk.activation(X @ pb + q[b]) - blk.activation(X @ P[b] + q[b]))
            if blk.gated:
                diff = diff * np.abs(X @ U[b] + cu[b])
            err = float(np.max(diff * wmax[b] / den))
            if err <= tol * (1 - 1e-3):
                return (f"Unknown: units {a} and {b} are nearly collinear ({'gate' if blk.gated else 'up'} rows at cos "
                        f"{cos:.6f}): unit {b}'s row moved onto unit {a}'s line (orientation and bias kept) "
                        f"changes f by {err:.2e} of its scale at the sampled inputs, within the tolerance, and the exact "
                        "argument needs non-collinear rows — a residual-free block that merges, cancels or rescales such "
                        "a pair is not ruled out.")
    return None


def _projected_pairs(Pn: np.ndarray, amp: np.ndarray, tol: float, most: int) -> list[tuple[int, int, float]]:
    """:func:`_near_collinear`'s pairs where every pair's cosine costs too much (past n²·d = 2³⁵, or n·d = 2²²): unit
    rows ``Pn`` signed alike (by a random direction, so that nearly antipodal rows meet too) and projected on 8 random
    Gaussian directions — two rows θ apart differ by θ·N(0, 1) in each; sorted by each of the first 3 projections, the
    8 next rows of each row are candidates, kept where all 8 projections differ by at most 8·(2τ/min amp); their exact
    cosines decide. A screen: a pair with more than 8 rows between it in all three orders, or projections more than 8θ
    apart, is missed."""
    n, d = Pn.shape
    rng = np.random.default_rng(1234)
    sign = np.where(Pn @ rng.standard_normal(d) < 0, -1.0, 1.0)
    S = Pn * sign[:, None]
    V = S @ rng.standard_normal((d, 8))
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(np.isfinite(amp) & (amp > 0), 16 * tol / amp, 0.0)  # (8·θ_max with θ_max = 2τ/amp)
    keys = []
    for key in range(3):
        order = np.argsort(V[:, key], kind="stable")
        for k in range(1, min(9, n)):
            a, b = order[:-k], order[k:]
            near = np.all(np.abs(V[a] - V[b]) <= np.maximum(reach[a], reach[b])[:, None], axis=1)
            keys.append(np.minimum(a, b)[near].astype(np.int64) * n + np.maximum(a, b)[near])
    both = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    if not len(both):
        return []
    a, b = both // n, both % n
    c = np.concatenate([np.einsum("ij,ij->i", S[a[t:t + 4096]], S[b[t:t + 4096]]) for t in range(0, len(a), 4096)])
    c = np.clip(c, -1.0, 1.0) * sign[a] * sign[b]
    prod = np.sqrt(np.maximum(0.0, 1.0 - c * c)) * np.minimum(amp[a], amp[b])
    keep = np.flatnonzero((np.abs(c) < 1 - 1e-10) & (prod <= 2 * tol) & np.isfinite(prod))
    keep = keep[np.argsort(prod[keep], kind="stable")][:most]
    return [(int(a[t]), int(b[t]), float(c[t])) for t in keep]
