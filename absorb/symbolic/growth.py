"""Decide, with sympy, how an activation grows: asymptotic slopes, parity, linear and
exponential form, boundedness on R.

Same contract as :mod:`absorb.symbolic.properties`: every function returns a
:class:`~absorb.symbolic.properties.Property` that is ``proved`` only when every step closed
symbolically — identities by sympy's exact algebra, limits at ±∞ by the rules of
:mod:`absorb.symbolic.asymptotic`, never by sympy's ``limit`` (numbers are never evidence for a
proof; they may only *withhold* one),
``refuted`` with a witness (exact values, or 50-digit evaluations whose margin is far above
their error), or ``unknown``. Values are exact sympy numbers. Steps are LaTeX strings.

Every function relies on the invariant that each :class:`~absorb.model.activations.Activation`
is real-valued and finite at every real point (expressions that are not are refused when
the activation is built). Continuity is *not* assumed: step functions such as
``1 - 0**Max(0, x)`` are valid activations, so the continuity route of
:func:`bounded_on_reals` checks it.

* :func:`asymptotic_slopes` — L± = lim σ(s)/s at s → ±∞ both finite; then
  σ(tz + c)/t → a·ReLU(z) + b·z (t → ∞) for every real z, c, with a = L+ − L−, b = L−.
* :func:`parity` — σ(−z) = σ(z) for every real z.
* :func:`linear_form` — σ(z) = c·z for every real z.
* :func:`exponential_form` — σ(z) = A·exp(βz) + C for every real z, A ≠ 0, β ≠ 0.
* :func:`bounded_on_reals` — sup_R |σ| < ∞, by an interval bound over the expression tree or
  by continuity with σ bounded near ±∞ (finite limits or an O(1) bound, by the rules).

As in properties.py the proofs split on the sign of the argument: with ``p > 0`` a positive
symbol, z ∈ {p, −p, 0} covers the real line and sympy decides ``Max``/``Piecewise`` branches
from the assumption.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp
from sympy.calculus.accumulationbounds import AccumulationBounds

from absorb.model.activations import Activation, X, continuity_issue
from absorb.symbolic import asymptotic as asy
from absorb.symbolic._interval import _WHOLE, _is_infinite, _range
from absorb.symbolic.properties import P, Property, Status, _get, _is_zero, _n, register_analyses
from absorb.symbolic.rewrite import STEP, normalised_simplify

_OO = sp.oo
_TINY = sp.Float(10) ** -25  # a 50-digit value above this is nonzero (as in properties._is_zero)
_EXP_ARG_CAP = sp.Integer(10) ** 40  # numeric samples skip points where exp(·) would exceed e^(10^40)


# ----------------------------------------------------------------------------- helpers --


def _side(e: sp.Expr, sign: int) -> sp.Expr:
    """σ(±p) with p > 0, simplified (Max/Min/Abs/Piecewise resolved from the sign of p)."""
    return sp.simplify(e.subs(X, sign * P))


def _max_min_as_abs(e: sp.Expr) -> sp.Expr:
    """Rewrite Max(a, b) = (a + b + |a − b|)/2 and Min(a, b) = (a + b − |a − b|)/2 (exact)."""

    def one(q: sp.Expr) -> sp.Expr:
        sign = 1 if isinstance(q, sp.Max) else -1
        acc = q.args[0]
        for b in q.args[1:]:
            acc = (acc + b + sign * sp.Abs(acc - b)) / 2
        return acc

    return e.replace(lambda q: isinstance(q, (sp.Max, sp.Min)), one)


def _limit_p(expr: sp.Expr) -> sp.Expr | None:
    """lim_{p→+∞} expr, or None when sympy cannot compute it.

    sympy's ``limit`` has no series for Max/Min (``Min(0, exp(p) − 1)`` raises); on failure
    the exact rewrite of Max/Min through Abs is tried.
    """
    for candidate in (expr, _max_min_as_abs(expr)):
        try:
            lim = sp.limit(candidate, P, _OO)
        except Exception:  # noqa: BLE001 - sympy's limit raises assorted errors on hard expressions
            continue
        if isinstance(lim, sp.Limit) or lim.has(sp.Limit) or lim.free_symbols:
            continue
        return lim
    return None


def _is_finite_real(v: sp.Expr) -> bool:
    return (not isinstance(v, AccumulationBounds) and v.is_number and v.is_finite is True
            and v.is_extended_real is True)


def _oscillates_unboundedly(v: sp.Expr) -> bool:
    """sympy's answer for a limit that oscillates without bound: AccumBounds with an infinite
    end, or a product such as ``oo*sign(AccumBounds(-1, 1))`` (its answer for p·sin p)."""
    if isinstance(v, AccumulationBounds):
        return _is_infinite(v.min) or _is_infinite(v.max)
    return v.has(AccumulationBounds) and v.has(_OO)


def _value_at(e: sp.Expr, s: sp.Expr) -> sp.Float | None:
    """σ(s) to 50 digits, or None when it cannot be evaluated safely (non-real, or a nested
    exponential so large that the evaluation would not finish)."""
    guarded = (sp.exp, sp.sinh, sp.cosh)
    # A 60-digit Float, not the exact number: exact substitution would make sympy expand
    # powers such as 2**(10**32) into integers.
    s = sp.Float(s, 60)
    try:
        for node in sp.postorder_traversal(e):
            if not node.has(X):
                continue
            arg = None
            if isinstance(node, guarded):
                arg = node.args[0]
            elif isinstance(node, sp.Pow) and node.exp.has(X):
                arg = node.exp * sp.log(sp.Abs(node.base)) if node.base != 0 else None
            if arg is not None:
                a = sp.N(arg.subs(X, s), 15)
                if not a.is_number or not a.is_extended_real or abs(a) > _EXP_ARG_CAP:
                    return None
        v = _n(e.subs(X, s))
    except Exception:  # noqa: BLE001 - evalf can raise on exotic expressions
        return None
    if not (v.is_number and v.is_extended_real and v.is_finite):
        return None
    return sp.Float(v, 50) if not isinstance(v, sp.Float) else v


def _exact_nonzero(expr: sp.Expr) -> tuple[bool, sp.Expr | None]:
    """(True, value) when the number ``expr`` is certainly nonzero: exactly (sympy already
    reduced it to a nonzero Rational) or by a 50-digit evaluation above 10^-25."""
    if expr.is_Rational:
        return (expr != 0, expr if expr != 0 else None)
    try:
        v = _n(expr)
    except Exception:  # noqa: BLE001 - evalf can raise on exotic expressions
        return False, None
    if v.is_number and v.is_extended_real and abs(v) > _TINY:
        return True, v
    return False, None


def _fmt(v: sp.Expr) -> str:
    return sp.latex(v)


def _pow10(k: int) -> sp.Integer:
    return sp.Integer(10) ** k


def _grows(values: list[sp.Float | None]) -> bool:
    """Numeric corroboration of an infinite limit: |values| strictly increasing along the
    samples and the last at least twice the first (all samples evaluated)."""
    if any(v is None for v in values):
        return False
    mags = [abs(v) for v in values]
    return all(a < b for a, b in zip(mags, mags[1:])) and mags[-1] >= 2 * mags[0]


def _spread(fn: Callable[[sp.Expr], sp.Float | None], centre: sp.Integer) -> tuple[Any, Any, Any, Any] | None:
    """Two sample points near ``centre`` (step 1/2 over a span of 10) with the largest and
    smallest values of ``fn``: (s_lo, v_lo, s_hi, v_hi), or None if a sample fails."""
    pts = [centre + sp.Rational(j, 2) for j in range(21)]
    vals = [fn(s) for s in pts]
    if any(v is None for v in vals):
        return None
    i_lo = min(range(len(vals)), key=lambda i: vals[i])
    i_hi = max(range(len(vals)), key=lambda i: vals[i])
    return pts[i_lo], vals[i_lo], pts[i_hi], vals[i_hi]


def _ratio(e: sp.Expr, s: sp.Expr) -> sp.Float | None:
    v = _value_at(e, s)
    return None if v is None else v / s


# ------------------------------------------------------------------ asymptotic slopes --


def _side_text(sign: int) -> str:
    return "+" if sign > 0 else "-"


def _limits_at_infinity(e: sp.Expr, power: int, what: str, steps: list[str]
                        ) -> tuple[dict[int, asy.Limit], tuple[int, str, sp.Expr, sp.Expr, Any] | None]:
    """lim σ(x)/x^power at ±∞ by the rules, each side's expansion appended to ``steps``, and the
    first side whose limit is infinite as (sign, side, ±∞, leading coefficient, leading scale), or None."""
    lims = {sign: asy.limit(e, sign, power) for sign in (1, -1)}
    for sign in (1, -1):
        step = _expansion_step(e, sign, lims[sign], what)
        if step:
            steps.append(step)
    for sign in (1, -1):
        lim = lims[sign]
        if lim.kind in ("+oo", "-oo"):
            lead_c, lead_s = lim.expansion.lead
            return lims, (sign, _side_text(sign), _OO if lim.kind == "+oo" else -_OO, lead_c, lead_s)
    return lims, None


def _expansion_step(e: sp.Expr, sign: int, lim: asy.Limit, what: str) -> str | None:
    """A LaTeX line: σ(±s) by the rules, and the limit it gives."""
    if lim.expansion is None:
        return None
    where = r"+\infty" if sign > 0 else r"-\infty"
    value = {"finite": _fmt(lim.value) if lim.value is not None else "", "+oo": r"+\infty", "-oo": r"-\infty"}.get(lim.kind)
    tail = rf"\ \to {value}" if value is not None else r"\ \text{(bounded)}"
    return rf"{what} = {lim.expansion.latex()}{tail} \quad (x = {'' if sign > 0 else '-'}s \to {where},\ \text{{by the rules}})"


def _slopes_refuted_by_samples(e: sp.Expr, steps: list[str]) -> Property | None:
    """The pre-calculus refutation: sympy's limit says ±∞ or oscillating *and* 50-digit samples
    corroborate it. Used only where the rules find no limit; it never proves anything."""
    name = "asymptotic_slopes"
    pos, neg = _side(e, 1), _side(e, -1)
    ratios = {"+": sp.simplify(pos / P), "-": sp.simplify(neg / (-P))}
    lims = {side: _limit_p(r) for side, r in ratios.items()}
    for side, sign in (("+", 1), ("-", -1)):
        lim = lims[side]
        if lim is None or _is_finite_real(lim):
            continue

        def ratio_at(s: sp.Expr, _sign: int = sign) -> sp.Float | None:
            return _ratio(e, _sign * s)

        where = r"+\infty" if sign > 0 else r"-\infty"
        if _is_infinite(lim):
            ks = (4, 8, 16, 32)
            vals = [ratio_at(_pow10(k)) for k in ks]
            if _grows(vals):
                witness: dict[str, Any] = {"side": side, "limit": lim}
                witness.update({f"sigma(s)/s at s={'-' if sign < 0 else ''}10^{k}": v for k, v in zip(ks, vals)})
                steps.append(rf"\sigma(s)/s \to {_fmt(lim)} \text{{ as }} s\to{where}")
                return Property(name, Status.REFUTED,
                                f"σ(s)/s has no finite limit as s → {'+' if sign > 0 else '−'}∞ (it tends to {lim})",
                                steps=tuple(steps), witness=witness)
        elif isinstance(lim, AccumulationBounds) or _oscillates_unboundedly(lim):
            sp_ = _spread(ratio_at, _pow10(6))
            need = sp.Integer(1) if _oscillates_unboundedly(lim) else (lim.max - lim.min) / 4
            if sp_ is not None and sp_[3] - sp_[1] >= need and need > 0:
                s_lo, v_lo, s_hi, v_hi = sp_
                steps.append(rf"\sigma(s)/s \text{{ oscillates in }} {_fmt(lim)} \text{{ as }} s\to{where}:\ "
                             rf"\sigma(s)/s = {float(v_lo):.6g} \text{{ at }} s = {sign * s_lo},\ "
                             rf"{float(v_hi):.6g} \text{{ at }} s = {sign * s_hi}")
                return Property(name, Status.REFUTED,
                                f"σ(s)/s has no limit as s → {'+' if sign > 0 else '−'}∞ (it oscillates in {lim})",
                                steps=tuple(steps),
                                witness={"side": side, "limit": lim, "s1": sign * s_lo, "sigma(s1)/s1": v_lo,
                                         "s2": sign * s_hi, "sigma(s2)/s2": v_hi})
    return None


def _asymptotic_slopes(e: sp.Expr) -> Property:
    """L± = lim σ(s)/s by the asymptotic calculus (:mod:`absorb.symbolic.asymptotic`), each
    claimed limit cross-checked by 60-digit evaluations far out (which can only withhold it).
    sympy's ``limit`` is consulted only for a refutation that samples corroborate."""
    name = "asymptotic_slopes"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    lims, infinite = _limits_at_infinity(e, 1, r"\frac{\sigma(x)}{x}", steps)
    if infinite is not None:
        sign, side, value, lead_c, lead_s = infinite
        steps.append(rf"\text{{the leading term }} {asy._term_latex(lead_c, lead_s)} \text{{ of }} \sigma(x)/x"
                     rf"\text{{ tends to }} {_fmt(value)}")
        return Property(name, Status.REFUTED,
                        f"σ(s)/s has no finite limit as s → {'+' if sign > 0 else '−'}∞ (it tends to {value})",
                        steps=tuple(steps), witness={"side": side, "limit": value,
                                                     "leading term of sigma(s)/s": lead_c * lead_s.expr()})
    if not all(lims[sign].kind == "finite" for sign in (1, -1)):
        refuted = _slopes_refuted_by_samples(e, list(steps))
        if refuted is not None:
            return refuted
        why = "; ".join(f"at {_side_text(sign)}∞: {lims[sign].reason}" for sign in (1, -1) if lims[sign].kind != "finite")
        return Property(name, Status.UNKNOWN, f"the asymptotic rules find no limit of σ(s)/s ({why})", steps=tuple(steps))
    lp, lm = lims[1].value, lims[-1].value
    # Defence in depth: high-precision evaluations at |s| = 10^50, 10^200, 10^600 must agree.
    for sign in (1, -1):
        bad = asy.numeric_check(e, sign, lims[sign], 1)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give lim σ(s)/s = {lims[sign].value} at s → "
                            f"{_side_text(sign)}∞, but {bad}", steps=tuple(steps))
    a, b = sp.simplify(lp - lm), lm
    steps.append(rf"L_+ = {_fmt(lp)},\quad L_- = {_fmt(lm)},\quad a = L_+ - L_- = {_fmt(a)},\quad b = L_- = {_fmt(b)}")
    steps.append(r"z \ne 0:\ \frac{\sigma(tz+c)}{t} = \frac{\sigma(tz+c)}{tz+c}\cdot\frac{tz+c}{t} \to L_{\operatorname{sign} z}\, z"
                 r" = a\,\mathrm{ReLU}(z) + b\,z;\qquad z = 0:\ \frac{\sigma(c)}{t} \to 0"
                 r"\ (\sigma(c) \text{ is finite})")
    return Property(name, Status.PROVED,
                    f"σ(tz + c)/t → a·ReLU(z) + b·z as t → ∞ for every real z, c (a = {a}, b = {b})",
                    value={"L_plus": lp, "L_minus": lm, "a": a, "b": b}, steps=tuple(steps))


def asymptotic_slopes(act: Activation) -> Property:
    """Decide whether L± = lim_{s→±∞} σ(s)/s both exist and are finite.

    Then, for every real z and c, σ(tz + c)/t → a·ReLU(z) + b·z as t → ∞ with a = L+ − L− and
    b = L−: for z ≠ 0, tz + c → ±∞ and (tz + c)/t → z; for z = 0, σ(c)/t → 0 because σ is
    finite at every real point (the Activation invariant). value: ``L_plus``, ``L_minus``,
    ``a``, ``b`` (exact).

    >>> from absorb.model.activations import get_activation
    >>> asymptotic_slopes(get_activation("leaky_relu")).value["b"]
    1/100
    """
    return _get(act, "asymptotic_slopes")


# ----------------------------------------------------------------------------- parity --

_PROBES = (sp.Integer(1), sp.Integer(2), sp.Rational(1, 2), sp.Integer(3), sp.Rational(1, 3), sp.Integer(5),
           sp.Rational(7, 10), sp.Integer(10))


def _parity(e: sp.Expr) -> Property:
    name = "even"
    # The cheap refutation first: exact values (or 50-digit ones far from 0) at a few points.
    for z0 in _PROBES:
        ok, v = _exact_nonzero(e.subs(X, -z0) - e.subs(X, z0))
        if ok:
            steps = [rf"\sigma(x) = {_fmt(e)}",
                     rf"\sigma(-{_fmt(z0)}) - \sigma({_fmt(z0)}) = {_fmt(v) if v.is_Rational else f'{float(v):.12g}'} \ne 0"]
            return Property(name, Status.REFUTED, f"σ is not even: σ(−{z0}) ≠ σ({z0})", steps=tuple(steps),
                            witness={"z": z0, "sigma(z)": _n(e.subs(X, z0)), "sigma(-z)": _n(e.subs(X, -z0)),
                                     "sigma(-z)-sigma(z)": v})
    pos, neg = _side(e, 1), _side(e, -1)
    d = sp.simplify(neg - pos)
    steps = [rf"\sigma(x) = {_fmt(e)}", rf"\sigma(-p) - \sigma(p) = {_fmt(d)} \quad (p>0)"]
    if d != 0:  # sympy misses erf + erfc = 1 and friends: retry on the normalised form
        alt = normalised_simplify(neg - pos)
        if alt is not None and alt == 0:
            d = alt
            steps += [STEP, r"\sigma(-p) - \sigma(p) = 0 \quad (p>0)"]
    if not d.has(sp.Float) and _is_zero(d) is True and d.free_symbols <= {P}:
        steps.append(r"\text{and at } z = 0 \text{ trivially: } \sigma(-0) = \sigma(0)")
        return Property(name, Status.PROVED, "σ is even: σ(−z) = σ(z) for every real z", steps=tuple(steps))
    return Property(name, Status.UNKNOWN, "sympy could not decide whether σ is even", steps=tuple(steps))


def parity(act: Activation) -> Property:
    """Decide whether σ is even, σ(−z) = σ(z) for every real z (split p > 0; z = 0 trivial).

    >>> from absorb.model.activations import get_activation
    >>> parity(get_activation("expr:Abs(x)")).status.value
    'proved'
    """
    return _get(act, "parity")


# ------------------------------------------------------------------------ linear form --


def _constant(expr: sp.Expr) -> bool:
    return not expr.free_symbols and _is_finite_real(expr)


def _linear_refutation(e: sp.Expr) -> tuple[str, str, dict[str, Any]] | None:
    """(statement, LaTeX step, witness) when σ(0) ≠ 0 or σ(z0) ≠ z0·σ(1) for a probe z0."""
    ok, v = _exact_nonzero(e.subs(X, 0))
    if ok:
        return ("σ is not linear: σ(0) ≠ 0", rf"\sigma(0) = {_fmt(v) if v.is_Rational else f'{float(v):.12g}'} \ne 0",
                {"z": 0, "sigma(0)": v})
    s1 = e.subs(X, 1)
    for z0 in (-sp.Integer(1),) + _PROBES[1:]:
        ok, v = _exact_nonzero(e.subs(X, z0) - z0 * s1)
        if ok:
            return (f"σ is not linear: σ({z0}) ≠ {z0}·σ(1)",
                    rf"\sigma({_fmt(z0)}) - {_fmt(z0)}\,\sigma(1) = {_fmt(v) if v.is_Rational else f'{float(v):.12g}'} \ne 0",
                    {"z": z0, "sigma(z)": _n(e.subs(X, z0)), "sigma(1)": _n(s1), "sigma(z)-z*sigma(1)": v})
    return None


def _linear_form(e: sp.Expr) -> Property:
    name = "linear"
    # The cheap refutation first (exact or 50-digit values at a few points).
    ref = _linear_refutation(e)
    if ref is not None:
        statement, step, witness = ref
        return Property(name, Status.REFUTED, statement, steps=(rf"\sigma(x) = {_fmt(e)}", step), witness=witness)
    pos, neg, zero = _side(e, 1), _side(e, -1), sp.simplify(e.subs(X, 0))
    c = sp.simplify(pos / P)
    steps = [rf"\sigma(x) = {_fmt(e)}", rf"\frac{{\sigma(p)}}{{p}} = {_fmt(c)} \quad (p>0)"]
    if c.free_symbols:  # retry on the normalised form (erf + erfc = 1, tanh through exp)
        alt = normalised_simplify(pos / P)
        if alt is not None and not alt.free_symbols:
            c = alt
            steps += [STEP, rf"\frac{{\sigma(p)}}{{p}} = {_fmt(c)} \quad (p>0)"]
    if _constant(c) and not c.has(sp.Float):
        rn, r0 = sp.simplify(neg + c * P), zero
        if _is_zero(rn) is not True:
            alt_rn = normalised_simplify(neg + c * P)
            rn = rn if alt_rn is None else alt_rn
        if _is_zero(rn) is True and _is_zero(r0) is True:
            steps.append(rf"\sigma(-p) - c\,(-p) = 0,\quad \sigma(0) = 0 \quad (c = {_fmt(c)})")
            zero_note = " (σ ≡ 0)" if c == 0 else ""
            return Property(name, Status.PROVED, f"σ(z) = c·z for every real z with c = {c}{zero_note}",
                            value={"c": c}, steps=tuple(steps))
    return Property(name, Status.UNKNOWN, "sympy could not decide whether σ is linear", steps=tuple(steps))


def linear_form(act: Activation) -> Property:
    """Decide whether σ(z) = c·z for every real z, with c a constant (c = 0 allowed: σ ≡ 0).

    Any spelling is recognised (``2*x``, ``Max(0,x) - Max(0,-x)``, ``x``). value: ``c``.

    >>> from absorb.model.activations import get_activation
    >>> linear_form(get_activation("expr:Max(0,x) - Max(0,-x)")).value["c"]
    1
    """
    return _get(act, "linear_form")


# ------------------------------------------------------------------- exponential form --


def _exp_refutation(e: sp.Expr) -> tuple[str, str, dict[str, Any]] | None:
    """(statement, LaTeX step, witness) showing σ is not A·exp(βz) + C with A, β ≠ 0, or None.

    For such σ the differences Δ_k = σ(z0+k+1) − σ(z0+k) are A·e^{βz0}(u − 1)·u^k with
    u = e^β > 0, u ≠ 1: so Δ0 ≠ 0, Δ1 ≠ Δ0, Δ0·Δ1 > 0 and Δ1² = Δ0·Δ2. Any failure refutes.
    """
    for z0 in (sp.Integer(0), sp.Integer(-3), sp.Rational(-3, 2)):
        vals = [e.subs(X, z0 + k) for k in range(4)]
        d = [vals[k + 1] - vals[k] for k in range(3)]
        witness: dict[str, Any] = {f"sigma({z0 + k})": _n(vals[k]) for k in range(4)}
        where = rf"\Delta_k = \sigma({_fmt(z0)}+k+1) - \sigma({_fmt(z0)}+k):\ "
        if _is_zero(d[0]) is True:
            return (f"σ({z0 + 1}) = σ({z0}), but A·exp(βz) + C with A, β ≠ 0 is injective",
                    where + r"\Delta_0 = 0", witness)
        if _is_zero(d[1] - d[0]) is True:
            return (f"σ({z0 + 2}) − σ({z0 + 1}) = σ({z0 + 1}) − σ({z0}), which forces β = 0",
                    where + r"\Delta_1 = \Delta_0", witness)
        ok, v = _exact_nonzero(d[1] ** 2 - d[0] * d[2])
        if ok:
            return (f"its differences at {z0}, …, {z0 + 3} are not in geometric progression",
                    where + rf"\Delta_1^2 - \Delta_0\Delta_2 = {_fmt(v) if v.is_Rational else f'{float(v):.12g}'} \ne 0",
                    {**witness, "d1^2-d0*d2": v})
        ok, v = _exact_nonzero(d[0] * d[1])
        if ok and v < 0:
            return (f"σ({z0 + 2}) − σ({z0 + 1}) and σ({z0 + 1}) − σ({z0}) differ in sign, which forces e^β < 0",
                    where + rf"\Delta_0\Delta_1 = {_fmt(v) if v.is_Rational else f'{float(v):.12g}'} < 0", {**witness, "d0*d1": v})
    # σ's growth: A·exp(βs) + C over s is unbounded on one side; the rules' finite limits of σ(s)/s on both sides (checked
    # far out) refute the form where the values at those points cannot (a σ flat there up to e^-40000)
    lims = {sign: asy.limit(e, sign, 1) for sign in (1, -1)}
    if all(lims[sign].kind == "finite" and not asy.numeric_check(e, sign, lims[sign], 1) for sign in (1, -1)):
        return ("σ(s)/s has finite limits at both ±∞ (by the asymptotic rules), while A·exp(βs)/s is unbounded on one side",
                rf"\lim_{{s\to+\infty}} \sigma(s)/s = {_fmt(lims[1].value)},\ \lim_{{s\to-\infty}} \sigma(s)/s = {_fmt(lims[-1].value)}",
                {"L_plus": lims[1].value, "L_minus": lims[-1].value})
    return None


def _exponential_form(e: sp.Expr) -> Property:
    name = "exponential"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    # The refutation is cheap (values at four points), the proof is not: refute first.
    ref = _exp_refutation(e)
    if ref is not None:
        statement, step, witness = ref
        steps.append(step)
        return Property(name, Status.REFUTED, f"σ is not of the form A·exp(βz) + C: {statement}",
                        steps=tuple(steps), witness=witness)
    pos, neg, zero = _side(e, 1), _side(e, -1), sp.simplify(e.subs(X, 0))
    # Candidates from the p > 0 side: σ' = Aβ e^{βp}, σ''/σ' = β; then every side is checked
    # exactly against A e^{βz} + C.
    d1 = sp.simplify(sp.diff(pos, P))
    if _is_zero(d1) is not True:
        beta = sp.simplify(sp.diff(d1, P) / d1)
        if _constant(beta) and _is_zero(beta) is False:
            A = sp.simplify(d1 / (beta * sp.exp(beta * P)))
            C = sp.simplify(pos - A * sp.exp(beta * P))
            if (_constant(A) and _constant(C) and _is_zero(A) is False
                    and not any(v.has(sp.Float) for v in (A, beta, C))):
                form = A * sp.exp(beta * X) + C
                rp = sp.simplify(pos - form.subs(X, P))
                rn = sp.simplify(neg - form.subs(X, -P))
                r0 = sp.simplify(zero - form.subs(X, 0))
                if all(_is_zero(r) is True for r in (rp, rn, r0)):
                    steps.append(rf"A = {_fmt(A)},\ \beta = {_fmt(beta)},\ C = {_fmt(C)}:\quad "
                                 r"\sigma(\pm p) - \big(A e^{\pm\beta p} + C\big) = 0,\quad \sigma(0) - (A + C) = 0 \quad (p>0)")
                    return Property(name, Status.PROVED,
                                    f"σ(z) = A·exp(βz) + C for every real z (A = {A}, β = {beta}, C = {C})",
                                    value={"A": A, "beta": beta, "C": C}, steps=tuple(steps))
    return Property(name, Status.UNKNOWN, "sympy could not decide whether σ(z) = A·exp(βz) + C", steps=tuple(steps))


def exponential_form(act: Activation) -> Property:
    """Decide whether σ(z) = A·exp(βz) + C for every real z, constants A ≠ 0, β ≠ 0.

    value: ``A``, ``beta``, ``C`` (exact).

    >>> from absorb.model.activations import get_activation
    >>> exponential_form(get_activation("expr:2*exp(3*x)-1")).value["beta"]
    3
    """
    return _get(act, "exponential_form")


# ------------------------------------------------------------------------ boundedness --


def _bounded_on_reals(e: sp.Expr) -> Property:
    name = "bounded"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    # Route (a): an interval bound over the expression tree.
    log: list[str] = []
    try:
        lo, hi = _range(e, log)
    except Exception:  # noqa: BLE001 - a comparison sympy cannot decide: no bound from this route
        lo, hi = _WHOLE
    if lo != -_OO and hi != _OO:
        bound = max(abs(lo), abs(hi))
        steps.extend(log[-6:])
        steps.append(rf"\text{{interval bound over the expression tree: }} \sigma(x) \in [{_fmt(lo)}, {_fmt(hi)}] "
                     rf"\text{{ for every real }} x,\ \text{{so }} \sup_{{\mathbb{{R}}}}|\sigma| \le {_fmt(bound)}")
        return Property(name, Status.PROVED, f"σ is bounded on R: σ(x) ∈ [{lo}, {hi}] for every real x (interval bound)",
                        value={"lower": lo, "upper": hi, "bound": bound, "route": "interval"}, steps=tuple(steps))
    # Route (b): σ continuous on R and bounded near ±∞ (finite limits, or an O(1) bound), by the rules.
    lims, infinite = _limits_at_infinity(e, 0, r"\sigma(x)", steps)
    if infinite is not None:
        _sign, side, value, lead_c, lead_s = infinite
        return Property(name, Status.REFUTED, f"σ is unbounded: σ(x) → {value} as x → {side}∞",
                        steps=tuple(steps), witness={"side": side, "limit": value,
                                                     "leading term of sigma": lead_c * lead_s.expr()})
    if not all(lims[sign].kind in ("finite", "bounded") for sign in (1, -1)):
        refuted = _unbounded_by_samples(e, list(steps))
        if refuted is not None:
            return refuted
        why = "; ".join(f"at {_side_text(sign)}∞: {lims[sign].reason}" for sign in (1, -1)
                        if lims[sign].kind not in ("finite", "bounded"))
        return Property(name, Status.UNKNOWN, f"no interval bound, and the asymptotic rules do not bound σ near ±∞ ({why})",
                        steps=tuple(steps))
    for sign in (1, -1):
        bad = asy.numeric_check(e, sign, lims[sign], 0)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give lim σ = {lims[sign].value} at {_side_text(sign)}∞, "
                            f"but {bad}", steps=tuple(steps))
    jump = continuity_issue(e)
    if jump is not None:
        return Property(name, Status.UNKNOWN, f"no interval bound, and σ could not be proved continuous on R (it may jump at {jump})",
                        steps=tuple(steps))
    steps.append(r"\sigma \text{ is continuous on } \mathbb{R} \text{ (a continuous function bounded near } \pm\infty"
                 r"\text{ is bounded)}")
    if all(lims[sign].kind == "finite" for sign in (1, -1)):
        lp, lm = lims[1].value, lims[-1].value
        return Property(name, Status.PROVED, f"σ is bounded on R: continuous, with limits {lp} at +∞ and {lm} at −∞",
                        value={"limit_plus": lp, "limit_minus": lm, "route": "continuity"}, steps=tuple(steps))
    return Property(name, Status.PROVED, "σ is bounded on R: continuous, and bounded near +∞ and −∞ (asymptotic rules)",
                    value={"route": "continuity"}, steps=tuple(steps))


def _unbounded_by_samples(e: sp.Expr, steps: list[str]) -> Property | None:
    """The pre-calculus refutation: sympy's limit of σ is ±∞ or oscillates without bound *and*
    50-digit samples corroborate it. Used only where the rules decide nothing."""
    name = "bounded"
    pos, neg = _side(e, 1), _side(e, -1)
    lims = {"+": _limit_p(pos), "-": _limit_p(neg)}
    for side, sign in (("+", 1), ("-", -1)):
        lim = lims[side]
        if lim is None or not (_is_infinite(lim) or _oscillates_unboundedly(lim)):
            continue
        if _is_infinite(lim):
            ks = (4, 8, 16, 32)
            vals = [_value_at(e, sign * _pow10(k)) for k in ks]
            if _grows(vals):
                witness: dict[str, Any] = {"side": side, "limit": lim}
                witness.update({f"sigma({'-' if sign < 0 else ''}10^{k})": v for k, v in zip(ks, vals)})
                return Property(name, Status.REFUTED, f"σ is unbounded: σ(x) → {lim} as x → {side}∞",
                                steps=tuple(steps), witness=witness)
        else:
            sp_ = _spread(lambda s, _sign=sign: _value_at(e, _sign * s), _pow10(6))
            if sp_ is not None and sp_[3] - sp_[1] >= 10**5:
                s_lo, v_lo, s_hi, v_hi = sp_
                steps.append(rf"\sigma({sign * s_lo}) = {float(v_lo):.6g},\quad \sigma({sign * s_hi}) = {float(v_hi):.6g}")
                return Property(name, Status.REFUTED, f"σ is unbounded: it oscillates in {lim} as x → {side}∞",
                                steps=tuple(steps), witness={"side": side, "limit": lim, "x1": sign * s_lo, "sigma(x1)": v_lo,
                                                             "x2": sign * s_hi, "sigma(x2)": v_hi})
    return None


def bounded_on_reals(act: Activation) -> Property:
    """Decide whether sup_R |σ| < ∞.

    Route (a): a sound interval bound over the expression tree (erf, tanh, atan, sin, cos in
    their ranges; exp of an argument bounded above; sums, products, quotients of bounded parts
    with denominators bounded away from 0; Max, Min, Abs; the branches of a Piecewise).
    Route (b): σ continuous on R (proved structurally by
    :func:`absorb.model.activations.continuity_issue`) and bounded near ±∞ by the asymptotic
    rules (finite limits, or an O(1) bound). value: the bound (or the limits) and ``route``.
    Refuted when the rules find an infinite limit at ±∞ (or, where they decide nothing, when
    sympy's limit is infinite and samples corroborate it).

    >>> from absorb.model.activations import get_activation
    >>> bounded_on_reals(get_activation("expr:erf(x)")).value["bound"]
    1
    """
    return _get(act, "bounded_on_reals")


# ------------------------------------------------------------------- degree-2 skeleton --


def _quadratic_skeleton(e: sp.Expr) -> Property:
    """σ(x) = αx² + βx + o(x) at +∞ (α ≠ 0) and σ(x) = o(x) at −∞, by the asymptotic rules
    (:func:`absorb.symbolic.asymptotic.quadratic_terms`), each side cross-checked by 60-digit
    evaluations far out (which can only withhold the claim)."""
    name = "quadratic_skeleton"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    terms = {}
    for sign in (1, -1):
        try:
            f = asy.expand(asy.at_infinity(e, sign))
            where = r"+\infty" if sign > 0 else r"-\infty"
            steps.append(rf"\sigma(x) = {f.latex()} \quad (x = {'' if sign > 0 else '-'}s \to {where},\ \text{{by the rules}})")
        except asy.Unknown:
            pass
        terms[sign] = asy.quadratic_terms(e, sign)
    if terms[1] is None or terms[-1] is None:
        side = "+" if terms[1] is None else "−"
        return Property(name, Status.UNKNOWN, f"the asymptotic rules prove no form αx² + βx + o(x) of σ at {side}∞",
                        steps=tuple(steps))
    (alpha, beta), (am, bm) = terms[1], terms[-1]
    if alpha == 0 or am != 0 or bm != 0:
        why = ("α = 0 at +∞ (σ grows at most linearly there)" if alpha == 0 else
               f"σ(x) = {_fmt(am)}·x² + {_fmt(bm)}·x + o(x) at −∞ is not o(x)")
        return Property(name, Status.REFUTED, f"σ is not of the form αx² + βx + o(x) (α ≠ 0) at +∞ and o(x) at −∞: {why}",
                        steps=tuple(steps), witness={"alpha_plus": alpha, "beta_plus": beta, "alpha_minus": am, "beta_minus": bm})
    for sign, power in ((1, 2), (-1, 1)):  # defence in depth: σ/x² → α at +∞, σ/x → 0 at −∞
        bad = asy.numeric_check(e, sign, asy.limit(e, sign, power), power)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give σ's two-term form at {_side_text(sign)}∞, but {bad}",
                            steps=tuple(steps))
    steps.append(rf"\alpha = {_fmt(alpha)},\quad \beta = {_fmt(beta)}:\quad \sigma(tz + c) = "
                 r"[z > 0]\,\big(\alpha t^2 z^2 + t\,(2\alpha c + \beta)\,z\big) + o(t)\quad (t \to \infty,\ z, c \in \mathbb{R})")
    return Property(name, Status.PROVED,
                    f"σ(x) = αx² + βx + o(x) as x → +∞ and σ(x) = o(x) as x → −∞ (α = {alpha}, β = {beta})",
                    value={"alpha": alpha, "beta": beta}, steps=tuple(steps))


def quadratic_skeleton(act: Activation) -> Property:
    """Decide whether σ(x) = αx² + βx + o(x) as x → +∞ with α ≠ 0 and σ(x) = o(x) as x → −∞
    (ReLU², GELU², SiLU², softplus²: α = 1, β = 0). Then for every real z, c,
    σ(tz + c) = [z > 0](αt²z² + t(2αc + β)z) + o(t) as t → ∞ (z = 0: σ(c) is finite), the
    expansion the degree-2 skeleton reads (docs/results/skeleton2.md). value: ``alpha``, ``beta``.

    >>> from absorb.model.activations import get_activation
    >>> quadratic_skeleton(get_activation("relu2")).value["alpha"]
    1
    """
    return _get(act, "quadratic_skeleton")


# ------------------------------------------------------------------------- gate limits --


def _gate_limits(e: sp.Expr) -> Property:
    """L± = lim σ(s) at s → ±∞, both finite, by the asymptotic rules, cross-checked by 60-digit
    evaluations far out (which can only withhold the claim)."""
    name = "gate_limits"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    lims, infinite = _limits_at_infinity(e, 0, r"\sigma(x)", steps)
    if infinite is not None:
        sign, side, value, _c, _s = infinite
        return Property(name, Status.REFUTED, f"σ(s) has no finite limit as s → {'+' if sign > 0 else '−'}∞ (it tends to {value})",
                        steps=tuple(steps), witness={"side": side, "limit": value})
    if not all(lims[sign].kind == "finite" for sign in (1, -1)):
        why = "; ".join(f"at {_side_text(sign)}∞: {lims[sign].reason}" for sign in (1, -1) if lims[sign].kind != "finite")
        return Property(name, Status.UNKNOWN, f"the asymptotic rules find no limit of σ(s) ({why})", steps=tuple(steps))
    for sign in (1, -1):
        bad = asy.numeric_check(e, sign, lims[sign], 0)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give lim σ(s) = {lims[sign].value} at s → {_side_text(sign)}∞, "
                            f"but {bad}", steps=tuple(steps))
    lp, lm = lims[1].value, lims[-1].value
    steps.append(rf"L_+ = {_fmt(lp)},\quad L_- = {_fmt(lm)}:\quad \sigma(tz + c) \to L_+ [z > 0] + L_- [z < 0]"
                 r"\quad (t \to \infty,\ z \ne 0,\ c \in \mathbb{R})")
    return Property(name, Status.PROVED, f"σ(s) → L₊ = {lp} as s → +∞ and → L₋ = {lm} as s → −∞",
                    value={"L_plus": lp, "L_minus": lm}, steps=tuple(steps))


def gate_limits(act: Activation) -> Property:
    """Decide whether L± = lim_{s→±∞} σ(s) both exist and are finite (sigmoid: 1, 0). Then
    σ(tz + c) → L₊ for z > 0 and → L₋ for z < 0 (t → ∞, any real c): the step-like gates of the
    gated skeleton (docs/results/gated-skeleton.md). value: ``L_plus``, ``L_minus``.

    >>> from absorb.model.activations import get_activation
    >>> gate_limits(get_activation("sigmoid")).value["L_plus"]
    1
    """
    return _get(act, "gate_limits")


def _relu_like_gate(e: sp.Expr) -> Property:
    """σ(s) = s + o(1) at +∞ and σ(s) = o(1) at −∞ by the asymptotic rules: lim (σ(s) − s) = 0
    and lim σ(s) = 0, each cross-checked by 60-digit evaluations (which can only withhold it)."""
    name = "relu_like_gate"
    steps = [rf"\sigma(x) = {_fmt(e)}"]
    lims = {1: asy.limit(e - X, 1), -1: asy.limit(e, -1)}
    for sign, what in ((1, r"\sigma(x) - x"), (-1, r"\sigma(x)")):
        step = _expansion_step(e - X if sign > 0 else e, sign, lims[sign], what)
        if step:
            steps.append(step)
    for sign in (1, -1):
        lim = lims[sign]
        what = "σ(s) − s" if sign > 0 else "σ(s)"
        if lim.kind in ("+oo", "-oo") or (lim.kind == "finite" and lim.value != 0):
            return Property(name, Status.REFUTED, f"{what} → {lim.value if lim.kind == 'finite' else lim.kind} as s → "
                            f"{_side_text(sign)}∞, not 0", steps=tuple(steps), witness={"side": _side_text(sign)})
        if lim.kind != "finite":
            return Property(name, Status.UNKNOWN, f"the asymptotic rules find no limit of {what} at {_side_text(sign)}∞ "
                            f"({lim.reason})", steps=tuple(steps))
        bad = asy.numeric_check(e - X if sign > 0 else e, sign, lim, 0)
        if bad:
            return Property(name, Status.UNKNOWN, f"the rules give lim {what} = 0 at {_side_text(sign)}∞, but {bad}",
                            steps=tuple(steps))
    steps.append(r"\sigma(tz + c) = [z > 0]\,(tz + c) + o(1)\quad (t \to \infty,\ z \ne 0,\ c \in \mathbb{R})")
    return Property(name, Status.PROVED, "σ(s) = s + o(1) as s → +∞ and σ(s) = o(1) as s → −∞", value={},
                    steps=tuple(steps))


def relu_like_gate(act: Activation) -> Property:
    """Decide whether σ(s) = s + o(1) as s → +∞ and σ(s) = o(1) as s → −∞ (ReLU, SiLU, GELU,
    GELU-tanh, quick-GELU, softplus, Mish): the ReLU-like gates of the gated skeleton
    (docs/results/gated-skeleton.md).

    >>> from absorb.model.activations import get_activation
    >>> relu_like_gate(get_activation("silu")).proved
    True
    """
    return _get(act, "relu_like_gate")


register_analyses(
    ("asymptotic_slopes", "asymptotic_slopes", _asymptotic_slopes),
    ("parity", "even", _parity),
    ("linear_form", "linear", _linear_form),
    ("exponential_form", "exponential", _exponential_form),
    ("bounded_on_reals", "bounded", _bounded_on_reals),
    ("quadratic_skeleton", "quadratic_skeleton", _quadratic_skeleton),
    ("gate_limits", "gate_limits", _gate_limits),
    ("relu_like_gate", "relu_like_gate", _relu_like_gate),
)

from absorb.symbolic.properties import ANALYSES  # noqa: E402,F401 - the registry read after the registration above (absorb.symbolic.ANALYSES)

__all__ = ["asymptotic_slopes", "parity", "linear_form", "exponential_form", "bounded_on_reals", "quadratic_skeleton", "gate_limits", "relu_like_gate"]
