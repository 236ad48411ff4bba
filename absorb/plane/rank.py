"""The first-layer rank argument (Theorem K, beyond the paper) for narrow ReLU stacks.

**Theorem K.** Let σ = ReLU, biases allowed everywhere.

(i) Every composition ``G = B'_L ∘ … ∘ B'_1`` of residual-free ReLU blocks whose first block
has width ``n_1 < 2d`` has, on some nonempty open set, a Jacobian of rank ``≤ ⌊n_1/2⌋ < d``.
Proof: for ``x`` off every kink hyperplane, each nonzero row ``u'_i`` is positive on exactly
one of ``x``, ``−x``, so one of them, say ``x``, has at most ``⌊n_1/2⌋`` rows with
``u'_i·x > 0``. For ``t`` large and ``y`` in a small open cone around ``x`` the active set of
``B'_1`` at ``t y`` is exactly those rows (and units with ``u'_i = 0``, which are constant),
so ``J_{B'_1} = W'_{down,A} W'_{up,A}`` has rank ≤ |A| there. On an open subset the later
blocks are affine (a finite composition of piecewise-affine maps is affine on an open
dense set, and an open piece can be chosen whose image lies in one closed region of each
later block), so ``J_G = J_later · J_{B'_1}`` has rank ≤ |A| < d.

(ii) For ``F = f_L ∘ … ∘ f_1`` with ``f_ℓ(x) = M_ℓ x + W_down,ℓ ReLU(W_up,ℓ x + b_ℓ) + c_ℓ``, the
same refinement shows that on every open set where F is affine its Jacobian is a product
``Π_ℓ (M_ℓ + W_down,ℓ[:, A_ℓ] W_up,ℓ[A_ℓ, :])`` for some sets ``A_ℓ`` of units. If every such
matrix (every ℓ, every subset A) is nonsingular, F's Jacobian is nonsingular wherever it
exists; since ``F = G`` would force equal Jacobians on an open set, **F is not a composition
of residual-free ReLU blocks whose first block has width < 2d** — at any depth, with any
later widths, with or without biases.

The hypothesis of (ii) is checked here in exact rationals over all ``2^{n_ℓ}`` subsets
(a superset of the activation patterns that occur); it holds for all weights outside a
finite union of algebraic hypersurfaces, so for generic weights. Exactly at d = 2 the
:mod:`absorb.plane.conic` sector matrices give the sharper "F's Jacobian is nonsingular on
every sector" (used in the measurements of docs/open-problem.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from absorb.engine._exact import _fr, _rank
from absorb.engine.verdict import BlockDecision, Decision, Theorem, Verdict
from absorb.model.block import Block, Stack

SUBSET_WORK = 2_000_000
"""Largest Σ_ℓ 2^{n_ℓ}·d²·n_ℓ (exact rational multiply-adds) spent on the subset check."""


def rank_applies(blocks: Sequence[Block]) -> str | None:
    """None when Theorem K can be tried (ungated ReLU stack of ≥ 2 blocks, first width < 2d,
    the subset check within budget), else why not."""
    from absorb.model.activations import get_activation

    relu = get_activation("relu").expr
    if len(blocks) < 2:
        return "a single block is decided by the block results"
    if any(b.gated or b.activation.expr != relu for b in blocks):
        return "it needs ungated ReLU blocks"
    d, n1 = blocks[0].d, blocks[0].n
    if n1 >= 2 * d:
        return f"the first block's width {n1} is at least 2d = {2 * d}"
    work = sum(2 ** b.n * d * d * b.n for b in blocks)
    if work > SUBSET_WORK:
        return f"the exact subset check would take {work} operations (budget {SUBSET_WORK})"
    return None


def singular_subset(blocks: Sequence[Block]) -> tuple[int, list[int]] | None:
    """(block index, subset A) of the first ``M_ℓ + W_down[:, A] W_up[A, :]`` that is singular
    (exact rationals), or None when all are nonsingular."""
    for ell, b in enumerate(blocks):
        d, n = b.d, b.n
        M, U, D = _fr(b.M), _fr(b.W_up), _fr(b.W_down)
        outer = [[[D[r][i] * U[i][c] for c in range(d)] for r in range(d)] for i in range(n)]
        for mask in range(2 ** n):
            J = [row[:] for row in M]
            for i in range(n):
                if mask >> i & 1:
                    Oi = outer[i]
                    for r in range(d):
                        Jr, Or = J[r], Oi[r]
                        for c in range(d):
                            Jr[c] += Or[c]
            if _rank(J) < d:
                return ell, [i for i in range(n) if mask >> i & 1]
    return None


def nearly_singular(blocks: Sequence[Block], tol: float) -> bool:
    """Whether F's Jacobian, a product of one ``P = M_ℓ + W_down[:, A] W_up[A, :]`` per block, may be singular up to about τ:
    with s_ℓ = min over A of σ_min(P)/(1 + σ_max(P)) (float64), whether Π_ℓ s_ℓ ≤ 4·√d·τ — the argument is exact, and a
    product nonsingular only by about τ is within the tolerance of a singular one (F = (x₁, |x₁|/2 − 0.9τ|x₂|) was within
    0.9τ of a residual-free stack; two blocks each nonsingular by 20τ make a product nonsingular by 400τ²). A screen."""
    import numpy as np

    worst = 1.0
    for b in blocks:
        M, U, D = (np.asarray(a, dtype=np.float64) for a in (b.M, b.W_up, b.W_down))
        s_min = math.inf
        for mask in range(2 ** b.n):
            A = [i for i in range(b.n) if mask >> i & 1]
            s = np.linalg.svd(M + D[:, A] @ U[A, :], compute_uv=False)
            s_min = min(s_min, float(s[-1] / (1 + s[0])))
        worst *= s_min
    return worst <= 4 * math.sqrt(blocks[0].d) * tol


def decide_rank(stack: Stack, decisions: tuple[BlockDecision, ...], *, path: str, tol: float) -> Decision | None:
    """``not_absorbable`` by Theorem K, or None when it does not apply (the checker re-derives
    every hypothesis from the weights; nothing but the theorem id is recorded)."""
    if rank_applies(stack.blocks) is not None or singular_subset(stack.blocks) is not None:
        return None
    if nearly_singular(stack.blocks, tol):  # (exact nonsingularity by a hair: a G within τ may have a singular product)
        return None
    L, d, n1 = len(stack), stack.blocks[0].d, stack.blocks[0].n
    reason = (f"First-layer rank argument (beyond the paper): any {L} residual-free ReLU blocks whose first has width {n1} < 2d = {2 * d} "
              f"have, on an open set, a Jacobian of rank ≤ {n1 // 2} < {d} (some direction x has at most {n1 // 2} units with "
              f"u·x > 0); wherever F is affine its Jacobian is a product of the matrices M_ℓ + W_down[:, A] W_up[A, :], all "
              f"{sum(2 ** b.n for b in stack.blocks)} of which are nonsingular (exact rationals), so no such G equals F, "
              "with or without biases.")
    return Decision(path=path, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.RANK, reason=reason, blocks=decisions,
                    tolerance=tol, structure="stack")
