"""Sets planted the way users plant them — in float64, by a null space and least squares — so
that the degree-2 skeleton's conditions hold only up to rounding: biased ReLU² blocks and biased
SwiGLU / GeGLU blocks. The search finds S, but the flip leaves a quadratic part of f − g of a few
ulps·|x|², which is no error within the tolerance's measure τ(|f(x)|∞ + |x|∞ + |f(0)|∞) (it
exceeds τ|x| wherever f grows only linearly): the answer is unknown, saying so, and the checker
rejects such a flip claimed absorbable; a quadratic residual 10³ times the tolerance fails its
check outright."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, decide_block, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.engine import decide
from absorb.engine.skeleton2 import flip_epsilon
from absorb.io import save_npz
from absorb.verify import checker


def _null(A: np.ndarray) -> np.ndarray:
    """An orthonormal basis of A's null space (float64 SVD: exact only up to rounding)."""
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > s[0] * 1e-12)) if s.size else 0
    return Vt[rank:].T


def planted_rounded_relu2(seed: int, d: int, extra: int = 2) -> Block:
    """A biased ReLU² block with S = {0, …, k−1}, k = d(d+1)/2 + 1 random directions: the w_i
    span the null space of [vech(u_i u_iᵀ)] (so Σ_S w_i ⊗ u_i u_iᵀ = 0 up to rounding), and
    M = −2 Σ_S c_i w_i u_iᵀ in float64."""
    rng = np.random.default_rng(seed)
    k = d * (d + 1) // 2 + 1
    US = rng.standard_normal((k, d))
    N = _null(np.array([np.outer(u, u)[np.triu_indices(d)] for u in US]).T)
    WS = (N @ rng.standard_normal((N.shape[1], d))).T
    U = np.vstack([US, rng.standard_normal((extra, d))])
    D = np.hstack([WS, rng.standard_normal((d, extra))])
    c = rng.standard_normal(k + extra)
    M = -2 * (WS * c[:k]) @ US
    return Block(U, D, get_activation("relu2"), b_up=c, b_down=rng.standard_normal(d), skip=M)


def planted_rounded_gated(seed: int, d: int, act: str = "silu", extra: int = 2) -> Block:
    """A biased gated block (SwiGLU for SiLU, GeGLU for GELU) with S = {0, …, k−1}: the w_i span
    the null space of [vech(g_i u_iᵀ + u_i g_iᵀ)], and M = −Σ_S w_i (c_i u_i + e_i g_i)ᵀ in float64."""
    rng = np.random.default_rng(seed)
    k = d * (d + 1) // 2 + 1
    GS, US = rng.standard_normal((k, d)), rng.standard_normal((k, d))
    N = _null(np.array([(np.outer(g, u) + np.outer(u, g))[np.triu_indices(d)] for g, u in zip(GS, US)]).T)
    WS = (N @ rng.standard_normal((N.shape[1], d))).T
    G, U = np.vstack([GS, rng.standard_normal((extra, d))]), np.vstack([US, rng.standard_normal((extra, d))])
    D = np.hstack([WS, rng.standard_normal((d, extra))])
    c, e = rng.standard_normal(k + extra), rng.standard_normal(k + extra)
    M = -sum(np.outer(WS[:, i], c[i] * US[i] + e[i] * GS[i]) for i in range(k))
    return Block(U, D, get_activation(act), W_gate=G, b_gate=c, b_up=e, b_down=rng.standard_normal(d), skip=M)


def _scales(blk: Block) -> tuple[float, float]:
    """(s₁, s₂) as the docs state them, in float (a test of the formula, not of its rounding)."""
    D = np.abs(blk.W_down)
    u1 = np.abs(blk.W_up).sum(axis=1)
    if blk.gated:
        g1 = np.abs(blk.W_gate).sum(axis=1)
        return max(1.0, float((np.abs(blk.M).sum(1) + D @ (np.abs(blk.b_gate) * u1 + np.abs(blk.b_up) * g1)).max())), \
            float((D @ (g1 * u1)).max())
    return max(1.0, float((np.abs(blk.M).sum(1) + D @ (2 * np.abs(blk.b_up) * u1)).max())), float((D @ u1 ** 2).max())


CASES = [("relu2", 0, 2), ("relu2", 1, 3), ("relu2", 2, 4), ("relu2", 3, 5),
         ("silu", 0, 2), ("silu", 1, 3), ("silu", 2, 4), ("gelu", 3, 2), ("gelu", 4, 3)]


def _block(act: str, seed: int, d: int) -> Block:
    extra = max(0, min(2, 16 - (d * (d + 1) // 2 + 1)))  # n ≤ 16: the enumeration route finds S
    return planted_rounded_relu2(seed, d, extra) if act == "relu2" else planted_rounded_gated(seed, d, act, extra)


@pytest.mark.parametrize("act, seed, d", CASES)
def test_rounded_planted_set_is_found_but_is_no_witness(act: str, seed: int, d: int) -> None:
    blk = _block(act, seed, d)
    dec = decide_block(blk)
    k = d * (d + 1) // 2 + 1
    assert dec.verdict is Verdict.UNKNOWN, dec.reason
    assert f"S = {list(range(k))}" in dec.reason and "not the tolerance's measure" in dec.reason, dec.reason
    # the reason's premise, sampled: f − g grows like |x|² (the rounding of the planted set), f no faster
    from absorb.engine.skeleton2 import RELU2_FLIP, flip_witness_block

    if act == "relu2":
        g = flip_witness_block(blk, tuple(range(k)), RELU2_FLIP)
        x = np.random.default_rng(seed).standard_normal((1, d))
        small, big = (float(np.abs(blk(t * x) - g(t * x)).max()) for t in (1.0, 1e6))
        assert big > small


@pytest.mark.parametrize("act, seed, d", [c for c in CASES if c[2] <= 3])
def test_rounded_planted_certificate_verifies(act: str, seed: int, d: int) -> None:
    """The honest unknown verifies (a flip claimed absorbable with a nonzero quadratic part is rejected:
    tests/test_exact_gram.py)."""
    blk = _block(act, seed, d)
    dec = decide(blk)
    doc = build_certificate(dec, blk, seed=0).to_json()
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("act, seed, d, extra", [("relu2", 1, 6, 2), ("relu2", 3, 4, 13), ("silu", 0, 6, 4), ("gelu", 1, 5, 4)])
def test_past_the_enumeration_the_index_set_engine_finds_s(act: str, seed: int, d: int, extra: int) -> None:
    """n > 16 with dependent columns: neither route applies, and the index-set engine, run over
    the lifted columns (vec(u uᵀ), 2c·u) against [0 | −M], finds S; its flip is no witness within the
    tolerance's measure (the planted set's rounding), so the answer is unknown, and its certificate verifies."""
    blk = planted_rounded_relu2(seed, d, extra) if act == "relu2" else planted_rounded_gated(seed, d, act, extra)
    assert blk.n > 16
    dec = decide(blk)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and f"S = {list(range(d * (d + 1) // 2 + 1))}" in bd.reason, bd.reason
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


GELU2 = "expr:(x*(1 + erf(x/sqrt(2)))/2)**2"


@pytest.mark.parametrize("act, d, n", [("relu2", 2, 20), ("relu2", 3, 30), (GELU2, 2, 18), ("swiglu", 2, 20)])
def test_past_the_enumeration_a_generic_block_is_not_absorbable(act: str, d: int, n: int) -> None:
    """n > 16 and n > d·d(d+1)/2 (dependent columns: no rank route, no enumeration): the index-set
    engine proves every S of the lifted problem farther than τ, and the checker re-checks that
    proof on the lifted problem it builds itself (case / route ``index-set``)."""
    rng = np.random.default_rng(n)
    gate = dict(W_gate=rng.standard_normal((n, d)), b_gate=rng.standard_normal(n)) if act == "swiglu" else {}
    blk = Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(act), b_up=rng.standard_normal(n),
                b_down=rng.standard_normal(d), skip=rng.standard_normal((d, d)), **gate)
    dec = decide(blk)
    bd = dec.blocks[0]
    th = Theorem.GATED_SKELETON if act == "swiglu" else Theorem.SKELETON2
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, th), bd.reason
    assert bd.search.bound > 1e-9 and bd.search.method not in ("rank", "gram", "enumerate")
    doc = build_certificate(dec, blk, seed=0).to_json()
    arg = doc["blocks"][0]["argument"]
    assert arg.get("case") == "index-set" or arg.get("route") == "index-set"
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
    if act == "relu2" and d == 2:  # brute force: every one of the 2^20 sets, in float64, is far from (Q), (L)
        K = np.array([np.concatenate([np.outer(blk.W_down[:, i], np.outer(blk.W_up[i], blk.W_up[i])).ravel(),
                                      2 * blk.b_up[i] * np.outer(blk.W_down[:, i], blk.W_up[i]).ravel()]) for i in range(n)])
        t = np.concatenate([np.zeros(d ** 3), -blk.M.ravel()])
        best, idx = np.inf, np.arange(n)
        for start in range(0, 1 << n, 1 << 16):
            B = ((np.arange(start, start + (1 << 16))[:, None] >> idx) & 1).astype(float)
            best = min(best, float(np.linalg.norm(B @ K - t, axis=1).min()))
        assert best / np.linalg.norm(blk.M) > 1e-6 and best / np.linalg.norm(blk.M) >= bd.search.bound * (1 - 1e-6)
    # the proof is about this block: a block whose planted S is within τ is not refuted by it
    planted = planted_rounded_relu2(1, 2, 16) if act != "swiglu" else planted_rounded_gated(1, 2, "silu", 16)
    if act == GELU2:
        planted = planted.replace(activation=get_activation(GELU2))
    assert decide_block(planted).verdict is not Verdict.NOT_ABSORBABLE


def test_cli_check_unknown_and_verify_exit_0(tmp_path: Path) -> None:
    for name, blk in (("relu2", planted_rounded_relu2(5, 3)), ("swiglu", planted_rounded_gated(5, 3))):
        model, cert = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
        save_npz(model, blk)
        assert main(["check", str(model), "--certificate", str(cert)]) == 3
        assert main(["verify", str(cert), str(model)]) == 0


def _near(seed: int, rel: float) -> Block:
    """A ReLU² block whose (Q) residual is ``rel``·s₂ while the search's relative distance
    (against ‖M‖_F, made large by biases of size 10⁶) stays within the tolerance; (L) exact."""
    rng = np.random.default_rng(seed)
    blk = planted_rounded_relu2(seed, 3)
    U, D = blk.W_up, blk.W_down.copy()
    _, s2 = _scales(blk)
    D[:, 0] += rel * s2 / np.abs(U[0]).sum() ** 2 * rng.standard_normal(3) / 3
    c = blk.b_up * 1e6
    M = -2 * (D[:, :7] * c[:7]) @ U[:7]
    return blk.replace(W_down=D, b_up=c, skip=M)


@pytest.mark.parametrize("seed", [0, 1])
def test_quadratic_residual_far_above_the_tolerance_is_not_accepted(seed: int) -> None:
    dec = decide_block(_near(seed, 1e3 * 1e-9))
    assert (dec.verdict, dec.theorem) == (Verdict.UNKNOWN, Theorem.NONE), dec.reason
    assert "failed its check (quadratic part nonzero" in dec.reason


def test_flip_epsilon_keeps_the_exact_case_exact() -> None:
    F = Fraction
    thr = 1e-9
    # quadratic part 0 and the linear part within the threshold: the linear-case guarantee
    assert flip_epsilon(F(0), F(1, 2**40), F(0), F(1), F(50), F(10), thr) == (pytest.approx(2.0**-40), False)
    # a quadratic residual: scaled, ε = max(q/s₂, ρ/s₁, r0/f0)
    eps, scaled = flip_epsilon(F(1, 2**50), F(1, 2**40), F(0), F(1), F(50), F(10), thr)
    assert scaled and eps == pytest.approx(2.0**-40 / 50)
    # quadratic part 0 but ρ above the threshold: only the scaled form can accept
    eps, scaled = flip_epsilon(F(0), F(1, 10**8), F(0), F(1), F(100), F(10), thr)
    assert scaled and eps == pytest.approx(1e-10)
    # a moved bias that does not round exactly, with f(0) = 0: nothing covers x = 0
    assert flip_epsilon(F(1, 2**50), F(0), F(1, 2**60), 0.0, F(1), F(1), thr)[0] == float("inf")
