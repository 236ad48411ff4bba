"""A checkpoint's decision as a per-layer table (text) and as the contract's JSON.

One row per MLP block: name, kind, d, n, activation, verdict, theorem, and for ReLU/GELU
layers decided by the index-set result the certified distance δ — the search's rigorous
lower bound on min_S ‖W_down[:,S] W_up[S,:] + I‖_F / ‖I‖_F, present when the search proved
that no index set exists. Above the table, what map was analysed (the isolated MLP block
with its own identity skip, as in the paper); below it a summary line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from absorb.engine.verdict import BlockDecision, Decision, Verdict
from absorb.report.text import readable

_COLUMNS = ("name", "kind", "d", "n", "activation", "verdict", "theorem", "δ")


def _delta(bd: BlockDecision) -> str:
    s = bd.search
    if s is None or s.bound is None:
        return "—"
    return f"{s.bound:.3g}"


def block_row(bd: BlockDecision) -> tuple[str, ...]:
    b = bd.block
    return (b.name, b.kind, str(b.d), str(b.n), b.activation_name, bd.verdict.value, bd.theorem.value, _delta(bd))


def summary_line(dec: Decision) -> str:
    counts = {v: sum(bd.verdict is v for bd in dec.blocks) for v in Verdict}
    L = len(dec.blocks)
    parts = ", ".join(f"{counts[v]} {v.value}" for v in Verdict)
    return f"{L} block{'s' if L != 1 else ''}: {parts} → verdict: {dec.verdict.value}"


def render_table(dec: Decision, *, header: Sequence[str] = ()) -> str:
    """The text report of a checkpoint: header lines, the per-block table, reasons, summary.

    Reasons are printed once per distinct reason (layers of one model usually share one),
    with the blocks it applies to.
    """
    rows = [_COLUMNS] + [block_row(bd) for bd in dec.blocks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    right = {2, 3, 7}

    def fmt(r: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    out = [f"absorb check {dec.path or '(in memory)'}  (tolerance {dec.tolerance:g})"]
    out += list(header)
    out.append("")
    out.append(fmt(rows[0]))
    out.append(fmt(["-" * w for w in widths]))
    out += [fmt(r) for r in rows[1:]]
    out.append("")
    reasons: dict[str, list[str]] = {}
    for bd in dec.blocks:
        reason = bd.reason
        if bd.search is not None and bd.search.bound is not None:  # the δ column holds each block's bound
            reason = reason.replace(f"≥ {bd.search.bound:.3g} >", "≥ δ >")
        reasons.setdefault(reason, []).append(bd.block.name)
    for reason, names in reasons.items():
        who = ", ".join(names) if len(names) <= 3 else f"{names[0]}, {names[1]}, … {names[-1]} ({len(names)} blocks)"
        out.append(f"{who}: {readable(reason)}")
    if any(bd.search is not None and bd.search.bound is not None for bd in dec.blocks):
        out.append("δ: certified lower bound on min over index sets S of ‖W_down[:,S] W_up[S,:] + I‖_F / ‖I‖_F")
    out.append("")
    out.append(summary_line(dec))
    return "\n".join(out) + "\n"


def checkpoint_json(dec: Decision, *, analysed: Callable[[str], str], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The contract's JSON, one entry per block, each with an ``analysed`` field (the map decided)."""
    out = dec.to_json()
    for entry in out["blocks"]:
        entry["analysed"] = analysed(entry["name"])
    if extra:
        out["checkpoint"] = dict(extra)
    return out


__all__ = ["block_row", "checkpoint_json", "render_table", "summary_line"]
