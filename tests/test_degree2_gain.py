"""The degree-2 routes' distance bar counts f's size (absorb.engine._growth2, absorb.verify._growth2).

A candidate g of these routes (a flip of S, a rescaling μ) leaves f − g = E(x) + R x + δ, and the bar
claims that some x has |f − g|∞ > ρ∞/(1 + K)·(|f(x)|∞ + |x|∞ + |f(0)|∞), ρ∞ = ‖R‖∞. These tests measure
that ratio along the maximising sign vector of R on a dense grid of radii and require the claimed
lower bound — of the producer's K and of the checker's — to hold (with K = 0 it failed: a large
|f(0)| or a large linear part hid flips whose ρ∞ is several times τ). They also decide blocks where
such a flip is within τ in f's measure (never not_absorbable) and generic blocks at the default
tolerance (still not_absorbable: the bar is not so wide that it decides nothing).
"""

from __future__ import annotations

import numpy as np
import pytest

from absorb.engine import _growth2 as producer
from absorb.engine.decide import decide_block
from absorb.engine.verdict import Verdict
from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.verify import _growth2 as checker

GELU2 = "expr:(x*(1 + erf(x/sqrt(2)))/2)**2"
SOFTPLUS2 = "expr:log(1 + exp(x))**2"


def _sup_ratio(f: Block, g: Block, v: np.ndarray) -> float:
    """max over ±t·v (t on a log grid, 400 per decade) of |f − g|∞ / (|f|∞ + |x|∞ + |f(0)|∞)."""
    t = 10.0 ** np.linspace(-6, 6, 4801)
    X = np.concatenate([t[:, None] * v, -t[:, None] * v])
    F, G = f(X), g(X)
    f0 = np.max(np.abs(f(np.zeros((1, f.d)))))
    return float(np.max(np.max(np.abs(F - G), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1) + f0)))


def _check_bound(f: Block, g: Block, R: np.ndarray, Ks: list[float]) -> None:
    r = int(np.argmax(np.abs(R).sum(axis=1)))
    v = np.sign(R[r])
    v[v == 0] = 1.0
    rho = float(np.abs(R).sum(axis=1).max())
    got = _sup_ratio(f, g, v)
    for K in Ks:
        assert got >= 0.98 * rho / (1 + K), (got, rho, K)


def _ungated(rng: np.random.Generator, act: str, d: int, n: int, f0: float) -> Block:
    return Block(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=get_activation(act),
                 skip=rng.standard_normal((d, d)), b_up=rng.standard_normal(n), b_down=f0 * rng.standard_normal(d))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("f0", [0.0, 1e4])
def test_relu2_flip_error_is_at_least_the_claimed_share(seed: int, f0: float) -> None:
    rng = np.random.default_rng(seed)
    f = _ungated(rng, "relu2", 3, 6, f0)
    if f0 == 0.0:
        f = Block(W_up=f.W_up, W_down=f.W_down, activation=f.activation, skip=f.skip)
    S = rng.permutation(6)[:3]
    s = np.ones(6)
    s[S] = -1
    c = np.zeros(6) if f.b_up is None else f.b_up
    g = Block(W_up=f.W_up * s[:, None], W_down=f.W_down * s, activation=f.activation, skip=np.zeros((3, 3)),
              b_up=c * s, b_down=f.b_down)
    R = f.M + 2 * (f.W_down[:, S] * c[S]) @ f.W_up[S]  # ReLU²(z) + ReLU²(−z) = z²: f − g = Σ_S w_i (u_i·x + c_i)² + M x
    form = (producer.Fraction(1), producer.Fraction(0))
    Ks = [producer.ungated_gain(f, form)[0], producer.ungated_gain(f, None)[0], checker.ungated_gain(f, form)[1],
          checker.ungated_gain(f, None)[1]]  # (K_L: the linear part's share)
    assert all(np.isfinite(Ks))
    _check_bound(f, g, R, Ks)


@pytest.mark.parametrize("seed", range(6))
def test_relu2_linear_rescaling_error_is_at_least_the_claimed_share(seed: int) -> None:
    rng = np.random.default_rng(seed)
    act = "expr:Max(0, x)**2 + x"
    f = _ungated(rng, act, 2, 4, 0.0)
    f = Block(W_up=f.W_up, W_down=50 * f.W_down, activation=f.activation, skip=0.01 * f.skip)  # the linear part dominates
    mu = 1 + 0.05 * rng.random(4)
    g = Block(W_up=f.W_up / mu[:, None], W_down=f.W_down * mu**2, activation=f.activation, skip=np.zeros((2, 2)))
    R = f.M - ((f.W_down * (mu - 1)) @ f.W_up)  # σ = ReLU² + z: f − g = (M − Σ(μ_i − 1) w_i u_iᵀ) x
    form = (producer.Fraction(1), producer.Fraction(1))
    _check_bound(f, g, R, [producer.ungated_gain(f, form)[0], checker.ungated_gain(f, form)[1]])


@pytest.mark.parametrize("act", [GELU2, SOFTPLUS2])
def test_squares_of_lipschitz_functions_get_a_finite_gain_with_biases(act: str) -> None:
    rng = np.random.default_rng(3)
    f = _ungated(rng, act, 3, 5, 10.0)
    assert np.isfinite(producer.ungated_gain(f, None)[0])
    assert checker.ungated_gain(f, None)[0] is not None


def test_a_sigma_without_a_size_bound_gets_none() -> None:
    f = _ungated(np.random.default_rng(0), "expr:x**2*tanh(x)**2 + x**3/(1 + x**2)", 2, 3, 1.0)
    KL, KQ, why = producer.ungated_gain(f, None)
    assert KL == KQ == np.inf and "not bounded" in why
    assert checker.ungated_gain(f, None)[0] is None


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("biased", [False, True])
def test_swiglu_gate_flip_error_is_at_least_the_claimed_share(seed: int, biased: bool) -> None:
    rng = np.random.default_rng(seed)
    d, n = 3, 6
    G, U, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    c, e = (rng.standard_normal(n), rng.standard_normal(n)) if biased else (None, None)
    bd = 1e3 * rng.standard_normal(d) if biased else None
    act = get_activation("swiglu")
    f = Block(W_up=U, W_down=D, W_gate=G, activation=act, skip=rng.standard_normal((d, d)), b_gate=c, b_up=e, b_down=bd)
    S = rng.permutation(n)[:2]
    s = np.ones(n)
    s[S] = -1
    g = Block(W_up=U, W_down=D, W_gate=G * s[:, None], activation=act, skip=np.zeros((d, d)),
              b_gate=None if c is None else c * s, b_up=e, b_down=bd)
    cc, ee = (np.zeros(n), np.zeros(n)) if c is None else (c, e)
    R = f.M + D[:, S] @ (cc[S, None] * U[S] + ee[S, None] * G[S])  # SiLU(z) − SiLU(−z) = z
    from absorb.engine.witness import sigma_lipschitz
    from absorb.verify._symbolic import _sigma_lipschitz

    _check_bound(f, g, R, [producer.gated_gain(f, sigma_lipschitz(act))[0], checker.gated_gain(f, _sigma_lipschitz(f))[1]])


@pytest.mark.parametrize("seed", range(4))
def test_a_quadratic_residual_is_at_least_the_claimed_share_at_infinity(seed: int) -> None:
    """Flip S without (Q): f − g has the quadratic part E = Σ_S w_i (u_i·x)², and along some direction the ratio
    tends to |E(v)|∞/|f₂(v)|∞ ≥ ‖E‖_F/(d·Q∞) = ‖E‖_F/(√d·K_Q) (measured at |x| = 10⁶, 720 directions)."""
    rng = np.random.default_rng(seed)
    d, n = 2, 6
    f = Block(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=get_activation("relu2"),
              skip=rng.standard_normal((d, d)))
    S = [0, 1]
    s = np.ones(n)
    s[S] = -1
    g = Block(W_up=f.W_up * s[:, None], W_down=f.W_down * s, activation=f.activation, skip=np.zeros((d, d)))
    E = np.einsum("ri,ij,ik->rjk", f.W_down[:, S], f.W_up[S], f.W_up[S])
    a = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    X = 1e6 * np.stack([np.cos(a), np.sin(a)], 1)
    F, G = f(X), g(X)
    got = float(np.max(np.max(np.abs(F - G), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1))))
    form = (producer.Fraction(1), producer.Fraction(0))
    for KQ in (producer.ungated_gain(f, form)[1], checker.ungated_gain(f, form)[0] - checker.ungated_gain(f, form)[1]):
        assert got >= 0.98 * np.linalg.norm(E) / (np.sqrt(d) * KQ), (got, KQ)


def _planted_relu2(tol: float) -> Block:
    """A ReLU² block with (Q) exact for S = 0..3 and (L) off by 3τ, |f(0)| = 1e4 and a coercive quadratic part:
    the flip of S is within τ/30 in f's measure."""
    US = np.array([[1., 0], [0, 1], [1, 1], [1, -1]])
    DS = np.array([[1., 1, -.5, -.5], [0, 0, 0, 0]])
    cS = 10 * np.array([1., -1, .5, 2])
    UT = np.array([[1., 0.3], [-1, 0.2], [0.1, 1], [0.25, -1]])
    M0 = -2 * sum(cS[i] * np.outer(DS[:, i], US[i]) for i in range(4))
    return Block(W_up=np.vstack([US, UT]), W_down=np.hstack([DS, 10 * np.ones((2, 4))]), activation=get_activation("relu2"),
                 skip=M0 * (1 + 3 * tol), b_up=np.r_[cS, np.zeros(4)], b_down=1e4 * np.ones(2))


def test_a_flip_within_the_tolerance_in_fs_measure_is_never_excluded() -> None:
    blk = _planted_relu2(1e-3)
    assert decide_block(blk, tol=1e-3).verdict is not Verdict.NOT_ABSORBABLE
    assert decide_block(blk, tol=1e-9).verdict is Verdict.NOT_ABSORBABLE  # 3e-9 off: far outside at the default


# ------------------------------------------------------------------ units f can spare --
_A, _B = np.array([100., 50.]), np.array([0.25, 1.0])
_U4 = np.array([[1., 0], [-0.5, 0.875], [-0.5, -0.875], [0.75, 0.125]])


def _spare_blocks() -> dict[str, Block]:
    """f whose skip a residual-free block with biases absorbs within 10⁻⁷ (checked below): a negligible unit (weight
    2⁻³⁰) or a nearly collinear pair frees a slot, and one ReLU² unit with a large bias (2¹⁵) is affine on a
    half-space, realising the rank-one skip a bᵀ; f's coercive quadratic part hides the rest."""
    D = np.ones((2, 4))
    D[:, 3] = 2.0**-30
    UB = _U4.copy()
    UB[3] = (1, 2.0**-14)
    G = _U4 + np.array([[0, 0.0625], [-0.0625, 0], [0.0625, 0], [0, 0.5]])
    relu2 = get_activation("relu2")
    return {"tiny": Block(W_up=_U4, W_down=D, activation=relu2, skip=np.outer(_A, _B)),
            "merge": Block(W_up=UB, W_down=np.ones((2, 4)), activation=relu2, skip=np.outer(_A, _B)),
            "gated": Block(W_up=G, W_gate=_U4, W_down=D, activation=get_activation("swiglu"), skip=np.outer(_A, _B))}


def test_the_linearizer_witness_is_within_the_tolerance() -> None:
    """The construction itself (tiny case): g keeps units 0–2, turns unit 3 into a·ReLU²(b·x/2¹⁶ + 2¹⁵), drops the skip."""
    f = _spare_blocks()["tiny"]
    U2, D2 = f.W_up.copy(), f.W_down.copy()
    U2[3], D2[:, 3] = _B / 2**16, _A
    g = Block(W_up=U2, W_down=D2, activation=f.activation, skip=np.zeros((2, 2)), b_up=np.array([0, 0, 0, 2.0**15]),
              b_down=-_A * 2.0**30)
    from fractions import Fraction as Q

    def exact(b: Block, x: list[Q]) -> list[Q]:  # (in rationals: float64 cancels terms of size 2⁶⁰ at small |x|)
        up = [sum((Q(float(b.W_up[i, j])) * x[j] for j in range(2)), Q(0)) + (Q(0) if b.b_up is None else Q(float(b.b_up[i])))
              for i in range(4)]
        return [sum((Q(float(b.W_down[r, i])) * max(up[i], Q(0)) ** 2 for i in range(4)), Q(0))
                + sum((Q(float(b.M[r, j])) * x[j] for j in range(2)), Q(0)) + (Q(0) if b.b_down is None else Q(float(b.b_down[r])))
                for r in range(2)]

    worst = Q(0)
    for k in range(72):
        for e in range(-4, 13, 2):
            x = [Q(float(10.0**e * np.cos(k * np.pi / 36))), Q(float(10.0**e * np.sin(k * np.pi / 36)))]
            F, Gx = exact(f, x), exact(g, x)
            worst = max(worst, max(abs(p - q) for p, q in zip(F, Gx)) / (max(abs(v) for v in F) + max(abs(v) for v in x)))
    assert worst < Q(1, 10**6)  # (≈ 8·10⁻⁸)


@pytest.mark.parametrize("name", ["tiny", "merge", "gated"])
def test_a_block_that_can_spare_a_unit_is_not_not_absorbable(name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from absorb.verify._sampled import spare_units

    blk = _spare_blocks()[name]
    bd = decide_block(blk, tol=1e-3, allow_biases=True)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert spare_units(blk, 1e-3, 0, True) is not None  # (the checker's own screen sees it too)
    assert spare_units(blk, 1e-3, 0, False) is None  # (two slots per rank-one part where f grows linearly: one is free)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_two_units_that_nearly_cancel_are_both_spare(act: str) -> None:
    """Units 0 and 1 are nearly the same unit with opposite down columns (each large, together 10⁻¹⁰ of f): both
    slots are free, and an antipodal pair in them realises a rank-one skip — not not_absorbable, on either side."""
    from absorb.verify._sampled import spare_units

    rng = np.random.default_rng(11)
    U = rng.standard_normal((6, 2))
    U[1] = U[0] * (1 + 1e-12)
    D = rng.standard_normal((2, 6))
    D[:, 1] = -D[:, 0]
    blk = Block(W_up=U, W_down=D, activation=get_activation(act), skip=np.outer([1.0, 2.0], [0.5, -1.0]))
    assert spare_units(blk, 1e-6, 0, False) is not None
    bd = decide_block(blk, tol=1e-6)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason


@pytest.mark.parametrize("spelling,k", [("(x*(1+tanh(x/2))/2)**2", 0.0), ("log(1+exp(x))**2 - log(2)**2", 0.4804530139182014),
                                        ("log(1+exp(x))**2 + 3", 3.0), ("(x/(1+exp(-x)))**2", 0.0)])
def test_a_square_of_a_builtin_plus_a_constant_is_recognised_both_sides(spelling: str, k: float) -> None:
    """σ = h² + k for a built-in h (SiLU² spelled with tanh; softplus² shifted to σ(0) = 0): the degree-2 routes' size
    bound needs only h's Lipschitz constant and |k|; each side recognises it its own way (the producer by expansion
    after rewriting tanh through exp, the checker by pieces). h² + x is no such σ."""
    from absorb.verify._growth2 import _square

    act = get_activation("expr:" + spelling)
    got, mine = producer.square_of_lipschitz(act), _square(act.expr)
    assert got is not None and mine is not None
    assert got[2] == pytest.approx(k, rel=1e-9, abs=1e-300) and mine[2] == pytest.approx(k, rel=1e-9, abs=1e-300)
    other = get_activation("expr:log(1+exp(x))**2 + x")
    assert producer.square_of_lipschitz(other) is None and _square(other.expr) is None
