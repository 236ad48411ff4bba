"""The exponential result's check: σ = A·e^{βz} + C re-derived here, and, within the tolerance, the recorded ray.

Exactly, f − g = M x + Σ_j c_j e^{β v_j·x} + c₀ for every residual-free g, and exponentials, constants and a nonzero
linear map are independent: g = f forces M = 0. Within a tolerance τ that rules out nothing by itself (f's units can
dwarf the skip). The certificate records a direction v (``argument.direction``) with β·(u_i·v) ≤ 0 for every unit of f
with a nonzero down column — checked here in exact rationals — so that f(tv) = t·M v + O(1): a g within τ of f must stay
bounded on that ray (a term of positive rate would outgrow f's linear growth and the tolerance's measure), and then its
error ratio tends to ‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞), which must exceed τ plus the rounding allowance (checked here, exactly).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block
from absorb.verify._beyond import _act, _nonzero_skip, exponential_constants
from absorb.verify._numerics import EXACT_WORK, _parse_number, rounding_allowance
from absorb.verify._pieces import decide_zero
from absorb.verify._report import _Ctx, _require


def check_exponential(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """σ = A·e^{βz} + C with A, β ≠ 0: exponentials and a nonzero linear map are independent; within the
    tolerance, the recorded ray on which f's units stay bounded and the skip's share exceeds τ."""
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0
    arg = b.get("argument") or {}
    _require(ctx, not block.gated, w, "the block is ungated")
    _nonzero_skip(ctx, w, b, block)
    abc = exponential_constants(_act(block))
    _require(ctx, abc is not None, w, "σ(z) − A·e^{βz} − C ≡ 0 with real constants A ≠ 0, β ≠ 0 (derived here; exact at every "
             "break point, by pieces)")
    A, beta, C = abc  # type: ignore[misc]
    for key, mine in (("A", A), ("beta", beta), ("C", C)):
        rec = arg.get(key)
        if rec is None:
            continue
        q = _parse_number(rec)
        same = (decide_zero(q - mine) is True) if q is not None else str(rec) == str(mine)
        if not same and isinstance(rec, float) and not mine.is_Rational:  # (an irrational constant: its float64 rounding)
            same = float(mine) == rec
        _require(ctx, same, w, f"the recorded {key} = {mine} is σ's" + ("" if mine.is_Rational else " (or its float64 rounding)"),
                 f"recorded {rec!r}")
    v = arg.get("direction")
    _require(ctx, isinstance(v, list) and len(v) == block.d and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                                      and np.isfinite(x) for x in v), w,
             f"the argument records a direction v of {block.d} finite numbers (the ray the tolerance is read on)", f"recorded {v!r}")
    try:
        positive = bool(beta > 0)
    except TypeError:  # (sympy cannot order it)
        positive = None
    _require(ctx, positive is not None, w, "the sign of β is decided", f"β = {beta}")
    ratio = _ray_ratio(block, [Fraction(float(x)) for x in v], 1 if positive else -1)
    _require(ctx, ratio is not None, w, "β·(u_i·v) ≤ 0 for every unit with a nonzero down column: f's units stay bounded on "
             f"the ray x = t·v (exact rationals, up to {EXACT_WORK} products)", "a unit grows on it, or the block is too large")
    allowed = Fraction(ctx.tol) + Fraction(rounding_allowance(block.n))
    _require(ctx, ratio > allowed, w, "on that ray every residual-free block within the tolerance stays bounded, and its error "
             f"ratio tends to ‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) > τ + {float(allowed - Fraction(ctx.tol)):.2g} (exact)", f"{float(ratio):.6g}")
    rec = arg.get("ratio")
    _require(ctx, isinstance(rec, float) and Fraction(rec) <= ratio and rec > ctx.tol, w,
             "the recorded ratio is at most the one re-derived here", f"recorded {rec!r}, re-derived {float(ratio):.17g}")
    return "not_absorbable", None, 0.0


def _ray_ratio(block: Block, q: list[Fraction], sign: int) -> Fraction | None:
    """‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) where sign·u_i·v ≤ 0 for every unit i with a nonzero down column (exact), else None."""
    U, D = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down)
    live = np.any(D != 0, axis=0)
    if (block.n + block.d) * block.d > EXACT_WORK or not np.all(np.isfinite(U)) or not np.all(np.isfinite(block.M)):
        return None
    for i in np.nonzero(live)[0]:
        if sign * sum((Fraction(float(a)) * x for a, x in zip(U[i], q) if a), Fraction(0)) > 0:
            return None
    top = max((abs(sum((Fraction(float(a)) * x for a, x in zip(row, q) if a), Fraction(0))) for row in np.asarray(block.M)),
              default=Fraction(0))
    vmax = max((abs(x) for x in q), default=Fraction(0))
    return None if vmax == 0 else top / (top + vmax)
