"""Machine-checked steps of theorem ``relu2-linear``: σ = α·ReLU² + β·z (beyond the paper;
docs/results/skeleton2.md, "ReLU² plus a linear term"). Part of :mod:`absorb.certificate.proofs`."""

from __future__ import annotations

import sympy as sp

from absorb.certificate._proof_core import P, Proof, ProofError, _zero


def prove_relu2_linear() -> Proof:
    pf = Proof(
        "relu2_linear",
        "ReLU squared plus a linear term",
        "beyond the paper (docs/results/skeleton2.md)",
        r"Let $\sigma(z)=\alpha\,\mathrm{ReLU}(z)^2+\beta z$ ($\alpha,\beta\ne0$), $A_i=w_iu_i^{\mathsf T}$, "
        r"$T=M/\beta+\sum_iA_i$. If $\mu>0$ and $\sum_i\mu_iA_i=T$, the block $u'_i=u_i/\mu_i$, $c'_i=c_i/\mu_i$, "
        r"$w'_i=\mu_i^2w_i$, $b'=b+\beta\sum_i(1-\mu_i)c_iw_i$ equals $f$. For nondegenerate weights with independent "
        r"$w_i\otimes u_iu_i^{\mathsf T}$, $g=f$ forces $u'_i=\lambda_iu_i$, $c'_i=\lambda_ic_i$, $\lambda_i>0$ and "
        r"$\sum_i\lambda_i^{-1}A_i=T$.",
        r"the rescaling of one unit on the sign cases of its pre-activation; a flipped unit; a width-2 block "
        r"with symbolic weights and biases for sufficiency; the Farkas inequality.",
    )
    alpha, beta, w, c = (sp.Symbol(s, real=True) for s in ("alpha", "beta", "w", "c"))
    mu, m = sp.Symbol("mu", positive=True), sp.Symbol("m", positive=True)

    def sigma(z: sp.Expr) -> sp.Expr:
        return alpha * sp.Max(0, z) ** 2 + beta * z

    for s in (P, -P, sp.Integer(0)):
        _zero(sp.simplify(mu**2 * w * sigma(s / mu) - (alpha * w * sp.Max(0, s) ** 2 + beta * mu * w * s)), f"rescaling, s = {s}")
    pf.add(
        r"Rescaling one unit by $\mu>0$ changes only its linear part (on $s=\pm p$, $p>0$, and $s=0$):",
        r"\mu^2 w\,\sigma(s/\mu) = \alpha w\,\mathrm{ReLU}(s)^2 + \beta\mu\,w\,s",
        "substitute; simplify = 0",
    )
    for s in (P, -P):  # λ = −m < 0 with w'λ² = −w: the flipped unit
        wp = -w / m**2
        _zero(sp.simplify(wp * sigma(-m * s) - (alpha * w * sp.Max(0, s) ** 2 - alpha * w * s**2 + beta * w * s / m)),
              f"flipped unit, s = {s}")
    pf.add(
        r"A unit of $g$ on $f$'s hyperplane with $\lambda=-m<0$ and $w'\lambda^2=-w$ (the Hessian jumps match) leaves "
        r"the quadratic form $-\alpha w s^2$, so flips need (Q) $\sum_{i\in S}w_i\otimes u_iu_i^{\mathsf T}=0$, "
        r"excluded by independence (the identification itself is argued in docs/results/skeleton2.md):",
        r"w'\sigma(-ms) = \alpha w\,\mathrm{ReLU}(s)^2 - \alpha w s^2 + \beta w s/m",
        "on s = ±p: simplify = 0",
    )
    x1, x2 = sp.symbols("x1 x2", real=True)
    X = sp.Matrix([x1, x2])
    us = [sp.Matrix(sp.symbols(f"u{i}1 u{i}2", real=True)) for i in (1, 2)]
    ws = [sp.Matrix(sp.symbols(f"w{i}1 w{i}2", real=True)) for i in (1, 2)]
    cs = sp.symbols("c1 c2", real=True)
    mus = sp.symbols("mu1 mu2", positive=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    b = sp.Matrix(sp.symbols("b1 b2", real=True))
    # the linear parts only (the ReLU² parts are equal unit by unit, step 1)
    s = [(us[i].T * X)[0] + cs[i] for i in range(2)]
    f_lin = M * X + sum((beta * ws[i] * s[i] for i in range(2)), sp.zeros(2, 1)) + b
    bp = b + sum((beta * (1 - mus[i]) * cs[i] * ws[i] for i in range(2)), sp.zeros(2, 1))
    g_lin = sum((beta * mus[i] * ws[i] * s[i] for i in range(2)), sp.zeros(2, 1)) + bp
    resid = beta * sum(((mus[i] - 1) * ws[i] * us[i].T for i in range(2)), sp.zeros(2, 2)) - M
    _zero(sp.expand(g_lin - f_lin - resid * X), "sufficiency: g − f = (βΣ(μ_i − 1)A_i − M)x")
    pf.add(
        r"Sufficiency ($d=n=2$, symbolic weights, biases, $\mu>0$): with the rescaled units and "
        r"$b'=b+\beta\sum_i(1-\mu_i)c_iw_i$, the constant cancels and",
        r"g(x)-f(x) = \Big(\beta\sum_i(\mu_i-1)\,w_iu_i^{\mathsf T} - M\Big)x = \beta\Big(\sum_i\mu_iA_i - T\Big)x",
        "expand = 0",
    )
    y, a1, a2, t = sp.symbols("y a1 a2 t", real=True)
    n1, n2 = sp.symbols("n1 n2", nonnegative=True)
    # ⟨Y, Σμ_i A_i − T⟩ = Σ μ_i ⟨Y, A_i⟩ − ⟨Y, T⟩ with ⟨Y, A_i⟩ = −a_i ≤ 0, ⟨Y, T⟩ = t > 0
    inner = n1 * (-a1**2) + n2 * (-a2**2) - t**2
    if sp.ask(sp.Q.negative(inner), sp.Q.positive(t)) is not True:
        raise ProofError("sympy could not show Σμ_i⟨Y, A_i⟩ − ⟨Y, T⟩ < 0")
    del y
    pf.add(
        r"Farkas: with $\langle Y,A_i\rangle\le0$, $\langle Y,T\rangle>0$ and $\mu\ge0$ (here $\langle Y,A_i\rangle=-a_i^2$, "
        r"$\langle Y,T\rangle=t^2$), Cauchy--Schwarz bounds the distance:",
        r"\langle Y,\textstyle\sum_i\mu_iA_i - T\rangle = \sum_i\mu_i\langle Y,A_i\rangle - \langle Y,T\rangle < 0,\qquad "
        r"\Big\|\sum_i\mu_iA_i - T\Big\|_F \ge \langle Y,T\rangle/\|Y\|_F",
        "ask(negative)",
    )
    pf.conclusion = (
        r"An LP solution $\mu>0$ builds the residual-free block; a Farkas matrix $Y$ (with the (Q) tensors independent "
        r"and nondegenerate weights) proves $f$ not absorbable, with or without biases."
    )
    return pf
