"""The degree-2 and gated skeletons at the edges of float64: weights near 2^±300 and 2^1022.

An overflowed residual norm is nan in the enumeration's lower bound, and ``min()`` skips a
nan: every S of a planted block once looked "farther than inf", a wrong ``not_absorbable``
that the checker accepted (its own enumeration had the same ``min``). Exact columns past
float64 crashed the rank route. Each is now ``unknown`` (or decided right), never wrong, and
the checker's enumeration gives no bound from a nan."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from absorb import Block, get_activation
from absorb.engine.decide import decide
from absorb.engine.skeleton2 import enumeration_route_columns
from absorb.engine.verdict import Verdict
from absorb.verify._skeleton2 import enumeration_bound


def _exact_plant_near_top() -> Block:
    """S = {0, 1, 2, 3} meets (Q) and (L) exactly (dyadic weights); W_down's first row near 2^1022."""
    U = np.array([[1, 1], [1, -1], [1, 0], [0, 1], [1, 2], [2, 1], [1, 3], [3, -1]], float)
    s = np.array([1, 1, -2, -2])
    r = np.array([1.5 * 2.0**1022, 1.0])
    S = [0, 1, 2, 3]
    D = np.zeros((2, 8))
    D[:, :4] = np.outer(r, s)
    D[:, 4:] = [[0.5, -0.25, 1, 2], [1, 0.75, -0.5, 0.25]]
    c = np.array([1.0, 1.0, 0.5, 0.25, 0.1, -0.3, 0.7, 0.2])
    Mf = [[-sum(2 * Fraction(c[i]) * Fraction(D[a, i]) * Fraction(U[i, b]) for i in S) for b in range(2)] for a in range(2)]
    M = np.array([[float(v) for v in row] for row in Mf])
    return Block(W_up=U, W_down=D, b_up=c, skip=M, activation=get_activation("relu2"))


def _rounded_plant(scale_u: float, scale_c: float, gated: bool = False) -> Block:
    rng = np.random.default_rng(0)
    d, n, S = 2, 8, [0, 1, 2, 3]
    U = rng.standard_normal((n, d)) * scale_u
    D = rng.standard_normal((d, n))
    c = rng.standard_normal(n) * scale_c
    if gated:
        G = rng.standard_normal((n, d)) * scale_u
        e = rng.standard_normal(n) * scale_c
        A = np.stack([(np.outer(G[i], U[i]) + np.outer(U[i], G[i])).reshape(-1) for i in S], 1)
        D[:, S] = np.outer(rng.standard_normal(d), np.linalg.svd(A)[2][-1])
        M = -sum(np.outer(D[:, i], e[i] * U[i] + c[i] * G[i]) for i in S)
        return Block(W_up=U, W_down=D, W_gate=G, b_gate=e, b_up=c, skip=M, activation=get_activation("silu"))
    A = np.stack([np.outer(U[i], U[i]).reshape(-1) for i in S], 1)
    D[:, S] = np.outer(rng.standard_normal(d), np.linalg.svd(A)[2][-1])
    M = -2 * sum(c[i] * np.outer(D[:, i], U[i]) for i in S)
    return Block(W_up=U, W_down=D, b_up=c, skip=M, activation=get_activation("relu2"))


@pytest.mark.parametrize("make", [_exact_plant_near_top, lambda: _rounded_plant(2.0**300, 2.0**290),
                                  lambda: _rounded_plant(2.0**300, 2.0**290, gated=True)],
                         ids=["exact-2^1022", "rounded-2^300", "gated-2^300"])
def test_planted_blocks_near_the_top_are_never_not_absorbable(make) -> None:
    assert decide(make()).verdict is not Verdict.NOT_ABSORBABLE


def test_enumeration_gives_no_bound_from_an_overflow() -> None:
    K = np.array([[1e200, 1e200], [1.0, -1.0]])  # ‖Σ_S k_i‖² overflows for S ∋ 0
    tt = np.array([0.0, -1.0])
    assert enumeration_route_columns(K.T.copy(), tt, 1e-9) is None
    assert enumeration_bound(K, 1, np.array([[1.0]])) is None


@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_gated_and_relu2_blocks_past_the_exact_range_do_not_crash(scale: float) -> None:
    rng = np.random.default_rng(11)
    d, n = 2, 6
    G, U = rng.standard_normal((n, d)) * scale, rng.standard_normal((n, d)) * scale
    D = rng.standard_normal((d, n)) * 1e50
    M = rng.standard_normal((d, d)) * (1e200 if scale > 1 else 1e-200)
    for blk in (Block(W_up=U, W_down=D, W_gate=G, b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n), skip=M,
                      activation=get_activation("relu")),
                Block(W_up=U, W_down=D, b_up=rng.standard_normal(n), skip=M, activation=get_activation("relu2"))):
        assert decide(blk).verdict in (Verdict.UNKNOWN, Verdict.NOT_ABSORBABLE)


def test_a_unit_nothing_cancels_is_not_rounding_because_a_larger_unit_dominates() -> None:
    """S = {0}: unit 0's quadratic part is not cancelled at all, but it is 1e-20 of the block's
    quadratic scale s₂ (unit 3 dominates), and S's distance from (Q), (L) is 5e-11 ≤ τ. Its flip
    is within ε(|f(0)| + s₁|x| + s₂|x|²) for a tiny ε, yet |f − g|/|f| is near 1 where unit 3
    is off: the quadratic part must cancel to within τ of the flipped units' own size."""
    lam = 1e-10
    U = np.array([[1.0, 0.3], [0.2, 1.0], [1.0, -1.0], [-0.7, 0.4]])
    U[:3] *= lam
    D = np.array([[1.0, 0.5, -0.3, 1.0], [0.4, -1.0, 0.8, 0.6]])
    c = np.array([1.0, 0.7, -0.4, 0.3])
    M = -2 * c[0] * np.outer(D[:, 0], U[0])
    blk = Block(W_up=U, W_down=D, b_up=c, skip=M, activation=get_activation("relu2"))
    assert decide(blk).verdict is not Verdict.ABSORBABLE


def test_a_value_row_parallel_to_a_huge_gate_row_is_seen() -> None:
    """Gate row (1.5e308, 1.5e308) and value row (1e-10, 1e-10) are parallel; the product of their
    norms overflows, which once made the cosine 0 and the hypothesis 'not parallel' hold."""
    from absorb.engine.gated_skeleton import gate_hypotheses

    G = np.array([[1.5e308, 1.5e308], [1.0, -2.0], [3.0, 1.0]])
    U = np.array([[1e-10, 1e-10], [1.0, 0.5], [0.2, 1.0]])
    blk = Block(W_up=U, W_down=np.ones((2, 3)), W_gate=G, activation=get_activation("silu"))
    h = {x.name: x for x in gate_hypotheses(blk)}["value_not_parallel_to_gate"]
    assert not h.holds and h.value["units"] == [0]


def test_the_rounding_slack_is_never_shrunk_by_an_overflowed_norm() -> None:
    """‖T‖_F of a target near 1.5e308 overflows float64: the slack must not become 0 by a
    division by inf (it is taken against a rigorous lower bound of ‖T‖_F)."""
    from absorb.engine.skeleton2 import slack_from_norms

    D, a = np.ones((2, 3)), np.ones(3)
    assert slack_from_norms(a, 2, D, np.full((2, 2), 1.5e308)) > 0
    assert 0 < slack_from_norms(a, 2, D, -np.eye(2)) < 1e-14


def test_enumeration_returns_the_nearest_s_not_the_first_within_tolerance():
    """With large up-biases (L) outweighs (Q) in the stacked distance, so an S off (Q) by O(1)
    can sit within tol while another S meets both exactly; the flip witness is tried on one S
    only, so the enumeration hands over the nearest (here {0} comes first in its order and is
    5e-10 away, {0, 1} is exact)."""
    t = np.array([1.0e9, 0.0, 0.0])
    e = np.array([0.0, 0.5, 0.0])  # ‖e‖/‖t‖ = 5e-10 ≤ tol
    K = np.stack([-t + e, -e], axis=1)  # K1_S − tt with tt = −t: {0} → e, {1} → t − e, {0, 1} → 0
    res = enumeration_route_columns(K, -t, 1e-9)
    assert res is not None and res.S == (0, 1) and res.residual == 0.0
