"""Machine-checked steps of the degree-2 skeleton (beyond the paper; docs/results/skeleton2.md).
Part of :mod:`absorb.certificate.proofs`."""

from __future__ import annotations

import sympy as sp

from absorb.certificate._proof_core import P, Proof, ProofError, T, _zero

QUADRATIC_ACTIVATIONS: dict[str, tuple[str, sp.Expr, sp.Expr]] = {
    "ReLU²": ("relu2", sp.Integer(1), sp.Integer(0)),
    "GELU²": ("expr:(x*(1 + erf(x/sqrt(2)))/2)**2", sp.Integer(1), sp.Integer(0)),
    "SiLU²": ("expr:(x/(1 + exp(-x)))**2", sp.Integer(1), sp.Integer(0)),
    "softplus²": ("expr:log(1 + exp(x))**2", sp.Integer(1), sp.Integer(0)),
}
"""Activations of the class, with the (α, β) the asymptotic calculus must prove."""


def _relu2(z: sp.Expr) -> sp.Expr:
    return sp.Max(0, z) ** 2


def prove_skeleton2() -> Proof:
    pf = Proof(
        "skeleton2",
        "The degree-2 skeleton of a block with biases",
        "beyond the paper (docs/results/skeleton2.md)",
        r"Let $\sigma$ be finite on $\mathbb{R}$ with $\sigma(s)=\alpha s^2+\beta s+o(s)$ as $s\to+\infty$ "
        r"($\alpha\ne0$) and $\sigma(s)=o(s)$ as $s\to-\infty$. For nondegenerate weights ($d\ge2$, rows of "
        r"$W_{\mathrm{up}}$ nonzero and pairwise non-collinear, columns of $W_{\mathrm{down}}$ nonzero), "
        r"$f(x)=Mx+W_{\mathrm{down}}\sigma(W_{\mathrm{up}}x+c)+b$ equals a residual-free block of width $n$ "
        r"(biases or not) only if some $S$ has (Q) $\sum_{i\in S}w_i\otimes u_iu_i^{\mathsf T}=0$ and (L) "
        r"$M=-\sum_{i\in S}(2\alpha c_i+\beta)w_iu_i^{\mathsf T}$; for $\sigma=\mathrm{ReLU}^2$ also if.",
        r"ReLU$^2$ on the sign cases of $z$ and of a real offset $c$; a general $\sigma=\alpha s^2+\beta s+\rho(s)$; "
        r"the Hessian of one unit; the even and odd parts of a flipped unit; a width-2 block with symbolic "
        r"weights and biases for sufficiency; the two-term forms of GELU$^2$, SiLU$^2$, softplus$^2$.",
    )
    q, r = sp.Symbol("q", positive=True), sp.Symbol("r", positive=True)
    alpha, beta, c, z = (sp.Symbol(s, real=True) for s in ("alpha", "beta", "c", "z"))
    for sign in (1, -1):
        for cc in (q, -q, sp.Integer(0)):
            t = sp.Abs(cc) / P + r  # t > |c|/p: tz + c has the sign of z
            got = _relu2(sp.expand(t * sign * P + cc))
            want = (t * sign * P + cc) ** 2 if sign > 0 else sp.Integer(0)
            _zero(sp.simplify(got - want), f"ReLU² eventual form, z = {sign}p, c = {cc}")
    pf.add(
        r"ReLU$^2$ exactly: for $z=\pm p$ ($p>0$), $c\in\{q,-q,0\}$ and $t>|c|/p$,",
        r"\mathrm{ReLU}(tp+c)^2=(tp+c)^2,\qquad \mathrm{ReLU}(-tp+c)^2=0",
        "substitute t = |c|/p + r, r > 0; simplify = 0",
    )
    lhs = sp.expand(alpha * (T * z + c) ** 2 + beta * (T * z + c))
    _zero(lhs - (alpha * T**2 * z**2 + T * (2 * alpha * c + beta) * z + alpha * c**2 + beta * c), "two-term expansion")
    if sp.limit((alpha * c**2 + beta * c) / T, T, sp.oo) != 0:
        raise ProofError("sympy could not show (αc² + βc)/t → 0")
    pf.add(
        r"A general $\sigma(s)=\alpha s^2+\beta s+\rho(s)$, $\rho(s)=o(s)$ at $+\infty$: for $z>0$ "
        r"($s=tz+c\to+\infty$, $\rho(s)/t\to0$)",
        r"\sigma(tz+c)=\alpha t^2z^2+t\,(2\alpha c+\beta)\,z+\underbrace{\alpha c^2+\beta c+\rho(tz+c)}_{o(t)},"
        r"\qquad z<0:\ \sigma(tz+c)=o(t),\qquad z=0:\ \sigma(c)=O(1)",
        "expand; limit((αc² + βc)/t) = 0",
    )
    u1, u2, x1, x2, lam = (sp.Symbol(s, real=True) for s in ("u1", "u2", "x1", "x2", "lambda"))
    y = u1 * x1 + u2 * x2
    H = sp.hessian(y**2, (x1, x2))
    _zero(H - 2 * sp.Matrix([[u1 * u1, u1 * u2], [u2 * u1, u2 * u2]]), "Hessian of (u·x)²")
    pf.add(
        r"Order $t^2$: $F_2(x)=\alpha\sum_i w_i\,\mathrm{ReLU}(u_i\cdot x)^2$ is $C^1$ and its Hessian jumps by "
        r"$2\alpha\,w_i\otimes u_iu_i^{\mathsf T}\ne0$ across $u_i^\perp$ (distinct hyperplanes, nonzero $w_i$). A unit "
        r"$\lambda u$ of $g$ jumps by $2\alpha\,\mathrm{sgn}(\lambda)\lambda^2 w'\otimes uu^{\mathsf T}$ across the same "
        r"hyperplane, so each of $g$'s $n$ units lies on one of $f$'s $n$ hyperplanes: $u'_i=\lambda_iu_i$, "
        r"$\mathrm{sgn}(\lambda_i)\lambda_i^2w'_i=w_i$ (this step is argued, not machine-checked here). The Hessian:",
        r"\nabla^2 (u\cdot x)^2 = 2\,uu^{\mathsf T}",
        "hessian; simplify = 0",
    )
    w = sp.Symbol("w", real=True)
    for zz in (P, -P):  # i in S: w' λ² = −w, λ < 0
        lneg = -sp.Symbol("m", positive=True)
        wp = -w / lneg**2
        _zero(wp * _relu2(lneg * zz) - w * _relu2(zz) + w * zz**2 * 1, f"even part, z = {zz}")
        _zero(sp.Max(0, -zz) - (sp.Max(0, zz) - zz), f"ReLU(−z) = ReLU(z) − z at z = {zz}")
    pf.add(
        r"With $S=\{i:\lambda_i<0\}$ the flipped units leave a quadratic form (so $F_2=G_2$ iff (Q)), and at order $t$ "
        r"(gradient jumps fix $(2\alpha c'_i+\beta)w'_i|\lambda_i|=(2\alpha c_i+\beta)w_i$) a linear map (so $F_1=G_1$ iff (L)):",
        r"w'\mathrm{ReLU}(\lambda z)^2-w\,\mathrm{ReLU}(z)^2=-w z^2\ \ (w'\lambda^2=-w,\ \lambda<0),\qquad "
        r"\mathrm{ReLU}(-z)=\mathrm{ReLU}(z)-z",
        "on z = ±p: simplify = 0",
    )
    for zz in (P, -P):
        _zero(-w * _relu2(-zz) - (w * _relu2(zz) - w * zz**2), f"ReLU² flip at z = {zz}")
    X = sp.Matrix([x1, x2])
    us = [sp.Matrix([sp.Symbol(f"u{i}{j}", real=True) for j in (1, 2)]) for i in (1, 2)]
    ws = [sp.Matrix([sp.Symbol(f"w{i}{j}", real=True) for j in (1, 2)]) for i in (1, 2)]
    cs = [sp.Symbol(f"c{i}", real=True) for i in (1, 2)]
    change = sum((ws[i] * ((us[i].T * X)[0] + cs[i]) ** 2 for i in range(2)), sp.zeros(2, 1))
    quad = sum((ws[i] * ((us[i].T * X)[0]) ** 2 for i in range(2)), sp.zeros(2, 1))
    lin = sum((2 * cs[i] * ws[i] * (us[i].T * X)[0] for i in range(2)), sp.zeros(2, 1))
    const = sum((cs[i] ** 2 * ws[i] for i in range(2)), sp.zeros(2, 1))
    _zero(change - quad - lin - const, "sufficiency: expansion of the flipped units")
    pf.add(
        r"Sufficiency for ReLU$^2$: flipping $(u,c,w)\to(-u,-c,-w)$ changes a unit by $-w(u\cdot x+c)^2$, and for $S$ "
        r"(here $|S|=2$, $d=2$, symbolic) the change splits as (Q)'s form, (L)'s linear map and a constant "
        r"$b'_{\mathrm{down}}$ absorbs:",
        r"-w\,\mathrm{ReLU}(-s)^2=w\,\mathrm{ReLU}(s)^2-ws^2,\qquad "
        r"\sum_{i\in S}w_i(u_i\cdot x+c_i)^2=\sum_{i\in S}w_i(u_i\cdot x)^2+2\sum_{i\in S}c_iw_iu_i^{\mathsf T}x"
        r"+\sum_{i\in S}c_i^2w_i",
        "on s = ±p: simplify = 0; expand = 0",
    )
    from absorb.model.activations import get_activation
    from absorb.symbolic.growth import quadratic_skeleton

    rows = []
    for name, (spec, a, b) in QUADRATIC_ACTIVATIONS.items():
        pr = quadratic_skeleton(get_activation(spec))
        if not pr.proved or pr.value["alpha"] != a or pr.value["beta"] != b:
            raise ProofError(f"the asymptotic calculus could not show {name} = {a}s² + {b}s + o(s): {pr.statement}")
        rows.append(rf"\text{{{name}}}: (\alpha,\beta)=({sp.latex(a)},{sp.latex(b)})")
    pf.add(
        r"The two-term forms of the named activations (by the asymptotic calculus of absorb.symbolic, never "
        r"sympy's limit; $\sigma(s)=o(s)$ at $-\infty$ for each):",
        r",\ ".join(rows),
        "quadratic_terms at +oo and -oo",
    )
    pf.conclusion = (
        r"No $S$ with (Q) and (L) proves $f$ not absorbable, for residual-free blocks with or without biases; for "
        r"ReLU$^2$ an $S$ with both builds one. For bias-free $f$ (c = 0), (L) reads $M=-\beta\,W_{\mathrm{down}}[:,S]"
        r"W_{\mathrm{up}}[S,:]$, i.e.\ $M=0$ when $\beta=0$."
    )
    return pf


STEP_GATES: dict[str, str] = {"sigmoid": "sigmoid", "(1 + tanh)/2": "expr:(1 + tanh(x))/2"}
"""Step-like gates: L₊ = 1, L₋ = 0 (by the asymptotic calculus)."""
RELU_LIKE_GATES: dict[str, str] = {"ReLU": "relu", "SiLU": "silu", "GELU": "gelu", "GELU-tanh": "gelu_tanh",
                                   "quick-GELU": "quick_gelu", "softplus": "softplus", "Mish": "expr:x*tanh(log(1 + exp(x)))"}
"""ReLU-like gates: σ_g(s) = s + o(1) at +∞, o(1) at −∞ (by the asymptotic calculus)."""


def prove_gated_skeleton() -> Proof:
    pf = Proof(
        "gated_skeleton",
        "The gated skeleton of a block with biases",
        "beyond the paper (docs/results/gated-skeleton.md)",
        r"For a gated block $f(x)=Mx+W_{\mathrm{down}}(\sigma_g(W_{\mathrm{gate}}x+c)\circ(W_{\mathrm{up}}x+e))+b$ with "
        r"nondegenerate weights ($d\ge2$, gate rows nonzero and pairwise non-collinear, value rows not parallel to their "
        r"gate rows, columns of $W_{\mathrm{down}}$ nonzero), a residual-free block of the same kind and width, with or "
        r"without biases, equals $f$ only if some $S$ has: for a step-like gate ($\sigma_g\to L_+$ at $+\infty$, $\to0$ at "
        r"$-\infty$) $M=-L_+W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]$; for a ReLU-like gate ($\sigma_g(s)=s+o(1)$ at "
        r"$+\infty$, $o(1)$ at $-\infty$) $\sum_{i\in S}w_i\otimes\mathrm{sym}(g_iu_i^{\mathsf T})=0$ and "
        r"$M=-\sum_{i\in S}w_i(c_iu_i+e_ig_i)^{\mathsf T}$ — an iff where $\sigma_g(-z)=\sigma_g(z)-z$.",
        r"Symbolic $t, z, y, c, e$, a vanishing $\varepsilon(t)$; the rank-one step in $d=2$; the flipped units on the sign "
        r"cases of $z$; the gates' limits by the asymptotic calculus.",
    )
    t, y, c, e, th, w = (sp.Symbol(s, real=True) for s in ("t", "y", "c", "e", "theta", "w"))
    zz = sp.Symbol("z", real=True)
    eps = sp.Function("epsilon")(t)
    lhs = sp.expand((t * zz + c + eps) * (t * y + e))
    _zero(lhs - (t**2 * zz * y + t * (c * y + e * zz) + c * e + eps * (t * y + e)), "ReLU-like unit expansion")
    pf.add(
        r"A ReLU-like gate on $z>0$: $\sigma_g(tz+c)=tz+c+\varepsilon(t)$, $\varepsilon\to0$, so the unit is",
        r"(tz+c+\varepsilon)(ty+e)=t^2zy+t(cy+ez)+\underbrace{ce+\varepsilon(t)(ty+e)}_{o(t)};\qquad z<0:\ o(1)\cdot(ty+e)=o(t)",
        "expand = 0",
    )
    w1, w2, u1, u2, g1, g2, v1, v2 = (sp.Symbol(s, real=True) for s in ("w1", "w2", "u1", "u2", "g1", "g2", "v1", "v2"))
    A = sp.Matrix([w1, w2]) * sp.Matrix([[u1, u2]]) + sp.Matrix([v1, v2]) * sp.Matrix([[g1, g2]])
    _zero(A.det() - (w1 * v2 - w2 * v1) * (u1 * g2 - u2 * g1), "rank-one step")
    pf.add(
        r"The rank-one step ($d=2$ shown): matching jumps on $g^\perp$ give $w'u'^{\mathsf T}=wu^{\mathsf T}+vg^{\mathsf T}$, and",
        r"\det(wu^{\mathsf T}+vg^{\mathsf T})=(w\times v)(u\times g),\quad u\times g\ne0\ \Rightarrow\ v\parallel w",
        "det; expand = 0",
    )
    for s_ in (P, -P):
        H = sp.Heaviside
        _zero(H(-s_) - (1 - H(s_)), f"H(-z) = 1 - H(z) at z = {s_}")
        _zero(-w * (1 - H(s_)) * (y + th * s_) - (w * H(s_) * (y + th * s_) - w * (y + th * s_)), f"flipped step unit, z = {s_}")
        _zero(sp.Max(0, -s_) * sp.Integer(1) - (sp.Max(0, s_) - s_), f"ReLU(-z) = ReLU(z) - z at z = {s_}")
    pf.add(
        r"Flipped units ($\lambda<0$) on the sign cases $z=\pm p$: a step gate uses $H(-z)=1-H(z)$, a ReLU-like gate "
        r"$\mathrm{ReLU}(\lambda z)=|\lambda|(\mathrm{ReLU}(z)-z)$, leaving a linear (resp. quadratic) remainder and the "
        r"kinks $\theta_iw_i\mathrm{ReLU}(g_i\cdot x)$ (resp. $\theta_iw_i\mathrm{ReLU}(g_i\cdot x)^2$) that force $\theta_i=0$:",
        r"-w(1-H(z))\,y_\theta = w\,H(z)\,y_\theta - w\,y_\theta,\qquad \mathrm{ReLU}(-z)=\mathrm{ReLU}(z)-z",
        "Heaviside, Max on z = ±p: simplify = 0",
    )
    s = sp.Symbol("s", real=True)
    silu = s / (1 + sp.exp(-s))
    _zero(sp.simplify(silu.subs(s, -s) - (silu - s)), "SiLU flip")
    _zero(sp.simplify(w * silu.subs(s, -s) * y - w * silu * y + w * s * y), "flipped SiLU unit")
    pf.add(
        r"Sufficiency where $\sigma_g(-z)=\sigma_g(z)-z$ (SiLU shown): negating $g,c,u,e,w$ changes a unit by",
        r"(-w)\,\sigma_g(-s)\,(-y)-w\,\sigma_g(s)\,y=-w\,s\,y,\qquad s=g\cdot x+c,\ y=u\cdot x+e",
        "simplify = 0",
    )
    from absorb.model.activations import get_activation
    from absorb.symbolic.growth import gate_limits, relu_like_gate

    rows = []
    for name, spec in STEP_GATES.items():
        pr = gate_limits(get_activation(spec))
        if not pr.proved or (pr.value["L_plus"], pr.value["L_minus"]) != (1, 0):
            raise ProofError(f"the asymptotic calculus could not show {name} has limits (1, 0): {pr.statement}")
        rows.append(rf"\text{{{name}}}: (L_+,L_-)=(1,0)")
    for name, spec in RELU_LIKE_GATES.items():
        pr = relu_like_gate(get_activation(spec))
        if not pr.proved:
            raise ProofError(f"the asymptotic calculus could not show {name} is ReLU-like: {pr.statement}")
        rows.append(rf"\text{{{name}}}: s+o(1),\ o(1)")
    pf.add(
        r"The gates (by the asymptotic calculus of absorb.symbolic, never sympy's limit):",
        r",\ ".join(rows),
        "limits at +oo and -oo by the rules",
    )
    pf.conclusion = (
        r"The kink identification (each hyperplane carries one unit of $g$) is argued in docs/results/gated-skeleton.md, "
        r"not machine-checked here; the algebra above closes the rest."
    )
    return pf
