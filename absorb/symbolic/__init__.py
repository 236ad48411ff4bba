"""The symbolic engine: activation properties proved with sympy, steps kept for certificates.

Names are imported on first use (sympy loads then): a built-in activation's properties are
read from a shipped table (:mod:`absorb.symbolic._core`, :mod:`absorb.symbolic.facts`) without it."""

from absorb._lazy import lazy_exports

_EXPORTS = {name: "absorb.symbolic.properties" for name in
            ("Property", "Status", "analyse", "bounded", "flip_identity", "homogeneity", "prepare", "vanishing_gate")}
_EXPORTS["ANALYSES"] = "absorb.symbolic.growth"  # the registry with the growth analyses registered in it

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = ["ANALYSES", "Property", "Status", "analyse", "bounded", "flip_identity", "homogeneity", "prepare", "vanishing_gate"]
