"""The checker's break points of σ are certified, not taken from sympy's ``solveset``: each
claimed zero of a switching function is a zero by exact substitution, and no other zero lies
in the piece (exact real-root isolation for polynomials, a sign or monotonicity argument
otherwise); else the decomposition is refused (the checker declines)."""

from __future__ import annotations

import pytest
import sympy as sp

from absorb.verify import _pieces
from absorb.verify._pieces import Refused, break_points

X = sp.Symbol("x")


@pytest.mark.parametrize(("expr", "want"), [
    ("Max(0, x)", [0]),
    ("Abs(x**2 - 2)", [-sp.sqrt(2), sp.sqrt(2)]),
    ("Max(0, x**3 - 2*x)", [-sp.sqrt(2), 0, sp.sqrt(2)]),
    ("Max(0, exp(x) - 2)", [sp.log(2)]),
    ("log(1 + exp(x))", []),
    ("Max(0, x*(x - 3)*exp(x))", [0, 3]),  # a polynomial times a positive factor
    ("Piecewise((x, x >= 0), (x/100, True))", [0]),
])
def test_certified_break_points(expr: str, want: list) -> None:
    got = break_points(sp.sympify(expr, locals={"x": X}), X)
    assert len(got) == len(want) and all(sp.simplify(a - b) == 0 for a, b in zip(got, want))


def _lying_solveset(drop: bool = False, add: sp.Expr | None = None):
    real = sp.solveset

    def fake(f, sym, dom):
        out = real(f, sym, dom)
        if isinstance(out, sp.FiniteSet):
            pts = sorted(out, key=lambda r: float(sp.N(r)))
            if drop and pts:
                pts = pts[1:]
            if add is not None:
                pts.append(add)
            return sp.FiniteSet(*pts)
        return out
    return fake


@pytest.mark.parametrize("expr", ["Max(0, x**3 - 2*x)", "Max(0, exp(x) - 2) + Max(0, x)"])
def test_a_dropped_root_is_refused(expr: str, monkeypatch: pytest.MonkeyPatch) -> None:
    e = sp.sympify(expr, locals={"x": X})
    break_points.cache_clear()
    monkeypatch.setattr(_pieces.sp, "solveset", _lying_solveset(drop=True))
    try:
        with pytest.raises(Refused):
            break_points(e, X)
    finally:
        break_points.cache_clear()


def test_a_made_up_root_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    e = sp.sympify("Max(0, x - 1)", locals={"x": X})
    break_points.cache_clear()
    monkeypatch.setattr(_pieces.sp, "solveset", _lying_solveset(add=sp.Rational(5)))
    try:
        with pytest.raises(Refused):
            break_points(e, X)
    finally:
        break_points.cache_clear()


def test_a_root_the_rules_cannot_certify_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two zeros of a switching function that is no polynomial times a one-signed factor
    (e^{2x} − 3e^x + 2 = (e^x − 1)(e^x − 2): 0 and log 2): no rule covers it, so the checker
    declines rather than trust the solver."""
    e = sp.sympify("Max(0, exp(2*x) - 3*exp(x) + 2)", locals={"x": X})
    break_points.cache_clear()
    try:
        with pytest.raises(Refused, match="not a proof"):
            break_points(e, X)
    finally:
        break_points.cache_clear()
