"""Property tests of the asymptotic calculus: random expressions of the grammar, built from
pieces with known behaviour at ±∞, against high-precision evaluation far out.

Sound, not complete: the calculus may answer unknown (or "bounded"), but a finite limit it
claims must match σ(s)/s at s = ±10^300 and ±10^600 (mpmath with enough digits for the
cancellations), and an infinite one must show |σ(s)/s| growing with the claimed sign."""

from __future__ import annotations

import mpmath
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from absorb.model.activations import X
from absorb.symbolic import asymptotic as asy
from absorb.symbolic import properties as props
from absorb.symbolic.rewrite import normalise

R = sp.Rational

_CONST = st.sampled_from([sp.Integer(1), sp.Integer(2), R(-1, 3), R(1, 2), sp.pi, sp.Integer(-5), R(7, 10)])
_LEAF = st.one_of(st.just(X), st.just(X), _CONST)


def _unary(e: sp.Expr, k: int, c: sp.Expr) -> sp.Expr:
    return [
        sp.erf(e), sp.erfc(e / 3 - 2), sp.tanh(e), sp.atan(e), sp.exp(-e**2), sp.sqrt(1 + e**2),
        sp.log(1 + sp.exp(e)), sp.Abs(e), sp.Max(0, e), sp.Min(0, e), sp.exp(-sp.Abs(e)), e / (1 + e**2), sp.sin(e),
        c * e,
    ][k]


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> sp.Expr:
    if depth == 0:
        return draw(_LEAF)
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(_LEAF)
    if kind == 1:
        return _unary(draw(expressions(depth - 1)), draw(st.integers(0, 13)), draw(_CONST))
    a, b = draw(expressions(depth - 1)), draw(expressions(depth - 1))
    return a + b if kind == 2 else a * b


def _ratio(e: sp.Expr, s: int, sign: int) -> mpmath.mpf | None:
    dps = 80 + 4 * s
    with mpmath.workdps(dps):
        x = sign * mpmath.mpf(10) ** s
        v = asy.evaluate(e, x, dps)
        return None if v is None else v / x


@given(expressions(), st.sampled_from([1, -1]))
def test_claimed_slopes_match_high_precision_evaluation(e: sp.Expr, sign: int) -> None:
    lim = asy.limit(e, sign, 1)
    vals = [_ratio(e, k, sign) for k in (300, 600)]
    if lim.kind == "finite":
        target = mpmath.mpf(sp.N(lim.value, 60))
        for v in vals:
            if v is not None:
                assert abs(v - target) <= mpmath.mpf(10) ** -6 * (1 + abs(target)), (e, sign, lim.value, v)
    elif lim.kind in ("+oo", "-oo"):
        want = 1 if lim.kind == "+oo" else -1
        if all(v is not None for v in vals):
            assert vals[1] * want > 0 and abs(vals[1]) >= abs(vals[0]), (e, sign, lim.kind, vals)


@given(expressions(), st.sampled_from([1, -1]))
def test_claimed_limits_of_sigma_match(e: sp.Expr, sign: int) -> None:
    """The limit of σ itself (power 0), as bounded_on_reals and bounded use it."""
    lim = asy.limit(e, sign, 0)
    if lim.kind == "finite":
        target = mpmath.mpf(sp.N(lim.value, 60))
        for k in (300, 600):
            with mpmath.workdps(80 + 4 * k):
                v = asy.evaluate(e, sign * mpmath.mpf(10) ** k, 80 + 4 * k)
            if v is not None:
                assert abs(v - target) <= mpmath.mpf(10) ** -6 * (1 + abs(target)), (e, sign, lim.value, v)


@given(expressions())
def test_normalise_is_an_identity(e: sp.Expr) -> None:
    """The rewrite used before simplify changes the form, never the value."""
    n = normalise(e)
    for x0 in (R(-7, 3), R(1, 2), 3):
        a, b = sp.N(e.subs(X, x0), 40), sp.N(n.subs(X, x0), 40)
        if a.is_finite and a.is_real:
            assert abs(a - b) <= sp.Float(10) ** -25 * (1 + abs(a))


@given(expressions(depth=2), st.sampled_from([0, 1, 2]))
def test_flip_identity_of_a_constructed_odd_part(e: sp.Expr, which: int) -> None:
    """σ = h + (linear) with h even: σ(z) − σ(−z) = 2cz whatever spelling sympy must see through.
    Whatever the flip analysis claims, it must be true at sample points."""
    even = [sp.erfc(e.subs(X, sp.Abs(X))), sp.exp(-X**2) * sp.erf(X)**2, sp.Integer(0)][which]
    sigma = even + X * (sp.erf(X) + sp.erfc(X))  # = even + x
    pr = props._flip_identity(sigma, gated=False)
    if pr.proved:
        c = pr.value["c"]
        for z in (R(1, 3), 2, R(-5, 2)):
            d = sp.N(sigma.subs(X, z) - sigma.subs(X, -z) - c * z, 40)
            assert abs(d) < sp.Float(10) ** -25
