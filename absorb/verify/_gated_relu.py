"""The checker's re-derivation of the gated skeleton for ReLU-like gates (docs/results/gated-skeleton.md):
its own columns vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)) and vec(w_i (c_i u_i + e_i g_i)ᵀ), infeasibility by
its own exact positive-definiteness test or enumeration, and for ``relu-like-flip`` the flip of S rebuilt here with
f − g checked exactly, in integers (σ_g(z) − σ_g(−z) = z re-derived by pieces; :mod:`absorb.verify._exact_gram`): its quadratic part zero, or (a set planted in
float64) within the tolerance of the block's own quadratic scale s₂ = max_a Σ_i |w_ai||g_i|₁|u_i|₁."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block
from absorb.verify import _exact_gram
from absorb.verify._at_zero import _f0_lower
from absorb.verify._numerics import _parse_number
from absorb.verify._report import _Ctx, _require
from absorb.verify._skeleton2 import (
    ENUMERATE_MAX_N,
    RANK_MAX_N,
    _check_gram,
    accept_exact_flip,
    bar2,
    check_lifted,
    check_linear,
    enumeration_bound,
    gram_gated,
    scaled2,
    size_bound,
)
from absorb.verify._symbolic import flip_constant


def _flip(block: Block, S: list[int]) -> Block:
    """The producer's construction, rebuilt here (same float operations, so the same bits)."""
    G, U, D = (np.array(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    G[S] *= -1
    U[S] *= -1
    D[:, S] *= -1
    bg = None if block.b_gate is None else np.array(block.b_gate, dtype=np.float64)
    bu = None if block.b_up is None else np.array(block.b_up, dtype=np.float64)
    shift = np.zeros(block.d)
    if bg is not None and bu is not None:
        shift = np.asarray(block.W_down, dtype=np.float64)[:, S] @ (bg[S] * bu[S])
    for v in (bg, bu):
        if v is not None:
            v[S] *= -1
    b_down = shift + (0 if block.b_down is None else np.asarray(block.b_down, dtype=np.float64))
    return block.replace(W_gate=G, W_up=U, W_down=D, b_gate=bg, b_up=bu, b_down=b_down if np.any(b_down) else None,
                         skip=np.zeros((block.d, block.d)), name=block.name + "'")


def linear_rows_gated(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """(V, r): the up rows of (Lg) alone, v_i = c_i u_i + e_i g_i (c = b_gate, e = b_up), rounded
    here (two products and a sum: within γ₄ of |c_i||u_i| + |e_i||g_i| entrywise), and
    r_i = |c_i|‖u_i‖₂ + |e_i|‖g_i‖₂ ≥ that magnitude's norm (triangle inequality; its float
    rounding is inside the 2 % of :func:`absorb.verify._skeleton2.check_lifted`)."""
    Gf, Uf = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up))
    n = block.n
    c = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
    e = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(all="ignore"):
        V = np.multiply(Uf, c[:, None]) + np.multiply(Gf, e[:, None])
        r = np.abs(c) * np.sqrt(np.einsum("ij,ij->i", Uf, Uf)) + np.abs(e) * np.sqrt(np.einsum("ij,ij->i", Gf, Gf))
    return V, r


def check_relu_like(ctx: _Ctx, w: str, b: dict[str, Any], block: Block, case: str) -> tuple[str, Block | None, float]:
    d, n = block.d, block.n
    if b.get("verdict") == "not_absorbable":
        from absorb.verify._symbolic import _sigma_lipschitz

        size_bound(ctx, w, block, None, _sigma_lipschitz(block))
        route = (b.get("argument") or {}).get("route")
        _require(ctx, case == "relu-like" and route in ("rank", "gram", "enumerate", "index-set", "linear"), w,
                 "a not_absorbable verdict rests on the rank, the Gram, the enumeration, the lifted index-set or the "
                 "linear route", f"recorded route {route!r}")
        if route == "gram":
            return _check_gram(ctx, w, block, (b.get("argument") or {}).get("mu"), gram_gated, "(Qg)")
        if route == "linear":
            return check_linear(ctx, w, b, block, *linear_rows_gated(block))
        if route == "index-set":
            Gf, Uf = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up))
            cf = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
            ef = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
            V = np.array([np.concatenate([(np.outer(Gf[i], Uf[i]) + np.outer(Uf[i], Gf[i])).ravel(), cf[i] * Uf[i] + ef[i] * Gf[i]])
                          for i in range(n)])
            A = np.array([np.concatenate([(np.outer(abs(Gf[i]), abs(Uf[i])) + np.outer(abs(Uf[i]), abs(Gf[i]))).ravel(),
                                          abs(cf[i]) * abs(Uf[i]) + abs(ef[i]) * abs(Gf[i])]) for i in range(n)])
            return check_lifted(ctx, w, b, V, np.asarray(block.W_down, dtype=np.float64), np.asarray(block.M, dtype=np.float64), A)
        bound, how = None, "exact positive-definiteness test"
        if route == "rank":
            if n <= min(d * d * (d + 1) // 2, RANK_MAX_N):
                G, U, W = (_exact_gram.ints(a) for a in (block.W_gate, block.W_up, block.W_down))
                bound = _exact_gram.rank_bound(*_exact_gram.column_gram(W, G, U, sym=True), block.M)
        elif n <= ENUMERATE_MAX_N:
            Gf, Uf, Df = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
            cf = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
            ef = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
            with np.errstate(over="ignore", invalid="ignore"):  # (an overflow shows as inf: no bound)
                K = np.array([np.concatenate([(np.multiply.outer(Df[:, i], np.outer(Gf[i], Uf[i]))
                                               + np.multiply.outer(Df[:, i], np.outer(Uf[i], Gf[i]))).ravel(),
                                              np.outer(Df[:, i], cf[i] * Uf[i] + ef[i] * Gf[i]).ravel()]) for i in range(n)])
                aG, aU, aD = np.abs(Gf), np.abs(Uf), np.abs(Df)  # each entry's terms' magnitudes: a sum may cancel
                A = np.array([np.concatenate([(np.multiply.outer(aD[:, i], np.outer(aG[i], aU[i]))
                                               + np.multiply.outer(aD[:, i], np.outer(aU[i], aG[i]))).ravel(),
                                              np.outer(aD[:, i], abs(cf[i]) * aU[i] + abs(ef[i]) * aG[i]).ravel()])
                              for i in range(n)])
            bound, how = enumeration_bound(K, d ** 3, block.M, A), "enumeration"
        bar = bar2(ctx, n, block.M)
        _require(ctx, bound is not None and bound > bar, w,
                 f"every index set S is at relative distance > {bar:.3g} = max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F) from (Qg) and (Lg) "
                 f"({how}, re-derived here)",
                 f"lower bound {bound!r}")
        scaled2(ctx, w, bound, n, block.M)
        return "not_absorbable", None, 0.0
    _require(ctx, case == "relu-like-flip", w, "an absorbable verdict comes with the gated flip")
    _require(ctx, (b.get("argument") or {}).get("route") is None, w, "the gated flip names no search route (S is checked "
             "by the flip itself)", f"recorded route {(b.get('argument') or {}).get('route')!r}")
    _require(ctx, flip_constant(block.activation.expr, False) == 1, w, "σ_g(z) − σ_g(−z) = z for every real z (by pieces)")
    _require(ctx, _parse_number((b.get("argument") or {}).get("c")) == 1, w, "the recorded flip constant is 1",
             f"recorded {(b.get('argument') or {}).get('c')!r}")
    wit = b.get("witness") or {}
    S = wit.get("S")
    _require(ctx, isinstance(S, list) and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in S)
             and len(set(S)) == len(S), w, f"S is a set of distinct hidden units in 0..{n - 1}")
    wb = _flip(block, sorted(S))
    q, rho, R0, s1, s2, dist = _exact_gram.gated_flip(block, wb, sorted(S))
    return accept_exact_flip(ctx, w, wit, wb, rho, R0, Fraction(_f0_lower(block)),
                             linear="‖M + Σ_S w_i (c_i u_i + e_i g_i)ᵀ‖_∞",
                             bias="|b_down + Σ_S c_i e_i w_i − b'_down|_∞ (against a rigorous lower bound of |f(0)|)",
                             quadratic="Lg", quad=(q, s1, s2, dist))
