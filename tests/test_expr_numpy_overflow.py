"""Overflow inside a user expression's numpy form (absorb/model/_expr_numpy.py): an entry whose
float64 value is ±inf or nan at a finite argument is evaluated again in mpmath, so σ is finite
wherever its value is (log(1 + exp(x)) at x = 800 is 800, not inf), and an entry that has no
finite float64 value, or that mpmath gives up on, keeps its inf or nan (never a guess)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import absorb.model._expr_numpy as E
from absorb import Block, decide, get_activation
from absorb.model import _expr


def _form(text: str):  # type: ignore[no-untyped-def]
    import sympy as sp

    return E.numpy_form(sp.srepr(_expr._validate(text, _expr.parse(text))))


REFERENCE = {  # the exact function, for mpmath at 60 digits
    "log(1+exp(x))": lambda x: mp.log(1 + mp.exp(x)),
    "x*exp(x)/(1+exp(x))": lambda x: x * mp.exp(x) / (1 + mp.exp(x)),
    "log(cosh(x)) + x/2": lambda x: mp.log(mp.cosh(x)) + x / 2,
    "log(1+exp(2*x))/2": lambda x: mp.log(1 + mp.exp(2 * x)) / 2,
    "x*tanh(log(1+exp(x)))": lambda x: x * mp.tanh(mp.log(1 + mp.exp(x))),
}


@pytest.mark.parametrize("text", sorted(REFERENCE))
def test_overflowed_entries_are_evaluated_again(text: str) -> None:
    z = np.array([-1e6, -800.0, -710.0, -3.0, 0.0, 2.5, 709.0, 710.0, 800.0, 1e4, 1e6])
    got = _form(text)(z)
    assert np.all(np.isfinite(got)), (text, got)
    with mp.workdps(60):
        want = np.array([float(REFERENCE[text](mp.mpf(v))) for v in z.tolist()])
    assert np.all(np.abs(got - want) <= 1e-13 * np.abs(want) + 1e-300), (text, got, want)


@pytest.mark.parametrize("text, x", [("exp(x)", 800.0), ("exp(exp(exp(x)))", 10.0), ("x**2", 1e300),
                                     ("log(1+exp(x))", 1e300), ("x*exp(x)/(1+exp(2*x))", 1e300)])
def test_an_entry_without_a_finite_evaluation_stays_infinite(text: str, x: float) -> None:
    """Out of float64 range (exp(800)), or past the exponent bound mpmath is given (exp of
    exp of exp: no unbounded work; exp of 1e300, though the quotient is finite): not replaced
    by anything."""
    v = _form(text)(np.array([x, 1.0]))
    assert not np.isfinite(v[0]) and np.isfinite(v[1])


def test_an_undefined_value_is_not_guessed() -> None:
    f = E.numpy_form("log(Symbol('x', real=True))")
    v = f(np.array([-1.0, 0.0, np.inf, np.nan]))
    assert np.isnan(v[0]) and v[1] == -np.inf and v[2] == np.inf and np.isnan(v[3])


def test_at_most_a_bounded_number_of_entries_are_evaluated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(E, "_MP_MAX_ENTRIES", 3)
    v = _form("log(1+exp(x))")(np.full((2, 3), 800.0))
    assert np.sum(v == 800.0) == 3 and np.sum(np.isinf(v)) == 3


def test_a_written_out_softplus_flip_is_absorbable() -> None:
    """σ(z) − σ(−z) = z; S = {0, 1} with W_down[:, S] W_up[S, :] = −I exactly: the flip witness is
    evaluated at pre-activations past 709 (points at scale 10², weights up to 3)."""
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -2], [0.5, 3]])
    D = np.zeros((2, 5))
    D[:, 0], D[:, 1] = [-1, 0], [0, -1]
    D[:, 2:] = [[0.5, -0.25, 0.75], [1.25, 0.5, -1]]
    dec = decide(Block(U, D, get_activation("expr:log(1+exp(x))")))
    assert dec.verdict.value == "absorbable", dec.reason


def test_a_call_whose_first_entries_all_fail_tries_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """exp of 1e300 is given up; with a probe of 2 the entry after them is not tried (stays
    nan), with the default one it is (800·e^800/(1 + e^1600) underflows to 0)."""
    f = _form("x*exp(x)/(1+exp(2*x))")
    z = np.array([1e300, 2e300, 800.0])
    assert f(z)[2] == 0.0
    monkeypatch.setattr(E, "_MP_PROBE", 2)
    v = f(z)
    assert np.isnan(v).all()
