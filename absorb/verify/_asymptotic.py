"""Limits the checker derives itself: truncated asymptotic expansions as s → +∞.

No sympy ``limit``/``gruntz``/``series`` is used (their answers are not proofs: sympy 1.14
gives ``limit(erfc(p/W - 10)*(p + 1)/p, p, oo) = 2``). Every limit the checker needs is a
limit at s → +∞ of a switch-free formula: at ±∞ directly (x = ±s), at a finite point b from
one side (x = b ± 1/s), unless the formula is structurally continuous at b (then the limit is
its exact value there).

An **expansion** of a formula F(s) is a finite sum of terms c·S(s), strictly decreasing in
growth, plus at most one remainder o(R) or O(R), where every scale is

    S(s) = exp(Σ_β k_β s^β) · s^α · (log s)^m      (β > 0, α and m rational, k_β exact),

so two scales compare exactly (the first nonzero k_β of the quotient by largest β, then α,
then m). Coefficients are exact sympy numbers whose sign is decided or the derivation stops.
The rules, each an exact identity or a textbook bound, are:

* sums and products term by term; equal scales add their coefficients exactly (a sum that is
  not decided to be 0 or not stops the derivation); the remainder of a product is the largest
  of (term × remainder); more than ``_KEEP`` terms are cut into an O(first dropped scale);
* ``1/(t₀(1 + r))``, ``(1 + r)^q``, ``log(1 + r)``, ``exp(ε)`` and a Taylor polynomial
  ``f(L + ε)`` of an analytic head at a finite limit L: the series to order ``_KEEP`` with
  the remainder O(ρ^{K+1}) (o(ρ^{K+1}) when r = o(ρ)), where r → 0;
* ``exp(a)``: the growing terms of ``a`` must be k·s^β (or k·log s, k rational), its
  remainder o(1) — else, for a bounded remainder, the result is only an O(·);
* ``log(c·S·(1 + r))`` with c > 0 = log c + α log s + Σ k_β s^β + log(1 + r) (m = 0 only);
* at ±∞: ``erfc(u) = e^{−u²}/(u√π)·(1 + O(u⁻²))`` (u → +∞), ``erfc(u) = 2 − erfc(−u)``,
  ``erf = 1 − erfc``, ``tanh(u) = 1 − 2e^{−2u}/(1 + e^{−2u})``, ``atan(u) = ±π/2 − atan(1/u)``,
  sinh/cosh by exponentials; a head with a limit at ±∞ falls back to ``limit + o(1)`` when the
  precise rule stops; sin, cos (and every head of a bounded argument with no limit) are O(1).

The limit of an expansion is read off its largest part: a term c·1 gives c; a term or
remainder below 1, or o(1), gives 0; anything else (growing, O(1)) gives no limit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from absorb.verify._pieces import decide_zero

_KEEP = 4  # terms kept, and the order of every series
_S = sp.Symbol("s", positive=True)
_U = sp.Symbol("u", real=True)
_PREC = 60


class Stuck(Exception):
    """The expansion cannot be derived by these rules (the limit is not claimed)."""


# ------------------------------------------------------------------------- constants --
def _sign(c: sp.Expr) -> int:
    """The exact sign of the real constant ``c`` (Stuck when undecided or not real and finite)."""
    if c == 0:
        return 0
    if c.is_Rational:
        return 1 if c > 0 else -1
    if c.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or c.free_symbols:
        raise Stuck(f"{c} is not a finite real constant")
    if c.is_extended_positive is True and c.is_finite is not False:
        return 1
    if c.is_extended_negative is True and c.is_finite is not False:
        return -1
    try:  # (strict: every digit correct, or no value — 10¹⁵⁰·(atan 2 + atan 3) − 10¹⁵⁰·3π/4 is 0 and evaluates to "0.e-10")
        v = sp.N(c, _PREC, strict=True)
    except Exception:  # noqa: BLE001  (PrecisionExhausted: no digit to read a sign from)
        v = None
    if v is not None and not (v.is_number and v.is_real and v.is_finite):
        raise Stuck(f"{c} is not a finite real constant")
    if v is not None and abs(v) > sp.Float(10) ** -40:
        return 1 if v > 0 else -1
    if decide_zero(c) is True:
        return 0
    raise Stuck(f"cannot decide the sign of {c}")


def _const(c: sp.Expr) -> sp.Expr:
    if c.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise Stuck(f"{c} is not finite")
    return c


# ---------------------------------------------------------------------------- scales --
@dataclass(frozen=True)
class Scale:
    """exp(Σ k_β s^β) · s^α · (log s)^m; ``phi`` = ((β, k_β), …) by decreasing β, k_β ≠ 0."""

    phi: tuple[tuple[sp.Rational, sp.Expr], ...] = ()
    alpha: sp.Rational = sp.Integer(0)
    m: sp.Rational = sp.Integer(0)

    def __mul__(self, o: Scale) -> Scale:
        return Scale(_phi_add(self.phi, o.phi, 1), self.alpha + o.alpha, self.m + o.m)

    def power(self, q: sp.Rational) -> Scale:
        if not q.is_Rational:
            raise Stuck(f"irrational power {q} of a scale")
        if q == 0:
            return ONE
        return Scale(tuple((b, k * q) for b, k in self.phi), self.alpha * q, self.m * q)


def _phi_add(p: tuple, q: tuple, sign: int) -> tuple:
    acc: dict[sp.Rational, sp.Expr] = dict(p)
    for b, k in q:
        acc[b] = acc.get(b, sp.Integer(0)) + sign * k
    out = []
    for b in sorted(acc, reverse=True):
        if _sign(acc[b]) != 0:
            out.append((b, acc[b]))
    return tuple(out)


ONE = Scale()


def cmp(a: Scale, b: Scale) -> int:
    """The sign of log(a/b) as s → +∞ (−1, 0, 1), decided exactly."""
    d = _phi_add(a.phi, b.phi, -1)
    if d:
        return _sign(d[0][1])
    for u, v in ((a.alpha, b.alpha), (a.m, b.m)):
        if u != v:
            return 1 if u > v else -1
    return 0


# ------------------------------------------------------------------------ expansions --
@dataclass(frozen=True)
class Expansion:
    """Σ c·S (scales strictly decreasing) + rem, rem = None (exact) or ('o'|'O', R)."""

    terms: tuple[tuple[sp.Expr, Scale], ...] = ()
    rem: tuple[str, Scale] | None = None


ZERO = Expansion()


def _maxrem(a: tuple[str, Scale] | None, b: tuple[str, Scale] | None) -> tuple[str, Scale] | None:
    if a is None or b is None:
        return a if b is None else b
    c = cmp(a[1], b[1])
    if c == 0:
        return ("O" if "O" in (a[0], b[0]) else "o", a[1])
    return a if c > 0 else b


def _above(S: Scale, rem: tuple[str, Scale] | None) -> bool:
    if rem is None:
        return True
    c = cmp(S, rem[1])
    return c > 0 or (c == 0 and rem[0] == "o")


def normal(terms: list[tuple[sp.Expr, Scale]], rem: tuple[str, Scale] | None) -> Expansion:
    grouped: list[list] = []
    for c, S in terms:
        for g in grouped:
            if cmp(g[1], S) == 0:
                g[0] = g[0] + c
                break
        else:
            grouped.append([c, S])
    live = [(c, S) for c, S in grouped if _sign(c) != 0]
    live.sort(key=functools.cmp_to_key(lambda u, v: cmp(v[1], u[1])))
    live = [t for t in live if _above(t[1], rem)]
    if len(live) > _KEEP:
        rem = _maxrem(rem, ("O", live[_KEEP][1]))
        live = [t for t in live[:_KEEP] if _above(t[1], rem)]
    return Expansion(tuple(live), rem)


def const(c: sp.Expr) -> Expansion:
    c = _const(c)
    return ZERO if _sign(c) == 0 else Expansion(((c, ONE),))


def add(a: Expansion, b: Expansion) -> Expansion:
    return normal(list(a.terms + b.terms), _maxrem(a.rem, b.rem))


def scale(a: Expansion, c: sp.Expr) -> Expansion:
    if _sign(c) == 0:
        return ZERO
    return Expansion(tuple((c * k, S) for k, S in a.terms), a.rem)


def mul(a: Expansion, b: Expansion) -> Expansion:
    terms = [(ca * cb, Sa * Sb) for ca, Sa in a.terms for cb, Sb in b.terms]
    rem = None
    if a.rem is not None and b.rem is not None:
        rem = ("o" if "o" in (a.rem[0], b.rem[0]) else "O", a.rem[1] * b.rem[1])
    for x, y in ((a, b), (b, a)):
        if x.terms and y.rem is not None:
            rem = _maxrem(rem, (y.rem[0], x.terms[0][1] * y.rem[1]))
    return normal(terms, rem)


def size(a: Expansion) -> tuple[str, Scale] | None:
    """The largest part: ('t', S) for a leading term, the remainder otherwise, None for 0."""
    if a.terms and _above(a.terms[0][1], a.rem):
        return ("t", a.terms[0][1])
    return a.rem


def _series(coeffs: list[sp.Expr], r: Expansion, tail: bool = True) -> Expansion:
    """Σ coeffs[k]·r^k plus the remainder O(ρ^{K+1}) (o(ρ^{K+1}) when r = o(ρ)); r → 0.
    ``tail=False``: the sum is the function exactly (a polynomial), no remainder."""
    sz = size(r)
    if sz is None:
        return const(coeffs[0])
    kind, R = sz
    c = cmp(R, ONE)
    if c > 0 or (c == 0 and kind != "o"):
        raise Stuck("a series in a quantity that does not tend to 0")
    out, p = const(coeffs[0]), Expansion(((sp.Integer(1), ONE),))
    for ck in coeffs[1:]:
        p = mul(p, r)
        out = add(out, scale(p, ck))
    if not tail:
        return out
    n = len(coeffs)
    return add(out, Expansion((), ("o" if kind == "o" else "O", R.power(sp.Integer(n)))))


def _split_lead(a: Expansion) -> tuple[sp.Expr, Scale, Expansion]:
    """a = c₀·S₀·(1 + r) with r → 0."""
    if not a.terms or not _above(a.terms[0][1], a.rem):
        raise Stuck("no leading term")
    c0, S0 = a.terms[0]
    inv = S0.power(sp.Integer(-1))
    rest = Expansion(tuple((c / c0, S * inv) for c, S in a.terms[1:]),
                     None if a.rem is None else (a.rem[0], a.rem[1] * inv))
    return c0, S0, rest


def recip(a: Expansion) -> Expansion:
    c0, S0, r = _split_lead(a)
    geo = _series([sp.Integer((-1) ** k) for k in range(_KEEP + 1)], r)
    return mul(Expansion(((1 / c0, S0.power(sp.Integer(-1))),)), geo)


def power(a: Expansion, q: sp.Expr) -> Expansion:
    """a^q for a constant q: (c₀S₀)^q·(1 + r)^q by the binomial series (exact up to its order
    for a natural q); a natural power of a remainder-only a is that remainder's power."""
    if q.is_Integer and q < 0:
        return power(recip(a), -q)
    if q == 0:
        return const(sp.Integer(1))
    sz = size(a)
    if q.is_Integer and (sz is None or sz[0] != "t"):
        return ZERO if sz is None else Expansion((), (sz[0], sz[1].power(q)))
    c0, S0, r = _split_lead(a)
    if not q.is_Integer and _sign(c0) <= 0:
        raise Stuck("a non-integer power of a quantity not eventually positive")
    exact = bool(q.is_Integer and q <= _KEEP)  # (1 + r)^q is then the polynomial Σ_{k≤q} C(q,k) r^k
    binom = [sp.binomial(q, k) for k in range(int(q) + 1 if exact else _KEEP + 1)]
    return mul(Expansion(((c0**q, S0.power(q)),)), _series(binom, r, tail=not exact))


def exp_(a: Expansion) -> Expansion:
    phi: list[tuple[sp.Rational, sp.Expr]] = []
    alpha, c0, small = sp.Integer(0), sp.Integer(0), []
    for c, S in a.terms:
        k = cmp(S, ONE)
        if k > 0:
            if not S.phi and S.m == 0 and S.alpha > 0:
                phi.append((S.alpha, c))
            elif not S.phi and S.alpha == 0 and S.m == 1 and c.is_Rational:
                alpha += c
            else:
                raise Stuck(f"exp of a growing term {c}·{S}")
        elif k == 0:
            c0 = c
        else:
            small.append((c, S))
    top = Scale(_phi_add(tuple(sorted(phi, key=lambda t: t[0], reverse=True)), (), 1), alpha, sp.Integer(0))
    if a.rem is not None:
        k = cmp(a.rem[1], ONE)
        if k > 0:
            raise Stuck("exp of an argument known only up to a growing remainder")
        if k == 0 and a.rem[0] == "O":
            return Expansion((), ("O", top))  # e^{bounded} is bounded
    eps = Expansion(tuple(small), a.rem)
    taylor = _series([1 / sp.factorial(k) for k in range(_KEEP + 1)], eps)
    return mul(Expansion(((sp.exp(c0), top),)), taylor)


def log_(a: Expansion) -> Expansion:
    c0, S0, r = _split_lead(a)
    if _sign(c0) <= 0 or S0.m != 0:
        raise Stuck("log of a quantity not eventually positive, or of a power of log s")
    terms = [(sp.log(c0), ONE), (S0.alpha, Scale((), sp.Integer(0), sp.Integer(1)))]
    terms += [(k, Scale((), b, sp.Integer(0))) for b, k in S0.phi]
    logser = [sp.Integer(0)] + [sp.Rational((-1) ** (k + 1), k) for k in range(1, _KEEP + 1)]
    return add(normal([t for t in terms if _sign(t[0]) != 0], None), _series(logser, r))


# ----------------------------------------------------------------------- the heads --
_BOUNDED = (sp.erf, sp.erfc, sp.tanh, sp.atan, sp.sin, sp.cos, sp.exp, sp.sinh, sp.cosh)


def _where(a: Expansion) -> tuple[str, sp.Expr]:
    """('fin', L) for a finite limit L, ('+'|'-', 0) for ±∞, ('bdd', 0) for bounded only."""
    sz = size(a)
    if sz is None:
        return "fin", sp.Integer(0)
    kind, R = sz
    k = cmp(R, ONE)
    if k < 0 or (k == 0 and kind == "o"):
        return "fin", sp.Integer(0)
    if k == 0 and kind == "t":
        return "fin", a.terms[0][0]
    if kind == "t":
        return ("+" if _sign(a.terms[0][0]) > 0 else "-"), sp.Integer(0)
    if k == 0:
        return "bdd", sp.Integer(0)
    raise Stuck("an argument with no known size")


def _taylor(f: type, L: sp.Expr, a: Expansion) -> Expansion:
    eps = add(a, const(-L))
    g = f(_U)
    coeffs = []
    for k in range(_KEEP + 1):
        coeffs.append(_const(g.subs(_U, L) / sp.factorial(k)))
        g = sp.diff(g, _U)
    return _series(coeffs, eps)


def _erfc_plus(a: Expansion) -> Expansion:
    """erfc(a) for a → +∞: e^{−a²}/(a√π)·(1 + O(a⁻²)); else o(1)."""
    try:
        lead = exp_(scale(mul(a, a), sp.Integer(-1)))
        inv = recip(a)
        main = scale(mul(lead, inv), 1 / sp.sqrt(sp.pi))
        _, S0, _ = _split_lead(main)
        rel = size(mul(inv, inv))
        return add(main, Expansion((), ("O", S0 * rel[1])))
    except Stuck:
        return Expansion((), ("o", ONE))


def _head(f: type, a: Expansion) -> Expansion:
    where, L = _where(a)
    if where == "bdd":
        if f in _BOUNDED:
            return Expansion((), ("O", ONE))
        raise Stuck(f"{f.__name__} of a bounded argument with no limit")
    if where == "fin":
        return _taylor(f, L, a)
    neg = scale(a, sp.Integer(-1))
    up = where == "+"
    if f is sp.erfc:
        return _erfc_plus(a) if up else add(const(sp.Integer(2)), scale(_erfc_plus(neg), sp.Integer(-1)))
    if f is sp.erf:
        return add(const(sp.Integer(1)), scale(_erfc_plus(a), sp.Integer(-1))) if up else \
            add(const(sp.Integer(-1)), _erfc_plus(neg))
    if f is sp.tanh:
        sgn = 1 if up else -1
        try:
            e = exp_(scale(a, sp.Integer(-2 * sgn)))
            frac = mul(e, recip(add(const(sp.Integer(1)), e)))
            return scale(add(const(sp.Integer(1)), scale(frac, sp.Integer(-2))), sp.Integer(sgn))
        except Stuck:
            return Expansion(((sp.Integer(sgn), ONE),), ("o", ONE))
    if f is sp.atan:
        half = sp.pi / 2 if up else -sp.pi / 2
        try:
            return add(const(half), scale(_taylor(sp.atan, sp.Integer(0), recip(a)), sp.Integer(-1)))
        except Stuck:
            return Expansion(((half, ONE),), ("o", ONE))
    if f in (sp.sin, sp.cos):
        return Expansion((), ("O", ONE))
    if f is sp.exp:
        return exp_(a)
    if f in (sp.sinh, sp.cosh):
        other = exp_(neg)
        return scale(add(exp_(a), other if f is sp.cosh else scale(other, sp.Integer(-1))), sp.Rational(1, 2))
    raise Stuck(f"no rule for {f.__name__} at infinity")


def expand(e: sp.Expr, s: sp.Symbol = _S) -> Expansion:
    """The expansion of ``e`` (switch-free, in the one variable ``s``) as s → +∞."""
    memo: dict[sp.Expr, Expansion] = {}

    def go(n: sp.Expr) -> Expansion:
        if n in memo:
            return memo[n]
        if not n.has(s):
            out = const(n)
        elif n == s:
            out = Expansion(((sp.Integer(1), Scale((), sp.Integer(1), sp.Integer(0))),))
        elif isinstance(n, sp.Add):
            out = ZERO
            for t in n.args:
                out = add(out, go(t))
        elif isinstance(n, sp.Mul):
            out = Expansion(((sp.Integer(1), ONE),))
            for t in n.args:
                out = mul(out, go(t))
        elif isinstance(n, sp.Pow):
            b, q = n.args
            if not q.has(s):
                out = power(go(b), q)
            else:
                out = exp_(mul(go(q), log_(go(b))))
        elif isinstance(n, sp.exp):
            out = exp_(go(n.args[0]))
        elif isinstance(n, sp.log):
            out = log_(go(n.args[0]))
        elif isinstance(n, (sp.erf, sp.erfc, sp.tanh, sp.atan, sp.sin, sp.cos, sp.sinh, sp.cosh)):
            out = _head(n.func, go(n.args[0]))
        else:
            raise Stuck(f"no rule for the head {type(n).__name__}")
        memo[n] = out
        return out

    return go(e)


def limit_of(a: Expansion) -> sp.Expr | None:
    """The finite limit of an expansion, or None (infinite, oscillating or unknown)."""
    try:
        where, L = _where(a)
    except Stuck:
        return None
    return L if where == "fin" else None


def limit_at_infinity(e: sp.Expr, x: sp.Symbol, sign: int = 1) -> sp.Expr | None:
    """lim e as x → sign·∞ (finite), derived by expansion; None when not derived."""
    return why_not_at_infinity(e, x, sign)[0]


def why_not_at_infinity(e: sp.Expr, x: sp.Symbol, sign: int = 1) -> tuple[sp.Expr | None, str]:
    """(the finite limit, "") or (None, what stopped the derivation)."""
    try:
        a = expand(e.subs(x, sign * _S))
    except Stuck as exc:
        return None, f"the expansion stopped: {exc}"
    except Exception as exc:  # noqa: BLE001 - sympy raises assorted errors on hard input: not derived
        return None, f"the expansion stopped: {type(exc).__name__}"
    L = limit_of(a)
    if L is None:
        sz = size(a)
        return None, "it grows without bound" if sz is None or sz[0] == "t" else \
            f"it is known only up to {sz[0]}({_show(sz[1])})"
    return L, ""


def _show(S: Scale) -> str:
    parts = [f"exp({' + '.join(f'{k}*s**{b}' for b, k in S.phi)})"] if S.phi else []
    parts += [f"s**{S.alpha}"] if S.alpha != 0 else []
    parts += [f"log(s)**{S.m}"] if S.m != 0 else []
    return "·".join(parts) or "1"


def continuous_at(e: sp.Expr, x: sp.Symbol, b: sp.Expr) -> bool:
    """The switch-free ``e`` is real analytic near b: every power with a non-natural exponent
    has a base that is nonzero at b (positive for a non-integer or non-constant exponent), and
    every log a positive argument at b; the other heads are entire."""
    for node in sp.preorder_traversal(e):
        if isinstance(node, sp.Pow) and not (node.exp.is_Integer and node.exp >= 0) and node.base.has(x):
            need_pos = not node.exp.is_Integer
            base = node.base.subs(x, b)
        elif isinstance(node, sp.Pow) and node.exp.has(x) and not node.base.has(x):
            need_pos, base = True, node.base
        elif isinstance(node, sp.log) and node.args[0].has(x):
            need_pos, base = True, node.args[0].subs(x, b)
        else:
            continue
        try:
            sg = _sign(base)
        except Stuck:
            return False
        if sg == 0 or (need_pos and sg < 0):
            return False
    return True


def limit_at_point(e: sp.Expr, x: sp.Symbol, b: sp.Expr, side: int) -> sp.Expr | None:
    """lim e as x → b from the right (side = 1) or the left (side = −1), finite, or None."""
    try:
        if continuous_at(e, x, b):  # also when e is constant
            v = e.subs(x, b)
            _sign(v)  # a finite real number, or Stuck
            return v
        return limit_of(expand(e.subs(x, b + side / _S)))
    except Stuck:
        return None
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not derived
        return None

__all__ = ["Expansion", "Scale", "Stuck", "continuous_at", "expand", "limit_at_infinity", "limit_at_point", "limit_of",
           "why_not_at_infinity"]
