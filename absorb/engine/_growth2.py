"""f's gain K for the distance bar of the degree-2 routes (degree-2 skeleton, ReLU² plus a linear term,
ReLU-like gates; docs/user-guide.md, "Tolerances").

The candidates of these routes (a flip of S, or a rescaling μ) differ from f by a polynomial of degree
≤ 2: f − g = E(x) + R x + δ, with E the quadratic residual ((Q) or (Qg)), R the linear one ((L) or (Lg))
and δ free (b'_down). The tolerance measures it against |f(x)|∞ + |x|∞ + |f(0)|∞. Two directions of
proof, both against bounds on f alone:

* **the linear part**: p(tv) − p(−tv) = 2tRv, so one of ±tv has |f − g| ≥ t|Rv|∞; with
  |f(x) − f(0)|∞ ≤ L|x|∞ + Q|x|²∞ and F0 ≥ |f(0)|∞ the ratio at t = √(2F0/Q) is at least
  ρ∞/(1 + L + 2√(2·F0·Q)) (ρ∞ = ‖R‖∞, v its maximising sign vector); where f(0) = 0 exactly, t → 0
  gives ρ∞/(1 + L₀), L₀ the gain of f's derivative at 0 (no Q needed);
* **the quadratic part**: along v the ratio tends to |E(v)|∞/|f₂(v)|∞ as t → ∞ (f₂ = f's quadratic
  part at infinity, |f₂(v)|∞ ≤ Q∞|v|²∞), and sup_v |E(v)|∞/|v|²∞ ≥ ‖E‖_F/d (each slice is a
  symmetric matrix: its spectral norm is ≥ its Frobenius norm/√d, and some slice holds ≥ 1/√d of ‖E‖_F).

A search measures an index set's distance as ‖(E, R)‖_F/‖M‖_F; past √d·ε·(1 + K_L)/‖M‖_F + d·Q∞·ε/‖M‖_F
one of the two parts exceeds its own bar, so K = K_L + √d·Q∞ in the usual bar √d·ε·(1 + K)/‖M‖_F.
Every bound here is a float raised past its roundings (Higham's γ); ``None`` with the reason where σ
gives no such bound (then a distance proves nothing, and the route's not_absorbable is unknown).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block
from absorb.rigorous import gamma

_PRODUCT_MAX = 1 << 26
"""d²·n up to this: L is ‖M + W_down diag(s) W_up‖∞ (one product); beyond, the cruder row sums."""
_SMOOTH_DENY = ("Max", "Min", "Abs", "Piecewise", "Heaviside", "sign", "floor", "ceiling", "frac", "DiracDelta", "re", "im",
                "arg", "Mod", "LambertW", "Integral", "Derivative", "Subs", "Limit")
"""Functions after which sympy's derivative of σ at 0 is not trusted (a kink, a jump or a branch may sit at 0)."""


def _up(x: float) -> float:
    return x * (1 + 1e-12) if math.isfinite(x) else math.inf


def _lin_gain(M: np.ndarray, U: np.ndarray, D: np.ndarray, s: np.ndarray) -> float:
    """An upper bound of ‖M + W_down diag(s) W_up‖∞ (the largest absolute row sum)."""
    d, n = D.shape
    aU1 = np.abs(U).sum(axis=1)
    with np.errstate(all="ignore"):
        crude = float(np.max(np.abs(M).sum(axis=1) + np.abs(D) @ (np.abs(s) * aU1), initial=0.0)) * (1 + gamma(n + d + 2))
        if d * d * n > _PRODUCT_MAX:
            return _up(crude)
        A = M + (D * s) @ U
        size = np.abs(M) + (np.abs(D) * np.abs(s)) @ np.abs(U)
        tight = float(np.max((np.abs(A) + gamma(n + 3) * size).sum(axis=1), initial=0.0)) * (1 + gamma(d + 1))
    return _up(min(crude, tight))


def _combine(L: float, F0: float, Q: float | None) -> float:
    """K_L = L + 2√(2·F0·Q) (L alone where F0 = 0)."""
    if F0 > 0:
        if Q is None:
            return math.inf
        L = L + 2 * math.sqrt(2 * F0 * Q) * (1 + 1e-12)
    return _up(L)


def _result(KL: float, Qinf: float, d: int, why: str) -> tuple[float, float, str]:
    """(K_L, K_Q = √d·Q∞, why): both infinite, with the reason, when either is."""
    KQ = _up(math.sqrt(d) * Qinf)
    if math.isfinite(KL) and math.isfinite(KQ):
        return KL, KQ, ""
    return math.inf, math.inf, why if not math.isfinite(KL) and why else "f's size overflows"


def _zero_or_float(v: Any) -> float | None:
    """|v| for a sympy number (0 exactly where it is proved 0), raised past a 30-digit evaluation; None if not real."""
    import sympy as sp

    if v.is_zero is True:
        return 0.0
    if v.is_real is not True or v.is_finite is not True:
        return None
    got = float(abs(sp.N(v, 30)))
    return got * (1 + 1e-20) + 1e-300 if math.isfinite(got) else None


def _at_zero(act: Any, derivative: bool) -> float | None:
    """|σ(0)| (or |σ'(0)|, from sympy's exact derivative of a σ free of kinks and branches), or None."""
    import sympy as sp

    try:
        e = act.expr
        syms = sorted(e.free_symbols, key=str)
        if len(syms) > 1:
            return None
        if derivative:
            if any(type(f).__name__ in _SMOOTH_DENY or f.func.__name__ in _SMOOTH_DENY for f in sp.preorder_traversal(e)):
                return None
            e = sp.diff(e, syms[0]) if syms else sp.Integer(0)
        v = e.subs(syms[0], 0) if syms else e
        return _zero_or_float(sp.sympify(v))
    except Exception:  # noqa: BLE001 - a σ sympy cannot differentiate or evaluate at 0 gives no bound
        return None


def ungated_gain(blk: Block, form: tuple[Fraction, Fraction] | None) -> tuple[float, float, str]:
    """(K_L, K_Q, why) for an ungated degree-2 route. ``form`` (α, β): σ(z) = α·ReLU(z)² + β·z for every real z,
    so σ'(c) = 2α·max(c, 0) + β and 0 ≤ (σ(c + z) − σ(c) − σ'(c)z)/α ≤ z² (Q = |α|·max_r Σ_i |w_ri|·‖u_i‖₁²).
    Without it only f(0) = 0 with every b_up = 0 is covered (σ(0) = 0, σ'(0) from σ's exact derivative)."""
    b = blk.float64()
    U, D, M = b.W_up, b.W_down, np.asarray(b.M, dtype=np.float64)
    d, n = D.shape
    c = np.zeros(n) if b.b_up is None else np.asarray(b.b_up, dtype=np.float64)
    bd = np.zeros(d) if b.b_down is None else np.asarray(b.b_down, dtype=np.float64)
    with np.errstate(all="ignore"):
        Qinf = float(np.max(np.abs(D) @ (np.abs(U).sum(axis=1) ** 2), initial=0.0)) * (1 + gamma(n + d + 2))
    if form is not None:
        a, be = float(form[0]), float(form[1])
        s = 2 * a * np.maximum(c, 0) + be
        with np.errstate(all="ignore"):
            sig = np.abs(a) * np.maximum(c, 0) ** 2 + abs(be) * np.abs(c)  # ≥ |σ(c_i)|, up to rounding
            F0 = float(np.max(np.abs(D) @ sig + np.abs(bd), initial=0.0)) * (1 + gamma(n + 4))
        return _result(_combine(_lin_gain(M, U, D, s), F0, abs(a) * Qinf * (1 + 1e-12)), Qinf, d, "")
    K = math.inf
    sq = square_of_lipschitz(blk.activation)
    if sq is not None:  # σ = h² + k, |h(a) − h(b)| ≤ Lh|a − b|: |σ(c + z) − σ(c)| ≤ 2|h(c)|·Lh|z| + Lh²z², |h(c)| ≤ |h(0)| + Lh|c|
        Lh, h0, k = sq
        with np.errstate(all="ignore"):
            hc = (h0 + Lh * np.abs(c)) * (1 + 1e-12)
            gm = 1 + gamma(n + d + 4)
            L = float(np.max(np.abs(M).sum(axis=1) + np.abs(D) @ (2 * Lh * hc * np.abs(U).sum(axis=1)), initial=0.0)) * gm
            F0 = float(np.max(np.abs(D) @ (hc * hc + k) + np.abs(bd), initial=0.0)) * gm
            K = _combine(L, F0, Lh * Lh * Qinf * gm)
    if not (np.any(c) or np.any(bd)):
        s0, ds0 = _at_zero(blk.activation, False), _at_zero(blk.activation, True)
        if s0 == 0.0 and ds0 is not None:  # f(0) = 0: the gain of f's derivative at 0
            K = min(K, _combine(_lin_gain(M, U, D, np.full(n, ds0)), 0.0, None))
    return _result(K, Qinf, d, "no bound of |f(x) − f(0)| by |x| and |x|² is derived for this σ (σ = α·ReLU² + β·z, σ = h² with h "
                      "Lipschitz, or bias-free with σ(0) = 0 and an exact σ'(0)), so f's size is not bounded")


def square_of_lipschitz(act: Any) -> tuple[float, float, float] | None:
    """(Lh, |h(0)|, |k|) where σ = h² + k for a built-in h with a stated Lipschitz constant Lh and a constant k: σ − h²
    constant at three points to 30 digits first, then exactly — sympy's expansion of σ − h² − k is 0, as written or
    with tanh, erfc, sinh, cosh rewritten through exp and erf (:func:`absorb.symbolic.rewrite.normalise`, an exact
    identity: SiLU² spelled with tanh); None otherwise."""
    import sympy as sp

    from absorb.engine.witness import _SIGMA_LIPSCHITZ
    from absorb.model.activations import get_activation
    from absorb.symbolic.rewrite import normalise

    try:
        e = act.expr
        (x,) = e.free_symbols
    except (ValueError, AttributeError):
        return None
    for name, Lh in sorted(_SIGMA_LIPSCHITZ.items()):
        h = get_activation(name).expr
        if not h.free_symbols:
            continue
        h = h.subs(sorted(h.free_symbols, key=str)[0], x)
        try:
            diff = e - h**2
            at = [sp.N(diff.subs(x, z), 30) for z in (sp.Rational(1, 3), sp.Rational(-7, 5), sp.Rational(5, 2))]
            if any(abs(v - at[0]) > 1e-20 for v in at[1:]):
                continue
            k = sp.sympify(diff.subs(x, 0))
            if sp.expand(diff - k) != 0 and sp.expand(normalise(diff - k)) != 0:
                continue
            h0, kf = _zero_or_float(sp.sympify(h.subs(x, 0))), _zero_or_float(k)
        except Exception:  # noqa: BLE001 - not recognised
            continue
        if h0 is not None and kf is not None:
            return Lh, h0, abs(kf) * (1 + 1e-12)
    return None


def gated_gain(blk: Block, lip: float | None) -> tuple[float, float, str]:
    """(K_L, K_Q, why) for a gated block with a ReLU-like gate σ_g (|σ_g(a) − σ_g(b)| ≤ ``lip``·|a − b|) and an identity
    value branch: unit i is σ_g(g_i·x + c_i)(u_i·x + e_i), and with γ_i ≥ |σ_g(c_i)|,
    |Δ_i| ≤ lip·|g_i·x|·|e_i| + γ_i|u_i·x| + lip·|g_i·x|·|u_i·x|; f₂(v) = Σ_i w_i ReLU(g_i·v)(u_i·v).
    Bias-free: f(0) = 0 and f's derivative at 0 is M + σ_g(0)·W_down W_up."""
    b = blk.float64()
    G, U, D, M = b.W_gate, b.W_up, b.W_down, np.asarray(b.M, dtype=np.float64)
    d, n = D.shape
    if lip is None or not math.isfinite(lip):
        return math.inf, math.inf, "the gate has no stated Lipschitz constant, so f's size is not bounded"
    g0 = _at_zero(blk.activation, False)
    if g0 is None:
        return math.inf, math.inf, "σ_g(0) is not established, so f's size near 0 is not bounded"
    c = np.zeros(n) if b.b_gate is None else np.asarray(b.b_gate, dtype=np.float64)
    e = np.zeros(n) if b.b_up is None else np.asarray(b.b_up, dtype=np.float64)
    bd = np.zeros(d) if b.b_down is None else np.asarray(b.b_down, dtype=np.float64)
    with np.errstate(all="ignore"):
        g1, u1 = np.abs(G).sum(axis=1), np.abs(U).sum(axis=1)
        Qinf = float(np.max(np.abs(D) @ (g1 * u1), initial=0.0)) * (1 + gamma(n + d + 2))
        if not (np.any(c) or np.any(e) or np.any(bd)):
            K = _combine(_lin_gain(M, U, D, np.full(n, g0)), 0.0, None)
        else:
            gam = (g0 + lip * np.abs(c)) * (1 + 1e-12)
            L = float(np.max(np.abs(M).sum(axis=1) + np.abs(D) @ (lip * g1 * np.abs(e) + gam * u1), initial=0.0))
            F0 = float(np.max(np.abs(D) @ (gam * np.abs(e)) + np.abs(bd), initial=0.0))
            gm = 1 + gamma(n + d + 4)
            K = _combine(L * gm, F0 * gm, lip * Qinf * gm)
    return _result(K, 2 * Qinf, d, "")  # (the (Qg) columns hold 2·sym(g_i u_iᵀ): twice E)


def set_gain(ctx: Any, got: tuple[float, float, str], one_unit: bool = False, exact: bool = False) -> None:
    """Put a route's (K_L, K_Q, why) on its context: K_L + K_Q widens the distance bar of (Q) and (L) jointly, K_L
    alone that of (L) alone (the linear route), each widened again so that the bar excludes every scaled candidate
    c·g too (:func:`absorb.engine._scaled.scaled_gain` with third differences: a candidate's f − g is quadratic;
    ``exact``: its identity holds at every z); without them, why makes a not_absorbable that rests on a distance
    unknown (the searches still look for witnesses with K = 0)."""
    from absorb.engine._scaled import nonlinearity, widen
    from absorb.engine.witness import eval_threshold

    KL, KQ, why = got
    # (f grows quadratically: one spare unit realises a rank-one part of the skip where it can be affine — with a
    # large bias, or with σ'(0) ≠ 0 and σ(0) = 0, a small up row and a large down column (the relu2-linear σ))
    ctx.spare_one = bool(ctx.rf_class.biases or one_unit)
    if not (math.isfinite(KL) and math.isfinite(KQ)):
        ctx.gain_unknown = why or "f's size is not bounded"
        return
    blk = ctx.block
    thr = eval_threshold(ctx.tol, blk.n)
    nu, reach = nonlinearity(blk, thr, ctx.seed, exact, order=3)
    K, ctx.nonlinear, ctx.nonlinear_order = widen(_up(KL + KQ), thr, nu, reach), nu, 3
    if not math.isfinite(K):
        ctx.gain_unknown = (f"a candidate scaled by some c ≠ 1 is not excluded: f − c·g = (1 − c)·f + c·(f − g) cancels where f "
                            f"is nearly quadratic, and f's third differences read only ν = {nu:.3g} of its scale")
        return
    ctx.gain, ctx.gain_linear = K, widen(KL, thr, nu, reach)
