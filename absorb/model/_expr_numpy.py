"""The numpy form of a user expression, read from its sympy ``srepr`` text without sympy.

A small evaluator over the expression tree: ``srepr`` text is Python call syntax
(``Mul(Rational(1, 2), Symbol('x', real=True), …)``), read with :mod:`ast` (never ``eval``)
over a whitelist of heads, each mapped to a numpy function. scipy is imported only when the
expression uses a function numpy lacks (``erf``, ``erfc``: scipy.special, as the built-in
GELU uses). A run whose expression was analysed before reads the ``srepr`` from the
persistent analysis cache and so evaluates σ without importing sympy or scipy.

Overflow inside the expression (``exp(x)`` for x > 709 in ``log(1 + exp(x))``, ``inf/inf`` in
``x*exp(x)/(1 + exp(x))``, ``cosh`` in ``log(cosh(x))``) is not the end: each entry whose float64
value is ±inf or nan at a finite argument is evaluated again in mpmath (128 bits, binary
exponents up to 2^40, :func:`_mp_compile`) and rounded to float64, so σ is finite where its
value is within float64 range. An entry mpmath cannot evaluate either (a value out of float64
range, a complex or undefined value, an intermediate past :data:`_MP_MAX_MAG`), or past
:data:`_MP_MAX_ENTRIES` entries per call, or after :data:`_MP_PROBE` entries that all failed,
keeps its ±inf or nan: never a guess, so a check that reads it fails. No warning or error
either way, as for every activation's numpy form.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["UnsupportedExpression", "numpy_form"]

Fn = Callable[[np.ndarray], Any]


class UnsupportedExpression(ValueError):
    """The ``srepr`` text uses a head the evaluator does not know (the caller falls back to
    sympy's lambdify, or, for a cache entry, ignores the entry)."""


def _scipy(name: str) -> Callable[[Any], Any]:
    def f(v: Any) -> Any:
        from scipy import special  # only for what numpy lacks (0.5 s of imports)

        return getattr(special, name)(v)

    return f


def _math(name: str) -> Callable[[Any], Any]:
    import math

    ufunc = np.frompyfunc(getattr(math, name), 1, 1)
    return lambda v: np.asarray(ufunc(v), dtype=float)


_UNARY: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "atan": np.arctan,
    "sin": np.sin, "cos": np.cos, "Abs": np.abs, "erf": _scipy("erf"), "erfc": _scipy("erfc"),
}
_UNARY_MATH = {**_UNARY, "erf": _math("erf"), "erfc": _math("erfc")}
"""The same with Python's math.erf/erfc, one element at a time: for a few points (the
validation's cross-check), where importing scipy would cost more than the evaluation."""
_CONSTANTS = {"pi": np.pi, "E": np.e, "Zero": 0.0, "One": 1.0, "NegativeOne": -1.0, "Half": 0.5}


def _number(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand)
    raise UnsupportedExpression("a number argument that is not an integer literal")


def _compile(node: ast.expr, unary: dict[str, Callable[[Any], Any]]) -> Fn | float:
    """A numpy function of z, or a float for a constant sub-expression (folded once)."""
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return float(_CONSTANTS[node.id])
        raise UnsupportedExpression(f"the name {node.id!r}")
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise UnsupportedExpression(f"the syntax {type(node).__name__}")
    head = node.func.id
    if head == "Symbol":
        if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "x":
            return lambda z: z
        raise UnsupportedExpression("a symbol other than x")
    if node.keywords:
        raise UnsupportedExpression(f"keyword arguments of {head}")
    if head == "Integer" and len(node.args) == 1:
        return float(_number(node.args[0]))
    if head == "Rational" and len(node.args) == 2:
        return float(Fraction(_number(node.args[0]), _number(node.args[1])))
    args = [_compile(a, unary) for a in node.args]
    if head in unary and len(args) == 1:
        return _apply(unary[head], args)
    if head == "Add" and args:
        return _apply(lambda *v: sum(v[1:], v[0]), args)
    if head == "Mul" and args:
        def prod(*v: Any) -> Any:
            out = v[0]
            for w in v[1:]:
                out = out * w
            return out
        return _apply(prod, args)
    if head in ("Max", "Min") and args:
        op = np.maximum if head == "Max" else np.minimum
        def reduce(*v: Any) -> Any:
            out = v[0]
            for w in v[1:]:
                out = op(out, w)
            return out
        return _apply(reduce, args)
    if head == "Pow" and len(args) == 2:
        e = args[1]
        if e == -1:
            return _apply(lambda b: 1.0 / b, args[:1])
        if e == 0.5:
            return _apply(np.sqrt, args[:1])
        return _apply(lambda b, k: np.power(b, k), args)
    raise UnsupportedExpression(f"the head {head}")


def _apply(fn: Callable[..., Any], args: list[Fn | float]) -> Fn | float:
    if all(isinstance(a, float) for a in args):
        with np.errstate(all="ignore"):
            return float(fn(*(np.float64(a) for a in args)))
    parts = [(a if callable(a) else (lambda z, c=a: c)) for a in args]
    return lambda z: fn(*(p(z) for p in parts))


_MP_MAX_ENTRIES = 4096
"""Most overflowed entries per call evaluated again in mpmath (about 50–100 µs each; the rest
keep ±inf or nan)."""
_MP_PROBE = 64
"""When none of the first this many entries evaluated again is finite, the call's other
entries are not tried (they keep ±inf or nan)."""
_MP_PREC = 128
_MP_MAX_MAG = 2**40
"""Largest binary exponent (in magnitude) an mpmath intermediate may reach; past it the entry
is given up (exp of exp of a large x would otherwise take without bound)."""


_MP_TRIG_MAG = 4096
"""Largest binary exponent of a sin or cos argument evaluated in mpmath (past it the entry is given up, and the producer's
interval enclosure, :func:`absorb.model._expr._enclose`, takes their range [−1, 1])."""


class _GiveUp(Exception):
    pass


def _mp_compile(node: ast.expr) -> Callable[[Any], Any]:
    """σ as a function of one mpmath number, from the same tree as :func:`_compile` (the same
    heads; rationals exact). Raises :class:`_GiveUp` where a value is not a finite real within
    :data:`_MP_MAX_MAG`."""
    import mpmath as mp

    def real(v: Any) -> Any:
        if not isinstance(v, mp.mpf) or not mp.isfinite(v) or (v != 0 and abs(int(mp.mag(v))) > _MP_MAX_MAG):
            raise _GiveUp
        return v

    def bounded(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def f(v: Any) -> Any:  # exp, sinh, cosh past 2^40 exceed the exponent bound anyway
            if not abs(v) <= _MP_MAX_MAG:
                raise _GiveUp
            return real(fn(v))
        return f

    def periodic(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def f(v: Any) -> Any:  # (reducing an argument of 2^m costs m more bits of π: 10 s at cos(exp(10⁶)), hours past it)
            if v != 0 and int(mp.mag(v)) > _MP_TRIG_MAG:
                raise _GiveUp
            return fn(v)
        return f

    unary = {"exp": bounded(mp.exp), "log": mp.log, "tanh": mp.tanh, "sinh": bounded(mp.sinh), "cosh": bounded(mp.cosh),
             "atan": mp.atan, "sin": periodic(mp.sin), "cos": periodic(mp.cos), "Abs": mp.fabs, "erf": mp.erf,
             "erfc": mp.erfc}
    consts = {"pi": lambda: +mp.pi, "E": lambda: +mp.e, "Zero": lambda: mp.mpf(0), "One": lambda: mp.mpf(1),
              "NegativeOne": lambda: mp.mpf(-1), "Half": lambda: mp.mpf(1) / 2}

    def power(b: Any, k: Any) -> Any:
        if b != 0 and abs(int(mp.mag(b))) * max(1.0, abs(float(k))) > _MP_MAX_MAG:
            raise _GiveUp
        if b == 0 and k < 0:
            raise _GiveUp
        return b**k

    def build(node: ast.expr) -> Callable[[Any], Any]:
        if isinstance(node, ast.Name):
            c = consts[node.id]
            return lambda z: c()
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        head = node.func.id
        if head == "Symbol":
            return lambda z: z
        if head == "Integer":
            n = _number(node.args[0])
            return lambda z: mp.mpf(n)
        if head == "Rational":
            p, q = _number(node.args[0]), _number(node.args[1])
            return lambda z: mp.mpf(p) / q
        args = [build(a) for a in node.args]
        if head in unary:
            f, (a,) = unary[head], args
            return lambda z: real(f(a(z)))
        if head == "Add":
            return lambda z: real(mp.fsum(a(z) for a in args))
        if head == "Mul":
            return lambda z: real(mp.fprod(a(z) for a in args))
        if head in ("Max", "Min"):
            op = max if head == "Max" else min
            return lambda z: op(a(z) for a in args)
        if head == "Pow":
            b, k = args
            return lambda z: real(power(b(z), k(z)))
        raise _GiveUp  # (the numpy compile accepted only the heads above)

    return build(node)


def _mp_again(fn: Callable[[Any], Any], z: np.ndarray) -> np.ndarray:
    """fn at each entry of the float array z, rounded to float64; nan where mpmath gives up."""
    import mpmath as mp

    out = np.full(z.shape, np.nan)
    found = False
    with mp.workprec(_MP_PREC):
        for i, v in enumerate(z.tolist()):
            if i >= _MP_PROBE and not found:
                break  # the first entries all overflow in mpmath too (exp(x) past 709): so do the rest, most likely
            try:
                r = float(fn(mp.mpf(v)))
            except (_GiveUp, ArithmeticError, ValueError, TypeError, OverflowError):
                continue
            out[i] = r
            found = found or math.isfinite(r)
    return out


def numpy_form(srepr: str, *, few_points: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """The numpy function (float64 in, float64 out, same shape; long double in, long double out — its constants
    float64 — for an estimate of σ's own rounding) of the expression whose sympy
    ``srepr`` is ``srepr``; :class:`UnsupportedExpression` when it uses a head not known here.
    ``few_points``: erf/erfc from Python's math module instead of scipy (slow per point, but
    no scipy import): for a check at a handful of points, never for σ's numpy form."""
    try:
        tree = ast.parse(srepr, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsupportedExpression(f"not srepr text ({type(exc).__name__})") from None
    try:
        fn = _compile(tree, _UNARY_MATH if few_points else _UNARY)
    except (RecursionError, OverflowError, ZeroDivisionError) as exc:
        raise UnsupportedExpression(f"cannot compile ({type(exc).__name__})") from None

    mp_fn: list[Callable[[Any], Any]] = []

    def np_fn(z: np.ndarray) -> np.ndarray:
        z = np.asarray(z)
        z = z if z.dtype == np.longdouble else z.astype(float)  # (extended precision kept: an estimate of the rounding)
        with np.errstate(all="ignore"):
            v = fn(z) if callable(fn) else fn
            out = np.broadcast_to(np.asarray(v, dtype=z.dtype), np.shape(z)).copy()
            bad = ~np.isfinite(out) & np.isfinite(z)
        if bad.any() and callable(fn):
            idx = np.flatnonzero(bad)[:_MP_MAX_ENTRIES]  # (past it: the entries keep ±inf or nan)
            if not mp_fn:
                mp_fn.append(_mp_compile(tree))
            again = _mp_again(mp_fn[0], z.reshape(-1)[idx])
            keep = np.isfinite(again)
            flat = out.reshape(-1)
            flat[idx[keep]] = again[keep]
        return out

    return np_fn


def precise_form(srepr: str, bits: int = _MP_PREC) -> Callable[[np.ndarray], np.ndarray]:
    """The expression whose sympy ``srepr`` is ``srepr`` evaluated in mpmath (``bits`` bits) at every entry of
    a float array, rounded to float64: slow (about 50–100 µs an entry), for a few thousand points where
    float64 evaluation may lose every digit (cosh(x)**2 − sinh(x)**2 at x = 30); nan where mpmath gives
    up too. :class:`UnsupportedExpression` when it uses a head not known here."""
    try:
        fn = _mp_compile(ast.parse(srepr, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _GiveUp) as exc:
        raise UnsupportedExpression(f"cannot compile for mpmath ({type(exc).__name__})") from None

    def mp_fn(z: np.ndarray) -> np.ndarray:
        import mpmath as mp

        flat = np.asarray(z, dtype=float).reshape(-1)
        out = np.full(flat.shape, np.nan)
        with mp.workprec(bits):
            for i, v in enumerate(flat.tolist()):
                try:
                    out[i] = float(fn(mp.mpf(v)))
                except (_GiveUp, ArithmeticError, ValueError, TypeError, OverflowError):
                    continue
        return out.reshape(np.shape(z))

    return mp_fn
