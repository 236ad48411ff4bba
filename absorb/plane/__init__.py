"""Bias-free ReLU stacks in the plane (d = 2), exactly: conic piecewise-linear maps, their
kink rays and sector matrices in rational arithmetic, and the range argument that decides
stacks whose last block is narrower than d + 1 (docs/open-problem.md)."""

from absorb.plane.conic import ConicPL, block_map, compose, positive_spanning, stack_map

__all__ = ["ConicPL", "block_map", "compose", "positive_spanning", "stack_map"]
