"""A point that proves the parity result within a tolerance.

For σ even and f bias-free, every bias-free residual-free block g (of any width) is even, while
f(x) − f(−x) = 2Mx. The exact argument rules out g = f only. Within a tolerance τ: if g were within τ of f at
x and at −x, then 2|Mx|∞ = |f(x) − f(−x)|∞ ≤ |f(x) − g(x)|∞ + |f(−x) − g(−x)|∞ ≤ τ'·(den(x) + den(−x)),
den(y) = |f(y)|∞ + |y|∞ + |f(0)|∞ and τ' = τ plus the rounding allowance. So one point x with

    r(x) = 2|Mx|∞ / (den(x) + den(−x)) > τ'

rules out every such g. The ratio r is searched in float64 over directions (M's right singular vectors, the sign
vectors of its rows, seeded Gaussian ones) and scales 2^k; the best points are then bounded rigorously: M x, U x and
W_down σ(U x) in float64 with a rounding account (Higham's γ), σ on each unit's interval by interval arithmetic
(:func:`absorb.model._expr.enclose_at`), and B(−x) = B(x) (σ even, proved before this runs).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from absorb.model.block import Block
from absorb.rigorous import gamma

_UNITS = 20_000
"""Most units whose σ is enclosed (one interval evaluation each); past it, no point is claimed."""
_WORK = 2_000_000
"""Most (n + d)·d: past it the checker would not re-derive the point in its exact rationals, and none is claimed."""
_SCALES = tuple(2.0**k for k in range(-60, 61, 3))
"""The scales t of the searched points t·v (|v|∞ = 1)."""
_RANDOM = 24
"""Seeded Gaussian directions searched beside M's own."""
_TRIED = 4
"""At least this many points (the best of as many scales, by the float64 ratio) are bounded rigorously before giving up."""
_TRY_WORK = 100_000
"""And up to this many units' enclosures in all (one point per scale): a small block gets every scale tried."""
_TINY = 2.0**-1000
"""Absolute slack for underflow in each rounded dot product."""


def parity_point(blk: Block, tol: Fraction, seed: int) -> tuple[np.ndarray, float] | None:
    """(x, r): a point with r(x) ≥ r > ``tol`` proved (r rounded down), or None where none is found."""
    d, M = blk.d, np.asarray(blk.M, dtype=np.float64)
    U, D = np.asarray(blk.W_up, dtype=np.float64), np.asarray(blk.W_down, dtype=np.float64)
    if blk.n > _UNITS or (blk.n + d) * d > _WORK or not (np.all(np.isfinite(M)) and np.all(np.isfinite(U)) and np.all(np.isfinite(D))):
        return None
    rng = np.random.default_rng(seed)
    dirs = [np.linalg.svd(M)[2][: min(d, 8)], np.sign(M[np.argsort(-np.abs(M).sum(axis=1))[:8]]),
            rng.standard_normal((_RANDOM, d))]
    V = np.concatenate(dirs)
    V = V[np.abs(V).max(axis=1) > 0]
    V = V / np.abs(V).max(axis=1, keepdims=True)
    X = np.concatenate([t * V for t in _SCALES])
    with np.errstate(all="ignore"):
        f0 = float(np.abs(blk(np.zeros((1, d)))).max())
        den = np.abs(blk(X)).max(axis=1) + np.abs(blk(-X)).max(axis=1) + 2 * np.abs(X).max(axis=1) + 2 * f0
        r = 2 * np.abs(X @ M.T).max(axis=1) / den
    r[~np.isfinite(r)] = 0.0
    tries, scales = max(_TRIED, min(len(_SCALES), _TRY_WORK // max(blk.n, 1))), set()
    for i in np.argsort(-r, kind="stable"):  # (the best point of each scale: float64 can misread σ at a scale — log(1 + z²) is
        if not r[i] > float(tol) or len(scales) >= tries:  # 0 for |z| < 10⁻⁸, red team 47c/02 — so others get their turn)
            break
        if i // len(V) in scales:
            continue
        scales.add(i // len(V))
        low = _ratio_lower(blk.activation.expr, M, U, D, X[i])
        if low is not None and Fraction(low) > tol:
            return X[i], low
    return None


def _ratio_lower(expr: object, M: np.ndarray, U: np.ndarray, D: np.ndarray, x: np.ndarray) -> float | None:
    """A rigorous lower bound of r(x) (float64 with a rounding account, σ by interval arithmetic), or None."""
    from absorb.model._expr import enclose_at

    d, n = len(x), U.shape[0]
    with np.errstate(all="ignore"):
        mx = M @ x
        e_mx = gamma(d) * (np.abs(M) @ np.abs(x)) + d * _TINY
        z = U @ x
        e_z = gamma(d) * (np.abs(U) @ np.abs(x)) + d * _TINY
        lo_z, hi_z = _down(z - e_z), _up(z + e_z)
        s = enclose_at(expr, lo_z, hi_z)  # type: ignore[arg-type]
        s0 = enclose_at(expr, np.zeros(1), np.zeros(1))  # type: ignore[arg-type]
        if s is None or s0 is None:
            return None
        mid, rad = (s[0] + s[1]) / 2, (s[1] - s[0]) / 2  # (mid ± rad holds [s_lo, s_hi]: rounded up below)
        rad = _up(_up(rad) + gamma(1) * np.abs(mid))
        b = D @ mid
        e_b = gamma(n) * (np.abs(D) @ np.abs(mid)) + np.abs(D) @ rad + n * _TINY
        e_b = _up(e_b * (1 + gamma(n + 2)))
        c0 = max(abs(s0[0][0]), abs(s0[1][0]))  # (bias-free: f(0) = σ(0)·W_down 1)
        f0 = _up(c0 * (np.abs(D.sum(axis=1)) + gamma(n) * np.abs(D).sum(axis=1)).max(initial=0.0) * (1 + gamma(n + 2))) if c0 else 0.0
        top = float(_down(np.abs(mx) - e_mx).max(initial=0.0))
        plus = _up(np.abs(mx + b) + e_mx + e_b).max(initial=0.0)
        minus = _up(np.abs(b - mx) + e_mx + e_b).max(initial=0.0)
        den = (plus + minus + 2 * float(np.abs(x).max()) + 2 * f0) * (1 + gamma(4))
    if not (top > 0 and math.isfinite(den) and den > 0):
        return None
    low = 2 * top / den * (1 - gamma(2))
    return low if math.isfinite(low) and low > 0 else None


def _up(a: np.ndarray | float) -> np.ndarray:
    return np.nextafter(a, np.inf)


def _down(a: np.ndarray | float) -> np.ndarray:
    return np.nextafter(a, -np.inf)
