"""The decision engine: hypotheses on weights → which result applies → verdict."""

from absorb.decide.engine import DEFAULT_TOL, decide, decide_block, decide_collection, decide_stack
from absorb.decide.verdict import BlockDecision, Decision, Hypothesis, Theorem, Verdict, Witness

__all__ = ["DEFAULT_TOL", "BlockDecision", "Decision", "Hypothesis", "Theorem", "Verdict", "Witness", "decide", "decide_block", "decide_collection", "decide_stack"]
