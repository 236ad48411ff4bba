"""absorb.strategies: valid blocks, planted ones absorbable, degenerate ones degenerate,
small shrunk examples, and clear errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import absorb.strategies as S
from absorb import Verdict, decide_block, decide_stack, get_activation
from absorb.engine import hypotheses as hyp
from absorb.io import blocks_from_arrays, load_npz
from absorb.io._validate import build_block
from absorb.model.block import Block, Stack
from absorb.symbolic import properties as props

# The registered profile (tests/conftest.py); drawing blocks can be slow to generate.
FAST = settings(suppress_health_check=[HealthCheck.too_slow])


def test_all_is_exact() -> None:
    public = {k for k in vars(S) if not k.startswith("_") and (callable(getattr(S, k)) or k.isupper())}
    public -= {"annotations", "Literal", "Sequence", "Union", "SearchStrategy", "InvalidArgument", "Block", "Stack",
               "Activation", "get_activation", "sinkhorn", "assume", "st", "np", "SizeRange", "ActivationSpec", "Values", "GATED"}
    assert set(S.__all__) == public
    for name in S.__all__:
        assert hasattr(S, name)


# --- the activation kinds agree with the sympy proofs --------------------------------------
@pytest.mark.parametrize("name", S.ACTIVATION_KINDS["any"])
def test_activation_kinds_match_proofs(name: str) -> None:
    act = get_activation(name)
    assert props.flip_identity(act, gated=False).proved == (name in S.ACTIVATION_KINDS["flip"])
    hom = props.homogeneity(act)
    degree = hom.proved and hom.value["k"] != 1
    assert degree == (name in S.ACTIVATION_KINDS["degree"])
    assert props.bounded(act).proved == (name in S.ACTIVATION_KINDS["bounded"])


@pytest.mark.parametrize("name", S.ACTIVATION_KINDS["gated"])
def test_gated_flip_kind_matches_proofs(name: str) -> None:
    assert props.flip_identity(get_activation(name), gated=True).proved == (name in S.ACTIVATION_KINDS["gated_flip"])


# --- validity -----------------------------------------------------------------------------
def _revalidate(block: Block) -> Block:
    """Run the arrays through the loaders' shared validation (shapes, finiteness)."""
    return build_block(block.arrays(), source="<strategy>", name=block.name, activation=block.activation)


@FAST
@given(S.blocks(d=(1, 5), n=(1, 9), activation=S.activations(), biases=True, kind="generic"))
def test_generic_blocks_are_valid_and_nondegenerate(block: Block) -> None:
    assert 1 <= block.d <= 5 and 1 <= block.n <= 9
    assert block.W_up.shape == (block.n, block.d) and block.W_down.shape == (block.d, block.n)
    assert block.b_up.shape == (block.n,) and block.b_down.shape == (block.d,)
    again = _revalidate(block)
    np.testing.assert_array_equal(again.W_up, block.W_up)
    assert all(h.holds for h in hyp.nondegenerate(block))


@FAST
@given(S.blocks(kind="generic", activation=S.activations(kind="necessity")))
def test_generic_seeded_relu_gelu_not_absorbable(block: Block) -> None:
    # Result 5: Gaussian nondegenerate weights have no index set (probability one).
    assert decide_block(block).verdict is Verdict.NOT_ABSORBABLE


@FAST
@given(S.blocks(kind="planted", d=(1, 4), n=(1, 8), activation=S.activations(kind="flip"), biases=True,
                skip=None, values="floats"))
def test_planted_float_blocks_are_absorbable(block: Block) -> None:
    assert block.n >= block.d
    dec = decide_block(block)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason


@FAST
@given(st.sampled_from(S.SKIP_KINDS).flatmap(lambda k: S.blocks(kind="planted", d=(2, 4), n=(4, 8), skip=k)))
def test_planted_blocks_with_any_skip_are_absorbable(block: Block) -> None:
    # Sufficiency needs no hypothesis on M: flipping S adds −c·D_S U_S x = M x.
    dec = decide_block(block)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason


@FAST
@given(S.gated_blocks(kind="planted", d=(2, 3), n=(2, 7), biases=True))
def test_planted_glu_blocks_are_absorbable(block: Block) -> None:
    assert block.gated and block.W_gate.shape == block.W_up.shape and block.b_gate is not None
    dec = decide_block(block)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason


@FAST
@given(S.gated_blocks(gate=S.activations(kind="gated")))
def test_gated_blocks_are_gated(block: Block) -> None:
    # Generic gated blocks are never absorbable: degree (ReGLU, bilinear), linearization
    # (SwiGLU, GeGLU), or no index set (GLU).
    assert block.gated
    assert decide_block(block).verdict is not Verdict.ABSORBABLE


@FAST
@given(S.blocks(kind="degenerate", d=(1, 4), n=(1, 6)))
def test_degenerate_blocks_fail_a_hypothesis_of_result_5(block: Block) -> None:
    checks = [hyp.dimension(block), *hyp.nondegenerate(block)]
    assert not all(h.holds for h in checks)
    # Necessity does not apply, so the engine must never claim not_absorbable from an index set.
    dec = decide_block(block)
    assert not (dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "index-set")


@pytest.mark.parametrize("how", S.DEGENERACIES)
def test_each_degeneracy_is_what_it_says(how: str) -> None:
    expect = {"zero_row": "rows_nonzero", "dead_unit": "columns_nonzero", "collinear": "rows_noncollinear",
              "antipodal": "rows_noncollinear", "d1": "d_at_least_2"}[how]

    @settings(max_examples=settings.default.max_examples // 2)  # run once per degeneracy (5 of them): half the profile's count each
    @given(S.blocks(kind="degenerate", degeneracy=how))
    def check(block: Block) -> None:
        failed = {h.name for h in [hyp.dimension(block), *hyp.nondegenerate(block)] if not h.holds}
        assert expect in failed

    check()


@settings(max_examples=2 * settings.default.max_examples // 5)  # each example decides a whole stack: 2/5 of the profile's count
@given(S.stacks(kind="planted", depth=(2, 3), d=(2, 3), n=(3, 6)))
def test_planted_stacks_are_absorbable(stack: Stack) -> None:
    assert len({b.d for b in stack.blocks}) == 1
    assert [b.name for b in stack.blocks] == [f"blocks.{i}" for i in range(len(stack))]
    assert decide_stack(stack).verdict is Verdict.ABSORBABLE


@pytest.mark.parametrize("kind", S.SKIP_KINDS)
def test_skip_matrices_kinds(kind: str) -> None:
    @settings(max_examples=3 * settings.default.max_examples // 4)  # run once per skip kind: 3/4 of the profile's count each
    @given(S.skip_matrices(d=(2, 6), kind=kind))
    def check(M: np.ndarray) -> None:
        d = M.shape[0]
        assert M.shape == (d, d) and 2 <= d <= 6
        blk = Block(np.ones((1, d)), np.ones((d, 1)), get_activation("relu"), skip=M)
        assert hyp.skip_invertible(blk).holds == (kind != "singular")
        if kind == "orthogonal":
            np.testing.assert_allclose(M.T @ M, np.eye(d), atol=1e-12)
        if kind == "mhc":
            np.testing.assert_allclose(M.sum(axis=0), 1.0, atol=1e-9)
            np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-9)

    check()


@FAST
@given(S.checkpoints_as_dicts())
def test_checkpoint_dicts_load(data: dict) -> None:
    model = blocks_from_arrays(data, source="<dict>")
    blocks = model.blocks if isinstance(model, Stack) else (model,)
    prefix = "" if isinstance(model, Block) else "blocks.0."
    np.testing.assert_array_equal(blocks[0].W_up, data[prefix + "W_up"])


@settings(max_examples=settings.default.max_examples // 2)  # a narrow space (d = 2, n ≤ 5, planted): half the profile's count
@given(S.checkpoints_as_dicts(models=S.blocks(kind="planted", d=2, n=(2, 5)), hyper_connection=True))
def test_hc_checkpoint_dicts_lift(data: dict) -> None:
    blk = blocks_from_arrays(data, source="<dict>")
    s = data["H_res"].shape[0]
    assert blk.hc is not None and blk.d == s * data["W_up"].shape[1]


def test_checkpoint_dict_roundtrips_through_npz(tmp_path) -> None:
    data = find(S.checkpoints_as_dicts(models=S.stacks(biases=True)), lambda _: True,
                settings=settings(derandomize=True, database=None))
    path = tmp_path / "m.npz"
    np.savez(path, **data)
    model = load_npz(path)
    assert isinstance(model, Stack)
    for i, b in enumerate(model.blocks):
        np.testing.assert_array_equal(b.b_up, data[f"blocks.{i}.b_up"])


# --- shrinking ----------------------------------------------------------------------------
def test_shrinking_gives_the_smallest_sizes() -> None:
    blk = find(S.blocks(d=(2, 8), n=(1, 16)), lambda b: b.n >= 5, settings=settings(derandomize=True, database=None))
    assert (blk.d, blk.n) == (2, 5)


def test_shrinking_gives_simple_values() -> None:
    blk = find(S.blocks(d=(2, 6), n=(2, 12), kind="generic", values="floats"),
               lambda b: float(np.abs(b.W_down).max()) >= 1.0, settings=settings(derandomize=True, database=None, max_examples=500))
    # Values shrink to 0, ±1/16 and the threshold itself (sizes shrink less reliably once
    # the value lists are drawn: the seeded test above covers sizes).
    assert blk.n == 2
    vals = set(np.concatenate([blk.W_up.ravel(), blk.W_down.ravel()]).tolist())
    assert vals <= {0.0, 1 / 16, -1 / 16, 1.0, -1.0}, vals


# --- invalid arguments --------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: S.blocks(d=0),
    lambda: S.blocks(d=(3, 2)),
    lambda: S.blocks(d="3"),
    lambda: S.blocks(n=(1, 2, 3)),
    lambda: S.blocks(d=True),
    lambda: S.blocks(kind="weird"),
    lambda: S.blocks(kind="planted", d=(5, 6), n=(1, 4)),
    lambda: S.blocks(values="ints"),
    lambda: S.blocks(biases=1),
    lambda: S.blocks(skip="diagonal"),
    lambda: S.blocks(skip="hc", d=1),
    lambda: S.blocks(degeneracy="zero_row"),
    lambda: S.blocks(kind="degenerate", degeneracy="sideways"),
    lambda: S.blocks(kind="degenerate", degeneracy=()),
    lambda: S.blocks(activation="no_such_activation"),
    lambda: S.blocks(activation=3),
    lambda: S.activations(kind="smooth"),
    lambda: S.skip_matrices(kind="hc", d=1),
    lambda: S.skip_matrices(kind="random"),
    lambda: S.stacks(depth=0),
    lambda: S.checkpoints_as_dicts(models=[1]),
    lambda: S.checkpoints_as_dicts(hyper_connection="yes"),
])
def test_invalid_arguments(call) -> None:
    with pytest.raises(InvalidArgument):
        call()


@pytest.mark.parametrize("strategy", [
    S.blocks(kind="planted", activation="relu2"),
    S.gated_blocks(kind="planted", gate="swiglu"),
    S.gated_blocks(gate="relu2"),
    S.checkpoints_as_dicts(models=S.stacks(), hyper_connection=True),
])
def test_invalid_combinations_raise_when_drawn(strategy) -> None:
    with pytest.raises(InvalidArgument):
        find(strategy, lambda _: True, settings=settings(derandomize=True, database=None))
