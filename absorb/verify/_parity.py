"""The parity result's check: σ even and f bias-free, re-derived here, and, within the tolerance, the recorded point.

Exactly, every bias-free residual-free block B' is even (σ is) while f(x) − f(−x) = 2Mx: B' = f forces M = 0. Within a
tolerance τ, a B' within τ of f at x and at −x gives 2|Mx|∞ ≤ τ'·(den(x) + den(−x)), den(y) = |f(y)|∞ + |y|∞ +
|f(0)|∞ (τ' = τ plus the rounding allowance). The certificate records a point x (``argument.point``) where the ratio
2|Mx|∞/(den(x) + den(−x)) exceeds τ'; it is re-derived here in exact rationals: M x and U x exactly, σ at each
(rational) u_i·x enclosed in mpmath's interval arithmetic (outward rounding, at _BITS bits; the checker's own walk of σ's
expression, :func:`absorb.verify._intervals._enclose`), B(−x) = B(x) because σ is even (checked first), f(0) =
σ(0)·W_down 1 (bias-free). (Strict sympy evaluation was tried first: at a far point of a Gaussian σ, e^{−10³¹}, it
grew past gigabytes — red team 47c/01.)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._beyond import _act, _nonzero_skip, is_even
from absorb.verify._intervals import _enclose
from absorb.verify._numerics import rounding_allowance
from absorb.verify._report import _Ctx, _require
from absorb.verify._weights import _bias_free

_UNITS = 20_000
"""Most units whose σ is enclosed (one interval evaluation each); past it the point is not re-derived (exit 4)."""
_WORK = 2_000_000
"""Most (n + d)·d exact products (U x, M x and W_down σ in rationals: about a minute at the most); past it, exit 4."""
_BITS = 120
"""Working precision (bits) of the interval enclosures of σ."""
_FLOOR = -1100
"""An enclosure inside ±2^_FLOOR is read as [−2^_FLOOR, 2^_FLOOR] (its exact rationals would be astronomically long)."""
_CEIL = 4000
"""An enclosure past 2^_CEIL is not read (σ's value does not matter there as a rational)."""


class _NoBox(Exception):
    pass


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
    if (block.n + block.d) * block.d > _WORK or block.n > _UNITS:
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
             f"{float(allowed - Fraction(ctx.tol)):.2g} (exact rationals, σ by interval arithmetic)", f"{float(ratio):.6g}")
    rec = arg.get("ratio")
    _require(ctx, isinstance(rec, float) and Fraction(rec) <= ratio and rec > ctx.tol, w,
             "the recorded ratio is at most the one re-derived here", f"recorded {rec!r}, re-derived {float(ratio):.17g}")
    return "not_absorbable", None, 0.0


def _point_ratio(block: Block, q: list[Fraction]) -> Fraction | str:
    """A lower bound of 2|Mq|∞/(den(q) + den(−q)) (exact rationals; σ's values within their interval enclosures), or why not."""
    expr = _act(block)
    syms = sorted(expr.free_symbols, key=str)
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(D)) and np.all(np.isfinite(M))):
        return "a weight is not finite"
    seen: dict[Fraction, tuple[Fraction, Fraction]] = {}
    import mpmath

    iv, saved = mpmath.iv, mpmath.iv.prec

    def sigma(z: Fraction) -> tuple[Fraction, Fraction]:  # (midpoint, radius); σ even: read at |z|
        z = abs(z)
        if z not in seen:
            at = iv.mpf(z.numerator) / z.denominator
            got = _enclose(expr, syms[0] if syms else sp.Symbol("x"), at)
            if got is None:
                raise _NoBox(f"no finite enclosure of σ at {float(z):.6g}")
            box = got._mpi_
            lo, hi = _fraction(box[0], up=False), _fraction(box[1], up=True)
            seen[z] = ((lo + hi) / 2, (hi - lo) / 2)
        return seen[z]

    def dot(row: np.ndarray) -> Fraction:
        return sum((Fraction(float(a)) * v for a, v in zip(row, q) if a), Fraction(0))

    iv.prec = _BITS
    try:
        s0, e0 = sigma(Fraction(0))
        s = [sigma(dot(row)) for row in U]
    except (_NoBox, ValueError, ZeroDivisionError, OverflowError, ArithmeticError, TypeError, MemoryError) as exc:
        return f"σ has no finite interval enclosure at a unit's input ({type(exc).__name__}: {exc})"
    finally:
        iv.prec = saved
    top, plus, minus, f0 = Fraction(0), Fraction(0), Fraction(0), Fraction(0)
    for j in range(block.d):
        mx = dot(M[j])
        bj, ej, col, absd = Fraction(0), Fraction(0), Fraction(0), Fraction(0)
        for i in np.nonzero(D[j])[0].tolist():
            wq = Fraction(float(D[j, i]))
            bj, ej, col, absd = bj + wq * s[i][0], ej + abs(wq) * s[i][1], col + wq, absd + abs(wq)
        top = max(top, abs(mx))
        plus = max(plus, abs(bj + mx) + ej)
        minus = max(minus, abs(bj - mx) + ej)
        f0 = max(f0, abs(s0 * col) + e0 * absd)
    den = plus + minus + 2 * max((abs(v) for v in q), default=Fraction(0)) + 2 * f0
    return 2 * top / den if den > 0 else "den(x) + den(−x) = 0 at the recorded point"


def _fraction(raw: tuple, up: bool) -> Fraction:
    """An end of an enclosure (an mpmath raw float: sign, mantissa, exponent, bits) as an exact rational, moved outwards
    (``up``: an upper end) where it is inside ±2^_FLOOR — to ±2^_FLOOR or 0 — as exact rationals there would be
    astronomically long; not finite or past 2^_CEIL: _NoBox."""
    sign, man, exp, bc = raw
    if man == 0:
        if raw[2:] != (0, 0):  # (inf, nan)
            raise _NoBox("not finite")
        return Fraction(0)
    if exp + bc > _CEIL:
        raise _NoBox(f"|value| past 2^{_CEIL}")
    if exp + bc < _FLOOR:  # (|v| < 2^_FLOOR: an upper end to 2^_FLOOR or 0, a lower end to 0 or −2^_FLOOR)
        return (Fraction(1, 1 << -_FLOOR) if up else Fraction(0)) if not sign else (Fraction(0) if up else Fraction(-1, 1 << -_FLOOR))
    v = Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)
    return -v if sign else v
