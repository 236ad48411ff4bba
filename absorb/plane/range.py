"""The range argument (beyond the paper) for stacks whose last block is narrow.

**Theorem R.** Let ``G = B'_L ∘ … ∘ B'_1`` with a last residual-free block
``B'_L(z) = W'_down σ(W'_up z + b') + b'_down`` of width ``n_L ≤ d`` and σ bounded below
(σ ≥ c on R; ReLU: c = 0). The earlier blocks may be anything. Then the range of ``G`` lies
in ``b'_down + c·W'_down 1 + cone(w'_1, …, w'_{n_L})``, and ``n_L ≤ d`` vectors never
positively span R^d, so some ``v ≠ 0`` has ``v·w'_j ≥ 0`` for every j: ``v·G(x) ≥ β`` for all x.
If ``F`` is bias-free and positively homogeneous (bias-free ReLU blocks with any skips) and
its range positively spans R^d — points ``x_j`` with ``F(x_j)`` spanning R^d and
``Σ_j λ_j F(x_j) = 0`` for some ``λ_j > 0`` — then ``v·F(x_j) < 0`` for some j (else all
``v·F(x_j) = 0`` and v ⊥ R^d), and ``v·F(t x_j) = t·v·F(x_j) → −∞``: ``F ≠ G``. So F is
not absorbable at these widths, with or without biases in G, at any depth.

In the plane the range of a bias-free ReLU stack is computed exactly (:mod:`absorb.plane.conic`):
it is the union of the cones spanned by the images of consecutive breakpoints, so the
breakpoints positively span R² through F exactly when the range is in no closed half-plane —
the search for a certificate is complete there.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from absorb.engine.verdict import BlockDecision, Decision, Theorem, Verdict
from absorb.model.block import Block, Stack
from absorb.plane.conic import positive_spanning, stack_map


def range_applies(blocks: Sequence[Block]) -> str | None:
    """None when Theorem R can be tried on these blocks (d = 2, bias-free ungated ReLU, last
    width ≤ d, at least two blocks), else why not."""
    from absorb.model.activations import get_activation

    relu = get_activation("relu").expr
    if len(blocks) < 2:
        return "a single block is decided by the block results"
    if any(b.gated or b.has_bias or b.activation.expr != relu for b in blocks):
        return "it needs bias-free ungated ReLU blocks"
    d = blocks[0].d
    if d != 2:
        return f"the exact range computation covers d = 2 (here d = {d})"
    if blocks[-1].n > d:
        return f"the last block's width {blocks[-1].n} exceeds d = {d}, so its residual-free range can be all of R^d"
    return None


def range_certificate(blocks: Sequence[Block]) -> dict[str, Any] | None:
    """Points ``x_j`` and weights ``λ_j > 0`` (exact rationals, as strings) with
    ``Σ λ_j F(x_j) = 0`` and the ``F(x_j)`` spanning R², when the range of the stack
    positively spans the plane; None when it lies in a closed half-plane (Theorem R then says
    nothing). Requires :func:`range_applies` to hold."""
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in blocks])
    xs = [r for r in F.rays if F(r) != (0, 0)]
    lam = positive_spanning([F(r) for r in xs])
    if lam is None:
        return None
    return {"points": [[_s(x[0]), _s(x[1])] for x in xs], "lambdas": [_s(v) for v in lam],
            "margin": _s(range_margin([F(r) for r in xs], xs))}


def range_margin(imgs: Sequence[tuple[Fraction, Fraction]], xs: Sequence[tuple[Fraction, Fraction]]) -> Fraction:
    """μ = min over |v|₁ = 1 of max_j −v·F(x_j)/D_j, D_j = |F(x_j)|∞ + |x_j|∞, exactly (d = 2). A residual-free G within τ
    of F (F bias-free and homogeneous, so F(0) = 0) keeps v·F(t x_j) ≥ β − tτD_j on rays, for the v with v·G ≥ β: so
    μ > τ rules out every such G, not only one equal to F. The max over j is convex and piecewise linear in v: its least
    value on the ℓ1 circle is at a vertex ±e_i or where two pieces meet (v ⟂ F̂_j − F̂_k)."""
    hat = [(a / D, b / D) for (a, b), x in zip(imgs, xs) for D in [max(abs(a), abs(b)) + max(abs(x[0]), abs(x[1]))]]
    cands = [(Fraction(1), Fraction(0)), (Fraction(-1), Fraction(0)), (Fraction(0), Fraction(1)), (Fraction(0), Fraction(-1))]
    for j in range(len(hat)):
        for k in range(j + 1, len(hat)):
            a, b = hat[j][0] - hat[k][0], hat[j][1] - hat[k][1]
            if a or b:
                cands += [(b / (abs(a) + abs(b)), -a / (abs(a) + abs(b))), (-b / (abs(a) + abs(b)), a / (abs(a) + abs(b)))]
    return min(max(-(v[0] * p + v[1] * q) for p, q in hat) for v in cands)


def _s(q: Fraction) -> str:
    return str(q)


def decide_range(stack: Stack, decisions: tuple[BlockDecision, ...], *, path: str, tol: float) -> Decision | None:
    """``not_absorbable`` by Theorem R with its certificate, or None when it does not apply."""
    if range_applies(stack.blocks) is not None:
        return None
    cert = range_certificate(stack.blocks)
    if cert is None or Fraction(cert["margin"]) <= Fraction(tol):  # (spanning by less than τ: a G within τ may exist)
        return None
    L, d, nL = len(stack), stack.blocks[0].d, stack.blocks[-1].n
    reason = (f"Range argument (beyond the paper): the last residual-free block has width {nL} ≤ d = {d}, so the range of any "
              f"{L} residual-free blocks lies in a closed half-space (the cone of {nL} down-projection columns, shifted); "
              f"the range of F positively spans R^{d} — {len(cert['points'])} points x_j with Σ λ_j F(x_j) = 0, λ_j > 0, "
              f"exact rationals — so no such G equals F, with or without biases; and every direction v has some "
              f"−v·F(x_j) ≥ μ·(|F(x_j)|∞ + |x_j|∞)·|v|₁ with μ = {float(Fraction(cert['margin'])):.3g} > τ, so none is within "
              "the tolerance either.")
    return Decision(path=path, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.RANGE, reason=reason, blocks=decisions,
                    tolerance=tol, structure="stack", extra={"range_certificate": cert})
