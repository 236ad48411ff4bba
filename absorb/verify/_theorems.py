"""Per-theorem checks of one block."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._asymptotic import limit_at_point
from absorb.verify._compose import prove
from absorb.verify._gated import parallel_units
from absorb.verify._infeasible import _check_infeasible
from absorb.verify._numerics import _U, _frac_matrix, _parse_number, distance_bar, rounding_allowance, sha256_f64
from absorb.verify._report import _Ctx, _require, _where
from absorb.verify._robust import check_robust
from absorb.verify._symbolic import (
    _gate_derivative_at_zero,
    _same_function,
    _variable,
    _zero,
    flip_constant,
    homogeneous_of_degree,
    is_bounded,
    is_relu_or_gelu,
    shifted_flip_constant,
    vanishing_slopes,
)
from absorb.verify._value_flip import value_flip_block
from absorb.verify._weights import (
    InfNorm,
    _bias_free,
    _block_arrays,
    _flip_block,
    _gate_row_pairs,
    _moved_bias_error,
    _residual,
    _row_pairs,
    _skip_invertible,
    _skip_nonzero,
    _value_expr,
)


def _act(block: Block) -> sp.Expr:
    return block.activation.expr


def _check_nonzero_entry(ctx: _Ctx, w: str, arg: dict[str, Any], M: np.ndarray) -> None:
    e = arg.get("M_nonzero_entry")
    _require(ctx, _skip_nonzero_arr(M), w, "the skip M is nonzero (exact)")
    if e is not None:
        row, col = e.get("row"), e.get("col")
        whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (row, col))  # (1e-300, 0.9, "0": not an index)
        _require(ctx, whole, w, "the recorded entry's row and column are whole numbers", f"recorded row {row!r}, col {col!r}")
        i, j = int(row), int(col)
        okidx = 0 <= i < M.shape[0] and 0 <= j < M.shape[1]
        _require(ctx, okidx and float(M[i, j]) == float(e.get("value", math.nan)) and M[i, j] != 0, w,
                 f"the recorded entry M[{i},{j}] = {e.get('value')} is M's and nonzero")


def _skip_nonzero_arr(M: np.ndarray) -> bool:
    return bool(np.any(M != 0))


def _check_degree(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    arg = b.get("argument", {})
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _check_nonzero_entry(ctx, w, arg, block.M)
    k_act = _parse_number(arg.get("k_activation"))
    k = _parse_number(arg.get("k"))
    h = _value_expr(block)
    if h is None:
        _require(ctx, k_act is not None and k is not None and k == k_act + (1 if block.gated else 0), w,
                 "the recorded degrees are consistent (k = k_σ, or k_g + 1 gated)", f"k_σ = {arg.get('k_activation')}, k = {arg.get('k')}")
    else:
        _require(ctx, arg.get("value_activation") == str(h), w, f"the argument's value activation is the model's h ({h})",
                 f"recorded {arg.get('value_activation')!r}")
        k_val = _parse_number(arg.get("k_value"))
        _require(ctx, k_act is not None and k_val is not None and k is not None and k == k_act + k_val, w,
                 "the recorded degrees are consistent (k = k_g + k_h, gated with a value activation h)",
                 f"k_g = {arg.get('k_activation')}, k_h = {arg.get('k_value')}, k = {arg.get('k')}")
        _require(ctx, homogeneous_of_degree(h, k_val), w,
                 f"the value activation h is positively homogeneous of degree {k_val} (exact at 0, by pieces on x > 0 and x < 0)")
    _require(ctx, homogeneous_of_degree(_act(block), k_act), w,
             f"σ is positively homogeneous of degree {k_act} (exact at 0, by pieces on x > 0 and x < 0)")
    _require(ctx, bool(k > 0) and k != 1, w, f"k = {k} > 0 and k ≠ 1")


def _check_linearization(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    arg = b.get("argument", {})
    _require(ctx, block.gated, w, "the block is gated")
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _check_nonzero_entry(ctx, w, arg, block.M)
    jac = arg.get("jacobian_f_at_0")
    if jac is not None:  # (every unit is o(|x|) at 0, with or without h: J_f(0) = M)
        try:
            J = [[Fraction(str(v)) for v in row] for row in jac]
        except (ValueError, ZeroDivisionError, TypeError):
            J = None
        _require(ctx, J == _frac_matrix(block.M), w, "the recorded exact Jacobian J_f(0) equals M (every unit is o(|x|) at 0)")
    if _value_expr(block) is not None:
        _require(ctx, "dg0" not in arg, w, "the argument with h records no g'(0) (its case records the slopes)")
        _check_linearization_value(ctx, w, arg, block)
        return
    dg0 = _gate_derivative_at_zero(_act(block))
    _require(ctx, dg0 is not None, w, "g(0) = 0 and g is differentiable at 0 (exact at 0, one-sided limits of the pieces next to 0)")
    g0 = _parse_number(arg.get("g0"))
    _require(ctx, arg.get("g0") is None or (g0 is not None and g0 == 0), w, "g(0) = 0 as recorded", f"recorded {arg.get('g0')!r}")
    rec = _parse_number(arg.get("dg0"))
    _require(ctx, ("dg0" not in arg and rec is None) or (rec is not None and _zero(rec - dg0) is True), w,
             f"g'(0) = {dg0} as recorded", f"recorded {arg.get('dg0')}")


def _check_linearization_value(ctx: _Ctx, w: str, arg: dict[str, Any], block: Block) -> None:
    """With a value activation h, by the recorded case: ``product``: g(0) = h(0) = 0 exactly and
    both have finite one-sided derivatives at 0 (re-derived from g and h by pieces), so every unit
    g(·)h(·) is O(|x|²) at 0; ``value-flat`` / ``gate-flat``: one factor bounded on R (re-derived)
    and the other vanishing at 0 with both one-sided derivatives exactly 0, so every unit is o(|x|).
    The recorded values (h's text, g(0), h(0), the slopes, the bounded flags) must be the re-derived ones."""
    h = _value_expr(block)
    _require(ctx, arg.get("value_activation") == str(h), w, f"the argument's value activation is the model's h ({h})",
             f"recorded {arg.get('value_activation')!r}")
    case = arg.get("case")
    _require(ctx, case in ("product", "value-flat", "gate-flat"), w, "the recorded case is one of the argument's",
             f"recorded {case!r}")
    for f, expr in (("g", _act(block)), ("h", h)):
        if (case, f) in (("value-flat", "g"), ("gate-flat", "h")):
            on_r, near = arg.get(f"{f}_bounded") is True, arg.get(f"{f}_bounded_near_0") is True
            _require(ctx, on_r != near and f"{f}_slopes" not in arg and f"{f}0" not in arg
                     and f"{f}_bounded{'_near_0' if on_r else ''}" not in arg, w,
                     f"the argument records {f} as the bounded factor (on R, or near 0)",
                     f"recorded {arg.get(f'{f}_bounded')!r}, {arg.get(f'{f}_bounded_near_0')!r}")
            if on_r:
                _require(ctx, is_bounded(expr), w, f"{f} is bounded on R (continuous, finite limits at ±∞; by pieces)")
            else:
                _require(ctx, bounded_near_zero(expr), w, f"{f} is bounded near 0 (finite one-sided limits at 0, the pieces next to 0)")
            continue
        _require(ctx, f"{f}_bounded" not in arg and f"{f}_bounded_near_0" not in arg, w,
                 f"the argument does not record {f} as a bounded factor")
        sl = vanishing_slopes(expr)
        _require(ctx, sl is not None, w, f"{f}(0) = 0 and {f} has finite one-sided derivatives at 0, so |{f}(z)| ≤ C·|z| near 0 "
                 "(exact at 0, one-sided limits of the pieces next to 0)")
        if case != "product":
            _require(ctx, all(_zero(t) is True for t in sl), w, f"{f}'(0+) = {f}'(0−) = 0, so {f}(z) = o(|z|) at 0",
                     f"re-derived {sl[0]}, {sl[1]}")
        v0 = _parse_number(arg.get(f"{f}0"))
        _require(ctx, v0 is not None and v0 == 0, w, f"{f}(0) = 0 as recorded", f"recorded {arg.get(f'{f}0')!r}")
        rec = arg.get(f"{f}_slopes")
        # each slope recorded as a rational (or null where it is irrational: the argument needs it finite only)
        ok = isinstance(rec, list) and len(rec) == 2
        for v, t in zip(rec if ok else (), sl):
            g = _parse_number(v)
            ok = ok and (v is None or (g is not None and _zero(g - t) is True))
        _require(ctx, ok, w, f"{f}'(0+) = {sl[0]}, {f}'(0−) = {sl[1]} as recorded", f"recorded {rec!r}")


def bounded_near_zero(expr: sp.Expr) -> bool:
    """σ is bounded on some (−δ, δ): bounded on R (by pieces), or with finite one-sided limits at
    0 (the checker's own limits of the pieces next to 0; σ(0) is finite: the model's activation is
    real and finite on R)."""
    if is_bounded(expr):
        return True
    x = _variable(expr)
    for side in (1, -1):
        v = limit_at_point(expr, x, sp.Integer(0), side)
        if v is None or v.free_symbols or not (v.is_finite and v.is_real):
            return False
    return True


def _check_layer_flat_value(ctx: _Ctx, b: dict[str, Any], blk: Block, h: sp.Expr) -> None:
    """Flatness at 0 of a gated layer with a value activation h: g(0) = h(0) = 0 with finite
    one-sided derivatives (every unit O(|x|²)), or g and h positively homogeneous of degrees
    k_g + k_h > 1 (as the degree argument records them); each re-derived by pieces."""
    bw = _where(b)
    act = _act(blk)
    sg, sh = vanishing_slopes(act), vanishing_slopes(h)
    if sg is not None and sh is not None:
        ctx.report.ok(bw, "flat at 0: g(0) = h(0) = 0 with finite one-sided derivatives, so every unit is O(|x|²) (by pieces)")
        return
    for small, big, name in ((sh, act, "h"), (sg, h, "g")):
        if small is not None and all(_zero(t) is True for t in small) and bounded_near_zero(big):
            ctx.report.ok(bw, f"flat at 0: {name} = o(|z|) at 0 and the other factor bounded near 0, so every unit is o(|x|) (by pieces)")
            return
    arg = b.get("argument") or {}
    kg, kh = _parse_number(arg.get("k_activation")), _parse_number(arg.get("k_value"))
    flat = (kg is not None and kh is not None and kg > 0 and kh > 0 and kg + kh > 1
            and homogeneous_of_degree(act, kg) and homogeneous_of_degree(h, kh))
    _require(ctx, flat, bw, "every residual-free block of this layer is o(|x|) at 0 (g and h vanishing with finite slopes at 0, "
             "or homogeneous of total degree > 1)", f"gate {act}, value activation {h}")
    ctx.report.ok(bw, f"flat at 0: g and h homogeneous of total degree {kg + kh} > 1 (by pieces)")


def _necessity_failures(ctx: _Ctx, block: Block) -> tuple[list[str], str]:
    """Result 5's hypotheses that fail on these weights (re-derived here), and a note."""
    out = []
    if block.gated:
        out.append("the block is gated")
    elif not is_relu_or_gelu(_act(block)):
        out.append("σ is not ReLU or GELU")
    if not _bias_free(block):
        out.append("the block has biases")
    if block.d < 2:
        out.append("d < 2")
    inv, inv_how = _skip_invertible(ctx, block)
    if inv is not True:
        out.append(f"M is not proved invertible ({inv_how})")
    if np.any(~np.any(block.W_up != 0, axis=1)):
        out.append("a row of W_up is zero")
    if np.any(~np.any(block.W_down != 0, axis=0)):
        out.append("a column of W_down is zero")
    pairs, worst = _row_pairs(ctx, block)
    if pairs:
        out.append(f"rows {pairs[0][0]} and {pairs[0][1]} of W_up are collinear")
    rows = (f"max |cos| between rows of W_up {worst:.6g}" if worst is not None
            else "rows of W_up screened by one projection, candidates decided in ℚ")
    return out, f"{'H_res' if block.hc is not None else 'M'}: {inv_how}; {rows}"


def _check_index_set(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """Returns (the verdict the evidence supports, the witness rebuilt here or None, the
    allowed linear error ‖c·(D_S U_S + M/c)‖ for the evaluation check)."""
    c = flip_constant(_act(block), block.gated)
    arg = b.get("argument", {})
    sq: Fraction = Fraction(0)
    if arg.get("s") is not None:  # the shifted flip: σ(z) − σ(−z − 2s) = c·(z + s)
        s_rec = _parse_number(arg.get("s"))
        _require(ctx, not block.gated and isinstance(s_rec, sp.Rational) and s_rec != 0, w,
                 "the recorded shift s is a nonzero rational (ungated σ)", f"recorded {arg.get('s')!r}")
        sq = Fraction(int(s_rec.p), int(s_rec.q))
        c = shifted_flip_constant(_act(block), s_rec)
        _require(ctx, c is not None, w, f"σ(z) − σ(−z − 2s) = c·(z + s) for all z with s = {s_rec} (τ(y) = σ(y − s) has the "
                 "flip identity, exact at 0 and every break point, by pieces)")
        _require(ctx, bool(ctx.once.get("class_biases")), w, "the class allows biases (the shifted flip gives the flipped "
                 "units biases −b_up,i − 2s)")
    wit0 = b.get("witness")
    if b.get("verdict") == "unknown" and c is None and not (isinstance(wit0, dict) and wit0.get("S") is not None):
        ctx.report.ok(w, "an 'unknown' verdict with no index set claims nothing: it needs no flip identity of σ")
        return "unknown", None, 0.0
    what = "g(z) + g(−z) = c" if block.gated else "σ(z) − σ(−z − 2s) = c·(z + s)" if sq else "σ(z) − σ(−z) = c·z"
    _require(ctx, c is not None, w, what + " for all z, with a constant c ≠ 0 (exact at 0 and every break point, by pieces)")
    rec_c = _parse_number(b.get("argument", {}).get("c"))
    _require(ctx, rec_c is not None and _zero(rec_c - c) is True, w, f"the flip constant is c = {c} as recorded",
             f"recorded {b.get('argument', {}).get('c')!r}")
    _require(ctx, isinstance(c, sp.Rational), w, "c is rational (the target −M/c is exact)")
    cq = Fraction(int(c.p), int(c.q))
    if block.hc is not None:
        s = block.hc.s
        _require(ctx, np.array_equal(block.M, np.kron(block.hc.H_res, np.eye(block.d // s))), w, "M = H_res ⊗ I_d (the lifted skip)")
    verdict = b.get("verdict")
    wit = b.get("witness")
    if verdict == "absorbable" or (wit is not None and wit.get("S") is not None):
        _require(ctx, wit is not None and isinstance(wit.get("S"), list), w, "an absorbable verdict comes with an index set S")
        S = wit["S"]
        _require(ctx, all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < block.n for i in S) and len(set(S)) == len(S), w,
                 f"S is a set of distinct hidden units in 0..{block.n - 1}")
        rel, upper, zero, slack, rho_inf = _residual(block.W_up, block.W_down, block.M, cq, S)
        how = ("exactly 0 (rationals)" if zero else f"{rel:.3g}, exact rationals" if zero is False
               else f"{rel:.3g}, rigorous upper bound {upper:.3g} (float64)")
        bar = distance_bar(ctx.tol, block.n, block.M)  # (implied by ρ∞ ≤ τ + allowance below; a cheap first screen)
        _require(ctx, upper <= bar, w, f"‖W_down[:,S] W_up[S,:] + M/c‖_F / ‖M/c‖_F ≤ {bar:.6g} = max(τ, √d·(τ + allowance)/‖M‖_F)",
                 f"relative residual {how}")
        claimed = wit.get("residual")
        _require(ctx, isinstance(claimed, (int, float)) and abs(claimed - rel) <= 1e-6 * rel + 2 * slack + 2 * (upper - rel), w,
                 "the recorded residual matches", f"recorded {claimed!r}, re-computed {rel:.6g}")
        _require(ctx, wit.get("exact") is None or zero is None or wit.get("exact") == zero, w, "the recorded exactness matches",
                 f"recorded {wit.get('exact')!r}, re-derived {zero!r}")
        own = ctx.once.get("value_map") if block.gated and not sq else None  # (f, c_h, k): c_h·b_up + k rounds
        wb, e_own = _flip_block(block, S, cq, sq), 0.0
        if own is not None:  # the flip built in f's own class (h kept, the shift c·D_S h(b_S) exact): a witness for f itself
            wb, e_own, eps_b = value_flip_block(own[0], S, cq, own[1], own[2])
            ctx.once["value_flip"] = wb
            _require(ctx, eps_b <= rounding_allowance(block.n), w, "the flip in f's own class moves its output bias exactly up "
                     "to a rounding within the allowance of |f(0)|∞ (rationals)", f"|e|∞ ≤ {e_own:.3g} = {eps_b:.3g}·|f(0)|∞")
        check_witness_block(ctx, w, wit, wb, "the flip of S")
        # B'(x) − f(x) = −(M + c·D_S U_S) x + e exactly, so |B' − f|_∞ ≤ ρ∞|x|_∞ + |e|_∞: the
        # guarantee |f − B'|_∞ ≤ ε(|f(x)|_∞ + |x|_∞ + |f(0)|_∞) needs ρ∞ ≤ τ + the rounding allowance
        # (the constant part e is bounded against |f(0)|_∞ in the evaluation check).
        allowance = rounding_allowance(block.n)
        _require(ctx, rho_inf <= ctx.tol + allowance, w,
                 f"‖M + c·W_down[:,S] W_up[S,:]‖_∞ ≤ τ + {allowance:.2g} (the absolute linear error per unit of |x|_∞)",
                 f"rigorous upper bound {rho_inf:.3g}")
        e_up = e_own if own is not None else _moved_bias_error(block, wb, tuple(int(i) for i in S), cq, sq)
        low = _error_at_a_vertex(block, S, cq, e_up)
        e = wit.get("eval_error")
        if isinstance(e, (int, float)) and not (e >= low / 2 and (e > 0 or zero is not False)):
            _require(ctx, False, w, "the recorded witness error is at least half the "
                     "error re-derived here at a vertex of the unit cube", f"recorded {e!r}, at least {low:.3g} at that vertex")
        prove(wb, rho_inf, e_up)  # (for a stack's composed bound)
        return "absorbable", wb, InfNorm(rho_inf)
    search = b.get("search") or {}
    failing, note = _necessity_failures(ctx, block)
    if verdict == "not_absorbable":
        _require(ctx, not failing, w, "result 5's hypotheses hold: ungated ReLU/GELU, bias-free, d ≥ 2, M invertible, "
                 "rows of W_up nonzero and pairwise non-collinear, columns of W_down nonzero", "; ".join(failing) or note)
        _require(ctx, search.get("status") == "infeasible", w, "the index-set search proved infeasibility",
                 f"search status {search.get('status')!r}")
        _check_infeasible(ctx, w, block, search, -block.M / float(cq), slopes=(1.0, 0.0))  # (ReLU, GELU: σ(z)/z → 1, 0)
        check_robust(ctx, w, b, block, 1.0, 0.0)  # (σ∞ = ReLU)
        return "not_absorbable", None, 0.0
    recorded_all_hold = all(h.get("holds") is not False for h in b.get("hypotheses", []))
    if search.get("status") == "infeasible" and not failing and recorded_all_hold and not ctx.once.get("class_biases"):
        return "not_absorbable", None, 0.0  # the certificate's own evidence proves more than it claims
    return "unknown", None, 0.0


def _error_at_a_vertex(block: Block, S: list[int], c: Fraction, e_up: float) -> float:
    """A lower bound of a flip witness's relative error |g(x) − f(x)|∞ / (|f(x)|∞ + |x|∞ + |f(0)|∞) at
    x = sign(R_r) (|x|∞ = 1), where g − f = R x + e, R = −(M + c·W_down[:,S] W_up[S,:]), |e|∞ ≤ ``e_up`` (the
    moved bias's rounding), and r is R's row of largest absolute sum, so |R x + e|∞ ≥ ‖R‖∞ − e_up: R in
    float64 less its rounding, over |f(x)|, |f(0)| in float64 plus 10⁻¹² of their terms' absolute sum
    (far past any σ's rounding)."""
    idx = list(S)
    M = np.asarray(block.M, dtype=np.float64)
    D, U = np.asarray(block.W_down, dtype=np.float64)[:, idx], np.asarray(block.W_up, dtype=np.float64)[idx]
    with np.errstate(all="ignore"):
        R = M + float(c) * (D @ U)
        err = (len(idx) + 4) * 2.0**-52 * (np.abs(M) + abs(float(c)) * (np.abs(D) @ np.abs(U))) + 2.0**-1060
        rows = np.sum(np.abs(R), axis=1) - np.sum(err, axis=1)
        r = int(np.argmax(rows))
        if not (np.isfinite(rows[r]) and rows[r] > 0):
            return 0.0
        X = np.vstack([np.where(R[r] < 0, -1.0, 1.0), np.zeros(block.d)])
        F = block(X)
        terms = np.abs(X) @ np.abs(M).T + (0.0 if block.b_down is None else np.abs(block.b_down))
        for sl, Wu, Wg, Wd in block.unit_blocks():
            terms = terms + np.abs(block.hidden(X, sl, Wu, Wg)) @ np.abs(np.asarray(Wd, dtype=np.float64)).T
        size = np.max(np.abs(F), axis=1) + 1e-12 * np.max(terms, axis=1) + 2.0**-1000
    den = float(size[0]) + 1.0 + float(size[1])
    low = (float(rows[r]) * (1 - 2.0**-50) - e_up) / den
    return low if math.isfinite(low) else 0.0


def check_witness_block(ctx: _Ctx, w: str, wit: dict[str, Any], wb: Block, what: str) -> None:
    """The recorded witness block (if any) is exactly ``wb``, rebuilt here: the same arrays,
    each with the same SHA-256."""
    recs = (wit.get("block") or {}).get("weights")
    if recs is None:
        return
    mine = _block_arrays(wb)
    _require(ctx, isinstance(recs, dict) and set(recs) == set(mine), w, f"the witness block lists the arrays of {what}",
             f"recorded {sorted(recs) if isinstance(recs, dict) else recs!r}, rebuilt {sorted(mine)}")
    for key, a in mine.items():
        _require(ctx, isinstance(recs[key], dict) and recs[key].get("sha256") == sha256_f64(a), w,
                 f"the witness's {key}' is {what} (SHA-256)")


def _check_witness_numbers(ctx: _Ctx, w: str, wit: dict[str, Any], n: int) -> None:
    """The producer's own measure of its witness (``eval_error``, on ``n_inputs`` inputs) is not
    re-derived — this checker evaluates the block it rebuilt on inputs of its own — but it must
    be a number the verdict allows: an error in [0, τ + 1000·2⁻⁵²·√(n+1)] (the stated tolerance
    and rounding allowance every absorbable verdict is within, a stack's composed witness too)
    on a whole number of inputs (lower bounds of the error: the witness checks)."""
    thr = ctx.tol + rounding_allowance(n)
    if "eval_error" in wit:
        e = wit["eval_error"]
        _require(ctx, isinstance(e, (int, float)) and not isinstance(e, bool) and 0 <= e <= thr, w,
              f"the recorded witness error is within the verdict's bound τ + 1000·ε·√(n+1) = {thr:.3g}", f"recorded {e!r}")
    if "n_inputs" in wit:
        m = wit["n_inputs"]
        _require(ctx, isinstance(m, int) and not isinstance(m, bool) and m >= 0, w,
              "the recorded number of inputs is a whole number", f"recorded {m!r}")


def check_composed_numbers(ctx: _Ctx, w: str, cw: dict[str, Any], n: int, worst: float) -> None:
    """A stack's composed witness record: its numbers as :func:`_check_witness_numbers` asks, its error not far
    below ``worst`` (what the evaluation here found: 0 only for an exact composition), and no field its check does
    not read."""
    _check_witness_numbers(ctx, w, cw, n)
    if extra := sorted(set(cw) - {"eval_error", "n_inputs", "construction"}):
        ctx.report.unchecked(w, "every field of the composed witness's record is one its check reads", f"not re-checked: {', '.join(extra)}")
    e = cw.get("eval_error")
    _require(ctx, not (isinstance(e, (int, float)) and worst > 0 and e < worst / 1e3), w,
             "the recorded error of the composed witness is not far below what its evaluation here finds "
             "(0 only for an exact composition)", f"recorded {e!r}, found {worst:.3g}")


def check_trivial_witness(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> Block:
    """M = 0: the witness is B itself. Every recorded witness field must say so."""
    wb = block.as_residual_free()
    wit = b.get("witness")
    if wit is None:
        return wb
    _require(ctx, isinstance(wit, dict), w, "the witness record is an object")
    _require(ctx, wit.get("S") in (None, []), w, "the trivial witness flips no unit (S empty)", f"recorded S = {wit.get('S')!r}")
    for key in ("residual", "eval_error"):
        if key in wit:
            _require(ctx, wit[key] == 0 and not isinstance(wit[key], bool), w, f"the recorded {key} is 0 (B' = B = f exactly)",
                     f"recorded {wit[key]!r}")
    _require(ctx, wit.get("exact") in (None, True), w, "the recorded exactness is 'exact'", f"recorded {wit.get('exact')!r}")
    check_witness_block(ctx, w, wit, wb, "B with M = 0")
    prove(wb, 0.0, 0.0)
    return wb


_NEAR_TAU = 1e-10
"""The producer's near-collinearity margin: a pair (or a unit's gate and value rows) with
|cos| ≥ 1 − max(τ, 8(d + 2)ε) counts as collinear (a failing hypothesis)."""


def _abs_cos(a: np.ndarray, b: np.ndarray) -> float:
    """|cos| of two float64 rows (each scaled by a power of two first, so that norms neither
    under- nor overflow); nan when a row is zero."""
    a, b = (np.ldexp(v, -int(np.frexp(np.abs(v).max())[1])) if np.any(v) else v for v in (a, b))
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return abs(float(a @ b)) / (na * nb) if na and nb else math.nan


def _near_failure(block: Block, name: str, at: Any) -> tuple[bool, str]:
    """Re-derive a near-degeneracy recorded as failing at ``at``: the rows named there are zero or
    have |cos| ≥ 1 − τ up to the rounding of both computations (8(d + 8)ε)."""
    d = block.d
    tau = max(_NEAR_TAU, 8 * (d + 2) * 2 * _U)
    slack = 8 * (d + 8) * 2 * _U
    if name == "value_not_parallel_to_gate":
        ok_at = isinstance(at, int) and not isinstance(at, bool) and 0 <= at < block.n
        if not ok_at or block.W_gate is None:
            return False, f"recorded unit {at!r} is not a unit of this gated block"
        rows = (np.asarray(block.W_gate, dtype=np.float64)[at], np.asarray(block.W_up, dtype=np.float64)[at])
        where = f"unit {at}"
    else:
        ok_at = (isinstance(at, list) and len(at) == 2 and at[0] != at[1]
                 and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < block.n for i in at))
        U = block.W_gate if name.startswith("gate_") else block.W_up
        if not ok_at or U is None:
            return False, f"recorded pair {at!r} is not a pair of distinct rows"
        U = np.asarray(U, dtype=np.float64)
        rows = (U[at[0]], U[at[1]])
        where = f"rows {at[0]}, {at[1]}"
    c = _abs_cos(*rows)
    return (math.isnan(c) or c >= 1 - tau - slack), f"{where}: |cos| = {c!r}"


def _check_recorded_hypotheses(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    """Every recorded hypothesis is re-derived, whichever way it is recorded: one recorded as
    holding must hold (the dangerous direction); one recorded as failing must fail as the producer
    decides it — exactly for the exact ones, at the recorded pair or unit for a near-degeneracy
    (|cos| within its margin of 1), and for an invertible skip by σ_min ≤ 10·k·ε·σ_max."""
    G = block.W_gate
    redo: dict[str, Callable[[], bool | None]] = {
        "skip_nonzero": lambda: _skip_nonzero(block),
        "bias_free": lambda: _bias_free(block),
        "d_at_least_2": lambda: block.d >= 2,
        "rows_nonzero": lambda: bool(np.all(np.any(block.W_up != 0, axis=1))),
        "columns_nonzero": lambda: bool(np.all(np.any(block.W_down != 0, axis=0))),
        "skip_invertible": lambda: _skip_invertible(ctx, block)[0],
        "rows_noncollinear": lambda: not _row_pairs(ctx, block)[0],
        "gate_rows_nonzero": lambda: G is not None and bool(np.all(np.any(G != 0, axis=1))),
        "gate_rows_noncollinear": lambda: G is not None and not _gate_row_pairs(ctx, block)[0],
        "value_not_parallel_to_gate": lambda: G is not None and not parallel_units(ctx, block),
    }
    exact = {"skip_nonzero", "bias_free", "d_at_least_2", "rows_nonzero", "columns_nonzero", "gate_rows_nonzero"}
    for h in b.get("hypotheses", []):
        if not isinstance(h, dict):
            _require(ctx, False, w, "each recorded hypothesis is an object", f"recorded {h!r}")
        name, holds = h.get("name"), h.get("holds")
        if holds is None and name == "rank":  # a number the linear check re-derives; it records no holds
            continue
        if name not in redo:
            ctx.report.unchecked(w, f"hypothesis {name!r} as recorded", "the checker has no route for this hypothesis")
            continue
        if holds is not True and holds is not False:
            _require(ctx, False, w, f"hypothesis {name} is recorded as holding or failing", f"recorded holds = {holds!r}")
        if holds is True:
            mine = redo[name]()
            # (the recorded statement is prose, not a claim this check reads: the report does not repeat it next to a ✓)
            _require(ctx, mine is True, w, f"hypothesis {name} holds", f"re-derived here: {mine}")
        elif name in exact:
            mine = redo[name]()  # (each check below speaks only when it fails: the report lists what holds)
            if mine is not False:
                _require(ctx, False, w, f"hypothesis {name} fails, as recorded (exact)", f"re-derived: {mine}")
        elif name == "skip_invertible":
            H = np.asarray(block.hc.H_res if block.hc is not None else block.M, dtype=np.float64)
            s = np.linalg.svd(H, compute_uv=False)
            if s[-1] > 2 * 10 * H.shape[0] * 2 * _U * s[0]:
                _require(ctx, False, w, "the skip fails the invertibility test, as recorded (σ_min ≤ 10·k·ε·σ_max, within a factor 2)",
                         f"σ_min = {s[-1]:.3g}, σ_max = {s[0]:.3g}")
        elif h.get("at") is not None or redo[name]() is not False:  # (exactly degenerate: fails by any margin, but
            ok, detail = _near_failure(block, name, h.get("at"))       # a recorded place must be a failing one)
            if not ok:
                _require(ctx, False, w, f"hypothesis {name} fails where recorded, as the producer decides it (|cos| ≥ 1 − τ)", detail)


# ------------------------------------------------- an affine value activation --
_AFFINE_EXACT_MAX = 200_000
"""Up to this many entries c·W_up is checked exact entry by entry in rationals; above, only c = ±2^e."""


def normalised_value_block(ctx: _Ctx, w: str, rec: Any, block: Block) -> tuple[Block, bool, bool]:
    """The entry's ``value_normalisation`` {c, k}: re-derive that the model's value activation is
    h(z) = c·z + k for every real z (exactly at 0 and at every break point, and by exact
    simplification on every piece), then rebuild here the block with h(z) = z, ``W_up * c`` and
    ``b_up * c + k`` in float64 (the same function when exact). Returns (that block, whether the
    float64 arrays are exactly c·W_up and c·b_up + k, and whether c·W_up alone is)."""
    _require(ctx, isinstance(rec, dict) and set(rec) <= {"c", "k", "statement", "steps"}, w,
             "the value normalisation records c, k (and h's proof)", f"recorded {rec!r}")
    c, k = _parse_number(rec.get("c")), _parse_number(rec.get("k"))
    _require(ctx, c is not None and k is not None and c != 0, w, "the normalisation's c and k are rational numbers, c ≠ 0",
             f"recorded c = {rec.get('c')!r}, k = {rec.get('k')!r}")
    h = _value_expr(block)
    _require(ctx, block.gated and h is not None, w, "the block is gated with a value activation h (the normalisation's subject)")
    y = sp.Symbol("y", real=True)
    try:
        same = _same_function(h, c * y + k)
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        same = False
    _require(ctx, same, w, f"h(z) = {c}·z + {k} for every real z (exact at 0 and at every break point, and on every piece)",
             f"h = {h}")
    sentence = f"h(z) = c·z + k for every real z with c = {c}, k = {k}"
    _require(ctx, rec.get("statement") in (None, sentence), w, "the normalisation's statement is the one c and k give",
             f"recorded {rec.get('statement')!r}")
    cq, kq = Fraction(int(c.p), int(c.q)), Fraction(int(k.p), int(k.q))
    cf, kf = float(cq), float(kq)
    W = np.asarray(block.W_up, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        W2 = W * cf
        b = None if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
        b2 = (np.full(block.n, kf) if kq != 0 else None) if b is None else b * cf + kf
    ok = bool(np.all(np.isfinite(W2))) and (b2 is None or bool(np.all(np.isfinite(b2)))) and Fraction(cf) == cq
    if ok:
        num, den = abs(cq.numerator), cq.denominator
        if num & (num - 1) == 0 and den & (den - 1) == 0:  # c = ±2^e: exact where the product is normal or 0
            ok = bool(np.all((W == 0) | (np.abs(W2) >= np.finfo(np.float64).tiny)))
        else:
            ok = W.size <= _AFFINE_EXACT_MAX and all(Fraction(float(v)) * cq == Fraction(float(v) * cf) for v in np.unique(W))
    w_ok = ok
    if ok:
        bv = np.zeros(block.n) if b is None else b
        ok = b2 is None or all(Fraction(float(v)) * cq + kq == Fraction(float(r)) for v, r in zip(bv, b2))
    if w_ok and not ok:  # (an index set's flip is then rebuilt in f's own class: absorb.verify._value_flip)
        ctx.once["value_map"] = (block, cq, kq)
    ctx.report.ok(w, f"h(z) = {c}·z + {k}: the block is rebuilt here with h(z) = z, W_up·{c}, b_up·{c} + {k} "
                  f"({'exactly' if ok else 'with rounding in c·b_up + k' if w_ok else 'with rounding'} in float64)")
    return block.replace(W_up=W2, b_up=b2, value_activation=None), ok, w_ok


# ------------------------------------------------------- an exact input rescaling --
_SCALE_EXPONENT_MAX = 2200  # (beyond it every nonzero float64 entry overflows or vanishes)


def rescaled_block(ctx: _Ctx, w: str, rec: Any, block: Block) -> Block:
    """The entry's ``input_scale`` {exponent: k}: the block F(x) = 2^-k·f(2^k·x), rebuilt here — the weight
    rows (up and gate) times 2^k, the down weights and output bias times 2^-k, the skip and inner biases as
    they are — and required exact in each array's dtype, k the frame's rule's (re-derived here: the recorded number is
    checked, though any k would be sound: g ↦ 2^-k·g(2^k·x) maps
    residual-free blocks of each class onto themselves, and |f − g|∞ ≤ τ(|f(x)|∞ + |x|∞ + |f(0)|∞) for all x
    holds exactly when the same holds for F and that image of g). The rest of the entry is checked on F."""
    _require(ctx, isinstance(rec, dict) and set(rec) <= {"exponent", "statement"}, w,
             "the input rescaling records its exponent", f"recorded {rec!r}")
    k = rec.get("exponent")
    _require(ctx, isinstance(k, int) and not isinstance(k, bool) and abs(k) <= _SCALE_EXPONENT_MAX, w,
             "the input rescaling's exponent is an integer", f"recorded {k!r}")
    _require(ctx, block.hc is None, w, "the rescaled block is not a lifted Hyper-Connection block")
    rows = block.W_gate if block.gated else block.W_up  # (the frame's rule, re-derived: any k is sound, this one is recorded)
    with np.errstate(all="ignore"):  # (2048 rows at a time: no float64 copy of a large layer)
        tops = [float(t) for a in range(0, rows.shape[0], 2048)
                for t in np.max(np.abs(np.asarray(rows[a:a + 2048], dtype=np.float64)), axis=1, initial=0.0) if 0 < t < math.inf]
    own = 1 - math.frexp(sorted(tops)[(len(tops) - 1) // 2])[1] if tops else 0
    _require(ctx, k == own, w, "the exponent is the frame's rule's: the lower median over nonzero rows of max |entry| "
             "(gate rows when gated) times 2^k lies in [1, 2)", f"recorded {k}, the rule gives {own}")
    arrays = {}
    for key, e in (("W_up", k), ("W_gate", k), ("W_down", -k), ("b_down", -k)):
        a = getattr(block, key)
        if a is None:
            continue
        with np.errstate(over="ignore", under="ignore"):
            r = np.ldexp(a, e).astype(a.dtype)
            back = np.ldexp(r, -e).astype(a.dtype)
        _require(ctx, bool(np.all(np.isfinite(r))) and np.array_equal(back, a), w, f"{key} times 2^{e} is exact in {a.dtype}",
                 "an entry rounds or overflows", fail_only=True)
        arrays[key] = r
    ctx.report.ok(w, f"f is checked as F(x) = 2^{-k}·f(2^{k}·x), rebuilt here exactly (the same answer at every tolerance)")
    return block.replace(**arrays)
