"""The checker's re-derivation of the stack results beyond the paper (docs/open-problem.md).

* ``range`` (Theorem R): a stack of bias-free ungated ReLU blocks (any skips) whose last block
  has width ``n_L ≤ d`` is not absorbable when its range positively spans R^d: every
  ``G = B'_L ∘ … ∘ B'_1`` has range in the shifted cone of the ``n_L ≤ d`` columns of its last
  down projection, hence in a closed half-space, while ``F`` (positively homogeneous) is
  unbounded below along every direction ``v``. The certificate records points ``x_j`` and
  weights ``λ_j``; ``F(x_j)`` is evaluated here exactly, and ``λ_j > 0``,
  ``Σ λ_j F(x_j) = 0`` and ``rank [F(x_j)] = d`` are checked exactly.
* ``rank`` (Theorem K): ungated ReLU blocks, first width ``< 2d``, and every
  ``M_ℓ + W_down[:, A] W_up[A, :]`` nonsingular (all subsets, exact).
* ``kink-count`` (Theorem H): d = 2, widths ≤ 4, bias-free; the recorded breakpoint rays of
  ``F`` are checked to cover the circle, ``F`` is shown linear on each sector and its matrices
  are built here, one determinant sign and more than ``4L`` kinks re-derived.

Nothing of the producer (absorb.plane) is used.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._numerics import _frac_matrix, _huge_exponent, exact_rank
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _same_function
from absorb.verify._weights import _bias_free

MAX_POINTS = 4096
MAX_DIGITS = 4000  # a recorded rational longer than this is rejected (untrusted input)


def _rational(v: Any) -> Fraction | None:
    if not isinstance(v, str) or len(v) > MAX_DIGITS or _huge_exponent(v):  # ('1e99999999': a hundred-million-digit integer)
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
    mu = _spanning_margin(pts, imgs) if d == 2 else None  # type: ignore[arg-type]
    rec_mu = _rational(rec["margin"]) if "margin" in rec else None
    _require(ctx, "margin" not in rec or (rec_mu is not None and rec_mu == mu), w, "the recorded margin μ is the points' own",
             f"recorded {rec.get('margin')!r}, re-derived {mu}")
    if mu is None or not mu > Fraction(ctx.tol):
        ctx.report.unchecked(w, "the range spans R^d by more than τ: for every v some −v·F(x_j) > τ·(|F(x_j)|∞ + |x_j|∞)·|v|₁, "
                             "so no residual-free stack within the tolerance either", f"margin {mu} at τ = {ctx.tol:g}")
    else:
        ctx.report.ok(w, f"the range spans with margin μ = {float(mu):.3g} > τ: no residual-free stack is within the tolerance")


def _spanning_margin(pts: list[list[Fraction]], imgs: list[list[Fraction]]) -> Fraction:
    """min over v on the ℓ1 unit circle of max_j −v·F(x_j)/(|F(x_j)|∞ + |x_j|∞) (d = 2), exactly: the max is convex and
    piecewise linear in v, so on each side of the ℓ1 circle its least value is at a corner or where two of its pieces
    are equal."""
    scaled = []
    for x, y in zip(pts, imgs):
        den = max(abs(y[0]), abs(y[1])) + max(abs(x[0]), abs(x[1]))
        scaled.append((y[0] / den, y[1] / den))
    one, zero = Fraction(1), Fraction(0)
    dirs = [(one, zero), (-one, zero), (zero, one), (zero, -one)]
    for i, (p0, p1) in enumerate(scaled):
        for q0, q1 in scaled[:i]:
            n0, n1 = p1 - q1, q0 - p0  # ⟂ (p − q)
            size = abs(n0) + abs(n1)
            if size:
                dirs += [(n0 / size, n1 / size), (-n0 / size, -n1 / size)]
    return min(max(-(v0 * y0 + v1 * y1) for y0, y1 in scaled) for v0, v1 in dirs)


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
    singular = None
    for ell, b in enumerate(blocks):
        M, U, D = _frac_matrix(b.M), _frac_matrix(b.W_up), _frac_matrix(b.W_down)
        for mask in range(2 ** b.n):
            act = [i for i in range(b.n) if mask >> i & 1]
            J = [[M[r][c] + sum((D[r][i] * U[i][c] for i in act), Fraction(0)) for c in range(d)] for r in range(d)]
            if exact_rank(J) < d:
                singular = (ell, act)
                break
        if singular:
            break
    _require(ctx, singular is None, w, f"every M_ℓ + W_down[:, A] W_up[A, :] is nonsingular ({sum(2 ** b.n for b in blocks)} "
             "matrices, exact rank over ℚ)", f"singular for block {singular[0]}, A = {singular[1]}" if singular else "")
    ctx.report.ok(w, f"rank argument: F's Jacobian is a product of nonsingular matrices wherever it exists, while any residual-free "
                     f"stack with a first block of width {n1} < {2 * d} has a singular one on an open set")
    # exact nonsingularity says nothing about blocks within τ: a product singular up to ~τ is screened (not bounded)
    worst = 1.0  # (F's Jacobian is a product of one such matrix per block: their relative σ_min multiply)
    for b in blocks:
        M, U, D = (np.asarray(a, dtype=np.float64) for a in (b.M, b.W_up, b.W_down))
        least = math.inf
        for mask in range(2 ** b.n):
            act = [i for i in range(b.n) if mask >> i & 1]
            sv = np.linalg.svd(M + D[:, act] @ U[act, :], compute_uv=False)
            least = min(least, float(sv[-1] / (1 + sv[0])))
        worst *= least
    if worst <= 4 * math.sqrt(d) * ctx.tol:
        ctx.report.unchecked(w, "F's Jacobian is nonsingular by more than the tolerance (Π_ℓ min σ_min/(1 + σ_max) > 4√d·τ)",
                             f"the product of the blocks' least σ_min/(1 + σ_max) is {worst:.3g}: a stack within the tolerance "
                             "may have a singular Jacobian")


def _upper(v: list[Fraction]) -> bool:
    """The direction v lies in the half-turn [0, π) of angles."""
    return v[1] > 0 or (v[1] == 0 and v[0] > 0)


def _cross(a: list[Fraction], b: list[Fraction]) -> Fraction:
    return a[0] * b[1] - a[1] * b[0]


def check_kinks(ctx: _Ctx, w: str, blocks: list[Block], rec: Any, class_biases: Any) -> None:
    """Re-derive a ``kink-count`` verdict (Theorem H): d = 2, bias-free ungated ReLU, widths ≤ 4,
    a bias-free class; the recorded rays go once around the circle in steps below a half turn;
    on each sector between consecutive rays every unit of every block keeps its sign at the
    two (exactly propagated) end rays, so F is linear there, with the matrix built here; all
    those matrices are nonsingular with one determinant sign; more than 4L of the rays are kinks."""
    y = sp.Symbol("y", real=True)
    L = len(blocks)
    _require(ctx, blocks[0].d == 2 and all(b.n <= 4 for b in blocks), w, "d = 2 and every width ≤ 4")
    _require(ctx, all(not b.gated and _bias_free(b) for b in blocks), w, "every block is ungated and bias-free")
    _require(ctx, all(_same_function(b.activation.expr, sp.Max(0, y)) for b in blocks), w, "every activation is ReLU")
    _require(ctx, class_biases is False, w, "the verdict is about bias-free residual-free blocks (the argument is conic)")
    ok = isinstance(rec, dict) and isinstance(rec.get("rays"), list) and 3 <= len(rec["rays"]) <= MAX_POINTS
    _require(ctx, ok, w, f"the kink certificate lists between 3 and {MAX_POINTS} rays")
    rays = [[_rational(v) for v in r] if isinstance(r, list) and len(r) == 2 else None for r in rec["rays"]]
    _require(ctx, all(r is not None and None not in r and r != [0, 0] for r in rays), w, "every ray is a nonzero pair of rationals")
    axes = [[1, 0], [0, 1], [-1, 0], [0, -1]]
    _require(ctx, all(max(abs(r[0]), abs(r[1])) == 1 for r in rays) and all(a in rays for a in axes), w,  # type: ignore[index]
             "the rays are normalised (max(|x|, |y|) = 1) and include the four axis directions")
    m = len(rays)
    steps_ok = all(_cross(rays[k], rays[(k + 1) % m]) > 0 for k in range(m))  # type: ignore[arg-type]
    wraps = sum(1 for k in range(m) if not _upper(rays[k]) and _upper(rays[(k + 1) % m]))  # type: ignore[arg-type]
    _require(ctx, steps_ok and wraps == 1, w, "the rays go once around the circle, each step below a half turn (exact)")
    mats = [(_frac_matrix(b.W_up), _frac_matrix(b.W_down), _frac_matrix(b.M)) for b in blocks]
    Js = []
    for k in range(m):
        a, b = rays[k], rays[(k + 1) % m]
        J = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)]]
        for U, D, M in mats:
            pa, pb = _apply(J, a), _apply(J, b)  # type: ignore[arg-type]
            za = [sum((u * v for u, v in zip(row, pa)), Fraction(0)) for row in U]
            zb = [sum((u * v for u, v in zip(row, pb)), Fraction(0)) for row in U]
            _require(ctx, all(x >= 0 <= y_ or x <= 0 >= y_ for x, y_ in zip(za, zb)), w,
                     f"sector {k}: no unit changes sign inside (F is linear there)", fail_only=True)
            act = [i for i, (x, y_) in enumerate(zip(za, zb)) if x > 0 or y_ > 0]
            B = [[M[r][c] + sum((D[r][i] * U[i][c] for i in act), Fraction(0)) for c in range(2)] for r in range(2)]
            J = [[sum((B[r][t] * J[t][c] for t in range(2)), Fraction(0)) for c in range(2)] for r in range(2)]
        Js.append(J)
    dets = [J[0][0] * J[1][1] - J[0][1] * J[1][0] for J in Js]
    _require(ctx, all(v != 0 for v in dets), w, f"all {m} sector matrices of F are nonsingular (exact)")
    _require(ctx, all(Js[k - 1] != Js[k] for k in range(m) if rays[k] not in axes), w,
             "every recorded ray other than the axes is a kink of F (the record is F's own breakpoints)")
    kinks = sum(1 for k in range(m) if Js[k - 1] != Js[k])
    if all(v > 0 for v in dets) or all(v < 0 for v in dets):
        ctx.report.ok(w, "the determinants have one sign: F is a local homeomorphism, G has at most 4L kink rays")
        bound = 4 * L
    else:
        wind = _winding([_apply(J, r) for J, r in zip(Js, rays)])  # type: ignore[arg-type]
        _require(ctx, L == 2 and wind != 0, w, "depth 2 and F's winding number on the circle is nonzero (G has at most 12 kink rays)",
                 f"depth {L}, winding {wind}")
        bound = 12
    _require(ctx, kinks > bound, w, f"F has {kinks} kink rays > {bound}, the most a residual-free stack of widths ≤ 4 equal to F has")
    # the count is exact: a kink or a sign that holds by about τ says nothing of stacks within τ (a screen, not a bound)
    size = 1 + max(math.sqrt(sum(float(v) ** 2 for row in J for v in row)) for J in Js)
    jumps = [math.sqrt(sum(float(Js[k][r][c] - Js[k - 1][r][c]) ** 2 for r in range(2) for c in range(2))) for k in range(m)]
    weak = min([j for j in jumps if j > 0] + [math.inf]) <= 4 * math.sqrt(2) * ctx.tol * size
    for k in range(m if m > 2 else 0):  # (a thin sector: its two kinks may merge into one within τ)
        (ax, ay), (bx, by) = [float(v) for v in rays[k]], [float(v) for v in rays[(k + 1) % m]]
        thin = min(jumps[k], jumps[(k + 1) % m]) * abs(ax * by - ay * bx) / (math.hypot(ax, ay) * math.hypot(bx, by))
        weak = weak or 0 < thin <= 4 * math.sqrt(2) * ctx.tol * size
    if weak or min(abs(float(v)) for v in dets) <= 4 * ctx.tol * size * size:
        ctx.report.unchecked(w, "every kink and every sector's sign holds by more than the tolerance (jumps > 4√2·τ·(1 + max ‖J‖), "
                             "|det| > 4τ·(1 + max ‖J‖)²)", "a stack within the tolerance may lack a kink or have a singular sector")


def _winding(pts: list[list[Fraction]]) -> int:
    """Winding number around 0 of the closed polygon through ``pts`` (which misses 0: each edge is
    the image of a sector under a nonsingular matrix): signed crossings of the positive x-axis,
    half-open at the vertices."""
    w = 0
    for k in range(len(pts)):
        a, b = pts[k], pts[(k + 1) % len(pts)]
        if (a[1] <= 0 < b[1]) or (b[1] <= 0 < a[1]):
            x = a[0] + (b[0] - a[0]) * (-a[1]) / (b[1] - a[1])
            if x > 0:
                w += 1 if a[1] <= 0 else -1
    return w


def _apply(J: list[list[Fraction]], x: list[Fraction]) -> list[Fraction]:
    return [J[0][0] * x[0] + J[0][1] * x[1], J[1][0] * x[0] + J[1][1] * x[1]]
