"""A decision as a plain-text report: per block, shape, verdict, theorem, hypotheses with
their numbers, symbolic properties, search, witness; then the overall verdict."""

from __future__ import annotations

import re

from absorb.engine.verdict import BlockDecision, Decision

_SYMPY_INFINITY = re.compile(r"(?<![\w.])(-?)oo(?![\w])")


def readable(text: str) -> str:
    """An engine sentence as a person reads it: sympy's ``oo`` / ``-oo`` become ``∞`` / ``−∞``
    (the text report, and the certificates' LaTeX before escaping)."""
    return _SYMPY_INFINITY.sub(lambda m: "−∞" if m.group(1) else "∞", str(text))

# Each statement says what is true of these weights (a failed hypothesis reads "the skip
# matrix M is zero", a refuted property "σ is unbounded"), so only a met hypothesis or a
# proved property gets ✓; the others get a neutral mark, never ✗ (which would read as a
# double negative: "✗ σ is unbounded"); "?" when it could not be decided.
_MARK = {True: "✓", False: "–", None: "?"}
_PMARK = {"proved": "✓", "refuted": "–", "unknown": "?"}


def _skip_text(bd: BlockDecision) -> str:
    b = bd.block
    if b.hc is not None:
        return f"Hyper-Connection, {b.hc.s} streams, lifted to R^{b.d}"
    if b.skip is None:
        return "identity"
    return "given matrix M"


def _witness_text(bd: BlockDecision) -> str:
    w = bd.witness
    parts = []
    if w.S is not None:
        s = ", ".join(str(i) for i in w.S[:24]) + (", …" if len(w.S) > 24 else "")
        parts.append(f"S = [{s}] (|S| = {len(w.S)})")
    if w.description:
        parts.append(w.description)
    if w.residual is not None:
        parts.append(f"residual {w.residual:.2e}")
    parts.append(f"max relative error {w.eval_error:.2e} on {w.n_inputs} inputs (random, and on the kink hyperplanes)")
    if w.exact:
        parts.append("exact in rational arithmetic")
    return "; ".join(parts)


def render_block(bd: BlockDecision) -> list[str]:
    b = bd.block
    lines = [f"{b.name}: {b.kind} {b.activation_name}, d = {b.d}, n = {b.n}, skip: {_skip_text(bd)}",
             f"  verdict     {bd.verdict.value.upper()}  [{bd.theorem.value}]",
             f"  reason      {readable(bd.reason)}"]
    if bd.residual_free_class is not None:
        lines.append(f"  about       {bd.residual_free_class.statement}")
    if bd.hypotheses:
        lines.append("  hypotheses  (✓ met; – not met, the line states what holds)" if any(h.holds is False for h in bd.hypotheses)
                     else "  hypotheses")
        lines += [f"    {_MARK[h.holds]} {readable(h.statement)}" for h in bd.hypotheses]
    if bd.properties:
        lines.append("  activation")
        lines += [f"    {_PMARK[p.status.value]} {readable(p.statement)}" for p in bd.properties]
    if bd.search is not None:
        s = bd.search
        extra = f", bound {s.bound:.3g}" if s.bound is not None else ""
        lines.append(f"  search      {s.method}: {s.status.value} in {s.elapsed:.3f} s{extra}")
    if bd.witness is not None:
        lines.append(f"  witness     {_witness_text(bd)}")
    return lines


def render_text(dec: Decision) -> str:
    out = [f"absorb check {dec.path or '(in memory)'}  (tolerance {dec.tolerance:g})", ""]
    for bd in dec.blocks:
        out += render_block(bd)
        out.append("")
    if dec.structure == "stack":
        out.append(f"stack of {len(dec.blocks)} blocks: {dec.verdict.value.upper()}  [{dec.theorem.value}]")
        out.append(f"  {readable(dec.reason)}")
    out.append(f"verdict: {dec.verdict.value}")
    return "\n".join(out) + "\n"
