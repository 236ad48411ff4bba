"""Facts about the activation σ, re-derived by the checker's own route: exact evaluation at
every break point and an exact simplification on every analytic piece (``_pieces``).

Each "for all z" fact is split as: the points where σ switches formula (and 0), where the
fact is checked by sympy's exact evaluation of σ itself (``Max(0, 0) = 0``, ``0**0 = 1``);
and the open intervals between them, where σ is one switch-free formula and the fact is an
identity of that formula (exact simplification, with the sign of the variable known on
half-lines). Anything the decomposition cannot handle is *not* proved (the claim fails).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import sympy as sp

from absorb.verify._asymptotic import limit_at_infinity, limit_at_point
from absorb.verify._pieces import Piece, Refused, branch, decide_zero, exact_value, normal_form, pieces, pl_lipschitz

_P = sp.Symbol("p", positive=True)
_T = sp.Symbol("t", positive=True)


def _variable(expr: sp.Expr) -> sp.Symbol:
    syms = sorted(expr.free_symbols, key=str)
    return syms[0] if syms else sp.Symbol("x", real=True)


def outer_pieces(expr: sp.Expr) -> tuple[sp.Symbol, tuple[Piece, ...]] | str:
    """(x, pieces of σ) — the outermost ones decide σ at ±∞ — or, where σ cannot be split, why."""
    x = _variable(expr)
    try:
        return x, pieces(expr, x)[1]
    except Refused as exc:
        return f"σ could not be split into pieces: {exc}"
    except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return f"σ could not be split into pieces ({type(exc).__name__})"


def vanishes_on_reals(h: sp.Expr, x: sp.Symbol) -> bool:
    """h(z) = 0 for every real z: exactly 0 at 0 and at every break point of h, and simplifying to
    0 on every piece; False when that is not proved."""
    try:
        pts, pcs = pieces(h, x, (sp.Integer(0),))
        return (all(decide_zero(exact_value(h, x, b)) is True for b in pts)
                and all(_identity_on_piece(pc.expr, x, pc) for pc in pcs))
    except Refused:
        return False
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return False


def _zero(e: sp.Expr) -> bool | None:
    """True/False when sympy decides e = 0; None when it cannot."""
    return decide_zero(e)


def _on_piece(e: sp.Expr, x: sp.Symbol, pc: Piece) -> sp.Expr:
    """``e`` (switch-free on ``pc``) with the variable's sign made known on a half-line."""
    if pc.lo == 0 and pc.hi == sp.oo:
        return e.subs(x, _P)
    if pc.lo == -sp.oo and pc.hi == 0:
        return e.subs(x, -_P)
    return e


def _identity_on_piece(e: sp.Expr, x: sp.Symbol, pc: Piece) -> bool:
    """e ≡ 0 on the open interval of ``pc`` (e switch-free there): exact simplification."""
    if decide_zero(e) is True:
        return True
    q = _on_piece(e, x, pc)
    return bool(decide_zero(q) is True or decide_zero(sp.expand_log(q, force=False)) is True)


def _constant_on_piece(e: sp.Expr, x: sp.Symbol, pc: Piece) -> sp.Expr | None:
    """The constant value of switch-free ``e`` on ``pc``, or None if not proved constant
    (exact simplification of ``e``, with the variable's sign known, then of its normal form)."""
    tries = (lambda: e, lambda: _on_piece(e, x, pc), lambda: normal_form(_on_piece(e, x, pc)))
    for i, make in enumerate(tries):
        f = make()
        if i == 2 and f == tries[1]():
            break  # no erfc, tanh, sinh or cosh: nothing new to try
        q = sp.simplify(f)
        q2 = q if not q.free_symbols else sp.simplify(sp.expand_log(q))
        if not q2.free_symbols:
            return q2
    return None


def _real_on_piece(e: sp.Expr, x: sp.Symbol, pc: Piece) -> bool:
    """Every non-integer power has a positive base and every log a positive argument on the
    piece (their zeros are break points, so the sign at the sample is the sign throughout):
    then the formula is real and continuous on the open interval."""
    for node in sp.preorder_traversal(e):
        if isinstance(node, sp.Pow) and not node.args[1].is_Integer:
            base = node.args[0]
        elif isinstance(node, sp.log):
            base = node.args[0]
        else:
            continue
        try:  # (strict: a value with no correct digit has no sign)
            v = sp.N(base.subs(x, pc.sample), 40, strict=True)
        except Exception:  # noqa: BLE001
            return False
        if not (v.is_real and v > 0):
            return False
    return True


def homogeneous_of_degree(expr: sp.Expr, k: sp.Rational) -> bool:
    """σ(tx) = t^k σ(x) for all t > 0, x ∈ R: σ(0) = 0 exactly, no break point but 0, and on
    each half-line the piece's identity ``σ(t·s·p) = t^k σ(s·p)`` by exact simplification."""
    x = _variable(expr)
    try:
        if decide_zero(exact_value(expr, x, sp.Integer(0))) is not True:
            return False
        pts, pcs = pieces(expr, x, (sp.Integer(0),))
        if list(pts) != [0]:
            return False
        for pc, s in zip(pcs, (-1, 1)):
            if decide_zero(pc.expr.subs(x, s * _T * _P) - _T**k * pc.expr.subs(x, s * _P)) is not True:
                return False
    except Refused:
        return False
    return True


@functools.lru_cache(maxsize=128)
def vanishing_slopes(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(σ'(0⁺), σ'(0⁻)) when σ(0) = 0 exactly and the difference quotients σ(±p)/(±p) of the two
    pieces next to 0 have finite limits as p → 0+ (each the exact value where the quotient is
    structurally continuous at 0, else read off the checker's own expansion in s = 1/p); None
    when that is not proved. Then |σ(z)| ≤ (max(|σ'(0⁺)|, |σ'(0⁻)|) + 1)·|z| near 0."""
    x = _variable(expr)
    try:
        if decide_zero(exact_value(expr, x, sp.Integer(0))) is not True:
            return None
        pts, pcs = pieces(expr, x, (sp.Integer(0),))
        i = list(pts).index(0)
        left, right = pcs[i], pcs[i + 1]
        # the difference quotients g(±p)/(±p) as p → 0+, by the checker's own expansions
        r = limit_at_point(right.expr / x, x, sp.Integer(0), 1)
        lft = limit_at_point(left.expr / x, x, sp.Integer(0), -1)
    except Refused:
        return None
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return None
    if r is None or lft is None:  # (limit_at_point gives a finite real number or None)
        return None
    return r, lft


@functools.lru_cache(maxsize=128)
def _gate_derivative_at_zero(expr: sp.Expr) -> sp.Expr | None:
    """g'(0) when g(0) = 0 exactly and the difference quotients of the two pieces next to 0
    have equal finite limits (:func:`vanishing_slopes`)."""
    sl = vanishing_slopes(expr)
    if sl is None:
        return None
    r, lft = sl
    if decide_zero(r - lft) is not True:
        return None
    return sp.simplify(r)


@functools.lru_cache(maxsize=128)
def flip_constant(expr: sp.Expr, gated: bool) -> sp.Expr | None:
    """c with σ(z) − σ(−z) = c z for all z (ungated) or g(z) + g(−z) = c (gated); None if none.

    With h(z) = g(z) + g(−z) (resp. σ(z) − σ(−z)): h (resp. h/z) simplifies to one constant
    c ≠ 0 on every piece between the break points of h, and h(b) = c (resp. c·b) holds by
    exact evaluation at every break point b and at 0 — the point where g(z) + g(−z) = 2g(0).
    """
    x = _variable(expr)
    h = expr + expr.subs(x, -x) if gated else expr - expr.subs(x, -x)
    if _not_constant(h if gated else h / x, x):
        return None
    try:
        pts, pcs = pieces(h, x, (sp.Integer(0),))
        c = None
        for pc in pcs:
            ci = _constant_on_piece(pc.expr if gated else pc.expr / x, x, pc)
            if ci is None or (c is not None and decide_zero(ci - c) is not True):
                return None
            c = ci if c is None else c
        if c is None or decide_zero(c) is not False:
            return None
        for b in pts:
            want = c if gated else c * b
            if decide_zero(exact_value(h, x, b) - want) is not True:
                return None
    except Refused:
        return None
    return sp.nsimplify(c) if c.is_Float else c


def _not_constant(q: sp.Expr, x: sp.Symbol) -> bool:
    """q takes two values at four rational points that differ beyond 30-digit rounding (10⁻¹² relative): a cheap
    proof that no constant c fits, before the exact simplification by pieces (which on a σ with many irrational
    constants runs for minutes). A point sympy does not evaluate to a finite number proves nothing."""
    vals = []
    for z in (sp.Rational(1, 3), sp.Rational(-7, 5), sp.Rational(5, 2), sp.Rational(-11, 3)):
        try:
            v = sp.N(q.subs(x, z), 30, strict=True)
        except Exception:  # noqa: BLE001 - no number here (or none with correct digits)
            continue
        if v.is_Number and v.is_finite and v.is_real:
            vals.append(v)
    return any(abs(a - b) > sp.Float("1e-12") * (1 + abs(a) + abs(b)) for a in vals for b in vals)


def shifted_flip_constant(expr: sp.Expr, s: sp.Expr, exact_real: bool = False) -> sp.Expr | None:
    """c with σ(z) − σ(−z − 2s) = c·(z + s) for every real z, for the recorded shift ``s``; None if
    none. By this checker's own route: τ(y) = σ(y − s) (exact substitution) must have the plain
    flip identity τ(y) − τ(−y) = c·y for every y (:func:`flip_constant`: by pieces, exact at every
    break point and at 0), which is the shifted identity at z = y − s. A tampered s makes τ lose it.
    s must be rational (a witness's biases carry it), or with ``exact_real`` any real number (√2, π: a
    tolerance screen's candidate, which no witness carries)."""
    if not (isinstance(s, sp.Rational) or (exact_real and s.is_number and s.is_real and s.is_finite)):
        return None
    x = _variable(expr)
    return flip_constant(expr.subs(x, x - s), False)


@functools.lru_cache(maxsize=128)
def is_bounded(expr: sp.Expr) -> bool:
    """σ continuous on R with finite limits at ±∞ (hence bounded): every piece real and
    continuous on its interval, at every break point both one-sided limits equal the exact
    value, and the outer pieces have finite limits at ±∞ (limits by ``_asymptotic``)."""
    x = _variable(expr)
    try:
        pts, pcs = pieces(expr, x)
        if not all(_real_on_piece(pc.expr, x, pc) for pc in pcs):
            return False
        for i, b in enumerate(pts):
            v = exact_value(expr, x, b)
            if not (v.is_real and v.is_finite) and not sp.N(v).is_real:
                return False
            lo = limit_at_point(pcs[i].expr, x, b, -1)
            hi = limit_at_point(pcs[i + 1].expr, x, b, 1)
            if lo is None or hi is None or decide_zero(lo - v) is not True or decide_zero(hi - v) is not True:
                return False
        top = limit_at_infinity(pcs[-1].expr, x, 1)
        bottom = limit_at_infinity(pcs[0].expr, x, -1)
    except Refused:
        return False
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input
        return False
    return top is not None and bottom is not None


@functools.lru_cache(maxsize=256)
def _same_function(a: sp.Expr, b: sp.Expr) -> bool:
    """a ≡ b on R: the difference is 0 at every break point (exact) and on every piece."""
    xa, xb = _variable(a), _variable(b)
    diff = a - b.subs(xb, xa)
    for z in (sp.Rational(1, 3), sp.Rational(-7, 5), sp.Rational(5, 2)):  # a cheap witness of a ≠ b first: deciding
        try:  # that tanh-GELU − erf-GELU is 0 on a piece ran for minutes; a difference above 10⁻¹² at 30 digits is none
            v = sp.N(diff.subs(xa, z), 30)
        except Exception:  # noqa: BLE001 - no number here: the exact route decides
            continue
        if v.is_Number and v.is_finite and abs(v) > sp.Float("1e-12"):
            return False
    try:
        pts, pcs = pieces(diff, xa)
        return (all(decide_zero(exact_value(diff, xa, p)) is True for p in pts)
                and all(_identity_on_piece(pc.expr, xa, pc) for pc in pcs))
    except Refused:
        return False


@functools.lru_cache(maxsize=128)
def is_relu_or_gelu(expr: sp.Expr) -> bool:
    """σ is ReLU or GELU (erf form): result 5's necessity is the paper's for these only."""
    y = sp.Symbol("y", real=True)
    refs = (sp.Max(0, y), y * (1 + sp.erf(y / sp.sqrt(2))) / 2)
    return any(_same_function(expr, r) for r in refs)


def is_identity(expr: sp.Expr) -> bool:
    y = sp.Symbol("y", real=True)
    return _same_function(expr, y)


__all__ = ["branch", "flip_constant", "homogeneous_of_degree", "is_bounded", "is_identity", "is_relu_or_gelu", "vanishing_slopes"]


def _sigma_lipschitz(block: Any) -> float | None:
    """This checker's Lipschitz constant of σ: the built-ins' table (:data:`absorb.verify._compose.LIPSCHITZ`),
    or a continuous piecewise-linear σ's exact max |slope| (:func:`absorb.verify._pieces.pl_lipschitz`); None otherwise."""
    from absorb.model.activations import is_builtin
    from absorb.verify._compose import LIPSCHITZ
    from absorb.verify._numerics import _U

    if is_builtin(block.activation):
        return LIPSCHITZ.get(block.activation.name)
    from absorb.model.activations import get_activation

    key = block.activation.key  # an expression that is a built-in as written (the same sympy form): the built-in's
    twin = next((L for name, L in LIPSCHITZ.items() if get_activation(name).key == key), None)
    if twin is not None:
        return twin
    e = block.activation.expr
    L = pl_lipschitz(e, _variable(e))
    return None if L is None else float(L) * (1 + 4 * _U)


def shifted_bias_error(block: Any, wb: Any, S: tuple[int, ...], c: Fraction, s: Fraction) -> float:
    """For the shifted flip ``wb`` of ``block`` (σ(z) − σ(−z − 2s) = c·(z + s)): an upper bound of the
    constant error |e|_∞ in wb − f = −(M + c·D_S U_S) x + e, namely
    max_r |b'_down,r − b_down,r − c·Σ_S D_ri (b_i + s)| + L·Σ_S |D_ri|·|η_i|, with η_i = b'_up,i − (−b_i − 2s)
    the rounding of a flipped unit's new bias (σ L-Lipschitz, :func:`_sigma_lipschitz`, needed only
    when some η_i ≠ 0). Exact rationals; inf past EXACT_WORK or without L."""
    from absorb.verify._numerics import EXACT_WORK
    from absorb.verify._weights import _float_up

    idx, d = list(S), block.d
    if d * len(idx) > EXACT_WORK:
        return math.inf
    F = lambda v: Fraction(float(v))  # noqa: E731
    b0 = [Fraction(0)] * block.n if block.b_up is None else [F(v) for v in block.b_up]
    eta = {i: F(wb.b_up[i]) - (-b0[i] - 2 * s) for i in idx}
    L = 0.0
    if any(eta.values()):
        got = _sigma_lipschitz(block)
        if got is None:
            return math.inf
        L = got
    bd = [Fraction(0)] * d if block.b_down is None else [F(v) for v in block.b_down]
    bn = [Fraction(0)] * d if wb.b_down is None else [F(v) for v in wb.b_down]
    tot = Fraction(0)
    for r in range(d):
        Dr = {i: F(block.W_down[r, i]) for i in idx}
        e = abs(bn[r] - bd[r] - c * sum((Dr[i] * (b0[i] + s) for i in idx), Fraction(0)))
        tot = max(tot, e + Fraction(L) * sum((abs(Dr[i]) * abs(eta[i]) for i in idx), Fraction(0)))
    return _float_up(tot)


def shifted_flip_block(block: Any, idx: Any, c: Fraction, s: Fraction) -> Any:
    """The shifted flip of the units ``idx`` (σ(z) − σ(−z − 2s) = c·(z + s)), rebuilt here: their rows
    negated, their biases −b_up,i − 2s, the output bias moved by c·W_down[:,S](b_S + s), no skip."""
    import numpy as np

    Un = block.W_up.copy()
    Un[idx] *= -1
    b0 = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    bu = b0.copy()
    bu[idx] = -b0[idx] - 2 * float(s)
    from absorb.verify._numerics import moved_output_bias

    return block.replace(W_up=Un, b_up=bu, b_down=moved_output_bias(block.b_down, block.W_down, idx, c, b0[idx], s),
                         skip=np.zeros((block.d, block.d)), name=block.name + "'")
