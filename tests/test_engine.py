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
from absorb.strategies import blocks, gated_blocks, skip_matrices, stacks

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




@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu"])
@given(data=st.data())
def test_planted_index_set_is_found_and_verified(act: str, data: st.DataObject) -> None:
    blk = data.draw(blocks(kind="planted", activation=act, d=(2, 4), n=(2, 12)))
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.INDEX_SET
    S = list(dec.witness.S)
    assert np.allclose(blk.W_down[:, S] @ blk.W_up[S], -np.eye(blk.d), atol=1e-8)
    X = np.random.default_rng(1).standard_normal((32, blk.d))
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)
    assert dec.witness.block.is_residual_free


@pytest.mark.parametrize("act", ["relu", "gelu", "silu", "gelu_tanh"])
@given(data=st.data())
def test_gaussian_weights_are_never_absorbable(act: str, data: st.DataObject) -> None:
    dec = decide_block(data.draw(blocks(kind="generic", activation=act, d=(2, 4), n=(1, 12))))
    assert dec.verdict is not Verdict.ABSORBABLE
    if act in ("relu", "gelu"):
        assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.INDEX_SET


@given(data=st.data(), kind=st.sampled_from(["generic", "planted"]), act=st.sampled_from(["relu", "gelu", "relu2"]))
def test_verdict_is_invariant_under_an_invertible_skip(data: st.DataObject, kind: str, act: str) -> None:
    blk = data.draw(blocks(kind=kind if act != "relu2" else "generic", activation=act, d=(2, 4), n=(2, 10)))
    M = data.draw(skip_matrices(d=blk.d, kind="invertible"))
    # f2 = M f: skip M and W_down ← M W_down; absorbing f2 ⇔ absorbing f (result 1).
    blk2 = blk.replace(skip=M, W_down=M @ blk.W_down)
    a, b = decide_block(blk), decide_block(blk2)
    assert a.verdict is b.verdict and a.theorem is b.theorem


@pytest.mark.parametrize(("act", "gated", "theorem"), [("relu2", False, Theorem.DEGREE), ("reglu", True, Theorem.DEGREE),
                                                        ("swiglu", True, Theorem.LINEARIZATION), ("geglu", True, Theorem.LINEARIZATION),
                                                        ("bilinear", True, Theorem.DEGREE)])
@given(data=st.data())
def test_impossibility_results(act: str, gated: bool, theorem: Theorem, data: st.DataObject) -> None:
    strategy = (gated_blocks(gate=act, d=(1, 12), n=(1, 40)) if gated else
                blocks(activation=act, d=(1, 12), n=(1, 40), skip=data.draw(st.sampled_from([None, "invertible", "singular"]))))
    dec = decide_block(data.draw(strategy))
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is theorem


@given(stack=stacks(activation="relu2", depth=(2, 4), d=(1, 6), n=(1, 16)))
def test_relu2_stacks_are_not_absorbable_by_depth(stack: Stack) -> None:
    dec = decide(stack)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.DEPTH


@given(seed=seeds, L=st.integers(2, 4), d=st.integers(1, 6), n=st.integers(1, 16),
       act=st.sampled_from(["reglu", "swiglu", "geglu"]))
def test_gated_stacks_are_not_absorbable_by_depth(seed: int, L: int, d: int, n: int, act: str) -> None:
    stack = Stack(tuple(gaussian(seed + i, d, n, act, gated=True).replace(name=f"blocks.{i}") for i in range(L)))
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


@given(blk=blocks(kind="degenerate", activation="relu", d=(1, 4), n=(1, 8)))
def test_degenerate_relu_is_never_decided_by_result_5(blk: Block) -> None:
    dec = decide_block(blk)
    # Result 5 (index-set) never speaks outside its hypotheses; a verdict on degenerate
    # weights comes only from the complete canonical-form procedure (docs/degenerate.md).
    if dec.verdict is not Verdict.UNKNOWN:
        assert dec.theorem is Theorem.CANONICAL_FORM or (dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.INDEX_SET)
    if dec.verdict is Verdict.ABSORBABLE:
        X = np.random.default_rng(0).standard_normal((16, blk.d))
        np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)


def test_theory_collinear_example_is_not_called_not_absorbable() -> None:
    # theory.md §3: rows e1, −e1, e2 with these columns are absorbable, yet no S exists.
    U = np.array([[1.0, 0], [-1, 0], [0, 1]])
    D = np.array([[2.0, 5, 0], [3, 7, -1]])
    assert decide_block(Block(U, D, get_activation("relu"))).verdict is not Verdict.NOT_ABSORBABLE


@given(blk=gated_blocks(gate="glu", kind="planted", d=(2, 4), n=(2, 10)))
def test_sigmoid_glu_planted_is_absorbable(blk: Block) -> None:
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE
    X = np.random.default_rng(2).standard_normal((16, blk.d))
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)


@given(blk=blocks(kind="planted", activation="relu", biases=True, d=(2, 4), n=(2, 10)))
def test_biases_move_into_the_output_bias(blk: Block) -> None:
    dec = decide_block(blk)
    assert dec.verdict is Verdict.ABSORBABLE
    X = np.random.default_rng(3).standard_normal((16, blk.d)) * 5
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-7, atol=1e-7)


def test_biased_generic_relu_is_decided_by_the_skeleton() -> None:
    # Once "unknown" (result 5 is bias-free); the asymptotic ReLU skeleton covers biases.
    blk = gaussian(3, 3, 8, "relu", b_up=np.ones(8))
    dec = decide_block(blk)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.SKELETON
    assert dec.residual_free_class.biases


def test_biased_collinear_relu_is_not_claimed_by_result_5() -> None:
    blk = gaussian(3, 3, 8, "relu", b_up=np.ones(8))
    U = blk.W_up.copy()
    U[1] = 2 * U[0]  # collinear rows: result 5 and the nondegenerate skeleton do not apply
    dec = decide_block(blk.replace(W_up=U))
    assert dec.theorem is not Theorem.INDEX_SET or dec.verdict is not Verdict.NOT_ABSORBABLE


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
    assert relu.theorem is Theorem.CANONICAL_FORM
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
    d = 5
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


def test_linear_block_whose_product_underflows_is_not_called_not_absorbable():
    """M + W_down W_up = 2^-1075·[[1,1],[1,1]] exactly (rank 1 ≤ n = 1: absorbable), but
    each product 2^-1075 rounds to 0 in float64, so the float rank bound saw M = 2^-1074·I,
    of rank 2, and said not_absorbable (found by a stress run). Out of range: unknown."""
    U = np.array([[-1.0, 1.0]]) * 2.0**-537
    D = np.array([[1.0], [-1.0]]) * 2.0**-538
    blk = Block(W_up=U, W_down=D, activation=get_activation("identity"), skip=np.eye(2) * 2.0**-1074)
    dec = decide_block(blk)
    assert dec.verdict is Verdict.UNKNOWN and "outside" in dec.reason
    # the same block times 2^1075, in range: M + W_down W_up = [[1,1],[1,1]], absorbable
    same = Block(W_up=U * 2.0**537, W_down=D * 2.0**538, activation=get_activation("identity"), skip=np.eye(2) * 2.0)
    assert decide_block(same).verdict is Verdict.ABSORBABLE
