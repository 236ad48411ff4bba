"""Value activations: affine ones, h(z) = c·z + k for every real z; and factors bounded near 0.

A gated unit g(w_g·x + b_g)·h(w_u·x + b_u) with an affine h is the unit with h(z) = z and
(w_u, b_u) → (c·w_u, c·b_u + k): the same function. The engine uses this to decide such a
block with the results for h(z) = z (:func:`absorb.engine.results.affine_value`).

The proof is the linear form's (:func:`absorb.symbolic.growth.linear_form`) applied to
h − h(0): k = h(0) exactly, then h(p) − k = c·p and h(−p) − k = −c·p for p > 0 by exact
simplification (Max/Min/Abs/Piecewise resolved from the sign of p), and h(0) − k = 0. Any
spelling is recognised (``2*x``, ``x + 1``, ``Max(0,x) + Min(0,x)``); no numeric sample is
a proof, only the refutation uses exact (or 50-digit) values at a few points.
"""

from __future__ import annotations

import sympy as sp

from absorb.model.activations import Activation, X
from absorb.symbolic._core import Property, Status
from absorb.symbolic._core import get as _get

# (absorb.symbolic.growth is imported inside the analyses, and absorb.symbolic.properties not at
# all: properties registers ANALYSES below when it is imported, before growth, so that every view
# of the registry — growth re-exports it — has them, with no import cycle)


def _affine_form(e: sp.Expr) -> Property:
    from absorb.symbolic.growth import _fmt, _linear_form

    name = "affine"
    k = sp.simplify(e.subs(X, 0))
    steps = [rf"h(x) = {_fmt(e)}", rf"k = h(0) = {_fmt(k)}"]
    if k.free_symbols or not (k.is_real and k.is_finite):
        return Property(name, Status.UNKNOWN, "h(0) is not proved a finite real number, so h is not proved affine",
                        steps=tuple(steps))
    lin = _linear_form(e - k)
    steps += [s.replace(r"\sigma", r"(h - k)") for s in lin.steps[1:]]
    if lin.status is Status.PROVED:
        c = lin.value["c"]
        return Property(name, Status.PROVED, f"h(z) = c·z + k for every real z with c = {c}, k = {k}",
                        value={"c": c, "k": k}, steps=tuple(steps))
    if lin.status is Status.REFUTED:
        why = lin.statement.replace("σ is not linear", "h − h(0) is not linear").replace("σ", "(h − k)")
        return Property(name, Status.REFUTED, f"h is not affine: {why}", steps=tuple(steps), witness=lin.witness)
    return Property(name, Status.UNKNOWN, "sympy could not decide whether h is affine", steps=tuple(steps))


def affine_form(act: Activation) -> Property:
    """Decide whether h(z) = c·z + k for every real z (c, k constants; c = 0 allowed: h ≡ k).
    value: ``c`` and ``k``.

    >>> from absorb.model.activations import get_activation
    >>> p = affine_form(get_activation("expr:Max(0,x) + Min(0,x) + 1/2"))
    >>> p.value["c"], p.value["k"]
    (1, 1/2)
    """
    return _get(act, "affine_form")


# ------------------------------------------------------------ bounded near 0 --
def _bounded_near_zero(e: sp.Expr) -> Property:
    """σ has finite one-sided limits at 0 (by the asymptotic rules at h = ±1/s, s → +∞, each
    cross-checked by 60-digit evaluations that only withhold): then |σ| ≤ max(|L₊|, |L₋|, |σ(0)|) + 1
    on some (−δ, δ) (σ(0) is finite: the activation is real and finite on R). The linearization
    argument needs no more of the factor next to one that is o(|z|) at 0."""
    from absorb.symbolic import asymptotic as asy
    from absorb.symbolic.growth import _fmt

    name = "bounded_near_zero"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    lims = {}
    for side, where in ((1, "0^+"), (-1, "0^-")):
        q = e.subs(X, side / X)
        lim = asy.limit(q, 1, 0)
        if lim.kind in ("+oo", "-oo"):
            return Property(name, Status.REFUTED, f"σ tends to {'∞' if lim.kind == '+oo' else '−∞'} as z → {where[2]}0",
                            steps=tuple(steps), witness={"side": side})
        if lim.kind != "finite" or asy.numeric_check(q, 1, lim, 0, scales=(10, 20)):
            return Property(name, Status.UNKNOWN, f"the asymptotic rules find no finite limit of σ at {where[2]}0",
                            steps=tuple(steps))
        lims[side] = lim.value
        steps.append(rf"\lim_{{z\to {where}}} \sigma(z) = {_fmt(lim.value)} \quad (z = \pm 1/s,\ \text{{by the asymptotic rules}})")
    steps.append(r"\Rightarrow\ |\sigma(z)| \le K\ \text{for } |z| \le \delta")
    return Property(name, Status.PROVED, f"σ has finite one-sided limits at 0 ({lims[1]} from the right, {lims[-1]} from the "
                    "left), so σ is bounded near 0", value={"right": lims[1], "left": lims[-1]}, steps=tuple(steps))


def bounded_near_zero(act: Activation) -> Property:
    """Decide whether σ has finite one-sided limits at 0 (so σ is bounded on a neighbourhood of 0).

    >>> from absorb.model.activations import get_activation
    >>> bounded_near_zero(get_activation("softplus")).proved
    True
    """
    return _get(act, "bounded_near_zero")


ANALYSES = (("affine_form", "affine", _affine_form), ("bounded_near_zero", "bounded_near_zero", _bounded_near_zero))
"""(cache name, property name, analysis): registered by :mod:`absorb.symbolic.properties`."""

__all__ = ["ANALYSES", "affine_form", "bounded_near_zero"]
