"""A sound interval bound over an activation's expression tree: the first route of
:func:`absorb.symbolic.growth.bounded_on_reals`.

:func:`_range` encloses e(x) for every real x in an interval with Rational (or ±∞) ends;
each node kind has one rule, and a node without one gets (−∞, ∞).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from absorb.model.activations import X

_OO = sp.oo


def _is_infinite(v: sp.Expr) -> bool:
    return v in (_OO, -_OO)


_Interval = tuple[sp.Expr, sp.Expr]
_WHOLE: _Interval = (-_OO, _OO)
_BIG = sp.Integer(10) ** 60


def _round(v: sp.Expr, up: bool) -> sp.Expr:
    """A Rational (or ±∞) on the safe side of the real number ``v``: ≥ v when ``up``, else ≤ v.

    A 30-digit evaluation is widened by 10^-20 of its size (plus 10^-50): far more than its
    error. Magnitudes beyond 10^60 become ±∞ (or ±10^60/2 on the inner side).
    """
    if v == _OO or v == -_OO:
        return v
    if v.is_Rational:
        return v
    try:  # (strict: every digit correct — a cancellation evaluates to digits that are not v's, and the margin below
        f = sp.N(v, 30, strict=True)  # would not cover them)
    except Exception:  # noqa: BLE001  (PrecisionExhausted: no safe side to round to but ±∞)
        return _OO if up else -_OO
    if not (f.is_number and f.is_extended_real and f.is_finite):
        return _OO if up else -_OO
    if abs(f) > sp.Float(_BIG, 30):  # (before the exact Rational: exp(10¹²) to a Rational took minutes)
        if up:
            return _OO if f > 0 else -_BIG / 2
        return -_OO if f < 0 else _BIG / 2
    r = sp.Rational(f)
    margin = abs(r) / sp.Integer(10) ** 20 + sp.Integer(10) ** -50
    return r + margin if up else r - margin


def _mono(fn: Callable[[sp.Expr], sp.Expr], iv: _Interval, increasing: bool = True) -> _Interval:
    lo, hi = fn(iv[0]), fn(iv[1])
    if not increasing:
        lo, hi = hi, lo
    return _round(lo, False), _round(hi, True)


def _mul_end(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    # 0·(±∞) = 0: the endpoints stand for finite values, so this is the sound convention.
    if a == 0 or b == 0:
        return sp.Integer(0)
    return a * b


def _mul(x: _Interval, y: _Interval) -> _Interval:
    prods = [_mul_end(a, b) for a in x for b in y]
    return min(prods), max(prods)


def _recip(x: _Interval) -> _Interval | None:
    lo, hi = x
    if lo > 0 or hi < 0:  # 0 excluded: 1/t is decreasing on each side, 1/(±∞) = 0
        inv = lambda t: sp.Integer(0) if _is_infinite(t) else 1 / t  # noqa: E731
        return inv(hi), inv(lo)
    return None


def _int_pow(x: _Interval, n: int) -> _Interval | None:
    lo, hi = x
    if n == 0:
        return sp.Integer(1), sp.Integer(1)
    if n < 0:
        base = _int_pow(x, -n)
        return None if base is None else _recip(base)
    if n % 2 == 1 or lo >= 0:
        return lo**n, hi**n
    if hi <= 0:
        return hi**n, lo**n
    return sp.Integer(0), max(-lo, hi) ** n


def _range(e: sp.Expr, log: list[str]) -> _Interval:
    """An interval [lo, hi] (Rational or ±∞ ends) that contains e(x) for every real x.

    Sound by construction: each rule encloses the image of its arguments' intervals; a
    node with no rule (or whose rule needs what its arguments cannot guarantee, e.g. a
    denominator bounded away from 0) gets (−∞, ∞). ``log`` collects the nontrivial bounds.
    """
    iv = _range_node(e, log)
    lo, hi = iv
    if lo != -_OO and hi != _OO and e.has(X) and not e.is_Add and not e.is_Mul:
        log.append(rf"{sp.latex(e)} \in [{sp.latex(lo)}, {sp.latex(hi)}]")
    return iv


def _range_add(e: sp.Expr, log: list[str]) -> _Interval:
    lo, hi = sp.Integer(0), sp.Integer(0)
    for a in e.args:
        alo, ahi = _range(a, log)
        lo, hi = lo + alo, hi + ahi
    return lo, hi


def _range_mul(e: sp.Expr, log: list[str]) -> _Interval:
    acc: _Interval = (sp.Integer(1), sp.Integer(1))
    for a in e.args:
        acc = _mul(acc, _range(a, log))
    return acc


def _range_power(b: sp.Expr, x: sp.Expr, log: list[str]) -> _Interval:
    """b**x with a constant exponent x."""
    bi = _range(b, log)
    if x.is_Integer:
        return _int_pow(bi, int(x)) or _WHOLE
    if x.is_number and x.is_extended_real and bi[0] >= 0:
        if x.is_positive:
            return _mono(lambda t: t**x if t != _OO else _OO, bi)
        if x.is_negative and bi[0] > 0:
            return _mono(lambda t: t**x if t != _OO else sp.Integer(0), bi, increasing=False)
    return _WHOLE


def _range_pow(e: sp.Expr, log: list[str]) -> _Interval:
    b, x = e.base, e.exp
    if not x.has(X):
        return _range_power(b, x, log)
    if not b.has(X):
        if b == 0:
            # 0**y is 1 at y = 0 and 0 for y > 0 (undefined for y < 0).
            xi = _range(x, log)
            return (sp.Integer(0), sp.Integer(1)) if xi[0] >= 0 else _WHOLE
        if b.is_number and b.is_positive:
            return _range(sp.exp(x * sp.log(b), evaluate=False), log)
    return _WHOLE


def _range_log(e: sp.Expr, log: list[str]) -> _Interval:
    ai = _range(e.args[0], log)
    return _mono(sp.log, ai) if ai[0] > 0 else _WHOLE


def _range_max_min(e: sp.Expr, log: list[str]) -> _Interval:
    ivs = [_range(a, log) for a in e.args]
    pick = max if isinstance(e, sp.Max) else min
    return pick(i[0] for i in ivs), pick(i[1] for i in ivs)


def _range_piecewise(e: sp.Expr, log: list[str]) -> _Interval:
    if e.args[-1].cond != sp.true:
        return _WHOLE  # without a catch-all branch σ could be undefined somewhere
    ivs = [_range(branch.expr, log) for branch in e.args]
    return min(i[0] for i in ivs), max(i[1] for i in ivs)


_SIGNED_UNIT: _Interval = (sp.Integer(-1), sp.Integer(1))

#: the rule for each kind of node, tried in this order (the first whose types match applies)
_RULES: tuple[tuple[type | tuple[type, ...], Callable[[sp.Expr, list[str]], _Interval]], ...] = (
    (sp.Add, _range_add),
    (sp.Mul, _range_mul),
    (sp.Pow, _range_pow),
    (sp.exp, lambda e, log: _mono(sp.exp, _range(e.args[0], log))),
    (sp.log, _range_log),
    ((sp.erf, sp.tanh, sp.atan, sp.sinh), lambda e, log: _mono(type(e), _range(e.args[0], log))),
    (sp.erfc, lambda e, log: _mono(sp.erfc, _range(e.args[0], log), increasing=False)),
    ((sp.sin, sp.cos), lambda e, log: _SIGNED_UNIT),
    (sp.cosh, lambda e, log: _mono(sp.cosh, _abs(_range(e.args[0], log)))),
    (sp.Abs, lambda e, log: _abs(_range(e.args[0], log))),
    ((sp.Max, sp.Min), _range_max_min),
    (sp.sign, lambda e, log: _SIGNED_UNIT),
    (sp.Heaviside, lambda e, log: (sp.Integer(0), sp.Integer(1))),
    (sp.Piecewise, _range_piecewise),
)


def _range_node(e: sp.Expr, log: list[str]) -> _Interval:
    if e == X:
        return _WHOLE
    if not e.free_symbols:
        if e.is_number and e.is_extended_real and e.is_finite:
            return _round(e, False), _round(e, True)
        return _WHOLE
    if e.free_symbols - {X}:
        return _WHOLE
    for types, rule in _RULES:
        if isinstance(e, types):
            return rule(e, log)
    return _WHOLE


def _abs(iv: _Interval) -> _Interval:
    lo, hi = iv
    if lo >= 0:
        return lo, hi
    if hi <= 0:
        return -hi, -lo
    return sp.Integer(0), max(-lo, hi)
