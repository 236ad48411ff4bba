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

:func:`decide` takes whatever :func:`load` returns: a block, a stack, or a checkpoint.
"""

from typing import Any

from absorb._errors import AbsorbError, InvalidInput
from absorb._lazy import lazy_exports as _lazy_exports


def _version() -> str:
    """One source of truth: the version in pyproject.toml, as installed (importlib.metadata
    costs ~50 ms, so it is read only when asked for)."""
    from importlib import metadata

    try:
        return metadata.version("absorb")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree that was never installed
        return "0+unknown"

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
    "Checkpoint": "absorb.io",
    "load": "absorb.io",
    "load_npz": "absorb.io",
    "open_checkpoint": "absorb.io",
    "save_npz": "absorb.io",
    "decide_checkpoint": "absorb.engine",
    "Activation": "absorb.model",
    "Block": "absorb.model",
    "HyperConnection": "absorb.model",
    "Stack": "absorb.model",
    "get_activation": "absorb.model",
    "lift_hyper_connection": "absorb.model",
    "sinkhorn": "absorb.model",
    "find_index_set": "absorb.search",
}


__all__ = [
    "AbsorbError",
    "Activation",
    "Block",
    "BlockDecision",
    "Checkpoint",
    "Decision",
    "HyperConnection",
    "InvalidInput",
    "Stack",
    "Theorem",
    "Verdict",
    "__version__",
    "decide",
    "decide_block",
    "decide_checkpoint",
    "decide_stack",
    "find_index_set",
    "get_activation",
    "lift_hyper_connection",
    "load",
    "load_npz",
    "open_checkpoint",
    "save_npz",
    "sinkhorn",
]

_lazy_getattr, _lazy_dir = _lazy_exports("absorb", _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    """The public names only (no import machinery, no private helpers)."""
    return sorted(__all__)
