"""Near-degenerate units a residual-free block can re-use: a nearly antipodal pair of ungated units is nearly a linear
map (σ(z) − σ(−z) = c·z), and gated units with nearly equal gates merge into one. Where the freed slots can realise
the skip within the tolerance, an exact not_absorbable would contradict it: the producer's screen
(``absorb.engine.tolerance``) and the checker's own (``absorb.verify._sampled``) must both see it. Each case's g is
built and measured here, so the test fails if the construction is not within the tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from absorb.engine.decide import decide_block
from absorb.engine.verdict import Verdict
from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.verify._sampled import spare_units

_FLIP = {"relu": 1.0, "gelu": 1.0, "silu": 1.0, "leaky_relu": 1.01}
"""c with σ(z) − σ(−z) = c·z."""


def _measured(f: Block, g: Block, seed: int = 5) -> float:
    """max |f(x) − g(x)|∞ / (|f(x)|∞ + |x|∞ + |f(0)|∞) over random x at scales 10⁻⁴ … 10⁸ (a fresh sample)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.standard_normal((400, f.d)) * t for t in 10.0 ** np.arange(-4, 9)])
    f0 = float(np.max(np.abs(f(np.zeros((1, f.d))))))
    return float(np.max(np.max(np.abs(f(X) - g(X)), axis=1) / (np.max(np.abs(f(X)), axis=1) + np.max(np.abs(X), axis=1) + f0)))


def _antipodal(act: str, eps: float, sign: float = 1.0) -> tuple[Block, Block]:
    """f: identity skip (d = 2), units 0 and 1 nearly antipodal (u₁ = −e₁ + ε e₂) with down columns ∓e₁/c, together
    ≈ −sign·e₁x₁, and three generic units; g: the same units 2–4, units 0 and 1 re-aimed as the pair e₂σ(x₂) −
    e₂σ(−x₂) = c·e₂x₂ (the skip's part f's pair leaves, sign = 1). With sign = −1 the pair adds to the skip instead."""
    c = _FLIP[act]
    rng = np.random.default_rng(1)
    Uo, Do = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    U = np.vstack([[[1.0, 0.0], [-1.0, eps]], Uo])
    D = np.hstack([sign * np.array([[-1.0, 1.0], [0.0, 0.0]]) / c, Do])
    sigma = get_activation(act)
    f = Block(W_up=U, W_down=D, activation=sigma, skip=np.eye(2))
    g = Block(W_up=np.vstack([[[0.0, 1.0], [0.0, -1.0]], Uo]), W_down=np.hstack([np.array([[0.0, 0.0], [1.0, -1.0]]) / c, Do]),
              activation=sigma, skip=np.zeros((2, 2)))
    return f, g


@pytest.mark.parametrize("act", sorted(_FLIP))
def test_a_nearly_antipodal_pair_that_cancels_part_of_the_skip_frees_both_slots(act: str) -> None:
    f, g = _antipodal(act, 1e-3)
    assert _measured(f, g) < 5e-3  # (≈ 5·10⁻⁴: g is within the tolerance below)
    bd = decide_block(f, tol=1e-2)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert "antipodal" in bd.reason
    assert spare_units(f, 1e-2, 0, False) is not None  # (the checker's own screen sees it too)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_a_pair_that_adds_to_the_skip_or_is_far_from_linear_frees_nothing(act: str) -> None:
    """The same pair adding e₁x₁ to the skip (M + e₁e₁ᵀ has rank 2: one pair realises one part), or tilted by 0.1
    (its joint output is 10⁻¹ from linear): still not_absorbable, and the checker's screen agrees."""
    for f in (_antipodal(act, 1e-3, sign=-1.0)[0], _antipodal(act, 1e-1)[0]):
        assert decide_block(f, tol=1e-2).verdict is Verdict.NOT_ABSORBABLE
        assert spare_units(f, 1e-2, 0, False) is None


def _gated_pairs(act: str) -> tuple[Block, Block]:
    """f: bias-free gated (d = 2, identity skip), units 0/1 with gates 2⁻²⁰ apart and equal down columns, units 2/3
    with gates 2⁻²⁰ apart and value rows u, 2u; g (with biases): unit 1 merged into 0 (value rows added), unit 3
    into 2 (down columns added), and the two freed units with gate row 0, gate bias 8 and value rows e_j / σ_g(8):
    σ_g(8)·(e_j·x)/σ_g(8) = x_j — the skip, exactly."""
    rng = np.random.default_rng(4)
    a, b, u, v, w, z = (rng.standard_normal(2) for _ in range(6))
    G = np.array([a, a + 2.0**-20 * rng.standard_normal(2), b, b + 2.0**-20 * rng.standard_normal(2)])
    U = np.array([u, v, z, 2 * z])
    D = np.column_stack([w, w, rng.standard_normal(2), rng.standard_normal(2)])
    sigma = get_activation(act)
    f = Block(W_up=U, W_gate=G, W_down=D, activation=sigma, skip=np.eye(2))
    s8 = float(np.asarray(sigma(np.array([8.0]))).reshape(-1)[0])
    Dg = np.column_stack([w, D[:, 2] + 2 * D[:, 3], [1.0, 0.0], [0.0, 1.0]])
    g = Block(W_up=np.array([u + v, z, [1 / s8, 0.0], [0.0, 1 / s8]]), W_gate=np.array([a, b, [0.0, 0.0], [0.0, 0.0]]),
              W_down=Dg, activation=sigma, skip=np.zeros((2, 2)), b_gate=np.array([0.0, 0.0, 8.0, 8.0]))
    return f, g


@pytest.mark.parametrize("act", ["swiglu", "reglu", "geglu"])
def test_gated_units_with_nearly_equal_gates_merge(act: str) -> None:
    f, g = _gated_pairs(act)
    err = _measured(f, g)
    assert err < 5e-3, err  # (a few 10⁻⁴: g, with biases, is within the tolerance below)
    bd = decide_block(f, tol=1e-2, allow_biases=True)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert spare_units(f, 1e-2, 0, False, True) is not None  # (the checker's screen: one slot per rank with biases)
    assert spare_units(f, 1e-2, 0, False, False) is None  # (bias-free: a gate with g(0) = 0 makes no linear unit)


def test_a_diagonal_skip_is_split_as_its_svd_would() -> None:
    """The producer reads a diagonal skip's parts off its diagonal (no d × d SVD): the same remainder and kept sum as
    the SVD route gives, for every rank."""
    from absorb.engine.tolerance import _beyond_rank

    rng = np.random.default_rng(2)
    A = np.diag([3.0, -1.0, 0.5, 2.0, -0.25])
    X = rng.standard_normal((50, 5))
    den = 1 + np.abs(X).max(axis=1)
    for r in range(6):
        P, S, Qt = np.linalg.svd(A)
        rest = float(np.max(np.abs(X @ ((P[:, r:] * S[r:]) @ Qt[r:]).T).max(axis=1) / den)) if r < 5 else 0.0
        kept = float(np.sum(S[:r] * np.abs(P[:, :r]).max(axis=0) * np.abs(Qt[:r]).sum(axis=1)))
        got = _beyond_rank(A, r, X, den)
        assert got == pytest.approx((rest, kept), rel=1e-12, abs=1e-15)
