"""Interval enclosures of σ's expression for the checker (mpmath's interval arithmetic, outward rounding), its own walk:
the boundedness check reads them on σ's pieces (finite or not), the parity check at each unit's input (a point).

mpmath's interval exp and atan2 round a point argument's value to nearest, not outwards (exp(5.9·10⁻²¹) = [1, 1] at 53
bits): every transcendental value is widened by 2^(4 − prec) of its size. And its exp of a huge argument costs about as
many bits as the argument's size (e^(2^120) ran out of memory, e^(cosh(cosh 18)) ran for minutes — red team 48a/01–02):
an exponent past ±2^20 is not evaluated (below, the value lies in [0, e^(−2^20)]; above, no enclosure here).
"""

from __future__ import annotations

from typing import Any

import mpmath
import sympy as sp

from absorb.verify._pieces import Refused, _digits

_EXP_ARG = 2**20
"""|exponent| past which exp is not evaluated."""


def _finite_number(v: sp.Expr) -> bool:
    """``v`` is a closed-form real number, finite (every digit correct, or no claim)."""
    if not isinstance(v, sp.Expr) or v.free_symbols or v.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or isinstance(v, sp.Piecewise):
        return False
    try:
        n = _digits(v)  # (every digit correct, or no claim)
    except Refused:
        return False
    return bool(n.is_number and n.is_real and n.is_finite)


def _out(r: Any) -> Any:
    """``r`` widened by 2^(4 − prec) of its size (mpmath's point values are rounded to nearest)."""
    iv = mpmath.iv
    eps = iv.mpf(2) ** (4 - iv.prec)
    return r + abs(r) * iv.mpf([-eps, eps])


def _exp(A: Any) -> Any:
    """e^A, widened, each end from a point: an end below −2^20 (or past 2^20 below an infinite upper end) gives the lower
    end 0, an upper end +∞ gives +∞; a finite upper end past 2^20 raises ArithmeticError (no enclosure computed here)."""
    iv = mpmath.iv
    lo = 0 if not -_EXP_ARG <= A.a <= _EXP_ARG else _out(iv.exp(iv.mpf(A.a))).a
    if mpmath.isinf(A.b):
        return iv.mpf([lo, mpmath.inf])
    if A.b > _EXP_ARG:
        raise ArithmeticError("an exponent past 2^20")
    return iv.mpf([lo, _out(iv.exp(iv.mpf(max(A.b, -_EXP_ARG)))).b])


def _iv(v: sp.Expr) -> Any:
    """A rigorous mpmath interval around the real number ``v``."""
    iv = mpmath.iv
    centre = iv.mpf(str(sp.N(v, 40)))  # the 40-digit decimal, enclosed with outward rounding
    rad = (max(abs(centre.a), abs(centre.b)) * iv.mpf(10) ** -30 + iv.mpf(10) ** -60).b  # ≫ evalf's error
    return centre + iv.mpf([-rad, rad])


_TRIG_ARG = mpmath.mpf(2) ** 4096
"""sin and cos of an argument past this are enclosed by their range."""


def _enclose(e: sp.Expr, x: sp.Symbol, X: Any) -> Any | None:
    """An interval (mpmath ``iv`` at its current precision, outward rounding) that contains ``e`` for every x in the
    interval ``X`` (None when no finite enclosure is found). On a finite argument each head is enclosed tightly (erf,
    erfc, tanh, sinh by monotonicity, erf/erfc at 60 more bits; atan by atan2; each value widened by 2^(4 − prec)); on an unbounded one a
    bounded head by its range. Abs, Max and Min too (σ at a point, for the parity check); rationals exactly."""
    iv = mpmath.iv
    if e == x:
        return X
    if e.is_Rational:
        return iv.mpf(int(e.p)) / int(e.q)
    if not e.has(x):
        return _iv(e) if _finite_number(e) else None
    parts = [_enclose(a, x, X) for a in e.args]
    if any(p is None for p in parts):
        return None
    if isinstance(e, (sp.Add, sp.Mul)):
        acc = parts[0]
        for p in parts[1:]:
            acc = acc + p if isinstance(e, sp.Add) else acc * p
        return acc
    if isinstance(e, sp.Pow):
        B, K = parts
        if e.exp.is_Integer:
            P = B ** abs(int(e.exp))
            return P if int(e.exp) >= 0 else None if P.a <= 0 <= P.b else 1 / P
        if B.a > 0:
            return _exp(K * _out(iv.log(B)))
        if B.a >= 0 and K.a > 0 and _finite_iv(B):  # (y^p on [0, b], p > 0: from 0 to at most b^p)
            return iv.mpf(0) if B.b == 0 else iv.mpf([0, _exp(K * _out(iv.log(B.b))).b])
        return None
    A = parts[0]
    if isinstance(e, sp.exp):
        return _exp(A)
    if isinstance(e, sp.log):
        return _out(iv.log(A)) if A.a > 0 and _finite_iv(A) else None
    if isinstance(e, sp.Abs):
        return abs(A)
    if isinstance(e, (sp.Max, sp.Min)):
        with mpmath.workprec(iv.prec + 8):  # (each end read exactly)
            los, his = [mpmath.mpf(p._mpi_[0]) for p in parts], [mpmath.mpf(p._mpi_[1]) for p in parts]
            return iv.mpf([max(los), max(his)] if isinstance(e, sp.Max) else [min(los), min(his)])
    if not _finite_iv(A):  # (a bounded head on an unbounded argument: its range)
        ranges = {sp.erf: [-1, 1], sp.tanh: [-1, 1], sp.sin: [-1, 1], sp.cos: [-1, 1], sp.erfc: [0, 2], sp.atan: [-2, 2]}
        return iv.mpf(ranges[e.func]) if e.func in ranges else None
    if isinstance(e, (sp.sin, sp.cos)):
        if not max(abs(A.a), abs(A.b)) <= _TRIG_ARG:  # (past it: reducing the argument costs as many bits of π)
            return iv.mpf([-1, 1])
        return _out(iv.sin(A) if isinstance(e, sp.sin) else iv.cos(A))
    if isinstance(e, sp.cosh):
        return (_exp(A) + _exp(-A)) / 2
    if isinstance(e, sp.atan):
        return _out(iv.atan2(A, 1))
    if isinstance(e, (sp.tanh, sp.sinh)):  # (increasing: each end as a point)
        ends = [iv.mpf(p) for p in (A.a, A.b)]
        vals = [1 - 2 / (_exp(2 * v) + 1) if isinstance(e, sp.tanh) else (_exp(v) - _exp(-v)) / 2 for v in ends]
        return iv.mpf([vals[0].a, vals[1].b])
    if isinstance(e, (sp.erf, sp.erfc)):  # (monotone: the ends' values at 60 more bits, widened outwards)
        with mpmath.workprec(iv.prec + 60):
            vals = sorted((mpmath.erf if isinstance(e, sp.erf) else mpmath.erfc)(mpmath.mpf(v)) for v in A._mpi_)
            eps = mpmath.mpf(2) ** (4 - iv.prec)
            return iv.mpf([vals[0] - eps * (abs(vals[0]) + mpmath.mpf(2) ** -2000),
                           vals[1] + eps * (abs(vals[1]) + mpmath.mpf(2) ** -2000)])
    return None


def _finite_iv(A: Any) -> bool:
    return bool(mpmath.isfinite(A.a) and mpmath.isfinite(A.b))


def _bounded_interval(iv: Any) -> bool:
    return iv is not None and mpmath.isfinite(iv.a) and mpmath.isfinite(iv.b)
