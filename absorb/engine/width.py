"""Extra width: is ``f(x) = M x + B(x)`` a residual-free block of width ``N' ≥ n``, and what is
the smallest such width? **(beyond)** — proofs in ``docs/min-width.md``.

* Bias-free ungated ReLU / GELU / GELU-tanh / SiLU / quick-GELU: Theorem D of
  ``docs/degenerate.md`` gives the exact minimum
  ``w*(f) = min_{B,δ} m + |B| + 2·rank(C_δ P_B)`` (m = number of active lines), and f is a
  residual-free block of width N' iff ``N' ≥ w*(f)`` (extra units can be zero). Always
  ``w* ≤ m + 2·rank(L₀) ≤ n + 2d`` (antipodal pairs ``σ(z) − σ(−z) = z`` realise any linear
  map). For generic weights with ``d ≥ 2`` (ReLU; any d for the even family) ``w* = n + d``
  when ``n ≥ d`` and ``2d`` when ``n < d`` (Theorem W).
* Results whose proofs never use the width — degree (result 2), linearization (result 3),
  boundedness — say *not absorbable at every width*.
* Anything else: unknown, with the reason.

Every ``absorbable`` answer carries a constructed block of exactly the asked width, checked
by evaluation against f (and exactly, via canonical forms).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from absorb._errors import InvalidInput
from absorb.engine.decide import DEFAULT_TOL, decide_block
from absorb.engine.degenerate import DEFAULT_BUDGET, DegenerateDecision, _unsupported, canonical_form, decide_degenerate, search
from absorb.engine.verdict import Theorem, Verdict, Witness
from absorb.model.block import Block

_EVERY_WIDTH = (Theorem.DEGREE, Theorem.LINEARIZATION, Theorem.BOUNDED)


@dataclass(frozen=True, eq=False)
class WidthDecision:
    """Whether f is a residual-free block of ``asked`` units."""

    asked: int
    verdict: Verdict
    reason: str
    theorem: str
    witness: Witness | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"asked": self.asked, "verdict": self.verdict.value, "theorem": self.theorem, "reason": self.reason,
                               "witness_width": None if self.witness is None else self.witness.block.n}
        if self.witness is not None:
            out["witness"] = self.witness.to_json()
        return out


@dataclass(frozen=True, eq=False)
class MinWidth:
    """The smallest width of a residual-free block equal to f (``value``), when decided."""

    value: int | None
    reason: str
    theorem: str
    witness: Witness | None = None
    lower: int | None = None  # a proved lower bound when value is unknown
    exists: bool | None = None  # False: proved that no width works

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "exists": self.exists, "theorem": self.theorem, "reason": self.reason, "lower": self.lower}
        if self.witness is not None:
            out["witness"] = self.witness.to_json()
        return out


def _check_width(width: int) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise InvalidInput(f"width {width!r} must be a positive integer (the number of hidden units of the residual-free block)")
    return width


def _other(block: Block, *, tol: float, seed: int) -> tuple[Verdict, str, str]:
    """For blocks outside the canonical-form procedure: a width-independent result, or unknown."""
    bd = decide_block(block, tol=tol, seed=seed, timeout=10.0)
    if bd.verdict is Verdict.NOT_ABSORBABLE and bd.theorem in _EVERY_WIDTH:
        return Verdict.NOT_ABSORBABLE, f"{bd.reason} The argument never uses the width, so it holds at every width.", bd.theorem.value
    why = _unsupported(block) or "no width result applies"
    return Verdict.UNKNOWN, f"Unknown: the canonical-form procedure that decides the extra-width question does not apply: {why}.", Theorem.NONE.value


def decide_width(block: Block, width: int, *, tol: float = DEFAULT_TOL, seed: int = 0, budget: int = DEFAULT_BUDGET) -> WidthDecision:
    """Is ``f`` a residual-free block of ``width`` hidden units (same kind and σ)?"""
    width = _check_width(width)
    if _unsupported(block) is None:
        dd: DegenerateDecision = decide_degenerate(block, width=width, tol=tol, seed=seed, budget=budget)
        return WidthDecision(width, dd.verdict, dd.reason, Theorem.CANONICAL_FORM.value, dd.witness)
    v, why, thm = _other(block, tol=tol, seed=seed)
    return WidthDecision(width, v, why, thm)


def minimal_width(block: Block, *, tol: float = DEFAULT_TOL, seed: int = 0, budget: int = DEFAULT_BUDGET) -> MinWidth:
    """The smallest N' such that f is a residual-free block of width N' (Theorem D / W)."""
    if _unsupported(block) is not None:
        v, why, thm = _other(block, tol=tol, seed=seed)
        if v is Verdict.NOT_ABSORBABLE:
            return MinWidth(None, f"No width works: {why}", thm, exists=False)
        return MinWidth(None, why, thm)
    cf = canonical_form(block)
    cap = cf.m + 2 * cf.d
    out = search(cf, cap=cap, budget=budget)
    if out.status != "found":
        return MinWidth(None, f"Unknown: {out.reason}.", Theorem.CANONICAL_FORM.value, lower=cf.m)
    w = out.best.value
    dd = decide_degenerate(block, width=w, tol=tol, seed=seed, budget=budget)
    if dd.verdict is not Verdict.ABSORBABLE:
        return MinWidth(None, f"Unknown: the width-{w} witness did not check ({dd.reason})", Theorem.CANONICAL_FORM.value, lower=cf.m)
    b = out.best
    return MinWidth(w, f"Minimum over the choices (B, δ) of m + |B| + 2·rank(C_δ P_B) with m = {cf.m} active lines, proved in exact "
                       f"arithmetic over {out.candidates} choices: {w} units (|B| = {len(b.B)}, rank {b.rank}); any fewer cannot "
                       f"reproduce f's canonical form.", Theorem.CANONICAL_FORM.value, witness=dd.witness, exists=True)


def width_fields(block: Block, *, width: int | None, min_width: bool, tol: float = DEFAULT_TOL, seed: int = 0) -> dict[str, Any]:
    """The per-block JSON fields of ``absorb check --width N --min-width`` (contract extension):
    ``"width": {"asked", "verdict", "theorem", "reason", "witness_width", "witness"}``,
    ``"min_width": int | null`` and ``"min_width_detail": {...}``."""
    out: dict[str, Any] = {}
    if width is not None:
        out["width"] = decide_width(block, width, tol=tol, seed=seed).to_json()
    if min_width:
        mw = minimal_width(block, tol=tol, seed=seed)
        out["min_width"] = mw.value
        out["min_width_detail"] = mw.to_json()
    return out


def width_text(name: str, fields: dict[str, Any]) -> list[str]:
    """Text-report lines for :func:`width_fields`."""
    lines = []
    if "width" in fields:
        w = fields["width"]
        lines.append(f"{name}: width {w['asked']}: {w['verdict'].upper()}  [{w['theorem']}]")
        lines.append(f"  {w['reason']}")
    if "min_width" in fields:
        mw = fields["min_width_detail"]
        val = mw["value"] if mw["value"] is not None else ("none (no width works)" if mw["exists"] is False else "unknown")
        lines.append(f"{name}: minimal width: {val}")
        lines.append(f"  {mw['reason']}")
    return lines
