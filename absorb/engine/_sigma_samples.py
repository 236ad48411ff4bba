"""σ read on a sample of the real line, for the tolerance screens (:mod:`absorb.engine.tolerance`,
:mod:`absorb.engine._spare`): σ(0) as float64 and exactly 0 where that is rounding, the trusted points of a fixed grid,
and a flip identity's defect. Samples and estimates, not bounds: the screens that read them only withhold a verdict.
"""

from __future__ import annotations

import math

import numpy as np

from absorb.model.activations import Activation, is_builtin


def _flip_defect(act: Activation, c: object) -> float | None:
    """κ ≥ sup |σ(z) − σ(−z) − c·z|/|z|: exactly from the break points for a piecewise-linear σ
    (:func:`absorb.symbolic.shift.flip_defect`), else read at the trusted points of the grid (:func:`_trusted_grid`)
    whose mirror is trusted too — a pair (u, w/c), (−u, −w/c) then gives w·(u·x) within |w|∞κ|u·x|/|c|. An
    estimate for a smooth σ (the screen that reads it only withholds a verdict); None (or 0) where none is found."""
    from absorb.engine.witness import expression_sigma

    if expression_sigma(act) is not None:  # piecewise linear: δ's sup ratio exactly, from its break points
        from absorb.symbolic.shift import flip_defect

        k = flip_defect(act.expr, c)  # type: ignore[attr-defined,arg-type]
        return float(k) * (1 + 2.0**-50) if k else None
    z, v = _trusted_grid(act)
    pos = z > 0
    both, i, j = np.intersect1d(z[pos], -z[~pos], return_indices=True)
    if not len(both):
        return None
    with np.errstate(all="ignore"):
        kappa = float(np.max(np.abs(v[pos][i] - v[~pos][j] - float(c) * both) / both))  # type: ignore[arg-type]
    return kappa if math.isfinite(kappa) and kappa > 0 else None


def _float_at_zero(act: Activation) -> float:
    """σ(0) as σ's float64 evaluation gives it."""
    with np.errstate(all="ignore"):
        return float(np.asarray(act(np.zeros(1)), dtype=np.float64).reshape(-1)[0])


def _at_zero(act: Activation) -> float:
    """σ(0) in float64, and exactly 0 where a user's expression is 0 at 0 though its float64 value is not (a sum of
    terms that cancel, 3.5·10⁻¹⁸): a tiny value is checked with sympy."""
    zero = _float_at_zero(act)
    if 0 < abs(zero) < 1e-9 and not is_builtin(act):
        import sympy as sp

        from absorb.model.activations import X

        if sp.simplify(act.expr.subs(X, 0)) == 0:  # type: ignore[attr-defined]
            return 0.0
    return zero


_GRID = np.unique(np.concatenate([-np.geomspace(1e8, 1e-6, 800), np.linspace(-60, 60, 48001), np.geomspace(1e-6, 1e8, 800)]))
"""The screens' sample of the real line: a fine grid of [−60, 60] (step 0.0025) and geometric tails to ±10⁸."""


_TRUSTED: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _trusted_grid(act: Activation) -> tuple[np.ndarray, np.ndarray]:
    """(z, σ(z)) at the points of :data:`_GRID` where σ's float64 value is finite and, for a user's expression,
    trusted: every 16th point is evaluated again in mpmath at 128 and 192 bits, and a stretch of the grid is kept
    only where both ends agree with the float64 value (relative 10⁻⁷): an expression that loses its digits in
    float64 (cosh(x)**2 − sinh(x)**2 at x = 30) or even at 128 bits is read only where it is right. A sample,
    not a bound: the screens that read it only withhold a verdict."""
    key = getattr(act, "key", "")
    if key in _TRUSTED:
        return _TRUSTED[key]
    z = _GRID
    with np.errstate(all="ignore"):
        v = np.asarray(act(z), dtype=np.float64)
    ok = np.isfinite(v)
    if not is_builtin(act):
        from absorb.model._expr_numpy import UnsupportedExpression, precise_form

        try:
            lo, hi = precise_form(key), precise_form(key, bits=192)
        except UnsupportedExpression:
            lo = hi = None
        if lo is not None and hi is not None:
            idx = np.arange(0, len(z), 16)
            a, b = lo(z[idx]), hi(z[idx])
            with np.errstate(all="ignore"):
                tol = 1e-7 * (np.abs(b) + 1e-300)
                good = (np.abs(a - b) <= tol) & (np.abs(v[idx] - b) <= tol)
            nxt = np.append(good[1:], good[-1])
            ok &= np.repeat(good & nxt, 16)[: len(z)]
    _TRUSTED[key] = (z[ok], v[ok])
    return _TRUSTED[key]
