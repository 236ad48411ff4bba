"""The statements a certificate cites, keyed by the contract's theorem ids.

Numbering follows docs/mathematics.md §2 (results 1–5 of Mijoski & Karbevski, arXiv
2604.23705); ids marked *beyond* are this project's extensions, proved in ``proofs/``.
Each entry: a title, where it comes from, the statement in LaTeX, the names of the
hypotheses (as :mod:`absorb.engine.hypotheses` and :mod:`absorb.symbolic` call them) that
the statement needs, so a reader sees which checked facts the argument consumes, and (where
it matters) ``classes``: which residual-free blocks its impossibility covers — ``bias-free``
only, or ``any`` biases.
"""

from __future__ import annotations

PAPER = {
    "arxiv": "2604.23705",
    "authors": "Mijoski and Karbevski",
    "year": 2026,
    "title": "Can an MLP Absorb Its Own Skip Connection?",
    "url": "https://arxiv.org/abs/2604.23705",
}

NECESSITY_HYPOTHESES: tuple[str, ...] = ("bias_free", "d_at_least_2", "skip_invertible", "rows_nonzero", "columns_nonzero",
                                         "rows_noncollinear")
"""The hypotheses (on the weights) under which result 5 makes the index set necessary."""

THEOREMS: dict[str, dict[str, object]] = {
    "trivial": {
        "title": "Zero skip",
        "source": "definition",
        "statement": r"If $M = 0$ then $f = B$ is itself residual-free, so $B' = B$ absorbs it.",
        "needs": ["skip_nonzero (fails)"],
    },
    "degree": {
        "title": "Degree argument",
        "source": "result 2 of arXiv 2604.23705",
        "statement": (
            r"Let $\sigma$ be positively homogeneous of degree $k>0$, $k\ne 1$ (for a gated block: the gate "
            r"$g$ of degree $k_g$, so that $g(W_{\mathrm{gate}}x)\odot(W_{\mathrm{up}}x)$ has degree "
            r"$k=k_g+1$), "
            r"and let the block be bias-free. Then every residual-free block $B'$ of the same kind satisfies "
            r"$B'(tx)=t^kB'(x)$ for $t>0$, and $Mx+B(x)=B'(x)$ for all $x$ forces $M=0$. "
            r"Hence if $M\ne 0$ the skip cannot be absorbed, at any width."
        ),
        "needs": ["skip_nonzero", "bias_free", "homogeneous"],
        "classes": "bias-free",
    },
    "linearization": {
        "title": "Linearization argument",
        "source": "result 3 of arXiv 2604.23705",
        "statement": (
            r"Let the block be gated and bias-free, with gate $g$ differentiable at $0$ and $g(0)=0$. "
            r"Every residual-free gated block has "
            r"$J_{B'}(0)=W'_{\mathrm{down}}\big(\mathrm{diag}(g(0))W'_{\mathrm{up}}"
            r"+\mathrm{diag}(W'_{\mathrm{up}}0)\,g'(0)\,W'_{\mathrm{gate}}\big)=0$, while "
            r"$J_f(0)=M+J_B(0)=M$. "
            r"Hence if $M\ne0$ the skip cannot be absorbed, at any width."
        ),
        "needs": ["skip_nonzero", "bias_free", "vanishing_gate"],
        "classes": "bias-free",
    },
    "bounded": {
        "title": "Boundedness argument",
        "source": "beyond the paper (docs/results/bounded.md; proofs/boundedness.py)",
        "statement": (
            r"Let the block be ungated with $\sigma$ bounded on $\mathbb{R}$ (continuity is not needed), or gated "
            r"with the gate $g$ and the value activation $h$ both bounded on $\mathbb{R}$ (each unit "
            r"$g(\cdot)h(\cdot)$ is then bounded by $\sup|g|\sup|h|$), biases allowed. "
            r"Every residual-free block "
            r"$B'(x)=W'_{\mathrm{down}}\sigma(W'_{\mathrm{up}}x+b'_{\mathrm{up}})+b'_{\mathrm{down}}$ "
            r"is bounded, and so is $B$, while $x\mapsto Mx$ is unbounded when $M\ne0$. Hence $Mx+B(x)\ne "
            r"B'(x)$ for some "
            r"$x$: the skip cannot be absorbed, with or without biases, at any width."
        ),
        "needs": ["skip_nonzero", "bounded"],
        "classes": "any",
    },
    "linear": {
        "title": "Linear blocks (rank condition)",
        "source": "beyond the paper (docs/results/linear.md)",
        "statement": (
            r"With $\sigma(z)=cz$ ($c\ne0$ a constant) the map "
            r"$f(x)=(M+c\,W_{\mathrm{down}}W_{\mathrm{up}})x+b$ is affine, "
            r"and a residual-free block of width $n$ realises exactly the affine maps whose linear part "
            r"has rank $\le n$ "
            r"(a witness divides its $W'_{\mathrm{down}}$ by $c$). Hence $f$ is absorbable if and only if "
            r"$\mathrm{rank}(M+c\,W_{\mathrm{down}}W_{\mathrm{up}})\le n$, with or without biases. "
            r"With $\sigma(z)=cz+k$ ($k\ne0$) the same holds with biases (the output bias takes up the constant); "
            r"for bias-free $f$ and residual-free blocks, $f(x)=Ax+k\,v$ with $v=W_{\mathrm{down}}\mathbf 1$ and "
            r"$g(x)=W'_{\mathrm{down}}(c\,W'_{\mathrm{up}}x+k\,\mathbf 1)$, so $g=f$ iff "
            r"$W'_{\mathrm{down}}[c\,W'_{\mathrm{up}}\mid k\mathbf 1]=[A\mid k v]$: $f$ is absorbable if and only if "
            r"$\mathrm{rank}\,A\le n-1$, or $\mathrm{rank}\,A=n$, $v\in\mathrm{col}\,A$ and $v\ne0$; it is not when "
            r"$\mathrm{rank}[A\mid kv]>n$, or when $v=0$ and $\mathrm{rank}\,A\ge n$."
        ),
        "needs": ["linear", "rank"],
        "classes": "any",
    },
    "index-set": {
        "title": "Index-set criterion",
        "source": "result 5 of arXiv 2604.23705, with result 1 (invertible skip) and the flip identity",
        "statement": (
            r"Sufficiency (any $\sigma$ with $\sigma(z)-\sigma(-z)=cz$, $c\ne0$): if "
            r"$W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]=-M/c$ for an index set $S$, negating the rows "
            r"$u_i$, "
            r"$i\in S$, gives a residual-free block $B'$ with $B'=f$. "
            r"Necessity (result 5, $\sigma\in\{\mathrm{ReLU},\mathrm{GELU}\}$, ungated, bias-free, $d\ge2$, "
            r"$M$ invertible, rows of $W_{\mathrm{up}}$ nonzero and pairwise non-collinear, columns of "
            r"$W_{\mathrm{down}}$ nonzero): if $f$ is absorbable then such an $S$ exists."
        ),
        "needs": ["skip_nonzero", *NECESSITY_HYPOTHESES, "flip_identity"],
        "classes": "bias-free (necessity); any (sufficiency: the witness)",
    },
    "parity": {
        "title": "Parity argument",
        "source": "beyond the paper (docs/results/parity.md)",
        "statement": (
            r"Let the block be ungated and bias-free with $\sigma$ even: $\sigma(-z)=\sigma(z)$ for every "
            r"real $z$. "
            r"Then $B$ and every bias-free residual-free block $B'$ are even functions, while "
            r"$f(x)-f(-x)=2Mx$. Hence $f=B'$ forces $M=0$: if $M\ne0$ the skip cannot be absorbed by a "
            r"bias-free "
            r"block, at any width. (With biases $B'$ need not be even: the argument covers the bias-free "
            r"class only.) Within a tolerance $\tau$: a $B'$ with $|f(y)-B'(y)|_\infty\le\tau\,\mathrm{den}(y)$, "
            r"$\mathrm{den}(y)=|f(y)|_\infty+|y|_\infty+|f(0)|_\infty$, at $y=x$ and $y=-x$ gives "
            r"$2|Mx|_\infty=|f(x)-f(-x)|_\infty\le\tau(\mathrm{den}(x)+\mathrm{den}(-x))$: one point $x$ where "
            r"$2|Mx|_\infty/(\mathrm{den}(x)+\mathrm{den}(-x))>\tau$ rules out every bias-free $B'$ within $\tau$."
        ),
        "needs": ["skip_nonzero", "bias_free", "even"],
        "classes": "bias-free",
    },
    "exponential": {
        "title": "Exponential activations",
        "source": "beyond the paper (docs/results/exponential.md)",
        "statement": (
            r"Let the block be ungated with $\sigma(z)=A e^{\beta z}+C$, $A,\beta\ne0$ real. For any "
            r"residual-free block "
            r"$g$ (biases allowed: $e^{\beta(u\cdot x+b)}=e^{\beta b}e^{\beta u\cdot x}$), "
            r"$f(x)-g(x)=Mx+\sum_k c_k e^{\beta v_k\cdot x}+c_0$ with distinct $v_k$; on every line $x=te$ "
            r"the exponentials with distinct exponents, the constant and $(Me)\,t$ are linearly "
            r"independent, so "
            r"$f=g$ forces $Me=0$ for every $e$, i.e.\ $M=0$. Hence if $M\ne0$ the skip cannot be "
            r"absorbed, at any width. Within a tolerance $\tau$: if $\beta\,(u_i\cdot v)\le0$ for every unit of $f$ "
            r"(nonzero down column), $f(tv)=tMv+O(1)$ as $t\to\infty$; a $g$ with $|f-g|_\infty\le\tau(|f(x)|_\infty+"
            r"|x|_\infty+|f(0)|_\infty)$ for every $x$ stays bounded on that ray (a term of positive rate outgrows $O(t)$), "
            r"so $\tau\ge\|Mv\|_\infty/(\|Mv\|_\infty+\|v\|_\infty)$: a larger ratio rules out every $g$ within $\tau$."
        ),
        "needs": ["skip_nonzero", "exponential"],
        "classes": "any",
    },
    "skeleton": {
        "title": "Asymptotic skeleton",
        "source": "beyond the paper (docs/results/skeleton.md)",
        "statement": (
            r"Let the block be ungated, biases allowed, with $\sigma$ real and finite at every real point "
            r"and finite slopes "
            r"$L_\pm=\lim_{s\to\pm\infty}\sigma(s)/s$. Then "
            r"$\sigma(tz+c)/t\to\sigma_\infty(z)=a\,\mathrm{ReLU}(z)+bz$ "
            r"($a=L_+-L_-$, $b=L_-$) for all real $z,c$, so $f(tv)/t\to "
            r"Mv+W_{\mathrm{down}}\sigma_\infty(W_{\mathrm{up}}v)$ "
            r"and $g(tv)/t\to W'_{\mathrm{down}}\sigma_\infty(W'_{\mathrm{up}}v)$ for every residual-free "
            r"$g$ of width $n$, "
            r"with or without biases: $f=g$ makes the bias-free $\sigma_\infty$-skeleton "
            r"$(M,W_{\mathrm{up}},W_{\mathrm{down}})$ "
            r"absorbable at width $n$. If $a\ne0$ and the weights are nondegenerate ($d\ge2$, rows of "
            r"$W_{\mathrm{up}}$ "
            r"nonzero and pairwise non-collinear, columns of $W_{\mathrm{down}}$ nonzero), the kink "
            r"hyperplanes identify the "
            r"units up to a nonzero scale, and matching the linear parts needs "
            r"$M+c_\infty\,W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:]=0$ for some $S$, $c_\infty=a+2b$; "
            r"so $f$ is not "
            r"absorbable when no such $S$ exists or when $c_\infty=0$. If $a=b=0$ the skeleton is $Mv$ "
            r"against $0$, "
            r"impossible for $M\ne0$. If $\sigma_\infty=\mathrm{ReLU}$ and the weights are degenerate, the "
            r"canonical form "
            r"of the bias-free ReLU skeleton decides it."
        ),
        "needs": [
            "skip_nonzero",
            "asymptotic_slopes",
            "d_at_least_2",
            "rows_nonzero",
            "columns_nonzero",
            "rows_noncollinear",
        ],
        "classes": "any",
    },
    "skeleton2": {
        "title": "Degree-2 skeleton",
        "source": "beyond the paper (docs/results/skeleton2.md)",
        "statement": (
            r"Let the block be ungated, biases allowed, with $\sigma$ real and finite on $\mathbb{R}$, "
            r"$\sigma(s)=\alpha s^2+\beta s+o(s)$ as $s\to+\infty$ ($\alpha\ne0$) and $\sigma(s)=o(s)$ as "
            r"$s\to-\infty$. Then $\sigma(tz+c)=[z>0]\,(\alpha t^2z^2+t(2\alpha c+\beta)z)+o(t)$ for all real "
            r"$z,c$. If the weights are nondegenerate ($d\ge2$, rows of $W_{\mathrm{up}}$ nonzero and pairwise "
            r"non-collinear, columns of $W_{\mathrm{down}}$ nonzero), the Hessian jumps "
            r"$2\alpha\,w_i\otimes u_iu_i^{\mathsf T}$ of the $t^2$ term identify the units of any residual-free "
            r"$g$ of width $n$, with or without biases, as $u'_i=\lambda_iu_i$; with $S=\{i:\lambda_i<0\}$ the "
            r"$t^2$ terms match iff (Q) $\sum_{i\in S}w_i\otimes u_iu_i^{\mathsf T}=0$ and the $t$ terms iff "
            r"(L) $M=-\sum_{i\in S}(2\alpha c_i+\beta)\,w_iu_i^{\mathsf T}$. So $f$ is not absorbable when "
            r"no $S$ satisfies both. For $\sigma=\mathrm{ReLU}^2$ the condition is also sufficient: negating "
            r"$(u_i,c_i,w_i)$ on $S$ changes the block by $-\sum_{i\in S}w_i(u_i\cdot x+c_i)^2$, which (Q) and "
            r"(L) reduce to a constant that $b'_{\mathrm{down}}$ absorbs."
        ),
        "needs": [
            "skip_nonzero",
            "quadratic_skeleton",
            "d_at_least_2",
            "rows_nonzero",
            "columns_nonzero",
            "rows_noncollinear",
        ],
        "classes": "any",
    },
    "gated-skeleton": {
        "title": "Gated skeleton, step-like gate",
        "source": "beyond the paper (docs/results/gated-skeleton.md)",
        "statement": (
            r"Let the block be gated, biases allowed, $f(x)=Mx+W_{\mathrm{down}}(\sigma_g(W_{\mathrm{gate}}x+b_g)\circ"
            r"(W_{\mathrm{up}}x+b_u))+b_{\mathrm{down}}$, with $\sigma_g(s)\to L_+\ne0$ as $s\to+\infty$ and $\to0$ "
            r"as $s\to-\infty$ (sigmoid). Then $f(tx)/t\to Mx+L_+\sum_iw_iH(g_i\cdot x)(u_i\cdot x)$ off the gate "
            r"hyperplanes, and likewise for every residual-free $g$ of the same kind and width, with or without biases. "
            r"If the weights are nondegenerate ($d\ge2$, gate rows nonzero and pairwise non-collinear, value rows not "
            r"parallel to their gate rows, columns of $W_{\mathrm{down}}$ nonzero), the jumps $L_+w_i(u_i\cdot x)$ "
            r"across $g_i^\perp$ identify the units ($g'_i=\lambda_ig_i$, $\mathrm{sgn}(\lambda_i)w'_iu_i'^{\mathsf T}="
            r"w_i(u_i+\theta_ig_i)^{\mathsf T}$), the kinks $\theta_iw_i\mathrm{ReLU}(g_i\cdot x)$ force $\theta_i=0$, "
            r"and matching the linear parts needs $M=-L_+W_{\mathrm{down}}[:,S]W_{\mathrm{up}}[S,:]$ for some $S$."
        ),
        "needs": ["skip_nonzero", "gate_limits", "d_at_least_2", "gate_rows_nonzero", "columns_nonzero",
                  "gate_rows_noncollinear", "value_not_parallel_to_gate"],
        "classes": "any",
    },
    "depth": {
        "title": "Depth argument",
        "source": "result 4 of arXiv 2604.23705",
        "statement": (
            r"If every residual-free block of each layer is $o(|x|)$ at $0$ (homogeneous of degree $k>1$, or "
            r"gated with $g(0)=0$ differentiable at $0$) then $G=B'_L\circ\cdots\circ B'_1$ has "
            r"$G(tx)/t\to0$ "
            r"as $t\to0^+$, while $F=f_L\circ\cdots\circ f_1$ has $F(tx)/t\to M_L\cdots M_1x$. "
            r"Hence if $M_L\cdots M_1\ne0$ no $L$ residual-free blocks compose to $F$."
        ),
        "needs": ["flat_at_zero (every block)", "skip product nonzero"],
    },
    "rank": {
        "title": "First-layer rank (Theorem K)",
        "source": "beyond the paper (docs/open-problem.md)",
        "statement": (
            r"For ReLU blocks with any biases: if the first residual-free block has width $n_1<2d$, some direction $x$ "
            r"has at most $\lfloor n_1/2\rfloor<d$ rows with $u'_i\cdot x>0$, so $G=B'_L\circ\cdots\circ B'_1$ has a "
            r"Jacobian of rank $<d$ on an open set. Wherever $F=f_L\circ\cdots\circ f_1$ is affine its Jacobian is a "
            r"product of matrices $M_\ell+W_{\mathrm{down},\ell}[:,A]\,W_{\mathrm{up},\ell}[A,:]$; if all of them "
            r"are nonsingular, $F\ne G$."
        ),
        "needs": ["ReLU, ungated", "first width < 2d", "every M + W_down[:,A] W_up[A,:] nonsingular (exact)"],
        "classes": "any",
    },
    "kink-count": {
        "title": "Kink count in the plane (Theorem H)",
        "source": "beyond the paper (docs/open-problem.md)",
        "statement": (
            r"Let $d=2$, $\sigma=\mathrm{ReLU}$, all blocks bias-free. If every sector matrix of $F$ is nonsingular "
            r"with determinants of one sign, then every residual-free stack $G=B'_L\circ\cdots\circ B'_1$ of widths "
            r"$\le4$ equal to $F$ is a composition of homeomorphisms $x\mapsto L_\ell x+\sum_{i=1,2}c_i\,"
            r"\mathrm{ReLU}(p_i\cdot x)$, so $G$ has at most $4L$ kink rays; $F$ with more than $4L$ is not absorbable. "
            r"For $L=2$ a nonzero winding number of $F$ suffices (signs may be mixed), with at most $12$ kink rays."
        ),
        "needs": ["d = 2", "bias-free ReLU, ungated", "widths <= 4",
                  "sector matrices nonsingular, one sign (exact) or L = 2 and winding number nonzero (exact)",
                  "more than 4L (resp. 12) kink rays (exact)"],
        "classes": "bias-free",
    },
    "range": {
        "title": "Range of a narrow last block (Theorem R)",
        "source": "beyond the paper (docs/open-problem.md)",
        "statement": (
            r"If the last residual-free block $B'_L(z)=W'\sigma(U'z+b')+b''$ has width $n_L\le d$ and "
            r"$\sigma\ge c$ on $\mathbb R$, then $n_L\le d$ columns of $W'$ do not positively span "
            r"$\mathbb R^d$: some $v\ne0$ has $v\cdot w'_j\ge0$ for all $j$, so $v\cdot G(x)$ is bounded below "
            r"for every $G=B'_L\circ\cdots\circ B'_1$. If $F$ is positively homogeneous and points $x_j$ have "
            r"$F(x_j)$ spanning $\mathbb R^d$ with $\sum_j\lambda_jF(x_j)=0$, $\lambda_j>0$, then some "
            r"$v\cdot F(x_j)<0$ and $v\cdot F(tx_j)\to-\infty$: $F\ne G$."
        ),
        "needs": ["bias_free (F)", "ReLU (F evaluated exactly)", "last width <= d", "range positively spanning (exact)"],
        "classes": "any",
    },
    "composition": {
        "title": "Composition of absorbed blocks",
        "source": "definition",
        "statement": r"If $f_\ell=B'_\ell$ for every $\ell$ then $F=f_L\circ\cdots\circ f_1=B'_L\circ\cdots\circ "
        r"B'_1$.",
        "needs": ["every block absorbable"],
    },
    "canonical-form": {
        "title": "Canonical form (Theorem D)",
        "source": "beyond the paper (docs/degenerate.md)",
        "statement": (
            r"For a bias-free ungated block with $\sigma$ = ReLU (resp. GELU, GELU-tanh, SiLU, quick-GELU) "
            r"write "
            r"$f(x)=L_0x+\sum_\ell a_\ell\,\sigma(e_\ell\cdot x)$ over its active lines (units grouped by "
            r"line, "
            r"$\sigma(-z)=\sigma(z)-z$). This form is unique, and $f$ equals a residual-free block of "
            r"width $N$ iff "
            r"$m+|B|+2\,\mathrm{rank}(C_\delta P_B)\le N$ for some independent lines $B$ and flips $\delta$, "
            r"$C_\delta=L_0+\sum_{\ell\notin B}\delta_\ell a_\ell e_\ell^{\mathsf T}$, $P_B$ the projector "
            r"onto "
            r"$\mathrm{span}(e_\ell:\ell\in B)^\perp$; the witness block is built from the minimising "
            r"$(B,\delta)$."
        ),
        "needs": ["bias_free", "ungated", "flip_identity", "canonical_form"],
        "classes": "bias-free (not absorbable); any (absorbable: the witness)",
    },
    "relu2-linear": {
        "title": "ReLU squared plus a linear term",
        "source": "beyond the paper (docs/results/skeleton2.md)",
        "statement": (
            r"Let the block be ungated, biases allowed, with $\sigma(z)=\alpha\,\mathrm{ReLU}(z)^2+\beta z$ for "
            r"every real $z$ ($\alpha,\beta\ne0$), and $A_i=w_iu_i^{\mathsf T}$, $T=M/\beta+\sum_iA_i$. If "
            r"$\mu_i>0$ and $\sum_i\mu_iA_i=T$, the block with $u'_i=u_i/\mu_i$, $c'_i=c_i/\mu_i$, "
            r"$w'_i=\mu_i^2w_i$, $b'_{\mathrm{down}}=b_{\mathrm{down}}+\beta\sum_i(1-\mu_i)c_iw_i$ and no skip "
            r"equals $f$. Conversely, if the weights are nondegenerate ($d\ge2$, rows of $W_{\mathrm{up}}$ nonzero "
            r"and pairwise non-collinear, columns of $W_{\mathrm{down}}$ nonzero) and the tensors "
            r"$w_i\otimes u_iu_i^{\mathsf T}$ are linearly independent, the Hessian jumps of $f$ identify the units "
            r"of any residual-free $g$ of width $n$, with or without biases, as $u'_i=\lambda_iu_i$, "
            r"$c'_i=\lambda_ic_i$ with every $\lambda_i>0$, and $g=f$ only if $\sum_i\lambda_i^{-1}A_i=T$; so "
            r"a matrix $Y$ with $\langle Y,A_i\rangle\le0$ for every $i$ and $\langle Y,T\rangle>0$ proves "
            r"$f$ not absorbable."
        ),
        "needs": [
            "skip_nonzero",
            "d_at_least_2",
            "rows_nonzero",
            "columns_nonzero",
            "rows_noncollinear",
        ],
        "classes": "any",
    },
    "none": {
        "title": "No applicable result",
        "source": "--",
        "statement": r"No result of the paper or beyond it applies to this instance with its checked hypotheses.",
        "needs": [],
    },
}


WITH_VALUE_ACTIVATION: dict[str, dict[str, object]] = {
    "degree": {
        "title": "Degree argument",
        "source": "result 2 of arXiv 2604.23705, extended to a value activation h (beyond the paper; proofs/degree.py)",
        "statement": (
            r"Let the block be gated and bias-free, with the gate $g$ positively homogeneous of degree $k_g$ and the value "
            r"activation $h$ of degree $k_h$, so that every unit $g(W_{\mathrm{gate}}x)\odot h(W_{\mathrm{up}}x)$ has degree "
            r"$k=k_g+k_h$, with $k>0$, $k\ne1$. Then every residual-free block $B'$ of the same kind satisfies "
            r"$B'(tx)=t^kB'(x)$ for $t>0$, and $Mx+B(x)=B'(x)$ for all $x$ forces $M=0$. "
            r"Hence if $M\ne 0$ the skip cannot be absorbed, at any width."
        ),
        "needs": ["skip_nonzero", "bias_free", "homogeneous", "value_homogeneous"],
        "classes": "bias-free",
    },
    "linearization": {
        "title": "Linearization argument",
        "source": "result 3 of arXiv 2604.23705, extended to a value activation h (beyond the paper; proofs/linearization.py)",
        "statement": (
            r"Let the block be gated and bias-free, with gate $g$ and value activation $h$ such that $g(0)=h(0)=0$ and both "
            r"have finite one-sided derivatives at $0$, so that $|g(z)|\le C|z|$ and $|h(z)|\le C|z|$ for $|z|\le\delta$. "
            r"Every unit $g(w_{\mathrm{gate}}\cdot x)\,h(w_{\mathrm{up}}\cdot x)$ is then $O(|x|^2)$ at $0$, so every "
            r"residual-free gated block of the same kind has $B'(tx)/t\to0$ as $t\to0^+$, while "
            r"$f(tx)/t=Mx+B(tx)/t\to Mx$. The same holds when one of $g$, $h$ is bounded near $0$ (on $\mathbb{R}$, or "
            r"with finite one-sided limits at $0$) and the other "
            r"vanishes at $0$ with both one-sided derivatives $0$ (each unit is then $o(|x|)$). "
            r"Hence if $M\ne0$ the skip cannot be absorbed, at any width."
        ),
        "needs": ["skip_nonzero", "bias_free", "vanishing_slopes", "value_vanishing_slopes", "bounded", "value_bounded",
                  "bounded_near_zero", "value_bounded_near_zero"],
        "classes": "bias-free",
    },
}
"""The statements of the results that also cover a gated block with a value activation h (h(z) ≠ z)."""


def theorem_info(theorem_id: str, *, value_activation: bool = False) -> dict[str, object]:
    """The statement record for ``theorem_id`` (a :class:`~absorb.engine.Theorem` value);
    ``value_activation``: for a gated block whose value branch carries an activation h."""
    if value_activation and theorem_id in WITH_VALUE_ACTIVATION:
        return {"id": theorem_id, **WITH_VALUE_ACTIVATION[theorem_id]}
    return {"id": theorem_id, **THEOREMS.get(theorem_id, THEOREMS["none"])}


PROOF_NAMES: tuple[str, ...] = (
    "invertible_skip",
    "degree",
    "linearization",
    "depth",
    "boundedness",
    "flip_identity",
    "asymptotic_skeleton",
    "skeleton2",
    "relu2_linear",
    "gated_skeleton",
    "leaky_reduction",
    "parity",
    "exponential",
)
"""The names of the machine-checked proofs (``absorb prove NAME``, ``proofs/NAME.py``); the
CLI reads them from here so that its parser does not import sympy."""
