"""Huge and tiny weights on the engine's floating-point routes: canonical form, witness
evaluation, collinearity screen, width answers. Each must answer (unknown with a reason,
or a checked verdict) without an exception or an overflow warning."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import run_absorb

from absorb import Block, get_activation
from absorb.engine._collinear import max_abs_cosine, near_collinear_pairs
from absorb.engine.decide import decide
from absorb.engine.degenerate import decide_degenerate
from absorb.engine.verdict import Verdict
from absorb.engine.width import decide_width, minimal_width
from absorb.engine.witness import check_flip_witness, evaluation_error


def _relu(U: list, D: list, **kw: object) -> Block:
    return Block(np.array(U, dtype=float), np.array(D, dtype=float), get_activation("relu"), **kw)


D1_HUGE = dict(U=[[1e155], [2e155]], D=[[1e155, 1e155]])


def _all(value: float, n: int, d: int, **kw: object) -> Block:
    return _relu(np.full((n, d), value).tolist(), np.full((d, n), value).tolist(), **kw)


MIXED = dict(U=[[5e-324, 1e300], [1e300, 5e-324], [1.0, 2.0]], D=[[5e-324, 1e300, 1.0], [1.0, 1e300, 5e-324]])


@pytest.fixture(autouse=True)
def _overflow_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def test_canonical_form_route_d1_huge_is_unknown_with_reason() -> None:
    b = _relu(D1_HUGE["U"], D1_HUGE["D"])
    dd = decide_degenerate(b)
    assert dd.verdict is Verdict.UNKNOWN and "2^200" in dd.reason and "rescale" in dd.reason
    dec = decide(b)
    assert dec.verdict is Verdict.UNKNOWN  # d = 1 and collinear rows: no result applies in range


@pytest.mark.parametrize("n,d", [(1, 1), (2, 1), (3, 2), (2, 3)])
@pytest.mark.parametrize("skip", ["identity", "zero", "huge"])
def test_all_1e308_block_never_raises(n: int, d: int, skip: str) -> None:
    kw = {} if skip == "identity" else {"skip": np.zeros((d, d)) if skip == "zero" else np.full((d, d), 1e308)}
    b = _all(1e308, n, d, **kw)
    dec = decide(b)
    if skip == "zero":
        assert dec.verdict is Verdict.ABSORBABLE  # M = 0: B' = B, identical, no evaluation needed
        # and B padded with a dead unit (which adds exactly 0) is f at width n + 1: nothing to evaluate either
        assert decide_width(b, n + 1, decision=dec.blocks[0]).verdict is Verdict.ABSORBABLE
    else:
        assert dec.verdict is not Verdict.ABSORBABLE
        assert decide_width(b, n + 1).verdict is Verdict.UNKNOWN
    assert minimal_width(b).value is None


def test_min_width_tiny_and_huge_entries() -> None:
    b = _relu(MIXED["U"], MIXED["D"])
    mw = minimal_width(b)
    assert mw.value is None and "2^-200" in mw.reason
    assert decide_width(b, 5).verdict is Verdict.UNKNOWN


def test_evaluation_error_out_of_range_fails_instead_of_passing() -> None:
    """Both blocks overflow to inf (inf − inf = nan): that must not read as agreement."""
    f = _all(1e308, 2, 2)
    g = _all(1e308, 2, 2, skip=np.zeros((2, 2)))
    err, m = evaluation_error(f, g, 2, seed=0)
    assert err == float("inf") and m == 0
    tiny_f = _all(1e-300, 2, 2, skip=1e-300 * np.eye(2))
    tiny_g = _all(1e-300, 2, 2, skip=np.zeros((2, 2)))  # wrong: drops the skip, invisible at 1e-300
    assert evaluation_error(tiny_f, tiny_g, 2, seed=0)[0] == float("inf")
    w, ok = check_flip_witness(f, (0,), Fraction(1), tol=1e-9, seed=0)
    assert not ok


def test_evaluation_error_overflowing_activation_fails() -> None:
    """In-range weights with an activation that overflows (exp): non-finite means fail."""
    b = Block(np.array([[600.0, 0.0], [0.0, 1.0]]), np.eye(2), get_activation("expr:exp(x)"))
    g = b.replace(W_down=2 * np.eye(2), skip=np.zeros((2, 2)))
    err, _ = evaluation_error(b, g, 2, seed=0)
    assert err == float("inf")


@pytest.mark.parametrize("U", [np.full((3, 2), 1e308), np.array(MIXED["U"]), np.array([[5e-324, 5e-324], [-5e-324, -5e-324], [1e308, -1e308]])])
def test_collinearity_screen_extreme_rows(U: np.ndarray) -> None:
    exact = near_collinear_pairs(U, tau=1e-10, method="exact")
    assert exact == near_collinear_pairs(U, tau=1e-10, method="screen")
    assert 0.0 <= max_abs_cosine(U) <= 1.0
    if U[0, 0] == 5e-324 and U[0, 1] == 5e-324:
        assert [(i, j) for i, j, _ in exact] == [(0, 1)]  # exactly antipodal subnormal rows


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow warning fails the run, as `python -W error` did
@pytest.mark.parametrize("case", ["d1", "all", "mixed"])
def test_cli_extreme_weights(tmp_path: Path, case: str) -> None:
    p = tmp_path / f"{case}.npz"
    if case == "d1":
        np.savez(p, W_up=np.array(D1_HUGE["U"]), W_down=np.array(D1_HUGE["D"]), activation=np.array("relu"))
    elif case == "all":
        np.savez(p, W_up=np.full((3, 2), 1e308), W_down=np.full((2, 3), 1e308), activation=np.array("relu"))
    else:
        np.savez(p, W_up=np.array(MIXED["U"]), W_down=np.array(MIXED["D"]), activation=np.array("relu"))
    r = run_absorb("check", str(p), "--min-width", "--width", "4", "--json")  # in process
    assert r.returncode in (0, 3), r.stderr
    assert "Traceback" not in r.stderr and "Warning" not in r.stderr
    out = json.loads(r.stdout)
    blk = out["blocks"][0]
    assert blk["width"]["verdict"] == "unknown" and "2^" in blk["width"]["reason"]
    assert blk["min_width"] is None


def test_collinearity_projection_screen_extreme_rows() -> None:
    """d = 64 takes the projection screen (not its exact fallback): rows at 1e±300, subnormal
    rows and exact power-of-two multiples (2^-2000 overall) are still found, and agree with the
    exact route."""
    rng = np.random.default_rng(0)
    U = rng.standard_normal((60, 64)) * np.where(rng.random((60, 1)) < 0.5, 1e300, 1e-300)
    U[5] = -U[3] * 2.0**-1000
    U[7], U[8] = 5e-324, -5e-324
    U[9] = 0.0
    U[9, 3] = 1e308
    U[10] = U[9] * 2.0**-1000 * 2.0**-1000
    pairs = near_collinear_pairs(U, tau=1e-10, method="screen")
    assert [(i, j) for i, j, _ in pairs] == [(3, 5), (7, 8), (9, 10)]
    assert pairs == near_collinear_pairs(U, tau=1e-10, method="exact")


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("d", [2, 3, 4])
def test_skip_near_float64_top_with_unit_weights(tmp_path: Path, d: int) -> None:
    """M = 1.7e308·I with weights of size 1: ‖M‖_F overflows float64 for d ≥ 2 unless the exact
    power-of-two rescaling brings it back in range. No internal error, no warning, and no
    `absorbable` (D_S U_S cannot reach −M): decided or unknown with a reason."""
    rng = np.random.default_rng(d)
    n = d * d
    p = tmp_path / "top.npz"
    np.savez(p, W_up=0.4 * rng.standard_normal((n, d)), W_down=0.4 * rng.standard_normal((d, n)),
             skip=1.7e308 * np.eye(d), activation=np.array("relu"))
    r = run_absorb("check", str(p), "--json")
    assert r.returncode in (0, 3), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr and "Warning" not in r.stderr
    assert json.loads(r.stdout)["verdict"] in ("not_absorbable", "unknown")


def test_a_skip_product_in_the_subnormals_proves_nothing() -> None:
    """M2·M1 = 0 exactly (0.625u + 0.625u − 1.25u, u = 2^-1074) but rounds to 5e-324; the
    relative margin 2γ|M2||M1| underflows to 0 while each subnormal product is off by up to
    2^-1075. F ≡ 0 here, so the stack is absorbable; the depth result must not fire."""
    from absorb import Stack
    from absorb.engine.decide import decide_stack

    a, b = 5 * 2.0**-540, 2.0**-537
    M1 = np.zeros((3, 3))
    M1[:, 0] = b
    M2 = np.zeros((3, 3))
    M2[0] = [a, a, -2 * a]
    assert (M2 @ M1)[0, 0] != 0
    relu2 = get_activation("relu2")
    b1 = Block(W_up=np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 3.0]]), W_down=np.array([[1.0, -2.0]] * 3), skip=M1, activation=relu2)
    b2 = Block(W_up=np.array([[1.0, -1.0, 0.0], [1.0, 0.0, -1.0]]), W_down=np.array([[1.0, 2.0], [-1.0, 0.5], [3.0, 1.0]]),
               skip=M2, activation=relu2)
    assert decide_stack(Stack((b1, b2))).verdict is not Verdict.NOT_ABSORBABLE


def test_verify_refuses_a_linear_rank_proof_from_subnormal_products() -> None:
    """σ = identity, d = 25 (past the checker's exact rank), weights near 2^-537: fl(D@U) rounds
    to multiples of 2^-1074, which raises the float rank, while every rounding margin underflows
    to 0. The exact rank is 2 = n (absorbable); a certificate edited to not_absorbable must fail."""
    from absorb.certificate import build_certificate
    from absorb.verify import checker

    u, h, d = 2.0**-1074, 2.0**-537, 25
    rng = np.random.default_rng(3)
    x, y = rng.integers(1, 64, d) / 8.0, rng.integers(1, 64, d) / 8.0
    D = np.zeros((d, 2))
    D[:, 0] = x * h
    U = np.zeros((2, d))
    U[0] = y * h
    U[1, 0] = h
    M = np.zeros((d, d))
    M[0, 0] = u
    blk = Block(W_up=U, W_down=D, skip=M, activation=get_activation("identity"))
    doc = build_certificate(decide(blk), blk, seed=0).to_json()
    assert doc["verdict"] != "not_absorbable"
    doc["verdict"] = doc["blocks"][0]["verdict"] = "not_absorbable"
    doc["blocks"][0]["argument"]["sigma_lower_bound"] = float(np.linalg.svd(M + D @ U, compute_uv=False)[2])
    assert not checker.verify_certificate(doc, blk).accepted


def test_a_subnormal_weight_in_the_tolerance_screens() -> None:
    """W_up = [[0, 5e-324]] with biases: the sampled tolerance screen's points on the kink hyperplanes
    would overflow (an exact coordinate past float64); it skips them, and the exact verdict stands."""
    from absorb import decide_block

    blk = Block(np.array([[0.0, 5e-324]]), np.array([[0.33043708], [-1.30315723]]), get_activation("relu"),
                b_up=np.array([0.90535587]), b_down=np.array([0.44637457, -0.53695324]))
    from absorb.verify._tolerance import sampled_near

    assert decide_block(blk).verdict.value in ("not_absorbable", "unknown")
    assert sampled_near(blk, 1e-9, 0) is None


def test_a_planted_flip_whose_moved_bias_leaves_float64_is_unknown() -> None:
    """b_up = 10³⁰⁸ and b_down = −10³⁰⁸ with a planted flip: the witness's output bias b_down + W_S b_S is past
    float64's range, so no finite witness exists — unknown with the reason, not an OverflowError."""
    r = np.random.default_rng(0)
    U, W = r.standard_normal((6, 3)), r.standard_normal((3, 6))
    U[:3] = -np.linalg.inv(W[:, :3])
    b = Block(U, W, get_activation("relu"), b_up=np.full(6, 1e308), b_down=np.full(3, -1e308))
    dec = decide(b)
    assert dec.verdict is Verdict.UNKNOWN and "witness" in dec.reason
