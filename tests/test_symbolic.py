"""The symbolic engine proves or refutes each property exactly as the mathematics says."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from absorb import get_activation
from absorb.symbolic import Status, bounded, flip_identity, homogeneity, vanishing_gate

P, R, U = Status.PROVED, Status.REFUTED, Status.UNKNOWN

# name: (homogeneity, k), vanishing gate, flip (ungated, c), flip (gated), bounded
TABLE = {
    "relu": ((P, 1), R, (P, 1), R, R),
    "relu2": ((P, 2), P, (R, None), R, R),
    "gelu": ((R, None), P, (P, 1), R, R),
    "gelu_tanh": ((R, None), P, (P, 1), R, R),
    "silu": ((R, None), P, (P, 1), R, R),
    "quick_gelu": ((R, None), P, (P, 1), R, R),
    "leaky_relu": ((P, 1), R, (P, "101/100"), R, R),
    "sigmoid": ((R, None), R, (R, None), P, P),
    "tanh": ((R, None), P, (R, None), R, P),
    "softplus": ((R, None), R, (P, 1), R, R),  # softplus(z) − softplus(−z) = z holds (theory.md lists it as failing)
    "identity": ((P, 1), P, (P, 2), R, R),
    "expr:Max(0,x)**3": ((P, 3), P, (R, None), R, R),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_property_table(name: str) -> None:
    act = get_activation(name)
    (hs, k), vg, (fs, c), fg, bd = TABLE[name]
    h = homogeneity(act)
    assert h.status is hs
    if k is not None:
        assert h.value["k"] == k
    assert vanishing_gate(act).status is vg
    f = flip_identity(act, gated=False)
    assert f.status is fs
    if c is not None:
        assert str(f.value["c"]) == str(c)
    assert flip_identity(act, gated=True).status is fg
    assert bounded(act).status is bd


def test_refutations_carry_witnesses_and_proofs_carry_steps() -> None:
    h = homogeneity(get_activation("gelu"))
    assert h.status is R and h.witness
    p = homogeneity(get_activation("relu2"))
    assert p.steps and all(isinstance(s, str) for s in p.steps)
    w = vanishing_gate(get_activation("leaky_relu")).witness
    assert (w["right"], w["left"]) == (1, sp.Rational(1, 100))


# --- every real z, z = 0 included: step functions (0**0 = 1 in sympy and numpy) ------------
H0, H1, HHALF = "expr:1-0**Max(0,x)", "expr:0**Max(0,-x)", "expr:(1-0**Max(0,x)+0**Max(0,-x))/2"  # H(0) = 0, 1, 1/2


@pytest.mark.parametrize("spec", [H0, H1])
def test_step_gate_flip_identity_fails_at_zero(spec: str) -> None:
    # g(z) + g(−z) = 1 for z ≠ 0, but 2·g(0) ≠ 1: the flipped block differs from f on the gate hyperplanes
    f = flip_identity(get_activation(spec), gated=True)
    assert f.status is R and f.witness["z"] == 0


def test_half_step_gate_keeps_its_flip_identity() -> None:
    f = flip_identity(get_activation(HHALF), gated=True)
    assert f.status is P and f.value["c"] == 1


def test_step_gate_is_not_called_absorbable() -> None:
    from absorb import Block, Verdict, decide_block

    U = np.array([[1.0, 0], [0, 1], [1, 1]])
    D = np.array([[-1.0, 0, 1], [0, -1, 2]])
    G = np.array([[1.0, 2], [3, -1], [0.5, 1]])
    for spec, want in ((H0, Verdict.UNKNOWN), (H1, Verdict.UNKNOWN), (HHALF, Verdict.ABSORBABLE)):
        blk = Block(W_up=U, W_down=D, W_gate=G, activation=get_activation(spec))
        assert decide_block(blk).verdict is want, spec
    # and the reason it is not: on the hyperplane W_gate x = 0 the flipped block is off by g(0)·(u·x)
    x = np.array([2.0, -1.0])  # gate row 0 vanishes: 1·2 + 2·(−1) = 0
    blk = Block(W_up=U, W_down=D, W_gate=G, activation=get_activation(H0))
    flipped = blk.replace(W_gate=np.where(np.arange(3)[:, None] < 2, -G, G), skip=np.zeros((2, 2)))
    assert not np.allclose(blk(x[None, :]), flipped(x[None, :]))


@pytest.mark.parametrize("spec", [H0, H1, "expr:tanh(x)+0**Abs(x)"])
def test_discontinuous_functions_are_not_called_bounded_or_continuous(spec: str) -> None:
    b = bounded(get_activation(spec))
    assert b.status is U and "continuous" in b.statement


def test_step_degree_zero_is_true_at_every_point() -> None:
    act = get_activation(H0)
    h = homogeneity(act)
    assert h.status is P and h.value["k"] == 0
    z = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    for t in (0.25, 1.0, 7.0):
        np.testing.assert_array_equal(act(t * z), act(z))
    assert homogeneity(get_activation(H1)).status is R  # σ(0) = 1 ≠ 0: no degree k > 0


def test_vanishing_gate_is_not_proved_across_a_jump() -> None:
    # g(0) = 0 but g jumps (g = x − 1 away from 0): infinite one-sided derivative
    assert vanishing_gate(get_activation("expr:x+0**Abs(x)-1")).status is R
    # differentiable at 0, but sympy's limits are not trusted for a discontinuous g
    assert vanishing_gate(get_activation("expr:x*0**Max(0,x-1)")).status is U


def test_ungated_flip_with_a_jump_holds_at_every_point() -> None:
    act = get_activation("expr:x+0**Abs(x)-1")  # σ(z) − σ(−z) = 2z, also at z = 0
    f = flip_identity(act, gated=False)
    assert f.status is P and f.value["c"] == 2
    z = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_array_equal(act(z) - act(-z), 2 * z)


def test_properties_refuse_to_claim_outside_the_invariant() -> None:
    from absorb.model.activations import Activation, X
    from absorb.symbolic import analyse

    bad = Activation(name="sqrt", expr=sp.sqrt(X), np_fn=np.sqrt)  # built by hand: not real on x < 0
    assert all(p.status is U for p in analyse(bad.expr).values())
    assert homogeneity(bad).status is U


def test_bounded_refutes_only_on_an_infinite_limit() -> None:
    assert bounded(get_activation("expr:x*sin(x)")).status is U  # sympy gives AccumBounds(-oo, oo)
    assert bounded(get_activation("expr:1/(2-cos(x))")).status is P


def test_a_failing_analysis_is_unknown_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.symbolic import properties as props

    def boom(e: sp.Expr) -> None:
        raise NotImplementedError("sympy cannot")

    monkeypatch.setattr(props, "ANALYSES", tuple((k, boom if k == "bounded" else fn) for k, fn in props.ANALYSES))
    out = props.analyse(get_activation("tanh").expr)
    assert out["bounded"].status is U and out["homogeneity"].status is R
