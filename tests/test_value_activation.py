"""Gated blocks with a value activation h: f(x) = M x + W_down (g(W_gate x) ⊙ h(W_up x)).

The linearization argument (g(0) = h(0) = 0, both with finite one-sided derivatives at 0, so every
unit is O(|x|²)) and the degree argument (g, h homogeneous of degrees k_g + k_h ≠ 1) decide
bias-free blocks; every certificate is re-derived by the checker. Where a hypothesis fails
(h(0) ≠ 0, biases) the verdict stays unknown and names it; blocks that are absorbable by
construction are never called not absorbable."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sympy as sp

from absorb.certificate.build import build_certificate
from absorb.engine.decide import decide
from absorb.model.activations import get_activation
from absorb.model.block import Block, Stack
from absorb.symbolic import properties as props
from absorb.verify import checker
from absorb.verify._symbolic import vanishing_slopes

GATES = ("swiglu", "geglu", "reglu")
VANISHING = ("tanh", "relu", "silu", "gelu", "expr:x**3")


def _block(gate: str, h: str | None, seed: int = 0, d: int = 3, n: int = 4, **kw: object) -> Block:
    rng = np.random.default_rng(seed)
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(gate), W_gate=rng.standard_normal((n, d)),
                 value_activation=None if h is None else get_activation(h), **kw)


def _verified(model: Block | Stack, dec: object) -> checker.Report:
    doc = build_certificate(dec, model, seed=0).to_json()
    return checker.verify_certificate(doc, model)


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("h", VANISHING)
def test_vanishing_value_activation_is_not_absorbable_and_verified(gate: str, h: str) -> None:
    blk = _block(gate, h)
    dec = decide(blk, timeout=30)
    assert dec.verdict.value == "not_absorbable", dec.reason
    # ReGLU (homogeneous gate) with a homogeneous h: the degree argument answers first
    expect = "degree" if gate == "reglu" and h in ("relu", "expr:x**3") else "linearization"
    assert dec.theorem.value == expect, dec.reason
    rep = _verified(blk, dec)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("h", ["sigmoid", "softplus", "expr:Max(-7, Min(7, x)) + 1"])
def test_value_activation_not_vanishing_at_0_stays_unknown_naming_h0(h: str) -> None:
    """h(0) ≠ 0: the unit has a linear part g'(0)·h(0)·W_gate x, the argument says nothing."""
    dec = decide(_block("swiglu", h), timeout=30)
    assert dec.verdict.value == "unknown", dec.reason
    assert "h(0) = " in dec.reason and "≠ 0" in dec.reason and "linearization" in dec.reason, dec.reason


@pytest.mark.parametrize("kw", [{"b_up": True}, {"b_gate": True}, {"b_down": True}, {"allow_biases": True}])
def test_biases_keep_the_argument_silent(kw: dict[str, bool]) -> None:
    """The argument covers bias-free f and bias-free residual-free blocks only."""
    rng = np.random.default_rng(1)
    allow = kw.pop("allow_biases", False)
    sizes = {"b_up": 4, "b_gate": 4, "b_down": 3}
    blk = _block("swiglu", "tanh", **{k: rng.standard_normal(sizes[k]) for k in kw})
    dec = decide(blk, timeout=30, allow_biases=allow)
    assert dec.verdict.value == "unknown", dec.reason
    assert "linearization argument" in dec.reason and "bias-free" in dec.reason, dec.reason


def test_absorbable_by_construction_is_never_not_absorbable() -> None:
    """M = 0 with h = tanh is trivially absorbable; h ≡ 1 with D_S G_S = −I (an ungated SiLU MLP in
    disguise) is absorbable by flipping S, and h(0) = 1 keeps the linearization argument silent."""
    blk = _block("swiglu", "tanh", skip=np.zeros((3, 3)))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("absorbable", "trivial")
    rng = np.random.default_rng(3)
    U, G, D = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    D[:, [0, 1, 2]] = -np.linalg.pinv(G[[0, 1, 2]])
    one = Block(U, D, get_activation("swiglu"), W_gate=G, value_activation=get_activation("expr:1"))
    Gf = G.copy()
    Gf[[0, 1, 2]] *= -1  # silu(−z) = silu(z) − z: the flipped block equals f without the skip
    x = rng.standard_normal((50, 3))
    assert np.allclose(one(x), one.replace(W_gate=Gf, skip=np.zeros((3, 3)))(x), atol=1e-9)
    dec = decide(one, timeout=30)
    assert dec.verdict.value != "not_absorbable" and "h(0) = 1 ≠ 0" in dec.reason, dec.reason


def test_identity_value_activation_gives_todays_linearization_certificate() -> None:
    """h(z) = z spelled out is the linear value branch: the argument and the theorem record are the
    paper's result 3 (g'(0) and the exact Jacobian), not the value-activation variant."""
    plain, spelled = _block("swiglu", None), _block("swiglu", "expr:x")
    a, b = decide(plain), decide(spelled)
    assert (a.verdict, a.theorem, a.reason) == (b.verdict, b.theorem, b.reason)
    doc = build_certificate(a, plain, seed=0).to_json()
    blk = doc["blocks"][0]
    assert set(blk["argument"]) == {"M_nonzero_entry", "g0", "dg0", "steps", "jacobian_f_at_0"}
    assert [p["name"] for p in blk["properties"]] == ["vanishing_gate"]
    assert "value activation" not in blk["theorem"]["statement"]


def test_depth_with_value_activations_is_verified() -> None:
    """Two bias-free SwiGLU blocks with h = tanh: each flat at 0 (O(|x|²)), skip product I ≠ 0."""
    st = Stack((_block("swiglu", "tanh", seed=4, name="blocks.0"), _block("reglu", "relu", seed=5, name="blocks.1")))
    dec = decide(st, timeout=30)
    assert (dec.verdict.value, dec.theorem.value) == ("not_absorbable", "depth"), dec.reason
    rep = _verified(st, dec)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize(("expr", "slopes"), [("Max(0, x)", (1, 0)), ("Abs(x)", (1, -1)), ("x**2", (0, 0)),
                                              ("tanh(2*x)", (2, 2)), ("sqrt(Abs(x))", None), ("x + 1", None),
                                              ("3*Max(0, x) + Min(0, x)", (3, 1))])
def test_vanishing_slopes_producer_and_checker_agree(expr: str, slopes: tuple[int, int] | None) -> None:
    """|σ(z)| ≤ C|z| near 0 from σ(0) = 0 and finite one-sided derivatives: the σ analysis and the
    checker's own route by pieces give the same slopes, and neither claims it where it fails."""
    act = get_activation("expr:" + expr)
    pr = props.vanishing_slopes(act)
    mine = vanishing_slopes(act.expr)
    if slopes is None:
        assert not pr.proved and mine is None, (pr.statement, mine)
        return
    assert pr.proved, pr.statement
    assert (pr.value["right"], pr.value["left"]) == tuple(sp.Integer(s) for s in slopes)
    assert mine is not None and tuple(sp.nsimplify(v) for v in mine) == tuple(sp.Integer(s) for s in slopes)


def test_a_non_o_z_value_activation_is_refused() -> None:
    """h(z) = sqrt|z| vanishes at 0 but is not O(|z|) (infinite one-sided derivatives): the stated
    hypothesis fails, so no verdict is claimed (the unit is still o(|x|) with a SiLU gate; a finer
    order count is not implemented)."""
    pr = props.vanishing_slopes(get_activation("expr:sqrt(Abs(x))"))
    assert pr.status.value == "refuted" and "infinite" in pr.statement
    dec = decide(_block("swiglu", "expr:sqrt(Abs(x))"), timeout=30)
    assert dec.verdict.value == "unknown" and "h: " in dec.reason, dec.reason


@pytest.mark.parametrize(("gate", "h", "case"), [("glu", "expr:x**2", "value-flat"), ("glu", "expr:Max(0, x)**2", "value-flat"),
                                                 ("expr:Max(0, x)**2", "sigmoid", "gate-flat"),
                                                 ("expr:Max(0, x)**2", "expr:Max(-7, Min(7, x)) + 1", "gate-flat"),
                                                 # bounded on R with no limits at ±∞: recorded (and checked) as bounded near 0
                                                 ("expr:x**2", "expr:cos(x)", "gate-flat"), ("expr:cos(x)", "expr:x**2", "value-flat")])
def test_a_bounded_factor_times_an_o_z_factor_is_not_absorbable_and_verified(gate: str, h: str, case: str) -> None:
    """One factor bounded on R, the other vanishing at 0 with both one-sided derivatives 0: every
    unit is o(|x|) (GLU's sigmoid gate with h = x²; a ReLU² gate with gpt-oss's clamp + 1)."""
    blk = _block(gate, h, seed=6)
    dec = decide(blk, timeout=30)
    assert (dec.verdict.value, dec.theorem.value) == ("not_absorbable", "linearization"), dec.reason
    assert "o(|x|)" in dec.reason
    doc = build_certificate(dec, blk, seed=0).to_json()
    assert doc["blocks"][0]["argument"]["case"] == case
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
    for bad_case in {"product", "value-flat", "gate-flat"} - {case}:  # the other cases' hypotheses fail on g, h
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["argument"]["case"] = bad_case
        assert not checker.verify_certificate(bad, blk).accepted, bad_case


def test_a_bounded_factor_times_a_slope_is_unknown() -> None:
    """GLU (bounded gate, g(0) = 1/2) with h = ReLU (slopes 1, 0: not o(|z|)): the unit has the linear
    part g(0)·ReLU(w_u·x), no argument applies."""
    dec = decide(_block("glu", "relu"), timeout=30)
    assert dec.verdict.value == "unknown" and "g(0) = 1/2 ≠ 0" in dec.reason, dec.reason
