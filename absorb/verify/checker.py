"""Independent checker of proof certificates (``absorb verify CERT.json [MODEL]``).

It re-derives every claim of a certificate (:mod:`absorb.certificate`) from the
certificate's numbers and the weights themselves. To be independent of the route that
produced the verdict it imports **nothing** from ``absorb.engine``, ``absorb.search``,
``absorb.symbolic`` or ``absorb.certificate`` (a test enforces this); it uses numpy,
``fractions``, sympy, ``hashlib`` and ``json``, plus ``absorb.model``/``absorb.io`` to load
the weights and evaluate ``f``. Every sympy argument and every bound is re-done here from
the mathematics (docs/mathematics.md §2–5), not copied.

What is re-derived, per block:

* **identity** — the SHA-256 of every weight array (float64 little-endian C order) and the
  embedded small arrays; shapes, kind, the activation's sympy expression.
* **the theorem fits the activation** — by pieces (``_pieces``, ``_symbolic``): exact
  evaluation of σ at 0 and at every break point of Max/Min/Abs/Piecewise/0**…, and exact
  simplification of the switch-free formula on each open piece: homogeneity degree, ``g(0)``
  and the one-sided difference quotients at 0, the flip identity ``σ(z) − σ(−z) = c z``
  (``g(z) + g(−z) = c`` gated), continuity and finite limits at ±∞, and which σ it is.
* **hypotheses on the weights** — ``M ≠ 0`` and bias-freeness exactly; invertibility of
  ``M`` (``H_res`` for Hyper-Connections) by exact rational elimination when d ≤ 24, else an
  SVD with a rounding margin; nonzero rows/columns exactly; non-collinearity by a float
  cosine screen whose margin (1e-6) dwarfs its rounding error, with near pairs decided
  exactly in rationals.
* **witnesses** — ``‖D_S U_S + M/c‖_F`` exactly in rationals when ``|S|·d² ≤ 2·10⁵``,
  else in float64 with a rigorous rounding bound; the residual-free block rebuilt here
  (from ``S``, or the exact canonical-form construction) and evaluated against ``f`` on
  fresh random inputs and on inputs exactly on the kink/gate hyperplanes, with a derived
  error bound; trivial (M = 0) witnesses field by field.
* **results beyond the paper** (``_beyond``) — the asymptotic skeleton: σ finite on R and
  its slopes L± re-derived on the outermost pieces (s = ±1/h, h → 0+), a, b, c∞ = a + 2b
  compared with the record, then the recorded case: nondegenerate weights re-derived plus the
  infeasibility of the target −M/c∞; c∞ = 0; a = b = 0; or the canonical form of the bias-free
  ReLU skeleton. Parity (σ even, bias-free), exponential σ (A, β, C derived here and the
  identity by pieces), bounded σ (continuity not needed: an interval enclosure or finite
  one-sided limits on every piece), linear σ = c·z (c = σ(1), rank and witness with c).
* **the class** — every verdict is about bias-free residual-free blocks or blocks with any
  biases (the entry's ``class``); a bias-free-only argument (degree, linearization, parity,
  result 5's necessity, the canonical form) proving ``not_absorbable`` for the class with
  biases is rejected.
* **impossibility** — dual certificates ``Y = A Bᵀ`` through
  ``absorb.verify.dual_bound.check_dual_bound``, else exactly in rationals for small sizes;
  exhaustive enumeration re-done here for n ≤ 16, the checker's own meet-in-the-middle
  beyond (``_mitm``); the canonical form and every choice (B, δ) in exact rationals
  (``_canonical``); rank bounds of linear blocks (exact rank in rationals for small d); the
  skip product of a stack.

Anything that cannot be re-derived (too large, a search certificate of an unknown kind) is
reported as *not re-checked*, and such a certificate is not accepted: ``verify`` exits 4
("not fully checked"), 1 when a claim failed.

Layout: this module holds the per-block dispatch (``THEOREM_CHECKS``, keyed by theorem id)
and the certificate-level checks; the pieces live in ``_report`` (findings), ``_load``
(reading the file), ``_numerics`` (γ, rationals, hashes), ``_pieces`` and ``_symbolic``
(facts about σ), ``_weights`` (hashes, hypotheses, residuals, evaluation), ``_infeasible``
and ``_mitm`` (impossibility re-checks), ``_theorems``, ``_beyond`` and ``_canonical`` (the
per-theorem checks). The names used by callers are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block, Stack
from absorb.verify import DEFAULT_SEED
from absorb.verify._beyond import (
    BIAS_FREE_ONLY,
    check_bounded,
    check_linear,
    check_linear_numbers,
    check_skeleton,
    claimed_biases,
    class_statement,
)
from absorb.verify._canonical import check_canonical_form
from absorb.verify._citations import HYPOTHESIS_LISTS, argument_fields, citation_ok, properties_used
from absorb.verify._compose import check_composition
from absorb.verify._depth import check_skip_product
from absorb.verify._exponential import check_exponential
from absorb.verify._fitted import near_fitted
from absorb.verify._gated import check_gated_skeleton
from absorb.verify._infeasible import (  # noqa: F401
    ENUM_MAX_ENTRIES,
    ENUM_MAX_N,
    _array,
    _check_infeasible,
    _dual_relative,
    _enumerate_lower_bound,
    _exact_dual_bound,
)
from absorb.verify._load import (  # noqa: F401
    SCHEMA,
    SEARCH_KINDS,
    SUPPORTED_VERSIONS,
    cut_records,
    load_certificate,
    missing_fields,
    model_blocks,
    resolve_model_path,
    structures,
    unknown_fields,
)
from absorb.verify._numerics import HASH_CONVENTION, _float_skip_product, _gamma, _parse_number, sha256_f64
from absorb.verify._numerics import check_array_record as _check_array_record
from absorb.verify._parity import check_parity
from absorb.verify._plane import check_kinks, check_range, check_rank
from absorb.verify._read import audited
from absorb.verify._relu2_linear import check_relu2_linear
from absorb.verify._report import Finding, Report, _Ctx, _must, _Reject, _require, _where  # noqa: F401
from absorb.verify._resolution import float_resolution
from absorb.verify._sampled import sampled_near, spare_units
from absorb.verify._skeleton2 import check_skeleton2
from absorb.verify._symbolic import (  # noqa: F401
    _gate_derivative_at_zero,
    _variable,
    _zero,
    flip_constant,
    homogeneous_of_degree,
    is_bounded,
    is_identity,
    is_relu_or_gelu,
)
from absorb.verify._theorems import (
    _act,
    _check_degree,
    _check_index_set,
    _check_layer_flat_value,
    _check_linearization,
    _check_nonzero_entry,
    _check_recorded_hypotheses,
    _check_witness_numbers,
    check_composed_numbers,
    check_trivial_witness,
    normalised_value_block,
    rescaled_block,
)
from absorb.verify._tolerance import contradiction, proved_within
from absorb.verify._weights import (  # noqa: F401
    COLLINEAR_SCREEN,
    EVAL_INPUTS,
    EVAL_SCALES,
    FULL_GRAM_MAX,
    _bias_free,
    _block_arrays,
    _check_identity,
    _collinear_pairs,
    _evaluate,
    _flip_block,
    _invertible,
    _residual,
    _round_bound,
    _skip_nonzero,
    _value_expr,
)
from absorb.verify._width import check_widths

_Outcome = tuple[str, "Block | None", float]
"""What a per-theorem check returns: the verdict its evidence supports, the witness rebuilt
here (absorbable) and the allowed linear error ``‖x‖₂·allowed`` of its evaluation against f
(``|x|_∞·allowed`` when it is an :class:`~absorb.verify._weights.InfNorm`: a flip's)."""


def _th_trivial(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> _Outcome:
    _require(ctx, block.skip is not None and not np.any(block.skip), w, "every entry of M is zero: f = B is residual-free")
    return "absorbable", check_trivial_witness(ctx, w, b, block), 0.0


def _th_degree(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> _Outcome:
    _check_degree(ctx, w, b, block)
    return "not_absorbable", None, 0.0


def _th_linearization(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> _Outcome:
    _check_linearization(ctx, w, b, block)
    return "not_absorbable", None, 0.0


def _th_none(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> _Outcome:
    return "unknown", None, 0.0


THEOREM_CHECKS: dict[str, Callable[[_Ctx, str, dict[str, Any], Block], _Outcome]] = {
    "trivial": _th_trivial,
    "degree": _th_degree,
    "linearization": _th_linearization,
    "bounded": check_bounded,
    "linear": check_linear,
    "parity": check_parity,
    "exponential": check_exponential,
    "skeleton": check_skeleton,
    "skeleton2": check_skeleton2,
    "relu2-linear": check_relu2_linear,
    "gated-skeleton": check_gated_skeleton,
    "index-set": _check_index_set,
    "canonical-form": check_canonical_form,
    "none": _th_none,
}
"""The per-theorem checks, keyed by the certificate's theorem id. A new theorem is one entry:
a function that re-derives its claims (``_require`` each, raising on the first failure) and
returns what its evidence supports."""
_BLOCK_THEOREMS = set(THEOREM_CHECKS)
SCREENED_TOL_MAX = 1e-4  # (past it, a not_absorbable of the routes in _FITTED needs the robust bound)
_FITTED = frozenset({"index-set", "skeleton", "canonical-form", "skeleton2", "relu2-linear", "gated-skeleton"})
"""The routes whose not_absorbable is screened by a block fitted near f's units (where no robust bound covers τ)."""
_QUADRATIC = frozenset({"skeleton2", "relu2-linear", "gated-skeleton"})  # (f may grow like |x|²: one spare unit per rank)


def check_block(ctx: _Ctx, b: dict[str, Any], block: Block) -> tuple[str | None, Block | None]:
    """Re-derive one block's claims. Returns (the verdict re-derived, or None when a claim
    failed; the witness block rebuilt here for absorbable blocks)."""
    w = _where(b)
    ctx.once.clear()
    try:
        _check_identity(ctx, b, block)
        model, block = block, block if b.get("input_scale") is None else rescaled_block(ctx, w, b["input_scale"], block)
        ctx.once["frame"] = block  # (F(x) = 2^-k·f(2^k·x) where the entry rescales: the entry's and widths' records are F's)
        orig, exact, w_exact = block, True, True
        if b.get("value_normalisation") is not None:  # h(z) = c·z + k: checked as the block with h(z) = z, rebuilt here
            block, exact, w_exact = normalised_value_block(ctx, w, b["value_normalisation"], orig)
        _require(ctx, b.get("tolerance") == ctx.tol, w, "the block's tolerance is the certificate's")
        th = (b.get("theorem") or {}).get("id")
        verdict = b.get("verdict")
        _require(ctx, th in _BLOCK_THEOREMS, w, f"the theorem id {th!r} is known")
        _cited(ctx, w, b.get("theorem"), value=_value_expr(block) is not None)
        _require(ctx, verdict in ("absorbable", "not_absorbable", "unknown"), w, f"the verdict {verdict!r} is one of three")
        _check_recorded_hypotheses(ctx, w, b, block)
        # the other results assume a linear value branch h(z) = z
        if _value_expr(block) is not None:
            _require(ctx, th in ("trivial", "bounded", "degree", "linearization", "none"), w,
                     f"result {th!r} applies to this block (it has a value activation h, which only boundedness, the degree and "
                     "the linearization arguments cover)")
        biases = claimed_biases(ctx, w, b, block)
        ctx.once["class_biases"] = biases
        supported, witness, allowed = THEOREM_CHECKS[th](ctx, w, b, block)
        own = witness is not None and ctx.once.get("value_flip") is witness  # (an index set's flip built in f's own class)
        if orig is not block:  # (a gated skeleton's step case, or its rank / Gram route, reads no bias)
            arg = b.get("argument") or {}
            no_bias = th == "gated-skeleton" and (arg.get("case") == "step" or arg.get("route") in ("rank", "gram"))
            _require(ctx, exact or (w_exact and no_bias) or supported != "not_absorbable", w, "a normalised block that proves "
                     "not_absorbable is f exactly (or differs in biases its argument does not read)",
                     "c·W_up or c·b_up + k rounds in float64")
            _require(ctx, exact or own or supported != "absorbable", w, "a normalised block's witness is one for f: the block is f "
                     "exactly (a rounding of c·W_up or c·b_up + k, times the gates, grows with |x| past any bound of the "
                     "witness's form)", "c·W_up or c·b_up + k rounds in float64")
        if supported == "not_absorbable" and th in BIAS_FREE_ONLY:
            _require(ctx, not biases, w, f"result {th!r} covers bias-free residual-free blocks only, and the verdict is about those",
                     "the certificate's class allows biases")
        if verdict == "unknown":
            _require(ctx, supported != "not_absorbable" and th != "trivial" and (supported == "unknown" or th == "linear"), w,
                     "the verdict 'unknown' is what the evidence supports",
                     f"the evidence for result {th!r} proves {supported!r}: the verdict was changed")
        else:
            _require(ctx, verdict == supported, w, f"the verdict {verdict!r} follows from result {th!r}",
                     f"the evidence supports {supported!r}")
        _check_records(ctx, w, b, block, th, witness, orig, model)
        near = contradiction(orig, ctx.tol, biases=bool(biases)) if verdict == "not_absorbable" else None
        _must(ctx, near is None, w, "no residual-free block found by bound is within the tolerance of f", f"{near}")
        def screens(t: float) -> str | None:
            return (sampled_near(orig, t, ctx.seed) or contradiction(orig, t, estimated=True, biases=bool(biases))
                    or spare_units(orig, t, ctx.seed, th in _QUADRATIC and (bool(biases) or th == "relu2-linear"), bool(biases))
                    or wide(t))

        def wide(t: float) -> str | None:  # (at 4τ: a block fitted near f's units, where the rule past 1e-4 leaves it)
            if t <= ctx.tol or ctx.tol > SCREENED_TOL_MAX:
                return None
            rec = b.get("search") if th in ("index-set", "skeleton") and isinstance(b.get("search"), dict) else {}
            dead = np.any(np.all(orig.W_up == 0, axis=1) | np.all(orig.W_down == 0, axis=0))  # (a free slot: no gap)
            bound = rec.get("bound") if rec.get("S") is None and not dead else None  # (re-derived above; what flips leave)
            gap = bound * float(np.linalg.norm(orig.M)) * (1 - 1e-6) if isinstance(bound, float) and bound > 0 else 0.0
            gap = None if th not in ("index-set", "skeleton", "canonical-form") else gap if np.isfinite(gap) else 0.0
            return near_fitted(orig, t, ctx.seed, bool(biases), gap)

        if verdict == "not_absorbable" and th in _FITTED and not ctx.once.get("robust") and ctx.tol > SCREENED_TOL_MAX:
            ctx.report.unchecked(w, "past τ = 1e-4 this route's not_absorbable covers every block within τ (the robust skeleton "
                                 "bound), not only blocks equal to f", "the robust bound was not re-derived here")
        if verdict == "not_absorbable" and not proved_within(th, b, orig, ctx.tol) and (near := (th != "bounded" and float_resolution(orig, ctx.tol, ctx.seed)) or screens(ctx.tol)
                                            or (th in _FITTED and not ctx.once.get("robust") and 4 * ctx.tol < 0.5
                                                and (wide if th in _QUADRATIC else screens)(4 * ctx.tol))):
            ctx.report.unchecked(w, "the exact not_absorbable agrees with the tolerance (the screens' candidates are estimates: "
                                 "at 4× the tolerance too, with a block fitted near f's units)", near)
        if verdict == "absorbable" and witness is not None:
            for f in (block,) if exact else (orig,) if own else (block, orig):  # (against f itself too where a normalisation rounds)
                ok, worst, m = _evaluate(f, witness, [f], [witness], f.d, seed=ctx.seed, allowed_lin=allowed)
                _require(ctx, ok, w, f"the residual-free block rebuilt here equals f{'' if f is orig else ' (as rebuilt for the check)'} "
                         f"on {m} inputs: fresh random ones and points exactly on the kink/gate hyperplanes",
                         f"max relative difference {worst:.3g}")
        return verdict, witness
    except _Reject:
        return None, None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:  # a malformed (or forged) document
        ctx.report.fail(w, "the certificate is well-formed", f"{type(exc).__name__}: {exc}")
        return None, None


def _cited(ctx: _Ctx, w: str, record: Any, value: bool = False) -> None:
    """The theorem record is the cited result's own text (:mod:`absorb.verify._citations`)."""
    ok, why = citation_ok(record, value)
    _must(ctx, ok, w, "the cited theorem's record (title, source, statement, needs, classes) is that result's own", why)


def arg_even_ok(b: dict[str, Any]) -> bool:
    return (b.get("argument") or {}).get("even", True) is True


def _check_recorded_properties(ctx: _Ctx, w: str, b: dict[str, Any], th: str, value: bool = False) -> None:
    """Each recorded property of σ is one the theorem's check re-derived (proved) for this verdict
    (``value``: the block has a value activation h)."""
    props = b.get("properties") or []
    _must(ctx, isinstance(props, list), w, "the recorded properties are a list")
    used = properties_used(th, b.get("verdict"), b.get("argument") or {}, value)
    for p in props:
        ok = (isinstance(p, dict) and p.get("name") in used and p.get("status") == "proved"
              and set(p) <= {"name", "status", "statement", "steps"})
        _must(ctx, ok, w, f"each recorded property of σ is one result {th!r} uses for this verdict, proved (re-derived by its check)",
              f"recorded {p.get('name') if isinstance(p, dict) else p!r}: {p.get('status') if isinstance(p, dict) else ''}")


def _check_records(ctx: _Ctx, w: str, b: dict[str, Any], block: Block, th: str, witness: Block | None,
                   orig: Block, model: Block) -> None:
    """The recorded numbers no theorem check reads are re-derived here too: every array record
    (the weights' — ``model``'s, the file's block — and the witness block's), the nonzero entry of M, a search
    record (only the theorems that use one may carry it; a found S and its residual are the witness's). ``orig``:
    f as checked (rescaled where the entry says so), ``block`` its normalisation (an affine value activation)."""
    arrays = _block_arrays(model)
    n_rec = len(b.get("weights") or {})
    for k, rec in (b.get("weights") or {}).items():
        _check_array_record(ctx, w, rec, arrays[k], k)
    wit = b.get("witness") or {}
    near = isinstance(b.get("canonical_form"), dict) and "near" in b["canonical_form"]  # (this checker builds that block itself)
    _must(ctx, not isinstance(wit, dict) or not wit or near or "block" in wit, w, "the witness record holds its block's arrays")
    recs = (wit.get("block") or {}).get("weights")
    if recs is not None:
        _must(ctx, witness is not None, w, "the recorded witness block is one the checker rebuilt")
        mine = _block_arrays(witness)
        _must(ctx, isinstance(recs, dict) and set(recs) == set(mine), w, "the witness block lists the rebuilt block's arrays")
        for k, rec in recs.items():
            _must(ctx, rec.get("sha256") == sha256_f64(mine[k]), w, f"the witness's {k}' is the rebuilt one (SHA-256)")
            _check_array_record(ctx, w, rec, mine[k], f"the witness's {k}'")
            n_rec += 1
    ctx.report.ok(w, f"the recorded shape, Frobenius norm, max |entry| and values of all {n_rec} arrays are re-derived")
    # (every recorded hypothesis, holding or failing: re-derived by _check_recorded_hypotheses)
    arg = b.get("argument") or {}
    if "target" in arg:
        labels = {"index-set": {"-M/c"}, "skeleton": {"-M/c_inf", None}, "gated-skeleton": {"-M/L_plus"}}
        _must(ctx, arg["target"] in labels.get(th, set()), w, f"the recorded target is result {th!r}'s",
              f"recorded {arg['target']!r}")
    _check_recorded_properties(ctx, w, b, th, value=_value_expr(block) is not None)
    class_statement(ctx, w, b, orig)
    _must(ctx, b.get("activation") == orig.activation_name, w, "the recorded activation name is the model's",
          f"recorded {b.get('activation')!r}, model {orig.activation_name!r}")
    extra_arg = sorted(set(arg) - argument_fields(th, arg, _value_expr(block) is not None)) if isinstance(arg, dict) else []
    if extra_arg:
        ctx.report.unchecked(w, f"every field of result {th!r}'s argument is one its check reads", f"not re-checked: {', '.join(extra_arg)}")
    for key in ("nondegeneracy_hypotheses", "necessity_hypotheses"):  # (the lists the theorems' checks re-derive)
        if key in arg:
            _must(ctx, tuple(arg[key]) in HYPOTHESIS_LISTS if isinstance(arg[key], list) else False, w,
                  f"the recorded {key.replace('_', ' ')} are the result's", f"recorded {arg[key]!r}")
    skip = b.get("skip")
    kind = "hyper_connection" if block.hc is not None else "identity" if block.skip is None else "matrix"
    _must(ctx, isinstance(skip, dict) and skip.get("kind") == kind and set(skip) <= {"kind", "streams"}
          and (kind != "hyper_connection" or skip.get("streams") == block.hc.s), w,
          f"the recorded skip is the model's ({kind})", f"recorded {skip!r}")
    if th == "parity":
        _must(ctx, arg_even_ok(b), w, "the parity argument records σ even (re-derived by the parity check)")
    if th == "canonical-form" and b.get("verdict") == "absorbable" and "near" not in (b.get("canonical_form") or {}):
        _must(ctx, wit.get("exact") in (None, True) and wit.get("residual") is None and wit.get("S") is None, w,
              "the canonical-form witness is recorded as exact (its canonical form is f's), with no index-set residual or S")
    if b.get("verdict") == "absorbable" and wit:
        _check_witness_numbers(ctx, w, wit, block.n)
    if "c" in wit:
        rec_c, arg_c = _parse_number(wit.get("c")), _parse_number(arg.get("c"))
        _must(ctx, rec_c is not None and arg_c is not None and rec_c == arg_c, w,
                 "the witness's flip constant is the argument's (re-derived)", f"witness {wit.get('c')!r}")
    if arg.get("M_nonzero_entry") is not None and th not in ("degree", "linearization", "skeleton"):
        _check_nonzero_entry(ctx, w, arg, block.M)  # (those three theorems' checks read it themselves)
    if "rank_limit" in arg:
        _require(ctx, arg["rank_limit"] == block.n, w, f"the rank limit is the width n = {block.n}", f"recorded {arg['rank_limit']!r}")
    if th == "linear" and (arg.get("singular_values") is not None or arg.get("sigma_lower_bound") is not None):
        check_linear_numbers(ctx, w, arg, block)
    search = b.get("search")
    if search is None:
        return
    case = arg.get("case")
    uses = (th == "index-set" or th == "skeleton" and case == "nondegenerate" or th == "gated-skeleton" and case == "step"
            or th == "skeleton2" and case in ("index-set", "linear")
            or th == "gated-skeleton" and arg.get("route") in ("index-set", "linear"))
    if b.get("verdict") == "unknown":  # (it claims nothing, and its search's numbers are not re-derived here)
        ctx.report.unchecked(w, "the index-set search recorded next to an unknown verdict",
                             "an unknown verdict rests on no search; its recorded bound and dual matrix are not re-checked")
        return
    _must(ctx, uses, w, f"a search record is part of result {th!r}'s argument",
             "the certificate records an index-set search its theorem does not use (not re-checked)")
    if b.get("verdict") == "absorbable":
        _must(ctx, search.get("status") == "found" and search.get("bound") is None, w,
              "an absorbable verdict's search record found its set (no infeasibility bound)",
              f"status {search.get('status')!r}, bound {search.get('bound')!r}")
    sc = search.get("certificate") or {}
    known = {"dual": {"Y", "check"}, "dual-low-rank": {"A", "B", "rank", "tol", "bound_abs", "bound_rel", "iterations"}}
    extra = sorted(set(sc) - {"kind", "portfolio"} - known.get(str(sc.get("kind")), set())) if isinstance(sc, dict) else []
    if isinstance(sc, dict) and sc.get("kind") not in (None, *known, *SEARCH_KINDS):  # a label no route reads: not a claim checked
        extra.append(f"kind {sc.get('kind')!r}")
    if extra:
        ctx.report.unchecked(w, "every field of the search certificate is re-derived", f"not re-checked: {', '.join(extra)}")
    if search.get("S") is not None or search.get("residual") is not None:
        _must(ctx, search.get("S") is not None and sorted(search["S"]) == sorted(wit.get("S") or [None])
                 and search.get("residual") == wit.get("residual"), w,
                 "the search's index set and residual are the witness's (re-derived)",
                 f"search S = {search.get('S')!r}, residual {search.get('residual')!r}")


def verify_certificate(cert: dict[str, Any], model: Block | Stack | Sequence[Block], *, seed: int = DEFAULT_SEED) -> Report:
    """Re-derive every claim of ``cert`` (a parsed certificate) on ``model``; see the module doc. A recorded field that
    no check read (one of another case's, route's or verdict's) leaves it not fully checked (:func:`._read.audited`)."""
    return audited(_verify, cert, model, seed)


def _verify(cert: dict[str, Any], model: Block | Stack | Sequence[Block], seed: int) -> Report:
    report = Report()
    if cert.get("schema") != SCHEMA or cert.get("schema_version") not in SUPPORTED_VERSIONS:
        report.fail("certificate", f"the document is an {SCHEMA} of a supported version {SUPPORTED_VERSIONS}",
                    f"schema {cert.get('schema')!r}, version {cert.get('schema_version')!r}")
        return report
    tol = cert.get("parameters", {}).get("tolerance")
    structure = cert.get("input", {}).get("structure", "block")
    kinds = structures(model)
    if structure not in kinds:
        report.fail("certificate", f"the recorded structure is the model's ({' or '.join(kinds)}): the overall verdict's "
                    "rule (one block, a composition, a collection) follows from what the model is", f"recorded {structure!r}")
        return report
    if cert.get("input", {}).get("hash_convention") != HASH_CONVENTION:
        report.fail("certificate", "the arrays' hashes follow the convention the certificate names", f"this checker's is {HASH_CONVENTION!r}")
    blocks = model_blocks(model, structure)
    entries = cert["blocks"]
    if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not 0 < tol < 1:
        report.fail("certificate", "the tolerance is a number strictly between 0 and 1 (at 1 or more dropping the skip "
                    "would pass as absorption)", f"got {tol!r}")
        return report
    ctx = _Ctx(report, float(tol), seed)
    for where, extra in unknown_fields(cert):
        report.unchecked(where, "every field of the certificate's record is one of its format's", f"not re-checked: {', '.join(extra)}")
    for where, gone in missing_fields(cert):
        report.fail(where, "the record has every field its format writes", f"missing: {', '.join(gone)}")
    for where, gone in cut_records(cert):
        report.unchecked(where, "the record has every field the producer writes in it", f"cut: {', '.join(gone)}")
    if len(entries) != len(blocks) or cert.get("input", {}).get("blocks") != len(entries):
        report.fail("certificate", "the certificate covers the model's blocks", f"{len(entries)} blocks certified "
                    f"({cert.get('input', {}).get('blocks')!r} recorded), model has {len(blocks)}")
        return report
    if structure == "stack" and len(entries) > 1 and any(isinstance(b, dict) and "input_scale" in b for b in entries):
        return report.fail("certificate", "no block of a stack records an input rescaling (their witnesses compose)") or report
    results = []
    for b, blk in zip(entries, blocks):
        verdict, witness = check_block(ctx, b, blk)
        check_widths(ctx, b, ctx.once.get("frame", blk), verdict, witness)  # (absorb check --width/--min-width: docs/min-width.md)
        results.append((verdict, None if structure == "collection" else witness))  # (stacks need the witnesses)
        del blk, witness
    verdicts = [v for v, _ in results]
    if any(v is None for v in verdicts):
        return report
    top, th = cert.get("verdict"), (cert.get("theorem") or {}).get("id")
    try:
        _check_overall(ctx, cert, top, th, structure, blocks, entries, verdicts, [wb for _, wb in results])
    except _Reject:
        pass
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        report.fail("certificate", "the certificate is well-formed", f"{type(exc).__name__}: {exc}")
    return report


def _check_overall(ctx: _Ctx, cert: dict[str, Any], top: Any, th: Any, structure: str, blocks: Any,
                   entries: list[dict[str, Any]], verdicts: list[str | None], witnesses: list[Block | None]) -> None:
    """The certificate's header (class, overall verdict ``top`` and theorem ``th``) follows from its blocks."""
    if not (len(entries) == 1 and cert.get("theorem") == entries[0].get("theorem")):  # (one block: its own record, checked)
        _cited(ctx, "certificate", cert.get("theorem"))
    cls = cert.get("class")
    if cls is not None:
        blocks_biased = any(bool((b.get("class") or {}).get("biases")) for b in entries)
        word = "with any biases (b_up, b_down)" if blocks_biased else "bias-free"
        _require(ctx, isinstance(cls, dict) and cls.get("biases") is blocks_biased and set(cls) <= {"biases", "statement"}
                 and cls.get("statement") in (None, f"residual-free blocks of each block's kind, activation and width, {word}"),
                 "certificate", "the certificate's class is its blocks' (biases allowed when any block's class allows them), "
                 "in the words its fields give", f"header {cls!r}, blocks {'with' if blocks_biased else 'without'} biases")
    if cert.get("summary") is not None:  # (a collection's counts of its blocks' verdicts; nothing else records one)
        counts = {v: sum(x == v for x in verdicts) for v in ("absorbable", "not_absorbable", "unknown")}
        _must(ctx, structure == "collection" and cert["summary"] == counts, "certificate",
              "the summary counts the blocks' verdicts", f"recorded {cert['summary']!r}, blocks give {counts}")
    if structure == "block" or len(blocks) == 1 and structure != "collection":
        _require(ctx, top == verdicts[0] and cert.get("theorem") == entries[0].get("theorem"), "certificate",
                 "the overall verdict and theorem are the block's (its own theorem record)", f"overall {top!r}/{th!r}, block {verdicts[0]!r}")
    elif structure == "collection":
        one = len(entries) == 1 and top != "unknown"  # (one decided block cites its theorem; else no single result)
        _require(ctx, cert.get("theorem") == entries[0].get("theorem") if one else th == "none", "certificate",
                 "a collection cites its one block's theorem, or none (its verdict follows from the blocks')", f"theorem {th!r}")
        want = ("absorbable" if all(v == "absorbable" for v in verdicts) else
                "not_absorbable" if any(v == "not_absorbable" for v in verdicts) else "unknown")
        _require(ctx, top == want, "certificate", "the overall verdict follows from the blocks' (collection rule)",
                 f"overall {top!r}, blocks give {want!r}")
    else:
        _check_stack(ctx, cert, blocks, entries, verdicts, witnesses)


def _check_stack(ctx: _Ctx, cert: dict[str, Any], blocks: list[Block], entries: list[dict[str, Any]], verdicts: list[str | None],
                 witnesses: list[Block | None]) -> None:
    top, th = cert.get("verdict"), (cert.get("theorem") or {}).get("id")
    w = "stack"
    st = cert.get("stack") or {}
    _require(ctx, st.get("layers") == len(blocks)
             and set(st) <= {"layers", "composition_witness", "skip_product_nonzero_entry", "range_certificate",
                             "kink_certificate"}, w,
             f"the stack record names its {len(blocks)} layers and holds only fields re-derived here",
             f"recorded layers {st.get('layers')!r}, fields {sorted(st)}")
    near = next((f"{b.name}: {c}" for b in blocks if (c := contradiction(b, ctx.tol))), None) if top == "not_absorbable" else None
    _must(ctx, near is None, w, "no layer is within the tolerance of a residual-free block found by bound", f"{near}")
    if top == "not_absorbable" and (near := next((f"{b.name}: {c}" for b in blocks if (c := contradiction(b, ctx.tol, estimated=True)
                                                                                    or contradiction(b, min(4 * ctx.tol, 0.5), estimated=True))), None)):
        ctx.report.unchecked(w, "the exact stack argument agrees with the tolerance", near)
    if top == "absorbable":
        worst = _check_stack_composition(ctx, w, th, blocks, verdicts, witnesses)
        if isinstance(st.get("composition_witness"), dict):
            check_composed_numbers(ctx, w, st["composition_witness"], max(b.n for b in blocks), worst)
    elif top == "not_absorbable" and th == "range":  # beyond: the range argument (absorb/verify/_plane.py)
        check_range(ctx, w, blocks, st.get("range_certificate"))
    elif top == "not_absorbable" and th == "rank":  # beyond: the first-layer rank argument (absorb/verify/_plane.py)
        check_rank(ctx, w, blocks)
    elif top == "not_absorbable" and th == "kink-count":  # beyond: the kink count in the plane (absorb/verify/_plane.py)
        check_kinks(ctx, w, blocks, st.get("kink_certificate"), (cert.get("class") or {}).get("biases"))
    elif top == "not_absorbable":
        _require(ctx, th == "depth", w, "a stack is proved not absorbable by the depth result", f"theorem {th!r}")
        for b, blk in zip(entries, blocks):
            _check_layer_flat(ctx, b, blk)
        check_skip_product(ctx, w, blocks)
    else:
        _require(ctx, top == "unknown", w, f"the verdict {top!r} is one of three")
        # an unknown stack cites no result (a result's name with 'unknown' would hide the claim it
        # supports: a weakened verdict is a changed record, not a more modest one)
        _require(ctx, th in (None, "none"), w, "an unknown stack cites no result", f"theorem {th!r}")
    if st.get("skip_product_nonzero_entry") is not None:
        _check_skip_product_entry(ctx, w, st["skip_product_nonzero_entry"], blocks)


def _check_stack_composition(ctx: _Ctx, w: str, th: Any, blocks: list[Block], verdicts: list[str | None],
                             witnesses: list[Block | None]) -> float:
    """absorbable: every block is, and the composed witnesses equal F; the largest relative difference found."""
    _require(ctx, th == "composition" and all(v == "absorbable" for v in verdicts) and all(x is not None for x in witnesses), w,
             "every block is absorbable, so the stack is (composition)")
    st = Stack(tuple(blocks))
    G = Stack(tuple(witnesses))  # type: ignore[arg-type]
    allowed = ctx.tol * sum(float(np.linalg.norm(b.M)) for b in blocks) * 10
    ok, worst, m = _evaluate(st, G, blocks, list(witnesses), blocks[0].d, seed=ctx.seed, allowed_lin=allowed)  # type: ignore[arg-type]
    _require(ctx, ok, w, f"the composed witnesses equal F on {m} inputs: fresh random ones and points exactly on the first layer's kink/gate hyperplanes", f"max relative difference {worst:.3g}")
    check_composition(ctx, w, blocks, list(witnesses))  # type: ignore[arg-type]
    return float(worst)


def _check_skip_product_entry(ctx: _Ctx, w: str, e: Any, blocks: list[Block]) -> None:
    """The recorded entry P[i, j] of P = M_L⋯M_1 (a float product) is P's: the float product here is
    within γ_{L·d}·(|M_L|⋯|M_1|)[i, j] of the exact one, and so is the producer's; both bounds together,
    and nonzero."""
    d = blocks[0].d
    i, j = (e.get("row"), e.get("col")) if isinstance(e, dict) else (None, None)
    _require(ctx, all(isinstance(v, int) and not isinstance(v, bool) for v in (i, j)) and 0 <= i < d and 0 <= j < d, w,  # type: ignore[operator]
             "the recorded entry of M_L⋯M_1 is an entry")
    Pm, Pa, under = _float_skip_product(blocks)
    err = 2 * _gamma(len(blocks) * (d + 1)) * float(Pa[i, j]) + float(under[i, j])
    v = e.get("value")
    _require(ctx, isinstance(v, float) and v != 0 and abs(v - float(Pm[i, j])) <= 2 * err and abs(v) > 2 * err, w,
             f"the recorded entry P[{i},{j}] = {v!r} of M_L⋯M_1 is P's and nonzero (float64, rounding bound {err:.3g})",
             f"re-computed {float(Pm[i, j])!r}")


def _check_layer_flat(ctx: _Ctx, b: dict[str, Any], blk: Block) -> None:
    """The depth result's hypothesis on one layer: every residual-free block of it is o(|x|) at 0."""
    bw = _where(b)
    _require(ctx, _bias_free(blk), bw, "bias-free (needed for flatness at 0)")
    _require(ctx, not (b.get("class") or {}).get("biases"), bw,
             "the depth result covers bias-free residual-free blocks only, and the verdict is about those")
    h = _value_expr(blk)
    if h is not None:  # a value activation h: each unit g(·)h(·) is o(|x|) at 0 by one of two routes
        _check_layer_flat_value(ctx, b, blk, h)
        return
    act = _act(blk)
    flat = False
    x = _variable(act)
    k_rec = _parse_number((b.get("argument") or {}).get("k_activation"))
    for k in ([k_rec] if k_rec is not None else []) + [sp.Integer(2), sp.Integer(1), sp.Integer(3)]:
        if homogeneous_of_degree(act, k) and (k + (1 if blk.gated else 0)) > 1:
            ctx.report.ok(bw, f"flat at 0: homogeneous of total degree {k + (1 if blk.gated else 0)} > 1 (by pieces)")
            flat = True
            break
    if not flat and blk.gated and _gate_derivative_at_zero(act) is not None:
        ctx.report.ok(bw, "flat at 0: gated with g(0) = 0 and g differentiable at 0 (by pieces)")
        flat = True
    _require(ctx, flat, bw, "every residual-free block of this layer is o(|x|) at 0", f"activation {x}↦{act}")
