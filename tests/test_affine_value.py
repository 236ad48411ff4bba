"""Gated blocks with an affine value activation h(z) = c·z + k (c ≠ 0).

Such a block is the block with h(z) = z and W_up → c·W_up, b_up → c·b_up + k (the same function),
and the residual-free blocks with h are those with h(z) = z under the same map: the engine decides
the normalised block with the results for h(z) = z, and the checker re-derives that h is affine
with the recorded c, k, rebuilds the normalised block itself and checks the rest. Planted blocks
are built absorbable for the normalised block and mapped back; weights are small dyadics (or
multiples of them) so that the float64 normalisation is exact where a test needs it."""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from absorb.certificate.build import build_certificate
from absorb.engine.decide import decide, decide_block
from absorb.engine.verdict import Verdict
from absorb.model.activations import get_activation
from absorb.model.block import Block, Stack, normalise_value
from absorb.symbolic import affine
from absorb.symbolic._core import get as analysis
from absorb.verify import checker
from absorb.verify._report import Report, _Ctx, _Reject
from absorb.verify._theorems import normalised_value_block

AFFINE = [(Fraction(2), Fraction(0), "expr:2*x"), (Fraction(1), Fraction(1), "expr:x + 1"),
          (Fraction(-3), Fraction(1, 2), "expr:-3*x + 1/2"), (Fraction(1), Fraction(0), "expr:Max(0,x) + Min(0,x)")]
RELU_LIKE = ("swiglu", "geglu")


def _dyadic(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to multiples of 2^-6: c·a + k stays exact in float64 for the c, k above."""
    return np.round(np.asarray(a) * 64) / 64


def _verified(blk: Block | Stack, dec: object) -> tuple[dict, Report]:
    doc = build_certificate(dec, blk, seed=0).to_json()
    return doc, checker.verify_certificate(doc, blk)


def _accepted(rep: Report) -> bool:
    return rep.accepted and not rep.not_rechecked


def relu_like_planted(gate: str, c: Fraction, k: Fraction, h: str, *, biased: bool = True) -> Block:
    """tests/test_gated_skeleton.py's planted ReLU-like block, planted for the normalised weights
    (c·W_up, c·b_up + k: units 0 and 1 cancel in (Qg), M from (Lg)) and mapped back to h."""
    G = np.array([[1.0, 0], [0, 1], [1, 1], [2, -1]])
    U = np.array([[0.0, 1], [-1, 0], [1, -2], [0.5, 3]])
    w = np.array([1.0, -2.0])
    D = np.column_stack([w, w, [3.0, 1], [-1.0, 0.5]])
    bg, e = (np.array([0.5, -1.0, 0.25, 1.5]), np.array([2.0, 0.75, -0.5, 1.0])) if biased else (np.zeros(4), np.zeros(4))
    Un, en = float(c) * U, float(c) * e + float(k)
    M = -sum(np.outer(D[:, i], bg[i] * Un[i] + en[i] * G[i]) for i in (0, 1))
    kw = dict(b_gate=bg, b_up=e, b_down=np.array([0.125, -0.5])) if biased else {}
    return Block(U, D, get_activation(gate), W_gate=G, skip=M, value_activation=get_activation(h), **kw)


def step_planted(c: Fraction, k: Fraction, h: str, *, biased: bool, seed: int = 2) -> Block:
    """A sigmoid-gated (GLU) block with W_down[:,S] (c·W_up[S]) = −I for S = {0, 2, 3}, mapped back to h."""
    rng = np.random.default_rng(seed)
    d, n = 3, 6
    U, G = _dyadic(rng.standard_normal((n, d))), rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    S = [0, 2, 3]
    D[:, S] = -np.linalg.pinv(float(c) * U[S])
    kw = dict(b_gate=rng.standard_normal(n), b_up=_dyadic(rng.standard_normal(n)), b_down=rng.standard_normal(d)) if biased else {}
    return Block(U, D, get_activation("sigmoid"), W_gate=G, value_activation=get_activation(h), **kw)


def generic(gate: str, h: str, *, biased: bool, seed: int = 7) -> Block:
    rng = np.random.default_rng(seed)
    d, n = 3, 6
    kw = dict(b_gate=rng.standard_normal(n), b_up=_dyadic(rng.standard_normal(n)), b_down=rng.standard_normal(d)) if biased else {}
    return Block(_dyadic(rng.standard_normal((n, d))), rng.standard_normal((d, n)), get_activation(gate),
                 W_gate=rng.standard_normal((n, d)), value_activation=get_activation(h), **kw)


# ----------------------------------------------------------------------- the analysis --
@pytest.mark.parametrize(("c", "k", "h"), AFFINE + [(Fraction(0), Fraction(1), "expr:1 + 0*x")])
def test_affine_value_activations_are_proved_with_their_c_and_k(c: Fraction, k: Fraction, h: str) -> None:
    p = affine.affine_form(get_activation(h))
    assert p.proved and (p.value["c"], p.value["k"]) == (c, k), p.statement


@pytest.mark.parametrize("h", ["expr:Max(0,x)", "expr:x**2 + x", "expr:Abs(x)", "tanh"])
def test_other_value_activations_are_not_affine(h: str) -> None:
    p = affine.affine_form(get_activation(h))
    assert not p.proved


# ---------------------------------------------------------------------- the engine --
@pytest.mark.parametrize("gate", RELU_LIKE)
@pytest.mark.parametrize(("c", "k", "h"), AFFINE)
@pytest.mark.parametrize("biased", [True, False])
def test_planted_relu_like_gated_blocks_with_affine_h_are_absorbable_and_verified(gate: str, c: Fraction, k: Fraction, h: str,
                                                                                 biased: bool) -> None:
    blk = relu_like_planted(gate, c, k, h, biased=biased)
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason
    bd = dec.blocks[0]
    if biased or k != 0:  # (bias-free with k = 0: M = 0, already residual-free)
        assert dec.theorem.value == "gated-skeleton" and "is affine" in dec.reason, dec.reason
        # the bias-free f with k ≠ 0 is compared with biased blocks: the normalised block has b_up = k·1
        assert bd.residual_free_class.biases
    X = np.random.default_rng(0).standard_normal((64, 2)) * 3
    np.testing.assert_allclose(bd.witness.block(X), blk(X), rtol=1e-9, atol=1e-9)
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize(("c", "k", "h"), AFFINE[:3])
@pytest.mark.parametrize("biased", [True, False])
def test_planted_sigmoid_gated_blocks_with_affine_h_are_absorbable_and_verified(c: Fraction, k: Fraction, h: str,
                                                                               biased: bool) -> None:
    blk = step_planted(c, k, h, biased=biased)
    dec = decide(blk, tol=1e-7, timeout=30)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem.value == "index-set", dec.reason
    X = np.random.default_rng(0).standard_normal((32, 3)) * 3
    np.testing.assert_allclose(dec.blocks[0].witness.block(X), blk(X), rtol=1e-6, atol=1e-6)
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("gate", [*RELU_LIKE, "sigmoid"])
@pytest.mark.parametrize(("c", "k", "h"), AFFINE)
def test_generic_biased_gated_blocks_with_affine_h_are_not_absorbable_and_verified(gate: str, c: Fraction, k: Fraction,
                                                                                  h: str) -> None:
    blk = generic(gate, h, biased=True)
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "gated-skeleton", dec.reason
    assert "is affine" in dec.reason and dec.blocks[0].residual_free_class.biases
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]
    assert doc["blocks"][0]["value_normalisation"]["c"] == str(c)


@pytest.mark.parametrize("gate", [*RELU_LIKE, "sigmoid"])
def test_generic_bias_free_gated_blocks_with_k_nonzero_are_decided_about_biased_blocks(gate: str) -> None:
    """h(z) = z + 1 on a bias-free f: h(0) ≠ 0 (no linearization); the normalised block has b_up = 1,
    so the verdict is about residual-free blocks with biases (which contain the bias-free ones with h)."""
    blk = generic(gate, "expr:x + 1", biased=False)
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "gated-skeleton", dec.reason
    assert dec.blocks[0].residual_free_class.biases and "b_up = k·1" in dec.reason
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]


def test_bias_free_h_2x_keeps_the_linearization_argument() -> None:
    dec = decide(generic("swiglu", "expr:2*x", biased=False), timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "linearization"


def _enumerated_block() -> Block:
    """A biased SwiGLU block with h(z) = z + 1, d = 2, n = 8 (past the (Qg) columns' rank: its proof
    enumerates (Qg) and (Lg), which read b_up), whose b_up + 1 rounds in float64."""
    r = np.random.default_rng(5)
    d, n = 2, 8
    return Block(_dyadic(r.standard_normal((n, d))), r.standard_normal((d, n)), get_activation("swiglu"),
                 W_gate=r.standard_normal((n, d)), value_activation=get_activation("expr:x + 1"), b_gate=r.standard_normal(n),
                 b_up=r.standard_normal(n) / 3, b_down=r.standard_normal(d))


def test_rounded_normalisation_proves_nothing_against_f() -> None:
    """b_up + 1 rounds in float64 for these biases: where the normalised block's proof reads b_up
    (the enumeration of (Qg) and (Lg), d = 2, n = 8: (Qg) alone leaves sets), the verdict is
    unknown, naming the rounding."""
    blk = _enumerated_block()
    dec = decide_block(blk, timeout=30)
    assert dec.verdict is Verdict.UNKNOWN and "rounding in c·b_up + k" in dec.reason, dec.reason
    doc, rep = _verified(blk, decide(blk, timeout=30))
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("gate", ["swiglu", "expr:1/(1+exp(-x))"])
def test_rounded_biases_do_not_matter_to_a_proof_that_reads_none(gate: str) -> None:
    """The rank route of a ReLU-like gate (only S = ∅ meets (Qg); S = ∅ leaves M = 0) and the step
    gate's condition (M = −W_down[:,S] W_up[S,:]) read no bias: b_up + 1 rounding in float64 changes
    nothing, the verdict carries over to f, and the checker agrees; the same certificate whose
    argument claims a route that reads the biases is refused."""
    rng = np.random.default_rng(3)
    blk = generic(gate, "expr:x + 1", biased=True).replace(b_up=rng.standard_normal(6) / 3)
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and "reads W_gate, W_up and W_down only" in dec.reason, dec.reason
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]
    arg = doc["blocks"][0]["argument"]
    if arg.get("route") == "rank":
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["argument"]["route"] = "enumerate"
        assert not checker.verify_certificate(bad, blk).accepted


def test_constant_value_activation_is_left_unknown_with_a_reason() -> None:
    dec = decide_block(generic("swiglu", "expr:1 + 0*x", biased=True), timeout=30)
    assert dec.verdict is Verdict.UNKNOWN and "h is constant" in dec.reason, dec.reason


def test_normalise_value_reports_exactness() -> None:
    blk = generic("swiglu", "expr:x + 1", biased=True)
    nb, w_exact, b_exact = normalise_value(blk, Fraction(1, 3), Fraction(0))
    assert not w_exact and nb.value_identity
    nb, w_exact, b_exact = normalise_value(blk, Fraction(-3), Fraction(1, 2))
    assert w_exact and b_exact
    np.testing.assert_array_equal(nb.W_up, -3 * blk.W_up)


# ---------------------------------------------------------------------- the checker --
def _doc(gate: str = "swiglu", h: str = "expr:-3*x + 1/2") -> tuple[Block, dict]:
    blk = generic(gate, h, biased=True)
    doc, rep = _verified(blk, decide(blk, timeout=30))
    assert _accepted(rep)
    return blk, doc


@pytest.mark.parametrize(("field", "value"), [("c", "-2"), ("k", "1/3"), ("c", "0"), ("k", None), ("extra", 1)])
def test_tampered_normalisation_is_refused(field: str, value: object) -> None:
    blk, doc = _doc()
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["value_normalisation"][field] = value
    rep = checker.verify_certificate(bad, blk)
    assert not rep.accepted


def test_missing_normalisation_is_refused() -> None:
    blk, doc = _doc()
    bad = copy.deepcopy(doc)
    del bad["blocks"][0]["value_normalisation"]
    assert not checker.verify_certificate(bad, blk).accepted


def test_value_activation_that_is_not_affine_is_refused() -> None:
    """The model's h is Max(0, x) (not affine); the certificate names it (so identity passes) and
    claims a normalisation: the checker's own proof that h is affine fails."""
    blk, doc = _doc(h="expr:2*x")
    relu_h = get_activation("expr:Max(0,x)")
    model = blk.replace(value_activation=relu_h)
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["value_activation_function"] = {"name": relu_h.name, "text": str(relu_h.expr), "latex": relu_h.latex,
                                                    "srepr": relu_h.key}
    bad["blocks"][0]["activation"] = model.activation_name
    rep = checker.verify_certificate(bad, model)
    assert not rep.accepted
    assert any("for every real z" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def test_not_absorbable_from_a_rounded_normalisation_is_refused() -> None:
    """A forged certificate: the normalised block's not_absorbable, wrapped without the engine's
    downgrade although b_up + 1 rounds and its proof (the enumeration of (Qg) and (Lg)) reads b_up:
    the checker refuses it."""
    blk = _enumerated_block()
    af = analysis(blk.value_activation, "affine_form")
    nb, _, b_exact = normalise_value(blk, Fraction(1), Fraction(1))
    assert not b_exact
    inner = decide_block(nb, timeout=30)
    assert inner.verdict is Verdict.NOT_ABSORBABLE
    forged_bd = dataclasses.replace(inner, block=blk, properties=(dataclasses.replace(af, name="value_affine"), *inner.properties),
                                    residual_free_class=dataclasses.replace(inner.residual_free_class, activation=blk.activation_name))
    dec = decide(blk, timeout=30)
    forged = dataclasses.replace(dec, verdict=forged_bd.verdict, theorem=forged_bd.theorem, blocks=(forged_bd,))
    doc = build_certificate(forged, blk, seed=0).to_json()
    rep = checker.verify_certificate(doc, blk)
    assert not rep.accepted
    assert any("is f exactly" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def test_checker_rebuilds_the_normalised_block_and_its_exactness() -> None:
    blk = generic("swiglu", "expr:-3*x + 1/2", biased=True)
    ctx = _Ctx(report=Report(), tol=1e-9, seed=0)
    nb, exact, w_exact = normalised_value_block(ctx, "b", {"c": "-3", "k": "1/2"}, blk)
    assert exact and w_exact and nb.value_activation is None
    np.testing.assert_array_equal(nb.b_up, -3 * blk.b_up + 0.5)
    with pytest.raises(_Reject):
        normalised_value_block(ctx, "b", {"c": "3", "k": "1/2"}, blk)


# ------------------------------------- linearization: a factor bounded near 0 only --
def _gated(g: str, h: str, seed: int = 0, name: str = "block") -> Block:
    rng = np.random.default_rng(seed)
    d, n = 3, 4
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(g), W_gate=rng.standard_normal((n, d)),
                 value_activation=get_activation(h), name=name)


NEAR = [("softplus", "expr:x**2", "value-flat", "g"), ("softplus", "relu2", "value-flat", "g"),
        ("relu2", "expr:exp(x)", "gate-flat", "h")]
"""The factor next to the o(|z|) one is unbounded on R but has finite limits at 0 (softplus: log 2;
exp: 1): the units are still o(|x|) at 0."""


@pytest.mark.parametrize(("g", "h", "case", "bounded"), NEAR)
def test_a_factor_bounded_only_near_0_suffices_next_to_an_o_z_factor(g: str, h: str, case: str, bounded: str) -> None:
    blk = _gated(g, h)
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "linearization", dec.reason
    assert "bounded near 0" in dec.reason and dec.blocks[0].flat_at_zero
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]
    arg = doc["blocks"][0]["argument"]
    assert arg["case"] == case and arg[f"{bounded}_bounded_near_0"] is True and f"{bounded}_bounded" not in arg


def test_bounded_near_0_is_proved_by_finite_one_sided_limits() -> None:
    p = affine.bounded_near_zero(get_activation("softplus"))
    assert p.proved and str(p.value["right"]) == "log(2)"


@pytest.mark.parametrize(("field", "value"), [("g_bounded", True), ("g_bounded_near_0", None), ("h_bounded_near_0", True)])
def test_tampered_bounded_near_0_records_are_refused(field: str, value: object) -> None:
    """softplus is bounded near 0 but not on R: recording it bounded on R (or not at all, or h too) is refused."""
    blk = _gated("softplus", "expr:x**2")
    doc, rep = _verified(blk, decide(blk, timeout=30))
    assert _accepted(rep)
    bad = copy.deepcopy(doc)
    arg = bad["blocks"][0]["argument"]
    if field == "g_bounded":
        del arg["g_bounded_near_0"]
    if value is None:
        del arg[field]
    else:
        arg[field] = value
    assert not checker.verify_certificate(bad, blk).accepted


def test_depth_with_factors_bounded_near_0_only() -> None:
    st = Stack((_gated("softplus", "expr:x**2"), _gated("relu2", "expr:exp(x)", 1, "b2")))
    dec = decide(st, timeout=30)
    assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem.value == "depth", dec.reason
    doc, rep = _verified(st, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize(("c", "k", "h"), [(Fraction(1), Fraction(1), "expr:x + 1"), (Fraction(1, 3), Fraction(0), "expr:x/3")])
def test_planted_block_whose_normalisation_rounds_is_not_called_absorbable(c: Fraction, k: Fraction, h: str) -> None:
    """b_up/3 + 1 (or W_up/3) rounds in float64: the normalised block's witness has a proved bound
    for the normalised block only, and f differs from it by the rounding times the gates, which
    grows with |x| (like |x|² where c·W_up rounds: a relative error of 2.8e-7 at τ = 1e-9 was
    found), so that witness is not f's; where only the biases round, the same S flipped in f's own
    class is (absorbable), else the verdict is unknown; a certificate forged to claim the
    normalised block's witness is refused."""
    blk = step_planted(c, k, h, biased=True)
    blk = blk.replace(b_up=np.random.default_rng(5).standard_normal(blk.n) / 3)
    dec = decide(blk, tol=1e-7, timeout=30)
    if k:  # (c·W_up exact: the flip in f's own class)
        assert dec.verdict is Verdict.ABSORBABLE and "f's own class" in dec.reason, dec.reason
        assert dec.blocks[0].witness.block.value_activation is not None
    else:
        assert dec.verdict is Verdict.UNKNOWN and "rounding in" in dec.reason and "grows with |x|" in dec.reason, dec.reason
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]
    nb, _, _ = normalise_value(blk, c, k)
    inner = decide_block(nb, tol=1e-7, timeout=30, rescale=False)  # (the forgery: the normalised block's own evidence)
    assert inner.verdict is Verdict.ABSORBABLE
    af = analysis(blk.value_activation, "affine_form")
    forged_bd = dataclasses.replace(inner, block=blk, properties=(dataclasses.replace(af, name="value_affine"), *inner.properties),
                                    residual_free_class=dataclasses.replace(inner.residual_free_class, activation=blk.activation_name))
    forged = dataclasses.replace(dec, verdict=forged_bd.verdict, theorem=forged_bd.theorem, blocks=(forged_bd,))
    rep = checker.verify_certificate(build_certificate(forged, blk, seed=0).to_json(), blk)
    assert not rep.accepted
    assert any("is one for f" in f.claim or "is the flip of S" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


# ------------------------- a rounded c·b_up + k: the flip built in f's own class --
def _sigmoid_planted_rounding(h: str = "expr:2*x + 1", seed: int = 3, scale: float = 0.1) -> Block:
    """A biased GLU (sigmoid gate) with h(z) = 2z + 1 whose units 0, 1 flip the skip away
    (2·D_S U_S = −I: g(a) + g(−a) = 1), and whose b_up makes 2·b_up + 1 round in float64."""
    rng = np.random.default_rng(seed)
    d, n = 2, 4
    U = rng.standard_normal((n, d))
    U[:2] = np.eye(2)
    D = rng.standard_normal((d, n))
    D[:, :2] = -0.5 * np.eye(2)
    return Block(U, D, get_activation("sigmoid"), W_gate=rng.standard_normal((n, d)), b_gate=rng.standard_normal(n),
                 b_up=rng.standard_normal(n) * scale, b_down=rng.standard_normal(d), value_activation=get_activation(h))


@pytest.mark.parametrize(("seed", "scale"), [(3, 0.1), (4, 1.0), (5, 2.0**60), (6, 1e-3)])
def test_rounded_biases_keep_a_flip_built_in_fs_own_class(seed: int, scale: float) -> None:
    """(red team 41c/03) 2·b_up + 1 rounds, so the normalised block is not f and its flip is no
    witness for f; the same S flipped in f's own class (h and f's b_up kept, the output bias moved
    by D_S h(b_S) in exact rationals) is within a rounding of f: absorbable, and the checker
    rebuilds that witness itself. Measured against f in exact arithmetic at x = 0 and far out."""
    blk = _sigmoid_planted_rounding(seed=seed, scale=scale)
    assert not normalise_value(blk, Fraction(2), Fraction(1))[2]
    dec = decide(blk, timeout=30)
    assert dec.verdict is Verdict.ABSORBABLE, dec.blocks[0].reason
    wb = dec.blocks[0].witness.block
    assert wb.value_activation is not None and np.array_equal(wb.W_up, blk.W_up) and np.array_equal(wb.b_up, blk.b_up)
    # g − f is the constant b'_down − b_down − D_S h(b_S) (g(a) + g(−a) = 1, 2·D_S U_S = −I): one rounding of b'_down
    bs = [2 * Fraction(float(v)) + 1 for v in blk.b_up[:2]]
    for r in range(2):
        exact = Fraction(float(blk.b_down[r])) + sum(Fraction(float(blk.W_down[r, i])) * bs[i] for i in range(2))
        assert abs(Fraction(float(wb.b_down[r])) - exact) <= abs(exact) * Fraction(1, 2**52)
    doc, rep = _verified(blk, dec)
    assert _accepted(rep), [f.claim for f in rep.failures + rep.not_rechecked]
    # the normalised block's own flip (b_down moved by D_S fl(2·b_S + 1)) in its place: refused
    bad = copy.deepcopy(doc)
    wrec = bad["blocks"][0]["witness"]["block"]["weights"]
    key = next(k for k in wrec if k.endswith("b_down"))
    wrec[key] = {**wrec[key], "sha256": "0" * 64}
    assert not checker.verify_certificate(bad, blk).accepted


def test_rounded_biases_with_a_flip_off_the_skip_stay_unknown() -> None:
    """The same block with its skip moved by 10⁻⁶: no flip is within τ = 10⁻⁹ of f, in either class."""
    blk = _sigmoid_planted_rounding()
    blk = blk.replace(skip=np.eye(2) * (1 + 1e-6))
    dec = decide_block(blk, timeout=30)
    assert dec.verdict is not Verdict.ABSORBABLE, dec.reason


@pytest.mark.parametrize("h", ["expr:2*x + 1", "expr:-3*x + 1/2", "expr:x**2 + 1"])
def test_f0_lower_bounds_read_the_value_activation(h: str) -> None:
    """|f(0)|∞ = |W_down (g(b_gate) ⊙ h(b_up)) + b_down|∞: both sides' lower bounds (each its own
    code) read h(b_up), not b_up — below the value at 50 digits and within 10⁻¹⁰ of it."""
    import mpmath

    from absorb.engine.witness import f0_lower
    from absorb.verify._at_zero import _f0_lower

    blk = _sigmoid_planted_rounding(h=h, seed=8, scale=1.0)
    expr = get_activation(h).expr
    (x,) = expr.free_symbols
    with mpmath.workdps(50):
        sig = [1 / (1 + mpmath.exp(-mpmath.mpf(float(v)))) for v in blk.b_gate]
        hv = [mpmath.mpf(str(expr.subs(x, Fraction(float(v))).evalf(60))) for v in blk.b_up]
        f0 = [abs(sum(mpmath.mpf(float(blk.W_down[r, i])) * sig[i] * hv[i] for i in range(blk.n)) + mpmath.mpf(float(blk.b_down[r])))
              for r in range(blk.d)]
        top = max(f0)
    for lo in (f0_lower(blk), _f0_lower(blk)):
        assert lo <= top and lo >= top * (1 - 1e-10), (lo, top)


def test_stack_f0_bounds_read_the_value_activation_at_zero() -> None:
    """A gated block with no b_up and h(z) = 2z + 1: its hidden layer at 0 is g(b_gate)·h(0) = g(b_gate), not 0. The
    checker's bounds of |f(0)|∞ (stacks' composed bound) took a gated block without b_up as exactly b_down (0 here)."""
    from absorb.verify._compose import _f0_bounds

    blk = _sigmoid_planted_rounding(seed=9).replace(b_up=None, b_down=None)
    sig = 1 / (1 + np.exp(-blk.b_gate))
    exact = float(np.max(np.abs(blk.W_down @ sig)))
    lo, hi = _f0_bounds(blk)
    assert lo <= exact <= hi and lo > 0.99 * exact, (lo, exact, hi)
