"""The symbolic engine proves or refutes each property exactly as the mathematics says."""

from __future__ import annotations

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
