"""The parity result within a tolerance: a point where the skip's share of f(x) − f(−x) exceeds τ, or `unknown`.

Exactly, every bias-free residual-free block g is even (σ is) while f(x) − f(−x) = 2Mx, so no such g equals f. Within τ
that proves nothing by itself; a g within τ of f at x and at −x gives 2|Mx|∞ ≤ τ'·(den(x) + den(−x)), den(y) = |f(y)|∞
+ |y|∞ + |f(0)|∞. The verdict is `not_absorbable` only with a point x where that ratio exceeds τ' — bounded rigorously by
the engine (rounding accounted, σ by interval arithmetic) and re-derived by the checker (exact rationals, σ by its own
interval enclosure)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.verify.checker import verify_certificate


def _even(act: str, scale: float = 1.0, seed: int = 0) -> Block:
    rng = np.random.default_rng(seed)
    return Block(rng.standard_normal((6, 3)), rng.standard_normal((3, 6)) * scale, get_activation(act))


def _share(f: Block, x: np.ndarray) -> float:
    """2|Mx|∞/(den(x) + den(−x)) in float64."""
    f0 = float(np.abs(f(np.zeros((1, f.d)))).max())
    den = sum(float(np.abs(f(s * x[None])).max()) + float(np.abs(x).max()) + f0 for s in (1.0, -1.0))
    return 2 * float(np.abs(f.M @ x).max()) / den


@pytest.mark.parametrize("act", ["expr:Abs(x)", "expr:x*erf(x)", "expr:cosh(x)", "expr:sqrt(1 + x**2)", "expr:log(1 + x**2)"])
@pytest.mark.parametrize("tol", [1e-9, 1e-3])
def test_a_point_proves_it_within_the_tolerance(act: str, tol: float) -> None:
    f = _even(act)
    dec = decide(f, tol=tol, timeout=30)
    bd = dec.blocks[0]
    assert dec.verdict.value == "not_absorbable" and bd.theorem.value == "parity", bd.reason
    x, r = bd.direction
    assert tol < r <= _share(f, np.asarray(x)) * (1 + 1e-9)
    doc = build_certificate(dec, f, seed=0).to_json()
    assert doc["blocks"][0]["argument"]["point"] == list(x)
    rep = verify_certificate(doc, f)
    assert rep.accepted and not rep.not_rechecked, [c.claim for c in rep.failures + rep.not_rechecked]


def test_no_point_past_the_tolerance_is_unknown() -> None:
    """cosh units with down weights ~10⁷: f(0) ~ 10⁷ and the skip's share stays below 10⁻⁷ everywhere (B itself, the
    skip dropped, is within 4·10⁻⁸ of f): the exact argument rules out g = f only."""
    f = _even("expr:cosh(x)", scale=1e7, seed=1)
    dec = decide(f, tol=1e-7, timeout=30)
    assert dec.verdict.value == "unknown", dec.blocks[0].reason
    assert verify_certificate(build_certificate(dec, f, seed=0).to_json(), f).accepted


def test_a_false_point_or_an_overstated_ratio_is_rejected() -> None:
    f = _even("expr:cosh(x)")
    dec = decide(f, tol=1e-7, timeout=30)
    doc = build_certificate(dec, f, seed=0).to_json()
    x = doc["blocks"][0]["argument"]["point"]
    tiny = [v * 2.0**-80 for v in x]  # (near 0 the share tends to 0: f(±x) ≈ f(0) = σ(0)·W_down 1)
    assert _share(f, np.asarray(tiny)) < 1e-7
    for edit in (tiny, [0.0] * len(x), None, x[:-1], [float("nan")] * len(x)):
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["argument"]["point"] = edit
        assert not verify_certificate(bad, f).accepted, edit
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"]["ratio"] = float(np.nextafter(1.0, 0.0))
    assert not verify_certificate(bad, f).accepted


@pytest.mark.parametrize(("act", "true"), [
    ("expr:3*2**64*(Max(x**2, 1/3) - 1/3 + 2**-54/3)", lambda mp, z: 3 * mp.mpf(2) ** 64 * (
        max(z * z, mp.mpf(1) / 3) - mp.mpf(1) / 3 + mp.mpf(2) ** -54 / 3)),
    ("expr:3*2**64*(erf(x**2 + 1/3) - erf(1/3 - 2**-54/3))", lambda mp, z: 3 * mp.mpf(2) ** 64 * (
        mp.erf(z * z + mp.mpf(1) / 3) - mp.erf(mp.mpf(1) / 3 - mp.mpf(2) ** -54 / 3))),
])
def test_the_enclosure_of_sigma_holds_its_true_value(act: str, true: object) -> None:
    """(red team 47a/01) Max/Min and erf read their arguments' interval ends at mpmath's 53 bits: σ(0) = 1024 was enclosed
    as 0 (a cancellation of 2^-54 times 3·2^64), and the engine proved a parity point with the wrong f(0). Both sides
    enclose it now, and the block — g = W_down σ(W_up x) is within 3·10⁻⁶ of f — is not called not_absorbable."""
    import mpmath

    from absorb.model._expr import enclose_at
    from absorb.verify._intervals import _enclose

    expr = get_activation(act).expr
    zs = np.array([0.0, 0.5, -1.5, 1e-20])
    lo, hi = enclose_at(expr, zs, zs)
    x = next(iter(expr.free_symbols))
    with mpmath.workdps(60):
        vals = [true(mpmath.mp, mpmath.mpf(float(z))) for z in zs]
        assert all(a <= v <= b for a, v, b in zip(lo, vals, hi)), (lo, vals, hi)
        for z, v in zip(zs, vals):
            saved, mpmath.iv.prec = mpmath.iv.prec, 120
            try:
                box = _enclose(expr, x, mpmath.iv.mpf(float(z)))
            finally:
                mpmath.iv.prec = saved
            assert mpmath.mpf(box.a) <= v <= mpmath.mpf(box.b), (z, box, v)
    f = Block(np.eye(2), np.eye(2), get_activation(act), skip=0.01 * np.eye(2))
    dec = decide(f, tol=1e-3, timeout=60)
    assert not (dec.verdict.value == "not_absorbable" and dec.blocks[0].theorem.value == "parity"), dec.blocks[0].reason


def test_a_far_point_of_a_gaussian_is_checked_quickly() -> None:
    """(red team 47c/01) The point the engine proves for a Gaussian σ lies far out (x ~ 10¹⁸: σ = e^{−10³¹} at the units):
    the checker's strict sympy evaluation there grew past gigabytes; its interval enclosure reads it at once."""
    f = Block(np.array([[-0.0069713], [0.00354714]]), np.array([[773086.77821055, 786744.85241058]]),
              get_activation("expr:exp(-x**2)"), skip=np.array([[-3.40108093e-05]]))
    dec = decide(f, tol=1e-5, timeout=60)
    assert dec.verdict.value == "not_absorbable" and dec.blocks[0].theorem.value == "parity", dec.blocks[0].reason
    rep = verify_certificate(build_certificate(dec, f, seed=0).to_json(), f)
    assert rep.accepted and not rep.not_rechecked, [c.claim for c in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("act", ["expr:Abs(x)", "expr:x*erf(x)"])
def test_a_nearly_antipodal_pair_does_not_withhold_what_the_point_proves(act: str) -> None:
    """(red team 47a/02) Up rows (1, 0) and (−1, 10⁻³): the near-pair screen withheld ("a block that merges, cancels or
    rescales such a pair is not ruled out"), though the point rules out every bias-free block within τ (an even σ's
    antipodal pair realises no linear map); the checker likewise asks no screen of a proved point."""
    f = Block(np.array([[1.0, 0.0], [-1.0, 0.001]]), 1e-3 * np.array([[1.0, 2.0], [-1.0, 1.0]]), get_activation(act))
    for tol in (1e-6, 1e-3):
        dec = decide(f, tol=tol, timeout=60)
        assert dec.verdict.value == "not_absorbable" and dec.blocks[0].theorem.value == "parity", dec.blocks[0].reason
        rep = verify_certificate(build_certificate(dec, f, seed=0).to_json(), f)
        assert rep.accepted and not rep.not_rechecked, [c.claim for c in rep.failures + rep.not_rechecked]


def test_both_enclosures_hold_each_head_at_points_of_every_size() -> None:
    """mpmath's interval exp and atan2 return a point argument's value rounded to nearest, not outwards (exp(5.9·10⁻²¹)
    = [1, 1] at 53 bits; atan2 of a tiny point likewise): both sides widen every transcendental value. Each head at 200
    random points 2^-300…2^8 of either sign, against mpmath at 1500 bits."""
    import random

    import mpmath
    import sympy as sp

    from absorb.model._expr import X, enclose_at
    from absorb.verify._intervals import _enclose

    mp, iv = mpmath.mp, mpmath.iv
    heads = [(sp.exp(X), mp.exp), (sp.atan(X), mp.atan), (sp.cos(X), mp.cos), (sp.sin(X), mp.sin), (sp.tanh(X), mp.tanh),
             (sp.cosh(X), mp.cosh), (sp.sinh(X), mp.sinh), (sp.log(1 + X**2), lambda z: mp.log(1 + z * z)),
             (sp.sqrt(1 + X**2), lambda z: mp.sqrt(1 + z * z)), (sp.erf(X), mp.erf)]
    rng = random.Random(2)
    for _ in range(200):
        z = rng.random() * rng.choice([1, -1]) * 2.0 ** rng.randint(-300, 8)
        for expr, true in heads:
            lo, hi = enclose_at(expr, np.array([z]), np.array([z]))
            saved, iv.prec = iv.prec, 120
            try:
                box = _enclose(expr, X, iv.mpf(z))
            finally:
                iv.prec = saved
            with mp.workprec(1500):
                t = true(mp.mpf(z))
                assert mp.mpf(lo[0]) <= t <= mp.mpf(hi[0]), (expr, z)
                assert mp.mpf(box._mpi_[0]) <= t <= mp.mpf(box._mpi_[1]), (expr, z)


@pytest.mark.parametrize("k", [0, -4, 4])
def test_a_scale_float64_misreads_does_not_hide_the_point(k: int) -> None:
    """(red team 47c/02) f(x) = x + 10¹⁶·log(1 + (x/2)²): float64 reads log(1 + z²) as 0 for |z| < 10⁻⁸, so every tiny
    scale looks like a share of 1/2 (truly ~5·10⁻⁸) and took all the rigorous tries; the point at 2⁶⁰ was never bounded and
    the verdict changed under s·f(x/s). Each scale's best point gets its turn now: not_absorbable at every s."""
    s = 2.0**k
    f = Block(np.array([[0.5 / s]]), np.array([[1e16 * s]]), get_activation("expr:log(1+x**2)"), skip=np.eye(1))
    dec = decide(f, tol=1e-3, timeout=60)
    assert dec.verdict.value == "not_absorbable" and dec.blocks[0].theorem.value == "parity", dec.blocks[0].reason
    assert verify_certificate(build_certificate(dec, f, seed=0).to_json(), f).accepted


@pytest.mark.parametrize(("act", "biased"), [("expr:Abs(x)", False), ("expr:log(1+x**2)", True)])
def test_width_free_arguments_answer_every_width(act: str, biased: bool, tmp_path: Path) -> None:
    """(red team 47c/03) Parity's point rules out every bias-free block within τ whatever its width, and so does the
    skeleton with σ∞ ≡ 0 (every residual-free block's g(tv)/t → 0, f(tv)/t → Mv): --width 40 and --min-width answered
    unknown; now not absorbable at every width ("exists": false), and the checker re-derives it."""
    from absorb.cli import main

    rng = np.random.default_rng(5)
    kw = {"b_up": np.array([0.3, -0.2]), "b_down": np.array([0.1, 0.1])} if biased else {}
    np.savez(tmp_path / "f.npz", W_up=rng.standard_normal((2, 2)), W_down=rng.standard_normal((2, 2)),
             skip=np.array([[0.3, 0.1], [-0.2, 0.5]]), activation=np.array(act), **kw)
    cert = tmp_path / "c.json"
    assert main(["check", str(tmp_path / "f.npz"), "--tol", "1e-5", "--width", "40", "--min-width", "-q",
                 "--certificate", str(cert)]) == 0
    b = json.loads(cert.read_text())["blocks"][0]
    assert b["width"]["verdict"] == "not_absorbable" and b["min_width"]["exists"] is False, (b["width"], b["min_width"])
    assert main(["verify", str(cert), "-q"]) == 0


@pytest.mark.parametrize("act", ["expr:exp(-exp(x**2))", "expr:exp(-cosh(x))"])
def test_a_double_exponential_is_decided_without_evaluating_huge_exponents(act: str) -> None:
    """(red team 48a/01) The parity point's enclosure evaluated e^(−e^(z²)) with z² ~ 2^120: mpmath's exp costs about as many
    bits as its argument's size (out of memory, reported as bad input). Exponents past ±2^20 are not evaluated now; σ is
    bounded on R, and the block is decided."""
    f = Block(np.eye(2), np.eye(2), get_activation(act), skip=np.eye(2))
    dec = decide(f, tol=1e-6, timeout=60)
    assert dec.verdict.value == "not_absorbable", dec.blocks[0].reason
    rep = verify_certificate(build_certificate(dec, f, seed=0).to_json(), f)
    assert rep.accepted and not rep.not_rechecked, [c.claim for c in rep.failures + rep.not_rechecked]


def test_a_far_point_of_a_nested_cosh_is_not_evaluated_for_minutes() -> None:
    """(red team 48a/02) A parity point moved to (18, 0) for σ = cosh(cosh(cosh x)): the checker's enclosure evaluated
    e^(cosh(cosh 18)) ~ 2^(4.8·10⁷) for minutes. Past 2^20 the exponent is not evaluated: not accepted, at once."""
    import time

    f = Block(np.eye(2), np.eye(2), get_activation("expr:cosh(cosh(cosh(x)))"), skip=np.eye(2))
    dec = decide(f, tol=1e-6, timeout=60)
    doc = build_certificate(dec, f, seed=0).to_json()
    assert verify_certificate(doc, f).accepted
    doc["blocks"][0]["argument"]["point"] = [18.0, 0.0]
    t = time.perf_counter()
    assert not (rep := verify_certificate(doc, f)).accepted or rep.not_rechecked
    assert time.perf_counter() - t < 60


def test_every_width_claims_count_the_allowance_at_the_width() -> None:
    """(review) The rounding allowance grows with the width (1000·ε·√(N + 1)): a skip's share of 1.3·10⁻⁹ beats τ = 10⁻⁹
    plus the allowance at n = 4 but not at the widest block absorb builds (6.4·10⁻¹⁰ there), where f without its skip,
    padded, passes the width-N witness check. "Not absorbable at every width" needs the share past the allowance at the
    width asked (and at the widest for "no width works")."""
    from absorb.engine.width import decide_width, minimal_width, widest

    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((4, 2)), 1e-3 * rng.standard_normal((2, 4))
    for m, every in ((1.3e-9, False), (1e-6, True)):
        f = Block(U, D, get_activation("expr:Abs(x)"), skip=m * np.eye(2))
        bd = decide(f, tol=1e-9, timeout=60).blocks[0]
        assert bd.verdict.value == "not_absorbable" and bd.theorem.value == "parity", bd.reason
        wide = decide_width(f, widest(f), tol=1e-9, decision=bd)
        assert (wide.verdict.value == "not_absorbable") is every, wide.reason
        assert (minimal_width(f, tol=1e-9, decision=bd).exists is False) is every
        assert decide_width(f, 8, tol=1e-9, decision=bd).verdict.value == "not_absorbable"


@pytest.mark.parametrize("m", [1.5, 3.0])
def test_a_vanishing_skeleton_past_the_tolerance_asks_no_screen(m: float) -> None:
    """(red team 48a/03) σ = log(1 + z²) with biases (σ∞ ≡ 0), M = m·τ·I: every residual-free block has g(tv)/t → 0, so the
    skip's share ‖M‖∞/(1 + ‖M‖∞) past τ + the allowance proves not_absorbable for every block within τ — the 4τ screen
    withheld it (its candidate, f without the skip, is exactly that share away)."""
    U, D = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.array([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]])
    f = Block(U, D, get_activation("expr:log(1+x**2)"), skip=m * 1e-6 * np.eye(2), b_up=np.array([0.5, -0.25, 1.0]),
              b_down=np.array([0.1, 0.2]))
    dec = decide(f, tol=1e-6, timeout=60)
    assert dec.verdict.value == "not_absorbable" and dec.blocks[0].theorem.value == "skeleton", dec.blocks[0].reason
    rep = verify_certificate(build_certificate(dec, f, seed=0).to_json(), f)
    assert rep.accepted and not rep.not_rechecked, [c.claim for c in rep.failures + rep.not_rechecked]
    g = f.replace(skip=np.zeros((2, 2)))  # (the screen's candidate: along t·(1, 1) its ratio tends to the share, past τ)
    x = 1e12 * np.ones((1, 2))
    share = float(np.abs(f(x) - g(x)).max() / (np.abs(f(x)).max() + np.abs(x).max() + np.abs(f(np.zeros((1, 2)))).max()))
    assert share > 1e-6
