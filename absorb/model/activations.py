"""Activation functions: one registry, each entry with a numpy form and a sympy form.

The numpy form evaluates blocks on batches of inputs; the sympy form is what the symbolic
engine (:mod:`absorb.symbolic`) reasons about. Gated names (``swiglu``, ``geglu``, …) map to
their *gate* function g; whether a block is gated is decided by the presence of ``W_gate``.

User-defined activations are expressions in ``x``: ``"expr:x*(1+erf(x/sqrt(2)))/2"``.
They are untrusted input (they come from files): read by a small parser over a whitelisted
grammar, within limits on length, size, depth and the magnitude of constants and exponents
checked before sympy builds anything, and accepted only when proved real and finite at
every real x (that proof runs in a child process under a time and memory budget).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from absorb._errors import InvalidInput

if TYPE_CHECKING:
    import sympy as sp

_EXPR_NAMES = ("MAX_CONSTANT", "MAX_DEPTH", "MAX_EXPONENT", "MAX_LITERAL", "MAX_NODES", "MAX_TEXT", "MAX_VARIABLE_POWERS",
               "VALIDATE_MEMORY", "VALIDATE_SECONDS", "X", "_numpy_form", "_parse_expr", "continuity_issue", "real_finite_issue")


def __getattr__(name: str) -> Any:
    """The expression language and its limits (:mod:`absorb.model._expr`), re-exported here
    and imported on first use: it loads sympy, which a built-in activation does not need."""
    if name in _EXPR_NAMES:
        from absorb.model import _expr

        value = getattr(_expr, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, eq=False, init=False)
class Activation:
    """A scalar activation σ (or gate g), in numpy and in sympy.

    ``name`` is canonical (``gelu_tanh`` for ``gelu_new``); ``gated_name`` is set when the
    user asked for a GLU variant by its gated name (``swiglu``), which requires ``W_gate``.

    ``expr`` may be given as its sympy ``srepr`` string (the built-ins are; ``source`` holds
    what was given): it is then parsed the first time ``expr`` is read, so that a run that
    reads only :attr:`key` (a built-in's properties come from a table keyed by it) does not
    import sympy.

    Invariant (other code relies on it): ``expr`` is real-valued and finite at every real
    x. The built-ins are; :func:`get_activation` refuses an ``expr:`` string unless it is
    proved so (:func:`real_finite_issue`). σ need not be continuous (``0**Max(0, x)`` is a
    step, with ``0**0 = 1``). The numpy form may overflow to ±inf (or nan) for large
    arguments, without warnings.
    """

    name: str
    source: Any  # the sympy expression, or its srepr
    np_fn: Callable[[np.ndarray], np.ndarray]
    gated_name: str | None = None

    def __init__(self, name: str, expr: sp.Expr | str | None = None, np_fn: Callable[[np.ndarray], np.ndarray] | None = None,
                 gated_name: str | None = None, *, source: sp.Expr | str | None = None) -> None:
        # ``source=`` is what dataclasses.replace passes back
        given = expr if expr is not None else source
        if given is None or np_fn is None:
            raise TypeError("Activation needs an expression and a numpy function")
        for k, v in (("name", name), ("source", given), ("np_fn", np_fn), ("gated_name", gated_name)):
            object.__setattr__(self, k, v)

    @property
    def expr(self) -> sp.Expr:
        parsed = self.__dict__.get("_parsed")
        if parsed is None:
            if isinstance(self.source, str):
                import sympy as sp

                parsed = sp.sympify(self.source)
            else:
                parsed = self.source
            object.__setattr__(self, "_parsed", parsed)
        return parsed

    @property
    def latex(self) -> str:
        import sympy as sp

        return sp.latex(self.expr)

    @property
    def key(self) -> str:
        """A string that identifies the function (used for caching proofs): sympy's ``srepr``."""
        if isinstance(self.source, str):
            return self.source
        k = self.__dict__.get("_key")
        if k is None:
            import sympy as sp

            k = sp.srepr(self.source)
            object.__setattr__(self, "_key", k)
        return k

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.np_fn(z)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Activation({self.name!r})"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """1/(1 + e^−z) in numpy, within a few ulp (tests/test_activations.py), without importing
    scipy.special (about 0.5 s) for its ``expit``: e = e^−|z| ∈ (0, 1] never overflows, and
    σ(z) = 1/(1 + e) for z ≥ 0, e/(1 + e) for z < 0. float16/float32 in, float32 out; nan stays nan."""
    z = np.asarray(z)
    if z.dtype.kind != "f" or z.dtype.itemsize < 4:  # (float16 as float32, as expit)
        z = z.astype(np.float32 if z.dtype.kind == "f" else np.float64)
    e = np.exp(-np.abs(z))
    r = np.where(z >= 0, z.dtype.type(1.0), e) / (1.0 + e)
    return r[()] if r.ndim == 0 else r


_ERF_STEP = 128
"""Grid points per unit of :func:`_erf`'s table, on [0, 6]."""
_ERF_TERMS = 8
"""Taylor terms of :func:`_erf` about each grid point."""


@functools.cache
def _erf_table() -> np.ndarray:
    """Row 0: erf(x_j) at x_j = j/128, j = 0..768 (``math.erf``); row k = 1..8: the k-th Taylor
    coefficient there, erf⁽ᵏ⁾(x_j)/k! = (2/√π) e^(−x_j²) (−1)^(k−1) H_(k−1)(x_j)/k! (H the
    physicists' Hermite polynomials, by their recurrence)."""
    x = np.arange(6 * _ERF_STEP + 1) / _ERF_STEP
    table = np.empty((_ERF_TERMS + 1, x.size))
    table[0] = [math.erf(v) for v in x.tolist()]
    g = 2.0 / math.sqrt(math.pi) * np.exp(-x * x)
    h_prev, h = np.zeros_like(x), np.ones_like(x)  # H_(k-2), H_(k-1)
    for k in range(1, _ERF_TERMS + 1):
        table[k] = g * (-1.0) ** (k - 1) * h / math.factorial(k)
        h_prev, h = h, 2.0 * x * h - 2.0 * (k - 1) * h_prev
    return table


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in numpy, within a few ulp of ``math.erf`` (tests/test_activations.py compares them),
    without scipy.special, whose import (about 0.5 s) cost more than all of GELU's evaluations
    in a run (``absorb check`` of a 7B-sized layer evaluates it about 1.6 million times).

    For |x| < 6: the Taylor polynomial of degree 8 about the nearest grid point x_j = j/128
    (:func:`_erf_table`), in t = |x| − x_j (exact, |t| ≤ 1/256; the next term is below 2⁻⁶⁰
    of erf there); for |x| ≥ 6, ±1 (erf(6) = 1 − 2·10⁻¹⁷ rounds to 1); nan stays nan. Odd:
    erf(−x) = −erf(x), −0 included. float16/float32 in, float32 out (as scipy.special.erf).
    The checker trusts a built-in σ to 2⁻⁴⁰(|σ̂(z)| + |z|) + 2⁻¹⁰⁰⁰ (absorb/verify/_weights.py,
    ``SIGMA_ACCURACY``): far more than these few ulp."""
    x = np.asarray(x)
    shape, out = x.shape, np.float32 if x.dtype in (np.float16, np.float32) else np.float64
    x = x.astype(np.float64, copy=False).reshape(-1)
    a = np.abs(x)
    outside = ~(a < 6.0)  # (nan: outside)
    a[outside] = 0.0
    j = (a * _ERF_STEP + 0.5).astype(np.intp)  # the nearest grid point (np.rint is several times slower)
    t = a - j * (1.0 / _ERF_STEP)
    table = _erf_table()
    p = table[_ERF_TERMS].take(j)
    for k in range(_ERF_TERMS - 1, -1, -1):
        p *= t
        p += table[k].take(j)
    if outside.any():
        p[outside] = np.where(np.isnan(x[outside]), np.nan, 1.0)
    r = np.copysign(p, x, out=p).astype(out, copy=False).reshape(shape)
    return r[()] if r.ndim == 0 else r  # (a scalar for a scalar, as a ufunc gives)


def _gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + _erf(z / np.sqrt(2.0)))


def _gelu_tanh(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3)))


def builtin_exprs() -> dict[str, sp.Expr]:
    """The built-ins' sympy forms, as defined (imports sympy). :data:`_BUILTIN` holds their
    ``srepr`` (tests/test_activations.py checks that the two agree)."""
    import sympy as sp

    from absorb.model._expr import X

    leaky_slope = sp.Rational(1, 100)  # PyTorch's default negative_slope
    return {
        "relu": sp.Max(0, X),
        "relu2": sp.Max(0, X) ** 2,
        "gelu": X * (1 + sp.erf(X / sp.sqrt(2))) / 2,
        "gelu_tanh": X * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (X + sp.Rational(44715, 10**6) * X**3))) / 2,
        "silu": X / (1 + sp.exp(-X)),
        "quick_gelu": X / (1 + sp.exp(-sp.Rational(1702, 1000) * X)),
        "leaky_relu": sp.Piecewise((X, X >= 0), (leaky_slope * X, True)),
        "sigmoid": 1 / (1 + sp.exp(-X)),
        "tanh": sp.tanh(X),
        "softplus": sp.log(1 + sp.exp(X)),
        "identity": X,
    }


_X = "Symbol('x', real=True)"
_BUILTIN: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "relu": ('Max(Integer(0), ' + _X + ')',
            lambda z: np.maximum(z, 0.0)),
    "relu2": ('Pow(Max(Integer(0), ' + _X + '), Integer(2))',
             lambda z: np.maximum(z, 0.0) ** 2),
    "gelu": ('Mul(Rational(1, 2), ' + _X + ', Add(erf(Mul(Rational(1, 2), Pow(Integer(2), Rational(1, 2)), ' + _X + ')), Integer(1)))',
            _gelu),
    "gelu_tanh": ('Mul(Rational(1, 2), ' + _X + ', Add(tanh(Mul(Pow(Integer(2), Rational(1, 2)), Pow(pi, Rational(-1, 2)), '
                  'Add(Mul(Rational(8943, 200000), Pow(' + _X + ', Integer(3))), ' + _X + '))), Integer(1)))',
                 _gelu_tanh),
    "silu": ('Mul(' + _X + ', Pow(Add(Integer(1), exp(Mul(Integer(-1), ' + _X + '))), Integer(-1)))',
            lambda z: z * _sigmoid(z)),
    "quick_gelu": ('Mul(' + _X + ', Pow(Add(Integer(1), exp(Mul(Integer(-1), Rational(851, 500), ' + _X + '))), Integer(-1)))',
                  lambda z: z * _sigmoid(1.702 * z)),
    "leaky_relu": ('Piecewise(ExprCondPair(' + _X + ', GreaterThan(' + _X + ', Integer(0))), ExprCondPair(Mul(Rational(1, 100), ' + _X + '), true))',
                  lambda z: np.where(z >= 0, z, 0.01 * z)),
    "sigmoid": ('Pow(Add(Integer(1), exp(Mul(Integer(-1), ' + _X + '))), Integer(-1))',
               _sigmoid),
    "tanh": ('tanh(' + _X + ')',
            np.tanh),
    "softplus": ('log(Add(exp(' + _X + '), Integer(1)))',
                lambda z: np.logaddexp(0.0, z)),
    "identity": (_X,
                lambda z: np.asarray(z, dtype=float).copy()),
}
"""Each built-in: its sympy form as ``srepr`` (parsed when first needed; the readable
definitions are :func:`builtin_exprs`) and its numpy form."""

ALIASES: dict[str, str] = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_erf": "gelu",
    "swish": "silu",
    "squared_relu": "relu2",
    "relu_squared": "relu2",
    "linear": "identity",
    "none": "identity",
}

GATED: dict[str, str] = {
    "reglu": "relu",
    "swiglu": "silu",
    "geglu": "gelu",
    "geglu_tanh": "gelu_tanh",
    "glu": "sigmoid",
    "bilinear": "identity",
}
"""Gated (GLU-family) names and their gate function."""

NAMES: tuple[str, ...] = tuple(sorted({*_BUILTIN, *ALIASES, *GATED}))

@functools.cache
def get_activation(spec: str) -> Activation:
    """Return the activation named ``spec`` (a name, an alias, a gated name, or ``expr:…``).

    >>> get_activation("gelu_new").name
    'gelu_tanh'
    >>> get_activation("swiglu").gated_name
    'swiglu'
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidInput(f"activation {str(spec)[:40]!r} is not a name; try one of: {', '.join(NAMES)} or 'expr:<sympy expression in x>'")
    raw = spec.strip()
    if raw.lower().startswith("expr:"):
        return _user_activation(raw[5:])
    name = raw.lower().replace("-", "_")
    gated_name = None
    if name in GATED:
        gated_name, name = name, GATED[name]
    name = ALIASES.get(name, name)
    if name not in _BUILTIN:
        raise InvalidInput(
            f"unknown activation {spec if len(spec) <= 60 else spec[:40] + '…'!r}; known names: {', '.join(NAMES)}, or 'expr:<sympy expression in x>' "
            "such as 'expr:x*(1+erf(x/sqrt(2)))/2'"
        )
    expr, fn = _BUILTIN[name]
    return Activation(name=name, expr=expr, np_fn=fn, gated_name=gated_name)


_while_validating: list[Callable[[], object]] = []


@contextlib.contextmanager
def while_validating(work: Callable[[], object]) -> Iterator[None]:
    """Inside the block, run ``work`` (once) while a user expression is validated in its child
    process, which first imports sympy (~0.5 s): work the caller needs anyway — ``absorb
    check`` imports the engine there — then overlaps that wait instead of following it. Not
    run when no expression needs a child (a built-in activation, a cached expression): the
    caller does that work itself after the block, as before."""
    _while_validating.append(work)
    try:
        yield
    finally:
        if work in _while_validating:
            _while_validating.remove(work)


def _user_activation(text: str) -> Activation:
    """A user's ``expr:`` activation: parsed and limit-checked here (no sympy), then read from
    the persistent analysis cache (:mod:`absorb._analysis_cache`: its sympy form as srepr,
    evaluated without sympy) or, on a miss, proved real and finite in a budgeted child
    process, which goes on to run the property analyses at once (while this process reads the
    rest of the file and imports the engine) and hands them over when
    :func:`absorb.symbolic.prepare` asks: one child, whose sympy import this process does not pay. Registered with the cache so that prepare reads or stores its properties there."""
    from absorb import _analysis_cache as cache
    from absorb.model._expr_numpy import UnsupportedExpression, numpy_form
    from absorb.model._expr_text import VALIDATE_SECONDS, canonical, parse

    tree = parse(text, check_constants=False)
    canon = canonical(tree)
    entry = cache.read(canon)  # an entry exists only for an expression that passed every check below
    if entry is not None:
        try:
            np_fn = numpy_form(entry["srepr"])
        except UnsupportedExpression:  # not what this code writes: ignored, analysed afresh (and overwritten)
            pass
        else:
            act = Activation(name="expr:" + entry["text"], expr=entry["srepr"], np_fn=np_fn)
            cache.register(act.key, canon, entry["text"], entry)
            return act
    from absorb._sandbox import BudgetExceeded
    from absorb.symbolic import _core

    job = _core.start_analysis(text, tree)  # (its first step: the limits on constants and exponents, in mpmath)
    while _while_validating:
        _while_validating.pop(0)()
    if "'erf" in canon:  # (σ's numpy form will need scipy.special: its import, 0.2 s, overlaps the child's work)
        import scipy.special  # noqa: F401
    try:
        srepr, shown = job.next(VALIDATE_SECONDS)
    except BudgetExceeded as exc:
        from absorb.model._expr_text import VALIDATE_MEMORY

        raise InvalidInput(f"activation expression {text!r}: too large to analyse within {VALIDATE_SECONDS:g} s / "
                           f"{VALIDATE_MEMORY / 2**30:g} GiB ({exc}); write a smaller expression") from None
    try:
        np_fn = numpy_form(srepr) if isinstance(srepr, str) else None
    except UnsupportedExpression:
        np_fn = None
    if np_fn is None:  # a head the evaluator lacks (or a form whose srepr does not read back): sympy's lambdify
        from absorb.model._expr import _numpy_form

        np_fn = _numpy_form(_sympify(srepr) if isinstance(srepr, str) else srepr)
    act = Activation(name=f"expr:{shown}", expr=srepr, np_fn=np_fn)
    cache.register(act.key, canon, shown, None)
    _core.keep_analysis(act.key, job)
    return act


def _sympify(srepr: str) -> sp.Expr:
    import sympy as sp

    return sp.sympify(srepr)


def is_builtin(act: Activation) -> bool:
    """True when ``act`` is one of the registry's own functions (not a user's ``expr:``)."""
    entry = _BUILTIN.get(act.name)
    return entry is not None and entry[0] == act.key


def display_name(act: Activation, *, gated: bool) -> str:
    """The name a report shows: the GLU name for gated blocks (``swiglu``), else σ's name."""
    if not gated:
        return act.name
    if act.gated_name:
        return act.gated_name
    for glu, gate in GATED.items():
        if gate == act.name:
            return glu
    return f"glu[{act.name}]"
