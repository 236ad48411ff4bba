"""Near-degenerate units a residual-free block can re-use: a nearly antipodal pair of ungated units is nearly a linear
map (σ(z) − σ(−z) = c·z), and gated units with nearly equal gates merge into one. Where the freed slots can realise
the skip within the tolerance, an exact not_absorbable would contradict it: the producer's screen
(``absorb.engine.tolerance``) and the checker's own (``absorb.verify._sampled``) must both see it. Each case's g is
built and measured here, so the test fails if the construction is not within the tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from absorb.engine.decide import decide_block
from absorb.engine.verdict import Verdict
from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.verify._sampled import spare_units

pytestmark = pytest.mark.usefixtures("screens_at_any_tolerance")  # (the screens past 10⁻⁴ too: tests/conftest.py)

_FLIP = {"relu": 1.0, "gelu": 1.0, "silu": 1.0, "leaky_relu": 1.01}
"""c with σ(z) − σ(−z) = c·z."""


def _measured(f: Block, g: Block) -> float:
    """max |f(x) − g(x)|∞ / (|f(x)|∞ + |x|∞ + |f(0)|∞) over a sweep of 20001 directions of the plane (d = 2) at scales
    10⁻⁴ … 10¹⁰: dense enough to meet the thin wedges next to the units' hyperplanes, where random inputs miss the
    largest errors."""
    th = np.linspace(0, 2 * np.pi, 20001)
    X = np.vstack([np.column_stack([np.cos(th), np.sin(th)]) * t for t in 10.0 ** np.arange(-4, 11)])
    f0 = float(np.max(np.abs(f(np.zeros((1, f.d))))))
    return float(np.max(np.max(np.abs(f(X) - g(X)), axis=1) / (np.max(np.abs(f(X)), axis=1) + np.max(np.abs(X), axis=1) + f0)))


def _antipodal(act: str, eps: float, sign: float = 1.0) -> tuple[Block, Block]:
    """f: identity skip (d = 2), units 0 and 1 nearly antipodal (u₁ = −e₁ + ε e₂) with down columns ∓e₁/c, together
    ≈ −sign·e₁x₁, and three generic units; g: the same units 2–4, units 0 and 1 re-aimed as the pair e₂σ(x₂) −
    e₂σ(−x₂) = c·e₂x₂ (the skip's part f's pair leaves, sign = 1). With sign = −1 the pair adds to the skip instead."""
    c = _FLIP[act]
    rng = np.random.default_rng(1)
    Uo, Do = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    U = np.vstack([[[1.0, 0.0], [-1.0, eps]], Uo])
    D = np.hstack([sign * np.array([[-1.0, 1.0], [0.0, 0.0]]) / c, Do])
    sigma = get_activation(act)
    f = Block(W_up=U, W_down=D, activation=sigma, skip=np.eye(2))
    g = Block(W_up=np.vstack([[[0.0, 1.0], [0.0, -1.0]], Uo]), W_down=np.hstack([np.array([[0.0, 0.0], [1.0, -1.0]]) / c, Do]),
              activation=sigma, skip=np.zeros((2, 2)))
    return f, g


@pytest.mark.parametrize("act", sorted(_FLIP))
def test_a_nearly_antipodal_pair_that_cancels_part_of_the_skip_frees_both_slots(act: str) -> None:
    f, g = _antipodal(act, 1e-3)
    assert _measured(f, g) < 5e-3  # (≈ 5·10⁻⁴: g is within the tolerance below)
    bd = decide_block(f, tol=1e-2)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert "nearly collinear" in bd.reason  # (units 0 and 1 within τ of an exactly antipodal pair)
    assert spare_units(f, 1e-2, 0, False) is not None  # (the checker's own screen sees it too)


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_a_pair_far_from_linear_frees_nothing_and_one_near_collinear_withholds(act: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pair tilted by 0.1 (its joint output is 10⁻¹ from linear): the spare-unit screen frees nothing, on both sides
    (a block fitted near f's units comes within 3.2τ, which the fitted screen's 4× margin withholds: left out here). The
    same pair adding e₁x₁ to the skip (M + e₁e₁ᵀ has rank 2: one pair realises one part) is within τ of a
    block whose rows 0 and 1 are exactly antipodal, which the exact argument does not cover: withheld on both sides."""
    from absorb.engine import results

    f = _antipodal(act, 1e-1)[0]
    assert "fitted to f" in decide_block(f, tol=1e-2).reason
    monkeypatch.setattr(results, "near_block", lambda *a, **k: None)
    assert decide_block(f, tol=1e-2).verdict is Verdict.NOT_ABSORBABLE
    assert spare_units(f, 1e-2, 0, False) is None
    f = _antipodal(act, 1e-3, sign=-1.0)[0]
    bd = decide_block(f, tol=1e-2)
    assert bd.verdict is Verdict.UNKNOWN and "nearly collinear" in bd.reason, bd.reason
    assert "nearly collinear" in (spare_units(f, 1e-2, 0, False) or "")


def _gated_pairs(act: str) -> tuple[Block, Block]:
    """f: bias-free gated (d = 2, identity skip) with four units whose quadratic part 10·e₁|x|² makes f grow like |x|²
    in every direction (g(z)·z − g(−z)·z = z² for these gates), units 4/5 with gates 2⁻¹⁴ apart and equal down
    columns, units 6/7 with gates 2⁻¹⁴ apart and value rows z, 2z; g (with biases): the same four units, unit 5
    merged into 4 (value rows added), unit 7 into 6 (down columns added), and the two freed units with gate row 0,
    gate bias 8 and value rows e_j / g(8): g(8)·(e_j·x)/g(8) = x_j — the skip, exactly. A merge moves f by about
    2⁻¹⁴|x|², which f's coercive quadratic part keeps within the tolerance (where f grew like |x| in some direction,
    no merge of distinct gates would be: the error grows like |x|² there)."""
    rng = np.random.default_rng(4)
    a, b, u, v, w, z = (rng.standard_normal(2) for _ in range(6))
    E = np.eye(2)
    Gc, Uc, Dc = np.array([E[0], -E[0], E[1], -E[1]]), np.array([E[0], -E[0], E[1], -E[1]]), 10 * np.column_stack([E[0]] * 4)
    G = np.vstack([Gc, [a, a + 2.0**-14 * rng.standard_normal(2), b, b + 2.0**-14 * rng.standard_normal(2)]])
    U = np.vstack([Uc, [u, v, z, 2 * z]])
    D = np.column_stack([Dc, w, w, rng.standard_normal(2), rng.standard_normal(2)])
    sigma = get_activation(act)
    f = Block(W_up=U, W_gate=G, W_down=D, activation=sigma, skip=np.eye(2))
    s8 = float(np.asarray(sigma(np.array([8.0]))).reshape(-1)[0])
    Dg = np.column_stack([Dc, w, D[:, 6] + 2 * D[:, 7], [1.0, 0.0], [0.0, 1.0]])
    g = Block(W_up=np.vstack([Uc, [u + v, z, [1 / s8, 0.0], [0.0, 1 / s8]]]), W_gate=np.vstack([Gc, [a, b, [0.0, 0.0], [0.0, 0.0]]]),
              W_down=Dg, activation=sigma, skip=np.zeros((2, 2)), b_gate=np.r_[np.zeros(6), 8.0, 8.0])
    return f, g


@pytest.mark.parametrize("act", ["swiglu", "reglu", "geglu"])
def test_gated_units_with_nearly_equal_gates_merge(act: str) -> None:
    f, g = _gated_pairs(act)
    err = _measured(f, g)
    assert err < 5e-3, err  # (a few 10⁻⁴: g, with biases, is within the tolerance below)
    bd = decide_block(f, tol=1e-2, allow_biases=True)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert spare_units(f, 1e-2, 0, False, True) is not None  # (the checker's screen: one slot per rank with biases)
    assert spare_units(f, 1e-2, 0, False, False) is None  # (bias-free: a gate with g(0) = 0 makes no linear unit)


def test_a_diagonal_skip_is_split_as_its_svd_would() -> None:
    """The producer reads a diagonal skip's parts off its diagonal (no d × d SVD): the same remainder and kept sum as
    the SVD route gives, for every rank."""
    from absorb.engine._spare import _beyond_rank

    rng = np.random.default_rng(2)
    A = np.diag([3.0, -1.0, 0.5, 2.0, -0.25])
    X = rng.standard_normal((50, 5))
    den = 1 + np.abs(X).max(axis=1)
    for r in range(6):
        P, S, Qt = np.linalg.svd(A)
        rest = float(np.max(np.abs(X @ ((P[:, r:] * S[r:]) @ Qt[r:]).T).max(axis=1) / den)) if r < 5 else 0.0
        kept = float(np.sum(S[:r] * np.abs(P[:, :r]).max(axis=0) * np.abs(Qt[:r]).sum(axis=1)))
        got = _beyond_rank(A, [], r, X, den)
        assert got == pytest.approx((rest, kept), rel=1e-12, abs=1e-15)


def _producer_split(M: np.ndarray, maps: list, rank: int, X: np.ndarray, den: np.ndarray) -> float:
    from absorb.engine._spare import _beyond_rank

    return _beyond_rank(M, maps, rank, X, den)[0]


def _checker_split(M: np.ndarray, maps: list, rank: int, X: np.ndarray, den: np.ndarray) -> float:
    from absorb.verify._sampled import _leftover

    return _leftover(M, maps, rank, 0.0, X, den)[0]


@pytest.mark.parametrize("split", [_producer_split, _checker_split], ids=["producer", "checker"])
@pytest.mark.parametrize("d,rank,m", [(5, 1, 1), (5, 2, 1), (6, 3, 2), (6, 4, 2), (6, 6, 1), (7, 5, 3), (4, 0, 1)])
def test_an_identity_skip_with_maps_is_split_as_its_svd_would(split, d: int, rank: int, m: int) -> None:  # type: ignore[no-untyped-def]
    """A = c·I + Σ v uᵀ is split in the maps' span (no d × d SVD), by each side's own code: the same remainder as the
    SVD route gives at the sampled inputs where A's r largest triples all lie in the maps' span, and a rank ≤ r split
    otherwise (what it leaves is at most |c| on the rest of the complement)."""
    rng = np.random.default_rng(d + rank + m)
    X = rng.standard_normal((60, d))
    den = 1 + np.abs(X).max(axis=1)
    for c in (1.0, -2.0, 0.0):
        maps = [(rng.standard_normal(d), rng.standard_normal(d)) for _ in range(m)]
        A = c * np.eye(d) + sum(np.outer(v, u) for v, u in maps)
        P, S, Qt = np.linalg.svd(A)
        rest = float(np.max(np.abs(X @ ((P[:, rank:] * S[rank:]) @ Qt[rank:]).T).max(axis=1) / den)) if rank < d else 0.0
        got = split(c * np.eye(d), maps, rank, X, den)
        if rank <= int(np.sum(S > abs(c) * (1 + 1e-9))) or rank >= d:  # (the r largest triples all in the maps' span)
            assert got == pytest.approx(rest, rel=1e-9, abs=1e-12), (c, got, rest)
        else:
            assert 0 <= got <= rest + abs(c) * float(np.max(np.abs(X).max(axis=1) / den)) + 1e-12, (c, got, rest)


def test_scaled_pairs_serve_where_f0_is_not_zero() -> None:
    """σ = Max(0, x + 1) (bias-free, σ(0) = 1, no flip identity: σ(z) − σ(−z) − z is bounded, not o(1)·|z| at 0), a
    rank-one skip and two negligible units: the pair (t e₁, e₁/t), (−t e₁, −e₁/t) gives x₁ + δ(t x₁)/t with |δ| ≤ 1,
    a constant within τ|f(0)| for t large — f is within the tolerance of a bias-free g (built here, t = 2³⁰), and
    neither side may call it not_absorbable."""
    rng = np.random.default_rng(1)
    U, D = rng.standard_normal((6, 2)), rng.standard_normal((2, 6))
    D[:, 4:] *= 1e-9
    sigma = get_activation("expr:Max(0, x + 1)")
    f = Block(W_up=U, W_down=D, activation=sigma, skip=np.diag([1.0, 0.0]))
    t = 2.0**30
    g = Block(W_up=np.vstack([U[:4], [[t, 0.0], [-t, 0.0]]]), W_down=np.hstack([D[:, :4], [[1 / t, -1 / t], [0.0, 0.0]]]),
              activation=sigma, skip=np.zeros((2, 2)))
    assert _measured(f, g) < 1e-6
    assert decide_block(f, tol=1e-3).verdict is not Verdict.NOT_ABSORBABLE
    assert spare_units(f, 1e-3, 0, False) is not None


def test_a_flipped_unit_merges_into_its_opposite() -> None:
    """σ(−z) = σ(z) − z: a unit nearly opposite another, with its own down column, is that unit's line plus a linear map
    that joins the skip — here the skip then has rank one, and the freed slot with a negligible unit holds the pair
    (the construction of a red-team case, d = 2, n = 5, ReLU): not not_absorbable at τ = 10⁻³, on either side."""
    rng = np.random.default_rng(11)
    U = rng.standard_normal((5, 2))
    D = np.column_stack([w * np.sign(w @ u) for w, u in zip(rng.standard_normal((5, 2)), U)])
    u = U[0]
    th = np.arctan2(u[1], u[0]) + 1e-4
    U[1] = -np.linalg.norm(u) * np.array([np.cos(th), np.sin(th)])
    D[:, 1] = u / (u @ u) + 0.7 * np.array([-u[1], u[0]]) / np.linalg.norm(u)
    D[:, 2] *= 1e-12
    f = Block(W_up=U, W_down=D, activation=get_activation("relu"), skip=np.eye(2))
    A = np.eye(2) - np.outer(D[:, 1], U[0])
    P, S, Qt = np.linalg.svd(A)
    g = Block(W_up=np.vstack([U[0], Qt[0], -Qt[0], U[3], U[4]]), activation=f.activation, skip=np.zeros((2, 2)),
              W_down=np.column_stack([D[:, 0] + D[:, 1], S[0] * P[:, 0], -S[0] * P[:, 0], D[:, 3], D[:, 4]]))
    assert _measured(f, g) < 5e-4
    assert decide_block(f, tol=1e-3).verdict is not Verdict.NOT_ABSORBABLE
    assert spare_units(f, 1e-3, 0, False) is not None


def test_a_bounded_value_branch_makes_no_linear_unit() -> None:
    """GLU with h = tanh and biases: a unit with gate row 0 is g(c)·tanh(u·x + b), bounded — freed slots realise no
    part of the skip, and the boundedness verdict stands on both sides."""
    rng = np.random.default_rng(2)
    G, U, D = rng.standard_normal((4, 2)), rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
    D[:, 2:] *= 1e-9
    f = Block(W_up=U, W_gate=G, W_down=D, activation=get_activation("sigmoid"), skip=np.eye(2),
              value_activation=get_activation("tanh"), b_up=rng.standard_normal(4))
    assert decide_block(f, tol=1e-3).verdict is Verdict.NOT_ABSORBABLE
    assert spare_units(f, 1e-3, 0, False, True) is None


def _rank_one_skip_with_distractors(k: int, seed: int = 5) -> tuple[Block, Block]:
    """ReLU, d = 8, skip M = 10·p qᵀ: a target pair nearly opposite (angle 2·10⁻⁴, down columns 0.3p and a random one),
    one 10⁻¹² unit, k cheaper distractor pairs (angle 5·10⁻⁵, random down columns) and 40 generic units. g: the
    target's second unit flipped into the first (σ(−z) = σ(z) − z), its linear part 0.3p uᵀ joins the skip, which stays
    rank one: one exact antipodal pair in the freed slots (the distractors kept as they are)."""
    rng = np.random.default_rng(seed)
    d = 8
    p, q = rng.standard_normal(d), rng.standard_normal(d)
    p, q = p / np.linalg.norm(p), q / np.linalg.norm(q)

    def opposite(u: np.ndarray, e: float) -> np.ndarray:
        t = rng.standard_normal(d)
        t -= (t @ u) / (u @ u) * u
        return -np.cos(e) * u + np.sin(e) * np.linalg.norm(u) * t / np.linalg.norm(t)

    rows, cols = [], []
    u = rng.standard_normal(d)
    rows += [u, opposite(u, 2e-4)]
    cols += [rng.standard_normal(d), 0.3 * p]
    rows.append(rng.standard_normal(d))
    cols.append(1e-12 * rng.standard_normal(d))
    for _ in range(k):
        v = rng.standard_normal(d)
        rows += [v, opposite(v, 5e-5)]
        cols += [rng.standard_normal(d), rng.standard_normal(d)]
    for _ in range(40):
        rows.append(rng.standard_normal(d))
        cols.append(rng.standard_normal(d))
    U, D, M = np.array(rows), np.column_stack(cols), 10 * np.outer(p, q)
    f = Block(W_up=U, W_down=D, activation=get_activation("relu"), skip=M)
    A = M - np.outer(D[:, 1], U[0])  # (unit 1 ≈ σ(−u·x) = σ(u·x) − u·x: its column onto unit 0, −w₁uᵀ to the skip)
    P, S, Qt = np.linalg.svd(A)
    gU, gD = U.copy(), D.copy()
    gD[:, 0] += D[:, 1]
    gU[1], gD[:, 1], gU[2], gD[:, 2] = Qt[0], S[0] * P[:, 0], -Qt[0], -S[0] * P[:, 0]
    return f, Block(W_up=gU, W_down=gD, activation=f.activation, skip=np.zeros((d, d)))


@pytest.mark.parametrize("k", [0, 3])
def test_cheaper_merges_that_raise_the_skips_rank_do_not_crowd_out_one_that_does_not(k: int) -> None:
    f, g = _rank_one_skip_with_distractors(k)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.standard_normal((4000, 8)) * t for t in 10.0 ** np.arange(-4, 9, 2)])
    err = float(np.max(np.abs(f(X) - g(X)).max(axis=1) / (np.abs(f(X)).max(axis=1) + np.abs(X).max(axis=1))))
    assert err < 5e-4, err  # (the g the screen finds is within τ = 10⁻³)
    assert decide_block(f, tol=1e-3).verdict is not Verdict.NOT_ABSORBABLE
    assert spare_units(f, 1e-3, 0, False) is not None


def _flip_and_spare(act: str, biased: bool) -> tuple[Block, Block, bool]:
    """f = x + W_down σ(W_up x + b_up) + b_down (d = 2, n = 5): units 0 and 1 with W_S U_S = −I + R, R = e₁e₁ᵀ/2 (no
    index set: far from −I), units 2 and 3 of size 10⁻¹², unit 4 generic. g: units 0 and 1 flipped (σ(z) = σ(−z) + z:
    the skip becomes R, the biases' share joins b_down), units 2 and 3 the antipodal pair e₁σ(x₁)/2 − e₁σ(−x₁)/2 = R x,
    unit 4 kept — so g − f is the two small units' output."""
    r = np.random.default_rng(7)
    U, W = r.standard_normal((5, 2)), r.standard_normal((2, 5))
    R = np.array([[0.5, 0.0], [0.0, 0.0]])
    W[:, :2] = (-np.eye(2) + R) @ np.linalg.inv(U[:2])
    W[:, 2:4] *= 1e-12
    b, bd = (r.standard_normal(5), r.standard_normal(2)) if biased else (None, None)
    sigma = get_activation(act)
    f = Block(W_up=U, W_down=W, activation=sigma, skip=np.eye(2), b_up=b, b_down=bd)
    Ug, Wg = U.copy(), W.copy()
    Ug[:2] *= -1
    Ug[2:4], Wg[:, 2:4] = [[1.0, 0.0], [-1.0, 0.0]], [[0.5, -0.5], [0.0, 0.0]]
    bg = None if b is None else np.concatenate([-b[:2], [0.0, 0.0], b[4:]])
    bdg = None if bd is None else bd + W[:, :2] @ b[:2]
    return f, Block(W_up=Ug, W_down=Wg, activation=sigma, skip=np.zeros((2, 2)), b_up=bg, b_down=bdg), biased


@pytest.mark.parametrize("act,biased", [("relu", False), ("gelu", True)])
def test_a_flip_of_the_other_units_leaves_what_the_freed_slots_realise(act: str, biased: bool) -> None:
    """Spare units combine with a flip: the index-set search proves that no S meets −I, but S = {0, 1} leaves a rank-one
    skip that the two spare units realise. Both sides withhold the exact verdict (it was not_absorbable [index-set],
    resp. [skeleton], and the checker accepted it)."""
    f, g, biases = _flip_and_spare(act, biased)
    assert _measured(f, g) < 1e-10
    bd = decide_block(f, tol=1e-9)
    assert bd.verdict is not Verdict.NOT_ABSORBABLE, bd.reason
    assert "flip of units [0, 1]" in bd.reason
    assert spare_units(f, 1e-9, 0, False, biases) is not None


def test_a_pruned_gated_unit_leaves_a_flip_search_over_fifteen_units() -> None:
    """GLU (g(z) + g(−z) = 1), d = 4, n = 16, one unit pruned to 10⁻⁴ of its size at τ = 10⁻²: its freed slot realises
    one rank-one part, and every flip of the 15 units that stay leaves the identity skip far from rank one (σ₂ ≥ 0.6),
    so the exact not_absorbable stands on both sides (it was withheld unsearched past 14 units)."""
    rng = np.random.default_rng(3)
    d, n = 4, 16
    U, G, D = rng.standard_normal((n, d)) / 2, rng.standard_normal((n, d)) / 2, rng.standard_normal((d, n)) / 4
    D[:, 0] *= 1e-4
    f = Block(W_up=U, W_down=D, activation=get_activation("glu"), W_gate=G)
    bd = decide_block(f, tol=1e-2)
    assert bd.verdict is Verdict.NOT_ABSORBABLE, bd.reason
    assert spare_units(f, 1e-2, 0, False) is None
