"""The checker's own facts about σ (exact at break points, by pieces elsewhere) and its
evaluation of witnesses on points exactly on the kink/gate hyperplanes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from absorb.cli import main
from absorb.model.activations import get_activation
from absorb.verify import _symbolic, _theorems, _weights, checker

STEP = "expr:1-0**Max(0,x)"  # Heaviside with H(0) = 0: g(z) + g(−z) = 1 except at z = 0
U = np.array([[1.0, 0], [0, 1], [1, 1]])
D = np.array([[-1.0, 0, 1], [0, -1, 2]])  # D[:, {0,1}] U[{0,1}] = −I
G = np.array([[1.0, 2], [3, -1], [0.5, 1]])


def _step_certificate(tmp_path: Path) -> tuple[Path, Path]:
    """The certificate an engine that omits z = 0 writes for the step gate: made honestly for
    the sigmoid gate (same weights, same S, c = 1), then given the step gate's activation."""
    honest = tmp_path / "sigmoid.npz"
    np.savez(honest, W_up=U, W_down=D, W_gate=G, activation=np.array("sigmoid"))
    cert = tmp_path / "step.json"
    assert main(["check", str(honest), "--certificate", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    step = get_activation(STEP)
    b = doc["blocks"][0]
    assert b["verdict"] == "absorbable" and b["witness"]["S"] == [0, 1]
    b["activation"] = f"glu[{step.name}]"
    b["activation_function"] = {"name": step.name, "text": str(step.expr), "latex": sp.latex(step.expr), "srepr": sp.srepr(step.expr)}
    model = tmp_path / "step.npz"
    np.savez(model, W_up=U, W_down=D, W_gate=G, activation=np.array(STEP))
    from absorb.io import load

    blk = load(model)  # (the class's sentence names the activation: a forger rewrites it too)
    b["class"]["statement"] = f"residual-free {blk.kind} {blk.activation_name} blocks of width {blk.n}, bias-free"
    doc["input"]["path"] = str(model)
    cert.write_text(json.dumps(doc))
    return model, cert


def test_step_gate_certificate_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = _step_certificate(tmp_path)
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 1
    out = capsys.readouterr().out
    assert "rejected: block: g(z) + g(−z) = c" in out
    assert main(["verify", str(cert), str(model), "--strict"]) == 1


def test_kink_points_catch_the_step_gate_without_the_flip_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Second line of defence: even told c = 1, the rebuilt witness differs from f on the
    gate hyperplanes (random inputs never hit them)."""
    model, cert = _step_certificate(tmp_path)
    monkeypatch.setattr(_theorems, "flip_constant", lambda e, g: sp.Integer(1))
    from absorb.io import load

    rep = checker.verify_certificate(json.loads(cert.read_text()), load(model))
    assert not rep.accepted
    assert "kink/gate hyperplanes" in rep.failures[0].claim
    # and random inputs alone pass: the kink points are what finds it
    monkeypatch.setattr(_weights, "_kink_points", lambda blocks, d, evaluated=None: np.zeros((0, d)))
    rep = checker.verify_certificate(json.loads(cert.read_text()), load(model))
    assert rep.accepted


def test_kink_points_lie_exactly_on_the_hyperplanes() -> None:
    rng = np.random.default_rng(1)
    from absorb import Block

    blk = Block(rng.standard_normal((7, 5)), rng.standard_normal((5, 7)), get_activation("relu"))
    X = _weights._kink_points([blk], 5)
    hits = sum(int(np.any(_weights._dot_rows(blk.W_up, x) == 0)) for x in X)
    assert hits == len(X)


@pytest.mark.parametrize("name, gated_c, ungated_c", [
    ("relu", None, 1), ("leaky_relu", None, sp.Rational(101, 100)), ("gelu", None, 1), ("silu", None, 1),
    ("sigmoid", 1, None), ("tanh", None, None), ("softplus", None, 1), ("relu2", None, None),
    (STEP, None, None), ("expr:1/(1+exp(-x))-0**Abs(x)/2", None, None), ("expr:Abs(x)", None, None),
])
def test_flip_constant_by_pieces(name: str, gated_c, ungated_c) -> None:
    e = get_activation(name).expr
    assert _symbolic.flip_constant(e, True) == gated_c
    assert _symbolic.flip_constant(e, False) == ungated_c


def test_other_facts_by_pieces() -> None:
    act = lambda s: get_activation(s).expr  # noqa: E731
    assert _symbolic.homogeneous_of_degree(act("relu"), 1) and _symbolic.homogeneous_of_degree(act("relu2"), 2)
    assert not _symbolic.homogeneous_of_degree(act("relu"), 2) and not _symbolic.homogeneous_of_degree(act("gelu"), 1)
    assert not _symbolic.homogeneous_of_degree(act("expr:Max(0,x-1)"), 1)  # a break point off 0
    assert _symbolic._gate_derivative_at_zero(act("silu")) == sp.Rational(1, 2)
    assert _symbolic._gate_derivative_at_zero(act(STEP)) is None
    assert _symbolic.is_bounded(act("tanh")) and _symbolic.is_bounded(act("sigmoid"))
    assert not _symbolic.is_bounded(act(STEP))  # bounded but not continuous: the theorem needs continuity
    assert not _symbolic.is_bounded(act("relu"))
    assert _symbolic.is_relu_or_gelu(act("relu")) and _symbolic.is_relu_or_gelu(act("expr:(x+Abs(x))/2"))
    assert not _symbolic.is_relu_or_gelu(act("expr:Max(0,x)+0**Abs(x)"))  # differs from ReLU at 0 only
    assert _symbolic.is_identity(act("identity")) and not _symbolic.is_identity(act("expr:x+0**Abs(x)-1"))


def test_kink_points_stay_within_their_budget() -> None:
    """At model scale the checker's own evaluation would cost seconds per point: the budget
    (multiply-adds through every evaluated block) caps the number of points, down to none."""
    from absorb import Block

    rng = np.random.default_rng(2)
    small = Block(rng.standard_normal((40, 8)), rng.standard_normal((8, 40)), get_activation("relu"))
    X = _weights._kink_points([small, small], 8)
    assert 3 <= len(X) <= 1 + 2 * 2 * 40
    cost = 2 * (40 * 8 * 3 + 64)
    old = _weights.KINK_WORK
    try:
        _weights.KINK_WORK = 5 * cost
        assert len(_weights._kink_points([small, small], 8)) <= 5
        _weights.KINK_WORK = cost - 1
        assert len(_weights._kink_points([small, small], 8)) == 0
    finally:
        _weights.KINK_WORK = old


def _random_sigma(data) -> sp.Expr:
    """A random piecewise-linear-ish σ: ramps, absolute values and indicators 0**|x − b|
    (1 at b, 0 elsewhere), with small integer coefficients and break points."""
    from hypothesis import strategies as st

    x = sp.Symbol("x", real=True)
    terms = []
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["ramp", "abs", "dot", "lin"]))
        c = sp.Integer(data.draw(st.integers(-3, 3)))
        b = sp.Rational(data.draw(st.integers(-4, 4)), data.draw(st.integers(1, 2)))
        terms.append(c * {"ramp": sp.Max(0, x - b), "abs": sp.Abs(x - b), "dot": 0 ** sp.Abs(x - b), "lin": x}[kind])
    return sp.Add(*terms)


from hypothesis import example, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.data())
def test_flip_constant_claims_hold_exactly_at_break_points_and_between(data) -> None:
    """Whenever the checker claims σ(z) − σ(−z) = cz (or g(z) + g(−z) = c), the identity holds
    exactly (sympy's own evaluation) at every ±break point, 0 and rational points between."""
    e = _random_sigma(data)
    x = sp.Symbol("x", real=True)
    pts = {sp.Integer(0)} | {s * sp.Rational(k, 4) for k in range(0, 21) for s in (1, -1)}
    for gated in (False, True):
        c = _symbolic.flip_constant(e, gated)
        if c is None:
            continue
        for z in pts:
            lhs = e.subs(x, z) + e.subs(x, -z) if gated else e.subs(x, z) - e.subs(x, -z)
            assert sp.simplify(lhs - (c if gated else c * z)) == 0, (e, gated, c, z)


@example(k=0)
@given(st.integers(0, 3))
def test_indicator_at_zero_breaks_the_flip_identity(k: int) -> None:
    """σ = relu + k'·0**|x| (k' = k + 1): σ(z) − σ(−z) = z except at z = 0 — which is
    harmless there (both sides 0), so the ungated identity holds; the gated one for a step
    with a dot at 0 does not."""
    x = sp.Symbol("x", real=True)
    kk = k + 1
    assert _symbolic.flip_constant(sp.Max(0, x) + kk * 0 ** sp.Abs(x), False) == 1
    assert _symbolic.flip_constant(1 - 0 ** sp.Max(0, x) + kk * 0 ** sp.Abs(x), True) is None
