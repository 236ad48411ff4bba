"""The null-space route (issue 26: a planted ReLU² / gated block at model size was ``unknown``):
a planted S makes the Gram matrix of the (Q) columns singular, 1_S spanning its null space, so
S is read off the eigenvectors of its float copy (with the linear condition to choose among
candidates) and handed to the flip witness, whose exact check alone decides. Generic blocks
keep their rank / Gram route proofs; a near-plant is not called absorbable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from absorb import Block, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import _nullspace as ns
from absorb.engine import decide
from absorb.engine import skeleton2 as sk2
from absorb.verify import checker
from tests.test_skeleton2_linear import generic, planted_gated, planted_relu2


def _no_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """The linear route declines (as the index-set engine does past d²·n > 4·10⁶): what is tested
    here is the null-space route, at sizes where the engine would still find S by itself."""
    monkeypatch.setattr(sk2, "linear_route", lambda *a, **k: None)


def _accepted(blk: Block, dec: Any) -> bool:
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    return rep.accepted and not rep.not_rechecked


def _found_by_the_null_space(blk: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the linear route off, ``blk`` is decided absorbable by the null-space route with the
    planted S = {0, 1, 2, 3}, and its certificate verifies."""
    _no_linear(monkeypatch)
    dec = decide(blk, timeout=60)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.ABSORBABLE, bd.reason
    assert bd.search.method == "nullspace" and bd.witness.S == (0, 1, 2, 3)
    assert _accepted(blk, dec)


def two_planted(seed: int, d: int, n: int, use: tuple[bool, bool]) -> Block:
    """A biased ReLU² block with two disjoint planted sets S₁ = {0..3}, S₂ = {4..7} (each
    Σ w_i ⊗ u_i u_iᵀ = 0 exactly, as :func:`planted_relu2`), M from the sets chosen by ``use``."""
    rng = np.random.default_rng(seed)
    U, D, c = [], [], []
    for j in range(2):
        p, q = rng.integers(-3, 4, d).astype(float), rng.integers(-3, 4, d).astype(float)
        a = rng.integers(-8, 9, d) / 8.0
        a[a == 0] = 1.0
        U.append(np.array([p, q, p + q, p - q]))
        D.append(np.outer(a, [2.0, 2.0, -1.0, -1.0]))
        c.append(np.array([0.5, -1.25, 0.75, 1.5]) * (j + 1))
    M = -2 * sum((D[j] * c[j]) @ U[j] for j in range(2) if use[j])
    U = np.vstack([*U, rng.standard_normal((n - 8, d))])
    D = np.hstack([*D, rng.standard_normal((d, n - 8))])
    c = np.concatenate([*c, rng.standard_normal(n - 8)])
    return Block(U, D, get_activation("relu2"), b_up=c, b_down=rng.standard_normal(d), skip=M)


def test_zero_one_vectors_of_a_mixed_basis() -> None:
    """The 0/1 vectors of a span given by a random (non-0/1) basis: both sets and their union."""
    rng = np.random.default_rng(0)
    n = 40
    a, b = np.zeros(n), np.zeros(n)
    a[[1, 5, 9]] = 1
    b[[2, 3, 30, 31]] = 1
    N = np.column_stack([a, b]) @ rng.standard_normal((2, 2))
    assert ns.zero_one_vectors(N) == [(1, 5, 9), (2, 3, 30, 31), (1, 2, 3, 5, 9, 30, 31)]
    assert ns.zero_one_vectors(rng.standard_normal((n, 2))) == []


def test_candidates_of_planted_and_generic_gram_matrices() -> None:
    planted = sk2.gram_skeleton2(planted_relu2(1, 24, 64).float64())
    assert ns.null_candidates(*planted) == [(0, 1, 2, 3)]
    both = sk2.gram_skeleton2(two_planted(2, 24, 64, (True, True)).float64())
    assert ns.null_candidates(*both) == [(0, 1, 2, 3), (4, 5, 6, 7), tuple(range(8))]
    assert ns.null_candidates(*sk2.gram_skeleton2(generic(3, 24, 64, "relu2").float64())) == []


def test_planted_block_is_absorbable_by_the_null_space_and_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    blk = planted_relu2(4, 40, 96)
    assert blk.d ** 3 * blk.n > sk2.MAX_COLUMN_ENTRIES  # (no enumeration or lifted route)
    _found_by_the_null_space(blk, monkeypatch)


@pytest.mark.parametrize("use, S", [((False, True), (4, 5, 6, 7)), ((True, True), tuple(range(8)))], ids=["second", "both"])
def test_two_planted_sets_the_linear_condition_chooses(use: tuple[bool, bool], S: tuple[int, ...],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    blk = two_planted(5, 40, 96, use)
    _no_linear(monkeypatch)
    dec = decide(blk, timeout=60)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.ABSORBABLE and bd.witness.S == S, bd.reason
    assert _accepted(blk, dec)


def test_generic_block_keeps_its_gram_route_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_linear(monkeypatch)
    bd = decide(generic(6, 40, 96, "relu2"), timeout=60).blocks[0]
    assert bd.verdict is Verdict.NOT_ABSORBABLE and bd.search.method == "gram", bd.reason


def test_near_plant_is_not_absorbable(monkeypatch: pytest.MonkeyPatch) -> None:
    """(Q) off by ~10⁻⁶ (one w_i of S moved, M re-planted so (L) still holds): the null space
    still proposes S, and the flip witness's exact check refuses it."""
    blk = planted_relu2(7, 40, 96)
    D = np.array(blk.W_down)
    D[0, 0] *= 1 + 2.0**-20
    U, c = np.asarray(blk.W_up), np.asarray(blk.b_up)
    M = -2 * (D[:, :4] * c[:4]) @ U[:4]
    near = blk.replace(W_down=D, skip=M)
    assert ns.null_candidates(*sk2.gram_skeleton2(near.float64())) == [(0, 1, 2, 3)]
    _no_linear(monkeypatch)
    bd = decide(near, timeout=60).blocks[0]
    assert bd.verdict is not Verdict.ABSORBABLE, bd.reason
    assert "null space" in bd.reason and "failed its check" in bd.reason, bd.reason


@pytest.mark.slow
@pytest.mark.parametrize("d, n", [(128, 256), (256, 1024)])
def test_planted_relu2_at_model_size(d: int, n: int) -> None:
    """No patch: at these sizes the index-set engine declines the linear condition, and the
    block was ``unknown`` before the null-space route."""
    blk = planted_relu2(8, d, n)
    dec = decide(blk, timeout=60)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.ABSORBABLE and bd.witness.S == (0, 1, 2, 3), bd.reason
    assert _accepted(blk, dec)


def test_a_zero_unit_keeps_the_null_space_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """Degenerate weights (a zero column of W_down, outside S): no necessity proof, but the flip
    witness needs none — the null space is read over the units with nonzero columns (a zero
    unit zeroes the Gram matrix's diagonal), S mapped back to the block's unit numbers."""
    blk = planted_relu2(9, 40, 96)
    D = np.array(blk.W_down, dtype=np.float64)
    D[:, 50] = 0.0
    blk = blk.replace(W_down=D)
    _found_by_the_null_space(blk, monkeypatch)


@pytest.mark.parametrize("act", ["relu", "silu"], ids=["reglu", "swiglu"])
def test_planted_gated_block_is_absorbable_by_the_null_space_and_verifies(act: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blk = planted_gated(9, 40, 96, act)
    assert ns.null_candidates(*sk2.gram_gated(blk.float64())) == [(0, 1, 2, 3)]
    _found_by_the_null_space(blk, monkeypatch)


def test_generic_gated_block_keeps_its_gram_route_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_linear(monkeypatch)
    blk = generic(10, 40, 96, "silu", gated=True)
    assert ns.null_candidates(*sk2.gram_gated(blk.float64())) == []
    bd = decide(blk, timeout=60).blocks[0]
    assert bd.verdict is Verdict.NOT_ABSORBABLE and bd.search.method == "gram", bd.reason
