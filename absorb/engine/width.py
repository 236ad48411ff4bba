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
* The main decision (``decide_block``, passed as ``decision=`` or made here when needed)
  answers the widths it covers: absorbable at n ⇒ at every N ≥ n (its witness padded with
  dead units, checked again), not absorbable at n ⇒ at no N ≤ n. This covers blocks the
  canonical-form search cannot (budget, gates, biases, other σ) and bounds ``min_width``.
* Anything else: unknown, with the reason.

Every ``absorbable`` answer carries a constructed block of exactly the asked width, checked
by evaluation against f (random inputs and the kink / gate hyperplanes), and exactly via
canonical forms when ``witness.exact``. "Absorbable" means within the tolerance, as on
every route (docs/degenerate.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.engine.decide import DEFAULT_TOL, decide_block
from absorb.engine.degenerate import (
    DEFAULT_BUDGET,
    CanonicalForm,
    DegenerateDecision,
    SearchOutcome,
    _unsupported,
    canonical_form,
    decide_degenerate,
    search,
)
from absorb.engine.verdict import BlockDecision, Theorem, Verdict, Witness
from absorb.engine.witness import eval_threshold, rounding_allowance
from absorb.model.block import Block

_EVERY_WIDTH = (Theorem.DEGREE, Theorem.LINEARIZATION, Theorem.BOUNDED, Theorem.PARITY, Theorem.EXPONENTIAL)
"""Results whose not_absorbable never uses the width (parity's point and the exponential ray too: red team 47c/03)."""


def width_free(bd: BlockDecision, width: int) -> bool:
    """``bd`` is not_absorbable by an argument that never uses the width — an :data:`_EVERY_WIDTH` result, or the skeleton
    with σ∞ ≡ 0 (a = b = 0: every residual-free block's g(tv)/t → 0 while f(tv)/t → Mv) — and its share of the skip
    exceeds τ plus the rounding allowance at ``width`` (which grows with the width, 1000·ε·√(N + 1); review of 47): the
    point's or the ray's proved ratio, else the limit ‖M‖∞/(1 + ‖M‖∞) every such argument reads along a ray, rounded down."""
    from absorb.engine.tolerance import limit_share, vanishing_skeleton

    if bd.verdict is not Verdict.NOT_ABSORBABLE or not (
            bd.theorem in _EVERY_WIDTH or bd.theorem is Theorem.SKELETON and vanishing_skeleton(bd.properties)):
        return False
    share = bd.direction[1] if bd.direction is not None else limit_share(bd.block)
    return share > bd.tolerance + rounding_allowance(width)


def widest(block: Block) -> int:
    """The widest residual-free block absorb builds for ``block`` (the width question's limit)."""
    return max(MAX_WIDTH_NUMBERS // (3 * block.d + 2), 4 * block.n)


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
    lower: int | None = None  # a proved lower bound
    exists: bool | None = None  # False: proved that no width works
    upper: int | None = None  # a width with a checked witness (``witness``)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "exists": self.exists, "theorem": self.theorem, "reason": self.reason,
                               "lower": self.lower, "upper": self.upper}
        if self.witness is not None:
            out["witness"] = self.witness.to_json()
        return out


#: the most numbers a residual-free block of the width asked about may hold (its witness is built):
#: 2^26 float64, 512 MiB, or four times the block's own width, whichever is more
MAX_WIDTH_NUMBERS = 1 << 26


def _check_width(width: int, block: Block) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise InvalidInput(f"width {width!r} must be a positive integer (the number of hidden units of the residual-free block)")
    d = block.d
    most = widest(block)  # (W_up, W_gate and W_down, two bias vectors)
    if width > most:
        raise InvalidInput(f"--width {width}: a residual-free block of {width} hidden units on d = {d} inputs is larger than "
                           f"absorb builds (at most {most} units here); ask about a width up to {most} — a block "
                           "absorbable at some width is absorbable at every larger one (dead units pad it)")
    return width


def _main(block: Block, decision: BlockDecision | None, *, tol: float, seed: int) -> BlockDecision:
    """The main decision (width n) for this block: the one given, or a short run of it."""
    if decision is not None and decision.block is block:
        return decision
    return decide_block(block, tol=tol, seed=seed, timeout=10.0)


def pad_witness(w: Witness, width: int, *, tol: float) -> tuple[Witness, bool]:
    """``w`` (a residual-free block of width n_w ≤ width equal to f) padded with dead units — zero
    rows of W_up / W_gate, zero columns of W_down, zero biases: a dead unit contributes
    nothing, so the padded block keeps w's checked errors — and whether it is accepted at ``tol``."""
    wb = w.block
    extra = width - wb.n
    assert extra >= 0
    if extra:
        def rows(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.vstack([a, np.zeros((extra, a.shape[1]))])

        def vec(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.concatenate([a, np.zeros(extra)])

        wb = wb.replace(W_up=rows(wb.W_up), W_gate=rows(wb.W_gate), W_down=np.hstack([wb.W_down, np.zeros((wb.d, extra))]),
                        b_up=vec(wb.b_up), b_gate=vec(wb.b_gate))
    # a dead unit adds W_down[:, i]·σ(0) = 0 exactly (σ is finite), so the padded block's values are w's,
    # bit for bit: w's errors, proved and measured, are the padded block's (evaluating it again would
    # cost time linear in the width, for nothing new)
    how = w.description + (f"; padded with {extra} dead units (zero rows and columns)" if extra else "")
    out = Witness(S=w.S, block=wb, residual=w.residual, eval_error=w.eval_error, n_inputs=w.n_inputs, exact=w.exact, description=how,
                  bound=w.bound)
    # accepted only with a proved bound (w.bound: a witness checked on samples alone is not)
    return out, w.bound is not None and out.eval_error <= eval_threshold(tol, width)


def _other(bd: BlockDecision, width: int) -> tuple[Verdict, str, str]:
    """For blocks outside the canonical-form procedure at ``width``: a width-independent result, or unknown."""
    if width_free(bd, width):
        return Verdict.NOT_ABSORBABLE, f"{bd.reason} The argument never uses the width, so it holds at every width.", bd.theorem.value
    why = _unsupported(bd.block) or "no width result applies"
    return Verdict.UNKNOWN, f"Unknown: the canonical-form procedure that decides the extra-width question does not apply: {why}.", Theorem.NONE.value


def _from_main(block: Block, bd: BlockDecision, width: int, *, tol: float) -> WidthDecision | None:
    """What the main decision (about width n) says at ``width``: absorbable at n ⇒ at every
    N ≥ n (its witness, padded); not absorbable at n ⇒ at no N ≤ n (padding a width-N block
    would give one of width n); width-independent results at every width."""
    n = block.n
    if bd.verdict is Verdict.ABSORBABLE and bd.witness is not None and bd.witness.block.n <= width:
        w, ok = pad_witness(bd.witness, width, tol=tol)
        if ok:
            k = width - bd.witness.block.n
            pad = f"; padded with {k} dead unit{'s' if k > 1 else ''} (zero rows and columns) it has width {width}" if k else ""
            return WidthDecision(width, Verdict.ABSORBABLE,
                                 f"The main decision ({bd.theorem.value}) found a residual-free block of width {bd.witness.block.n} equal "
                                 f"to f{pad} (checked on {w.n_inputs} inputs, max relative error {w.eval_error:.2e}).", bd.theorem.value, w)
        return None
    if bd.verdict is Verdict.NOT_ABSORBABLE:
        if width_free(bd, width):
            return WidthDecision(width, Verdict.NOT_ABSORBABLE, f"{bd.reason} The argument never uses the width, so it holds at every width.",
                                 bd.theorem.value)
        if width <= n:
            return WidthDecision(width, Verdict.NOT_ABSORBABLE,
                                 f"{bd.reason} So f is no residual-free block of width {n}, hence of no width {width} ≤ {n} either "
                                 "(dead units would pad it to width n).", bd.theorem.value)
    return None


def decide_width(block: Block, width: int, *, tol: float = DEFAULT_TOL, seed: int = 0, budget: int = DEFAULT_BUDGET,
                 decision: BlockDecision | None = None) -> WidthDecision:
    """Is ``f`` a residual-free block of ``width`` hidden units (same kind and σ)?

    ``decision``: the main decision of this block (``decide_block``), when already made; its
    witness or proof answers the widths it covers. Without it the main decision is made (a
    short run) only when the canonical-form procedure does not decide. An exact not_absorbable
    is withheld (unknown) when a block of that width is within the tolerance of f by bound
    (:func:`absorb.engine.tolerance.within_tolerance`), or, at f's own width, fitted near its units
    (:func:`absorb.engine._fit.fitted_near`)."""
    from absorb.engine.tolerance import within_tolerance

    width = _check_width(width, block)
    if decision is not None and decision.input_scale is not None and decision.block is block:
        k, inner = decision.input_scale  # (f decided as F(x) = 2^-k·f(2^k·x): so is each width, its witness mapped back)
        wd = decide_width(inner.block, width, tol=tol, seed=seed, budget=budget, decision=inner)
        g = None if wd.witness is None else wd.witness.in_frame(k)
        if wd.witness is None or g is not None:
            return replace(wd, witness=g)
    wd = _decide_width(block, width, tol=tol, seed=seed, budget=budget, decision=decision)
    biases = getattr(getattr(decision, "residual_free_class", None), "biases", None)  # (the question's class: g may have biases)
    near = within_tolerance(block, tol, seed, width, biases) if wd.verdict is Verdict.NOT_ABSORBABLE else None
    screened = decision is not None and decision.block is block and decision.verdict is Verdict.NOT_ABSORBABLE  # (its screens ran)
    if near is None and wd.verdict is Verdict.NOT_ABSORBABLE and width == block.n and not screened:  # (a block fitted near f)
        from absorb.engine._fit import near_block
        from absorb.engine.tolerance import SCREEN_MARGIN

        fit = near_block(block, tol, seed, bool(biases), SCREEN_MARGIN)
        near = None if fit is None else f"Unknown: {wd.reason.rstrip('.')}; but {fit}."
    return wd if near is None else WidthDecision(width, Verdict.UNKNOWN, near, Theorem.NONE.value)


def _decide_width(block: Block, width: int, *, tol: float, seed: int, budget: int,
                  decision: BlockDecision | None) -> WidthDecision:
    dd: DegenerateDecision | None = None
    given = decision if decision is not None and decision.block is block else None
    # the question is about residual-free blocks with biases (--allow-biases): the canonical form's
    # impossibility covers bias-free ones only; its witnesses (bias-free) answer both classes
    biased = given is not None and given.residual_free_class is not None and given.residual_free_class.biases
    if given is not None and given.verdict is Verdict.ABSORBABLE:  # its witness, padded: nothing to search or build
        main = _from_main(block, given, width, tol=tol)
        if main is not None:
            return main
    if _unsupported(block) is None:
        # every f of the family is a block of width m + 2·rank(L₀) ≤ n + 2d (each line's unit, antipodal pairs for
        # L₀): a wider block is that one padded with dead units, not built unit by unit in exact arithmetic
        at = min(width, block.n + 2 * block.d)
        dd = decide_degenerate(block, width=at, tol=tol, seed=seed, budget=budget)
        if dd.verdict is Verdict.ABSORBABLE and dd.witness is not None and at < width:
            w, ok = pad_witness(dd.witness, width, tol=tol)
            if ok:
                return WidthDecision(width, dd.verdict, f"{dd.reason} Padded with {width - at} dead units (zero rows and columns) "
                                     f"it has width {width}.", Theorem.CANONICAL_FORM.value, w)
        if at < width and dd.verdict is not Verdict.ABSORBABLE:
            dd = decide_degenerate(block, width=width, tol=tol, seed=seed, budget=budget)
        if dd.verdict is Verdict.ABSORBABLE:
            return WidthDecision(width, dd.verdict, dd.reason, Theorem.CANONICAL_FORM.value, dd.witness)
        if dd.verdict is Verdict.NOT_ABSORBABLE and biased:
            sk = _skeleton_at_width(block, width, tol=tol, seed=seed, budget=budget)
            if sk is not None:
                return sk
            dd = None
        elif dd.verdict is Verdict.NOT_ABSORBABLE:
            main = None if given is None else _from_main(block, given, width, tol=tol)
            if main is not None and main.verdict is Verdict.ABSORBABLE:  # not expected: both routes use the same tolerance
                return WidthDecision(width, Verdict.UNKNOWN, f"Unknown: the canonical-form procedure says not absorbable ({dd.reason}) "
                                     f"but the main decision's witness checks at width {width} ({main.reason}).", Theorem.NONE.value)
            return WidthDecision(width, dd.verdict, dd.reason, Theorem.CANONICAL_FORM.value)
    bd = _main(block, decision, tol=tol, seed=seed)
    main = _from_main(block, bd, width, tol=tol)
    if main is not None:
        return main
    if dd is not None:
        return WidthDecision(width, dd.verdict, dd.reason, Theorem.CANONICAL_FORM.value)
    v, why, thm = _other(bd, width)
    return WidthDecision(width, v, why, thm)


def _skeleton_at_width(block: Block, width: int, *, tol: float, seed: int, budget: int) -> WidthDecision | None:
    """The asymptotic skeleton at ``width`` (any class, biases too): ReLU, GELU, SiLU and quick-GELU
    all have σ(tz + c)/t → ReLU(z), so a residual-free g of width N equal to f would make the bias-free
    ReLU skeleton (M, W_up, W_down) a residual-free ReLU block of width N; its canonical form
    (docs/degenerate.md) decides that. Not absorbable, or None when it does not say so."""
    from absorb.model.activations import get_activation

    skel = block.replace(activation=get_activation("relu"), name=block.name + "∞")
    dd = decide_degenerate(skel, width=width, tol=tol, seed=seed, budget=budget)
    if dd.verdict is not Verdict.NOT_ABSORBABLE:
        return None
    return WidthDecision(width, Verdict.NOT_ABSORBABLE,
                         f"Asymptotic skeleton: σ(tz + c)/t → ReLU(z) (t → ∞), so f = g for a residual-free g of width {width}, "
                         f"with or without biases, would make the bias-free ReLU skeleton (M, W_up, W_down) a residual-free ReLU block "
                         f"of width {width}; but its canonical form rules that out: {dd.reason}", Theorem.SKELETON.value)


def minimal_width(block: Block, *, tol: float = DEFAULT_TOL, seed: int = 0, budget: int = DEFAULT_BUDGET,
                  decision: BlockDecision | None = None) -> MinWidth:
    """The smallest N' such that f is a residual-free block of width N' (Theorem D / W), or
    the bounds that are proved: ``upper`` (a checked witness of that width — the main
    decision's, when it found one) and ``lower``. A block decided through its exact rescaling
    (``decision.input_scale``) is answered in that frame (widths are the same)."""
    if decision is not None and decision.input_scale is not None and decision.block is block:
        return minimal_width(decision.input_scale[1].block, tol=tol, seed=seed, budget=budget, decision=decision.input_scale[1])
    if _unsupported(block) is not None:
        bd = _main(block, decision, tol=tol, seed=seed)
        v, why, thm = _other(bd, widest(block))
        if v is Verdict.NOT_ABSORBABLE:
            return MinWidth(None, f"No width works (up to {widest(block)} units, the widest absorb builds here): {why}", thm,
                            exists=False)
        return _bounds_from_main(block, bd, why, thm)
    cf = canonical_form(block)
    cap = cf.m + 2 * cf.d
    out = search(cf, cap=cap, budget=budget)
    bd = decision if decision is not None and decision.block is block else None
    # with biases allowed the canonical form's lower bounds (m lines, the exact minimum) are about
    # bias-free blocks only: each width below is then refuted by decide_width (the skeleton) or not
    biased = bd is not None and bd.residual_free_class is not None and bd.residual_free_class.biases
    if out.status != "found" and not biased:
        return _min_width_search_stopped(block, cf, out, tol=tol, seed=seed, budget=budget, decision=decision)
    if out.status != "found":
        return _bounds_from_main(block, _main(block, decision, tol=tol, seed=seed), f"The exact search stopped: {out.reason}.",
                                 Theorem.NONE.value)
    assert out.best is not None
    w = max(out.best.value, 1)  # f ≡ 0 needs no unit, but widths start at 1 (one zero unit)
    if bd is not None and bd.verdict is Verdict.ABSORBABLE and bd.witness is not None:
        w = min(w, bd.witness.block.n)
    # w is a width with a witness; walk down while the width below is absorbable (within the
    # tolerance a smaller width can work than the exact minimum of the stored floats)
    # (m lines need m units exactly; within the tolerance two lines 1e-13 apart need one: a lower bound
    # is stated only with a width below it decided not absorbable, which is robust at the tolerance)
    best = decide_width(block, w, tol=tol, seed=seed, budget=budget, decision=decision)
    if best.verdict is not Verdict.ABSORBABLE:
        return MinWidth(None, f"Unknown: the width-{w} witness did not check ({best.reason})", Theorem.CANONICAL_FORM.value)
    while True:
        below = decide_width(block, w - 1, tol=tol, seed=seed, budget=budget, decision=decision) if w > 1 else None
        if below is None or below.verdict is Verdict.NOT_ABSORBABLE:
            break
        if below.verdict is Verdict.UNKNOWN:
            return MinWidth(None, f"Unknown: width {w} works (witness checked), width {w - 1} is undecided: {below.reason}",
                            best.theorem, witness=best.witness, upper=w, exists=True)
        w, best = w - 1, below
    if biased and below is not None:
        return MinWidth(w, f"{w} units: a residual-free block of width {w} equals f ({best.reason}), and width {w - 1} is proved "
                           f"impossible with or without biases ({below.reason}).", below.theorem, witness=best.witness, exists=True,
                        lower=w, upper=w)
    return MinWidth(w, _min_width_why(cf, out, w, best, below), Theorem.CANONICAL_FORM.value, witness=best.witness, exists=True,
                    lower=w, upper=w)


def _min_width_why(cf: CanonicalForm, out: SearchOutcome, w: int, best: WidthDecision, below: WidthDecision | None) -> str:
    """Why ``w`` is the minimal width: the exact minimum itself, or a tolerance witness with the width below refuted."""
    b = out.best
    assert b is not None
    if b.value == 0 and w == 1:
        return ("f is identically zero (no active line and no linear part in its canonical form): one unit with zero "
                "weights reproduces it, and no block has fewer than one unit.")
    if w == b.value:
        return (f"Minimum over the choices (B, δ) of m + |B| + 2·rank(C_δ P_B) with m = {cf.m} active lines, proved in exact "
                f"arithmetic over {out.candidates} choices: {w} units (|B| = {len(b.B)}, rank {b.rank}); any fewer cannot "
                "reproduce f's canonical form.")
    return (f"{w} units: a residual-free block of width {w} equals f within the tolerance ({best.reason}), and width {w - 1} "
            f"is proved impossible ({below.reason if below is not None else 'no width below 1'}).")


def _min_width_search_stopped(block: Block, cf: CanonicalForm, out: SearchOutcome, *, tol: float, seed: int, budget: int,
                              decision: BlockDecision | None) -> MinWidth:
    """The exact search did not find the minimum: bounds from the main decision, from width m − 1 and,
    when it fits the cap, from the choice that needs no search (each line's unit, pairs for L₀)."""
    bd = _main(block, decision, tol=tol, seed=seed)
    below = decide_width(block, cf.m - 1, tol=tol, seed=seed, budget=budget, decision=bd) if cf.m > 1 else None
    lower = cf.m if below is None or below.verdict is Verdict.NOT_ABSORBABLE else None
    mw = _bounds_from_main(block, bd, f"The exact search stopped: {out.reason}.", Theorem.CANONICAL_FORM.value, lower=lower)
    if out.status == "fits" and out.best is not None and mw.exists is not False and (mw.upper is None or out.best.value < mw.upper):
        w = max(out.best.value, 1)  # the choice that needs no search (each line's unit, pairs for L₀): a witness of that width
        wd = decide_width(block, w, tol=tol, seed=seed, budget=budget, decision=bd)
        if wd.verdict is Verdict.ABSORBABLE:
            mw = MinWidth(None, f"{mw.reason} That choice builds a residual-free block of width {w} equal to f (its witness "
                                f"checked, bound {wd.witness.eval_error:.2e}), so the minimal width is at most {w}.", mw.theorem,
                          witness=wd.witness, lower=mw.lower, upper=w, exists=True)
    if mw.upper is not None and mw.upper == mw.lower:
        return MinWidth(mw.upper, f"{mw.reason} It is also at least {lower}: f has {cf.m} active lines, each needing its own "
                                  f"unit (width {cf.m - 1} is proved impossible).", mw.theorem, witness=mw.witness,
                        lower=lower, upper=lower, exists=True)
    return mw


def _bounds_from_main(block: Block, bd: BlockDecision, why: str, thm: str, lower: int | None = None) -> MinWidth:
    """Unknown minimum: the main decision still bounds it (absorbable at n ⇒ ≤ n; not at n ⇒ > n)."""
    if bd.verdict is Verdict.ABSORBABLE and bd.witness is not None:
        up = bd.witness.block.n
        return MinWidth(None, f"{why} The main decision ({bd.theorem.value}) found a residual-free block of width {up} equal to f, "
                              f"so the minimal width is at most {up}.", thm, witness=bd.witness, lower=lower, upper=up, exists=True)
    if width_free(bd, widest(block)):
        return MinWidth(None, f"No width works (up to {widest(block)} units, the widest absorb builds here): {bd.reason}",
                        bd.theorem.value, exists=False)
    if bd.verdict is Verdict.NOT_ABSORBABLE:
        lo = max(lower or 0, block.n + 1)
        return MinWidth(None, f"{why} The main decision proves width {block.n} impossible ({bd.theorem.value}), so the minimal "
                              f"width, if any, is at least {lo}.", thm, lower=lo)
    return MinWidth(None, why, thm, lower=lower)


def width_fields(block: Block, *, width: int | None, min_width: bool, tol: float = DEFAULT_TOL, seed: int = 0,
                 decision: BlockDecision | None = None) -> dict[str, Any]:
    """The per-block JSON fields of ``absorb check --width N --min-width`` (contract extension):
    ``"width": {"asked", "verdict", "theorem", "reason", "witness_width", "witness"}``,
    ``"min_width": int | null`` and ``"min_width_detail": {...}``."""
    out: dict[str, Any] = {}
    if width is not None:
        out["width"] = decide_width(block, width, tol=tol, seed=seed, decision=decision).to_json()
    if min_width:
        mw = minimal_width(block, tol=tol, seed=seed, decision=decision)
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
        if mw["value"] is None and mw["exists"] is not False and (mw.get("lower") is not None or mw.get("upper") is not None):
            val = f"unknown ({mw.get('lower') or 1} ≤ min width ≤ {mw['upper'] if mw.get('upper') is not None else '?'})"
        lines.append(f"{name}: minimal width: {val}")
        lines.append(f"  {mw['reason']}")
    return lines
