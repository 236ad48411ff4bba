"""Scaled flips: a residual-free g gives residual-free c·g (W_down and b_down scaled by c), and
f − c·g = (1 − c)·f + c·(f − g). For a flip, f − g is affine (R x + e₀), so f − c·g is within the
tolerance for some c < 1 only where f is nearly proportional to −R x: nearly linear. The second
difference kills the affine part — e(x) + e(−x) − 2e(0) = (1 − c)·(f(x) + f(−x) − 2f(0)) for
e = f − c·g — so at every x

    max(err(x), err(−x), err(0)) ≥ (1 − c)·ν_x,  ν_x = |f(x) + f(−x) − 2f(0)|∞ / (|f(x)|∞ + |f(−x)|∞ + 2|x|∞ + 6|f(0)|∞)

(err the tolerance's ratio |f − c·g|∞/(|f(x)|∞ + |x|∞ + |f(0)|∞); the denominator is den(x) + den(−x) + 2·den(0)).
Along the direction v where |R v|∞ = ρ∞|v|∞, err → |(1 − c)f∞(v) + c R v|∞/(|f∞(v)|∞ + |v|∞) ≥ (cρ∞ − (1 − c)K)/(1 + K)
(K ≥ f's gain at infinity). Some c puts both bounds at most thr = τ + allowance only if ρ∞ ≤
thr·(1 + K + K/ν)/(1 − thr/ν) (ν = the largest ν_x found, > thr; else no ρ∞ excludes c·g): the distance bar with
K replaced by :func:`scaled_gain`'s K' covers every c ∈ (0, 1]. ν is read where f is large (inputs of size
10⁶·(1 + |f(0)|∞)), so a flip whose identity holds only at infinity is covered as well: there its f − g is affine up
to a bounded part, negligible against f. Sampled: a larger ν than the truth's would only narrow the bar back
towards K's, which the exact argument already covers for c = 1."""

from __future__ import annotations

import math

import numpy as np

from absorb.model.block import Block
from absorb.rigorous import row_slices

_LARGE = 1 << 22
"""n·d past which the second differences are read along fewer directions (each costs two passes over f)."""


def _samples(blk: Block, seed: int, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float] | None:
    """(X, f(X), f(−X), f(0)) at the large scale of the module doc (one pass over the weights), and |f(0)|∞; None where
    f overflows there. ``exact``: the flips' identity holds at every z (f − g exactly affine), so where f overflows
    there smaller scales serve too."""
    d = blk.d
    rng = np.random.default_rng(seed + 7919)
    few = blk.n * d > _LARGE
    k = min(d, 2 if few else 16)
    X = np.vstack([np.eye(d)[:k], rng.standard_normal((2 if few else 8, d))])
    f0 = blk.f0_inf
    t = 1e6 * (1.0 + f0) if math.isfinite(f0) else math.inf
    X = X / np.max(np.abs(X), axis=1, keepdims=True)
    for scale in [t] + ([1.0, 1e-100, 1e-200] if exact else []):
        if not (math.isfinite(scale) and scale < 1e290):
            continue
        with np.errstate(all="ignore"):
            F = blk(np.vstack([scale * X, -scale * X, np.zeros((1, d))]))
            if np.all(np.isfinite(F)) and math.isfinite(float(np.sum(np.max(np.abs(F), axis=1)))):
                m = len(X)
                return scale * X, F[:m], F[m: 2 * m], F[-1], f0
    return None


def scaled_gain(blk: Block, K: float, thr: float, seed: int, exact: bool = False) -> tuple[float, float]:
    """(K', ν): the gain that makes the distance bar exclude every scaled flip c·g_S, c ∈ (0, 1] as well (module doc),
    and the nonlinearity ν read. For an ungated bias-free f every flip has |g_S(x)|∞ ≤ q(x) = max_r Σ_i |W_down[r,i]|·
    max(|σ(u_i·x)|, |σ(−u_i·x)|) (each unit kept or flipped), so at each sampled x err ≥ (|f(x)|∞ − c·q(x))/den(x) too,
    which covers the c where f's own size shows (f nearly linear, B small). For each c
    not covered by the sampled bounds B(c) = (1 − c)ν or C(c) the bound needed of ρ∞ is (thr(1 + K) + (1 − c)K)/c
    (from A(c) > thr); K' = ρ*/thr − 1."""
    got = _samples(blk, seed, exact)
    if got is None:
        return math.inf, 0.0
    X, Fp, Fm, F0, f0 = got
    with np.errstate(all="ignore"):
        ax = np.max(np.abs(X), axis=1)
        ap, am = np.max(np.abs(Fp), axis=1), np.max(np.abs(Fm), axis=1)
        nus = np.max(np.abs(Fp + Fm - 2 * F0), axis=1) / (ap + am + 2 * ax + 6 * f0)
        nus = nus[np.isfinite(nus)]
        nu = float(np.max(nus)) * (1 - 1e-9) if nus.size else 0.0
        plain = not blk.gated and not blk.has_bias
        size = np.concatenate([ap, am]) if plain else np.zeros(0)
        dens = size + np.concatenate([ax, ax]) + f0 if plain else np.zeros(0)
        q = np.zeros(0)
        if plain:  # (units a block of rows at a time: a float32 layer is never copied whole to float64)
            acc = np.zeros((len(X), blk.d))
            for sl in row_slices(blk.n, blk.d):
                Z = X @ np.asarray(blk.W_up[sl], dtype=np.float64).T  # (m × units; the same for −X, each unit either way)
                either = np.maximum(np.abs(blk.activation(Z)), np.abs(blk.activation(-Z)))
                acc += either @ np.abs(np.asarray(blk.W_down[:, sl], dtype=np.float64)).T
            q = np.tile(np.max(acc, axis=1) * (1 + 1e-12), 2)
    # B(c) = (1 − c)ν > thr exactly for c < 1 − thr/ν; C(c) > thr at some sample exactly for c < max (|f| − thr·den)/q:
    # both decrease in c, so [0, c*) is covered and [c*, 1] asks ρ∞ > (thr(1 + K) + (1 − c)K)/c, largest at c*
    cut = 1 - thr / nu if nu > thr else 0.0
    if size.size:
        with np.errstate(all="ignore"):
            room = size - thr * dens
            reach = np.where(q > 0, room / q, np.where(room > 0, np.inf, -np.inf))
        reach = reach[~np.isnan(reach)]
        if reach.size:
            cut = max(cut, float(np.max(reach)) * (1 - 1e-12))
    if cut >= 1:
        return K, nu
    if not cut > 0:
        return math.inf, nu
    rho = (thr * (1 + K) + (1 - cut) * K) / cut
    return max(K, rho / thr - 1), nu
