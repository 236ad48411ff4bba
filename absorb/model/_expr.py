"""User-defined activations (``expr:…``): untrusted text read into a sympy expression.

A small recursive-descent parser over a whitelisted grammar, limits on length, size, depth
and the magnitude of constants and exponents checked before sympy builds anything, and the
proof that the expression is real and finite at every real x (run in a child process under a
time and memory budget by :func:`_parse_expr`). :mod:`absorb.model.activations` is the
registry that uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from absorb._errors import InvalidInput
from absorb.model._expr_numpy import _MP_TRIG_MAG  # (sin and cos past 2^this: their range, not evaluated)

X = sp.Symbol("x", real=True)
"""The variable every sympy form is written in."""


# The parser and the limits are in absorb.model._expr_text (no sympy); re-exported here.
from absorb.model._expr_text import (  # noqa: E402, F401 - re-exported: the expression language in one place
    _FUNC_LIST,
    _GRAMMAR_HINT,
    MAX_CONSTANT,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_LITERAL,
    MAX_NODES,
    MAX_TEXT,
    MAX_VARIABLE_POWERS,
    VALIDATE_MEMORY,
    VALIDATE_SECONDS,
    _check_limits,
    _Parser,
    _tokens,
    parse,
)

_UNARY_FUNCS: dict[str, object] = {
    "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "erf": sp.erf, "erfc": sp.erfc, "tanh": sp.tanh,
    "sinh": sp.sinh, "cosh": sp.cosh, "atan": sp.atan, "sin": sp.sin, "cos": sp.cos, "Abs": sp.Abs, "abs": sp.Abs,
}
_VARIADIC_FUNCS: dict[str, object] = {"Max": sp.Max, "max": sp.Max, "Min": sp.Min, "min": sp.Min}
_CONSTANTS: dict[str, object] = {"pi": sp.pi, "E": sp.E}


def _build(tree: tuple, check: Callable[[sp.Expr], None] | None = None) -> sp.Expr:
    """The sympy expression of a parsed (and limit-checked) tree; ``check`` sees every node as it is built, before
    its parent is (:func:`_certify`)."""
    kind = tree[0]
    if kind == "num":
        return sp.Rational(tree[1].numerator, tree[1].denominator)
    if kind == "x":
        return X
    if kind == "const":
        out = _CONSTANTS[tree[1]]
    elif kind == "call":
        f = _UNARY_FUNCS.get(tree[1]) or _VARIADIC_FUNCS[tree[1]]
        out = f(*(_build(a, check) for a in tree[2]))
    elif kind == "neg":
        out = -_build(tree[1], check)
    else:
        a, b = _build(tree[1], check), _build(tree[2], check)
        out = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b, "pow": lambda: a**b}[kind]()
    if check is not None:
        check(out)
    return out


# ----- constants with a certified sign ---------------------------------------------------
_CERTIFY_DIGITS = (60, 600)
"""Working precisions of the interval enclosures of constants (:func:`_certify`): the second only where the first fails."""


class _NoEnclosure(Exception):
    pass


def _enclose(e: sp.Expr, iv: Any, mp: Any, at: Any = None) -> Any:
    """An interval (mpmath ``iv``, outward rounding) holding the constant ``e`` — or, with ``at`` (an interval), every
    value of ``e`` at the points of ``at`` — ; _NoEnclosure for a head it does not know. erf and erfc (which mpmath's
    interval context cannot evaluate) by monotonicity, their ends at 40 more bits widened by 2^−(prec − 8); atan by atan2;
    tanh, sinh, cosh through exp; a power with a positive exponent of a base ≥ 0 that may be 0 by its upper end."""
    if e.is_Symbol:
        if at is None:
            raise _NoEnclosure
        return at
    if e.is_Rational:
        return iv.mpf(int(e.p)) / int(e.q)
    if e is sp.pi:
        return _wide(iv.pi, iv)
    if e is sp.E:
        return _wide(iv.e, iv)
    args = [_enclose(a, iv, mp, at) for a in e.args]
    if e.is_Add:
        return sum(args[1:], args[0])
    if e.is_Mul:
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if e.is_Pow:
        base, ex = args
        if e.exp.is_Integer:
            return base ** int(e.exp)
        if base.a > 0:
            return _exp(ex * _wide(iv.log(base), iv), iv)
        if base.a == 0 and ex.a > 0:  # (x^p for x in [0, b], p > 0: between 0 and b^p's enclosure)
            return iv.mpf(0) if base.b == 0 else iv.mpf([0, _exp(ex * _wide(iv.log(iv.mpf(base.b)), iv), iv).b])
        raise _NoEnclosure
    head = type(e)
    if head is sp.exp:
        return _exp(args[0], iv)
    if head in (sp.sin, sp.cos) and not max(abs(args[0].a), abs(args[0].b)) <= mp.ldexp(1, _MP_TRIG_MAG):
        return iv.mpf([-1, 1])  # (their range: reducing an argument past 2^4096 costs as many bits of π, minutes past 2^10⁶)
    if head in (sp.log, sp.sin, sp.cos):
        return _wide(getattr(iv, head.__name__)(args[0]), iv)
    if head is sp.atan:
        return _wide(iv.atan2(args[0], 1), iv)
    if head is sp.tanh:
        return 1 - 2 / (_exp(2 * args[0], iv) + 1)
    if head in (sp.sinh, sp.cosh):
        u, w = _exp(args[0], iv), _exp(-args[0], iv)
        return (u - w) / 2 if head is sp.sinh else (u + w) / 2
    if head in (sp.erf, sp.erfc):
        with mp.workprec(iv.prec + 40):  # (the ends read exactly, the values and their widening at 40 more bits: red team
            lo, hi = (mp.mpf(v) for v in args[0]._mpi_)  # 47a/01 — read at mp's 53 bits they lost what the slack covers)
            ends = sorted([mp.erf(lo), mp.erf(hi)] if head is sp.erf else [mp.erfc(lo), mp.erfc(hi)])
            slack = mp.mpf(2) ** (8 - iv.prec)
            wide = [ends[0] - slack * (1 + abs(ends[0])), ends[1] + slack * (1 + abs(ends[1]))]
            return iv.mpf(wide)  # (rounded outwards to iv's precision)
    if head is sp.Abs:
        return abs(args[0])
    if head in (sp.Max, sp.Min):
        pick = max if head is sp.Max else min
        with mp.workprec(iv.prec + 8):  # (each end read exactly)
            return iv.mpf([pick(mp.mpf(a._mpi_[0]) for a in args), pick(mp.mpf(a._mpi_[1]) for a in args)])
    raise _NoEnclosure


def _wide(r: Any, iv: Any) -> Any:
    """``r`` widened by 2^(4 − prec) of its size: mpmath's interval exp and atan2 return a point argument's value rounded
    to nearest, not outwards (exp(5.9·10⁻²¹) = [1, 1] at 53 bits; found by red team 47a); every transcendental value is
    widened so."""
    eps = iv.mpf(2) ** (4 - iv.prec)
    return r + abs(r) * iv.mpf([-eps, eps])


_EXP_ARG = 2**20
"""|exponent| past which exp is not evaluated: mpmath's exp costs about as many bits as the argument's size (e^(2^120) ran
out of memory in the parity point's enclosure, red team 48a/01)."""


def _exp(a: Any, iv: Any) -> Any:
    """e^a, widened (:func:`_wide`); below −2^20 the value lies in [0, e^max(a.b, −2^20)]; past 2^20: _NoEnclosure."""
    if not a.b <= _EXP_ARG:
        raise _NoEnclosure
    if a.a < -_EXP_ARG:
        return iv.mpf([0, _wide(iv.exp(iv.mpf(max(a.b, -_EXP_ARG))), iv).b])
    return _wide(iv.exp(a), iv)


def _certify(text: str) -> Callable[[sp.Expr], None]:
    """The check :func:`_build` applies to each node: a constant node (no x: a constant of the text, or one sympy folded
    out of x, as in atan(2 + 0·x)) and the constant part of a sum or product in x must have a sign certified by interval
    arithmetic (60 digits, then 600), unless they are rationals. sympy gives such a constant a sign from evaluations that
    do not track lost digits — erf(10²⁰·(atan 2 + atan 3 − 3π/4)) is exactly 0 and was read as negative, so
    Max(0, x) + x·exp(ζx⁶⁴) (= ReLU + x) got ReLU's slopes and x + 0**(x² + |ζ|) was built as x."""
    import mpmath

    def one(c: sp.Expr) -> None:
        if c.is_Rational or c.free_symbols:
            return
        for digits in _CERTIFY_DIGITS:
            iv, saved = mpmath.iv, mpmath.iv.dps
            iv.dps = digits
            try:
                box = _enclose(c, iv, mpmath.mp)
            except (_NoEnclosure, ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
                box = None
            finally:
                iv.dps = saved
            if box is not None:
                lo, hi = (mpmath.mpf(v) for v in box._mpi_)
                if lo > 0 or hi < 0 or lo == hi == 0:
                    return
        far = "" if box is None else f" is within {mpmath.nstr(max(-lo, hi), 2)} of 0 and its sign"
        raise InvalidInput(f"activation expression {text!r}: the constant {c}{far or ' has a sign that'} is not certified at "
                           f"{_CERTIFY_DIGITS[-1]} digits; write it exactly (0 if it is 0) or remove it")

    def check(e: sp.Expr) -> None:
        if not e.free_symbols:
            one(e)
        elif e.is_Add or e.is_Mul:
            one(e.as_independent(X, as_Add=e.is_Add)[0])

    return check


def enclose_at(expr: sp.Expr, lo: np.ndarray, hi: np.ndarray, digits: int = 30) -> tuple[np.ndarray, np.ndarray] | None:
    """Float64 arrays [a_i, b_i] holding ``expr``'s every value on [lo_i, hi_i] (interval arithmetic at ``digits``
    digits, outward rounding, each end rounded outward to float64); None where an enclosure is not finite or a head
    has none (:func:`_enclose`)."""
    import math

    import mpmath

    iv, saved = mpmath.iv, mpmath.iv.dps
    iv.dps = digits
    out_lo, out_hi = np.empty(len(lo)), np.empty(len(lo))
    memo: dict[tuple[float, float], tuple[float, float]] = {}
    try:
        for i, (a, b) in enumerate(zip(np.asarray(lo, dtype=np.float64).tolist(), np.asarray(hi, dtype=np.float64).tolist())):
            got = memo.get((a, b))
            if got is None:
                box = _enclose(expr, iv, mpmath.mp, iv.mpf([a, b]))
                ends = [float(mpmath.mpf(v)) for v in box._mpi_]
                if not all(math.isfinite(v) for v in ends):
                    return None
                got = memo[(a, b)] = (math.nextafter(ends[0], -math.inf), math.nextafter(ends[1], math.inf))
            out_lo[i], out_hi[i] = got
    except (_NoEnclosure, ValueError, ZeroDivisionError, OverflowError, ArithmeticError, TypeError, MemoryError):
        return None
    finally:
        iv.dps = saved
    return out_lo, out_hi


# ----- real and finite on all of R -------------------------------------------------------
_ENTIRE = (sp.exp, sp.erf, sp.erfc, sp.tanh, sp.sinh, sp.cosh, sp.atan, sp.sin, sp.cos, sp.Abs, sp.Max, sp.Min)
"""Heads that are real and finite wherever their arguments are (and continuous)."""


def _interval(e: sp.Expr) -> tuple[float, float]:
    """A closed enclosure [lo, hi] (floats, ±inf allowed) of e(x) over all real x, rounded
    outwards; (-inf, inf) when nothing better is known. Only used to prove signs."""
    import math

    inf = math.inf
    full = (-inf, inf)

    def down(v: float) -> float:
        return v if math.isinf(v) else math.nextafter(math.nextafter(v, -inf), -inf)

    def up(v: float) -> float:
        return v if math.isinf(v) else math.nextafter(math.nextafter(v, inf), inf)

    def mono(f: Callable[[float], float], lo: float, hi: float, inc: bool = True) -> tuple[float, float]:
        try:
            a, b = f(lo), f(hi)
        except (OverflowError, ValueError):
            return full
        a, b = (a, b) if inc else (b, a)
        return down(a), up(b)

    def go(e: sp.Expr) -> tuple[float, float]:
        if e == X:
            return full
        if e.is_number:
            try:
                v = float(e)
            except (TypeError, ValueError, OverflowError):
                return full
            return (down(v), up(v)) if math.isfinite(v) else full
        args = [go(a) for a in e.args]
        if isinstance(e, sp.Add):
            # fsum is correctly rounded, so two ulps outwards enclose the exact sum
            lo = math.fsum(a[0] for a in args) if not any(a[0] == -inf for a in args) else -inf
            hi = math.fsum(a[1] for a in args) if not any(a[1] == inf for a in args) else inf
            return down(lo), up(hi)
        if isinstance(e, sp.Mul):
            lo, hi = 1.0, 1.0
            for a in args:
                cands = []
                for p in (lo * a[0] if not _zero_inf(lo, a[0]) else 0.0, lo * a[1] if not _zero_inf(lo, a[1]) else 0.0,
                          hi * a[0] if not _zero_inf(hi, a[0]) else 0.0, hi * a[1] if not _zero_inf(hi, a[1]) else 0.0):
                    cands.append(p)
                if any(math.isnan(c) for c in cands):
                    return full
                lo, hi = down(min(cands)), up(max(cands))
            return lo, hi
        if isinstance(e, sp.exp):
            return mono(lambda v: math.exp(v) if v < 700 else inf, *args[0])
        if isinstance(e, sp.tanh):
            return mono(math.tanh, *args[0])
        if isinstance(e, sp.sinh):
            return mono(lambda v: math.sinh(v) if abs(v) < 700 else math.copysign(inf, v), *args[0])
        if isinstance(e, sp.atan):
            return mono(math.atan, *args[0])
        if isinstance(e, sp.erf):
            return mono(math.erf, *args[0])
        if isinstance(e, sp.erfc):
            return mono(math.erfc, *args[0], inc=False)
        if isinstance(e, (sp.sin, sp.cos)):
            return (-1.0, 1.0)
        if isinstance(e, sp.cosh):
            lo, hi = args[0]
            m = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
            try:
                return down(math.cosh(m)), up(math.cosh(max(abs(lo), abs(hi))))
            except OverflowError:
                return down(math.cosh(m)) if m < 700 else 1.0, inf
        if isinstance(e, sp.Abs):
            lo, hi = args[0]
            return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
        if isinstance(e, sp.Max):
            return max(a[0] for a in args), max(a[1] for a in args)
        if isinstance(e, sp.Min):
            return min(a[0] for a in args), min(a[1] for a in args)
        if isinstance(e, sp.Pow) and e.exp.is_Integer and e.exp > 0:
            lo, hi = args[0]
            n = int(e.exp)
            try:
                cands = [lo**n, hi**n] + ([0.0] if lo <= 0 <= hi else [])
            except OverflowError:
                return full
            if n % 2 == 0:
                cands = [abs(c) for c in cands]
            return down(min(cands)), up(max(cands))
        return full

    return go(e)


def _zero_inf(a: float, b: float) -> bool:
    import math
    return (a == 0 and math.isinf(b)) or (b == 0 and math.isinf(a))


def _positive(e: sp.Expr) -> bool:
    return e.is_positive is True or _interval(e)[0] > 0


def _nonnegative(e: sp.Expr) -> bool:
    return e.is_nonnegative is True or _interval(e)[0] >= 0


def _nonzero(e: sp.Expr) -> bool:
    if e.is_zero is False or e.is_positive is True or e.is_negative is True:
        return True
    lo, hi = _interval(e)
    return lo > 0 or hi < 0


_HINT_DIV = "divide only by what cannot vanish, e.g. x/(1+exp(-x)) or 1/(1+x**2)"
_HINT_LOG = "take log only of what is positive, e.g. log(1+exp(x)) or log(1+x**2)"
_HINT_POW = "take fractional powers only of what is nonnegative, e.g. Abs(x)**(1/2), Max(0,x)**(3/2) or sqrt(1+x**2)"


def real_finite_issue(e: sp.Expr) -> tuple[str, str] | None:
    """None when e(x) is proved real and finite for every real x; else (what is not
    proved, what to write instead).

    Structural and conservative: e must be built from numbers, x, +, ·, the functions of
    the grammar, logarithms of expressions proved positive and powers whose base is
    proved nonzero (negative integer exponent), nonnegative (positive fractional exponent,
    or an exponent with x that is itself nonnegative) or positive (any other exponent).
    Signs are proved by sympy's assumptions or by interval arithmetic over R."""

    def show(a: sp.Expr) -> str:
        return str(a) if len(str(a)) <= 40 else str(a)[:37] + "…"

    def go(e: sp.Expr) -> tuple[str, str] | None:
        if e == X or isinstance(e, sp.NumberSymbol):
            return None
        if e.is_Number:
            ok = (e.is_Rational or e.is_Float) and e.is_finite
            return None if ok else (f"it contains {e}, which is not a finite real number", "write a finite expression")
        if isinstance(e, (sp.Add, sp.Mul)) or isinstance(e, _ENTIRE):
            for a in e.args:
                why = go(a)
                if why:
                    return why
            return None
        if isinstance(e, sp.Piecewise):  # built-ins only (leaky_relu): every branch finite on all of R
            for branch, _cond in e.args:
                why = go(branch)
                if why:
                    return why
            return None
        if isinstance(e, sp.log):
            (a,) = e.args
            if go(a) or _positive(a):
                return go(a)
            return f"log({show(a)}) needs {show(a)} > 0 for every real x, which could not be proved", _HINT_LOG
        if isinstance(e, sp.Pow):
            b, k = e.args
            why = go(b) or go(k)
            if why:
                return why
            if k.is_Integer:
                if k >= 0 or _nonzero(b):
                    return None
                return f"{show(e)} divides by {show(b)}, which could not be proved nonzero for every real x", _HINT_DIV
            if k.is_number:
                if k.is_real is not True:
                    return f"the exponent {show(k)} is not real", "write a real exponent"
                if (k.is_positive and _nonnegative(b)) or _positive(b):
                    return None
                sign = "≥" if k.is_positive else ">"
                return f"{show(e)} needs {show(b)} {sign} 0 for every real x, which could not be proved", _HINT_POW
            if _positive(b) or (_nonnegative(b) and _nonnegative(k)):
                return None
            return (f"{show(e)} needs {show(b)} > 0, or {show(b)} ≥ 0 and {show(k)} ≥ 0, for every real x, which could not "
                    "be proved", "raise to a power with x in it only a positive base, or 0 to a nonnegative power as in 0**Max(0,x)")
        return f"{type(e).__name__} is not a function absorb can analyse", _GRAMMAR_HINT

    return go(e)


def continuity_issue(e: sp.Expr) -> str | None:
    """None when e (real and finite on R, see :func:`real_finite_issue`) is proved
    continuous on R; else the sub-expression that may jump.

    Every head of the grammar is continuous where :func:`real_finite_issue` lets it be
    used, except a power with x in the exponent and a base that may vanish (``0**Max(0, x)``
    is a step) and a Piecewise (not analysed)."""
    if (e.is_Pow and not e.exp.is_number and not _positive(e.base)) or isinstance(e, sp.Piecewise):
        return str(e)
    for a in e.args:
        why = continuity_issue(a)
        if why:
            return why
    return None


def _validate(text: str, tree: tuple) -> sp.Expr:
    """Build the expression and prove it real and finite on R (run in a child process)."""
    try:
        return _validate_unguarded(text, tree)
    except (InvalidInput, MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors on odd input: refuse it, in one line
        raise InvalidInput(f"activation expression {text!r} could not be analysed (sympy: {type(exc).__name__}); "
                           "write it more simply") from None


def _validate_unguarded(text: str, tree: tuple) -> sp.Expr:
    expr = _build(tree, _certify(text))
    if not isinstance(expr, sp.Expr) or expr.free_symbols - {X}:
        raise InvalidInput(f"activation expression {text!r} must be an expression in x alone")
    if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
        raise InvalidInput(f"activation expression {text!r} is not finite (it simplifies to {expr}); "
                           "write an expression that is a finite real number for every real x")
    for pw in expr.atoms(sp.Pow):
        if pw.exp.is_Rational and pw.exp.q > MAX_EXPONENT:
            raise InvalidInput(f"activation expression {text!r}: exponent {pw.exp} has a denominator larger than {MAX_EXPONENT}; "
                               "too large to analyse")
    issue = real_finite_issue(expr)
    if not issue:  # the expression as written: sympy's automatic evaluation may have cancelled an undefined
        with sp.evaluate(False):  # piece (exp(log(x)) -> x, x/x -> 1, log(x) - log(x) -> 0)
            written = _build(tree)
        issue = real_finite_issue(written)
    if issue:
        why, hint = issue
        raise InvalidInput(f"activation expression {text!r} is not proved real and finite for every real x: {why}; {hint}")
    # A cross-check of the proof above in floating point (overflow to ±inf is allowed, nan is not).
    z = np.array([0.0, 0.5, -0.5, 1.0, -1.0])
    v = _numpy_form(expr, few_points=True)(z)
    if np.isnan(v).any():
        x0 = z[np.isnan(v)][0]
        raise InvalidInput(f"activation expression {text!r} evaluates to nan at x = {x0:g}; "
                           "write an expression that is a finite real number for every real x")
    return expr


def _numpy_form(expr: sp.Expr, *, few_points: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """The numpy function of a (validated) user expression: the tree evaluator of
    :mod:`absorb.model._expr_numpy` (no scipy unless erf/erfc appear; none at all with
    ``few_points``, for a check at a handful of points), or sympy's lambdify for a head that
    evaluator does not know."""
    from absorb.model._expr_numpy import UnsupportedExpression, numpy_form

    try:
        return numpy_form(sp.srepr(expr), few_points=few_points)
    except UnsupportedExpression:
        pass
    from scipy import special

    fn = sp.lambdify(X, expr, modules=[{"erf": special.erf, "erfc": special.erfc, "Max": np.maximum, "Min": np.minimum}, "numpy"])

    def np_fn(z: np.ndarray) -> np.ndarray:
        # overflow (exp of a large argument, say) gives inf or nan, never a warning or an error
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(fn(np.asarray(z, dtype=float)), dtype=float), np.shape(z)).copy()

    return np_fn


def _parse_expr(text: str) -> sp.Expr:
    """Parse a user expression in ``x`` within the limits above and prove it real and finite
    for every real x (in a child process with a time and memory budget); InvalidInput else."""
    from absorb._sandbox import BudgetExceeded, run_limited

    tree = parse(text)
    try:
        return run_limited(_validate, text, tree, timeout=VALIDATE_SECONDS, memory=VALIDATE_MEMORY)
    except BudgetExceeded as exc:
        raise InvalidInput(f"activation expression {text!r}: too large to analyse within {VALIDATE_SECONDS:g} s / "
                           f"{VALIDATE_MEMORY / 2**30:g} GiB ({exc}); write a smaller expression") from None
