"""The float32 route: large float32 (bfloat16, float16) weight matrices are kept in float32.

``keeps_float32`` reads ``absorb._validate.FLOAT32_MIN_ENTRIES`` at call time, so lowering
it to 0 sends small blocks down the float32 route. Every test here compares that route with
the same values in float64 (float32 values widened exactly): in exact arithmetic both are
the same problem, so verdicts, theorems, index sets and checks must agree, and a wrong
witness must still be rejected.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import absorb._validate
import tests.test_checkpoints as ckpts
from absorb import Block, InvalidInput, get_activation
from absorb.cli import main
from absorb.engine import Verdict, decide
from absorb.engine.witness import check_flip_witness, eval_threshold, evaluation_error, flip_block
from absorb.io import load_npz
from absorb.io.safetensors import _scale_columns, open_checkpoint
from absorb.model.block import Stack
from absorb.rigorous import relative_residual
from absorb.search import SearchStatus, find_index_set
from absorb.strategies import blocks

F32, F64 = np.float32, np.float64


@pytest.fixture
def f32(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every float32/bfloat16/float16 weight matrix stays float32, whatever its size."""
    monkeypatch.setattr(absorb._validate, "FLOAT32_MIN_ENTRIES", 0)


def _r32(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.asarray(a, dtype=F64).astype(F32)


def _pair(U, D, act, *, G=None, skip=None, **biases) -> tuple[Block, Block]:
    """The same weights as a float32-route block and as a float64 block (exact widening)."""
    U32, D32, G32 = _r32(U), _r32(D), _r32(G)
    b32 = Block(U32, D32, get_activation(act), W_gate=G32, skip=skip, **biases)
    assert b32.W_up.dtype == F32 and b32.W_down.dtype == F32 and not b32.is_float64, "float32 route not taken"
    w = lambda a: None if a is None else a.astype(F64)  # noqa: E731
    b64 = Block(w(U32), w(D32), get_activation(act), W_gate=w(G32), skip=skip, **biases)
    assert b64.is_float64
    return b32, b64


def _plant(rng, d, n, S, *, c=1.0, M=None, gated=False):
    """U (value rows), D with D[:,S] U[S] = −M/c computed in float64 from the float32 U,
    then stored as float32 (residual about 1e-7), and a gate when ``gated``."""
    U = rng.standard_normal((n, d)).astype(F32).astype(F64)
    D = rng.standard_normal((d, n))
    M = np.eye(d) if M is None else M
    D[:, list(S)] = -(M / c) @ np.linalg.pinv(U[list(S)])
    G = rng.standard_normal((n, d)) if gated else None
    return U, D, G


TOL32 = 1e-5  # accepts the float32 rounding of a planted D[:,S] (residual ~1e-7)
TOL32_INF = 1e-3
"""A tolerance that also accepts that rounding in the witness's guarantee, which is absolute in
the ∞-norm: ‖M + D_S U_S‖_∞ of a planted square D[:,S] = −pinv(U[S]) rounded to float32 is up
to ~6e-5 (d = 200), above TOL32."""


def _cases() -> dict[str, dict]:
    rng = np.random.default_rng(20261201)
    d, n = 3, 8
    S = (1, 4, 6)
    out: dict[str, dict] = {}
    g = lambda *s: rng.standard_normal(s)  # noqa: E731
    out["generic_relu"] = dict(U=g(n, d), D=g(d, n), act="relu")
    U, D, _ = _plant(rng, d, n, S)
    out["planted_relu"] = dict(U=U, D=D, act="relu")
    U, D, _ = _plant(rng, d, n, S)
    out["planted_gelu"] = dict(U=U, D=D, act="gelu")
    out["generic_gelu"] = dict(U=g(n, d), D=g(d, n), act="gelu")
    out["generic_leaky"] = dict(U=g(n, d), D=g(d, n), act="leaky_relu")
    U, D, _ = _plant(rng, d, n, S, c=1.01)  # σ(z) − σ(−z) = 1.01 z: T = −I/1.01, not −I
    out["planted_leaky"] = dict(U=U, D=D, act="leaky_relu")
    out["relu2"] = dict(U=g(n, d), D=g(d, n), act="relu2")
    out["swiglu"] = dict(U=g(n, d), D=g(d, n), G=g(n, d), act="swiglu")
    out["geglu"] = dict(U=g(n, d), D=g(d, n), G=g(n, d), act="geglu")
    U, D, G = _plant(rng, d, n, S, gated=True)  # sigmoid gate: g(z) + g(−z) = 1
    out["planted_glu"] = dict(U=U, D=D, G=G, act="glu")
    out["identity_narrow"] = dict(U=g(2, d), D=g(d, 2), act="identity")
    out["identity_wide"] = dict(U=g(n, d), D=g(d, n), act="identity")
    U, D, _ = _plant(rng, d, n, S)
    out["planted_relu_biased"] = dict(U=U, D=D, act="relu", b_up=g(n), b_down=g(d))
    out["generic_relu_biased"] = dict(U=g(n, d), D=g(d, n), act="relu", b_up=g(n))
    U = g(n, d)
    U[2] = 0.0
    out["zero_row_relu"] = dict(U=U, D=g(d, n), act="relu")
    U = g(n, d)
    U[5] = U[3]
    out["duplicated_rows_relu"] = dict(U=U, D=g(d, n), act="relu")
    M = np.array([[2.0, 0.5, 0.0], [0.0, 1.0, 0.25], [0.5, 0.0, 3.0]])
    U, D, _ = _plant(rng, d, n, S, M=M)
    out["planted_relu_skip"] = dict(U=U, D=D, act="relu", skip=M)
    out["generic_relu_skip"] = dict(U=g(n, d), D=g(d, n), act="relu", skip=M)
    Ms = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])  # rank 2
    out["singular_skip_relu"] = dict(U=g(n, d), D=g(d, n), act="relu", skip=Ms)
    U, D, _ = _plant(rng, d, n, (0, 2, 5), M=Ms)
    out["planted_singular_skip_relu"] = dict(U=U, D=D, act="relu", skip=Ms)
    return out


CASES = _cases()


def _decide_both(kw: dict, tol: float) -> tuple:
    kw = dict(kw)
    U, D, act, G, skip = kw.pop("U"), kw.pop("D"), kw.pop("act"), kw.pop("G", None), kw.pop("skip", None)
    b32, b64 = _pair(U, D, act, G=G, skip=skip, **kw)
    return b32, b64, decide(b32, tol=tol, allow_biases=True), decide(b64, tol=tol, allow_biases=True)


@pytest.mark.parametrize("tol", [1e-9, TOL32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_decide_float32_route_agrees_with_float64(f32: None, name: str, tol: float) -> None:
    b32, b64, r32, r64 = _decide_both(CASES[name], tol)
    assert (r32.verdict, r32.theorem) == (r64.verdict, r64.theorem), (name, r32.reason, r64.reason)
    if r32.verdict is Verdict.ABSORBABLE:
        X = np.random.default_rng(1).standard_normal((64, b32.d)) * 3
        fx = b64(X)
        scale = np.abs(fx).max() + np.abs(X).max()
        assert np.abs(r32.witness.block(X) - fx).max() <= 100 * tol * scale, name


@pytest.mark.parametrize("name", ["planted_relu", "planted_gelu", "planted_leaky", "planted_glu", "planted_relu_biased",
                                  "planted_relu_skip"])
def test_planted_float32_blocks_are_absorbable_by_index_set(f32: None, name: str) -> None:
    _b32, _b64, r32, r64 = _decide_both(CASES[name], TOL32)
    assert r32.verdict is Verdict.ABSORBABLE, r32.reason
    assert r64.verdict is Verdict.ABSORBABLE, r64.reason


@given(blk=st.one_of(blocks(kind="planted", activation=st.sampled_from(["relu", "gelu"]), d=(2, 4), n=(2, 9)),
                     blocks(kind="generic", activation=st.sampled_from(["relu", "gelu", "leaky_relu", "relu2"]), d=(2, 4), n=(2, 9)),
                     blocks(kind="degenerate", activation="relu", d=(2, 3), n=(2, 6))))
def test_drawn_blocks_float32_route_agrees_with_float64(blk: Block) -> None:
    """Any block, its weight matrices rounded to float32: the float32 route and the float64
    widening of the same values get the same verdict and theorem."""
    import absorb._validate as val

    saved = val.FLOAT32_MIN_ENTRIES
    val.FLOAT32_MIN_ENTRIES = 0  # (a function-scoped fixture does not reset between drawn examples)
    try:
        b32, b64 = _pair(blk.W_up, blk.W_down, blk.activation.name, skip=blk.skip, b_up=blk.b_up, b_down=blk.b_down)
        r32, r64 = decide(b32, tol=TOL32, allow_biases=True), decide(b64, tol=TOL32, allow_biases=True)
    finally:
        val.FLOAT32_MIN_ENTRIES = saved
    assert (r32.verdict, r32.theorem) == (r64.verdict, r64.theorem), (r32.reason, r64.reason)


def test_stack_of_two_float32_blocks_agrees(f32: None) -> None:
    rng = np.random.default_rng(5)
    blocks32, blocks64 = [], []
    for i, S in enumerate(((0, 3), (1, 4))):
        U, D, _ = _plant(rng, 2, 6, S)
        b32, b64 = _pair(U, D, "gelu")
        blocks32.append(b32.replace(name=f"blocks.{i}"))
        blocks64.append(b64.replace(name=f"blocks.{i}"))
    for tol in (1e-9, TOL32):
        r32, r64 = decide(Stack(tuple(blocks32)), tol=tol), decide(Stack(tuple(blocks64)), tol=tol)
        assert (r32.verdict, r32.theorem) == (r64.verdict, r64.theorem), (r32.reason, r64.reason)
    assert r32.verdict is Verdict.ABSORBABLE


# ------------------------------------------------------------------- find_index_set --

METHODS = ["auto", "linalg", "enumerate", "mitm", "milp", "z3", "z3-pb"]


def _search_instance(planted: bool):
    rng = np.random.default_rng(11 if planted else 12)
    d, n = 3, 7
    if planted:
        U, D, _ = _plant(rng, d, n, (0, 2, 5))
    else:
        U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    return _r32(U), _r32(D)


@pytest.mark.parametrize("planted", [True, False], ids=["planted", "generic"])
@pytest.mark.parametrize("method", METHODS)
def test_find_index_set_float32_none_eye_and_float64_agree(f32: None, method: str, planted: bool) -> None:
    U32, D32 = _search_instance(planted)
    d = U32.shape[1]
    tol = TOL32 if planted else 1e-9
    runs = {
        "f32 None": find_index_set(U32, D32, None, tol=tol, method=method, timeout=20),
        "f32 -I": find_index_set(U32, D32, -np.eye(d), tol=tol, method=method, timeout=20),
        "f64 None": find_index_set(U32.astype(F64), D32.astype(F64), None, tol=tol, method=method, timeout=20),
        "f64 -I": find_index_set(U32.astype(F64), D32.astype(F64), -np.eye(d), tol=tol, method=method, timeout=20),
    }
    got = {k: (r.status, None if r.S is None else tuple(sorted(r.S))) for k, r in runs.items()}
    assert len(set(got.values())) == 1, got
    status, S = got["f32 None"]
    if planted and status is not SearchStatus.UNKNOWN:
        assert status is SearchStatus.FOUND and S == (0, 2, 5), got
        r = runs["f32 None"].residual
        assert r is not None and r <= tol
    if not planted and method in ("auto", "enumerate"):
        assert status is SearchStatus.INFEASIBLE, got


def test_find_index_set_float32_unit_target_scaled(f32: None) -> None:
    """T = −I/c (the leaky flip): float32 U, D with a float64 T, every backend as float64."""
    U32, D32 = _search_instance(True)
    T = -np.eye(3) / 1.01
    for method in ("auto", "enumerate", "linalg"):
        a = find_index_set(U32, D32, T, tol=TOL32, method=method, timeout=20)
        b = find_index_set(U32.astype(F64), D32.astype(F64), T, tol=TOL32, method=method, timeout=20)
        assert (a.status, a.S) == (b.status, b.S), method


# --------------------------------------------------------------- relative_residual --

def _residual_instance(rng, n, d, k):
    U = rng.standard_normal((n, d)).astype(F32)
    D = rng.standard_normal((d, n)).astype(F32)
    S = tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))
    return U, D, S


def _reference(U, D, T, S) -> float:
    U, D = U.astype(F64), D.astype(F64)
    idx = list(S)
    T = -np.eye(D.shape[0]) if T is None else T
    return float(np.linalg.norm(D[:, idx] @ U[idx] - T) / np.linalg.norm(T))


@pytest.mark.parametrize("nbytes", [None, 8 * 5 * 3, 8 * 5 * 64])
def test_relative_residual_float32_tiles_agree_with_float64(monkeypatch: pytest.MonkeyPatch, nbytes: int | None) -> None:
    import absorb.rigorous as rig

    if nbytes is not None:  # tiles of a few rows and columns: many tiles, the diagonal −I across tiles
        real = rig.row_slices
        monkeypatch.setattr(rig, "row_slices", lambda rows, width, nb=0: real(rows, width, nbytes))
    rng = np.random.default_rng(3)
    U, D, S = _residual_instance(rng, 12, 37, 5)
    for T in (None, -np.eye(37), rng.standard_normal((37, 37))):
        want = _reference(U, D, T, S)
        got = relative_residual(U, D, T, S)
        got64 = relative_residual(U.astype(F64), D.astype(F64), T, S)
        assert got == pytest.approx(want, rel=1e-12) and got64 == pytest.approx(want, rel=1e-12)
    assert relative_residual(U, D, None, S) == pytest.approx(relative_residual(U, D, -np.eye(37), S), rel=1e-13)


@pytest.mark.parametrize("nbytes", [8 * 4 * 3, 32 << 20])
def test_residuals_rectangular_target_and_rigorous_bounds_float32(monkeypatch: pytest.MonkeyPatch, nbytes: int) -> None:
    """d_out ≠ d_in (T given): the float32 tiles agree with float64; the rigorous bounds of
    both residual checks (search side and checker side) contain the exact residual."""
    import absorb.rigorous as rig
    from absorb.search._scale_bounds import check_residual
    from absorb.verify.dual_bound import check_residual as checker_residual

    real = rig.row_slices
    monkeypatch.setattr(rig, "row_slices", lambda rows, width, nb=0: real(rows, width, nbytes))
    rng = np.random.default_rng(5)
    n, d_in, d_out = 9, 11, 7
    U = rng.standard_normal((n, d_in)).astype(F32)
    D = rng.standard_normal((d_out, n)).astype(F32)
    T = rng.standard_normal((d_out, d_in))
    S = (0, 3, 4, 8)
    want = _reference(U, D, T, S)
    assert relative_residual(U, D, T, S) == pytest.approx(want, rel=1e-12)
    lo, hi = rig.exact_relative_residual_bounds(U.astype(F64), D.astype(F64), T, S)
    # square instances for the two rigorous checks (they take d×d targets or None)
    Us, Ds = U[:, :d_out], D
    Ts = T[:, :d_out]
    lo_s, hi_s = rig.exact_relative_residual_bounds(Us.astype(F64), Ds.astype(F64), Ts, S)
    lo_i, hi_i = rig.exact_relative_residual_bounds(Us.astype(F64), Ds.astype(F64), -np.eye(d_out), S)
    for fn in (check_residual, checker_residual):
        for TT, (a, b) in ((Ts, (lo_s, hi_s)), (None, (lo_i, hi_i))):
            r = fn(Us, Ds, TT, S, block_bytes=8 * d_out * 2)  # blocks of two units
            assert r.relative_upper >= b and r.relative == pytest.approx(a, rel=1e-12), fn.__module__
    assert lo <= want <= hi * (1 + 1e-15)


@pytest.mark.parametrize("du,dd", [(F64, F64), (F32, F32), (F32, F64), (np.float16, F32)])
def test_search_residual_blocks_any_order_contain_the_exact_residual(du: type, dd: type) -> None:
    """The search's check_residual accumulates D_S U_S block by block (the first block written
    into R, later ones through a reused row buffer, float32/16 widened into reused float64
    buffers) over S in any order: its bound contains the exact residual and its value agrees
    with the exact one, for every block size (1 unit up to all of S, rows likewise)."""
    import absorb.rigorous as rig
    from absorb.search._scale_bounds import check_residual

    rng = np.random.default_rng(11)
    n, d = 13, 6
    U = rng.standard_normal((n, d)).astype(du)
    D = rng.standard_normal((d, n)).astype(dd)
    S = (9, 2, 11, 0, 5, 7, 3)  # unsorted
    for T in (None, rng.standard_normal((d, d))):
        lo, hi = rig.exact_relative_residual_bounds(U.astype(F64), D.astype(F64), -np.eye(d) if T is None else T, S)
        for units in (1, 2, 3, len(S), n):
            r = check_residual(U, D, T, S, block_bytes=8 * d * units)
            assert r.relative_upper >= hi and r.relative == pytest.approx(lo, rel=1e-12), (T is None, units)
    empty = check_residual(U, D, None, ())
    assert empty.relative == pytest.approx(1.0, rel=1e-15) and empty.relative_upper >= 1.0


def test_relative_residual_near_zero_is_not_float32_rounding() -> None:
    """A planted float32 set: the float64 residual of the float32 values (~1e-8), never the
    ~1e-7 noise of a float32 product, and never 0 when the float32 values are not exact."""
    rng = np.random.default_rng(4)
    U, D, _ = _plant(rng, 40, 60, tuple(range(40)))
    U32, D32 = _r32(U), _r32(D)
    S = tuple(range(40))
    want = _reference(U32, D32, None, S)
    assert relative_residual(U32, D32, None, S) == pytest.approx(want, rel=1e-9)
    # a float32 product would give another number: the check above can tell them apart
    R32 = D32[:, list(S)] @ U32[list(S)] + np.eye(40, dtype=F32)
    assert abs(float(np.linalg.norm(R32.astype(F64)) / np.sqrt(40)) - want) > 1e-3 * want


def test_relative_residual_natural_tiles_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without monkeypatching: |S| = 4096 rows make 1024-row tiles, so d = 1100 needs two."""
    rng = np.random.default_rng(6)
    n, d = 4096, 1100
    U = rng.standard_normal((n, d)).astype(F32)
    D = (rng.standard_normal((d, n)) / 64).astype(F32)
    S = tuple(range(n))
    want = _reference(U, D, None, S)
    assert relative_residual(U, D, None, S) == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------- evaluation_error --

def _planted_block32(rng, d, n, k, act, *, gated=False, c=1.0, bias=False):
    S = tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))
    U, D, G = _plant(rng, d, n, S, c=c, gated=gated)
    kw = {}
    if bias:
        kw["b_up"] = rng.standard_normal(n)
        if gated:
            kw["b_gate"] = rng.standard_normal(n)
    b32, b64 = _pair(U, D, act, G=G, **kw)
    return b32, b64, S


@pytest.mark.parametrize("act,gated,c", [("relu", False, 1.0), ("gelu", False, 1.0), ("leaky_relu", False, 1.01),
                                         ("glu", True, 1.0)])
def test_flip_witness_float32_right_accepted_wrong_rejected(f32: None, act: str, gated: bool, c: float) -> None:
    rng = np.random.default_rng(8)
    b32, b64, S = _planted_block32(rng, 3, 7, 3, act, gated=gated, c=c)
    cf = Fraction(101, 100) if c != 1.0 else Fraction(1)
    w32, ok32 = check_flip_witness(b32, S, cf, tol=TOL32, seed=0)
    w64, ok64 = check_flip_witness(b64, S, cf, tol=TOL32, seed=0)
    assert ok32 and ok64, (w32.eval_error, w32.residual, w64.eval_error)
    assert w32.residual == pytest.approx(w64.residual, rel=1e-12)
    assert w32.eval_error == pytest.approx(w64.eval_error, rel=1e-6, abs=1e-15)
    # one unit changed slightly (down column of a unit outside S, in float32: relative 1e-2, above the 10·tol threshold)
    wrong = w32.block
    j = next(i for i in range(b32.n) if i not in S)
    W_down = wrong.W_down.copy()
    W_down[:, j] *= F32(1 + 1e-2)
    wrong = wrong.replace(W_down=W_down)
    assert wrong.W_down.dtype == F32
    err, _m = evaluation_error(b32, wrong, b32.d, seed=0)
    assert err > eval_threshold(TOL32, b32.n), err
    # the float64 copy of the same wrong witness gives the same error
    err64, _m = evaluation_error(b64, wrong.float64(), b32.d, seed=0)
    assert err == pytest.approx(err64, rel=1e-6)


STEP = {0.0: "expr:1-0**Max(0,x)", 0.5: "expr:(0**Max(0,-x)+1-0**Max(0,x))/2", 1.0: "expr:0**Max(0,-x)"}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("h0", sorted(STEP))
def test_step_gate_wrong_only_on_hyperplanes_float32(f32: None, h0: float, bias: bool) -> None:
    """A step gate with H(0) ≠ ½: the flipped block differs from f on the gate hyperplanes
    only. In float32 storage the check must still find it (and accept H(0) = ½)."""
    rng = np.random.default_rng(21)
    b32, b64, S = _planted_block32(rng, 3, 6, 4, STEP[h0], gated=True, bias=bias)
    w32, ok32 = check_flip_witness(b32, S, Fraction(1), tol=1e-5, seed=0)
    w64, ok64 = check_flip_witness(b64, S, Fraction(1), tol=1e-5, seed=0)
    assert ok32 == ok64 == (h0 == 0.5), (w32.eval_error, w64.eval_error)
    if h0 != 0.5:
        assert w32.eval_error > eval_threshold(1e-5, b32.n)


KINK_BAD = {"relu": "expr:Max(0,x)+0**Abs(x)", "leaky_relu": "expr:Max(0,x)+Min(0,x)/100+0**Abs(x)"}


@pytest.mark.parametrize("act", sorted(KINK_BAD))
def test_sigma_wrong_at_zero_only_is_rejected_float32(f32: None, act: str) -> None:
    """A witness whose σ differs from f's at z = 0 only: found on the kink hyperplanes."""
    rng = np.random.default_rng(22)
    b32, _b64, S = _planted_block32(rng, 3, 6, 3, act, c=1.01 if act == "leaky_relu" else 1.0)
    w = flip_block(b32, S, Fraction(101, 100) if act == "leaky_relu" else Fraction(1))
    assert w.W_up.dtype == F32
    bad = w.replace(activation=get_activation(KINK_BAD[act]))
    err, _m = evaluation_error(b32, bad, b32.d, seed=0)
    assert err > eval_threshold(1e-5, b32.n), err
    ok_err, _m = evaluation_error(b32, w, b32.d, seed=0)
    assert ok_err <= eval_threshold(1e-5, b32.n), ok_err


def test_shared_units_with_same_probe_coordinates_are_compared_in_full(f32: None) -> None:
    """Units that agree on the probed coordinates but differ elsewhere are not shared:
    a witness that changes one coordinate the cheap key never reads is rejected."""
    rng = np.random.default_rng(23)
    d, n = 40, 6  # 40 > 16 probe coordinates
    b32, _b64, S = _planted_block32(rng, d, n, d if n >= d else n, "relu")
    w = flip_block(b32, S, Fraction(1))
    from absorb.engine.witness import _probe

    probed = set(_probe(d).tolist())
    col = next(k for k in range(d) if k not in probed)
    j = next(i for i in range(n) if i not in S) if len(S) < n else 0
    W_up = w.W_up.copy()
    W_up[j, col] += F32(0.5)
    bad = w.replace(W_up=W_up)
    err, _m = evaluation_error(b32, bad, d, seed=0)
    assert err > eval_threshold(1e-5, n), err


# --------------------------------------------------------------------------- loaders --

@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["f32", "f16", "bf16-as-f32"])
def test_npz_narrow_matrices_stay_float32_exactly(f32: None, tmp_path: Path, dtype) -> None:
    rng = np.random.default_rng(9)
    U = rng.standard_normal((6, 3)).astype(dtype)
    D = rng.standard_normal((3, 6)).astype(dtype)
    if dtype is ml_dtypes.bfloat16:  # numpy.savez cannot store bfloat16: its values, as float32
        U, D = U.astype(F32), D.astype(F32)
    p = tmp_path / "m.npz"
    np.savez(p, W_up=U, W_down=D, b_up=rng.standard_normal(6).astype(dtype if dtype is not ml_dtypes.bfloat16 else F32),
             activation=np.array("relu"))
    blk = load_npz(p)
    assert blk.W_up.dtype == F32 and blk.W_down.dtype == F32
    assert blk.b_up.dtype == F64  # vectors are always float64
    assert np.array_equal(blk.W_up.astype(F64), U.astype(F64)) and np.array_equal(blk.W_down.astype(F64), D.astype(F64))
    blk.check()


@pytest.mark.parametrize("bad,what", [(np.nan, "NaN"), (np.inf, "Inf"), (-np.inf, "Inf")])
@pytest.mark.parametrize("key", ["W_up", "W_down", "W_gate"])
def test_npz_nonfinite_float32_matrix_is_one_line_error(f32: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        key: str, bad: float, what: str) -> None:
    rng = np.random.default_rng(10)
    arrs = {"W_up": rng.standard_normal((5, 3)).astype(F32), "W_down": rng.standard_normal((3, 5)).astype(F32),
            "W_gate": rng.standard_normal((5, 3)).astype(F32)}
    arrs[key][1, 2] = bad
    p = tmp_path / "bad.npz"
    np.savez(p, **arrs, activation=np.array("swiglu"))
    with pytest.raises(InvalidInput) as exc:
        load_npz(p)
    msg = str(exc.value)
    assert "\n" not in msg and repr(key) in msg and what in msg and "(1, 2)" in msg, msg
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and key in err and "(1, 2)" in err


def test_block_with_nonfinite_float32_matrix_is_refused(f32: None) -> None:
    U = np.ones((4, 2), dtype=F32)
    U[3, 1] = np.inf
    with pytest.raises(InvalidInput, match=r"W_up.*Inf at index \(3, 1\)"):
        Block(U, np.ones((2, 4), dtype=F32), get_activation("relu"))


def test_block_check_accepts_float32_matrices_only(f32: None) -> None:
    U = np.ones((4, 2), dtype=F32)
    blk = Block(U, np.ones((2, 4), dtype=F32), get_activation("swiglu"), W_gate=np.ones((4, 2), dtype=F32))
    blk.check()
    assert blk.W_gate.dtype == F32
    # biases and the skip are float64 even when given as float32
    b = Block(U, np.ones((2, 4), dtype=F32), get_activation("relu"), b_up=np.ones(4, dtype=F32),
              skip=np.eye(2, dtype=F32), b_down=np.ones(2, dtype=F32))
    assert b.b_up.dtype == b.b_down.dtype == b.skip.dtype == F64
    for key, val in (("b_up", np.ones(4, dtype=F32)), ("b_down", np.ones(2, dtype=F32)), ("skip", np.eye(2, dtype=F32))):
        forced = dataclasses.replace(b)
        object.__setattr__(forced, key, val)
        with pytest.raises(InvalidInput, match=f"{key} is dtype float32"):
            forced.check()
    forced = dataclasses.replace(blk)
    object.__setattr__(forced, "W_up", np.ones((4, 2), dtype=np.float16))
    with pytest.raises(InvalidInput, match="W_up is dtype float16"):
        forced.check()


def test_small_float32_matrices_still_become_float64() -> None:
    """Below the threshold nothing changes: float64 arrays, as before."""
    blk = Block(np.ones((4, 2), dtype=F32), np.ones((2, 4), dtype=F32), get_activation("relu"))
    assert blk.is_float64


# -------------------------------------------------------------- safetensors folding --

def _fold_checkpoint(tmp_path: Path, dtype: str, *, family: str = "llama"):
    case = ckpts.CASES[family]
    tensors, expected = ckpts.build(case, dtype=dtype)
    return case, tensors, expected, ckpts.write(tmp_path / f"c-{dtype}-{family}", tensors, case.config)


@pytest.mark.parametrize("family", ["llama", "gemma", "gpt2"])  # gemma: gain offset 1; gpt2: transposed, LayerNorm bias
@pytest.mark.parametrize("dtype", ["BF16", "F32", "F16"])
def test_fold_norm_float32_route_equals_float64_fold(f32: None, tmp_path: Path, dtype: str, family: str) -> None:
    case, tensors, expected, p = _fold_checkpoint(tmp_path, dtype, family=family)
    ck = open_checkpoint(p, fold_norm=True)
    for spec in ck.specs:
        exp = expected[spec.name]
        norm = f"{case.root.format(i=spec.layer)}.{case.norm}"
        g = tensors[norm + ".weight"].astype(F64) + spec.norm.offset
        blk = ck.block(spec)
        beta = tensors.get(norm + ".bias")
        if beta is not None:  # W β + b_up, from the unscaled float32 W read in float64
            want_b = exp["W_up"] @ beta.astype(F64) + exp.get("b_up", 0)
            np.testing.assert_allclose(blk.b_up, want_b, rtol=1e-13, atol=1e-13)
        for key in ("W_up", "W_gate"):
            if key not in exp:
                continue
            want = exp[key] * g  # exact in float64
            got = getattr(blk, key)
            assert np.array_equal(got.astype(F64), want), (key, got.dtype)
            if got.dtype == F32:  # kept float32 only when every product is a float32
                assert np.array_equal(want.astype(F32).astype(F64), want)
        assert blk.W_down.dtype == F32 and np.array_equal(blk.W_down.astype(F64), exp["W_down"])
        blk.check()
        # the same block read again is the same (the fold does not accumulate)
        again = ck.block(spec)
        assert np.array_equal(again.W_up.astype(F64), blk.W_up.astype(F64))


def test_fold_bf16_times_bf16_stays_float32(f32: None, tmp_path: Path) -> None:
    _case, _t, _e, p = _fold_checkpoint(tmp_path, "BF16")
    ck = open_checkpoint(p, fold_norm=True)
    blk = ck.block(ck.specs[0])
    assert blk.W_up.dtype == F32 and blk.W_gate.dtype == F32


def test_scale_columns_inexact_products_go_float64() -> None:
    rng = np.random.default_rng(12)
    W = rng.standard_normal((7, 5)).astype(F32)
    g = (1 + rng.standard_normal(5) / 3).astype(F32).astype(F64)  # 24 significant bits each
    want = W.astype(F64) * g  # exact: 24 + 24 ≤ 53 bits
    assert not np.array_equal(want.astype(F32).astype(F64), want)
    out = _scale_columns(W.copy(), g)
    assert out.dtype == F64 and np.array_equal(out, want)
    # the same with several row blocks, the first ones exact in float32 (already scaled in place)
    import absorb.io.safetensors as st

    W2 = np.vstack([np.ones((6, 5), dtype=F32), W])
    g2 = g.copy()
    g2[:] = 2.0 ** rng.integers(-3, 3, 5)  # powers of two: exact in float32
    ex = _scale_columns(W2.copy(), g2)
    assert ex.dtype == F32 and np.array_equal(ex.astype(F64), W2.astype(F64) * g2)
    real = st.float64_rows
    try:
        st.float64_rows = lambda A, nbytes=0: real(A, 8 * 5 * 2)  # two rows per block
        g3 = g2.copy()
        g3[4] = float(F32(1 / 3))
        W3 = W2.copy()
        W3[:6, 4] = 0.5  # rows 0..5: 0.5·fl32(1/3) is a float32; later rows are not
        out3 = _scale_columns(W3.copy(), g3)
        assert out3.dtype == F64 and np.array_equal(out3, W3.astype(F64) * g3)
    finally:
        st.float64_rows = real


class _FakeTorch:
    """The few names :class:`absorb.io.torch_state.TorchSource` uses; a tensor's ``numpy()``
    shares the tensor's memory, as ``torch.Tensor.numpy()`` does for a CPU tensor."""

    float16, bfloat16, float32 = "float16", "bfloat16", "float32"

    class Tensor:
        def __init__(self, a: np.ndarray) -> None:
            self.a = a
            self.dtype = a.dtype.name

        def detach(self):
            return self

        def to(self, dtype):
            return _FakeTorch.Tensor(self.a.astype(F32))

        def numpy(self) -> np.ndarray:
            return self.a  # shared memory, like torch


@pytest.mark.parametrize("stored", ["F32-bf16-values", "F64"])
def test_fold_norm_from_a_state_dict_does_not_scale_it_in_place(f32: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 stored: str) -> None:
    """A loaded PyTorch state_dict hands out its own memory (``tensor.numpy()``). Folding a
    norm gain scales the read weights in place, so the reader must own them: else the
    state_dict is modified and a second read of the block applies the gain twice."""
    from absorb.io.torch_state import TorchSource

    case = ckpts.CASES["llama"]
    tensors, _expected = ckpts.build(case, dtype="BF16")  # bfloat16 values: every product with the gain is a float32
    dt = F32 if stored.startswith("F32") else F64
    tensors = {k: v.astype(dt) for k, v in tensors.items()}
    p = ckpts.write(tmp_path / "c", tensors, case.config)
    ck = open_checkpoint(p, fold_norm=True)
    state = {k: np.array(v) for k, v in tensors.items()}
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch)
    ck.source = TorchSource({k: _FakeTorch.Tensor(v) for k, v in state.items()})
    spec = ck.specs[0]
    blk = ck.block(spec)
    assert blk.W_up.dtype == dt
    first = blk.W_up.astype(F64)
    second = ck.block(spec).W_up.astype(F64)
    assert np.array_equal(first, second), "the norm gain was applied twice"
    assert all(np.array_equal(state[k], tensors[k]) for k in tensors), "the state_dict was modified in place"


# ---------------------------------------------------------------------- certificates --

def _npz(path: Path, arrays: dict) -> Path:
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("name", ["planted_relu", "generic_relu", "planted_glu", "swiglu", "planted_relu_skip"])
def test_certificate_of_float32_route_block_verifies(f32: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    kw = CASES[name]
    arrays = {"W_up": _r32(kw["U"]), "W_down": _r32(kw["D"]), "activation": np.array(kw["act"])}
    if kw.get("G") is not None:
        arrays["W_gate"] = _r32(kw["G"])
    if kw.get("skip") is not None:
        arrays["skip"] = kw["skip"]
    model = _npz(tmp_path / f"{name}.npz", arrays)
    assert load_npz(model).W_up.dtype == F32
    cert = tmp_path / f"{name}.json"
    assert main(["check", str(model), "--tol", str(TOL32), "--certificate", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    capsys.readouterr()
    if ((doc["blocks"][0].get("search") or {}).get("certificate") or {}).get("kind") != "dual":
        # the checker loads the model as the producer did (float32 matrices)
        assert main(["verify", str(cert)]) == 0, capsys.readouterr()
    # a dual matrix of a small (narrow) search is computed on float64 copies; a model that
    # small is float64 at the real threshold, where the checker recomputes it
    monkeypatch.setattr(absorb._validate, "FLOAT32_MIN_ENTRIES", 1 << 22)
    assert main(["verify", str(cert), str(model)]) == 0, capsys.readouterr()
    if name.startswith("planted"):
        assert doc["verdict"] == "absorbable"


# ------------------------------------------------- the wide route (d²·n > 4·10⁶) --
# Only here does the search itself read float32 weights (narrow problems get float64
# copies): the linalg backend's sketch, its rigorous residual and its dual certificate.

WD, WN = 64, 1040  # d²·n = 4.26e6


def _wide(planted: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((WN, WD)).astype(F32).astype(F64)
    D = rng.standard_normal((WD, WN)) / np.sqrt(WN)
    S = tuple(sorted(rng.choice(WN, WD, replace=False).tolist()))
    if planted:
        D[:, list(S)] = -np.linalg.pinv(U[list(S)])
    return _r32(U), _r32(D), S


@pytest.mark.parametrize("planted", [True, False], ids=["planted", "generic"])
def test_wide_find_index_set_float32_agrees_and_its_bound_is_sound(f32: None, planted: bool) -> None:
    from absorb.verify.dual_bound import check_dual_bound

    U32, D32, S = _wide(planted)
    U64, D64 = U32.astype(F64), D32.astype(F64)
    runs = {(dt, T is None): find_index_set(a, b, T, tol=TOL32, timeout=30)
            for dt, (a, b) in (("f32", (U32, D32)), ("f64", (U64, D64))) for T in (None, -np.eye(WD))}
    got = {k: (r.status, r.S) for k, r in runs.items()}
    assert len(set(got.values())) == 1, got
    r = runs[("f32", True)]
    if planted:
        assert r.status is SearchStatus.FOUND and tuple(sorted(r.S)) == S
        assert r.residual == pytest.approx(_reference(U32, D32, None, S), rel=1e-9)
        return
    assert r.status is SearchStatus.INFEASIBLE and r.certificate["kind"] == "dual-low-rank"
    A, B = np.asarray(r.certificate["A"]), np.asarray(r.certificate["B"])
    # the float32 route certifies Y = fl32(A) fl32(B)ᵀ: its bound, recomputed in float64 on
    # the float64 copies, is at least the recorded one (rounding only ever lowers it)
    y32 = check_dual_bound(U64, D64, None, A.astype(F32).astype(F64), B.astype(F32).astype(F64)).relative
    assert r.bound <= y32 and r.bound > 0.99 * y32, (r.bound, y32)
    assert runs[("f32", False)].bound == pytest.approx(r.bound, rel=1e-9)


@pytest.mark.parametrize("act", ["relu", "gelu", "leaky_relu"])
def test_wide_decide_float32_agrees(f32: None, act: str) -> None:
    for planted in (True, False):
        U32, D32, S = _wide(planted, seed=1)
        b32, b64 = _pair(U32, D32, act)
        r32, r64 = decide(b32, tol=TOL32_INF), decide(b64, tol=TOL32_INF)
        assert (r32.verdict, r32.theorem) == (r64.verdict, r64.theorem), (act, planted, r32.reason, r64.reason)
        if planted and act != "leaky_relu":
            assert r32.verdict is Verdict.ABSORBABLE and r32.witness.S == S
            assert r32.witness.residual == pytest.approx(r64.witness.residual, rel=1e-12)
            assert r32.witness.eval_error == pytest.approx(r64.witness.eval_error, rel=1e-3, abs=1e-12)


def test_wide_planted_glu_float32_and_wrong_witnesses(f32: None) -> None:
    rng = np.random.default_rng(2)
    S = tuple(sorted(rng.choice(WN, WD, replace=False).tolist()))
    U, D, G = _plant(rng, WD, WN, S, gated=True)
    D /= np.sqrt(WN)
    D[:, list(S)] = -np.linalg.pinv(U[list(S)])
    b32, b64 = _pair(U, D, "glu", G=G)
    w32, ok32 = check_flip_witness(b32, S, Fraction(1), tol=TOL32_INF, seed=0)
    w64, ok64 = check_flip_witness(b64, S, Fraction(1), tol=TOL32_INF, seed=0)
    assert ok32 and ok64, (w32.eval_error, w64.eval_error)
    # a unit's gate row changed in one coordinate the cheap keys do not probe: rejected
    from absorb.engine.witness import _probe

    col = next(k for k in range(WD) if k not in set(_probe(WD).tolist()))
    j = next(i for i in range(WN) if i not in S)
    Wg = w32.block.W_gate.copy()
    Wg[j, col] += F32(0.25)
    err, _m = evaluation_error(b32, w32.block.replace(W_gate=Wg), WD, seed=0)
    assert err > eval_threshold(TOL32, WN), err
    # a unit outside S flipped as well: the witness is wrong
    bad = flip_block(b32, (*S, j), Fraction(1))
    err, _m = evaluation_error(b32, bad, WD, seed=0)
    assert err > eval_threshold(TOL32, WN), err


@pytest.mark.parametrize("planted", [True, False], ids=["planted", "generic"])
def test_wide_certificate_float32_verifies(f32: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: bool) -> None:
    U32, D32, _S = _wide(planted)
    model = _npz(tmp_path / "w.npz", {"W_up": U32, "W_down": D32, "activation": np.array("relu")})
    cert = tmp_path / "w.json"
    assert main(["check", str(model), "--tol", str(TOL32), "--certificate", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    assert doc["verdict"] == ("absorbable" if planted else "not_absorbable")
    capsys.readouterr()
    assert main(["verify", str(cert)]) == 0, capsys.readouterr().out[-3000:]


# ------------------------------------------------- the independent checker on float32 --
# absorb verify loads the model as absorb check does, so large layers reach the checker as
# float32 too; its rounding accounts are for float64 arithmetic (unit roundoff 2^-53).

def test_checker_residual_of_float32_weights_is_a_float64_product() -> None:
    from absorb.verify._weights import _residual

    rng = np.random.default_rng(30)
    d, n = 64, 200  # |S|·d² = 262144 > the checker's exact-rational budget: the float64 route
    U, D, _ = _plant(rng, d, n, tuple(range(d)))
    U32, D32 = _r32(U), _r32(D)
    S = list(range(d))
    rel32, up32, _z, _s, inf32 = _residual(U32, D32, np.eye(d), Fraction(1), S)
    rel64, up64, _z, _s, inf64 = _residual(U32.astype(F64), D32.astype(F64), np.eye(d), Fraction(1), S)
    assert inf32 == inf64
    want = _reference(U32, D32, None, S)
    assert rel64 == pytest.approx(want, rel=1e-9)
    assert rel32 == pytest.approx(want, rel=1e-9), (rel32, want)  # not a float32 product's ~1e-6
    assert up32 >= want


def test_checker_finds_exactly_collinear_float32_rows_beyond_the_full_gram() -> None:
    from absorb.verify._weights import FULL_GRAM_MAX, _collinear_pairs

    rng = np.random.default_rng(0)
    n = FULL_GRAM_MAX + 52  # the projection screen
    for _ in range(3):
        U = np.round(rng.standard_normal((n, 8)) * 2**18) / 2**18  # 20-bit mantissas: 3u and 5u are exact in float32
        U[7], U[9] = 3 * U[3], 5 * U[4]
        assert _collinear_pairs(U)[0] == [(3, 7), (4, 9)]
        assert _collinear_pairs(U.astype(F32))[0] == [(3, 7), (4, 9)]


def test_checker_enumeration_bound_of_float32_weights_is_that_of_float64() -> None:
    from absorb.verify._infeasible import _enumerate_lower_bound
    from absorb.verify._mitm import mitm_no_set_closer

    rng = np.random.default_rng(31)
    U32, D32 = rng.standard_normal((6, 3)).astype(F32), rng.standard_normal((3, 6)).astype(F32)
    T = -np.eye(3)
    assert _enumerate_lower_bound(U32, D32, T) == _enumerate_lower_bound(U32.astype(F64), D32.astype(F64), T)
    a = mitm_no_set_closer(U32, D32, T, 0.1)
    b = mitm_no_set_closer(U32.astype(F64), D32.astype(F64), T, 0.1)
    assert repr(a) == repr(b)


def test_linear_certificate_of_float32_weights_verifies(f32: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """σ = identity, n < d, rank(M + D U) = 1 ≤ n exactly: absorbable. The checker's
    M + D U must not be a float32 product (its ~1e-7 error is far above tol = 1e-9)."""
    rng = np.random.default_rng(0)
    d, n = 4, 2
    U, D = rng.standard_normal((n, d)).astype(F32), rng.standard_normal((d, n)).astype(F32)
    M = rng.standard_normal((d, 1)) @ rng.standard_normal((1, d)) - D.astype(F64) @ U.astype(F64)
    model = _npz(tmp_path / "lin.npz", {"W_up": U, "W_down": D, "skip": M, "activation": np.array("identity")})
    cert = tmp_path / "lin.json"
    assert main(["check", str(model), "--certificate", str(cert)]) == 0
    assert json.loads(cert.read_text())["verdict"] == "absorbable"
    capsys.readouterr()
    assert main(["verify", str(cert)]) == 0, capsys.readouterr().out[-2000:]


@pytest.mark.slow
def test_real_threshold_planted_float32_layer_certificate_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No monkeypatch: a layer of 2^22 float32 entries per matrix (d = 200, n = 21000) is
    kept float32 by both absorb check and absorb verify. Its planted index set (|S| = 200,
    residual ~6e-7 from the float32 rounding of D[:,S]) is found and the certificate is
    accepted (the checker's residual was a float32 product: 3.8e-6, rejected)."""
    rng = np.random.default_rng(0)
    d, n = 200, 21000
    U = rng.standard_normal((n, d)).astype(F32)
    D = rng.standard_normal((d, n)) / np.sqrt(n)
    S = sorted(rng.choice(n, d, replace=False).tolist())
    D[:, S] = -np.linalg.pinv(U[S].astype(F64))
    model = _npz(tmp_path / "layer.npz", {"W_up": U, "W_down": D.astype(F32), "activation": np.array("relu")})
    assert load_npz(model).W_up.dtype == F32
    cert = tmp_path / "layer.json"
    assert main(["check", str(model), "--tol", str(TOL32_INF), "--certificate", str(cert), "-q"]) == 0
    doc = json.loads(cert.read_text())
    assert doc["verdict"] == "absorbable" and sorted(doc["blocks"][0]["witness"]["S"]) == S
    capsys.readouterr()
    assert main(["verify", str(cert)]) == 0, capsys.readouterr().out[-2000:]
