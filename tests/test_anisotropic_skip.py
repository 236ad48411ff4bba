"""An index set within the tolerance in relative Frobenius distance whose flip witness fails
(an anisotropic skip: ‖M‖_F is its largest direction) does not end the search: the engine searches
again below that set's residual and finds the exact set; an unknown verdict's certificate records
no failed set (it claims nothing)."""

from __future__ import annotations

import numpy as np

from absorb import Block, get_activation
from absorb.certificate import build_certificate
from absorb.engine import Verdict, decide
from absorb.verify import checker


def _block(big: float) -> Block:
    M = np.diag([big, 1.0])
    return Block(np.eye(2), -M, get_activation("relu"), skip=M)


def test_the_exact_set_is_found_after_a_failed_one() -> None:
    """M = diag(10⁹, 1), W_up = I, W_down = −M: S = {0} is at relative distance 10⁻⁹ ≤ τ but its
    witness is off by |x₂|; S = {0, 1} is exact."""
    blk = _block(1e9)
    d = decide(blk)
    bd = d.blocks[0]
    assert bd.verdict is Verdict.ABSORBABLE, bd.reason
    assert sorted(bd.witness.S) == [0, 1]
    rep = checker.verify_certificate(build_certificate(d, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked


def test_an_unknown_verdict_records_no_failed_set() -> None:
    """One unit: S = {0} is the only candidate (relative distance 10⁻⁹ ≤ τ) and its witness fails, the
    search below it finds nothing: unknown, and its certificate records no S (before, it recorded
    S = {0} without a witness, and the checker rejected it)."""
    M = np.diag([1e9, 1.0])
    blk = Block(np.array([[1.0, 0.0]]), np.array([[-1e9], [0.0]]), get_activation("relu"), skip=M)
    d = decide(blk)
    assert d.blocks[0].verdict is Verdict.UNKNOWN
    doc = build_certificate(d, blk, seed=0).to_json()
    assert (doc["blocks"][0].get("search") or {}).get("S") is None
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted, [f.claim for f in rep.failures]
