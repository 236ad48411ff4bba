"""Reports: a decision as text for people and as JSON for scripts (the contract)."""

from absorb.report.text import render_text

__all__ = ["render_text"]
