"""absorb.symbolic.growth: asymptotic slopes, parity, linear and exponential form,
boundedness. Expected values are exact; refutations carry witnesses; near-misses are never
proved; the interval bound encloses every sampled value."""

from __future__ import annotations

import json

import pytest
import sympy as sp
from hypothesis import example, given
from hypothesis import strategies as st

from absorb._errors import InvalidInput
from absorb.model.activations import X, get_activation
from absorb.symbolic import growth
from absorb.symbolic.growth import asymptotic_slopes, bounded_on_reals, exponential_form, linear_form, parity
from absorb.symbolic.properties import Status

R = sp.Rational
ALL = (asymptotic_slopes, parity, linear_form, exponential_form, bounded_on_reals)


def act(spec: str):
    return get_activation(spec if spec in ("relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "softplus", "leaky_relu",
                                           "identity", "tanh", "sigmoid") else "expr:" + spec)


# ------------------------------------------------------------------ asymptotic slopes --

SLOPES = [
    ("relu", 1, 0), ("gelu", 1, 0), ("gelu_tanh", 1, 0), ("silu", 1, 0), ("quick_gelu", 1, 0), ("softplus", 1, 0),
    ("Max(0,x)+Min(0,exp(x)-1)", 1, 0),  # ELU
    ("x*tanh(log(1+exp(x)))", 1, 0),  # Mish
    ("leaky_relu", 1, R(1, 100)), ("identity", 1, 1),
    ("tanh", 0, 0), ("sigmoid", 0, 0), ("erf(x)", 0, 0), ("Abs(x)", 1, -1),
    ("x*(1+erf(x/sqrt(2)))/2", 1, 0),  # GELU spelled as a user expression
    ("1-0**Max(0,x)", 0, 0),  # a step function: finite everywhere, not continuous
]


@pytest.mark.parametrize("spec,lp,lm", SLOPES)
def test_asymptotic_slopes_exact(spec: str, lp, lm) -> None:
    pr = asymptotic_slopes(act(spec))
    assert pr.status is Status.PROVED, pr.statement
    v = pr.value
    assert v["L_plus"] == lp and v["L_minus"] == lm
    assert v["a"] == sp.Integer(lp) - sp.sympify(lm) and v["b"] == lm
    for k in ("L_plus", "L_minus", "a", "b"):
        assert isinstance(v[k], sp.Rational), (k, v[k])  # exact, never a Float
    assert f"a = {v['a']}, b = {v['b']}" in pr.statement and "ReLU(z)" in pr.statement
    assert any("finite" in s for s in pr.steps)  # the z = 0 case names the finiteness it uses


def test_leaky_slopes_give_a_and_b() -> None:
    v = asymptotic_slopes(act("leaky_relu")).value
    assert (v["a"], v["b"]) == (R(99, 100), R(1, 100))


@pytest.mark.parametrize("spec,side", [("x*sin(x)", "+"), ("x**2", "+"), ("exp(x)", "+"), ("x*(1+sin(x)/100)", "+"),
                                       ("x*log(1+x**2)", "+")])
def test_asymptotic_slopes_refuted_with_witness(spec: str, side: str) -> None:
    pr = asymptotic_slopes(act(spec))
    assert pr.status is Status.REFUTED, pr.statement
    assert pr.witness is not None and pr.witness["side"] == side
    json.dumps(pr.to_json())
    if spec in ("x*sin(x)", "x*(1+sin(x)/100)"):  # oscillation: two far-out points with different ratios
        w = pr.witness
        assert w["sigma(s2)/s2"] - w["sigma(s1)/s1"] > 0 and min(abs(w["s1"]), abs(w["s2"])) >= 10**6


def test_a_wrong_limit_is_withheld(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numeric guard: if the rules claimed a wrong limit (2 instead of 1 for ReLU at +∞),
    60-digit evaluations far out withhold the proof."""
    from absorb.symbolic import asymptotic as asy
    from absorb.symbolic import properties as props

    real = asy.limit

    def wrong(e: sp.Expr, sign: int, divide_power: int = 0) -> asy.Limit:
        if sign == 1 and divide_power == 1:
            return asy.Limit("finite", sp.Integer(2), asy.const(sp.Integer(2)))
        return real(e, sign, divide_power)

    monkeypatch.setattr(asy, "limit", wrong)
    props.clear_cache()
    try:
        pr = growth._asymptotic_slopes(get_activation("expr:Max(0, x)").expr)  # the analysis itself, patched
        assert pr.status is Status.UNKNOWN and "60-digit" in pr.statement, pr.statement
    finally:
        props.clear_cache()


def test_sympys_wrong_limit_for_a_shifted_gelu_is_not_trusted() -> None:
    """sympy 1.14: lim_{p→∞} σ(−p)/(−p) = 1 for σ = x(1 + erf(x/√2 + 1))/2; the truth is 0
    (σ(−p) → 0). The rules derive L− = 0 (erf(y) = −1 + erfc(−y), erfc exponentially small)."""
    pr = asymptotic_slopes(act("x*(1+erf(x/sqrt(2)+1))/2"))
    assert pr.status is Status.PROVED, pr.statement
    assert pr.value["L_plus"] == 1 and pr.value["L_minus"] == 0


def test_slow_convergence_is_decided_by_the_rules() -> None:
    """σ(s)/s − 1 ~ 1/log s: far too slow for samples, but the rules expand 1/log(2 + s)."""
    pr = asymptotic_slopes(act("x + x/log(2+Abs(x))"))
    assert pr.status is Status.PROVED, pr.statement
    assert pr.value["L_plus"] == 1 and pr.value["L_minus"] == 1


# ----------------------------------------------------------------------------- parity --

@pytest.mark.parametrize("spec", ["Abs(x)", "x*erf(x)", "x*sin(x)", "x**2", "cos(x)", "exp(-x**2)", "0*x"])
def test_even_proved(spec: str) -> None:
    pr = parity(act(spec))
    assert pr.status is Status.PROVED and pr.name == "even", pr.statement


@pytest.mark.parametrize("spec,diff", [("relu", -1), ("Abs(x) + x/10**9", R(-2, 10**9)), ("leaky_relu", R(-101, 100)),
                                       ("1-0**Max(0,x)", -1)])
def test_not_even_exact_witness(spec: str, diff) -> None:
    pr = parity(act(spec))
    assert pr.status is Status.REFUTED
    assert pr.witness["z"] == 1 and pr.witness["sigma(-z)-sigma(z)"] == diff


def test_not_even_numeric_witness() -> None:
    pr = parity(act("gelu"))
    assert pr.status is Status.REFUTED
    assert abs(pr.witness["sigma(-z)-sigma(z)"] + 1) < sp.Float(10) ** -40  # gelu(-1) - gelu(1) = -1 exactly


# ------------------------------------------------------------------------ linear form --

@pytest.mark.parametrize("spec,c", [("2*x", 2), ("Max(0,x) - Max(0,-x)", 1), ("identity", 1), ("x/3", R(1, 3)),
                                    ("0*x", 0), ("Abs(x) - Abs(x) + 5*x", 5)])
def test_linear_proved(spec: str, c) -> None:
    pr = linear_form(act(spec))
    assert pr.status is Status.PROVED and pr.name == "linear"
    assert pr.value["c"] == c and isinstance(pr.value["c"], sp.Rational)
    assert ("σ ≡ 0" in pr.statement) == (c == 0)


@pytest.mark.parametrize("spec", ["x*(1+erf(x/sqrt(2)))/2 + sin(x)", "relu", "leaky_relu", "x + 1/10**9", "x + x**3/10**9",
                                  "Abs(x)", "tanh"])
def test_linear_near_misses_not_proved(spec: str) -> None:
    pr = linear_form(act(spec))
    assert pr.status is Status.REFUTED, pr.statement
    assert pr.witness is not None


def test_linear_witness_exact() -> None:
    pr = linear_form(act("x + 1/10**9"))
    assert pr.witness == {"z": 0, "sigma(0)": R(1, 10**9)}
    pr = linear_form(act("relu"))
    assert pr.witness["z"] == -1 and pr.witness["sigma(z)-z*sigma(1)"] == 1


# ------------------------------------------------------------------- exponential form --

@pytest.mark.parametrize("spec,A,beta,C", [("exp(x)", 1, 1, 0), ("2*exp(3*x)-1", 2, 3, -1), ("exp(x/2)", 1, R(1, 2), 0),
                                           ("5 - exp(-x)", -1, -1, 5), ("2**x", 1, sp.log(2), 0)])
def test_exponential_proved(spec: str, A, beta, C) -> None:
    pr = exponential_form(act(spec))
    assert pr.status is Status.PROVED and pr.name == "exponential", pr.statement
    assert (pr.value["A"], pr.value["beta"], pr.value["C"]) == (A, beta, C)
    assert not any(v.has(sp.Float) for v in pr.value.values())


def test_a_value_with_no_correct_digit_refutes_nothing() -> None:
    """Differences of numbers near 10¹⁷⁰ that cancel to 0 evaluate, at 50 digits, to "0.e+15" — no digit at all; read as
    a value it refuted σ = exp(100z)'s exponential form and 2cosh(100z)'s evenness. sympy's strict evaluation gives no
    value there, so nothing is refuted by it."""
    pr = exponential_form(act("exp(100*x)"))
    assert pr.status is Status.PROVED and pr.value["beta"] == 100, pr.statement
    assert parity(act("(1+exp(200*x))*exp(-100*x)")).status is not Status.REFUTED


@pytest.mark.parametrize("spec", ["exp(x) + x", "identity", "0*x", "cosh(x)", "exp(Abs(x))", "relu", "exp(x) + 10**-9*x**2",
                                  "Max(exp(x), 1)"])
def test_exponential_near_misses_not_proved(spec: str) -> None:
    pr = exponential_form(act(spec))
    assert pr.status is Status.REFUTED, pr.statement
    assert pr.witness is not None


# ------------------------------------------------------------------------ boundedness --

@pytest.mark.parametrize("spec,lo,hi", [("erf(x)", -1, 1), ("tanh", -1, 1), ("sigmoid", 0, 1), ("exp(-x**2)", 0, 1),
                                        ("1-0**Max(0,x)", 0, 1), ("sin(x)/(2+cos(x))", -1, 1), ("atan(x)", None, None),
                                        ("Min(1, Max(-1, x))", -1, 1), ("erfc(x) - 1", -1, 1)])
def test_bounded_by_interval(spec: str, lo, hi) -> None:
    pr = bounded_on_reals(act(spec))
    assert pr.status is Status.PROVED and pr.value["route"] == "interval", pr.statement
    if lo is not None:
        assert pr.value["lower"] == lo and pr.value["upper"] == hi and pr.value["bound"] == max(abs(lo), abs(hi))
    else:  # atan: an outward-rounded rational enclosure of ±π/2
        assert -sp.pi / 2 - R(1, 10**15) < pr.value["lower"] <= -sp.pi / 2 <= sp.pi / 2 <= pr.value["upper"] < sp.pi / 2 + R(1, 10**15)


def test_erf_is_proved_bounded_although_sympy_cannot_show_its_continuity() -> None:
    with pytest.raises(Exception):  # noqa: B017 - the error type sympy raises here varies by version
        sp.calculus.util.continuous_domain(sp.erf(X), X, sp.S.Reals)
    assert bounded_on_reals(act("erf(x)")).proved


@pytest.mark.parametrize("spec", ["x*exp(-x**2)", "x/(1+x**2)", "x*erf(x)*exp(-x**2)"])
def test_bounded_by_continuity(spec: str) -> None:
    pr = bounded_on_reals(act(spec))
    assert pr.status is Status.PROVED and pr.value["route"] == "continuity", pr.statement


@pytest.mark.parametrize("spec", ["relu", "x**2", "exp(x)", "identity", "tanh(x) + x/10**9", "softplus", "x*sin(x)", "gelu"])
def test_unbounded_refuted(spec: str) -> None:
    pr = bounded_on_reals(act(spec))
    assert pr.status is Status.REFUTED, pr.statement
    assert pr.witness is not None


def test_a_step_quotient_that_blows_up_is_not_proved_bounded() -> None:
    """σ = 1/|x| for x > 0 and 0 for x ≤ 0: finite everywhere, limits 0 at ±∞, unbounded near
    0+. sympy's continuous_domain calls 0**Max(0, x) continuous, so route (b) must refuse it."""
    spec = "(1-0**Max(0,x))/(Abs(x)+0**Max(0,x))"
    assert sp.calculus.util.continuous_domain(1 - 0 ** sp.Max(0, X), X, sp.S.Reals) == sp.S.Reals  # the trap
    e = (1 - 0 ** sp.Max(0, X)) / (sp.Abs(X) + 0 ** sp.Max(0, X))
    assert growth._bounded_on_reals(e).status is Status.UNKNOWN  # the analysis itself
    with pytest.raises(InvalidInput):  # and the parser refuses the expression as not provably finite
        act(spec)


# -------------------------------------------------------- interval bound is sound --

_LEAVES = st.sampled_from([X, X, sp.Integer(2), R(-1, 3), sp.pi])
_UNARY = [sp.exp, sp.tanh, sp.erf, sp.atan, sp.sin, sp.cos, sp.Abs, lambda a: -a, lambda a: a**2, lambda a: a**3,
          lambda a: 1 / a, lambda a: sp.sqrt(a), sp.log, lambda a: 0 ** sp.Max(0, a), sp.cosh, sp.sinh, sp.erfc]
_BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, sp.Max, sp.Min, lambda a, b: a / b]


def _apply(f, *args):
    try:
        return f(*args)
    except (ValueError, TypeError, ZeroDivisionError):  # e.g. Max of a non-real constant
        return None


def _trees(depth: int):
    if depth == 0:
        return _LEAVES
    sub = _trees(depth - 1).filter(lambda e: e is not None)
    return st.one_of(sub, st.builds(_apply, st.sampled_from(_UNARY), sub),
                     st.builds(_apply, st.sampled_from(_BINARY), sub, sub))


_POINTS = [sp.Integer(0), sp.Integer(1), sp.Integer(-1), R(1, 2), R(-7, 3), sp.Integer(5), sp.Integer(-5), sp.Integer(30)]


@given(_trees(3))
@example(sp.exp(-X**2))
@example(1 / (1 + sp.exp(-X)))
@example(sp.sin(X) / (2 + sp.cos(X)))
@example(1 - 0 ** sp.Max(0, X))
@example(sp.Max(sp.tanh(X), -sp.Abs(X)) * sp.atan(X))
def test_interval_encloses_every_sampled_value(e: sp.Expr) -> None:
    if not isinstance(e, sp.Expr):
        return
    lo, hi = growth._range(e, [])
    assert lo <= hi
    for z in _POINTS:
        try:
            v = sp.N(e.subs(X, z), 40)
        except Exception:  # noqa: BLE001 - evalf can raise on exotic expressions: skip the point
            continue
        if not (v.is_number and v.is_extended_real and v.is_finite):
            continue
        err = (1 + abs(v)) * sp.Float(10) ** -35  # the 40-digit value's own error
        assert lo - err <= v <= hi + err, (e, z, v, lo, hi)


@given(_trees(2))
@example(sp.Abs(X) + X / 10**9)
@example(sp.exp(X) + X)
@example(sp.Max(0, X) - sp.Max(0, -X))
@pytest.mark.slow
def test_nothing_false_is_proved(e: sp.Expr) -> None:
    """Whatever parity, linear_form, exponential_form and bounded_on_reals prove about a random
    expression holds at every sample point where it is real and finite."""
    from absorb.model.activations import Activation

    if not isinstance(e, sp.Expr) or not e.has(X):
        return
    a = Activation(name="random", expr=e, np_fn=lambda z: z)
    checks = {
        parity: lambda pr, z, v: v - sp.N(e.subs(X, -z), 40),
        linear_form: lambda pr, z, v: v - pr.value["c"] * z,
        exponential_form: lambda pr, z, v: v - (pr.value["A"] * sp.exp(pr.value["beta"] * z) + pr.value["C"]),
    }
    for fn in (parity, linear_form, exponential_form, bounded_on_reals):
        pr = fn(a)
        if not pr.proved:
            continue
        for z in _POINTS:
            v = sp.N(e.subs(X, z), 40)
            if not (v.is_number and v.is_extended_real and v.is_finite):
                continue
            err = (1 + abs(v)) * sp.Float(10) ** -30
            if fn is bounded_on_reals:
                assert pr.value["route"] != "interval" or pr.value["lower"] - err <= v <= pr.value["upper"] + err, (e, z)
            else:
                assert abs(sp.N(checks[fn](pr, z, v), 40)) <= err, (fn.__name__, e, z)


# ---------------------------------------------------------------------------- general --

def test_sympy_errors_are_unknown_not_exceptions() -> None:
    """Max(x, log x) is not real for x ≤ 0 (activations like it are refused upstream); sympy
    raises 'not comparable' on it, which must come back as unknown (it used to propagate).
    The shared analysis runner (properties.analyse) turns a raising analysis into unknown,
    and refuses to claim anything outside the real-and-finite invariant."""
    from absorb.model.activations import Activation

    a = Activation(name="t", expr=sp.Max(X, sp.log(X)), np_fn=lambda z: z)
    for fn in ALL:
        pr = fn(a)
        assert pr.status is Status.UNKNOWN and "no property is claimed" in pr.statement



@pytest.mark.parametrize("spec", ["relu", "gelu", "leaky_relu", "tanh", "x*sin(x)", "exp(x)", "1-0**Max(0,x)"])
def test_results_serialise_and_are_cached(spec: str) -> None:
    a = act(spec)
    for fn in ALL:
        pr = fn(a)
        json.dumps(pr.to_json())
        assert all(isinstance(s, str) for s in pr.steps) and pr.steps
        assert fn(a) is pr
        if pr.status is Status.REFUTED:
            assert pr.witness


def test_the_exponential_form_is_refuted_by_the_growth_where_the_points_are_flat() -> None:
    """σ = ReLU plus a bump at |z| = 5 of height 2·10⁻² (two steep tanh): at the points the refutation reads, the
    differences are 1 and 0 up to e^-40000, which no 50-digit evaluation resolves; the rules' finite slopes at ±∞
    refute A·exp(βz) + C (unbounded over s on one side) at once, instead of a proof attempt that ran out of its budget."""
    pr = exponential_form(act("tanh(10000*x - 50000)/100 - tanh(10000*x + 50000)/100 + Max(0, x)"))
    assert pr.status is Status.REFUTED and "finite limits" in pr.statement, pr.statement


@pytest.mark.parametrize("spec", ["x*tanh(x*10**64)", "x*tanh(x/10**64)"])
def test_homogeneity_is_refuted_by_degrees_that_differ_far_apart(spec: str) -> None:
    """x·tanh(10⁶⁴x) reads as degree 1 at ±1/2, ±1 (its values are |x| to every digit) and degree 2
    near 0: two points whose σ(2x)/σ(x) differ refute homogeneity at once — the proof attempt's
    simplify ran past the analysis budget and the expression was refused."""
    from absorb.symbolic.properties import analyse

    pr = analyse(act(spec).expr, only="homogeneity")["homogeneity"]
    assert pr.status is Status.REFUTED, pr.statement
    assert pr.witness["implied_k"] != pr.witness["implied_k_other"]


def test_an_identity_in_disguise_is_analysed_in_its_short_form() -> None:
    """x/2 + x·(tanh x − (2/(1 + e^{−2x}) − 1)) is x/2: the analyses read the exact rewrite (shorter), so σ
    is proved linear with c = 1/2 and every proof opens with the rewrite — simplify of the long form ran
    past the analysis budget and the expression was refused. The checker finds the same c by its own
    rewrite (it rejected the honest certificate: σ(1) did not simplify to a rational)."""
    from absorb.symbolic.properties import analyse
    from absorb.verify._beyond import linear_constant

    e = act("x/2 + x*(tanh(x) - (2/(1 + exp(-2*x)) - 1))").expr
    pr = analyse(e, only="linear_form")["linear_form"]
    assert pr.status is Status.PROVED and pr.value["c"] == R(1, 2)
    assert "tanh" in pr.steps[0] and "rewritten" in pr.steps[0]
    assert linear_constant(e) == R(1, 2)


@pytest.mark.parametrize("spec, key", [("x*Min(Max(0,x+3),6)/6", "flip_identity[ungated]"),  # hardswish
                                       ("Max(0, Min(1, x/6 + 1/2))", "flip_identity[gated]")])  # hardsigmoid
def test_flip_identities_through_nested_max_and_min_are_proved_piece_by_piece(spec: str, key: str) -> None:
    """PyTorch's Hardswish (σ(z) − σ(−z) = z) and Hardsigmoid as a gate (g(z) + g(−z) = 1): simplify does not close the
    nested Max/Min, so both were unknown while an exact flip exists; written piece by piece they are proved."""
    from absorb.symbolic.properties import analyse

    pr = analyse(act(spec).expr, only=key)[key]
    assert pr.status is Status.PROVED and pr.value["c"] == 1, pr.statement
