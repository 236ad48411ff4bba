"""Properties of the decision engine on random instances (theory.md §2–3).

The instances are small so that every index-set question is decided exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from absorb import Block, Stack, Theorem, Verdict, decide, decide_block, get_activation
from absorb.model.block import HyperConnection, lift_hyper_connection, sinkhorn

seeds = st.integers(0, 2**32 - 1)


def gaussian(seed: int, d: int, n: int, act: str = "relu", *, gated: bool = False, **kw: object) -> Block:
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    G = rng.standard_normal((n, d)) if gated else None
    return Block(U, D, get_activation(act), W_gate=G, **kw)


def planted(seed: int, d: int, n: int, act: str = "relu", *, gated: bool = False) -> tuple[Block, list[int]]:
    rng = np.random.default_rng(seed)
    blk = gaussian(seed, d, n, act, gated=gated)
    size = int(rng.integers(d, n + 1))
    S = sorted(rng.choice(n, size=size, replace=False).tolist())
    D = blk.W_down.copy()
    D[:, S] = -np.linalg.pinv(blk.W_up[S])
    return blk.replace(W_down=D), S


sizes = st.tuples(st.integers(2, 4), st.integers(0, 8)).map(lambda t: (t[0], t[0] + t[1]))


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
@given(seed=seeds, dn=sizes)
def test_planted_index_set_is_found_and_verified(act: str, seed: int, dn: tuple[int, int]) -> None:
    blk, _ = planted(seed, *dn, act)
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.INDEX_SET
    S = list(dec.witness.S)
    assert np.allclose(blk.W_down[:, S] @ blk.W_up[S], -np.eye(blk.d), atol=1e-8)
    X = np.random.default_rng(1).standard_normal((32, blk.d))
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)
    assert dec.witness.block.is_residual_free


@pytest.mark.parametrize("act", ["relu", "gelu", "silu", "gelu_tanh"])
@given(seed=seeds, dn=sizes)
def test_gaussian_weights_are_never_absorbable(act: str, seed: int, dn: tuple[int, int]) -> None:
    dec = decide_block(gaussian(seed, *dn, act))
    assert dec.verdict is not Verdict.ABSORBABLE
    if act in ("relu", "gelu"):
        assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.INDEX_SET


@given(seed=seeds, dn=sizes, plant=st.booleans(), act=st.sampled_from(["relu", "gelu", "relu2", "swiglu"]))
def test_verdict_is_invariant_under_an_invertible_skip(seed: int, dn: tuple[int, int], plant: bool, act: str) -> None:
    blk = planted(seed, *dn, act)[0] if plant and act in ("relu", "gelu") else gaussian(seed, *dn, act, gated=act == "swiglu")
    rng = np.random.default_rng(seed + 1)
    M = rng.standard_normal((blk.d, blk.d)) + 3 * np.eye(blk.d)
    # f2 = M f: skip M and W_down ← M W_down; absorbing f2 ⇔ absorbing f (result 1).
    blk2 = blk.replace(skip=M, W_down=M @ blk.W_down)
    a, b = decide_block(blk), decide_block(blk2)
    assert a.verdict is b.verdict and a.theorem is b.theorem


@pytest.mark.parametrize(("act", "gated", "theorem"), [("relu2", False, Theorem.DEGREE), ("reglu", True, Theorem.DEGREE),
                                                        ("swiglu", True, Theorem.LINEARIZATION), ("geglu", True, Theorem.LINEARIZATION),
                                                        ("bilinear", True, Theorem.DEGREE)])
@given(seed=seeds, d=st.integers(1, 12), n=st.integers(1, 40))
def test_impossibility_results(act: str, gated: bool, theorem: Theorem, seed: int, d: int, n: int) -> None:
    dec = decide_block(gaussian(seed, d, n, act, gated=gated))
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is theorem


@given(seed=seeds, L=st.integers(2, 4), d=st.integers(1, 6), n=st.integers(1, 16),
       act=st.sampled_from(["relu2", "reglu", "swiglu", "geglu"]))
def test_stacks_are_not_absorbable_by_depth(seed: int, L: int, d: int, n: int, act: str) -> None:
    gated = act != "relu2"
    stack = Stack(tuple(gaussian(seed + i, d, n, act, gated=gated).replace(name=f"blocks.{i}") for i in range(L)))
    dec = decide(stack)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.DEPTH


@given(seed=seeds, n=st.integers(2, 10))
def test_d1_relu_is_absorbable_from_width_2(seed: int, n: int) -> None:
    # theory.md §3: f = (A+1)ReLU(x) + (B−1)ReLU(−x) needs two units, so n ≥ 2 suffices.
    dec = decide_block(gaussian(seed, 1, n, "relu"))
    assert dec.verdict is Verdict.ABSORBABLE
    X = np.linspace(-3, 3, 13)[:, None]
    np.testing.assert_allclose(dec.witness.block(X), gaussian(seed, 1, n, "relu")(X), atol=1e-9)


def test_d1_relu_width_1_is_not_absorbable() -> None:
    # f = x + w ReLU(u x) has slope 1 on the side where ReLU(u x) = 0; one unit is 0 there.
    dec = decide_block(gaussian(0, 1, 1, "relu"))
    assert dec.verdict is Verdict.NOT_ABSORBABLE


@given(seed=seeds, dn=sizes, how=st.sampled_from(["zero_row", "collinear", "antipodal", "zero_column"]))
def test_degenerate_relu_is_never_decided_by_result_5(seed: int, dn: tuple[int, int], how: str) -> None:
    blk = gaussian(seed, *dn, "relu")
    U, D = blk.W_up.copy(), blk.W_down.copy()
    if how == "zero_row":
        U[0] = 0
    elif how == "collinear":
        U[1] = 2.5 * U[0]
    elif how == "antipodal":
        U[1] = -U[0]
    else:
        D[:, 0] = 0
    dec = decide_block(blk.replace(W_up=U, W_down=D))
    # Result 5 (index-set) never speaks outside its hypotheses; a verdict on degenerate
    # weights comes only from the complete canonical-form procedure (docs/degenerate.md).
    if dec.verdict is not Verdict.UNKNOWN:
        assert dec.theorem is Theorem.DEGENERATE
    if dec.verdict is Verdict.ABSORBABLE:
        X = np.random.default_rng(seed).standard_normal((16, blk.d))
        np.testing.assert_allclose(dec.witness.block(X), blk.replace(W_up=U, W_down=D)(X), rtol=1e-7, atol=1e-7)


def test_theory_collinear_example_is_not_called_not_absorbable() -> None:
    # theory.md §3: rows e1, −e1, e2 with these columns are absorbable, yet no S exists.
    U = np.array([[1.0, 0], [-1, 0], [0, 1]])
    D = np.array([[2.0, 5, 0], [3, 7, -1]])
    assert decide_block(Block(U, D, get_activation("relu"))).verdict is not Verdict.NOT_ABSORBABLE


@given(seed=seeds, dn=sizes)
def test_sigmoid_glu_planted_is_absorbable(seed: int, dn: tuple[int, int]) -> None:
    blk, _ = planted(seed, *dn, "glu", gated=True)
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE
    X = np.random.default_rng(2).standard_normal((16, blk.d))
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)


@given(seed=seeds, dn=sizes)
def test_biases_move_into_the_output_bias(seed: int, dn: tuple[int, int]) -> None:
    blk, _ = planted(seed, *dn, "relu")
    rng = np.random.default_rng(seed)
    blk = blk.replace(b_up=rng.standard_normal(blk.n), b_down=rng.standard_normal(blk.d))
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE
    X = rng.standard_normal((16, blk.d)) * 5
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)


def test_biased_generic_relu_is_unknown_not_not_absorbable() -> None:
    blk = gaussian(3, 3, 8, "relu", b_up=np.ones(8))
    dec = decide_block(blk)
    assert dec.verdict is Verdict.UNKNOWN and "bias" in dec.reason


@given(seed=seeds, s=st.integers(2, 3))
def test_hyper_connection_relu_is_not_absorbable(seed: int, s: int) -> None:
    blk = gaussian(seed, 2, 6, "relu")
    rng = np.random.default_rng(seed)
    hc = HyperConnection(H_res=np.eye(s) + 0.1 * rng.standard_normal((s, s)), H_pre=rng.standard_normal(s), H_post=rng.standard_normal(s))
    dec = decide_block(lift_hyper_connection(blk, hc))
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.block.d == 2 * s


def test_singular_mhc_skip() -> None:
    s = 2
    H_res = sinkhorn(np.zeros((s, s)))  # every entry 1/2: doubly stochastic and singular
    hc = HyperConnection(H_res=H_res, H_pre=np.ones(s), H_post=np.ones(s))
    relu = decide_block(lift_hyper_connection(gaussian(0, 2, 6, "relu"), hc))
    # the reduction (result 1) does not apply, so result 5 must not be used; the
    # canonical-form procedure, which allows any M, decides it.
    assert not any(h.holds for h in relu.hypotheses if h.name == "skip_invertible")
    assert relu.theorem is Theorem.DEGENERATE
    relu2 = decide_block(lift_hyper_connection(gaussian(0, 2, 6, "relu2"), hc))
    assert relu2.verdict is Verdict.NOT_ABSORBABLE and relu2.theorem is Theorem.DEGREE


def test_zero_skip_is_trivially_absorbable() -> None:
    blk = gaussian(0, 3, 5, "relu2", skip=np.zeros((3, 3)))
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.TRIVIAL


@pytest.mark.parametrize(("d", "n", "verdict"), [(3, 5, Verdict.ABSORBABLE), (5, 3, Verdict.NOT_ABSORBABLE)])
def test_identity_activation_is_a_rank_question(d: int, n: int, verdict: Verdict) -> None:
    dec = decide_block(gaussian(0, d, n, "identity"))
    assert dec.verdict is verdict and dec.theorem is Theorem.LINEAR


def test_identity_activation_low_rank_absorbable() -> None:
    # I + D U = P_W (projection on a 3-dim W in R^5): rank 3 = n, so absorbable at width 3.
    rng = np.random.default_rng(0)
    d, n = 5, 3
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    Wperp = Q[:, 3:]  # basis of W^⊥ (2 columns)
    U = np.vstack([Wperp.T, rng.standard_normal((1, d))])
    D = np.hstack([-Wperp, np.zeros((d, 1))])
    dec = decide_block(Block(U, D, get_activation("identity")))
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.LINEAR
    X = rng.standard_normal((8, d))
    np.testing.assert_allclose(dec.witness.block(X), X @ (np.eye(d) + D @ U).T, atol=1e-12)


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_bounded_activations(act: str) -> None:
    dec = decide_block(gaussian(0, 3, 7, act, b_up=np.ones(7)))
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.BOUNDED


def test_verdict_is_not_a_boolean() -> None:
    with pytest.raises(TypeError):
        bool(Verdict.UNKNOWN)


def test_planted_stack_is_absorbable_and_generic_relu_stack_is_open() -> None:
    blk, _ = planted(5, 3, 8, "relu")
    dec = decide(Stack((blk.replace(name="blocks.0"), blk.replace(name="blocks.1"))))
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.COMPOSITION
    g = gaussian(5, 3, 8, "relu")
    dec = decide(Stack((g.replace(name="blocks.0"), g.replace(name="blocks.1"))))
    assert dec.verdict is Verdict.UNKNOWN and "open problem" in dec.reason
