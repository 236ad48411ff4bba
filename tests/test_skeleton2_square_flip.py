"""The degree-2 flip beyond literal ReLU² (issue 26): the witness that negates the units of S is
exact for every σ with σ(z) + σ(−z) = αz² + k for all real z (ReLU² written otherwise, x²(1 + erf x)/2,
ReLU² + a constant, ReLU² plus an odd term, a scaled ReLU²) — the identity proved by
:func:`absorb.symbolic.properties.square_flip` and re-derived by the checker by pieces. A σ
without it (GELU², ReLU² + an even bump) stays ``unknown``, and a flip certificate moved onto
such a σ is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.symbolic import properties as props
from absorb.verify import checker

WITH = {  # σ: (α, k)
    "relu2": (1, 0),
    "expr:x*Abs(x)/2 + x**2/2": (1, 0),
    "expr:x**2*(1 + erf(x))/2": (1, 0),
    "expr:Max(0, x)**2 + 1": (1, 2),
    "expr:Max(0, x)**2 + tanh(x)": (1, 0),
    "expr:3*Max(0, x)**2/2 + 1/3": (sp.Rational(3, 2), sp.Rational(2, 3)),
}
WITHOUT = ["expr:(x*(1 + erf(x/sqrt(2)))/2)**2", "expr:Max(0, x)**2 + exp(-x**2)"]


@pytest.mark.parametrize("act", sorted(WITH))
def test_the_identity_is_proved_with_its_constants(act: str) -> None:
    p = props.square_flip(get_activation(act))
    assert p.proved and (p.value["a"], p.value["k"]) == WITH[act], p.statement


@pytest.mark.parametrize("act", [*WITHOUT, "expr:Abs(x)", "expr:Max(0, x)**2 + 3*0**Max(0, x)", "relu"])
def test_the_identity_is_not_claimed_without_it(act: str) -> None:
    # (the step σ has σ(p) + σ(−p) = p² + 3 for p > 0, but 2σ(0) = 6: it fails at z = 0)
    p = props.square_flip(get_activation(act))
    assert not p.proved, p.statement


def _planted(act: str) -> Block:
    """d = 3, n = 8 (redteam finding 02): S = {0,1,2,3} cancels in (Q), M = −2α·Σ_S c_i w_i u_iᵀ (dyadic)."""
    a = float(WITH.get(act, (1, 0))[0])
    rng = np.random.default_rng(1)
    d, n = 3, 8
    U = rng.integers(-8, 9, size=(n, d)).astype(float)
    U[:4] = 0
    U[0, 0] = U[1, 1] = 1
    U[2, :2], U[3, :2] = (1, 1), (1, -1)
    D = rng.integers(-8, 9, size=(d, n)).astype(float)
    D[D == 0] = 1
    w = rng.integers(1, 5, size=d).astype(float)
    D[:, 0] = D[:, 1] = -2 * w
    D[:, 2] = D[:, 3] = w
    c = rng.integers(-4, 5, size=n) / 4
    c[:4] = (0.5, -0.25, 1.0, 0.75)
    M = -sum(2 * a * c[i] * np.outer(D[:, i], U[i]) for i in range(4))
    return Block(U, D, get_activation(act), b_up=c, b_down=rng.integers(-4, 5, size=d) / 4, skip=M)


def _mp_sigma(act: str) -> object:  # σ at 50 digits, for the ground truth
    import mpmath as mp

    expr = get_activation(act).expr
    (x,) = expr.free_symbols
    f = sp.lambdify(x, expr, modules="mpmath")
    return lambda z: mp.mpf(f(mp.mpf(z)))


@pytest.mark.parametrize("act", sorted(WITH))
def test_a_planted_block_is_absorbable_and_its_certificate_verifies(act: str) -> None:
    import mpmath as mp

    blk = _planted(act)
    dec = decide(blk, allow_biases=True)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.SKELETON2), bd.reason
    assert bd.witness.S == (0, 1, 2, 3)
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
    # ground truth at 50 digits: f − g is 0 up to the rounding of the moved bias (≤ a few ulps of b'_down)
    mp.mp.dps = 50
    sig, g = _mp_sigma(act), bd.witness.block
    rng = np.random.default_rng(7)
    for _ in range(10):
        x = rng.standard_normal(3) * 10 ** rng.uniform(-1, 1)
        f = [mp.mpf(blk.b_down[r]) + sum(mp.mpf(blk.M[r, j]) * x[j] for j in range(3))
             + sum(mp.mpf(blk.W_down[r, i]) * sig(mp.fsum(mp.mpf(blk.W_up[i, j]) * x[j] for j in range(3)) + blk.b_up[i])
                   for i in range(8)) for r in range(3)]
        h = [mp.mpf(g.b_down[r] if g.b_down is not None else 0)
             + sum(mp.mpf(g.W_down[r, i]) * sig(mp.fsum(mp.mpf(g.W_up[i, j]) * x[j] for j in range(3)) + g.b_up[i])
                   for i in range(8)) for r in range(3)]
        scale = 1 + max(abs(v) for v in f)
        assert max(abs(p - q) for p, q in zip(f, h)) <= 1e-13 * scale


@pytest.mark.parametrize("act", WITHOUT)
def test_without_the_identity_a_found_set_proves_nothing(act: str) -> None:
    bd = decide(_planted(act), allow_biases=True).blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.UNKNOWN, Theorem.NONE), bd.reason
    assert "σ(z) + σ(−z) = α·z² + k" in bd.reason, bd.reason


def test_a_flip_certificate_moved_onto_a_sigma_without_the_identity_is_refused() -> None:
    blk = _planted("relu2")
    dec = decide(blk, allow_biases=True)
    other = blk.replace(activation=get_activation("expr:Max(0, x)**2 + exp(-x**2)"))
    forged = dataclasses.replace(dec.blocks[0], block=other)
    rep = checker.verify_certificate(build_certificate(dataclasses.replace(dec, blocks=[forged]), other, seed=0).to_json(), other)
    assert not rep.accepted
    assert any("σ(z) + σ(−z)" in f.claim for f in rep.failures), [f.claim for f in rep.failures]
