"""Witness checks evaluated on the kink / gate hyperplanes (absorb.engine.witness).

A gate with a jump at 0 makes f and a flipped block differ exactly on the gate
hyperplanes {x : w_gate_i·x + b_i = 0}, a set that random inputs never hit. These tests
plant absorbable blocks (index set S with D_S V_S = −M/c), build the flip witness (and, for
kinked σ, a witness whose σ differs from f's at 0 only) and check that the witness check
rejects every wrong witness and accepts the right ones.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import run_absorb
from hypothesis import example, given
from hypothesis import strategies as st

from absorb import Block, get_activation
from absorb.engine.decide import decide_block
from absorb.engine.verdict import Verdict
from absorb.engine.witness import check_flip_witness, eval_threshold, evaluation_error, flip_block

TOL = 1e-9
STEP = {  # gate H with H(0) = 0, ½, 1; H(z) + H(−z) = 1 holds at z = 0 only for H(0) = ½
    0.0: "expr:1-0**Max(0,x)",
    0.5: "expr:(0**Max(0,-x)+1-0**Max(0,x))/2",
    1.0: "expr:0**Max(0,-x)",
}
KINKED = {"relu": Fraction(1), "leaky_relu": Fraction(101, 100)}  # σ(z) − σ(−z) = c·z
BAD_AT_ZERO = {  # the same σ away from 0, plus 1 at 0: a wrong witness only on the hyperplanes
    "relu": "expr:Max(0,x)+0**Abs(x)",
    "leaky_relu": "expr:Max(0,x)+Min(0,x)/100+0**Abs(x)",
}


def _planted(rng: np.random.Generator, d: int, n: int, gated: bool, act: str, c: Fraction, bias: bool,
             k: int) -> tuple[Block, tuple[int, ...]]:
    """A block whose skip is −c·D_S U_S for a random S of size k (so S is an index set)."""
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    G = rng.standard_normal((n, d)) if gated else None
    S = tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))
    M = -float(c) * (D[:, list(S)] @ U[list(S)])
    kw: dict[str, object] = {}
    if bias:
        kw["b_up"] = rng.standard_normal(n)
        if gated:
            kw["b_gate"] = rng.standard_normal(n)
    return Block(U, D, get_activation(act), W_gate=G, skip=M, **kw), S


def _pl_at_zero(blk: Block, slope: Fraction) -> list[Fraction]:
    """blk(0) in exact rationals, for σ(z) = max(z, slope·z) (ReLU: slope 0)."""
    bu = [Fraction(0)] * blk.n if blk.b_up is None else [Fraction(float(v)) for v in blk.b_up]
    h = [v if v > 0 else slope * v for v in bu]
    bd = [Fraction(0)] * blk.d if blk.b_down is None else [Fraction(float(v)) for v in blk.b_down]
    return [bd[r] + sum((Fraction(float(w)) * x for w, x in zip(blk.W_down[r], h)), Fraction(0)) for r in range(blk.d)]


def _off_where_f0_is_zero(block: Block, g: Block, c: Fraction) -> bool:
    """f(0) = 0 exactly while g(0) ≠ 0 (ReLU, leaky ReLU with slope c − 1)."""
    slope = c - 1
    return all(v == 0 for v in _pl_at_zero(block, slope)) and any(v != 0 for v in _pl_at_zero(g, slope))


def _moved_bias_inexact_where_f0_is_zero(block: Block, S: tuple[int, ...]) -> bool:
    """Step gate with H(0) = 1/2: f(0) = Σ_i H(b_gate,i) b_up,i w_i + b_down is exactly 0 when every
    gate bias is negative and there is no b_down, while the moved bias Σ_S b_up,i w_i is no float."""
    if block.b_down is not None or block.b_up is None or block.b_gate is None or not np.all(block.b_gate < 0):
        return False
    moved = [sum((Fraction(float(block.W_down[r, i])) * Fraction(float(block.b_up[i])) for i in S), Fraction(0))
             for r in range(block.d)]
    return any(Fraction(float(m)) != m for m in moved)


shapes = st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**32 - 1), st.booleans())


@given(shapes, st.sampled_from(sorted(STEP)))
@example((2, 1, 0, False), 0.0)  # the shape of the lead's step example
@example((1, 1, 3, True), 1.0)   # d = 1: the gate hyperplane is a point, off 0 because of the bias
def test_step_gated_flip_witness_rejected_unless_h0_is_half(shape: tuple[int, int, int, bool], h0: float) -> None:
    d, extra, seed, bias = shape
    rng = np.random.default_rng(seed)
    n = d + extra
    block, S = _planted(rng, d, n, True, STEP[h0], Fraction(1), bias, k=min(n, d + 1))
    w, ok = check_flip_witness(block, S, Fraction(1), tol=TOL, seed=0)
    if h0 == 0.5:  # H(z) + H(−z) = 1 everywhere: the flipped block equals f, up to its moved bias, which
        # no relative tolerance covers where f(0) = 0 exactly (every gate off at 0, no b_down)
        assert ok or _moved_bias_inexact_where_f0_is_zero(block, S), w.eval_error
        return
    # f − B' = (2H(0) − 1)·w_i·(v_i·x + b_up,i) on the gate hyperplane of i ∈ S: nonzero
    # unless the value is zero there (d = 1 without a value bias: the hyperplane is x = 0).
    if d == 1 and not bias:
        return
    assert not ok and w.eval_error > eval_threshold(TOL, n), w.eval_error


@given(shapes, st.sampled_from(sorted(KINKED)))
@example((2, 1, 0, True), "relu")
@example((1, 2, 5, False), "leaky_relu")
def test_kinked_flip_witness_accepted_and_zero_value_change_rejected(shape: tuple[int, int, int, bool], act: str) -> None:
    d, extra, seed, bias = shape
    rng = np.random.default_rng(seed)
    n = d + extra
    c = KINKED[act]
    block, S = _planted(rng, d, n, False, act, c, bias, k=min(n, d + 1))
    w, ok = check_flip_witness(block, S, c, tol=TOL, seed=0)
    # with biases, the moved bias c·W_down[:,S] b_up[S] is rounded: where f(0) = 0 exactly, the
    # flipped block is off at x = 0 by that rounding, which no relative tolerance covers
    assert ok == (not _off_where_f0_is_zero(block, w.block, c)), (w.residual, w.eval_error, w.description)
    # the right witness with σ changed at the single point 0: wrong exactly on its kink
    # hyperplanes (the units with a nonzero column change f − B' there)
    bad = w.block.replace(activation=get_activation(BAD_AT_ZERO[act]))
    err, _ = evaluation_error(block, bad, d, seed=0)
    assert err > eval_threshold(TOL, n), err


def test_random_inputs_alone_miss_the_step_gate() -> None:
    """The regression: a step-gated GLU whose flip witness agrees with f off the gate
    hyperplanes but not on them: at x = (2, −1) (gate row 0 gives 0) f = (2, 0) and the
    flipped block gives (0, 0); at x = (1, 3) (gate row 1) f = (4, 11), the block (4, 8)."""
    U = np.array([[1.0, 0], [0, 1], [1, 1]])
    D = np.array([[-1.0, 0, 1], [0, -1, 2]])
    G = np.array([[1.0, 2], [3, -1], [0.5, 1]])
    block = Block(U, D, get_activation("expr:1-0**Max(0,x)"), W_gate=G)
    wb = flip_block(block, (0, 1), Fraction(1))
    x = np.array([[2.0, -1.0], [1.0, 3.0], [2.0, -1.0 + 1e-9]])
    assert block(x).tolist() == [[2.0, 0.0], [4.0, 11.0], [1.000000001, 2.000000002]]
    assert wb(x).tolist() == [[0.0, 0.0], [4.0, 8.0], [1.000000001, 2.000000002]]  # off the hyperplanes they agree
    w, ok = check_flip_witness(block, (0, 1), Fraction(1), tol=TOL, seed=0)
    assert not ok and w.eval_error >= 0.1
    bd = decide_block(block, tol=TOL)
    assert bd.verdict is not Verdict.ABSORBABLE


def test_step_npz_is_not_absorbable_through_the_cli(tmp_path: Path) -> None:
    p = tmp_path / "step.npz"
    np.savez(p, W_up=np.array([[1.0, 0], [0, 1], [1, 1]]), W_down=np.array([[-1.0, 0, 1], [0, -1, 2]]),
             W_gate=np.array([[1.0, 2], [3, -1], [0.5, 1]]), activation=np.array("expr:1-0**Max(0,x)"))
    r = run_absorb("check", str(p))  # in process
    assert r.returncode in (0, 3), r.stderr
    assert "verdict: absorbable" not in r.stdout


@pytest.mark.parametrize("h0", sorted(STEP))
def test_biased_gate_hyperplanes_are_hit_exactly(h0: float) -> None:
    """Biases that make −b/w non-dyadic (1/3, 1/10): the points must still lie exactly on
    the hyperplanes (a rational coordinate kept exact, decided in integer arithmetic)."""
    G = np.array([[3.0, 0.0], [0.0, 10.0], [1.0, 7.0]])
    U = np.array([[1.0, 2.0], [2.0, -1.0], [1.0, 1.0]])
    D = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0]])
    S = (0, 1)
    M = -(D[:, list(S)] @ U[list(S)])
    block = Block(U, D, get_activation(STEP[h0]), W_gate=G, b_gate=np.array([1.0, 1.0, 0.0]), skip=M)
    _, ok = check_flip_witness(block, S, Fraction(1), tol=TOL, seed=0)
    assert ok == (h0 == 0.5)


def test_identical_units_cancel_so_only_changed_hyperplanes_are_probed() -> None:
    from absorb.engine.witness import _difference_units

    rng = np.random.default_rng(1)
    block, S = _planted(rng, 3, 6, True, STEP[0.0], Fraction(1), True, k=3)
    wb = flip_block(block, S, Fraction(1))
    left_f, left_g = _difference_units(block, wb)
    assert left_f == list(S) and left_g == list(S)
    assert _difference_units(block, block) == ([], [])


def test_trivial_and_linear_witnesses_still_check() -> None:
    rng = np.random.default_rng(2)
    b0 = Block(rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), get_activation(STEP[0.0]),
               W_gate=rng.standard_normal((4, 3)), skip=np.zeros((3, 3)))
    assert decide_block(b0).verdict is Verdict.ABSORBABLE  # M = 0: B' = B
    bl = Block(rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), get_activation("identity"))
    assert decide_block(bl).verdict is Verdict.ABSORBABLE


@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
@example(3, 4, 0, True, True)
def test_points_lie_exactly_on_their_hyperplanes(d: int, n: int, seed: int, bias: bool, gated: bool) -> None:
    """Every point built for a hyperplane satisfies r·x + β = 0 in exact rational arithmetic
    (independently recomputed here with Fractions), at every scale; intersection points lie
    on both of their hyperplanes; and the float pre-activation seen by σ there is exactly 0."""
    from absorb.engine.witness import _fix_near_zero, _hyperplane_points, _norms

    rng = np.random.default_rng(seed)
    R = rng.standard_normal((n, d)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))
    R[rng.random((n, d)) < 0.2] = 0.0
    b = rng.standard_normal(n) if bias else None
    kw = {"W_gate": R, "b_gate": b} if gated else {"b_up": b}
    U = rng.standard_normal((n, d)) if gated else R
    blk = Block(U, rng.standard_normal((d, n)), get_activation(STEP[0.0] if gated else "relu"), **kw)
    pts = _hyperplane_points(blk, blk, None, seed)

    def exact_point(p: int) -> list[Fraction]:
        return [pts.extra[p].get(j, Fraction(float(pts.rows[p][j]))) for j in range(d)]

    live = [i for i in range(n) if np.any(R[i] != 0)]
    hits = {i: 0 for i in live}
    for p in range(len(pts.rows)):
        x = exact_point(p)
        for i in live:
            z = sum((Fraction(float(R[i, j])) * x[j] for j in range(d)), Fraction(0)) + (Fraction(float(b[i])) if bias else 0)
            hits[i] += z == 0
    assert all(hits[i] >= 3 for i in live), hits  # each hyperplane has its own three points, at least
    X = pts.X
    Z = X @ R.T + (b if bias else 0.0)
    skipped = np.zeros(X.shape[0], dtype=bool)
    _fix_near_zero(Z, R, b, X, _norms(X, 1), pts, [10_000], skipped)
    assert not skipped.any()
    for p in range(len(pts.rows)):
        x = exact_point(p)
        for i in live:
            z = sum((Fraction(float(R[i, j])) * x[j] for j in range(d)), Fraction(0)) + (Fraction(float(b[i])) if bias else 0)
            assert (Z[p, i] == 0) == (z == 0) and (z == 0 or (Z[p, i] > 0) == (z > 0))
