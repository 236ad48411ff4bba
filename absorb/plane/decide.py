"""The stack results of :mod:`absorb.plane`, in the order the engine tries them after the
paper's: the first-layer rank argument (Theorem K), then the range argument (Theorem R)."""

from __future__ import annotations

from absorb.engine.verdict import BlockDecision, Decision
from absorb.model.block import Stack
from absorb.plane.range import decide_range
from absorb.plane.rank import decide_rank


def decide_narrow_stack(stack: Stack, decisions: tuple[BlockDecision, ...], *, path: str, tol: float) -> Decision | None:
    """A ``not_absorbable`` decision by Theorem K or R, or None when neither applies."""
    return decide_rank(stack, decisions, path=path, tol=tol) or decide_range(stack, decisions, path=path, tol=tol)
