"""The checker's re-derivation of the gated skeleton for step-like gates
(docs/results/gated-skeleton.md), by its own route: the gate's limits L± at ±∞ from its
outermost pieces (``_asymptotic`` expansions: no sympy limit, no sample), L₋ = 0 and L₊ ≠ 0
rational, the gated nondegeneracy (d ≥ 2, gate rows nonzero and pairwise non-collinear, value
rows not parallel to their gate rows, columns of W_down nonzero — exact decisions in ℚ), and
the search's infeasibility of the target −M/L₊ re-checked like result 5's."""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._asymptotic import why_not_at_infinity
from absorb.verify._numerics import _parse_number
from absorb.verify._pieces import decide_zero
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _variable, outer_pieces
from absorb.verify._weights import _collinear_pairs, _gate_row_pairs

CASES = ("step", "relu-like", "relu-like-flip")


def relu_like(expr: sp.Expr) -> tuple[bool, str]:
    """σ(s) − s → 0 as s → +∞ and σ(s) → 0 as s → −∞, on the outermost pieces (own expansions)."""
    split = outer_pieces(expr)
    if isinstance(split, str):
        return False, split
    x, pcs = split
    for e, sign, what in ((pcs[-1].expr - x, 1, "σ(s) − s at +∞"), (pcs[0].expr, -1, "σ(s) at −∞")):
        L, why = why_not_at_infinity(e, x, sign)
        if L is None or decide_zero(L) is not True:
            return False, f"{what}: {why or f'→ {L} ≠ 0'}"
    return True, ""


def gate_limits(expr: sp.Expr) -> tuple[tuple[sp.Expr, sp.Expr] | None, str]:
    """((L₊, L₋), "") with L± = lim σ(s) as s → ±∞ on the outermost pieces, finite; else (None, why)."""
    split = outer_pieces(expr)
    if isinstance(split, str):  # (max/min of expressions whose limits exist: the max/min of those limits)
        x = _variable(expr)
        got = [_limit_through_max(expr, x, sign) for sign in (1, -1)]
        if all(L is not None and not L.has(sp.Float) for L in got):
            return (got[0], got[1]), ""  # type: ignore[return-value]
        return None, split
    x, pcs = split
    out = []
    for pc, sign, name in ((pcs[-1], 1, "L₊"), (pcs[0], -1, "L₋")):
        L, why = why_not_at_infinity(pc.expr, x, sign)
        if L is None or L.has(sp.Float):
            return None, f"{name}: {why or 'inexact'}"
        out.append(L)
    return (out[0], out[1]), ""


def _limit_through_max(e: sp.Expr, x: sp.Symbol, sign: int) -> sp.Expr | None:
    """lim e(s) as s → sign·∞ where e is max/min (nested) of expressions with finite limits by the checker's own
    expansions: max and min are continuous, so the limit is the max/min of the limits; None otherwise."""
    if isinstance(e, (sp.Max, sp.Min)):
        parts = [_limit_through_max(a, x, sign) for a in e.args]
        if any(p is None or not p.is_finite for p in parts):
            return None
        return (sp.Max if isinstance(e, sp.Max) else sp.Min)(*parts)
    L, _why = why_not_at_infinity(e, x, sign)
    return L if L is not None and L.is_finite else None


def _parallel_units(G: np.ndarray, U: np.ndarray) -> list[int]:
    """Units whose value row is zero or exactly parallel to its gate row (exact decision per unit)."""
    bad = []
    for i in range(G.shape[0]):
        pair = np.vstack([G[i], U[i]]).astype(np.float64)
        if not np.any(pair[1]) or _collinear_pairs(pair)[0]:
            bad.append(i)
    return bad


def parallel_units(ctx: _Ctx, block: Block) -> list[int]:
    """:func:`_parallel_units` of a gated block, once per block."""
    return ctx.memo("parallel", lambda: _parallel_units(np.asarray(block.W_gate), np.asarray(block.W_up)))


def check_gated_skeleton(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0
    from absorb.verify._beyond import _nonzero_skip, finite_on_reals
    from absorb.verify._infeasible import _check_infeasible

    arg = b.get("argument") or {}
    _require(ctx, block.gated and block.W_gate is not None, w, "the block is gated")
    _nonzero_skip(ctx, w, b, block)
    act = block.activation.expr
    _require(ctx, finite_on_reals(act), w, "the gate σ_g is real and finite at every real point")
    case = arg.get("case", "step")
    _require(ctx, case in CASES, w, f"the case is one of {', '.join(CASES)}", f"recorded {case!r}")
    if case == "step":
        lims, why = gate_limits(act)
        _require(ctx, lims is not None, w, "the gate's limits L± = lim σ_g(s) at s → ±∞ exist and are finite (the checker's own "
                 "expansions of the outermost pieces)", why, fail_only=True)
        lp, lm = lims  # type: ignore[misc]
        _require(ctx, decide_zero(lm) is True and isinstance(lp, sp.Rational) and lp != 0, w,
                 "the gate is step-like: L₋ = 0 and L₊ ≠ 0 rational", f"L₊ = {lp}, L₋ = {lm}")
        rp, rm = _parse_number(arg.get("L_plus")), _parse_number(arg.get("L_minus"))
        _require(ctx, rp is not None and rm is not None and decide_zero(rp - lp) is True and decide_zero(rm - lm) is True, w,
                 f"the recorded limits are the gate's: L₊ = {lp}, L₋ = {lm}",
                 f"recorded L₊ = {arg.get('L_plus')!r}, L₋ = {arg.get('L_minus')!r}")
    else:
        ok, why = relu_like(act)
        _require(ctx, ok, w, "the gate is ReLU-like: σ_g(s) − s → 0 at +∞ and σ_g(s) → 0 at −∞ (the checker's own expansions "
                 "of the outermost pieces)", why, fail_only=True)
    if case != "relu-like-flip":  # (necessity only: the flip witness is checked without it)
        _gate_nondegenerate(ctx, w, block)
    if case == "step":
        search = b.get("search") or {}
        _require(ctx, search.get("status") == "infeasible", w, "the index-set search proved that no S exists",
                 f"search status {search.get('status')!r}")
        _check_infeasible(ctx, w, block, search, -block.M / float(lp), level=abs(float(lp)))  # (f linear along rays: its gain)
        return "not_absorbable", None, 0.0
    from absorb.verify._gated_relu import check_relu_like

    return check_relu_like(ctx, w, b, block, case)


def _gate_nondegenerate(ctx: _Ctx, w: str, block: Block) -> None:
    """The gated skeleton's nondegeneracy, exactly: d ≥ 2, gate rows nonzero and pairwise
    non-collinear, columns of W_down nonzero, no value row zero or parallel to its gate row."""
    G = np.asarray(block.W_gate)
    _require(ctx, block.d >= 2, w, "d ≥ 2", f"d = {block.d}")
    _require(ctx, bool(np.all(np.any(G != 0, axis=1))), w, "every gate row is nonzero (exact)")
    _require(ctx, bool(np.all(np.any(block.W_down != 0, axis=0))), w, "every column of W_down is nonzero (exact)")
    pairs, _ = _gate_row_pairs(ctx, block)
    _require(ctx, not pairs, w, "the gate rows are pairwise non-collinear (exact)",
             f"rows {pairs[0][0]} and {pairs[0][1]} are collinear" if pairs else "")
    par = parallel_units(ctx, block)
    _require(ctx, not par, w, "no value row is zero or parallel to its gate row (exact)", f"unit {par[0]}" if par else "")
