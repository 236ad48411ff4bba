"""The decision engine: hypotheses checked on the weights → which result applies → verdict."""

from absorb.engine.decide import DEFAULT_TOL, decide, decide_block, decide_checkpoint, decide_collection, decide_stack
from absorb.engine.verdict import BlockDecision, Decision, Hypothesis, Theorem, Verdict, Witness

__all__ = ["DEFAULT_TOL", "BlockDecision", "Decision", "Hypothesis", "Theorem", "Verdict", "Witness", "decide", "decide_block", "decide_checkpoint", "decide_collection", "decide_stack"]
