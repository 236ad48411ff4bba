"""The parity result's check: σ even and f bias-free, re-derived here, and, within the tolerance, the recorded point.

Exactly, every bias-free residual-free block B' is even (σ is) while f(x) − f(−x) = 2Mx: B' = f forces M = 0. Within a
tolerance τ, a B' within τ of f at x and at −x gives 2|Mx|∞ ≤ τ'·(den(x) + den(−x)), den(y) = |f(y)|∞ + |y|∞ +
|f(0)|∞ (τ' = τ plus the rounding allowance). The certificate records a point x (``argument.point``) where the ratio
2|Mx|∞/(den(x) + den(−x)) exceeds τ'; it is re-derived here in exact rationals: M x and U x exactly, σ at each
(rational) u_i·x by sympy's strict evaluation to 30 digits with the error bound it guarantees, B(−x) = B(x) because σ is
even (checked first), f(0) = σ(0)·W_down 1 (bias-free).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._beyond import _act, _nonzero_skip, is_even
from absorb.verify._numerics import EXACT_WORK, rounding_allowance
from absorb.verify._report import _Ctx, _require
from absorb.verify._weights import _bias_free

_UNITS = 4096
"""Most units whose σ is evaluated (one strict evaluation each); past it the point is not re-derived (exit 4)."""
_DIGITS = 30
"""Digits of each strict evaluation of σ; its error is taken as |value|·10^−(_DIGITS − 2)."""


def check_parity(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """σ even and f bias-free: B and every bias-free B' are even, f(x) − f(−x) = 2Mx; within τ, the recorded point."""
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0
    _require(ctx, not block.gated, w, "the block is ungated")
    _require(ctx, _bias_free(block), w, "the block is bias-free (exact)")
    _nonzero_skip(ctx, w, b, block)
    _require(ctx, is_even(_act(block)), w, "σ(−z) = σ(z) for every real z (exact at 0 and every break point, by pieces)")
    arg = b.get("argument") or {}
    p = arg.get("point")
    _require(ctx, isinstance(p, list) and len(p) == block.d and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                      and np.isfinite(v) for v in p), w,
             f"the argument records a point x of {block.d} finite numbers (where the tolerance is read)", f"recorded {p!r}")
    if (block.n + block.d) * block.d > EXACT_WORK or block.n > _UNITS:
        ctx.report.unchecked(w, "the skip's share 2|Mx|∞/(den(x) + den(−x)) at the recorded point exceeds the tolerance",
                             f"n = {block.n}, d = {block.d}: past this checker's exact work")
        return "not_absorbable", None, 0.0
    ratio = _point_ratio(block, [Fraction(float(v)) for v in p])
    if isinstance(ratio, str):
        ctx.report.unchecked(w, "the skip's share 2|Mx|∞/(den(x) + den(−x)) at the recorded point exceeds the tolerance", ratio)
        return "not_absorbable", None, 0.0
    allowed = Fraction(ctx.tol) + Fraction(rounding_allowance(block.n))
    _require(ctx, ratio > allowed, w, "every bias-free residual-free block within τ of f at x and −x has 2|Mx|∞ ≤ τ'·(den(x) + "
             f"den(−x)), den(y) = |f(y)|∞ + |y|∞ + |f(0)|∞; at the recorded x the ratio exceeds τ' = τ + "
             f"{float(allowed - Fraction(ctx.tol)):.2g} (exact rationals, σ by strict evaluation)", f"{float(ratio):.6g}")
    rec = arg.get("ratio")
    _require(ctx, isinstance(rec, float) and Fraction(rec) <= ratio and rec > ctx.tol, w,
             "the recorded ratio is at most the one re-derived here", f"recorded {rec!r}, re-derived {float(ratio):.17g}")
    return "not_absorbable", None, 0.0


def _point_ratio(block: Block, q: list[Fraction]) -> Fraction | str:
    """A lower bound of 2|Mq|∞/(den(q) + den(−q)) (exact rationals; σ's values within their strict bounds), or why not."""
    expr = _act(block)
    syms = sorted(expr.free_symbols, key=str)
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(D)) and np.all(np.isfinite(M))):
        return "a weight is not finite"
    seen: dict[Fraction, tuple[Fraction, Fraction]] = {}

    def sigma(z: Fraction) -> tuple[Fraction, Fraction]:  # (value, error bound); σ even: read at |z|
        z = abs(z)
        if z not in seen:
            e = expr.subs(syms[0], sp.Rational(z.numerator, z.denominator)) if syms else expr
            if e.is_Rational:
                seen[z] = (Fraction(int(e.p), int(e.q)), Fraction(0))
            else:
                v = sp.N(e, _DIGITS, strict=True)
                if not (v.is_real and v.is_finite) or not v.is_Float and not v.is_Rational:
                    raise ArithmeticError(f"σ({float(z):.6g}) = {v}")
                r = sp.Rational(v)
                val = Fraction(int(r.p), int(r.q))
                seen[z] = (val, abs(val) / 10 ** (_DIGITS - 2))
        return seen[z]

    def dot(row: np.ndarray) -> Fraction:
        return sum((Fraction(float(a)) * v for a, v in zip(row, q) if a), Fraction(0))

    try:
        s0, e0 = sigma(Fraction(0))
        s = [sigma(dot(row)) for row in U]
    except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors (PrecisionExhausted among them): not re-derived
        return f"σ is not evaluated to {_DIGITS} digits at a unit's input ({type(exc).__name__}: {exc})"
    top, plus, minus, f0 = Fraction(0), Fraction(0), Fraction(0), Fraction(0)
    for j in range(block.d):
        mx = dot(M[j])
        nz = np.nonzero(D[j])[0]
        bj = sum((Fraction(float(D[j, i])) * s[i][0] for i in nz), Fraction(0))
        ej = sum((abs(Fraction(float(D[j, i]))) * s[i][1] for i in nz), Fraction(0))
        col = sum((Fraction(float(D[j, i])) for i in nz), Fraction(0))
        absd = sum((abs(Fraction(float(D[j, i]))) for i in nz), Fraction(0))
        top = max(top, abs(mx))
        plus = max(plus, abs(bj + mx) + ej)
        minus = max(minus, abs(bj - mx) + ej)
        f0 = max(f0, abs(s0 * col) + e0 * absd)
    den = plus + minus + 2 * max((abs(v) for v in q), default=Fraction(0)) + 2 * f0
    return 2 * top / den if den > 0 else "den(x) + den(−x) = 0 at the recorded point"
