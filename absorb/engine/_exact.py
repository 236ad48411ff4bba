"""Exact rational linear algebra on small matrices (lists of rows of Fractions), for the
degenerate-weights decision (:mod:`absorb.engine.degenerate`): products, row reduction,
rank, null spaces and inverses, with no rounding anywhere."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

Q = Fraction
Mat = list[list[Fraction]]


def _fr(a: np.ndarray) -> Mat:
    """A float array as exact rationals (every float is a dyadic rational)."""
    a = np.atleast_2d(np.asarray(a, dtype=float))
    return [[Q(float(v)) for v in row] for row in a]


def _mm(A: Mat, B: Mat) -> Mat:
    Bt = list(zip(*B)) if B else []
    return [[sum((x * y for x, y in zip(row, col)), Q(0)) for col in Bt] for row in A]


def _add(A: Mat, B: Mat) -> Mat:
    return [[x + y for x, y in zip(r, s)] for r, s in zip(A, B)]


def _outer(w: list[Fraction], u: list[Fraction]) -> Mat:
    return [[x * y for y in u] for x in w]


def _scale(A: Mat, c: Fraction) -> Mat:
    return [[c * x for x in r] for r in A]


def _zeros(r: int, c: int) -> Mat:
    return [[Q(0)] * c for _ in range(r)]


def _T(A: Mat, ncols: int | None = None) -> Mat:
    if not A:
        return [[] for _ in range(ncols or 0)]
    return [list(c) for c in zip(*A)]


def _rref(A: Mat) -> tuple[Mat, list[int]]:
    """Reduced row echelon form and pivot columns, exactly."""
    R = [row[:] for row in A]
    pivots: list[int] = []
    r = 0
    ncols = len(R[0]) if R else 0
    for c in range(ncols):
        if r == len(R):
            break
        piv = next((i for i in range(r, len(R)) if R[i][c] != 0), None)
        if piv is None:
            continue
        R[r], R[piv] = R[piv], R[r]
        pv = R[r][c]
        R[r] = [x / pv for x in R[r]]
        for i in range(len(R)):
            if i != r and R[i][c] != 0:
                f = R[i][c]
                R[i] = [x - f * y for x, y in zip(R[i], R[r])]
        pivots.append(c)
        r += 1
    return R[:r], pivots


def _rank(A: Mat) -> int:
    return len(_rref(A)[1]) if A and A[0] else 0


def _nullspace(A: Mat, ncols: int) -> Mat:
    """A basis of {x : A x = 0} as the *columns* of a ncols×k matrix."""
    if not A:
        return [[Q(int(i == j)) for j in range(ncols)] for i in range(ncols)]
    R, piv = _rref(A)
    free = [c for c in range(ncols) if c not in piv]
    cols = []
    for f in free:
        v = [Q(0)] * ncols
        v[f] = Q(1)
        for r, p in enumerate(piv):
            v[p] = -R[r][f]
        cols.append(v)
    return _T(cols, ncols) if cols else [[] for _ in range(ncols)]


def _inverse(A: Mat) -> Mat:
    k = len(A)
    aug = [row + [Q(int(i == j)) for j in range(k)] for i, row in enumerate(A)]
    R, piv = _rref(aug)
    assert piv[:k] == list(range(k)), "singular matrix"
    return [row[k:] for row in R]


def _to_float(A: Mat, shape: tuple[int, int]) -> np.ndarray:
    out = np.zeros(shape)
    for i, row in enumerate(A):
        for j, v in enumerate(row):
            out[i, j] = float(v)
    return out


__all__ = ["Q", "Mat", "_fr", "_mm", "_add", "_outer", "_scale", "_zeros", "_T", "_rref", "_rank", "_nullspace", "_inverse", "_to_float"]
