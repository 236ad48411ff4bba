"""The hidden layer of a block at x = 0, enclosed (the checker's own evaluation of σ there), and
the rigorous lower bound of |f(0)|_∞ built on it: the scale a witness's constant error is measured
against."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._numerics import _U, _gamma

SIGMA_ACCURACY = 2.0**-40
"""A built-in σ's numpy value is trusted to 2⁻⁴⁰(|σ̂(z)| + |z|) + 2⁻¹⁰⁰⁰ where its formula cancels at negative z
(``_CANCELLING``: 1 + erf, 1 + tanh), else to 2⁻⁴⁰|σ̂(z)| + 2⁻¹⁰⁰⁰ (max, square, ×z: exact or one rounding; sigmoid,
softplus, tanh from e^−|z| ≤ 1 without cancellation; tests/test_activations.py checks it at 60 digits)."""
_CANCELLING = frozenset({"gelu", "gelu_tanh"})
SYMPY_POINTS = 256
"""A user's σ is evaluated in sympy (40 digits) at most at this many biases."""


def _hidden_at_zero(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """The hidden layer at x = 0 and a bound on its error, or None (a user's σ at more than SYMPY_POINTS biases)."""
    from absorb.model.activations import is_builtin

    n = block.n
    z = np.zeros(n) if (block.b_gate if block.gated else block.b_up) is None else np.asarray(block.b_gate if block.gated else block.b_up)
    if is_builtin(block.activation):
        with np.errstate(all="ignore"):
            h = np.asarray(block.activation(z), dtype=np.float64)
        e = SIGMA_ACCURACY * (np.abs(h) + (np.abs(z) if block.activation.name in _CANCELLING else 0)) + 2.0**-1000
    elif n <= SYMPY_POINTS:
        x = sorted(block.activation.expr.free_symbols, key=str)
        sym = x[0] if x else sp.Symbol("x")
        vals = []
        for v in z.tolist():
            r = sp.N(block.activation.expr.subs(sym, sp.Rational(v)), 40)
            if not (r.is_real and r.is_finite):
                return None
            vals.append(float(r))
        h = np.array(vals)
        e = 2.0**-50 * np.abs(h) + 2.0**-1000
    else:
        return None
    if block.gated:  # g(b_gate) ⊙ h(b_up), h's values enclosed as σ's are (the ungated block with activation h)
        v, ev = (np.zeros(n) if block.b_up is None else block.b_up), 0.0
        from absorb.verify._weights import _value_expr  # (the checker's one reading of "h is not the identity")

        if _value_expr(block) is not None:
            got = _hidden_at_zero(block.replace(W_gate=None, b_gate=None, activation=block.value_activation, value_activation=None, b_up=v))
            if got is None:
                return None
            v, ev = got
        return h * v, e * np.abs(v) + (np.abs(h) + e) * ev + 4 * _U * np.abs(h * v)
    return h, e


def _f0_lower(block: Block, got: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """A rigorous lower bound of |f(0)|_∞ (0 where none is known): max_j |y_j| less its error bound, y the float64 value."""
    got = _hidden_at_zero(block) if got is None else got  # (or the hidden layer at 0 and its error, read by the caller)
    if got is None:
        return 0.0
    h, e = got
    bd = np.zeros(block.d) if block.b_down is None else block.b_down
    D = block.W_down.astype(np.float64)
    with np.errstate(all="ignore"):
        y = D @ h + bd
        err = (_gamma(block.n + 4) * (np.abs(D) @ np.abs(h) + np.abs(bd)) + np.abs(D) @ e) * (1 + _gamma(block.n + 4))
        lo = float((np.abs(y) - err * (1 + 4 * _U)).max(initial=0.0)) * (1 - 4 * _U)
    return lo if math.isfinite(lo) and lo > 0 else 0.0
