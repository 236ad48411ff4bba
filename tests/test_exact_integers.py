"""The degree-2 and gated flip checks compute in dyadic integers (absorb.engine.skeleton2.
dyadic_ints): they must equal the same quantities computed term by term in Fractions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from absorb.engine import gated_skeleton as gs
from absorb.engine import skeleton2 as sk2
from absorb.model.activations import get_activation
from absorb.model.block import Block


def F(a) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def _random(seed: int, gated: bool) -> tuple[Block, tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(1, 5)), int(rng.integers(1, 7))
    s = 2.0 ** float(rng.integers(-60, 60))
    opt = lambda k, p=0.6: (rng.standard_normal(k) * 2.0 ** float(rng.integers(-40, 40))) if rng.random() < p else None  # noqa: E731
    kw = dict(b_up=opt(n), b_down=opt(d, 0.5), skip=rng.standard_normal((d, d)) if rng.random() < 0.8 else None)
    if gated:
        kw.update(W_gate=rng.standard_normal((n, d)) * s, b_gate=opt(n))
    blk = Block(rng.standard_normal((n, d)) * s, rng.standard_normal((d, n)) / s, get_activation("silu" if gated else "relu2"), **kw)
    S = tuple(sorted(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False).tolist()))
    return blk, S


def _zeros(k: int) -> list[Fraction]:
    return [Fraction(0)] * k


@pytest.mark.parametrize("seed", range(25))
def test_relu2_flip_residuals_and_scales_equal_fractions(seed: int) -> None:
    blk, S = _random(seed, gated=False)
    wb = sk2.flip_witness_block(blk, S)
    d, n = blk.d, blk.n
    U = [F(r) for r in blk.W_up]
    D = [F(c) for c in np.asarray(blk.W_down).T]
    c = F(blk.b_up) if blk.b_up is not None else _zeros(n)
    M = [F(r) for r in blk.M]
    Q = [[[sum((D[i][a] * U[i][b] * U[i][e] for i in S), Fraction(0)) for e in range(d)] for b in range(d)] for a in range(d)]
    q = max(sum(abs(v) for row in Qa for v in row) for Qa in Q)
    RL = [[M[a][b] + sum((2 * c[i] * D[i][a] * U[i][b] for i in S), Fraction(0)) for b in range(d)] for a in range(d)]
    bd = F(blk.b_down) if blk.b_down is not None else _zeros(d)
    bd2 = F(wb.b_down) if wb.b_down is not None else _zeros(d)
    r0 = max(abs(bd[a] + sum((c[i] ** 2 * D[i][a] for i in S), Fraction(0)) - bd2[a]) for a in range(d))
    f0 = max(abs(bd[a] + sum((max(c[i], 0) ** 2 * D[i][a] for i in range(n)), Fraction(0))) for a in range(d))
    num = sum(v * v for Qa in Q for row in Qa for v in row) + sum(v * v for row in RL for v in row)
    m2 = sum(v * v for row in M for v in row)
    got = sk2.exact_flip_residuals(blk, S, wb)
    assert got[:4] == (q, max(sum(abs(v) for v in row) for row in RL), r0, f0)
    assert got[4] == (math.sqrt(float(num / m2)) if m2 else math.inf)
    u1 = [sum(abs(v) for v in u) for u in U]
    quad = [[abs(D[i][a]) * u1[i] ** 2 for i in range(n)] for a in range(d)]
    lin = max(sum(abs(v) for v in M[a]) + sum(2 * abs(c[i] * D[i][a]) * u1[i] for i in range(n)) for a in range(d))
    assert sk2.relu2_scales(blk, S) == (max(Fraction(1), lin), max(sum(r) for r in quad), max(sum(r[i] for i in S) for r in quad))


@pytest.mark.parametrize("seed", range(25))
def test_gated_flip_residuals_and_scales_equal_fractions(seed: int) -> None:
    blk, S = _random(seed, gated=True)
    wb = gs.gated_flip_block(blk, S)
    d, n = blk.d, blk.n
    G, U = [F(r) for r in blk.W_gate], [F(r) for r in blk.W_up]
    W = [F(col) for col in np.asarray(blk.W_down).T]
    c = F(blk.b_gate) if blk.b_gate is not None else _zeros(n)
    e = F(blk.b_up) if blk.b_up is not None else _zeros(n)
    M = [F(r) for r in blk.M]
    Q = [[[sum((W[i][a] * (G[i][b] * U[i][k] + U[i][b] * G[i][k]) for i in S), Fraction(0)) for k in range(d)] for b in range(d)]
         for a in range(d)]
    RL = [[M[a][b] + sum((W[i][a] * (c[i] * U[i][b] + e[i] * G[i][b]) for i in S), Fraction(0)) for b in range(d)] for a in range(d)]
    bd = F(blk.b_down) if blk.b_down is not None else _zeros(d)
    bd2 = F(wb.b_down) if wb.b_down is not None else _zeros(d)
    r0 = max(abs(bd[a] + sum((c[i] * e[i] * W[i][a] for i in S), Fraction(0)) - bd2[a]) for a in range(d))
    num = sum(v * v for Qa in Q for row in Qa for v in row) + sum(v * v for row in RL for v in row)
    m2 = sum(v * v for row in M for v in row)
    got = gs.gated_flip_residuals(blk, S, wb)
    assert got[:3] == (max(sum(abs(v) for row in Qa for v in row) for Qa in Q) / 2, max(sum(abs(v) for v in row) for row in RL), r0)
    assert got[3] == (math.sqrt(float(num / m2)) if m2 else math.inf)
    g1, u1 = [sum(abs(v) for v in g) for g in G], [sum(abs(v) for v in u) for u in U]
    quad = [[abs(W[i][a]) * g1[i] * u1[i] for i in range(n)] for a in range(d)]
    lin = max(sum(abs(v) for v in M[a]) + sum(abs(W[i][a]) * (abs(c[i]) * u1[i] + abs(e[i]) * g1[i]) for i in range(n)) for a in range(d))
    assert gs.gated_scales(blk, S) == (max(Fraction(1), lin), max(sum(r) for r in quad), max(sum(r[i] for i in S) for r in quad))
