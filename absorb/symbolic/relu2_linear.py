"""σ = α·ReLU(z)² + β·z for every real z (α, β nonzero rationals): the class of the relu2-linear
argument (:mod:`absorb.engine.relu2_linear`, docs/results/skeleton2.md).

An analysis like the others: run in the budgeted child process of a user's expression and kept in
the analysis cache, never in the deciding process. Only piecewise polynomials are tried (x,
rational constants, +, ·, nonnegative integer powers, Max, Min, Abs): any other spelling is
`unknown` at once, so a transcendental σ costs nothing here. The proof is exact simplification on
each side of 0 and at 0 — σ(p) − αp² − βp = 0 and σ(−p) + βp = 0 for p > 0 (a positive symbol),
σ(0) = 0 — with β = −σ(−1) and α = σ(1) + σ(−1) forced; no numeric sample is a proof.
"""

from __future__ import annotations

import sympy as sp

from absorb.model.activations import Activation, X
from absorb.symbolic._core import Property, Status
from absorb.symbolic._core import get as _get

_PIECEWISE_POLYNOMIAL = (sp.Max, sp.Min, sp.Abs)


def _piecewise_polynomial(e: sp.Expr) -> bool:
    return (all(a.is_Symbol or a.is_Rational for a in e.atoms())
            and all(isinstance(f, _PIECEWISE_POLYNOMIAL) for f in e.atoms(sp.Function))
            and all(p.exp.is_Integer and p.exp >= 0 for p in e.atoms(sp.Pow)))


def _relu2_linear_form(e: sp.Expr) -> Property:

    name = "relu2_linear"
    if not _piecewise_polynomial(e):
        return Property(name, Status.UNKNOWN, "σ is not written as a piecewise polynomial (x, rationals, +, ·, integer "
                        "powers, Max, Min, Abs), the only spellings tried for α·ReLU(z)² + β·z")
    beta = sp.simplify(-e.subs(X, -1))
    alpha = sp.simplify(e.subs(X, 1) + e.subs(X, -1))
    if not (isinstance(alpha, sp.Rational) and isinstance(beta, sp.Rational)):
        return Property(name, Status.UNKNOWN, "σ(1), σ(−1) are not proved rational")
    if alpha == 0 or beta == 0:
        return Property(name, Status.REFUTED, f"σ(1) + σ(−1) = {alpha}, −σ(−1) = {beta}: α·ReLU(z)² + β·z needs both nonzero")
    if not _holds(e, alpha, beta):
        return Property(name, Status.UNKNOWN, f"σ(z) = {alpha}·ReLU(z)² + {beta}·z is not proved for every real z")
    return Property(name, Status.PROVED, f"σ(z) = {alpha}·ReLU(z)² + {beta}·z for every real z",
                    value={"alpha": alpha, "beta": beta},
                    steps=(rf"\sigma(p) - {sp.latex(alpha)}p^2 - {sp.latex(beta)}p = 0,\ \sigma(-p) + {sp.latex(beta)}p = 0"
                           r"\ (p > 0),\ \sigma(0) = 0",))


def _holds(e: sp.Expr, alpha: sp.Rational, beta: sp.Rational) -> bool:
    """σ(p) − αp² − βp = 0 and σ(−p) + βp = 0 for p > 0 (a positive symbol), σ(0) = 0: exact simplification."""
    from absorb.symbolic.properties import P, _is_zero

    return (_is_zero(e.subs(X, P) - alpha * P**2 - beta * P) is True and _is_zero(e.subs(X, -P) + beta * P) is True
            and _is_zero(e.subs(X, 0)) is True)


def relu2_multiple(act: Activation) -> sp.Rational | None:
    """α where σ(z) = α·ReLU(z)² for every real z (a piecewise polynomial spelling, checked exactly as
    :func:`relu2_linear_form` does, which wants β ≠ 0); None otherwise."""
    e = act.expr
    if not _piecewise_polynomial(e):
        return None
    beta, alpha = sp.simplify(-e.subs(X, -1)), sp.simplify(e.subs(X, 1) + e.subs(X, -1))
    if beta != 0 or not isinstance(alpha, sp.Rational) or alpha == 0:
        return None
    return alpha if _holds(e, alpha, sp.Integer(0)) else None


def relu2_linear_form(act: Activation) -> Property:
    """Decide whether σ(z) = α·ReLU(z)² + β·z for every real z with α, β ≠ 0; value: ``alpha``, ``beta``.

    >>> from absorb.model.activations import get_activation
    >>> p = relu2_linear_form(get_activation("expr:Max(0,x)**2 + x"))
    >>> p.value["alpha"], p.value["beta"]
    (1, 1)
    """
    return _get(act, "relu2_linear")


ANALYSES = (("relu2_linear", "relu2_linear", _relu2_linear_form),)
"""(cache name, property name, analysis): registered by :mod:`absorb.symbolic.properties`."""

__all__ = ["ANALYSES", "relu2_linear_form"]
