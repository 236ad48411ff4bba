"""Facts about the activation σ, re-derived with sympy."""

from __future__ import annotations

import functools

import sympy as sp

_P = sp.Symbol("p", positive=True)
_T = sp.Symbol("t", positive=True)


def _variable(expr: sp.Expr) -> sp.Symbol:
    syms = sorted(expr.free_symbols, key=str)
    return syms[0] if syms else sp.Symbol("x", real=True)


def _zero(e: sp.Expr) -> bool | None:
    """True/False when sympy decides e = 0; None when it cannot."""
    s = sp.simplify(e)
    if s == 0:
        return True
    if s.is_zero is not None:
        return bool(s.is_zero)
    if s.is_number:
        val = sp.N(s, 40)
        if val.is_number and abs(val) > sp.Float(10) ** -20:
            return False
    return None


def homogeneous_of_degree(expr: sp.Expr, k: sp.Rational) -> bool:
    """σ(tx) = t^k σ(x) for all t > 0, x ∈ R — on the cases x = p, −p, 0 (p > 0)."""
    x = _variable(expr)
    if _zero(expr.subs(x, 0)) is not True:
        return False
    return all(_zero(expr.subs(x, s * _T * _P) - _T**k * expr.subs(x, s * _P)) is True for s in (1, -1))


@functools.lru_cache(maxsize=128)
def _gate_derivative_at_zero(expr: sp.Expr) -> sp.Expr | None:
    """g'(0) when g(0) = 0 and g is differentiable at 0 (equal finite one-sided quotients)."""
    x = _variable(expr)
    if _zero(expr.subs(x, 0)) is not True:
        return None
    try:
        right = sp.limit(sp.simplify(expr.subs(x, _P) / _P), _P, 0, "+")
        left = sp.limit(sp.simplify(expr.subs(x, -_P) / (-_P)), _P, 0, "+")
    except Exception:  # sympy's limit raises assorted errors on hard input
        return None
    if not (right.is_finite and left.is_finite) or _zero(right - left) is not True:
        return None
    return sp.simplify(right)


@functools.lru_cache(maxsize=128)
def flip_constant(expr: sp.Expr, gated: bool) -> sp.Expr | None:
    """c with σ(z) − σ(−z) = c z for all z (ungated) or g(z) + g(−z) = c (gated); None if none.

    On z = p > 0 sympy must reduce the left side to a nonzero constant (times p); z = −p is
    the same identity multiplied by −1 (both sides are odd in z, resp. even), z = 0 is trivial.
    """
    x = _variable(expr)
    if gated:
        c = sp.simplify(expr.subs(x, _P) + expr.subs(x, -_P))
    else:
        c = sp.simplify((expr.subs(x, _P) - expr.subs(x, -_P)) / _P)
    if c.free_symbols or _zero(c) is not False:
        return None
    return c


@functools.lru_cache(maxsize=128)
def is_bounded(expr: sp.Expr) -> bool:
    """σ continuous on R with finite limits at ±∞ (hence bounded)."""
    x = _variable(expr)
    try:
        hi = sp.limit(expr.subs(x, _P), _P, sp.oo)
        lo = sp.limit(expr.subs(x, -_P), _P, sp.oo)
        cont = sp.calculus.util.continuous_domain(expr, x, sp.S.Reals)
    except Exception:  # sympy raises assorted errors on hard input
        return False
    return bool(hi.is_finite and lo.is_finite and cont == sp.S.Reals)


def _same_function(a: sp.Expr, b: sp.Expr) -> bool:
    xa, xb = _variable(a), _variable(b)
    return all(_zero(a.subs(xa, v) - b.subs(xb, v)) is True for v in (_P, -_P, sp.Integer(0)))


@functools.lru_cache(maxsize=128)
def is_relu_or_gelu(expr: sp.Expr) -> bool:
    """σ is ReLU or GELU (erf form): result 5's necessity is the paper's for these only."""
    y = sp.Symbol("y", real=True)
    refs = (sp.Max(0, y), y * (1 + sp.erf(y / sp.sqrt(2))) / 2)
    return any(_same_function(expr, r) for r in refs)


def is_identity(expr: sp.Expr) -> bool:
    return _zero(expr - _variable(expr)) is True

