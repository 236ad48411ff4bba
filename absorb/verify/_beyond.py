"""Checks of the results beyond the paper that rest on facts about σ on the whole real line:
the asymptotic skeleton, parity, exponential σ, bounded σ (continuity not needed) and linear σ = c·z — and of the
residual-free class a verdict is about.

Every fact is re-derived by the checker's own route (``_pieces``): σ is split at its break
points into switch-free formulas; a "for all z" fact is exact evaluation at every break point
plus an exact simplification (or a limit, or an interval enclosure) on every open piece.

* **finite on R** — the exact value at every break point is a finite real number, and on
  every piece each power with a non-natural exponent has a base that is positive (or, for a
  negative integer exponent, nonzero) and each log a positive argument; the zeros of those
  bases are break points, so the sign at the piece's sample is the sign on the whole piece.
  The other heads (exp, erf, tanh, sin, …) are finite for real arguments.
* **slopes** — on the outermost pieces σ is one analytic formula; ``L± = lim σ(±s)/(±s)`` as s → +∞ is read off the checker's
  own truncated asymptotic expansion (``_asymptotic``: exact leading terms, a remainder class, no sympy limit, no sample).
* **bounded** — every piece bounded: an interval enclosure of its formula over its interval
  (mpmath's outward-rounded interval arithmetic), else finite one-sided limits at both ends
  of the interval (the formula is continuous inside it; each limit is the exact value where
  the formula is structurally continuous, else an ``_asymptotic`` expansion); plus finite values at break points.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify import _numerics
from absorb.verify._asymptotic import limit_at_infinity, limit_at_point, why_not_at_infinity
from absorb.verify._at_zero import _f0_lower
from absorb.verify._compose import prove
from absorb.verify._infeasible import _check_infeasible
from absorb.verify._intervals import _bounded_interval, _enclose, _finite_number
from absorb.verify._numerics import (
    _U,
    EXACT_ELIM_MAX_D,
    _frac_matrix,
    _gamma,
    _in_range,
    _parse_number,
    exact_rank,
    rounding_allowance,
)
from absorb.verify._pieces import Piece, Refused, _digits, decide_zero, exact_value, normal_form, pieces
from absorb.verify._report import _Ctx, _require
from absorb.verify._robust import check_robust
from absorb.verify._symbolic import _same_function, _variable, is_bounded, outer_pieces, vanishes_on_reals
from absorb.verify._weights import InfNorm, _bias_free, _moved_bias_error, _residual, _row_pairs, _value_expr

_Y = sp.Symbol("y", real=True)
_PREC = 50

BIAS_FREE_ONLY = frozenset({"degree", "linearization", "parity", "index-set", "canonical-form"})
"""Theorems whose impossibility argument covers bias-free residual-free blocks only."""

SKELETON_CASES = ("nondegenerate", "flip-even", "zero", "degenerate-relu")


# ------------------------------------------------------------------------- σ on R --


def _formula_finite(e: sp.Expr, x: sp.Symbol, pc: Piece) -> bool:
    """The switch-free ``e`` is real and finite on the whole open interval of ``pc``."""
    for node in sp.preorder_traversal(e):
        if isinstance(node, sp.Pow) and not (node.exp.is_Integer and node.exp >= 0):
            base, strict_positive = node.base, not node.exp.is_Integer
        elif isinstance(node, sp.log):
            base, strict_positive = node.args[0], True
        else:
            continue
        try:  # (a value with no correct digit has no sign)
            v = _digits(base.subs(x, pc.sample))
        except Refused:
            return False
        if not (v.is_number and v.is_real and v.is_finite):
            return False
        if (v <= 0) if strict_positive else (abs(v) < sp.Float(10) ** -40):
            return False
    return _finite_number(e.subs(x, pc.sample))


_FINITE_HEADS = (sp.exp, sp.tanh, sp.erf, sp.erfc, sp.atan, sp.sin, sp.cos, sp.Abs, sp.Max, sp.Min, sp.Add, sp.Mul)


def _finite_by_structure(e: sp.Expr) -> bool:
    """Every real argument gives a finite real value by the expression's shape alone: real numbers, the
    variable, sums, products, natural powers and exp, tanh, erf, erfc, atan, sin, cos, |·|, max, min of such
    (each maps finite reals to finite reals; no division, root or log) — max(0, tanh z), whose break point
    the pieces cannot place, is one."""
    if e.is_Symbol:
        return True
    if e.is_Number:
        return bool(e.is_real and e.is_finite)
    if isinstance(e, sp.Pow):
        return bool(e.exp.is_Integer and e.exp >= 0) and _finite_by_structure(e.base)
    return isinstance(e, _FINITE_HEADS) and all(_finite_by_structure(a) for a in e.args)


@functools.lru_cache(maxsize=128)
def finite_on_reals(expr: sp.Expr) -> bool:
    """σ(z) is a finite real number for every real z (see the module doc; or by structure, :func:`_finite_by_structure`)."""
    x = _variable(expr)
    if _finite_by_structure(expr):
        return True
    try:
        pts, pcs = pieces(expr, x)
        return (all(_finite_number(exact_value(expr, x, b)) for b in pts)
                and all(_formula_finite(pc.expr, x, pc) for pc in pcs))
    except Refused:
        return False
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return False


@functools.lru_cache(maxsize=128)
def slopes_or_reason(expr: sp.Expr) -> tuple[tuple[sp.Expr, sp.Expr] | None, str]:
    """((L₊, L₋), "") with L± = lim_{s→±∞} σ(s)/s, both derived finite and exact by the
    checker's own expansions (``_asymptotic``: no sympy limit, no sample); else (None, why)."""
    split = outer_pieces(expr)
    if isinstance(split, str):
        return None, split
    x, pcs = split
    out = []
    for pc, sign, name in ((pcs[-1], 1, "L₊"), (pcs[0], -1, "L₋")):
        L, why = why_not_at_infinity(pc.expr / x, x, sign)  # σ(s)/s on the outermost piece
        if L is None or not _finite_number(L):
            return None, f"{name}: σ(s)/s = {pc.expr / x} on the outermost piece, {why or 'not a finite number'}"
        if L.has(sp.Float):
            return None, f"{name} = {L} is inexact (a float in σ)"
        out.append(L)
    return (out[0], out[1]), ""


def slopes(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(L₊, L₋) with L± = lim_{s→±∞} σ(s)/s, or None when not both derived finite and exact."""
    return slopes_or_reason(expr)[0]


@functools.lru_cache(maxsize=128)
def is_even(expr: sp.Expr) -> bool:
    """σ(−z) = σ(z) for every real z: h = σ(z) − σ(−z) is 0 exactly at 0 and at every break
    point of h, and simplifies to 0 on every piece."""
    x = _variable(expr)
    return vanishes_on_reals(expr - expr.subs(x, -x), x)


@functools.lru_cache(maxsize=128)
def exponential_constants(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr] | None:
    """(A, β, C) with σ(z) = A·e^{βz} + C for every real z and A, β ≠ 0 real, derived here
    (β = σ''/σ', A = σ'/(β e^{βz}), C = σ − A e^{βz} on the piece right of the last break
    point), then the identity proved on every piece and at every break point."""
    x = _variable(expr)
    try:
        _, pcs = pieces(expr, x)
        e = pcs[-1].expr
        d1 = sp.simplify(sp.diff(e, x))
        if decide_zero(d1) is True:
            return None
        beta = sp.simplify(sp.diff(d1, x) / d1)
        A = sp.simplify(d1 / (beta * sp.exp(beta * x)))
        C = sp.simplify(e - A * sp.exp(beta * x))
        if any(v.free_symbols or not _finite_number(v) for v in (A, beta, C)):
            return None
        if decide_zero(A) is not False or decide_zero(beta) is not False:
            return None
        if not _same_function(expr, A * sp.exp(beta * _Y) + C):
            return None
    except Refused:
        return None
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return None
    return A, beta, C


def _piece_bounded(e: sp.Expr, x: sp.Symbol, pc: Piece) -> bool:
    lo = "-inf" if pc.lo == -sp.oo else str(sp.N(pc.lo, 40) - sp.Float(10) ** -30)
    hi = "inf" if pc.hi == sp.oo else str(sp.N(pc.hi, 40) + sp.Float(10) ** -30)
    try:
        if _bounded_interval(_enclose(e, x, mpmath.iv.mpf([lo, hi]))):
            return True
    except (ValueError, TypeError, ZeroDivisionError, ArithmeticError):
        pass
    ends = [limit_at_point(e, x, pc.lo, 1) if pc.lo != -sp.oo else limit_at_infinity(e, x, -1),
            limit_at_point(e, x, pc.hi, -1) if pc.hi != sp.oo else limit_at_infinity(e, x, 1)]
    return all(v is not None and _finite_number(v) for v in ends)


@functools.lru_cache(maxsize=128)
def bounded_by_pieces(expr: sp.Expr) -> bool:
    """σ bounded on R, continuity not needed: finite at every break point, and on every piece
    finite with a finite enclosure or finite one-sided limits at both ends."""
    x = _variable(expr)
    try:
        pts, pcs = pieces(expr, x)
        if not all(_finite_number(exact_value(expr, x, b)) for b in pts):
            return False
        return all(_formula_finite(pc.expr, x, pc) and _piece_bounded(pc.expr, x, pc) for pc in pcs)
    except Refused:
        return False
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return False


@functools.lru_cache(maxsize=128)
def linear_constant(expr: sp.Expr) -> sp.Expr | None:
    """c with σ(z) = c·z for every real z (c = σ(1), exact; the identity by pieces)."""
    x = _variable(expr)
    try:
        c = sp.simplify(exact_value(expr, x, sp.Integer(1)))  # (then with tanh, erfc… rewritten: tanh 1 = 2/(1 + e^−2) − 1)
        c = c if c.is_Rational else sp.simplify(normal_form(c))
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return None
    if not _finite_number(c) or not _same_function(expr, c * _Y):
        return None
    return c


# ---------------------------------------------------------------------- the class --
def claimed_biases(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> bool:
    """Whether the verdict is about residual-free blocks with biases (the entry's ``class``).
    An entry without a class (older certificates) is about the class of f itself."""
    cls = b.get("class")
    if cls is None:
        biases = not _bias_free(block)
        ctx.report.ok(w, f"no class recorded: the verdict is about {'biased' if biases else 'bias-free'} residual-free blocks, "
                      "as f is")
        return biases
    _require(ctx, isinstance(cls, dict) and isinstance(cls.get("biases"), bool), w, "the class records whether biases are allowed",
             f"recorded {cls!r}")
    width = cls.get("width")
    _require(ctx, isinstance(width, int) and not isinstance(width, bool) and width == block.n, w,
             f"the class is about width n = {block.n}", f"recorded {width!r}")
    biases = bool(cls["biases"])

    _require(ctx, biases or _bias_free(block), w, "a block with biases is compared with residual-free blocks with biases",
             f"class {'with' if biases else 'without'} biases; f {'is bias-free' if _bias_free(block) else 'has a nonzero bias'}")
    ctx.report.ok(w, f"the verdict is about residual-free blocks of width {block.n}, {'with any biases' if biases else 'bias-free'}")
    return biases


def _require_quiet(ctx: _Ctx, cond: bool, w: str, claim: str, detail: str = "") -> None:
    """``_require`` that records nothing on success (a per-field check summed up elsewhere)."""
    if not cond:
        _require(ctx, cond, w, claim, detail)


def class_statement(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    """The class's sentence (what a reader sees) is the one its checked fields give: rebuilt
    here from the block and the class's bias flag, not taken on trust."""
    cls = b.get("class")
    if not isinstance(cls, dict):
        return
    words = "with any biases (b_up, b_down)" if cls.get("biases") else "bias-free"
    sentence = f"residual-free {block.kind} {block.activation_name} blocks of width {block.n}, {words}"
    _require_quiet(ctx, cls.get("statement") in (None, sentence) and set(cls) <= {"biases", "width", "statement"}, w,
                   "the class's statement is the one its fields give", f"recorded {cls.get('statement')!r}, fields {sorted(cls)}")


# ------------------------------------------------------------------- the theorems --
def _act(block: Block) -> sp.Expr:
    return block.activation.expr


def _nondegenerate(ctx: _Ctx, w: str, block: Block) -> None:
    """Re-derive the skeleton's nondegeneracy: d ≥ 2, rows of W_up nonzero and pairwise
    non-collinear, columns of W_down nonzero."""
    _require(ctx, block.d >= 2, w, "d ≥ 2", f"d = {block.d}")
    _require(ctx, bool(np.all(np.any(block.W_up != 0, axis=1))), w, "every row of W_up is nonzero (exact)")
    _require(ctx, bool(np.all(np.any(block.W_down != 0, axis=0))), w, "every column of W_down is nonzero (exact)")
    pairs, worst = _row_pairs(ctx, block)
    _require(ctx, not pairs, w, "the rows of W_up are pairwise non-collinear",
             f"rows {pairs[0][0]} and {pairs[0][1]} are collinear" if pairs else "")


def _nonzero_skip(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> None:
    from absorb.verify._theorems import _check_nonzero_entry

    _check_nonzero_entry(ctx, w, b.get("argument", {}) or {}, block.M)


def _same_number(rec: object, mine: sp.Expr) -> bool:
    q = _parse_number(rec)
    return q is not None and decide_zero(q - mine) is True


def skeleton_block(block: Block) -> Block:
    from absorb.model.activations import get_activation

    return block.replace(activation=get_activation("relu"), b_up=None, b_gate=None, b_down=None, name=block.name + "∞")


def check_skeleton(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """The asymptotic skeleton (docs/results/skeleton.md): σ finite on R with slopes L±
    (re-derived), then the recorded case's own argument."""
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0  # claims nothing
    arg = b.get("argument") or {}
    _require(ctx, not block.gated, w, "the block is ungated (the skeleton argument is about ungated blocks)")
    _nonzero_skip(ctx, w, b, block)
    act = _act(block)
    _require(ctx, finite_on_reals(act), w, "σ is real and finite at every real point (exact at every break point; on every piece "
             "no power or log can fail)")
    sl, why = slopes_or_reason(act)
    _require(ctx, sl is not None, w, "the slopes L± = lim σ(s)/s at s → ±∞ exist and are finite (the checker's own expansion "
             "of the outermost pieces)", why, fail_only=True)
    Lp, Lm = sl  # type: ignore[misc]
    _require(ctx, _same_number(arg.get("L_plus"), Lp) and _same_number(arg.get("L_minus"), Lm), w,
             f"the recorded slopes are σ's: L₊ = {Lp}, L₋ = {Lm}", f"recorded L₊ = {arg.get('L_plus')!r}, L₋ = {arg.get('L_minus')!r}")
    a, bb = sp.simplify(Lp - Lm), Lm
    _require(ctx, isinstance(a, sp.Rational) and isinstance(bb, sp.Rational), w, "a = L₊ − L₋ and b = L₋ are rational",
             f"a = {a}, b = {bb}")
    c = a + 2 * bb
    _require(ctx, _same_number(arg.get("a"), a) and _same_number(arg.get("b"), bb)
             and (arg.get("c_inf") is None or _same_number(arg.get("c_inf"), c)), w,
             f"the recorded skeleton σ∞ = a·ReLU + b·id has a = {a}, b = {bb}, c∞ = a + 2b = {c}",
             f"recorded a = {arg.get('a')!r}, b = {arg.get('b')!r}, c∞ = {arg.get('c_inf')!r}")
    case = arg.get("case")
    _require(ctx, case in SKELETON_CASES, w, f"the case is one of {', '.join(SKELETON_CASES)}", f"recorded {case!r}")
    if case == "zero":
        _require(ctx, a == 0 and bb == 0, w, "σ∞ ≡ 0 (a = b = 0): every residual-free block's g(tv)/t → 0, f(tv)/t → Mv ≠ 0")
    elif case == "flip-even":
        _require(ctx, a != 0 and c == 0, w, "a ≠ 0 and c∞ = a + 2b = 0", f"a = {a}, c∞ = {c}")
        _nondegenerate(ctx, w, block)
        ctx.report.ok(w, "the kinks identify the units, and M + c∞·W_down[:,S] W_up[S,:] = M ≠ 0 for every S")
    elif case == "nondegenerate":
        _require(ctx, a != 0 and c != 0, w, "a ≠ 0 and c∞ ≠ 0", f"a = {a}, c∞ = {c}")
        _nondegenerate(ctx, w, block)
        search = b.get("search") or {}
        _require(ctx, search.get("status") == "infeasible", w, "the index-set search proved that no S exists",
                 f"search status {search.get('status')!r}")
        _check_infeasible(ctx, w, block, search, -block.M / float(c), slopes=(float(Lp), float(Lm)))
        check_robust(ctx, w, b, block, float(a), float(bb))
    else:  # degenerate-relu
        _require(ctx, a == 1 and bb == 0, w, "σ∞ = ReLU (a = 1, b = 0)", f"a = {a}, b = {bb}")
        from absorb.verify._canonical import check_canonical_form

        skel = skeleton_block(block)
        got, _, _ = check_canonical_form(ctx, w, {"verdict": "not_absorbable", "canonical_form": b.get("canonical_form")}, skel)
        _require(ctx, got == "not_absorbable", w, "the canonical form rules out every bias-free ReLU block for the skeleton")
    return "not_absorbable", None, 0.0


def check_bounded(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """σ bounded on R (continuity not needed), biases allowed: every residual-free block is
    bounded, f is not."""
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0
    h = _value_expr(block)
    _require(ctx, not block.gated or h is not None, w, "the block is ungated, or gated with a value activation h (a linear value "
             "branch is unbounded)")
    _nonzero_skip(ctx, w, b, block)
    # gated: each unit g(·)·h(·) is bounded when both factors are, each proved here by its own pieces
    factors = [("σ" if not block.gated else "the gate g", _act(block))] + ([("the value activation h", h)] if h is not None else [])
    for name, act in factors:
        if is_bounded(act):
            ctx.report.ok(w, f"{name} is continuous with finite limits at ±∞ (exact at every break point, by pieces), hence bounded")
        else:
            _require(ctx, bounded_by_pieces(act), w, f"{name} is bounded on R: finite at every break point, and on every piece an "
                     "interval enclosure or finite one-sided limits at both ends")
    return "not_absorbable", None, 0.0


def check_linear(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """σ(z) = c·z (c ≠ 0 rational): f is affine with linear part A = M + c·W_down W_up; a
    residual-free block of width n realises it iff rank A ≤ n."""
    _require(ctx, not block.gated, w, "the block is ungated")
    c = linear_constant(_act(block))
    if c is None and sp.simplify(exact_value(_act(block), _variable(_act(block)), sp.Integer(0))) != 0:
        from absorb.verify._linear import check_affine  # σ(0) ≠ 0: σ(z) = c·z + k, k ≠ 0

        return check_affine(ctx, w, b, block)
    _require(ctx, c is not None, w, "σ(z) = c·z for every real z, c = σ(1) (exact at every break point, by pieces)")
    _require(ctx, isinstance(c, sp.Rational) and c != 0, w, "c is a nonzero rational", f"c = {c}")
    rec = (b.get("argument") or {}).get("c")
    _require(ctx, rec is None or _same_number(rec, c), w, f"the recorded c = {c} is σ's", f"recorded {rec!r}")
    cf = float(c)
    d, n = block.d, block.n
    U, D, M = block.W_up.astype(np.float64, copy=False), block.W_down.astype(np.float64, copy=False), block.M  # float32 weights: D @ U in float64
    A = M + cf * (D @ U)
    absA = np.abs(M) + abs(cf) * (np.abs(D) @ np.abs(U))
    err_A = _gamma(n + 3) * float(np.linalg.norm(absA))
    if n >= d:
        ctx.report.ok(w, f"n = {n} ≥ d = {d}: every linear map of R^{d} has rank ≤ n")
        supported = "absorbable"
    else:
        s = np.linalg.svd(A, compute_uv=False)
        err_svd = 10 * d * 2 * _U * float(s[0])
        lower = float(s[n]) - err_A - err_svd
        scale = float(np.linalg.norm(M))
        exact = None
        if d <= EXACT_ELIM_MAX_D and n * d * d <= _numerics.EXACT_WORK:
            cq = Fraction(int(c.p), int(c.q))
            Uf, Df, Mf = _frac_matrix(U), _frac_matrix(D), _frac_matrix(M)
            Aq = [[Mf[i][j] + cq * sum((Df[i][k] * Uf[k][j] for k in range(n)), Fraction(0)) for j in range(d)] for i in range(d)]
            exact = exact_rank(Aq)
        claimed = (b.get("argument") or {}).get("sigma_lower_bound")
        # a recorded bound is a claim whatever the verdict: not above σ_{n+1} plus the rounding
        _require(ctx, claimed is None or (isinstance(claimed, (int, float)) and not isinstance(claimed, bool)
                                          and claimed <= float(s[n]) + err_A + err_svd), w,
                 "the recorded lower bound on σ_{n+1} is not overstated", f"recorded {claimed!r}, computed {s[n]:.17g}")
        if b.get("verdict") == "not_absorbable":
            # (the float account below is relative: products and squares in the subnormals break it)
            _require(ctx, exact is not None or _in_range(U, D, M), w, "every weight is within [2^-200, 2^200], where the float "
                     "rank bound holds (or the exact rank is computed)", "weights outside it and d too large for exact rank")
            # no g of rank ≤ n is within the tolerance when σ_{n+1}/√d > τ/(1 − τ): along an x in the top n + 1 right
            # singular vectors with G x = 0 the error is f's linear part, |A x|∞/(|A x|∞ + |x|∞) ≥ a/(1 + a), a = σ_{n+1}/√d
            bar = math.sqrt(d) * ctx.tol / (1 - ctx.tol) * (1 + 4 * _U)
            _require(ctx, lower > bar, w, f"σ_{n + 1}(M + c·W_down W_up) > √d·τ/(1 − τ) = {bar:.3g}: no rank-n map is within the tolerance",
                     f"rigorous lower bound {lower:.6g} (computed {s[n]:.6g})" + (f"; exact rank {exact}" if exact is not None else ""))
            _require(ctx, claimed is not None, w, "the lower bound on σ_{n+1} is recorded", "none recorded")
            if exact is not None:
                _require(ctx, exact > n, w, f"exact rank of M + c·W_down W_up is {exact} > n = {n}")
            return "not_absorbable", None, 0.0
        tail = float(np.sqrt(np.sum(s[n:] ** 2)))
        if exact is not None and exact <= n:
            ctx.report.ok(w, f"exact rank {exact} ≤ n = {n}")
            supported = "absorbable"
        elif tail + err_A + err_svd <= ctx.tol * scale:
            ctx.report.ok(w, f"M + c·W_down W_up is within τ of rank ≤ n (tail {tail:.3g})")
            supported = "absorbable"
        else:
            return "unknown", None, 0.0
    # the recorded residual of the witness: 0 (n ≥ d: A itself), else the truncated SVD's tail ‖A − A_n‖_F / ‖M‖_F
    from absorb.verify._linear import require_recorded_residual

    want, slack = (0.0, 0.0) if n >= d else (tail / scale, 2 * (err_A + err_svd) / scale + 1e-12 * tail / scale)
    require_recorded_residual(ctx, w, b, want, slack)
    wb = linear_witness(block, cf)
    return _linear_error(ctx, w, b, block, wb, Fraction(int(c.p), int(c.q)), supported)


def _linear_error(ctx: _Ctx, w: str, b: dict[str, Any], block: Block, wb: Block, cq: Fraction, supported: str
                  ) -> tuple[str, Block | None, float]:
    """f − wb = (M + c·W_down W_up − c·W'_down W'_up) x + (c·W_down b_up + b_down − b'_down) exactly: the
    linear part is the flip residual of every unit of [W_up; W'_up], [W_down, −W'_down] (its ∞-operator
    norm, re-derived by :func:`_residual`), the constant one the moved bias of every unit
    (:func:`_moved_bias_error`), against |f(0)|_∞. Both within the tolerance, or the evidence
    supports only 'unknown' (an 'absorbable' verdict then fails)."""
    n = block.n
    U2 = np.vstack([block.W_up.astype(np.float64), wb.W_up])
    D2 = np.hstack([block.W_down.astype(np.float64), -wb.W_down])
    rho = _residual(U2, D2, block.M, cq, list(range(U2.shape[0])))[4]
    e = _moved_bias_error(block, wb, tuple(range(n)), cq)
    lo = _f0_lower(block) if e and math.isfinite(e) else 0.0
    eps_b = 0.0 if e == 0 else (e / lo if lo > 0 else math.inf)
    allowance = rounding_allowance(n)
    ok = rho <= ctx.tol + allowance and eps_b <= allowance
    claim = (f"the linear witness's error is within τ + {allowance:.2g}: ‖M + c·W_down W_up − c·W'_down W'_up‖_∞ ≤ {rho:.3g} "
             f"and the output bias's rounding ≤ {e:.3g} = {eps_b:.3g}·|f(0)|∞ (re-derived)")
    if not ok and b.get("verdict") != "absorbable":
        ctx.report.ok(w, "the linear witness is not proved within the tolerance: 'unknown' is what the evidence supports", claim)
        return "unknown", None, 0.0
    _require(ctx, ok, w, claim)
    from absorb.verify._linear import require_recorded_exactness

    require_recorded_exactness(ctx, w, b, rho, e)
    prove(wb, rho, e)
    return supported, wb, InfNorm(rho)


def check_linear_numbers(ctx: _Ctx, w: str, arg: dict[str, Any], block: Block) -> None:
    """A linear block's recorded singular values of A = M + c·W_down W_up (the first n + 2, as recorded) are A's (Weyl: each within
    the rounding of A and of the SVD), and the recorded lower bound on σ_{n+1} is no further below it
    than 100 times that rounding (it is checked not to exceed it by the theorem's check)."""
    c = _parse_number(arg.get("c"))
    _require_quiet(ctx, c is not None, w, "the linear block's constant c is recorded")
    cf = float(c)  # type: ignore[arg-type]
    U, D, M = block.W_up.astype(np.float64, copy=False), block.W_down.astype(np.float64, copy=False), block.M
    s = np.linalg.svd(M + cf * (D @ U), compute_uv=False)
    absA = np.abs(M) + abs(cf) * (np.abs(D) @ np.abs(U))
    err = _gamma(block.n + 3) * float(np.linalg.norm(absA)) + 20 * block.d * _U * float(s[0])
    sv = arg.get("singular_values")
    if sv is not None:
        ok = isinstance(sv, list) and len(sv) == len(s[: block.n + 2]) and all(isinstance(v, float) and abs(v - t) <= 2 * err for v, t in zip(sv, s))
        _require_quiet(ctx, ok, w, "the recorded singular values of M + c·W_down W_up are its own (within the rounding)",
                 f"recorded {sv!r}, re-computed {s.tolist()!r}")
    lb = arg.get("sigma_lower_bound")
    if lb is not None and block.n < block.d:
        t = float(s[block.n])
        _require_quiet(ctx, isinstance(lb, float) and lb >= t - 100 * err, w, f"the recorded lower bound on σ_{block.n + 1} is σ_{block.n + 1} "
                 "less a rounding margin", f"recorded {lb!r}, re-computed σ_{block.n + 1} = {t!r}, rounding {err:.3g}")


def linear_witness(block: Block, c: float) -> Block:
    """A residual-free block with σ(z) = c·z equal to f: W'_up = [I; 0], W'_down = [A/c, 0]
    (n ≥ d), else the truncated SVD of A with W'_down divided by c; b'_down = c·W_down b_up + b_down."""
    d, n = block.d, block.n
    A = block.M + c * (block.W_down.astype(np.float64, copy=False) @ block.W_up.astype(np.float64, copy=False))
    Wu, Wd = np.zeros((n, d)), np.zeros((d, n))
    if n >= d:
        with np.errstate(over="ignore", invalid="ignore"):  # (a subnormal c: an infinite witness, rejected by its check)
            Wu[:d], Wd[:, :d] = np.eye(d), A / c
    else:
        from absorb.verify._linear import _svd

        Ul, s, Vt = _svd(A)
        Wu[:n], Wd[:, :n] = Vt[:n], Ul[:, :n] * (s[:n] / c)
    bias = (0 if block.b_up is None else c * (block.W_down @ block.b_up)) + (0 if block.b_down is None else block.b_down)
    return block.replace(W_up=Wu, W_down=Wd, b_up=None, b_gate=None,
                         b_down=None if np.isscalar(bias) else np.asarray(bias, dtype=float), skip=np.zeros((d, d)),
                         name=block.name + "'")


__all__ = ["BIAS_FREE_ONLY", "bounded_by_pieces", "check_bounded", "check_linear",
           "check_linear_numbers", "check_skeleton", "claimed_biases", "class_statement", "exponential_constants", "finite_on_reals", "is_even", "linear_constant",
           "linear_witness", "slopes"]
