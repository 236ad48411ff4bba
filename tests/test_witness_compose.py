"""The linear-σ and the stack-composition witnesses are judged by a proved bound, not by samples.

* Linear σ (σ(z) = c·z): f − g is affine, (M + c·W_down W_up − c·W'_down W'_up) x plus the
  rounding of the output bias; both bounded in exact arithmetic (:func:`linear_bound`).
* Stacks: each block's proved error (a_k|y| + e_k) is carried through the Lipschitz constants
  of the later blocks (:func:`composed_bound`); over the tolerance, the stack is unknown.

Each red-team construction is exact, and the tests say why today's sampled check missed it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import absorb.engine.witness as W
from absorb import Block, Stack, decide, get_activation
from absorb.engine.witness import composed_bound, eval_threshold, evaluation_error, f0_lower, f0_upper, lipschitz_upper

TOL = 1e-6


# ----------------------------------------------------------------------- linear σ --
def _linear_huge_bias(e: int = 130) -> Block:
    """σ = identity, d = n = 1, a unit that only carries a bias: f(x) = x + (−3b + fl(3b)),
    b = 2^e(1 + 2⁻⁵²). In float64 the witness's bias fl(−3b) + fl(3b) is 0, while f(0) is the
    rounding of 3b (2^(e−52)): g misses all of f(0), and f's float64 evaluation rounds the
    constant away too (the output bias is added to the unit's sum first), so no sample sees it."""
    b = 2.0**e * (1 + 2.0**-52)
    return Block(np.array([[0.0]]), np.array([[-3.0]]), get_activation("identity"), b_up=np.array([b]),
                 b_down=np.array([3 * b]), skip=np.eye(1))


def test_linear_huge_bias_witness_is_not_absorbable() -> None:
    blk = _linear_huge_bias()
    b = Fraction(float(blk.b_up[0]))
    f0 = -3 * b + Fraction(float(blk.b_down[0]))  # f(0) exactly
    assert f0 != 0
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value != "absorbable", dec.reason
    # what today's check measured: the sampled error alone passes
    wb = blk.replace(W_up=np.eye(1), W_down=blk.M + (blk.W_down @ blk.W_up), b_up=None, skip=np.zeros((1, 1)),
                     b_down=blk.W_down @ blk.b_up + blk.b_down)
    assert wb.b_down[0] == 0.0  # the float64 witness drops f(0) entirely
    err, _m = evaluation_error(blk, wb, 1, seed=0)
    assert err <= eval_threshold(TOL, 1)
    eps, eps_b, why, (rho, e) = W.linear_bound(blk, wb, Fraction(1))
    assert e >= abs(float(f0)) and not eps <= eval_threshold(TOL, 1) and why


def test_linear_witness_bound_covers_the_exact_error() -> None:
    """A biased identity block (n ≥ d): the witness is accepted, and its bound (a, e) covers the
    exact error at exact rational inputs."""
    rng = np.random.default_rng(3)
    d, n = 3, 4
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    blk = Block(U, D, get_activation("identity"), b_up=rng.standard_normal(n) * 1e3, b_down=rng.standard_normal(d), skip=np.eye(d))
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "absorbable" and dec.witness.bound is not None, dec.reason
    a, e = dec.witness.bound
    g = dec.witness.block

    def exact(b: Block, x: list[Fraction]) -> list[Fraction]:
        F = Fraction
        z = [sum((F(float(b.W_up[i, k])) * x[k] for k in range(d)), F(0)) + (F(float(b.b_up[i])) if b.b_up is not None else 0)
             for i in range(b.n)]
        out = [sum((F(float(b.W_down[j, i])) * z[i] for i in range(b.n)), F(0)) + (F(float(b.b_down[j])) if b.b_down is not None else 0)
               for j in range(d)]
        return [o + sum((F(float(b.M[j, k])) * x[k] for k in range(d)), F(0)) for j, o in enumerate(out)]

    for x in [[Fraction(0)] * d] + [[Fraction(float(v)) for v in row] for row in rng.standard_normal((20, d)) * 10.0**rng.integers(-3, 4)]:
        diff = max(abs(p - q) for p, q in zip(exact(blk, x), exact(g, x)))
        assert diff <= Fraction(a) * max(abs(v) for v in x) + Fraction(e)


def test_linear_truncated_svd_over_the_inf_norm_tolerance_is_unknown() -> None:
    """n < d: A = M + W_down W_up has a tail σ_{n+1} = t with t ≤ τ·‖M‖_F (Frobenius, the old
    acceptance) but ‖A − A_n‖_∞ > τ: dropping it is an error of t|x| along its direction,
    over the stated tolerance of |f(x)|∞ + |x|∞ at the inputs where A_n x = 0."""
    d = 6
    t = 1.05 * TOL  # sampled inputs see t·|x_6|/(|f(x)|∞ + |x|∞), well below t: the old check passed it
    M = np.diag([1.0, 1, 1, 1, 1, t]) * 1.0  # f(x) = M x (W_down = 0 contributes nothing)
    U, D = np.zeros((5, d)), np.zeros((d, 5))
    U[0, 0] = 1.0
    blk = Block(U, D, get_activation("identity"), skip=M)
    assert t <= TOL * np.linalg.norm(M)  # the Frobenius test accepted it
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "unknown", dec.reason
    # the truncated witness g = A_5 misses t·x_6: at x = e_6, |f − g| = t, |f(x)| + |x| = 1 + t
    x = np.zeros((1, d))
    x[0, 5] = 1.0
    assert t / (1 + t) > eval_threshold(TOL, 5)
    err, _m = evaluation_error(blk, blk.replace(W_up=np.eye(d)[:5], W_down=M[:, :5], skip=np.zeros((d, d))), d, seed=0)
    assert err <= eval_threshold(TOL, 5)  # the samples alone passed it


# --------------------------------------------------------------------------- stacks --
def _cone_stack(delta: float, K: float) -> tuple[Block, Block]:
    """Two ReLU blocks, d = 2, bias-free, each absorbable by a flip: f_1(x) = (x_1, δx_2) whose
    flip g_1(x) = (x_1, 0) errs by δ|x| (ρ∞ = δ ≤ τ), and f_2(y) = K·min(y, 0), whose flip is
    exact. At x = (0, −1): F = (0, −Kδ), G = 0, an error Kδ against |F| + |x| = 1 + Kδ."""
    U1 = np.array([[-1.0, 0.0], [1.0, 0.0]])
    D1 = np.array([[1.0, -1.0], [0.0, 0.0]])
    M1 = np.array([[2.0, 0.0], [0.0, delta]])
    U2, D2, M2 = np.eye(2), -K * np.eye(2), K * np.eye(2)
    relu = get_activation("relu")
    return (Block(U1, D1, relu, skip=M1, name="blocks.0"), Block(U2, D2, relu, skip=M2, name="blocks.1"))


def test_depth_two_stack_whose_composed_error_exceeds_the_tolerance_is_not_absorbable() -> None:
    """Each block alone is absorbable within τ; composed, the error is 1.5τ (> τ), which the
    old check (sampled, accepted up to L·threshold = 2τ) called absorbable."""
    delta, K = 0.5 * TOL, 3.0
    f1, f2 = _cone_stack(delta, K)
    for b in (f1, f2):
        assert decide(b, tol=TOL).verdict.value == "absorbable"
    dec = decide(Stack((f1, f2)), tol=TOL)
    assert dec.verdict.value == "unknown", dec.reason
    assert "not proved within the tolerance" in dec.reason
    # the true error at x = (0, −1), relative to |F(x)| + |x| (+ 0: bias-free)
    assert K * delta / (1 + K * delta) > eval_threshold(TOL, 2)
    # what the old acceptance measured stays within its L·threshold
    G = Stack(tuple(decide(b, tol=TOL).witness.block for b in (f1, f2)))
    err, _m = evaluation_error(Stack((f1, f2)), G, 2, seed=0)
    assert err <= 2 * eval_threshold(TOL, 2)


def test_depth_two_stack_within_the_tolerance_is_absorbable_with_a_covering_bound() -> None:
    delta, K = 0.1 * TOL, 3.0
    f1, f2 = _cone_stack(delta, K)
    dec = decide(Stack((f1, f2)), tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason
    alpha, beta = dec.witness.bound
    assert beta == 0.0 and K * delta <= alpha <= eval_threshold(TOL, 2)
    G = Stack(tuple(b.witness.block for b in dec.blocks))
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((200, 2)), [[0.0, -1.0], [0.0, -1e3]]])
    diff = np.abs(Stack((f1, f2))(X) - G(X)).max(axis=1)
    assert np.all(diff <= alpha * np.abs(X).max(axis=1) * (1 + 1e-9) + 1e-300)


def test_lipschitz_upper_bounds_the_difference_quotients() -> None:
    rng = np.random.default_rng(2)
    for act in ("relu", "gelu", "silu", "tanh", "identity"):
        b = Block(rng.standard_normal((5, 3)), rng.standard_normal((3, 5)), get_activation(act), b_up=rng.standard_normal(5),
                  skip=rng.standard_normal((3, 3)))
        L = lipschitz_upper(b)
        X, Y = rng.standard_normal((300, 3)), rng.standard_normal((300, 3))
        Y[:100] = X[:100] + 1e-6 * rng.standard_normal((100, 3))
        q = np.abs(b(X) - b(Y)).max(axis=1) / np.abs(X - Y).max(axis=1)
        assert float(q.max()) <= L
    gated = Block(np.eye(2), np.eye(2), get_activation("silu"), W_gate=np.eye(2), skip=np.eye(2))
    assert lipschitz_upper(gated) == math.inf
    assert lipschitz_upper(Block(np.eye(2), np.eye(2), get_activation("expr:x*tanh(x)"), skip=np.eye(2))) == math.inf


def test_f0_bounds_enclose_f0() -> None:
    rng = np.random.default_rng(5)
    for act in ("relu", "gelu", "identity"):
        b = Block(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), get_activation(act), b_up=rng.standard_normal(4),
                  b_down=rng.standard_normal(2), skip=np.eye(2))
        f0 = float(np.abs(b(np.zeros((1, 2)))[0]).max())
        assert f0_lower(b) <= f0 <= f0_upper(b) <= f0 * (1 + 1e-9)
    free = Block(np.eye(2), np.eye(2), get_activation("gelu"), skip=np.eye(2))
    assert f0_upper(free) == 0.0 == f0_lower(free)


def test_composed_bound_with_biases_is_stated_against_the_stacks_own_f0() -> None:
    """A constant error in the first block is carried through the second block's Lipschitz
    constant and stated against |F(0)|∞ (here F(0) = (1, 0)); with no |F(0)| to state it against, there is no bound."""
    relu = get_activation("relu")
    f = Block(np.eye(2), -np.eye(2), relu, skip=np.eye(2), b_down=np.array([1.0, 0.0]))
    eps, alpha, beta, why = composed_bound([f, f], [f, f], [(0.0, 1e-12), (0.0, 0.0)])
    L = lipschitz_upper(f)
    assert not why and beta >= L * 1e-12 and eps >= beta / f0_upper(f)
    g = f.replace(b_down=None)
    eps, _a, beta, why = composed_bound([g, g], [g, g], [(0.0, 1e-12), (0.0, 0.0)])
    assert eps == math.inf and beta > 0 and why
    eps, *_rest, why = composed_bound([g, g], [g, g], [None, (0.0, 0.0)])
    assert eps == math.inf and "no rigorous error bound" in why


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_planted_stacks_stay_absorbable(act: str) -> None:
    rng = np.random.default_rng(5)  # a planted flip: W_down[:, S] = −pinv(W_up[S]) (as test_engine's planted)
    U, D = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    S = [0, 2, 5, 7]
    D[:, S] = -np.linalg.pinv(U[S])
    blk = Block(U, D, get_activation(act))
    dec = decide(Stack((blk.replace(name="blocks.0"), blk.replace(name="blocks.1"))))
    assert dec.verdict.value == "absorbable", dec.reason
    assert dec.witness.bound is not None and dec.witness.bound[0] <= eval_threshold(dec.tolerance, 8)


# ------------------------------------------------------------------ the checker's route --
def _cert(dec, model):
    import json

    from absorb.certificate import build_certificate

    return json.loads(json.dumps(build_certificate(dec, model, seed=0).to_json()))


def test_checker_rejects_the_linear_huge_bias_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's producer (no bound: simulated by a bound of 0) certified it; the checker bounds
    the output bias's rounding by its own exact arithmetic and rejects it."""
    from absorb.verify import checker

    blk = _linear_huge_bias()
    monkeypatch.setattr(W, "linear_bound", lambda *a, **k: (0.0, 0.0, "", (0.0, 0.0)))
    import absorb.engine.results as R

    monkeypatch.setattr(R, "linear_bound", W.linear_bound)
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason
    cert = _cert(dec, blk)
    monkeypatch.undo()
    rep = checker.verify_certificate(cert, blk)
    assert not rep.accepted
    assert any("linear witness" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def test_checker_accepts_an_honest_biased_linear_certificate() -> None:
    from absorb.verify import checker

    rng = np.random.default_rng(3)
    blk = Block(rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), get_activation("identity"),
                b_up=rng.standard_normal(4), b_down=rng.standard_normal(3), skip=np.eye(3))
    dec = decide(blk, tol=TOL)
    assert dec.verdict.value == "absorbable"
    rep = checker.verify_certificate(_cert(dec, blk), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


def test_checker_rejects_a_stack_whose_composed_error_exceeds_the_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.verify import checker

    f1, f2 = _cone_stack(0.5 * TOL, 3.0)
    st = Stack((f1, f2))
    import importlib

    Dm = importlib.import_module("absorb.engine.decide")  # (the package's name `decide` is the function)
    monkeypatch.setattr(Dm, "composed_bound", lambda *a, **k: (0.0, 0.0, 0.0, ""))
    monkeypatch.setattr(Dm, "evaluation_error", lambda *a, **k: (0.0, 1))
    dec = decide(st, tol=TOL)
    assert dec.verdict.value == "absorbable", dec.reason  # (a producer that trusted a wrong bound and no sample)
    cert = _cert(dec, st)
    monkeypatch.undo()
    rep = checker.verify_certificate(cert, st)
    assert not rep.accepted
    assert any("composed witnesses are within" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def test_checker_accepts_the_honest_stack_and_its_bound_covers_the_producers() -> None:
    from absorb.verify import _compose, checker

    f1, f2 = _cone_stack(0.1 * TOL, 3.0)
    st = Stack((f1, f2))
    dec = decide(st, tol=TOL)
    rep = checker.verify_certificate(_cert(dec, st), st)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
    # the checker's own route (exact rationals) and the producer's agree to within their roundings
    eps_c, _how = _compose.composed_epsilon([f1, f2], [b.witness.block for b in dec.blocks], [b.witness.bound for b in dec.blocks])
    eps_p = composed_bound([f1, f2], [b.witness.block for b in dec.blocks], [b.witness.bound for b in dec.blocks])[0]
    assert 0.3 * TOL <= eps_c and abs(eps_c - eps_p) <= 1e-6 * eps_p


def test_checker_lipschitz_and_f0_bounds_are_rigorous() -> None:
    from absorb.verify import _compose

    rng = np.random.default_rng(9)
    for act in ("relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "sigmoid", "tanh", "softplus", "leaky_relu", "identity"):
        b = Block(rng.standard_normal((6, 3)), rng.standard_normal((3, 6)), get_activation(act), b_up=rng.standard_normal(6),
                  b_down=rng.standard_normal(3), skip=rng.standard_normal((3, 3)))
        L = _compose._lipschitz(b)
        X = rng.standard_normal((400, 3))
        Y = X + 10.0 ** rng.integers(-6, 1, size=(400, 1)) * rng.standard_normal((400, 3))
        q = np.abs(b(X) - b(Y)).max(axis=1) / np.abs(X - Y).max(axis=1)
        assert float(q.max()) <= L
        lo, hi = _compose._f0_bounds(b)
        f0 = float(np.abs(b(np.zeros((1, 3)))[0]).max())
        assert lo <= f0 <= hi
    # sup |σ′| of the table, checked on a fine grid (the table states an upper bound)
    z = np.linspace(-12, 12, 240001)
    for act, L in _compose.LIPSCHITZ.items():
        s = get_activation(act)(z)
        assert float(np.max(np.abs(np.diff(s)) / np.diff(z))) <= L, act


# ------------------------------------------------------------------ the search's hint --
def test_linalg_hint_names_a_tolerance_that_the_witness_check_accepts() -> None:
    """A planted ReLU flip rounded to float32, with W_down (and so M) scaled by 1000: its relative
    residual is 6e-8, but the witness's ∞-norm error is 1.3e-4 per unit of |x|. The hint used to
    say "--tol 1e-07" (from the Frobenius residual), at which the witness fails; it now names a
    tolerance at which the decision is absorbable."""
    import re

    rng = np.random.default_rng(0)
    d, n = 4, 12
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    S = [0, 3, 5, 7, 9]
    D[:, S] = -np.linalg.pinv(U[S])
    D *= 1000
    M = -(D[:, S] @ U[S])
    blk = Block(U.astype(np.float32).astype(np.float64), D.astype(np.float32).astype(np.float64), get_activation("relu"), skip=M)
    dec = decide(blk, tol=1e-9, method="linalg")
    assert dec.verdict.value == "unknown"
    hint = re.search(r"--tol (\S+) would accept", dec.reason)
    assert hint is not None, dec.reason
    tol = float(hint.group(1))
    assert tol > 1e-7  # the Frobenius residual's power of ten is too small here
    assert decide(blk, tol=1e-7, method="linalg").verdict.value == "unknown"
    dec2 = decide(blk, tol=tol, method="linalg")
    assert dec2.verdict.value == "absorbable", dec2.reason


def test_checker_rejects_a_near_canonical_witness_over_the_absolute_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    """A degenerate ReLU block (d = 2, n = 3, an antipodal pair) one ulp from width 3, scaled by
    2³⁰: within the tolerance relative to ‖M‖_F, but its witness errs by ~1e-7 per unit of
    |x|∞ (> τ = 1e-9). A certificate from a producer without the bound (simulated by bounds of
    0) passed the checker's sampled check with an allowance of the same ~1e-7; it is rejected."""
    import absorb.engine.degenerate as Dg
    from absorb.verify import checker

    s = 2.0**30
    U = np.array([[1.0, 1.0], [-1.0, -1.0], [2.0, 1.0]])
    D = np.array([[0.0, -1.0, 2.0], [-1.0, -1.0, 3.0]]) * s
    M = np.array([[np.nextafter(-2.0, 10.0), -2.0], [1.0, 1.0 + 2.0**-52]]) * s
    blk = Block(U, D, get_activation("relu"), skip=M)
    assert decide(blk, tol=1e-9).verdict.value != "absorbable"
    for name in ("unit_difference_bound", "pl_bound"):
        monkeypatch.setattr(Dg, name, lambda *a, **k: 0.0)
    dec = decide(blk, tol=1e-9)
    assert dec.verdict.value == "absorbable" and dec.theorem.value == "canonical-form", dec.reason
    cert = _cert(dec, blk)
    monkeypatch.undo()
    rep = checker.verify_certificate(cert, blk)
    assert not rep.accepted
    assert any("within-tolerance witness's error" in f.claim for f in rep.failures), [f.claim for f in rep.failures]


def _exact_relu_block(b: Block, x: list[Fraction]) -> list[Fraction]:
    F = Fraction
    d = b.d
    z = [sum((F(float(b.W_up[i, k])) * x[k] for k in range(d)), F(0)) + (F(float(b.b_up[i])) if b.b_up is not None else F(0))
         for i in range(b.n)]
    h = [max(v, F(0)) for v in z]
    out = []
    for j in range(d):
        v = sum((F(float(b.W_down[j, i])) * h[i] for i in range(b.n)), F(0))
        v += sum((F(float(b.M[j, k])) * x[k] for k in range(d)), F(0)) if b.skip is not None else F(0)
        out.append(v + (F(float(b.b_down[j])) if b.b_down is not None else F(0)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_composed_bound_covers_the_exact_error_of_noisy_planted_stacks(seed: int) -> None:
    """Random depth-2 and depth-3 stacks of planted ReLU flips with a skip perturbed by 1e-6 and
    (every other seed) biases: wherever the stack is decided absorbable at τ = 1e-3, the proved
    α|x|∞ + β bounds |F(x) − G(x)|∞ at exact rational inputs (evaluated in rationals), including
    inputs on the first block's kink hyperplanes."""
    rng = np.random.default_rng(100 + seed)
    d, n, L = 2 + seed % 2, 4, 2 + (seed // 2) % 2
    blocks = []
    for k in range(L):
        U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
        S = [0, 1, 2][: d]
        M = -(D[:, S] @ U[S]) + 1e-6 * rng.standard_normal((d, d))
        kw = dict(b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)) if seed % 2 else {}
        blocks.append(Block(U, D, get_activation("relu"), skip=M, name=f"blocks.{k}", **kw))
    st = Stack(tuple(blocks))
    dec = decide(st, tol=1e-3, allow_biases=True)
    if dec.verdict.value != "absorbable":
        assert dec.verdict.value == "unknown", dec.reason
        return
    alpha, beta = dec.witness.bound
    gs = [b.witness.block for b in dec.blocks]
    X = list(rng.standard_normal((30, d)) * 10.0 ** rng.integers(-2, 3, size=(30, 1)))
    u = blocks[0].W_up[0]  # a point on the first unit's kink hyperplane: x ⟂ u
    X.append(np.array([u[1], -u[0]] + [0.0] * (d - 2)))
    for x in X:
        xf = [Fraction(float(v)) for v in x]
        y, z = xf, xf
        for f, g in zip(blocks, gs):
            y, z = _exact_relu_block(f, y), _exact_relu_block(g, z)
        diff = max(abs(a - b) for a, b in zip(y, z))
        assert diff <= Fraction(alpha) * max(abs(v) for v in xf) + Fraction(beta)


def test_a_stack_of_absorbable_gated_blocks_is_unknown_with_the_reason() -> None:
    """g(W_gate x) ⊙ (W_up x) is not globally Lipschitz, so no composed bound exists: the stack
    is unknown (the sampled composition alone is not a proof), and the reason says why."""
    from pathlib import Path

    from absorb.io import load

    b = load(str(Path(__file__).resolve().parent.parent / "counterexamples" / "glu_planted.npz"))
    assert b.gated and decide(b).verdict.value == "absorbable"
    dec = decide(Stack((b.replace(name="blocks.0"), b.replace(name="blocks.1"))))
    assert dec.verdict.value == "unknown" and "gated" in dec.reason, dec.reason


def test_the_identity_skip_counts_in_the_lipschitz_bound() -> None:
    """f₀(x) = x + 6.5·ReLU(x) has Lipschitz constant 7.5, not 6.5 (the identity skip counts):
    composed after it, f₁'s index-set witness (relative residual 1.45e-10) errs by 1.09e-9·|x| at
    x = 1 (F(1) ≈ −1.1e-9), past the tolerance, so the stack is not absorbable by composition."""
    relu = get_activation("relu")
    f0 = Block(np.array([[1.0], [1.0]]), np.array([[3.25, 3.25]]), relu)
    f1 = Block(np.array([[1.0], [-1.0]]), np.array([[-(1 + 1.45e-10), 0.5]]), relu)
    assert lipschitz_upper(f0) >= 7.5
    dec = decide(Stack((f0, f1)))
    assert dec.verdict.value != "absorbable", dec.reason


def test_an_honest_biased_stack_verifies() -> None:
    """A biased stack (layer 0 planted exactly, layer 1 with ρ∞ = 3·10⁻¹¹ and up-biases): the composed
    witness has a constant error, which the guarantee measures against the stack's |F(0)|∞; the checker's
    sampled check allows it (it allowed a linear error only and rejected this true certificate)."""
    from absorb.certificate import build_certificate
    from absorb.verify import checker

    relu = get_activation("relu")
    U0 = np.array([[2.0, 1.0], [0.0, 0.5], [0.15675108662422516, -0.18693094462995438], [-2.516759710820513, -0.5386928958466366]])
    D0 = np.array([[-0.5, 1.0, -0.048500945401071985, 0.11330898600330756], [-0.0, -2.0, -1.5301357655053935, -0.47775327603393064]])
    U1 = np.array([[2.0, 1.0], [0.0, 0.5], [-1.344214547285082, -0.45761576104021817], [-1.901222739800844, -1.289537739784976]])
    D1 = np.array([[-0.5, 1.0, -1.8417350377917323, -0.23509113107468127], [-0.0, -2.0, -1.2674464814437032, 0.2712643588217015]])
    D1[:, :2] *= 1 + 3e-11
    st = Stack((Block(U0, D0, relu, b_up=np.array([-0.0325217049455206, 0.8843898673831739, -0.583600432743302, -0.11170194958415963]),
                      b_down=np.array([0.11046414324948059, 0.06378177425506196]), name="b0"),
                Block(U1, D1, relu, b_up=np.array([-0.9785190780566395, -0.8088372394255993, 1.0608986233860787, -0.8075346753318965]),
                      name="b1")))
    dec = decide(st)
    assert dec.verdict.value == "absorbable", dec.reason
    rep = checker.verify_certificate(build_certificate(dec, st, seed=0).to_json(), st)
    assert rep.accepted, [f.claim + ": " + f.detail for f in rep.failures]


def test_a_stack_whose_biases_cancel_is_measured_against_its_own_f0() -> None:
    """Two exactly planted biased ReLU layers with b_up ≈ 10⁶ whose biases cancel through the stack: F(0) ≈ 5·10⁻¹⁰
    while |f_1(0)|∞ ≈ 1.7·10⁶. Each flip's moved bias rounds by ≈ 2·10⁻¹¹, which is small against a layer's f(0)
    but not against F(0) (relative error 0.05 at x = 0): unknown, not absorbable; both sides' |F(0)| bounds
    (an enclosure carried through the layers) see it, and a layer-sized F(0) is still bounded from below."""
    from absorb.engine.witness import stack_f0_lower
    from absorb.verify._compose import _f0_of_stack

    rng = np.random.default_rng(3)
    relu = get_activation("relu")

    def layer() -> dict:
        U, D = np.vstack([np.eye(2), rng.standard_normal((2, 2))]), np.hstack([-np.eye(2), rng.standard_normal((2, 2))])
        return dict(W_up=U, W_down=D, b_up=np.concatenate([1e6 * (1 + rng.uniform(size=2)), rng.standard_normal(2)]),
                    b_down=rng.standard_normal(2))

    L1, L2 = layer(), layer()
    f1 = Block(L1["W_up"], L1["W_down"], relu, b_up=L1["b_up"], b_down=L1["b_down"], name="b0")
    f2 = Block(L2["W_up"], L2["W_down"], relu, b_up=L2["b_up"], b_down=L2["b_down"], name="b1")
    f2 = f2.replace(b_down=L2["b_down"] - f2(f1(np.zeros((1, 2))))[0])
    st = Stack((f1, f2))
    assert stack_f0_lower([f1, f2]) < 1e-3 and _f0_of_stack([f1, f2]) < 1e-3
    assert decide(st, allow_biases=True).verdict.value == "unknown"
    lo, lo_c = stack_f0_lower([f1, f1]), _f0_of_stack([f1, f1])
    true = float(np.abs(f1(f1(np.zeros((1, 2))))).max())
    assert 0.99 * true < lo <= true and 0.99 * true < lo_c <= true


def test_a_composed_witness_recorded_as_error_free_is_rejected() -> None:
    """A stack's composed witness is not exact here (the flips round): its recorded error 0 was accepted; an extra
    field in its record was too."""
    from absorb.verify.checker import verify_certificate

    rng = np.random.default_rng(5)
    U, D = rng.standard_normal((8, 3)), rng.standard_normal((3, 8))
    S = [0, 2, 5, 7]
    D[:, S] = -np.linalg.pinv(U[S])
    blk = Block(U, D, get_activation("relu"))
    st = Stack((blk.replace(name="blocks.0"), blk.replace(name="blocks.1")))
    doc = _cert(decide(st), st)
    assert verify_certificate(doc, st).accepted and doc["stack"]["composition_witness"]["eval_error"] > 0
    doc["stack"]["composition_witness"]["eval_error"] = 0.0
    assert not verify_certificate(doc, st).accepted
    doc = _cert(decide(st), st)
    doc["stack"]["composition_witness"]["extra"] = 1
    rep = verify_certificate(doc, st)
    assert rep.not_rechecked  # (exit 4)


def _tiny_product_stack(eps: float, act: str) -> Stack:
    """F = ε·x₁·e₁ + B₂∘B₁ exactly (d = 3): M₁ = e₁e₁ᵀ, M₂ = ε·e₁e₁ᵀ + e₂e₃ᵀ (each skip of ∞-norm 1), B₁'s outputs
    along e₂, and B₂'s rows blind to x₁ — so the skips' cross terms vanish and M₂M₁ = ε·e₁e₁ᵀ."""
    rng = np.random.default_rng(0)
    M1, M2 = np.zeros((3, 3)), np.zeros((3, 3))
    M1[0, 0], M2[0, 0], M2[1, 2] = 1.0, eps, 1.0
    U1, D1 = rng.standard_normal((3, 3)), np.zeros((3, 3))
    D1[1] = rng.standard_normal(3)
    U2, D2 = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    U2[:, 0] = 0.0
    kw1, kw2 = {}, {}
    if act == "swiglu":
        G1, G2 = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
        G2[:, 0] = 0.0
        kw1, kw2 = {"W_gate": G1}, {"W_gate": G2}
    a = get_activation(act)
    return Stack((Block(U1, D1, a, skip=M1, **kw1), Block(U2, D2, a, skip=M2, **kw2)))


@pytest.mark.parametrize(("eps", "act", "tol"), [(1e-5, "relu2", 1e-3), (1e-12, "relu2", 1e-9), (1e-5, "swiglu", 1e-3)])
def test_depth_needs_the_skip_product_large_for_the_tolerance(tmp_path, eps: float, act: str, tol: float) -> None:
    """The depth argument bounds the error near 0 below by ‖P‖∞/(1 + ‖P‖∞) (P = M_L⋯M_1) and no more: with
    ‖P‖∞ = ε ≤ τ the skip-free composition B₂∘B₁ is within ε of F, so not_absorbable [depth] was wrong (and verify
    accepted it). Now unknown, and a depth certificate paired with these weights is rejected."""
    from conftest import run_absorb

    stack = _tiny_product_stack(eps, act)
    G = Stack(tuple(Block(b.W_up, b.W_down, b.activation, W_gate=b.W_gate, skip=np.zeros((3, 3))) for b in stack.blocks))
    rng = np.random.default_rng(3)
    X = np.vstack([s * rng.standard_normal((100, 3)) for s in (1e-6, 1e-2, 1.0, 1e2, 1e6)])
    F, Gx = stack(X), G(X)
    ratio = np.max(np.abs(F - Gx), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1))
    assert float(np.max(ratio)) <= eps * (1 + 1e-6) and eps <= tol
    dec = decide(stack, tol=tol)
    assert dec.verdict.value == "unknown" and "small for the tolerance" in dec.reason, dec.reason
    big = _tiny_product_stack(0.5, act)
    assert decide(big, tol=tol).verdict.value == "not_absorbable"
    arrays = {f"blocks.{k}.{name}": getattr(b, attr) for k, b in enumerate(big.blocks)
              for name, attr in (("W_up", "W_up"), ("W_down", "W_down"), ("skip", "skip"), ("W_gate", "W_gate"))
              if getattr(b, attr) is not None}
    np.savez(tmp_path / "big.npz", **arrays)
    np.savez(tmp_path / "tiny.npz", **{k: (v if not k.endswith("1.skip") else stack.blocks[1].skip) for k, v in arrays.items()})
    r = run_absorb("check", str(tmp_path / "big.npz"), "--activation", act, "--tol", str(tol), "--certificate", str(tmp_path / "c.json"))
    assert r.returncode == 0, r.stderr
    assert run_absorb("verify", str(tmp_path / "c.json"), str(tmp_path / "big.npz"), "--activation", act).returncode == 0
    r = run_absorb("verify", str(tmp_path / "c.json"), str(tmp_path / "tiny.npz"), "--activation", act)
    assert r.returncode == 1, r.stdout + r.stderr
