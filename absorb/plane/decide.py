"""The stack results of :mod:`absorb.plane`, in the order the engine tries them after the
paper's: the first-layer rank argument (Theorem K), the kink count in the plane (Theorem H),
then the range argument (Theorem R)."""

from __future__ import annotations

from absorb.engine.verdict import BlockDecision, Decision
from absorb.model.block import Stack
from absorb.plane.kinks import decide_kinks
from absorb.plane.range import decide_range
from absorb.plane.rank import decide_rank


def decide_narrow_stack(stack: Stack, decisions: tuple[BlockDecision, ...], *, path: str, tol: float,
                        allow_biases: bool = False) -> Decision | None:
    """A ``not_absorbable`` decision by Theorem K, H or R, or None when none applies (K and R
    also cover residual-free blocks with biases; H only bias-free ones)."""
    return (decide_rank(stack, decisions, path=path, tol=tol)
            or decide_kinks(stack, decisions, path=path, tol=tol, allow_biases=allow_biases)
            or decide_range(stack, decisions, path=path, tol=tol))
