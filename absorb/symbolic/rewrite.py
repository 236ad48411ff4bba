"""A normalising rewrite before ``simplify``, for identities sympy misses.

sympy's ``simplify`` does not see erf(v) + erfc(v) = 1, so σ(z) − σ(−z) = z stays unproved for
activations built from both. :func:`normalise` rewrites every head into a small basis by exact
identities: erfc(v) = 1 − erf(v) (with erf(−v) = −erf(v), which sympy applies itself),
tanh(v) = 2/(1 + e^{−2v}) − 1, sinh and cosh through exp. The result is equal to the input for
every real x, so an identity proved on it holds for the input.
"""

from __future__ import annotations

import sympy as sp


def normalise(e: sp.Expr) -> sp.Expr:
    """``e`` with erfc, tanh, sinh, cosh rewritten through erf and exp (an exact identity)."""
    rules = (
        (sp.erfc, lambda v: 1 - sp.erf(v)),
        (sp.tanh, lambda v: 2 / (1 + sp.exp(-2 * v)) - 1),
        (sp.sinh, lambda v: (sp.exp(v) - sp.exp(-v)) / 2),
        (sp.cosh, lambda v: (sp.exp(v) + sp.exp(-v)) / 2),
    )
    for head, fn in rules:
        e = e.replace(lambda q, _h=head: isinstance(q, _h), lambda q, _fn=fn: _fn(q.args[0]))
    return e


def normalised_simplify(e: sp.Expr) -> sp.Expr | None:
    """simplify of ``e``'s normalised form, or None when normalising changes nothing."""
    n = normalise(e)
    if n == e:
        return None
    return sp.simplify(sp.expand(n))


STEP = (r"\text{rewritten with } \operatorname{erfc} v = 1 - \operatorname{erf} v,\ "
        r"\tanh v = \tfrac{2}{1+e^{-2v}} - 1,\ \sinh, \cosh \text{ through } \exp")
