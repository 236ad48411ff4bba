"""A direction along which an exponential block's units stay bounded: the exponential result within a tolerance.

For σ(z) = A·e^{βz} + C the exact argument (f − g = M x + Σ c_j e^{β v_j·x} + c₀ for every residual-free g, and
exponentials, constants and a nonzero linear map are independent) rules out g = f only. Within a tolerance τ it
rules out nothing by itself: where f's units grow in every direction, |f(x)|∞ dwarfs the skip and a residual-free
block of f's own units, their down weights nudged, came within 0.07·τ of f (d = 1, units e^{±x}, e^{±x/2}, e^{±x/4}).

What survives is a ray x = t·v with β·(u_i·v) ≤ 0 for every unit of f (with a nonzero down column): there
f(tv) = t·M v + O(1). A residual-free g within τ of f for every x must stay bounded on that ray too — its terms with
a positive rate β·(u′_j·v) > 0, grouped by rate, would grow exponentially against f's linear growth and the
tolerance's measure |f(x)|∞ + |x|∞ + |f(0)|∞ = O(t) — and then |f(tv) − g(tv)|∞ / (that measure) tends to
‖Mv‖∞ / (‖Mv‖∞ + ‖v‖∞). If that exceeds τ (plus the rounding allowance) no g is within the tolerance.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.model.block import Block

_EXACT_WORK = 200_000
"""Most (n + d)·d multiply-adds of the exact check of a direction (U v and M v in rationals); past it, none is claimed."""
_ROWS = 16
"""Past d = 2·_ROWS, the linear programs maximise only the _ROWS rows of M with the largest 1-norms."""


def decay_direction(blk: Block, beta_positive: bool, tol: Fraction) -> tuple[np.ndarray, float] | None:
    """(v, r): a direction with sign(β)·u_i·v ≤ 0 exactly for every unit i with a nonzero down column, and
    r = ‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) (rounded down) > ``tol`` — the bound every residual-free block's error ratio
    reaches along x = t·v (``tol`` exact: τ plus the rounding allowance); None where no such direction is found (linear
    programs, then the exact check)."""
    from scipy.optimize import linprog

    d = blk.d
    U = np.asarray(blk.W_up, dtype=np.float64)
    live = np.any(np.asarray(blk.W_down) != 0, axis=0) & np.any(U != 0, axis=1)
    Us = U[live] * (1.0 if beta_positive else -1.0)
    M = np.asarray(blk.M, dtype=np.float64)
    if (Us.shape[0] + d) * d > _EXACT_WORK or not (np.all(np.isfinite(Us)) and np.all(np.isfinite(M))):  # (U v and M v)
        return None
    rows = range(d) if d <= 2 * _ROWS else np.argsort(-np.abs(M).sum(axis=1))[:_ROWS]
    slack = np.abs(Us).sum(axis=1) * 1e-9  # (strictly inside the cone where it has an interior: the exact check then holds)
    best: tuple[float, np.ndarray] | None = None
    for margin in (slack, np.zeros(len(Us))):
        for r in rows:
            for sign in (1.0, -1.0):
                res = linprog(-sign * M[r], A_ub=Us if len(Us) else None, b_ub=-margin if len(Us) else None,
                              bounds=[(-1.0, 1.0)] * d, method="highs")
                if res.status == 0 and res.x is not None and (best is None or -res.fun > best[0]):
                    best = (float(-res.fun), np.asarray(res.x, dtype=np.float64))
        if best is not None and best[0] > 0 and (r_ := _exact_ratio(Us, M, best[1], tol)) is not None:
            return best[1], r_
        best = None
    return None


def _exact_ratio(Us: np.ndarray, M: np.ndarray, v: np.ndarray, tol: Fraction) -> float | None:
    """‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) rounded down, when every row of ``Us`` has u·v ≤ 0 and it exceeds ``tol`` (exact
    rationals); else None."""
    q = [Fraction(float(x)) for x in v]

    def dot(row: np.ndarray) -> Fraction:  # (row·v, exactly)
        return sum((Fraction(float(a)) * x for a, x in zip(row, q) if a), Fraction(0))

    if any(dot(row) > 0 for row in Us):
        return None
    top = max((abs(dot(row)) for row in M), default=Fraction(0))
    vmax = max(abs(x) for x in q)
    if vmax == 0 or top == 0:
        return None
    ratio = top / (top + vmax)
    if not ratio > tol:
        return None
    out = float(ratio)
    if Fraction(out) > ratio:
        out = float(np.nextafter(out, 0.0))
    return out
