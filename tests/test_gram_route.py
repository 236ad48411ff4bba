"""The Gram route of the degree-2 and gated skeletons (issue 26): QᵀQ built from dot products,
its λ_min bounded below rigorously in floats, and the checker's own proof (Sylvester's law of
inertia with Gershgorin discs) of the recorded μ."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.engine import skeleton2 as sk2
from absorb.engine.gated_skeleton import gated_columns
from absorb.verify import _skeleton2 as vsk2
from absorb.verify import checker


def _relu2(seed: int, d: int, n: int) -> Block:
    rng = np.random.default_rng(seed)
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation("relu2"),
                 b_up=rng.standard_normal(n), b_down=rng.standard_normal(d))


def _swiglu(seed: int, d: int, n: int) -> Block:
    rng = np.random.default_rng(seed)
    G, U, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    return Block(U, D, get_activation("silu"), W_gate=G, b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n),
                 b_down=rng.standard_normal(d))


def _cert(blk: Block) -> tuple[Any, dict[str, Any]]:
    dec = decide(blk)
    return dec, build_certificate(dec, blk, seed=0).to_json()


def _accepted(doc: dict[str, Any], blk: Block) -> bool:
    rep = checker.verify_certificate(doc, blk)
    return rep.accepted and not rep.not_rechecked


def _arguments(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            if isinstance(o.get("argument"), dict) and "mu" in o["argument"]:
                out.append(o["argument"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(doc)
    return out


# ---------------------------------------------------------------- the Gram identities --
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gram_identities_match_the_explicit_columns(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d, n = 3, 7
    blk = Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation("relu2"))
    Q, _, _ = sk2.columns(blk.float64(), sk2.Quadratic(Fraction(1), Fraction(0)))
    exact = [[sum(a * b for a, b in zip(ci, cj)) for cj in sk2.exact_q_columns(blk)] for ci in sk2.exact_q_columns(blk)]
    for build in (sk2.gram_skeleton2, vsk2.gram_s2):
        G, E = build(blk)
        assert np.all(np.abs(np.array([[float(v) for v in r] for r in exact]) - G) <= E)  # the bound holds
        assert np.all(np.abs(Q.T @ Q - G) <= 1e-10 * np.abs(Q).T @ np.abs(Q))
    gb = _swiglu(seed, d, n)
    ex, Qg, _, _ = gated_columns(gb.float64())
    exact = np.array([[float(sum(a * b for a, b in zip(ci, cj))) for cj in ex] for ci in ex])
    for build in (sk2.gram_gated, vsk2.gram_gated):
        G, E = build(gb)
        assert np.all(np.abs(exact - G) <= E)
        assert np.all(np.abs(Qg.T @ Qg - G) <= 1e-10 * np.abs(Qg).T @ np.abs(Qg))


def test_gram_lower_bound_is_below_the_smallest_eigenvalue() -> None:
    blk = _relu2(3, 6, 60)
    G, E = sk2.gram_skeleton2(blk)
    lo = sk2.gram_lower_bound(G, E)
    lam = float(np.linalg.eigvalsh(G)[0])
    assert lo is not None and 0 < lo < lam


# ----------------------------------------------------------------------- the verdicts --
@pytest.mark.parametrize(("d", "n"), [(8, 64), (12, 150), (16, 200)])
def test_generic_relu2_at_width_is_decided_by_the_gram_route(d: int, n: int) -> None:
    blk = _relu2(d + n, d, n)
    dec, doc = _cert(blk)
    bd = dec.blocks[0] if hasattr(dec, "blocks") else dec
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2), bd.reason
    assert bd.search.method == "gram" and bd.search.bound > 1e-9
    assert _accepted(doc, blk)


@pytest.mark.parametrize(("d", "n"), [(8, 64), (12, 150)])
def test_generic_swiglu_at_width_is_decided_by_the_gram_route(d: int, n: int) -> None:
    blk = _swiglu(d * n, d, n)
    dec, doc = _cert(blk)
    bd = dec.blocks[0] if hasattr(dec, "blocks") else dec
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.GATED_SKELETON), bd.reason
    assert bd.search.method == "gram"
    assert _accepted(doc, blk)


@pytest.mark.parametrize("build", [_relu2, _swiglu])
def test_an_overstated_mu_is_rejected(build: Any) -> None:
    blk = build(5, 8, 64)
    _, doc = _cert(blk)
    args = _arguments(doc)
    assert len(args) == 1
    mu = Fraction(args[0]["mu"])
    lam = float(np.linalg.eigvalsh((sk2.gram_skeleton2 if build is _relu2 else sk2.gram_gated)(blk)[0])[0])
    for bad in (Fraction(lam) * 2, Fraction(lam) * Fraction(1001, 1000), "x", "-1", "0", 10**400):
        args[0]["mu"] = str(bad)
        assert not checker.verify_certificate(doc, blk).accepted, bad
    args[0]["mu"] = str(mu / 2)  # a weaker true claim is still a proof
    assert _accepted(doc, blk)


def test_two_identical_units_are_not_declared_by_the_gram_route() -> None:
    blk = _relu2(6, 8, 64)
    U, D = blk.W_up.copy(), blk.W_down.copy()
    U[1], D[:, 1] = U[0], D[:, 0]
    G, E = sk2.gram_skeleton2(blk.replace(W_up=U, W_down=D))
    assert sk2.gram_lower_bound(G, E) is None
    assert sk2.gram_route((G, E), blk.M, 1e-9) is None
    assert not vsk2.gram_positive_definite(G, E, 1e-300)[0]
    dec = decide(blk.replace(W_up=U, W_down=D))
    bd = dec.blocks[0] if hasattr(dec, "blocks") else dec
    assert bd.verdict is not Verdict.NOT_ABSORBABLE or (bd.search is not None and bd.search.method != "gram")


def test_nearly_identical_units_are_not_declared() -> None:
    """Two units one rounding apart: G's smallest eigenvalue is far below its error bound."""
    blk = _relu2(7, 8, 64)
    U = blk.W_up.copy()
    U[1] = U[0] * (1 + 2.0**-50)
    D = blk.W_down.copy()
    D[:, 1] = D[:, 0]
    assert sk2.gram_route(sk2.gram_skeleton2(blk.replace(W_up=U, W_down=D)), blk.M, 1e-9) is None


def test_planted_relu2_is_still_absorbable() -> None:
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -1], [2, 3], [-1, 5]])
    w = np.array([1.0, 2.0])
    D = np.column_stack([w, w, -w / 2, -w / 2, [3.0, 1], [-1.0, 2]])
    c = np.array([0.5, -1, 0.25, 2, 1.5, -0.5])
    M = -sum(2 * c[i] * np.outer(D[:, i], U[i]) for i in range(4))
    blk = Block(U, D, get_activation("relu2"), b_up=c, b_down=np.array([0.125, -0.25]), skip=M)
    dec, doc = _cert(blk)
    bd = dec.blocks[0] if hasattr(dec, "blocks") else dec
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.SKELETON2), bd.reason
    assert _accepted(doc, blk)


def test_the_exact_route_is_kept_for_small_widths() -> None:
    dec = decide(_relu2(8, 3, 6))
    bd = dec.blocks[0] if hasattr(dec, "blocks") else dec
    assert bd.search.method == "rank"


def test_weights_outside_the_rounding_range_are_not_declared() -> None:
    blk = _relu2(9, 8, 64)
    big = blk.replace(W_up=blk.W_up * 2.0**190)  # products of six overflow
    assert sk2.gram_skeleton2(big) is None or sk2.gram_route(sk2.gram_skeleton2(big), big.M, 1e-9) is None
    tiny = blk.replace(W_up=blk.W_up * 2.0**-300)  # outside the analysed range
    assert sk2.gram_skeleton2(tiny) is None and vsk2.gram_s2(tiny) is None


def test_the_checker_takes_its_row_block_route_beyond_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond GRAM_MAX_N the checker re-derives μ by absorb.verify._gram (it declines only
    beyond that module's LARGE_MAX_N: tests/test_gram_large.py)."""
    blk = _relu2(10, 8, 64)
    _, doc = _cert(blk)
    monkeypatch.setattr(vsk2, "GRAM_MAX_N", 32)
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked and not rep.failures
