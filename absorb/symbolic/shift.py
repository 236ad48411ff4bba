"""Two facts about a user's σ that let more witnesses be built and checked.

* :func:`shifted_flip` — σ(z) − σ(−z − 2s) = c·(z + s) for every real z, with exact constants
  c ≠ 0 and s ≠ 0: σ is a shifted τ(y) = σ(y − s) with the plain flip identity
  τ(y) − τ(−y) = c·y (``Max(0, x − 3/2)``: τ = ReLU, s = −3/2; ``(x+1)/(1+exp(−(x+1)))``: τ = SiLU,
  s = 1). Flipping unit i then needs b'_up,i = −b_up,i − 2s besides the negated row (an index-set
  witness with biases). The candidate s comes from the asymptotic constants σ(z) = L±·z + A± + o(1)
  at ±∞ (by the rules of :mod:`absorb.symbolic.asymptotic`): at +∞ the identity reads
  (L₊ + L₋)z + A₊ − A₋ + 2s·L₋ = c·z + c·s, so c = L₊ + L₋ and s = (A₊ − A₋)/(L₊ − L₋). The
  candidate is only a candidate: the identity is *proved* for it by the exact algebra of
  :func:`absorb.symbolic.properties._flip_identity` applied to τ(y) = σ(y − s) (for every real y,
  y = 0 included), which is the identity for every z = y − s.
* :func:`expression_bounds` — for a piecewise-linear σ written with ``Add``, ``Mul`` by constants,
  ``Max``, ``Min`` and ``Abs`` of x and rational constants: a global Lipschitz constant L
  (structural: a sum's is the sum of its terms', a constant multiple's |c| times, Max/Min/Abs the
  largest of their arguments'; rigorous, and the exact max |slope| for the usual forms) and a bound
  |σ̂(z) − σ(z)| ≤ a·|z| + b on the float64 evaluation σ̂ of that expression (every sum of k
  terms within γ_{k−1} of its terms' absolute sum, in any order; every product likewise; a
  rational constant within u of itself; Max, Min and Abs exact), so that the witness checks
  can allow for σ's rounding as they do for a built-in's. None for any other expression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from absorb.model.activations import X
from absorb.symbolic.properties import Property, Status, _flip_identity, _get, _is_zero


# ---------------------------------------------------------------------------------------
def _shifted_flip(e: sp.Expr) -> Property:
    from absorb.symbolic import asymptotic as asy

    name = "shifted_flip"
    what = "σ(z) − σ(−z − 2s) = c·(z + s)"
    steps = [rf"\sigma(x) = {sp.latex(e)}"]
    slopes = {sign: asy.limit(e, sign, 1) for sign in (1, -1)}
    if not all(slopes[sign].kind == "finite" for sign in (1, -1)):
        return Property(name, Status.UNKNOWN, "no candidate shift: σ(z)/z has no finite limits at ±∞ by the asymptotic rules",
                        steps=tuple(steps))
    lp, lm = slopes[1].value, slopes[-1].value
    consts = {sign: asy.limit(sp.expand(e - (lp if sign > 0 else lm) * X), sign, 0) for sign in (1, -1)}
    if not all(consts[sign].kind == "finite" for sign in (1, -1)) or _is_zero(lp - lm) is not False:
        # (σ − L±z may grow like log |z|: an even part of τ, which the identity allows; L₊ = L₋: σ is z + even, no shift)
        found = _other_candidates(e, lp + lm) if _is_zero(lp - lm) is False else None
        if found is not None:
            return found
        return Property(name, Status.UNKNOWN, "no candidate shift: σ(z) − L±·z has no finite limits at ±∞ by the "
                        "asymptotic rules, or L₊ = L₋, and no break point or root of the identity at z = 0 gave one",
                        steps=tuple(steps))
    ap, am = consts[1].value, consts[-1].value
    exact = sp.simplify((ap - am) / (lp - lm))
    # (the asymptotic constants are exact unless σ holds floats: nsimplify only then — it rounds 1 + 2⁻⁵² to 1 — and
    # a candidate it produced is not the only possible s, so its failure refutes nothing)
    s = exact if not exact.atoms(sp.Float) else sp.nsimplify(exact, rational=False)
    approximate = s != exact
    steps.append(rf"\sigma(x) = L_\pm x + A_\pm + o(1):\ L_+ = {sp.latex(lp)},\ L_- = {sp.latex(lm)},\ A_+ = {sp.latex(ap)},"
                 rf"\ A_- = {sp.latex(am)} \quad (\text{{by the asymptotic rules; a candidate only}})")
    steps.append(rf"s = \frac{{A_+ - A_-}}{{L_+ - L_-}} = {sp.latex(s)}")
    if not (s.is_number and s.is_real and s.is_finite):
        # (an irrational s — √2, π — is proved like a rational one; no exact witness can carry it in float64 biases,
        # but the tolerance screens use it: pairs with biases −s rounded are within 2L|s − ŝ| of it)
        return Property(name, Status.UNKNOWN, f"the candidate shift s = {s} is not a real number", steps=tuple(steps))
    if s == 0:
        return Property(name, Status.UNKNOWN, "the candidate shift is s = 0 (the plain flip identity's case)", steps=tuple(steps))
    tau = e.subs(X, X - s)
    steps.append(rf"\tau(y) = \sigma(y - s) = {sp.latex(tau)}")
    flip = _flip_identity(tau, gated=False)
    steps += [st.replace(r"\sigma", r"\tau") for st in flip.steps[1:]]
    if not flip.proved:
        status = Status.REFUTED if flip.status is Status.REFUTED and not approximate else Status.UNKNOWN
        return Property(name, status, f"{what} fails for the candidate s = {s} ({flip.statement} for τ(y) = σ(y − s))",
                        steps=tuple(steps), witness=None if flip.witness is None else {"s": s, **flip.witness})
    c = flip.value["c"]
    steps.append(rf"\tau(y) - \tau(-y) = c\,y \ \forall y \in \mathbb{{R}} \ \Rightarrow\ \sigma(z) - \sigma(-z - 2s) = c\,(z + s)"
                 rf"\ \forall z \quad (y = z + s):\ c = {sp.latex(c)},\ s = {sp.latex(s)}")
    return Property(name, Status.PROVED, f"{what} holds for all z with c = {c}, s = {s}", value={"c": c, "s": s},
                    steps=tuple(steps))


def _near_identity(e: sp.Expr, s: sp.Expr, c: sp.Expr) -> bool:
    """The identity σ(z) − σ(−z − 2s) = c·(z + s) at three points to 10⁻²⁰ (50 digits): a filter, not a proof."""
    import mpmath as mp

    try:
        h = sp.lambdify(X, e, modules="mpmath")
        with mp.workdps(50):
            sv, cv = mp.mpf(sp.N(s, 60)), mp.mpf(sp.N(c, 60))
            return all(abs(h(z) - h(-z - 2 * sv) - cv * (z + sv)) <= mp.mpf(10) ** -20 * (1 + abs(h(z)) + abs(z) + abs(sv))
                       for z in (mp.mpf("0.3"), mp.mpf("-1.7"), mp.mpf("2.9")))
    except (ValueError, ZeroDivisionError, TypeError, OverflowError, ArithmeticError, NameError):
        return False


def _other_candidates(e: sp.Expr, c: sp.Expr) -> Property | None:
    """The shifted flip proved for a candidate s read another way, or None: minus a break point of σ (a zero of a
    Max/Min/Abs argument, linear in x), or a root of the identity at z = 0, σ(0) − σ(−2s) = c·s, found at 50 digits
    and reconstructed exactly (a rational with denominator ≤ 10⁹ agreeing to 10⁻³⁰, or in σ's own constants). Each
    is proved like the asymptotic candidate; a failure refutes nothing (s is not determined here)."""
    import mpmath as mp

    cands: list[sp.Expr] = []
    for node in sp.preorder_traversal(e):
        if isinstance(node, (sp.Max, sp.Min, sp.Abs)):
            args = list(node.args)
            diffs = args if isinstance(node, sp.Abs) else [a - b for a, b in zip(args, args[1:])]
            for g in diffs:
                if g.has(X) and sp.diff(g, X, 2) == 0 and sp.diff(g, X).is_number:
                    cands.append(-sp.solve(sp.Eq(g, 0), X)[0])
    try:
        h = sp.lambdify(X, e, modules="mpmath")
        with mp.workdps(50):
            h0, cf = h(mp.mpf(0)), mp.mpf(sp.N(c, 60))
            for start in (-3, -1, -0.25, 0.25, 1, 3):
                try:
                    r = mp.findroot(lambda t: h0 - h(-2 * t) - cf * t, mp.mpf(start), tol=mp.mpf(10) ** -40)
                except (ValueError, ZeroDivisionError, TypeError, ArithmeticError):
                    continue
                q = Fraction(int(mp.floor(r * 10**30)), 10**30).limit_denominator(10**9)
                if abs(r - mp.mpf(q.numerator) / q.denominator) < mp.mpf(10) ** -30:
                    cands.append(sp.Rational(q.numerator, q.denominator))
    except (TypeError, ValueError, NameError, AttributeError):
        pass
    for s in list(dict.fromkeys(c for c in cands if c.is_number and c.is_real and c != 0))[:8]:
        if not _near_identity(e, s, c):  # (a numeric filter: sympy can spend minutes proving a wrong candidate)
            continue
        flip = _flip_identity(e.subs(X, X - s), gated=False)
        if flip.proved:
            cc = flip.value["c"]
            steps = (rf"\sigma(x) = {sp.latex(e)}", rf"s = {sp.latex(s)} \quad (\text{{a candidate: a break point or a root at }} z = 0)",
                     rf"\tau(y) = \sigma(y - s) = {sp.latex(e.subs(X, X - s))}",
                     *(st.replace(r"\sigma", r"\tau") for st in flip.steps[1:]),
                     rf"\tau(y) - \tau(-y) = c\,y \ \forall y \Rightarrow\ \sigma(z) - \sigma(-z - 2s) = c\,(z + s)\ \forall z:\ c = {sp.latex(cc)}")
            return Property("shifted_flip", Status.PROVED, f"σ(z) − σ(−z − 2s) = c·(z + s) holds for all z with c = {cc}, s = {s}",
                            value={"c": cc, "s": s}, steps=steps)
    return None


def shifted_flip(act: object) -> Property:
    """Decide σ(z) − σ(−z − 2s) = c·(z + s) for every real z (c ≠ 0, rational s ≠ 0): the identity
    that lets flipping hidden units of a σ shifted from a flip-identity τ absorb the skip."""
    return _get(act, "shifted_flip")  # type: ignore[arg-type]  # (registered by absorb.symbolic.properties)


# ---------------------------------------------------------------------------------------
_U = Fraction(1, 2**53)
_TINY = Fraction(1, 2**1074)


def _gamma(k: int) -> Fraction:
    return k * _U / (1 - k * _U)


@dataclass(frozen=True)
class _Bound:
    """|v(z)| ≤ m1|z| + m0 (exact v), |v̂(z) − v(z)| ≤ e1|z| + e0 (float64 v̂), Lip(v) ≤ lip."""

    m1: Fraction
    m0: Fraction
    e1: Fraction
    e0: Fraction
    lip: Fraction


def _walk(e: sp.Expr) -> _Bound | None:
    if e == X:
        return _Bound(Fraction(1), Fraction(0), Fraction(0), Fraction(0), Fraction(1))
    if e.is_Rational:
        r = Fraction(int(e.p), int(e.q))
        try:
            rf = Fraction(float(r))
        except OverflowError:
            return None
        return _Bound(Fraction(0), abs(r), Fraction(0), abs(rf - r), Fraction(0))
    args = [_walk(a) for a in e.args]
    if not args or any(a is None for a in args):
        return None
    ch: list[_Bound] = args  # type: ignore[assignment]
    k = len(ch)
    if isinstance(e, sp.Add):
        m1, m0 = sum((a.m1 for a in ch), Fraction(0)), sum((a.m0 for a in ch), Fraction(0))
        e1, e0 = sum((a.e1 for a in ch), Fraction(0)), sum((a.e0 for a in ch), Fraction(0))
        g = _gamma(k - 1)
        return _Bound(m1, m0, e1 + g * (m1 + e1), e0 + g * (m0 + e0) + k * _TINY, sum((a.lip for a in ch), Fraction(0)))
    if isinstance(e, sp.Mul):
        var = [i for i, a in enumerate(e.args) if a.has(X)]
        if len(var) > 1:
            return None  # a product of two functions of x: not piecewise linear
        j = var[0] if var else 0
        a = ch[j]
        C, Ch = Fraction(1), Fraction(1)  # |Π c_i| and Π (|c_i| + err_i) over the constant factors
        for i, b in enumerate(ch):
            if i != j:
                C, Ch = C * b.m0, Ch * (b.m0 + b.e0)
        G = Ch * (1 + _gamma(k - 1))
        return _Bound(C * a.m1, C * a.m0, (G - C) * a.m1 + G * a.e1, (G - C) * a.m0 + G * a.e0 + k * _TINY, C * a.lip)
    if isinstance(e, (sp.Max, sp.Min)) or (isinstance(e, sp.Abs) and k == 1):
        return _Bound(max(a.m1 for a in ch), max(a.m0 for a in ch), max(a.e1 for a in ch), max(a.e0 for a in ch),
                      max(a.lip for a in ch))
    return None


def even_growth(expr: sp.Expr, c: Fraction, homogeneous: bool = False) -> Fraction | None:
    """A K with |σ(z) − (c/2)·z| ≤ K|z| for every real z, for a piecewise-linear σ (the module's
    docstring) with σ(z) − σ(−z) = c·z: the least of the structural bounds |v(z)| ≤ m1|z| + m0
    (with m0 = 0) of v = σ(x) − (c/2)x and of v = (σ(x) + σ(−x))/2 (the same function, written
    two ways), of v's pieces' largest slope (:func:`_branch_slopes`), and, for σ positively
    homogeneous of degree 1 (``homogeneous``, proved by the caller), max(|v(1)|, |v(−1)|);
    None when neither structural bound has m0 = 0."""
    half = sp.Rational(c.numerator, c.denominator) / 2
    odd_free = sp.expand(expr - half * X)
    ks = []
    if homogeneous:  # v is then positively homogeneous of degree 1 too: |v(z)|/|z| is |v(±1)|
        ends = [sp.nsimplify(expr.subs(X, t) - half * t) for t in (1, -1)]
        if all(e.is_Rational for e in ends):
            ks.append(max(abs(Fraction(int(e.p), int(e.q))) for e in ends))
    for v in (odd_free, (expr + expr.subs(X, -X)) / 2):
        try:
            got = _walk(v)
        except RecursionError:
            got = None
        if got is not None and got.m0 == 0:
            ks.append(got.m1)
    if ks:  # the pieces' slopes (σ − (c/2)x is continuous, piecewise linear and 0 at 0: |·| ≤ max |slope|·|z|)
        k = _branch_slopes(odd_free)
        if k is not None:
            ks.append(k)
    return min(ks) if ks else None


_MAX_SWITCHES = 6
"""Most Max/Min/Abs nodes whose branches :func:`_branch_slopes` multiplies out (2^6 = 64 branches at most)."""


def _branch_slopes(v: sp.Expr) -> Fraction | None:
    """max |slope| over the branches of v's Piecewise form (``piecewise_fold``) that are taken at some
    point of a dense sample of the line (a branch whose condition no sample meets is taken as never
    reached: a slope only a narrower interval reaches is missed — the tolerance screen that reads this
    only withholds a verdict); None when a branch is not linear."""
    import numpy as np

    if sum(1 for a in sp.preorder_traversal(v) if isinstance(a, (sp.Max, sp.Min, sp.Abs))) > _MAX_SWITCHES:
        return None  # (piecewise_fold multiplies out every switch's branches: 2^k of them)
    try:
        pw = sp.piecewise_fold(v.rewrite(sp.Piecewise))
        branches = list(pw.args) if isinstance(pw, sp.Piecewise) else [(pw, sp.true)]
        z = np.concatenate([-np.geomspace(1e8, 1e-8, 401), np.linspace(-100, 100, 4001), np.geomspace(1e-8, 1e8, 401)])
        taken = np.zeros(z.shape, dtype=bool)
        best = Fraction(0)
        for e, cond in branches:
            slope = sp.diff(e, X)
            if slope.has(X) or not slope.is_Rational:
                return None
            here = np.broadcast_to(np.asarray(sp.lambdify(X, cond, "numpy")(z), dtype=bool), z.shape) & ~taken
            taken |= here
            if here.any():
                best = max(best, abs(Fraction(int(slope.p), int(slope.q))))
        return best if taken.all() else None
    except (TypeError, ValueError, AttributeError, RecursionError):
        return None


def _up(q: Fraction) -> float:
    """A float ≥ q (q ≥ 0)."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def expression_bounds(expr: sp.Expr) -> tuple[Fraction, float, float] | None:
    """``(L, a, b)`` for a piecewise-linear σ (the module's docstring): |σ(p) − σ(q)| ≤ L|p − q|
    for all real p, q (L exact), and |σ̂(z) − σ(z)| ≤ a|z| + b for the float64 evaluation σ̂ of
    the expression at a float z; None for any other expression."""
    try:
        got = _walk(expr)
    except RecursionError:
        return None
    if got is None or got.lip == 0:
        return None
    return got.lip, _up(got.e1), _up(got.e0)


def flip_defect(expr: sp.Expr, c: Fraction) -> Fraction | None:
    """sup over z ≠ 0 of |δ(z)|/|z|, δ(z) = σ(z) − σ(−z) − c·z, exactly, for a piecewise-linear σ: δ is piecewise
    linear and δ(0) = 0, so on each linear stretch |δ(z)|/|z| is monotone between its ends — the sup is at a break
    point, or the slope next to 0, or the outer slopes at ±∞. The break points lie where a condition of δ's
    Piecewise form (``piecewise_fold``) changes, each the root of one linear relation; δ is evaluated exactly there,
    at half the smallest nonzero |break point| (the stretch at 0) and twice the largest (the outer stretches).
    None when δ is not piecewise linear with rational break points, or has more than :data:`_MAX_SWITCHES` switches."""
    delta = sp.expand(expr - expr.subs(X, -X) - sp.Rational(c.numerator, c.denominator) * X)
    if sum(1 for a in sp.preorder_traversal(delta) if isinstance(a, (sp.Max, sp.Min, sp.Abs))) > _MAX_SWITCHES:
        return None
    try:
        pw = sp.piecewise_fold(delta.rewrite(sp.Piecewise))
        branches = list(pw.args) if isinstance(pw, sp.Piecewise) else [(pw, sp.true)]
        pts: set[sp.Rational] = set()
        for e, cond in branches:
            if sp.diff(e, X, 2) != 0 or not sp.diff(e, X).is_Rational:
                return None
            for rel in (cond.atoms(sp.core.relational.Relational) if cond not in (sp.true, sp.false) else ()):
                root = sp.solve(sp.Eq(rel.lhs - rel.rhs, 0), X)
                if len(root) != 1 or not root[0].is_Rational:
                    return None
                pts.add(root[0])
        nonzero = [p for p in pts if p != 0]
        lo = min((abs(p) for p in nonzero), default=sp.Integer(1)) / 2
        hi = 2 * max((abs(p) for p in nonzero), default=sp.Integer(1))
        best = Fraction(0)
        for z in [*nonzero, lo, -lo, hi, -hi, 2 * hi, -2 * hi]:
            v = delta.subs(X, z)
            if not v.is_Rational:
                return None
            best = max(best, abs(Fraction(int(v.p), int(v.q)) / Fraction(int(sp.Rational(z).p), int(sp.Rational(z).q))))
        for a, b in ((hi, 2 * hi), (-hi, -2 * hi)):  # the outer slopes
            s = (delta.subs(X, b) - delta.subs(X, a)) / (b - a)
            if not s.is_Rational:
                return None
            best = max(best, abs(Fraction(int(s.p), int(s.q))))
        return best
    except (TypeError, ValueError, AttributeError, NotImplementedError, RecursionError):
        return None
