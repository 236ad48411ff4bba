"""The Gram route beyond GRAM_MAX_N (issue 26: model-size ReLU² and gated blocks): Ĝ by row
blocks with a rank-one error bound, λ_min(G) bounded below by Gershgorin or by Rump's Cholesky
criterion, and the checker's own re-derivation. The size switch is a module constant, so the
large route is tested here at small n against the small route (same conclusions)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import _gram, decide
from absorb.engine import skeleton2 as sk2
from absorb.verify import _gram as vgram
from absorb.verify import _skeleton2 as vsk2
from absorb.verify import checker


def _relu2(seed: int, d: int, n: int, scale: float = 1.0) -> Block:
    rng = np.random.default_rng(seed)
    return Block(scale * rng.standard_normal((n, d)), scale * rng.standard_normal((d, n)), get_activation("relu2"),
                 b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)).float64()


def _swiglu(seed: int, d: int, n: int) -> Block:
    rng = np.random.default_rng(seed)
    G, U, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    return Block(U, D, get_activation("silu"), W_gate=G, b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n),
                 b_down=rng.standard_normal(d)).float64()


def _rows(blk: Block) -> _gram.LowerGram:
    lg = (sk2.gram_rows_gated if blk.gated else sk2.gram_rows_skeleton2)(blk)
    assert lg is not None
    return lg


def _small(blk: Block) -> tuple[np.ndarray, np.ndarray]:
    out = (sk2.gram_gated if blk.gated else sk2.gram_skeleton2)(blk)
    assert out is not None
    return out


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides take the large route from n > 16 on."""
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 16)
    monkeypatch.setattr(vsk2, "GRAM_MAX_N", 16)


def _bd(blk: Block) -> Any:
    dec = decide(blk)
    return dec.blocks[0] if hasattr(dec, "blocks") else dec


def _verify(blk: Block) -> Any:
    return checker.verify_certificate(build_certificate(decide(blk), blk, seed=0).to_json(), blk)


# ------------------------------------------------------------------ the pieces ------------
@pytest.mark.parametrize("blk", [_relu2(0, 5, 30), _relu2(1, 40, 90), _swiglu(2, 6, 40), _swiglu(3, 30, 80)],
                         ids=["relu2-small-d", "relu2", "swiglu-small-d", "swiglu"])
def test_rows_and_rank_one_bound_match_the_small_route(blk: Block) -> None:
    """The row blocks are the small route's Ĝ (lower triangle), and coef·s_i s_j + TINY is at
    least the small route's entrywise E (both bound the same |G − Ĝ|; the rank-one one by
    Cauchy–Schwarz, so it is never below)."""
    lg, (G, E) = _rows(blk), _small(blk)
    out = _gram.lower_pass(lg, store=True)
    assert out is not None and out[0] is not None
    Gl, diag, off = out
    assert np.allclose(np.tril(Gl), np.tril(G), rtol=1e-12, atol=0)
    assert np.allclose(diag, np.diag(G), rtol=1e-12, atol=0)
    A = np.abs(np.tril(G, -1))
    assert np.allclose(off, A.sum(axis=1) + A.sum(axis=0), rtol=1e-9)
    Ebig = lg.coef * np.outer(lg.s, lg.s) + _gram.TINY
    assert np.all(Ebig >= E / 3 * 0.999)  # E carries a factor 3 of slack over γ·P


@pytest.mark.parametrize("blk", [_relu2(4, 5, 30), _relu2(5, 40, 90), _swiglu(6, 6, 40), _swiglu(7, 30, 80),
                                 _relu2(8, 12, 60, scale=2.0**-90), _relu2(9, 12, 60, scale=2.0**60)])
def test_large_lower_bound_is_positive_and_below_lambda_min(blk: Block) -> None:
    lg = _rows(blk)
    got = _gram.large_lower_bound(lg, 0.0)
    assert got is not None
    lam = float(np.linalg.eigvalsh(_small(blk)[0])[0])
    assert 0 < got[0] < lam
    assert got[1] in ("gershgorin", "cholesky")


def test_both_proofs_are_exercised() -> None:
    """Small d: off-diagonal entries comparable to the diagonal, Gershgorin fails and the
    Cholesky criterion concludes; d ≫ 1 with n ≈ d: Gershgorin alone concludes."""
    assert _gram.large_lower_bound(_rows(_relu2(10, 6, 50)), 0.0)[1] == "cholesky"  # type: ignore[index]
    assert _gram.large_lower_bound(_rows(_relu2(11, 64, 64)), 0.0)[1] == "gershgorin"  # type: ignore[index]
    assert _gram.large_lower_bound(_rows(_swiglu(12, 6, 50)), 0.0)[1] == "cholesky"  # type: ignore[index]


def test_the_cholesky_criterion_refuses_an_indefinite_matrix() -> None:
    G = np.array([[1.0, 0, 0], [2.0, 1.0, 0], [0.0, 0.0, 1.0]])  # lower triangle of [[1, 2], [2, 1]] ⊕ 1
    assert not _gram.cholesky_succeeds(G.copy(), 1e-12, copy=True)[0]
    assert _gram.cholesky_succeeds(np.eye(3), 0.5, copy=True)[0]


def test_dependent_or_nearly_dependent_units_are_not_declared() -> None:
    blk = _relu2(13, 8, 64)
    U, D = blk.W_up.copy(), blk.W_down.copy()
    U[1], D[:, 1] = U[0], D[:, 0]
    same = blk.replace(W_up=U, W_down=D)
    assert _gram.large_lower_bound(_rows(same), 0.0) is None
    assert not vgram.large_positive_definite(same, 1e-300)[0]
    U[1] = U[0] * (1 + 2.0**-50)
    near = blk.replace(W_up=U, W_down=D)
    assert _gram.large_lower_bound(_rows(near), 0.0) is None
    assert not vgram.large_positive_definite(near, 1e-300)[0]
    U[1] = -U[0]  # (−u)(−u)ᵀ = u uᵀ: the same (Q) column again
    assert _gram.large_lower_bound(_rows(blk.replace(W_up=U, W_down=D)), 0.0) is None


def test_units_of_very_different_norms_are_decided_after_diagonal_scaling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of W_up scaled by 2^-12 … 2^12 spread the Gram diagonal over 2^±48: unscaled, the
    largest units set the Cholesky criterion's margin and nothing is proved (the small route
    fails too); on ΣGΣ (exact powers of two) both sides conclude. An overstated μ (twice the
    smallest diagonal entry, so G − μI has a negative diagonal entry) is refused."""
    rng = np.random.default_rng(40)
    d, n = 24, 300
    blk = Block(rng.standard_normal((n, d)) * 2.0 ** rng.integers(-12, 13, n)[:, None], rng.standard_normal((d, n)),
                get_activation("relu2"), b_up=rng.standard_normal(n)).float64()
    lg = _rows(blk)
    assert _gram._lower_bound_h(lg, 0.0) is None  # unscaled
    assert sk2.gram_lower_bound(*_small(blk)) is None
    got = _gram.large_lower_bound(lg, 0.0)
    assert got is not None and got[0] > 0
    assert got[0] <= float(np.diag(_small(blk)[0]).min())  # λ_min ≤ every diagonal entry
    assert vgram.large_positive_definite(blk, got[0])[0]
    assert not vgram.large_positive_definite(blk, 2 * float(np.diag(_small(blk)[0]).min()))[0]
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 16)
    monkeypatch.setattr(vsk2, "GRAM_MAX_N", 16)
    # the verdict: the units scaled by 2^-12 are negligible beside those scaled by 2^12 (shares ~1e-14 of f), and with
    # biases one spare ReLU² unit with a large bias realises a rank-one part of the skip — so no not_absorbable
    # (the Gram route alone would also fall short: its λ_min is far below the (Q) part's bar, Q∞ set by the 2^12 rows)
    # (or, first, two of those units come within the tolerance of collinear: the same smallness, seen as a pair)
    bd = _bd(blk)
    assert bd.verdict is Verdict.UNKNOWN and ("can spare" in bd.reason or "nearly collinear" in bd.reason), bd.reason


# ------------------------------------------------ the verdicts: same as the small route ---
CASES = [_relu2(20, 8, 60), _relu2(21, 24, 100), _relu2(22, 4, 50), _swiglu(23, 8, 60), _swiglu(24, 20, 90)]  # n > EXACT_MAX_N


@pytest.mark.parametrize("blk", CASES, ids=[f"{'gated' if b.gated else 'relu2'}-{b.d}x{b.n}" for b in CASES])
def test_large_route_reaches_the_small_routes_conclusion(blk: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    lam = float(np.linalg.eigvalsh(_small(blk)[0])[0])
    small = sk2.gram_lower_bound(*_small(blk))
    got = _gram.large_lower_bound(_rows(blk), 1e-18 * blk.d)
    assert (small is not None) == (got is not None), (small, got, lam)
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 16)
    monkeypatch.setattr(vsk2, "GRAM_MAX_N", 16)
    bd = _bd(blk)
    if small is None:  # (d = 4, n = 50 > d·d(d+1)/2: the columns are dependent)
        assert bd.search is None or bd.search.method != "gram"
        return
    theorem = Theorem.GATED_SKELETON if blk.gated else Theorem.SKELETON2
    assert (bd.verdict, bd.theorem, bd.search.method) == (Verdict.NOT_ABSORBABLE, theorem, "gram"), bd.reason
    rep = _verify(blk)
    assert rep.accepted and not rep.not_rechecked, rep.failures


@pytest.mark.parametrize("build", [_relu2, _swiglu])
def test_the_checkers_large_route_refutes_an_overstated_mu(build: Any, large: None) -> None:
    del large
    blk = build(30, 8, 60)
    doc = build_certificate(decide(blk), blk, seed=0).to_json()
    args = [b["argument"] for b in doc["blocks"] if "mu" in (b.get("argument") or {})]
    assert len(args) == 1
    mu = Fraction(args[0]["mu"])
    lam = float(np.linalg.eigvalsh(_small(blk)[0])[0])
    for bad in (Fraction(lam) * 2, Fraction(lam) * Fraction(1001, 1000), "-1", "0"):
        args[0]["mu"] = str(bad)
        assert not checker.verify_certificate(doc, blk).accepted, bad
    args[0]["mu"] = str(mu / 2)  # a weaker true claim is still a proof
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked


def test_the_checkers_own_bound_holds_on_both_proofs() -> None:
    """Gershgorin (d ≫ 1) and the Cholesky criterion (small d): accepted just below λ_min/2,
    refused above λ_min."""
    for blk in (_relu2(31, 64, 64), _relu2(32, 6, 50), _swiglu(33, 6, 50)):
        lam = float(np.linalg.eigvalsh(_small(blk)[0])[0])
        assert vgram.large_positive_definite(blk, lam / 2)[0]
        assert not vgram.large_positive_definite(blk, lam * 1.001)[0]


def test_the_producer_refuses_beyond_its_size_and_the_checker_declines(monkeypatch: pytest.MonkeyPatch, large: None) -> None:
    del large
    blk = _relu2(34, 8, 60)
    doc = build_certificate(decide(blk), blk, seed=0).to_json()
    monkeypatch.setattr(vgram, "LARGE_MAX_N", 32)
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and rep.not_rechecked and not rep.failures
    monkeypatch.setattr(_gram, "LARGE_MAX_N", 32)
    assert sk2.gram_route(sk2.gram_rows_skeleton2(blk), blk.M, 1e-9) is None


@pytest.mark.slow
def test_end_to_end_just_above_the_old_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """n = 4500 > GRAM_MAX_N, ReLU² weights ~ N(0, 1/d): decided by the large route, and the
    checker re-derives it (was: unknown). (The linear route, tried first at this size, is off.)"""
    monkeypatch.setattr(sk2, "linear_route", lambda *a: None)
    d, n = 48, 4500
    rng = np.random.default_rng(35)
    blk = Block(rng.standard_normal((n, d)) / np.sqrt(d), rng.standard_normal((d, n)) / np.sqrt(d), get_activation("relu2"),
                b_up=rng.standard_normal(n) / 10).float64()
    bd = _bd(blk)
    assert (bd.verdict, bd.theorem, bd.search.method) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2, "gram"), bd.reason
    rep = _verify(blk)
    assert rep.accepted and not rep.not_rechecked, rep.failures
