"""Shifted flips and the Lipschitz constant of a piecewise-linear σ written as an expression.

(A) σ(z) − σ(−z − 2s) = c·(z + s) for σ = τ(· + s) with τ's flip identity (``Max(0, x − 3/2)``):
    proved with an exact s (absorb.symbolic.shift), and the index-set witness with the shifted
    biases b'_up,i = −b_up,i − 2s is built and checked like any flip witness; a wrong s fails.
(B) ReLU written ``expr:(x+Abs(x))/2`` or ``expr:Max(0,x)``: a derived Lipschitz constant and a
    bound on its float64 evaluation give the witness check the rounding allowance the built-in
    ReLU gets (the cancelling flip of test_witness_rounding.py is absorbable, and verifies).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.engine.witness import check_flip_witness, eval_threshold, evaluation_error, expression_sigma, flip_block
from absorb.model.activations import X
from absorb.symbolic.properties import Status
from absorb.symbolic.shift import _shifted_flip, expression_bounds, shifted_flip
from absorb.verify.checker import verify_certificate

TOL = 1e-9


# ---- (A) the identity ------------------------------------------------------------------
@pytest.mark.parametrize("text, c, s", [
    ("Max(0, x - 3/2)", 1, Fraction(-3, 2)),
    ("Max(0, x + 1/3)", 1, Fraction(1, 3)),
    ("(x+1)/(1+exp(-(x+1)))", 1, Fraction(1)),
    ("log(1+exp(x-2))", 1, Fraction(-2)),
    ("2*Max(0, x - 1) + Min(0, x - 1)", 3, Fraction(-1)),
])
def test_shifted_flip_is_proved_with_an_exact_shift(text: str, c: int, s: Fraction) -> None:
    pr = shifted_flip(get_activation("expr:" + text))
    assert pr.proved, pr.statement
    assert pr.value["c"] == c and pr.value["s"] == sp.Rational(s.numerator, s.denominator)
    # the identity itself, at exact points (not how it is proved: a cross-check)
    e = get_activation("expr:" + text).expr
    for z in (sp.Rational(-7, 3), 0, sp.Rational(5, 2), 11):
        lhs = e.subs(X, z) - e.subs(X, -z - 2 * pr.value["s"])
        assert sp.simplify(lhs - c * (z + pr.value["s"])) == 0


@pytest.mark.parametrize("text, s", [("Max(0, x - sqrt(2))", -sp.sqrt(2)), ("Max(0, x + pi)/2 + Min(0, x + pi)/4", sp.pi),
                                     ("log(1 + exp(x - sqrt(3)))", -sp.sqrt(3))])
def test_shifted_flip_is_proved_with_an_irrational_shift(text: str, s: sp.Expr) -> None:
    """An irrational s is proved the same way (its value feeds the tolerance screens only: no float64 witness
    carries it, so the index-set witness needs a rational one)."""
    from absorb.engine.results import _fraction

    pr = shifted_flip(get_activation("expr:" + text))
    assert pr.proved, pr.statement
    assert sp.simplify(pr.value["s"] - s) == 0 and _fraction(pr, "s") is None


@pytest.mark.parametrize("text", ["relu", "gelu", "tanh", "expr:Max(0,x-1)+Min(0,x+1)/3", "expr:Max(0,x)+x**2", "expr:x"])
def test_shifted_flip_is_not_claimed_otherwise(text: str) -> None:
    """No shift (s = 0: the plain identity's case), no candidate, or the candidate's identity refuted."""
    act = get_activation(text)
    assert not shifted_flip(act).proved
    if text == "expr:Max(0,x-1)+Min(0,x+1)/3":
        assert _shifted_flip(act.expr).status is Status.REFUTED


# ---- (A) the witness ---------------------------------------------------------------------
def _planted(act: str) -> Block:
    """The red-team block: W_down[:,S] W_up[S,:] = −I for S = {0, 1}, biases everywhere."""
    U = np.array([[1.0, 0], [0, 1], [1, 2], [2, -1]])
    D = np.array([[-1, 0, 0.5, -0.25], [0, -1, 0.75, 1.5]])
    return Block(U, D, get_activation(act), b_up=np.array([0.3, -0.7, 1.1, 0.2]), b_down=np.array([0.1, 0.2]),
                 skip=np.eye(2), name="b")


@pytest.mark.parametrize("act, s", [("expr:Max(0, x - 3/2)", Fraction(-3, 2)), ("expr:Max(0, x + 1/3)", Fraction(1, 3))])
def test_shifted_flip_witness_is_checked_and_a_wrong_shift_fails(act: str, s: Fraction) -> None:
    blk = _planted(act)
    w, ok = check_flip_witness(blk, (0, 1), Fraction(1), tol=TOL, seed=0, s=s)
    assert ok, w.description
    assert w.eval_error <= eval_threshold(TOL, blk.n) and w.bound is not None
    g = w.block
    assert np.array_equal(g.W_up[:2], -blk.W_up[:2]) and np.array_equal(g.W_up[2:], blk.W_up[2:])
    assert g.skip is not None and not np.any(g.skip)
    X_ = np.random.default_rng(0).standard_normal((50, 2)) * 10
    assert np.abs(blk(X_) - g(X_)).max() <= 1e-12 * (1 + np.abs(X_).max())
    for bad in (s + Fraction(1, 8), -s, Fraction(0)):  # a tampered shift, and the unshifted flip
        _, ok = check_flip_witness(blk, (0, 1), Fraction(1), tol=TOL, seed=0, s=bad)
        assert not ok, bad


def test_shifted_flip_of_a_bias_free_block_gets_biases() -> None:
    blk = _planted("expr:Max(0, x - 3/2)").replace(b_up=None, b_down=None)
    g = flip_block(blk, (0, 1), Fraction(1), Fraction(-3, 2))
    assert g.b_up is not None and list(g.b_up) == [3.0, 3.0, 0.0, 0.0]
    w, ok = check_flip_witness(blk, (0, 1), Fraction(1), tol=TOL, seed=0, s=Fraction(-3, 2))
    assert ok, w.description


# ---- (B) expression σ: Lipschitz constant and evaluation error ---------------------------
@pytest.mark.parametrize("text, L", [("(x+Abs(x))/2", 1), ("Max(0, x)", 1), ("Max(0, x - 3/2)", 1), ("Min(0, x)/100 + Max(0, x)", Fraction(101, 100)),
                                     ("-3*Abs(x - 1/3)", 3), ("x**2", None), ("exp(x)", None), ("x*Abs(x)", None)])
def test_expression_bounds(text: str, L: Fraction | int | None) -> None:
    got = expression_bounds(get_activation("expr:" + text).expr)
    assert (got is None) if L is None else (got is not None and got[0] == L)


@pytest.mark.parametrize("text", ["(x+Abs(x))/2", "Max(0, x - 3/2)", "Max(0, x - 1/3) + Min(0, 7*x/10)", "-3*Abs(x - 1/3) + 1/7"])
def test_expression_evaluation_error_is_bounded(text: str) -> None:
    """|σ̂(z) − σ(z)| ≤ a|z| + b at float points, σ(z) exact (rationals)."""
    act = get_activation("expr:" + text)
    _L, a, b = expression_bounds(act.expr)
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-20, 20, 200), [0.0, 1 / 3, -1 / 3, 1.5]])
    got = act(z)
    for zi, hi in zip(z.tolist(), got.tolist()):
        exact = act.expr.subs(X, sp.Rational(Fraction(zi).numerator, Fraction(zi).denominator))
        err = abs(Fraction(hi) - Fraction(int(exact.p), int(exact.q)))
        assert err <= Fraction(a) * abs(Fraction(zi)) + Fraction(b), (zi, hi, exact)


def _cancelling(act: str) -> Block:
    """test_witness_rounding's exact flip whose float64 evaluation sums terms of 2^42."""
    B = 2.0**40
    U = np.array([[3.0, 1], [3, -1], [3, 2], [6, 2]])
    D = np.array([[B, 0, -2 * B - 4, 1], [0, B, -4 * B, 0]])
    return Block(U, D, get_activation(act), skip=-(D @ U))


@pytest.mark.parametrize("act", ["expr:(x+Abs(x))/2", "expr:Max(0,x)"])
def test_relu_written_as_an_expression_gets_the_rounding_allowance(act: str) -> None:
    blk = _cancelling(act)
    assert expression_sigma(blk.activation) is not None
    dec = decide(blk, seed=0, timeout=30)
    assert dec.verdict.value == "absorbable", dec.reason
    rep = verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked
    # a witness one weight of which is off by 1e-6 still fails
    g = flip_block(blk, (0, 1, 2, 3), Fraction(1))
    Wu = g.W_up.copy()
    Wu[0, 0] *= 1 + 1e-6
    err, m = evaluation_error(blk, g.replace(W_up=Wu), blk.d, seed=0, accept=eval_threshold(TOL, blk.n))
    assert m > 0 and err > 100 * eval_threshold(TOL, blk.n)


def test_generic_expression_block_is_unchanged() -> None:
    rng = np.random.default_rng(3)
    blk = Block(rng.standard_normal((5, 3)), rng.standard_normal((3, 5)), get_activation("expr:(x+Abs(x))/2"), skip=np.eye(3))
    assert decide(blk, seed=0, timeout=30).verdict.value == decide(blk.replace(activation=get_activation("relu")), seed=0,
                                                                      timeout=30).verdict.value == "not_absorbable"


# ---- (A) the checker's own route -----------------------------------------------------------
@pytest.mark.parametrize("text, s, c", [("Max(0, x - 3/2)", sp.Rational(-3, 2), 1), ("Max(0, x + 1/3)", sp.Rational(1, 3), 1),
                                        ("2*Max(0, x - 1) + Min(0, x - 1)", sp.Integer(-1), 3),
                                        ("Max(0, x - 3/2)", sp.Rational(-11, 8), None), ("Max(0, x - 3/2)", sp.Rational(3, 2), None),
                                        ("Max(0, x - 3/2)", sp.Integer(0), None)])
def test_checker_rederives_the_shifted_identity_and_refuses_a_tampered_shift(text: str, s: sp.Rational, c: int | None) -> None:
    from absorb.verify._symbolic import shifted_flip_constant

    got = shifted_flip_constant(get_activation("expr:" + text).expr, s)
    assert (got is None) if c is None else got == c


@pytest.mark.parametrize("e, L", [
    (sp.Max(0, X - sp.Rational(3, 2)), 1), ((X + sp.Abs(X)) / 2, 1), (sp.Max(0, X - 1) + sp.Min(0, X + 1) / 3, 1),
    (-3 * sp.Abs(X - sp.Rational(1, 3)) + sp.Rational(1, 7), 3), (X, 1),
    (X**2, None), (sp.exp(X), None), (sp.Integer(0) ** sp.Max(0, X), None),
    (sp.Piecewise((X, X > 1), (0, True)), None),  # a jump at 1: no Lipschitz constant
    (sp.Piecewise((X, X > 1), (1, True)), 1),
])
def test_checker_lipschitz_of_a_piecewise_linear_sigma(e: sp.Expr, L: int | None) -> None:
    from absorb.verify._pieces import pl_lipschitz

    assert pl_lipschitz(e, X) == L


def test_checker_rebuilds_the_shifted_witness_and_bounds_its_constant_error() -> None:
    """The checker's own rebuild equals the producer's arrays; its constant error counts the
    rounding of the new biases through its own Lipschitz constant (inf without one)."""
    from absorb.verify._symbolic import shifted_bias_error, shifted_flip_block

    blk = _planted("expr:Max(0, x - 3/2)")
    s = Fraction(-3, 2)
    mine = shifted_flip_block(blk, np.array([0, 1]), Fraction(1), s)
    theirs = flip_block(blk, (0, 1), Fraction(1), s)
    for k in ("W_up", "W_down", "b_up", "b_down"):
        assert np.array_equal(getattr(mine, k), getattr(theirs, k)), k
    e = shifted_bias_error(blk, mine, (0, 1), Fraction(1), s)
    assert 0 < e < 1e-15  # 0.3 − 3 and −0.7 − 3... round: L·Σ|w_i||η_i|
    exact = blk.replace(b_up=np.array([0.25, -0.75, 1.1, 0.2]), b_down=np.array([0.125, 0.25]))  # dyadic: no rounding
    assert shifted_bias_error(exact, shifted_flip_block(exact, np.array([0, 1]), Fraction(1), s), (0, 1), Fraction(1), s) == 0
    smooth = _planted("expr:(x+1)/(1+exp(-(x+1)))")
    g = shifted_flip_block(smooth, np.array([0, 1]), Fraction(1), Fraction(1))
    assert shifted_bias_error(smooth, g, (0, 1), Fraction(1), Fraction(1)) == float("inf")


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "leaky_relu",
                                 "expr:x + Abs(x)/10**7", "expr:Max(0, x)", "expr:Max(x, x/10) + Abs(x)/3", "expr:Max(x, 2*x)"])
def test_even_growth_bounds_the_even_part(act: str) -> None:
    """|σ(z) − (c/2)·z| ≤ K|z| at many z (c from σ(z) − σ(−z) = c·z): the bound the tolerance
    screen uses for the distance of f from a linear map that antipodal pairs realise."""
    from absorb.engine.witness import sigma_even_growth, sigma_lipschitz
    from absorb.symbolic._core import get

    a = get_activation(act)
    c = Fraction(str(get(a, "flip_identity[ungated]").value["c"]))
    K = sigma_even_growth(a, c)
    assert K is not None and K <= sigma_lipschitz(a)  # never weaker than |σ(z)| ≤ L|z|
    z = np.concatenate([np.linspace(-30, 30, 6001), np.geomspace(1e-8, 1e8, 400), -np.geomspace(1e-8, 1e8, 400)])
    z = z[z != 0]
    got = np.abs(np.asarray(a(z), dtype=np.float64) - float(c) / 2 * z) / np.abs(z)
    assert np.all(got <= K * (1 + 1e-9) + 1e-12), (float(np.max(got)), K)


@pytest.mark.parametrize(("text", "c", "K"), [("Max(x, 2*x)", 3, Fraction(1, 2)), ("Max(0, x)", 1, Fraction(1, 2)),
                                              ("Max(x, x/10) + Abs(x)/3", Fraction(11, 10), Fraction(47, 60))])
def test_even_growth_is_the_pieces_largest_slope(text: str, c: Fraction, K: Fraction) -> None:
    """σ − (c/2)x written Max(x, 2x) − 3x/2 has no structural bound below 2; its pieces' slopes ±1/2
    are the exact bound (the checker derives the same by its own pieces, and rejected the producer's
    not_absorbable of a block within the tolerance of (I + 1.5·W_down W_up)x)."""
    from absorb.symbolic.shift import even_growth

    assert even_growth(get_activation("expr:" + text).expr, Fraction(c)) == K


def test_even_growth_of_a_long_sum_of_switches_is_quick_and_exact() -> None:
    """Σ_j Max(x, (j+2)x), 16 terms: piecewise_fold would multiply out 2^16 branches; σ is positively
    homogeneous of degree 1, so σ(z) − 84z is too and its bound is max(|σ(1) − 84|, |σ(−1) + 84|) = 68."""
    from absorb.symbolic.shift import even_growth

    e = get_activation("expr:" + " + ".join(f"Max(x, {j + 2}*x)" for j in range(16))).expr
    assert even_growth(e, Fraction(168), homogeneous=True) == 68


@pytest.mark.parametrize("text, s", [
    ("Max(0, x - 6145/4096) + log(1 + (x - 6145/4096)**2)", sp.Rational(-6145, 4096)),   # σ − z grows like log |z|
    ("log(1 + exp(x - 6145/4096)) + log(1 + (x - 6145/4096)**2)", sp.Rational(-6145, 4096)),
    ("log(1 + exp(x - 1 - 2**-52))", -1 - sp.Rational(1, 2**52)),                          # no float rounding of s
])
def test_shifted_flip_is_found_where_the_asymptotic_constants_do_not_give_it(text: str, s: sp.Expr) -> None:
    """An even part of τ that grows (log(1 + y²)) leaves σ − L±z without finite limits: the candidate then comes
    from a break point or the identity's root at z = 0 (reconstructed exactly), and is proved as before. A shift
    1 + 2⁻⁵² is kept exact (nsimplify would round it to 1 and the identity would fail: no REFUTED for that)."""
    pr = shifted_flip(get_activation("expr:" + text))
    assert pr.proved, pr.statement
    assert sp.simplify(pr.value["s"] - s) == 0


@pytest.mark.parametrize("text, s", [("Max(0, x - 2**27)", -2**27), ("log(1 + exp(x - log(2)))", -sp.log(2)),
                                     ("Max(0, x - 6145/4096) + log(1 + (x - 6145/4096)**2)", sp.Rational(-6145, 4096)),
                                     ("log(1 + exp(x - 3/2048))", sp.Rational(-3, 2048))])
def test_the_checkers_screen_finds_the_shift_by_its_own_route(text: str, s: sp.Expr) -> None:
    """The checker's candidates: its float estimates at several scales (2²⁷ is flat at 10⁶), the identity's root at
    z = 0 at 50 digits, reconstructed as a rational or in common constants (log 2 leaves σ: exp(x − log 2) is folded
    into exp(x)/2), and σ's break points — each then proved exactly. An irrational s is not used where f(0) = 0."""
    from absorb.verify._shift import _flip_or_shift

    c, got = _flip_or_shift(get_activation("expr:" + text), True)
    assert c == 1 and abs(float(got) - float(s)) <= 1e-12 * (1 + abs(float(s)))
    if not isinstance(s, sp.Rational) and not isinstance(s, int):
        assert _flip_or_shift(get_activation("expr:" + text), True, f_zero=True) == (None, None)
