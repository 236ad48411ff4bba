"""σ by pieces: the checker's own decomposition of an activation into analytic branches.

An activation is a sympy expression in one real variable built from the whitelisted heads
(``+ · ^``, exp, log, sqrt, erf, erfc, tanh, sinh, cosh, atan, sin, cos, Abs, Max, Min,
Piecewise). Only a few heads can switch between formulas: ``Max``/``Min`` (where two
arguments cross), ``Abs`` (where its argument vanishes), ``Piecewise`` (where a condition
changes), ``0**a`` (where ``a`` changes sign), and ``b**r`` for a non-integer or negative
``r`` and ``log b`` (where ``b`` vanishes). The **break points** are the real points where
such a switching function changes sign, found piece by piece: on each interval between the
break points of the switching function itself, its branch is analytic, so it is either
identically 0 there (exact simplification) or has finitely many zeros (``solveset`` must
return a finite set, else the decomposition is refused).

Between consecutive break points every switching head keeps one branch, chosen by the sign
of its switching function at one exact rational point of the interval; substituting those
branches gives an expression with no switching head, equal to σ on the whole open interval.
A fact about σ ("for all z") is then proved as: exact evaluation at every break point, plus
an exact simplification on every piece. Nothing here is shared with the producer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

_SMOOTH = (sp.Add, sp.Mul, sp.exp, sp.erf, sp.erfc, sp.tanh, sp.sinh, sp.cosh, sp.atan, sp.sin, sp.cos)
_PREC = 60
_TINY = sp.Float(10) ** -40


class Refused(Exception):
    """The expression is outside what the decomposition can handle soundly."""


@dataclass(frozen=True)
class Piece:
    """σ on the open interval (lo, hi) (±oo allowed) equals ``expr``, a switch-free formula."""

    lo: sp.Expr
    hi: sp.Expr
    expr: sp.Expr
    sample: sp.Rational


def _digits(e: sp.Expr) -> sp.Expr:
    """``e`` to _PREC correct digits (sympy's strict evaluation), or Refused: a value with no correct digit
    ("0.e-10" for a constant that is exactly 0, 10¹⁵⁰·(atan 2 + atan 3 − 3π/4)) has no sign to read."""
    try:
        return sp.N(e, _PREC, strict=True)
    except Refused:
        raise
    except Exception as exc:  # (PrecisionExhausted, or evalf failing on an exotic expression)
        raise Refused(f"cannot evaluate {e} to {_PREC} correct digits") from exc


def _num(e: sp.Expr, x: sp.Symbol, at: sp.Expr) -> sp.Expr:
    return _digits(e.subs(x, at))


def _sign_at(e: sp.Expr, x: sp.Symbol, at: sp.Rational, zero_on_piece: bool) -> int:
    """Sign of the switch-free ``e`` at ``at`` (a point that is no zero of it, unless it is 0 on
    the whole piece, which the caller decided exactly)."""
    if zero_on_piece:
        return 0
    v = _num(e, x, at)
    if not v.is_real or v.is_zero or abs(v) < _TINY:  # a non-real or undecidable sign: refuse
        raise Refused(f"cannot decide the sign of {e} at {at}")
    return 1 if v > 0 else -1


def _identically_zero(e: sp.Expr) -> bool:
    return sp.simplify(e) == 0


def _sample(lo: sp.Expr, hi: sp.Expr) -> sp.Rational:
    """An exact rational point of (lo, hi)."""
    if lo == -sp.oo and hi == sp.oo:
        return sp.Rational(1, 3)
    if lo == -sp.oo:
        return sp.floor(_digits(hi)) - 1
    if hi == sp.oo:
        return sp.ceiling(_digits(lo)) + 1
    a, b = _digits(lo), _digits(hi)
    q = sp.nsimplify((a + b) / 2, rational=True, tolerance=(b - a) / 8)
    if not (a < q < b):
        raise Refused(f"no rational sample in ({lo}, {hi})")
    return sp.Rational(q)


def _real_point(r: sp.Expr) -> sp.Expr:
    v = _digits(r)
    if not (v.is_real and v.is_finite):
        raise Refused(f"break point {r} is not a real number")
    return r


def _intervals(points: list[sp.Expr]) -> list[tuple[sp.Expr, sp.Expr]]:
    edges = [-sp.oo] + points + [sp.oo]
    return list(zip(edges[:-1], edges[1:]))


def _sorted_points(points: set[sp.Expr]) -> list[sp.Expr]:
    out: list[tuple[sp.Float, sp.Expr]] = []
    for p in points:
        v = _digits(p)
        if any(abs(v - w) < _TINY for w, _ in out):
            # two exact expressions for (numerically) one point: they must be equal exactly
            twin = next(q for w, q in out if abs(v - w) < _TINY)
            if not _identically_zero(p - twin):
                raise Refused(f"break points {p} and {twin} are too close to order")
            continue
        out.append((v, p))
    return [p for _, p in sorted(out, key=lambda t: t[0])]


def _switches(e: sp.Expr) -> list[sp.Expr]:
    """The switching functions of the head of ``e`` (empty for a smooth head)."""
    if isinstance(e, (sp.Max, sp.Min)):
        a = list(e.args)
        return [a[i] - a[j] for i in range(len(a)) for j in range(i + 1, len(a))]
    if isinstance(e, sp.Abs):
        return [e.args[0]]
    if isinstance(e, sp.Piecewise):
        out = []
        for _, cond in e.args:
            for rel in (cond.atoms(sp.core.relational.Relational) if cond not in (sp.true, sp.false) else ()):
                out.append(rel.lhs - rel.rhs)
        return out
    if isinstance(e, sp.Pow):
        b, ex = e.args
        if b == 0:
            return [ex]
        if not (ex.is_Integer and ex >= 0):
            return [b] if not b.is_number else []
        return []
    if isinstance(e, sp.log):
        return [e.args[0]]
    return []


def _check_heads(e: sp.Expr, x: sp.Symbol) -> None:
    for node in sp.preorder_traversal(e):
        if node.is_Atom:
            if node.is_Symbol and node != x:
                raise Refused(f"unexpected symbol {node}")
            continue
        if isinstance(node, (sp.Max, sp.Min, sp.Abs, sp.Piecewise, sp.Pow, sp.log) + _SMOOTH):
            continue
        if isinstance(node, (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom,
                             sp.core.containers.Tuple)) or type(node).__name__ == "ExprCondPair":
            continue
        raise Refused(f"the head {type(node).__name__} is not handled by the checker's decomposition")


@functools.lru_cache(maxsize=512)
def break_points(e: sp.Expr, x: sp.Symbol) -> tuple[sp.Expr, ...]:
    """All break points of ``e`` (sorted, exact)."""
    _check_heads(e, x)
    pts: set[sp.Expr] = set()
    for node in sp.preorder_traversal(e):
        if node.is_Atom or not node.has(x):
            continue
        for s in _switches(node):
            if not s.has(x):
                continue
            inner = list(break_points(s, x))
            pts.update(inner)
            for lo, hi in _intervals(inner):
                sb = branch(s, x, _sample(lo, hi))
                if _identically_zero(sb):
                    continue
                dom = sp.Interval.open(lo, hi)
                roots = sp.solveset(sb, x, dom)
                if not isinstance(roots, (sp.FiniteSet, type(sp.S.EmptySet))):
                    raise Refused(f"the zeros of {sb} on {dom} are not a finite set ({roots})")
                found = [_real_point(r) for r in roots]
                _certify_zeros(sb, x, lo, hi, found)
                pts.update(found)
    return tuple(_sorted_points(pts))


def _inside(r: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> bool:
    """lo < r < hi for exact real numbers (±oo ends), decided at 60 digits with a margin; a
    point too close to an end to tell is refused unless it equals it exactly (then outside)."""
    v = _digits(r)
    for end, side in ((lo, 1), (hi, -1)):
        if end in (sp.oo, -sp.oo):
            continue
        gap = (v - _digits(end)) * side
        if abs(gap) < _TINY:
            if decide_zero(r - end) is True:
                return False
            raise Refused(f"cannot order the zero {r} and the end {end}")
        if gap < 0:
            return False
    return True


def _certify_zeros(sb: sp.Expr, x: sp.Symbol, lo: sp.Expr, hi: sp.Expr, found: list[sp.Expr]) -> None:
    """A library solve is not a proof: the zeros ``found`` (sympy's ``solveset``) of the
    switch-free ``sb`` on (lo, hi) are certified here, or the decomposition is refused.

    * each one is a zero, by exact substitution (:func:`decide_zero`);
    * there is no other: after dropping the factors of one sign on ℝ (sympy's assumption rules),
      for a polynomial with rational coefficients, its distinct real roots
      (exact isolation, ``real_roots`` of the square-free part) inside (lo, hi) are exactly as
      many; otherwise no zero is claimed and ``sb`` is positive (or negative) for every real x
      by sympy's assumption rules, or at most one is and ``sb′`` is ≥ 0 (or ≤ 0) for every real
      x — ``sb`` is analytic on the piece and not identically 0 there, so it is then strictly
      monotone and has at most one zero."""
    for r in found:
        if decide_zero(sb.subs(x, r)) is not True:
            raise Refused(f"the claimed zero {r} of {sb} is not proved to be one by exact substitution")
    xr = sp.Dummy("x", real=True)
    s = sb.subs(x, xr)
    if not found and (s.is_positive or s.is_negative):  # (first: factor() of 1 + exp(-851x/500) takes 10 s,
        return                                          # a polynomial of degree 851 in exp(x/500))
    # factors of one sign for every real x (exp(x), 1 + x², …) change no zero: drop them
    kept = [f for f in sp.Mul.make_args(sp.factor(sb)) if not (f.subs(x, xr).is_positive or f.subs(x, xr).is_negative)]
    core = sp.Mul(*kept)
    try:
        poly = sp.Poly(core, x, domain="QQ")
    except (sp.PolynomialError, sp.CoercionFailed, sp.GeneratorsNeeded):
        poly = None
    if poly is not None and poly.degree() >= 1:
        exact = [r for r in sp.real_roots(poly.sqf_part()) if _inside(r, lo, hi)]
        if len(exact) != len(found):
            raise Refused(f"{sb} has {len(exact)} real zeros in ({lo}, {hi}), the solver claimed {len(found)}")
        return
    if poly is not None:  # a nonzero constant (sb is not identically 0 on the piece)
        if found:
            raise Refused(f"the constant {sb} has no zeros; the solver claimed {found}")
        return
    ds = sp.diff(s, xr)
    if len(found) <= 1 and (ds.is_nonnegative or ds.is_nonpositive):
        return
    raise Refused(f"cannot prove that {sb} has no zeros in ({lo}, {hi}) other than {found} (the solver's answer is not a proof)")


def branch(e: sp.Expr, x: sp.Symbol, at: sp.Rational) -> sp.Expr:
    """``e`` with every switching head replaced by its branch at the point ``at`` (which lies
    in an open interval free of ``e``'s break points, so the branch holds on all of it)."""
    if e.is_Atom or not e.has(x):
        return e
    args = [branch(a, x, at) if isinstance(a, sp.Expr) else a for a in e.args] if not isinstance(e, sp.Piecewise) else None
    if isinstance(e, (sp.Max, sp.Min)):
        vals = [_num(a, x, at) for a in args]
        if not all(v.is_real for v in vals):
            raise Refused(f"non-real argument of {e} at {at}")
        pick = max if isinstance(e, sp.Max) else min
        best = pick(range(len(args)), key=lambda i: vals[i])
        for i, v in enumerate(vals):  # a tie at a non-break point means the two agree on the piece
            if i != best and abs(v - vals[best]) < _TINY and not _identically_zero(args[i] - args[best]):
                raise Refused(f"cannot order the arguments of {e} at {at}")
        return args[best]
    if isinstance(e, sp.Abs):
        a = args[0]
        s = _sign_at(a, x, at, _identically_zero(a))
        return a if s >= 0 else -a
    if isinstance(e, sp.Piecewise):
        for val, cond in e.args:
            if cond == sp.true:
                return branch(val, x, at)
            holds = _condition_at(cond, x, at)
            if holds:
                return branch(val, x, at)
        raise Refused(f"no branch of {e} holds at {at}")
    if isinstance(e, sp.Pow) and e.args[0] == 0:
        ex = args[1]
        s = _sign_at(ex, x, at, _identically_zero(ex))
        if s < 0:
            raise Refused(f"{e} is infinite near {at}")
        return sp.Integer(0) if s > 0 else sp.Integer(1)
    return e.func(*args)


def _condition_at(cond: sp.Basic, x: sp.Symbol, at: sp.Rational) -> bool:
    """Truth of a Piecewise condition at ``at``, decided from the signs of lhs − rhs there."""
    if cond in (sp.true, sp.false):
        return bool(cond)
    if isinstance(cond, sp.core.relational.Relational):
        d = branch(cond.lhs - cond.rhs, x, at)
        s = _sign_at(d, x, at, _identically_zero(d))
        ops = {sp.core.relational.GreaterThan: s >= 0, sp.core.relational.StrictGreaterThan: s > 0,
               sp.core.relational.LessThan: s <= 0, sp.core.relational.StrictLessThan: s < 0,
               sp.core.relational.Equality: s == 0, sp.core.relational.Unequality: s != 0}
        for typ, val in ops.items():
            if isinstance(cond, typ):
                return bool(val)
        raise Refused(f"relation {cond} not handled")
    if isinstance(cond, sp.And):
        return all(_condition_at(c, x, at) for c in cond.args)
    if isinstance(cond, sp.Or):
        return any(_condition_at(c, x, at) for c in cond.args)
    if isinstance(cond, sp.Not):
        return not _condition_at(cond.args[0], x, at)
    raise Refused(f"condition {cond} not handled")


@functools.lru_cache(maxsize=256)
def pieces(e: sp.Expr, x: sp.Symbol, extra: tuple[sp.Expr, ...] = ()) -> tuple[tuple[sp.Expr, ...], tuple[Piece, ...]]:
    """(break points, pieces) of ``e``; ``extra`` points are added to the break points."""
    pts = _sorted_points(set(break_points(e, x)) | set(extra))
    out = []
    for lo, hi in _intervals(pts):
        at = _sample(lo, hi)
        out.append(Piece(lo, hi, branch(e, x, at), at))
    return tuple(pts), tuple(out)


def exact_value(e: sp.Expr, x: sp.Symbol, at: sp.Expr) -> sp.Expr:
    """``e`` at the exact point ``at`` (sympy's own evaluation: Max(0, 0) = 0, 0**0 = 1)."""
    return e.subs(x, at)


_REWRITES = (
    (sp.erfc, lambda a: 1 - sp.erf(a)),  # erfc = 1 − erf; erf(−u) = −erf(u) is sympy's own
    (sp.tanh, lambda a: 1 - 2 / (1 + sp.exp(2 * a))),
    (sp.sinh, lambda a: (sp.exp(a) - sp.exp(-a)) / 2),
    (sp.cosh, lambda a: (sp.exp(a) + sp.exp(-a)) / 2),
)


def normal_form(e: sp.Expr) -> sp.Expr:
    """``e`` with erfc, tanh, sinh and cosh written by erf and exp (exact identities), so that
    one simplification sees σ(z) − σ(−z) = z when σ mixes erf with erfc, or tanh with a sigmoid."""
    for head, rule in _REWRITES:
        if e.has(head):
            e = e.replace(head, rule)
    return e


def decide_zero(e: sp.Expr) -> bool | None:
    """True/False when ``e`` (a closed-form number or a switch-free formula) is decided to be 0:
    exact simplification, then the same on ``normal_form(e)``, then (for a number) a 60-digit
    value far from 0."""
    s = sp.simplify(e)
    if s == 0:
        return True
    if s.is_Rational:  # (a nonzero rational, however small: 2^-140 is decided, not a digit count)
        return False
    if s.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        return False
    if s.has(*(h for h, _ in _REWRITES)):
        t = sp.simplify(normal_form(s))
        if t == 0:
            return True
        s = t if not t.has(sp.zoo, sp.oo, -sp.oo, sp.nan) else s
    if s.is_number:
        try:
            v = _digits(s)
        except Refused:  # (no correct digit: undecided)
            return None
        if v.is_number and (not v.is_real or abs(v) > _TINY):
            return False
    return None


def pl_lipschitz(e: sp.Expr, x: sp.Symbol) -> sp.Expr | None:
    """L = max |slope| over the pieces, exactly, when σ is continuous and piecewise linear: every
    piece a polynomial of degree ≤ 1 in x with real number coefficients, and at every break point
    both neighbouring pieces' values equal σ's exact value there (decided exactly). Then
    |σ(p) − σ(q)| ≤ L|p − q| for all real p, q. None otherwise (refused, curved, or a jump)."""
    try:
        pts, pcs = pieces(e, x)
        slopes = []
        for pc in pcs:
            poly = sp.Poly(sp.expand(pc.expr), x)
            if poly.degree() > 1 or not all(co.is_number and co.is_real for co in poly.all_coeffs()):
                return None
            slopes.append(abs(poly.coeff_monomial(x)))
        for i, b in enumerate(pts):
            v = exact_value(e, x, b)
            for pc in (pcs[i], pcs[i + 1]):
                if decide_zero(pc.expr.subs(x, b) - v) is not True:
                    return None
    except (Refused, sp.PolynomialError):
        return None
    return max(slopes, default=None)
