"""f whose terms cancel past float64's resolution: the sampled screens cannot read it to the tolerance, so an exact
not_absorbable is withheld (producer) and not re-checked (checker) — a unit with a huge bias whose constant the output
bias cancels hides its affine part in rounding."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from absorb import Block, get_activation
from absorb.engine._rounding import float_blind
from absorb.engine.decide import decide_block
from absorb.verify._resolution import float_resolution

_A, _B = 2.0**-40, 2.0**39


def _hidden_affine() -> Block:
    """ReLU² in d = 2: five units make f grow like |x|²; units 5, 6 have W_down columns 2⁻⁴⁰·e_k and biases 2³⁹, so on
    u·x > −2³⁹ each is e_k(u·x) plus 2⁻⁴⁰(u·x)² (b_down cancels the constant 2³⁸): nearly affine, which float64 cannot
    see (σ(u·x + 2³⁹) ≈ 2⁷⁸ rounds by 2²⁵ before the column scales it)."""
    U = np.array([[math.cos(math.radians(t)), math.sin(math.radians(t))] for t in (0, 72, 144, 216, 288, 10, 100)])
    W = np.array([[1.0, 0.8, 1.2, 0.9, 1.1, _A, 0.0], [0.3, -0.5, 0.2, 0.7, -0.4, 0.0, _A]])
    bu = np.array([0, 0, 0, 0, 0, _B, _B])
    return Block(W_up=U, W_down=W, b_up=bu, b_down=-(W[:, 5:] @ bu[5:] ** 2), activation=get_activation("relu2"))


def _witness(f: Block) -> Block:
    """Units 0–4 kept; units 5, 6 realise A = I + e₁u₅ᵀ + e₂u₆ᵀ row by row as e_i/(2ε)·relu²(ε a_i·x + 1), ε = 2⁻⁴⁰."""
    U, W, eps = f.W_up.copy(), f.W_down.copy(), 2.0**-40
    A = np.eye(2) + np.outer([1.0, 0.0], U[5]) + np.outer([0.0, 1.0], U[6])
    bu = np.zeros(7)
    for i, k in enumerate((5, 6)):
        U[k], W[:, k], bu[k] = eps * A[i], 0.0, 1.0
        W[i, k] = 1 / (2 * eps)
    return Block(W_up=U, W_down=W, b_up=bu, b_down=-np.full(2, 1 / (2 * eps)), skip=np.zeros((2, 2)),
                 activation=get_activation("relu2"))


def _exact(blk: Block):  # type: ignore[no-untyped-def]
    U = [[Fraction(float(v)) for v in r] for r in blk.W_up]
    W = [[Fraction(float(v)) for v in r] for r in blk.W_down]
    M = [[Fraction(float(v)) for v in r] for r in blk.M]
    bu, bd = [Fraction(float(v)) for v in blk.b_up], [Fraction(float(v)) for v in blk.b_down]

    def f(x):  # type: ignore[no-untyped-def]
        h = [max(Fraction(0), sum(a * b for a, b in zip(r, x)) + c) ** 2 for r, c in zip(U, bu)]
        return [sum(a * b for a, b in zip(M[j], x)) + sum(a * b for a, b in zip(W[j], h)) + bd[j] for j in range(2)]
    return f


def test_hidden_affine_units_are_within_the_tolerance_of_a_witness() -> None:
    f, g = _hidden_affine(), _witness(_hidden_affine())
    fe, ge = _exact(f), _exact(g)
    f0 = max(abs(v) for v in fe([Fraction(0), Fraction(0)]))
    rng, worst = random.Random(0), Fraction(0)
    for _ in range(600):
        s = 10 ** rng.uniform(-6, 14)
        x = [Fraction(rng.gauss(0, 1) * s), Fraction(rng.gauss(0, 1) * s)]
        fx, gx = fe(x), ge(x)
        worst = max(worst, max(abs(a - b) for a, b in zip(fx, gx)) / (max(abs(v) for v in fx) + max(abs(v) for v in x) + f0))
    assert float(worst) < 1e-11  # (g is within τ = 10⁻⁹: a not_absorbable would be wrong)


def test_the_verdict_is_withheld_and_says_why() -> None:
    d = decide_block(_hidden_affine(), tol=1e-9)
    assert d.verdict.value == "unknown"
    assert "float64" in d.reason and "cancel" in d.reason
    d = decide_block(_hidden_affine(), tol=1e-3)  # (pre-activations round by 2⁻¹³, moving f by ~2·10⁻⁴ of its scale)
    assert d.verdict.value == "unknown" and "float64" in d.reason


@pytest.mark.parametrize("tol", [1e-9, 1e-12])
def test_both_sides_see_the_cancellation(tol: float) -> None:
    f = _hidden_affine()
    assert float_blind(f, tol, 0) is not None
    assert float_resolution(f, tol, 0) is not None


@pytest.mark.parametrize("act,gated,biased", [("relu", False, False), ("gelu", False, True), ("relu2", False, True),
                                             ("silu", False, True), ("swiglu", True, True), ("glu", True, False)])
def test_ordinary_blocks_are_read_finely(act: str, gated: bool, biased: bool) -> None:
    rng = np.random.default_rng(3)
    d, n = 6, 24
    kw = {"W_gate": rng.standard_normal((n, d))} if gated else {}
    if biased:
        kw.update(b_up=rng.standard_normal(n), b_down=rng.standard_normal(d))
    f = Block(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=get_activation(act), **kw)
    assert float_blind(f, 1e-9, 0) is None
    assert float_resolution(f, 1e-9, 0) is None


def test_a_huge_bias_cancelled_by_the_output_bias_hides_a_relu_unit() -> None:
    """ReLU with one unit of bias 2⁴⁵ and b_down = −2⁴⁵·w: f(x) = x + w(u·x) + … near 0, evaluated by adding x to 2⁴⁵."""
    rng = np.random.default_rng(5)
    U, W = rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    bu = np.zeros(5)
    bu[0] = 2.0**45
    f = Block(W_up=U, W_down=W, b_up=bu, b_down=-W[:, 0] * bu[0], activation=get_activation("relu"))
    assert float_blind(f, 1e-9, 0) is not None
    assert float_resolution(f, 1e-9, 0) is not None
    bu[0] = 2.0**8  # (a moderate bias: read finely)
    f = Block(W_up=U, W_down=W, b_up=bu, b_down=-W[:, 0] * bu[0], activation=get_activation("relu"))
    assert float_blind(f, 1e-9, 0) is None
    assert float_resolution(f, 1e-9, 0) is None


def test_two_nearly_affine_units_jointly_within_the_tolerance() -> None:
    """ReLU², units 5 and 6 with bias 2²⁰ and down columns 2⁻²¹·e_k: each is e_k(u·x) plus 2⁻²¹(u·x)² past the
    output bias — a g within 6.5·10⁻⁷ of f (exact rationals) at τ = 10⁻⁶, although each unit alone reads up to
    ~7·10⁻⁷: their misfits peak at different inputs (the screen adds them sample by sample), and near x = 0 the bias
    rounds u·x by 2⁻³³ (taken off as rounding). It was not_absorbable [skeleton2]."""
    U = np.array([[math.cos(math.radians(t)), math.sin(math.radians(t))] for t in (20, 92, 164, 236, 308, 40, 110)])
    B, a = 2.0**20, 2.0**-21
    W = np.zeros((2, 7))
    W[:, :5] = [[1.0, 0.8, 1.2, 0.9, 1.1], [0.3, -0.5, 0.2, 0.7, -0.4]]
    W[0, 5] = W[1, 6] = a
    bu = np.array([0, 0, 0, 0, 0, B, B])
    f = Block(W_up=U, W_down=W, b_up=bu, b_down=np.full(2, -a * B * B), activation=get_activation("relu2"))
    eps = 2.0**-50
    A = np.eye(2) + np.array([U[5], U[6]])
    U2, W2, bu2 = U.copy(), W.copy(), np.zeros(7)
    for i, k in enumerate((5, 6)):
        U2[k], W2[:, k], bu2[k] = eps * A[i], 0.0, 1.0
        W2[i, k] = 1 / (2 * eps)
    g = Block(W_up=U2, W_down=W2, b_up=bu2, b_down=np.full(2, -1 / (2 * eps)), skip=np.zeros((2, 2)),
              activation=get_activation("relu2"))
    fe, ge = _exact(f), _exact(g)
    rng, worst = random.Random(1), Fraction(0)
    for _ in range(800):
        s = 10 ** rng.uniform(-4, 12)
        x = [Fraction(rng.gauss(0, 1) * s), Fraction(rng.gauss(0, 1) * s)]
        fx, gx = fe(x), ge(x)
        worst = max(worst, max(abs(p - q) for p, q in zip(fx, gx)) / (max(abs(v) for v in fx) + max(abs(v) for v in x)))
    assert float(worst) < 1e-6
    d = decide_block(f, tol=1e-6)
    assert d.verdict.value == "unknown" and "nearly affine" in d.reason
    from absorb.verify._sampled import spare_units

    assert spare_units(f, 1e-6, 0, True, True) is not None


def test_f0_past_float64_is_unknown_on_both_sides() -> None:
    """σ = e^z with an up bias of 712: f(0) overflows, and |f(0)|∞ is in the tolerance's measure — f's own block
    without the skip is within e^-700 of f there — so nothing near f can be read (it was not_absorbable
    [exponential])."""
    rng = np.random.default_rng(2)
    f = Block(W_up=rng.standard_normal((4, 2)), W_down=rng.standard_normal((2, 4)), b_up=np.full(4, 712.0),
              activation=get_activation("expr:exp(x)"))
    d = decide_block(f, tol=1e-9)  # (the exponential route finds no ray keeping every unit bounded: unknown before the screen)
    assert d.verdict.value == "unknown" and ("f(0)" in d.reason or "no direction v was found" in d.reason), d.reason
    assert float_resolution(f, 1e-9, 0) is not None


def test_f0_whose_tolerance_share_is_past_float64_is_unknown() -> None:
    """σ = e^z with up biases 700: f(0) ≈ 10³⁰⁴ is finite, but τ·|f(0)|∞ is past every float64 input, so f's own block
    without the skip is within the tolerance wherever float64 reads f (it was not_absorbable [exponential])."""
    rng = np.random.default_rng(2)
    f = Block(W_up=rng.standard_normal((4, 2)), W_down=rng.standard_normal((2, 4)) * 1e-3, b_up=np.full(4, 700.0),
              activation=get_activation("expr:exp(x)"))
    d = decide_block(f, tol=1e-9)  # (the exponential route finds no ray keeping every unit bounded: unknown before the screen)
    assert d.verdict.value == "unknown" and ("f(0)" in d.reason or "no direction v was found" in d.reason), d.reason
    assert float_resolution(f, 1e-9, 0) is not None


def test_boundedness_does_not_read_cancelling_terms() -> None:
    """tanh units saturated by a bias of 30 with down weights 10⁸ cancelled by b_down: every residual-free g is
    bounded while f grows like |x|, whatever float64 reads of f's finite values — still not_absorbable [bounded]."""
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 6)) * 1e8
    f = Block(W_up=rng.standard_normal((6, 3)), W_down=W, b_up=np.full(6, 30.0), b_down=-W.sum(axis=1),
              activation=get_activation("tanh"))
    d = decide_block(f, tol=1e-9)
    assert (d.verdict.value, d.theorem.value) == ("not_absorbable", "bounded"), d.reason
    from absorb.certificate import build_certificate
    from absorb.engine import decide
    from absorb.verify import checker

    rep = checker.verify_certificate(build_certificate(decide(f), f, seed=0).to_json(), f)
    assert rep.accepted and not rep.not_rechecked, [x.detail for x in rep.not_rechecked]
