"""What `absorbable` guarantees, proved rather than sampled (user guide, "Witness check"):

    |f(x) − g(x)|∞ ≤ ε·(|f(x)|∞ + |x|∞ + |f(0)|∞) for every x, ε ≤ tol + 1000·ε_mach·√(n+1).

Regressions: a flip witness whose moved bias rounds by more than f(0) (huge biases: float64
evaluation cannot see it), the tolerance read as tol (not 10·tol), and thin cones (M = 1e9·I,
a relative Frobenius residual below tol, yet an error of 1/2 against |f(x)| + |x| at the
cone's axis): `unknown`, not `absorbable`."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import absorb.engine.witness as W
import absorb.rigorous as rig
from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.engine.witness import check_flip_witness, eval_threshold, flip_block, rounding_allowance
from absorb.rigorous import flip_bias_error_upper, flip_inf_upper, relative_residual
from absorb.verify import checker
from absorb.verify._at_zero import _f0_lower
from absorb.verify._weights import _evaluate, _flip_block, _moved_bias_error

TOL = 1e-9


def _huge_bias_block(act: str, d: int, e: int) -> Block:
    """A planted flip (D_S U_S = −M up to 2⁻⁵⁴, S = every unit) with b_up = 2^e(1 + 2⁻⁵²)
    and b_down = −fl(W_down σ(b_up)): f(0) is the rounding of that product, which the
    moved bias c·W_down b_up rounds away (fl(x + b) swallows x, so sampling sees nothing)."""
    b = 2.0**e * (1 + 2.0**-52)
    gated = act == "glu"
    kw = dict(W_gate=np.eye(d), b_gate=np.zeros(d)) if gated else {}
    blk = Block(np.eye(d) / 3, -3 * np.eye(d), get_activation("sigmoid" if gated else act), b_up=np.full(d, b), skip=np.eye(d), **kw)
    return blk.replace(b_down=-blk(np.zeros((1, d)))[0] + 0.0)


def _f0_exact_relu(blk: Block) -> list[Fraction]:
    bu = [Fraction(float(v)) for v in blk.b_up]
    bd = [Fraction(float(v)) for v in blk.b_down]
    return [bd[r] + sum((Fraction(float(w)) * max(v, Fraction(0)) for w, v in zip(blk.W_down[r], bu)), Fraction(0)) for r in range(blk.d)]


CASES = [(act, d, e) for act in ("relu", "gelu", "silu", "glu") for d, e in ((1, 130), (2, 50), (3, 190), (4, 130))]


def _float_sum_witness(blk: Block, S: tuple[int, ...]) -> Block:
    """The flip witness as it was built before: b'_down = b_down + W_down[:,S] b_S summed in
    float64, which keeps the sum's rounding (2^78 at b_up = 2^130) while f(0) is ~2^77."""
    wb = flip_block(blk, S, Fraction(1))
    return wb.replace(b_down=blk.b_down + blk.W_down[:, list(S)] @ blk.b_up[list(S)])


@pytest.mark.parametrize("act,d,e", CASES)
def test_huge_bias_flip_float_sum_is_refused_and_the_once_rounded_one_is_right(act: str, d: int, e: int) -> None:
    """The moved bias rounded in float64 drops f(0) entirely (the issue's wrong witness, which the
    sampled measure alone cannot see); rounded once from its exact value it is within half an ulp
    of the exact one (here fl(3b) − 3b is itself a float), and both sides prove the witness."""
    blk = _huge_bias_block(act, d, e)
    S = tuple(range(d))
    old = _float_sum_witness(blk, S)
    if e >= 100:  # the sampled measure alone sees no error at all (fl(x + b_up) = b_up)
        err, _m = W.evaluation_error(blk, old, d, seed=0)
        assert err <= eval_threshold(TOL, d)
    miss = flip_bias_error_upper(blk.W_down, blk.b_up, blk.b_down, old.b_down, S, Fraction(1))
    assert miss > 0
    if act == "relu":  # f(0) exactly: the whole of it is what the float sum drops
        f0 = _f0_exact_relu(blk)
        assert max(abs(float(v)) for v in f0) <= 1.01 * miss
    wb = flip_block(blk, S, Fraction(1))
    exact = [Fraction(float(blk.b_down[r])) + sum((Fraction(float(blk.W_down[r, i])) * Fraction(float(blk.b_up[i])) for i in S), Fraction(0))
             for r in range(d)]
    assert all(float(x) == v for x, v in zip(exact, wb.b_down))  # rounded once
    w, ok = check_flip_witness(blk, S, Fraction(1), tol=TOL, seed=0)
    assert ok, w.description
    dec = decide(blk, tol=TOL, allow_biases=True)
    assert dec.verdict.value == "absorbable", dec.reason
    cert = build_certificate(dec, blk, seed=0).to_json()
    assert checker.verify_certificate(json.loads(json.dumps(cert)), blk).accepted


@pytest.mark.parametrize("act,d,e", [c for c in CASES if c[2] >= 100 and c[1] <= 3])
def test_checker_rejects_the_float_sum_witness(act: str, d: int, e: int) -> None:
    """The checker's exact account of the moved bias: the float-sum witness misses f(0), which
    float64 cannot even bound away from 0, while the checker's own rebuild (rounded once, equal to the producer's
    arrays) passes its evaluation."""
    blk = _huge_bias_block(act, d, e)
    S = tuple(range(d))
    old = _float_sum_witness(blk, S)
    assert _moved_bias_error(blk, old, S, Fraction(1), Fraction(0)) > 0 == _f0_lower(blk)  # no relative bound: refused
    mine = _flip_block(blk, S, Fraction(1))
    assert np.array_equal(mine.b_down, flip_block(blk, S, Fraction(1)).b_down)
    assert _moved_bias_error(blk, mine, S, Fraction(1), Fraction(0)) == 0  # fl(3b) − 3b is a float: exact
    ok, worst, _m = _evaluate(blk, mine, [blk], [mine], d, seed=0, allowed_lin=TOL * float(np.linalg.norm(blk.M)))
    assert ok, worst


def _planted_biased_gelu() -> tuple[Block, tuple[int, ...]]:
    """A biased GELU block (d = 3, n = 7, f(0) ≠ 0) whose skip the flip of S = (0, 2, 3, 5) absorbs."""
    rng = np.random.default_rng(4)
    d, n = 3, 7
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = (0, 2, 3, 5)
    blk = Block(U, D, get_activation("gelu"), skip=-(D[:, list(S)] @ U[list(S)]), b_up=np.abs(rng.standard_normal(n)) + 0.5,
                b_down=rng.standard_normal(d))
    return blk, S


def test_right_biased_flip_still_passes_both_sides() -> None:
    """Moderate biases with f(0) ≠ 0: the moved bias's rounding is tiny against f(0)."""
    blk, S = _planted_biased_gelu()
    d, n = blk.d, blk.n
    w, ok = check_flip_witness(blk, S, Fraction(1), tol=TOL, seed=0)
    assert ok and w.eval_error <= eval_threshold(TOL, n), (w.eval_error, w.description)
    wb = _flip_block(blk, S, 1.0)
    good, _worst, _m = _evaluate(blk, wb, [blk], [wb], d, seed=1, allowed_lin=w.residual * float(np.linalg.norm(blk.M)) + 1e-12)
    assert good


def test_tolerance_is_the_stated_one() -> None:
    """--tol 0.999 on generic ReLU blocks: absorbable only with a proved ε ≤ tol + allowance
    (before: accepted at 10·tol, with sampled errors of 1.4–1.6), and the guarantee holds."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        d, n = 4, 12
        blk = Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation("relu"))
        dec = decide(blk, tol=0.999)
        if dec.verdict.value != "absorbable":
            continue
        w = dec.witness
        assert w.eval_error <= 0.999 + rounding_allowance(n), w.eval_error
        _assert_guarantee(blk, w.block, w.eval_error)
    assert eval_threshold(0.5, 3) < 0.5 + 1e-12  # not 10·tol


def _thin_cone(eps: float = 1e-3) -> Block:
    """M = 1e9·I; the two units are active together only in a wedge of half-angle ~eps around
    e₁, where f(x) = R x with ‖R‖_F = 7e-10·‖M‖_F: there g(x) = 0 and the error relative to
    |f(x)| + |x| is 1/2, relative to ‖M‖_F‖x‖ it is the residual."""
    U = np.array([[eps, 1.0], [eps, -1.0]])
    M = 1e9 * np.eye(2)
    R = np.array([[1.0, 0.0], [0.0, 0.0]])
    return Block(U, (-M + R) @ np.linalg.inv(U), get_activation("relu"), skip=M)


def _ev_exact(b: Block, x: list[Fraction]) -> list[Fraction]:
    """A bias-free ReLU block at x in rationals."""
    h = [max(sum((Fraction(float(u)) * xi for u, xi in zip(b.W_up[i], x)), Fraction(0)), Fraction(0)) for i in range(b.n)]
    lin = [sum((Fraction(float(m)) * xi for m, xi in zip(b.M[r], x)), Fraction(0)) for r in range(b.d)]
    return [lin[r] + sum((Fraction(float(wd)) * hi for wd, hi in zip(b.W_down[r], h)), Fraction(0)) for r in range(b.d)]


def _assert_guarantee(f: Block, g: Block, eps: float, n: int = 3000) -> None:
    """|f(x) − g(x)|∞ ≤ ε(|f(x)|∞ + |x|∞ + |f(0)|∞) on random inputs at several scales (float64
    evaluation, so a rounding margin of 1e-12 of the scale)."""
    rng = np.random.default_rng(11)
    X = np.vstack([rng.standard_normal((n, f.d)) * s for s in (1e-3, 1.0, 1e3)])
    f0 = float(np.abs(f(np.zeros((1, f.d)))).max())
    fx = f(X)
    gap = np.abs(fx - g(X)).max(axis=1)
    scale = np.abs(fx).max(axis=1) + np.abs(X).max(axis=1) + f0
    assert np.all(gap <= (eps + 1e-12) * scale), float((gap / scale).max())


def test_thin_cone_is_unknown() -> None:
    """The relative Frobenius residual (7e-10) is below tol, but at the cone's axis the error
    against |f(x)|∞ + |x|∞ is 1/2: no absorbable verdict; the proved ε (ρ∞ = 1) says why."""
    blk = _thin_cone()
    S = (0, 1)
    assert relative_residual(blk.W_up, blk.W_down, -blk.M, S) <= TOL
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "unknown", dec.reason
    w, ok = check_flip_witness(blk, S, Fraction(1), tol=TOL, seed=0)
    assert not ok
    assert w.eval_error >= 0.99, w.eval_error  # ρ∞ = ‖R‖_∞ = 1 exactly
    # at the cone's axis, exactly: f(e₁) − g(e₁) = R e₁ (both units active), in rationals
    x = [Fraction(1), Fraction(0)]
    fx, gx = _ev_exact(blk, x), _ev_exact(w.block, x)
    gap = max(abs(float(a - b)) for a, b in zip(fx, gx))
    size = max(abs(float(a)) for a in fx) + 1.0
    assert gap >= 0.4 * size  # large against |f(x)|∞ + |x|∞ ...
    assert gap <= w.eval_error * size  # ... and within the (now large) proved ε


@pytest.mark.parametrize("eps", [1e-3, 1e-4])
def test_thin_cone_guarantee_holds_at_the_axis_and_at_random_inputs(eps: float) -> None:
    """Whatever ε the flip witness gets, the guarantee holds where it is hardest (the axis)
    and on random inputs."""
    blk = _thin_cone(eps)
    w, _ok = check_flip_witness(blk, (0, 1), Fraction(1), tol=0.9, seed=0)
    for x in ([Fraction(1), Fraction(0)], [Fraction(1), Fraction(eps) / 2], [Fraction(-1), Fraction(0)]):
        fx, gx = _ev_exact(blk, x), _ev_exact(w.block, x)
        gap = max(abs(float(a - b)) for a, b in zip(fx, gx))
        assert gap <= w.eval_error * (max(abs(float(a)) for a in fx) + max(abs(float(v)) for v in x))
    _assert_guarantee(blk, w.block, w.eval_error)


def test_checker_rejects_a_thin_cone_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The certificate the old scale wrote (absorbable: simulated by a bound of 0) is rejected
    by absorb verify, which bounds ‖M + c·D_S U_S‖_∞ by its own arithmetic."""
    blk = _thin_cone()
    monkeypatch.setattr(W, "flip_bound", lambda *a, **k: (0.0, 0.0, "", (0.0, 0.0)))
    monkeypatch.setattr(W, "evaluation_error", lambda *a, **k: (0.0, 1))
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason
    cert = build_certificate(dec, blk, seed=0).to_json()
    monkeypatch.undo()
    rep = checker.verify_certificate(json.loads(json.dumps(cert)), blk)
    assert not rep.accepted
    assert "‖M + c·W_down[:,S] W_up[S,:]‖_∞" in json.dumps(rep.to_json() if hasattr(rep, "to_json") else str(rep), ensure_ascii=False)


def _planted(d: int, n: int, k: int, seed: int, noise: float = 1e-12, dtype: type = np.float64) -> tuple[Block, tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = tuple(range(k))
    M = -(D[:, list(S)] @ U[list(S)]) + noise * rng.standard_normal((d, d))
    return Block(U.astype(dtype), D.astype(dtype), get_activation("relu"), skip=M), S


def _exact_inf(blk: Block, S: tuple[int, ...]) -> Fraction:
    R = [[Fraction(float(blk.M[r, k])) + sum((Fraction(float(blk.W_down[r, i])) * Fraction(float(blk.W_up[i, k])) for i in S), Fraction(0))
          for k in range(blk.d)] for r in range(blk.d)]
    return max(sum(abs(v) for v in row) for row in R)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rho_inf_routes_bound_the_exact_norm(dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """ρ∞ exact (integers), from the kept row sums of the residual's own product, and the
    √d·ρ·‖M‖_F fallback: each ≥ the exact ‖M + D_S U_S‖_∞; the row-sum route is tight."""
    blk, S = _planted(12, 20, 9, 3, dtype=dtype)
    want = _exact_inf(blk, S)
    rel = relative_residual(blk.W_up, blk.W_down, -blk.M, S)
    exact, how = flip_inf_upper(blk.W_up, blk.W_down, blk.M, Fraction(1), S, rel)
    assert how == "exact" and Fraction(exact) >= want and exact <= float(want) * (1 + 1e-15)
    monkeypatch.setattr(rig, "EXACT_FLIP_WORK", 0)
    T = -blk.M
    rel = relative_residual(blk.W_up, blk.W_down, T, S)  # keeps the row sums (while T lives)
    rows, how = flip_inf_upper(blk.W_up, blk.W_down, blk.M, Fraction(1), S, rel)
    assert how == "row sums" and Fraction(rows) >= want and rows <= float(want) * 1.01 + 1e-12
    relative_residual(blk.W_up, blk.W_down, T, S[:-1])  # another S: the kept sums are not these
    fb, how = flip_inf_upper(blk.W_up, blk.W_down, blk.M, Fraction(1), S, rel)
    assert how == "√d·ρ·‖M‖_F" and Fraction(fb) >= want


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("units", [1, 4, 9])
def test_rho_inf_from_the_search_residual_keeps_the_size_rows(dtype: type, units: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's residual check (blocks of ``units`` terms) keeps |D_S||U_S|·1 with the row
    sums: ρ∞ read from them is the ρ∞ that flip_inf_upper computes itself from the weights
    (the same float sums in another order), and bounds the exact ‖M + D_S U_S‖_∞."""
    from absorb.search._scale_bounds import check_residual

    blk, S = _planted(12, 20, 9, 3, dtype=dtype)
    want = _exact_inf(blk, S)
    monkeypatch.setattr(rig, "EXACT_FLIP_WORK", 0)
    T = -blk.M
    rel = check_residual(blk.W_up, blk.W_down, T, S, block_bytes=8 * blk.d * units).relative
    kept = rig._ROWS["last"]
    idx = list(S)
    size = np.abs(blk.W_down[:, idx].astype(np.float64)) @ np.abs(blk.W_up[idx].astype(np.float64)).sum(axis=1)
    assert kept[4] == pytest.approx(size, rel=1e-12)
    got, how = flip_inf_upper(blk.W_up, blk.W_down, blk.M, Fraction(1), S, rel)
    assert how == "row sums" and Fraction(got) >= want
    rig.remember_rows(blk.W_up, blk.W_down, T, S, kept[3])  # the same row sums, no size rows
    own, how = flip_inf_upper(blk.W_up, blk.W_down, blk.M, Fraction(1), S, rel)
    assert how == "row sums" and got == pytest.approx(own, rel=1e-12)


@pytest.mark.parametrize("route", ["exact", "row sums", "√d·ρ·‖M‖_F"])
def test_rho_inf_identity_skip_without_its_matrix(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """M = None (the identity, never formed on the row-sum route) gives the ρ∞ of M = I on
    every route."""
    rng = np.random.default_rng(8)
    d, n, k = 6, 15, 8
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = tuple(range(k))
    D[:, :k] = -np.linalg.pinv(U[:k])
    if route != "exact":
        monkeypatch.setattr(rig, "EXACT_FLIP_WORK", 0)
    got = []
    for M in (np.eye(d), None):
        rel = relative_residual(U, D, None, S if route == "row sums" else S[:-1])  # (another S: nothing kept for S)
        got.append(flip_inf_upper(U, D, M, Fraction(1), S, rel))
    assert got[0][1] == got[1][1] == route and got[0][0] == got[1][0]


def test_flip_witness_is_sampled_only_when_its_bound_is_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampled check runs only when the proved bound accepts (at full size for a small
    block, 16 random inputs per scale and one point on each of at most 96 hyperplanes for a large one); a witness
    whose bound fails is not sampled: its error is the bound, on 0 inputs."""
    blk, S = _planted(8, 100, 80, 5)
    w, ok = check_flip_witness(blk, S, Fraction(1), tol=1e-9, seed=0)
    assert ok and w.n_inputs > 144 + 64 and w.eval_error <= eval_threshold(1e-9, blk.n)
    monkeypatch.setattr(W, "_LARGE_BLOCK", 1)
    small, ok = check_flip_witness(blk, S, Fraction(1), tol=1e-9, seed=0)
    assert ok and 48 < small.n_inputs <= 48 + 96 + 9 and small.eval_error <= eval_threshold(1e-9, blk.n)
    failed, ok = check_flip_witness(blk, S, Fraction(1), tol=1e-15, seed=0)
    assert not ok and failed.n_inputs == 0 and failed.bound is not None and failed.eval_error == failed.bound[0] > 1e-15


def test_checker_rho_inf_bounds_the_exact_norm(monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.verify import _numerics
    from absorb.verify._weights import _residual

    blk, S = _planted(10, 16, 7, 4, noise=1e-9)
    want = _exact_inf(blk, S)
    for work in (_numerics.EXACT_WORK, 0):  # exact rationals, then float64 with its own account
        monkeypatch.setattr(_numerics, "EXACT_WORK", work)
        *_rest, rho_inf = _residual(blk.W_up, blk.W_down, blk.M, Fraction(1), S)
        assert Fraction(rho_inf) >= want and rho_inf <= float(want) * 1.01 + 1e-12


def test_planted_biased_witness_guarantee() -> None:
    """An absorbable biased flip: the guarantee on random inputs, with |f(0)|∞ in the scale."""
    blk, _S = _planted_biased_gelu()
    dec = decide(blk, tol=TOL, allow_biases=True)
    assert dec.verdict.value == "absorbable", dec.reason
    assert "|f(x)|∞ + |x|∞ + |f(0)|∞" in dec.witness.description
    _assert_guarantee(blk, dec.witness.block, dec.witness.eval_error)


# ---- non-flip witnesses: the rounding of an exact construction, and the exact PL sup -----

def _cone4(eps: float, mode: str) -> Block:
    """The thin cone in d = 4 (four units active together only near e₁, M = 1e9·I) with a
    fifth unit dead or split in two halves: the canonical-form route builds the witness."""
    V = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=float)
    U4 = np.hstack([np.full((4, 1), eps), V])
    M = 1e9 * np.eye(4)
    R = np.zeros((4, 4))
    R[0, 0] = 1.0
    D4 = (-M + R) @ np.linalg.inv(U4)
    if mode == "dead":
        U, D = np.vstack([U4, np.zeros((1, 4))]), np.hstack([D4, np.zeros((4, 1))])
    else:
        U, D = np.vstack([U4, U4[:1]]), np.hstack([D4, D4[:, :1]])
        D[:, 0] *= 0.5
        D[:, 4] *= 0.5
    return Block(U, D, get_activation("relu"), skip=M)


@pytest.mark.parametrize("mode", ["dead", "split"])
def test_canonical_form_thin_cone_is_not_absorbable(mode: str) -> None:
    """The d = 4 thin cone at width 6: the constructed block's true error is 8.6e-6 against
    |f(x)|∞ + |x|∞ (the threshold is ~1e-8), so no absorbable verdict; the proved ε (K√d from
    the rounding of the exact weights, no division by ‖M‖_F) is at least the exact sup."""
    from absorb.engine._kink_points import pl_sup_error
    from absorb.engine.width import decide_width

    blk = _cone4(1e-3, mode)
    wd = decide_width(blk, 6, tol=TOL, seed=0)
    assert wd.verdict.value != "absorbable", wd.reason
    assert wd.verdict.value == "unknown", wd.reason
    # the proved bounds of the canonical-form routes cover the exact sup of |f − g|∞ over |x|∞ = 1
    g = _cone4(1e-3, "dead")
    g = g.replace(W_down=g.W_down * (1 + 1e-6), skip=np.zeros((4, 4)))
    g = g.replace(W_down=np.hstack([g.W_down[:, :4], np.zeros((4, 1))]))
    V = pl_sup_error(blk, g)
    assert V is not None and W.pl_bound(blk, g) >= float(V)


def test_pl_sup_error_is_exact_on_a_linear_difference() -> None:
    """A flip: f − g = R x exactly (R = M + D_S U_S), so max over ‖x‖_∞ = 1 of ‖f − g‖_∞ is
    R's largest absolute row sum, attained at a sign vector."""
    from absorb.engine._kink_points import pl_sup_error

    rng = np.random.default_rng(2)
    d, n = 3, 5
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = (0, 1, 3)
    M = -(D[:, list(S)] @ U[list(S)]) + 1e-6 * rng.standard_normal((d, d))
    blk = Block(U, D, get_activation("relu"), skip=M)
    g = flip_block(blk, S, Fraction(1))
    Rq = [[Fraction(float(M[r, k])) + sum((Fraction(float(D[r, i])) * Fraction(float(U[i, k])) for i in S), Fraction(0))
           for k in range(d)] for r in range(d)]
    want = max(sum(abs(v) for v in row) for row in Rq)
    assert pl_sup_error(blk, g) == want
    # and a witness wrong by 1e-3 in one W_down entry is measured as such
    Dg = g.W_down.copy()
    Dg[0, 2] += 1e-3
    assert float(pl_sup_error(blk, g.replace(W_down=Dg))) >= 1e-3 * float(np.abs(U[2]).sum()) * 0.99 - float(want)


def test_padding_keeps_the_proved_bound() -> None:
    from absorb.engine.width import pad_witness

    blk, _S = _planted(3, 4, 2, 6)
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason
    w2, ok = pad_witness(dec.witness, 5, tol=TOL)
    assert ok and w2.eval_error >= dec.witness.eval_error


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
def test_unit_difference_bound_covers_the_true_error(act: str) -> None:
    """For a flip, f − g = R x exactly: the unit-by-unit bound ε (|f − g|∞ ≤ ε|x|∞) is at least
    ‖R‖_∞ (every flipped unit's σ-part cancels against its mirror, the rest is the linear
    part), and a witness with one W_down entry off by 1e-3 gets a bound that shows it."""
    from absorb.engine.witness import unit_difference_bound

    rng = np.random.default_rng(5)
    d, n = 3, 6
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = (1, 2, 4)
    M = -(D[:, list(S)] @ U[list(S)]) + 1e-7 * rng.standard_normal((d, d))
    blk = Block(U, D, get_activation(act), skip=M)
    g = flip_block(blk, S, Fraction(1))
    R = M + D[:, list(S)] @ U[list(S)]
    b = unit_difference_bound(blk, g)
    assert np.abs(R).sum(axis=1).max() * 0.999 <= b <= 10 * math.sqrt(d) * np.linalg.norm(R)
    X = rng.standard_normal((500, d))
    Dg = g.W_down.copy()
    Dg[0, 0] += 1e-3
    bad = g.replace(W_down=Dg)
    gap = np.abs(blk(X) - bad(X)).max(axis=1) / np.abs(X).max(axis=1)
    assert unit_difference_bound(blk, bad) >= gap.max() > 1e-6


def test_moved_bias_rounding_where_f0_is_zero_is_refused_by_both() -> None:
    """Biases all negative (ReLU: f(0) = 0): the moved bias rounds, g(0) ≠ 0 = f(0), which no
    relative tolerance covers; producer and checker both refuse, each by its own code."""
    rng = np.random.default_rng(0)
    d, n = 2, 3
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = (0, 1, 2)
    blk = Block(U, D, get_activation("relu"), skip=-(D @ U), b_up=-np.array([1.2459109, 0.7322673, 0.5442589]))
    wb = flip_block(blk, S, Fraction(1))
    assert flip_bias_error_upper(blk.W_down, blk.b_up, blk.b_down, wb.b_down, S, Fraction(1)) > 0
    _w, ok = check_flip_witness(blk, S, Fraction(1), tol=TOL, seed=0)
    assert not ok
    cb = _flip_block(blk, S, 1.0)
    good, _worst, _m = _evaluate(blk, cb, [blk], [cb], d, seed=0, allowed_lin=TOL * float(np.linalg.norm(blk.M)))
    assert not good


def test_f0_lower_bounds_are_infinity_norm_lower_bounds() -> None:
    """Producer's and checker's |f(0)|∞ lower bounds (each its own code): below the exact
    value, and within a rounding of it."""
    from absorb.verify._at_zero import _f0_lower

    for seed in range(4):
        rng = np.random.default_rng(seed)
        d, n = 3, 6
        blk = Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation("relu"),
                    b_up=rng.standard_normal(n), b_down=rng.standard_normal(d))
        want = max(abs(v) for v in _f0_exact_relu(blk))
        for lo in (W.f0_lower(blk), _f0_lower(blk)):
            assert Fraction(lo) <= want and lo >= float(want) * (1 - 1e-10)  # (σ trusted to 2⁻⁴⁰)
