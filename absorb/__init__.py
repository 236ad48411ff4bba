"""absorb: can an MLP absorb its own skip connection?

The flow mirrors the mathematics (arXiv 2604.23705): blocks (:mod:`absorb.model`) →
activation properties proved with sympy (:mod:`absorb.symbolic`) → which result applies
and its hypotheses on the weights (:mod:`absorb.engine`) → index-set search
(:mod:`absorb.search`) → report (:mod:`absorb.report`).

>>> import numpy as np
>>> from absorb import Block, decide, get_activation
>>> U = np.array([[1.0, 0.0], [0.0, 1.0]]); D = -np.eye(2)
>>> decide(Block(U, D, get_activation("relu"))).verdict.value
'absorbable'
"""

from __future__ import annotations

from absorb._errors import AbsorbError, InvalidInput
from absorb._lazy import lazy_exports

# The public names and where they live. They are imported on first use (PEP 562), so that
# `absorb --help`, usage errors and `import absorb` do not pay for sympy and scipy.
_EXPORTS: dict[str, str] = {
    "BlockDecision": "absorb.engine",
    "Decision": "absorb.engine",
    "Theorem": "absorb.engine",
    "Verdict": "absorb.engine",
    "decide": "absorb.engine",
    "decide_block": "absorb.engine",
    "decide_stack": "absorb.engine",
    "load": "absorb.io",
    "load_npz": "absorb.io",
    "save_npz": "absorb.io",
    "Activation": "absorb.model",
    "Block": "absorb.model",
    "HyperConnection": "absorb.model",
    "Stack": "absorb.model",
    "get_activation": "absorb.model",
    "lift_hyper_connection": "absorb.model",
    "sinkhorn": "absorb.model",
    "find_index_set": "absorb.search",
}


__getattr__, __dir__ = lazy_exports("absorb", _EXPORTS, globals())

__version__ = "0.1.0"

__all__ = [
    "AbsorbError",
    "Activation",
    "Block",
    "BlockDecision",
    "Decision",
    "HyperConnection",
    "InvalidInput",
    "Stack",
    "Theorem",
    "Verdict",
    "__version__",
    "decide",
    "decide_block",
    "decide_stack",
    "find_index_set",
    "get_activation",
    "lift_hyper_connection",
    "load",
    "load_npz",
    "save_npz",
    "sinkhorn",
]
