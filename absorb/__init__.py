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

from absorb._errors import AbsorbError, InvalidInput
from absorb.engine import BlockDecision, Decision, Theorem, Verdict, decide, decide_block, decide_stack
from absorb.io import load, load_npz, save_npz
from absorb.model import Activation, Block, HyperConnection, Stack, get_activation, lift_hyper_connection, sinkhorn
from absorb.search import find_index_set

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
