"""The witness check's two scales and its mirrored units (absorb.engine.witness).

``evaluation_error(..., accept=thr)`` measures each point first against |x|_∞ (f − g needs
only the units that do not cancel) and against |f(x)|_∞ + |x|_∞ only where that exceeds
``thr``; a unit that the witness holds with its kink row negated shares f's
pre-activations. Neither may change a decision: these tests compare both against the
plain evaluation on right and wrong witnesses, gated and ungated, with and without biases.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import absorb.engine.witness as W
from absorb import Block, get_activation
from absorb.engine.witness import eval_threshold, evaluation_error, flip_block

TOL = 1e-9
UNGATED = {"relu": Fraction(1), "gelu": Fraction(1), "leaky_relu": Fraction(101, 100)}
GATED = {"expr:1/(1+exp(-x))": Fraction(1)}  # sigmoid gate: g(z) + g(−z) = 1


def _planted(seed: int, d: int, n: int, act: str, c: Fraction, gated: bool, bias: bool) -> tuple[Block, tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    G = rng.standard_normal((n, d)) if gated else None
    S = tuple(sorted(rng.choice(n, size=min(n, d + 1), replace=False).tolist()))
    M = -float(c) * (D[:, list(S)] @ U[list(S)])
    kw: dict[str, np.ndarray] = {}
    if bias:
        kw["b_up"] = rng.standard_normal(n)
        if gated:
            kw["b_gate"] = rng.standard_normal(n)
    return Block(U, D, get_activation(act), W_gate=G, skip=M, **kw), S


def _wrong(block: Block, S: tuple[int, ...], how: str, rng: np.random.Generator) -> Block:
    """The flip witness made wrong: one down column nudged, one unit dropped, or a wrong skip."""
    w = flip_block(block, S, Fraction(1))
    i = S[int(rng.integers(len(S)))]
    if how == "column":
        D = w.W_down.copy()
        D[:, i] *= 1 + 1e-3
        return w.replace(W_down=D)
    if how == "drop":
        D = w.W_down.copy()
        D[:, i] = 0.0
        return w.replace(W_down=D)
    return w.replace(b_down=(np.zeros(w.d) if w.b_down is None else w.b_down) + 1e-6)


cases = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(2, 12),
                  st.booleans(), st.booleans(), st.sampled_from(["right", "column", "drop", "bias"]))


@settings(max_examples=60)  # each example evaluates two blocks twice; 60 cover every σ, gating, bias and wrong witness
@given(cases)
def test_accept_decides_as_the_full_measure(case: tuple[int, int, int, bool, bool, str]) -> None:
    """With ``accept`` the error is never smaller than without, and it is ≤ accept exactly
    when the full measure is."""
    seed, d, n, gated, bias, how = case
    acts = GATED if gated else UNGATED
    act = sorted(acts)[seed % len(acts)]
    c = acts[act]
    block, S = _planted(seed, d, n, act, c, gated, bias)
    rng = np.random.default_rng(seed + 1)
    g = flip_block(block, S, c) if how == "right" else _wrong(block, S, how, rng)
    thr = eval_threshold(TOL, block.n)
    full, m_full = evaluation_error(block, g, d, seed=3)
    fast, m_fast = evaluation_error(block, g, d, seed=3, accept=thr)
    assert m_fast == m_full
    assert fast >= full
    assert (fast <= thr) == (full <= thr), (fast, full, thr)
    if how == "right":
        assert fast <= thr
    if how in ("column", "drop"):
        assert full > thr


@pytest.mark.parametrize("gated", [False, True])
def test_the_flip_is_mirrored_with_its_signs(gated: bool) -> None:
    """Every unit of S in the flip is f's unit with its kink row negated: W_down's column is
    kept (ungated) or negated with the gate row (gated)."""
    act, c = ("expr:1/(1+exp(-x))", Fraction(1)) if gated else ("gelu", Fraction(1))
    block, S = _planted(5, 4, 11, act, c, gated, bias=True)
    g = flip_block(block, S, c)
    left_f, left_g = W._difference_units(block, g)
    I, J, s = W._mirror_units(block, g, np.asarray(left_f), np.asarray(left_g))
    assert sorted(I.tolist()) == sorted(J.tolist()) == list(S)
    assert np.all(s == (-1.0 if gated else 1.0))


def test_a_unit_that_is_not_an_exact_mirror_is_not_paired() -> None:
    """A kink row negated but its down column changed (not ±) is evaluated on its own."""
    block, S = _planted(7, 3, 9, "relu", Fraction(1), gated=False, bias=False)
    g = flip_block(block, S, Fraction(1))
    D = g.W_down.copy()
    D[:, S[0]] *= 1 + 2.0**-40
    g = g.replace(W_down=D)
    left_f, left_g = W._difference_units(block, g)
    I, J, _s = W._mirror_units(block, g, np.asarray(left_f), np.asarray(left_g))
    assert S[0] not in J.tolist() and len(J) == len(S) - 1
    err, _m = evaluation_error(block, g, 3, seed=0, accept=eval_threshold(TOL, 9))
    assert err > 1e-14  # the nudge is seen (2^-40 relative in one column)


@pytest.mark.parametrize("gated", [False, True])
def test_mirrored_evaluation_equals_the_direct_one(gated: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same errors, to rounding, with the mirrored units evaluated from f's
    pre-activations and with every unit of g evaluated from its own weights."""
    act, c = ("expr:1/(1+exp(-x))", Fraction(1)) if gated else ("leaky_relu", Fraction(101, 100))
    block, S = _planted(11, 5, 14, act, c, gated, bias=True)
    for g in (flip_block(block, S, c), _wrong(block, S, "column", np.random.default_rng(0))):
        mirrored, m1 = evaluation_error(block, g, 5, seed=2)
        with monkeypatch.context() as mp:
            mp.setattr(W, "_mirror_units", lambda f, g, a, b: (np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0)))
            direct, m2 = evaluation_error(block, g, 5, seed=2)
        assert m1 == m2
        assert abs(mirrored - direct) <= 1e-12 + 1e-6 * direct, (mirrored, direct)


def test_the_full_scale_is_used_where_the_small_one_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large units outside S make |f(x)| ≫ ‖M‖_F|x|: a witness whose error is small against
    |f(x)| but not against |x| + ‖M‖_F|x| (an S column of W_down off by 1e-7) is measured
    again against the full scale at those points."""
    rng = np.random.default_rng(3)
    d, n = 4, 12
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    S = tuple(range(d + 1))
    D[:, d + 1:] *= 1e6
    block = Block(U, D, get_activation("relu"), skip=-(D[:, list(S)] @ U[list(S)]))
    g = flip_block(block, S, Fraction(1))
    Dg = g.W_down.copy()
    Dg[:, 0] *= 1 + 1e-7
    g = g.replace(W_down=Dg)
    thr = eval_threshold(TOL, n)
    calls = []
    real = W._eval_block_at
    monkeypatch.setattr(W, "_eval_block_at", lambda blk, pts, budget, units=None, rounding=None: calls.append(units is None) or real(blk, pts, budget, units, rounding))
    fast, _ = evaluation_error(block, g, d, seed=0, accept=thr)
    assert True in calls  # f was evaluated in full at some points
    full, _ = evaluation_error(block, g, d, seed=0)
    assert fast >= full
    assert (fast <= thr) == (full <= thr)


def test_a_zero_skip_costs_no_product() -> None:
    """Block.linear: M x without a product when M is the identity or zero."""
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    X = rng.standard_normal((4, 2))
    relu = get_activation("relu")
    assert Block(U, D, relu).linear(X) is X
    assert np.array_equal(Block(U, D, relu, skip=np.zeros((2, 2))).linear(X), np.zeros((4, 2)))
    M = rng.standard_normal((2, 2))
    assert np.allclose(Block(U, D, relu, skip=M).linear(X), X @ M.T)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_overflow_look_flags_the_points_where_f_overflows(dtype: type) -> None:
    """σ = x + cosh(x) (σ(z) − σ(−z) = 2z): with one large row, f overflows at the large
    inputs only. The grid look cannot rule it out, so each point is looked at (float32 rows
    in float32 with the rounding slack), and the flagged points include every point where
    the float64 evaluation of f overflows, and not the small ones."""
    rng = np.random.default_rng(4)
    d, n = 3, 6
    U = rng.standard_normal((n, d))
    U[5] *= 40.0
    D = rng.standard_normal((d, n))
    block = Block(U.astype(dtype), D.astype(dtype), get_activation("expr:x+cosh(x)"))
    pts = W._Points(d)
    for scale in (1e-2, 1.0, 30.0):
        for x in rng.standard_normal((16, d)) * scale:
            pts.add(x)
    assert not W._bounded_everywhere(block, pts, float(W._norms(block.W_down, 1).max()))
    flagged = W._may_overflow(block, pts, np.arange(n))
    with np.errstate(all="ignore"):
        over = ~np.isfinite(block.float64()(pts.X)).all(axis=1)
    assert over.any() and not over[:16].any()
    assert np.all(flagged[over]) and not flagged[:16].any()


def test_a_tame_sigma_needs_no_look_at_the_points() -> None:
    """GELU with ordinary weights: the grid look bounds every hidden sum at once."""
    block, _S = _planted(2, 4, 10, "gelu", Fraction(1), gated=False, bias=True)
    pts = W._Points(4)
    for x in np.random.default_rng(0).standard_normal((8, 4)) * 100:
        pts.add(x)
    assert W._bounded_everywhere(block, pts, float(W._norms(block.W_down, 1).max()))
    assert not W._may_overflow(block, pts, np.arange(block.n)).any()


def test_the_checker_reports_an_overflow_as_inf() -> None:
    """absorb verify's own evaluation: where f overflows it rejects, and says inf (it
    printed the largest finite difference, 2e-16, next to the rejection)."""
    from absorb.verify._weights import _evaluate

    rng = np.random.default_rng(4)
    U = rng.standard_normal((6, 3))
    U[5] *= 1e4
    D = rng.standard_normal((3, 6))
    S = (0, 1, 2, 3)
    block = Block(U, D, get_activation("expr:x+cosh(x)"), skip=-2.0 * (D[:, list(S)] @ U[list(S)]))
    g = flip_block(block, S, Fraction(2))
    ok, worst, _m = _evaluate(block, g, [block], [g], 3, seed=0, allowed_lin=1e-9)
    assert not ok and worst == np.inf


def test_units_cancel_only_under_the_same_numpy_function() -> None:
    """A hand-built Activation with f's expression but another numpy function: no unit of
    the two blocks cancels, so the difference of the functions is seen."""
    from dataclasses import replace as dc_replace

    block, S = _planted(9, 3, 8, "relu", Fraction(1), gated=False, bias=False)
    g = flip_block(block, S, Fraction(1))
    other = dc_replace(g.activation, np_fn=lambda z: np.maximum(z, 0.0) + 1e-3)
    g2 = g.replace(activation=other)
    assert W._difference_units(block, g2) is None
    err, _m = evaluation_error(block, g2, 3, seed=0, accept=eval_threshold(TOL, block.n))
    assert err > 1e-6


def test_a_user_sigma_that_spikes_between_grid_points_is_looked_at_per_point() -> None:
    """ReLU plus an even spike: σ(±0.3) overflows, a flip identity still holds. A shared
    unit's pre-activation is 0.3 at x = 0, so f(0) overflows: the check fails (as the full
    measure and the checker's evaluation do), however finite σ looks on a grid."""
    act = get_activation("expr:Max(x,0) + exp(710 - (1000000*(x**2 - 0.09))**2)")
    rng = np.random.default_rng(0)
    d, n = 3, 8
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = (0, 1, 2)
    b = np.zeros(n)
    b[7] = 0.3
    f = Block(U, D, act, b_up=b, skip=-(D[:, list(S)] @ U[list(S)]))
    w, ok = W.check_flip_witness(f, S, Fraction(1), tol=TOL, seed=0)
    assert not ok and w.eval_error == np.inf
    assert evaluation_error(f, flip_block(f, S, Fraction(1)), d, seed=0)[0] == np.inf


def test_scaled_copies_of_a_kink_hyperplane_are_one_hyperplane() -> None:
    """Rows that are exact multiples of one another carry one hyperplane: the points built on
    it are exactly on every copy (no exact arithmetic spent, no point left unchecked), and
    the degenerate route's exact witness passes (it failed once skipped points counted)."""
    from absorb.engine._kink_points import _parallel, _plane
    from absorb.engine.degenerate import decide_degenerate
    from absorb.engine.verdict import Verdict

    r = np.random.default_rng(1).integers(-50, 50, 5).astype(float)  # (λ·r exact for these λ)
    r[0] = 7.0
    for lam in (2.0**-30, 0.75, 3.0, -1.3e5):
        assert _parallel(_plane(lam * r, lam * 0.5), _plane(r, 0.5))
    assert not _parallel(_plane(np.nextafter(3.0 * r, np.inf), 1.5), _plane(r, 0.5))
    assert not _parallel(_plane(3.0 * r, 1.5 + 2.0**-40), _plane(r, 0.5))
    rng = np.random.default_rng(5)
    d, m, k = 4, 4, 32
    R, A = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    sc = 2.0 ** (np.arange(k) - k // 2)
    block = Block(np.vstack([R * s for s in sc]), np.hstack([A / (s * k) for s in sc]), get_activation("relu"))
    out = decide_degenerate(block, tol=TOL, seed=0)
    assert out.verdict is Verdict.ABSORBABLE, out.reason
