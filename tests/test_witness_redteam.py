"""Adversarial tests of the witness check's two scales and mirrored units (absorb.engine.witness).

``evaluation_error(f, g, d, seed=, accept=thr)`` computes f − g from the units that do not
cancel, measures each point against |x|_∞ first and against |f(x)|_∞ + |x|_∞ (f evaluated in
full) only where that fails ``thr``, and evaluates a unit that g holds mirrored (kink row
and bias negated, down column ±) from f's pre-activations. The claims tested here:

(a) with ``accept`` the error is never smaller than without, and ≤ accept exactly when the
    one without is;
(b) the mirrored evaluation equals the direct one (every unit of g from its own weights);
(c) no wrong witness passes, in particular none that differs from f only on the gate
    hyperplanes (step gates), also when the exact-arithmetic budget of the hyperplane
    points runs out.

Near-mirrors (a bias left, one entry of a column negated, −0.0, duplicate and permuted
units, two units of g mirroring one of f) are compared against the direct evaluation and
against the evaluation that does not compare the blocks unit by unit at all.

The budget and overflow tests at the end record defects found here (fixed with them): a
point that shows the witness wrong dropped because the exact budget ran out, and an
overflow of f that the fast measure did not evaluate.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import absorb.engine.witness as W
from absorb import Block, get_activation
from absorb.engine.witness import check_flip_witness, eval_threshold, evaluation_error, flip_block

TOL = 1e-9
ACTS = {  # (gated, activation, c): σ(z) − σ(−z) = c·z, or g(z) + g(−z) = c
    "relu": (False, "relu", Fraction(1)),
    "leaky": (False, "leaky_relu", Fraction(101, 100)),
    "gelu": (False, "gelu", Fraction(1)),
    "sigmoid_gate": (True, "expr:1/(1+exp(-x))", Fraction(1)),
    "step_half": (True, "expr:(0**Max(0,-x)+1-0**Max(0,x))/2", Fraction(1)),  # H(0) = ½: the flip is right on the planes too
    "step_zero": (True, "expr:1-0**Max(0,x)", Fraction(1)),  # H(0) = 0: the flip is wrong on the gate planes
}
MUTATIONS = ("none", "bias_kept", "one_entry", "column_negated", "row_entry", "value_row", "permuted",
             "duplicate", "negative_zeros", "two_mirrors")
STEP0 = "expr:1-0**Max(0,x)"

_ACT_CACHE: dict[str, object] = {}


def _act(name: str):
    if name not in _ACT_CACHE:
        _ACT_CACHE[name] = get_activation(name)
    return _ACT_CACHE[name]


def _no_mirrors(f, g, a, b):
    none = np.zeros(0, dtype=np.intp)
    return none, none, np.zeros(0)


def _planted(seed: int, kind: str, bias: bool, float32: bool) -> tuple[Block, tuple[int, ...], Fraction]:
    """A block whose skip is −c·D_S U_S for a random S (empty and all units included)."""
    gated, act, c = ACTS[kind]
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(1, 5)), int(rng.integers(1, 8))
    U = rng.standard_normal((n, d))
    if rng.random() < 0.3:
        U[rng.random((n, d)) < 0.4] = 0.0  # zero entries (−0.0 after a flip), and zero rows
    D = rng.standard_normal((d, n))
    G = np.round(rng.standard_normal((n, d)) * 2) / 2 if gated else None  # dyadic: planes through 0 and intersections
    if float32:  # (the skip is then planted from the float32 values)
        U, D = U.astype(np.float32).astype(np.float64), D.astype(np.float32).astype(np.float64)
    S = tuple(sorted(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False).tolist()))
    M = -float(c) * (D[:, list(S)] @ U[list(S)]) if S else np.zeros((d, d))
    kw: dict[str, np.ndarray] = {}
    if bias:
        kw["b_up"] = np.round(rng.standard_normal(n) * 4) / 4
        if gated:
            kw["b_gate"] = np.round(rng.standard_normal(n) * 4) / 4
        kw["b_down"] = rng.standard_normal(d)
    block = Block(U, D, _act(act), W_gate=G, skip=M, **kw)
    if float32:  # a derived block may hold small float32 matrices (loaders keep large ones float32)
        block = block.replace(**{k: getattr(block, k).astype(np.float32) for k in ("W_up", "W_down", "W_gate")
                                 if getattr(block, k) is not None})
    return block, S, c


def _mutate(block: Block, g: Block, S: tuple[int, ...], how: str, rng: np.random.Generator) -> Block:
    """The flip g of S, changed so that some unit of g is a near-mirror (or a permuted,
    duplicated or double mirror) of a unit of f."""
    n, d = block.n, block.d
    j = S[int(rng.integers(len(S)))] if S else int(rng.integers(n))
    kink = "W_gate" if block.gated else "W_up"
    kb = "b_gate" if block.gated else "b_up"
    if how == "bias_kept":  # kink row negated, its bias not
        b = np.zeros(n) if getattr(g, kb) is None else getattr(g, kb).copy()
        b[j] = -b[j] if b[j] != 0 else 0.25
        return g.replace(**{kb: b})
    if how == "one_entry":  # the down column negated in one entry only
        D = g.W_down.copy()
        D[int(rng.integers(d)), j] *= -1
        return g.replace(W_down=D)
    if how == "column_negated":
        D = g.W_down.copy()
        D[:, j] *= -1
        return g.replace(W_down=D)
    if how == "row_entry":  # one entry of the kink row un-negated
        R = getattr(g, kink).copy()
        R[j, int(rng.integers(d))] *= -1
        return g.replace(**{kink: R})
    if how == "value_row" and block.gated:
        V = g.W_up.copy()
        V[j] *= -1
        return g.replace(W_up=V)
    if how == "permuted":
        p = rng.permutation(n)
        kw = {k: getattr(g, k)[p] for k in ("W_up", "W_gate", "b_up", "b_gate") if getattr(g, k) is not None}
        return g.replace(W_down=g.W_down[:, p], **kw)
    if how in ("duplicate", "two_mirrors"):  # unit k of g becomes a copy of unit j (keys collide)
        rest = [i for i in range(n) if i not in S]
        # two_mirrors: k outside S, so that g holds two mirrors of f's flipped unit j
        k = rest[int(rng.integers(len(rest)))] if how == "two_mirrors" and rest else int(rng.integers(n))
        kw = {}
        for key in ("W_up", "W_gate", "b_up", "b_gate"):
            a = getattr(g, key)
            if a is not None:
                a = a.copy()
                a[k] = a[j]
                kw[key] = a
        D = g.W_down.copy()
        D[:, k] = D[:, j]
        return g.replace(W_down=D, **kw)
    if how == "negative_zeros":  # every zero of the kink row and bias as −0.0 (or +0.0): the same function
        R = getattr(g, kink).copy()
        R[R == 0] = -0.0 if rng.random() < 0.5 else 0.0
        b = getattr(g, kb)
        kw = {kink: R}
        if b is not None:
            b = b.copy()
            b[b == 0] = -0.0
            kw[kb] = b
        return g.replace(**kw)
    return g


def _measures(block: Block, g: Block, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[float, int]]:
    thr = eval_threshold(TOL, block.n)
    out = {"fast": evaluation_error(block, g, block.d, seed=1, accept=thr),
           "full": evaluation_error(block, g, block.d, seed=1)}
    with monkeypatch.context() as mp:
        mp.setattr(W, "_mirror_units", _no_mirrors)
        out["direct"] = evaluation_error(block, g, block.d, seed=1, accept=thr)
    with monkeypatch.context() as mp:  # f and g each evaluated in full, on the planes of both
        mp.setattr(W, "_difference_units", lambda f, g: None)
        out["blocks"] = evaluation_error(block, g, block.d, seed=1)
    return out


cases = st.tuples(st.integers(0, 2**32 - 1), st.sampled_from(sorted(ACTS)), st.sampled_from(MUTATIONS),
                  st.booleans(), st.booleans())


@settings(max_examples=80)  # four evaluations of a small block each; 80 reach every σ × mutation pairing often
@given(cases)
@example((3, "relu", "bias_kept", True, False))
@example((5, "sigmoid_gate", "column_negated", True, False))
@example((7, "step_zero", "none", False, False))
@example((7, "step_zero", "negative_zeros", True, True))
@example((11, "leaky", "two_mirrors", True, True))
@example((13, "step_half", "duplicate", True, False))
@example((17, "gelu", "permuted", False, True))
@example((19, "sigmoid_gate", "value_row", True, True))
def test_near_mirrors_decide_as_every_other_evaluation(case: tuple[int, str, str, bool, bool]) -> None:
    """Right, wrong and near-mirrored witnesses: the fast measure is ≥ the full one and
    decides as it, as the evaluation without mirrored units, and as the evaluation of the
    two blocks in full (no unit comparison); the same points are counted."""
    seed, kind, how, bias, float32 = case
    block, S, c = _planted(seed, kind, bias, float32)
    g = _mutate(block, flip_block(block, S, c), S, how, np.random.default_rng(seed + 1))
    mp = pytest.MonkeyPatch()
    try:
        ms = _measures(block, g, mp)
    finally:
        mp.undo()
    thr = eval_threshold(TOL, block.n)
    assert ms["fast"][1] == ms["full"][1] == ms["direct"][1], ms
    assert ms["fast"][0] >= ms["full"][0], ms
    assert len({v[0] <= thr for v in ms.values()}) == 1, ms
    assert all(v[0] == v[0] for v in ms.values())  # never nan


def _pairs_are_exact_mirrors(f: Block, g: Block, I: np.ndarray, J: np.ndarray, s: np.ndarray) -> None:
    """Each returned pair checked here from the definition, with plain comparisons."""
    assert len(set(I.tolist())) == I.size and len(set(J.tolist())) == J.size  # no unit paired twice
    Rf, bf = (f.W_gate, f.b_gate) if f.gated else (f.W_up, f.b_up)
    Rg, bg = (g.W_gate, g.b_gate) if g.gated else (g.W_up, g.b_up)
    zf, zg = np.zeros(f.n), np.zeros(g.n)
    for i, j, sign in zip(I.tolist(), J.tolist(), s.tolist()):
        assert np.array_equal(Rg[j], -Rf[i])
        assert (zg if bg is None else bg)[j] == -(zf if bf is None else bf)[i]
        assert np.array_equal(g.W_down[:, j], sign * f.W_down[:, i])
        if f.gated:
            assert np.array_equal(g.W_up[j], f.W_up[i])
            assert (zg if g.b_up is None else g.b_up)[j] == (zf if f.b_up is None else f.b_up)[i]


@pytest.mark.parametrize("how", MUTATIONS)
@pytest.mark.parametrize("kind", ["leaky", "sigmoid_gate", "step_zero"])
def test_only_exact_mirrors_are_paired_and_they_evaluate_as_directly(kind: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    for seed in range(6):
        block, S, c = _planted(100 + seed, kind, bias=True, float32=seed % 2 == 1)
        if not S:
            continue
        g = _mutate(block, flip_block(block, S, c), S, how, rng)
        left_f, left_g = W._difference_units(block, g)
        I, J, s = W._mirror_units(block, g, np.asarray(left_f, dtype=np.intp), np.asarray(left_g, dtype=np.intp))
        _pairs_are_exact_mirrors(block, g, I, J, s)
        if how == "none":  # the flip itself: every unit of S that changed is paired
            assert sorted(J.tolist()) == sorted(left_g) == sorted(left_f)
        fast, m1 = evaluation_error(block, g, block.d, seed=2)
        with monkeypatch.context() as mp:
            mp.setattr(W, "_mirror_units", _no_mirrors)
            direct, m2 = evaluation_error(block, g, block.d, seed=2)
        assert m1 == m2
        assert abs(fast - direct) <= 1e-12 + 1e-6 * direct, (fast, direct)


SEED_KEPT = 0  # d = 4, n = 5, S = every unit, nonzero biases


def test_a_kept_bias_and_a_one_entry_sign_are_not_mirrors() -> None:
    """The flip with one unit's kink bias left as it was, or one entry of its down column
    negated: that unit of g is no mirror of f's, and the change is seen."""
    block, S, c = _planted(SEED_KEPT, "leaky", bias=True, float32=False)
    j = S[0]
    assert block.b_up[j] != 0 and np.any(block.W_down[:, j]) and np.any(block.W_up[j])
    thr = eval_threshold(TOL, block.n)
    w = flip_block(block, S, c)
    b = w.b_up.copy()
    b[j] = block.b_up[j]
    D = w.W_down.copy()
    D[0, j] *= -1
    for g in (w.replace(b_up=b), w.replace(W_down=D)):
        left_f, left_g = W._difference_units(block, g)
        _I, J, _s = W._mirror_units(block, g, np.asarray(left_f, dtype=np.intp), np.asarray(left_g, dtype=np.intp))
        assert j not in J.tolist()
        assert evaluation_error(block, g, block.d, seed=0, accept=thr)[0] > thr


def test_degenerate_shapes_check() -> None:
    """d = 1, n = 1, S empty and S = every unit: right flips pass, a wrong skip fails."""
    for kind in ("relu", "sigmoid_gate", "step_half"):
        gated, act, c = ACTS[kind]
        for d, n in ((1, 1), (1, 3), (3, 1)):
            rng = np.random.default_rng(d * 10 + n)
            U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
            G = rng.standard_normal((n, d)) if gated else None
            for S in ((), tuple(range(n))):
                M = -float(c) * (D[:, list(S)] @ U[list(S)]) if S else np.zeros((d, d))
                block = Block(U, D, _act(act), W_gate=G, skip=M, b_up=np.full(n, 0.5))
                w, ok = check_flip_witness(block, S, c, tol=TOL, seed=0)
                assert w.eval_error <= eval_threshold(TOL, n), (kind, d, n, S, w.eval_error)
                assert ok or not S  # (S empty: M = 0, whose relative residual is not defined)
                bad = w.block.replace(b_down=w.block.b_down + 1e-3 if w.block.b_down is not None else np.full(d, 1e-3))
                assert evaluation_error(block, bad, d, seed=0, accept=eval_threshold(TOL, n))[0] > eval_threshold(TOL, n)


# ---- the exact-arithmetic budget of the hyperplane points ------------------------------
# A step-gated GLU (H(0) = 0) whose flip is wrong exactly on the gate hyperplane of one
# unit b (f − g = −w_b·(v_b·x) there), and right everywhere else. Decoys: `decoys` more
# units of S whose gate rows are multiples k·r of one row r, with value row r (so they
# cancel on their common plane r·x = 0, where they have r·x = 0 as their value): every
# point built on one decoy plane lies on all of them and costs (decoys − 1) exact
# pre-activations. A unit outside S has the gate row 2·r_b: its pre-activation is 0 on
# b's plane too (it is another row, so it needs the exact arithmetic as well).

BUDGET = 600  # the tests set the budget, so that they do not depend on its default


def _decoyed(decoys: int, r: tuple[float, ...] = (1.0, 0.3, 0.7), seed: int = 0) -> tuple[Block, tuple[int, ...], np.ndarray]:
    rng = np.random.default_rng(seed)
    r_ = np.array(r)
    r_b = np.array([0.0, 1.0, 0.5])
    ks = 1.0 + np.arange(decoys) / 64.0
    G = np.vstack([ks[:, None] * r_, r_b, 2.0 * r_b, rng.standard_normal((3, 3))])
    n = G.shape[0]
    U = rng.standard_normal((n, 3))
    U[:decoys] = r_
    D = rng.standard_normal((3, n))
    S = tuple(range(decoys + 1))
    M = -(D[:, list(S)] @ U[list(S)])
    return Block(U, D, _act(STEP0), W_gate=G, skip=M), S, r_b


def test_the_decoyed_flip_is_wrong_and_rejected_while_the_budget_lasts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The construction is sound: at the exact points x = (t, 1, −2) of b's gate plane f and
    its flip differ by O(1); with a budget that suffices the check rejects the flip."""
    block, S, r_b = _decoyed(16)
    g = flip_block(block, S, Fraction(1))
    X = np.array([[0.0, 1.0, -2.0], [1.0, 2.0, -4.0], [-3.0, 4.0, -8.0]])
    assert np.all(X @ r_b == 0)  # exactly on the plane: float evaluation sees H(0) there
    diff = np.abs(block(X) - g(X)).max(axis=1) / (np.abs(block(X)).max(axis=1) + np.abs(X).max(axis=1))
    assert np.all(diff > 1e-3), diff
    monkeypatch.setattr(W, "_EXACT_ENTRIES", 100_000)
    w, ok = check_flip_witness(block, S, Fraction(1), tol=TOL, seed=0)
    assert not ok and w.eval_error > 1e-3
    thr = eval_threshold(TOL, block.n)
    assert evaluation_error(block, g, 3, seed=0)[0] > thr


def test_a_failing_point_is_not_dropped_when_the_full_scale_runs_out_of_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 decoys: the pass over the units of S spends the budget on the decoy points; b's
    points fail against |x|, and are then re-measured against |f(x)| + |x|, which needs
    the exact pre-activation of the unit with gate row 2·r_b: none is left, the points are
    skipped, and only passing points remain. (d424840 evaluated the units outside S first,
    while the budget lasted, and kept b's points.)"""
    monkeypatch.setattr(W, "_EXACT_ENTRIES", BUDGET)
    block, S, _ = _decoyed(16)
    w, ok = check_flip_witness(block, S, Fraction(1), tol=TOL, seed=0)
    assert not ok, (w.eval_error, w.n_inputs)


def test_the_plain_measure_keeps_the_failing_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(W, "_EXACT_ENTRIES", BUDGET)
    block, S, _ = _decoyed(12)
    g = flip_block(block, S, Fraction(1))
    thr = eval_threshold(TOL, block.n)
    fast = evaluation_error(block, g, 3, seed=0, accept=thr)
    full = evaluation_error(block, g, 3, seed=0)
    assert fast[0] > thr  # the fast measure sees b's points
    assert full[0] > thr, (fast, full)


def test_points_skipped_for_the_budget_never_pass_a_wrong_witness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoy row r = (1, 1, 1): b's points (t, c/2, −c) lie on the decoy plane t − c/2 = 0
    too for some seeded coordinates (here with 19 decoys), so they need the exact
    arithmetic in the pass over the units of S itself, after the decoys spent it."""
    monkeypatch.setattr(W, "_EXACT_ENTRIES", BUDGET)
    block, S, _ = _decoyed(19, r=(1.0, 1.0, 1.0))
    w, ok = check_flip_witness(block, S, Fraction(1), tol=TOL, seed=0)
    assert not ok, (w.eval_error, w.n_inputs)


# ---- overflow of the units that cancel -------------------------------------------------

def test_an_overflow_of_f_decides_as_the_full_measure() -> None:
    """σ = x + cosh(x) (σ(z) − σ(−z) = 2z): the unit outside S has a row of size 1e4, whose
    cosh overflows at most inputs; the units of S are small. f(x) is inf there, the
    difference of the units that do not cancel is not."""
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    U[5] *= 1e4
    U[:4] *= 0.01
    S, c = (0, 1, 2, 3), Fraction(2)
    block = Block(U, D, _act("expr:x+cosh(x)"), skip=-2.0 * (D[:, list(S)] @ U[list(S)]))
    assert not np.all(np.isfinite(block(rng.standard_normal((8, 3)))))  # f overflows at random inputs
    g = flip_block(block, S, c)
    thr = eval_threshold(TOL, block.n)
    fast = evaluation_error(block, g, 3, seed=0, accept=thr)[0]
    full = evaluation_error(block, g, 3, seed=0)[0]
    assert fast >= full and (fast <= thr) == (full <= thr), (fast, full)


# ---- magnitudes ------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [2.0**-150, 2.0**-40, 1e6, 2.0**150])
@pytest.mark.parametrize("kind", ["leaky", "sigmoid_gate", "step_half"])
def test_huge_tiny_weights_and_huge_biases_decide_as_the_full_measure(kind: str, scale: float) -> None:
    """Up rows (and skip) scaled by 2^±150 or 1e6, and an output bias of 1e12 (|f| ≫ |x|):
    both measures decide alike on the flip and on the flip with a down column nudged by
    1e-3. The flip passes up to 1e6; at 2^150 the rounding of the planted skip, times
    2^150, is no longer small next to the unscaled biases (at x = 0.0022 of the first block,
    d = 1: f(x) = −2.7e26 in exact arithmetic, the flip 0.35), and the check rejects it."""
    for seed in range(4):
        block, S, c = _planted(200 + seed, kind, bias=True, float32=False)
        if not S:
            continue
        block = block.replace(W_up=block.W_up * scale, skip=block.M * scale, b_down=np.full(block.d, 1e12) if seed % 2 else block.b_down)
        thr = eval_threshold(TOL, block.n)
        right = flip_block(block, S, c)
        D = right.W_down.copy()
        D[:, S[0]] *= 1 + 1e-3
        for g, good in ((right, True), (right.replace(W_down=D), False)):
            fast = evaluation_error(block, g, block.d, seed=0, accept=thr)
            full = evaluation_error(block, g, block.d, seed=0)
            assert fast[1] == full[1] and fast[0] >= full[0]
            assert (fast[0] <= thr) == (full[0] <= thr), (fast, full)
            if good and scale < 2.0**100:
                assert fast[0] <= thr, fast
