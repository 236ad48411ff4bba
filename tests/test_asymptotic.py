"""The asymptotic calculus (absorb.symbolic.asymptotic): limits at ±∞ derived by rules over
the expression tree, never by sympy's ``limit``; and the wrong verdicts sympy's limits caused.

Every claimed limit is compared with 60-digit mpmath evaluations here too (the calculus may
say unknown, but what it claims must hold)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from absorb.model.activations import X, get_activation
from absorb.symbolic import asymptotic as asy
from absorb.symbolic import growth
from absorb.symbolic.properties import Status

R = sp.Rational
W35 = sp.Integer(10) ** 35
REPRO = "Max(0,x)*erfc(x/10**35-10)/10**8 + Min(0,x)*(1-(1-erf(-x/10**35-10))/10**8)"


def expr(text: str) -> sp.Expr:
    return get_activation("expr:" + text).expr


# ------------------------------------------------------------------- the reproduction --


def test_sympy_limit_is_wrong_here_and_the_rules_are_not() -> None:
    """sympy 1.14 gives 2 for lim erfc(p/W − 10)(p + 1)/p at +∞; the truth is 0."""
    e = sp.erfc(X / W35 - 10) * (X + 1)
    lim = asy.limit(e, 1, 1)
    assert lim.kind == "finite" and lim.value == 0
    assert asy.limit(e, -1, 1).value == 2  # erfc(−∞) = 2: σ(−s)/(−s) → 2
    pr = growth._asymptotic_slopes(e)
    assert pr.status is Status.PROVED and pr.value["L_plus"] == 0 and pr.value["L_minus"] == 2


def test_reproduction_slopes_are_zero_and_one() -> None:
    """Issue 24: σ(z) − σ(−z) = z, and absorb reported L+ = 2e-8 from sympy (truth 0)."""
    pr = growth._asymptotic_slopes(expr(REPRO))
    assert pr.status in (Status.PROVED, Status.UNKNOWN), pr.statement
    if pr.proved:
        assert pr.value["L_plus"] == 0 and pr.value["L_minus"] == 1
        assert pr.value["a"] == -1 and pr.value["b"] == 1
        assert any("by the rules" in s for s in pr.steps)


def test_reproduction_block_is_never_called_not_absorbable(tmp_path) -> None:
    """The whole run: flipping rows 0 and 1 gives a residual-free block equal to f, so the
    verdict is absorbable (or at worst unknown), never not_absorbable [skeleton]."""
    from absorb import Block, decide

    a = get_activation("expr:" + REPRO)
    U = np.array([[1, 0], [0, 1], [1, 2], [2, -1]], dtype=float)
    D = np.array([[-1, 0, .5, -.25], [0, -1, .75, 1.5]])
    verdict = decide(Block(U, D, a)).verdict.value
    assert verdict in ("absorbable", "unknown"), verdict


@pytest.mark.parametrize("width", [10, 10**6, 10**20, 10**35])
def test_erfc_constructions_at_several_widths(width: int) -> None:
    """σ = ReLU-like pieces switched off by erfc far out: the slopes are those beyond the switch."""
    w = sp.Integer(width)
    e = sp.Max(0, X) * sp.erfc(X / w - 10) + sp.Min(0, X) * (1 - sp.erfc(-X / w - 10) / 2)
    pr = growth._asymptotic_slopes(e)
    assert pr.proved, pr.statement
    assert pr.value["L_plus"] == 0 and pr.value["L_minus"] == 1


@pytest.mark.parametrize("shift", [1, -3, R(1, 2)])
def test_shifted_activations_keep_their_slopes(shift) -> None:
    """σ(z) = τ(z + c): the same slopes as τ (GELU, SiLU, the reproduction)."""
    for tau, lp, lm in ((X * (1 + sp.erf(X / sp.sqrt(2))) / 2, 1, 0), (X / (1 + sp.exp(-X)), 1, 0), (expr(REPRO), 0, 1)):
        pr = growth._asymptotic_slopes(tau.subs(X, X + shift))
        assert pr.proved, pr.statement
        assert (pr.value["L_plus"], pr.value["L_minus"]) == (lp, lm)


# ----------------------------------------------------------------------- the calculus --


@pytest.mark.parametrize("text,sign,power,kind,value", [
    ("x*tanh(log(1+exp(x)))", 1, 1, "finite", 1),
    ("x*tanh(log(1+exp(x)))", -1, 1, "finite", 0),
    ("x+sqrt(1+x**2)", 1, 1, "finite", 2),
    ("x+sqrt(1+x**2)", -1, 0, "finite", 0),
    ("atan(x)*x", 1, 1, "finite", sp.pi / 2),
    ("cosh(x)", -1, 1, "-oo", None),
    ("x**3/(1+x**2)", 1, 1, "finite", 1),
    ("log(1+x**2)", 1, 0, "+oo", None),
    ("x*sin(x)", 1, 1, "bounded", None),
    ("1/(2-cos(x))", 1, 0, "bounded", None),
    ("2**x", -1, 0, "finite", 0),
    ("0**Max(0,x)", 1, 0, "finite", 0),
    ("0**Max(0,x)", -1, 0, "finite", 1),
    ("exp(-x**2)*exp(x**2)", 1, 0, "finite", 1),
    ("erf(x)+erfc(x)", 1, 0, "finite", 1),
    ("x*(erf(x)+erfc(x)-1)", 1, 0, "finite", 0),
    ("sinh(x)-cosh(x)", 1, 0, "finite", 0),
    ("(exp(x)-exp(-x))/(exp(x)+exp(-x))-tanh(x)", 1, 1, "finite", 0),
    ("Max(x, 2*x)", -1, 1, "finite", 1),
    ("Min(x, 2*x)", -1, 1, "finite", 2),
    ("Abs(x-5)-x", 1, 0, "finite", -5),
])
def test_limits_by_rules(text: str, sign: int, power: int, kind: str, value) -> None:
    e = expr(text)
    lim = asy.limit(e, sign, power)
    assert lim.kind == kind, (lim.kind, lim.reason)
    if kind == "finite":
        assert sp.simplify(lim.value - value) == 0
        assert asy.numeric_check(e, sign, lim, power) is None


@pytest.mark.parametrize("text", ["x*sin(x)", "exp(x)*sin(x)", "sin(exp(x))*x"])
def test_no_limit_is_invented(text: str) -> None:
    lim = asy.limit(expr(text), 1, 1)
    assert lim.kind in ("bounded", "unknown"), lim


def test_expansion_keeps_two_terms() -> None:
    """σ(s) = α s² + β s + o(s) for a squared activation: softplus² = s² + O(s e^{-s})."""
    f = asy.expand(asy.at_infinity(sp.log(1 + sp.exp(X)) ** 2, 1))
    s2 = asy.Scale((), sp.Integer(2), sp.Integer(0))
    s1 = asy.Scale((), sp.Integer(1), sp.Integer(0))
    assert f.coefficient(s2) == 1 and f.coefficient(s1) == 0
    g = asy.expand(asy.at_infinity((X * (1 + sp.erf(X / sp.sqrt(2))) / 2) ** 2, -1))
    assert g.coefficient(s2) == 0 and g.coefficient(s1) == 0  # GELU² at −∞ is exponentially small


def test_numeric_check_withholds_a_wrong_claim() -> None:
    e = sp.erfc(X / W35 - 10) * (X + 1)
    wrong = asy.Limit("finite", sp.Integer(2), asy.const(sp.Integer(2)))  # what sympy says
    assert asy.numeric_check(e, 1, wrong, 1) is not None


def test_numeric_check_reads_a_disagreement_before_agreement_as_pre_asymptotic() -> None:
    """σ(x)/x = (1 + erf(x/10^50))/2 → 1, but at 10^50 it is still 0.92: the rules' limit is
    right and the 10^200 and 10^600 samples agree, so nothing is withheld (a generic block with
    σ = x/2 + x·erf(x/10^50)/2 + tanh(x) was `unknown` where the skeleton decides it)."""
    e = X / 2 + X * sp.erf(X / sp.Integer(10) ** 50) / 2 + sp.tanh(X)
    lim = asy.limit(e, 1, 1)
    assert lim.kind == "finite" and lim.value == 1
    assert asy.numeric_check(e, 1, lim, 1) is None


def test_numeric_check_withholds_a_claim_that_agrees_near_and_disagrees_far() -> None:
    """σ(x)/x = 1 + erfc(10 − x/10^100): ≈ 1 at 10^50, 3 at 10^200 and 10^600; the (wrong)
    claim 1 agrees with the nearest sample only: withheld, and the reason names the claim."""
    e = X * (1 + sp.erfc(10 - X / sp.Integer(10) ** 100))
    wrong = asy.Limit("finite", sp.Integer(1), asy.const(sp.Integer(1)))
    why = asy.numeric_check(e, 1, wrong, 1)
    assert why is not None and "10^200" in why and "not 1.0" in why


def test_derivative_at_zero_by_rules() -> None:
    g = X / (1 + sp.exp(-X))
    lim, q = asy.one_sided_derivative(g, 0, 1)
    assert lim.kind == "finite" and lim.value == R(1, 2)
    lim, q = asy.one_sided_derivative(sp.sqrt(sp.Abs(X)), 0, -1)
    assert lim.kind == "+oo" or lim.kind == "-oo"


def test_evaluate_handles_huge_arguments() -> None:
    with mpmath.workdps(60):
        v = asy.evaluate(expr(REPRO), mpmath.mpf(10) ** 200)
    assert v is not None and abs(v) < mpmath.mpf(10) ** -100


# ------------------------------------------------------------------------- identities --


@pytest.mark.parametrize("text,c", [
    (REPRO, 1),
    ("x*erfc(-x)/2", 1),  # GELU-like through erfc: x(2 - erfc(x))/2 - ...
    ("x*erf(x)+x*erfc(x)", 2),
    ("x*(1+tanh(x))/2", 1),
    ("x*(erf(x/sqrt(2)) + erfc(x/sqrt(2)) + erf(x/sqrt(2)))/2", 1),
])
def test_flip_identity_sees_through_erf_plus_erfc(text: str, c) -> None:
    from absorb.symbolic.properties import _flip_identity

    pr = _flip_identity(expr(text), gated=False)
    assert pr.proved, pr.statement
    assert pr.value["c"] == c


def test_gated_flip_through_erfc() -> None:
    from absorb.symbolic.properties import _flip_identity

    pr = _flip_identity(expr("erfc(-x)/2"), gated=True)  # = (1 + erf(x))/2: g(z) + g(−z) = 1
    assert pr.proved and pr.value["c"] == 1


def test_parity_and_linear_form_through_erfc() -> None:
    assert growth._parity(expr("x*(erf(x) - erfc(x)) + x*erfc(x)*2")).status is Status.REFUTED  # = x: odd
    assert growth._parity(expr("x*(1 - erfc(x))")).proved  # = x erf(x): even
    lf = growth._linear_form(expr("x*erf(x)+x*erfc(x)"))
    assert lf.proved and lf.value["c"] == 1
    assert growth._parity(expr("erf(x)**2 + erfc(x)*erf(x) - erf(x)")).proved  # = 0, even


@pytest.mark.parametrize("spec,plus,minus", [
    ("gelu", (1, 0), (0, 0)), ("silu", (1, 0), (0, 0)), ("softplus", (1, 0), (0, 0)), ("relu", (1, 0), (0, 0)),
])
def test_squared_activations_have_two_exact_terms(spec: str, plus, minus) -> None:
    """σ² = α x² + β x + o(x) at ±∞, exactly: what a skeleton for squared activations needs."""
    e = get_activation(spec).expr ** 2
    assert asy.quadratic_terms(e, 1) == tuple(sp.Integer(v) for v in plus)
    assert asy.quadratic_terms(e, -1) == tuple(sp.Integer(v) for v in minus)
    assert asy.quadratic_terms(sp.exp(X), 1) is None  # above x²
    assert asy.quadratic_terms(X**2 + X * sp.sin(X), 1) is None  # remainder O(x) is not o(x)
    assert asy.quadratic_terms((X + 3)**2, -1) == (1, 6)


@pytest.mark.parametrize("text,sign", [
    ("Max(0,x)**2 + x*sqrt(Abs(x))", 1), ("Max(0,x)**2 + x*sqrt(Abs(x))", -1), ("Max(0,x)**2 + x*log(1 + x**2)", 1),
    ("x**2 + x*Abs(x)**(1/3)", 1), ("x**2 - 3*x*log(x**2 + 1)**2 + x", -1),
])
def test_a_term_between_x_and_x_squared_leaves_no_quadratic_form(text: str, sign: int) -> None:
    """x^1.5, x·log x, x^(4/3) lie strictly between x and x²: σ is then no α x² + β x + o(x),
    whatever the coefficients of x² and x are (they were read off and the term dropped, and a
    skeleton proof rested on the false form)."""
    e = get_activation("expr:" + text).expr
    assert asy.quadratic_terms(e, sign) is None


def test_leading_term_gives_growth_class() -> None:
    c, sc = asy.leading(X**3 / (1 + X**2), 1)
    assert c == 1 and sc == asy.Scale((), sp.Integer(1), sp.Integer(0))
    c, sc = asy.leading(sp.log(1 + X**2), 1)
    assert c == 2 and sc.m == 1 and sc.a == 0
    assert asy.leading(sp.sin(X), 1) is None
