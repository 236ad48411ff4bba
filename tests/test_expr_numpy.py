"""The numpy form of a user expression (absorb/model/_expr_numpy.py): a tree evaluator over
sympy's srepr text, which must agree with sympy's lambdify (the reference) on every
expression of the docs and the catalog, and needs scipy only for erf/erfc."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from absorb.model._expr_numpy import UnsupportedExpression, numpy_form

EXPRESSIONS = [
    "x*(1+erf(x/sqrt(2)))/2", "Max(0,x)**3", "1-0**Max(0,x)", "(1-0**Max(0,x)+0**Max(0,-x))/2", "x**2",
    "Max(0, x) + Min(0, exp(x) - 1)", "x*tanh(log(1+exp(x)))", "1/(2-cos(x))", "sqrt(x**2+1)", "Abs(x)**(1/3)",
    "Max(0,x)**(3/2)", "x/(1+exp(-x))", "exp(exp(exp(x)))", "Abs(x)**Abs(x)", "x*0.044715e0",
    "Max(0,x)*erfc(x/10**35-10)/10**8 + Min(0,x)*(1-(1-erf(-x/10**35-10))/10**8)",
    "atan(x)+sinh(x)/cosh(x)+pi*E", "Max(x,2*x,x**2)", "Min(x,-x,1)", "x*tanh(sqrt(2/pi)*(x+0.044715*x**3))",
    "exp(-x**2)*sin(3*x)", "2**x/(1+2**x)",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_agrees_with_lambdify(text: str) -> None:
    import sympy as sp
    from scipy import special

    from absorb.model import _expr

    e = _expr._validate(text, _expr.parse(text))
    mine = numpy_form(sp.srepr(e))
    ref = sp.lambdify(_expr.X, e, modules=[{"erf": special.erf, "erfc": special.erfc}, "numpy"])
    z = np.concatenate([np.linspace(-40, 40, 801), [0.0, -0.0, 1e-300, 709.0, -709.0, 1e300, -1e300]])
    with np.errstate(all="ignore"):
        want = np.broadcast_to(np.asarray(ref(z), dtype=float), z.shape)
        got = mine(z)
    assert got.shape == z.shape and got.dtype == np.float64
    same = (got == want) | np.isclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    # where lambdify overflowed, the evaluator's mpmath retry may give the finite value: sympy's
    # own 30 digits decide it
    for i in np.flatnonzero(~same & ~np.isfinite(want) & np.isfinite(got)).tolist():
        ref_i = float(sp.N(e.subs(_expr.X, sp.Rational(float(z[i]))), 30))
        same[i] = abs(got[i] - ref_i) <= 1e-12 * abs(ref_i)
    assert same.all(), (text, z[~same][:3], got[~same][:3], want[~same][:3])


def test_scalar_and_constant_forms_keep_the_shape() -> None:
    assert numpy_form("Integer(3)")(np.zeros((2, 3))).tolist() == [[3.0] * 3] * 2
    assert numpy_form("Symbol('x', real=True)")(np.float64(2.0)).shape == ()


@pytest.mark.parametrize("text", ["__import__('os')", "Symbol('y')", "Integer(1.5)", "gamma(Symbol('x'))", "x + 1",
                                  "Add()", "Pow(Symbol('x'))", "Integer(1)(2)", "", "Mul(" * 400 + ")" * 400])
def test_anything_else_is_refused_not_evaluated(text: str) -> None:
    with pytest.raises(UnsupportedExpression):
        numpy_form(text)


def test_no_scipy_without_erf() -> None:
    code = ("import sys, numpy as np\nfrom absorb.model._expr_numpy import numpy_form\n"
            "f = numpy_form(\"Mul(Symbol('x', real=True), tanh(log(Add(exp(Symbol('x', real=True)), Integer(1)))))\")\n"
            "f(np.linspace(-3, 3, 7))\nassert 'scipy' not in sys.modules and 'sympy' not in sys.modules\n"
            "g = numpy_form(\"erf(Symbol('x', real=True))\")\nassert abs(g(np.array([1.0]))[0] - 0.8427007929497149) < 1e-12\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_few_points_form_needs_no_scipy_and_agrees() -> None:
    """The validation's cross-check at five points takes erf/erfc from Python's math module."""
    code = ("import sys, numpy as np\nfrom absorb.model._expr_numpy import numpy_form\n"
            "s = \"Mul(Symbol('x', real=True), Add(erf(Symbol('x', real=True)), erfc(Mul(Integer(2), Symbol('x', real=True)))))\"\n"
            "z = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 7.0])\nv = numpy_form(s, few_points=True)(z)\n"
            "assert 'scipy' not in sys.modules and v.dtype == np.float64\n"
            "w = numpy_form(s)(z)\nassert np.allclose(v, w, rtol=1e-14, atol=1e-300), (v, w)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_sin_and_cos_of_a_huge_argument_are_not_reduced() -> None:
    """cos(exp(|x|)) at x = 10⁶ would need 1.44·10⁶ bits of π (10 s in mpmath; hours at 10⁸: red team 49b/01, 03): the
    mpmath forms give such an entry up (nan, as for any value they cannot evaluate), and the interval enclosures of
    both sides take sin/cos past 2^4096 as their range [−1, 1]."""
    import mpmath
    import sympy as sp

    from absorb.model import _expr
    from absorb.model._expr_numpy import precise_form
    from absorb.verify import _intervals

    x = sp.Symbol("x", real=True)
    e = sp.Max(0, x) + sp.cos(sp.exp(sp.Abs(x))) / 1000
    z = np.array([1.0, 800.0, 1e6, -1e8])
    for form in (numpy_form(sp.srepr(e)), precise_form(sp.srepr(e))):
        v = form(z)
        assert abs(v[0] - (1 + np.cos(np.e) / 1000)) < 1e-12 and abs(v[1] - 800) < 1e-2 and np.isnan(v[2:]).all()
    assert [float(b) for b in (_intervals._enclose(sp.cos(sp.exp(x)), x, mpmath.iv.mpf([1e6, 1e6])).a,
                               _expr._enclose(sp.sin(sp.exp(sp.Integer(10**6))), mpmath.iv, mpmath).b)] == [-1.0, 1.0]
