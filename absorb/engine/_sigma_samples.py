"""σ read on a sample of the real line, for the tolerance screens (:mod:`absorb.engine.tolerance`,
:mod:`absorb.engine._spare`): σ(0) as float64 and exactly 0 where that is rounding, the trusted points of a fixed grid
(:func:`absorb.model._samples.trusted_grid`), and a flip identity's defect. Samples and estimates, not bounds: the screens that read them only withhold a verdict.
"""

from __future__ import annotations

import math

import numpy as np

from absorb.model._samples import trusted_grid as _trusted_grid
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
