"""Decide, with sympy, the activation properties each result needs.

Every function returns a :class:`Property` that is ``proved`` (sympy closed every step
symbolically), ``refuted`` (with a witness: exact values, or a 50-digit evaluation whose
margin is far above its error) or ``unknown``. Nothing is ever *proved* on numeric
evidence. The steps are kept as LaTeX strings so certificates can print them.

Properties (theory.md §2):

* :func:`homogeneity` — σ(t x) = t^k σ(x) for all t > 0 and all x (degree argument).
* :func:`vanishing_gate` — g(0) = 0 and g differentiable at 0 (linearization argument).
* :func:`flip_identity` — ungated: σ(z) − σ(−z) = c z; gated: g(z) + g(−z) = c; with c ≠ 0
  constant. This is what lets the index-set construction absorb the skip.
* :func:`bounded` — σ continuous with finite limits at ±∞ (boundedness argument).

The proofs split on the sign of x: with ``p > 0`` a positive symbol, x ∈ {p, −p, 0} covers
the real line, and sympy decides ``Max``/``Piecewise`` branches from the assumptions.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from absorb.model.activations import X, Activation

P = sp.Symbol("p", positive=True)
T = sp.Symbol("t", positive=True)
_DIGITS = 50


class Status(str, enum.Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Property:
    """The outcome of one symbolic decision about an activation."""

    name: str
    status: Status
    statement: str
    value: dict[str, Any] = field(default_factory=dict)
    steps: tuple[str, ...] = ()
    witness: dict[str, Any] | None = None

    @property
    def proved(self) -> bool:
        return self.status is Status.PROVED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "statement": self.statement,
            "value": {k: _jsonable(v) for k, v in self.value.items()},
            "steps": list(self.steps),
            "witness": None if self.witness is None else {k: _jsonable(v) for k, v in self.witness.items()},
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, sp.Basic):
        if v.is_Integer:
            return int(v)
        if v.is_Rational:
            return str(v)
        if v.is_number:
            return float(v)
        return str(v)
    return v


def _is_zero(expr: sp.Expr) -> bool | None:
    """True / False when sympy decides ``expr == 0`` symbolically, None when it cannot."""
    e = sp.simplify(expr)
    if e == 0:
        return True
    z = e.is_zero
    if z is not None:
        return bool(z)
    if e.is_number:
        val = sp.N(e, _DIGITS)
        if val.is_number and abs(val) > sp.Float(10) ** (-_DIGITS // 2):
            return False
    return None


def _n(expr: sp.Expr) -> sp.Float:
    return sp.N(expr, _DIGITS)


def _sides(act: Activation) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    e = act.expr
    return sp.simplify(e.subs(X, P)), sp.simplify(e.subs(X, -P)), sp.simplify(e.subs(X, 0))


# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _homogeneity(key: str, act: Activation) -> Property:
    name = "homogeneous"
    s = sp.latex(act.expr)
    pos, neg, zero = _sides(act)
    steps = [rf"\sigma(x) = {s}", rf"\sigma(p) = {sp.latex(pos)},\quad \sigma(-p) = {sp.latex(neg)},\quad \sigma(0) = {sp.latex(zero)} \quad (p>0)"]
    z0 = _is_zero(zero)
    if z0 is False:
        return Property(name, Status.REFUTED, "σ(0) ≠ 0, so σ is not positively homogeneous of any degree k > 0",
                        steps=tuple(steps), witness={"x": 0, "sigma(0)": zero})
    degrees = []
    for side, expr in (("+", pos), ("-", neg)):
        if _is_zero(expr) is True:
            continue
        k = sp.simplify(P * sp.diff(expr, P) / expr)
        if k.free_symbols:
            break
        degrees.append((side, k))
    else:
        if not degrees:
            k = sp.Integer(2)  # σ ≡ 0 is homogeneous of every degree; 2 serves the degree argument
            steps.append(r"\sigma \equiv 0\text{, homogeneous of every degree; take } k = 2")
        else:
            k = degrees[0][1]
        if all(kk == k for _, kk in degrees) and z0 is True:
            checks = [sp.simplify(expr.subs(P, T * P) - T**k * expr) for expr in (pos, neg)]
            if all(c == 0 for c in checks):
                steps.append(rf"\sigma(tp) - t^{{{sp.latex(k)}}}\sigma(p) = 0,\quad \sigma(-tp) - t^{{{sp.latex(k)}}}\sigma(-p) = 0,\quad \sigma(0)=0 \quad (t, p > 0)")
                return Property(name, Status.PROVED, f"σ is positively homogeneous of degree k = {k}",
                                value={"k": k}, steps=tuple(steps))
    # Refutation: at a point x0 where σ(x0) ≠ 0, homogeneity forces σ(t x0) = t^k σ(x0);
    # the degrees implied by t = 2 and t = 3 must agree.
    for x0 in (1, -1, sp.Rational(1, 2), -sp.Rational(1, 2)):
        v1 = _n(act.expr.subs(X, x0))
        if v1 == 0:
            continue
        v2, v3 = _n(act.expr.subs(X, 2 * x0)), _n(act.expr.subs(X, 3 * x0))
        if v2 / v1 <= 0 or v3 / v1 <= 0:
            return Property(name, Status.REFUTED, "σ(t x) and σ(x) differ in sign for some t > 0: not positively homogeneous",
                            steps=tuple(steps), witness={"x": x0, "sigma(x)": v1, "sigma(2x)": v2, "sigma(3x)": v3})
        k2, k3 = sp.log(v2 / v1) / sp.log(2), sp.log(v3 / v1) / sp.log(3)
        if abs(_n(k2 - k3)) > sp.Float(10) ** -20:
            steps.append(rf"\text{{at }} x={x0}: \log_2\frac{{\sigma(2x)}}{{\sigma(x)}} = {float(k2):.12g} \ne {float(k3):.12g} = \log_3\frac{{\sigma(3x)}}{{\sigma(x)}}")
            return Property(name, Status.REFUTED, "σ is not positively homogeneous of any degree",
                            steps=tuple(steps), witness={"x": x0, "implied_k_t2": k2, "implied_k_t3": k3})
    return Property(name, Status.UNKNOWN, "sympy could not decide positive homogeneity", steps=tuple(steps))


def homogeneity(act: Activation) -> Property:
    """Decide whether σ(t x) = t^k σ(x) for all t > 0, x ∈ R, and find k.

    >>> from absorb.model.activations import get_activation
    >>> homogeneity(get_activation("relu2")).value["k"]
    2
    """
    return _homogeneity(act.key, act)


# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _vanishing_gate(key: str, act: Activation) -> Property:
    name = "vanishing_gate"
    e = act.expr
    g0 = sp.simplify(e.subs(X, 0))
    steps = [rf"g(x) = {sp.latex(e)}", rf"g(0) = {sp.latex(g0)}"]
    z = _is_zero(g0)
    if z is False:
        return Property(name, Status.REFUTED, f"g(0) = {g0} ≠ 0", value={"g0": g0}, steps=tuple(steps), witness={"g(0)": g0})
    if z is None:
        return Property(name, Status.UNKNOWN, "sympy could not decide whether g(0) = 0", steps=tuple(steps))
    # One-sided difference quotients through the positive symbol p, so that Max/Piecewise
    # branches are chosen by sympy's assumptions rather than by limit().
    try:
        right = sp.limit(sp.simplify((e.subs(X, P) - g0) / P), P, 0, "+")
        left = sp.limit(sp.simplify((e.subs(X, -P) - g0) / (-P)), P, 0, "+")
    except Exception:  # sympy's limit can raise NotImplementedError and friends
        return Property(name, Status.UNKNOWN, "sympy could not compute the one-sided derivatives of g at 0", steps=tuple(steps))
    steps.append(rf"\lim_{{h\to 0^+}} \frac{{g(h)-g(0)}}{{h}} = {sp.latex(right)},\quad \lim_{{h\to 0^-}} \frac{{g(h)-g(0)}}{{h}} = {sp.latex(left)}")
    if not (right.is_finite and left.is_finite):
        return Property(name, Status.REFUTED, "g is not differentiable at 0 (infinite one-sided derivative)",
                        value={"g0": g0}, steps=tuple(steps), witness={"right": right, "left": left})
    diff = _is_zero(right - left)
    if diff is True:
        return Property(name, Status.PROVED, f"g(0) = 0 and g is differentiable at 0 with g'(0) = {right}",
                        value={"g0": g0, "dg0": right}, steps=tuple(steps))
    if diff is False:
        return Property(name, Status.REFUTED, f"g is not differentiable at 0: one-sided derivatives {right} and {left}",
                        value={"g0": g0}, steps=tuple(steps), witness={"right": right, "left": left})
    return Property(name, Status.UNKNOWN, "sympy could not compare the one-sided derivatives of g at 0", steps=tuple(steps))


def vanishing_gate(act: Activation) -> Property:
    """Decide ``g(0) = 0`` and differentiability of g at 0 (linearization argument)."""
    return _vanishing_gate(act.key, act)


# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _flip_identity(key: str, act: Activation, gated: bool) -> Property:
    name = "flip_identity"
    e = act.expr
    if gated:
        lhs = sp.simplify(e.subs(X, P) + e.subs(X, -P))
        steps = [rf"g(x) = {sp.latex(e)}", rf"g(p) + g(-p) = {sp.latex(lhs)} \quad (p>0)"]
        c = lhs
        what = "g(z) + g(−z) = c"
    else:
        lhs = sp.simplify(e.subs(X, P) - e.subs(X, -P))
        steps = [rf"\sigma(x) = {sp.latex(e)}", rf"\sigma(p) - \sigma(-p) = {sp.latex(lhs)} \quad (p>0)"]
        c = sp.simplify(lhs / P)
        what = "σ(z) − σ(−z) = c·z"
    if not c.free_symbols and _is_zero(c) is False:
        steps.append(rf"\text{{the same at }} -p \text{{ by symmetry, and trivially at }} 0:\ c = {sp.latex(c)}")
        return Property(name, Status.PROVED, f"{what} holds for all z with c = {c}", value={"c": c}, steps=tuple(steps))
    # Refute with two points where the would-be constant differs (or vanishes).
    f = (lambda z: e.subs(X, z) + e.subs(X, -z)) if gated else (lambda z: (e.subs(X, z) - e.subs(X, -z)) / z)
    v1, v2 = _n(f(1)), _n(f(2))
    if abs(v1 - v2) > sp.Float(10) ** -20 or abs(v1) < sp.Float(10) ** -30:
        return Property(name, Status.REFUTED, f"{what} fails for every constant c ≠ 0",
                        steps=tuple(steps), witness={"z=1": v1, "z=2": v2})
    return Property(name, Status.UNKNOWN, f"sympy could not decide whether {what}", steps=tuple(steps))


def flip_identity(act: Activation, *, gated: bool) -> Property:
    """Decide the identity that lets flipping hidden units add a linear map (theory.md §2.5).

    Ungated: σ(z) − σ(−z) = c z (c = 1 for ReLU, GELU, GELU-tanh, SiLU, quick-GELU).
    Gated: g(z) + g(−z) = c (c = 1 for the sigmoid gate of GLU).
    """
    return _flip_identity(act.key, act, gated)


# ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _bounded(key: str, act: Activation) -> Property:
    name = "bounded"
    e = act.expr
    steps = [rf"\sigma(x) = {sp.latex(e)}"]
    pos, neg, _ = _sides(act)
    try:
        hi = sp.limit(pos, P, sp.oo)
        lo = sp.limit(neg, P, sp.oo)
    except Exception:  # sympy's limit raises assorted errors on hard expressions
        return Property(name, Status.UNKNOWN, "sympy could not compute the limits of σ at ±∞", steps=tuple(steps))
    try:
        cont = sp.calculus.util.continuous_domain(e, X, sp.S.Reals)
    except Exception:
        cont = None
    steps.append(rf"\lim_{{x\to+\infty}}\sigma(x) = {sp.latex(hi)},\quad \lim_{{x\to-\infty}}\sigma(x) = {sp.latex(lo)}")
    if not (hi.is_finite and lo.is_finite):
        return Property(name, Status.REFUTED, "σ is unbounded (infinite limit at ±∞)", steps=tuple(steps),
                        witness={"limit_+inf": hi, "limit_-inf": lo})
    if cont != sp.S.Reals:
        return Property(name, Status.UNKNOWN, "sympy could not prove σ continuous on all of R", steps=tuple(steps))
    steps.append(r"\sigma \text{ is continuous on } \mathbb{R}")
    if hi.is_finite and lo.is_finite:
        return Property(name, Status.PROVED, f"σ is bounded (continuous, limits {hi} and {lo} at ±∞)",
                        value={"sup_limit": hi, "inf_limit": lo}, steps=tuple(steps))
    return Property(name, Status.REFUTED, "σ is unbounded (infinite limit at ±∞)", steps=tuple(steps),
                    witness={"limit_+inf": hi, "limit_-inf": lo})


def bounded(act: Activation) -> Property:
    """Decide whether σ is bounded on R: continuous with finite limits at ±∞."""
    return _bounded(act.key, act)
