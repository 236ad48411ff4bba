"""The gated skeleton for step-like gates (docs/results/gated-skeleton.md): sigmoid and
(1 + tanh)/2 gates, biases allowed — generic blocks are not absorbable, planted ones keep
their flip witness, degenerate ones stay unknown naming the hypothesis, and a brute-force
fit fails where the engine says not_absorbable."""

from __future__ import annotations

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, decide_block, get_activation
from absorb.symbolic import growth

STEP_GATES = ["sigmoid", "expr:(1 + tanh(x))/2", "expr:(1 + erf(x))/2"]


@pytest.mark.parametrize("act", STEP_GATES)
def test_step_gates_have_limits_one_and_zero(act: str) -> None:
    p = growth.gate_limits(get_activation(act))
    assert p.proved and (p.value["L_plus"], p.value["L_minus"]) == (1, 0), p.statement


def test_unbounded_gates_have_no_limits() -> None:
    assert not growth.gate_limits(get_activation("silu")).proved


def _glu(seed: int, d: int, n: int, act: str = "sigmoid", *, biases: bool) -> Block:
    rng = np.random.default_rng(seed)
    G, U, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    kw = dict(b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)) if biases else {}
    return Block(U, D, get_activation(act), W_gate=G, **kw)


@pytest.mark.parametrize("act", STEP_GATES[:2])
@pytest.mark.parametrize("biases", [False, True])
def test_generic_step_gated_blocks_are_not_absorbable(act: str, biases: bool) -> None:
    dec = decide_block(_glu(1, 3, 6, act, biases=biases))
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    assert dec.search is not None and dec.search.bound > 1e-9


@pytest.mark.parametrize("biases", [False, True])
def test_planted_step_gated_blocks_stay_absorbable(biases: bool) -> None:
    blk = _glu(2, 3, 6, biases=biases)
    D = blk.W_down.copy()
    D[:, [0, 2, 3]] = -np.linalg.pinv(blk.W_up[[0, 2, 3]])
    blk = blk.replace(W_down=D)
    dec = decide_block(blk, tol=1e-7)
    assert (dec.verdict, dec.theorem) == (Verdict.ABSORBABLE, Theorem.INDEX_SET), dec.reason
    X = np.random.default_rng(0).standard_normal((32, 3)) * 3
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-6, atol=1e-6)


def test_value_row_parallel_to_its_gate_is_unknown() -> None:
    blk = _glu(3, 3, 5, biases=True)
    U = blk.W_up.copy()
    U[2] = -3 * blk.W_gate[2]
    dec = decide_block(blk.replace(W_up=U))
    assert dec.verdict is Verdict.UNKNOWN and "parallel to its gate row" in dec.reason, dec.reason


def test_collinear_gate_rows_are_unknown() -> None:
    blk = _glu(4, 3, 5, biases=True)
    G = blk.W_gate.copy()
    G[1] = 2 * G[0]
    dec = decide_block(blk.replace(W_gate=G))
    assert dec.verdict is Verdict.UNKNOWN and "collinear" in dec.reason, dec.reason


def test_tanh_gate_is_not_step_like() -> None:
    # tanh: L₋ = −1, and no flip identity: nothing here applies
    dec = decide_block(_glu(5, 3, 5, "tanh", biases=True))
    assert dec.verdict is Verdict.UNKNOWN


def test_brute_force_fit_fails_where_not_absorbable() -> None:
    """Least squares over biased residual-free sigmoid-GLU blocks of the same width (several
    starts) stays far from a generic f the engine decides not_absorbable."""
    from scipy.optimize import least_squares
    from scipy.special import expit

    blk = _glu(6, 2, 2, biases=True)
    assert decide_block(blk).verdict is Verdict.NOT_ABSORBABLE
    rng = np.random.default_rng(0)
    d, n = 2, 2
    X = rng.standard_normal((200, d)) * 2
    Y = blk(X)
    k = n * d

    def resid(p: np.ndarray) -> np.ndarray:
        G, U, D = p[:k].reshape(n, d), p[k:2 * k].reshape(n, d), p[2 * k:3 * k].reshape(d, n)
        bg, bu, bd = p[3 * k:3 * k + n], p[3 * k + n:3 * k + 2 * n], p[3 * k + 2 * n:]
        return ((expit(X @ G.T + bg) * (X @ U.T + bu)) @ D.T + bd - Y).ravel()

    best = min(float(np.linalg.norm(least_squares(resid, rng.standard_normal(3 * k + 2 * n + d), max_nfev=400).fun))
               for _ in range(8)) / float(np.linalg.norm(Y))
    assert best > 1e-3


# ---- ReLU-like gates (SwiGLU, GeGLU, ReGLU, …) ---------------------------------------------
RELU_LIKE = ["relu", "silu", "gelu", "gelu_tanh", "quick_gelu", "softplus", "expr:x*tanh(log(1 + exp(x)))"]


@pytest.mark.parametrize("act", RELU_LIKE)
def test_relu_like_gates_are_in_the_class(act: str) -> None:
    assert growth.relu_like_gate(get_activation(act)).proved


@pytest.mark.parametrize("act", ["sigmoid", "leaky_relu", "expr:log(1 + exp(x)) + 1", "relu2"])
def test_other_gates_are_not(act: str) -> None:
    assert not growth.relu_like_gate(get_activation(act)).proved


def relu_like_planted(act: str) -> Block:
    """d = 2: units (g, u) = (e1, e2) and (e2, −e1) with the same w cancel in (Qg) (S = {0, 1});
    M from (Lg). Dyadic weights: every identity exact in float64."""
    G = np.array([[1.0, 0], [0, 1], [1, 1], [2, -1]])
    U = np.array([[0.0, 1], [-1, 0], [1, -2], [0.5, 3]])
    w = np.array([1.0, -2.0])
    D = np.column_stack([w, w, [3.0, 1], [-1.0, 0.5]])
    c, e = np.array([0.5, -1.0, 0.25, 1.5]), np.array([2.0, 0.75, -0.5, 1.0])
    M = -sum(np.outer(D[:, i], c[i] * U[i] + e[i] * G[i]) for i in (0, 1))
    return Block(U, D, get_activation(act), W_gate=G, b_gate=c, b_up=e, b_down=np.array([0.125, -0.5]), skip=M)


@pytest.mark.parametrize("act", ["silu", "gelu", "relu", "softplus"])
def test_planted_relu_like_gated_is_absorbable(act: str) -> None:
    blk = relu_like_planted(act)
    dec = decide_block(blk)
    assert (dec.verdict, dec.theorem) == (Verdict.ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    assert dec.witness.S == (0, 1)
    X = np.random.default_rng(2).standard_normal((64, 2)) * 3
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-9, atol=1e-9)


def test_planted_mish_gate_proves_nothing() -> None:
    dec = decide_block(relu_like_planted("expr:x*tanh(log(1 + exp(x)))"))
    assert (dec.verdict, dec.theorem) == (Verdict.UNKNOWN, Theorem.NONE)
    assert "flip identity" in dec.reason


@pytest.mark.parametrize("act", ["silu", "gelu", "relu", "quick_gelu"])
def test_generic_biased_relu_like_gated_is_not_absorbable(act: str) -> None:
    dec = decide_block(_glu(7, 3, 6, act, biases=True))
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    assert dec.search.method == "rank"


def test_bias_free_swiglu_against_biased_g_is_decided() -> None:
    dec = decide_block(_glu(8, 3, 6, "silu", biases=False), allow_biases=True)
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    assert dec.residual_free_class.biases


def test_bias_free_swiglu_keeps_linearization() -> None:
    dec = decide_block(_glu(8, 3, 6, "silu", biases=False))
    assert dec.theorem is Theorem.LINEARIZATION


def test_wide_relu_like_gated_uses_enumeration() -> None:
    dec = decide_block(_glu(9, 2, 10, "silu", biases=True))  # n = 10 > d·d(d+1)/2 = 6
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    assert dec.search.method == "enumerate"


def test_degenerate_relu_like_gated_is_unknown() -> None:
    blk = _glu(10, 3, 5, "silu", biases=True)
    U = blk.W_up.copy()
    U[1] = 0.5 * blk.W_gate[1]
    dec = decide_block(blk.replace(W_up=U))
    assert dec.verdict is Verdict.UNKNOWN and "parallel to its gate row" in dec.reason, dec.reason


def test_brute_force_biased_swiglu_fit_fails() -> None:
    from scipy.optimize import least_squares
    from scipy.special import expit

    blk = _glu(11, 2, 2, "silu", biases=True)
    assert decide_block(blk).verdict is Verdict.NOT_ABSORBABLE
    rng = np.random.default_rng(1)
    d, n, k = 2, 2, 4
    X = rng.standard_normal((200, d)) * 2
    Y = blk(X)

    def resid(p: np.ndarray) -> np.ndarray:
        G, U, D = p[:k].reshape(n, d), p[k:2 * k].reshape(n, d), p[2 * k:3 * k].reshape(d, n)
        bg, bu, bd = p[3 * k:3 * k + n], p[3 * k + n:3 * k + 2 * n], p[3 * k + 2 * n:]
        z = X @ G.T + bg
        return ((z * expit(z) * (X @ U.T + bu)) @ D.T + bd - Y).ravel()

    best = min(float(np.linalg.norm(least_squares(resid, rng.standard_normal(3 * k + 2 * n + d), max_nfev=400).fun))
               for _ in range(8)) / float(np.linalg.norm(Y))
    assert best > 1e-3


def test_step_gate_without_flip_identity_is_decided_by_its_own_search() -> None:
    """A gate with limits (1, 0) but no identity g(z) + g(−z) = c: the index-set result does not
    run, the gated skeleton searches itself; a found S proves nothing (no witness)."""
    act = "expr:1/(1 + exp(-x)) + exp(-x**2)/4"
    blk = _glu(12, 3, 5, act, biases=True)
    dec = decide_block(blk)
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), dec.reason
    D = blk.W_down.copy()
    D[:, [0, 2, 4]] = -np.linalg.pinv(blk.W_up[[0, 2, 4]])
    dec = decide_block(blk.replace(W_down=D), tol=1e-7)
    assert dec.verdict is Verdict.UNKNOWN and "no flip identity" in dec.reason, dec.reason


@pytest.mark.parametrize("act", ["sigmoid", "silu"])
def test_value_activation_keeps_the_gated_skeleton_silent(act: str) -> None:
    """The gated skeletons expand W_up x + b_up linearly; with a value activation h (here h(z) = z³,
    unbounded) neither may answer: the block is unknown naming h, while the same block without h is decided."""
    blk = _glu(7, 3, 6, act, biases=True)
    assert decide_block(blk).verdict is Verdict.NOT_ABSORBABLE
    dec = decide_block(blk.replace(value_activation=get_activation("expr:x**3")))
    assert (dec.verdict, dec.theorem) == (Verdict.UNKNOWN, Theorem.NONE), dec.reason
    assert "value" in dec.reason
