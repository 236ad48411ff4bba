"""A user's property tests built on absorb.strategies (shown in docs/strategies.md).

Run: python -m pytest examples/test_user_strategies.py -q
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb import Verdict, decide, decide_block
from absorb.io import blocks_from_arrays
from absorb.strategies import activations, blocks, checkpoints_as_dicts, gated_blocks, stacks

CI = settings(derandomize=True, deadline=None, max_examples=20)


@CI
@given(blocks(kind="planted", d=(2, 4), n=(2, 8), activation=activations(kind="flip"), biases=True))
def test_planted_blocks_are_absorbable(block):
    """Result 5's sufficiency (and its extensions): a planted index set is always found."""
    dec = decide_block(block)
    assert dec.verdict is Verdict.ABSORBABLE
    # The witness is a residual-free block equal to f: check it ourselves on fresh inputs.
    X = np.random.default_rng(1).standard_normal((32, block.d))
    assert np.allclose(dec.witness.block(X), block(X), atol=1e-8)


@CI
@given(blocks(kind="degenerate", d=(1, 3), n=(2, 6)))
def test_degenerate_blocks_are_never_refuted_by_an_index_set(block):
    """Where result 5's necessity does not apply, 'no index set' must not become 'not absorbable'."""
    dec = decide_block(block)
    assert not (dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "index-set")


@CI
@given(gated_blocks(gate=st.sampled_from(["swiglu", "geglu", "reglu"])))
def test_swiglu_geglu_reglu_are_never_absorbable(block):
    """Results 2 and 3: degree (ReGLU) and linearization (SwiGLU, GeGLU), at every width."""
    assert decide_block(block).verdict is Verdict.NOT_ABSORBABLE


@CI
@given(stacks(depth=(2, 3), activation="relu2"))
def test_relu2_stacks_are_never_absorbable(stack):
    """Result 4 (depth): a stack of ReLU² residual blocks is never a stack of residual-free ones."""
    assert decide(stack).verdict is Verdict.NOT_ABSORBABLE


@CI
@given(checkpoints_as_dicts(models=blocks(kind="planted", d=2, n=(2, 4)), hyper_connection=True))
def test_my_loader_accepts_hyper_connection_dicts(data):
    """Dicts in the npz keys: what my own export code must be able to read back."""
    block = blocks_from_arrays(data, source="<test>")
    assert block.hc is not None and block.d == data["H_res"].shape[0] * data["W_up"].shape[1]
