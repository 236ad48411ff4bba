"""A stack of ReLU blocks written ``expr:Max(0,x)``: the composed witness's bound needs σ's
Lipschitz constant, derived from the expression on both sides (the producer's structural bound,
the checker's exact max |slope| by pieces). Within the tolerance: absorbable and verified; over
it (test_witness_compose.py's cone stack): unknown, as for the built-in ReLU."""

from __future__ import annotations

import numpy as np
import pytest

from absorb import Block, Stack, decide, get_activation
from absorb.certificate import build_certificate
from absorb.verify.checker import verify_certificate

TOL = 1e-6


def _cone_stack(act: str, delta: float, K: float = 3.0) -> Stack:
    a = get_activation(act)
    U1, D1, M1 = np.array([[-1.0, 0.0], [1.0, 0.0]]), np.array([[1.0, -1.0], [0.0, 0.0]]), np.array([[2.0, 0.0], [0.0, delta]])
    return Stack((Block(U1, D1, a, skip=M1, name="blocks.0"), Block(np.eye(2), -K * np.eye(2), a, skip=K * np.eye(2), name="blocks.1")))


@pytest.mark.parametrize("act", ["expr:Max(0,x)", "expr:(x+Abs(x))/2"])
def test_stack_of_expression_relu_witnesses_is_absorbable_and_verifies(act: str) -> None:
    st = _cone_stack(act, 0.1 * TOL)
    dec = decide(st, tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason
    rep = verify_certificate(build_certificate(dec, st, seed=0).to_json(), st)
    assert rep.accepted and not rep.not_rechecked


@pytest.mark.parametrize("act", ["relu", "expr:Max(0,x)"])
def test_stack_over_the_tolerance_stays_unknown(act: str) -> None:
    dec = decide(_cone_stack(act, 0.5 * TOL), tol=TOL)
    assert dec.verdict.value == "unknown" and "not proved within the tolerance" in dec.reason


def test_stack_of_a_smooth_expression_has_no_constant() -> None:
    """SiLU written another way than the built-in's form (x/(1+exp(-x)) is the built-in as written, and gets its constant)."""
    dec = decide(_cone_stack("expr:x*exp(x)/(1+exp(x))", 0.1 * TOL), tol=TOL)
    assert dec.verdict.value != "absorbable"
