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
