"""Scaled candidates: a residual-free g gives residual-free c·g for every real c (W_down and b_down scaled by c), and
f − c·g = (1 − c)·f + c·(f − g). For the distance routes' candidates f − g is a polynomial p of degree < k (a flip:
affine, k = 2; a degree-2 route's flip or rescaling: quadratic, k = 3), so f − c·g is within the tolerance for some
c ≠ 1 only where f is nearly proportional to p: nearly a polynomial of that degree. A k-th finite difference along a
line kills p — Σ_j a_j·e(s_j·x) = (1 − c)·Σ_j a_j·f(s_j·x) for e = f − c·g (k = 2: x, −x, 0 with 1, 1, −2; k = 3:
1.5x, 0.5x, −0.5x, −1.5x with 1, −3, 3, −1) — so at every x

    max_j err(s_j·x) ≥ |1 − c|·ν_x,  ν_x = |Σ_j a_j·f(s_j·x)|∞ / Σ_j |a_j|·den(s_j·x)

(err the tolerance's ratio |f − c·g|∞/den, den(x) = |f(x)|∞ + |x|∞ + |f(0)|∞). Along the direction v where
|R v|∞ = ρ∞|v|∞ the route's own argument bounds err below by (|c|ρ∞ − |1 − c|K)/(1 + K) (K ≥ f's gain: at
infinity for flips; K_L + √d·Q∞ for the degree-2 routes, :mod:`absorb.engine._growth2`, where both the linear and
the quadratic part of that argument take the same form). So every c with |1 − c|ν > thr is excluded by ν, and every
other c by ρ∞ > h(c) = (thr(1 + K) + |1 − c|K)/|c|: the distance bar with K replaced by :func:`scaled_gain`'s K'
covers every real c. ν is read where f is large (inputs of size 10⁶·(1 + |f(0)|∞)), so a candidate whose identity
holds only at infinity is covered as well: there its f − g is a polynomial up to a bounded part, negligible against f.
Sampled: the bound holds at the inputs read, and the largest ν found is used."""

from __future__ import annotations

import math

import numpy as np

from absorb.model.block import Block
from absorb.rigorous import row_slices

_LARGE = 1 << 22
"""n·d past which the differences are read along fewer directions (each costs a pass over f per point of the line)."""
_LINES = {2: ((1.0, -1.0, 0.0), (1.0, 1.0, -2.0)), 3: ((1.5, 0.5, -0.5, -1.5), (1.0, -3.0, 3.0, -1.0))}
"""k → (the points s_j on the line through 0, the k-th difference's coefficients a_j)."""


def _samples(blk: Block, seed: int, exact: bool, order: int) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(X, f(s_j·X) stacked by j, |f(0)|∞) at the large scale of the module doc (one pass over the weights); None where
    f overflows there. ``exact``: the candidates' identity holds at every z (f − g exactly a polynomial), so where f
    overflows there smaller scales serve too."""
    d = blk.d
    rng = np.random.default_rng(seed + 7919)
    few = blk.n * d > _LARGE
    k = min(d, 2 if few else 16)
    X = np.vstack([np.eye(d)[:k], rng.standard_normal((2 if few else 8, d))])
    f0 = blk.f0_inf
    t = 1e6 * (1.0 + f0) if math.isfinite(f0) else math.inf
    X = X / np.max(np.abs(X), axis=1, keepdims=True)
    s = _LINES[order][0]
    for scale in [t] + ([1.0, 1e-100, 1e-200] if exact else []):
        if not (math.isfinite(scale) and scale < 1e290):
            continue
        with np.errstate(all="ignore"):
            F = blk(np.vstack([sj * scale * X for sj in s]))
            if np.all(np.isfinite(F)) and math.isfinite(float(np.sum(np.max(np.abs(F), axis=1)))):
                return scale * X, F.reshape(len(s), len(X), d), f0
    return None


def uncovered_sup(K: float, thr: float, nu: float, reach: float) -> float:
    """sup of h(c) = (thr(1 + K) + |1 − c|K)/|c| over the c that neither |1 − c|·ν > thr nor |c| < ``reach`` excludes
    (−inf where none is left, inf where c = 0 is left). h decreases in |c| for c < 0 and on (0, 1], and is monotone on
    [1, ∞): its sup over an interval is at an end (K, the limit, for an unbounded one)."""
    r = thr / nu if nu > 0 else math.inf
    lo, hi = 1 - r, 1 + r

    def h(c: float) -> float:
        return (thr * (1 + K) + abs(1 - c) * K) / abs(c)

    best = -math.inf
    if lo <= -reach:  # (negative c left: the sup at the one nearest 0)
        if not reach > 0:
            return math.inf
        best = h(-reach)
    left = max(lo, reach)
    if left <= hi:
        if not left > 0:
            return math.inf
        best = max(best, h(left), h(hi) if math.isfinite(hi) else K)
    return best


def scaled_gain(blk: Block, K: float, thr: float, seed: int, exact: bool = False, order: int = 2) -> tuple[float, float]:
    """(K', ν): :func:`widen` of K by :func:`nonlinearity`'s reading."""
    nu, reach = nonlinearity(blk, thr, seed, exact, order)
    return widen(K, thr, nu, reach), nu


def widen(K: float, thr: float, nu: float, reach: float) -> float:
    """K' = max(K, ρ*/thr − 1), ρ* = :func:`uncovered_sup`: the gain whose distance bar excludes every c·g (module doc);
    inf where c = 0 is left (ν = 0, nothing read)."""
    rho = uncovered_sup(K, thr, nu, reach)
    if rho == -math.inf:  # (every c ≠ 1 excluded, and c = 1 too where f's size alone excludes the flip: K's own bar)
        return K
    return max(K, rho / thr - 1) if math.isfinite(rho) else math.inf


def nonlinearity(blk: Block, thr: float, seed: int, exact: bool = False, order: int = 2) -> tuple[float, float]:
    """(ν, reach): the nonlinearity read (k-th differences, k = ``order``, module doc; 0 where f overflows at every
    scale tried) and the |c| below which f's own size excludes c·g: for order 2 (flips) of an ungated bias-free f every
    flip has |g_S(x)|∞ ≤ q(x) = max_r Σ_i |W_down[r,i]|·max(|σ(u_i·x)|, |σ(−u_i·x)|) (each unit kept or flipped), so
    at each sampled x err ≥ (|f(x)|∞ − |c|·q(x))/den(x) too, which excludes the small |c| where f's own size shows (f
    nearly linear, B small); 0 otherwise."""
    got = _samples(blk, seed, exact, order)
    if got is None:
        return 0.0, 0.0
    X, F, f0 = got
    a = np.array(_LINES[order][1])
    with np.errstate(all="ignore"):
        ax = np.max(np.abs(X), axis=1)
        sizes = np.max(np.abs(F), axis=2)  # (points × samples)
        s = np.abs(np.array(_LINES[order][0]))
        dens = sizes + s[:, None] * ax[None, :] + f0
        nus = np.max(np.abs(np.tensordot(a, F, axes=1)), axis=1) / (np.abs(a) @ dens)
        nus = nus[np.isfinite(nus)]
        nu = float(np.max(nus)) * (1 - 1e-9) if nus.size else 0.0
        reach = 0.0
        if order == 2 and not blk.gated and not blk.has_bias:  # (units a block of rows at a time: a float32 layer is never
            acc = np.zeros((len(X), blk.d))                    # copied whole to float64)
            for sl in row_slices(blk.n, blk.d):
                Z = X @ np.asarray(blk.W_up[sl], dtype=np.float64).T  # (m × units; the same for −X, each unit either way)
                either = np.maximum(np.abs(blk.activation(Z)), np.abs(blk.activation(-Z)))
                acc += either @ np.abs(np.asarray(blk.W_down[:, sl], dtype=np.float64)).T
            q = np.tile(np.max(acc, axis=1) * (1 + 1e-12), 2)
            size, den = sizes[:2].ravel(), dens[:2].ravel()  # (x and −x: q is the same at both)
            room = size - thr * den
            got_reach = np.where(q > 0, room / q, np.where(room > 0, np.inf, -np.inf))
            got_reach = got_reach[~np.isnan(got_reach)]
            if got_reach.size:
                reach = max(0.0, float(np.max(got_reach)) * (1 - 1e-12))
    return nu, reach
