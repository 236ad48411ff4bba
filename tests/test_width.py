"""Extra width and minimal width (absorb.engine.width; docs/min-width.md)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb import Block, get_activation
from absorb._errors import InvalidInput
from absorb.cli import main
from absorb.engine.verdict import Verdict
from absorb.engine.width import decide_width, minimal_width
from absorb.engine.witness import eval_threshold, evaluation_error

sys.path.insert(0, "tests")
from test_degenerate import _brute


def _generic(n: int, d: int, act: str, seed: int) -> Block:
    rng = np.random.default_rng(seed)
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(act))


def _checked(block: Block, w) -> None:
    assert w is not None and w.exact
    err, _ = evaluation_error(block, w.block, block.d, seed=11)
    assert err <= eval_threshold(1e-9, w.block.n)
    assert not np.any(w.block.M)


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
@pytest.mark.parametrize("n,d", [(2, 2), (3, 2), (5, 3), (4, 4), (6, 2), (2, 3), (1, 3)])
def test_generic_minimal_width_is_max_n_d_plus_d(act: str, n: int, d: int) -> None:
    """Theorem W: generic weights need max(n, d) + d units (n + d when n ≥ d)."""
    b = _generic(n, d, act, seed=100 * n + d)
    mw = minimal_width(b)
    assert mw.value == max(n, d) + d
    _checked(b, mw.witness)
    assert mw.witness.block.n == mw.value
    below = decide_width(b, mw.value - 1)
    assert below.verdict is Verdict.NOT_ABSORBABLE
    assert _brute(b, mw.value - 1, family="relu" if act == "relu" else "even") > 1e-6


def test_the_choice_without_search_answers_wide_widths_past_the_budget() -> None:
    """B = ∅, δ = 0 (each line's unit, rank(L₀) antipodal pairs) needs m + 2·rank(L₀) ≤ n + 2d
    units and no search: widths from there on are absorbable and bound the minimal width from
    above even where the exact search exceeds its budget (d = 4, n = 16: 14 598 144 choices)."""
    b = _generic(16, 4, "gelu", seed=5)
    at = decide_width(b, 40, budget=1 << 17)
    assert at.verdict is Verdict.ABSORBABLE
    _checked(b, at.witness)
    assert at.witness.block.n == 40
    mw = minimal_width(b, budget=1 << 17)
    assert mw.value is None and mw.upper == 16 + 2 * 4 and mw.lower == 17
    _checked(b, mw.witness)
    assert decide_width(b, 23, budget=1 << 17).verdict is Verdict.UNKNOWN  # below it the search is needed, and over budget


def test_a_width_far_past_n_plus_2d_is_the_small_block_padded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past n + 2d every block of the family is absorbable (the choice without search), so a huge
    width is answered by the block built at n + 2d units padded with dead units — not built unit by
    unit in exact arithmetic (10^6 units took 43 s and 4.5 GB), with the small block's errors."""
    import absorb.engine.degenerate as dg

    built: list[int] = []
    construct = dg.construct
    monkeypatch.setattr(dg, "construct", lambda cf, choice, width: built.append(width) or construct(cf, choice, width))
    b = _generic(3, 2, "relu", seed=0)
    small = decide_width(b, 3 + 2 * 2)
    wide = decide_width(b, 10**6)
    assert built and max(built) == 7  # no block of 10^6 units built in exact arithmetic
    assert small.verdict is wide.verdict is Verdict.ABSORBABLE and wide.theorem == "canonical-form"
    assert wide.witness.block.n == 10**6 and wide.witness.eval_error == small.witness.eval_error
    assert not np.any(wide.witness.block.W_up[7:]) and not np.any(wide.witness.block.W_down[:, 7:])
    assert np.array_equal(wide.witness.block.W_up[:7], small.witness.block.W_up)  # (so its values are the small block's)
    _checked(b, small.witness)


def test_relu_d1_needs_two_units() -> None:
    assert minimal_width(_generic(5, 1, "relu", 0)).value == 2


@pytest.mark.parametrize("n,d", [(3, 2), (4, 3), (6, 3)])
def test_planted_minimal_width_is_n(n: int, d: int) -> None:
    """Planted instances (an index set S with D_S U_S = −I) need exactly n: every unit is its own active line."""
    rng = np.random.default_rng(n + d)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    U[:d], D[:, :d] = np.eye(d), -np.eye(d)  # S = {0..d-1}: D_S U_S = −I exactly
    b = Block(U, D, get_activation("relu"))
    mw = minimal_width(b)
    assert mw.value == n
    _checked(b, mw.witness)


@settings(max_examples=3 * settings.default.max_examples // 2)  # cheap: 1.5 times the profile's count
@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 10_000))
def test_min_width_matches_brute_force_on_small_integers(d: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    U = rng.integers(-2, 3, (n, d)).astype(float)
    D = rng.integers(-2, 3, (d, n)).astype(float)
    b = Block(U, D, get_activation("relu"))
    mw = minimal_width(b)
    assert mw.value is not None
    assert _brute(b, mw.value, family="relu") < 1e-7
    if mw.value > 1:
        assert _brute(b, mw.value - 1, family="relu") > 1e-6


def test_every_width_theorems() -> None:
    b = _generic(3, 2, "relu2", 0)
    assert decide_width(b, 50).verdict is Verdict.NOT_ABSORBABLE
    assert minimal_width(b).exists is False
    t = _generic(3, 2, "tanh", 0)
    assert decide_width(t, 9).verdict is Verdict.NOT_ABSORBABLE  # bounded σ
    sp = Block(np.ones((2, 2)), np.ones((2, 2)), get_activation("softplus"))
    assert decide_width(sp, 9).verdict is Verdict.UNKNOWN


def test_bad_width() -> None:
    with pytest.raises(InvalidInput):
        decide_width(_generic(2, 2, "relu", 0), 0)
    # a width whose block could not be built is refused by name, before anything is allocated
    with pytest.raises(InvalidInput, match=r"--width 10000000000000000000000: .*at most \d+ units here"):
        decide_width(_generic(2, 2, "relu", 0), 10**22)


def test_cli_fields(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    p = tmp_path / "g.npz"
    np.savez(p, W_up=rng.standard_normal((5, 3)), W_down=rng.standard_normal((3, 5)), activation=np.array("relu"))
    assert main(["check", str(p), "--json", "--width", "8", "--min-width"]) == 0
    blk = json.loads(capsys.readouterr().out)["blocks"][0]
    assert blk["verdict"] == "not_absorbable"
    assert blk["width"]["asked"] == 8 and blk["width"]["verdict"] == "absorbable" and blk["width"]["witness_width"] == 8
    assert blk["min_width"] == 8
    assert main(["check", str(p), "--width", "7"]) == 0
    assert "width 7: NOT_ABSORBABLE" in capsys.readouterr().out
    # a JSON certificate records the width answers too (no note); absorb verify re-derives them
    assert main(["check", str(p), "--width", "8", "--certificate", str(tmp_path / "c.json")]) == 0
    assert "note:" not in capsys.readouterr().err
    assert json.loads((tmp_path / "c.json").read_text())["blocks"][0]["width"]["asked"] == 8
    assert main(["verify", str(tmp_path / "c.json"), str(p)]) == 0
    assert "accepted" in capsys.readouterr().out
    assert main(["check", str(p), "--certificate", str(tmp_path / "d.json")]) == 0
    assert "--width" not in capsys.readouterr().err


# ---- the main decision's witness and proofs answer the width questions ------------------------
def _planted_large(n: int = 20, d: int = 4, seed: int = 3, gated: bool = False) -> Block:
    """Too many lines for the exact canonical-form search (budget), but an index set exists."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    U[:d], D[:, :d] = np.eye(d), -np.eye(d)
    if gated:
        return Block(U, D, get_activation("glu"), W_gate=rng.standard_normal((n, d)))  # sigmoid gate: g(z) + g(−z) = 1
    return Block(U, D, get_activation("relu"))


def test_main_witness_answers_width_n_and_above_and_bounds_min_width() -> None:
    from absorb.engine.decide import decide_block

    b = _planted_large()
    bd = decide_block(b)
    assert bd.verdict is Verdict.ABSORBABLE
    for N in (20, 21, 23):
        wd = decide_width(b, N, decision=bd)
        assert wd.verdict is Verdict.ABSORBABLE, wd.reason
        assert wd.witness.block.n == N and wd.theorem == "index-set"
        _checked_float(b, wd.witness)
        assert not np.any(wd.witness.block.W_up[20:]) and not np.any(wd.witness.block.W_down[:, 20:])
    assert decide_width(b, 19, decision=bd).verdict is Verdict.NOT_ABSORBABLE  # 20 active lines
    mw = minimal_width(b, decision=bd)
    assert mw.value == 20 and mw.upper == 20 and mw.lower == 20 and mw.witness is not None
    # far above n: the padded block's values are the witness's (dead units add 0 exactly), so its errors
    # are kept, not measured again at a cost linear in the width (200 000 units took ~70 s)
    wide = decide_width(b, 200_000, decision=bd)
    assert wide.verdict is Verdict.ABSORBABLE and wide.witness.block.n == 200_000
    assert wide.witness.eval_error == bd.witness.eval_error and wide.witness.n_inputs == bd.witness.n_inputs
    assert not np.any(wide.witness.block.W_up[20:]) and not np.any(wide.witness.block.W_down[:, 20:])
    _checked_float(b, wide.witness)
    # without the decision the main check is run (a short run) and gives the same answers
    assert decide_width(b, 21).verdict is Verdict.ABSORBABLE
    assert minimal_width(b).value == 20


def _checked_float(block: Block, w) -> None:
    err, _ = evaluation_error(block, w.block, block.d, seed=11)
    assert err <= eval_threshold(1e-9, w.block.n)
    assert not np.any(w.block.M)


def test_gated_main_witness_gives_upper_bound_only() -> None:
    from absorb.engine.decide import decide_block

    b = _planted_large(n=6, d=3, seed=1, gated=True)
    bd = decide_block(b)
    assert bd.verdict is Verdict.ABSORBABLE
    wd = decide_width(b, 9, decision=bd)
    assert wd.verdict is Verdict.ABSORBABLE and wd.witness.block.n == 9 and wd.witness.block.W_gate.shape == (9, 3)
    mw = minimal_width(b, decision=bd)
    assert mw.value is None and mw.upper == 6 and mw.exists is True
    assert decide_width(b, 5, decision=bd).verdict is Verdict.UNKNOWN


def test_padded_witness_needs_a_proved_bound() -> None:
    """A witness checked on samples alone (no proved bound) is not accepted padded either."""
    from absorb.engine.decide import decide_block
    from absorb.engine.width import pad_witness

    b = _planted_large(n=6, d=3, seed=1, gated=True)
    w = decide_block(b).witness
    bad = type(w)(S=w.S, block=w.block.replace(W_down=w.block.W_down * 1.001), residual=w.residual, eval_error=0.0, n_inputs=0)
    pw, ok = pad_witness(bad, 8, tol=1e-9)
    assert not ok and pw.block.n == 8


def test_main_proof_answers_smaller_widths() -> None:
    """Result 5 proves width n impossible; then no width ≤ n works (padding), and the
    minimal width is > n even when the exact search runs out of budget."""
    from absorb.engine.decide import decide_block

    b = _generic(20, 4, "relu", 5)
    bd = decide_block(b)
    assert bd.verdict is Verdict.NOT_ABSORBABLE and bd.theorem.value == "index-set"
    assert decide_width(b, 20, decision=bd).verdict is Verdict.NOT_ABSORBABLE
    assert decide_width(b, 12, decision=bd).verdict is Verdict.NOT_ABSORBABLE
    mw = minimal_width(b, decision=bd)
    assert mw.value is None and mw.lower == 21 and mw.upper == 20 + 2 * 4  # (the choice without search: m + 2·rank(L₀))
    _checked(b, mw.witness)


def test_cli_width_uses_main_witness(tmp_path, capsys) -> None:
    b = _planted_large()
    p = tmp_path / "planted.npz"
    np.savez(p, W_up=b.W_up, W_down=b.W_down, activation=np.array("relu"))
    for N in (20, 21):
        assert main(["check", str(p), "--json", "--width", str(N), "--min-width"]) == 0
        blk = json.loads(capsys.readouterr().out)["blocks"][0]
        assert blk["verdict"] == "absorbable"
        assert blk["width"]["verdict"] == "absorbable" and blk["width"]["witness_width"] == N
        assert blk["min_width"] == 20 and blk["min_width_detail"]["upper"] == 20


def test_stored_zero_biases_at_a_larger_width() -> None:
    """A block that stores all-zero bias vectors (a checkpoint with bias tensors) is bias-free: the
    canonical form's witness at width N > n has no biases (it kept f's length-n ones, an IndexError)."""
    rng = np.random.default_rng(3)
    d, n = 3, 4
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    D[:, [0, 1, 2]] = -np.linalg.inv(U[[0, 1, 2]])
    b = Block(U, D, get_activation("relu"), b_up=np.zeros(n), b_down=np.zeros(d))
    plain = Block(U, D, get_activation("relu"))
    for N in (5, 16):
        assert decide_width(b, N).verdict is decide_width(plain, N).verdict is not Verdict.UNKNOWN


def _near_line_pair(theta: float, scale: float) -> Block:
    """Two antipodal pairs realise −x, and units 4, 5 sit on lines θ apart: f = a·ReLU(u·x) + b·ReLU(u₂·x), within
    |b|∞·|u₂ − u|₁ of the width-1 block (a + b)·ReLU(u·x)."""
    u = np.array([0.6, 0.8])
    u2 = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]) @ u
    U = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], u, u2], dtype=float)
    W = np.zeros((2, 6))
    W[:, :4] = [[-1, 1, 0, 0], [0, 0, -1, 1]]
    W[:, 4], W[:, 5] = [1.0, -2.0], np.array([1.0, 0.5]) * scale
    return Block(U, W, get_activation("relu"))


@pytest.mark.parametrize("tol, scale", [(1e-3, 1.0), (1e-6, 1e-3)])
def test_a_narrower_width_is_withheld_when_two_lines_merge_within_the_tolerance(tol: float, scale: float) -> None:
    f = _near_line_pair(1e-4, scale)
    g = Block(f.W_up[4:5], (f.W_down[:, 4] + f.W_down[:, 5])[:, None], get_activation("relu"), skip=np.zeros((2, 2)))
    X = np.random.default_rng(0).standard_normal((4000, 2)) * 10.0 ** np.random.default_rng(1).uniform(-3, 3, (4000, 1))
    err = np.max(np.abs(f(X) - g(X)), axis=1) / (np.max(np.abs(f(X)), axis=1) + np.max(np.abs(X), axis=1))
    assert float(err.max()) < tol  # (g of width 1 is within τ: a not_absorbable at width 1 would be wrong)
    wd = decide_width(f, 1, tol=tol)
    assert wd.verdict is Verdict.UNKNOWN and ("nearly collinear" in wd.reason or "merged block may fit" in wd.reason)
    mw = minimal_width(f, tol=tol)
    assert mw.value in (None, 1) and (mw.lower is None or mw.lower <= 1)
