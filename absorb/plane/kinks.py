"""The kink-count argument (Theorem H, beyond the paper) for ReLU stacks in the plane with
every width ≤ 4 = 2d.

**Theorem H.** Let d = 2, σ = ReLU, everything bias-free. Let ``F = f_L ∘ … ∘ f_1`` have every
sector matrix nonsingular, all with determinants of one sign (F is a local homeomorphism of
R², so its degree on the circle is nonzero). If ``G = B'_L ∘ … ∘ B'_1`` with every width
``≤ 4`` equals F, then each ``B'_ℓ`` is a homeomorphism ``x ↦ L_ℓ x + Σ_{i=1,2} c_i ReLU(p_i·x)``
with kinks on at most two lines, so G — hence F — has at most ``4L`` kink rays. So an F with
more than ``4L`` kink rays is not absorbable at these widths. **For L = 2** the one-sign
condition can be relaxed to a nonzero winding number: steps (a) and (b) below still make
both blocks onto and of that form (possibly folding), the first is linear on four sectors,
so each of the second block's two kink lines pulls back to at most four rays: at most
``4 + 8 = 12`` kink rays. Proof (docs/open-problem.md):
by induction on ℓ, using ``G ∘ H⁻¹`` for the homeomorphism ``H = B'_{ℓ−1} ∘ … ∘ B'_1``:
(a) ``B'_ℓ`` is onto (otherwise the direction map of G factors through an arc and G has
degree 0); (b) its Jacobian is nonsingular almost everywhere (Theorem K (i) gives a width-4
block in the plane exactly two active units in every generic direction, so its units are
two antipodal pairs on two lines: Lemma P); (c) it has no fold (adjacent sectors of opposite
orientation overlap in an open set, where the later blocks would see both signs); (d) four
nonsingular sectors of angle < π turn by less than 4π, so the local homeomorphism has
degree ±1 and is a homeomorphism. Each block adds at most four kink rays, pulled back by a
homeomorphism.

A generic stack has ``Σ_ℓ 2 n_ℓ`` kink rays (each block's lines, pulled back), so the bound
``4L`` is exceeded as soon as the widths average more than 2; the one-sign condition holds
for about half of the random stacks of ``benchmarks/bench_plane.py`` (docs/open-problem.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from absorb.engine.verdict import BlockDecision, Decision, Theorem, Verdict
from absorb.model.block import Block, Stack
from absorb.plane.conic import ConicPL, stack_map

MAX_WIDTH = 4


def kinks_applies(blocks: Sequence[Block], *, allow_biases: bool) -> str | None:
    """None when Theorem H can be tried, else why not."""
    from absorb.model.activations import get_activation

    relu = get_activation("relu").expr
    if allow_biases:
        return "the kink-count argument covers bias-free residual-free stacks only"
    if len(blocks) < 2:
        return "a single block is decided by the block results"
    if any(b.gated or b.has_bias or b.activation.expr != relu for b in blocks):
        return "it needs bias-free ungated ReLU blocks"
    if blocks[0].d != 2:
        return f"it covers d = 2 (here d = {blocks[0].d})"
    if max(b.n for b in blocks) > MAX_WIDTH:
        return f"it covers widths ≤ {MAX_WIDTH} = 2d"
    return None


def one_sign_local_homeomorphism(F: ConicPL) -> bool:
    """Every sector matrix nonsingular, all determinants of one sign."""
    dets = [J[0][0] * J[1][1] - J[0][1] * J[1][0] for J in F.mats]
    return all(v > 0 for v in dets) or all(v < 0 for v in dets)


def kink_bound(F: ConicPL, L: int) -> int | None:
    """The most kink rays a residual-free stack of depth L and widths ≤ 4 equal to F can have
    (Theorem H): 4L when F is a one-sign local homeomorphism; 12 when L = 2 and F has nonsingular
    sectors and a nonzero winding number; None when neither applies."""
    if one_sign_local_homeomorphism(F):
        return 4 * L
    dets = [J[0][0] * J[1][1] - J[0][1] * J[1][0] for J in F.mats]
    if L == 2 and all(v != 0 for v in dets) and F.winding_number() not in (None, 0):
        return 12
    return None


def kinks_certificate(blocks: Sequence[Block]) -> dict[str, Any] | None:
    """The breakpoint rays of F (exact rationals as strings) when Theorem H applies to it —
    more kink rays than :func:`kink_bound` allows — else None. The checker re-derives every
    sector's matrix, the kinks, the signs and the winding number from the weights and these rays."""
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in blocks])
    bound = kink_bound(F, len(blocks))
    if bound is None or len(F.kink_rays()) <= bound:
        return None
    return {"rays": [[str(r[0]), str(r[1])] for r in F.rays]}


def barely(F: ConicPL, tol: float) -> bool:
    """Whether the count holds by about τ only (a screen, not a bound): a kink whose Jacobian jump ‖J_{k+1} − J_k‖_F is at
    most 4√2·τ·(1 + max ‖J‖_F), a thin sector whose matrix differs from a neighbour's by a jump that, times the sine of its
    angle, is at most that (two kinks that a stack within τ may merge into one: a thin bump), or a sector determinant at
    most 4τ·(1 + max ‖J‖_F)² — the argument is exact, and a stack within τ of F may miss such a kink or have a singular
    sector."""
    norms = [math.hypot(*(float(v) for row in J for v in row)) for J in F.mats]
    top = 1.0 + max(norms, default=0.0)
    m = len(F.mats)

    jumps = [math.hypot(*(float(F.mats[(k + 1) % m][r][c] - F.mats[k][r][c]) for r in range(2) for c in range(2)))
             for k in range(m)]  # (jumps[k]: across the ray between sectors k and k + 1)
    for k in range(m):
        J = F.mats[k]
        if 0 < jumps[k] <= 4 * math.sqrt(2) * tol * top:
            return True
        (ax, ay), (bx, by) = ([float(v) for v in F.rays[i % m]] for i in (k, k + 1))
        sine = abs(ax * by - ay * bx) / (math.hypot(ax, ay) * math.hypot(bx, by))
        if m > 2 and 0 < min(jumps[k - 1], jumps[k]) * sine <= 4 * math.sqrt(2) * tol * top:
            return True
        if abs(float(J[0][0] * J[1][1] - J[0][1] * J[1][0])) <= 4 * tol * top * top:
            return True
    return False


def decide_kinks(stack: Stack, decisions: tuple[BlockDecision, ...], *, path: str, tol: float,
                 allow_biases: bool = False) -> Decision | None:
    """``not_absorbable`` by Theorem H with its certificate, or None when it does not apply."""
    if kinks_applies(stack.blocks, allow_biases=allow_biases) is not None:
        return None
    cert = kinks_certificate(stack.blocks)
    if cert is None:
        return None
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in stack.blocks])
    if barely(F, tol):  # (a kink or a determinant's sign that holds by about τ: a G within τ may lack it)
        return None
    L, k = len(stack), len(F.kink_rays())
    if one_sign_local_homeomorphism(F):
        why = (f"F is a local homeomorphism of the plane (all {len(F.mats)} sector matrices nonsingular, determinants of one "
               f"sign, exact rationals), so {L} residual-free ReLU blocks of widths ≤ 4 equal to F would each be a "
               f"homeomorphism with kinks on at most two lines, giving at most {4 * L} kink rays")
    else:
        why = (f"F has nonsingular sector matrices (all {len(F.mats)}, exact rationals) and winding number "
               f"{F.winding_number()} ≠ 0, so 2 residual-free ReLU blocks of widths ≤ 4 equal to F would both be onto with "
               "kinks on at most two lines each, the first linear on four sectors, giving at most 12 kink rays")
    reason = f"Kink-count argument (beyond the paper): {why}; F has {k}."
    return Decision(path=path, verdict=Verdict.NOT_ABSORBABLE, theorem=Theorem.KINK_COUNT, reason=reason, blocks=decisions,
                    tolerance=tol, structure="stack", extra={"kink_certificate": cert})
