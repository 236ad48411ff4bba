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
from absorb.engine.verdict import BlockDecision, Hypothesis, Theorem, Verdict
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
    gn, un = np.linalg.norm(G, axis=1), np.linalg.norm(U, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.abs(np.einsum("ij,ij->i", G, U)) / (gn * un)
    bad = np.flatnonzero(~(cos < 1 - tau))  # zero rows (nan) count as parallel
    stmt = ("every value row is not parallel to its gate row" + (f" (max |cos| = {float(np.max(cos)):.6g} < 1 − {tau:g})"
                                                                  if cos.size else "")
            if not bad.size else f"the value row of unit {int(bad[0])} is parallel to its gate row (or zero)"
            + (f" and {bad.size - 1} more" if bad.size > 1 else ""))
    out.append(Hypothesis("value_not_parallel_to_gate", not bad.size, stmt, {"tau": tau, "units": bad.tolist()[:20]}))
    return out


def step_gate_verdict(ctx: Any, infeasible: SearchResult | None, c: Any) -> BlockDecision | None:
    """``not_absorbable`` when the gate is step-like (L₋ = 0, L₊ = c, the flip constant the
    search used), the gated weights are nondegenerate and ``infeasible`` proves no S exists;
    None otherwise (with a note saying what failed)."""
    blk = ctx.block
    if not blk.gated or blk.W_gate is None:
        return None
    gl = growth.gate_limits(blk.activation)
    if not gl.proved:
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
