"""The symbolic engine: activation properties proved with sympy, steps kept for certificates."""

from absorb.symbolic.properties import Property, Status, bounded, flip_identity, homogeneity, vanishing_gate

__all__ = ["Property", "Status", "bounded", "flip_identity", "homogeneity", "vanishing_gate"]
