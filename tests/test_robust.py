"""The robust skeleton bound (absorb/engine/_robust.py, the checker's absorb/verify/_robust.py): where a flip route's
proved distance clears it, not_absorbable covers every residual-free block within the tolerance, not only an equal one."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import betainc

from absorb import Block, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.engine._robust import _frac, robust_bar
from absorb.io import load
from absorb.verify._robust import _band, robust_distance_bar
from absorb.verify.checker import verify_certificate

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 16, 64, 1000])
def test_the_band_bound_is_above_the_exact_measure(m: int) -> None:
    """{p ∈ S^{m-1} : |q·p| ≤ w} has measure I_{w²}(1/2, (m−1)/2) (the regularised incomplete beta function); both
    sides' bounds min(1, a_m·w) are at least that, on a grid of w."""
    w = np.concatenate([np.geomspace(1e-12, 1, 400), np.linspace(0, 1, 401)])
    exact = betainc(0.5, (m - 1) / 2, w * w)
    assert np.all(_frac(w, m) >= exact * (1 - 1e-12))
    assert all(_band(float(x), m) >= e * (1 - 1e-12) for x, e in zip(w, exact))


def test_on_the_circle_a_band_holds_both_points_or_none() -> None:
    assert _frac(np.array([0.5, 0.999, 1.0, 2.0]), 1).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert [_band(x, 1) for x in (0.5, 0.999, 1.0, 2.0)] == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("seed", range(12))
def test_the_two_sides_agree_and_the_checkers_bar_is_not_above_the_producers(seed: int) -> None:
    """Written apart (Gram matrix vs Lagrange minors), the two bars agree to 10⁻⁶ and the checker's is not larger (the
    producer's angles are the more cautious), so an honest record is at least the checker's bar."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 7)), int(rng.integers(2, 12))
    U, D, M = rng.standard_normal((n, d)), rng.standard_normal((d, n)), np.eye(d) + 0.3 * rng.standard_normal((d, d))
    for tol in (1e-12, 1e-9, 1e-6):
        p, (c, why) = robust_bar(U, D, M, 1.0, 0.0, tol), robust_distance_bar(U, D, M, 1.0, 0.0, tol)
        assert isinstance(p, float) == (c is not None), (p, why)
        if c is not None:
            assert c <= p * (1 + 1e-7) and p <= c * (1 + 1e-6)


def test_a_fitted_near_block_is_never_ruled_out() -> None:
    """d = 2, n = 5 ReLU: a residual-free g fitted by optimisation is within 0.0135 of f, while every S is at distance
    ≥ 0.778. The robust bar must not fall below that distance at any τ ≥ 0.0135 (it would prove g impossible); at
    τ = 10⁻⁹ it is far below it, and the verdict says so."""
    U = np.array([[0.27279133916445375, -0.9821881249409777], [-1.107373047165193, 0.19958453284708083],
                  [-0.46674961687980204, 0.23550561173022522], [0.7595195224783792, -1.6487873663509485],
                  [0.2543881165176173, 1.2246469675357323]])
    D = np.array([[-0.4615976122529125, -1.2579371666251085, 1.1670676479387698, 0.3932092479353685, 1.389916554264939],
                  [-0.5355844371254272, -2.2989649165612787, -0.17067604914869303, -0.691679472958286, 1.2028750741372745]])
    for tol in (0.0135, 0.02, 0.1):
        p, (c, _) = robust_bar(U, D, np.eye(2), 1.0, 0.0, tol), robust_distance_bar(U, D, np.eye(2), 1.0, 0.0, tol)
        assert (isinstance(p, str) or p >= 0.778) and (c is None or c >= 0.778)
    dec = decide(Block(U, D, get_activation("relu")), tol=1e-9).blocks[0]
    assert dec.verdict.value == "not_absorbable" and dec.robust_bar is not None and dec.robust_bar < 1e-4
    assert "every residual-free block within the tolerance" in dec.reason


def test_the_robust_bar_grows_with_the_tolerance_and_never_undercuts_the_plain_bar() -> None:
    """Δ ≥ ε = τ'(1 + K), so the bar is at least √d·τ(1 + K)/‖M‖_F — the distance a flip within τ can have."""
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    bars = [robust_bar(U, D, np.eye(3), 1.0, 0.0, t) for t in (1e-12, 1e-10, 1e-8, 1e-6)]
    assert all(isinstance(b, float) for b in bars) and bars == sorted(bars)
    for t, b in zip((1e-12, 1e-10, 1e-8, 1e-6), bars):
        assert b >= math.sqrt(3) * t / math.sqrt(3)  # (‖I‖_F = √3; K ≥ 0)


@pytest.mark.parametrize("path, tol, robust", [("counterexamples/generic_relu.npz", 1e-9, True),
                                               ("examples/generic_gelu.npz", 1e-9, True),
                                               ("counterexamples/biased_gelu_generic.npz", 1e-9, True),
                                               ("counterexamples/generic_relu.npz", 1e-2, False)])
def test_verdicts_say_which_blocks_they_rule_out_and_the_checker_agrees(path: str, tol: float, robust: bool) -> None:
    blk = load(ROOT / path)
    whole = decide(blk, tol=tol)
    dec = whole.blocks[0]
    if not robust:  # (past τ = 10⁻⁴ a flip route needs the robust bound: unknown, saying so)
        assert dec.verdict.value == "unknown" and "robust skeleton bound" in dec.reason, dec.reason
        return
    assert dec.verdict.value == "not_absorbable"
    assert (dec.robust_bar is not None) == robust
    assert ("rules out every residual-free block within the tolerance" in dec.reason) == robust
    doc = build_certificate(whole, blk, seed=0).to_json()
    assert ("robust_bar" in doc["blocks"][0]["argument"]) == robust
    rep = verify_certificate(doc, blk)
    assert rep.accepted
    assert any("robust skeleton bound" in f.claim for f in rep.findings if f.status == "ok") == robust


def test_a_robust_verdict_skips_the_screens_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the robust bound holds, the 4× screens (estimates for near blocks) are not asked: the verdict is proved for
    every block within τ, and a block between τ and 4τ does not make it unknown; where it does not hold, it does."""
    from absorb.engine import _robust as robust_module
    from absorb.engine import results as results_module

    blk = load(ROOT / "counterexamples/generic_relu.npz")
    monkeypatch.setattr(results_module, "within_margin", lambda *a, **k: "4× the tolerance (a screen's candidate)")
    dec = decide(blk, tol=1e-6).blocks[0]
    assert dec.robust_bar is not None and dec.verdict.value == "not_absorbable"
    monkeypatch.setattr(robust_module, "robust_bar", lambda *a, **k: "not concluding here")
    dec = decide(blk, tol=1e-6).blocks[0]
    assert dec.robust_bar is None and dec.verdict.value == "unknown" and "4× the tolerance" in dec.reason


def test_past_the_screened_range_a_flip_route_needs_the_robust_bound() -> None:
    """d = 2, n = 8 ReLU, Gaussian skip: not_absorbable [index-set] at τ = 0.014–0.025 was wrong (verify exit 0) — a fitted
    width-8 g is within 0.0138 (0.55τ at τ = 0.025) while the screens found nothing even at 4τ. Past τ = 10⁻⁴ the route
    answers not_absorbable only with the robust bound, which does not conclude here; the checker leaves the old verdict's
    certificate not fully checked."""
    from absorb.engine import results as results_module

    U = np.array([[0.08434885076115327, 1.0825546501385463], [-1.361415899469512, -0.08002323669387834],
                  [0.4712736382815932, -0.38139552372937824], [-0.19773819667417775, 0.7119008201186471],
                  [-0.5968431318039679, -0.9665044207563379], [0.7722137763102623, 0.2683662165280098],
                  [-0.9716157988656038, 0.45727707819602825], [-0.5376127356953474, 0.6626300876609809]])
    D = np.array([[0.028041448525953565, -0.528684485215937, -1.501617583748532, 0.44742135249231185, -0.04898019901001227,
                   3.8262789087634097, -0.04637386300055815, -2.6532983586492174],
                  [4.179886800778634, -4.035428777182072, 3.342290834967433, -1.6858235452028674, 2.815646363572456,
                   -0.33200344438613216, 1.1221080861863644, 0.09519425782792144]])
    M = np.array([[-0.09339558421005838, 0.5373561080684924], [-0.6264275124884702, 0.49340285858683025]])
    gU = np.array([[0.08039525023671187, 1.0317239898746215], [-1.3120517461366188, -0.05336959237285054],
                   [0.5214417374470379, -0.43107147921016586], [0.1618459916598588, -0.5732242228458777],
                   [-0.6329971779102861, -1.0241699961257598], [0.8221353043865252, 0.3038508410899045],
                   [-0.9939380772505869, 0.46635356577259546], [-0.46548219746718, 0.573713975719786]])
    gD = np.array([[0.3787793892481076, -0.7374762326584668, -1.9203478696184522, -0.060422613684328885, -0.24379383398730006,
                    3.79141856022263, 0.2482727463808318, -2.5609514310911243],
                   [4.050617577056688, -3.9636194055491805, 3.1936660841607116, -1.5296344702805695, 2.8564586793900206,
                    -0.8257950061530073, 1.157479305446433, -0.2398867819020846]])
    blk = Block(U, D, get_activation("relu"), skip=M)
    t = np.linspace(0, 2 * np.pi, 400_001)
    X = np.c_[np.cos(t), np.sin(t)]  # (bias-free, positively homogeneous: the circle covers every x)
    F, G = blk(X), np.maximum(X @ gU.T, 0) @ gD.T
    ratio = np.max(np.abs(F - G), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1))
    assert float(np.max(ratio)) < 0.0139
    for tol in (0.014, 0.0251):  # (past 10⁻⁴)
        dec = decide(blk, tol=tol).blocks[0]
        assert dec.verdict.value == "unknown" and dec.robust_bar is None, dec.reason
    old = pytest.MonkeyPatch()
    old.setattr(results_module, "SCREENED_TOL_MAX", 1.0)  # (the producer as it was)
    old.setattr(results_module, "near_block", lambda *a, **k: None)  # (and without the fit, which finds a near block)
    try:
        whole = decide(blk, tol=0.0251)
    finally:
        old.undo()
    assert whole.verdict.value == "not_absorbable"
    rep = verify_certificate(build_certificate(whole, blk, seed=0).to_json(), blk)
    assert any("robust skeleton bound" in f.claim for f in rep.not_rechecked), rep.findings
    assert results_module.SCREENED_TOL_MAX == 1e-4


@pytest.mark.parametrize("scale", [-534, -300, 0, 300])
def test_rows_scaled_by_a_power_of_two_give_the_same_bar(scale: int) -> None:
    """f is unchanged by u_i → 2^s·u_i, w_i → 2^-s·w_i, and so is the bound: at s = −534 the Gram entries were subnormal,
    whose rounding is absolute, and two rows 10⁻³ rad apart read 0.16 rad — the bound concluded on the scaled file and
    not on the same f unscaled. Rows are now scaled to a largest entry in [1/2, 1) before any square or product."""
    th = np.array([0.3, 0.301, 2.0])
    U = np.c_[np.cos(th), np.sin(th)]
    D = np.array([[1.0, -0.5, 0.7], [0.2, 0.9, -1.1]])
    base = robust_bar(U, D, None, 1.0, 0.0, 1e-6), robust_distance_bar(U, D, None, 1.0, 0.0, 1e-6)
    got = (robust_bar(np.ldexp(U, scale), np.ldexp(D, -scale), None, 1.0, 0.0, 1e-6),
           robust_distance_bar(np.ldexp(U, scale), np.ldexp(D, -scale), None, 1.0, 0.0, 1e-6))
    assert isinstance(base[0], str) == isinstance(got[0], str) and (base[1][0] is None) == (got[1][0] is None)
    if not isinstance(base[0], str):
        assert got[0] == pytest.approx(base[0], rel=1e-9) and got[1][0] == pytest.approx(base[1][0], rel=1e-9)
