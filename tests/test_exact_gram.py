"""The flip witnesses' and the rank route's exact Gram matrices (issue 26: planted ReLU² at model
size): Q = Σ_S w_i ⊗ X_i is decided by ‖Q_a‖²_F = Σ_ij w_ai w_aj ⟨X_i, X_j⟩_F in integers
(|S|²·d products, not d³·|S|), in the producer (absorb.engine.skeleton2) and, by its own code,
in the checker (absorb.verify._exact_gram). Both must equal the term-by-term values exactly, and
a planted block past the old d³·|S| limit is decided, certified and verified; tampered ones are not."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.engine import skeleton2 as sk2
from absorb.engine.gated_skeleton import gated_gram
from absorb.model.block import frame_exponent, rescale_inputs
from absorb.search._types import SearchResult, SearchStatus
from absorb.verify import _exact_gram as vx
from absorb.verify import checker
from tests.test_skeleton2_linear import planted_gated, planted_relu2


def F(a: Any) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def _random(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W d×s, G s×d, U s×d): small integers (cancellations are common) scaled by powers of two."""
    rng = np.random.default_rng(seed)
    d, s = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    scale = lambda shape: rng.integers(-3, 4, shape) * 2.0 ** rng.integers(-20, 20, shape)  # noqa: E731
    return scale((d, s)), scale((s, d)), scale((s, d))


def _terms(W: np.ndarray, A: np.ndarray, B: np.ndarray, sym: bool) -> list[list[list[Fraction]]]:
    """Q = Σ_i w_i ⊗ (a_i b_iᵀ [+ b_i a_iᵀ]) term by term in Fractions."""
    d, s = W.shape
    w, a, b = [F(W[:, i]) for i in range(s)], [F(r) for r in A], [F(r) for r in B]
    return [[[sum((w[i][x] * (a[i][y] * b[i][z] + (b[i][y] * a[i][z] if sym else 0)) for i in range(s)), Fraction(0))
              for z in range(d)] for y in range(d)] for x in range(d)]


def _one_and_sq(Q: list[list[list[Fraction]]]) -> tuple[Fraction, Fraction]:
    return (max(sum(abs(v) for row in Qa for v in row) for Qa in Q),
            sum((v * v for Qa in Q for row in Qa for v in row), Fraction(0)))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("sym", [False, True], ids=["relu2", "gated"])
def test_gram_values_equal_the_term_by_term_values(seed: int, sym: bool) -> None:
    W, G, U = _random(seed)
    A = G if sym else U
    one, sq = _one_and_sq(_terms(W, A, U, sym))
    for quadratic, ints in ((sk2.exact_quadratic, sk2.dyadic_ints), (vx.quadratic_part, vx.ints)):
        assert quadratic(ints(W), ints(A), ints(U), sym=sym) == (one, sq)
    # the Gram matrices of the columns vec(w_i ⊗ X_i), against their dot products
    cols = [[v for Qa in _terms(W[:, [i]], A[[i]], U[[i]], sym) for row in Qa for v in row] for i in range(W.shape[1])]
    exact = [[sum((x * y for x, y in zip(ci, cj)), Fraction(0)) for cj in cols] for ci in cols]
    for gram, ints in ((sk2.exact_gram, sk2.dyadic_ints), (vx.column_gram, vx.ints)):
        Gz, e = gram(ints(W), ints(A), ints(U), sym=sym)
        assert [[Fraction(int(v), 1 << e) for v in row] for row in Gz] == exact


@pytest.mark.parametrize("seed", range(10))
def test_the_symmetrised_gated_formula(seed: int) -> None:
    """‖Σ_i w_i ⊗ sym(g_i u_iᵀ)‖²_F = Σ_ij (w_i·w_j)·½[(g_i·g_j)(u_i·u_j) + (g_i·u_j)(u_i·g_j)], sym(X) = ½(X + Xᵀ)."""
    W, G, U = _random(seed)
    s = W.shape[1]
    w, g, u = [F(W[:, i]) for i in range(s)], [F(r) for r in G], [F(r) for r in U]
    dot = lambda x, y: sum((p * q for p, q in zip(x, y)), Fraction(0))  # noqa: E731
    formula = sum((dot(w[i], w[j]) * (dot(g[i], g[j]) * dot(u[i], u[j]) + dot(g[i], u[j]) * dot(u[i], g[j])) / 2
                   for i in range(s) for j in range(s)), Fraction(0))
    _, sq = _one_and_sq(_terms(W, G, U, sym=True))  # of the doubled sym, g uᵀ + u gᵀ
    assert formula == sq / 4
    assert sk2.exact_quadratic(sk2.dyadic_ints(W), sk2.dyadic_ints(G), sk2.dyadic_ints(U), sym=True)[1] / 4 == formula


@pytest.mark.parametrize("seed", range(12))
def test_past_the_term_limit_the_one_norm_is_bounded_not_summed(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """d³·|S| above the limit: q₁ is d·max_a ⌈‖Q_a‖_F⌉ — at least the exact 1-norm, at most d times it (+ rounding up), 0 iff Q = 0."""
    monkeypatch.setattr(sk2, "MAX_COLUMN_ENTRIES", 0)
    monkeypatch.setattr(vx, "ONE_NORM_MAX_TERMS", 0)
    W, G, U = _random(seed)
    if seed % 3 == 0:  # a planted cancellation: unit 1 = unit 0 with w negated
        W, U = np.hstack([W[:, :1], -W[:, :1]]), np.vstack([U[:1], U[:1]])
    one, sq = _one_and_sq(_terms(W, U, U, False))
    d = W.shape[0]
    for quadratic, ints in ((sk2.exact_quadratic, sk2.dyadic_ints), (vx.quadratic_part, vx.ints)):
        q1, q2 = quadratic(ints(W), ints(U), ints(U))
        assert q2 == sq and (q1 == 0) == (one == 0)
        assert one <= q1 <= d * one * (1 + Fraction(1, 10**6)) + Fraction(d, 1 << 60)


@pytest.mark.parametrize("seed", range(20))
def test_the_truncated_positive_definiteness_test_is_sound(seed: int) -> None:
    """G − mI with G integer (hundreds of bits, like the dyadic Gram matrices): the truncated test
    claims positive definiteness only when the exact Sylvester test agrees, and finds it with a margin."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    A = [[int(v) << 200 for v in row] for row in rng.integers(-50, 50, (n + 2, n)).tolist()]
    G = np.empty((n, n), dtype=object)
    for i, j in itertools.product(range(n), repeat=2):
        G[i, j] = sum(A[k][i] * A[k][j] for k in range(n + 2)) + (int(rng.integers(0, 1 << 30)) if i == j else 0)
    lam = float(np.linalg.eigvalsh(np.array([[float(v) for v in r] for r in G]))[0])
    for m in (0, int(lam * 0.5), int(lam * 0.999999), int(lam * 1.000001), int(lam * 2)):
        exact = sk2.ldl_positive_definite([[int(G[i, j]) - (m if i == j else 0) for j in range(n)] for i in range(n)])
        for test in (sk2.shifted_positive_definite, vx.shifted_positive_definite):
            got = test(G, m)
            assert not got or exact, (m, lam)
            if m <= lam * 0.5:
                assert got


# ----------------------------------------------------------------- planted blocks --
def _found(S: tuple[int, ...]) -> Any:
    """The linear route's search replaced by a planted S: the index-set engine declines d²·n > 4·10⁶,
    and what is tested here is the flip witness (whose exact check alone decides absorbable)."""
    return lambda V, D, T, a, ctx: SearchResult(SearchStatus.FOUND, "linear", "planted S", S=S, residual=0.0)


def _certified(blk: Block) -> tuple[Any, dict[str, Any]]:
    dec = decide(blk, timeout=60)
    return dec, build_certificate(dec, blk, seed=0).to_json()


def _report(doc: dict[str, Any], blk: Block) -> Any:
    return checker.verify_certificate(doc, blk)


@pytest.mark.parametrize("build", [lambda: planted_relu2(5, 96, 192), lambda: planted_gated(6, 96, 192)], ids=["relu2", "swiglu"])
def test_planted_block_past_the_old_term_limit_is_absorbable_and_verifies(build: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    blk = build()
    assert blk.d ** 3 * 4 > sk2.MAX_COLUMN_ENTRIES  # (the old exact check's limit: unknown before)
    monkeypatch.setattr(sk2, "linear_route", _found((0, 1, 2, 3)))
    dec, doc = _certified(blk)
    bd = dec.blocks[0]
    th = Theorem.GATED_SKELETON if blk.gated else Theorem.SKELETON2
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, th), bd.reason
    assert bd.witness.S == (0, 1, 2, 3) and "the quadratic part of f − g is 0" in bd.witness.description
    rep = _report(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


def _nudge(a: np.ndarray, idx: tuple[int, int]) -> np.ndarray:
    out = np.array(a, dtype=np.float64)
    out[idx] = np.nextafter(out[idx], np.inf)
    return out


@pytest.mark.parametrize("gated", [False, True], ids=["relu2", "swiglu"])
def test_tampered_witnesses_fail_producer_and_checker(gated: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    d, n = 40, 80
    blk = planted_gated(8, d, n) if gated else planted_relu2(7, d, n)
    blk = rescale_inputs(blk, frame_exponent(blk))  # (in its canonical frame: decided as it is, the witness edited below is f's own)
    monkeypatch.setattr(sk2, "linear_route", _found((0, 1, 2, 3)))
    dec, doc = _certified(blk)
    exact = "the quadratic part of f − g is 0"
    assert dec.blocks[0].verdict is Verdict.ABSORBABLE and exact in dec.blocks[0].witness.description
    assert _report(doc, blk).accepted
    ints = sk2.dyadic_ints
    # one unit not flipped: producer — S = {0, 1, 2} has a nonzero quadratic part, far beyond the tolerance
    A = blk.W_gate if gated else blk.W_up
    q1, _ = sk2.exact_quadratic(ints(blk.W_down[:, :3]), ints(A[:3]), ints(blk.W_up[:3]), sym=gated)
    assert q1 > Fraction(1, 10)
    monkeypatch.setattr(sk2, "linear_route", _found((0, 1, 2)))
    bd = decide(blk, timeout=60).blocks[0]
    assert bd.verdict is not Verdict.ABSORBABLE and "failed its check" in bd.reason, bd.reason
    # ... checker: the honest decision with S = {0, 1, 2} (its witness block re-hashed, so only the math refuses it)
    honest = dec.blocks[0]
    three = dataclasses.replace(honest, witness=dataclasses.replace(honest.witness, S=(0, 1, 2)))
    rep = _report(build_certificate(dataclasses.replace(dec, blocks=[three]), blk, seed=0).to_json(), blk)
    assert not rep.accepted and "quadratic part of f − g" in rep.failures[0].claim, [f.claim for f in rep.failures]
    # one weight of S changed by 1 ulp: the quadratic part is no longer 0 — the producer sees it exactly
    bad = blk.replace(W_up=_nudge(blk.W_up, (0, 1)))
    q1, q2 = sk2.exact_quadratic(ints(bad.W_down[:, :4]), ints((bad.W_gate if gated else bad.W_up)[:4]), ints(bad.W_up[:4]), sym=gated)
    assert 0 < q1 < Fraction(1, 10**12) and q2 > 0
    monkeypatch.setattr(sk2, "linear_route", _found((0, 1, 2, 3)))
    nb = decide(bad, timeout=60).blocks[0]
    assert nb.verdict is not Verdict.ABSORBABLE or exact not in nb.witness.description, nb.reason
    # ... and the checker refuses the honest (exact) record bound to the nudged weights
    forged = dataclasses.replace(honest, block=bad)
    rep = _report(build_certificate(dataclasses.replace(dec, blocks=[forged]), bad, seed=0).to_json(), bad)
    assert not rep.accepted and ("recorded residual" in rep.failures[0].claim or "quadratic part of f − g" in rep.failures[0].claim), \
        [f.claim for f in rep.failures]
    assert vx.quadratic_part(vx.ints(bad.W_down[:, :4]), vx.ints((bad.W_gate if gated else bad.W_up)[:4]), vx.ints(bad.W_up[:4]),
                             sym=gated)[0] > 0


def test_rank_route_gram_matches_the_columns() -> None:
    """The rank route's exact Gram matrix (gated too) is the one of the explicit exact columns."""
    rng = np.random.default_rng(3)
    d, n = 3, 6
    blk = Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation("silu"), W_gate=rng.standard_normal((n, d)))
    from absorb.engine.gated_skeleton import gated_exact_columns

    cols = gated_exact_columns(blk)
    Gz, e = gated_gram(blk)
    assert [[Fraction(int(v), 1 << e) for v in row] for row in Gz] == [[sum(x * y for x, y in zip(a, b)) for b in cols] for a in cols]
    assert math.isfinite(float(Fraction(int(Gz[0, 0]), 1 << e)))


@pytest.mark.parametrize("act", ["relu2", "silu"])
def test_past_the_term_limit_producer_and_checker_agree_on_a_rounded_planted_set(act: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A set planted in float64 (its quadratic part nonzero, ~1e-16 of its size): with both term limits at 0 the
    producer finds S but its flip is no witness within the tolerance's measure (a nonzero quadratic part of f − g
    exceeds τ|x| where f grows only linearly): unknown, and its certificate verifies."""
    from tests.test_skeleton2_rounded import planted_rounded_gated, planted_rounded_relu2

    monkeypatch.setattr(sk2, "MAX_COLUMN_ENTRIES", 0)
    monkeypatch.setattr(vx, "ONE_NORM_MAX_TERMS", 0)
    blk = planted_rounded_relu2(1, 3) if act == "relu2" else planted_rounded_gated(1, 3, act)
    dec, doc = _certified(blk)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.UNKNOWN and "not the tolerance's measure" in bd.reason, bd.reason
    rep = _report(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
