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

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

from absorb._errors import InvalidInput
from absorb.model._expr import (  # noqa: F401 - the expression language and its limits, re-exported here
    MAX_CONSTANT,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_LITERAL,
    MAX_NODES,
    MAX_TEXT,
    MAX_VARIABLE_POWERS,
    VALIDATE_MEMORY,
    VALIDATE_SECONDS,
    X,
    _numpy_form,
    _parse_expr,
    continuity_issue,
    real_finite_issue,
)

_HALF = sp.Rational(1, 2)


@dataclass(frozen=True, eq=False)
class Activation:
    """A scalar activation σ (or gate g), in numpy and in sympy.

    ``name`` is canonical (``gelu_tanh`` for ``gelu_new``); ``gated_name`` is set when the
    user asked for a GLU variant by its gated name (``swiglu``), which requires ``W_gate``.

    Invariant (other code relies on it): ``expr`` is real-valued and finite at every real
    x. The built-ins are; :func:`get_activation` refuses an ``expr:`` string unless it is
    proved so (:func:`real_finite_issue`). σ need not be continuous (``0**Max(0, x)`` is a
    step, with ``0**0 = 1``). The numpy form may overflow to ±inf (or nan) for large
    arguments, without warnings.
    """

    name: str
    expr: sp.Expr
    np_fn: Callable[[np.ndarray], np.ndarray]
    gated_name: str | None = None

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.np_fn(z)

    @property
    def latex(self) -> str:
        return sp.latex(self.expr)

    @property
    def key(self) -> str:
        """A string that identifies the function (used for caching proofs)."""
        return sp.srepr(self.expr)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Activation({self.name!r})"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    from scipy import special  # imported when σ is first evaluated (not on every start: 0.1 s)

    return special.expit(z)


def _gelu(z: np.ndarray) -> np.ndarray:
    from scipy import special

    return 0.5 * z * (1.0 + special.erf(z / np.sqrt(2.0)))


def _gelu_tanh(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3)))


_LEAKY_SLOPE = sp.Rational(1, 100)  # PyTorch's default negative_slope

_BUILTIN: dict[str, tuple[sp.Expr, Callable[[np.ndarray], np.ndarray]]] = {
    "relu": (sp.Max(0, X), lambda z: np.maximum(z, 0.0)),
    "relu2": (sp.Max(0, X) ** 2, lambda z: np.maximum(z, 0.0) ** 2),
    "gelu": (X * (1 + sp.erf(X / sp.sqrt(2))) / 2, _gelu),
    "gelu_tanh": (
        X * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (X + sp.Rational(44715, 10**6) * X**3))) / 2,
        _gelu_tanh,
    ),
    "silu": (X / (1 + sp.exp(-X)), lambda z: z * _sigmoid(z)),
    "quick_gelu": (X / (1 + sp.exp(-sp.Rational(1702, 1000) * X)), lambda z: z * _sigmoid(1.702 * z)),
    "leaky_relu": (
        sp.Piecewise((X, X >= 0), (_LEAKY_SLOPE * X, True)),
        lambda z: np.where(z >= 0, z, 0.01 * z),
    ),
    "sigmoid": (1 / (1 + sp.exp(-X)), _sigmoid),
    "tanh": (sp.tanh(X), np.tanh),
    "softplus": (sp.log(1 + sp.exp(X)), lambda z: np.logaddexp(0.0, z)),
    "identity": (X, lambda z: np.asarray(z, dtype=float).copy()),
}

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
        raise InvalidInput(f"activation {spec!r} is not a name; try one of: {', '.join(NAMES)} or 'expr:<sympy expression in x>'")
    raw = spec.strip()
    if raw.lower().startswith("expr:"):
        expr = _parse_expr(raw[5:])
        return Activation(name=f"expr:{expr}", expr=expr, np_fn=_numpy_form(expr))
    name = raw.lower().replace("-", "_")
    gated_name = None
    if name in GATED:
        gated_name, name = name, GATED[name]
    name = ALIASES.get(name, name)
    if name not in _BUILTIN:
        raise InvalidInput(
            f"unknown activation {spec!r}; known names: {', '.join(NAMES)}, or 'expr:<sympy expression in x>' "
            "such as 'expr:x*(1+erf(x/sqrt(2)))/2'"
        )
    expr, fn = _BUILTIN[name]
    return Activation(name=name, expr=expr, np_fn=fn, gated_name=gated_name)


def is_builtin(act: Activation) -> bool:
    """True when ``act`` is one of the registry's own functions (not a user's ``expr:``)."""
    entry = _BUILTIN.get(act.name)
    return entry is not None and entry[0] == act.expr


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
