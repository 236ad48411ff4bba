"""The width answers of ``absorb check --width N --min-width`` in a certificate (docs/min-width.md).

Each block's entry gets ``"width"`` (the answer at the asked width) and ``"min_width"`` (the
minimal width, or its bounds), each claim with the evidence ``absorb verify`` re-derives by its
own route (:mod:`absorb.verify._width`):

* ``route: "main-witness"`` — absorbable: the main decision's witness (width ``witness_width``,
  re-derived with the block's own verdict) padded with ``dead_units`` dead units;
* ``route: "main-proof"`` — not absorbable at a width ``N ≤ n``: the main verdict's proof at n
  (a block of width N, padded with dead units, would be one of width n);
* ``route: "every-width"`` — not absorbable: the main verdict's result (degree, linearization,
  boundedness, parity, exponential σ, the skeleton with σ∞ ≡ 0) never uses the width;
* ``route: "canonical-form"`` — absorbable: the canonical-form record at ``witness_width`` with
  its exact (or within-tolerance) witness, then padded; not absorbable (bias-free class): nothing
  recorded, the checker enumerates the choices (B, δ) itself;
* ``route: "skeleton"`` — not absorbable for the class with biases: σ's slopes are ReLU's and the
  bias-free ReLU skeleton's canonical form needs more than N units (re-derived by the checker);
* ``route: "none"`` — unknown: claims nothing.

The minimal width records ``upper_claim`` (a width record at ``upper``, absorbable) and
``lower_claim`` (one at ``lower − 1``, not absorbable): the value is certified when both are.
"""

from __future__ import annotations

from typing import Any

from absorb.certificate._util import plain
from absorb.certificate.build import block_entry, block_weights, canonical_parts
from absorb.engine.verdict import BlockDecision, Decision, Theorem, Verdict
from absorb.engine.width import width_free


def _main_witness_width(bd: BlockDecision) -> int | None:
    return bd.witness.block.n if bd.verdict is Verdict.ABSORBABLE and bd.witness is not None else None


def width_record(bd: BlockDecision, asked: int, verdict: str, theorem: str, reason: str = "") -> dict[str, Any]:
    """The certificate's record of the answer ``verdict`` (by ``theorem``) at width ``asked``,
    with the evidence its route needs; ``route: "none"`` (claims nothing) where no route
    the checker knows carries it."""
    rec: dict[str, Any] = {"asked": int(asked), "verdict": verdict, "theorem": theorem, "reason": reason}
    n, main = bd.block.n, bd.theorem.value
    k = _main_witness_width(bd)
    if verdict == Verdict.ABSORBABLE.value:
        if k is not None and k <= asked:
            return {**rec, "theorem": main, "route": "main-witness", "witness_width": k, "dead_units": asked - k}
        at = min(asked, bd.block.n + 2 * bd.block.d)
        for width in dict.fromkeys((at, asked)):
            if width * bd.block.d > 400_000:  # (the checker's exact-arithmetic limit)
                continue
            cf, dd = canonical_parts(bd, width=width, verdict=verdict)
            if cf is not None:
                out = {**rec, "theorem": Theorem.CANONICAL_FORM.value, "route": "canonical-form", "witness_width": width,
                       "dead_units": asked - width, "canonical_form": cf}
                if "near" not in cf and dd.witness is not None:
                    out["witness"] = {"block": {"weights": block_weights(dd.witness.block)}}
                return out
    elif verdict == Verdict.NOT_ABSORBABLE.value:
        if width_free(bd, asked):
            return {**rec, "theorem": main, "route": "every-width"}
        if bd.verdict is Verdict.NOT_ABSORBABLE and asked <= n:  # (the cheapest to re-check: the main verdict's own proof)
            return {**rec, "theorem": main, "route": "main-proof"}
        if theorem in (Theorem.SKELETON.value, Theorem.CANONICAL_FORM.value):
            return {**rec, "route": theorem}
    return {**rec, "route": "none"}


def _claim(bd: BlockDecision, width: int, tol: float, seed: int) -> dict[str, Any]:
    from absorb.engine.width import decide_width

    wd = decide_width(bd.block, width, tol=tol, seed=seed, decision=bd)
    return width_record(bd, width, wd.verdict.value, wd.theorem, wd.reason)


def min_width_record(bd: BlockDecision, detail: dict[str, Any], *, tol: float, seed: int) -> dict[str, Any]:
    """The minimal-width answer (``min_width_detail``) with the width records that certify it:
    ``upper_claim`` at ``upper`` and ``lower_claim`` at ``lower − 1``."""
    rec = {k: detail.get(k) for k in ("value", "exists", "lower", "upper", "theorem", "reason")}
    if detail.get("exists") is False:
        return rec
    up, lo = detail.get("upper"), detail.get("lower")
    if isinstance(up, int):  # a width with a witness: the main decision's, else the canonical form's at that width
        claim = width_record(bd, up, Verdict.ABSORBABLE.value, Theorem.NONE.value)
        if claim["route"] != "none":
            rec["upper_claim"] = claim
    if isinstance(lo, int) and lo > 1:  # the width below the bound, proved impossible
        claim = _claim(bd, lo - 1, tol, seed)
        if claim["verdict"] == Verdict.NOT_ABSORBABLE.value and claim["route"] != "none":
            rec["lower_claim"] = claim
    return rec


def width_entries(decision: Decision, fields: list[dict[str, Any]], *, seed: int) -> list[dict[str, Any]]:
    """Each block's certificate entry (:func:`~absorb.certificate.build.block_entry`) with the
    width answers of ``fields`` (one per block, from :func:`absorb.engine.width.width_fields`)."""
    out = []
    for bd, f in zip(decision.blocks, fields, strict=True):
        entry = block_entry(bd)
        bd = bd if bd.input_scale is None else bd.input_scale[1]  # (a rescaled block's widths are F's, as its evidence)
        if "width" in f:
            w = f["width"]
            entry["width"] = plain(width_record(bd, w["asked"], w["verdict"], w["theorem"], w["reason"]))
        if "min_width_detail" in f:
            entry["min_width"] = plain(min_width_record(bd, f["min_width_detail"], tol=bd.tolerance, seed=seed))
        out.append(entry)
    return out
