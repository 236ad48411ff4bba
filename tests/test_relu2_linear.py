"""σ = α·ReLU² + β·z (theorem relu2-linear, docs/results/skeleton2.md "ReLU² plus a linear term"):
the linear program over the units' positive scales, its witness and Farkas certificates, and the
checker's refusal of tampered ones."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest

from absorb import Block, Theorem, Verdict, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.engine import relu2_linear as r2l
from absorb.verify import checker

RELU2_X = "expr:Max(0, x)**2 + x"


def planted(seed: int = 0, d: int = 3, n: int = 6, *, biases: bool = False, act: str = RELU2_X, beta: float = 1.0,
            mu: np.ndarray | None = None) -> Block:
    """M = βΣ(μ_i − 1) w_i u_iᵀ for a planted μ (> 0 unless given): absorbable with exactly those scales — powers of
    two, so that the rescaled units u_i/μ_i, μ_i²w_i are exact in float64 (the quadratic part of f − g is then 0,
    as a witness within the tolerance needs)."""
    rng = np.random.default_rng(seed)
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    mu = 2.0 ** rng.integers(-2, 3, n) if mu is None else mu
    M = beta * sum((mu[i] - 1) * np.outer(D[:, i], U[i]) for i in range(n))
    extra = dict(b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)) if biases else {}
    return Block(U, D, get_activation(act), skip=M, **extra)


def generic(seed: int = 2, d: int = 3, n: int = 5, *, biases: bool = False, act: str = RELU2_X) -> Block:
    rng = np.random.default_rng(seed)
    extra = dict(b_up=rng.standard_normal(n), b_down=rng.standard_normal(d)) if biases else {}
    return Block(rng.standard_normal((n, d)), rng.standard_normal((d, n)), get_activation(act),
                 skip=rng.standard_normal((d, d)), **extra)


def _cert(blk: Block) -> tuple[object, dict]:
    dec = decide(blk)
    return dec, build_certificate(dec, blk, seed=0).to_json()


def _fully_accepted(doc: dict, blk: Block) -> bool:
    rep = checker.verify_certificate(doc, blk)
    return rep.accepted and not rep.not_rechecked


# ------------------------------------------------------------------------------- σ --
@pytest.mark.parametrize(("text", "form"), [
    ("Max(0, x)**2 + x", (1, 1)), ("2*Max(0, x)**2 - 3*x", (2, -3)), ("x*Abs(x)/2 + x**2/2 + x/4", (1, Fraction(1, 4))),
    ("Max(0, x)**2/3 - x", (Fraction(1, 3), -1))])
def test_the_form_is_proved_with_its_constants(text: str, form: tuple) -> None:
    assert r2l.relu2_linear_form(get_activation(f"expr:{text}")) == tuple(Fraction(v) for v in form)


@pytest.mark.parametrize("text", ["Max(0, x)**2", "x", "Max(0, x)**2 + tanh(x)", "Max(0, x)**2 + x + 1",
                                  "Max(0, x)**2 + Max(0, x)", "Max(0, x - 1)**2 + x"])
def test_other_activations_are_not_in_the_form(text: str) -> None:
    assert isinstance(r2l.relu2_linear_form(get_activation(f"expr:{text}")), str)


# ------------------------------------------------------------------------ verdicts --
@pytest.mark.parametrize("biases", [False, True])
def test_planted_scales_are_absorbable_and_verified(biases: bool) -> None:
    blk = planted(1, biases=biases)
    dec, doc = _cert(blk)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.RELU2_LINEAR), bd.reason
    assert not np.any(bd.witness.block.M) and (bd.witness.block.b_up is None) == (not biases)
    X = np.random.default_rng(5).standard_normal((64, blk.d)) * 3
    np.testing.assert_allclose(bd.witness.block(X), blk(X), rtol=1e-9, atol=1e-9)
    assert _fully_accepted(doc, blk)


@pytest.mark.parametrize("biases", [False, True])
def test_generic_narrow_blocks_are_not_absorbable_and_verified(biases: bool) -> None:
    blk = generic(3, biases=biases)
    dec, doc = _cert(blk)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.NOT_ABSORBABLE, Theorem.RELU2_LINEAR), bd.reason
    assert doc["blocks"][0]["argument"]["case"] == "farkas"
    assert _fully_accepted(doc, blk)


@pytest.mark.parametrize("biases", [False, True])
def test_scales_at_the_boundary_are_absorbable_within_the_tolerance(biases: bool) -> None:
    """μ_S = 0 (a flip-like set: M = −βΣ_S w_i u_iᵀ): no μ > 0 solves the equation exactly, but units rescaled by
    μ_i = 2⁻⁴⁰ keep their ReLU² part exactly and leave β·2⁻⁴⁰·w_i u_iᵀ of the linear one — within τ = 10⁻⁹."""
    blk = planted(3, biases=biases, mu=np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]))
    dec, doc = _cert(blk)
    bd = dec.blocks[0]
    assert (bd.verdict, bd.theorem) == (Verdict.ABSORBABLE, Theorem.RELU2_LINEAR), bd.reason
    assert "reaches 0" in bd.reason
    X = np.random.default_rng(6).standard_normal((256, blk.d)) * 10.0 ** np.random.default_rng(7).uniform(-3, 6, (256, 1))
    den = np.max(np.abs(blk(X)), axis=1) + np.max(np.abs(X), axis=1) + float(np.max(np.abs(blk(np.zeros((1, blk.d))))))
    assert float(np.max(np.max(np.abs(bd.witness.block(X) - blk(X)), axis=1) / den)) <= 1e-9
    assert _fully_accepted(doc, blk)


def test_wide_generic_blocks_have_a_witness_only_up_to_rounding() -> None:
    """n ≫ d²: the A_i = w_i u_iᵀ positively span R^{d×d}, so every M is reached (no independence needed) — by real
    scales μ; the float64 witness's rows u_i/μ_i round, so the quadratic part of f − g is a few ulps, not 0: no
    error within the tolerance's measure (it exceeds τ|x| where f grows only linearly), and the answer is unknown."""
    blk = generic(4, d=2, n=12, biases=True)
    dec, doc = _cert(blk)
    assert dec.blocks[0].verdict is Verdict.UNKNOWN and "not the tolerance's measure" in dec.blocks[0].reason
    assert _fully_accepted(doc, blk)


def test_a_negative_scale_is_not_absorbable() -> None:
    """n = d²: μ is unique (the A_i are a basis); a planted μ with a negative entry has no positive one."""
    mu = np.array([1.5, -0.5, 0.8, 1.2])
    blk = planted(6, d=2, n=4, mu=mu)
    dec, doc = _cert(blk)
    assert dec.blocks[0].verdict is Verdict.NOT_ABSORBABLE, dec.blocks[0].reason
    assert _fully_accepted(doc, blk)


@pytest.mark.parametrize("seed", range(12))
def test_brute_force_cross_check_of_the_linear_program(seed: int) -> None:
    """d = 2, n = 4: the A_i form a basis, so Σμ_i A_i = T has the one solution μ* (solved here
    directly); the verdict must be absorbable iff every μ*_i > 0, and the witness's μ must be μ*."""
    rng = np.random.default_rng(100 + seed)
    mu = rng.choice([-1.0, -0.5, 0.25, 0.5, 1.0, 2.0], 4)  # (positive ones powers of two: the witness is exact in float64)
    blk = planted(200 + seed, d=2, n=4, mu=mu, biases=bool(seed % 2))
    A = np.einsum("ai,ib->abi", blk.W_down, blk.W_up).reshape(4, 4)
    T = blk.M.reshape(-1) + A.sum(axis=1)
    star = np.linalg.solve(A, T)
    dec = decide(blk).blocks[0]
    if np.all(star > 0):
        assert dec.verdict is Verdict.ABSORBABLE, dec.reason
        got = np.linalg.norm(dec.witness.block.W_up, axis=1) / np.linalg.norm(blk.W_up, axis=1)  # = 1/μ_i
        np.testing.assert_allclose(1 / got, star, rtol=1e-8)
    else:
        assert dec.verdict is Verdict.NOT_ABSORBABLE, dec.reason


def test_witness_error_bound_holds_exactly_at_kinks() -> None:
    """|f(x) − g(x)|_∞ ≤ q|x|²_∞ + l|x|_∞ + r in exact rationals, at random points and on every
    kink hyperplane u_i·x + c_i = 0 of f (where g's kink is only near: the rounding of u_i/μ_i)."""
    blk = planted(7, biases=True, mu=np.random.default_rng(7).uniform(0.5, 2, 6))  # (not powers of two: u_i/μ_i rounds)
    mu_f = r2l.solve_mu(blk, 1.0)
    assert mu_f is not None
    wb = r2l.witness_block(blk, mu_f, 1.0)
    mu = [Fraction(float(x)) for x in mu_f]
    q, lin, r, _ = r2l.witness_bound(blk, wb, mu, Fraction(1), Fraction(1))
    assert q > 0 and q < Fraction(1, 10**12)
    dec = decide(blk).blocks[0]  # (such a witness is no answer: a nonzero quadratic part is outside the tolerance's measure)
    assert dec.verdict is Verdict.UNKNOWN and "not the tolerance's measure" in dec.reason, dec.reason

    def ev(b: Block, x: list[Fraction]) -> list[Fraction]:
        U, D = [[Fraction(float(v)) for v in row] for row in b.W_up], [[Fraction(float(v)) for v in row] for row in b.W_down]
        c = [Fraction(0)] * b.n if b.b_up is None else [Fraction(float(v)) for v in b.b_up]
        bd_ = [Fraction(0)] * b.d if b.b_down is None else [Fraction(float(v)) for v in b.b_down]
        M = [[Fraction(float(v)) for v in row] for row in (b.M if b.skip is not None else np.zeros((b.d, b.d)))]
        s = [sum(U[i][k] * x[k] for k in range(b.d)) + c[i] for i in range(b.n)]
        h = [max(v, Fraction(0)) ** 2 + v for v in s]
        return [sum(M[a][k] * x[k] for k in range(b.d)) + sum(D[a][i] * h[i] for i in range(b.n)) + bd_[a] for a in range(b.d)]

    rng = np.random.default_rng(3)
    pts = [[Fraction(float(v)) for v in rng.standard_normal(blk.d) * s] for s in (0.01, 1, 100) for _ in range(3)]
    for i in range(blk.n):  # a point on f's kink hyperplane i: x = −c_i u_i / |u_i|² (exact)
        u = [Fraction(float(v)) for v in blk.W_up[i]]
        t = -Fraction(float(blk.b_up[i])) / sum(v * v for v in u)
        pts.append([t * v for v in u])
    for x in pts:
        X = max(abs(v) for v in x)
        err = max(abs(a - b) for a, b in zip(ev(blk, x), ev(wb, x)))
        assert err <= q * X * X + lin * X + r


def test_degenerate_weights_without_a_witness_are_unknown() -> None:
    blk = generic(3)
    blk = blk.replace(W_up=np.vstack([blk.W_up[:4], 2 * blk.W_up[:1]]))  # rows 0 and 4 collinear
    dec = decide(blk).blocks[0]
    assert dec.verdict is Verdict.UNKNOWN and "nondegenerate" in dec.reason


def test_dependent_q_columns_are_unknown_when_the_lp_fails() -> None:
    """n > d·d(d+1)/2: the (Q) columns are dependent, so a flip is not excluded; a generic M
    outside the cone of the A_i (d = 2, n = 7 < ... ) is then unknown, not not_absorbable."""
    rng = np.random.default_rng(11)
    n, d = 7, 2
    U = rng.standard_normal((n, d))
    D = np.abs(rng.standard_normal((d, n)))
    U[:, 0] = np.abs(U[:, 0])
    U[:, 1] = np.abs(U[:, 1])  # every A_i ≥ 0 entrywise: their cone misses M = −10·I − Σ A_i
    M = -10.0 * np.eye(d) - np.einsum("ai,ib->ab", D, U)
    blk = Block(U, D, get_activation(RELU2_X), skip=M)
    dec = decide(blk).blocks[0]
    assert dec.verdict is Verdict.UNKNOWN and "independent" in dec.reason, dec.reason


def test_relu2_without_a_linear_term_stays_with_the_degree2_skeleton() -> None:
    dec = decide(generic(3, act="expr:Max(0, x)**2", biases=True)).blocks[0]
    assert dec.theorem is Theorem.SKELETON2


# ------------------------------------------------------------------------- tamper --
def test_tampered_farkas_matrix_is_refused() -> None:
    blk = generic(3)
    _, doc = _cert(blk)
    arg = doc["blocks"][0]["argument"]
    for how in ("negated", "zeroed", "entry", "bound"):
        bad = copy.deepcopy(doc)
        a = bad["blocks"][0]["argument"]
        Y = np.array(arg["Y"])
        if how == "negated":
            a["Y"] = (-Y).tolist()
        elif how == "zeroed":
            a["Y"] = np.zeros_like(Y).tolist()
        elif how == "entry":
            Y[0, 0] *= 1.5
            a["Y"] = Y.tolist()
        else:
            a["bound"] = arg["bound"] * 1.01
        assert not _fully_accepted(bad, blk), how
    bad = copy.deepcopy(doc)  # (its verdict changed to unknown with the Farkas evidence kept: was accepted)
    bad["verdict"] = bad["blocks"][0]["verdict"] = "unknown"
    assert not _fully_accepted(bad, blk)


def test_tampered_scales_and_form_are_refused() -> None:
    blk = planted(1, biases=True)
    _, doc = _cert(blk)
    for key, value in (("scales", None), ("alpha", "2"), ("beta", "-1"), ("case", "farkas")):
        bad = copy.deepcopy(doc)
        a = bad["blocks"][0]["argument"]
        if key == "scales":
            mu = list(a["scales"])
            mu[0] *= 1 + 1e-9
            a["scales"] = mu
        else:
            a[key] = value
        assert not _fully_accepted(bad, blk), key
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"]["scales"] = [-v for v in doc["blocks"][0]["argument"]["scales"]]
    assert not _fully_accepted(bad, blk)
    bad = copy.deepcopy(doc)  # (a finite μ whose witness μ²w overflows crashed the checker: now a failed check)
    bad["blocks"][0]["argument"]["scales"][0] = 1e300
    assert not _fully_accepted(bad, blk)


def test_another_activation_is_refused() -> None:
    """The certificate of ReLU² + x checked against the same weights with ReLU² + tanh: σ's form fails."""
    blk = planted(1)
    _, doc = _cert(blk)
    other = blk.replace(activation=get_activation("expr:Max(0, x)**2 + tanh(x)"))
    assert not checker.verify_certificate(doc, other).accepted


def test_degenerate_weights_with_a_witness_are_absorbable() -> None:
    """Sufficiency needs no nondegeneracy: a collinear pair (u_4 = 2u_0) with planted μ > 0 still gets
    its rescaling witness, which the checker accepts without re-deriving the hypotheses."""
    rng = np.random.default_rng(21)
    n, d = 6, 3
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    U[4] = 2 * U[0]
    mu = 2.0 ** rng.integers(-2, 3, n)
    M = sum((mu[i] - 1) * np.outer(D[:, i], U[i]) for i in range(n))
    blk = Block(U, D, get_activation(RELU2_X), skip=M, b_up=rng.standard_normal(n))
    dec, doc = _cert(blk)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.ABSORBABLE and any(h.holds is False for h in bd.hypotheses), bd.reason
    assert _fully_accepted(doc, blk)


def test_a_witness_with_biases_claimed_for_the_bias_free_class_is_refused() -> None:
    blk = planted(1, biases=True)
    _, doc = _cert(blk)
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["class"]["biases"] = False
    assert not _fully_accepted(bad, blk)


def test_wide_independent_blocks_use_the_gram_route_and_refuse_an_overstated_mu() -> None:
    """48 < n ≤ d·d(d+1)/2: the (Q) columns' independence by the skeleton's Gram route (μ recorded)."""
    blk = generic(8, d=8, n=56, biases=True)  # (n < d²: M generically outside the span of the A_i)
    dec, doc = _cert(blk)
    bd = dec.blocks[0]
    assert bd.verdict is Verdict.NOT_ABSORBABLE, bd.reason
    arg = doc["blocks"][0]["argument"]
    assert arg["route"] == "gram" and arg["mu"]
    assert _fully_accepted(doc, blk)
    for k, v in (("mu", str(Fraction(arg["mu"]) * 10)), ("route", "rank")):
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["argument"][k] = v
        assert not _fully_accepted(bad, blk), k


def test_a_zero_column_leaves_its_scale_free_and_the_witness_is_found() -> None:
    """W_down's column 2 is zero, so A_2 = 0 is in no equation and the LP left μ_2 at its bound 1e6,
    which failed the ratio min μ / max μ ≥ 1e-6: `unknown` where the sufficiency (any weights) gives
    an exact witness of the planted μ = (1/2, ·, 3/4, 1/4, 1)."""
    U = np.array([[-1.0, -3], [2, 2], [4, -3], [2, -1], [1, 2]])
    D = np.array([[1.0, 3, 0, 1, -3], [1, -1, 0, -1, 1]])
    mu, beta = np.array([0.5, 1, 0.75, 0.25, 1]), -0.5
    A = [np.outer(D[:, i], U[i]) for i in range(5)]
    M = beta * (sum(m * a for m, a in zip(mu, A)) - sum(A))
    blk = Block(U, D, get_activation("expr:-3*Max(0,x)**2 - x/2"), skip=M)
    dec, doc = _cert(blk)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason
    assert _fully_accepted(doc, blk)


def test_f0_zero_takes_the_witness_of_a_dyadic_mu() -> None:
    """f(0) = 0 exactly (dyadic weights, σ = −ReLU² + z, n = 10 > d²): the LP's μ is not dyadic, so
    b'_down = b_down + βΣ(1 − μ_i)c_i w_i rounds and no relative bound covers it against f(0) = 0;
    μ rounded to a dyadic grid makes it exact (the equation's residual, 2^-40, is bounded as before)."""
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0], [3.25, -0.5], [1.25, 0.5], [2.25, -0.5], [-1.75, -2.5],
                  [-0.75, 1.5], [1.25, 3.5]])
    D = np.array([[-2.0, -2.0, 1.0, 1.0, -0.5, 0.5, -0.5, 1.0, 0.0, 0.5], [-1.0, -1.0, 0.5, 0.5, 0.0, 1.5, -0.5, -0.5, 1.5, -0.5]])
    c = np.array([1.0, -1.0, 0.5, 2.0, 1.5, 1.5, -2.0, -1.5, 1.0, -0.5])
    blk = Block(U, D, get_activation("expr:-1*Max(0,x)**2 + 1*x"), skip=np.array([[1.0, 1.0], [0.5, 0.5]]), b_up=c,
                b_down=np.array([0.5, -1.0]))
    assert not blk(np.zeros((1, 2))).any()  # f(0) = 0
    dec, doc = _cert(blk)
    assert dec.verdict is Verdict.ABSORBABLE, dec.reason
    assert _fully_accepted(doc, blk)


def test_the_checker_wants_a_witness_in_the_tolerance_measure() -> None:
    """The rescaling witness rebuilt from recorded scales that are not powers of two has a nonzero quadratic part
    (u_i/μ_i rounds): no error within τ(|f(x)| + |x| + |f(0)|) — rejected, as is a recorded error of 0 for a
    witness that is not exact; the honest certificate (powers of two) is accepted."""
    blk = planted(7, biases=True)
    dec, doc = _cert(blk)
    assert dec.blocks[0].verdict is Verdict.ABSORBABLE and _fully_accepted(doc, blk)
    bad = json.loads(json.dumps(doc))
    bad["blocks"][0]["argument"]["scales"] = [v * (1 + 2.0**-30) for v in bad["blocks"][0]["argument"]["scales"]]
    rep = checker.verify_certificate(bad, blk)
    assert not rep.accepted and "quadratic error" in rep.failures[0].claim, [f.claim for f in rep.failures]
    if not doc["blocks"][0]["witness"].get("exact"):
        zero = json.loads(json.dumps(doc))
        zero["blocks"][0]["witness"]["eval_error"] = 0.0
        ok = checker.verify_certificate(zero, blk)
        assert ok.accepted == (dec.blocks[0].witness.eval_error == 0.0)


@pytest.mark.parametrize("entry", [1e308, -1e308])
def test_a_farkas_matrix_past_float64_is_rejected_not_a_crash(tmp_path, entry: float) -> None:
    """A certificate's Y with an entry ±1e308 (finite JSON): the exact sums are past float64, and formatting them
    for the message crashed verify (OverflowError, exit 3); it is a failed check (exit 1)."""
    import shutil
    from pathlib import Path

    from conftest import run_absorb

    src = Path(__file__).resolve().parents[1] / "counterexamples" / "relu2_linear_generic.npz"
    shutil.copy(src, tmp_path / "m.npz")
    assert run_absorb("check", str(tmp_path / "m.npz"), "--certificate", str(tmp_path / "c.json"), "-q").returncode == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["blocks"][0]["argument"]["Y"][0][1] = entry
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = run_absorb("verify", str(tmp_path / "c.json"), str(tmp_path / "m.npz"))
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stdout + r.stderr
