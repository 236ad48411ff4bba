"""The checker's reading of scaled flips. With g residual-free so is c·g, and for a flip f − g = R x + e₀
(affine), so e = f − c·g has second differences e(x) + e(−x) − 2e(0) = (1 − c)(f(x) + f(−x) − 2f(0)): at some of
x, −x, 0 the tolerance's ratio is at least (1 − c)·ν, ν = |f(x) + f(−x) − 2f(0)|∞ over den(x) + den(−x) + 2·den(0)
(den(x) = |f(x)|∞ + |x|∞ + |f(0)|∞). Along the direction of R's largest row sum the ratio tends to at least
(cρ∞ − (1 − c)K)/(1 + K). Both above thr = τ + allowance for every c ∈ (0, 1] exactly when
ρ∞ > thr(1 + K + K/ν)/(1 − thr/ν), i.e. the distance bar with the gain K' = (1 + K + K/ν)/(1 − thr/ν) − 1.
Read at this checker's own inputs (sampled: a bound that does not clear it leaves the not_absorbable not re-checked)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def needed_gain(block: Any, K: float, thr: float, seed: int, exact: bool = False) -> tuple[float, float]:
    """(K', ν): the gain whose distance bar excludes every c·g_S, c ∈ (0, 1] (module doc), from this checker's inputs:
    ±e_j (up to 12) and 6 random directions (2 and 2 past 2²² weights), scaled to 10⁶·(1 + |f(0)|∞), where a flip
    whose identity holds only asymptotically is affine up to a negligible part. An ungated bias-free f: every flip
    has |g_S(x)|∞ ≤ q(x) = max_r Σ_i |W_down[r,i]|·max(|σ(u_i·x)|, |σ(−u_i·x)|), and err ≥ (|f(x)|∞ − c·q(x))/den(x) too. Both bounds decrease in c: the c they leave, [c*, 1], ask
    ρ∞ > (thr(1 + K) + (1 − c)K)/c, largest at c*."""
    d = block.d
    big = block.n * d > 1 << 22
    rng = np.random.default_rng(seed + 1009)
    dirs = np.vstack([np.eye(d)[: min(d, 2 if big else 12)], rng.standard_normal((2 if big else 6, d))])
    with np.errstate(all="ignore"):
        z = block(np.zeros((1, d)))[0]
        f0 = float(np.max(np.abs(z)))
        unit = dirs / np.max(np.abs(dirs), axis=1, keepdims=True)
        for scale in [1e6 * (1.0 + f0)] + ([1.0, 1e-100, 1e-200] if exact else []):  # (exact flips: any scale reads ν)
            if not (math.isfinite(scale) and scale < 1e290):
                continue
            X = scale * unit
            A, B = block(X), block(-X)
            if np.all(np.isfinite(A)) and np.all(np.isfinite(B)) and math.isfinite(float(np.max(np.abs(A)) + np.max(np.abs(B)))):
                break
        else:
            return math.inf, 0.0
        top = np.max(np.abs(A + B - 2 * z), axis=1)
        sa, sb, sx = np.max(np.abs(A), axis=1), np.max(np.abs(B), axis=1), np.max(np.abs(X), axis=1)
        nus = top / (sa + sb + 2 * sx + 6 * f0)
        nus = nus[np.isfinite(nus)]
        nu = float(np.max(nus)) * (1 - 1e-8) if nus.size else 0.0
        plain = block.W_gate is None and not any(getattr(block, k) is not None and np.any(getattr(block, k))
                                                 for k in ("b_up", "b_down"))
        if plain:
            P = np.asarray(block.W_up, dtype=np.float64) @ X.T
            most = np.maximum(np.abs(block.activation(P)), np.abs(block.activation(-P)))
            q = np.tile(np.max(np.abs(np.asarray(block.W_down, dtype=np.float64)) @ most, axis=0) * (1 + 1e-10), 2)
            own, den = np.concatenate([sa, sb]), np.concatenate([sa + sx, sb + sx]) + f0
    edge = 1 - thr / nu if nu > thr else 0.0  # ((1 − c)ν > thr below it; (|f| − c·q)/den > thr below (|f| − thr·den)/q)
    if plain:
        with np.errstate(all="ignore"):
            spare = own - thr * den
            ends = np.where(q > 0, spare / q, np.where(spare > 0, np.inf, -np.inf))
        ends = ends[~np.isnan(ends)]
        if ends.size:
            edge = max(edge, float(np.max(ends)) * (1 - 1e-10))
    if edge >= 1:
        return K, nu
    if not edge > 0:
        return math.inf, nu
    return max(K, (thr * (1 + K) + (1 - edge) * K) / edge / thr - 1), nu
