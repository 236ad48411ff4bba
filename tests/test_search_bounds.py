"""The producer has one dual bound: :func:`absorb.search.bounds.dual_bound` (full ``Y``,
narrow regime) is :func:`absorb.search._scale_bounds.check_dual_bound` with ``Y = A Bᵀ``,
``A = Y``, ``B = I``.  It is checked here against the exact value of the dual objective
over rationals, for square and rectangular blocks: never above it, and within 1e-9 of it.
(Before the full-``Y`` implementation was replaced by that call, the two agreed on these
instances: the same verdict at seven tolerances, within 1e-9, the kept one never smaller.)"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from absorb.rigorous import sqrt_down, sqrt_up
from absorb.search._scale_bounds import check_dual_bound
from absorb.search.bounds import dual_bound, relaxation_bound


def _instances():
    rng = np.random.default_rng(20261201)
    out = []
    for k in range(24):
        d_out, d_in = (int(rng.integers(1, 5)), int(rng.integers(1, 5))) if k % 3 else (3, 3)
        n = int(rng.integers(1, 3 * d_out * d_in + 2))
        U = rng.standard_normal((n, d_in))
        D = rng.standard_normal((d_out, n))
        T = -np.eye(d_in) if (k % 4 == 0 and d_in == d_out) else rng.standard_normal((d_out, d_in))
        Y = relaxation_bound(U, D, T)[1] if k % 2 else -T + 0.3 * rng.standard_normal((d_out, d_in))
        out.append((U, D, T, Y))
    return out


INSTANCES = _instances()


def _exact_dual(U, D, T, Y) -> tuple[float, float]:
    """Rigorous floats lo ≤ max_σ (σ⟨T,Y⟩ − Σ_i max(0, σ w_iᵀYu_i)) / (‖Y‖_F ‖T‖_F)⁺ ≤ hi."""
    F = np.vectorize(lambda x: Fraction(float(x)), otypes=[object])
    Uf, Df, Tf, Yf = F(U), F(D), F(T), F(Y)
    s = [sum(Df[j, i] * Yf[j, k] * Uf[i, k] for j in range(D.shape[0]) for k in range(U.shape[1]))
         for i in range(U.shape[0])]
    tau = sum(Yf[j, k] * Tf[j, k] for j in range(T.shape[0]) for k in range(T.shape[1]))
    v = max(sg * tau - sum(max(Fraction(0), sg * si) for si in s) for sg in (1, -1))
    if v <= 0:
        return 0.0, 0.0
    q = v * v / (sum(x * x for x in Yf.ravel()) * sum(x * x for x in Tf.ravel()))
    return sqrt_down(q), sqrt_up(q)


@pytest.mark.parametrize("k", range(len(INSTANCES)))
def test_the_one_dual_bound_is_rigorous_and_tight(k):
    U, D, T, Y = INSTANCES[k]
    lo, hi = _exact_dual(U, D, T, Y)
    bound = dual_bound(U, D, T, Y)
    assert bound == check_dual_bound(U, D, T, Y, np.eye(U.shape[1])).relative
    assert bound <= hi
    assert bound >= lo * (1 - 1e-9)
