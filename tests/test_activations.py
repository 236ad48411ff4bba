"""Every activation of the contract resolves, and its numpy and sympy forms agree."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from absorb import InvalidInput, get_activation
from absorb.model.activations import GATED, NAMES, X

CONTRACT_NAMES = ["relu", "relu2", "gelu", "gelu_tanh", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "silu", "swish",
                  "quick_gelu", "leaky_relu", "sigmoid", "tanh", "softplus", "identity", "reglu", "swiglu", "geglu", "glu", "bilinear"]


@pytest.mark.parametrize("name", CONTRACT_NAMES)
def test_contract_names_resolve(name: str) -> None:
    assert name in NAMES
    act = get_activation(name)
    assert (act.gated_name is not None) == (name in GATED)


@pytest.mark.parametrize("name", sorted(set(NAMES)))
def test_numpy_matches_sympy(name: str) -> None:
    act = get_activation(name)
    f = sp.lambdify(X, act.expr, modules=["mpmath"])
    z = np.array([-7.5, -2.0, -0.3, 0.0, 0.25, 1.0, 3.0, 9.0])
    want = np.array([float(f(float(v))) for v in z])
    np.testing.assert_allclose(act(z), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("alias", "canonical"), [("gelu_new", "gelu_tanh"), ("gelu_pytorch_tanh", "gelu_tanh"),
                                                  ("gelu_fast", "gelu_tanh"), ("swish", "silu"), ("swiglu", "silu"),
                                                  ("geglu", "gelu"), ("reglu", "relu"), ("glu", "sigmoid"), ("bilinear", "identity")])
def test_aliases(alias: str, canonical: str) -> None:
    assert get_activation(alias).name == canonical


def test_expression_activation() -> None:
    act = get_activation("expr:x*(1+erf(x/sqrt(2)))/2")
    np.testing.assert_allclose(act(np.array([0.5, -1.0])), get_activation("gelu")(np.array([0.5, -1.0])), rtol=1e-14)


@pytest.mark.parametrize("text", ["expr:__import__('os').system('true')", "expr:x.__class__", "expr:lambda: 1", "expr:y*2",
                                  "expr:", "expr:open('f')", "nonsense"])
def test_bad_activation_is_one_line_error(text: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        get_activation(text)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("name", sorted(set(NAMES)))
def test_builtins_satisfy_the_invariant(name: str) -> None:
    # every Activation is real and finite at every real x; the built-ins by construction
    from absorb.model.activations import continuity_issue, is_builtin, real_finite_issue

    act = get_activation(name)
    assert is_builtin(act) and real_finite_issue(act.expr) is None
    assert continuity_issue(act.expr) is None or act.name == "leaky_relu"  # a Piecewise is not analysed


def test_expression_equal_to_a_builtin_is_still_a_user_expression() -> None:
    from absorb.model.activations import is_builtin

    assert not is_builtin(get_activation("expr:Max(0,x)"))
    assert get_activation("expr:Max(0,x)").expr == get_activation("relu").expr


@pytest.mark.parametrize("text", ["1-0**Max(0,x)", "x/(1+exp(-x))", "log(1+exp(x))", "Abs(x)**(1/3)", "1/(2-cos(x))"])
def test_expression_numpy_matches_sympy(text: str) -> None:
    act = get_activation("expr:" + text)
    z = [-2.0, -0.3, 0.0, 0.25, 3.0]
    want = [float(act.expr.subs(X, sp.Rational(v))) for v in z]
    np.testing.assert_allclose(act(np.array(z)), want, rtol=1e-12, atol=1e-14)


def test_erf_is_within_three_ulp_of_the_true_value() -> None:
    """GELU's erf (absorb.model.activations._erf: a Taylor table in numpy, so that evaluating GELU
    does not import scipy.special) against erf in 80-bit-mantissa mpmath, rounded once: at most
    3 units in the last place, at random points of every scale and on and between the grid points."""
    import mpmath

    from absorb.model.activations import _erf

    rng = np.random.default_rng(0)
    grid = np.arange(-6 * 128, 6 * 128 + 1) / 128
    z = np.concatenate([rng.standard_normal(4000) * 2, rng.uniform(-6.5, 6.5, 4000), 10.0 ** rng.uniform(-310, 0.8, 2000) *
                        rng.choice([-1, 1], 2000), grid, grid + 1 / 256, np.nextafter(grid + 1 / 256, 0), [5.9, 5.95, 5.999, 6.0]])
    with mpmath.workprec(80):
        want = np.array([float(mpmath.erf(mpmath.mpf(v))) for v in z.tolist()])
    got = _erf(z)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 3, (z[ulps.argmax()], ulps.max())


def test_erf_special_values_shapes_and_dtypes() -> None:
    from absorb.model.activations import _erf

    got = _erf(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 6.0, -7.0, 1e300]))
    assert np.isnan(got[0]) and list(got[1:3]) == [1.0, -1.0] and list(got[5:]) == [1.0, -1.0, 1.0]
    assert np.signbit(got[3]) and not np.signbit(got[4]) and got[3] == 0.0
    x = np.linspace(-5, 5, 101)
    assert np.array_equal(_erf(-x), -_erf(x))  # odd, exactly
    assert _erf(np.ones((2, 3))).shape == (2, 3) and np.ndim(_erf(0.5)) == 0
    assert _erf(np.float32([0.5])).dtype == np.float32 and _erf(np.array([1, 2])).dtype == np.float64


def test_gelu_silu_and_sigmoid_are_evaluated_without_scipy() -> None:
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom absorb.model.activations import get_activation\n"
            "for a in ('gelu', 'silu', 'quick_gelu', 'sigmoid'):\n    get_activation(a)(np.linspace(-3, 3, 7))\nassert 'scipy.special' not in sys.modules, 'scipy.special'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_sigmoid_is_within_three_ulp_of_the_true_value() -> None:
    """The logistic function of sigmoid, silu and quick_gelu (numpy, without scipy.special's
    expit) against 80-bit-mantissa mpmath: at most 3 ulp, over the range where it is normal."""
    import mpmath

    from absorb.model.activations import _sigmoid

    rng = np.random.default_rng(1)
    z = np.concatenate([rng.standard_normal(3000) * 3, rng.uniform(-700, 700, 3000), [-700.0, -40.0, -0.0, 0.0, 1e-300, 36.0, 700.0]])
    with mpmath.workprec(80):
        want = np.array([float(1 / (1 + mpmath.exp(-mpmath.mpf(v)))) for v in z.tolist()])
    ulps = np.abs(_sigmoid(z) - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 3, (z[ulps.argmax()], ulps.max())
    got = _sigmoid(np.array([np.nan, np.inf, -np.inf]))
    assert np.isnan(got[0]) and list(got[1:]) == [1.0, 0.0]
    assert _sigmoid(np.float32([0.5])).dtype == np.float32 and _sigmoid(np.float16([0.5])).dtype == np.float32
    assert _sigmoid(np.array([1, 2])).dtype == np.float64 and np.ndim(_sigmoid(0.5)) == 0


@pytest.mark.parametrize("name", ["relu", "relu2", "silu", "quick_gelu", "leaky_relu", "sigmoid", "tanh", "softplus", "identity"])
def test_builtins_without_cancellation_are_relatively_accurate(name: str) -> None:
    """The witness checks trust these built-ins' numpy values to 2⁻⁴⁰|σ̂(z)| + 2⁻¹⁰⁰⁰ (no |z| term,
    which only GELU's 1 + erf and GELU-tanh's 1 + tanh need): checked against 60-digit mpmath over
    every scale, huge negative z (underflow) included."""
    import mpmath

    act = get_activation(name)
    x = sorted(act.expr.free_symbols, key=str)[0]
    fn = sp.lambdify(x, act.expr, "mpmath")
    if name == "softplus":  # (log(1 + e^z) loses e^z below 10^-60 at 60 digits; log1p does not)
        fn = lambda v: mpmath.log1p(mpmath.exp(v))  # noqa: E731
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.standard_normal(200) * 3, rng.uniform(-800, 800, 300), -(10.0 ** rng.uniform(0, 300, 100)),
                        10.0 ** rng.uniform(0, 300, 100), [-745.0, -744.0, -438.0, -1e-300, 0.0, 1e-300]])
    with np.errstate(all="ignore"):
        got = np.asarray(act(z), dtype=np.float64)
    with mpmath.workdps(60):
        want = [fn(mpmath.mpf(v)) for v in z.tolist()]
        bad = [(v, g, w) for v, g, w in zip(z.tolist(), got.tolist(), want)
               if not abs(mpmath.mpf(g) - w) <= 2.0**-40 * abs(g) + 2.0**-1000]
    assert not bad, bad[:3]
