"""A sound asymptotic calculus for activations: σ(s) as s → +∞ (and, through x → −s, at −∞).

Every expression of the activation grammar is expanded *by rules over its tree* into

    σ(s) = Σ_i c_i · s^{α_i} (log s)^{m_i} exp(E_i(s)) + O(s^β (log s)^k exp(F(s)))

with exact sympy coefficients c_i, exponents α, m, and exponent polynomials E(s) = Σ e_γ s^γ
(γ > 0, exact e_γ); the remainder bound says that the difference is at most a constant times
the stated scale for all large s (``rem = None``: the expansion is exact for all large s).
Terms are kept in decreasing order and strictly above the remainder, so the first term is
σ's leading behaviour. From an expansion follow: the limit of σ(s)/s^k (finite, ±∞, or
undecided), boundedness near ±∞, the growth class and polynomial degree.

Rules (each node kind has one; sympy does exact algebra on the constants only):

* sums, products: term by term, equal scales combined exactly (a coefficient sympy cannot
  decide to be zero or not stops the rule); remainders multiply by the other side's size;
* 1/f, f^r: f = c₀·t₀·(1 + u) with u → 0, then the binomial series in u with its remainder;
* exp(f): the growing pure powers of f go into the exponent, c·log s into a power of s, the
  constant into exp(c), and exp(u) = Σ u^k/k! + O(u^K) for the vanishing rest;
* log(f): log c₀ + α log s + E(s) + log(1 + u) (c₀ > 0);
* erf/erfc at f → ±∞: erfc(y) = e^{−y²}/(y√π)·(1 − 1/(2y²) + O(y^{−4})); tanh(y) = 1 − 2w + 2w² +
  O(w³), w = e^{−2y}; atan(y) = ±π/2 − atan(1/y); sinh, cosh through exp;
* any analytic head at f → L finite: its Taylor polynomial at L with an O(u^K) remainder;
* erf, erfc, tanh, atan, sin, cos of anything else: bounded, O(1) (no limit claimed);
* Abs, sign, Heaviside: by the exact sign of the leading coefficient; Max/Min through
  (a + b ± |a − b|)/2; Piecewise by the eventual truth of each condition.

Where no rule applies :class:`Unknown` is raised with the reason. sympy's ``limit``,
``gruntz``, ``series`` and ``Order`` are never used. :func:`numeric_check` compares a claim
with mpmath evaluations (60 digits plus 2k for cancellation) at s = 10^k, k = 50, 200, 600: it
can only withhold a claim.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sympy as sp

from absorb.model.activations import X

S = sp.Symbol("s", positive=True)
"""The variable of every expansion: s → +∞."""

_ORDER = 3  # terms kept by the series rules (remainder u^_ORDER)
_MAX_TERMS = 4  # terms kept per expansion (the rest goes into the remainder)
_ZERO_EPS = sp.Float(10) ** -40


class Unknown(Exception):
    """No rule decides this expression; the message says why."""


# ------------------------------------------------------------------------------ numbers --


def _sgn(c: sp.Expr) -> int:
    """The exact sign of a real constant (−1, 0, 1); Unknown when it cannot be decided."""
    c = sp.sympify(c)
    if c.is_Rational:
        return int(bool(c > 0)) - int(bool(c < 0))
    if c.is_zero is True:
        return 0
    if c.is_extended_real is False:
        raise Unknown(f"the constant {c} is not real")
    if c.is_positive is True:
        return 1
    if c.is_negative is True:
        return -1
    c2 = sp.simplify(c)
    if c2 == 0:
        return 0
    try:  # (strict: every digit correct, or no value — a cancellation to 0 evaluates to "0.e-10", no digit at all)
        v = sp.N(c2, 50, strict=True)
    except Exception:  # noqa: BLE001  (PrecisionExhausted)
        raise Unknown(f"the sign of the constant {c} could not be decided") from None
    if v.is_number and v.is_extended_real and abs(v) > _ZERO_EPS:
        return 1 if v > 0 else -1
    raise Unknown(f"the sign of the constant {c} could not be decided")


def _const(c: sp.Expr) -> sp.Expr:
    """A constant in a canonical, exact form (Rationals stay as they are)."""
    c = sp.sympify(c)
    if c.is_Rational:
        return c
    if c.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise Unknown(f"the constant {c} is not finite")
    return sp.nsimplify(c) if c.has(sp.Float) else c


# ------------------------------------------------------------------------------- scales --


@dataclass(frozen=True)
class Scale:
    """s^a (log s)^m exp(Σ_γ e_γ s^γ); ``E`` holds (γ, e_γ) with γ > 0, e_γ ≠ 0, γ decreasing."""

    E: tuple[tuple[sp.Expr, sp.Expr], ...] = ()
    a: sp.Expr = sp.Integer(0)
    m: sp.Expr = sp.Integer(0)

    def __mul__(self, other: Scale) -> Scale:
        return Scale(_e_add(self.E, other.E), self.a + other.a, self.m + other.m)

    def pow(self, r: sp.Expr) -> Scale:
        if r == 0:
            return ONE
        return Scale(tuple((g, c * r) for g, c in self.E), self.a * r, self.m * r)

    def expr(self) -> sp.Expr:
        return sp.exp(sum((c * S**g for g, c in self.E), sp.Integer(0))) * S**self.a * sp.log(S) ** self.m

    def latex(self) -> str:
        """Printed factor by factor: sympy's printer simplifies a Mul holding exp(−s²/2) (slow)."""
        parts = []
        if self.a != 0:
            parts.append(sp.latex(S**self.a))
        if self.m != 0:
            parts.append(sp.latex(sp.log(S) ** self.m))
        if self.E:
            parts.append("e^{" + sp.latex(sp.Add(*(c * S**g for g, c in self.E))) + "}")
        return r"\,".join(parts) if parts else "1"


def _term_latex(c: sp.Expr, sc: Scale) -> str:
    if sc == ONE:
        return sp.latex(c)
    if c == 1:
        return sc.latex()
    if c == -1:
        return "-" + sc.latex()
    coef = sp.latex(c)
    if c.is_Add:
        coef = rf"\left({coef}\right)"
    return coef + r"\," + sc.latex()


ONE = Scale()
LOG = Scale((), sp.Integer(0), sp.Integer(1))


def _e_add(e1: tuple, e2: tuple) -> tuple:
    acc: dict[sp.Expr, sp.Expr] = {}
    for g, c in (*e1, *e2):
        acc[g] = acc.get(g, sp.Integer(0)) + c
    items = [(g, _const(c)) for g, c in acc.items()]
    items = [(g, c) for g, c in items if _sgn(c) != 0]
    return tuple(sorted(items, key=functools.cmp_to_key(lambda p, q: _sgn(q[0] - p[0]))))


def cmp(s1: Scale, s2: Scale) -> int:
    """1 when s1/s2 → ∞, −1 when s1/s2 → 0, 0 when the scales are equal."""
    d = _e_add(s1.E, tuple((g, -c) for g, c in s2.E))
    if d:
        return _sgn(d[0][1])
    sa = _sgn(s1.a - s2.a)
    if sa:
        return sa
    return _sgn(s1.m - s2.m)


def _max_scale(*scales: Scale | None) -> Scale | None:
    out = None
    for s in scales:
        if s is not None and (out is None or cmp(s, out) > 0):
            out = s
    return out


# --------------------------------------------------------------------------- expansions --


@dataclass(frozen=True)
class Expansion:
    """Σ c_i·scale_i + O(rem) as s → +∞ (terms decreasing, all above ``rem``; rem None: exact)."""

    terms: tuple[tuple[sp.Expr, Scale], ...]
    rem: Scale | None

    @property
    def size(self) -> Scale | None:
        """The scale of the whole (None: identically 0 for large s)."""
        return self.terms[0][1] if self.terms else self.rem

    @property
    def lead(self) -> tuple[sp.Expr, Scale]:
        if not self.terms:
            raise Unknown("the leading term is not known (only a bound " + _rem_text(self.rem) + ")")
        return self.terms[0]

    def is_zero(self) -> bool:
        return not self.terms and self.rem is None

    def coefficient(self, scale: Scale) -> sp.Expr | None:
        """The coefficient of ``scale`` when it is known (0 if absent and above the remainder)."""
        for c, sc in self.terms:
            if cmp(sc, scale) == 0:
                return c
        if self.rem is not None and cmp(self.rem, scale) >= 0:
            return None
        return sp.Integer(0)

    def latex(self) -> str:
        parts = [_term_latex(c, sc) for c, sc in self.terms]
        if self.rem is not None:
            parts.append(rf"O\!\left({self.rem.latex()}\right)")
        if not parts:
            return "0"
        out = parts[0]
        for q in parts[1:]:
            out += f" - {q[1:].lstrip()}" if q.startswith("-") else f" + {q}"
        return out


def _rem_text(rem: Scale | None) -> str:
    return "0" if rem is None else f"O({rem.expr()})"


ZERO = Expansion((), None)


def _make(terms: Sequence[tuple[sp.Expr, Scale]], rem: Scale | None) -> Expansion:
    """Normalise: combine equal scales exactly, drop zeros and terms not above the
    remainder, sort decreasing, keep at most _MAX_TERMS terms (the next becomes the remainder)."""
    groups: list[list] = []
    for c, sc in terms:
        for g in groups:
            if cmp(g[1], sc) == 0:
                g[0] = g[0] + c
                break
        else:
            groups.append([c, sc])
    kept = []
    for c, sc in groups:
        c = _const(c)
        if _sgn(c) == 0:
            continue
        if rem is not None and cmp(sc, rem) <= 0:
            continue
        kept.append((c, sc))
    kept.sort(key=functools.cmp_to_key(lambda p, q: cmp(q[1], p[1])))
    if len(kept) > _MAX_TERMS:
        rem = _max_scale(rem, kept[_MAX_TERMS][1])
        kept = kept[:_MAX_TERMS]
    return Expansion(tuple(kept), rem)


def const(c: sp.Expr) -> Expansion:
    return _make([(c, ONE)], None)


def add(*fs: Expansion) -> Expansion:
    return _make([t for f in fs for t in f.terms], _max_scale(*(f.rem for f in fs)))


def scale_by(f: Expansion, c: sp.Expr) -> Expansion:
    c = sp.sympify(c)
    if _sgn(c) == 0:
        return ZERO
    return Expansion(tuple((_const(c * k), sc) for k, sc in f.terms), f.rem)


def mul(f: Expansion, g: Expansion) -> Expansion:
    if f.is_zero() or g.is_zero():
        return ZERO
    terms = [(a * b, sa * sb) for a, sa in f.terms for b, sb in g.terms]
    rems = []
    if f.rem is not None:
        rems.append(f.rem * g.size)
    if g.rem is not None:
        rems.append(g.rem * f.size)
    return _make(terms, _max_scale(*rems))


def monomial(c: sp.Expr, sc: Scale) -> Expansion:
    return _make([(c, sc)], None)


def _small(f: Expansion) -> bool:
    """f → 0: every term and the remainder below 1."""
    sz = f.size
    return sz is None or cmp(sz, ONE) < 0


def series(u: Expansion, coeffs: Sequence[sp.Expr]) -> Expansion:
    """Σ_k coeffs[k]·u^k + O(u^len(coeffs)) for u → 0 (a Taylor or asymptotic series whose
    remainder after len(coeffs) terms is O(u^len(coeffs)))."""
    if not _small(u):
        raise Unknown("a series was applied to an argument that does not tend to 0")
    out, power = [], const(sp.Integer(1))
    for k, a in enumerate(coeffs):
        if k:
            power = mul(power, u)
        if a != 0:
            out.append(scale_by(power, a))
    last = mul(power, u)
    rem = last.size
    return add(*out, Expansion((), rem)) if rem is not None else add(*out)


def split_lead(f: Expansion) -> tuple[sp.Expr, Scale, Expansion]:
    """f = c₀·t₀·(1 + u) with u → 0: (c₀, t₀, u)."""
    c0, t0 = f.lead
    rest = Expansion(f.terms[1:], f.rem)
    u = scale_by(mul(rest, monomial(sp.Integer(1), t0.pow(-1))), 1 / c0)
    return c0, t0, u


def power(f: Expansion, r: sp.Expr) -> Expansion:
    """f^r for a real constant r (f eventually positive unless r is an integer)."""
    if r == 0:
        return const(sp.Integer(1))
    if r.is_Integer and r > 0:
        out = f
        for _ in range(int(r) - 1):
            out = mul(out, f)
        return out
    if f.is_zero():
        if _sgn(r) > 0:
            return ZERO
        raise Unknown("0 to a negative power")
    if not f.terms:
        if _sgn(r) > 0:
            return Expansion((), f.rem.pow(r))
        raise Unknown("a negative power of a function known only up to a bound")
    c0, t0, u = split_lead(f)
    if not r.is_Integer and _sgn(c0) <= 0:
        raise Unknown(f"a non-integer power of a function that tends to {'-' if _sgn(c0) < 0 else ''}∞ or 0 from below")
    coeffs = [sp.binomial(r, k) for k in range(_ORDER)]
    return mul(monomial(c0**r, t0.pow(r)), series(u, coeffs))


def reciprocal(f: Expansion) -> Expansion:
    return power(f, sp.Integer(-1))


def _parts(f: Expansion) -> tuple[list, sp.Expr, Expansion]:
    """(terms above 1, the constant term, the vanishing rest)."""
    big, c, small = [], sp.Integer(0), []
    for k, sc in f.terms:
        s = cmp(sc, ONE)
        if s > 0:
            big.append((k, sc))
        elif s == 0:
            c = k
        else:
            small.append((k, sc))
    if f.rem is not None and cmp(f.rem, ONE) >= 0:
        raise Unknown("the argument is known only up to a bound " + _rem_text(f.rem) + " that does not vanish")
    return big, c, Expansion(tuple(small), f.rem)


def exp_(f: Expansion) -> Expansion:
    big, c, small = _parts(f)
    sc = ONE
    for k, t in big:
        if not t.E and t.m == 0 and _sgn(t.a) > 0:
            sc = sc * Scale(((t.a, k),), sp.Integer(0), sp.Integer(0))
        elif not t.E and t.a == 0 and t.m == 1:
            sc = sc * Scale((), k, sp.Integer(0))
        else:
            raise Unknown(f"exp of a term {k * t.expr()} that is neither a power of s nor a multiple of log s")
    head = monomial(sp.exp(c), sc)
    if small.is_zero():
        return head
    return mul(head, series(small, [1 / sp.factorial(k) for k in range(_ORDER)]))


def log_(f: Expansion) -> Expansion:
    c0, t0, u = split_lead(f)
    if _sgn(c0) <= 0:
        raise Unknown("log of a function that is eventually negative")
    if t0.m != 0:
        raise Unknown("log of a function with a power of log s in its leading term (log log s)")
    parts = [const(sp.log(c0)), monomial(t0.a, LOG)]
    parts += [monomial(k, Scale((), g, sp.Integer(0))) for g, k in t0.E]
    if not u.is_zero():
        parts.append(series(u, [sp.Integer(0)] + [sp.Integer(-1) ** (k + 1) / k for k in range(1, _ORDER)]))
    return add(*parts)


def _taylor(fn: Callable[[sp.Expr], sp.Expr], f: Expansion) -> Expansion | None:
    """fn(f) by Taylor's theorem at the finite limit L of f (None when f has no finite limit)."""
    try:
        big, c, small = _parts(f)
    except Unknown:
        return None
    if big:
        return None
    y = sp.Dummy("y", real=True)
    g = fn(y)
    coeffs = []
    for k in range(_ORDER):
        coeffs.append(_const(g.subs(y, c)) / sp.factorial(k))
        g = sp.diff(g, y)
    if small.is_zero():
        return const(coeffs[0])
    return series(small, coeffs)


def _tends(f: Expansion) -> int:
    """+1 / −1 when f → ±∞, 0 otherwise (including undecided)."""
    if f.terms and cmp(f.terms[0][1], ONE) > 0:
        return _sgn(f.terms[0][0])
    return 0


def _exp_neg(f: Expansion, k: sp.Expr) -> Expansion:
    """exp(−k·f) for f → +∞ (k > 0): by the exp rule, or a bound from f's leading term."""
    try:
        return exp_(scale_by(f, -k))
    except Unknown:
        c0, t0 = f.lead
        if not t0.E and _sgn(t0.a) > 0 and _sgn(t0.m) >= 0:
            # f ≥ (c₀/2)·s^a for large s, so exp(−k f) ≤ exp(−(k c₀/2) s^a)
            return Expansion((), Scale(((t0.a, -k * c0 / 2),), sp.Integer(0), sp.Integer(0)))
        raise


def erfc_(f: Expansion) -> Expansion:
    sgn = _tends(f)
    if sgn > 0:
        try:
            body = mul(exp_(scale_by(mul(f, f), -1)), scale_by(reciprocal(f), 1 / sp.sqrt(sp.pi)))
            return mul(body, series(power(reciprocal(f), sp.Integer(2)), [sp.Integer(1), -sp.Rational(1, 2)]))
        except Unknown:
            return _exp_neg(mul(f, f), sp.Integer(1))  # erfc(y) ≤ exp(−y²) for y ≥ 0
    if sgn < 0:
        return add(const(sp.Integer(2)), scale_by(erfc_(scale_by(f, -1)), -1))
    out = _taylor(sp.erfc, f)
    return out if out is not None else _bounded(f)


def erf_(f: Expansion) -> Expansion:
    sgn = _tends(f)
    if sgn:
        return scale_by(add(const(sp.Integer(1)), scale_by(erfc_(scale_by(f, sgn)), -1)), sgn)
    out = _taylor(sp.erf, f)
    return out if out is not None else _bounded(f)


def tanh_(f: Expansion) -> Expansion:
    sgn = _tends(f)
    if sgn:
        w = _exp_neg(scale_by(f, sgn), sp.Integer(2))
        return scale_by(add(const(sp.Integer(1)), series(w, [0, -2, 2])), sgn)
    out = _taylor(sp.tanh, f)
    return out if out is not None else _bounded(f)


def atan_(f: Expansion) -> Expansion:
    sgn = _tends(f)
    if sgn:
        inner = _taylor(sp.atan, reciprocal(f))
        return add(const(sgn * sp.pi / 2), scale_by(inner, -1))
    out = _taylor(sp.atan, f)
    return out if out is not None else _bounded(f)


def _bounded(f: Expansion) -> Expansion:
    """A bounded head of an argument without a limit: O(1)."""
    return Expansion((), ONE)


def _hyperbolic(fn: type, f: Expansion) -> Expansion:
    if _tends(f):
        ep, em = exp_(f), exp_(scale_by(f, -1))
        return scale_by(add(ep, scale_by(em, -1 if fn is sp.sinh else 1)), sp.Rational(1, 2))
    out = _taylor(fn, f)
    if out is None:
        raise Unknown(f"{fn.__name__} of an argument without a limit")
    return out


def abs_(f: Expansion) -> Expansion:
    if f.is_zero():
        return ZERO
    if not f.terms:
        return f
    return scale_by(f, _sgn(f.terms[0][0]))


def _eventual_sign(f: Expansion) -> int:
    if f.is_zero():
        return 0
    return _sgn(f.lead[0])


def _max_min(args: Sequence[Expansion], sign: int) -> Expansion:
    acc = args[0]
    for b in args[1:]:
        acc = scale_by(add(acc, b, scale_by(abs_(add(acc, scale_by(b, -1))), sign)), sp.Rational(1, 2))
    return acc


def _condition(c: sp.Basic) -> bool:
    """The eventual truth of a Piecewise condition as s → +∞."""
    if c in (sp.true, sp.false):
        return bool(c)
    if isinstance(c, sp.core.relational.Relational):
        d = _eventual_sign(expand(c.lhs - c.rhs))
        ops = {sp.StrictGreaterThan: d > 0, sp.GreaterThan: d >= 0, sp.StrictLessThan: d < 0, sp.LessThan: d <= 0,
               sp.Eq: d == 0, sp.Ne: d != 0}
        for t, v in ops.items():
            if isinstance(c, t):
                return v
    raise Unknown(f"the condition {c} of a Piecewise could not be decided")


def _pow(e: sp.Pow) -> Expansion:
    b, r = e.args
    if not r.has(S):
        return power(expand(b), r)
    if not b.has(S):
        if b == 0:
            d = _eventual_sign(expand(r))
            if d > 0:
                return ZERO
            if d == 0:
                return const(sp.Integer(1))
            raise Unknown("0 to a negative power")
        if _sgn(b) > 0:
            return exp_(scale_by(expand(r), sp.log(b)))
        raise Unknown(f"a power of the non-positive constant {b} with s in the exponent")
    return exp_(mul(expand(r), log_(expand(b))))


def _expand(e: sp.Expr) -> Expansion:
    if not e.has(S):
        if e.free_symbols:
            raise Unknown(f"{e} has a symbol other than the variable")
        return const(e)
    if e == S:
        return monomial(sp.Integer(1), Scale((), sp.Integer(1), sp.Integer(0)))
    if isinstance(e, sp.Add):
        return add(*(expand(a) for a in e.args))
    if isinstance(e, sp.Mul):
        out = const(sp.Integer(1))
        for a in e.args:
            out = mul(out, expand(a))
        return out
    if isinstance(e, sp.Pow):
        return _pow(e)
    if isinstance(e, sp.exp):
        return exp_(expand(e.args[0]))
    if isinstance(e, sp.log):
        return log_(expand(e.args[0]))
    if isinstance(e, sp.erf):
        return erf_(expand(e.args[0]))
    if isinstance(e, sp.erfc):
        return erfc_(expand(e.args[0]))
    if isinstance(e, sp.tanh):
        return tanh_(expand(e.args[0]))
    if isinstance(e, sp.atan):
        return atan_(expand(e.args[0]))
    if isinstance(e, (sp.sinh, sp.cosh)):
        return _hyperbolic(type(e), expand(e.args[0]))
    if isinstance(e, (sp.sin, sp.cos)):
        out = _taylor(type(e), expand(e.args[0]))
        return out if out is not None else _bounded(None)
    if isinstance(e, sp.Abs):
        return abs_(expand(e.args[0]))
    if isinstance(e, (sp.Max, sp.Min)):
        return _max_min([expand(a) for a in e.args], 1 if isinstance(e, sp.Max) else -1)
    if isinstance(e, sp.sign):
        return const(sp.Integer(_eventual_sign(expand(e.args[0]))))
    if isinstance(e, sp.Heaviside):
        d = _eventual_sign(expand(e.args[0]))
        if d == 0:
            raise Unknown("Heaviside at its jump")
        return const(sp.Integer(1 if d > 0 else 0))
    if isinstance(e, sp.Piecewise):
        for branch, cond in e.args:
            if _condition(cond):
                return expand(branch)
        raise Unknown("no branch of a Piecewise holds for large s")
    raise Unknown(f"no asymptotic rule for {type(e).__name__}")


@functools.lru_cache(maxsize=2048)
def expand(e: sp.Expr) -> Expansion:
    """The expansion of an expression in :data:`S` as s → +∞; Unknown when no rule decides.

    Where the rules give nothing, or only a growing bound, an interval enclosure of the node
    over all of R (:func:`absorb.symbolic._interval._range`, with s read as x) that is finite
    gives O(1): 1/(2 − cos s) is bounded though it has no limit."""
    try:
        out: Expansion | None = _expand(e)
    except Unknown as exc:
        out, why = None, exc
    if out is None or (not out.terms and out.rem is not None and cmp(out.rem, ONE) > 0):
        if _interval_bounded(e):
            return Expansion((), ONE)
    if out is None:
        raise why
    return out


def _interval_bounded(e: sp.Expr) -> bool:
    from absorb.symbolic._interval import _range

    try:
        lo, hi = _range(e.subs(S, X), [])
    except Exception:  # noqa: BLE001 - a comparison sympy cannot decide: no bound
        return False
    return lo != -sp.oo and hi != sp.oo


def at_infinity(e: sp.Expr, sign: int) -> sp.Expr:
    """σ(sign·s) with s > 0 (σ in the activation variable x)."""
    return e.subs(X, sign * S)


# ------------------------------------------------------------------------------ claims --


@dataclass(frozen=True)
class Limit:
    """lim_{s→∞} of an expansion: ``kind`` is 'finite' (value exact), '+oo', '-oo', 'bounded'
    (|·| bounded for large s, limit undecided) or 'unknown' (``reason``)."""

    kind: str
    value: sp.Expr | None = None
    expansion: Expansion | None = None
    reason: str = ""


def limit_of(f: Expansion) -> Limit:
    if f.terms and cmp(f.terms[0][1], ONE) > 0:
        return Limit("+oo" if _sgn(f.terms[0][0]) > 0 else "-oo", expansion=f)
    if f.rem is not None and cmp(f.rem, ONE) >= 0:
        if cmp(f.rem, ONE) == 0:
            return Limit("bounded", expansion=f, reason="bounded, but the calculus finds no limit (remainder O(1))")
        return Limit("unknown", expansion=f, reason=f"only the bound {_rem_text(f.rem)} is known")
    return Limit("finite", f.coefficient(ONE), expansion=f)


def limit(e: sp.Expr, sign: int, divide_power: int = 0) -> Limit:
    """lim_{x→sign·∞} σ(x)/x^divide_power by the rules (x^k taken as (sign·s)^k)."""
    try:
        f = expand(at_infinity(e, sign))
        if divide_power:
            f = scale_by(mul(f, monomial(sp.Integer(1), Scale((), -sp.Integer(divide_power), sp.Integer(0)))),
                         sp.Integer(sign) ** divide_power)
        return limit_of(f)
    except Unknown as exc:
        return Limit("unknown", reason=str(exc))
    except (RecursionError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors on exotic constants: no claim
        return Limit("unknown", reason=f"the rules failed ({type(exc).__name__})")


def leading(e: sp.Expr, sign: int) -> tuple[sp.Expr, Scale] | None:
    """σ's leading term c·s^a (log s)^m e^{E(s)} at x = sign·s → sign·∞ (None: unknown, or σ is
    eventually 0 or known only up to a bound). Its scale is σ's growth class; a pure power
    (E = (), m = 0) gives the polynomial degree a."""
    try:
        f = expand(at_infinity(e, sign))
        return f.terms[0] if f.terms else None
    except Unknown:
        return None


def quadratic_terms(e: sp.Expr, sign: int) -> tuple[sp.Expr, sp.Expr] | None:
    """(α, β) with σ(x) = α x² + β x + o(x) as x → sign·∞, when the rules prove such a form
    (nothing above x², nothing strictly between x and x², the remainder below x); None
    otherwise. For GELU², SiLU², softplus²."""
    try:
        f = expand(at_infinity(e, sign))
        s2, s1 = Scale((), sp.Integer(2), sp.Integer(0)), Scale((), sp.Integer(1), sp.Integer(0))
        if f.terms and cmp(f.terms[0][1], s2) > 0:
            return None
        if any(cmp(sc, s1) > 0 and cmp(sc, s2) < 0 for _c, sc in f.terms):  # s^1.5, s·log s: no such form
            return None
        if f.rem is not None and cmp(f.rem, s1) >= 0:
            return None
        a, b = f.coefficient(s2), f.coefficient(s1)
        if a is None or b is None:
            return None
        return a, sign * b  # x² = s², x = sign·s
    except Unknown:
        return None


# ----------------------------------------------------------------------- numeric check --

SCALES = (50, 200, 600)
"""The defence-in-depth samples: s = 10^k."""


def evaluate(e: sp.Expr, x: object, dps: int = 60) -> object | None:
    """σ(x) in mpmath at ``dps`` digits (x an mpmath number), None when it cannot be evaluated
    safely (a number beyond 10^(10^6), a non-real value, an unknown head)."""
    import mpmath

    def go(n: sp.Expr) -> object:
        if n == X:
            return x
        if not n.free_symbols:
            return mpmath.mpf(sp.N(n, dps + 10))
        a = [go(q) for q in n.args] if not isinstance(n, sp.Piecewise) else None
        if isinstance(n, sp.Add):
            return mpmath.fsum(a)
        if isinstance(n, sp.Mul):
            return mpmath.fprod(a)
        if isinstance(n, sp.Pow):
            b, r = a
            if b == 0:
                return mpmath.mpf(1) if r == 0 else mpmath.mpf(0)
            if b < 0 and not (n.exp.is_Integer):
                raise ValueError
            if n.exp.is_Integer:
                return b ** int(n.exp)
            return _exp(r * mpmath.log(b))
        if isinstance(n, sp.exp):
            return _exp(a[0])
        if isinstance(n, (sp.sinh, sp.cosh)):
            _exp(abs(a[0]))
            return (mpmath.sinh if isinstance(n, sp.sinh) else mpmath.cosh)(a[0])
        simple = {sp.log: mpmath.log, sp.erf: _erf, sp.erfc: _erfc, sp.tanh: mpmath.tanh, sp.atan: mpmath.atan,
                  sp.sin: mpmath.sin, sp.cos: mpmath.cos, sp.Abs: abs, sp.sign: mpmath.sign}
        for t, fn in simple.items():
            if isinstance(n, t):
                return fn(a[0])
        if isinstance(n, sp.Max):
            return max(a)
        if isinstance(n, sp.Min):
            return min(a)
        if isinstance(n, sp.Heaviside):
            return mpmath.mpf(1 if a[0] > 0 else 0) if a[0] != 0 else None
        if isinstance(n, sp.Piecewise):
            for branch, cond in n.args:
                if cond == sp.true or _cond_at(cond, go):
                    return go(branch)
            raise ValueError
        raise ValueError

    def _exp(v: object) -> object:
        if mpmath.mag(v) > 20:  # |v| > 10^6: e^v would have a million-digit exponent
            if v < 0:
                return mpmath.mpf(0)  # below e^(-10^6): an absolute error nothing evaluable can magnify
            raise ValueError
        return mpmath.exp(v)

    def _erfc(y: object) -> object:
        if y < -1000:
            return 2 - _erfc(-y)
        if y <= 1000:
            return mpmath.erfc(y)
        # mpmath's own erfc overflows for huge y: the asymptotic series, error below (2K+1)!!/(2y^2)^(K+1)
        u, term, acc = 1 / (2 * y * y), mpmath.mpf(1), mpmath.mpf(1)
        for k in range(1, 40):
            term = -term * (2 * k - 1) * u
            acc += term
        return _exp(-y * y) / (y * mpmath.sqrt(mpmath.pi)) * acc

    def _erf(y: object) -> object:
        return mpmath.erf(y) if abs(y) <= 1000 else mpmath.sign(y) * (1 - _erfc(abs(y)))

    try:
        with mpmath.workdps(dps):
            v = go(e)
            if v is None or not isinstance(v, mpmath.mpf) or not mpmath.isfinite(v):
                return None
            return v
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None


def _cond_at(cond: sp.Basic, go: Callable) -> bool:
    if isinstance(cond, sp.core.relational.Relational):
        lhs, rhs = go(cond.lhs), go(cond.rhs)
        return bool({sp.StrictGreaterThan: lhs > rhs, sp.GreaterThan: lhs >= rhs, sp.StrictLessThan: lhs < rhs,
                     sp.LessThan: lhs <= rhs, sp.Eq: lhs == rhs, sp.Ne: lhs != rhs}[type(cond)])
    raise ValueError


def one_sided_derivative(e: sp.Expr, g0: sp.Expr, side: int) -> tuple[Limit, sp.Expr]:
    """lim_{h→0±} (σ(h) − g0)/h by the rules: with h = side/s, the limit at s → +∞ of
    q(s) = side·s·(σ(side/s) − g0). Returns (the limit, q written in x for :func:`numeric_check`)."""
    q = side * X * (e.subs(X, side / X) - g0)
    return limit(q, 1, 0), q


def numeric_check(e: sp.Expr, sign: int, lim: Limit, divide_power: int = 0,
                  scales: Sequence[int] = SCALES) -> str | None:
    """None when 60-digit evaluations of σ(x)/x^divide_power at x = sign·10^k (k in
    :data:`SCALES`) agree with the claimed finite limit's expansion to 10^-10 relative
    (plus 10^3 times the stated remainder scale) from some scale on — a sample that disagrees
    before the farther ones agree is pre-asymptotic (σ = x·erf(x/10^60)… turns at 10^60), not
    evidence against the limit; else a sentence saying what disagrees: the farthest sample, or
    one that disagrees after a nearer one agreed. Samples that cannot be evaluated (or not
    stably) are skipped; none at all is no evidence. It withholds a claim, never makes one."""
    import mpmath

    if lim.kind != "finite" or lim.expansion is None:
        return None
    f = lim.expansion
    target = mpmath.mpf(sp.N(lim.value, 70))
    early, agreed = None, False  # a disagreement not yet followed by agreement; whether some sample agreed
    for k in scales:
        # 60 digits plus enough to survive cancellation between terms of size up to s^2
        dps = 60 + 2 * k
        vals = []
        for prec in (dps, dps + 40):  # agreement at two precisions: the evaluation is stable
            with mpmath.workdps(prec):
                s = mpmath.mpf(10) ** k
                v = evaluate(e, sign * s, prec)
                vals.append(None if v is None else v / (sign * s) ** divide_power)
        if any(v is None for v in vals):
            continue
        with mpmath.workdps(dps):
            s = mpmath.mpf(10) ** k
            terms = _eval_terms(f, s)
            if terms is None:
                terms = target
            slack = mpmath.mpf(10) ** -10 * (1 + abs(target))
            if f.rem is not None:
                r = _eval_scale(f.rem, s)
                if r is None:
                    continue
                slack += 1000 * r
            if abs(vals[0] - vals[1]) > slack / 10:
                continue  # the evaluation itself is not stable at this precision: no evidence either way
            v = vals[1]
            if abs(v - terms) > slack:
                early = (f"a 60-digit evaluation at x = {'-' if sign < 0 else ''}10^{k} gives "
                         f"{mpmath.nstr(v, 12)}, not {mpmath.nstr(target, 12)}"
                         + ("" if terms == target else f" (the expansion there: {mpmath.nstr(terms, 12)})"))
                if agreed:  # it agreed nearer and disagrees farther: not converging to the claim
                    return early
            else:
                agreed, early = True, None
    return early


def _eval_scale(sc: Scale, s: object) -> object | None:
    import mpmath

    try:
        ex = mpmath.fsum(mpmath.mpf(sp.N(c, 70)) * s ** mpmath.mpf(sp.N(g, 70)) for g, c in sc.E) if sc.E else 0
        if mpmath.mag(ex) > 20:
            return None if ex > 0 else mpmath.mpf(0)
        return mpmath.exp(ex) * s ** mpmath.mpf(sp.N(sc.a, 70)) * mpmath.log(s) ** mpmath.mpf(sp.N(sc.m, 70))
    except (ValueError, TypeError, OverflowError):
        return None


def _eval_terms(f: Expansion, s: object) -> object | None:
    import mpmath

    out = mpmath.mpf(0)
    for c, sc in f.terms:
        v = _eval_scale(sc, s)
        if v is None:
            return None
        out += mpmath.mpf(sp.N(c, 70)) * v
    return out
