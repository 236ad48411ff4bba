"""The checker's own bound K of f's size for the degree-2 routes' distance bar (degree-2 skeleton,
ReLU² plus a linear term, ReLU-like gates), re-derived from the weights and σ here.

A flip (or rescaling) g of these routes leaves f − g = E(x) + R x + δ (E quadratic, δ free). At ±tv one
side has |f − g|∞ ≥ t|Rv|∞; with |f(x) − f(0)|∞ ≤ L|x|∞ + Q|x|²∞ and F0 ≥ |f(0)|∞ the ratio to
|f(x)|∞ + |x|∞ + |f(0)|∞ is ≥ ρ∞/(1 + L + 2√(2·F0·Q)) at t = √(2F0/Q) (ρ∞/(1 + L₀) as t → 0 where
f(0) = 0, L₀ the gain of f's derivative at 0). As t → ∞ it tends to |E(v)|∞/|f₂(v)|∞ with
|f₂(v)|∞ ≤ Q∞|v|²∞, and some |v|∞ = 1 has |E(v)|∞ ≥ ‖E‖_F/d. So an index set past the distance
√d·ε·(1 + K)/‖M‖_F with K = K_L + √d·Q∞ has one of the two parts outside the tolerance.
``None`` with the reason where this checker derives no such bound for σ.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.verify._numerics import _gamma

_PRODUCT_WORK = 1 << 26
"""d²·n up to this: L₀ from the matrix M + W_down diag(s) W_up itself; beyond, from row sums of magnitudes."""
_KINKS = (sp.Max, sp.Min, sp.Abs, sp.Piecewise, sp.Heaviside, sp.sign, sp.floor, sp.ceiling, sp.frac, sp.DiracDelta,
          sp.re, sp.im, sp.arg, sp.Mod)


def _raise(x: float, k: int) -> float:
    return x * (1 + _gamma(k)) * (1 + 2.0**-40) if math.isfinite(x) else math.inf


def _row_gain(M: np.ndarray, U: np.ndarray, D: np.ndarray, s: np.ndarray) -> float:
    """≥ max_r Σ_j |(M + Σ_i s_i D[:, i] U[i])_rj|."""
    d, n = D.shape
    with np.errstate(all="ignore"):
        mag = np.abs(D) @ (np.abs(s) * np.sum(np.abs(U), axis=1))
        rough = _raise(float(np.max(np.sum(np.abs(M), axis=1) + mag)), n + d + 2)
        if d * d * n > _PRODUCT_WORK:
            return rough
        P = M + np.einsum("ri,ij->rj", D * s[None, :], U)
        err = _gamma(n + 3) * (np.abs(M) + np.einsum("ri,ij->rj", np.abs(D) * np.abs(s)[None, :], np.abs(U)))
        fine = _raise(float(np.max(np.sum(np.abs(P) + err, axis=1))), d + 1)
    return min(rough, fine)


def _pair(KL: float, Qinf: float, d: int, why: str) -> tuple[float | None, float | None, str]:
    """(K = K_L + √d·Q∞, K_L, ""), each raised by 2⁻⁴⁰; (None, None, why) where either is not finite."""
    K = (KL + math.sqrt(d) * Qinf) * (1 + 2.0**-40)
    if math.isfinite(K):
        return K, KL * (1 + 2.0**-40), ""
    return None, None, why


def _value_at_zero(expr: sp.Expr, order: int) -> float | None:
    """|σ^(order)(0)| raised past a 40-digit evaluation (0 where sympy proves it 0); None where σ has a kink-type
    function (order 1) or the value is not a proved finite real."""
    x = sorted(expr.free_symbols, key=str)
    try:
        if order and any(isinstance(a, _KINKS) for a in sp.preorder_traversal(expr)):
            return None
        e = sp.diff(expr, x[0]) if (order and x) else (sp.Integer(0) if order else expr)
        v = sp.sympify(e.subs(x[0], 0) if x else e)
        if v.is_zero:
            return 0.0
        if not (v.is_real and v.is_finite):
            return None
        got = abs(float(sp.N(v, 40, strict=True)))
    except Exception:  # noqa: BLE001 - no bound from sympy
        return None
    return got * (1 + 1e-15) + 1e-300 if math.isfinite(got) else None


def ungated_gain(block: Any, form: tuple[Fraction, Fraction] | None) -> tuple[float | None, float | None, str]:
    """(K, K_L, why): ``form`` (α, β) checked by the caller as σ(z) = α·ReLU(z)² + β·z for every real z
    (σ'(c) = 2α·max(c, 0) + β; the Taylor remainder between 0 and α·z²); without it, a bias-free f only,
    with σ(0) = 0 and σ'(0) from sympy's exact derivative of a σ without kink-type functions."""
    U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down))
    M = np.asarray(block.M, dtype=np.float64)
    d, n = D.shape
    c = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    bd = np.zeros(d) if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)
    with np.errstate(all="ignore"):
        Qinf = _raise(float(np.max(np.abs(D) @ np.sum(np.abs(U), axis=1) ** 2)), n + d + 2)
    if form is None:
        best = math.inf
        sq = _square(block.activation.expr)
        if sq is not None:  # σ = h² + k, h Lh-Lipschitz: |σ(c + z) − σ(c)| ≤ |h(c + z) − h(c)|·|h(c + z) + h(c)|
            Lh, h0, k = sq
            with np.errstate(all="ignore"):
                hc = (h0 + Lh * np.abs(c)) * (1 + 2.0**-40)
                L = _raise(float(np.max(np.sum(np.abs(M), axis=1) + np.abs(D) @ (2 * Lh * hc * np.sum(np.abs(U), axis=1)))), n + d + 4)
                F0 = _raise(float(np.max(np.abs(D) @ (hc * hc + k) + np.abs(bd))), n + 4)
                best = L + 2 * math.sqrt(2 * F0 * Lh * Lh * Qinf)
        if not (np.any(c != 0) or np.any(bd != 0)):
            s0, s1 = _value_at_zero(block.activation.expr, 0), _value_at_zero(block.activation.expr, 1)
            if s0 == 0.0 and s1 is not None:
                best = min(best, _row_gain(M, U, D, np.full(n, s1)))
        return _pair(best, Qinf, d, "this checker bounds |f(x) − f(0)| for σ = α·ReLU² + β·z, "
                                                        "σ = h² with a built-in h, or bias-free f with σ(0) = 0 and σ'(0) only")
    a, b = float(form[0]), float(form[1])
    with np.errstate(all="ignore"):
        cp = np.maximum(c, 0.0)
        F0 = _raise(float(np.max(np.abs(D) @ (abs(a) * cp * cp + abs(b) * np.abs(c)) + np.abs(bd))), n + 5)
        L = _row_gain(M, U, D, 2 * a * cp + b)
        K = L + (2 * math.sqrt(2 * F0 * abs(a) * Qinf) if F0 > 0 else 0.0)
    return _pair(K, Qinf, d, "f's size overflows")


def gated_gain(block: Any, lip: float | None) -> tuple[float | None, float | None, str]:
    """(K, K_L, why) for a ReLU-like gate σ_g with Lipschitz constant ``lip`` and the identity value branch:
    unit i changes from x = 0 by at most lip·|g_i·x|·(|e_i| + |u_i·x|) + |σ_g(c_i)|·|u_i·x|, with
    |σ_g(c_i)| ≤ |σ_g(0)| + lip·|c_i|; bias-free, f's derivative at 0 is M + σ_g(0)·W_down W_up."""
    if lip is None:
        return None, None, "this checker has no Lipschitz constant for the gate"
    g0 = _value_at_zero(block.activation.expr, 0)
    if g0 is None:
        return None, None, "σ_g(0) is not established here"
    G, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    M = np.asarray(block.M, dtype=np.float64)
    d, n = D.shape
    c = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
    e = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    bd = np.zeros(d) if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)
    with np.errstate(all="ignore"):
        gn, un = np.sum(np.abs(G), axis=1), np.sum(np.abs(U), axis=1)
        Qinf = _raise(float(np.max(np.abs(D) @ (gn * un))), n + d + 2)
        if not (np.any(c != 0) or np.any(e != 0) or np.any(bd != 0)):
            K = _row_gain(M, U, D, np.full(n, g0))
        else:
            sg = (g0 + lip * np.abs(c)) * (1 + 2.0**-40)
            L = _raise(float(np.max(np.sum(np.abs(M), axis=1) + np.abs(D) @ (lip * gn * np.abs(e) + sg * un))), n + d + 4)
            F0 = _raise(float(np.max(np.abs(D) @ (sg * np.abs(e)) + np.abs(bd))), n + 4)
            K = L + 2 * math.sqrt(2 * F0 * lip * Qinf)
    return _pair(K, 2 * Qinf, d, "f's size overflows")  # (the (Qg) columns: 2·sym(g_i u_iᵀ), twice E)


def _square(expr: sp.Expr) -> tuple[float, float, float] | None:
    """(Lh, |h(0)|, |k|) where σ ≡ h² + k on R for a built-in h of this checker's Lipschitz table and the constant
    k = σ(0) − h(0)² (by pieces); else None."""
    from absorb.model.activations import get_activation
    from absorb.verify._compose import LIPSCHITZ
    from absorb.verify._symbolic import _same_function, _variable

    x = _variable(expr)
    for name in sorted(LIPSCHITZ):
        h = get_activation(name).expr
        try:
            k = sp.sympify(expr.subs(x, 0) - h.subs(_variable(h), 0) ** 2)
            if _same_function(expr, h**2 + k):
                h0, kk = _value_at_zero(h, 0), _value_at_zero(k, 0)
                if h0 is not None and kk is not None:
                    return LIPSCHITZ[name], h0, kk
        except Exception:  # noqa: BLE001 - not recognised
            continue
    return None
