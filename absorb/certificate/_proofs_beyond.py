"""Machine-checked proofs beyond the paper: boundedness, the growth at infinity (asymptotic skeleton,
leaky reduction), parity and exponential activations. Part of :mod:`absorb.certificate.proofs`."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp

from absorb.certificate._proof_core import (
    P,
    Proof,
    ProofError,
    T,
    Z,
    _equal,
    _fail,
    _mat,
    _vec,
    _zero,
)

# ---------------------------------------------------------------------- boundedness --

BOUNDED_BY_INTERVAL: dict[str, str] = {r"\mathrm{erf}(z)": "expr:erf(x)", r"e^{-z^2}": "expr:exp(-x**2)"}
"""Bounded activations that sympy cannot show continuous (erf) or that need no limits."""
GPT_OSS_UNIT = ("expr:Min(x, 7)/(1 + exp(-1.702*Min(x, 7)))", "expr:Max(-7, Min(x, 7)) + 1")
"""gpt-oss's gate g and value activation h (swiglu_limit 7): both bounded, so each unit g·h is."""


def prove_boundedness() -> Proof:
    pf = Proof(
        "boundedness",
        "Boundedness argument",
        "beyond the paper (docs/results/bounded.md)",
        r"If $\sigma$ is bounded on $\mathbb{R}$ (continuous with finite limits at $\pm\infty$, as tanh and "
        r"sigmoid; "
        r"or by an interval bound over its expression, as erf), every residual-free ungated block is bounded, "
        r"while "
        r"$Mx+B(x)$ is unbounded for $M\ne0$: the skip cannot be absorbed, at any width, with or without "
        r"biases. The same holds for gated blocks whose gate $g$ and value activation $h$ are both bounded "
        r"(gpt-oss's clamped unit).",
        r"The activations $\tanh$, the logistic sigmoid, $\mathrm{erf}$ and $e^{-z^2}$; gpt-oss's gate and value "
        r"activations ($L=7$); symbolic $a=|Me_j|>0$ and $K=\sup|B|$.",
    )
    for name, expr in (("tanh", sp.tanh(Z)), ("sigmoid", 1 / (1 + sp.exp(-Z)))):
        hi, lo = sp.limit(expr, Z, sp.oo), sp.limit(expr, Z, -sp.oo)
        cont = sp.calculus.util.continuous_domain(expr, Z, sp.S.Reals)
        if not (hi.is_finite and lo.is_finite and cont == sp.S.Reals):
            raise ProofError(f"sympy could not prove {name} bounded")
        pf.add(
            rf"$\sigma={name}$ is continuous on $\mathbb{{R}}$ with finite limits:",
            rf"\lim_{{z\to+\infty}}\sigma(z) = {sp.latex(hi)},\quad \lim_{{z\to-\infty}}\sigma(z) = {sp.latex(lo)}",
            "limit and continuous_domain",
        )
    from absorb.model.activations import get_activation
    from absorb.symbolic.growth import bounded_on_reals

    for name, spec in BOUNDED_BY_INTERVAL.items():
        pr = bounded_on_reals(get_activation(spec))
        if not pr.proved or pr.value.get("route") != "interval":
            raise ProofError(f"sympy could not bound {name} by intervals: {pr.statement}")
        pf.add(
            rf"$\sigma(z)={name}$ is bounded by an interval bound over its expression (each node's range enclosed, "
            r"ends rounded outward):",
            rf"\sigma(z) \in [{sp.latex(pr.value['lower'])}, {sp.latex(pr.value['upper'])}]"
            r"\quad\text{for every real } z",
            "interval enclosure of the expression tree",
        )
    g_spec, h_spec = GPT_OSS_UNIT
    g_act, h_act = get_activation(g_spec), get_activation(h_spec)
    pg, ph = bounded_on_reals(g_act), bounded_on_reals(h_act)
    in_z = lambda e: sp.latex(e.subs({s: Z for s in e.free_symbols}))  # noqa: E731 - the proof's variable is z
    if not (pg.proved and ph.proved):
        raise ProofError(f"sympy could not prove gpt-oss's gate and value activations bounded: {pg.statement}; {ph.statement}")
    pf.add(
        rf"Gated, gpt-oss's unit: the gate $g(z)={in_z(g_act.expr)}$ is continuous with finite limits "
        rf"${sp.latex(pg.value.get('limit_plus'))}$ at $+\infty$ and ${sp.latex(pg.value.get('limit_minus'))}$ at $-\infty$, "
        rf"and the value activation $h(z)={in_z(h_act.expr)}$ lies in "
        rf"$[{sp.latex(ph.value.get('lower'))}, {sp.latex(ph.value.get('upper'))}]$; so every unit is bounded:",
        r"|g(z)\,h(y)| \le \sup|g|\,\sup|h| < \infty\quad\text{for all real } z, y",
        "the σ analysis of each factor (asymptotic rules and interval enclosure)",
    )
    pf.add(
        r"A continuous function with finite limits at $\pm\infty$ is bounded; so, in either case, $|\sigma|\le "
        r"c$; then for every "
        r"residual-free block",
        r"|B'(x)| \le \sum_i |w'_i|\,c + |b'_{\mathrm{down}}| =: K' < \infty",
        "triangle inequality (stated)",
    )
    a, K = sp.Symbol("a", positive=True), sp.Symbol("K", nonnegative=True)
    lim = sp.limit(T * a - K, T, sp.oo)
    if lim != sp.oo:
        raise ProofError("sympy could not show t a - K -> oo")
    pf.add(
        r"Pick $j$ with $a=|Me_j|>0$. Since $|B|\le K$ too, along $x=te_j$:",
        r"|f(te_j)| \ge t\,a - K \xrightarrow[t\to\infty]{} \infty",
        "limit(t*a - K, t, oo) = oo",
    )
    pf.conclusion = r"So $f$ is unbounded and no bounded $B'$ equals it: the skip cannot be absorbed."
    return pf


# -------------------------------------------------- beyond the paper: growth at infinity --


def _flip_block_check(c: sp.Expr, what: str, claimed: sp.Expr | None = None) -> str:
    """Block-level flip for any σ with σ(z) − σ(−z) = c·z, biases included: negating u_i and
    b_up,i for i ∈ S and adding c·W_down[:,S] b_up[S] to the output bias gives
    B'(x) = B(x) − c·W_down[:,S] W_up[S,:] x. Checked on W_up 3×2, W_down 2×3, S = {1, 2};
    ``claimed`` (default c) is the constant the right-hand side uses."""
    claimed = c if claimed is None else claimed
    sigma = sp.Function("sigma")

    def rule(e: sp.Expr) -> sp.Expr:  # σ(−y) = σ(y) − c·y on every σ whose argument leads with a minus
        return e.replace(
            lambda q: (
                isinstance(q, sp.Function) and q.func == sigma and sp.expand(q.args[0]).could_extract_minus_sign()
            ),
            lambda q: sigma(sp.expand(-q.args[0])) + c * sp.expand(q.args[0]),
        )

    U, D = _mat("u", 3, 2), _mat("w", 2, 3)
    bu, bd = _vec("b", 3), _vec("c", 2)
    x = _vec("x", 2)
    S = [0, 1]
    Uf, bf = U.copy(), bu.copy()
    for i in S:
        Uf[i, :], bf[i] = -U[i, :], -bu[i]
    DS, US, bS = D[:, S], U[S, :], bu[S, :]
    B = D * (U * x + bu).applyfunc(lambda a: sigma(sp.expand(a))) + bd
    Bp = D * (Uf * x + bf).applyfunc(lambda a: sigma(sp.expand(a))) + bd + c * DS * bS
    return _equal(rule(Bp), B - claimed * DS * US * x, what)


def _sigma_inf(a: sp.Expr, b: sp.Expr) -> Callable[[sp.Expr], sp.Expr]:
    return lambda z: a * sp.Max(0, z) + b * z


SKELETON_ACTIVATIONS: dict[str, tuple[str, sp.Expr, sp.Expr]] = {
    # name: (activation spec, L+, L-), each decided by absorb.symbolic.growth.asymptotic_slopes
    "GELU": ("gelu", sp.Integer(1), sp.Integer(0)),
    "GELU (tanh approximation)": ("gelu_tanh", sp.Integer(1), sp.Integer(0)),
    "SiLU": ("silu", sp.Integer(1), sp.Integer(0)),
    "quick-GELU": ("quick_gelu", sp.Integer(1), sp.Integer(0)),
    "softplus": ("softplus", sp.Integer(1), sp.Integer(0)),
    "ELU": ("expr:Max(0,x)+Min(0,exp(x)-1)", sp.Integer(1), sp.Integer(0)),
    "Mish": ("expr:x*tanh(log(1+exp(x)))", sp.Integer(1), sp.Integer(0)),
    "tanh": ("tanh", sp.Integer(0), sp.Integer(0)),
    "sigmoid": ("sigmoid", sp.Integer(0), sp.Integer(0)),
}


def prove_asymptotic_skeleton() -> Proof:
    pf = Proof(
        "asymptotic_skeleton",
        "The asymptotic skeleton of a block with biases",
        "beyond the paper",
        r"Let $\sigma$ be finite at every real point with finite slopes "
        r"$L_\pm=\lim_{s\to\pm\infty}\sigma(s)/s$, and "
        r"$\sigma_\infty(z)=a\,\mathrm{ReLU}(z)+b\,z$ with $a=L_+-L_-$, $b=L_-$. For every block "
        r"$f(x)=Mx+W_{\mathrm{down}}\sigma(W_{\mathrm{up}}x+b_{\mathrm{up}})+b_{\mathrm{down}}$ and every $v$, "
        r"$f(tv)/t\to f_\infty(v)=Mv+W_{\mathrm{down}}\sigma_\infty(W_{\mathrm{up}}v)$ as $t\to\infty$, "
        r"whatever the "
        r"biases; a residual-free block $g$ of width $N$ (biases or not) has $g(tv)/t\to W'_{\mathrm{down}}"
        r"\sigma_\infty(W'_{\mathrm{up}}v)$. Hence if $f$ is absorbable at width $N$, the bias-free skeleton "
        r"$f_\infty$ is absorbable at width $N$ with activation $\sigma_\infty$. If $a=b=0$ (bounded or "
        r"sublinear "
        r"$\sigma$) this forces $M=0$.",
        r"The scalar limit for ReLU and leaky ReLU (a general slope $\alpha>0$) on the sign cases of $z$ and "
        r"of a "
        r"general real offset $c$; the slopes $L_\pm$ of GELU (both forms), SiLU, quick-GELU, softplus, ELU, "
        r"Mish, tanh "
        r"and sigmoid; a general $\sigma$ (an undefined function) in blocks with "
        r"$W_{\mathrm{up}}\in\mathbb{R}^{3\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times3}$ and symbolic biases.",
    )
    from absorb.model.activations import get_activation
    from absorb.symbolic.growth import asymptotic_slopes

    alpha, q, r, c = (
        sp.Symbol("alpha", positive=True),
        sp.Symbol("q", positive=True),
        sp.Symbol("r", positive=True),
        sp.Symbol("c", real=True),
    )
    leaky = lambda z: sp.Piecewise((z, z >= 0), (alpha * z, True))  # noqa: E731
    cases = (
        (
            "ReLU",
            lambda z: sp.Max(0, z),
            {1: lambda t, cc: t * P + cc, -1: lambda t, cc: sp.Integer(0)},
            {1: P, -1: sp.Integer(0)},
        ),
        (
            "leaky ReLU",
            leaky,
            {1: lambda t, cc: t * P + cc, -1: lambda t, cc: alpha * (-t * P + cc)},
            {1: P, -1: -alpha * P},
        ),
    )
    for name, fn, eventual, limit in cases:
        for sign in (1, -1):
            for cc in (q, -q, sp.Integer(0)):
                t0 = sp.Abs(cc) / P
                got = fn(sp.expand((t0 + r) * sign * P + cc))
                _zero(sp.simplify(got - eventual[sign](t0 + r, cc)), f"{name}: eventual form, z = {sign}p, c = {cc}")
            lim = sp.limit(eventual[sign](T, c) / T, T, sp.oo)
            _zero(lim - limit[sign], f"{name}: limit at z = {sign}p")
    if sp.limit(c / T, T, sp.oo) != 0 or sp.limit(sp.Symbol("K", real=True) / T, T, sp.oo) != 0:
        raise ProofError("sympy could not show c/t -> 0")
    pf.add(
        r"ReLU and leaky ReLU, exactly: on the sign cases $z=\pm p$ ($p>0$) and $c\in\{q,-q,0\}$ ($q>0$), for "
        r"$t>|c|/p$ the argument $tz+c$ has the sign of $z$, so",
        r"\mathrm{ReLU}(tp+c)=tp+c,\ \ \mathrm{ReLU}(-tp+c)=0,\ \ "
        r"\mathrm{leaky}(tp+c)=tp+c,\ \ \mathrm{leaky}(-tp+c)=\alpha(-tp+c)"
        r"\quad\Longrightarrow\quad \lim_{t\to\infty}\frac{\sigma(tz+c)}{t}=\sigma(z)",
        "substitute t = |c|/p + r, r > 0; simplify = 0; limit",
    )
    pf.add(
        r"A general $\sigma$: for $z\ne0$, $s=tz+c\to\pm\infty$ and",
        r"\frac{\sigma(tz+c)}{t}=\frac{\sigma(s)}{s}\cdot\frac{tz+c}{t},"
        r"\qquad \lim_{t\to\infty}\frac{tz+c}{t}=z,\qquad "
        r"\lim_{t\to\infty}\frac{\sigma(c)}{t}=0\ \ (\sigma(c)\text{ finite})",
        "limit((t z + c)/t, t, oo) = z" if sp.limit((T * Z + c) / T, T, sp.oo) == Z else _fail("limit of (tz + c)/t"),
    )
    a_, b_ = sp.Symbol("a", real=True), sp.Symbol("b", real=True)
    sinf = _sigma_inf(a_, b_)
    lp_, lm_ = sp.Symbol("L_+", real=True), sp.Symbol("L_-", real=True)
    _zero(sinf(P).subs({a_: lp_ - lm_, b_: lm_}) - lp_ * P, "sigma_inf(p) = L+ p")
    _zero(sinf(-P).subs({a_: lp_ - lm_, b_: lm_}) - lm_ * (-P), "sigma_inf(-p) = L- (-p)")
    pf.add(
        r"so the limit is $L_+z$ for $z>0$, $L_-z$ for $z<0$, $0$ for $z=0$, which is $\sigma_\infty(z)$:",
        r"\sigma_\infty(p) = (L_+-L_-)p + L_-p = L_+p,\qquad \sigma_\infty(-p) = L_-\cdot(-p)\quad(p>0)",
        "simplify on each sign case = 0",
    )
    rows = []
    for name, (spec, lp, lm) in SKELETON_ACTIVATIONS.items():
        pr = asymptotic_slopes(get_activation(spec))
        if not pr.proved or pr.value["L_plus"] != lp or pr.value["L_minus"] != lm:
            raise ProofError(f"sympy could not show the slopes of {name} are ({lp}, {lm}): {pr.statement}")
        rows.append(rf"\text{{{name}}}: ({sp.latex(lp)}, {sp.latex(lm)})")
    pf.add(
        r"The slopes $(L_+, L_-)$ of the named activations (each limit computed by SymPy on $s=\pm p$, "
        r"$p\to\infty$):",
        r"\begin{gathered}" + r",\ ".join(rows[:5]) + r",\\ " + r",\ ".join(rows[5:]) + r"\end{gathered}",
        "limit(sigma(p)/p), limit(sigma(-p)/(-p)) as p -> oo",
    )
    sigma = sp.Function("sigma")
    M, U, D = _mat("m", 2, 2), _mat("u", 3, 2), _mat("w", 2, 3)
    bu, bd = _vec("b", 3), _vec("d", 2)
    v = _vec("v", 2)
    f_tv = M * (T * v) + D * (U * (T * v) + bu).applyfunc(sigma) + bd
    qv = sp.Matrix([sigma((U * (T * v) + bu)[i]) / T for i in range(3)])
    pf.add(
        r"Block level: divide $f(tv)$ by $t$; each hidden unit is a scalar quotient "
        r"$q_i(t)=\sigma(t\,(W_{\mathrm{up}}v)_i+b_i)/t$:",
        r"\frac{f(tv)}{t} = Mv + W_{\mathrm{down}}\,q(t) + \frac{b_{\mathrm{down}}}{t}",
        _equal(f_tv / T, M * v + D * qv + bd / T, "f(tv)/t"),
    )
    lim_b = sp.Matrix([sp.limit(e, T, sp.oo) for e in bd / T])
    _zero(lim_b, "b_down/t -> 0")
    pf.add(
        r"With $q_i(t)\to\sigma_\infty((W_{\mathrm{up}}v)_i)$ (the scalar limit, $c=b_i$) and",
        r"\lim_{t\to\infty}\frac{b_{\mathrm{down}}}{t} = 0"
        r"\quad\Longrightarrow\quad \lim_{t\to\infty}\frac{f(tv)}{t} = Mv + "
        r"W_{\mathrm{down}}\,\sigma_\infty(W_{\mathrm{up}}v)",
        "limit(d_i/t, t, oo) = 0",
    )
    U2, D2 = _mat("a", 3, 2), _mat("e", 2, 3)
    bu2, bd2 = _vec("k", 3), _vec("l", 2)
    g_tv = D2 * (U2 * (T * v) + bu2).applyfunc(sigma) + bd2
    qv2 = sp.Matrix([sigma((U2 * (T * v) + bu2)[i]) / T for i in range(3)])
    pf.add(
        r"The same for a residual-free block $g$ with biases (no skip term):",
        r"\frac{g(tv)}{t} = W'_{\mathrm{down}}\,q'(t) + \frac{b'_{\mathrm{down}}}{t} \;\longrightarrow\; "
        r"W'_{\mathrm{down}}\,\sigma_\infty(W'_{\mathrm{up}}v)",
        _equal(g_tv / T, D2 * qv2 + bd2 / T, "g(tv)/t"),
    )
    zero_inf = sp.Matrix([_sigma_inf(0, 0)(e) for e in U2 * v])
    _zero(D2 * zero_inf, "sigma_inf = 0 when a = b = 0")
    pf.add(
        r"If $a=b=0$ then $\sigma_\infty\equiv0$, so $g_\infty\equiv0$ while $f_\infty(v)=Mv$:",
        r"a=b=0:\quad W'_{\mathrm{down}}\,\sigma_\infty(W'_{\mathrm{up}}v) = 0",
        "substitute a = b = 0; simplify = 0",
    )
    flip_c = sp.simplify(sinf(P) - sinf(-P)) / P
    _zero(flip_c - (a_ + 2 * b_), "sigma_inf flip constant")
    pf.add(
        r"The skeleton activation satisfies the flip identity with $c=a+2b$ (sign cases $z=\pm p$):",
        r"\sigma_\infty(z) - \sigma_\infty(-z) = (a+2b)\,z",
        "simplify on each sign case = 0",
    )
    pf.add(
        r"so flipping the units in $S$ of a skeleton block changes its linear part by "
        r"$-(a+2b)\,W_{\mathrm{down}}[:,S]"
        r"W_{\mathrm{up}}[S,:]$ (a general $\sigma$ with $\sigma(z)-\sigma(-z)=cz$, biases included):",
        r"B'(x) = B(x) - c\,W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]\,x,\qquad b'_{\mathrm{down}} = "
        r"b_{\mathrm{down}} + c\,W_{\mathrm{down}}[:,S]\,b_{\mathrm{up}}[S]",
        _flip_block_check(sp.Symbol("c", real=True), "flip with a general constant"),
    )
    pf.conclusion = (
        r"If $f=g$ for a residual-free $g$ of width $N$, then $f(tv)/t=g(tv)/t$ for all $t$, and the "
        r"limits give "
        r"$Mv+W_{\mathrm{down}}\sigma_\infty(W_{\mathrm{up}}v)="
        r"W'_{\mathrm{down}}\sigma_\infty(W'_{\mathrm{up}}v)$ for every "
        r"$v$: the bias-free skeleton is absorbable at width $N$. Contrapositive: a skeleton shown not "
        r"absorbable "
        r"proves $f$ not absorbable, for biased or bias-free $g$ alike. When $a=b=0$ the skeleton reads "
        r"$Mv=0$, "
        r"so $M\ne0$ is never absorbable. When $a\ne0$ and the skeleton weights are nondegenerate "
        r"($d\ge2$, rows "
        r"of $W_{\mathrm{up}}$ nonzero and pairwise non-collinear, columns of $W_{\mathrm{down}}$ "
        r"nonzero), the "
        r"kink-line argument of result 5 (stated, not machine-checked here) shows the skeleton is "
        r"absorbable at "
        r"width $n$ exactly when some $S$ has "
        r"$(a+2b)\,W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]=-M$; the flip "
        r"above is the sufficiency half."
    )
    return pf


def prove_leaky_reduction() -> Proof:
    pf = Proof(
        "leaky_reduction",
        "Leaky ReLU reduces to ReLU",
        "beyond the paper",
        r"For leaky ReLU with slope $\alpha\in(0,1)$, "
        r"$\mathrm{leaky}=(1-\alpha)\mathrm{ReLU}+\alpha\,\mathrm{id}$, so "
        r"$f(x)=Mx+W_{\mathrm{down}}\mathrm{leaky}(W_{\mathrm{up}}x)$ is a ReLU block with skip "
        r"$M+\alpha W_{\mathrm{down}}W_{\mathrm{up}}$ and down projection $(1-\alpha)W_{\mathrm{down}}$. "
        r"Flipping the "
        r"units in $S$ changes the linear part by $-(1+\alpha)W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]$, so "
        r"$(1+\alpha)W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]=-M$ gives an explicit residual-free leaky "
        r"block equal "
        r"to $f$ (biases move into the output bias); for nondegenerate weights this condition is also "
        r"necessary.",
        r"A general slope $\alpha$ ($0<\alpha<1$) on the sign cases $z=p$, $z=-p$, $z=0$; a ReLU function $r$ "
        r"(undefined, with $\mathrm{leaky}(y)=(1-\alpha)r(y)+\alpha y$ substituted) in blocks with "
        r"$W_{\mathrm{up}}\in\mathbb{R}^{3\times2}$, $W_{\mathrm{down}}\in\mathbb{R}^{2\times3}$, $S=\{1,2\}$.",
    )
    alpha = sp.Symbol("alpha", positive=True)
    leaky = lambda z: sp.Piecewise((z, z >= 0), (alpha * z, True))  # noqa: E731
    relu = lambda z: sp.Max(0, z)  # noqa: E731
    for z in (P, -P, sp.Integer(0)):
        _zero(leaky(z) - ((1 - alpha) * relu(z) + alpha * z), f"leaky decomposition at z = {z}")
    pf.add(
        r"Scalar decomposition on the sign cases $z=p$, $z=-p$, $z=0$ ($p>0$):",
        r"\mathrm{leaky}_\alpha(z) = (1-\alpha)\,\mathrm{ReLU}(z) + \alpha z",
        "simplify on each sign case = 0",
    )
    r_ = sp.Function("r")
    M, U, D = _mat("m", 2, 2), _mat("u", 3, 2), _mat("w", 2, 3)
    x = _vec("x", 2)
    f_leaky = M * x + D * (U * x).applyfunc(lambda y: (1 - alpha) * r_(y) + alpha * y)
    pf.add(
        r"Block level: the leaky block is a ReLU block with skip $M+\alpha W_{\mathrm{down}}W_{\mathrm{up}}$:",
        r"Mx + W_{\mathrm{down}}\,\mathrm{leaky}(W_{\mathrm{up}}x) = (M+\alpha "
        r"W_{\mathrm{down}}W_{\mathrm{up}})\,x + (1-\alpha)\,W_{\mathrm{down}}\,\mathrm{ReLU}(W_{\mathrm{up}}x)",
        _equal(
            f_leaky, (M + alpha * D * U) * x + (1 - alpha) * D * (U * x).applyfunc(r_), "leaky block as a ReLU block"
        ),
    )
    for z in (P, -P):
        _zero(leaky(z) - leaky(-z) - (1 + alpha) * z, f"leaky flip at z = {z}")
    pf.add(
        r"Flip identity of leaky ReLU (sign cases; trivially at $0$):",
        r"\mathrm{leaky}_\alpha(z) - "
        r"\mathrm{leaky}_\alpha(-z) = "
        r"(1+\alpha)\,z",
        "simplify on each sign case = 0",
    )
    pf.add(
        r"so negating $u_i$, $b_{\mathrm{up},i}$ for $i\in S$ and setting "
        r"$b'_{\mathrm{down}}=b_{\mathrm{down}}+(1+\alpha)"
        r"W_{\mathrm{down}}[:,S]b_{\mathrm{up}}[S]$ gives",
        r"B'(x) = B(x) - "
        r"(1+\alpha)\,W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]\,x",
        _flip_block_check(1 + alpha, "leaky flip"),
    )
    DS, US = D[:, [0, 1]], U[[0, 1], :]
    pf.add(
        r"Hence if $(1+\alpha)W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]=-M$ then",
        r"B'(x) = Mx + B(x) = f(x)",
        _equal(-(1 + alpha) * DS * US * x - M * x, -((1 + alpha) * DS * US + M) * x, "substitute the condition"),
    )
    pf.conclusion = (
        r"Sufficiency is the explicit block above. Necessity for nondegenerate weights ($d\ge2$, rows of "
        r"$W_{\mathrm{up}}$ nonzero and pairwise non-collinear, columns of $W_{\mathrm{down}}$ nonzero; "
        r"stated, "
        r"not machine-checked here): a residual-free leaky block equal to $f$ has one unit on each kink "
        r"line "
        r"$u_i^\top x=0$, with the same or the opposite orientation; matching the jumps of the gradient "
        r"and then "
        r"the linear parts gives $M+(1+\alpha)W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]=0$ for the set "
        r"$S$ of "
        r"opposite units. With biases, the asymptotic skeleton (leaky$(tz+c)/t\to$ leaky$(z)$) reduces "
        r"to this "
        r"bias-free case."
    )
    return pf


EVEN_ACTIVATIONS: dict[str, sp.Expr] = {
    r"$|z|$": sp.Abs(Z),
    r"$z\,\mathrm{erf}(z)$": Z * sp.erf(Z),
    r"$z\sin z$": Z * sp.sin(Z),
    r"$z^2$": Z**2,
    r"$\cos z$": sp.cos(Z),
    r"$e^{-z^2}$": sp.exp(-(Z**2)),
}


def prove_parity() -> Proof:
    pf = Proof(
        "parity",
        "Parity argument",
        "beyond the paper",
        r"If $\sigma$ is even and the blocks are bias-free, every residual-free block satisfies "
        r"$B'(-x)=B'(x)$, while "
        r"$f(x)-f(-x)=2Mx$. Hence $Mx+B(x)=B'(x)$ for all $x$ forces $M=0$: a nonzero skip cannot be "
        r"absorbed, at any width.",
        r"Each named even activation on the sign cases $z=\pm p$; a general even $\sigma$ (an undefined "
        r"function with "
        r"$\sigma(-y)=\sigma(y)$ substituted) in bias-free blocks with "
        r"$W_{\mathrm{up}}\in\mathbb{R}^{3\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times3}$, $M\in\mathbb{R}^{2\times2}$.",
    )
    for name, e in EVEN_ACTIVATIONS.items():
        _zero(sp.simplify(e.subs(Z, -P) - e.subs(Z, P)), f"{name} is even")
    pf.add(
        r"The activations " + ", ".join(EVEN_ACTIVATIONS) + r" are even (sign cases $z=\pm p$; trivially at $0$):",
        r"\sigma(-p) - \sigma(p) = 0\quad(p>0)",
        "simplify on each sign case = 0",
    )
    sigma = sp.Function("sigma")

    def even_rule(e: sp.Expr) -> sp.Expr:
        return e.replace(
            lambda q: (
                isinstance(q, sp.Function) and q.func == sigma and sp.expand(q.args[0]).could_extract_minus_sign()
            ),
            lambda q: sigma(sp.expand(-q.args[0])),
        )

    M, U, D = _mat("m", 2, 2), _mat("u", 3, 2), _mat("w", 2, 3)
    U2, D2 = _mat("a", 3, 2), _mat("e", 2, 3)
    x = _vec("x", 2)
    blk = lambda DD, UU, y: DD * (UU * y).applyfunc(lambda a: sigma(sp.expand(a)))  # noqa: E731
    pf.add(
        r"A bias-free residual-free block with even $\sigma$ is even:",
        r"B'(-x) = W'_{\mathrm{down}}\,\sigma(-W'_{\mathrm{up}}x) = B'(x)",
        _equal(even_rule(blk(D2, U2, -x)), blk(D2, U2, x), "sigma(-y) = sigma(y)"),
    )
    f = lambda y: M * y + blk(D, U, y)  # noqa: E731
    pf.add(
        r"while the skip-connected block has",
        r"f(x) - f(-x) = 2Mx",
        _equal(even_rule(f(x) - f(-x)), 2 * M * x, "f(x) - f(-x)"),
    )
    pf.conclusion = (
        r"If $f=B'$ then $2Mx=f(x)-f(-x)=B'(x)-B'(-x)=0$ for every $x$, so $M=0$. With biases the "
        r"argument "
        r"does not apply ($\sigma(-y+b)\ne\sigma(y+b)$ in general); biased blocks are covered by the "
        r"asymptotic "
        r"skeleton where $\sigma$ has finite slopes ($|z|$: $\sigma_\infty=2\,\mathrm{ReLU}(z)-z$). "
        r"Within a tolerance $\tau$: a $B'$ with $|f(y)-B'(y)|_\infty\le\tau\,\mathrm{den}(y)$ at $y=\pm x$ "
        r"($\mathrm{den}(y)=|f(y)|_\infty+|y|_\infty+|f(0)|_\infty$) gives, $B'$ being even, "
        r"$2|Mx|_\infty\le\tau(\mathrm{den}(x)+\mathrm{den}(-x))$: one point where the ratio exceeds $\tau$ rules "
        r"out every bias-free $B'$ within $\tau$."
    )
    return pf


def prove_exponential() -> Proof:
    pf = Proof(
        "exponential",
        "Exponential activations",
        "beyond the paper",
        r"If $\sigma(z)=Ae^{\beta z}+C$ with $A\ne0$, $\beta\ne0$, then $f(x)=Mx+B(x)$ equals a residual-free "
        r"block $B'$ "
        r"(any width, with or without biases) only if $M=0$: $f-B'$ is $Mx$ plus a combination of exponentials "
        r"$e^{\beta w^\top x}$ and a constant, and these are linearly independent of the coordinates of $x$.",
        r"A general exponential activation (symbols $A,\beta,C$) in blocks with biases, "
        r"$W_{\mathrm{up}}\in\mathbb{R}^{2\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times2}$; the Wronskian of $1, s, e^{\omega_1 s}, e^{\omega_2 "
        r"s}$ on a line.",
    )
    A, beta, C = sp.Symbol("A", real=True), sp.Symbol("beta", real=True), sp.Symbol("C", real=True)
    sig = lambda y: A * sp.exp(beta * y) + C  # noqa: E731
    U, D = _mat("u", 2, 2), _mat("w", 2, 2)
    bu, bd = _vec("b", 2), _vec("d", 2)
    x = _vec("x", 2)
    B = D * (U * x + bu).applyfunc(sig) + bd
    expo = sp.Matrix([sp.exp(beta * (U * x)[i]) for i in range(2)])
    coef = D * sp.diag(*[A * sp.exp(beta * bu[i]) for i in range(2)])
    const = C * D * sp.ones(2, 1) + bd
    pf.add(
        r"A block with biases is a combination of exponentials of linear forms plus a constant; the biases only "
        r"rescale "
        r"the coefficients:",
        r"B(x) = \sum_i A e^{\beta b_i}\,w_i\,e^{\beta u_i^\top x} + \Big(C\sum_i w_i + "
        r"b_{\mathrm{down}}\Big)",
        _equal(sp.expand(B), sp.expand(coef * expo + const), "expand exp(beta (u x + b))"),
    )
    s = sp.Symbol("s", real=True)
    w1, w2 = sp.Symbol("omega_1", real=True), sp.Symbol("omega_2", real=True)
    fns = [sp.Integer(1), s, sp.exp(w1 * s), sp.exp(w2 * s)]
    W = sp.Matrix(4, 4, lambda i, j: sp.diff(fns[j], s, i))
    det = sp.factor(sp.simplify(W.det()))
    expected = w1**2 * w2**2 * (w2 - w1) * sp.exp((w1 + w2) * s)
    _zero(sp.simplify(det - expected), "Wronskian")
    pf.add(
        r"On a line $x=s\,e$, $f-B'$ becomes $s\,Me+\sum_k\gamma_k e^{\omega_k s}+\kappa$ with "
        r"$\omega_k=\beta\,w_k^\top e$. "
        r"For two exponents the Wronskian of $1,s,e^{\omega_1s},e^{\omega_2s}$ is",
        r"\det\big[\tfrac{d^i}{ds^i}(1,\ s,\ e^{\omega_1 s},\ e^{\omega_2 s})\big]_{i=0..3} = " + sp.latex(expected),
        "det of the Wronskian matrix; simplify(lhs - rhs) = 0",
    )
    pf.add(
        r"which vanishes nowhere when $\omega_1,\omega_2$ are distinct and nonzero; in general $1, s, e^{\omega_1 "
        r"s},\dots,"
        r"e^{\omega_m s}$ are linearly independent for distinct nonzero $\omega_k$ (stated: the Wronskian is "
        r"$\prod_k\omega_k^2\prod_{j<k}(\omega_k-\omega_j)\,e^{\sum\omega_k s}$ up to sign).",
        r"s\,Me + \sum_k \gamma_k e^{\omega_k s} + \kappa = 0\ \ \forall s \quad\Longrightarrow\quad Me = "
        r"0,\ \gamma_k = 0,\ \kappa = 0",
        "linear independence (stated)",
    )
    pf.conclusion = (
        r"If $f=B'$, write $f-B'=Mx+\sum_k\gamma_k e^{\beta w_k^\top x}+\kappa=0$, grouping equal rows "
        r"$w_k$ "
        r"(rows $w_k=0$ join the constant). Choose a direction $e$ with the numbers $\beta w_k^\top e$ "
        r"distinct "
        r"and nonzero (all $e$ off finitely many hyperplanes); the line argument gives $Me=0$. Such $e$ "
        r"are dense, "
        r"so $M=0$: a nonzero skip cannot be absorbed, at any width, with or without biases. Within a tolerance "
        r"$\tau$: on a ray $x=tv$ with $\beta\,u_i^\top v\le0$ for every unit of $f$, $f(tv)=tMv+O(1)$; a $B'$ within "
        r"$\tau$ stays bounded there (a term of positive rate outgrows $O(t)$), so its error ratio tends to "
        r"$\|Mv\|_\infty/(\|Mv\|_\infty+\|v\|_\infty)$, which must be at most $\tau$."
    )
    return pf
