"""The checker's own screen of a not_absorbable against the tolerance (absorb/verify/_tolerance.py):
a block within the tolerance of a residual-free block of its width (found by bound) has no honest
not_absorbable, so a certificate that claims one — forged from another block's — is rejected; an
honest not_absorbable still verifies."""

from __future__ import annotations

import json

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.verify._tolerance import contradiction
from absorb.verify.checker import verify_certificate

_IDENTITY = ("name", "kind", "activation", "activation_function", "value_activation_function", "d", "n", "skip", "weights")


def _blocks(act: str, scale: float, *, gated: bool = False, biased: bool = False, seed: int = 0) -> tuple[Block, Block]:
    rng = np.random.default_rng(seed)
    U, D, G = rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), rng.standard_normal((4, 2))
    kw = {"W_gate": G} if gated else {}
    if biased:
        kw.update(b_up=rng.standard_normal(4), b_down=rng.standard_normal(2))
    return Block(U, scale * D, get_activation(act), **kw), Block(U, D, get_activation(act), **kw)


@pytest.mark.parametrize(("act", "scale", "gated", "biased"), [
    ("relu", 1e-13, False, False), ("gelu", 1e-13, False, False), ("silu", 1e-13, False, True),
    ("sigmoid", 1e-13, True, False), ("expr:x + Abs(x)/10**7", 1e-3, False, False),
])
def test_a_block_within_the_tolerance_contradicts_not_absorbable(act: str, scale: float, gated: bool, biased: bool) -> None:
    near, far = _blocks(act, scale, gated=gated, biased=biased)
    assert contradiction(near, 1e-9) is not None
    assert contradiction(far, 1e-9) is None


def test_the_width_counts() -> None:
    """x ↦ x needs 2·rank = 4 units in antipodal pairs: no contradiction at width 3; softplus
    (σ(0) = log 2) none more: an unbalanced pair carries the constant W_down σ(0)·1 within any ε."""
    near, _ = _blocks("relu", 1e-13)
    assert contradiction(near, 1e-9, 3) is None and contradiction(near, 1e-9, 4) is not None
    near, _ = _blocks("softplus", 1e-13)
    assert contradiction(near, 1e-9, 3) is None and contradiction(near, 1e-9, 4) is not None


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_a_forged_not_absorbable_of_a_block_within_the_tolerance_is_rejected(act: str) -> None:
    """The honest certificate of a far block (not_absorbable), its identity fields replaced by those
    of f = x + 10⁻¹³·B(x) (honestly unknown): the checker rejects it at its tolerance screen."""
    near, far = _blocks(act, 1e-13, seed=3)
    donor = decide(far)
    assert donor.verdict.value == "not_absorbable"
    A = build_certificate(donor, far, seed=0).to_json()
    honest = build_certificate(decide(near), near, seed=0).to_json()
    assert honest["verdict"] == "unknown"
    assert verify_certificate(A, far).accepted
    forged = json.loads(json.dumps(A))
    fb, hb = forged["blocks"][0], honest["blocks"][0]
    for k in _IDENTITY:
        if k in hb:
            fb[k] = hb[k]
        else:
            fb.pop(k, None)
    forged["input"], fb["class"], forged["class"] = honest["input"], hb["class"], honest["class"]
    rep = verify_certificate(forged, near)
    assert not rep.accepted
    assert any("within the tolerance" in str(f) for f in rep.findings), rep.findings


@pytest.mark.parametrize("path", ["counterexamples/planted_relu.npz", "counterexamples/biases_planted.npz",
                                  "counterexamples/glu_planted.npz"])
def test_a_recorded_witness_error_below_the_truth_is_rejected(path: str) -> None:
    """A witness within the tolerance but not exact: its recorded error 0 is false (the checker re-derives
    that the witness is not exact); for an index-set flip, an error below half the error at a vertex of
    the unit cube (g − f = R x + e) is false too, where that error is above R's rounding (planted_relu:
    residual 1e-14; the others' residuals are at the rounding's level). The honest record verifies."""
    from pathlib import Path

    from absorb import load

    model = load(str(Path(__file__).resolve().parents[1] / path))
    cert = build_certificate(decide(model), model, seed=0).to_json()
    assert verify_certificate(cert, model).accepted
    wit = cert["blocks"][0]["witness"]
    assert wit["exact"] is False
    lies = [0.0] if not path.endswith("planted_relu.npz") else [0.0, 1e-300, wit["eval_error"] * 1e-6]
    for lie in lies:
        forged = json.loads(json.dumps(cert))
        forged["blocks"][0]["witness"]["eval_error"] = lie
        if "witness" in forged and isinstance(forged["witness"], dict) and "eval_error" in forged["witness"]:
            forged["witness"]["eval_error"] = lie
        assert not verify_certificate(forged, model).accepted, lie


def test_a_stack_of_blocks_within_the_tolerance_claims_nothing() -> None:
    """f_k(x) = 10⁻¹²·x + B_k(x): the skip-free stack B_1 ∘ B_0 is within ~10⁻¹¹ of F, so the exact stack
    arguments (kink count, rank) are withheld: unknown."""
    from absorb import Stack

    rng = np.random.default_rng(5)
    blocks = tuple(Block(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), get_activation("relu"), skip=1e-12 * np.eye(2),
                         name=f"b{k}") for k in range(2))
    dec = decide(Stack(blocks))
    assert dec.verdict.value == "unknown" and "within the tolerance" in dec.reason, dec.reason


def test_the_checker_flags_a_not_absorbable_that_its_sample_contradicts() -> None:
    """d = n = 1, f(x) = x + 0.1|x| at τ = 0.6: g = B is within the tolerance (|f| ≥ 0.9|x|). A
    not_absorbable certificate made at τ = 0.6 (the engine now withholds it; forged here from the same
    block's exact proof) is not accepted: a bound finds g = 0 within it (else the checker's sample would contradict
    it, and a sample proves nothing: not re-checked)."""
    from absorb.verify._tolerance import sampled_near

    blk = Block(np.ones((1, 1)), np.full((1, 1), 0.1), get_activation("expr:Abs(x)"))
    assert sampled_near(blk, 0.6, 0) is not None and sampled_near(blk, 0.4, 0) is None
    cert = build_certificate(decide(blk, tol=0.4), blk, seed=0).to_json()
    assert cert["verdict"] == "not_absorbable" and verify_certificate(cert, blk).accepted
    forged = json.loads(json.dumps(cert))
    forged["parameters"]["tolerance"] = forged["blocks"][0]["tolerance"] = 0.6
    rep = verify_certificate(forged, blk)
    # (rejected outright where a bound finds a g: the constant g = 0, |f| ≤ 1.1|x| ≤ τ/(1 − τ)|x| at τ = 0.6 — or first
    # by the parity check itself: the recorded point's share 2|x|/(den(x) + den(−x)) = 2/4.2 is below 0.6)
    assert (not rep.accepted and any(w in rep.failures[0].claim for w in ("found by bound", "at the recorded x"))) or any(
        "agrees with the tolerance" in f.claim for f in rep.not_rechecked), [f.claim for f in rep.failures]


def test_a_biased_gated_block_within_the_tolerance_contradicts_not_absorbable() -> None:
    near, far = _blocks("sigmoid", 1e-13, gated=True, biased=True)
    assert contradiction(near, 1e-9) is not None and contradiction(far, 1e-9) is None


def test_an_honest_not_absorbable_whose_b_vanishes_on_a_line_is_fully_checked() -> None:
    """B = 10⁵·e1·|ℓ·x| vanishes on the line ℓ·x = 0, where f(x) = x: g = B is not within the tolerance;
    the checker's sample (on the kink hyperplanes too) finds that, and the certificate is fully checked."""
    blk = Block(np.array([[1.0, -0.7], [-1.0, 0.7]]), 1e5 * np.array([[1.0, 1.0], [0.0, 0.0]]), get_activation("relu"))
    dec = decide(blk)  # (at 10¹³ the distance bar, which counts f's gain, proves nothing: unknown)
    assert dec.verdict.value == "not_absorbable"
    rep = verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.not_rechecked]


@pytest.mark.parametrize("act", ["expr:x*erfc(-x/sqrt(2))/2", "expr:x*exp(x)/(1+exp(x))", "expr:x*(1+tanh(x))/2"])
def test_a_users_smooth_sigma_within_the_tolerance(act: str) -> None:
    """σ(z) − σ(−z) = z but no piecewise-linear Lipschitz constant: the producer withholds the exact
    verdict with σ's Lipschitz constant estimated on a grid (said in the reason); the checker, whose
    estimate is not a bound either, reports such a not_absorbable as not re-checked rather than rejecting it."""
    near, far = _blocks(act, 1e-13)
    dec = decide(near)
    assert dec.verdict.value == "unknown" and "estimated" in dec.reason, dec.reason
    assert contradiction(near, 1e-9) is None and contradiction(near, 1e-9, estimated=True) is not None
    assert contradiction(far, 1e-9, estimated=True) is None


def test_a_biased_block_with_a_large_skip_counts_the_size_of_f() -> None:
    """M = 100·I, biases, W_down of size 10⁻⁸: r ≈ 6·10⁻⁸ > τ, but |f(x)|∞ + |f(0)|∞ ≥ (100 − r)|x|∞, so
    x ↦ 100·x + f(0) (pairs and b_down) is within the tolerance: no exact not_absorbable, and the checker agrees."""
    rng = np.random.default_rng(7)
    U, D = rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
    kw = dict(b_up=rng.standard_normal(4), b_down=rng.standard_normal(2), skip=100 * np.eye(2))
    near = Block(U, 1e-8 * D, get_activation("relu"), **kw)
    assert decide(near).verdict.value == "unknown"
    assert contradiction(near, 1e-9) is not None
    assert contradiction(Block(U, D, get_activation("relu"), **kw), 1e-9) is None


def _sized(act: str, size: float, n: int = 4, seed: int = 0) -> Block:
    """A bias-free d = 2 block with Σ_i |w_i|∞·|u_i|₁ = ``size`` (skip = identity)."""
    rng = np.random.default_rng(seed)
    U, D = rng.standard_normal((n, 2)), rng.standard_normal((2, n))
    D *= size / float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1)))
    return Block(U, D, get_activation(act))


@pytest.mark.parametrize("act", ["expr:x*erfc(-x/sqrt(2))/2", "expr:x*exp(x)/(1 + exp(x))"])
def test_a_users_smooth_sigma_whose_even_part_is_within_the_tolerance(act: str) -> None:
    """size 3·10⁻⁹ at τ = 10⁻⁹: |σ(z)| ≤ |z| puts g = M x outside, but σ(z) − z/2 is at most |z|/2, so the
    4 antipodal units of A = I + ½·W_down W_up are within it (as the built-in's table says); the producer
    estimates that sup on a grid for a user's σ and withholds. The checker (a factor 2 looser) reports an old
    producer's not_absorbable at size 1.3·10⁻⁹ as not re-checked; at size 10⁻⁸ neither finds the map — but units of
    size ~10⁻⁹ in d = 2 come within the tolerance of collinear, which withholds the verdict."""
    mid, near, far = _sized(act, 3e-9), _sized(act, 1.3e-9), _sized(act, 1e-8)
    dec = decide(mid)
    assert dec.verdict.value == "unknown" and "estimated" in dec.reason and "W_down W_up" in dec.reason, dec.reason
    assert decide(near).verdict.value == "unknown"
    assert contradiction(near, 1e-9) is None and contradiction(near, 1e-9, estimated=True) is not None
    got = decide(far)
    assert got.verdict.value == "not_absorbable" or "nearly collinear" in got.reason, got.reason
    assert contradiction(far, 1e-9, estimated=True) is None


def test_a_narrow_bump_counts_sigmas_growth_not_its_slope() -> None:
    """σ = ReLU + an even bump of slope 10 at |z| ≈ 55, σ(0) = −2: |σ(z) − σ(0)| ≤ 1.04|z| though σ′ reaches 20.
    Bias-free, g(x) = M x + f(0) (4 antipodal units and one with up row 0) is within 2.1·10⁻¹⁰|x|∞ of f
    at size 2·10⁻¹⁰: the screen bounds f − g by that growth, not by the Lipschitz constant."""
    near = _sized("expr:Max(0, x) + tanh(10*(x - 55)) - tanh(10*(x + 55))", 2e-10, n=6)
    dec = decide(near)
    assert dec.verdict.value == "unknown" and "σ(z) − σ(0)" in dec.reason, dec.reason
    assert contradiction(near, 1e-9, estimated=True) is not None


def test_the_checkers_sample_climbs_into_a_thin_cone() -> None:
    """counterexamples/swiglu_affine_value_generic at τ = 0.3: g = B fails on a thin cone (ratio ≈ 0.44 > τ) that a
    random sample often misses; both sides climb from their worst inputs and find it, for every seed tried."""
    from pathlib import Path

    from absorb.engine.tolerance import _without_skip_sampled
    from absorb.io import load
    from absorb.verify._tolerance import sampled_near

    blk = load(Path(__file__).resolve().parents[1] / "counterexamples" / "swiglu_affine_value_generic.npz")
    assert not any(sampled_near(blk, 0.3, s) for s in range(40))
    assert not any(_without_skip_sampled(blk, 0.3, s) for s in range(40))
    assert sampled_near(blk, 0.6, 0) is not None


def test_the_checker_finds_this_rounds_near_maps_by_its_own_route() -> None:
    """The checker's own versions of the producer's new maps: |A x|∞ ≥ |x|∞/‖A⁻¹‖∞ (d = 16, biased ReLU at
    size 1.5τ), the even-part map with biases (size 1.5τ, where A = M does not pass), tiny units beside ordinary ones (kept as they are);
    a user's sigmoid gate only as an estimate (not re-checked, never a rejection)."""
    rng = np.random.default_rng(1)
    U, D = rng.standard_normal((32, 16)), rng.standard_normal((16, 32))
    D *= 1.5e-3 / float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1)))
    wide = Block(U, D, get_activation("relu"), b_up=rng.standard_normal(32), b_down=rng.standard_normal(16))
    assert contradiction(wide, 1e-3) is not None
    U, D = rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
    D *= 1.5e-3 / float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1)))  # (the checker's factor 2)
    assert contradiction(Block(U, D, get_activation("relu"), b_up=rng.standard_normal(4), b_down=rng.standard_normal(2)), 1e-3) is not None
    U, D = rng.standard_normal((6, 2)), rng.standard_normal((2, 6))
    D[:, 2:] *= 1e-13
    assert contradiction(Block(U, D, get_activation("relu")), 1e-9) is not None
    D[:, 2:] *= 1e13
    assert contradiction(Block(U, D, get_activation("relu")), 1e-9) is None
    gated = Block(U[:4], 1e-13 * D[:, :4], get_activation("expr:(1 + tanh(x))/2"), W_gate=rng.standard_normal((4, 2)))
    assert contradiction(gated, 1e-9) is None and contradiction(gated, 1e-9, estimated=True) is not None


def test_the_checkers_sample_looks_in_the_dead_cone_and_the_null_space() -> None:
    """B dominates its skip except where it vanishes or stays bounded: on the cone W_up x ≤ −1 (ReLU, n ≤ 2d, a large
    W_down) and on ker W_up (n < d). No random input lands there; the checker's sample adds a point of each (an LP,
    an SVD), so it does not doubt an honest not_absorbable (ratio 1/2 there)."""
    from absorb.verify._tolerance import sampled_near

    rng = np.random.default_rng(0)
    cone = Block(rng.standard_normal((16, 8)), 1e6 * rng.standard_normal((8, 16)), get_activation("relu"))
    assert sampled_near(cone, 1e-3, 0) is None
    kernel = Block(rng.standard_normal((1, 3)), 1e6 * rng.standard_normal((3, 1)), get_activation("identity"),
                   b_up=rng.standard_normal(1), b_down=rng.standard_normal(3))
    assert sampled_near(kernel, 0.1, 0) is None
    near = Block(rng.standard_normal((16, 8)), 1e6 * rng.standard_normal((8, 16)), get_activation("gelu"))
    assert sampled_near(near.replace(skip=1e-12 * np.eye(8)), 1e-3, 0) is not None  # (a skip B truly dominates: still seen)
