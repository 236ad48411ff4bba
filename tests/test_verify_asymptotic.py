"""The checker's own limits (absorb/verify/_asymptotic.py): truncated expansions as s → +∞,
no sympy limit. A wrong skeleton certificate whose slope came from sympy's wrong limit of an
erfc product is rejected; the expansions agree with high-precision evaluation wherever they
claim a value, and claim nothing where the rules do not reach."""

from __future__ import annotations

from pathlib import Path

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb import get_activation
from absorb.cli import main
from absorb.verify import _asymptotic as asy
from absorb.verify._beyond import bounded_by_pieces, slopes
from absorb.verify._symbolic import _gate_derivative_at_zero, is_bounded

DATA = Path(__file__).resolve().parent / "data"
X = sp.Symbol("x", real=True)
ERFC_SIGMA = "expr:Max(0,x)*erfc(x/10**35-10)/10**8 + Min(0,x)*(1-(1-erf(-x/10**35-10))/10**8)"


def _expr(spec: str) -> sp.Expr:
    return get_activation(spec).expr


def test_wrong_erfc_skeleton_certificate_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture was written by `absorb check --certificate` before this checker route: it
    records L₊ = 2·10⁻⁸ (sympy: limit(erfc(x/W − 10)·x/x) = 2); the truth is L₊ = 0."""
    import json

    act = json.loads((DATA / "issue24_erfc_skeleton.json").read_text())["parameters"]["activation_override"]
    rc = main(["verify", str(DATA / "issue24_erfc_skeleton.json"), str(DATA / "issue24_erfc_skeleton.npz"), "--activation", act])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "rejected" in out and "recorded slopes" in out


def test_true_certificate_for_the_erfc_sigma_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The truth for these weights: σ(z) − σ(−z) = z, and flipping S = {0, 1} gives
    W_down[:,S] W_up[S,:] = −M, so f is absorbable. A certificate saying so (ReLU's, whose flip
    constant is also 1, with the activation record of the erfc σ) is accepted: the checker
    re-derives the flip identity through erfc = 1 − erf."""
    import json

    relu = tmp_path / "relu.json"
    assert main(["check", str(DATA / "issue24_erfc_skeleton.npz"), "--activation", "relu", "--certificate", str(relu), "-q"]) == 0
    doc, wrong = json.loads(relu.read_text()), json.loads((DATA / "issue24_erfc_skeleton.json").read_text())
    assert doc["blocks"][0]["witness"]["S"] == [0, 1]
    for key in ("activation", "activation_function", "class"):
        doc["blocks"][0][key] = wrong["blocks"][0][key]
    doc["blocks"][0]["properties"] = []  # (ReLU's records; the checker re-derives the flip identity of the erfc σ)
    doc["parameters"]["activation_override"], doc["class"] = wrong["parameters"]["activation_override"], wrong["class"]
    cert = tmp_path / "erfc.json"
    cert.write_text(json.dumps(doc))
    capsys.readouterr()
    act = doc["parameters"]["activation_override"]
    rc = main(["verify", str(cert), str(DATA / "issue24_erfc_skeleton.npz"), "--activation", act])
    assert rc == 0, capsys.readouterr().out
    # the question is named on both sides: without --activation the certificate is not verified (exit 2)
    assert main(["verify", str(cert), str(DATA / "issue24_erfc_skeleton.npz")]) == 2


def test_erfc_sigma_slopes_are_rederived() -> None:
    assert slopes(_expr(ERFC_SIGMA)) == (0, 1)


def test_sympy_wrong_limit_is_not_repeated() -> None:
    p = sp.Symbol("p", positive=True)
    W = sp.Integer(10) ** 35
    assert asy.limit_at_infinity(sp.erfc(p / W - 10) * (p + 1) / p, p) == 0


@pytest.mark.parametrize("spec, Lp, Lm", [
    ("relu", 1, 0), ("gelu", 1, 0), ("gelu_tanh", 1, 0), ("silu", 1, 0), ("quick_gelu", 1, 0), ("softplus", 1, 0),
    ("leaky_relu", 1, sp.Rational(1, 100)), ("tanh", 0, 0), ("sigmoid", 0, 0), ("identity", 1, 1),
    ("expr:Abs(x)", 1, -1), ("expr:log(1+x**2)", 0, 0), ("expr:x*tanh(log(1+exp(x)))", 1, 0), ("expr:sin(x)", 0, 0),
    ("expr:x+sin(x)", 1, 1), ("expr:Max(0, x) + Min(0, exp(x) - 1)", 1, 0), ("expr:atan(x) + 3*x", 3, 3),
    ("expr:sqrt(1+x**2)", 1, -1), ("expr:x*erf(x)", 1, -1),
])
def test_slopes_of_known_activations(spec: str, Lp: sp.Expr, Lm: sp.Expr) -> None:
    assert slopes(_expr(spec)) == (Lp, Lm)


@pytest.mark.parametrize("spec", ["relu2", "expr:exp(x)", "expr:x*sin(x)", "expr:x**2*erfc(x)", "expr:x*log(1+x**2)"])
def test_no_finite_slopes_claimed(spec: str) -> None:
    assert slopes(_expr(spec)) is None


def test_limits_at_points_and_gate_derivative() -> None:
    assert asy.limit_at_point(sp.sin(X) / X, X, sp.Integer(0), 1) == 1
    assert asy.limit_at_point((sp.exp(X) - 1) / X, X, sp.Integer(0), -1) == 1
    assert asy.limit_at_point(sp.erf(X) / X, X, sp.Integer(0), 1) == 2 / sp.sqrt(sp.pi)
    assert asy.limit_at_point(1 / X, X, sp.Integer(0), 1) is None
    assert asy.limit_at_point(sp.sin(1 / X), X, sp.Integer(0), 1) is None  # bounded, no limit
    assert sp.simplify(_gate_derivative_at_zero(_expr("silu")) - sp.Rational(1, 2)) == 0
    assert _gate_derivative_at_zero(_expr("expr:Abs(x)")) is None


def test_bounded_routes() -> None:
    assert is_bounded(_expr("tanh")) and is_bounded(_expr("sigmoid"))
    assert is_bounded(_expr("expr:Max(0, Min(1, x))"))
    assert not is_bounded(_expr("expr:sin(x)"))  # bounded, but no limit at ±∞: not this route
    assert bounded_by_pieces(_expr("expr:sin(x)"))
    assert not is_bounded(_expr("expr:exp(x)"))
    assert not bounded_by_pieces(_expr("expr:x*erfc(x/10**35 - 10)"))  # grows like x·erfc(−10) forever


# ---------------------------------------------------------------- property-based --
_LEAVES = st.sampled_from([X, sp.Integer(1), sp.Integer(2), sp.Rational(1, 3), sp.Rational(-3, 2), sp.pi])
_UNARY = [sp.exp, sp.erf, sp.erfc, sp.tanh, sp.atan, sp.sin, lambda a: sp.log(1 + a**2), lambda a: sp.sqrt(1 + a**2)]


def _grammar(leaf: st.SearchStrategy[sp.Expr]) -> st.SearchStrategy[sp.Expr]:
    return st.one_of(
        st.tuples(leaf, leaf).map(lambda t: t[0] + t[1]),
        st.tuples(leaf, leaf).map(lambda t: t[0] * t[1]),
        st.tuples(st.sampled_from(range(len(_UNARY))), leaf).map(lambda t: _UNARY[t[0]](t[1])),
        st.tuples(leaf, leaf).map(lambda t: t[0] / (1 + t[1] ** 2)),
    )


EXPRS = st.recursive(_LEAVES, _grammar, max_leaves=6)


def _value(e: sp.Expr, at: mpmath.mpf) -> mpmath.mpf:
    f = sp.lambdify(X, e, modules="mpmath")
    return f(at)


@settings(max_examples=60)
@given(e=EXPRS, sign=st.sampled_from([1, -1]))
def test_claimed_limits_agree_with_high_precision(e: sp.Expr, sign: int) -> None:
    """Whenever the expansion claims a finite limit at ±∞, a 60-digit evaluation far out agrees
    with it (within a tolerance that the slowest admissible decay, ~1/log s, allows)."""
    L = asy.limit_at_infinity(e, X, sign)
    if L is None:
        return
    with mpmath.workdps(60):
        try:
            vals = [_value(e, mpmath.mpf(sign) * mpmath.mpf(10) ** k) for k in (40, 80)]
        except (OverflowError, ZeroDivisionError, ValueError):
            return
        Lv = mpmath.mpf(sp.N(L, 60))
        for v in vals:
            if not mpmath.isfinite(v) or mpmath.im(v) != 0:
                return
        assert abs(vals[-1] - Lv) <= mpmath.mpf("0.05") * (1 + abs(Lv)), (e, sign, L, vals)


@settings(max_examples=40)
@given(e=EXPRS)
def test_claimed_slopes_agree_with_high_precision(e: sp.Expr) -> None:
    """Slopes of ``c·x + (bounded grammar expression)·x^0`` style formulas: whenever the
    checker claims L±, σ(±10⁸⁰)/(±10⁸⁰) is within 5 % of it."""
    sigma = 2 * X + e
    for sign in (1, -1):
        L = asy.limit_at_infinity(sigma / X, X, sign)
        if L is None:
            continue
        with mpmath.workdps(60):
            at = mpmath.mpf(sign) * mpmath.mpf(10) ** 80
            try:
                v = _value(sigma / X, at)
            except (OverflowError, ZeroDivisionError, ValueError):
                continue
            if not mpmath.isfinite(v) or mpmath.im(v) != 0:
                continue
            Lv = mpmath.mpf(sp.N(L, 60))
            assert abs(v - Lv) <= mpmath.mpf("0.05") * (1 + abs(Lv)), (sigma, sign, L, v)


# ------------------------------------------------------------------- identities --
@pytest.mark.parametrize("spec, c", [
    (ERFC_SIGMA, 1),  # σ(z) − σ(−z) = z: 1 − erf(−v) = erfc(v)
    ("expr:x*erfc(-x/sqrt(2))/2", 1),  # GELU by erfc
    ("expr:x*(1+tanh(x/2))/2", 1),  # SiLU by tanh
    ("expr:2*x/(1+exp(-x)) + 3*cosh(x)", 2),  # an even part by cosh
])
def test_flip_identity_through_erf_erfc_tanh_forms(spec: str, c: int) -> None:
    from absorb.verify._symbolic import flip_constant

    assert flip_constant(_expr(spec), False) == c


def test_same_function_across_forms() -> None:
    from absorb.verify._symbolic import _same_function, is_relu_or_gelu

    assert is_relu_or_gelu(_expr("expr:x*erfc(-x/sqrt(2))/2"))
    assert _same_function(_expr("expr:x*(1+tanh(x/2))/2"), _expr("silu"))
    assert not _same_function(_expr("expr:x*(1+tanh(x))/2"), _expr("silu"))


def test_the_checker_never_takes_a_limit_from_sympy() -> None:
    """No call of sympy's limit, gruntz, series, nseries, leadterm or as_leading_term anywhere
    in absorb/verify (the producer's library weakness must not be the checker's)."""
    import ast

    import absorb.verify

    banned = {"limit", "Limit", "gruntz", "series", "nseries", "leadterm", "as_leading_term", "limit_seq"}
    found = []
    for path in sorted(Path(absorb.verify.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name in banned:
                found.append(f"{path.name}:{node.lineno} {name}")
            if isinstance(node, ast.ImportFrom) and any(a.name in banned for a in node.names):
                found.append(f"{path.name}:{node.lineno} import")
    assert not found, found


@settings(max_examples=40)
@given(e=EXPRS, side=st.sampled_from([1, -1]))
def test_claimed_limits_at_zero_agree_with_high_precision(e: sp.Expr, side: int) -> None:
    """lim e(x)/x-style quotients at 0 from one side: a claimed value matches a 60-digit
    evaluation at ±10⁻⁴⁰."""
    q = e.subs(X, 1 / X) + sp.sin(X) / X  # 1/x makes 0 an essential point of the grammar
    L = asy.limit_at_point(q, X, sp.Integer(0), side)
    if L is None:
        return
    with mpmath.workdps(60):
        try:
            v = _value(q, mpmath.mpf(side) * mpmath.mpf(10) ** -40)
        except (OverflowError, ZeroDivisionError, ValueError):
            return
        if not mpmath.isfinite(v) or mpmath.im(v) != 0:
            return
        Lv = mpmath.mpf(sp.N(L, 60))
        assert abs(v - Lv) <= mpmath.mpf("0.05") * (1 + abs(Lv)), (q, side, L, v)


@pytest.mark.parametrize("e, L", [
    (sp.exp(X) - sp.exp(X) * (1 + sp.exp(-X)), -1), (X * (sp.sqrt(1 + 1 / X) - 1), sp.Rational(1, 2)),
    (sp.log(sp.exp(X) + X) - X, 0), (X * sp.erfc(X) * sp.exp(X**2), 1 / sp.sqrt(sp.pi)), ((1 + 1 / X) ** X, sp.E),
    (X * (sp.atan(X) - sp.pi / 2), -1), (sp.exp(-X) * X**100, 0), (sp.sqrt(X**2 + X) - X, sp.Rational(1, 2)),
    (sp.exp(X**2) * (sp.erf(X) - 1) * X, -1 / sp.sqrt(sp.pi)), (sp.tanh(X) ** X, 1),
    (sp.exp(X + 1 / X) - sp.exp(X), None), (X * sp.sin(X), None), (sp.exp(sp.sin(X)), None),
    (X * sp.erfc(X + sp.sin(X)), None),  # 0 in truth, but u² = X² + O(X) leaves e^{−u²} unknown: withheld
    (sp.log(sp.log(X)) / X, None),  # log log s is outside the scales: withheld
])
def test_limits_at_infinity_by_hand(e: sp.Expr, L: sp.Expr | None) -> None:
    got = asy.limit_at_infinity(e, X)
    assert (got is None) if L is None else (got is not None and sp.simplify(got - L) == 0), got


def test_an_underived_slope_says_why() -> None:
    from absorb.verify._beyond import slopes_or_reason

    sl, why = slopes_or_reason(_expr("expr:x*sin(x)"))
    assert sl is None and "L₊" in why and "O(1)" in why
    sl, why = slopes_or_reason(_expr("relu2"))
    assert sl is None and "grows without bound" in why


def test_a_constant_with_no_correct_digit_has_no_sign() -> None:
    """c = 10¹⁵⁰·atan 2 + 10¹⁵⁰·atan 3 − 10¹⁵⁰·3π/4 is exactly 0 and evaluates to "0.e-10" at 60 digits: the checker read a
    sign from it, expanded tanh(c·s) → 1 and accepted the slopes L± = 1, 0 of σ = x(1 + tanh(c·x))/2 = x/2 (verify
    exit 0 on a not_absorbable for a linear f). Both sides now evaluate strictly: no digit, no sign."""
    import sympy as sp

    from absorb.symbolic import asymptotic as producer
    from absorb.verify import _asymptotic as checker_side
    from absorb.verify._pieces import decide_zero

    K = sp.Integer(10) ** 150
    c = sp.Add(K * sp.atan(2), K * sp.atan(3), -K * 3 * sp.pi / 4, evaluate=False)
    with pytest.raises(checker_side.Stuck):
        checker_side._sign(c)
    with pytest.raises(producer.Unknown):
        producer._sgn(c)
    assert decide_zero(c) is not False
