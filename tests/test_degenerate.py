"""The canonical-form decision (absorb.engine.degenerate) against an independent brute force.

Brute force (``_brute``): a residual-free block equal to f has its kinks (ReLU) or even
parts (GELU/SiLU) on f's lines, so its units point along ±(f's line directions) — for ReLU
any positive scale, for the even family exactly ±u — and any other units can only add a
linear map, two units per rank. For every set S of such directions (|S| ≤ N) we fit f on
random inputs by least squares with p = ⌊(N − |S|)/2⌋ extra rank (reduced-rank regression,
a closed-form global optimum). f is a block of width N iff some fit is exact. This shares
no code with the procedure (no δ, no B, no projectors, no exact arithmetic).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb import Block, decide, get_activation
from absorb.engine.degenerate import canonical_form, decide_degenerate
from absorb.engine.verdict import Theorem, Verdict
from absorb.engine.witness import eval_threshold, evaluation_error

RELU = get_activation("relu")


def _directions(U: np.ndarray, family: str) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for u in U:
        if not np.any(u):
            continue
        v = u / np.linalg.norm(u) if family == "relu" else u.copy()
        for s in (1.0, -1.0):
            if not any(np.allclose(s * v, w, atol=1e-12) for w in out):
                out.append(s * v)
    return out


def _brute(block: Block, width: int, *, family: str, seed: int = 1) -> float:
    """min over direction sets of the relative least-squares error of fitting f."""
    rng = np.random.default_rng(seed)
    d = block.d
    X = rng.standard_normal((40 * (d + 2), d))
    Y = block(X)
    dirs = _directions(block.W_up, family)
    act = block.activation
    best = np.inf
    for k in range(min(width, len(dirs)) + 1):
        p = (width - k) // 2
        for S in itertools.combinations(range(len(dirs)), k):
            F = act(X @ np.array([dirs[i] for i in S]).T) if S else np.zeros((len(X), 0))
            if F.shape[1]:
                Qf, _ = np.linalg.qr(F)
                Yt, Xt = Y - Qf @ (Qf.T @ Y), X - Qf @ (Qf.T @ X)
            else:
                Yt, Xt = Y, X
            if p > 0:
                coef = np.linalg.lstsq(Xt, Yt, rcond=None)[0]
                fit = Xt @ coef
                Uf, s, Vt = np.linalg.svd(fit, full_matrices=False)
                fit = (Uf[:, :p] * s[:p]) @ Vt[:p]
                res = Yt - fit
            else:
                res = Yt
            best = min(best, float(np.linalg.norm(res) / (np.linalg.norm(Y) + 1e-300)))
            if best < 1e-9:
                return best
    return best


def _block(U, D, M, act) -> Block:
    return Block(np.asarray(U, float), np.asarray(D, float), act, skip=None if M is None else np.asarray(M, float))


@st.composite
def degenerate_blocks(draw, act_name: str = "relu"):
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 5))
    ints = st.integers(-2, 2)
    U = np.array([[draw(ints) for _ in range(d)] for _ in range(n)], float)
    D = np.array([[draw(ints) for _ in range(n)] for _ in range(d)], float)
    # make degeneracy frequent: copy rows up to a scale (±1, ±2, 1/2 for ReLU) or zero them
    for i in range(1, n):
        how = draw(st.sampled_from(["keep", "keep", "copy", "zero"]))
        if how == "copy":
            j = draw(st.integers(0, i - 1))
            U[i] = U[j] * draw(st.sampled_from([1.0, -1.0, 2.0, -0.5] if act_name == "relu" else [1.0, -1.0]))
        elif how == "zero":
            U[i] = 0
    M = None if draw(st.booleans()) else np.array([[draw(ints) for _ in range(d)] for _ in range(d)], float)
    return _block(U, D, M, get_activation(act_name))


def _agree(block: Block, width: int, family: str) -> None:
    dd = decide_degenerate(block, width=width)
    err = _brute(block, width, family=family)
    assert dd.verdict is not Verdict.UNKNOWN, dd.reason
    if dd.verdict is Verdict.ABSORBABLE:
        w = dd.witness
        assert w.exact and w.block.n == width and not np.any(w.block.M)
        e2, _ = evaluation_error(block, w.block, block.d, seed=7)
        assert e2 <= eval_threshold(1e-9, width)
        assert err < 1e-7, f"procedure says absorbable, brute force best error {err:.3g}"
    else:
        assert err > 1e-6, f"procedure says not absorbable, brute force fits with error {err:.3g}"


@settings(max_examples=3 * settings.default.max_examples)  # the main relu property: three times the profile's count
@given(degenerate_blocks("relu"))
def test_relu_matches_brute_force(block: Block) -> None:
    if not np.any(block.M) and block.skip is not None:
        return
    _agree(block, block.n, "relu")


@settings(max_examples=2 * settings.default.max_examples)  # twice the profile's count
@given(degenerate_blocks("gelu"))
def test_gelu_matches_brute_force(block: Block) -> None:
    _agree(block, block.n, "even")


@given(degenerate_blocks("relu"), st.integers(0, 3))
def test_relu_wider_matches_brute_force(block: Block, extra: int) -> None:
    _agree(block, block.n + extra, "relu")


def test_theory_example_collinear_antipodal() -> None:
    """theory.md §3: rows e1, −e1, e2 and columns (2,3), (5,7), (0,−1): absorbable, no S."""
    b = _block([[1, 0], [-1, 0], [0, 1]], [[2, 5, 0], [3, 7, -1]], None, RELU)
    dec = decide(b)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.CANONICAL_FORM
    assert dec.blocks[0].witness.exact


@pytest.mark.parametrize("spec", ["expr:Max(0, x)", "expr:max(x, 0)", "expr:(x + Abs(x))/2", "expr:(x + sqrt(x**2))/2",
                                  "expr:Max(0, 2*x)/2"])
def test_relu_written_as_an_expression_gets_the_canonical_form_too(spec: str) -> None:
    """ReLU spelled as an expression — the same sympy form, or another one proved positively homogeneous of
    degree 1 with σ(1) = 1 and σ(−1) = 0 — is ReLU: the canonical form's witness gets the same rigorous rounding
    bound (σ's Lipschitz constant 1, derived from its pieces), and the checker accepts the certificate."""
    from absorb.certificate import build_certificate
    from absorb.verify.checker import verify_certificate

    b = _block([[1, 0], [-1, 0], [0, 1]], [[2, 5, 0], [3, 7, -1]], None, get_activation(spec))
    dec = decide(b)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.CANONICAL_FORM, dec.reason
    assert verify_certificate(build_certificate(dec, b, seed=0).to_json(), b).accepted


@pytest.mark.parametrize("spec", ["expr:(x + Abs(x))/2*(1 + 10**-30)", "expr:Max(x, x/100)", "expr:Abs(x)",
                                  "expr:Max(0, x)**2", "expr:Max(0, x) + x/10**40"])
def test_what_is_not_relu_is_not_taken_for_it(spec: str) -> None:
    """Near misses (σ(1) ≠ 1 by 10⁻³⁰, leaky, |z|, a square, a tiny linear part) are not ReLU: the index-set
    necessity and the canonical form are not cited for them."""
    from absorb.engine.degenerate import is_relu

    assert not is_relu(get_activation(spec))
    dec = decide(_block([[1, 0], [-1, 0], [0, 1]], [[2, 5, 0], [3, 7, -1]], None, get_activation(spec)))
    assert dec.theorem is not Theorem.CANONICAL_FORM, dec.reason
    assert dec.verdict is Verdict.UNKNOWN or dec.theorem is not Theorem.INDEX_SET, dec.reason


@pytest.mark.parametrize("a,b", [(0.0, 0.0), (1.0, -3.0), (2.0, 5.0), (-1.0, 0.5)])
def test_d1_relu_always_absorbable_from_two_units(a: float, b: float) -> None:
    """d = 1, n ≥ 2: f = (A+1)ReLU(x) + (B−1)ReLU(−x) is always a width-2 block (theory.md §3)."""
    blk = _block([[1.0], [-1.0]], [[a, b]], None, RELU)
    assert decide_degenerate(blk).verdict is Verdict.ABSORBABLE


def test_d1_single_unit() -> None:
    """d = 1, n = 1: absorbable iff w·u = −1 (u > 0) or the negative-side analogue."""
    assert decide_degenerate(_block([[2.0]], [[-0.5]], None, RELU)).verdict is Verdict.ABSORBABLE
    assert decide_degenerate(_block([[-2.0]], [[0.5]], None, RELU)).verdict is Verdict.ABSORBABLE  # x + 0.5 ReLU(−2x)
    assert decide_degenerate(_block([[2.0]], [[1.0]], None, RELU)).verdict is Verdict.NOT_ABSORBABLE


def test_a_canonical_form_witness_answers_allow_biases_too() -> None:
    """A bias-free f whose canonical form gives a (bias-free) witness is absorbable in the class
    with biases as well (biases 0): --allow-biases gave `unknown` while `--width n` answered
    `absorbable` in the same run. Its not_absorbable stays bias-free-only (the class with biases
    is then left to the other arguments)."""
    f = _block([[0.0], [2.0]], [[2.0, -1.0]], None, RELU)  # unit 0 dead: f(x) = x − ReLU(2x) = −ReLU(x) − ReLU(−x)
    for allow in (False, True):
        dec = decide(f, allow_biases=allow)
        assert dec.verdict is Verdict.ABSORBABLE and dec.blocks[0].theorem is Theorem.CANONICAL_FORM, (allow, dec.reason)
        assert dec.blocks[0].residual_free_class.biases is allow
    g = _block([[2.0]], [[1.0]], None, RELU)  # not absorbable bias-free; with biases: not by the canonical form
    assert decide(g).blocks[0].theorem is Theorem.CANONICAL_FORM
    assert decide(g, allow_biases=True).blocks[0].theorem is not Theorem.CANONICAL_FORM


def test_dead_units_give_room() -> None:
    """Generic 2-d block plus two dead units: the spare pair realises the missing rank."""
    rng = np.random.default_rng(3)
    U = np.vstack([rng.integers(-3, 4, (2, 2)), np.zeros((2, 2))]).astype(float)
    D = np.hstack([rng.integers(-3, 4, (2, 2)), np.zeros((2, 2))]).astype(float)
    dd = decide_degenerate(_block(U, D, None, RELU))
    assert dd.verdict is Verdict.ABSORBABLE
    assert dd.canonical.dead == (2, 3)


def test_nondegenerate_reduces_to_index_set() -> None:
    """Nothing degenerate: the procedure agrees with the index-set condition."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        U = rng.integers(-3, 4, (4, 2)).astype(float)
        D = rng.integers(-3, 4, (2, 4)).astype(float)
        cf = canonical_form(_block(U, D, None, RELU))
        if cf.m < 4 or cf.dead:
            continue
        has_S = any(np.array_equal(D[:, list(S)] @ U[list(S)], -np.eye(2)) for r in range(5) for S in itertools.combinations(range(4), r))
        v = decide_degenerate(_block(U, D, None, RELU)).verdict
        assert (v is Verdict.ABSORBABLE) == has_S


def test_silu_and_singular_skip() -> None:
    """SiLU, duplicated ±u, singular M: decided, and every absorbable verdict carries a checked witness."""
    silu = get_activation("silu")
    U = [[1.0, 2.0], [-1.0, -2.0], [0.0, 1.0]]
    D = [[1.0, 0.0, 0.0], [0.0, 1.0, -1.0]]
    blk = _block(U, D, [[1.0, 1.0], [1.0, 1.0]], silu)
    dd = decide_degenerate(blk)
    assert dd.verdict is not Verdict.UNKNOWN
    assert (dd.verdict is Verdict.ABSORBABLE) == (_brute(blk, 3, family="even") < 1e-7)


def test_unsupported_is_unknown() -> None:
    blk = _block([[1.0, 0.0]], [[1.0], [0.0]], None, get_activation("tanh"))
    assert decide_degenerate(blk).verdict is Verdict.UNKNOWN
    blk = Block(np.ones((1, 2)), np.ones((2, 1)), RELU, b_up=np.ones(1))
    assert decide_degenerate(blk).verdict is Verdict.UNKNOWN


def test_budget_gives_unknown() -> None:
    rng = np.random.default_rng(0)
    blk = _block(rng.standard_normal((12, 3)), rng.standard_normal((3, 12)), None, RELU)
    dd = decide_degenerate(blk, width=15, budget=100)
    assert dd.verdict is Verdict.UNKNOWN and "budget" in dd.reason


@pytest.mark.slow
def test_monte_carlo_against_brute_force() -> None:
    """600 seeded small-integer instances (ReLU and GELU, widths n..n+2, M = I or an integer M):
    the procedure decides every one, and agrees with the brute force. Prints the counts
    quoted in docs/degenerate.md (run with -s)."""
    import collections

    rng = np.random.default_rng(0)
    cnt: collections.Counter = collections.Counter()
    for name, fam in (("relu", "relu"), ("gelu", "even")):
        for _ in range(300):
            d, n = int(rng.integers(1, 4)), int(rng.integers(1, 6))
            U = rng.integers(-2, 3, (n, d)).astype(float)
            D = rng.integers(-2, 3, (d, n)).astype(float)
            for i in range(1, n):
                c = rng.integers(0, 4)
                if c == 2:
                    U[i] = U[rng.integers(0, i)] * rng.choice([1, -1, 2, -0.5] if fam == "relu" else [1, -1])
                if c == 3:
                    U[i] = 0
            M = None if rng.random() < 0.5 else rng.integers(-2, 3, (d, d)).astype(float)
            if M is not None and not M.any():
                continue
            W = n + int(rng.integers(0, 3))
            blk = _block(U, D, M, get_activation(name))
            dd = decide_degenerate(blk, width=W)
            e = _brute(blk, W, family=fam)
            cnt[(name, dd.verdict.value, "brute-fits" if e < 1e-7 else "brute-fails")] += 1
            assert dd.verdict is not Verdict.UNKNOWN
            assert (dd.verdict is Verdict.ABSORBABLE) == (e < 1e-7), (U, D, M, W, e)
    print(dict(cnt))


# ---- one semantics: absorbable within the tolerance, on this route as on the index-set route --
ROUNDED = np.array([[1.0, 0], [-1, 0], [0, 3]])  # line e1 needs two units; line e2 needs w = −1/3 exactly


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
def test_feasible_up_to_rounding_is_absorbable_within_tolerance(act: str) -> None:
    """The stored −1/3 is off by 2^-54 relative: exactly not a width-3 block (5 units needed),
    within the tolerance one. Before: unknown "ill-conditioned"; now absorbable within tol,
    with the constructed block, its measured error, and exact = False."""
    b = Block(ROUNDED, np.array([[1.0, 3, 0], [0, 0, -1 / 3]]), get_activation(act))
    dd = decide_degenerate(b)
    assert dd.verdict is Verdict.ABSORBABLE, dd.reason
    assert dd.outcome.status == "none" and dd.outcome.best.value == 5  # the exact answer is still reported
    w = dd.witness
    assert w.exact is False and w.block.n == 3 and not np.any(w.block.M) and w.residual <= 1e-9
    assert w.eval_error <= eval_threshold(1e-9, 3)
    e2, _ = evaluation_error(b, w.block, b.d, seed=5)
    assert e2 <= eval_threshold(1e-9, 3)
    assert "within the tolerance" in dd.reason
    dec = decide(b)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem is Theorem.CANONICAL_FORM


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_far_from_feasible_stays_not_absorbable(act: str) -> None:
    """Off by 1e-6 (≫ tol): the near choice is not within the tolerance: not absorbable (and off by 1e-10 at 1e-12)."""
    b = Block(ROUNDED, np.array([[1.0, 3, 0], [0, 0, -1 / 3 + 1e-6]]), get_activation(act))
    assert decide_degenerate(b).verdict is Verdict.NOT_ABSORBABLE
    near = Block(ROUNDED, np.array([[1.0, 3, 0], [0, 0, -1 / 3 + 1e-12]]), get_activation(act))
    dd = decide_degenerate(near)
    assert dd.verdict is Verdict.ABSORBABLE and dd.witness.exact is False
    # off by 1e-10 at τ = 1e-12: farther than the distance bar √d·(τ + allowance)·(1 + K)/‖M‖_F (K: f's gain)
    off = Block(ROUNDED, np.array([[1.0, 3, 0], [0, 0, -1 / 3 + 1e-10]]), get_activation(act))
    assert decide_degenerate(off, tol=1e-12).verdict is Verdict.NOT_ABSORBABLE


def test_a_failed_flip_on_degenerate_weights_falls_back_to_the_canonical_form() -> None:
    """(red team 45c/02) Degenerate bias-free ReLU weights (units on two lines, a dead unit, the pairs ±e_j carrying −I)
    with M = I + 2·10⁻⁹·a bᵀ: the search proposes S = the pairs, whose flip misses by 2·10⁻⁹ > τ; where the search does not
    decide the canonical form is asked, and it must be asked here too — f is a bias-free block of its width (the pairs'
    units realise M's linear part), absorbable, and its certificate verifies."""
    from absorb.certificate import build_certificate
    from absorb.verify.checker import verify_certificate

    rng = np.random.default_rng(1)
    for _ in range(2):  # (the red team's generator: its second block)
        d = int(rng.integers(3, 6))
        m = int(rng.integers(1, d + 1))
        L = rng.standard_normal((m, d))
        if rng.random() < 0.5:
            L = np.round(L * 2) / 2 + (L == 0)
        units = [L[line] * rng.choice([-1.5, -1, 1, 2]) for line in range(m) for _ in range(int(rng.integers(1, 3)))]
        U = np.array(units)
        D = rng.standard_normal((d, len(U)))
        if rng.random() < 0.3:
            D[:, rng.integers(len(U))] = 0
        eps = float(rng.choice([0, 3e-10, 8e-10, 2e-9]))
        U, D = np.vstack([U, np.eye(d), -np.eye(d)]), np.hstack([D, -np.eye(d), np.eye(d)])
        M = np.eye(d) + eps * np.outer(rng.standard_normal(d), rng.standard_normal(d))
        rng.choice(["relu", "gelu"])
    assert (d, U.shape[0], eps) == (5, 14, 2e-9)
    blk = Block(U, D, get_activation("relu"), skip=M)
    dec = decide(blk, timeout=60)
    assert dec.verdict is Verdict.ABSORBABLE and dec.theorem.value == "canonical-form", dec.blocks[0].reason
    rep = verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
