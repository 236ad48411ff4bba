"""The symbolic engine: activation properties proved with sympy, steps kept for certificates."""

from absorb.symbolic import growth  # noqa: F401 - imported for its side effect: it registers the growth properties with prepare()
from absorb.symbolic.properties import (
    ANALYSES,
    Property,
    Status,
    analyse,
    bounded,
    flip_identity,
    homogeneity,
    prepare,
    vanishing_gate,
)

__all__ = ["ANALYSES", "Property", "Status", "analyse", "bounded", "flip_identity", "homogeneity", "prepare", "vanishing_gate"]
