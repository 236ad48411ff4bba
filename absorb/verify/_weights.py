"""Checks on the weights: identity (hashes), hypotheses, residuals of index sets, and the
evaluation of a rebuilt witness against f."""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify import _numerics
from absorb.verify._at_zero import _f0_lower
from absorb.verify._numerics import (
    _U,
    EXACT_ELIM_MAX_D,
    _frac_matrix,
    _gamma,
    _in_range,
    exact_rank,
    moved_output_bias,
    rounding_allowance,
    sha256_f64,
    sigma_term_error,
)
from absorb.verify._report import _Ctx, _require, _where

COLLINEAR_SCREEN = 1e-6
"""Pairs with computed |cos| < 1 − this are non-collinear for sure: the rounding error of a
float64 cosine is below (2d + 8)·2⁻⁵³, far smaller for any d < 10⁸."""
FULL_GRAM_MAX = 2048
"""Up to this many nonzero rows the collinearity screen computes every pair's cosine (and
reports the largest); above, a projection screen finds the candidate pairs in O(n log n)."""
EVAL_INPUTS = 32
EVAL_SCALES = (1e-2, 1.0, 1e2)
"""Seed of the checker's random inputs: fresh, not the seed the certificate was made with."""


def _block_arrays(block: Block) -> dict[str, np.ndarray]:
    out = dict(block.arrays())
    if block.hc is not None:
        out.update(H_res=block.hc.H_res, H_pre=block.hc.H_pre, H_post=block.hc.H_post)
    return out


def _check_identity(ctx: _Ctx, b: dict[str, Any], block: Block) -> None:
    w = _where(b)
    _require(ctx, b.get("name") == block.name, w, "the block name matches the model", f"model has {block.name!r}")
    _require(ctx, (b.get("d"), b.get("n")) == (block.d, block.n), w, "d and n match the model",
             f"certificate d={b.get('d')}, n={b.get('n')}; model d={block.d}, n={block.n}")
    _require(ctx, b.get("kind") == block.kind, w, f"the block is {block.kind}", f"certificate says {b.get('kind')!r}")
    arrays = _block_arrays(block)
    recs = b.get("weights", {})
    _require(ctx, set(recs) == set(arrays), w, "the certificate lists exactly the model's arrays",
             f"certificate {sorted(recs)}, model {sorted(arrays)}")
    for k, a, rec in ((k, a, recs[k]) for k, a in arrays.items()):
        h, shape = sha256_f64(a), rec.get("shape")
        _require(ctx, list(shape or []) == list(a.shape) and rec.get("sha256") == h, w, f"SHA-256 of {k} matches",
                 f"model {k} {a.shape} hashes to {h[:16]}…, certificate says {str(rec.get('sha256'))[:16]}…" if list(shape or [])
                 == list(a.shape) else f"certificate records {k} with shape {tuple(shape or [])}, the model's is {a.shape}")
        if "values" in rec:
            same = np.array_equal(np.asarray(rec["values"], dtype=float).reshape(a.shape), a)
            _require(ctx, same, w, f"the printed values of {k} are the model's", "embedded values differ from the weights", fail_only=True)
    act = b.get("activation_function", {})
    model_expr = block.activation.expr
    # Compared as strings: a certificate is untrusted input and is never parsed by sympy.
    same = act.get("srepr") == sp.srepr(model_expr) and act.get("text") == str(model_expr) and act.get("name") == block.activation.name
    _require(ctx, same, w, f"the activation is the model's ({block.activation_name})",
             f"certificate has {act.get('text')!r} ({act.get('srepr')!r}), model has {model_expr}", fail_only=True)
    # The value activation h of a gated block: recorded exactly when the model has one that is not z ↦ z.
    h = _value_expr(block)
    rec = b.get("value_activation_function")
    if h is None and rec is None:
        return  # the value branch is linear in the model and in the certificate: nothing to compare
    same = (h is not None and isinstance(rec, dict) and rec.get("srepr") == sp.srepr(h) and rec.get("text") == str(h)
            and rec.get("name") == block.value_activation.name)
    _require(ctx, same, w, "the value activation is the model's" + ("" if h is None else f" ({h})"),
             f"certificate has {rec!r}, model has {h if h is not None else 'none (h(z) = z)'}", fail_only=True)


def _value_expr(block: Block) -> sp.Expr | None:
    """The expression of the block's value activation h, or None when the value branch is linear
    (no h, or h the bare variable)."""
    va = block.value_activation
    if va is None or (isinstance(va.expr, sp.Symbol) and va.expr.is_real is not False):
        return None
    return va.expr


def _skip_nonzero(block: Block) -> bool:
    return bool(np.any(block.M != 0))


def _bias_free(block: Block) -> bool:
    return not any(v is not None and np.any(v != 0) for v in (block.b_up, block.b_gate, block.b_down))


def _invertible(a: np.ndarray) -> tuple[bool | None, str]:
    """Exact for diagonal matrices (the identity skip: all diagonal entries nonzero) and by
    rank over Q for small ones, else σ_min > 10·d·ε·σ_max (backward-stable SVD)."""
    d = a.shape[0]
    diag = np.diagonal(a)
    if np.count_nonzero(a) == np.count_nonzero(diag):  # nothing off the diagonal
        zero = int(d - np.count_nonzero(diag))
        return zero == 0, "diagonal, every diagonal entry nonzero" if zero == 0 else f"diagonal with {zero} zero entries"
    if d <= EXACT_ELIM_MAX_D:
        r = exact_rank(_frac_matrix(a))
        return r == d, f"exact rank {r} of {d}"
    s = np.linalg.svd(a, compute_uv=False)
    if s[-1] > 10 * d * _U * 2 * s[0]:
        return True, f"σ_min = {s[-1]:.3g} > 10·d·ε·σ_max"
    return None, f"σ_min = {s[-1]:.3g} too close to rounding to decide"


def _skip_invertible(ctx: _Ctx, block: Block) -> tuple[bool | None, str]:
    """:func:`_invertible` of the block's skip (H_res for Hyper-Connections), once per block."""
    return ctx.memo("invertible", lambda: _invertible(block.hc.H_res if block.hc is not None else block.M))


def _row_pairs(ctx: _Ctx, block: Block) -> tuple[list[tuple[int, int]], float | None]:
    """:func:`_collinear_pairs` of the block's W_up, once per block."""
    return ctx.memo("collinear", lambda: _collinear_pairs(block.W_up))


def _gate_row_pairs(ctx: _Ctx, block: Block) -> tuple[list[tuple[int, int]], float | None]:
    """:func:`_collinear_pairs` of a gated block's W_gate, once per block."""
    return ctx.memo("collinear_gate", lambda: _collinear_pairs(np.asarray(block.W_gate)))


def _collinear_pairs(U: np.ndarray) -> tuple[list[tuple[int, int]], float | None]:
    """Exactly collinear pairs of nonzero rows: a float screen, then an exact decision (in ℚ)
    on the pairs it keeps; and the largest float |cos| over all pairs (None when the
    projection screen ran, which looks at only a few pairs).

    Rows are first scaled by exact powers of two (largest entry in [0.5, 1)), so that norms
    of rows near 2^±540 neither underflow nor overflow; an entry that underflows in the
    scaling moves its row's direction by under 2^-1000, far below every margin here.
    Up to ``FULL_GRAM_MAX`` rows every pair's cosine is computed (|cos| ≥ 1 − COLLINEAR_SCREEN
    goes to the exact test). Above, one projection: for exactly collinear rows the unit
    vectors are ±each other, so their projections on a unit vector p have equal |·| up to
    rounding (each computed coordinate is within γ_{d+4} of the exact one, the projection
    within γ_d more): only pairs whose |projection| differ by at most 16·γ_{d+8} can be
    collinear, and a sort finds them in O(n log n) instead of O(n²d)."""
    big = np.abs(U).max(axis=1)
    live = np.flatnonzero(big > 0)
    W = np.ldexp(U[live].astype(np.float64, copy=False), -np.frexp(big[live])[1][:, None])  # float64 (float32 weights too)
    V = W / np.linalg.norm(W, axis=1)[:, None]
    pairs: list[tuple[int, int]] = []

    def decide(a: np.ndarray, b: np.ndarray) -> None:
        for i, j in zip(a.tolist(), b.tolist()):
            gi, gj = int(live[i]), int(live[j])
            ui, uj = _frac_matrix(U[gi])[0], _frac_matrix(U[gj])[0]
            piv = next(k for k, v in enumerate(ui) if v != 0)
            ratio = uj[piv] / ui[piv]
            if all(y == ratio * x for x, y in zip(ui, uj)):
                pairs.append((min(gi, gj), max(gi, gj)))

    if len(live) <= FULL_GRAM_MAX:
        worst = 0.0
        for a in range(0, len(live), 2048):
            C = np.abs(V[a:a + 2048] @ V[a:].T)  # pairs (a + i, a + j) with j > i only
            for i in range(C.shape[0]):
                C[i, :i + 1] = 0.0
            worst = max(worst, float(C.max(initial=0.0)))
            i, j = np.nonzero(C >= 1.0 - COLLINEAR_SCREEN)
            decide(a + i, a + j)
        return pairs, worst
    p = np.random.default_rng(0).standard_normal(U.shape[1])
    p /= np.linalg.norm(p) * (1 + 4 * _U)  # ‖p‖ ≤ 1
    key = np.abs(V @ p)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    width = 16 * _gamma(U.shape[1] + 8)
    hi = np.searchsorted(ks, ks + width, side="right")  # partners of sorted a: a+1 … hi[a]−1
    cnt = hi - np.arange(ks.size) - 1
    a = np.repeat(np.arange(ks.size), cnt)
    b = a + 1 + (np.arange(a.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    a, b = order[a], order[b]
    cos = np.abs(np.einsum("ij,ij->i", V[a], V[b]))
    keep = cos >= 1.0 - COLLINEAR_SCREEN
    decide(a[keep], b[keep])
    return sorted(pairs), None



class InfNorm(float):
    """An allowed linear error per unit of |x|_∞ (not ‖x‖₂) for :func:`_evaluate`; ``quad``: an
    allowed quadratic error per unit of |x|²_∞ (a degree-2 flip accepted within tolerance)."""

    quad: float = 0.0

    def __new__(cls, value: float, quad: float = 0.0) -> InfNorm:
        out = super().__new__(cls, value)
        out.quad = quad
        return out


def _float_up(q: Fraction) -> float:
    """The least float ≥ q (inf past the float range)."""
    try:
        x = float(q)
    except OverflowError:
        return math.inf
    while math.isfinite(x) and Fraction(x) < q:
        x = math.nextafter(x, math.inf)
    return x


def _residual(U: np.ndarray, D: np.ndarray, M: np.ndarray, c: Fraction, S: Sequence[int]
              ) -> tuple[float, float, bool | None, float, float]:
    """‖D_S U_S + M/c‖_F / ‖M/c‖_F: (value, rigorous upper bound, exactly zero?, float64 slack,
    ρ∞), with ρ∞ a rigorous upper bound of the absolute ∞-operator norm
    ‖M + c·D_S U_S‖_{∞→∞} = max_j Σ_k |R_jk| (what a flip's linear error is, per unit of |x|_∞).

    Exact rationals when |S|·d² ≤ EXACT_WORK; else float64 with the bound
    |fl(R) − R| ≤ γ_{|S|+2}(Σ_{i∈S}|w_i||u_i|ᵀ + |T|) entrywise (Higham §3.1), whose
    Frobenius norm is at most γ(Σ‖w_i‖‖u_i‖ + ‖T‖_F) and whose row sums are
    γ(|D_S|(|U_S|·1) + |T|·1). The slack is the Frobenius bound relative to
    ‖T‖_F: how far any float64 recomputation (the certificate's) may sit from the truth.
    """
    d = U.shape[1]
    idx = list(S)
    Us, Ds = U[idx].astype(np.float64, copy=False), D[:, idx].astype(np.float64, copy=False)  # float32 weights too: products in float64
    with np.errstate(over="ignore", invalid="ignore"):  # past 2^±500 the slack is nan: no match
        T = -M / float(c)
        tn = float(np.linalg.norm(T))
        if tn == 0 or not (np.all(np.isfinite(Us)) and np.all(np.isfinite(Ds)) and math.isfinite(tn)):  # (an inf: no rational)
            return math.inf, math.inf, None, 0.0, math.inf
        sw = float(np.sum(np.linalg.norm(Ds, axis=0) * np.linalg.norm(Us, axis=1))) if idx else 0.0
        slack = (_gamma(len(idx) + 2) * (sw + tn) + (2 * _U * tn if c != 1 else 0.0)) / tn * (1 + _gamma(d * d + 2)) + _gamma(d * d + 2)
    if len(idx) * d * d <= _numerics.EXACT_WORK:
        Uf = _frac_matrix(Us) if idx else []
        Df = _frac_matrix(Ds) if idx else [[] for _ in range(d)]
        Mf = _frac_matrix(M)
        sq, tsq, top = Fraction(0), Fraction(0), Fraction(0)
        for r in range(d):
            row = Fraction(0)
            for col in range(d):
                t = Mf[r][col] / c
                acc = sum((Df[r][k] * Uf[k][col] for k in range(len(idx))), Fraction(0)) + t
                sq += acc * acc
                tsq += t * t
                row += abs(acc)
            top = max(top, row)
        ratio = sq / tsq
        rel = math.sqrt(ratio) if ratio < 2**1000 else math.inf  # (a residual past float64's range: no match)
        return rel, math.nextafter(rel, math.inf) * (1 + 4 * _U), sq == 0, slack, _float_up(abs(c) * top)
    with np.errstate(over="ignore", invalid="ignore"):  # out of range: the bound below is inf
        R = Ds @ Us - T
        rn = float(np.linalg.norm(R))
        # row sums of |R̂|, of the Higham bound, and of the target's rounding (T = fl(−M/c))
        rows = np.abs(R).sum(axis=1)
        a = np.abs(Ds) @ np.abs(Us).sum(axis=1) if idx else np.zeros(d)
        t = np.abs(T).sum(axis=1)
        gs = _gamma(len(idx) + 2 * d + 4)
        per = rows * (1 + gs) + (_gamma(len(idx) + 2) * (a + t) + (2.02 * _U * t if c != 1 else 0.0)) * (1 + gs) ** 2
        rho_inf = abs(float(c)) * (1 + 2 * _U) * float(per.max(initial=0.0)) * (1 + 8 * _U)
    rel = rn / tn
    if not _in_range(Ds, Us, T):  # the float bound is not trusted out there
        return rel, math.inf, None, slack, math.inf
    rho_inf = rho_inf if math.isfinite(rho_inf) else math.inf
    return rel, (rn * (1 + _gamma(d * d + 2)) / tn + slack * 1.01) / (1 - _gamma(d * d + 2)), None, slack, rho_inf


_FLIPS: weakref.WeakKeyDictionary[Block, tuple[Block, tuple[int, ...], float, Fraction]] = weakref.WeakKeyDictionary()
"""Witness blocks rebuilt by :func:`_flip_block` → (the block flipped, S, c, s): :func:`_evaluate`
bounds their constant error (the rounding of the moved bias) in exact arithmetic."""


def _flip_block(block: Block, S: Sequence[int], c: Fraction, s: Fraction = Fraction(0)) -> Block:
    """The residual-free block of result 5's sufficiency, rebuilt here from S and the exact flip
    constant c (``s`` ≠ 0: the shifted flip, :func:`absorb.verify._symbolic.shifted_flip_block`)."""
    idx = np.asarray(list(S), dtype=int)
    new: dict[str, Any] = {}
    if s:
        from absorb.verify._symbolic import shifted_flip_block

        out = shifted_flip_block(block, idx, c, s)
        _FLIPS[out] = (block, tuple(int(i) for i in idx), float(c), s)
        return out
    if block.gated:
        G = block.W_gate.copy()
        G[idx] *= -1
        Dn = block.W_down.copy()
        Dn[:, idx] *= -1
        new.update(W_gate=G, W_down=Dn)
        if block.b_gate is not None:
            bg = block.b_gate.copy()
            bg[idx] *= -1
            new["b_gate"] = bg
    else:
        Un = block.W_up.copy()
        Un[idx] *= -1
        new["W_up"] = Un
        if block.b_up is not None:
            bu = block.b_up.copy()
            bu[idx] *= -1
            new["b_up"] = bu
    if block.b_up is not None and idx.size:
        new["b_down"] = moved_output_bias(block.b_down, block.W_down, idx, c, np.asarray(block.b_up, dtype=np.float64)[idx])
    out = block.replace(**new, skip=np.zeros((block.d, block.d)), name=block.name + "'")
    _FLIPS[out] = (block, tuple(int(i) for i in idx), float(c), Fraction(0))
    return out





def _exact_c(block: Block, c: float, s: Fraction = Fraction(0)) -> Fraction | None:
    """The flip constant as a rational, re-derived from σ here (it must round to ``c``); ``s`` ≠ 0:
    the shifted identity's (:func:`absorb.verify._symbolic.shifted_flip_constant`)."""
    from absorb.verify._symbolic import flip_constant, shifted_flip_constant

    cs = (shifted_flip_constant(block.activation.expr, sp.Rational(s.numerator, s.denominator)) if s
          else _flip_constant_cached(block.activation.expr, block.gated, flip_constant))
    if cs is None or not cs.is_Rational:
        return None
    cq = Fraction(int(cs.p), int(cs.q))
    return cq if float(cq) == c else None


@functools.lru_cache(maxsize=32)
def _flip_constant_cached(expr: sp.Expr, gated: bool, fn: Callable[[sp.Expr, bool], Any]) -> Any:
    return fn(expr, gated)


def _moved_bias_error(block: Block, wb: Block, S: tuple[int, ...], c: Fraction, s: Fraction = Fraction(0)) -> float:
    """Upper bound of |wb.b_down − b_down − c·W_down[:,S] b_up[S]|_∞: exact rationals when
    d·|S| ≤ EXACT_WORK, else float64 with Higham's bound (inf out of range); a shifted flip's
    (``s`` ≠ 0): :func:`absorb.verify._symbolic.shifted_bias_error`."""
    if s:
        from absorb.verify._symbolic import shifted_bias_error

        return shifted_bias_error(block, wb, S, c, s)
    d = block.d
    bd = np.zeros(d) if block.b_down is None else block.b_down
    bn = np.zeros(d) if wb.b_down is None else wb.b_down
    if block.b_up is None or not S:
        return 0.0 if np.array_equal(bd + 0.0, bn + 0.0) else math.inf
    idx = list(S)
    if d * len(idx) <= _numerics.EXACT_WORK:
        bs = [Fraction(float(v)) for v in block.b_up[idx]]
        tot = Fraction(0)
        for r in range(d):
            e = Fraction(float(bn[r])) - Fraction(float(bd[r])) - c * sum((Fraction(float(w)) * v for w, v in zip(block.W_down[r, idx], bs)), Fraction(0))
            tot = max(tot, abs(e))
        return _float_up(tot)
    Ds = block.W_down[:, idx].astype(np.float64)
    bs = block.b_up[idx]
    if not _in_range(Ds, bs[None, :], bd[None, :], bn[None, :]):
        return math.inf
    cf = float(c)
    g = _gamma(len(idx) + 8)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.abs(bn - bd - cf * (Ds @ bs)) + g * (np.abs(bn) + np.abs(bd) + 2 * abs(cf) * (np.abs(Ds) @ np.abs(bs))) * (1 + g)
        out = float(r.max(initial=0.0)) * (1 + 4 * _U)
    return out if math.isfinite(out) else math.inf


def _sqrt_up(q: Fraction) -> float:
    """A float x with x² ≥ q ≥ 0 (a few ulps above √q; q scaled by 4^e first, so that no
    float conversion overflows or lands in the subnormals)."""
    if q <= 0:
        return 0.0
    e = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    try:
        x = math.ldexp(math.sqrt(float(q / Fraction(4) ** e if e >= 0 else q * Fraction(4) ** -e)), e) or 5e-324
    except OverflowError:
        return math.inf
    while math.isfinite(x) and Fraction(x) ** 2 < q:
        x = math.nextafter(x, math.inf)
    return x


def _constant_error(f: Block, g: Block) -> float:
    """ε_b with |e|_∞ ≤ ε_b·|f(0)|_∞ for a flip g of f (:func:`_flip_block`), g − f = −(M + c·D_S U_S)x + e exactly
    (0 when e = 0 or for any other pair, inf when |f(0)|_∞ is not provably large enough)."""
    rec = _FLIPS.get(g)
    if rec is None or rec[0] is not f:
        return 0.0
    _blk, S, c, s = rec
    if (f.b_up is None and not s) or not S:
        return 0.0
    cq = _exact_c(f, c, s)
    if cq is None:
        return math.inf
    e = _moved_bias_error(f, g, S, cq, s)
    if e == 0:
        return 0.0
    lo = _f0_lower(f) if math.isfinite(e) else 0.0
    return e / lo if lo > 0 else math.inf


def _round_bound(block: Block, X: np.ndarray) -> np.ndarray:
    """Per-input bound (∞-norm) on the float64 evaluation error of ``f`` at the rows of X.

    Pre-activations carry γ_{d+1}(|W||x| + |b|); the activation adds at most a Lipschitz
    constant (≤ 2 for every registered σ) times that, plus a few ulps of its value; the
    output sums n + d terms: γ_{n+d+2}(|M||x| + |D||h|) + |D| e_h. A factor 4 covers
    the libm error of erf/tanh/exp beyond one ulp.
    """
    A = np.abs(X)
    g = _gamma(block.d + 2)
    pre_u = A @ np.abs(block.W_up).T + (0 if block.b_up is None else np.abs(block.b_up))
    if block.gated:
        pre_g = A @ np.abs(block.W_gate).T + (0 if block.b_gate is None else np.abs(block.b_gate))
        G = X @ block.W_gate.T + (0 if block.b_gate is None else block.b_gate)
        Hv = X @ block.W_up.T + (0 if block.b_up is None else block.b_up)
        if block.value_activation is not None:  # h applied to the value; its Lipschitz constant is covered like σ's
            Hv = np.asarray(block.value_activation(Hv), dtype=float)
        gv = np.abs(block.activation(G))
        h = gv * np.abs(Hv)
        e_h = g * (2 * pre_g * (np.abs(Hv) + g * pre_u) + gv * pre_u + 4 * h) + 4 * _U * sigma_term_error(block.activation, G) * np.abs(Hv)
    else:
        Hv = X @ block.W_up.T + (0 if block.b_up is None else block.b_up)
        h = np.abs(block.activation(Hv))
        e_h = g * (2 * pre_u + 4 * h) + 4 * _U * sigma_term_error(block.activation, Hv)
    absD = np.abs(block.W_down)
    lin = A @ np.abs(block.M).T + (0 if block.b_down is None else np.abs(block.b_down))
    out = _gamma(block.n + block.d + 4) * (lin + h @ absD.T) + e_h @ absD.T
    return 4.0 * out.max(axis=1)


KINK_WORK = 200_000_000
"""Budget (multiply-adds) of the checker's own evaluation on points of the kink hyperplanes."""


def _dot_rows(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """W x by elementwise products, then sums (no fused multiply-add): when x makes exactly
    two products p and −p nonzero in a row, that row's result is exactly 0."""
    step = max(1, (1 << 22) // max(1, W.shape[1]))
    return np.concatenate([(W[i:i + step] * x).sum(axis=1) for i in range(0, W.shape[0], step)]) if W.shape[0] else np.zeros(0)


def _own_eval(block: Block, X: np.ndarray) -> np.ndarray:
    """f at the rows of X, by the checker's own arithmetic (``_dot_rows``); σ is the model's."""
    out = []
    for x in X:
        h = _dot_rows(block.W_up, x) + (0 if block.b_up is None else block.b_up)
        if block.gated:
            g = _dot_rows(block.W_gate, x) + (0 if block.b_gate is None else block.b_gate)
            if block.value_activation is not None:
                h = np.asarray(block.value_activation(h), dtype=float)
            hid = np.asarray(block.activation(g), dtype=float) * h
        else:
            hid = np.asarray(block.activation(h), dtype=float)
        y = _dot_rows(block.M, x) + _dot_rows(block.W_down, hid) + (0 if block.b_down is None else block.b_down)
        out.append(y)
    return np.array(out).reshape(len(X), block.d)


def _kink_points(blocks: Sequence[Block], d: int, evaluated: Sequence[Block] | None = None) -> np.ndarray:
    """Inputs lying exactly on the hyperplanes u·x = 0 of bias-free rows u of W_up and W_gate
    of ``blocks``: x_j = u_k, x_k = −u_j (j, k the two largest |u| entries) makes
    fl(u·x) = fl(u_j u_k) − fl(u_j u_k) = 0 exactly; also x = 0. At most KINK_WORK
    multiply-adds of evaluation in all, through every block of ``evaluated`` (default
    ``blocks``; rows spread evenly over each matrix)."""
    mats = []
    for b in blocks:
        for W, bias in ((b.W_up, b.b_up), (b.W_gate, b.b_gate)):
            if W is not None:
                mats.append((W, bias))
    cost = sum(b.n * b.d * 3 + b.d * b.d for b in (evaluated or blocks)) or 1  # per input, both sides
    budget = int(KINK_WORK // cost)
    if budget < 1:
        return np.zeros((0, d))
    pts = [np.zeros(d)]
    per = (budget - 1) // (2 * max(1, len(mats)))  # two points per row
    for W, bias in mats:
        if per < 1:
            break
        rows = [i for i in np.unique(np.linspace(0, W.shape[0] - 1, num=min(per, W.shape[0])).astype(int))
                if (bias is None or bias[i] == 0) and np.any(W[i] != 0)]
        for i in rows:
            u = W[i]
            order = np.argsort(-np.abs(u), kind="stable")
            x = np.zeros(d)
            if d >= 2:
                j, k = int(order[0]), int(order[1])
                x[j], x[k] = u[k], -u[j]
                if u[k] == 0:  # a single nonzero entry: any x with x_j = 0
                    x[k] = 1.0
            pts.append(x)
            if d >= 2:
                pts.append(np.ldexp(x, -20))  # the same point scaled exactly
    return np.array(pts)


def _evaluate(f: Callable[[np.ndarray], np.ndarray], g: Callable[[np.ndarray], np.ndarray], blocks_f: Sequence[Block],
              blocks_g: Sequence[Block], d: int, *, seed: int, allowed_lin: float) -> tuple[bool, float, int]:
    """Compare f and g on fresh seeded inputs, and (by the checker's own evaluation) on inputs
    lying exactly on the kink/gate hyperplanes of the first layer of both; allowed error per
    input: ``allowed_lin·‖x‖₂`` (``allowed_lin·|x|_∞`` when it is an :class:`InfNorm`: a flip's
    exact difference, from the residual's row sums) plus the rounding bounds of both sides
    (single blocks; for stacks, per-layer bounds at each layer's input, summed)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    ok = True
    m = 0
    if len(blocks_f) == 1 and len(blocks_g) == 1:
        # The constant part of a flip's error, bounded exactly: no sample can see it where
        # float64 rounds f(x) and g(x) alike (a moved bias of 2^130 rounded by 2^78).
        eps_b = _constant_error(blocks_f[0], blocks_g[0])
        if not eps_b <= rounding_allowance(blocks_f[0].n):
            ok, worst = False, math.inf
    kinks = _kink_points([blocks_f[0], blocks_g[0]], d, [*blocks_f, *blocks_g])
    # an evaluation that overflows gives inf or nan, which fails the check and is reported as
    # inf below: numpy need not warn about it
    with np.errstate(over="ignore", invalid="ignore"):
        for scale in EVAL_SCALES + ("kinks",):
            if scale == "kinks":
                if not len(kinks):
                    continue
                X = kinks

                def run(blocks: Sequence[Block], X: np.ndarray) -> np.ndarray:
                    for b in blocks:
                        X = _own_eval(b, X)
                    return X
                fx, gx = run(blocks_f, X), run(blocks_g, X)
            else:
                X = rng.standard_normal((EVAL_INPUTS, d)) * float(scale)
                fx, gx = f(X), g(X)
            m += len(X)
            diff = np.abs(fx - gx).max(axis=1)
            xn = np.abs(X).max(axis=1)
            bound = allowed_lin * (xn if isinstance(allowed_lin, InfNorm) else np.linalg.norm(X, axis=1))
            if isinstance(allowed_lin, InfNorm) and allowed_lin.quad:
                bound = bound + allowed_lin.quad * xn * xn
            Xf, Xg = X, X
            for bf, bg in zip(blocks_f, blocks_g):
                bound = bound + _round_bound(bf, Xf) + _round_bound(bg, Xg)
                Xf, Xg = bf(Xf), bg(Xg)
            if len(blocks_f) > 1:  # error amplification through later layers: generous factor; and the constant part
                Y0 = np.zeros((1, d))
                for b in blocks_f:  # the measure's constant: the stack's own |F(0)|∞
                    Y0 = b(Y0)
                f0 = float(np.abs(Y0).max())
                bound = (bound + float(allowed_lin) * f0) * 10.0 ** len(blocks_f)
            ok = ok and bool(np.all(diff <= bound))
            rel = diff / (np.abs(fx).max(axis=1) + np.abs(X).max(axis=1) + 1e-300)
            # an overflow or a nan is reported as inf (Python's max would skip a nan)
            worst = max(worst, float(rel.max()) if np.all(np.isfinite(rel)) else np.inf)
    return ok, worst, m
