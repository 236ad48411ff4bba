"""Blocks evaluate as the formulas say: numpy batch evaluation, the exact symbolic form,
Hyper-Connection lifting, mHC's Sinkhorn, and the npz round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from absorb import Block, HyperConnection, Stack, get_activation, lift_hyper_connection, load_npz, save_npz, sinkhorn


def _block(act: str, *, gated: bool = False, bias: bool = False, d: int = 3, n: int = 4, seed: int = 0) -> Block:
    rng = np.random.default_rng(seed)
    r = lambda *s: np.round(rng.standard_normal(s), 3)  # noqa: E731 - short dyadic-ish values
    return Block(r(n, d), r(d, n), get_activation(act), W_gate=r(n, d) if gated else None,
                 b_up=r(n) if bias else None, b_gate=r(n) if bias and gated else None, b_down=r(d) if bias else None,
                 skip=r(d, d) if bias else None)


@pytest.mark.parametrize(("act", "gated", "bias"), [("relu", False, False), ("gelu", False, True), ("relu2", False, True),
                                                    ("swiglu", True, False), ("glu", True, True), ("tanh", False, False)])
def test_symbolic_form_matches_numpy(act: str, gated: bool, bias: bool) -> None:
    blk = _block(act, gated=gated, bias=bias)
    xs = sp.symbols("x0:3", real=True)
    f = blk.symbolic(xs)
    point = [sp.Rational(1, 3), sp.Rational(-5, 4), sp.Rational(2, 1)]
    exact = [float(sp.N(v.subs(dict(zip(xs, point))), 30)) for v in f]
    np.testing.assert_allclose(blk(np.array([[float(p) for p in point]]))[0], exact, rtol=1e-12, atol=1e-12)


def test_batch_evaluation_is_rowwise() -> None:
    blk = _block("gelu", bias=True)
    X = np.random.default_rng(1).standard_normal((7, 3))
    np.testing.assert_allclose(blk(X), np.vstack([blk(x[None])[0] for x in X]), rtol=1e-14)
    np.testing.assert_allclose(blk(X) - blk.mlp(X), X @ blk.M.T, atol=1e-12)


def test_stack_applies_blocks_in_order() -> None:
    a, b = _block("relu", seed=1), _block("relu2", seed=2)
    X = np.random.default_rng(3).standard_normal((5, 3))
    np.testing.assert_allclose(Stack((a, b))(X), b(a(X)))


def test_hyper_connection_lift_matches_the_stream_formula() -> None:
    rng = np.random.default_rng(4)
    s, blk = 3, _block("gelu", seed=5)
    hc = HyperConnection(H_res=rng.standard_normal((s, s)), H_pre=rng.standard_normal(s), H_post=rng.standard_normal(s))
    lifted = lift_hyper_connection(blk, hc)
    Xs = rng.standard_normal((s, blk.d))  # state: s streams of dimension d
    direct = hc.H_res @ Xs + np.outer(hc.H_post, blk.mlp((hc.H_pre @ Xs)[None])[0])
    np.testing.assert_allclose(lifted(Xs.reshape(1, -1))[0], direct.reshape(-1), rtol=1e-12, atol=1e-12)
    assert lifted.d == s * blk.d and lifted.n == blk.n


def test_sinkhorn_is_doubly_stochastic_and_can_be_singular() -> None:
    H = sinkhorn(np.random.default_rng(0).standard_normal((4, 4)))
    np.testing.assert_allclose(H.sum(axis=0), 1, atol=1e-9)
    np.testing.assert_allclose(H.sum(axis=1), 1, atol=1e-9)
    assert np.linalg.matrix_rank(sinkhorn(np.zeros((3, 3)))) == 1


def test_npz_round_trip(tmp_path: Path) -> None:
    blk = _block("glu", gated=True, bias=True)
    save_npz(tmp_path / "b.npz", blk)
    back = load_npz(tmp_path / "b.npz")
    assert back.activation.name == "sigmoid" and back.gated
    for k, v in blk.arrays().items():
        np.testing.assert_array_equal(back.arrays()[k], v)
    st = Stack((_block("relu", seed=1).replace(name="blocks.0"), _block("relu", seed=2).replace(name="blocks.1")))
    save_npz(tmp_path / "s.npz", st)
    back = load_npz(tmp_path / "s.npz")
    assert isinstance(back, Stack) and [b.name for b in back.blocks] == ["blocks.0", "blocks.1"]


def test_hyper_connection_validates_its_matrices() -> None:
    from absorb import InvalidInput

    with pytest.raises(InvalidInput, match="H_res has shape"):
        HyperConnection(H_res=np.ones((2, 3)), H_pre=np.ones(2), H_post=np.ones(2))
    with pytest.raises(InvalidInput, match="H_post has shape"):
        HyperConnection(H_res=np.eye(2), H_pre=np.ones(2), H_post=np.ones(3))
    with pytest.raises(InvalidInput, match="contains NaN"):
        HyperConnection(H_res=np.eye(2), H_pre=np.array([1.0, np.nan]), H_post=np.ones(2))
    hc = HyperConnection(H_res=[[1, 0], [0, 1]], H_pre=[0.5, 0.5], H_post=[1, 1])
    assert hc.H_res.dtype == np.float64 and hc.s == 2
    with pytest.raises(InvalidInput, match="lift_hyper_connection"):
        lift_hyper_connection("block", hc)  # type: ignore[arg-type]


@pytest.mark.parametrize("act, gated, value, bias, silent", [
    ("gelu", False, None, False, True), ("relu", False, None, False, True), ("sigmoid", False, None, False, False),
    ("silu", True, None, False, True), ("sigmoid", True, "expr:x + 1", False, False), ("gelu", False, None, True, False),
    ("expr:x**2 + 10**-20*10**-20", False, None, False, False)])
def test_f0_without_a_pass_over_the_weights_where_it_is_exactly_zero(act: str, gated: bool, value: str | None, bias: bool,
                                                                     silent: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """|f(0)|∞ is read without evaluating f where no unit sees a bias and every unit's value at 0 is exactly 0 (the
    weights finite): the same number as the evaluation gives, which every other block still pays for."""
    rng = np.random.default_rng(0)
    kw = {"W_gate": rng.standard_normal((7, 3))} if gated else {}
    if value is not None:
        kw["value_activation"] = get_activation(value)
    if bias:
        kw["b_up"] = rng.standard_normal(7)
    blk = Block(W_up=rng.standard_normal((7, 3)), W_down=rng.standard_normal((3, 7)), activation=get_activation(act), **kw)
    want = float(np.max(np.abs(blk(np.zeros((1, 3))))))
    evaluated = []
    real = Block.mlp
    monkeypatch.setattr(Block, "mlp", lambda self, X: evaluated.append(1) or real(self, X))
    assert blk.f0_inf == want and (want == 0.0) >= silent and bool(evaluated) is not silent
    inf = blk.replace(W_down=np.where(np.eye(3, 7) > 0, np.inf, blk.W_down))  # (derived: 0·∞ = NaN at 0, evaluated)
    assert np.isnan(inf.f0_inf) or not silent
