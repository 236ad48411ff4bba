"""Machine-checked proofs of the results a certificate cites, closed step by step by SymPy.

One function per result of docs/mathematics.md §2 (``invertible_skip``, ``degree``,
``linearization``, ``depth``, ``boundedness``, ``flip_identity``). Each works on *symbolic*
weights — matrices of symbols of a small fixed size — and, where sympy allows it, in full
generality: a symbolic degree ``k``, a general gate ``g`` (an undefined sympy ``Function``
with ``g(0) = 0`` substituted), a general ``h`` in ``σ(z) = z·h(z)``. Every algebraic step
is an equation ``lhs = rhs`` that sympy must reduce to ``lhs − rhs = 0`` (or a limit or a
solution set it must compute); if it cannot, :class:`ProofError` is raised and the proof is
*not* written. The analytic glue between steps (continuity, compactness, "for all x") is
stated in words in the rendered proof; it is standard and not machine-checked.

The scripts in ``proofs/`` and ``absorb prove`` both call :func:`run_proof`; they share
this one implementation.
"""


from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import sympy as sp

from absorb.certificate._proof_core import (  # noqa: F401 - re-exported: the proofs' shared API
    P,
    Proof,
    ProofError,
    Step,
    T,
    Z,
    _apply,
    _equal,
    _fail,
    _homogeneous_rule,
    _mat,
    _vec,
    _zero,
)
from absorb.certificate._proofs_beyond import (  # noqa: F401 - re-exported
    BOUNDED_BY_INTERVAL,
    EVEN_ACTIVATIONS,
    SKELETON_ACTIVATIONS,
    _flip_block_check,
    _sigma_inf,
    prove_asymptotic_skeleton,
    prove_boundedness,
    prove_exponential,
    prove_leaky_reduction,
    prove_parity,
)
from absorb.certificate._proofs_relu2_linear import prove_relu2_linear
from absorb.certificate._proofs_skeleton2 import (  # noqa: F401 - re-exported
    QUADRATIC_ACTIVATIONS,
    RELU_LIKE_GATES,
    STEP_GATES,
    prove_gated_skeleton,
    prove_skeleton2,
)
from absorb.certificate._theorems import PAPER, PROOF_NAMES

# ------------------------------------------------------------------------- result 1 --


def prove_invertible_skip() -> Proof:
    pf = Proof("invertible_skip", "Invertible skip reduces to the identity", "result 1 of arXiv 2604.23705",
               r"Let $M$ be invertible. Then $f(x)=Mx+B(x)$ is absorbable if and only if $x\mapsto x+M^{-1}B(x)$ is, "
               r"and "
               r"$M^{-1}B$ is a block of the same kind with $W_{\mathrm{down}}\leftarrow M^{-1}W_{\mathrm{down}}$. "
               r"For a "
               r"Hyper-Connection block with $s$ streams the lifted skip is $H_{\mathrm{res}}\otimes I_d$, "
               r"invertible iff "
               r"$H_{\mathrm{res}}$ is.",
               r"Symbolic $M\in\mathbb{R}^{2\times2}$ with $\det M\ne0$, $W_{\mathrm{up}}, W_{\mathrm{down}}$ of size "
               r"$2\times2$, and a general activation $\sigma$ (an undefined function).")
    sigma = sp.Function("sigma")
    M, U, D = _mat("m", 2, 2), _mat("u", 2, 2), _mat("w", 2, 2)
    x = _vec("x", 2)
    B = D * _apply(sigma, U * x)
    f = M * x + B
    Minv = M.inv()
    pf.add(
        r"Factor the skip out of $f$:",
        r"Mx + B(x) = M\big(x + M^{-1}B(x)\big)",
        _equal(f, M * (x + Minv * B), "factor M"),
    )
    pf.add(
        r"$M^{-1}B$ is the same block with down projection $M^{-1}W_{\mathrm{down}}$:",
        r"M^{-1}\,W_{\mathrm{down}}\,\sigma(W_{\mathrm{up}}x) = (M^{-1}W_{\mathrm{down}})\,\sigma(W_{\mathrm{up}}x)",
        _equal(Minv * B, (Minv * D) * _apply(sigma, U * x), "associativity"),
    )
    U2, D2 = _mat("a", 2, 2), _mat("c", 2, 2)
    B2 = D2 * _apply(sigma, U2 * x)
    pf.add(
        r"If $B'$ absorbs $f$ then $M^{-1}B'$ (a block with down projection $M^{-1}W'_{\mathrm{down}}$) absorbs "
        r"$x+M^{-1}B(x)$; conversely if $B''$ absorbs $x + M^{-1}B(x)$ then $MB''$ absorbs $f$:",
        r"M^{-1}\big(Mx + B(x)\big) = x + M^{-1}B(x),\qquad "
        r"M\,\big(W''_{\mathrm{down}}\sigma(W''_{\mathrm{up}}x)\big) = "
        r"(MW''_{\mathrm{down}})\,\sigma(W''_{\mathrm{up}}x)",
        _equal(Minv * f, x + Minv * B, "multiply by M^{-1}")
        and _equal(M * B2, (M * D2) * _apply(sigma, U2 * x), "multiply by M"),
    )
    # Hyper-Connections, s = 2 streams, d = 2.
    Hres = _mat("h", 2, 2)
    hpre, hpost = _vec("q", 2), _vec("r", 2)
    X = _mat("X", 2, 2)  # rows are streams
    xin = (hpre.T * X).T  # Σ_k H_pre[k] X[k,:]
    out = Hres * X + hpost * (D * _apply(sigma, U * xin)).T
    vecX = sp.Matrix([X[0, 0], X[0, 1], X[1, 0], X[1, 1]])
    I2 = sp.eye(2)
    Mlift = sp.kronecker_product(Hres, I2)
    Ulift = U * sp.kronecker_product(hpre.T, I2)
    Dlift = sp.kronecker_product(hpost, I2) * D
    lifted = Mlift * vecX + Dlift * _apply(sigma, Ulift * vecX)
    vecOut = sp.Matrix([out[0, 0], out[0, 1], out[1, 0], out[1, 1]])
    pf.add(
        r"Hyper-Connections ($s=2$ streams, state $X\in\mathbb{R}^{2\times 2}$ flattened stream by stream): "
        r"$f(X)=H_{\mathrm{res}}X + H_{\mathrm{post}}^{\top}B(H_{\mathrm{pre}}X)$ is the block on "
        r"$\mathbb{R}^{sd}$ with",
        r"M = H_{\mathrm{res}}\otimes I_d,\quad W_{\mathrm{up}}\leftarrow "
        r"W_{\mathrm{up}}(H_{\mathrm{pre}}^{\top}\otimes I_d),"
        r"\quad W_{\mathrm{down}}\leftarrow (H_{\mathrm{post}}\otimes I_d)W_{\mathrm{down}}",
        _equal(vecOut, lifted, "HC lifting"),
    )
    pf.add(
        r"and the lifted skip is invertible exactly when $H_{\mathrm{res}}$ is:",
        r"\det(H_{\mathrm{res}}\otimes I_2) = (\det H_{\mathrm{res}})^2",
        _equal(Mlift.det(), Hres.det() ** 2, "det of a Kronecker product"),
    )
    pf.conclusion = (
        r"Absorbing $f$ is equivalent to absorbing $x + M^{-1}B(x)$, a residual block with identity skip; "
        r"this is how the index-set criterion is applied to an invertible $M$ (target $-M$ instead of "
        r"$-I$)."
    )
    return pf


# ------------------------------------------------------------------------- result 2 --


def prove_degree() -> Proof:
    pf = Proof(
        "degree",
        "Degree argument",
        "result 2 of arXiv 2604.23705",
        r"If $\sigma$ is positively homogeneous of degree $k>0$, $k\ne1$, and the block is bias-free, then "
        r"$Mx+B(x)=B'(x)$ for all $x$ and some residual-free block $B'$ forces $M=0$. ReLU$^2$ has $k=2$; ReGLU "
        r"(a ReLU gate times a linear value) has $k=2$.",
        r"A general degree $k>0$ (a symbol) and symbolic vectors for $Mx$, $B(x)$, $B'(x)$ at a fixed "
        r"$x\in\mathbb{R}^2$; "
        r"blocks with $W_{\mathrm{up}}, W_{\mathrm{gate}}\in\mathbb{R}^{2\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times2}$.",
    )
    k = sp.Symbol("k", positive=True)
    relu2 = sp.Max(0, Z) ** 2
    relu = sp.Max(0, Z)
    for name, fn, deg in (("ReLU^2", relu2, 2), ("ReLU", relu, 1)):
        cases = [sp.simplify(fn.subs(Z, s * T * P) - T**deg * fn.subs(Z, s * P)) for s in (1, -1)] + [fn.subs(Z, 0)]
        _zero(sp.Matrix(cases), f"{name} homogeneity")
    pf.add(
        r"Scalar homogeneity on the sign cases $z=p$, $z=-p$, $z=0$ ($p,t>0$):",
        r"\max(0,tz)^2 = t^2\max(0,z)^2,\qquad \max(0,tz) = t\,\max(0,z)",
        "simplify on each sign case = 0",
    )
    s_ = sp.Function("s")
    U, D, G = _mat("u", 2, 2), _mat("w", 2, 2), _mat("g", 2, 2)
    x = _vec("x", 2)
    rule = _homogeneous_rule(s_, k, T)
    Bt = rule(D * _apply(s_, U * (T * x)))
    pf.add(
        r"Block level: if $s(tz)=t^ks(z)$ then $B(x)=W_{\mathrm{down}}s(W_{\mathrm{up}}x)$ satisfies",
        r"B(tx) = W_{\mathrm{down}}\,s(t\,W_{\mathrm{up}}x) = t^k B(x)",
        _equal(Bt, T**k * D * _apply(s_, U * x), "block homogeneity"),
    )
    g = sp.Function("g")
    grule = _homogeneous_rule(g, sp.Integer(1), T)
    hidden_t = sp.Matrix([g((G * (T * x))[i]) * (U * (T * x))[i] for i in range(2)])
    hidden = sp.Matrix([g((G * x)[i]) * (U * x)[i] for i in range(2)])
    pf.add(
        r"Gated (ReGLU: $g$ homogeneous of degree $1$): the hidden vector $g(W_{\mathrm{gate}}x)\odot "
        r"W_{\mathrm{up}}x$ has degree $2$:",
        r"g(tW_{\mathrm{gate}}x)\odot(tW_{\mathrm{up}}x) = t^2\,g(W_{\mathrm{gate}}x)\odot W_{\mathrm{up}}x",
        _equal(grule(D * hidden_t), T**2 * D * hidden, "gated homogeneity"),
    )
    kg, kh = sp.Symbol("k_g", positive=True), sp.Symbol("k_h", positive=True)
    h = sp.Function("h")
    hidden_t = sp.Matrix([g((G * (T * x))[i]) * h((U * (T * x))[i]) for i in range(2)])
    hidden = sp.Matrix([g((G * x)[i]) * h((U * x)[i]) for i in range(2)])
    value_t = _homogeneous_rule(h, kh, T)(_homogeneous_rule(g, kg, T)(D * hidden_t))
    pf.add(
        r"(beyond the paper) Gated with a value activation $h$: $g$ of degree $k_g$ and $h$ of degree $k_h$ "
        r"(symbols) make the hidden vector $g(W_{\mathrm{gate}}x)\odot h(W_{\mathrm{up}}x)$ homogeneous of degree "
        r"$k_g+k_h$ (ReGLU with $h=\mathrm{ReLU}$: $k=2$), and the argument below applies with $k=k_g+k_h$:",
        r"g(tW_{\mathrm{gate}}x)\odot h(tW_{\mathrm{up}}x) = t^{k_g+k_h}\,g(W_{\mathrm{gate}}x)\odot h(W_{\mathrm{up}}x)",
        _equal(value_t, T ** (kg + kh) * D * hidden, "gated homogeneity with a value activation"),
    )
    m, b = _vec("m", 2), _vec("b", 2)  # Mx and B(x) at a fixed x; B'(x) = m + b
    # B'(y) = My + B(y) at y = x gives bp = m + b; at y = tx gives t^k bp = t m + t^k b.
    lhs = T**k * (m + b) - (T * m + T**k * b)
    pf.add(
        r"Suppose $B'(y)=My+B(y)$ for all $y$. At $y=x$: $B'(x)=Mx+B(x)$; at $y=tx$, by homogeneity of both blocks: "
        r"$t^kB'(x)=tMx+t^kB(x)$. Subtracting $t^k$ times the first:",
        r"t^k\big(Mx+B(x)\big) - \big(tMx + t^kB(x)\big) = (t^k - t)\,Mx = 0\quad(t>0)",
        _equal(lhs, (T**k - T) * m, "subtract"),
    )
    sol = sp.solveset(sp.Integer(2) ** k - 2, k, sp.Interval.open(0, sp.oo))
    if sol != sp.FiniteSet(1):
        raise ProofError(f"sympy could not solve 2^k = 2 on k > 0: got {sol}")
    pf.add(
        r"Take $t=2$: the factor $2^k-2$ vanishes only at $k=1$ (SymPy's solution set on $k>0$):",
        r"\{k>0 : 2^k - 2 = 0\} = \{1\}",
        "solveset(2**k - 2, k, (0, oo)) = {1}",
    )
    pf.conclusion = (
        r"Hence for $k\ne1$, $Mx=0$ for every $x$ (take $x=e_j$ for each column), i.e.\ $M=0$. "
        r"So a nonzero skip can never be absorbed, at any width."
    )
    return pf


# ------------------------------------------------------------------------- result 3 --


def _gated(D: sp.Matrix, G: sp.Matrix, U: sp.Matrix, g: sp.FunctionClass, x: sp.Matrix) -> sp.Matrix:
    gx, ux = G * x, U * x
    return D * sp.Matrix([g(gx[i]) * ux[i] for i in range(gx.rows)])


def _at_zero(expr: sp.MatrixBase, xs: Sequence[sp.Symbol], g: sp.FunctionClass) -> sp.MatrixBase:
    """Evaluate at x = 0 and substitute the hypothesis g(0) = 0."""
    out = expr.subs({v: 0 for v in xs}).doit()
    return out.subs(g(0), 0)


def prove_linearization() -> Proof:
    pf = Proof(
        "linearization",
        "Linearization argument",
        "result 3 of arXiv 2604.23705",
        r"For a bias-free gated block $B(x)=W_{\mathrm{down}}(g(W_{\mathrm{gate}}x)\odot W_{\mathrm{up}}x)$ "
        r"with $g$ "
        r"differentiable at $0$ and $g(0)=0$ (SwiGLU, GeGLU): $J_{B'}(0)=0$ for every such block, so "
        r"$Mx+B(x)=B'(x)$ forces $M=J_f(0)=J_{B'}(0)=0$.",
        r"A general gate $g$ (an undefined function, hypothesis $g(0)=0$ substituted), symbolic "
        r"$W_{\mathrm{up}}, W_{\mathrm{gate}}\in\mathbb{R}^{3\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times3}$, $M\in\mathbb{R}^{2\times2}$.",
    )
    g = sp.Function("g")
    U, G, D, M = _mat("u", 3, 2), _mat("v", 3, 2), _mat("w", 2, 3), _mat("m", 2, 2)
    xs = sp.symbols("x_1 x_2", real=True)
    x = sp.Matrix(xs)
    B = _gated(D, G, U, g, x)
    J = B.jacobian(x)
    y = sp.Symbol("y", real=True)
    gp = [sp.Derivative(g(y), y).subs(y, (G * x)[i]) for i in range(3)]
    formula = D * (
        sp.diag(*[g((G * x)[i]) for i in range(3)]) * U + sp.diag(*[(U * x)[i] * gp[i] for i in range(3)]) * G
    )
    pf.add(
        r"The Jacobian of a gated block at any $x$ (product rule):",
        r"J_B(x) = W_{\mathrm{down}}\big(\mathrm{diag}(g(W_{\mathrm{gate}}x))\,W_{\mathrm{up}} + "
        r"\mathrm{diag}(W_{\mathrm{up}}x)\,\mathrm{diag}(g'(W_{\mathrm{gate}}x))\,W_{\mathrm{gate}}\big)",
        _equal(J, formula.doit(), "Jacobian formula"),
    )
    J0 = _at_zero(J, xs, g)
    _zero(J0, "J_B(0) = 0 under g(0) = 0")
    pf.add(
        r"At $x=0$ the first term has $g(0)=0$ and the second has $W_{\mathrm{up}}0=0$:",
        r"J_B(0) = W_{\mathrm{down}}\,\mathrm{diag}(g(0))\,W_{\mathrm{up}} = 0",
        "substitute x = 0, g(0) = 0; simplify = 0",
    )
    f = M * x + B
    pf.add(
        r"Hence the skip-connected block has",
        r"J_f(0) = M + J_B(0) = M",
        _equal(_at_zero(f.jacobian(x), xs, g), M, "J_f(0) = M"),
    )
    for name, expr in (
        ("SiLU", Z / (1 + sp.exp(-Z))),
        ("GELU", Z * (1 + sp.erf(Z / sp.sqrt(2))) / 2),
        ("GELU-tanh", Z * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (Z + sp.Rational(44715, 10**6) * Z**3))) / 2),
    ):
        _zero(expr.subs(Z, 0), f"{name}: g(0) = 0")
        _zero(sp.diff(expr, Z).subs(Z, 0) - sp.Rational(1, 2), f"{name}: g'(0) = 1/2")
    pf.add(
        r"The gates of SwiGLU, GeGLU and tanh-GeGLU satisfy the hypothesis (smooth, so differentiable at $0$):",
        r"g(0) = 0,\quad g'(0) = \tfrac12\quad\text{for } "
        r"g\in\{\mathrm{SiLU},\ \mathrm{GELU},\ \mathrm{GELU}_{\tanh}\}",
        "substitute 0 into g and g'; simplify",
    )
    _linearization_value_steps(pf)
    pf.conclusion = (
        r"If a residual-free gated block $B'$ equalled $f$, their Jacobians at $0$ would agree: $M = "
        r"J_f(0) = "
        r"J_{B'}(0) = 0$. So a nonzero skip cannot be absorbed, at any width (the computation above "
        r"does not "
        r"depend on the sizes beyond the product rule)."
    )
    return pf


def _linearization_value_steps(pf: Proof) -> None:
    """(beyond the paper) The argument with a value activation h: g(0) = h(0) = 0 with finite
    one-sided derivatives, written g(z) = z·φ(z), h(z) = z·ψ(z) with φ, ψ bounded near 0."""
    phi, psi = sp.Function("phi"), sp.Function("psi")
    U, G, D, M = _mat("u", 3, 2), _mat("v", 3, 2), _mat("w", 2, 3), _mat("m", 2, 2)
    x = sp.Matrix(sp.symbols("x_1 x_2", real=True))
    g = sp.Lambda(Z, Z * phi(Z))
    h = sp.Lambda(Z, Z * psi(Z))
    gx, ux = G * (T * x), U * (T * x)
    B_t = D * sp.Matrix([g(gx[i]) * h(ux[i]) for i in range(3)])
    bound = T * D * sp.Matrix([(G * x)[i] * (U * x)[i] * phi(gx[i]) * psi(ux[i]) for i in range(3)])
    pf.add(
        r"(beyond the paper) With a value activation $h$, $B(x)=W_{\mathrm{down}}(g(W_{\mathrm{gate}}x)\odot "
        r"h(W_{\mathrm{up}}x))$: if $g(0)=h(0)=0$ with finite one-sided derivatives at $0$, then "
        r"$g(z)=z\,\varphi(z)$, $h(z)=z\,\psi(z)$ with $\varphi(z)=g(z)/z$, $\psi(z)=h(z)/z$ bounded on "
        r"$0<|z|\le\delta$ (each tends to a finite one-sided limit), and for every $t>0$",
        r"\frac{B(tx)}{t} = t\,W_{\mathrm{down}}\Big((W_{\mathrm{gate}}x)\odot(W_{\mathrm{up}}x)\odot"
        r"\varphi(tW_{\mathrm{gate}}x)\odot\psi(tW_{\mathrm{up}}x)\Big)",
        _equal(B_t / T, bound, "B(tx)/t factored"),
    )
    pf.add(
        r"The bracket is bounded for small $t$ (by $C^2|W_{\mathrm{gate}}x|\,|W_{\mathrm{up}}x|$), so "
        r"$B(tx)/t\to0$ as $t\to0^+$ for every such block, $B'$ and $B$ alike; and",
        r"\frac{f(tx)}{t} = Mx + \frac{B(tx)}{t} \to Mx",
        _equal((M * (T * x) + B_t) / T, M * x + B_t / T, "f(tx)/t"),
    )
    gb = sp.Function("g")  # a bounded gate (|g| ≤ K), h(z) = z·ψ(z) with ψ(z) → 0 as z → 0 (both slopes 0)
    B_flat = D * sp.Matrix([gb(gx[i]) * h(ux[i]) for i in range(3)])
    pf.add(
        r"A bounded factor times an $o(|z|)$ one: if $|g|\le K$ on $\mathbb{R}$ and $h(0)=0$ with "
        r"$h'(0^\pm)=0$, then $\psi(z)=h(z)/z\to0$ and",
        r"\frac{B(tx)}{t} = W_{\mathrm{down}}\Big(g(tW_{\mathrm{gate}}x)\odot(W_{\mathrm{up}}x)\odot"
        r"\psi(tW_{\mathrm{up}}x)\Big) \to 0\quad(|\cdot|\le K\,|W_{\mathrm{up}}x|\,\sup_{|z|\le\delta}|\psi(z)|)",
        _equal(B_flat / T, D * sp.Matrix([gb(gx[i]) * (U * x)[i] * psi(ux[i]) for i in range(3)]), "B(tx)/t, bounded gate"),
    )
    relu = sp.Max(0, Z)
    slopes = [sp.simplify(relu.subs(Z, P) / P), sp.simplify(relu.subs(Z, -P) / (-P)), relu.subs(Z, 0),
              sp.simplify((Z**3).subs(Z, P) / P - P**2), sp.diff(sp.tanh(Z), Z).subs(Z, 0), sp.tanh(0)]
    if slopes != [1, 0, 0, 0, 1, 0]:
        raise ProofError(f"sympy could not close the slopes of ReLU, z^3, tanh at 0: got {slopes}")
    pf.add(
        r"Instances: ReLU ($\max(0,p)/p=1$, $\max(0,-p)/(-p)=0$, $p>0$), $z^3$ ($z^3/z=z^2\to0$), $\tanh$ "
        r"($\tanh 0=0$, $\tanh'(0)=1$), and SiLU, GELU above, as $g$ or as $h$. So $B'=f$ forces $Mx=0$ for "
        r"every $x$: $M=0$.",
        r"\frac{\max(0,p)}{p}=1,\quad\frac{\max(0,-p)}{-p}=0,\quad\tanh'(0)=1",
        "simplify on the sign cases; diff at 0",
    )


# ------------------------------------------------------------------------- result 4 --


def prove_depth() -> Proof:
    pf = Proof(
        "depth",
        "Depth argument",
        "result 4 of arXiv 2604.23705",
        r"If every layer's residual-free blocks are homogeneous of degree $k>1$ (or gated with $g(0)=0$, $g$ "
        r"differentiable at $0$), then no composition $G=B'_L\circ\cdots\circ B'_1$ equals "
        r"$F=f_L\circ\cdots\circ f_1$, $f_\ell(x)=M_\ell x+B_\ell(x)$, unless $M_L\cdots M_1=0$.",
        r"$L=2$ layers on $\mathbb{R}^2$ with symbolic $2\times2$ weights; a general degree $k=1+\kappa$, "
        r"$\kappa>0$; a general gate $g$ with $g(0)=0$.",
    )
    kap = sp.Symbol("kappa", positive=True)
    k = 1 + kap
    s_ = sp.Function("s")
    rule = _homogeneous_rule(s_, k, T)
    U1, D1, U2, D2 = _mat("a", 2, 2), _mat("b", 2, 2), _mat("c", 2, 2), _mat("e", 2, 2)
    M1, M2 = _mat("m", 2, 2), _mat("n", 2, 2)
    x = _vec("x", 2)
    B1 = lambda v: D1 * _apply(s_, U1 * v)  # noqa: E731
    B2 = lambda v: D2 * _apply(s_, U2 * v)  # noqa: E731
    inner = rule(B1(T * x))
    Gt = rule(B2(inner))
    pf.add(
        r"Homogeneous case. With $s(tz)=t^ks(z)$ each block has degree $k$, so the composition has degree $k^2$:",
        r"G(tx) = B'_2\big(t^kB'_1(x)\big) = t^{k^2}G(x)",
        _equal(Gt, T ** (k**2) * B2(B1(x)), "composition degree"),
    )
    lim = sp.limit(T ** sp.expand(k**2 - 1), T, 0, "+")
    if lim != 0:
        raise ProofError(f"sympy could not show t^(k^2-1) -> 0: got {lim}")
    pf.add(
        r"so $G(tx)/t = t^{k^2-1}G(x)\to0$ as $t\to0^+$:", r"\lim_{t\to0^+} t^{(1+\kappa)^2-1} = 0", "limit(...) = 0"
    )
    y = M1 * x + T**kap * B1(x)
    yv = _vec("y", 2)  # B_2's homogeneity is applied at a free point y, then y := y(t)
    B2ty = rule(B2(T * yv))
    _zero(B2ty - T**k * B2(yv), "B_2(t y) = t^k B_2(y)")
    Ft = M2 * (T * M1 * x + T**k * B1(x)) + B2ty.subs(dict(zip(yv, y, strict=True)), simultaneous=True)
    pf.add(
        r"For $F$, write $F(tx)=M_2\,t\,y(t)+B_2(t\,y(t))$ with $y(t)=M_1x+t^{\kappa}B_1(x)$; homogeneity of "
        r"$B_2$ gives",
        r"\frac{F(tx)}{t} = M_2\,y(t) + t^{\kappa}B_2(y(t))",
        _equal(Ft / T, M2 * y + T**kap * B2(y), "F(tx)/t"),
    )
    a, bb, C = sp.Symbol("alpha", nonnegative=True), sp.Symbol("beta", nonnegative=True), sp.Symbol("C", positive=True)
    lim2 = sp.limit(C * T**kap * (a + T**kap * bb) ** k, T, 0, "+")
    if lim2 != 0:
        raise ProofError(f"sympy could not show the remainder tends to 0: got {lim2}")
    pf.add(
        r"$B_2$ is continuous and homogeneous, so $|B_2(y)|\le C|y|^k$ with $C=\max_{|u|=1}|B_2(u)|$; with "
        r"$\alpha=|M_1x|$, $\beta=|B_1(x)|$ the remainder is at most $Ct^{\kappa}(\alpha+t^{\kappa}\beta)^{k}\to0$:",
        r"\lim_{t\to0^+} C\,t^{\kappa}(\alpha+t^{\kappa}\beta)^{1+\kappa} = 0",
        "limit(...) = 0",
    )
    pf.add(
        r"and $y(t)\to M_1x$, hence",
        r"\lim_{t\to0^+}\frac{F(tx)}{t} = M_2M_1x",
        "limit of t^kappa * beta = 0" if sp.limit(T**kap * bb, T, 0, "+") == 0 else _fail("limit"),
    )
    g = sp.Function("g")
    G1, G2 = _mat("p", 2, 2), _mat("q", 2, 2)
    xs = sp.symbols("x_1 x_2", real=True)
    xv = sp.Matrix(xs)
    Bp1 = _gated(D1, G1, U1, g, xv)
    comp = _gated(D2, G2, U2, g, Bp1)
    JG = _at_zero(comp.jacobian(xv), xs, g)
    _zero(JG, "J_G(0) = 0")
    pf.add(
        r"Gated case ($g(0)=0$): the composition of two residual-free gated blocks has zero Jacobian at $0$:",
        r"J_{B'_2\circ B'_1}(0) = J_{B'_2}(B'_1(0))\,J_{B'_1}(0) = 0",
        "Jacobian at 0, g(0) = 0 substituted; simplify = 0",
    )
    Fg = M2 * (M1 * xv + Bp1) + _gated(D2, G2, U2, g, M1 * xv + Bp1)
    pf.add(
        r"while the residual stack has",
        r"J_{f_2\circ f_1}(0) = M_2M_1",
        _equal(_at_zero(Fg.jacobian(xv), xs, g), M2 * M1, "J_F(0) = M2 M1"),
    )
    pf.conclusion = (
        r"In both cases $F(tx)/t\to M_2M_1x$ while $G(tx)/t\to0$ as $t\to0^+$ (for the gated case by "
        r"differentiability at $0$). If $G=F$ then $M_2M_1x=0$ for all $x$, i.e.\ $M_2M_1=0$. The same "
        r"computation applies layer by layer for any $L$: $L$ residual blocks are never $L$ residual-free "
        r"blocks when $M_L\cdots M_1\ne0$."
    )
    return pf


# --------------------------------------------------------------------- flip identity --

FLIP_ACTIVATIONS: dict[str, sp.Expr] = {
    "ReLU": sp.Max(0, Z),
    "GELU": Z * (1 + sp.erf(Z / sp.sqrt(2))) / 2,
    "GELU (tanh approximation)": Z * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (Z + sp.Rational(44715, 10**6) * Z**3))) / 2,
    "SiLU": Z / (1 + sp.exp(-Z)),
    "quick-GELU": Z / (1 + sp.exp(-sp.Rational(1702, 1000) * Z)),
    "softplus": sp.log(1 + sp.exp(Z)),
}
FLIP_FAILS: dict[str, sp.Expr] = {
    "ReLU$^2$": sp.Max(0, Z) ** 2,
    "leaky ReLU": sp.Piecewise((Z, Z >= 0), (Z / 100, True)),
    "tanh": sp.tanh(Z),
    "sigmoid": 1 / (1 + sp.exp(-Z)),
}


def prove_flip_identity() -> Proof:
    pf = Proof(
        "flip_identity",
        "Sufficiency of the index-set condition (the flip identity)",
        "result 5 of arXiv 2604.23705 (sufficiency; beyond it for GELU-tanh, SiLU, quick-GELU, softplus)",
        r"If $\sigma(z)-\sigma(-z)=z$ for all $z$ and $W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]=-I$, "
        r"negating the "
        r"rows $u_i$, $i\in S$, gives a residual-free block $B'$ with $B'(x)=x+B(x)$; with biases the constant "
        r"$W_{\mathrm{down}}[:,S]\,b_{\mathrm{up}}[S]$ moves into the output bias. The identity holds for "
        r"ReLU, GELU "
        r"(erf and tanh forms), SiLU, quick-GELU and softplus; it fails for ReLU$^2$, tanh and sigmoid with "
        r"every "
        r"constant, and leaky ReLU satisfies it only with $c=101/100$ (then the target is $-M/c$).",
        r"A general $h$ (undefined function) in $\sigma(z)=z\,h(z)$; each named activation on the sign cases "
        r"$z=p$, $z=-p$, $z=0$ ($p>0$); a block with $W_{\mathrm{up}}\in\mathbb{R}^{3\times2}$, "
        r"$W_{\mathrm{down}}\in\mathbb{R}^{2\times3}$, $S=\{1,2\}$ and a general $\sigma$ satisfying the "
        r"identity.",
    )
    h = sp.Function("h")
    expr = Z * h(Z) - (-Z) * h(-Z) - Z
    _zero(expr.subs(h(-Z), 1 - h(Z)), "general h")
    pf.add(
        r"General form: if $\sigma(z)=z\,h(z)$ with $h(z)+h(-z)=1$ then",
        r"\sigma(z)-\sigma(-z) = z\,h(z) + z\,h(-z) = z",
        "substitute h(-z) = 1 - h(z); simplify = 0",
    )
    for name, e in FLIP_ACTIVATIONS.items():
        _zero(sp.simplify(e.subs(Z, P) - e.subs(Z, -P) - P), f"{name} at z = p")
        _zero(sp.simplify(e.subs(Z, -P) - e.subs(Z, P) + P), f"{name} at z = -p")
        _zero(e.subs(Z, 0) - e.subs(Z, 0), f"{name} at z = 0")
        pf.add(
            rf"{name}, $\sigma(z) = \displaystyle {sp.latex(e)}$:",
            r"\sigma(p)-\sigma(-p) = p,\quad "
            r"\sigma(-p)-\sigma(p) = -p,\quad "
            r"\sigma(0)-\sigma(0)=0",
            "simplify on each sign case = 0",
        )
    for name, e in FLIP_FAILS.items():
        c1 = sp.simplify(e.subs(Z, 1) - e.subs(Z, -1))
        c2 = sp.simplify((e.subs(Z, 2) - e.subs(Z, -2)) / 2)
        if sp.N(c1 - 1, 30) == 0 and sp.N(c2 - 1, 30) == 0:
            raise ProofError(f"expected sigma(z) - sigma(-z) != z at z = 1 or z = 2 for {name}")
        if sp.N(c1 - c2, 30) != 0:
            pf.add(
                rf"It fails for {name} with every constant $c$: $(\sigma(z)-\sigma(-z))/z$ differs "
                "between $z=1$ and $z=2$:",
                rf"\sigma(1)-\sigma(-1) = {sp.latex(c1)} \ne {sp.latex(c2)} = \tfrac{{\sigma(2)-\sigma(-2)}}{{2}}",
                "30-digit evaluation",
            )
        else:
            c = sp.simplify((e.subs(Z, P) - e.subs(Z, -P)) / P)
            if c.free_symbols or sp.simplify(c - c1) != 0:
                raise ProofError(f"sympy could not decide the flip constant of {name}")
            pf.add(
                rf"{name} fails the identity with $c=1$ but satisfies it with $c={sp.latex(c)}$ (so the general "
                rf"condition $W_{{\mathrm{{down}}}}[:,S]\,W_{{\mathrm{{up}}}}[S,:]=-M/c$ applies):",
                rf"\sigma(p)-\sigma(-p) = {sp.latex(c)}\,p\quad(p>0)",
                "simplify on each sign case",
            )
    sigma = sp.Function("sigma")

    def flip_rule(e: sp.Expr) -> sp.Expr:
        # σ(−z) = σ(z) − z, applied to every σ whose argument carries a leading minus sign.
        return e.replace(
            lambda q: (
                isinstance(q, sp.Function) and q.func == sigma and sp.expand(q.args[0]).could_extract_minus_sign()
            ),
            lambda q: sigma(sp.expand(-q.args[0])) + sp.expand(q.args[0]),
        )

    U, D = _mat("u", 3, 2), _mat("w", 2, 3)
    bu, bd = _vec("b", 3), _vec("c", 2)
    x = _vec("x", 2)
    S = [0, 1]
    Uf = U.copy()
    bf = bu.copy()
    for i in S:
        Uf[i, :] = -U[i, :]
        bf[i] = -bu[i]
    DS, US, bS = D[:, S], U[S, :], bu[S, :]
    B = D * (U * x + bu).applyfunc(lambda a: sigma(sp.expand(a))) + bd
    Bp = D * (Uf * x + bf).applyfunc(lambda a: sigma(sp.expand(a))) + bd + DS * bS
    pf.add(
        r"Block level, with biases: negate $u_i$ and $b_{\mathrm{up},i}$ for $i\in S$ and set "
        r"$b'_{\mathrm{down}} = b_{\mathrm{down}} + W_{\mathrm{down}}[:,S]\,b_{\mathrm{up}}[S]$; the identity "
        r"$\sigma(-z)=\sigma(z)-z$ on the units in $S$ gives",
        r"B'(x) = B(x) - W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]\,x",
        _equal(flip_rule(Bp), B - DS * US * x, "flip the units in S"),
    )
    pf.add(
        r"so if $W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:] = -I$ then",
        r"B'(x) = x + B(x) = f(x)",
        _equal(flip_rule(Bp) - (x + B), -(DS * US + sp.eye(2)) * x, "substitute the condition"),
    )
    gsym = sp.Function("g")
    G, V = _mat("v", 3, 2), _mat("r", 3, 2)
    Dg = D.copy()
    Gf = G.copy()
    for i in S:
        Gf[i, :] = -G[i, :]
        Dg[:, i] = -D[:, i]
    hid = lambda GG: sp.Matrix([gsym(sp.expand((GG * x)[i])) * (V * x)[i] for i in range(3)])  # noqa: E731
    glu_rule = lambda e: e.replace(  # noqa: E731
        lambda q: isinstance(q, sp.Function) and q.func == gsym and sp.expand(q.args[0]).could_extract_minus_sign(),
        lambda q: 1 - gsym(sp.expand(-q.args[0])),
    )
    pf.add(
        r"Gated variant (beyond the paper; sigmoid-gated GLU, $g(z)+g(-z)=1$): negating the gate rows and the down "
        r"columns in $S$ gives",
        r"B'(x) = B(x) - "
        r"W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]\,x\quad(W_{\mathrm{up}}\text{ the "
        r"value projection})",
        _equal(glu_rule(Dg * hid(Gf)), D * hid(G) - D[:, S] * V[S, :] * x, "GLU flip"),
    )
    sg = 1 / (1 + sp.exp(-Z))
    _zero(sg.subs(Z, P) + sg.subs(Z, -P) - 1, "sigmoid g(z) + g(-z) = 1")
    pf.conclusion = (
        r"Any index set with $W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]=-I$ (for a general skip: "
        r"$=-M/c$ with "
        r"$\sigma(z)-\sigma(-z)=cz$) yields an explicit residual-free block equal to $f$. Note that "
        r"softplus "
        r"satisfies the identity ($\log(1+e^z)-\log(1+e^{-z})=z$), as it should: the flip constant is 1."
    )
    return pf


PROOFS: dict[str, Callable[[], Proof]] = {
    "invertible_skip": prove_invertible_skip,
    "degree": prove_degree,
    "linearization": prove_linearization,
    "depth": prove_depth,
    "boundedness": prove_boundedness,
    "flip_identity": prove_flip_identity,
    "asymptotic_skeleton": prove_asymptotic_skeleton,
    "skeleton2": prove_skeleton2,
    "relu2_linear": prove_relu2_linear,
    "gated_skeleton": prove_gated_skeleton,
    "leaky_reduction": prove_leaky_reduction,
    "parity": prove_parity,
    "exponential": prove_exponential,
}
"""Every machine-checked proof, by the name ``absorb prove NAME`` and ``proofs/NAME.py`` use."""
assert tuple(PROOFS) == PROOF_NAMES, "keep _theorems.PROOF_NAMES in step with PROOFS"


def run_proof(name: str) -> Proof:
    """Run one proof; raises :class:`ProofError` if sympy cannot close a step, KeyError if unknown."""
    return PROOFS[name]()


def render_proof_latex(proof: Proof) -> str:
    """The proof as a self-contained LaTeX document."""
    from absorb.certificate.latex import environment

    return environment().get_template("proof.tex.j2").render(proof=proof, paper=PAPER)


def write_proof(name: str, out_dir: str | Path, *, pdf: bool = False) -> list[Path]:
    """Run proof ``name`` and write ``out_dir/name.tex`` (and ``.pdf``); returns the paths."""
    from absorb.certificate.write import _atomic_write, compile_pdf

    proof = run_proof(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tex = render_proof_latex(proof)
    paths = [out / f"{name}.tex"]
    _atomic_write(paths[0], tex.encode("utf-8"))
    if pdf:
        paths.append(out / f"{name}.pdf")
        _atomic_write(paths[1], compile_pdf(tex))
    return paths


def script_main(name: str, argv: Sequence[str] | None = None) -> int:
    """Entry point of ``proofs/<name>.py``: prove, write LaTeX, exit non-zero on failure."""
    ap = argparse.ArgumentParser(
        prog=f"proofs/{name}.py", description=f"Prove '{name}' with sympy and write a LaTeX proof."
    )
    ap.add_argument("--out", default="build/proofs", help="output folder (default build/proofs)")
    ap.add_argument("--pdf", action="store_true", help="also compile the PDF with pdflatex")
    args = ap.parse_args(argv)
    try:
        paths = write_proof(name, args.out, pdf=args.pdf)
    except ProofError as exc:
        sys.stderr.write(f"{name}: proof not closed: {exc}\n")
        return 1
    sys.stdout.write(f"{name}: proved; wrote {', '.join(str(p) for p in paths)}\n")
    return 0
