"""Degenerate weights outside the flipped set (issue 26): nondegeneracy is a hypothesis of the
skeletons' necessity only, so a planted exact block with one degenerate unit elsewhere (a zero
row, a zero down column, an antipodal or duplicate unit) keeps its flip witness — ``absorbable``,
and ``absorb verify`` accepts the certificate — while a degenerate block with no such S stays
``unknown`` naming the failed hypothesis, and its not_absorbable forgery is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_gated_skeleton import relu_like_planted

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.verify import checker


def _planted(act: str = "relu2") -> Block:
    """d = 2 (as tests/test_skeleton2.py): S = {0,1,2,3} cancels in (Q), M from (L), dyadic."""
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -1], [2, 3], [-1, 5]])
    w = np.array([1.0, 2.0])
    D = np.column_stack([w, w, -w / 2, -w / 2, [3.0, 1], [-1.0, 2]])
    c = np.array([0.5, -1, 0.25, 2, 1.5, -0.5])
    M = -sum(2 * c[i] * np.outer(D[:, i], U[i]) for i in range(4))
    return Block(U, D, get_activation(act), b_up=c, b_down=np.array([0.125, -0.25]), skip=M)


def _degenerate(blk: Block, how: str) -> Block:
    """Unit 5 (outside S) made degenerate."""
    U, D, c = blk.W_up.copy(), blk.W_down.copy(), blk.b_up.copy()
    if how == "zero down column":
        D[:, 5] = 0
    elif how == "zero up row":
        U[5] = 0
    elif how == "antipodal":
        U[5] = -U[4]
    else:  # duplicate
        U[5], c[5] = U[4], c[4]
    return blk.replace(W_up=U, W_down=D, b_up=c)


def _accepted(dec: object, blk: Block) -> None:
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


HOW = ["zero down column", "zero up row", "antipodal", "duplicate"]


@pytest.mark.parametrize("how", HOW)
def test_degree2_flip_survives_a_degenerate_unit_elsewhere(how: str) -> None:
    blk = _degenerate(_planted(), how)
    dec = decide(blk)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.SKELETON2), bd.reason
    assert set(bd.witness.S) >= {0, 1, 2, 3} and bd.witness.exact
    assert any(not h.holds for h in bd.hypotheses)  # (recorded as failing: the checker re-derives that too)
    X = np.random.default_rng(3).standard_normal((64, 2)) * 4
    np.testing.assert_allclose(bd.witness.block(X), blk(X), rtol=1e-12, atol=1e-9)
    _accepted(dec, blk)


def test_degenerate_without_a_flip_stays_unknown_and_its_forgery_is_refused() -> None:
    blk = _degenerate(_planted(), "antipodal")
    blk = blk.replace(skip=blk.M + np.array([[0.5, 0], [0, 0]]))  # (L) now fails for every S
    dec = decide(blk)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and "collinear" in bd.reason and "not_absorbable" in bd.reason, bd.reason
    # the same block decided not_absorbable (a forged theorem use): the checker demands nondegeneracy
    other = decide(_planted().replace(skip=blk.M)).blocks[0]
    assert other.verdict is Verdict.NOT_ABSORBABLE, other.reason
    forged = dataclasses.replace(other, block=blk, hypotheses=bd.hypotheses)
    rep = checker.verify_certificate(build_certificate(dataclasses.replace(dec, blocks=[forged]), blk, seed=0).to_json(), blk)
    assert not rep.accepted
    assert any("collinear" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def _gated_planted(act: str = "silu") -> Block:
    """d = 2, tests/test_gated_skeleton.py's: S = {0, 1} cancels in (Qg), M from (Lg)."""
    return relu_like_planted(act)


@pytest.mark.parametrize("how", ["zero gate row", "duplicate", "value parallel to gate", "zero down column"])
def test_gated_flip_survives_a_degenerate_unit_elsewhere(how: str) -> None:
    blk = _gated_planted()
    G, U, D = blk.W_gate.copy(), blk.W_up.copy(), blk.W_down.copy()
    bg, bu = blk.b_gate.copy(), blk.b_up.copy()
    if how == "zero gate row":
        G[3] = 0
    elif how == "duplicate":
        G[3], U[3], bg[3], bu[3] = G[2], U[2], bg[2], bu[2]
    elif how == "value parallel to gate":
        U[3] = -0.5 * G[3]
    else:
        D[:, 3] = 0
    blk = blk.replace(W_gate=G, W_up=U, W_down=D, b_gate=bg, b_up=bu)
    dec = decide(blk)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.GATED_SKELETON), bd.reason
    assert set(bd.witness.S) >= {0, 1} and any(not h.holds for h in bd.hypotheses)
    X = np.random.default_rng(4).standard_normal((64, 2)) * 3
    np.testing.assert_allclose(bd.witness.block(X), blk(X), rtol=1e-9, atol=1e-9)
    _accepted(dec, blk)


def test_gated_degenerate_without_a_flip_stays_unknown() -> None:
    blk = _gated_planted()
    G = blk.W_gate.copy()
    G[3] = 0
    blk = blk.replace(W_gate=G, skip=blk.M + np.array([[0.5, 0], [0, 0]]))
    bd = decide(blk).blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and "nonzero" in bd.reason and "not_absorbable" in bd.reason, bd.reason


def test_gated_not_absorbable_on_degenerate_weights_is_refused() -> None:
    """The checker still demands the gated nondegeneracy for not_absorbable (only the flip is exempt)."""
    good = _gated_planted()
    good = good.replace(skip=good.M + np.array([[0.5, 0], [0, 0]]))
    dec = decide(good)
    assert dec.blocks[0].verdict is Verdict.NOT_ABSORBABLE, dec.blocks[0].reason
    G = good.W_gate.copy()
    G[3] = 0
    bad = good.replace(W_gate=G)
    bd_bad = decide(bad).blocks[0]
    forged = dataclasses.replace(dec.blocks[0], block=bad, hypotheses=bd_bad.hypotheses)
    rep = checker.verify_certificate(build_certificate(dataclasses.replace(dec, blocks=[forged]), bad, seed=0).to_json(), bad)
    assert not rep.accepted
    assert any("gate row is nonzero" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def test_a_generic_degenerate_block_skips_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A zero row's unit has zero (Q) and (L) columns, so the rank route over the other units
    proves no S is near: unknown at once, without the index-set engine."""
    from absorb.engine import skeleton2 as sk2

    def no_search(*a: object, **k: object) -> None:
        raise AssertionError("the lifted search ran")

    monkeypatch.setattr(sk2, "lifted_route", no_search)
    rng = np.random.default_rng(0)
    d, n = 4, 20  # n > 16: no enumeration
    U = rng.standard_normal((n, d))
    U[5] = 0
    blk = Block(U, rng.standard_normal((d, n)), get_activation("relu2"), b_up=rng.standard_normal(n),
                b_down=rng.standard_normal(d), skip=rng.standard_normal((d, d)))
    bd = decide(blk).blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and "zero" in bd.reason, bd.reason


def test_a_generic_degenerate_gated_block_skips_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.engine import skeleton2 as sk2

    def no_search(*a: object, **k: object) -> None:
        raise AssertionError("the lifted search ran")

    monkeypatch.setattr(sk2, "lifted_route", no_search)
    rng = np.random.default_rng(0)
    d, n = 4, 20
    D = rng.standard_normal((d, n))
    D[:, 5] = 0
    blk = Block(rng.standard_normal((n, d)), D, get_activation("silu"), W_gate=rng.standard_normal((n, d)),
                b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n), b_down=rng.standard_normal(d),
                skip=rng.standard_normal((d, d)))
    bd = decide(blk).blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and "W_down" in bd.reason, bd.reason
