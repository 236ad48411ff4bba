"""The checker's re-derivation of the range argument (Theorem R, docs/open-problem.md).

A stack ``F = f_L ∘ … ∘ f_1`` of bias-free ungated ReLU blocks (any skips) whose last block
has width ``n_L ≤ d`` is not absorbable when its range positively spans R^d: every
``G = B'_L ∘ … ∘ B'_1`` has range in the shifted cone of the ``n_L ≤ d`` columns of its last
down projection, hence in a closed half-space, while ``F`` (positively homogeneous) is
unbounded below along every direction ``v``. The certificate records points ``x_j`` and
weights ``λ_j``; here ``F(x_j)`` is evaluated exactly in rationals from the weights, and
``λ_j > 0``, ``Σ λ_j F(x_j) = 0`` and ``rank [F(x_j)] = d`` are checked exactly. Nothing of
the producer (absorb.plane) is used.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import sympy as sp

from absorb.model.block import Block
from absorb.verify._numerics import _frac_matrix, exact_rank
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _same_function
from absorb.verify._weights import _bias_free

MAX_POINTS = 4096
MAX_DIGITS = 4000  # a recorded rational longer than this is rejected (untrusted input)


def _rational(v: Any) -> Fraction | None:
    if not isinstance(v, str) or len(v) > MAX_DIGITS:
        return None
    try:
        return Fraction(v.strip())
    except (ValueError, ZeroDivisionError):
        return None


def _exact_eval(mats: list[tuple[list[list[Fraction]], list[list[Fraction]], list[list[Fraction]]]], x: list[Fraction]) -> list[Fraction]:
    """F(x) in exact rationals: x ← M x + W_down ReLU(W_up x), block by block."""
    for U, D, M in mats:
        h = [max(sum((u * xi for u, xi in zip(row, x)), Fraction(0)), Fraction(0)) for row in U]
        x = [sum((m * xi for m, xi in zip(Mrow, x)), Fraction(0)) + sum((dv * hi for dv, hi in zip(Drow, h)), Fraction(0))
             for Mrow, Drow in zip(M, D)]
    return x


def check_range(ctx: _Ctx, w: str, blocks: list[Block], rec: Any) -> None:
    """Re-derive a ``range`` verdict on a stack from the weights and the recorded points."""
    y = sp.Symbol("y", real=True)
    d, nL = blocks[0].d, blocks[-1].n
    _require(ctx, all(not b.gated and _bias_free(b) for b in blocks), w, "every block is ungated and bias-free (F positively homogeneous)")
    _require(ctx, all(_same_function(b.activation.expr, sp.Max(0, y)) for b in blocks), w,
             "every activation is ReLU (F is evaluated exactly; σ = ReLU ≥ 0 bounds the residual-free range)")
    _require(ctx, nL <= d, w, f"the last block's width n_L = {nL} ≤ d = {d} (n_L vectors never positively span R^d)")
    ok_shape = isinstance(rec, dict) and isinstance(rec.get("points"), list) and isinstance(rec.get("lambdas"), list) \
        and 0 < len(rec["points"]) == len(rec["lambdas"]) <= MAX_POINTS
    _require(ctx, ok_shape, w, f"the range certificate lists points and as many weights (at most {MAX_POINTS})")
    pts = [[_rational(v) for v in p] if isinstance(p, list) and len(p) == d else None for p in rec["points"]]
    lam = [_rational(v) for v in rec["lambdas"]]
    _require(ctx, all(p is not None and all(v is not None for v in p) for p in pts) and all(v is not None for v in lam), w,
             f"every point has {d} rational coordinates and every weight is a rational")
    _require(ctx, all(v > 0 for v in lam), w, "every weight λ_j > 0")  # type: ignore[operator]
    mats = [(_frac_matrix(b.W_up), _frac_matrix(b.W_down), _frac_matrix(b.M)) for b in blocks]
    imgs = [_exact_eval(mats, p) for p in pts]  # type: ignore[arg-type]
    total = [sum((lj * v[i] for lj, v in zip(lam, imgs)), Fraction(0)) for i in range(d)]  # type: ignore[operator]
    _require(ctx, all(t == 0 for t in total), w, f"Σ λ_j F(x_j) = 0 exactly over the {len(pts)} recorded points (F evaluated here)",
             f"sum {[str(t) for t in total]}", fail_only=True)
    _require(ctx, exact_rank(imgs) == d, w, f"the F(x_j) span R^{d} (exact rank)")
    ctx.report.ok(w, f"range argument: the range of F positively spans R^{d}, the last residual-free block's range cannot "
                     "(width ≤ d), so no residual-free stack equals F")


SUBSET_WORK = 2_000_000  # the checker's own budget for the exact subset check (Σ 2^n·d²·n)


def check_rank(ctx: _Ctx, w: str, blocks: list[Block]) -> None:
    """Re-derive a ``rank`` verdict (Theorem K): ungated ReLU blocks, first width < 2d, and every
    ``M_ℓ + W_down[:, A] W_up[A, :]`` nonsingular, all 2^n subsets A of every block, exactly."""
    y = sp.Symbol("y", real=True)
    d, n1 = blocks[0].d, blocks[0].n
    _require(ctx, len(blocks) >= 2 and all(not b.gated for b in blocks), w, "a stack of ungated blocks")
    _require(ctx, all(_same_function(b.activation.expr, sp.Max(0, y)) for b in blocks), w,
             "every activation is ReLU (zero slope on z < 0: an inactive unit adds nothing to a Jacobian)")
    _require(ctx, n1 < 2 * d, w, f"the first block's width n_1 = {n1} < 2d = {2 * d} (some direction has ≤ {n1 // 2} < d active units)")
    work = sum(2 ** b.n * d * d * b.n for b in blocks)
    if work > SUBSET_WORK:
        ctx.report.unchecked(w, "every M_ℓ + W_down[:, A] W_up[A, :] is nonsingular", f"{work} operations exceed the budget {SUBSET_WORK}")
        return
    for ell, b in enumerate(blocks):
        M, U, D = _frac_matrix(b.M), _frac_matrix(b.W_up), _frac_matrix(b.W_down)
        for mask in range(2 ** b.n):
            act = [i for i in range(b.n) if mask >> i & 1]
            J = [[M[r][c] + sum((D[r][i] * U[i][c] for i in act), Fraction(0)) for c in range(d)] for r in range(d)]
            _require(ctx, exact_rank(J) == d, w, f"block {ell}: M + W_down[:, A] W_up[A, :] is nonsingular for A = {act}",
                     fail_only=True)
    ctx.report.ok(w, f"rank argument: F's Jacobian is a product of nonsingular matrices wherever it exists, while any residual-free "
                     f"stack with a first block of width {n1} < {2 * d} has a singular one on an open set")
