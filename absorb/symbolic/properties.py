"""Decide, with sympy, the activation properties each result needs.

Every function returns a :class:`Property` that is ``proved`` (every step closed
symbolically: identities by sympy's exact algebra, limits by the rules of
:mod:`absorb.symbolic.asymptotic`, never by sympy's ``limit``), ``refuted`` (with a witness: exact values, or a 50-digit evaluation whose
margin is far above its error) or ``unknown``. Nothing is ever *proved* on numeric
evidence. The steps are kept as LaTeX strings so certificates can print them.

A property is claimed for every real z or not at all. Every :class:`Activation` is real
and finite at every real point (its documented invariant; checked again here), but need
not be continuous: ``0**Max(0, x)`` is a step. So each proof covers z = 0 on its own, and
continuity is proved structurally (:func:`absorb.model.activations.continuity_issue`)
where an argument needs it, never taken from sympy's limits.

Properties:

* :func:`homogeneity` — σ(t x) = t^k σ(x) for all t > 0 and all x (degree argument).
* :func:`vanishing_gate` — g(0) = 0 and g differentiable at 0 (linearization argument).
* :func:`vanishing_slopes` — σ(0) = 0 with finite one-sided derivatives at 0, so |σ(z)| ≤ C|z|
  near 0 (linearization argument with a value activation: the gate and h).
* :func:`flip_identity` — ungated: σ(z) − σ(−z) = c z; gated: g(z) + g(−z) = c; with c ≠ 0
  constant, for every real z (z = 0 included: 2·g(0) = c). This is what lets the
  index-set construction absorb the skip.
* :func:`square_flip` — σ(z) + σ(−z) = a z² + k, a ≠ 0 and k constants, for every real z (the
  degree-2 skeleton's flip witness).
* :func:`bounded` — σ continuous and bounded near ±∞ (boundedness argument).

The proofs split on the sign of x: with ``p > 0`` a positive symbol, x ∈ {p, −p, 0} covers
the real line, and sympy decides ``Max``/``Piecewise`` branches from the assumptions.

Cost: a built-in's properties are read from a table proved once
(:mod:`absorb.symbolic.facts`). sympy's work on a user's expression is unbounded, so :func:`prepare` computes every
analysis of :data:`ANALYSES` for an ``expr:`` activation in one child process with a time
and memory budget (:func:`absorb._sandbox.run_limited`) and caches the results; the
property functions then answer from the cache (calling :func:`prepare` with the default
budget first when nobody did). A built-in whose table entry is stale (its registry
expression changed) is analysed in-process, each analysis when first asked for.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import sympy as sp

from absorb.model.activations import Activation, X, continuity_issue, real_finite_issue
from absorb.symbolic._core import (  # noqa: F401 - the cache and the Property type, re-exported here
    PREPARE_MEMORY,
    Property,
    Status,
    _cache,
    _jsonable,
    _lock,
    analysis_budget,
    clear_cache,
    prepare,
)
from absorb.symbolic._core import get as _get
from absorb.symbolic.rewrite import STEP, normalise, normalised_simplify

P = sp.Symbol("p", positive=True)
T = sp.Symbol("t", positive=True)
_DIGITS = 50
_MARGIN = sp.Float(10) ** -20  # a 50-digit evaluation differs from the true value by far less


def _is_zero(expr: sp.Expr) -> bool | None:
    """True / False when sympy decides ``expr == 0`` symbolically, None when it cannot.
    (False may also come from a 50-digit evaluation far from 0.)"""
    expr = sp.sympify(expr)
    if expr.is_Rational:
        return bool(expr == 0)
    if expr.is_number and not expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.AccumBounds):
        # a number far from 0 needs no simplify (whose first call imports sympy.physics: ~1 s)
        val = _n(expr)
        if val.is_number and val.is_extended_real and abs(val) > sp.Float(10) ** (-_DIGITS // 2):
            return False
    e = sp.simplify(expr)
    if e == 0:
        return True
    if e.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.AccumBounds):
        return None
    z = e.is_zero
    if z is not None:
        return bool(z)
    if e.is_number:
        val = _n(e)
        if val.is_number and val.is_extended_real and abs(val) > sp.Float(10) ** (-_DIGITS // 2):
            return False
    return None


def _n(expr: sp.Expr, digits: int = _DIGITS) -> sp.Expr:
    """``expr`` to ``digits`` significant digits — all of them correct (sympy's strict evaluation), or nan where
    sympy cannot reach them (a cancellation to 0 of numbers near 10¹⁷⁰ evaluates to "0.e+15", no digit at all:
    taken as a value, it refuted σ = exp(100z)'s exponential form)."""
    try:
        return sp.N(expr, digits, strict=True)
    except Exception:  # noqa: BLE001  (PrecisionExhausted, or evalf failing on an exotic expression: no value)
        return sp.nan


def _real_number(v: sp.Expr) -> bool:
    """v is a finite real number (not nan, ±oo, zoo, an AccumBounds or a complex value)."""
    return bool(v.is_number and v.is_real is True and v.is_finite is True and not v.has(sp.AccumBounds))


def _sides(e: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    return sp.simplify(e.subs(X, P)), sp.simplify(e.subs(X, -P)), sp.simplify(e.subs(X, 0))


# ---------------------------------------------------------------------------------------
def _homogeneity(e: sp.Expr) -> Property:
    name = "homogeneous"
    s = sp.latex(e)
    zero = sp.simplify(e.subs(X, 0))
    steps = [rf"\sigma(x) = {s}", rf"\sigma(0) = {sp.latex(zero)}"]
    z0 = _is_zero(zero)
    if z0 is False:
        return Property(name, Status.REFUTED, "σ(0) ≠ 0, so σ is not positively homogeneous of any degree k > 0",
                        steps=tuple(steps), witness={"x": 0, "sigma(0)": zero})
    # The cheap refutation first (50-digit values at a few points); simplify is slow.
    # Refutation: at a point x0 where σ(x0) ≠ 0, homogeneity forces σ(t x0) = t^k σ(x0);
    # the degrees implied by t = 2 and t = 3 must agree.
    # Degree k makes σ(2x)/σ(x) = 2^k at every x: implied degrees that differ between points far
    # apart (x·tanh(10⁶⁴x): 2 near 0, 1 beyond) refute it too, before simplify is tried.
    implied: dict[bool, tuple[Any, sp.Expr]] = {}
    # (There, values are strict: every digit correct, so a tiny σ(x) is still a value.)
    far = tuple(sg * sp.Integer(10)**q for q in (-90, 90) for sg in (1, -1))
    for x0 in (1, -1, sp.Rational(1, 2), -sp.Rational(1, 2), *far):
        v1 = _n(e.subs(X, x0))
        v2, v3 = _n(e.subs(X, 2 * x0)), _n(e.subs(X, 3 * x0))
        if not all(_real_number(v) for v in (v1, v2, v3)) or v1 == 0 or (abs(v1) <= _MARGIN and x0 not in far):
            continue
        if x0 in far and (v2 / v1 <= 0 or v3 / v1 <= 0):
            continue  # (the sign test below keeps its margins)
        if v2 / v1 <= 0 or v3 / v1 <= 0:
            if min(abs(v2), abs(v3)) <= _MARGIN and not (_is_zero(e.subs(X, 2 * x0)) or _is_zero(e.subs(X, 3 * x0))):
                continue  # a sign from an evaluation too close to 0 to trust
            return Property(name, Status.REFUTED, "σ(t x) and σ(x) differ in sign for some t > 0: not positively homogeneous",
                            steps=tuple(steps), witness={"x": x0, "sigma(x)": v1, "sigma(2x)": v2, "sigma(3x)": v3})
        k2, k3 = sp.log(v2 / v1) / sp.log(2), sp.log(v3 / v1) / sp.log(3)
        if abs(_n(k2 - k3)) > _MARGIN:
            steps.append(rf"\text{{at }} x={x0}: \log_2\frac{{\sigma(2x)}}{{\sigma(x)}} = {float(k2):.12g} \ne {float(k3):.12g} = \log_3\frac{{\sigma(3x)}}{{\sigma(x)}}")
            return Property(name, Status.REFUTED, "σ is not positively homogeneous of any degree",
                            steps=tuple(steps), witness={"x": x0, "implied_k_t2": k2, "implied_k_t3": k3})
        side = x0 > 0
        if side in implied and abs(_n(k2 - implied[side][1])) > _MARGIN:
            x1, k1 = implied[side]
            steps.append(rf"\log_2\frac{{\sigma(2x)}}{{\sigma(x)}} = {float(k1):.12g} \text{{ at }} x={sp.latex(x1)},\quad "
                         rf"{float(k2):.12g} \text{{ at }} x={sp.latex(x0)}")
            return Property(name, Status.REFUTED, "σ(2x)/σ(x) is not the same power of 2 at every x of one sign: not positively homogeneous",
                            steps=tuple(steps), witness={"x": x1, "implied_k": k1, "x_other": x0, "implied_k_other": k2})
        implied.setdefault(side, (x0, k2))
    pos, neg = sp.simplify(e.subs(X, P)), sp.simplify(e.subs(X, -P))
    steps = [rf"\sigma(x) = {s}", rf"\sigma(p) = {sp.latex(pos)},\quad \sigma(-p) = {sp.latex(neg)},\quad \sigma(0) = {sp.latex(zero)} \quad (p>0)"]
    degrees = []
    for side, expr in (("+", pos), ("-", neg)):
        if _is_zero(expr) is True:
            continue
        k = sp.simplify(P * sp.diff(expr, P) / expr)
        if k.free_symbols or not _real_number(k):
            break
        degrees.append((side, k))
    else:
        if not degrees:
            k = sp.Integer(2)  # σ ≡ 0 is homogeneous of every degree; 2 serves the degree argument
            steps.append(r"\sigma \equiv 0\text{, homogeneous of every degree; take } k = 2")
        else:
            k = degrees[0][1]
        if all(kk == k for _, kk in degrees) and z0 is True:
            # σ(t·0) = σ(0) = 0 = t^k σ(0) covers x = 0; the two sides cover x ≠ 0.
            checks = [sp.simplify(expr.subs(P, T * P) - T**k * expr) for expr in (pos, neg)]
            if all(c == 0 for c in checks):
                steps.append(rf"\sigma(tp) - t^{{{sp.latex(k)}}}\sigma(p) = 0,\quad \sigma(-tp) - t^{{{sp.latex(k)}}}\sigma(-p) = 0,\quad \sigma(0)=0 \quad (t, p > 0)")
                return Property(name, Status.PROVED, f"σ is positively homogeneous of degree k = {k}",
                                value={"k": k}, steps=tuple(steps))
    return Property(name, Status.UNKNOWN, "sympy could not decide positive homogeneity", steps=tuple(steps))


# ---------------------------------------------------------------------------------------
def _slopes_at_zero(e: sp.Expr, name: str, f: str) -> Property | tuple[sp.Expr, sp.Expr, sp.Expr, list[str]]:
    """``f(0) = 0`` and the one-sided derivatives of f at 0, each a finite limit of the difference
    quotient by the asymptotic rules: ``(f(0), right, left, steps)``, or the Property (named
    ``name``) saying why not. ``f`` is the function's letter in the steps ("g", "\\sigma")."""
    g0 = sp.simplify(e.subs(X, 0))
    steps = [rf"{f}(x) = {sp.latex(e)}", rf"{f}(0) = {sp.latex(g0)}"]
    z = _is_zero(g0)
    if z is False:
        return Property(name, Status.REFUTED, f"{'g' if f == 'g' else 'σ'}(0) = {g0} ≠ 0", value={"g0": g0}, steps=tuple(steps),
                        witness={"g(0)" if f == "g" else "sigma(0)": g0})
    if z is None:
        return Property(name, Status.UNKNOWN, f"sympy could not decide whether {'g' if f == 'g' else 'σ'}(0) = 0", steps=tuple(steps))
    # One-sided difference quotients by the asymptotic rules (h = ±1/s, s → +∞), each claimed
    # limit cross-checked by 60-digit evaluations at h = ±10^-10, ±10^-20 (which only withhold).
    from absorb.symbolic import asymptotic as asy

    (rl, rq), (ll, lq) = asy.one_sided_derivative(e, g0, 1), asy.one_sided_derivative(e, g0, -1)
    for lim, where in ((rl, "0^+"), (ll, "0^-")):
        if lim.expansion is not None:
            steps.append(rf"\frac{{{f}(h)-{f}(0)}}{{h}} = {lim.expansion.latex()} \quad (h = \pm 1/s,\ h \to {where},"
                         r"\ \text{by the asymptotic rules})")
    inf = {"+oo": sp.oo, "-oo": -sp.oo}
    g = "g" if f == "g" else "σ"
    if rl.kind in inf or ll.kind in inf:
        right, left = inf.get(rl.kind, rl.value), inf.get(ll.kind, ll.value)
        what = "not differentiable at 0" if f == "g" else "not O(|z|) at 0"
        return Property(name, Status.REFUTED, f"{g} is {what} (infinite one-sided derivative)",
                        value={"g0": g0}, steps=tuple(steps), witness={"right": right, "left": left})
    if rl.kind != "finite" or ll.kind != "finite":
        why = rl.reason if rl.kind != "finite" else ll.reason
        return Property(name, Status.UNKNOWN, f"the asymptotic rules find no one-sided derivatives of {g} at 0 ({why})",
                        steps=tuple(steps))
    for lim, q in ((rl, rq), (ll, lq)):
        bad = asy.numeric_check(q, 1, lim, 0, scales=(10, 20))
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give a one-sided derivative {lim.value} of {g} at 0, but {bad} "
                            "(x = 1/h)", steps=tuple(steps))
    right, left = rl.value, ll.value
    steps.append(rf"\lim_{{h\to 0^+}} \frac{{{f}(h)-{f}(0)}}{{h}} = {sp.latex(right)},\quad \lim_{{h\to 0^-}} \frac{{{f}(h)-{f}(0)}}{{h}} = {sp.latex(left)}")
    return g0, right, left, steps


def _vanishing_gate(e: sp.Expr) -> Property:
    name = "vanishing_gate"
    got = _slopes_at_zero(e, name, "g")
    if isinstance(got, Property):
        return got
    g0, right, left, steps = got
    jump = continuity_issue(e)
    diff = _is_zero(right - left)
    if diff is True:
        if jump is not None:  # conservative: a gate that may jump somewhere is not called differentiable
            return Property(name, Status.UNKNOWN, f"g may be discontinuous (at {jump}), so its derivative at 0 is not proved",
                            steps=tuple(steps))
        return Property(name, Status.PROVED, f"g(0) = 0 and g is differentiable at 0 with g'(0) = {right}",
                        value={"g0": g0, "dg0": right}, steps=tuple(steps))
    if diff is False:
        return Property(name, Status.REFUTED, f"g is not differentiable at 0: one-sided derivatives {right} and {left}",
                        value={"g0": g0}, steps=tuple(steps), witness={"right": right, "left": left})
    return Property(name, Status.UNKNOWN, "sympy could not compare the one-sided derivatives of g at 0", steps=tuple(steps))


def _vanishing_slopes(e: sp.Expr) -> Property:
    """σ(0) = 0 and finite one-sided derivatives R = σ'(0⁺), L = σ'(0⁻): then |σ(z)| ≤ C·|z| for
    |z| small (C = max(|R|, |L|) + 1), the bound the linearization argument with a value activation
    needs for the gate and for h. No continuity away from 0 is needed: the bound is local."""
    name = "vanishing_slopes"
    got = _slopes_at_zero(e, name, r"\sigma")
    if isinstance(got, Property):
        return got
    g0, right, left, steps = got
    steps.append(r"\Rightarrow\ |\sigma(z)| \le C\,|z|\ \text{for } |z| \le \delta,\ C = \max(|\sigma'(0^+)|, |\sigma'(0^-)|) + 1")
    return Property(name, Status.PROVED, f"σ(0) = 0 with one-sided derivatives σ'(0+) = {right}, σ'(0−) = {left} at 0, "
                    "so |σ(z)| ≤ C·|z| near 0", value={"g0": g0, "right": right, "left": left}, steps=tuple(steps))


# ---------------------------------------------------------------------------------------
def _flip_identity(e: sp.Expr, gated: bool) -> Property:
    name = "flip_identity"
    what = "g(z) + g(−z) = c" if gated else "σ(z) − σ(−z) = c·z"
    # The cheap refutation first (two 50-digit values whose would-be constants differ far
    # beyond their error): simplify, and the normalised retry, are slow on what fails anyway.
    f = (lambda z: e.subs(X, z) + e.subs(X, -z)) if gated else (lambda z: (e.subs(X, z) - e.subs(X, -z)) / z)
    v1, v2 = _n(f(1)), _n(f(2))
    if _real_number(v1) and _real_number(v2) and abs(v1 - v2) > _MARGIN:
        shown = "g(z) + g(-z)" if gated else r"\frac{\sigma(z) - \sigma(-z)}{z}"
        head = "g" if gated else r"\sigma"
        steps = [rf"{head}(x) = {sp.latex(e)}",
                 rf"{shown} = {float(v1):.12g} \text{{ at }} z = 1,\quad {float(v2):.12g} \text{{ at }} z = 2"]
        return Property(name, Status.REFUTED, f"{what} fails for every constant c",
                        steps=tuple(steps), witness={"z=1": v1, "z=2": v2})
    raw = e.subs(X, P) + e.subs(X, -P) if gated else e.subs(X, P) - e.subs(X, -P)
    # First the cheap route: expand the normalised form (exact); simplify only if p stays in.
    quick = sp.expand(normalise(raw))
    c_quick = quick if gated else sp.expand(quick / P)
    if gated:
        lhs = quick if not c_quick.free_symbols else sp.simplify(raw)
        steps = [rf"g(x) = {sp.latex(e)}", rf"g(p) + g(-p) = {sp.latex(lhs)} \quad (p>0)"]
        c = lhs
    else:
        lhs = quick if not c_quick.free_symbols else sp.simplify(raw)
        steps = [rf"\sigma(x) = {sp.latex(e)}", rf"\sigma(p) - \sigma(-p) = {sp.latex(lhs)} \quad (p>0)"]
        c = c_quick if not c_quick.free_symbols else sp.simplify(lhs / P)
    if not c_quick.free_symbols and normalise(raw) != raw:
        steps.insert(1, STEP)
    if c.free_symbols:  # sympy misses erf + erfc = 1 and friends: retry on the normalised form
        alt = normalised_simplify(e.subs(X, P) + e.subs(X, -P) if gated else e.subs(X, P) - e.subs(X, -P))
        if alt is not None:
            c_alt = alt if gated else sp.simplify(alt / P)
            if not c_alt.free_symbols:
                lhs, c = alt, c_alt
                steps.append(STEP)
                side = "g(p) + g(-p)" if gated else r"\sigma(p) - \sigma(-p)"
                steps.append(rf"{side} = {sp.latex(lhs)} \quad (p>0)")
    if c.free_symbols and raw.has(sp.Max, sp.Min):  # nested Max/Min (hardswish, hardsigmoid): one formula per piece
        pieces = sp.simplify(sp.piecewise_fold(raw.rewrite(sp.Piecewise)))
        c_pw = pieces if gated else sp.simplify(pieces / P)
        if not c_pw.free_symbols:
            lhs, c = pieces, c_pw
            side = "g(p) + g(-p)" if gated else r"\sigma(p) - \sigma(-p)"
            steps.append(rf"{side} = {sp.latex(lhs)} \quad (p>0;\ \max, \min \text{{ written piece by piece}})")
    if not c.free_symbols and _real_number(c) and _is_zero(c) is False:
        if not gated:  # at z = 0 both sides are 0 since σ(0) is finite
            steps.append(rf"\text{{the same at }} -p \text{{ by symmetry, and trivially at }} 0:\ c = {sp.latex(c)}")
            return Property(name, Status.PROVED, f"{what} holds for all z with c = {c}", value={"c": c}, steps=tuple(steps))
        # gated, at z = 0 the identity reads 2·g(0) = c: a gate with a jump at 0 can fail it
        g0 = sp.simplify(e.subs(X, 0))
        at0 = _is_zero(2 * g0 - c)
        steps.append(rf"2\,g(0) = {sp.latex(sp.simplify(2 * g0))}")
        if at0 is True:
            steps.append(rf"\text{{the same at }} -p \text{{ by symmetry, and at }} 0:\ c = {sp.latex(c)}")
            return Property(name, Status.PROVED, f"{what} holds for all z with c = {c}", value={"c": c}, steps=tuple(steps))
        if at0 is False:
            return Property(name, Status.REFUTED, f"{what} holds for z ≠ 0 with c = {c} but fails at z = 0, where 2·g(0) = {2 * g0}",
                            steps=tuple(steps), witness={"z": 0, "2*g(0)": 2 * g0, "c": c})
        return Property(name, Status.UNKNOWN, f"sympy could not decide whether {what} holds at z = 0", steps=tuple(steps))
    # Refute when the would-be constant is exactly 0 (the two-point refutation ran first).
    if _is_zero(f(1)) is True:
        return Property(name, Status.REFUTED, f"{what} fails for every constant c ≠ 0 (at z = 1 it forces c = 0)",
                        steps=tuple(steps), witness={"z=1": 0})
    if gated:
        v0 = _n(2 * e.subs(X, 0))
        if _real_number(v0) and _real_number(v1) and abs(v0 - v1) > _MARGIN:
            return Property(name, Status.REFUTED, f"{what} fails for every constant c (2·g(0) ≠ g(1) + g(−1))",
                            steps=tuple(steps), witness={"2*g(0)": v0, "z=1": v1})
    return Property(name, Status.UNKNOWN, f"sympy could not decide whether {what}", steps=tuple(steps))


# ---------------------------------------------------------------------------------------
def _square_flip(e: sp.Expr) -> Property:
    """σ(z) + σ(−z) = a·z² + k for every real z, a ≠ 0 and k constants — the even part's
    counterpart of :func:`_flip_identity` (the degree-2 skeleton's flip witness). k = 2σ(0) is
    forced at z = 0 (where the identity then holds by definition); for z = ±p (p > 0; the left
    side is even in z, so one sign covers both) a = (σ(p) + σ(−p) − k)/p² must be free of p, by
    the same exact algebra as the odd identity (the normalised form expanded, then simplify,
    then the normalised retry). Refuted by two 50-digit values of that quotient that differ."""
    name = "square_flip"
    what = "σ(z) + σ(−z) = a·z² + k"
    k = sp.simplify(2 * e.subs(X, 0))
    steps = [rf"\sigma(x) = {sp.latex(e)}", rf"k = 2\,\sigma(0) = {sp.latex(k)}"]
    if not _real_number(k):
        return Property(name, Status.UNKNOWN, f"2·σ(0) = {k} is not a proved real number", steps=tuple(steps))
    f = lambda z: (e.subs(X, z) + e.subs(X, -z) - k) / z**2  # noqa: E731
    v1, v2 = _n(f(1)), _n(f(2))
    if _real_number(v1) and _real_number(v2) and abs(v1 - v2) > _MARGIN:
        steps.append(rf"\frac{{\sigma(z) + \sigma(-z) - k}}{{z^2}} = {float(v1):.12g} \text{{ at }} z = 1,\quad "
                     rf"{float(v2):.12g} \text{{ at }} z = 2")
        return Property(name, Status.REFUTED, f"{what} fails for every constant a, k", steps=tuple(steps),
                        witness={"z=1": v1, "z=2": v2})
    raw = e.subs(X, P) + e.subs(X, -P) - k
    quick = sp.expand(normalise(raw))
    a = sp.expand(quick / P**2)
    if not a.free_symbols:
        if normalise(raw) != raw:
            steps.append(STEP)
        lhs = quick
    else:
        lhs = sp.simplify(raw)
        a = sp.simplify(lhs / P**2)
    if a.free_symbols:  # sympy misses erf + erfc = 1 and friends: retry on the normalised form
        alt = normalised_simplify(raw)
        if alt is not None and not sp.simplify(alt / P**2).free_symbols:
            lhs, a = alt, sp.simplify(alt / P**2)
            steps.append(STEP)
    steps.append(rf"\sigma(p) + \sigma(-p) - k = {sp.latex(lhs)} \quad (p>0)")
    if not a.free_symbols and _real_number(a):
        z = _is_zero(a)
        if z is False:
            steps.append(rf"\text{{the same at }} -p \text{{ by symmetry, and at }} 0 \text{{ by the choice of }} k:\ "
                         rf"a = {sp.latex(a)},\ k = {sp.latex(k)}")
            return Property(name, Status.PROVED, f"{what} holds for all z with a = {a}, k = {k}", value={"a": a, "k": k},
                            steps=tuple(steps))
        if z is True:
            return Property(name, Status.REFUTED, f"{what} holds only with a = 0 (σ(z) + σ(−z) is constant)",
                            steps=tuple(steps), witness={"a": 0})
    return Property(name, Status.UNKNOWN, f"sympy could not decide whether {what}", steps=tuple(steps))


# ---------------------------------------------------------------------------------------
def _bounded(e: sp.Expr) -> Property:
    """Continuous, with finite limits (or an O(1) bound) at ±∞ by the asymptotic rules; each
    claimed limit cross-checked by 60-digit evaluations far out (which only withhold)."""
    from absorb.symbolic import asymptotic as asy

    name = "bounded"
    steps = [rf"\sigma(x) = {sp.latex(e)}"]
    lims = {sign: asy.limit(e, sign, 0) for sign in (1, -1)}
    for sign in (1, -1):
        if lims[sign].expansion is not None:
            steps.append(rf"\sigma({'' if sign > 0 else '-'}s) = {lims[sign].expansion.latex()} \quad (s \to +\infty,"
                         r"\ \text{by the asymptotic rules})")
    shown = {"finite": None, "bounded": None, "+oo": sp.oo, "-oo": -sp.oo}
    hi = lims[1].value if lims[1].kind == "finite" else shown.get(lims[1].kind)
    lo = lims[-1].value if lims[-1].kind == "finite" else shown.get(lims[-1].kind)
    if any(lims[sign].kind in ("+oo", "-oo") for sign in (1, -1)):
        return Property(name, Status.REFUTED, "σ is unbounded (infinite limit at ±∞)", steps=tuple(steps),
                        witness={"limit_+inf": hi, "limit_-inf": lo})
    if not all(lims[sign].kind in ("finite", "bounded") for sign in (1, -1)):
        why = "; ".join(lims[sign].reason for sign in (1, -1) if lims[sign].kind not in ("finite", "bounded"))
        return Property(name, Status.UNKNOWN, f"the asymptotic rules do not bound σ near ±∞ ({why})", steps=tuple(steps))
    for sign in (1, -1):
        bad = asy.numeric_check(e, sign, lims[sign], 0)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give lim σ = {lims[sign].value} at {'+' if sign > 0 else '-'}∞, "
                            f"but {bad}", steps=tuple(steps))
    none = r"\text{none (bounded)}"
    steps.append(rf"\lim_{{x\to+\infty}}\sigma(x) = {sp.latex(hi) if hi is not None else none},\quad "
                 rf"\lim_{{x\to-\infty}}\sigma(x) = {sp.latex(lo) if lo is not None else none}")
    jump = continuity_issue(e)
    if jump is not None:
        return Property(name, Status.UNKNOWN, f"σ could not be proved continuous on R (it may jump at {jump})", steps=tuple(steps))
    steps.append(r"\sigma \text{ is continuous on } \mathbb{R}")
    shown_hi = hi if hi is not None else "bounded"
    shown_lo = lo if lo is not None else "bounded"
    return Property(name, Status.PROVED, f"σ is bounded (continuous, limits {shown_hi} and {shown_lo} at ±∞)",
                    value={"sup_limit": hi, "inf_limit": lo}, steps=tuple(steps))


# ---------------------------------------------------------------------------------------
ANALYSES: tuple[tuple[str, Callable[[sp.Expr], Property]], ...] = (
    ("homogeneity", _homogeneity),
    ("vanishing_gate", _vanishing_gate),
    ("vanishing_slopes", _vanishing_slopes),
    ("flip_identity[ungated]", functools.partial(_flip_identity, gated=False)),
    ("flip_identity[gated]", functools.partial(_flip_identity, gated=True)),
    ("square_flip", _square_flip),
    ("bounded", _bounded),
)
"""Every analysis :func:`prepare` runs, by cache name; each maps σ's sympy form to a Property."""

_NAMES = {"homogeneity": "homogeneous", "vanishing_gate": "vanishing_gate", "vanishing_slopes": "vanishing_slopes", "flip_identity[ungated]": "flip_identity",
          "flip_identity[gated]": "flip_identity", "square_flip": "square_flip", "bounded": "bounded"}


def register_analyses(*analyses: tuple[str, str, Callable[[sp.Expr], Property]]) -> None:
    """Add analyses (cache name, property name, function of σ's sympy form) to
    :data:`ANALYSES`, so that :func:`prepare` computes them within its budget too (the
    growth properties of :mod:`absorb.symbolic.growth` register themselves)."""
    global ANALYSES
    known = {k for k, _ in ANALYSES}
    ANALYSES = ANALYSES + tuple((k, fn) for k, _, fn in analyses if k not in known)
    _NAMES.update({k: name for k, name, _ in analyses})


def _shifted_flip(e: sp.Expr) -> Property:
    """:func:`absorb.symbolic.shift.shifted_flip`'s analysis, registered here so that the registry
    holds it wherever it is read (shift imports this module: imported on first use)."""
    from absorb.symbolic.shift import _shifted_flip as analysis

    return analysis(e)


register_analyses(("shifted_flip", "shifted_flip", _shifted_flip))


def _with_growth() -> None:
    """Register the growth analyses (:mod:`absorb.symbolic.growth` imports this module and
    registers itself on import; imported here, not at module level, so there is no import cycle)."""
    from absorb.symbolic import growth  # noqa: F401


def _unknown_all(why: str) -> dict[str, Property]:
    _with_growth()
    return {k: Property(_NAMES.get(k, k), Status.UNKNOWN, why) for k, _ in ANALYSES}


def analyse(expr: sp.Expr, only: str | None = None) -> dict[str, Property]:
    """Every analysis of :data:`ANALYSES` (or the one named ``only``) on ``expr``, in this
    process (no budget)."""
    _with_growth()
    issue = real_finite_issue(expr)
    if issue is not None:  # the Activation invariant, checked again: nothing is claimed outside it
        return _unknown_all(f"σ is not proved real and finite on R ({issue[0]}), so no property is claimed")
    # σ written with tanh beside its exp form (x/2 + x·(tanh x − (2/(1 + e^{−2x}) − 1)) = x/2) sends
    # simplify past any budget; where the exact rewrite of :func:`normalise` is shorter, the analyses
    # read that (equal to σ at every real x) and each proof opens with the rewrite.
    short = normalise(expr)
    short = short if short != expr and sp.count_ops(short) < sp.count_ops(expr) else None
    opening = () if short is None else (rf"\sigma(x) = {sp.latex(expr)} = {sp.latex(short)}\quad({STEP})",)
    out = {}
    for k, fn in ANALYSES:
        if only is not None and k != only:
            continue
        try:
            out[k] = fn(expr if short is None else short)
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors on hard input: no claim, and no crash
            out[k] = _unknown_all(f"sympy failed on σ ({type(exc).__name__}), so nothing is claimed")[k]
        if opening:
            out[k] = dataclasses.replace(out[k], steps=opening + tuple(out[k].steps))
    return out


def homogeneity(act: Activation) -> Property:
    """Decide whether σ(t x) = t^k σ(x) for all t > 0, x ∈ R, and find k.

    >>> from absorb.model.activations import get_activation
    >>> homogeneity(get_activation("relu2")).value["k"]
    2
    """
    return _get(act, "homogeneity")


def vanishing_gate(act: Activation) -> Property:
    """Decide ``g(0) = 0`` and differentiability of g at 0 (linearization argument)."""
    return _get(act, "vanishing_gate")


def vanishing_slopes(act: Activation) -> Property:
    """Decide ``σ(0) = 0`` with finite one-sided derivatives at 0 (so |σ(z)| ≤ C|z| near 0)."""
    return _get(act, "vanishing_slopes")


def flip_identity(act: Activation, *, gated: bool) -> Property:
    """Decide the identity that lets flipping hidden units add a linear map, for every real z.

    Ungated: σ(z) − σ(−z) = c z (c = 1 for ReLU, GELU, GELU-tanh, SiLU, quick-GELU).
    Gated: g(z) + g(−z) = c, z = 0 included (2·g(0) = c) (c = 1 for the sigmoid gate of GLU).
    """
    return _get(act, "flip_identity[gated]" if gated else "flip_identity[ungated]")


def square_flip(act: Activation) -> Property:
    """Decide σ(z) + σ(−z) = a·z² + k for every real z (a ≠ 0; k = 2σ(0)): the identity that lets
    flipping units of a degree-2 block move a quadratic, linear and constant term (a = 1, k = 0 for
    ReLU²; also x·|x|/2 + x²/2, x²(1 + erf x)/2, ReLU² + 1)."""
    return _get(act, "square_flip")


def bounded(act: Activation) -> Property:
    """Decide whether σ is bounded on R: continuous with finite limits at ±∞."""
    return _get(act, "bounded")


# the value activations' analyses (affine h, bounded near 0), registered when this module is
# imported, so that the registry has them before absorb.symbolic.growth (which re-exports it) is
from absorb.symbolic.affine import ANALYSES as _VALUE_ANALYSES  # noqa: E402 - affine imports _core only

register_analyses(*_VALUE_ANALYSES)
from absorb.symbolic.relu2_linear import ANALYSES as _RELU2_LINEAR  # noqa: E402 - imports _core only

register_analyses(*_RELU2_LINEAR)
