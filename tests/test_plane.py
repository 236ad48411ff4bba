"""Exact conic piecewise-linear structure of bias-free ReLU stacks in the plane
(absorb/plane), against independent float computations."""

from __future__ import annotations

import math
from fractions import Fraction as Q

import numpy as np
import pytest

from absorb.explore import kink_rays_2d
from absorb.model.activations import get_activation
from absorb.model.block import Block, Stack
from absorb.plane import block_map, compose, positive_spanning, stack_map
from absorb.plane.conic import cross, normalise

RELU = get_activation("relu")


def _blocks(seed: int, n: int, L: int) -> list[tuple[np.ndarray, np.ndarray, None]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, 2)) / math.sqrt(2), rng.standard_normal((2, n)) / math.sqrt(n), None) for _ in range(L)]


def _numeric(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]], residual: bool = True) -> Stack:
    return Stack(tuple(Block(U, D, RELU, skip=(M if M is not None else (None if residual else np.zeros((2, 2)))))
                       for U, D, M in blocks))


def _sweep_kinks(F: Stack, m: int = 20000) -> list[tuple[float, float]]:
    """Angle intervals where F is not linear, from a fine sweep of the circle: at each sample,
    the linear map through its two neighbours must reproduce it (independent of absorb.plane)."""
    t = 2 * math.pi * np.arange(m) / m
    X = np.stack([np.cos(t), np.sin(t)], axis=1)
    Y = F(X)
    A = np.stack([X[np.arange(m) - 1], X[(np.arange(m) + 1) % m]], axis=1)  # rows x_a, x_b
    B = np.stack([Y[np.arange(m) - 1], Y[(np.arange(m) + 1) % m]], axis=1)
    Jt = np.linalg.solve(A, B)  # Jᵀ with x_a·Jᵀ = y_a, x_b·Jᵀ = y_b
    resid = np.abs(np.einsum("ij,ijk->ik", X, Jt) - Y).max(axis=1)
    bad = [int(i) for i in np.flatnonzero(resid > 1e-9 * (1 + np.abs(Y).max()))]
    runs: list[list[int]] = []
    for i in bad:
        if runs and i - runs[-1][-1] == 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    if len(runs) > 1 and runs[0][0] == 0 and runs[-1][-1] == m - 1:
        runs[0] = runs.pop() + runs[0]
    step = 2 * math.pi / m
    return [((r[0] - 1) * step % (2 * math.pi), (r[-1] + 1) * step % (2 * math.pi)) for r in runs]


def _angle(v: tuple[Q, Q]) -> float:
    return math.atan2(float(v[1]), float(v[0])) % (2 * math.pi)


def _in(theta: float, lo: float, hi: float) -> bool:
    return lo <= theta <= hi if lo <= hi else (theta >= lo or theta <= hi)


@pytest.mark.parametrize("seed,n,L", [(0, 2, 2), (1, 3, 2), (2, 3, 3), (3, 4, 2)])
def test_kink_rays_match_a_fine_sweep(seed: int, n: int, L: int) -> None:
    bl = _blocks(seed, n, L)
    F = stack_map(bl)
    exact = [_angle(r) for r in F.kink_rays()]
    found = _sweep_kinks(_numeric(bl))
    for lo, hi in found:  # each detected interval holds an exact kink, and each exact kink is detected
        assert any(_in(a, lo, hi) for a in exact), (lo, hi, exact)
    assert all(any(_in(a, lo, hi) for lo, hi in found) for a in exact)
    gaps = np.diff(sorted(exact) + [min(exact) + 2 * math.pi])
    if gaps.min() > 4 * 2 * math.pi / 20000:  # kinks a few samples apart are told apart
        assert len(found) == len(exact)
    assert np.allclose(sorted(exact), kink_rays_2d(bl), atol=1e-9)


@pytest.mark.parametrize("residual", [True, False])
def test_exact_values_equal_the_float_stack(residual: bool) -> None:
    bl = _blocks(5, 3, 2)
    F = stack_map(bl, residual=residual)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100, 2))
    Y = _numeric(bl, residual)(X)
    Ye = np.array([[float(v) for v in F((Q(x[0]), Q(x[1])))] for x in X])
    assert np.abs(Y - Ye).max() <= 1e-12 * (1 + np.abs(Y).max())


def test_block_with_a_skip_and_continuity() -> None:
    M = np.array([[0.5, -1.0], [2.0, 0.25]])
    U = np.array([[1.0, 0.5], [-0.25, 1.0]])
    D = np.array([[1.0, -2.0], [0.5, 0.75]])
    f = block_map(U, D, M)
    for r in f.rays:  # both neighbouring matrices agree on the ray between them
        k = f.rays.index(r)
        A, B = f.mats[k - 1], f.mats[k]
        assert all(A[i][0] * r[0] + A[i][1] * r[1] == B[i][0] * r[0] + B[i][1] * r[1] for i in range(2))
    x = (Q(3), Q(-2))
    want = [float(v) for v in (M @ [3.0, -2.0] + D @ np.maximum(U @ [3.0, -2.0], 0))]
    assert [float(v) for v in f(x)] == pytest.approx(want, rel=1e-15)
    assert len(f.kink_rays()) == 4 and len(f.full_lines()) == 2


def test_full_lines_of_a_generic_depth2_stack_are_the_first_blocks_lines() -> None:
    bl = _blocks(1, 3, 2)
    F = stack_map(bl)
    lines = F.full_lines()
    U1 = bl[0][0]
    assert len(lines) == 3
    for r in lines:  # each full line is u_i^⊥ for a row u_i of the first block
        assert any(cross(normalise((Q(float(-u[1])), Q(float(u[0])))), r) == 0 for u in U1)
    assert len(F.kink_rays()) == 12  # 3 full lines of f1 and the 6 rays pulled back from f2's lines


def test_compose_is_associative_and_identity_is_neutral() -> None:
    bl = _blocks(4, 2, 3)
    f1, f2, f3 = (block_map(U, D) for U, D, _ in bl)
    assert compose(f3, compose(f2, f1)) == compose(compose(f3, f2), f1)
    ident = block_map([[Q(0), Q(0)]], [[Q(0)], [Q(0)]])
    assert ident.is_linear() and compose(ident, f1) == f1 == compose(f1, ident)


def test_positive_spanning_certificate_is_exact() -> None:
    pts = [(Q(1), Q(0)), (Q(-1), Q(1)), (Q(0), Q(-3)), (Q(-2), Q(-1)), (Q(1), Q(0))]
    lam = positive_spanning(pts)
    assert lam is not None and all(v > 0 for v in lam)
    assert sum(lam[j] * pts[j][0] for j in range(len(pts))) == 0 == sum(lam[j] * pts[j][1] for j in range(len(pts)))
    assert positive_spanning([(Q(1), Q(0)), (Q(0), Q(1)), (Q(-1), Q(0))]) is None  # a closed half-plane
    assert positive_spanning([(Q(1), Q(0)), (Q(-1), Q(0)), (Q(0), Q(1)), (Q(0), Q(-1))]) is not None
    assert positive_spanning([(Q(1), Q(1)), (Q(-1), Q(-1))]) is None


# ------------------------------------------------------------------ the range argument --

def _narrow(seed: int, n_last: int = 2, residual_last: bool = True, n_first: int = 5) -> Stack:
    """Two ReLU blocks in the plane; the first of width 5 > 2d (outside Theorems K and H), the last narrow."""
    rng = np.random.default_rng(seed)
    ws = [n_first, n_last]
    return Stack(tuple(Block(rng.standard_normal((n, 2)) / math.sqrt(2), rng.standard_normal((2, n)) / math.sqrt(2), RELU,
                             skip=None if (i == 0 or residual_last) else np.zeros((2, 2)), name=f"blocks.{i}")
                       for i, n in enumerate(ws)))


def test_range_verdict_is_certified_and_rechecked() -> None:
    from absorb.certificate import build_certificate
    from absorb.engine import Theorem, Verdict, decide
    from absorb.verify import checker

    st = _narrow(0)
    dec = decide(st)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.RANGE
    assert all(bd.verdict is Verdict.NOT_ABSORBABLE for bd in dec.blocks)  # no block is absorbable on its own
    doc = build_certificate(dec, st, seed=0).to_json()
    rep = checker.verify_certificate(doc, st)
    assert rep.accepted and not rep.not_rechecked
    wider = _narrow(0, n_last=3)  # the same record against a stack whose last block is wider than d
    assert decide(wider).verdict is Verdict.UNKNOWN
    assert not checker.verify_certificate(doc, wider).accepted


def test_range_in_a_half_plane_stays_unknown() -> None:
    from absorb.engine import Verdict, decide
    from absorb.plane.range import range_certificate

    st = _narrow(1)  # seed 1: the composition's range lies in a closed half-plane
    assert range_certificate(st.blocks) is None
    assert decide(st).verdict is Verdict.UNKNOWN


@pytest.mark.parametrize("seed", range(30))
def test_no_certificate_for_residual_free_stacks(seed: int) -> None:
    """Theorem R's consistency: a stack whose last block is residual-free of width 2 never gets one."""
    from absorb.plane.range import range_certificate

    assert range_certificate(_narrow(seed, residual_last=False).blocks) is None


def test_planted_stack_of_absorbable_blocks_stays_absorbable() -> None:
    from absorb.engine import Theorem, Verdict, decide

    rng = np.random.default_rng(11)
    blocks = []
    for i in range(2):
        U = rng.standard_normal((2, 2))
        blocks.append(Block(U, -np.linalg.inv(U), RELU, name=f"blocks.{i}"))  # D U = −I: each block absorbable
    dec = decide(Stack(tuple(blocks)))
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.COMPOSITION


# ------------------------------------------------------------- the first-layer rank argument --

def _stack(seed: int, widths: list[int], residual: bool = True, d: int = 2) -> Stack:
    rng = np.random.default_rng(seed)
    return Stack(tuple(Block(rng.standard_normal((n, d)) / math.sqrt(d), rng.standard_normal((d, n)) / math.sqrt(n), RELU,
                             skip=None if residual else np.zeros((d, d)), name=f"blocks.{i}") for i, n in enumerate(widths)))


@pytest.mark.parametrize("widths", [[2, 2], [3, 3], [3, 3, 3], [2, 5]])
def test_rank_verdict_is_certified_and_rechecked(widths: list[int]) -> None:
    from absorb.certificate import build_certificate
    from absorb.engine import Theorem, Verdict, decide
    from absorb.verify import checker

    st = _stack(1, widths)
    dec = decide(st)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.RANK
    assert all(bd.verdict is Verdict.NOT_ABSORBABLE for bd in dec.blocks)  # no block is absorbable on its own
    doc = build_certificate(dec, st, seed=0).to_json()
    rep = checker.verify_certificate(doc, st)
    assert rep.accepted and not rep.not_rechecked
    wide = _stack(1, [4, *widths[1:]])  # first width 2d: outside the theorem, and the checker refuses the record
    assert not checker.verify_certificate(doc, wide).accepted


def test_rank_needs_every_subset_matrix_nonsingular() -> None:
    from absorb.engine import Verdict, decide
    from absorb.plane.rank import singular_subset

    st = _stack(2, [3, 3])
    U = st.blocks[1].W_up.copy()
    D = st.blocks[1].W_down.copy()
    U[:2] = [[2.0, 0.0], [1.0, 1.0]]
    D[:, :2] = [[-0.5, 0.0], [0.5, -1.0]]  # −U_S⁻¹ exactly: block 1 is absorbable (S = {0, 1}), I + D_S U_S = 0
    planted = Stack((st.blocks[0], st.blocks[1].replace(W_up=U, W_down=D)))
    assert singular_subset(st.blocks) is None and singular_subset(planted.blocks)[0] == 1  # type: ignore[index]
    assert decide(planted).verdict is Verdict.UNKNOWN  # block 0 is not absorbable, block 1 is: open


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n1", [2, 3])
def test_residual_free_stacks_with_a_narrow_first_block_are_singular_somewhere(seed: int, n1: int) -> None:
    """Theorem K (i), checked by the exact sector matrices: a residual-free stack whose first
    block has width < 2d = 4 has a singular Jacobian on some open sector — with or without biases
    in later blocks it is the first block that forces it."""
    st = _stack(seed, [n1, 3], residual=False)
    G = stack_map([(b.W_up, b.W_down, b.skip) for b in st.blocks])
    dets = [J[0][0] * J[1][1] - J[0][1] * J[1][0] for J in G.mats]
    assert any(v == 0 for v in dets)


@pytest.mark.parametrize("seed", range(6))
def test_residual_stacks_decided_by_rank_have_nonsingular_sectors(seed: int) -> None:
    """The other half, by independent code: F's exact sector matrices are all nonsingular."""
    st = _stack(seed, [3, 3, 2])
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in st.blocks])
    assert all(J[0][0] * J[1][1] - J[0][1] * J[1][0] != 0 for J in F.mats)


# ------------------------------------------------------------------------ dimension count --

def test_dual_derivatives_match_a_difference_quotient() -> None:
    from absorb.plane.dimension import Dual

    rng = np.random.default_rng(4)
    U, D = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    k = (0, 1)  # differentiate with respect to W_up[0, 1]
    Ud = [[Dual(Q(float(U[i, j])), tuple(Q(int((i, j) == k)) for _ in range(1))) for j in range(2)] for i in range(2)]
    F = stack_map([(Ud, D, None), (U, D, None)])
    x = (Q(1), Q(2, 7))
    y = F(x)
    h = 1e-7
    Up = U.copy()
    Up[k] += h
    num = (_numeric([(Up, D, None), (U, D, None)])(np.array([[1.0, 2 / 7]])) - _numeric([(U, D, None), (U, D, None)])(np.array([[1.0, 2 / 7]]))) / h
    assert [float(v.der[0]) if isinstance(v, Dual) else 0.0 for v in y] == pytest.approx(num[0].tolist(), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("n", [2, 3])
def test_dimension_count_residual_6n_residual_free_at_most_6n_minus_4(n: int) -> None:
    from absorb.plane.dimension import dimension_report

    rep = dimension_report(n, seed=0)
    assert rep["rank_residual"] == 6 * n  # 8n weights less the 2n positive unit scalings
    assert rep["rank_residual_free"] <= 6 * n - 4  # also GL(2) between the layers
    if n == 2:  # (seed 1 reaches the bound)
        assert dimension_report(n, seed=1)["rank_residual_free"] == 6 * n - 4


# ------------------------------------------------------------------- the kink count (H) --

def test_kink_count_verdict_is_certified_and_rechecked() -> None:
    from absorb.certificate import build_certificate
    from absorb.engine import Theorem, Verdict, decide
    from absorb.verify import checker

    st = _stack(1001, [4, 4])
    dec = decide(st)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.KINK_COUNT
    doc = build_certificate(dec, st, seed=0).to_json()
    rep = checker.verify_certificate(doc, st)
    assert rep.accepted and not rep.not_rechecked
    assert decide(st, allow_biases=True).verdict is Verdict.UNKNOWN  # the argument is conic: bias-free G only
    rays = doc["stack"]["kink_certificate"]["rays"]
    for bad_rays in (rays[:3] + rays[4:], [rays[-1], *rays[:-1]][::-1], [[str(2 * Q(x)), str(2 * Q(y))] for x, y in rays]):
        bad = {**doc, "stack": {**doc["stack"], "kink_certificate": {"rays": bad_rays}}}
        assert not checker.verify_certificate(bad, st).accepted


def test_kink_count_needs_a_local_homeomorphism() -> None:
    from absorb.plane.kinks import kinks_certificate, one_sign_local_homeomorphism

    st = _stack(1000, [4, 4])  # a stack whose sector determinants have both signs
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in st.blocks])
    assert not one_sign_local_homeomorphism(F) and kinks_certificate(st.blocks) is None


@pytest.mark.parametrize("seed", range(8))
def test_stacks_of_antipodal_pair_blocks_have_at_most_4L_kinks(seed: int) -> None:
    """Theorem H's structure, by independent code: residual-free width-4 stacks built as
    compositions of near-linear maps L x + Σ c_i ReLU(p_i·x) (two antipodal unit pairs each) have
    at most 4L kink rays."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(2):
        P = rng.standard_normal((2, 2))
        A, C = rng.standard_normal((2, 2)), 0.3 * rng.standard_normal((2, 2))
        U = np.vstack([P, -P])  # units p_i and −p_i: a_i ReLU(p_i·x) + b_i ReLU(−p_i·x)
        D = np.hstack([A, C - A])  # Σ a_i ReLU(p_i·x) + b_i ReLU(−p_i·x) = A P x + Σ (a_i + b_i) ReLU(−p_i·x), a_i + b_i = c_i
        blocks.append((U, D, np.zeros((2, 2))))
    G = stack_map(blocks)
    assert len(G.kink_rays()) <= 8


def test_winding_number() -> None:
    zero = [[Q(0), Q(0)]], [[Q(0)], [Q(0)]]
    assert block_map(*zero).winding_number() == 1  # the identity
    assert block_map(*zero, [[Q(0), Q(-1)], [Q(1), Q(0)]]).winding_number() == 1  # a rotation
    assert block_map(*zero, [[Q(1), Q(0)], [Q(0), Q(-1)]]).winding_number() == -1  # a reflection
    assert block_map(*zero, [[Q(2), Q(1)], [Q(0), Q(0)]]).winding_number() is None  # vanishes on a ray
    # a map whose image stays in a half-plane: degree 0
    g = block_map(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]), np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]), np.zeros((2, 2)))
    assert g.winding_number() == 0
    # numeric cross-check on random stacks: the total turn of F over a fine sweep
    for seed in range(4):
        bl = _blocks(seed + 10, 4, 2)
        F = stack_map(bl)
        t = np.linspace(0, 2 * np.pi, 20001)
        Y = _numeric(bl)(np.stack([np.cos(t), np.sin(t)], axis=1))
        ang = np.unwrap(np.arctan2(Y[:, 1], Y[:, 0]))
        if F.winding_number() is not None and np.abs(Y).sum(axis=1).min() > 1e-6:
            assert F.winding_number() == round((ang[-1] - ang[0]) / (2 * np.pi))


def test_kink_count_depth2_with_folds_uses_the_winding_number() -> None:
    from absorb.certificate import build_certificate
    from absorb.engine import Theorem, Verdict, decide
    from absorb.plane.kinks import kink_bound, one_sign_local_homeomorphism
    from absorb.verify import checker

    st = _stack(1009, [4, 4])  # sector determinants of both signs, winding number 1, 16 kink rays
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in st.blocks])
    assert not one_sign_local_homeomorphism(F) and F.winding_number() == 1 and kink_bound(F, 2) == 12
    dec = decide(st)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.KINK_COUNT
    rep = checker.verify_certificate(build_certificate(dec, st, seed=0).to_json(), st)
    assert rep.accepted and not rep.not_rechecked
    assert kink_bound(F, 3) is None  # deeper stacks need the one-sign condition


def test_depth2_residual_free_onto_stacks_have_at_most_12_kinks() -> None:
    """Theorem H for L = 2 by independent code: residual-free stacks of two width-4 blocks, each two
    antipodal unit pairs (the form the proof forces), with nonsingular sectors and a nonzero
    winding number have at most 12 kink rays — also when the first block folds."""
    seen = folded = 0
    for seed in range(80):
        rng = np.random.default_rng(seed + 100)
        blocks = []
        for _ in range(2):
            P = rng.standard_normal((2, 2))
            blocks.append((np.vstack([P, -P]), rng.standard_normal((2, 4)), np.zeros((2, 2))))
        G = stack_map(blocks)
        dets = [J[0][0] * J[1][1] - J[0][1] * J[1][0] for J in G.mats]
        if all(v != 0 for v in dets) and G.winding_number() not in (None, 0):
            assert len(G.kink_rays()) <= 12
            seen += 1
            folded += not (all(v > 0 for v in dets) or all(v < 0 for v in dets))
    assert seen >= 3 and folded >= 1  # the premise was met, with and without folds


def test_checker_rejects_a_rank_claim_with_a_singular_block_matrix() -> None:
    import dataclasses

    from absorb.certificate import build_certificate
    from absorb.engine import Theorem, Verdict, decide
    from absorb.verify import checker

    st = _stack(2, [3, 3])
    U, D = st.blocks[1].W_up.copy(), st.blocks[1].W_down.copy()
    U[0], D[:, 0] = [2.0, 0.0], [-0.5, 0.5]  # I + w₀u₀ᵀ is singular (u₀·w₀ = −1), the block is not absorbable
    bad_stack = Stack((st.blocks[0], st.blocks[1].replace(W_up=U, W_down=D)))
    dec = decide(bad_stack)
    assert dec.verdict is Verdict.UNKNOWN
    forged = dataclasses.replace(dec, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.RANK)
    rep = checker.verify_certificate(build_certificate(forged, bad_stack, seed=0).to_json(), bad_stack)
    assert not rep.accepted and any("nonsingular" in f.claim for f in rep.failures)


def _stack_near_residual_free(tau: float, variant: str) -> Stack:
    """Red team 38b/05: F = (x₁, |x₁|/2 − τ'·|x₂|) with τ' = 0.9τ (rank: first width 2) or smaller (range: first width 4),
    within 0.9τ (0.34τ) of the residual-free G = (x₁, |x₁|/2) of the same widths; both arguments are exact only."""
    if variant == "rank":
        tp = 0.9 * tau
        U1, D1 = np.array([[0, 1.0], [0, 0]]), np.array([[0, 0], [2.0, 0]])
    else:
        V, c = np.array([[1.0, 2.0], [-2.0, 1.0], [1.0, -3.0]]), np.array([1.0, -0.5, 0.7])
        tp = 0.9 * tau / (1 + np.sum(np.abs(c) * np.abs(V).sum(1)))
        U1 = np.vstack([[0, 1.0], V])
        D1 = np.zeros((2, 4))
        D1[1, 0], D1[1, 1:] = 2.0, c
    relu = get_activation("relu")
    return Stack([Block(U1, D1, relu, skip=np.diag([1.0, -1])),
                  Block(np.array([[1.0, 0], [0, 0]]), np.array([[0, 0], [1.0, 0]]), relu, skip=np.array([[1.0, 0], [-0.5, -tp]]))])


@pytest.mark.parametrize("variant, tau", [("rank", 1e-9), ("rank", 1e-4), ("range", 1e-9), ("range", 1e-6)])
def test_a_stack_within_the_tolerance_of_a_residual_free_one_is_not_ruled_out(variant: str, tau: float) -> None:
    """The rank argument proves no G equals F, but a product nonsingular by ~τ is within τ of a singular one: withheld
    (a screen). The range argument now asks the range to span with a margin μ > τ, which rules out every G within τ
    (G's range in a half-plane v·G ≥ β gives v·F(x_j) ≥ −τ(|F(x_j)|∞ + |x_j|∞) for every j)."""
    from absorb.engine import decide

    dec = decide(_stack_near_residual_free(tau, variant), tol=tau)
    assert dec.verdict.value != "not_absorbable", dec.reason
    far = decide(_stack_near_residual_free(1e3 * tau, variant), tol=tau)  # (τ' = 900τ: the margin holds)
    assert far.verdict.value == "not_absorbable" and far.theorem.value == variant, far.reason
    if variant == "range":
        assert Q(far.extra["range_certificate"]["margin"]) > Q(tau) and "μ =" in far.reason


def test_the_range_margin_is_exact_and_sound_on_the_four_axes() -> None:
    """μ of the four points ±e₁, ±e₂ mapped to themselves: −v·e_j/2 is largest at 1/4 for v = ±(1/2, 1/2)… over the ℓ1 circle
    the least of max_j −v·F̂_j is 1/4 (at v = ±(1/2, ±1/2))."""
    from fractions import Fraction

    from absorb.plane.range import range_margin

    one, zero = Fraction(1), Fraction(0)
    pts = [(one, zero), (-one, zero), (zero, one), (zero, -one)]
    assert range_margin(pts, pts) == Fraction(1, 4)


def test_the_checker_re_derives_the_range_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """An honest range certificate (margin > τ) is accepted; a margin overstated by the producer is rejected, and one left
    out where the range spans by less than τ leaves the certificate not fully checked."""
    from absorb.certificate import build_certificate
    from absorb.engine import decide
    from absorb.plane import range as range_module
    from absorb.verify.checker import verify_certificate

    far = _stack_near_residual_free(1e-6, "range")
    assert verify_certificate(build_certificate(decide(far, tol=1e-9), far, seed=0).to_json(), far).accepted
    near = _stack_near_residual_free(1e-9, "range")
    monkeypatch.setattr(range_module, "range_margin", lambda *a: Q(1))  # (a producer that overstates μ)
    old = decide(near, tol=1e-9)
    assert old.verdict.value == "not_absorbable"
    doc = build_certificate(old, near, seed=0).to_json()
    rep = verify_certificate(doc, near)
    assert not rep.accepted and any("margin" in f.claim for f in rep.failures), rep.findings
    cert = next(v for k, v in _walk(doc) if k == "range_certificate")
    del cert["margin"]
    rep = verify_certificate(doc, near)
    assert any("by more than τ" in f.claim for f in rep.not_rechecked), rep.findings


def _walk(node: object):  # type: ignore[no-untyped-def]
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_a_product_of_blocks_each_barely_nonsingular_is_screened() -> None:
    """Red team 39a/05: two blocks each nonsingular by s = 20τ (past a per-block screen at 4√2·τ) make F's Jacobian
    nonsingular by s² = 400τ²: F = (h(x₁), s²x₂) is within 0.04τ of the residual-free G = (h(x₁), 0) at τ = 10⁻⁴."""
    from absorb.engine import decide

    tau, relu = 1e-4, get_activation("relu")
    U = np.array([[1.0, 0.0], [-1.0, 0.0]])
    s = 20 * tau
    F = Stack([Block(U, np.array([[0.5, 0.3], [0, 0]]), relu, skip=np.diag([1.0, s])),
               Block(U, np.array([[0.4, 0.2], [0, 0]]), relu, skip=np.diag([1.0, s]))])
    assert decide(F, tol=tau).theorem.value != "rank"
    assert decide(F, tol=1e-12).theorem.value == "rank"


def test_kink_count_withheld_for_a_thin_bump_a_stack_within_tau_lacks() -> None:
    """Red team 41a/06: block 1 carries a thin bump (two nearly collinear units with opposite jumps, ~8τ at the block's
    level) whose direction every sector Jacobian of block 2 nearly kills; F has 12 kink rays > 8, yet a residual-free
    stack of the same widths without the bump is within 0.1τ. The thin sector's kinks merge within τ: not not_absorbable."""
    from absorb.engine.decide import decide

    tol = 1e-4
    rng = np.random.default_rng(0)
    w = np.array([1.0, 0.3]) / np.linalg.norm([1.0, 0.3])
    wp = np.array([-w[1], w[0]])
    A1, P1, C1 = np.eye(2) + 0.1 * rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), 0.3 * rng.normal(size=(2, 2))
    q = rng.normal(size=2)
    q /= np.abs(q).sum()
    U1 = np.vstack([P1, q, q + 70 * tol * np.array([0.6, -0.4])])
    W1 = np.column_stack([C1, 0.3 * w, -0.3 * w])
    A2 = np.outer([1.0, 0.2], wp) + 0.01 * np.outer([0.1, 1.0], w)
    P2 = np.vstack([wp, rng.normal(size=2)])
    U2 = np.vstack([P2, -P2])
    W2 = np.column_stack([[0.3, -0.2], [0.2, 0.1], [-0.25, 0.15], [0.4, 0.3]])
    W2[:, 1] *= 0.002 / np.abs(W2[:, 1]).max()
    W2[:, 3] *= 0.002 / np.abs(W2[:, 3]).max()
    relu = get_activation("relu")
    F = Stack((Block(W_up=U1, W_down=W1, skip=A1, activation=relu), Block(W_up=U2, W_down=W2, skip=A2, activation=relu)))
    B1, B2 = -A1 @ np.linalg.inv(P1), -A2 @ np.linalg.inv(P2)
    G = Stack((Block(W_up=np.vstack([P1, -P1]), W_down=np.column_stack([C1 - B1, B1]), skip=np.zeros((2, 2)), activation=relu),
               Block(W_up=U2, W_down=W2 + np.column_stack([-B2, B2]), skip=np.zeros((2, 2)), activation=relu)))
    X = rng.standard_normal((50000, 2)) * np.exp(rng.uniform(-5, 8, size=(50000, 1)))
    err = np.abs(F(X) - G(X)).max(axis=1) / (np.abs(F(X)).max(axis=1) + np.abs(X).max(axis=1))
    assert float(err.max()) <= tol
    assert decide(F, tol=tol).verdict.value != "not_absorbable"
