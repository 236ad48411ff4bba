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
