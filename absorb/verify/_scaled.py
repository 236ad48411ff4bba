"""The checker's reading of scaled candidates. With g residual-free so is c·g for every real c, and
f − c·g = (1 − c)·f + c·p with p = f − g a polynomial of degree < k for the distance routes' candidates (a flip:
affine, k = 2; the degree-2 routes': quadratic, k = 3). A k-th difference along a line through 0 kills p, so at some
point of the line the tolerance's ratio (den(x) = |f(x)|∞ + |x|∞ + |f(0)|∞) is at least |1 − c|·ν, ν = |Δ_k f|∞ over
the matching sum of |coefficient|·den. Along the direction of R's largest row sum the ratio tends to at least
(|c|ρ∞ − |1 − c|K)/(1 + K). For every c not excluded by ν (nor, for an ungated bias-free f's flips, by f's size
against q(x) = max_r Σ_i |W_down[r,i]|·max(|σ(u_i·x)|, |σ(−u_i·x)|), which bounds every flip) the bound asks
ρ∞ > (thr(1 + K) + |1 − c|K)/|c|; the largest over those c gives the gain K' of the distance bar.
Read at this checker's own inputs (sampled: a bound that does not clear it leaves the not_absorbable not re-checked)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_POINTS = {2: ([1.0, -1.0, 0.0], [1.0, 1.0, -2.0]), 3: ([1.5, 0.5, -0.5, -1.5], [1.0, -3.0, 3.0, -1.0])}


def _worst(K: float, thr: float, nu: float, edge: float) -> float | None:
    """max of (thr(1 + K) + |1 − c|K)/|c| over the c with |1 − c|·ν ≤ thr and |c| ≥ edge; None where no c is left,
    inf where c = 0 is. Each end of what is left is a candidate (the function is monotone between 0, 1 and ±∞)."""
    span = thr / nu if nu > 0 else math.inf
    ends: list[float] = []
    if 1 - span <= -edge:
        ends.append(-edge)
    if max(1 - span, edge) <= 1 + span:
        ends += [max(1 - span, edge), 1 + span]
    if not ends:
        return None
    if any(c == 0 for c in ends):
        return math.inf
    return max(K if math.isinf(c) else (thr * (1 + K) + abs(1 - c) * K) / abs(c) for c in ends)


def needed_gain(block: Any, K: float, thr: float, seed: int, exact: bool = False, order: int = 2) -> tuple[float, float]:
    """(K', ν) for one gain K (:func:`needed_gains`)."""
    (K2,), nu = needed_gains(block, (K,), thr, seed, exact, order)
    return K2, nu


def needed_gains(block: Any, Ks: tuple[float, ...], thr: float, seed: int, exact: bool = False,
                 order: int = 2) -> tuple[list[float], float]:
    """([K' for each K], ν): the gain whose distance bar excludes every c·g, c real (module doc), from this checker's inputs:
    ±e_j (up to 12) and 6 random directions (2 and 2 past 2²² weights), scaled to 10⁶·(1 + |f(0)|∞), where a candidate
    whose identity holds only asymptotically is a polynomial up to a negligible part (``exact``: smaller scales too)."""
    d = block.d
    big = block.n * d > 1 << 22
    rng = np.random.default_rng(seed + 1009)
    dirs = np.vstack([np.eye(d)[: min(d, 2 if big else 12)], rng.standard_normal((2 if big else 6, d))])
    s, a = (np.array(v) for v in _POINTS[order])
    with np.errstate(all="ignore"):
        z = block(np.zeros((1, d)))[0]
        f0 = float(np.max(np.abs(z)))
        unit = dirs / np.max(np.abs(dirs), axis=1, keepdims=True)
        for scale in [1e6 * (1.0 + f0)] + ([1.0, 1e-100, 1e-200] if exact else []):
            if not (math.isfinite(scale) and scale < 1e290):
                continue
            X = scale * unit
            vals = [block(sj * X) for sj in s]
            if all(np.all(np.isfinite(v)) for v in vals) and math.isfinite(float(sum(np.max(np.abs(v)) for v in vals))):
                break
        else:
            return [math.inf] * len(Ks), 0.0
        sx = np.max(np.abs(X), axis=1)
        mags = [np.max(np.abs(v), axis=1) for v in vals]
        top = np.max(np.abs(sum(aj * v for aj, v in zip(a, vals))), axis=1)
        nus = top / sum(abs(aj) * (m + abs(sj) * sx + f0) for aj, sj, m in zip(a, s, mags))
        nus = nus[np.isfinite(nus)]
        nu = float(np.max(nus)) * (1 - 1e-8) if nus.size else 0.0
        edge = 0.0
        plain = order == 2 and block.W_gate is None and not any(
            getattr(block, k) is not None and np.any(getattr(block, k)) for k in ("b_up", "b_down"))
        if plain:
            P = np.asarray(block.W_up, dtype=np.float64) @ X.T
            most = np.maximum(np.abs(block.activation(P)), np.abs(block.activation(-P)))
            q = np.tile(np.max(np.abs(np.asarray(block.W_down, dtype=np.float64)) @ most, axis=0) * (1 + 1e-10), 2)
            own = np.concatenate(mags[:2])
            spare = own - thr * (own + np.concatenate([sx, sx]) + f0)
            ends = np.where(q > 0, spare / q, np.where(spare > 0, np.inf, -np.inf))
            ends = ends[~np.isnan(ends)]
            if ends.size:
                edge = max(0.0, float(np.max(ends)) * (1 - 1e-10))  # (|c| below it: (|f| − |c|·q)/den > thr)
    out = []
    for K in Ks:  # (one reading of f serves every gain)
        rho = _worst(K, thr, nu, edge)
        out.append(K if rho is None else max(K, rho / thr - 1) if math.isfinite(rho) else math.inf)
    return out, nu
