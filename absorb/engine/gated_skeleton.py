"""The gated skeleton for step-like gates (beyond the paper; docs/results/gated-skeleton.md).

A gated block f(x) = M x + W_down (σ_g(W_gate x + b_gate) ∘ (W_up x + b_up)) + b_down whose gate
has finite limits L₊ = lim_{s→+∞} σ_g(s) ≠ 0 and L₋ = lim_{s→−∞} σ_g(s) = 0 (sigmoid,
(1 + tanh)/2, (1 + erf)/2; :func:`absorb.symbolic.growth.gate_limits`): along rays,
f(tx)/t → M x + L₊ Σ_i w_i H(g_i·x)(u_i·x) off the gate hyperplanes, and the jumps
L₊ w_i (u_i·x) across g_i^⊥ identify the units of any residual-free block of the same kind
and width, with or without biases. For nondegenerate weights (d ≥ 2, gate rows nonzero and
pairwise non-collinear, value rows not parallel to their gate rows, columns of W_down
nonzero) it equals f only if some S has M = −L₊ W_down[:,S] W_up[S,:].

The index-set search decides that condition (target −M/L₊, the flip constant of such gates);
this module turns its proof of infeasibility into ``not_absorbable``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from absorb.engine import hypotheses as hyp
from absorb.engine._collinear import _normalised_block
from absorb.engine.verdict import BlockDecision, Hypothesis, Theorem, Verdict, Witness
from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.search._types import SearchResult
from absorb.symbolic import growth

_EPS = np.finfo(float).eps


def gate_hypotheses(block: Block) -> list[Hypothesis]:
    """The nondegeneracy of a gated block: d ≥ 2; gate rows nonzero and pairwise non-collinear;
    columns of W_down nonzero; each value row not parallel to its gate row (|cos| < 1 − τ with
    τ far above the rounding of the computed cosine, so the exact statement holds)."""
    proxy = Block(np.asarray(block.W_gate), np.asarray(block.W_down), get_activation("relu"))
    rows, cols, coll = hyp.nondegenerate(proxy)
    ren = {"rows_nonzero": "gate_rows_nonzero", "rows_noncollinear": "gate_rows_noncollinear"}
    out = [hyp.dimension(block)]
    for h in (rows, cols, coll):
        out.append(Hypothesis(ren.get(h.name, h.name), h.holds, h.statement.replace("W_up", "W_gate"), h.value))
    G = np.asarray(block.W_gate, dtype=np.float64)
    U = np.asarray(block.W_up, dtype=np.float64)
    tau = max(hyp.COLLINEAR_TAU, 8 * (block.d + 2) * _EPS)
    # rows scaled by their max |entry| and then their norm first (no overflow or underflow: a
    # norm product past 1e308 once made a parallel pair's cosine 0)
    Gn, Un = _normalised_block(G, 0, G.shape[0]), _normalised_block(U, 0, U.shape[0])
    cos = np.abs(np.einsum("ij,ij->i", Gn, Un))
    cos[~(np.any(G != 0, axis=1) & np.any(U != 0, axis=1))] = np.nan
    bad = np.flatnonzero(~(cos < 1 - tau))  # zero rows (nan) count as parallel
    stmt = ("every value row is not parallel to its gate row" + (f" (max |cos| = {float(np.max(cos)):.6g} < 1 − {tau:g})"
                                                                  if cos.size else "")
            if not bad.size else f"the value row of unit {int(bad[0])} is parallel to its gate row (or zero)"
            + (f" and {bad.size - 1} more" if bad.size > 1 else ""))
    out.append(Hypothesis("value_not_parallel_to_gate", not bad.size, stmt, {"tau": tau, "units": bad.tolist()[:20]}))
    return out


def _gate_limits(blk: Block) -> Any:
    """The gate's proved limits L± (a property of σ_g) for a gated block; None when ungated or not proved."""
    if not blk.gated or blk.W_gate is None:
        return None
    gl = growth.gate_limits(blk.activation)
    return gl if gl.proved else None


def step_gate_verdict(ctx: Any, infeasible: SearchResult | None, c: Any) -> BlockDecision | None:
    """``not_absorbable`` when the gate is step-like (L₋ = 0, L₊ = c, the flip constant the
    search used), the gated weights are nondegenerate and ``infeasible`` proves no S exists;
    None otherwise (with a note saying what failed)."""
    blk = ctx.block
    gl = _gate_limits(blk)
    if gl is None:
        return None
    lp, lm = gl.value["L_plus"], gl.value["L_minus"]
    if not (lm == 0 and isinstance(lp, sp.Rational) and lp != 0 and c is not None and sp.Rational(c.numerator, c.denominator) == lp):
        ctx.notes.append(f"the gate has limits L₊ = {lp}, L₋ = {lm}; the step-gate skeleton is implemented for L₋ = 0 and "
                         "L₊ equal to the flip constant")
        return None
    ctx.prop(gl)
    hs = gate_hypotheses(blk)
    ctx.H.extend(hs)
    failing = [h.statement for h in hs if not h.holds]
    if failing:
        ctx.notes.append("the step-gate skeleton needs nondegenerate gated weights, and " + "; ".join(failing))
        return None
    if infeasible is None:
        return None
    return ctx.done(Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON,
                    f"Gated skeleton, step-like gate: σ_g(tz + c) → {lp}·H(z) for z ≠ 0, so f(tx)/t → Mx + {lp}·Σ_i w_i H(g_i·x)"
                    "(u_i·x) off the gate hyperplanes, for any biases; the jumps across the gate hyperplanes identify the "
                    "units of any residual-free block (with or without biases), which needs an index set S with "
                    f"{'' if lp == 1 else f'{lp}·'}W_down[:,S] W_up[S,:] = −M; none exists ({infeasible.method}: every S is at "
                    f"relative distance ≥ {infeasible.bound:.3g} > tolerance).", search=infeasible)


# ------------------------------------------------------------------ ReLU-like gates --
def gated_float_columns(block: Block) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Qg, Lg, t) for a gated block in float64: column i of Qg is vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ))
    (d³), column i of Lg is vec(w_i (c_i u_i + e_i g_i)ᵀ) (c = b_gate, e = b_up), and t = −vec M."""
    G, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    n = U.shape[0]
    c = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
    e = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # (an overflow shows as inf: the routes refuse it)
        Q = (np.einsum("ai,ib,ic->abci", D, G, U) + np.einsum("ai,ib,ic->abci", D, U, G)).reshape(-1, n)
        L = np.einsum("ai,ib->abi", D, c[:, None] * U + e[:, None] * G).reshape(-1, n)
    return Q, L, -np.asarray(block.M, dtype=np.float64).reshape(-1)


def gated_columns(block: Block) -> tuple[list[list[Any]], np.ndarray, np.ndarray, np.ndarray]:
    """(exact (Qg) columns, Qg, Lg, t): :func:`gated_exact_columns` and :func:`gated_float_columns`."""
    return (gated_exact_columns(block), *gated_float_columns(block))


def gated_gram(block: Block) -> tuple[np.ndarray, int]:
    """The (Qg) columns' exact Gram matrix (G, e), G / 2^e = QgᵀQg, from the weights' dyadic
    integers (:func:`absorb.engine.skeleton2.exact_gram`: n²·d products, no d³-long column)."""
    from absorb.engine.skeleton2 import dyadic_ints, exact_gram

    G, U, D = (dyadic_ints(np.asarray(a, dtype=np.float64)) for a in (block.W_gate, block.W_up, block.W_down))
    return exact_gram(D, G, U, sym=True)


def gated_magnitudes(block: Block) -> np.ndarray:
    """The stacked (Qg; Lg) columns' entries with every product's absolute value summed:
    |w_a|(|g_b||u_c| + |u_b||g_c|) and |w_a|(|c_i||u_b| + |e_i||g_b|) — what the rounding of
    an entry, a sum of two products that may cancel, is relative to."""
    G, U, D = (np.abs(np.asarray(a, dtype=np.float64)) for a in (block.W_gate, block.W_up, block.W_down))
    n = U.shape[0]
    c = np.zeros(n) if block.b_gate is None else np.abs(np.asarray(block.b_gate, dtype=np.float64))
    e = np.zeros(n) if block.b_up is None else np.abs(np.asarray(block.b_up, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        Q = (np.einsum("ai,ib,ic->abci", D, G, U) + np.einsum("ai,ib,ic->abci", D, U, G)).reshape(-1, n)
        L = np.einsum("ai,ib->abi", D, c[:, None] * U + e[:, None] * G).reshape(-1, n)
    return np.vstack([Q, L])


def gated_exact_columns(block: Block, units: tuple[int, ...] | None = None) -> list[list[Any]]:
    """The (Qg) columns vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)) in exact rationals, for every unit or for
    ``units`` only (d³ rationals each: a flip witness needs S's alone)."""
    from fractions import Fraction

    G, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    F = lambda a: [Fraction(float(v)) for v in a]  # noqa: E731
    exact = []
    for i in range(U.shape[0]) if units is None else units:
        w, g, u = F(D[:, i]), F(G[i]), F(U[i])
        exact.append([wa * (gb * uc + ub * gc) for wa in w for gb, ub in zip(g, u) for gc, uc in zip(g, u)])
    return exact


def gated_lifted_columns(block: Block) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(V, D, T) for the index-set engine (:func:`absorb.engine.skeleton2.lifted_route`): row i of
    V is (vec(g_i u_iᵀ + u_i g_iᵀ), c_i u_i + e_i g_i), D = W_down, T = [0 | −M], padded to p = d² + d
    rows (:func:`absorb.engine.skeleton2.pad_lifted`), so ‖D[:,S] V[S,:] − T‖_F / ‖T‖_F is S's
    distance from (Qg), (Lg) as the routes measure it; and A, the magnitudes that bound V's rounding
    (two products and a sum per entry, :func:`absorb.engine.skeleton2.lifted_slack`)."""
    from absorb.engine.skeleton2 import pad_lifted

    G, U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down, block.M))
    n, d = U.shape
    c = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
    e = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows as inf: no lifted route
        sym = (np.einsum("ib,ic->ibc", G, U) + np.einsum("ib,ic->ibc", U, G)).reshape(n, d * d)
        aG, aU = np.abs(G), np.abs(U)
        A = np.hstack([(np.einsum("ib,ic->ibc", aG, aU) + np.einsum("ib,ic->ibc", aU, aG)).reshape(n, d * d),
                       np.abs(c)[:, None] * aU + np.abs(e)[:, None] * aG])
    return (*pad_lifted(np.hstack([sym, c[:, None] * U + e[:, None] * G]), D, np.hstack([np.zeros((d, d * d)), -M])), A)


def _stacked(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The enumeration route's stacked columns (Qg; Lg) and target (0; −vec M) (float64)."""
    Q, L, t = gated_float_columns(block)
    return np.vstack([Q, L]), np.concatenate([np.zeros(Q.shape[0]), t])


def gated_linear_columns(block: Block) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(V, D, T, a) for the linear condition (Lg) alone (:func:`absorb.engine.skeleton2.linear_route`):
    row i of V is c_i u_i + e_i g_i (c = b_gate, e = b_up; two products and a sum, within γ₄ of
    A_i = |c_i||u_i| + |e_i||g_i| entrywise), D = W_down, T = −M (a square problem, p = d), and
    a_i = |c_i|‖u_i‖₂ + |e_i|‖g_i‖₂ ≥ ‖A_i‖₂ (triangle inequality), without building A."""
    G, U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down, block.M))
    n = U.shape[0]
    c = np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)
    e = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows as inf: no linear route
        V = c[:, None] * U + e[:, None] * G
        a = np.abs(c) * np.linalg.norm(U, axis=1) + np.abs(e) * np.linalg.norm(G, axis=1)
    return V, D, -M, a


def gated_flip_block(block: Block, S: tuple[int, ...]) -> Block:
    """Negate the gate rows, gate biases, value rows, value biases and down columns of S;
    b'_down = b_down + Σ_S c_i e_i w_i (rounded)."""
    idx = list(S)
    G, U, D = (np.array(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    G[idx] *= -1
    U[idx] *= -1
    D[:, idx] *= -1
    bg = None if block.b_gate is None else np.array(block.b_gate, dtype=np.float64)
    bu = None if block.b_up is None else np.array(block.b_up, dtype=np.float64)
    shift = np.zeros(block.d)
    if bg is not None and bu is not None:
        shift = np.asarray(block.W_down, dtype=np.float64)[:, idx] @ (bg[idx] * bu[idx])
    for b in (bg, bu):
        if b is not None:
            b[idx] *= -1
    b_down = shift + (0 if block.b_down is None else np.asarray(block.b_down, dtype=np.float64))
    return block.replace(W_gate=G, W_up=U, W_down=D, b_gate=bg, b_up=bu, b_down=b_down if np.any(b_down) else None,
                         skip=np.zeros((block.d, block.d)), name=block.name + "'")


def gated_flip_residuals(block: Block, S: tuple[int, ...], wb: Block) -> tuple[Any, Any, Any, float]:
    """For the flip ``wb`` of S (σ_g(−z) = σ_g(z) − z): f − g = Σ_S w_i (g_i·x)(u_i·x) + R_L x + R_0
    exactly, R_L = M + Σ_S w_i (c_i u_i + e_i g_i)ᵀ, R_0 = b_down + Σ_S c_i e_i w_i − b'_down.
    Returns (q, ‖R_L‖_{∞→∞}, |R_0|_∞) in exact rationals, with q = ½·max_a Σ_{b,c} |Q_abc| for
    Q = Σ_S w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ), so |Σ_S w_i (g_i·x)(u_i·x)|_∞ ≤ q|x|²_∞ (q = 0 exactly
    when the quadratic part vanishes), and S's relative distance (‖Q‖²_F + ‖R_L‖²_F)^½ / ‖M‖_F."""
    from fractions import Fraction

    from absorb.engine.skeleton2 import aligned_ints, dyadic_ints, exact_distance, exact_quadratic, inf_norm_sq

    d, n, idx = block.d, block.n, list(S)
    f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    G, U, D = f64(block.W_gate).reshape(n, d), f64(block.W_up).reshape(n, d), f64(block.W_down).reshape(d, n)
    c = np.zeros(n) if block.b_gate is None else f64(block.b_gate)
    e = np.zeros(n) if block.b_up is None else f64(block.b_up)
    GS, US, WS = dyadic_ints(G[idx]), dyadic_ints(U[idx]), dyadic_ints(D[:, idx])
    cS, eS = dyadic_ints(c[idx]), dyadic_ints(e[idx])
    q1, q2 = exact_quadratic(WS, GS, US, sym=True)
    Mi = dyadic_ints(block.M)
    (Mz, Cz, Ez), L = aligned_ints(Mi, (np.dot(WS[0] * cS[0], US[0]), WS[1] + cS[1] + US[1]),
                               (np.dot(WS[0] * eS[0], GS[0]), WS[1] + eS[1] + GS[1]))
    rl, rl2 = inf_norm_sq(Mz + Cz + Ez, L)
    bd = dyadic_ints(np.zeros(d) if block.b_down is None else block.b_down)
    bd2 = dyadic_ints(np.zeros(d) if wb.b_down is None else wb.b_down)
    (z0, z1, z2), L0 = aligned_ints(bd, (np.dot(WS[0], cS[0] * eS[0]), WS[1] + cS[1] + eS[1]), bd2)
    r0 = Fraction(max(abs(int(v)) for v in z0 + z1 - z2), 1 << L0)
    _, m2 = inf_norm_sq(*Mi)
    return q1 / 2, rl, r0, exact_distance(q2 + rl2, m2)


def gated_scales(block: Block, units: tuple[int, ...] = ()) -> tuple[Any, Any, Any]:
    """A gated block's own coefficient scales (s₁, s₂) and s₂ over ``units`` only, exact
    rationals (the counterpart of :func:`absorb.engine.skeleton2.relu2_scales`): s₂ =
    max_a Σ_i |w_ai|·|g_i|₁|u_i|₁ bounds |Σ_i w_i (g_i·x)(u_i·x)|_∞ ≤ s₂|x|²_∞, and s₁ = max(1,
    max_a (Σ_b |M_ab| + Σ_i |w_ai|(|c_i||u_i|₁ + |e_i||g_i|₁))) the linear part (c = b_gate,
    e = b_up); the third, s₂'s sum over ``units``, is a flip set's own quadratic size."""
    from absorb.engine.skeleton2 import aligned_ints, dyadic_ints, scales_from_terms

    n, d = block.n, block.d
    f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    Gi, eG = dyadic_ints(f64(block.W_gate).reshape(n, d))
    Ui, eU = dyadic_ints(f64(block.W_up).reshape(n, d))
    Wi, eW = dyadic_ints(np.abs(f64(block.W_down)).reshape(d, n))
    ci, eC = dyadic_ints(np.abs(np.zeros(n) if block.b_gate is None else f64(block.b_gate)))
    ei, eE = dyadic_ints(np.abs(np.zeros(n) if block.b_up is None else f64(block.b_up)))
    g1, u1 = np.sum(np.abs(Gi), axis=1), np.sum(np.abs(Ui), axis=1)
    (cu, eg), Lc = aligned_ints((ci * u1, eC + eU), (ei * g1, eE + eG))
    return scales_from_terms(block, Wi * (g1 * u1), eW + eG + eU, np.dot(Wi, cu + eg), eW + Lc, units)


def relu_like_gated(ctx: Any) -> BlockDecision | None:
    """The handler (absorb.engine.results.RESULTS): a gated block whose gate is ReLU-like
    (σ_g(s) = s + o(1) at +∞, o(1) at −∞), any biases."""
    from absorb.engine.skeleton2 import (
        ENUMERATE_MAX_N,
        EXACT_MAX_N,
        GRAM_MAX_N,
        MAX_COLUMN_ENTRIES,
        cached_gram,
        degenerate_flip,
        enumeration_route_columns,
        enumeration_why,
        gram_route,
        gram_rows_gated,
        lifted_route,
        linear_first,
        linear_route,
        linear_route_first,
        null_route_flip,
        rank_route_gram,
    )
    from absorb.search._types import SearchStatus

    blk = ctx.block
    if not blk.gated or blk.W_gate is None:
        return None
    rl = growth.relu_like_gate(blk.activation)
    if not rl.proved:
        return None
    ctx.prop(rl)

    def unknown(why: str) -> BlockDecision:
        notes = "; ".join(dict.fromkeys(ctx.notes))
        return ctx.done(Verdict.UNKNOWN, Theorem.NONE, f"Unknown: {why}" + (f" (also: {notes})." if notes else "."))

    hs = gate_hypotheses(blk)
    ctx.H.extend(hs)

    failing = [h.statement for h in hs if not h.holds]
    if failing:  # necessity needs them; the flip witness (sufficiency) does not: still look for S
        why = ("the gated skeleton (ReLU-like gate) needs nondegenerate gated weights (d ≥ 2, gate rows nonzero and "
               "pairwise non-collinear, value rows not parallel to their gate rows, nonzero columns of W_down) to prove "
               "not_absorbable, and " + "; ".join(failing))
        out = degenerate_flip(ctx, blk, lambda b: enumeration_route_columns(*_stacked(b), ctx.dist_tol, A=gated_magnitudes(b)),
                              gated_lifted_columns, gated_linear_columns, lambda b, res: _gated_flip(ctx, blk, b, res),
                              lambda b: _gated_independent(b, ctx.dist_tol))
        return out if isinstance(out, BlockDecision) else unknown(why + (f"; {out}" if out else ""))
    from absorb.engine._growth2 import gated_gain, set_gain
    from absorb.engine.witness import sigma_lipschitz

    set_gain(ctx, gated_gain(blk, sigma_lipschitz(blk.activation)))
    b64 = blk.float64()
    small = blk.d ** 3 * blk.n <= MAX_COLUMN_ENTRIES  # the exact and enumeration routes build the columns
    fits = blk.n <= blk.d * blk.d * (blk.d + 1) // 2  # else the (Qg) columns are dependent
    first = linear_first(blk)
    res, out = linear_route_first(ctx, lambda: gated_linear_columns(b64), lambda lin: _gated_flip(ctx, blk, b64, lin))
    if isinstance(out, BlockDecision):
        return out
    failed = out  # why an S meeting (Lg) alone had no witness
    lg = None  # the Gram route's matrix, kept for the null-space route
    if res is None:
        if small and blk.n <= EXACT_MAX_N:
            res = rank_route_gram(*gated_gram(b64), b64.M, ctx.dist_tol) if fits else None
            if res is None and blk.n <= ENUMERATE_MAX_N:
                res = enumeration_route_columns(*_stacked(b64), ctx.dist_tol, A=gated_magnitudes(b64))
        elif fits:
            lg = cached_gram(gram_rows_gated(b64))
            res = gram_route(lg, b64.M, ctx.dist_tol)
        if (res is None or res.status is SearchStatus.UNKNOWN) and small:
            res = lifted_route(*gated_lifted_columns(b64), ctx) or res
        if (res is None or res.status is SearchStatus.UNKNOWN) and not first:  # the linear condition alone, as a fallback
            lin = linear_route(*gated_linear_columns(b64), ctx)
            if lin is not None and (lin.status is SearchStatus.INFEASIBLE or res is None):
                res = lin
    if (res is None or res.status is SearchStatus.UNKNOWN) and fits:  # no S found, none excluded: read S off G's null space
        if lg is None and blk.n <= GRAM_MAX_N:
            lg = cached_gram(gram_rows_gated(b64))
        out = null_route_flip(ctx, lg, gated_linear_columns(b64), lambda r: _gated_flip(ctx, blk, b64, r))
        if out is not None:
            return out
    if res is None and failed is not None:
        return unknown(failed)
    if res is None and not small:
        return unknown(f"the gated skeleton applies, but the index-set engine did not decide the linear condition alone within "
                       f"the time limit, the Gram matrix of its (Qg) columns is not proved positive definite, "
                       f"and its columns (d³·n = {blk.d ** 3 * blk.n}) are beyond what the other routes build")
    if res is None:
        return unknown("the gated skeleton applies, but its (Qg) columns are not proved independent and " + enumeration_why(blk.n))
    lead = ("Gated skeleton, ReLU-like gate: σ_g(s) = s + o(1) at +∞ and o(1) at −∞, so f(tx) = t²·Σ_i w_i ReLU(g_i·x)(u_i·x) "
            "+ t·(…) + o(t) for any biases; for nondegenerate gated weights a residual-free block (with or without biases) equals "
            "f only if some S has Σ_S w_i ⊗ sym(g_i u_iᵀ) = 0 and M = −Σ_S w_i (b_gate,i u_iᵀ + b_up,i g_iᵀ)")
    if res.status is SearchStatus.INFEASIBLE:
        alone = " from (Lg) alone, so from both" if res.method == "linear" else ""
        return ctx.done(Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON,
                        f"{lead}; no S does ({res.method}: every S is at relative distance ≥ {res.bound:.3g} > tolerance{alone}).",
                        search=res)
    if res.status is not SearchStatus.FOUND or res.S is None:
        return unknown(f"the gated skeleton applies, but the search did not decide: {res.reason}")
    out = _gated_flip(ctx, blk, b64, res)
    return out if isinstance(out, BlockDecision) else unknown(out)


def _gated_independent(b64: Block, tol: float) -> SearchResult | None:
    """The Gram route over the units whose (Qg) and (Lg) columns are not both zero by
    construction (w_i = 0, or g_i = u_i = 0, zeroes both: such a unit changes no S's distance):
    INFEASIBLE when only S = ∅ is near; None when neither route applies (a speed-up for
    :func:`absorb.engine.skeleton2.degenerate_flip` only)."""
    from absorb.engine.skeleton2 import gram_route, gram_rows_gated

    G, U, D = (np.asarray(a) for a in (b64.W_gate, b64.W_up, b64.W_down))
    keep = np.flatnonzero(np.any(D != 0, axis=0) & (np.any(G != 0, axis=1) | np.any(U != 0, axis=1)))
    if keep.size == 0 or keep.size > b64.d * b64.d * (b64.d + 1) // 2:
        return None
    sub = b64.replace(W_gate=G[keep], W_up=U[keep], W_down=D[:, keep],
                      b_gate=None if b64.b_gate is None else np.asarray(b64.b_gate)[keep],
                      b_up=None if b64.b_up is None else np.asarray(b64.b_up)[keep])
    return gram_route(gram_rows_gated(sub), sub.M, tol)  # (float, rigorous: milliseconds where the exact rank route takes seconds)


def _gated_flip(ctx: Any, blk: Block, b64: Block, res: SearchResult) -> BlockDecision | str:
    """For an S found by a route: the gated flip witness, checked exactly (``absorbable``), or why
    S proves nothing (no flip identity, too large to check exactly, a biased witness for a
    bias-free question, the check failed)."""
    from absorb.engine.skeleton2 import (
        exact_check_too_large,
        flip_change,
        flip_epsilon,
        flip_failure,
        flip_guarantee,
        linear_error_bound,
    )
    from absorb.engine.witness import eval_threshold, evaluation_error, f0_lower
    from absorb.symbolic import properties as props

    assert res.S is not None
    what = ("the linear condition (Lg)" if res.method == "linear" else "(Qg) and (Lg) in floats (a candidate of the null-space route)"
            if res.method == "nullspace" else "the gated skeleton's conditions")
    flip = props.flip_identity(blk.activation, gated=False)
    if not (flip.proved and flip.value.get("c") == 1):
        return (f"S = {list(res.S)} satisfies {what}, so it proves nothing, and the gate has no "
                f"flip identity σ_g(z) − σ_g(−z) = z to build a witness ({flip.statement})")
    if (too := exact_check_too_large(blk, res.S)) is not None:
        return f"S = {list(res.S)} satisfies {what}, but {too}"
    wb = gated_flip_block(b64, res.S)
    if ctx.bias_free_class and (wb.b_gate is not None or wb.b_up is not None or wb.b_down is not None):
        return f"S = {list(res.S)} gives a witness with biases, but the question is about bias-free blocks"
    q, rl_norm, r0, dist = gated_flip_residuals(b64, res.S, wb)
    f0 = f0_lower(b64)
    thr = eval_threshold(ctx.tol, blk.n)
    s1, s2, s2_own = gated_scales(b64, tuple(res.S))
    eps, scaled = flip_epsilon(q, rl_norm, r0, f0, s1, s2, thr, s2_own)
    err, m = evaluation_error(blk, wb, blk.d, seed=ctx.seed, accept=thr)
    how = flip_guarantee(eps, scaled, q, s1, s2)
    w = Witness(S=res.S, block=wb, residual=dist, eval_error=max(eps, err), n_inputs=m, exact=q == 0 and eps == 0,
                description="negate the gate rows, gate biases, value rows, value biases and down columns in S; "
                f"b'_down = b_down + Σ_S b_gate,i b_up,i w_i; {how}", bound=linear_error_bound(q, rl_norm, r0, scaled))
    if eps <= thr and err <= thr and dist <= ctx.dist_tol and scaled:
        from absorb.engine.skeleton2 import DEGREE2_GAP

        return f"S = {list(res.S)} satisfies {what} up to rounding (relative residual {dist:.2e}), but its gated flip witness: {DEGREE2_GAP}"
    if eps <= thr and err <= thr and dist <= ctx.dist_tol:
        ctx.prop(flip)
        cond = ("Σ_S w_i ⊗ sym(g_i u_iᵀ) = 0 exactly and M = −Σ_S w_i (b_gate,i u_iᵀ + b_up,i g_iᵀ)" if not scaled else
                "Σ_S w_i ⊗ sym(g_i u_iᵀ) = 0 and M = −Σ_S w_i (b_gate,i u_iᵀ + b_up,i g_iᵀ) up to rounding")
        return ctx.done(Verdict.ABSORBABLE, Theorem.GATED_SKELETON,
                        f"Gated skeleton, ReLU-like gate with σ_g(−z) = σ_g(z) − z: S = {list(res.S)} has {cond} "
                        f"(relative residual {dist:.2e}); flipping those units changes the block by "
                        f"−Σ_S w_i (g_i·x + b_gate,i)(u_i·x + b_up,i), {flip_change(scaled, how)} "
                        f"(rigorous bound {eps:.2e}; checked on {m} inputs, max relative error {err:.2e}).", witness=w, search=res)
    return (f"S = {list(res.S)} satisfies {what} within the tolerance, but its flip witness failed its "
            f"check ({flip_failure(q, s2_own, eps, thr, dist, err)})")


def step_gate_search(ctx: Any) -> BlockDecision | None:
    """A step-like gate without a flip identity (so the index-set result did not run): search
    S with L₊·W_down[:,S] W_up[S,:] = −M; its proof that none exists decides ``not_absorbable``
    (:func:`step_gate_verdict`); a found S proves nothing (no witness without the flip)."""
    from fractions import Fraction

    from absorb.search import find_index_set
    from absorb.search._types import SearchStatus

    blk = ctx.block
    gl = _gate_limits(blk)
    if gl is None:
        return None
    lp, lm = gl.value["L_plus"], gl.value["L_minus"]
    if not (lm == 0 and isinstance(lp, sp.Rational) and lp != 0):
        return None
    c = Fraction(int(lp.p), int(lp.q))
    # f is linear along rays (the gate tends to L₊ or 0): its gain at infinity K ≤ ‖M‖∞ + |L₊|·max_r Σ_i |w_ri|·‖u_i‖₁
    # (u_i the value rows) widens the distance bar, as a flip's error is measured against |f(x)| too
    from absorb.engine._scaled import scaled_gain
    from absorb.engine.witness import asymptotic_gain, eval_threshold

    K = asymptotic_gain(blk.skip, blk.W_up, blk.W_down, abs(float(c)) * (1 + 2.0**-40), spread=blk.unit_reach)
    # (c·g for real c too: f − g is linear along rays at infinity, so f's second differences there bound it)
    ctx.gain, ctx.nonlinear = scaled_gain(blk, K, eval_threshold(ctx.tol, blk.n), ctx.seed)
    res = find_index_set(blk.W_up, blk.W_down, -blk.M / float(c), tol=ctx.dist_tol, timeout=ctx.timeout, method=ctx.method,
                         seed=ctx.seed, progress=ctx.search_progress)
    if res.status is SearchStatus.INFEASIBLE:
        return step_gate_verdict(ctx, res, c)
    if res.status is SearchStatus.FOUND:
        ctx.prop(gl)
        return ctx.done(Verdict.UNKNOWN, Theorem.NONE,
                        f"Unknown: the gate is step-like (limits {lp}, 0) and S = {list(res.S or ())} has "
                        f"{lp}·W_down[:,S] W_up[S,:] = −M, so the gated skeleton proves nothing, and the gate has no flip "
                        "identity g(z) + g(−z) = c to build a witness.")
    return None
