"""Minimal width at the edges (absorb.engine.width)."""

from __future__ import annotations

import json

import numpy as np

from absorb import Block, get_activation
from absorb.cli import main
from absorb.engine.width import minimal_width
from absorb.engine.witness import evaluation_error
from absorb.io import save_npz


def _zero_map() -> Block:
    """f(x) = −x + relu(x) − relu(−x) ≡ 0: canonical form with no line and no linear part."""
    return Block(np.array([[1.0], [-1.0]]), np.array([[1.0, -1.0]]), get_activation("relu"), skip=np.array([[-1.0]]))


def test_min_width_of_the_zero_map_is_one() -> None:
    """The exact minimum is 0 units; asking decide_width for width 0 raised 'width 0 must be a positive integer'."""
    blk = _zero_map()
    mw = minimal_width(blk)
    assert (mw.value, mw.lower, mw.upper, mw.exists) == (1, 1, 1, True)
    assert "identically zero" in mw.reason
    assert mw.witness is not None and mw.witness.block.n == 1
    err, _ = evaluation_error(blk, mw.witness.block, blk.d, seed=11)
    assert err == 0.0 and not np.any(mw.witness.block.M)


def test_cli_min_width_of_the_zero_map(tmp_path, capsys) -> None:
    p = tmp_path / "zero.npz"
    save_npz(p, _zero_map())
    assert main(["check", str(p), "--json", "--min-width"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["blocks"][0]["min_width"] == 1, doc


def test_no_lower_bound_above_an_undecided_width() -> None:
    """Two lines 1e-13 apart: exactly f needs 2 units, but one unit (w0 + w1)·ReLU(u0·x) matches f
    within about 1e-13 relatively, so within the tolerance width 1 works. While width 1 is
    undecided, the minimal width gets no lower bound of 2 (it would be false at the tolerance)."""
    U = np.array([[1.0, 0.0], [1.0, 1e-13]])
    D = np.array([[1.0, -2.0], [0.5, 3.0]])
    blk = Block(U, D, get_activation("relu"), skip=np.zeros((2, 2)))
    mw = minimal_width(blk)
    assert mw.lower is None or mw.lower <= 1 or mw.value is not None, mw
    if mw.value is not None:
        assert mw.value == 1, mw
    g = Block(U[:1], (D[:, 0] + D[:, 1]).reshape(2, 1), get_activation("relu"), skip=np.zeros((2, 2)))
    X = np.random.default_rng(0).standard_normal((200, 2))
    assert np.max(np.abs(blk(X) - g(X))) <= 1e-9 * np.max(np.abs(blk(X)))
