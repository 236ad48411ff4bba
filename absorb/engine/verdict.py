"""Three-valued verdicts and the records a decision is made of.

A :class:`BlockDecision` keeps everything a report or a certificate needs: the hypotheses
checked on the weights (with their numbers), the symbolic properties (with their proof
steps), the search result, and the checked witness.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from absorb.model.block import Block, rescale_inputs
from absorb.search._types import SearchResult
from absorb.symbolic._core import Property


class Verdict(str, enum.Enum):
    """The three-valued answer (the contract's ``verdict`` field; compare, never test for truth).

    ``ABSORBABLE``: a residual-free block of the same width equals ``f``, and a witness
    block was checked independently. ``NOT_ABSORBABLE``: a result proves no such block
    exists, with every hypothesis it needs checked on these weights. ``UNKNOWN``: neither
    (the reason says why: hypotheses not met, budget spent, open problem).
    """

    ABSORBABLE = "absorbable"
    NOT_ABSORBABLE = "not_absorbable"
    UNKNOWN = "unknown"

    def __bool__(self) -> bool:  # a tri-state is never a boolean
        raise TypeError("a Verdict is three-valued; compare it with Verdict.ABSORBABLE etc.")


class Theorem(str, enum.Enum):
    """Short ids of the results a verdict rests on (the contract's ``theorem`` field)."""

    TRIVIAL = "trivial"  # M = 0: the block is already residual-free
    DEGREE = "degree"  # result 2
    LINEARIZATION = "linearization"  # result 3
    BOUNDED = "bounded"  # beyond: bounded σ cannot produce an unbounded M x
    LINEAR = "linear"  # beyond: identity activation, a rank condition
    INDEX_SET = "index-set"  # result 5 (+ result 1's reduction)
    DEPTH = "depth"  # result 4
    COMPOSITION = "composition"  # every block of a stack absorbable
    RANK = "rank"  # beyond: first block narrower than 2d, F's Jacobian nonsingular (docs/open-problem.md)
    KINK_COUNT = "kink-count"  # beyond: d = 2, widths ≤ 4, F a local homeomorphism with > 4L kink rays
    RANGE = "range"  # beyond: last block of width ≤ d, range of F positively spanning (docs/open-problem.md)
    CANONICAL_FORM = "canonical-form"  # beyond: canonical-form decision for any ReLU/GELU/SiLU weights (docs/degenerate.md)
    SKELETON = "skeleton"  # beyond: the asymptotic (ReLU / two-slope) skeleton, biases allowed (docs/results/skeleton.md)
    SKELETON2 = "skeleton2"  # beyond: the degree-2 skeleton (ReLU², GELU², …), biases allowed (docs/results/skeleton2.md)
    RELU2_LINEAR = "relu2-linear"  # beyond: σ = α·ReLU² + β·z, a linear program over the units' scales (docs/results/skeleton2.md)
    GATED_SKELETON = "gated-skeleton"  # beyond: gated blocks along rays, step-like gates (docs/results/gated-skeleton.md)
    PARITY = "parity"  # beyond: even σ, bias-free
    EXPONENTIAL = "exponential"  # beyond: σ = A·exp(βz) + C
    NONE = "none"  # no result applies


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis checked on the actual weights: ``holds`` is True, False or None."""

    name: str
    holds: bool | None
    statement: str
    value: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "holds": self.holds, "statement": self.statement, "value": _plain(self.value)}


@dataclass(frozen=True)
class ResidualFreeClass:
    """The residual-free blocks a verdict quantifies over: same kind, σ and width, with or
    without biases.

    ``not_absorbable`` means no block of this class equals f; ``absorbable`` that one does.
    The paper's setting is the bias-free class for a bias-free f; a biased f is compared with
    biased blocks, and ``allow_biases`` asks about biased blocks for a bias-free f too.
    """

    biases: bool
    width: int
    kind: str
    activation: str

    @property
    def statement(self) -> str:
        b = "with any biases (b_up, b_down)" if self.biases else "bias-free"
        return f"residual-free {self.kind} {self.activation} blocks of width {self.width}, {b}"

    def to_json(self) -> dict[str, Any]:
        return {"biases": self.biases, "width": self.width, "statement": self.statement}


@dataclass(frozen=True, eq=False)
class Witness:
    """A residual-free block equal to ``f`` (within ``tolerance``), and how it was checked.

    ``S`` is the index set of flipped units (when the index-set result built it), ``block``
    the residual-free block, ``residual`` its relative residual, ``eval_error`` the largest
    relative error on ``n_inputs`` inputs (random, and on the kink hyperplanes), ``exact`` whether the identity was also
    checked in rational arithmetic.
    """

    S: tuple[int, ...] | None
    block: Block
    residual: float | None  # ‖D_S U_S − T‖_F / ‖T‖_F, float64 recomputation
    eval_error: float  # max relative |f(x) − B'(x)| on the inputs (random, and on the kink hyperplanes)
    n_inputs: int
    exact: bool | None = None  # D_S U_S = T exactly (rational arithmetic), when sizes allow
    description: str = ""
    bound: tuple[float, float] | None = None
    """``(a, e)`` proved: |f(x) − B'(x)|_∞ ≤ a·|x|_∞ + e for every x (None: no rigorous bound;
    not part of the JSON). A stack's composition is bounded from its blocks' (a, e)."""

    def in_frame(self, k: int) -> Witness | None:
        """This witness G of F(x) = 2^-k·f(2^k·x) as one of f: g(x) = 2^k·G(2^-k·x) (rows times 2^-k, W_down and
        b_down times 2^k), whose proved error a|x|∞ + 2^k·e follows from G's a|x|∞ + e. None where g rounds."""
        g = rescale_inputs(self.block, -k)
        if g is None:
            return None
        e = None if self.bound is None else math.ldexp(self.bound[1], k)
        return replace(self, block=g, bound=None if e is None or not math.isfinite(e) else (self.bound[0], e))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.S is not None:
            out["S"] = [int(i) for i in self.S]
        out.update(residual=self.residual, eval_error=self.eval_error, n_inputs=self.n_inputs, exact=self.exact)
        if self.description:
            out["construction"] = self.description
        return out


@dataclass(frozen=True, eq=False)
class BlockDecision:
    """The decision for one block: verdict, the result it rests on, and the evidence.

    ``reason`` is one sentence for people; ``hypotheses`` are the conditions checked on the
    weights (with their numbers), ``properties`` the facts about the activation proved or
    refuted with sympy, ``search`` the index-set search (when one ran), ``witness`` the
    checked residual-free block (when absorbable) and ``tolerance`` the relative tolerance
    the verdict names. ``to_json()`` gives the contract's per-block JSON.
    """

    block: Block
    verdict: Verdict
    theorem: Theorem
    reason: str
    tolerance: float
    hypotheses: tuple[Hypothesis, ...] = ()
    properties: tuple[Property, ...] = ()
    witness: Witness | None = None
    search: SearchResult | None = None
    flat_at_zero: bool = False
    """B'(x) = o(|x|) at 0 for every residual-free block of this kind (used by the depth result)."""
    residual_free_class: ResidualFreeClass | None = None
    """Which residual-free blocks the verdict is about."""
    robust_bar: float | None = None
    """A flip route's not_absorbable that the robust skeleton bound extends to every block within the tolerance:
    that bound's distance bar, which the search's proved bound clears (None: only blocks equal to f are ruled out,
    with the screened near blocks)."""
    direction: tuple[tuple[float, ...], float] | None = None
    """The exponential result within a tolerance: (v, r), a ray x = t·v on which every unit of f stays bounded and the
    skip's share r = ‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) exceeds the tolerance (:mod:`absorb.engine._decay`)."""
    input_scale: tuple[int, BlockDecision] | None = None
    """``(k, the decision of F(x) = 2^-k·f(2^k·x))`` when f was decided through that exact rescaling (its rows'
    typical size far from 1): the verdict, theorem and evidence are F's (the same answer), the witness mapped back
    to f (:func:`absorb.model.block.rescale_inputs`); a certificate records F's evidence and k."""

    def to_json(self) -> dict[str, Any]:
        b = self.block
        out: dict[str, Any] = {
            "name": b.name,
            "activation": b.activation_name,
            "kind": b.kind,
            "d": b.d,
            "n": b.n,
            "verdict": self.verdict.value,
            "theorem": self.theorem.value,
            "reason": self.reason,
        }
        if self.residual_free_class is not None:
            out["class"] = self.residual_free_class.to_json()
        out["witness"] = None if self.witness is None else self.witness.to_json()  # always present: null without one
        out["tolerance"] = self.tolerance
        out["hypotheses"] = [h.to_json() for h in self.hypotheses]
        out["properties"] = [p.to_json() for p in self.properties]
        if self.search is not None:
            s = self.search
            out["search"] = {"method": s.method, "status": s.status.value, "reason": s.reason,
                             "residual": s.residual, "bound": s.bound, "elapsed": round(s.elapsed, 6)}
        if b.hc is not None:
            out["hyper_connection"] = {"streams": b.hc.s, "H_res": b.hc.H_res.tolist()}
        if self.input_scale is not None:  # (decided as 2^-k·f(2^k·x), exactly rescaled: docs/user-guide.md, Scale)
            out["input_scale"] = self.input_scale[0]
        return out


JSON_SCHEMA = "absorb-check"
"""The ``schema`` of ``absorb check --json`` (a certificate's is ``absorb-certificate``)."""
JSON_SCHEMA_VERSION = 1
"""Raised when a field of ``absorb check --json`` changes name or meaning (new fields do not raise it)."""


@dataclass(frozen=True, eq=False)
class Decision:
    """The answer for a whole input: one block, a stack, or a collection of blocks.

    ``verdict``, ``theorem`` and ``reason`` are for the whole (a stack's composition, or
    every block of a checkpoint); ``blocks`` holds each block's :class:`BlockDecision`;
    ``structure`` is ``"block"``, ``"stack"`` or ``"collection"``. ``to_json()`` gives the
    contract's JSON document (what ``absorb check --json`` prints).
    """

    path: str
    verdict: Verdict
    theorem: Theorem
    reason: str
    blocks: tuple[BlockDecision, ...]
    tolerance: float
    structure: str = "block"  # "block" | "stack" | "collection"
    witness: Witness | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": JSON_SCHEMA,
            "schema_version": JSON_SCHEMA_VERSION,
            "path": self.path,
            "verdict": self.verdict.value,
            "structure": self.structure,
            "theorem": self.theorem.value,
            "reason": self.reason,
            "tolerance": self.tolerance,
            "blocks": [b.to_json() for b in self.blocks],
        }
        out["witness"] = None if self.witness is None else self.witness.to_json()
        out.update(_plain(self.extra))
        return out


def _plain(obj: Any) -> Any:
    """Make numpy scalars/arrays JSON-friendly."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
