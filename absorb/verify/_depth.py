"""The depth result's hypothesis on the skips, re-derived: P = M_L⋯M_1 ≠ 0 and ‖P‖∞/(1 + ‖P‖∞) above the tolerance.
Every residual-free block of a flat-at-0 layer is o(|x|) at 0, so G(tx)/t → 0 while F(tx)/t → P x: near 0 every G errs
by at least |P x|∞/(|P x|∞ + |x|∞) of the tolerance's measure (F(0) = 0), and no more is proved — the blocks without
their skips, composed, err by about that."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.model.block import Block
from absorb.verify._numerics import EXACT_ELIM_MAX_D, _float_skip_product, _frac_matrix, _gamma, rounding_allowance
from absorb.verify._report import _Ctx, _require


def check_skip_product(ctx: _Ctx, w: str, blocks: list[Block]) -> None:
    """The depth result's other hypothesis: M_L⋯M_1 ≠ 0 (exact for small d, else with a rounding margin), and large
    enough for the tolerance: near 0 the argument bounds the ratio below by ‖P‖∞/(1 + ‖P‖∞) only."""
    d = blocks[0].d
    if d <= EXACT_ELIM_MAX_D * 2:
        P = [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
        for blk in blocks:
            Mf = _frac_matrix(blk.M)
            P = [[sum((Mf[i][k] * P[k][j] for k in range(d)), Fraction(0)) for j in range(d)] for i in range(d)]
        nz = any(v != 0 for row in P for v in row)
        _require(ctx, nz, w, "M_L⋯M_1 ≠ 0 (exact rationals)")
        norm = float(max(sum(abs(v) for v in row) for row in P)) * (1 - 2.0**-50)
    else:
        Pm, Pa, under = _float_skip_product(blocks)
        with np.errstate(over="ignore", invalid="ignore"):
            margin = np.abs(Pm) - 2 * _gamma(len(blocks) * (d + 1)) * Pa - under
            low = np.where(np.isfinite(margin) & (margin > 0), margin, 0.0)
        _require(ctx, bool(np.any(low > 0)), w, "M_L⋯M_1 ≠ 0 (float64 with rounding margin)")
        norm = float(np.max(np.sum(low, axis=1))) * (1 - _gamma(d + 2))
    # (near 0 the argument bounds the ratio below by ‖P‖∞/(1 + ‖P‖∞) only: B_L∘⋯∘B_1 errs by P x there)
    thr = ctx.tol + rounding_allowance(max(b.n for b in blocks))
    _require(ctx, norm > thr * (1 + norm), w, "‖M_L⋯M_1‖∞/(1 + ‖M_L⋯M_1‖∞) exceeds the tolerance (the depth argument's "
             "error near 0)", f"‖P‖∞ ≥ {norm:.3g}, threshold {thr:.3g}")
