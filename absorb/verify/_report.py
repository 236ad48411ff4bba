"""The checker's findings: what was re-derived (ok), refuted (fail) or not re-checked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One re-derived claim: ``status`` is ``ok``, ``fail`` or ``unchecked``."""

    status: str
    where: str
    claim: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "where": self.where, "claim": self.claim, "detail": self.detail}


@dataclass
class Report:
    """All findings of one verification; ``accepted`` when nothing failed."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, status: str, where: str, claim: str, detail: str = "") -> None:
        self.findings.append(Finding(status, where, claim, detail))

    def ok(self, where: str, claim: str, detail: str = "") -> None:
        self.add("ok", where, claim, detail)

    def fail(self, where: str, claim: str, detail: str = "") -> None:
        self.add("fail", where, claim, detail)

    def unchecked(self, where: str, claim: str, detail: str = "") -> None:
        self.add("unchecked", where, claim, detail)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "fail"]

    @property
    def not_rechecked(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "unchecked"]

    @property
    def accepted(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "complete": not self.not_rechecked,
                "failures": len(self.failures), "not_rechecked": len(self.not_rechecked),
                "findings": [f.to_json() for f in self.findings]}


class _Reject(Exception):
    """Raised inside a block check to stop at the first failed claim of that block."""



@dataclass
class _Ctx:
    report: Report
    tol: float
    seed: int
    #: the current block's expensive re-derivations (collinearity O(n²d), the skip's SVD),
    #: each computed once per block; emptied when the next block starts
    once: dict[str, Any] = field(default_factory=dict)

    def memo(self, key: str, fn: Callable[[], Any]) -> Any:
        if key not in self.once:
            self.once[key] = fn()
        return self.once[key]


def _where(b: dict[str, Any]) -> str:
    return str(b.get("name", "?")) if isinstance(b, dict) else "?"


def _require(ctx: _Ctx, cond: bool, where: str, claim: str, detail: str = "", *, fail_only: bool = False) -> None:
    """Record ``claim`` as ok when ``cond`` holds, else as failed and stop this block.
    ``detail`` (the numbers) is kept on success too unless ``fail_only``."""
    if cond:
        ctx.report.ok(where, claim, "" if fail_only else detail)
    else:
        ctx.report.fail(where, claim, detail)
        raise _Reject(claim)


def _must(ctx: _Ctx, cond: bool, w: str, claim: str, detail: str = "") -> None:
    """``_require`` that records nothing on success (the many per-field checks of the records are summed up in one
    line)."""
    if not cond:
        _require(ctx, cond, w, claim, detail)
