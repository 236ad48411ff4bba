"""The linear route of the degree-2 and gated skeletons (docs/results/skeleton2.md, "linear route"):
past d³·n ≤ 2·10⁶ the index-set engine decides the linear condition (L) alone — up rows
(2αc_i + β)·u_i (gated: b_gate,i u_i + b_up,i g_i), down columns w_i, target −M. Its proof that
no S meets (L) proves ``not_absorbable`` (an S's distance from (Q) and (L) is at least its
distance from (L)); an S it finds goes to the flip witness, whose exact check decides (Q).

Planted blocks: four units whose up rows lie in a plane span(p, q) (integer vectors), so
Σ_S λ_i u_i u_iᵀ = 0 for integer λ and w_i = λ_i a gives (Q) exactly — the Gram matrix of the (Q)
columns is singular by construction, and these blocks were ``unknown`` before this route."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.engine import decide
from absorb.engine import skeleton2 as sk2
from absorb.engine.gated_skeleton import gated_linear_columns
from absorb.io import save_npz
from absorb.rigorous import gamma
from absorb.verify import checker

GELU2 = "expr:(x*(1 + erf(x/sqrt(2)))/2)**2"


def planted_relu2(seed: int, d: int, n: int, act: str = "relu2", *, q_holds: bool = True) -> Block:
    """A biased ReLU² block with S = {0, 1, 2, 3}: u = p, q, p + q, p − q (so Σ_S λ_i u_i u_iᵀ = 0
    for λ = (2, 2, −1, −1)), w_i = λ_i a, dyadic biases, M = −2 Σ_S c_i w_i u_iᵀ — every value
    exact in float64, so (Q) and (L) hold exactly. ``q_holds=False``: the w_i of S are generic
    instead (so (L) holds for S and (Q) does not)."""
    rng = np.random.default_rng(seed)
    p, q = rng.integers(-3, 4, d).astype(float), rng.integers(-3, 4, d).astype(float)
    US = np.array([p, q, p + q, p - q])
    a = rng.integers(-8, 9, d) / 8.0
    a[a == 0] = 1.0
    WS = np.outer(a, [2.0, 2.0, -1.0, -1.0]) if q_holds else rng.integers(-8, 9, (d, 4)) / 8.0
    cS = np.array([0.5, -1.25, 0.75, 1.5])
    U = np.vstack([US, rng.standard_normal((n - 4, d))])
    D = np.hstack([WS, rng.standard_normal((d, n - 4))])
    c = np.concatenate([cS, rng.standard_normal(n - 4)])
    M = -2 * (WS * cS) @ US
    return Block(U, D, get_activation(act), b_up=c, b_down=rng.standard_normal(d), skip=M)


def planted_gated(seed: int, d: int, n: int, act: str = "silu") -> Block:
    """A biased gated block (SwiGLU for SiLU, GeGLU for GELU) with S = {0, 1, 2, 3}: gate and value
    rows in span(p, q) with Σ_S λ_i (g_i u_iᵀ + u_i g_iᵀ) = 0 for λ = (−2, 2, −1, 1) (gate rows
    pairwise non-collinear, no value row parallel to its gate row), w_i = λ_i a, dyadic biases,
    M = −Σ_S w_i (c_i u_i + e_i g_i)ᵀ, all exact."""
    rng = np.random.default_rng(seed)
    p, q = rng.integers(-3, 4, d).astype(float), rng.integers(-3, 4, d).astype(float)
    GS, US = np.array([p, q, p + q, p - q]), np.array([q, p + q, p, p + 2 * q])
    a = rng.integers(-8, 9, d) / 8.0
    a[a == 0] = 1.0
    WS = np.outer(a, [-2.0, 2.0, -1.0, 1.0])
    cS, eS = np.array([0.5, -1.25, 0.75, 1.5]), np.array([-0.25, 1.0, 0.5, -2.0])
    G, U = np.vstack([GS, rng.standard_normal((n - 4, d))]), np.vstack([US, rng.standard_normal((n - 4, d))])
    D = np.hstack([WS, rng.standard_normal((d, n - 4))])
    c, e = np.concatenate([cS, rng.standard_normal(n - 4)]), np.concatenate([eS, rng.standard_normal(n - 4)])
    M = -sum(np.outer(WS[:, i], cS[i] * US[i] + eS[i] * GS[i]) for i in range(4))
    return Block(U, D, get_activation(act), W_gate=G, b_gate=c, b_up=e, b_down=rng.standard_normal(d), skip=M)


def generic(seed: int, d: int, n: int, act: str, *, gated: bool = False, biases: bool = True) -> Block:
    rng = np.random.default_rng(seed)
    b = (lambda k: rng.standard_normal(k)) if biases else (lambda k: None)
    gate = dict(W_gate=rng.standard_normal((n, d)), b_gate=b(n)) if gated else {}
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(act), b_up=b(n), b_down=b(d),
                 skip=rng.standard_normal((d, d)), **gate)


def _decided(blk: Block, timeout: float = 60.0) -> tuple[Any, dict[str, Any]]:
    dec = decide(blk, timeout=timeout)
    return dec.blocks[0], build_certificate(dec, blk, seed=0).to_json()


def _accepted(doc: dict[str, Any], blk: Block) -> bool:
    rep = checker.verify_certificate(doc, blk)
    return rep.accepted and not rep.not_rechecked


D, N = 32, 128  # d³·n = 4.2·10⁶: beyond the columns the other routes build


@pytest.fixture
def model_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route order of a model-sized block (n > GRAM_MAX_N: the linear route first) at N = 128."""
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 64)


def test_the_sizes_are_past_the_column_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    blk = generic(0, D, N, "relu2")
    assert D ** 3 * N > sk2.MAX_COLUMN_ENTRIES and N <= D * D and not sk2.linear_first(blk)
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 64)
    assert sk2.linear_first(blk)


@pytest.mark.parametrize("build", [lambda: planted_relu2(0, D, N), lambda: planted_gated(1, D, N),
                                   lambda: planted_gated(2, D, N, "gelu")], ids=["relu2", "swiglu", "geglu"])
@pytest.mark.parametrize("order", ["fallback", "first"])
def test_planted_blocks_are_absorbable_and_verify(build: Any, order: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Either order: after the Gram route (singular by construction: it proves nothing) or first."""
    if order == "first":
        monkeypatch.setattr(sk2, "GRAM_MAX_N", 64)
    blk = build()
    bd, doc = _decided(blk)
    th = Theorem.GATED_SKELETON if blk.gated else Theorem.SKELETON2
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, th), bd.reason
    assert bd.witness.S == (0, 1, 2, 3) and bd.search.method == "linear"
    assert "the quadratic part of f − g is 0" in bd.witness.description  # (Q) exactly: only b'_down rounds
    assert _accepted(doc, blk)
    X = np.random.default_rng(0).standard_normal((64, D)) * 10
    assert np.max(np.abs(blk(X) - bd.witness.block(X))) <= 1e-9 * np.max(np.abs(blk(X)))


@pytest.mark.parametrize("act, gated, biases", [("relu2", False, True), (GELU2, False, True), ("silu", True, True),
                                                ("gelu", True, True), (GELU2, False, False)],
                         ids=["relu2", "gelu2", "swiglu", "geglu", "gelu2-bias-free"])  # (bias-free: v_i = β u_i = 0)
def test_generic_blocks_are_not_absorbable_by_the_linear_route_and_verify(act: str, gated: bool, biases: bool,
                                                                         model_size: None) -> None:
    blk = generic(7, D, N, act, gated=gated, biases=biases)
    bd, doc = _decided(blk)
    th = Theorem.GATED_SKELETON if gated else Theorem.SKELETON2
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, th), bd.reason
    assert bd.search.method == "linear" and bd.search.bound > 1e-9
    arg = doc["blocks"][0]["argument"]
    assert arg.get("route" if gated else "case") == "linear"
    assert _accepted(doc, blk)


def test_l_without_q_is_decided_by_the_gram_route_not_by_the_found_set(model_size: None) -> None:
    """S = {0..3} meets (L) exactly while (Q) fails (generic w_i): the linear route, first, finds S,
    its flip witness fails its exact check, and the Gram route (its row-block pass here) proves
    (Q) has only S = ∅ — so ``not_absorbable``, which is right; never ``absorbable``."""
    blk = planted_relu2(3, D, N, q_holds=False)
    V, Dw, T, a = sk2.linear_columns(blk.float64(), sk2.Quadratic(Fraction(1), Fraction(0)))
    assert np.linalg.norm(Dw[:, :4] @ V[:4] - T) <= 1e-12 * np.linalg.norm(T)  # (L) holds for S
    bd, doc = _decided(blk)
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.SKELETON2), bd.reason
    assert bd.search.method == "gram"
    assert _accepted(doc, blk)


def test_a_found_set_without_a_flip_identity_is_unknown() -> None:
    """GELU²: the planted S meets (Q) and (L), the Gram matrix is singular, and GELU² has no flip
    witness: ``unknown`` naming S (the skeleton proves nothing), not a verdict."""
    bd, _ = _decided(planted_relu2(0, D, N, GELU2))
    assert (bd.verdict, bd.theorem) == (Verdict.UNKNOWN, Theorem.NONE), bd.reason
    assert "S = [0, 1, 2, 3] satisfies the linear condition (L)" in bd.reason


def test_the_rounding_bound_of_the_linear_rows_holds() -> None:
    """|V̂ − V| ≤ γ₄·(2|α||c_i| + |β|)|u_i| entrywise for non-dyadic α, β (V exact in rationals),
    and the row norms a_i bound ‖A_i‖₂; gated likewise with A_i = |c_i||u_i| + |e_i||g_i|."""
    blk = generic(5, 4, 9, "relu2").float64()
    qd = sk2.Quadratic(Fraction(1, 3), Fraction(-2, 7))
    V, _, _, a = sk2.linear_columns(blk, qd)
    for i in range(blk.n):
        s = 2 * qd.alpha * Fraction(float(blk.b_up[i])) + qd.beta
        A = (2 * abs(qd.alpha) * abs(Fraction(float(blk.b_up[i]))) + abs(qd.beta))
        for j in range(blk.d):
            u = Fraction(float(blk.W_up[i, j]))
            assert abs(Fraction(float(V[i, j])) - s * u) <= Fraction(gamma(4)) * A * abs(u)
        assert a[i] >= float(A) * np.linalg.norm(blk.W_up[i]) * (1 - 1e-15)
    gb = generic(6, 4, 9, "silu", gated=True).float64()
    Vg, _, Tg, ag = gated_linear_columns(gb)
    assert np.array_equal(Tg, -gb.M)
    for i in range(gb.n):
        c, e = Fraction(float(gb.b_gate[i])), Fraction(float(gb.b_up[i]))
        for j in range(gb.d):
            u, g = Fraction(float(gb.W_up[i, j])), Fraction(float(gb.W_gate[i, j]))
            assert abs(Fraction(float(Vg[i, j])) - (c * u + e * g)) <= Fraction(gamma(4)) * (abs(c * u) + abs(e * g))


# ---------------------------------------------------------------------------- tampering --
@pytest.fixture(scope="module")
def linear_docs() -> list[tuple[Block, dict[str, Any]]]:
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sk2, "GRAM_MAX_N", 64)
        for blk in (generic(11, D, N, "relu2"), generic(12, D, N, "silu", gated=True)):
            bd, doc = _decided(blk)
            assert bd.search.method == "linear", bd.reason
            assert _accepted(doc, blk)
            out.append((blk, doc))
    return out


def _copy(doc: dict[str, Any]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(doc)


@pytest.mark.parametrize("which", [0, 1], ids=["relu2", "swiglu"])
def test_tampered_linear_certificates_are_rejected(linear_docs: list[tuple[Block, dict[str, Any]]], which: int) -> None:
    blk, doc = linear_docs[which]
    key = "route" if blk.gated else "case"
    for other in ("gram", "rank", "enumerate", "nonsense"):  # ("index-set" is re-proved from scratch: a true claim)
        bad = _copy(doc)
        bad["blocks"][0]["argument"][key] = other
        assert not checker.verify_certificate(bad, blk).accepted, other
    bad = _copy(doc)  # an overstated bound
    bound = bad["blocks"][0]["search"]["bound"]
    bad["blocks"][0]["search"]["bound"] = min(1.0, bound * 1.5) if bound < 0.6 else bound * 1.5
    assert not checker.verify_certificate(bad, blk).accepted
    bad = _copy(doc)  # a bound within the tolerance
    bad["blocks"][0]["search"]["bound"] = 1e-12
    assert not checker.verify_certificate(bad, blk).accepted
    cert = doc["blocks"][0]["search"]["certificate"]
    bad = _copy(doc)  # the dual matrix changed
    sc = bad["blocks"][0]["search"]["certificate"]
    key_y = "A" if cert.get("kind") == "dual-low-rank" else "Y"
    Y = np.asarray(sc[key_y], dtype=float)
    assert Y.ndim == 2
    sc[key_y] = np.random.default_rng(0).standard_normal(Y.shape).tolist()  # another direction: a far weaker bound
    assert not checker.verify_certificate(bad, blk).accepted


def test_the_linear_route_finds_the_planted_set() -> None:
    """The planted block's S meets (L): the route returns it (found), never an infeasibility."""
    blk = planted_relu2(0, D, N)
    V, Dw, T, a = sk2.linear_columns(blk.float64(), sk2.Quadratic(Fraction(1), Fraction(0)))
    res = sk2.linear_route(V, Dw, T, a, _ctx())
    assert res is not None and res.status.value == "found" and res.S == (0, 1, 2, 3)
    assert math.isfinite(sk2.slack_from_norms(a, D, Dw, T))


def _ctx() -> Any:
    @dataclasses.dataclass
    class C:
        tol: float = 1e-9
        dist_tol: float = 1e-9
        linear_dist_tol: float = 1e-9
        timeout: float = 60.0
        method: str = "auto"
        seed: int = 0
        search_progress: Any = None
    return C()


def test_cli_check_and_verify_exit_0(tmp_path: Path, model_size: None) -> None:
    for name, blk in (("relu2", planted_relu2(4, D, N)), ("swiglu", generic(13, D, N, "silu", gated=True))):
        model, cert = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
        save_npz(model, blk)
        assert main(["check", str(model), "--certificate", str(cert)]) == 0
        assert main(["verify", str(cert), str(model)]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("build", [lambda: planted_relu2(20, 64, 256)],
                         ids=["planted-relu2"])  # (generic gated blocks: the fast tests at d = 32, n = 128; this one is ~70 s)
def test_bigger_blocks(build: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sk2, "GRAM_MAX_N", 128)  # (n = 256: the model-size order)
    blk = build()
    bd, doc = _decided(blk, timeout=600)  # (the engine's small-problem portfolio: about 45 s on the planted (L) here)
    assert bd.verdict is (Verdict.NOT_ABSORBABLE if blk.gated else Verdict.ABSORBABLE), bd.reason
    assert bd.search.method == "linear"
    assert _accepted(doc, blk)
