"""The shifted flip end to end: a planted biased block with σ = Max(0, x − 3/2) is absorbable
with --allow-biases (the witness's flipped units get biases −b_up,i − 2s), its certificate
records s and verifies; a tampered s or a bias-free class is refused; a bias-free f stays
unknown without --allow-biases (the witness has biases)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.io.npz import save_npz
from absorb.verify.checker import verify_certificate


def _planted(act: str = "expr:Max(0, x - 3/2)") -> Block:
    U = np.array([[1.0, 0], [0, 1], [1, 2], [2, -1]])
    D = np.array([[-1, 0, 0.5, -0.25], [0, -1, 0.75, 1.5]])
    return Block(U, D, get_activation(act), b_up=np.array([0.3, -0.7, 1.1, 0.2]), b_down=np.array([0.1, 0.2]),
                 skip=np.eye(2), name="b")


def _doc(blk: Block, **kw: Any) -> dict[str, Any]:
    return build_certificate(decide(blk, seed=0, timeout=30, **kw), blk, seed=0).to_json()


def _accepted(doc: dict[str, Any], blk: Block) -> bool:
    rep = verify_certificate(doc, blk)
    return rep.accepted and not rep.not_rechecked


def test_planted_shifted_flip_is_absorbable_and_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = tmp_path / "m.npz", tmp_path / "c.json"
    save_npz(model, _planted())
    assert main(["check", str(model), "--allow-biases", "--certificate", str(cert)]) == 0
    assert "ABSORBABLE" in capsys.readouterr().out
    assert main(["verify", str(cert), str(model)]) == 0
    doc = _doc(_planted(), allow_biases=True)
    b = doc["blocks"][0]
    assert b["verdict"] == "absorbable" and b["theorem"]["id"] == "index-set"
    assert b["argument"]["s"] == "-3/2" and b["argument"]["c"] == 1 and b["witness"]["S"] == [0, 1]
    assert [p["name"] for p in b["properties"]] == ["shifted_flip"]


@pytest.mark.parametrize("bad", ["-11/8", "3/2", "0", "x", None])
def test_tampered_shift_is_refused(bad: Any) -> None:
    blk = _planted()
    doc = _doc(blk, allow_biases=True)
    assert _accepted(doc, blk)
    t = copy.deepcopy(doc)
    if bad is None:
        del t["blocks"][0]["argument"]["s"]
    else:
        t["blocks"][0]["argument"]["s"] = bad
    assert not _accepted(t, blk)


def test_a_bias_free_block_gets_the_shifted_witness_only_in_the_biased_class() -> None:
    blk = _planted().replace(b_up=None, b_down=None)
    assert decide(blk, seed=0, timeout=30).verdict.value == "unknown"  # the witness has biases: not in the class
    doc = _doc(blk, allow_biases=True)
    assert doc["blocks"][0]["verdict"] == "absorbable" and _accepted(doc, blk)
    t = copy.deepcopy(doc)
    t["class"]["biases"] = t["blocks"][0]["class"]["biases"] = False
    assert not _accepted(t, blk)


def test_generic_shifted_block_is_not_absorbable_or_unknown_as_before() -> None:
    rng = np.random.default_rng(3)
    blk = Block(rng.standard_normal((5, 3)), rng.standard_normal((3, 5)), get_activation("expr:Max(0, x - 3/2)"),
                b_up=rng.standard_normal(5), b_down=rng.standard_normal(3), skip=np.eye(3))
    assert decide(blk, seed=0, timeout=30, allow_biases=True).verdict.value != "absorbable"
