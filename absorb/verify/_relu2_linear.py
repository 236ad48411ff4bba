"""The checker's re-derivation of theorem ``relu2-linear`` (σ = α·ReLU² + β·z; docs/results/skeleton2.md,
"ReLU² plus a linear term"), by its own route and in exact rationals (every float64 is one):

* σ(z) − α·Max(0, z)² − β·z vanishes for every real z (by pieces: ``_symbolic.vanishes_on_reals``),
  α and β the recorded rationals, both nonzero;
* ``absorbable`` (case ``lp``): the recorded μ_i > 0; the witness u'_i = u_i/μ_i, c'_i = c_i/μ_i,
  w'_i = μ_i² w_i, b'_down = b_down + βΣ(1 − μ_i)c_i w_i is rebuilt here (its SHA-256 must be the
  recorded one), and |f(x) − g(x)|_∞ ≤ q|x|²_∞ + l|x|_∞ + r is bounded here: f − ĝ is affine
  exactly for the exact rescaling ĝ of μ, and each float unit of g differs from ĝ's by the
  rounding of its weights; then q = 0 (every μ_i a power of two) and l, r/|f(0)|_∞ ≤ τ + the
  rounding allowance (a quadratic error, or a linear one measured against f's own scales, is
  outside the tolerance's measure);
* ``not_absorbable`` (case ``farkas``): the nondegeneracy, the (Q) columns w_i ⊗ u_i u_iᵀ linearly
  independent with margin (the exact Gram test of ``_skeleton2``), and the recorded Y with
  ⟨Y, w_i u_iᵀ⟩ ≤ 0 for every i and |β|⟨Y, T⟩ > τ‖Y‖_F‖M‖_F, T = M/β + Σ_i w_i u_iᵀ.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._numerics import _parse_number, rounding_allowance, sha256_f64
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _variable, vanishes_on_reals
from absorb.verify._weights import InfNorm, _block_arrays

EXACT_MAX = 200_000
"""n·d² above this: not re-derived (the claim fails)."""


def _q(a: Any) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def _qm(a: Any) -> list[list[Fraction]]:
    return [_q(r) for r in np.asarray(a, dtype=np.float64)]


def _rational(v: Any) -> Fraction | None:
    p = _parse_number(v)  # (a sympy Rational, parsed with Fraction, or None)
    return None if p is None else Fraction(int(p.p), int(p.q))


def sigma_form(expr: sp.Expr, alpha: Fraction, beta: Fraction) -> bool:
    """σ(z) = α·ReLU(z)² + β·z for every real z (by pieces)."""
    x = _variable(expr)
    a, b = sp.Rational(alpha.numerator, alpha.denominator), sp.Rational(beta.numerator, beta.denominator)
    return vanishes_on_reals(expr - a * sp.Max(0, x) ** 2 - b * x, x)


def rescaled(block: Block, mu: np.ndarray, beta: float) -> Block:
    """The witness of μ in float64, as the theorem writes it."""
    U, D = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down, dtype=np.float64)
    c = None if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    bd = None
    if block.b_up is not None or block.b_down is not None:
        bd = (np.zeros(block.d) if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)).copy()
        if c is not None:
            bd = bd + beta * np.sum(D * ((1 - mu) * c)[None, :], axis=1)
        if not np.any(bd):
            bd = None
    return block.replace(W_up=U / mu[:, None], W_down=D * (mu * mu)[None, :], b_up=None if c is None else c / mu,
                         b_down=bd, skip=np.zeros((block.d, block.d)), name=block.name + "'")


def error_terms(block: Block, wb: Block, mu: list[Fraction], alpha: Fraction, beta: Fraction
                ) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """(q, l, r, ρ²): |f(x) − g(x)|_∞ ≤ q|x|²_∞ + l|x|_∞ + r for every x, and ρ² = ‖βΣ(μ_i − 1)w_i u_iᵀ − M‖²_F / ‖M‖²_F
    (exact)."""
    d, n = block.d, block.n
    U, D, M = _qm(block.W_up), _qm(block.W_down), _qm(block.M)
    Ug, Dg = _qm(wb.W_up), _qm(wb.W_down)
    zero_n, zero_d = [Fraction(0)] * n, [Fraction(0)] * d
    c = zero_n if block.b_up is None else _q(block.b_up)
    cg = zero_n if wb.b_up is None else _q(wb.b_up)
    b0 = zero_d if block.b_down is None else _q(block.b_down)
    bg = zero_d if wb.b_down is None else _q(wb.b_down)
    aa, ab = abs(alpha), abs(beta)
    # ĝ − f = (βΣ(μ_i − 1) w_i u_iᵀ − M) x + βΣ(μ_i − 1) c_i w_i + b'_down − b_down, exactly
    lin, con, quad = [], [], []
    RL = [[beta * sum((mu[i] - 1) * D[a][i] * U[i][b] for i in range(n)) - M[a][b] for b in range(d)] for a in range(d)]
    rho2 = sum(v * v for r in RL for v in r) / sum(v * v for r in M for v in r)
    for a in range(d):
        lin.append(sum(abs(v) for v in RL[a]))
        con.append(abs(beta * sum((mu[i] - 1) * c[i] * D[a][i] for i in range(n)) + bg[a] - b0[a]))
        quad.append(Fraction(0))
    for i in range(n):
        m = mu[i]
        s1, s0 = sum(abs(v) for v in U[i]) / m, abs(c[i]) / m  # |s| ≤ s1 X + s0, s = (u_i·x + c_i)/μ_i
        e1, e0 = sum(abs(Ug[i][b] - U[i][b] / m) for b in range(d)), abs(cg[i] - c[i] / m)  # |s' − s|
        p1, p0 = s1 + e1, s0 + e0  # |s'|
        sig = (aa * p1 * p1, 2 * aa * p1 * p0 + ab * p1, aa * p0 * p0 + ab * p0)  # |σ(s')|
        k1, k0 = aa * (s1 + p1), aa * (s0 + p0) + ab  # |σ(s') − σ(s)| ≤ |s' − s|·(k1 X + k0)
        dif = (e1 * k1, e1 * k0 + e0 * k1, e0 * k0)
        for a in range(d):
            dw, big = abs(Dg[a][i] - m * m * D[a][i]), m * m * abs(D[a][i])
            quad[a] += dw * sig[0] + big * dif[0]
            lin[a] += dw * sig[1] + big * dif[1]
            con[a] += dw * sig[2] + big * dif[2]
    return max(quad), max(lin), max(con), rho2


def f_at_zero(block: Block, alpha: Fraction, beta: Fraction) -> Fraction:
    c = [Fraction(0)] * block.n if block.b_up is None else _q(block.b_up)
    b0 = [Fraction(0)] * block.d if block.b_down is None else _q(block.b_down)
    D = _qm(block.W_down)
    s = [alpha * max(v, Fraction(0)) ** 2 + beta * v for v in c]
    return max(abs(sum(D[a][i] * s[i] for i in range(block.n)) + b0[a]) for a in range(block.d))


def _floats(v: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    from absorb.verify._numerics import _has_bool

    if _has_bool(v):  # (JSON true is not the number 1)
        return None
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return a if a.shape == shape and bool(np.all(np.isfinite(a))) else None


def check_relu2_linear(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    if b.get("verdict") == "unknown":  # (the producer's unknowns cite no result: evidence kept under one was a verdict changed)
        _require(ctx, (b.get("argument") or {}).get("case") is None, w, "an unknown keeps no evidence of this result "
                 "(the Farkas matrix or the scales μ prove a verdict)", f"case {(b.get('argument') or {}).get('case')!r} recorded")
        return "unknown", None, 0.0
    from absorb.verify._beyond import _nondegenerate, _nonzero_skip
    from absorb.verify._skeleton2 import _check_gram, _rank_bound, bar2, gram_s2, scaled2, size_bound

    arg = b.get("argument") or {}
    _require(ctx, not block.gated, w, "the block is ungated")
    _nonzero_skip(ctx, w, b, block)
    alpha, beta = _rational(arg.get("alpha")), _rational(arg.get("beta"))
    _require(ctx, alpha is not None and beta is not None and alpha != 0 and beta != 0, w,
             "the recorded α, β are nonzero rationals", f"recorded α = {arg.get('alpha')!r}, β = {arg.get('beta')!r}")
    assert alpha is not None and beta is not None
    _require(ctx, sigma_form(block.activation.expr, alpha, beta), w,
             f"σ(z) = {alpha}·ReLU(z)² + {beta}·z for every real z (by pieces, exact)")
    d, n = block.d, block.n
    _require(ctx, n * d * d <= EXACT_MAX, w, f"n·d² ≤ {EXACT_MAX} (the exact checks' size)", f"n·d² = {n * d * d}")
    case = arg.get("case")
    if b.get("verdict") == "not_absorbable":
        size_bound(ctx, w, block, (alpha, beta))
        bar = bar2(ctx, n, block.M)
        _require(ctx, case == "farkas", w, "a not_absorbable verdict rests on the Farkas case", f"recorded {case!r}")
        _nondegenerate(ctx, w, block)
        route = arg.get("route")
        _require(ctx, route in ("rank", "gram"), w, "the (Q) columns' independence rests on the rank or the Gram route",
                 f"recorded {route!r}")
        if route == "gram":  # (λ_min(QᵀQ) ≥ μ re-derived by the skeleton's own check; it requires μ > τ²‖M‖²_F)
            _check_gram(ctx, w, block, arg.get("mu"), gram_s2, "(Q)")
        else:
            rb = _rank_bound(block)
            _require(ctx, rb is not None and rb > bar, w, "the (Q) columns w_i ⊗ u_i u_iᵀ are linearly independent, "
                     f"every nonempty flip set at relative distance > {bar:.3g} (exact Gram test)", f"bound {rb!r}")
            scaled2(ctx, w, rb, n, block.M)
        Y = _floats(arg.get("Y"), (d, d))
        _require(ctx, Y is not None, w, f"Y is a finite {d}×{d} matrix")
        assert Y is not None
        U, D, M, Yq = _qm(block.W_up), _qm(block.W_down), _qm(block.M), _qm(Y)
        inner = [sum(D[a][i] * sum(Yq[a][k] * U[i][k] for k in range(d)) for a in range(d)) for i in range(n)]
        worst = max(inner)
        _require(ctx, worst <= 0, w, "⟨Y, w_i u_iᵀ⟩ ≤ 0 for every unit i (exact)", f"max {_show(worst)}")
        yt = sum(Yq[a][k] * M[a][k] for a in range(d) for k in range(d)) / beta + sum(inner)
        y2 = sum(v * v for r in Yq for v in r)
        m2 = sum(v * v for r in M for v in r)
        ok = yt > 0 and (beta * yt) ** 2 > Fraction(bar) ** 2 * y2 * m2
        _require(ctx, ok, w, "|β|⟨Y, T⟩ > b‖Y‖_F‖M‖_F, T = M/β + Σ_i w_i u_iᵀ (exact): every μ ≥ 0 is farther than "
                 f"b = {bar:.3g} = max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F), past which no rescaling's linear error is within τ",
                 f"⟨Y, T⟩ = {_show(yt)}")
        try:
            mine = math.sqrt(float((beta * yt) ** 2 / (y2 * m2)))
        except OverflowError:  # (past float64: no recorded float equals it)
            mine = math.inf
        scaled2(ctx, w, mine, n, block.M)
        rec = arg.get("bound")
        _require(ctx, isinstance(rec, float) and mine * (1 - 1e-11) <= rec <= mine, w,
                 "the recorded bound is |β|⟨Y, T⟩ / (‖Y‖_F‖M‖_F) re-derived here", f"recorded {rec!r}, re-derived {mine!r}")
        return "not_absorbable", None, 0.0
    _require(ctx, case == "lp", w, "an absorbable verdict comes with the rescaling witness (case lp)", f"recorded {case!r}")
    mu = _floats(arg.get("scales"), (n,))
    _require(ctx, mu is not None and bool(np.all(mu > 0)), w, f"the recorded scales μ are {n} finite numbers > 0")
    assert mu is not None
    with np.errstate(all="ignore"):
        wb = rescaled(block, mu, float(beta))
    _require(ctx, all(a is None or bool(np.all(np.isfinite(a))) for a in (wb.W_up, wb.W_down, wb.b_up, wb.b_down)), w,
             "the rescaling of μ is finite in float64 (u_i/μ_i, μ_i²w_i, the bias shift)")
    q, lin, con, rho2 = error_terms(block, wb, [Fraction(float(v)) for v in mu], alpha, beta)
    f0 = f_at_zero(block, alpha, beta)
    thr = Fraction(ctx.tol) + Fraction(rounding_allowance(n))
    # (a quadratic error of any size, or a linear one measured against f's own scale s₁ > 1, is no error within
    # τ(|f(x)|∞ + |x|∞ + |f(0)|∞): where f grows only linearly, or is constant, it exceeds it)
    _require(ctx, q == 0, w, "the quadratic error of g is exactly 0 (every μ_i a power of two: u_i/μ_i, μ_i²w_i exact)",
             f"≤ {float(q):.3g}·|x|²_∞")
    _require(ctx, lin <= thr, w, "the linear error of g is ≤ (τ + allowance)·|x|_∞ (exact)", f"{float(lin):.3g}")
    _require(ctx, con == 0 or con <= thr * f0, w, "the constant error of g is ≤ (τ + allowance)·|f(0)|_∞ (exact)",
             f"{float(con):.3g} against |f(0)| = {float(f0):.3g}")
    wit = b.get("witness") or {}
    recs = (wit.get("block") or {}).get("weights")
    mine = _block_arrays(wb)
    _require(ctx, isinstance(recs, dict) and set(recs) == set(mine) and all(
        isinstance(recs[k], dict) and recs[k].get("sha256") == sha256_f64(v) for k, v in mine.items()), w,
             "the witness block is the rescaling of μ rebuilt here (SHA-256)")
    exact = lin == 0 and con == 0
    _require(ctx, wit.get("exact") in (False, exact), w, "the recorded exactness is the witness's", f"recorded {wit.get('exact')!r}")
    ev = wit.get("eval_error")
    _require(ctx, isinstance(ev, (int, float)) and not isinstance(ev, bool) and (exact or ev > 0), w,
             "the recorded error is nonzero for a witness that is not exact", f"recorded {ev!r}")
    r = math.sqrt(float(rho2))
    res = wit.get("residual")
    _require(ctx, isinstance(res, float) and abs(res - r) <= 1e-12 * r, w,
             "the recorded residual is ‖β(Σ_i μ_i w_i u_iᵀ − T)‖_F / ‖M‖_F re-derived here (exact)",
             f"recorded {res!r}, re-derived {r!r}")
    return "absorbable", wb, InfNorm(float(lin) * (1 + 1e-12), float(q) * (1 + 1e-12))  # (the constant: within |f(0)|'s share)


def _show(q: Fraction) -> str:
    """An exact rational for a message, in float64's range or named as past it (a hostile Y: ±1e308 entries)."""
    try:
        return f"{float(q):.3g}"
    except OverflowError:
        return "past float64's range (" + ("−" if q < 0 else "+") + ")"
