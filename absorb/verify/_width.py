"""Re-check of the width answers of a certificate (``absorb check --width N --min-width``;
docs/min-width.md): each block's ``"width"`` record (is f a residual-free block of N units?)
and ``"min_width"`` record (the smallest such N, or bounds), each by this checker's own route.

A width record names its route; every claim is re-derived here, never taken on trust:

* ``main-witness`` — absorbable at N: the block's main verdict is absorbable and its witness,
  rebuilt and evaluated by this checker (width k ≤ N), padded with N − k dead units (zero rows of
  W_up / W_gate, zero columns of W_down, zero biases: each adds W_down[:, i]·σ(0)·… = 0, σ(0)
  finite, re-derived exactly) is a block of exactly N units with the same values;
* ``main-proof`` — not absorbable at N ≤ n: the main verdict not_absorbable was re-derived, and a
  block of N units padded with dead units would be one of n;
* ``every-width`` — not absorbable: the main verdict's result (degree, linearization, bounded σ,
  parity, exponential σ, the skeleton with σ∞ ≡ 0) was re-derived, its argument never uses the width,
  and the skip's share exceeds τ plus the rounding allowance at the width asked;
* ``canonical-form`` — absorbable: the recorded canonical form at the witness's width k is f's,
  the exact (or within-tolerance) witness is checked as for a canonical-form verdict
  (:mod:`absorb.verify._canonical`) and evaluated against f, then padded; not absorbable (the
  bias-free class only): this checker's own canonical form of f and every choice (B, δ)
  enumerated need more than N units (not re-checked past ``MAX_CHOICES`` choices);
* ``skeleton`` — not absorbable, with or without biases: σ is finite on R with the slopes of
  ReLU (L₊ = 1, L₋ = 0, re-derived by the checker's own expansions), so f = g of width N would
  make the bias-free ReLU skeleton (M, W_up, W_down) a ReLU block of width N; its canonical form,
  derived and enumerated here, needs more;
* ``none`` — claims nothing (an unknown answer; any other answer without a route is reported as
  not re-checked).

The minimal width: ``value`` w needs ``upper_claim`` (absorbable at w) and ``lower_claim`` (not
absorbable at w − 1, none when w = 1); a bound ``upper`` needs the first, ``lower`` L the second
at L − 1; ``exists: false`` needs a width-independent main result.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from absorb.model.block import Block
from absorb.verify._beyond import _finite_number, finite_on_reals, skeleton_block, slopes_or_reason
from absorb.verify._canonical import (
    _check_absorbable,
    _check_choice,
    _check_near,
    _check_not_absorbable,
    _check_recorded_form,
    _check_sigma,
    _q,
    canonical,
)
from absorb.verify._numerics import check_array_record, rounding_allowance
from absorb.verify._pieces import exact_value
from absorb.verify._report import _Ctx, _must, _Reject, _require, _where
from absorb.verify._symbolic import _variable, homogeneous_of_degree
from absorb.verify._tolerance import contradiction, limit_share
from absorb.verify._weights import _bias_free, _block_arrays, _evaluate

EVERY_WIDTH = ("degree", "linearization", "bounded", "parity", "exponential")
"""Main results whose argument never uses the width: not absorbable at n ⇒ at every width."""

_CLAIM_FIELDS = {"asked", "verdict", "theorem", "reason", "route", "witness_width", "dead_units", "canonical_form", "witness"}
_MIN_FIELDS = {"value", "exists", "lower", "upper", "theorem", "reason", "upper_claim", "lower_claim"}
_ROUTES = ("main-witness", "main-proof", "every-width", "canonical-form", "skeleton", "none")


class _Main:
    """The block's main verdict as re-derived by ``check_block``: verdict, theorem, witness, class."""

    def __init__(self, b: dict[str, Any], block: Block, verdict: str, witness: Block | None, biases: bool) -> None:
        self.verdict, self.theorem, self.witness, self.biases = verdict, (b.get("theorem") or {}).get("id"), witness, biases
        self.n = block.n
        # (the skeleton with σ∞ ≡ 0 — its case re-derived by the main check, a = b = 0 — never uses the width either)
        arg = b.get("argument") or {}
        self.every = verdict == "not_absorbable" and (self.theorem in EVERY_WIDTH or self.theorem == "skeleton"
                                                      and arg.get("case") == "zero")
        # (the skip's share those arguments read: the point's or the ray's ratio, checked ≤ the re-derived one by the main
        # check; else ‖M‖∞/(1 + ‖M‖∞), the limit along the ray of M's heaviest row's signs, rounded down)
        rec = arg.get("ratio") if self.theorem in ("parity", "exponential") else None
        self.share = rec if isinstance(rec, float) else limit_share(block)
        self.widest = max((1 << 26) // (3 * block.d + 2), 4 * block.n)  # (the widest block absorb answers about)

    def beyond(self, tol: float, width: int) -> bool:
        """The share exceeds τ plus the rounding allowance at ``width`` (it grows with the width)."""
        return self.share > tol + rounding_allowance(width)


def _whole(ctx: _Ctx, w: str, v: Any, what: str, least: int = 0) -> int:
    _must(ctx, isinstance(v, int) and not isinstance(v, bool) and v >= least, w, f"{what} is a whole number ≥ {least}",
             f"recorded {v!r}")
    return int(v)


def _dead_units_add_nothing(ctx: _Ctx, w: str, block: Block) -> None:
    """σ(0) (and the value activation's h(0)) are finite: a dead unit adds W_down[:, i]·σ(0)·h(0) = 0."""
    acts = [block.activation.expr] + ([block.value_activation.expr] if not block.value_identity else [])
    ok = all(_finite_number(exact_value(a, _variable(a), sp.Integer(0))) for a in acts)
    _require(ctx, ok, w, "σ(0) is finite (exact): a dead unit (zero rows and biases, zero column of W_down) adds exactly 0")


def _form_applies(ctx: _Ctx, w: str, block: Block) -> str:
    """The canonical-form procedure covers f (ungated, bias-free, small enough, σ's identities checked): its family."""
    family = "relu" if homogeneous_of_degree(block.activation.expr, sp.Integer(1)) else "even"
    return _check_sigma(ctx, w, {"family": family}, block)


def _own_form(ctx: _Ctx, w: str, block: Block) -> tuple[str, list, list]:
    """The family, L₀ and lines of f's canonical form, derived here (σ's identities checked)."""
    family = _form_applies(ctx, w, block)
    L0, lines = canonical(_q(block.W_up), _q(block.W_down), _q(block.M), family)
    return family, L0, list(lines.items())


def _not_absorbable_by_form(ctx: _Ctx, w: str, block: Block, N: int) -> None:
    family, L0, lines = _own_form(ctx, w, block)
    _check_not_absorbable(ctx, w, {}, block, family, N, L0, lines)


def _canonical_witness(ctx: _Ctx, w: str, rec: dict[str, Any], block: Block, k: int) -> None:
    """The recorded canonical form at width k is f's and its witness (exact, or within the
    tolerance) is a residual-free block of k units equal to f, evaluated here."""
    cf = rec.get("canonical_form")
    _require(ctx, isinstance(cf, dict) and _whole(ctx, w, cf.get("width"), "the canonical form's width", 1) == k, w,
             f"the canonical-form record is about width {k} (the witness's)")
    bare = block.replace(b_up=None, b_gate=None, b_down=None) if _bias_free(block) else block  # (zero biases: the same f)
    family = _check_sigma(ctx, w, cf, bare)
    L0, lines, lines_d = _check_recorded_form(ctx, w, cf, bare, family)
    choice = cf.get("choice")
    if choice is not None:
        _check_choice(ctx, w, choice, L0, lines)
    if cf.get("near") is not None:
        _require(ctx, choice is None and cf.get("witness_exact") is None and cf.get("min_width") is None
                 and rec.get("witness") is None, w,
                 "a within-tolerance record claims no exact choice, exact witness, minimum width or float block")
        _, wb, allowed = _check_near(ctx, w, {"witness": {"exact": False}}, cf["near"], bare, k, L0, lines, family)
    else:
        _require(ctx, cf.get("min_width") is None, w, "an absorbable width record claims no minimum width")
        _, wb, allowed = _check_absorbable(ctx, w, {"witness": rec.get("witness") or {}}, cf, bare, choice, k, L0, lines_d,
                                           family, lines)
    assert wb is not None
    recs = ((rec.get("witness") or {}).get("block") or {}).get("weights")
    mine = _block_arrays(wb)
    _must(ctx, recs is None or (isinstance(recs, dict) and set(recs) <= set(mine)), w, "the witness's arrays are the rebuilt block's")
    for key, r in (recs or {}).items():
        check_array_record(ctx, w, r, mine[key], f"the width-{k} witness's {key}")
    ok, worst, m = _evaluate(block, wb, [block], [wb], block.d, seed=ctx.seed, allowed_lin=allowed)
    _require(ctx, ok, w, f"the width-{k} block rebuilt here equals f on {m} inputs: fresh random ones and points exactly on "
             "the kink hyperplanes", f"max relative difference {worst:.3g}")


def _skeleton(ctx: _Ctx, w: str, block: Block, N: int) -> None:
    act = block.activation.expr
    _require(ctx, not block.gated, w, "the block is ungated (the skeleton argument is about ungated blocks)")
    _require(ctx, finite_on_reals(act), w, "σ is real and finite at every real point (exact at every break point, by pieces)")
    sl, why = slopes_or_reason(act)
    _require(ctx, sl is not None and sp.simplify(sl[0] - 1) == 0 and sp.simplify(sl[1]) == 0, w,
             "σ's slopes at ±∞ are ReLU's: L₊ = 1, L₋ = 0 (the checker's own expansion of the outermost pieces), so "
             "σ(tz + c)/t → ReLU(z) for every bias c", why or f"L₊, L₋ = {sl}")
    _not_absorbable_by_form(ctx, w, skeleton_block(block), N)


def check_claim(ctx: _Ctx, w: str, rec: Any, block: Block, main: _Main, *, asked: int | None = None,
                want: str | None = None) -> None:
    """Re-derive one width record (``asked``/``want``: the width and verdict it must be about)."""
    _must(ctx, isinstance(rec, dict), w, "the width record is an object")
    extra = sorted(set(rec) - _CLAIM_FIELDS)
    if extra:
        ctx.report.unchecked(w, "every field of the width record is one its check reads", f"not re-checked: {', '.join(extra)}")
    N = _whole(ctx, w, rec.get("asked"), "the width asked", 1)
    v, route, th = rec.get("verdict"), rec.get("route"), rec.get("theorem")
    _must(ctx, asked is None or N == asked, w, f"the record is about width {asked}", f"recorded {N}")
    _must(ctx, v in ("absorbable", "not_absorbable", "unknown") and (want is None or v == want), w,
             f"the verdict is {want or 'one of three'}", f"recorded {v!r}")
    _must(ctx, route in _ROUTES, w, f"the route is one of {', '.join(_ROUTES)}", f"recorded {route!r}")
    _must(ctx, (v == "absorbable") == ("witness_width" in rec or "dead_units" in rec)
             and (route == "canonical-form" and v == "absorbable") == ("canonical_form" in rec)
             and ("witness" not in rec or route == "canonical-form"), w,
             "the record holds a witness's width exactly when absorbable, a canonical form only on that route")
    if route == "none":
        if v == "unknown":
            _must(ctx, th in (None, "none", "canonical-form", main.theorem), w, "an unknown width answer cites no result, "
                  "the canonical-form procedure that ran, or the block's own result", f"theorem {th!r}")
            if th == "canonical-form" and main.theorem != "canonical-form":
                _form_applies(ctx, w, block)  # (the procedure ran only where it covers f)
            ctx.report.ok(w, f"width {N}: unknown (claims nothing)")
        else:
            ctx.report.unchecked(w, f"f is {'a' if v == 'absorbable' else 'no'} residual-free block of width {N} (result {th!r})",
                                 "no evidence recorded that this checker re-derives")
        return
    _must(ctx, v != "unknown", w, "an unknown answer has no route", f"route {route!r}")
    near = contradiction(block, ctx.tol, N, biases=bool(ctx.once.get("class_biases"))) if v == "not_absorbable" else None
    _must(ctx, near is None, w, f"no residual-free block of width {N} found by bound is within the tolerance of f", f"{near}")
    if v == "not_absorbable" and N < block.n:
        from absorb.verify._sampled import spare_units

        fewer = spare_units(block, ctx.tol, ctx.seed, False, bool(ctx.once.get("class_biases")), width=N)
        if fewer is not None:
            ctx.report.unchecked(w, f"the exact answer at width {N} agrees with the tolerance", fewer)
    elif v == "not_absorbable" and N == block.n and route not in ("main-proof", "every-width"):  # (those screened, or robust)
        from absorb.verify._fitted import near_fitted

        fit = near_fitted(block, 4 * ctx.tol, ctx.seed, bool(ctx.once.get("class_biases")),
                          0.0 if route in ("skeleton", "canonical-form") else None)
        if fit is not None:
            ctx.report.unchecked(w, f"the exact answer at width {N} agrees with the tolerance (at 4× it, a fitted block)", fit)
    if v == "absorbable":
        k = _whole(ctx, w, rec.get("witness_width"), "the witness's width", 1)
        _require(ctx, k <= N and rec.get("dead_units") == N - k, w, f"the witness's {k} units and {N - k} dead units make {N}",
                 f"recorded {rec.get('dead_units')!r} dead units")
    if route == "main-witness":
        _require(ctx, v == "absorbable" and th == main.theorem and main.verdict == "absorbable" and main.witness is not None, w,
                 "the block's main verdict is absorbable with a witness rebuilt here, and the record cites its result",
                 f"main {main.verdict!r} by {main.theorem!r}; record {v!r} by {th!r}")
        _require(ctx, main.witness.n == k, w, f"the main witness (checked here) has {k} units", f"it has {main.witness.n}")
    elif route == "main-proof":
        _require(ctx, v == "not_absorbable" and th == main.theorem and main.verdict == "not_absorbable" and N <= main.n, w,
                 f"not absorbable at width {N} ≤ n = {main.n}: the main verdict not_absorbable (result {main.theorem!r}) was "
                 "re-derived, and a width-N block padded with dead units would have width n",
                 f"main {main.verdict!r} by {main.theorem!r}; record {v!r} by {th!r}, width {N}")
        return
    elif route == "every-width":
        _require(ctx, v == "not_absorbable" and th == main.theorem and main.every and main.beyond(ctx.tol, N), w,
                 f"not absorbable at any width: the main verdict not_absorbable by result {th!r} was re-derived, its "
                 f"argument never uses the width ({', '.join(EVERY_WIDTH)}, the skeleton with σ∞ ≡ 0), and the skip's share "
                 f"exceeds τ + the allowance at width {N}", f"main {main.verdict!r} by {main.theorem!r}, share {main.share:.6g}")
        return
    elif route == "skeleton":
        _must(ctx, v == "not_absorbable" and th == "skeleton", w, "the skeleton route proves not_absorbable",
                 f"{v!r} by {th!r}")
        _skeleton(ctx, w, block, N)
        return
    else:  # canonical-form
        _must(ctx, th == "canonical-form", w, "the canonical-form route cites the canonical form", f"theorem {th!r}")
        if v == "not_absorbable":
            _must(ctx, not main.biases, w, "the canonical form's impossibility covers bias-free residual-free blocks only, "
                  "and the answer is about those", "the block's class allows biases")
            _not_absorbable_by_form(ctx, w, block, N)
            return
        _canonical_witness(ctx, w, rec, block, k)
    if N > k:
        _dead_units_add_nothing(ctx, w, block)
    ctx.report.ok(w, f"f is a residual-free block of width {N}: the witness of {k} units checked here"
                  + (f", padded with {N - k} dead units" if N > k else ""))


def _check_min(ctx: _Ctx, w: str, rec: Any, block: Block, main: _Main) -> None:
    _must(ctx, isinstance(rec, dict), w, "the minimal-width record is an object")
    extra = sorted(set(rec) - _MIN_FIELDS)
    if extra:
        ctx.report.unchecked(w, "every field of the minimal-width record is one its check reads", f"not re-checked: {', '.join(extra)}")
    value, exists, lo, up, th = (rec.get(k) for k in ("value", "exists", "lower", "upper", "theorem"))
    if exists is False:
        _require(ctx, value is None and lo is None and up is None and "upper_claim" not in rec and "lower_claim" not in rec
                 and th == main.theorem and main.every and main.beyond(ctx.tol, main.widest), w,
                 f"no width works: the main verdict not_absorbable by result {th!r} was re-derived, its argument never "
                 f"uses the width, and the skip's share exceeds τ + the allowance at {main.widest} units (the widest answered)",
                 f"main {main.verdict!r} by {main.theorem!r}; recorded value {value!r}, bounds {lo!r}..{up!r}")
        return
    _must(ctx, exists in (True, None) and (exists is True) == (up is not None), w,
             "the minimal width exists exactly when a width with a witness (upper) is recorded", f"exists {exists!r}, upper {up!r}")
    _must(ctx, th not in EVERY_WIDTH and th in ("canonical-form", "skeleton", "none", main.theorem), w,
             "the minimal-width record cites a result that bounds it (not a width-independent impossibility)", f"theorem {th!r}")
    cited = {c.get("theorem") for c in (rec.get("lower_claim"), rec.get("upper_claim")) if isinstance(c, dict)}
    whole = (lo is None or lo == 1 or "lower_claim" in rec) and (up is None or "upper_claim" in rec)  # (else: not re-checked)
    _must(ctx, not (cited and whole) or th in cited | {"none", "canonical-form"}, w, "the minimal-width record cites the result of one of its bounds' "
          "records (each re-derived below), the canonical form that computed it, or none", f"theorem {th!r}; its records cite {sorted(map(str, cited))}")
    if th == "canonical-form" and main.theorem != "canonical-form" and "canonical-form" not in cited:
        _form_applies(ctx, w, block)  # (cited as the procedure that computed it: it covers f)
    _must(ctx, value is None or th != "none", w, "a minimal width stated as a value cites the result that gives it (not none)", f"value {value!r}")
    if value is not None:
        _require(ctx, value == lo == up, w, "the minimal width is both bounds", f"value {value!r}, bounds {lo!r}..{up!r}")
    if up is not None:
        up = _whole(ctx, w, up, "the upper bound", 1)
        if "upper_claim" in rec:
            check_claim(ctx, w + f" (upper bound {up})", rec["upper_claim"], block, main, asked=up, want="absorbable")
        else:
            ctx.report.unchecked(w, f"the minimal width is at most {up}", "no width record at the upper bound")
    if lo is not None:
        lo = _whole(ctx, w, lo, "the lower bound", 1)
        _must(ctx, up is None or lo <= up, w, "the lower bound is at most the upper one", f"{lo} > {up}")
        if lo > 1 and "lower_claim" in rec:
            check_claim(ctx, w + f" (lower bound {lo})", rec["lower_claim"], block, main, asked=lo - 1, want="not_absorbable")
        elif lo > 1:
            ctx.report.unchecked(w, f"the minimal width is at least {lo}", f"no width record at {lo - 1}")
    _must(ctx, ("lower_claim" not in rec or isinstance(lo, int) and lo > 1) and ("upper_claim" not in rec or up is not None), w,
          "a bound's record comes with that bound (a lower one above 1)", f"bounds {lo!r}..{up!r}")
    ctx.report.ok(w, "the minimal width " + (f"is {value}" if value is not None else
                                             f"lies in [{lo or 1}, {up if up is not None else '∞'}]") + " (its records checked)")


def check_widths(ctx: _Ctx, b: dict[str, Any], block: Block, verdict: str | None, witness: Block | None) -> None:
    """Re-derive the block's width records (``"width"``, ``"min_width"``), after its main claims."""
    if not isinstance(b, dict) or ("width" not in b and "min_width" not in b):
        return
    name = _where(b)
    if verdict is None:  # the main claims failed (already reported): nothing here can lean on them
        ctx.report.unchecked(f"{name}: width", "the width answers", "the block's main claims did not check")
        return
    main = _Main(b, block, verdict, witness, bool(ctx.once.get("class_biases")))
    for key, w, fn in (("width", f"{name}: width", check_claim), ("min_width", f"{name}: min width", _check_min)):
        if key not in b:
            continue
        try:
            fn(ctx, w, b[key], block, main)
        except _Reject:
            pass
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, AssertionError, ArithmeticError) as exc:  # a malformed record
            ctx.report.fail(w, "the width record is well-formed", f"{type(exc).__name__}: {exc}")
