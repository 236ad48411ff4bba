"""Exact conic piecewise-linear maps of the plane (bias-free ReLU stacks with d = 2).

A bias-free ReLU block ``f(x) = M x + W_down ReLU(W_up x)`` on R² is positively homogeneous
and piecewise linear: it is fixed by finitely many rays from the origin and one 2×2 matrix
per sector between consecutive rays. Compositions of such maps are again of this kind. This
module computes them in exact rational arithmetic (``fractions.Fraction``; stored floats are
dyadic rationals, so float weights are read exactly): the kink rays (where the linear piece
changes), the sector matrices, the full kink lines, and whether the range positively spans
the plane.

A :class:`ConicPL` keeps *breakpoints*: every kink ray plus the four axis directions, so that
every sector is at most a quarter turn (a sector of angle < π is the cone of its two bounding
rays, and its image is the cone of their images). Directions are stored normalised to
max(|x|, |y|) = 1, so two rays are equal exactly when their tuples are.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.engine._exact import _fr

Q = Fraction
Vec = tuple[Fraction, Fraction]
Mat2 = tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]

AXES: tuple[Vec, ...] = ((Q(1), Q(0)), (Q(0), Q(1)), (Q(-1), Q(0)), (Q(0), Q(-1)))
ZERO2: Mat2 = ((Q(0), Q(0)), (Q(0), Q(0)))
ID2: Mat2 = ((Q(1), Q(0)), (Q(0), Q(1)))


def cross(a: Vec, b: Vec) -> Fraction:
    return a[0] * b[1] - a[1] * b[0]


def dot(a: Vec, b: Vec) -> Fraction:
    return a[0] * b[0] + a[1] * b[1]


def apply(J: Mat2, x: Vec) -> Vec:
    return (J[0][0] * x[0] + J[0][1] * x[1], J[1][0] * x[0] + J[1][1] * x[1])


def matmul(A: Mat2, B: Mat2) -> Mat2:
    return ((A[0][0] * B[0][0] + A[0][1] * B[1][0], A[0][0] * B[0][1] + A[0][1] * B[1][1]),
            (A[1][0] * B[0][0] + A[1][1] * B[1][0], A[1][0] * B[0][1] + A[1][1] * B[1][1]))


def normalise(v: Vec) -> Vec:
    """The direction of ``v ≠ 0`` scaled to max(|x|, |y|) = 1 (canonical: equal rays, equal tuples)."""
    s = max(abs(v[0]), abs(v[1]))
    if s == 0:
        raise ValueError("the zero vector has no direction")
    return (v[0] / s, v[1] / s)


def _half(v: Vec) -> int:
    return 0 if v[1] > 0 or (v[1] == 0 and v[0] > 0) else 1


def angle_cmp(a: Vec, b: Vec) -> int:
    """Exact comparison of the angles of ``a`` and ``b`` in [0, 2π)."""
    ha, hb = _half(a), _half(b)
    if ha != hb:
        return -1 if ha < hb else 1
    c = cross(a, b)
    return -1 if c > 0 else (1 if c < 0 else 0)


def sort_directions(vs: Iterable[Vec]) -> list[Vec]:
    """Distinct normalised directions, by angle from the positive x-axis."""
    return sorted({normalise(v) for v in vs}, key=functools.cmp_to_key(angle_cmp))


def perp(v: Vec) -> Vec:
    return (-v[1], v[0])


@dataclass(frozen=True)
class ConicPL:
    """A positively homogeneous, continuous, piecewise-linear map R² → R².

    ``rays[k]`` (sorted by angle, normalised) and ``mats[k]``: the map is ``mats[k] x`` on the
    closed sector from ``rays[k]`` to ``rays[k + 1]`` (cyclically). Every sector is less than
    a half turn (the axes are always breakpoints)."""

    rays: tuple[Vec, ...]
    mats: tuple[Mat2, ...]

    def sector_of(self, y: Vec) -> int:
        """The index k of a sector containing ``y ≠ 0`` (the one starting at y when y is a breakpoint)."""
        m = len(self.rays)
        for k in range(m):
            a, b = self.rays[k], self.rays[(k + 1) % m]
            if cross(a, y) >= 0 and cross(y, b) > 0 and (cross(a, y) > 0 or dot(a, y) > 0):
                return k
        raise AssertionError(f"no sector contains {y}")  # pragma: no cover - the sectors cover the plane

    def __call__(self, x: Vec) -> Vec:
        if x[0] == 0 and x[1] == 0:
            return (Q(0), Q(0))
        return apply(self.mats[self.sector_of(x)], x)

    def kink_rays(self) -> list[Vec]:
        """The rays where the linear piece changes (the matrices on both sides differ)."""
        m = len(self.rays)
        return [self.rays[k] for k in range(m) if self.mats[k - 1] != self.mats[k]]

    def full_lines(self) -> list[Vec]:
        """Kink rays r (one per line, the one of smaller angle) whose opposite −r is a kink ray too."""
        ks = set(self.kink_rays())
        return [r for r in sorted(ks, key=functools.cmp_to_key(angle_cmp)) if _half(r) == 0 and normalise((-r[0], -r[1])) in ks]

    def jumps(self) -> list[tuple[Vec, Mat2]]:
        """(kink ray r, J_after − J_before): a matrix of rank one that kills r (continuity)."""
        m = len(self.rays)
        out = []
        for k in range(m):
            A, B = self.mats[k - 1], self.mats[k]
            if A != B:
                out.append((self.rays[k], tuple(tuple(B[i][j] - A[i][j] for j in range(2)) for i in range(2))))
        return out  # type: ignore[return-value]

    def simplified(self) -> ConicPL:
        """The same map with every breakpoint that is neither a kink nor an axis removed."""
        m = len(self.rays)
        keep = [k for k in range(m) if self.rays[k] in AXES or self.mats[k - 1] != self.mats[k]]
        return ConicPL(tuple(self.rays[k] for k in keep), tuple(self.mats[k] for k in keep))

    def is_linear(self) -> bool:
        return not self.kink_rays()

    def winding_number(self) -> int | None:
        """The degree of F on the circle (how often F(x) turns around 0 as x does once), exactly;
        None when F vanishes on some ray. Each sector maps the segment between its end rays
        linearly onto the segment between their images, which misses 0 (a nonsingular matrix, or
        a singular one whose kernel is outside the sector); signed crossings of the positive
        x-axis are counted."""
        pts = [self(r) for r in self.rays]
        if any(p == (0, 0) for p in pts):
            return None
        for J, a, b in zip(self.mats, self.rays, self.rays[1:] + self.rays[:1]):
            if J[0][0] * J[1][1] - J[0][1] * J[1][0] == 0:  # J ≠ 0 here (its end rays have nonzero images)
                row = J[0] if J[0] != (0, 0) else J[1]
                for k in (perp(row), (-perp(row)[0], -perp(row)[1])):  # the kernel's two rays
                    if cross(a, k) >= 0 and cross(k, b) >= 0:
                        return None
        w = 0  # crossings of the positive x-axis, half-open rule (a vertex on the axis counts once)
        m = len(pts)
        for k in range(m):
            a, b = pts[k], pts[(k + 1) % m]
            up, down = a[1] <= 0 < b[1], b[1] <= 0 < a[1]
            if up or down:
                x_cross = a[0] + (b[0] - a[0]) * (-a[1]) / (b[1] - a[1])
                if x_cross > 0:
                    w += 1 if up else -1
        return w

    def image_directions(self) -> list[Vec]:
        """The images of the breakpoints (nonzero ones): the range is the union of the cones
        of consecutive ones."""
        return [y for y in (self(r) for r in self.rays) if y != (0, 0)]


def block_map(W_up: np.ndarray | Sequence[Sequence[Fraction]], W_down: np.ndarray | Sequence[Sequence[Fraction]],
              skip: np.ndarray | Sequence[Sequence[Fraction]] | None = None, *, residual: bool = True) -> ConicPL:
    """The exact map ``x ↦ M x + W_down ReLU(W_up x)`` (``M``: ``skip``, the identity when
    None and ``residual``; zero when not ``residual``)."""
    U = _as_q(W_up)
    D = _as_q(W_down)
    n = len(U)
    if any(len(r) != 2 for r in U) or len(D) != 2 or any(len(r) != n for r in D):
        raise ValueError(f"a plane block needs W_up n×2 and W_down 2×n, got {len(U)}×{len(U[0]) if U else 0} and {len(D)}×{len(D[0]) if D else 0}")
    if skip is not None:
        S = _as_q(skip)
        M: Mat2 = ((S[0][0], S[0][1]), (S[1][0], S[1][1]))
    else:
        M = ID2 if residual else ZERO2
    cuts = list(AXES)
    for u in U:
        if u[0] != 0 or u[1] != 0:
            p = perp((u[0], u[1]))
            cuts += [p, (-p[0], -p[1])]
    rays = sort_directions(cuts)
    mats = []
    for k in range(len(rays)):
        a, b = rays[k], rays[(k + 1) % len(rays)]
        mid = (a[0] + b[0], a[1] + b[1])
        J = [list(M[0]), list(M[1])]
        for i, u in enumerate(U):
            if u[0] * mid[0] + u[1] * mid[1] > 0:
                for r in range(2):
                    for c in range(2):
                        J[r][c] += D[r][i] * u[c]
        mats.append(((J[0][0], J[0][1]), (J[1][0], J[1][1])))
    return ConicPL(tuple(rays), tuple(mats)).simplified()


def compose(outer: ConicPL, inner: ConicPL) -> ConicPL:
    """``outer ∘ inner``, exactly: each sector of ``inner`` is cut where its image crosses a
    breakpoint line of ``outer`` (and at the kernel of a singular sector matrix)."""
    rays: list[Vec] = []
    mats: list[Mat2] = []
    m = len(inner.rays)
    for k in range(m):
        a, b, J = inner.rays[k], inner.rays[(k + 1) % m], inner.mats[k]
        cand: list[Vec] = []
        for r in outer.rays:
            nv = perp(r)
            c = (J[0][0] * nv[0] + J[1][0] * nv[1], J[0][1] * nv[0] + J[1][1] * nv[1])  # Jᵀ n: x ↦ n·(J x)
            if c != (0, 0):
                pc = perp(c)
                cand += [pc, (-pc[0], -pc[1])]
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0]
        if det == 0 and J != ZERO2:
            row = J[0] if J[0] != (0, 0) else J[1]
            p = perp(row)
            cand += [p, (-p[0], -p[1])]
        inside = [normalise(v) for v in cand if cross(a, v) > 0 and cross(v, b) > 0]
        edges = [a, *sort_within(inside, a), b]
        for lo, hi in zip(edges[:-1], edges[1:]):
            mid = (lo[0] + hi[0], lo[1] + hi[1])
            y = apply(J, mid)
            Jo = ZERO2 if y == (0, 0) else outer.mats[outer.sector_of(y)]
            rays.append(lo)
            mats.append(matmul(Jo, J))
    return ConicPL(tuple(rays), tuple(mats)).simplified()


def sort_within(vs: Iterable[Vec], start: Vec) -> list[Vec]:
    """Distinct directions of a sector of angle < π, by angle from ``start``."""
    uniq = set(vs)
    return sorted(uniq, key=functools.cmp_to_key(lambda p, q: -1 if cross(p, q) > 0 else (1 if cross(p, q) < 0 else 0)))


def stack_map(blocks: Iterable[tuple[object, object, object]], *, residual: bool = True) -> ConicPL:
    """``f_L ∘ … ∘ f_1`` for ``blocks`` = (W_up, W_down, skip or None) applied in order."""
    F: ConicPL | None = None
    for U, D, M in blocks:
        f = block_map(U, D, M, residual=residual)  # type: ignore[arg-type]
        F = f if F is None else compose(f, F)
    if F is None:
        raise ValueError("a stack needs at least one block")
    return F


def positive_spanning(points: Sequence[Vec]) -> list[Fraction] | None:
    """Coefficients λ_j > 0 with Σ λ_j p_j = 0 when the nonzero ``points`` positively span R²
    (their range is in no closed half-plane), else None. Exact: each −p_j is written as a
    nonnegative combination of the two consecutive directions around it, and the relations summed."""
    pts = [p for p in points if p != (0, 0)]
    dirs = sort_directions(pts)
    if len(dirs) < 3 or any(cross(dirs[k], dirs[(k + 1) % len(dirs)]) <= 0 for k in range(len(dirs))):
        return None  # a gap of at least a half turn: all points lie in a closed half-plane
    index = {}
    for j, p in enumerate(pts):
        index.setdefault(normalise(p), j)
    lam = [Q(0)] * len(pts)
    for j, p in enumerate(pts):
        t = (-p[0], -p[1])
        lam[j] += 1
        for k in range(len(dirs)):
            a, b = dirs[k], dirs[(k + 1) % len(dirs)]
            if cross(a, t) >= 0 and cross(t, b) > 0:
                # t = α a + β b with α, β ≥ 0 (Cramer; cross(a, b) > 0)
                den = cross(a, b)
                alpha, beta = cross(t, b) / den, cross(a, t) / den
                ia, ib = index[a], index[b]
                sa, sb = _scale_to(a, pts[ia]), _scale_to(b, pts[ib])
                lam[ia] += alpha * sa
                lam[ib] += beta * sb
                break
        else:  # pragma: no cover - the gaps are below a half turn, so some cone holds t
            raise AssertionError("positive_spanning: no cone holds −p")
    return lam


def _scale_to(direction: Vec, p: Vec) -> Fraction:
    """c with direction = c·p (p a positive multiple of the direction)."""
    return direction[0] / p[0] if p[0] != 0 else direction[1] / p[1]


def _as_q(a: object) -> list[list[Fraction]]:
    if isinstance(a, np.ndarray):
        return _fr(a)
    return [[Q(v) if isinstance(v, (int, float, np.floating, np.integer)) else v for v in row] for row in a]  # type: ignore[union-attr]
