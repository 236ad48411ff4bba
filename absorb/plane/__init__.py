"""Narrow ReLU stacks, mostly in the plane (d = 2), exactly: conic piecewise-linear maps with
their kink rays, sector matrices and winding number in rational arithmetic (``conic``); the
stack results beyond the paper — the first-layer rank argument (``rank``, any d), the kink
count (``kinks``) and the range argument (``range``) — tried by ``decide``; and an exact
local dimension count (``dimension``). See docs/open-problem.md."""

from absorb.plane.conic import ConicPL, block_map, compose, positive_spanning, stack_map

__all__ = ["ConicPL", "block_map", "compose", "positive_spanning", "stack_map"]
