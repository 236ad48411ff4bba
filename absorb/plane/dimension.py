"""Dimension count for depth-L ReLU stacks in the plane, exactly.

The conic PL map of a stack is fixed by its data: the breakpoint rays (one coordinate each,
the other being ±1 after normalisation) and the 2×2 sector matrices. Near generic weights the
combinatorial type is constant and the data is a rational function of the weights; the rank
of its Jacobian is the local dimension of the family of maps reached. It is computed here in
exact rationals by forward-mode differentiation (:class:`Dual`, a Fraction value with a vector
of Fraction partial derivatives) through the same code that computes the map
(:mod:`absorb.plane.conic`), so no floating point enters.

Expected (docs/open-problem.md): residual stacks of depth 2 and width n reach ``6n``
dimensions (``8n`` weights, ``2n`` unit scalings), residual-free ones at most ``6n − 4``
(also ``W'_down,1 → A W'_down,1``, ``W'_up,2 → W'_up,2 A⁻¹``). Measured by
:func:`dimension_report`; a local count is evidence about generic behaviour, not a verdict.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from absorb.engine._exact import _rank
from absorb.plane.conic import ConicPL, stack_map


class Dual:
    """``val + Σ der_k ε_k``: exact forward-mode derivatives. Comparisons, equality and hashing
    use the value only (so at generic weights, where no two distinct pieces coincide, the
    combinatorial decisions of the conic code are those of the value)."""

    __slots__ = ("der", "val")

    def __init__(self, val: Fraction | int, der: tuple[Fraction, ...] | None = None, size: int = 0) -> None:
        self.val = Fraction(val)
        self.der = der if der is not None else (Fraction(0),) * size

    @staticmethod
    def _lift(o: Any, size: int) -> Dual:
        return o if isinstance(o, Dual) else Dual(o, size=size)

    def __add__(self, o: Any) -> Dual:
        o = Dual._lift(o, len(self.der))
        return Dual(self.val + o.val, tuple(a + b for a, b in zip(self.der, o.der)))

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.val, tuple(-a for a in self.der))

    def __sub__(self, o: Any) -> Dual:
        return self + (-Dual._lift(o, len(self.der)))

    def __rsub__(self, o: Any) -> Dual:
        return Dual._lift(o, len(self.der)) - self

    def __mul__(self, o: Any) -> Dual:
        o = Dual._lift(o, len(self.der))
        return Dual(self.val * o.val, tuple(self.val * b + o.val * a for a, b in zip(self.der, o.der)))

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Dual:
        o = Dual._lift(o, len(self.der))
        q = self.val / o.val
        return Dual(q, tuple((a - q * b) / o.val for a, b in zip(self.der, o.der)))

    def __rtruediv__(self, o: Any) -> Dual:
        return Dual._lift(o, len(self.der)) / self

    def __abs__(self) -> Dual:
        return -self if self.val < 0 else self

    def _v(self, o: Any) -> Fraction:
        return o.val if isinstance(o, Dual) else Fraction(o)

    def __lt__(self, o: Any) -> bool:
        return self.val < self._v(o)

    def __le__(self, o: Any) -> bool:
        return self.val <= self._v(o)

    def __gt__(self, o: Any) -> bool:
        return self.val > self._v(o)

    def __ge__(self, o: Any) -> bool:
        return self.val >= self._v(o)

    def __eq__(self, o: object) -> bool:
        try:
            return self.val == self._v(o)
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.val)


def _data(F: ConicPL) -> list[Any]:
    """The free coordinates of F's data: per breakpoint the coordinate that is not ±1, per
    sector its four matrix entries."""
    out: list[Any] = []
    for r in F.rays:
        out.append(r[1] if abs(r[0]) == 1 else r[0])
        out += [F.mats[F.rays.index(r)][i][j] for i in range(2) for j in range(2)]
    return out


def data_rank(weights: list[tuple[np.ndarray, np.ndarray]], *, residual: bool) -> tuple[int, int]:
    """(rank of the Jacobian of F's data with respect to all weights, number of weights) for
    the stack of ``weights`` = [(W_up, W_down), …] (identity skips when ``residual``, else none)."""
    P = sum(U.size + D.size for U, D in weights)
    k = 0
    blocks = []
    for U, D in weights:
        dual = []
        for A in (U, D):
            rows = []
            for row in np.atleast_2d(A):
                r = []
                for v in row:
                    der = [Fraction(0)] * P
                    der[k] = Fraction(1)
                    k += 1
                    r.append(Dual(Fraction(float(v)), tuple(der)))
                rows.append(r)
            dual.append(rows)
        blocks.append((dual[0], dual[1], None))
    F = stack_map(blocks, residual=residual)
    rows = [[Fraction(x) for x in (e.der if isinstance(e, Dual) else (0,) * P)] for e in _data(F)]
    return _rank(rows), P


def dimension_report(n: int, depth: int = 2, seed: int = 0) -> dict[str, int]:
    """Exact local dimensions reached by residual and residual-free stacks at random weights."""
    rng = np.random.default_rng(seed)
    ws = [(rng.standard_normal((n, 2)), rng.standard_normal((2, n))) for _ in range(depth)]
    rF, P = data_rank(ws, residual=True)
    rG, _ = data_rank(ws, residual=False)
    return {"n": n, "depth": depth, "weights": P, "rank_residual": rF, "rank_residual_free": rG}
