"""The degree-2 skeleton (docs/results/skeleton2.md): σ(s) = αs² + βs + o(s) at +∞, o(s) at
−∞ (ReLU², GELU², SiLU², softplus²), biases allowed — planted and generic blocks, the two
search routes, degenerate weights, and a brute-force fit that must fail where the engine
says not_absorbable."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from absorb import Block, Theorem, Verdict, decide_block, get_activation
from absorb.engine import skeleton2 as sk2
from absorb.symbolic import growth

GELU2 = "expr:(x*(1 + erf(x/sqrt(2)))/2)**2"
SILU2 = "expr:(x/(1 + exp(-x)))**2"
SOFTPLUS2 = "expr:log(1 + exp(x))**2"
SQUARED = ["relu2", GELU2, SILU2, SOFTPLUS2]


@pytest.mark.parametrize("act", SQUARED)
def test_squared_activations_are_in_the_class(act: str) -> None:
    p = growth.quadratic_skeleton(get_activation(act))
    assert p.proved and (p.value["alpha"], p.value["beta"]) == (1, 0), p.statement


def test_the_linear_term_is_read_exactly() -> None:
    p = growth.quadratic_skeleton(get_activation("expr:Max(0, x)**2 + 3*x*(1 + tanh(x))/2"))
    assert p.proved and (p.value["alpha"], p.value["beta"]) == (1, 3)


@pytest.mark.parametrize("act", ["relu", "gelu", "expr:x**2", "expr:exp(x)", "sigmoid"])
def test_other_activations_are_not(act: str) -> None:
    assert not growth.quadratic_skeleton(get_activation(act)).proved


@pytest.mark.parametrize("act", ["expr:Max(0,x)**2 + x*sqrt(Abs(x))", "expr:Max(0,x)**2 + x*log(1 + x**2)"])
def test_a_term_between_z_and_z_squared_is_no_skeleton(act: str) -> None:
    """σ(z) − z² = z^1.5 (or z·log z) at +∞ is no βz + o(z): the skeleton's hypothesis fails,
    so a generic block is not called not_absorbable by it."""
    assert not growth.quadratic_skeleton(get_activation(act)).proved
    dec = decide_block(_generic(0, 2, 5, act, biases=True))
    assert dec.theorem is not Theorem.SKELETON2, dec.reason


def _planted(act: str = "relu2", *, biases: bool = True) -> Block:
    """d = 2: units e1, e2, (1,1), (1,−1) with w, w, −w/2, −w/2 cancel in (Q) (S = {0,1,2,3}),
    two generic units, and M from (L): M = −2Σ_S c_i w_i u_iᵀ (dyadic: exact in float64)."""
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -1], [2, 3], [-1, 5]])
    w = np.array([1.0, 2.0])
    D = np.column_stack([w, w, -w / 2, -w / 2, [3.0, 1], [-1.0, 2]])
    c = np.array([0.5, -1, 0.25, 2, 1.5, -0.5])
    M = -sum(2 * c[i] * np.outer(D[:, i], U[i]) for i in range(4))
    return Block(U, D, get_activation(act), b_up=c if biases else None, b_down=np.array([0.125, -0.25]), skip=M)


def _generic(seed: int, d: int, n: int, act: str, *, biases: bool) -> Block:
    rng = np.random.default_rng(seed)
    extra = dict(b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)) if biases else {}
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(act), **extra)


def test_planted_relu2_is_absorbable_with_an_exact_witness() -> None:
    blk = _planted()
    dec = decide_block(blk)
    assert (dec.verdict, dec.theorem) == (Verdict.ABSORBABLE, Theorem.SKELETON2), dec.reason
    assert dec.witness.S == (0, 1, 2, 3) and dec.witness.exact
    X = np.random.default_rng(1).standard_normal((64, 2)) * 4
    np.testing.assert_allclose(dec.witness.block(X), blk(X), rtol=1e-12, atol=1e-10)
    assert not np.any(dec.witness.block.M)


def test_planted_gelu2_proves_nothing() -> None:
    dec = decide_block(_planted(GELU2))
    assert (dec.verdict, dec.theorem) == (Verdict.UNKNOWN, Theorem.NONE), dec.reason
    assert "σ(z) + σ(−z) = α·z² + k" in dec.reason and "fails" in dec.reason


@pytest.mark.parametrize("act", SQUARED)
@pytest.mark.parametrize("biases", [True, False])
def test_generic_blocks_are_not_absorbable(act: str, biases: bool) -> None:
    blk = _generic(3, 3, 6, act, biases=biases)
    dec = decide_block(blk, allow_biases=True)
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2), dec.reason
    assert dec.search.method == "rank" and dec.residual_free_class.biases


def test_bias_free_relu2_against_biased_g_is_decided() -> None:
    # (L) with c = 0 and β = 0 reads M = 0, even where (Q) has solutions (the planted units).
    dec = decide_block(_planted(biases=False).replace(b_down=None), allow_biases=True)
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2), dec.reason
    assert dec.search.method == "enumerate"


def test_wide_blocks_use_the_enumeration_route() -> None:
    blk = _generic(4, 2, 10, "relu2", biases=True)  # n = 10 > d·d(d+1)/2 = 6: (Q) columns dependent
    dec = decide_block(blk)
    assert (dec.verdict, dec.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2), dec.reason
    assert dec.search.method == "enumerate" and dec.search.bound > 1e-9


def test_beyond_both_routes_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sk2, "ENUMERATE_MAX_N", 4)
    monkeypatch.setattr(sk2, "lifted_route", lambda *args: None)  # (it decides this block: tests/test_skeleton2_rounded.py)
    monkeypatch.setattr(sk2, "linear_route", lambda *args: None)  # (so does (L) alone: tests/test_skeleton2_linear.py)
    dec = decide_block(_generic(4, 2, 10, "relu2", biases=True))
    assert (dec.verdict, dec.theorem) == (Verdict.UNKNOWN, Theorem.NONE)
    assert "exhaustive search" in dec.reason


def test_degenerate_weights_are_unknown_naming_the_hypothesis() -> None:
    blk = _generic(5, 3, 5, "relu2", biases=True)
    U = blk.W_up.copy()
    U[1] = -2 * U[0]
    dec = decide_block(blk.replace(W_up=U))
    assert dec.verdict is Verdict.UNKNOWN and "collinear" in dec.reason, dec.reason


def test_the_rank_route_is_exact() -> None:
    blk = _generic(6, 3, 6, "relu2", biases=True)
    res = sk2.rank_route(blk, 1e-9)
    assert res is not None and res.bound > 1e-9
    mu = sp.Rational(res.certificate["mu"])
    cols = sk2.exact_q_columns(blk)
    Q = sp.Matrix([[sp.Rational(v.numerator, v.denominator) for v in col] for col in cols]).T
    assert (Q.T * Q - mu * sp.eye(6)).is_positive_definite


def test_brute_force_fit_fails_where_not_absorbable() -> None:
    """A numeric least-squares fit of a biased residual-free ReLU² block of the same width
    (several starts) stays far from f for a generic block the engine decides not_absorbable."""
    from scipy.optimize import least_squares

    def best_fit(blk: Block, starts: int, seed: int) -> float:
        rng = np.random.default_rng(seed)
        d, n = blk.d, blk.n
        X = rng.standard_normal((200, d)) * 2
        Y = blk(X)

        def resid(p: np.ndarray) -> np.ndarray:
            U, c, D, b = p[: n * d].reshape(n, d), p[n * d: n * d + n], p[n * d + n: 2 * n * d + n].reshape(d, n), p[-d:]
            return ((np.maximum(X @ U.T + c, 0) ** 2) @ D.T + b - Y).ravel()

        best = np.inf
        for _ in range(starts):
            p0 = rng.standard_normal(2 * n * d + n + d)
            r = least_squares(resid, p0, max_nfev=400)
            best = min(best, float(np.linalg.norm(r.fun) / np.linalg.norm(Y)))
        return best

    generic = _generic(7, 2, 2, "relu2", biases=True)
    assert decide_block(generic).verdict is Verdict.NOT_ABSORBABLE
    assert best_fit(generic, 8, 0) > 1e-3
