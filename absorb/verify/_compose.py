"""The checker's own bound on a composed witness: each block's error, re-derived by its
theorem's check, carried through the Lipschitz constants of the blocks after it.

A theorem check that proves ``|f(x) − g(x)|_∞ ≤ a·|x|_∞ + e`` for every x for the witness g it
rebuilt records ``(a, e)`` with :func:`prove`. For a stack F = f_L ∘ … ∘ f_1 with witnesses
G = g_L ∘ … ∘ g_1, write D_k = |F_k(x) − G_k(x)|_∞ and Y_k = |F_k(x)|_∞ (F_k the first k blocks).
Then

    D_k ≤ |f_k(F_{k−1}x) − g_k(F_{k−1}x)| + |g_k(F_{k−1}x) − g_k(G_{k−1}x)| ≤ a_k·Y_{k−1} + e_k + Lip(g_k)·D_{k−1},
    Y_k ≤ Lip(f_k)·Y_{k−1} + |f_k(0)|_∞,

so D_L ≤ α|x|_∞ + β with α, β computed here in exact rationals from rigorous float upper
bounds of each Lip and |f_k(0)|; the stack's guarantee is ε = max(α, β / s) with s a
rigorous lower bound of the stack's own |F(0)|_∞ ≥ |f_L(0)|_∞ − Lip(f_L)·|F_{L−1}(0)|_∞ (ε = α when β = 0).
"""

from __future__ import annotations

import math
import weakref
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._at_zero import _f0_lower, _hidden_at_zero
from absorb.verify._numerics import _U, _gamma, rounding_allowance
from absorb.verify._weights import _float_up

_PROVED: weakref.WeakKeyDictionary[Block, tuple[float, float]] = weakref.WeakKeyDictionary()
"""Witness blocks rebuilt by a theorem check → (a, e) re-derived there."""

LIPSCHITZ = {"relu": 1.0, "leaky_relu": 1.0, "identity": 1.0, "tanh": 1.0, "softplus": 1.0, "sigmoid": 0.25,
             "gelu": 1.13, "gelu_tanh": 1.13, "silu": 1.1, "quick_gelu": 1.1}
"""sup |σ′| over the reals of the registry's activations, rounded up (GELU 1.1290, its tanh form
1.1300 at most, SiLU and quick-GELU (SiLU at 1.702z, scaled) 1.0998, sigmoid 1/4, the others 1)."""


def prove(wb: Block, a: float, e: float) -> None:
    """Record that ``|f(x) − wb(x)|_∞ ≤ a·|x|_∞ + e`` for every x was re-derived here."""
    _PROVED[wb] = (float(a), float(e))


def proved(wb: Block | None) -> tuple[float, float] | None:
    return None if wb is None else _PROVED.get(wb)


def _lipschitz(block: Block) -> float:
    """A rigorous float upper bound of the ∞-norm Lipschitz constant of the block:
    ‖M‖_∞ + L_σ·max_j Σ_i |W_down[j, i]|·Σ_k |W_up[i, k]|, all terms nonnegative (each float sum
    within γ of its exact value, plus 2⁻¹⁰⁰⁰ for underflow). inf for gated blocks and σ not in
    :data:`LIPSCHITZ` (a user's continuous piecewise-linear σ: its exact max |slope|, by pieces)."""
    from absorb.model.activations import is_builtin
    from absorb.verify._symbolic import _sigma_lipschitz

    L = LIPSCHITZ.get(block.activation.name) if is_builtin(block.activation) else _sigma_lipschitz(block)
    if L is None or block.gated:
        return math.inf
    with np.errstate(all="ignore"):
        per_unit = np.abs(block.W_up.astype(np.float64)).sum(axis=1)
        hidden = np.abs(block.W_down.astype(np.float64)) @ per_unit
        skip = np.abs(np.asarray(block.M, dtype=np.float64)).sum(axis=1)
        top = float(np.max(skip + L * hidden, initial=0.0))
    if not math.isfinite(top):
        return math.inf
    return top * (1 + _gamma(block.n + block.d + 6)) + 2.0**-1000


def _zero_hidden_at_zero(block: Block) -> bool:
    """The hidden layer is exactly 0 at x = 0: no value bias and h(0) = 0 (gated: g(b_gate) ⊙ h(0); h(z) = z without a value
    activation), or no bias and σ(0) = 0."""
    if block.b_up is not None and np.any(block.b_up):
        return False
    if block.gated and block.value_activation is None:
        return True
    expr = (block.value_activation if block.gated else block.activation).expr
    syms = sorted(expr.free_symbols, key=str)
    return bool(sp.simplify(expr.subs(syms[0], 0) if syms else expr) == 0)


def _f0_bounds(block: Block) -> tuple[float, float]:
    """Rigorous floats lo ≤ |f(0)|_∞ ≤ hi (lo 0, hi inf where σ's accuracy is not known)."""
    bd = np.zeros(block.d) if block.b_down is None else np.abs(np.asarray(block.b_down, dtype=np.float64))
    if _zero_hidden_at_zero(block):
        v = float(bd.max(initial=0.0))
        return v, v
    got = _hidden_at_zero(block)
    if got is None:
        return 0.0, math.inf
    h, e = got
    D = np.abs(block.W_down.astype(np.float64))
    with np.errstate(all="ignore"):
        # |f(0)_j| ≤ Σ_i |D_ji|(|h_i| + e_i) + |b_j|: nonnegative terms, one γ for the sum
        hi = float(np.max(D @ (np.abs(h) + e) + bd, initial=0.0)) * (1 + _gamma(block.n + 4)) * (1 + 4 * _U)
    return _f0_lower(block, got), (hi if math.isfinite(hi) else math.inf)  # (the hidden layer at 0 read once)


def _f0_of_stack(fs: list[Block]) -> float:
    """A rigorous lower bound of |F(0)|_∞ (0 where none is known): ŷ_k = f_k(ŷ_{k−1}) in float64 from ŷ_0 = 0 as
    the hidden layer at 0 of f_k with b_up moved by W_up ŷ (:func:`absorb.verify._at_zero._hidden_at_zero`), with
    an error bound carried through σ's Lipschitz constant (the moved bias's rounding) and f_k's (the error before)."""
    from absorb.verify._symbolic import _sigma_lipschitz

    y, err = np.zeros(fs[0].d), 0.0
    for f in fs:
        L = _sigma_lipschitz(f)  # (the built-ins' table, else a piecewise-linear σ's exact constant)
        lf = _lipschitz(f)
        if f.gated or L is None or not math.isfinite(lf):
            return 0.0
        U, D, M = (np.asarray(a, dtype=np.float64) for a in (f.W_up, f.W_down, f.M))
        bu = np.zeros(f.n) if f.b_up is None else np.asarray(f.b_up, dtype=np.float64)
        bd = np.zeros(f.d) if f.b_down is None else np.asarray(f.b_down, dtype=np.float64)
        with np.errstate(all="ignore"):
            z, c = U @ y + bu, M @ y + bd
            ez = _gamma(f.d + 2) * (np.abs(U) @ np.abs(y) + np.abs(bu))
            ec = _gamma(f.d + 2) * (np.abs(M) @ np.abs(y) + np.abs(bd))
        got = _hidden_at_zero(f.replace(b_up=z))
        if got is None:
            return 0.0
        h, e = got
        with np.errstate(all="ignore"):
            yn = D @ h + c
            bound = (_gamma(f.n + 4) * (np.abs(D) @ np.abs(h) + np.abs(c)) + np.abs(D) @ (e + L * ez) + ec) * (1 + _gamma(f.n + 6))
            err = float(np.max(bound, initial=0.0)) + lf * err * (1 + 4 * _U)
        y = yn
        if not (math.isfinite(err) and np.all(np.isfinite(y))):
            return 0.0
    lo = (float(np.max(np.abs(y), initial=0.0)) - err * (1 + 8 * _U)) * (1 - 8 * _U)
    return lo if lo > 0 else 0.0


def composed_epsilon(fs: list[Block], gs: list[Block], bounds: list[tuple[float, float]]) -> tuple[float, str]:
    """ε with |F(x) − G(x)|_∞ ≤ ε·(|F(x)|_∞ + |x|_∞ + |F(0)|_∞) for every x (the module
    docstring), and how; inf with the reason when a Lipschitz constant or |f_k(0)| is unknown."""
    Y = (Fraction(1), Fraction(0))  # Y_k ≤ Y[0]·|x| + Y[1]
    Dk = (Fraction(0), Fraction(0))  # D_k ≤ Dk[0]·|x| + Dk[1]
    last = Fraction(0)
    for k, (f, g, (a, e)) in enumerate(zip(fs, gs, bounds)):
        lg = _lipschitz(g) if k else 0.0
        lf = _lipschitz(f)
        lo, c = _f0_bounds(f)
        if not all(math.isfinite(v) for v in (lg, lf, c, a, e)):
            return math.inf, f"layer {k}: no rigorous Lipschitz constant or |f(0)| bound (gated, or σ without a stated constant)"
        A, E, LG, LF, C = (Fraction(v) for v in (a, e, lg, lf, c))
        Dk = (LG * Dk[0] + A * Y[0], LG * Dk[1] + A * Y[1] + E)
        # |F(0)| = |f_L(y_{L−1}(0))| ≥ |f_L(0)| − Lip(f_L)·|y_{L−1}(0)|, |y_{L−1}(0)| ≤ Y[1] (before this layer)
        last = Fraction(lo) - LF * Y[1]
        Y = (LF * Y[0], LF * Y[1] + C)
    alpha, beta = Dk
    if beta == 0:
        return _float_up(alpha), f"|F − G|∞ ≤ {float(alpha):.3g}·|x|∞"
    s = max(float(last) * (1 - 4 * _U) if last > 0 else 0.0, _f0_of_stack(fs))
    if not s > 0:
        return math.inf, f"a constant error {float(beta):.3g} and no provably nonzero |F(0)|∞ to state it against"
    return _float_up(max(alpha, beta / Fraction(s))), f"|F − G|∞ ≤ {float(alpha):.3g}·|x|∞ + {float(beta):.3g}, s ≥ {s:.3g}"


def check_composition(ctx: Any, w: str, blocks: list[Block], witnesses: list[Block]) -> None:
    """The composed witnesses are within the tolerance of F, by the bound of the module
    docstring; not re-checked (reported so) when a layer's witness error was not re-derived."""
    from absorb.verify._report import _require

    bounds = [proved(g) for g in witnesses]
    missing = [k for k, b in enumerate(bounds) if b is None]
    if missing:
        ctx.report.unchecked(w, "the composed witnesses are within the tolerance of F (a proved bound)",
                             f"layers {missing}: no rigorous error bound re-derived for their witnesses")
        return
    eps, how = composed_epsilon(blocks, witnesses, bounds)  # type: ignore[arg-type]
    allowance = rounding_allowance(max(b.n for b in blocks))
    _require(ctx, eps <= ctx.tol + allowance, w,
             f"the composed witnesses are within τ + {allowance:.2g} of F: |F − G|∞ ≤ ε·(|F(x)|∞ + |x|∞ + |F(0)|∞), "
             "each layer's re-derived error carried through the Lipschitz constants of the later layers (exact rationals)",
             f"ε ≤ {eps:.3g} ({how})")
