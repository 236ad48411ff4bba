"""Tampering suite: for every theorem id a real certificate is made, and every recorded
number (and index set, rational, tolerance) is tampered with in turn — ×10, zeroed, sign
flipped, shifted, the tolerance raised above a recorded bound, a dual matrix zeroed, an index
set changed. ``absorb verify`` must not accept any of them as fully checked: a recorded field
is either re-derived by the checker or not recorded at all. The few fields that are not claims
(timings, the tool's environment, prose, the reader's copy of small weight arrays is checked
against the weights) are listed in ``INFORMATIONAL`` with the reason."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import Block, Stack, get_activation
from absorb.certificate import build_certificate
from absorb.engine import decide
from absorb.io import load
from absorb.verify import checker
from tests.test_gated_skeleton import relu_like_planted
from tests.test_relu2_linear import generic as relu2_linear_generic
from tests.test_relu2_linear import planted as relu2_linear_planted
from tests.test_skeleton2_rounded import planted_rounded_gated, planted_rounded_relu2

ROOT = Path(__file__).resolve().parent.parent

INFORMATIONAL = {
    "created": "when the certificate was written",
    "tool": "the versions of the tools that wrote it",
    "command": "the command line that wrote it",
    "paper": "the bibliographic reference",
    "parameters.seed": "the producer's seed; the checker evaluates on its own seeded inputs",
    "parameters.timeout": "the producer's time budget",
    "parameters.method": "the producer's search backend",
    "search.elapsed": "how long the producer's search took (a timing, not a claim)",
    "witness.eval_error": "the producer's own evaluation on its inputs; the checker evaluates the witness it rebuilt on its own "
                          "(and rejects a value outside [0, the verdict's bound]: test_witness_numbers_outside_the_verdict_are_rejected)",
    "witness.n_inputs": "how many inputs the producer evaluated on; the checker uses its own (a whole number ≥ 0)",
    "search.certificate.portfolio.elapsed": "how long each backend of the search portfolio ran (a timing)",
    "search.certificate.iterations": "how many conjugate-gradient iterations the search's sketch took",
    "stack.composition_witness.eval_error": "the producer's evaluation of the composed witnesses; the checker evaluates its own",
    "stack.composition_witness.n_inputs": "how many inputs the producer evaluated the composition on",
}
"""Dotted paths (list indices left out) of recorded fields that are not claims about the weights;
a test below checks that docs/certificates.md names them."""

def _blk(U: Any, D: Any, act: str, M: Any = None, **kw: Any) -> Block:
    return Block(np.asarray(U, float), np.asarray(D, float), get_activation(act), skip=None if M is None else np.asarray(M, float), **kw)


def _near_block() -> Block:
    """A width-3 degenerate ReLU block with an antipodal pair (d = 2), its skip moved by 10⁻¹¹ in
    two entries: exactly it needs 5 units, within the tolerance 3 (absorbable, not exactly) — and not within
    τ = 10⁻³⁰⁰ plus the rounding allowance."""
    U = [[1.0, 1.0], [-1.0, -1.0], [2.0, 1.0]]
    D = [[0.0, -1.0, 2.0], [-1.0, -1.0, 3.0]]
    M = [[-2.0 + 1e-11, -2.0], [1.0, 1.0 + 1e-11]]
    return _blk(U, D, "relu", M)


def _skeleton_degenerate(b: Block) -> Block:
    """dead_unit's weights with softplus and biases: the bias-free ReLU skeleton is degenerate
    (a zero column of W_down) and its canonical form rules it out."""
    return b.replace(activation=get_activation("softplus"), b_up=np.array([0.5, -0.25, 1.0]), b_down=np.array([0.125, -1.0]))


def _skeleton2_generic(d: int, n: int, seed: int) -> Block:
    """A generic biased ReLU² block: the degree-2 skeleton's rank route (n ≤ d·d(d+1)/2) or, wider, its enumeration."""
    rng = np.random.default_rng(seed)
    return _blk(rng.standard_normal((n, d)), rng.standard_normal((d, n)), "relu2", b_up=rng.standard_normal(n),
                b_down=rng.standard_normal(d))


def _skeleton2_planted() -> Block:
    """Units e1, e2, (1,1), (1,−1) with w, w, −w/2, −w/2 cancel in (Q); M from (L) (dyadic: exact)."""
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -1], [2, 3]])
    w = np.array([1.0, 2.0])
    D = np.column_stack([w, w, -w / 2, -w / 2, [3.0, 1]])
    c = np.array([0.5, -1, 0.25, 2, 1.5])
    M = -sum(2 * c[i] * np.outer(D[:, i], U[i]) for i in range(4))
    return _blk(U, D, "relu2", M, b_up=c, b_down=np.array([0.125, -0.25]))


def _gated_generic(act: str = "sigmoid", d: int = 3, n: int = 5) -> Block:
    """A generic biased gated block: sigmoid (the step-gate skeleton with the search's proof that no S
    exists) or SwiGLU (the ReLU-like gate: rank route, or enumeration when n > d·d(d+1)/2)."""
    rng = np.random.default_rng(13)
    G, U, D = rng.standard_normal((n, d)), rng.standard_normal((n, d)), rng.standard_normal((d, n))
    gate = "silu" if act == "swiglu" else act
    return _blk(U, D, gate, W_gate=G, b_gate=rng.standard_normal(n), b_up=rng.standard_normal(n), b_down=rng.standard_normal(d))


def _planted_stack(rng: np.random.Generator) -> Stack:
    blocks = []
    for i in range(2):
        U, D = rng.standard_normal((4, 2)), rng.standard_normal((2, 4))
        D[:, [0, 3]] = -np.linalg.inv(U[[0, 3]])
        blocks.append(_blk(U, D, "gelu", name=f"blocks.{i}"))
    return Stack(blocks)


def _cone_stack() -> Stack:
    """Two bias-free ReLU blocks (d = 2), each absorbable by a flip: the first errs by δ = τ/10 per
    unit of |x|∞ (f_1(x) = (x_1, δx_2), its witness (x_1, 0)), the second (f_2(y) = 3·min(y, 0))
    exactly; composed, the error is 3δ = 0.3τ (the second block's Lipschitz constant times δ)."""
    from absorb.search._types import DEFAULT_TOL

    delta = 0.1 * DEFAULT_TOL
    f1 = _blk([[-1.0, 0.0], [1.0, 0.0]], [[1.0, -1.0], [0.0, 0.0]], "relu", [[2.0, 0.0], [0.0, delta]], name="blocks.0")
    f2 = _blk(np.eye(2), -3 * np.eye(2), "relu", 3 * np.eye(2), name="blocks.1")
    return Stack((f1, f2))


def _narrow_stack() -> Stack:
    """Two generic ReLU blocks in d = 2, widths 5 and 2, whose composition's range is the whole plane (range argument)."""
    rng = np.random.default_rng(0)
    return Stack(tuple(_blk(rng.standard_normal((n, 2)) / math.sqrt(2), rng.standard_normal((2, n)) / math.sqrt(2), "relu",
                            name=f"blocks.{i}") for i, n in enumerate((5, 2))))


def _kink_stack() -> Stack:
    """Two generic ReLU blocks with d = 2, n = 4 = 2d: a local homeomorphism with 16 > 8 kink rays (kink count)."""
    rng = np.random.default_rng(0)
    return Stack(tuple(_blk(rng.standard_normal((4, 2)) / math.sqrt(2), rng.standard_normal((2, 4)) / math.sqrt(2), "relu",
                            name=f"blocks.{i}") for i in range(2)))


def _rank_stack() -> Stack:
    """Two generic ReLU blocks with d = 2, n = 3 < 2d (first-layer rank argument)."""
    rng = np.random.default_rng(1)
    return Stack(tuple(_blk(rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), "relu", name=f"blocks.{i}") for i in range(2)))


def _mitm_weights() -> tuple[np.ndarray, np.ndarray]:
    """n = 24 > 16, no dual matrix certifies: infeasibility by meet-in-the-middle (re-done by the checker)."""
    rng = np.random.default_rng(3024)
    return rng.standard_normal((24, 3)), rng.standard_normal((3, 24))


def _near_planted(blk: Block) -> Block:
    """The planted set with its down-projection moved by 10⁻¹¹: a flip whose linear error ρ∞ (about 10⁻¹¹) is
    within τ = 10⁻⁹ but well beyond the rounding allowance — so at τ = 10⁻³⁰⁰ it is no witness."""
    r = np.random.default_rng(11)
    return blk.replace(W_down=blk.W_down + 1e-11 * r.standard_normal(blk.W_down.shape))


def _models() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    d, n = 3, 5
    cat = lambda name: load(str(ROOT / "counterexamples" / f"{name}.npz"))  # noqa: E731
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    return {
        "trivial": _blk(U, D, "relu", np.zeros((d, d))),
        "degree": cat("relu2_bias_free_class"),
        "linearization": load(str(ROOT / "examples" / "swiglu.npz")),
        "bounded": _blk(U, D, "tanh"),
        "linear": _blk(U[:2], D[:, :2], "identity"),
        "parity": _blk(U, D, "expr:Abs(x)"),
        "exponential": _blk(U, D, "expr:exp(x)"),
        "index-set-absorbable": cat("planted_relu"),
        "index-set-near": _near_planted(cat("planted_relu")),
        "index-set-not": cat("generic_relu"),
        "index-set-gated": cat("glu_planted"),
        "index-set-low-rank": (_blk(rng.standard_normal((40, 16)), rng.standard_normal((16, 40)), "relu"), "linalg"),
        "index-set-mitm": _blk(*_mitm_weights(), "relu"),
        "canonical-absorbable": cat("collinear_antipodal"),
        "canonical-not": cat("dead_unit"),
        "canonical-near": _near_block(),
        "skeleton-nondegenerate": cat("leaky_relu_generic"),
        "skeleton-degenerate": _skeleton_degenerate(cat("dead_unit")),
        "skeleton2-rank": _skeleton2_generic(3, 6, 11),
        "skeleton2-enumerate": _skeleton2_generic(2, 9, 12),
        "skeleton2-gram": _skeleton2_generic(6, 60, 14),
        "skeleton2-absorbable": _skeleton2_planted(),
        "skeleton2-rounded": planted_rounded_relu2(0, 3),
        "skeleton2-index-set": _skeleton2_generic(2, 20, 15),
        "relu2-linear-absorbable": relu2_linear_planted(1, biases=True),
        "relu2-linear-not": relu2_linear_generic(3, biases=True),
        "gated-skeleton": _gated_generic(),
        "gated-relu-like": _gated_generic("swiglu"),
        "gated-relu-like-enumerate": _gated_generic("swiglu", d=2, n=8),
        "gated-relu-like-gram": _gated_generic("swiglu", d=6, n=60),
        "gated-relu-like-flip": relu_like_planted("silu"),
        "gated-relu-like-rounded": planted_rounded_gated(0, 2, "silu"),
        "gated-relu-like-index-set": _gated_generic("swiglu", d=2, n=20),
        "depth": cat("relu2_stack"),
        "composition": _planted_stack(rng),
        "composition-cone": _cone_stack(),
        "linear-absorbable": _blk(U, D, "identity", np.eye(d), b_up=rng.standard_normal(n) * 1e3,
                                  b_down=rng.standard_normal(d)),
        "range": _narrow_stack(),
        "rank": _rank_stack(),
        "kink-count": _kink_stack(),
        "none": cat("relu_stack_generic"),
        "linearization-value": _value_block("swiglu", "relu"),
        "degree-value": _value_block("reglu", "relu"),
        "linearization-value-flat": _value_block("glu", "expr:x**2"),
    }


def _value_block(gate: str, h: str) -> Block:
    """A bias-free gated block whose value branch carries an activation h (its own generator: the
    other cases' weights stay as they are)."""
    r = np.random.default_rng(26)
    return _blk(r.standard_normal((5, 3)), r.standard_normal((3, 5)), gate, W_gate=r.standard_normal((5, 3)),
                value_activation=get_activation(h))


# ---------------------------------------------------------------------------- tamperings --

_SKIP_KEYS = {"sha256", "file_sha256", "statement", "latex", "text", "srepr", "steps", "title", "source", "reason",
              "construction", "formula", "name", "activation", "hash_convention", "path", "kind", "method", "status",
              "needs", "classes", "url", "authors", "arxiv", "year", "platform", "python", "detail", "family", "case",
              "target", "structure", "schema"}


def _fraction(v: Any) -> Fraction | None:
    if isinstance(v, str) and v and v.lstrip("-").replace("/", "").isdigit():
        return Fraction(v)
    return None


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path if not isinstance(p, int))


def _matches(path: tuple[Any, ...], keys: Any) -> bool:
    dotted = _dotted(path)
    return any(f".{dotted}.".find(f".{k}.") >= 0 for k in keys)


def _informational(path: tuple[Any, ...]) -> bool:
    return _matches(path, INFORMATIONAL)


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in _SKIP_KEYS:
                yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        if obj and all(isinstance(v, int) and not isinstance(v, bool) for v in obj):
            yield path, obj  # an index set, a list of units or flips: changed as a whole
        elif obj and all(isinstance(v, list) for v in obj) and obj[0] and isinstance(obj[0][0], float):
            yield path, obj  # a matrix (a dual matrix, embedded weights): zeroed as a whole ...
            yield from _leaves(obj[0][0], (*path, 0, 0))  # ... and its first entry
        else:
            for i, v in enumerate(obj[:2]):  # the first two entries stand for the rest
                yield from _leaves(v, (*path, i))
    elif obj is None:
        return
    elif isinstance(obj, bool):
        yield path, obj
    elif isinstance(obj, (int, float)) or _fraction(obj) is not None:
        yield path, obj


def _tamperings(v: Any, evidence: bool = False) -> list[tuple[str, Any]]:
    if isinstance(v, bool):
        return [("flipped", not v)]
    if isinstance(v, list) and v and isinstance(v[0], list):  # (a dual matrix is evidence: an entry moved by 10⁻⁶
        z = [[0.0] * len(r) for r in v]                     # may still prove the bound, so it is zeroed instead)
        return [("zeroed", z)] if z != v else [("ones", [[1.0] * len(r) for r in v])]
    if isinstance(v, list):
        return [("index set changed", v[:-1] if len(v) > 1 else [v[0] + 1]), ("index set grown", [*v, max(v) + 1])]
    q = _fraction(v)
    if q is not None:
        return [(f"{how}", str(x)) for how, x in (("×10", q * 10), ("zero", Fraction(0)), ("+1", q + 1)) if x != q]
    out = [("×10", v * 10), ("zero", type(v)(0)), ("sign", -v), ("+1", v + 1)]
    if isinstance(v, float) and math.isfinite(v) and not evidence:
        out.append(("×(1+1e-6)", v * (1 + 1e-6)))
    return [(h, x) for h, x in out if x != v]


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    obj = doc
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _fully_accepted(doc: dict[str, Any], model: Any) -> bool:
    try:
        rep = checker.verify_certificate(doc, model)
    except Exception:  # noqa: BLE001  (a crash is not an acceptance; the exit-code tests cover crashes)
        return False
    return rep.accepted and not rep.not_rechecked


def _pattern(path: tuple[Any, ...]) -> str:
    return ".".join("*" if isinstance(p, int) else str(p) for p in path)



# -------------------------------------------------------------------------------- tests --

CASES = ["trivial", "degree", "linearization", "bounded", "linear", "parity", "exponential", "index-set-absorbable",
         "index-set-not", "index-set-gated", "index-set-low-rank", "index-set-mitm", "canonical-absorbable", "canonical-not", "canonical-near", "skeleton-nondegenerate",
         "skeleton-degenerate", "skeleton2-rank", "skeleton2-enumerate", "skeleton2-gram", "skeleton2-absorbable", "skeleton2-rounded", "skeleton2-index-set",
         "relu2-linear-absorbable", "relu2-linear-not", "gated-skeleton",
         "gated-relu-like", "gated-relu-like-enumerate", "gated-relu-like-gram", "gated-relu-like-flip", "gated-relu-like-rounded", "gated-relu-like-index-set",
         "depth", "composition", "composition-cone",
         "linear-absorbable", "range", "rank", "kink-count", "none", "linearization-value", "degree-value",
         "linearization-value-flat"]


@pytest.fixture(scope="module")
def certs() -> dict[str, tuple[dict[str, Any], Any]]:
    out = {}
    for name, model in _models().items():
        model, method = model if isinstance(model, tuple) else (model, "auto")
        out[name] = (build_certificate(decide(model, method=method), model, seed=0).to_json(), model)
    return out


def test_every_theorem_has_a_case(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The cases cover every theorem id the checker dispatches on (and the stack results)."""
    from absorb.certificate._theorems import THEOREMS

    seen = {doc["theorem"]["id"] for doc, _ in certs.values()} | {b["theorem"]["id"] for doc, _ in certs.values() for b in doc["blocks"]}
    assert set(checker.THEOREM_CHECKS) | {"depth", "composition", "range", "rank", "kink-count"} <= seen | {"none"}
    assert set(THEOREMS) <= seen | {"none"}
    cases = {b["argument"].get("case") for doc, _ in certs.values() for b in doc["blocks"] if b["theorem"]["id"] == "skeleton"}
    assert {"nondegenerate", "degenerate-relu"} <= cases
    assert "near" in certs["canonical-near"][0]["blocks"][0]["canonical_form"]


@pytest.mark.parametrize("name", CASES)
def test_honest_certificate_is_fully_accepted(name: str, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    doc, model = certs[name]
    rep = checker.verify_certificate(doc, model)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


def _accepted_tamperings(doc: dict[str, Any], model: Any, *, keep: Any) -> list[str]:
    seen: set[tuple[str, str]] = set()
    out = []
    for path, v in _leaves(doc):
        if _informational(path) or not keep(path):
            continue
        evidence = _dotted(path).split(".")[-1] in ("A", "B", "Y")  # an entry of a dual matrix
        for how, x in _tamperings(v, evidence):
            if (_pattern(path), how) in seen:
                continue
            seen.add((_pattern(path), how))
            bad = copy.deepcopy(doc)
            _set(bad, path, x)
            if _fully_accepted(bad, model):
                out.append(f"{'.'.join(map(str, path))} {how}")
    return out


@pytest.mark.parametrize("name", CASES)
def test_every_tampered_number_is_caught(name: str, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """×10, zero, sign, +1, ×(1 + 10⁻⁶) on every recorded number; index sets shrunk and grown;
    matrices zeroed; booleans flipped: none is accepted as fully checked."""
    doc, model = certs[name]
    # (a meet-in-the-middle certificate's bound is re-derived as a radius: raised a little it may
    # still be true, and the checker proves it; raised past the truth it is rejected, see below)
    mitm_bound = name == "index-set-mitm" or ((doc["blocks"][0].get("search") or {}).get("certificate") or {}).get(
        "kind") == "meet-in-the-middle"
    # (the Gram route's μ is proved as recorded: lowered, or raised by +1 below λ_min, it is still
    # true; raised past λ_min it is rejected, tests/test_gram_route.py)
    gram_mu = name.endswith("-gram")
    # (the robust bar is proved as recorded: raised, it is a weaker claim and still true below the search's distance;
    # lowered or raised past the distance it is rejected: test_robust_bar_understated_or_past_the_distance_is_rejected;
    # the exponential ray and the parity point: another one whose checks pass is a true claim, tests below and
    # tests/test_parity_tolerance.py reject the false ones)
    keep = lambda p: not ((mitm_bound and _dotted(p) == "blocks.search.bound")  # noqa: E731
                          or (gram_mu and _dotted(p) == "blocks.argument.mu")
                          or _dotted(p) in ("blocks.argument.robust_bar", "blocks.argument.direction", "blocks.argument.point"))
    assert _accepted_tamperings(doc, model, keep=keep) == []


def test_exponential_ray_that_lets_a_unit_grow_or_understates_the_skip_is_rejected(
        certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The exponential route's ray v is any direction its checks prove (β·(u_i·v) ≤ 0 for every unit, the skip's share
    past τ): another such v is still true (so the sweep above skips it); one on which a unit grows, one with no skip
    share, a missing one, or a recorded ratio past the true one is rejected."""
    doc, model = certs["exponential"]
    v = doc["blocks"][0]["argument"]["direction"]
    U = np.asarray(model.W_up, float)
    grow = list(U[int(np.argmax(U @ np.asarray(v)))] * 1.0)  # (a unit's own row: u·u > 0, it grows on that ray)
    for edit in (grow, [0.0] * len(v), None, v[:-1]):
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["argument"]["direction"] = edit
        assert not _fully_accepted(bad, model), edit
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"]["ratio"] = float(np.nextafter(1.0, 0.0))
    assert not _fully_accepted(bad, model)


def test_meet_in_the_middle_bound_past_the_truth_is_rejected(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    doc, model = certs["index-set-mitm"]
    assert doc["blocks"][0]["search"]["certificate"]["kind"] == "meet-in-the-middle"
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["search"]["bound"] = 10.0  # no S is that far from −M/c: some S is closer
    assert not _fully_accepted(bad, model)


def _with_tolerance(doc: dict[str, Any], tol: float) -> dict[str, Any]:
    bad = copy.deepcopy(doc)
    bad["parameters"]["tolerance"] = tol
    for b in bad["blocks"]:
        b["tolerance"] = tol
    return bad


@pytest.mark.parametrize("name", ["index-set-not", "skeleton-nondegenerate", "gated-skeleton"])
def test_tolerance_raised_above_the_bound_is_rejected(name: str, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    doc, model = certs[name]
    bound = doc["blocks"][0]["search"]["bound"]
    assert not checker.verify_certificate(_with_tolerance(doc, min(0.99, 2 * bound)), model).accepted


@pytest.mark.parametrize("name, tol", [("canonical-not", 0.99), ("skeleton-degenerate", 0.99), ("linear", 0.99),
                                       ("index-set-near", 1e-300), ("canonical-near", 1e-300),
                                       # each layer's witness passes at 0.2τ, their composition (0.3τ) does not
                                       ("composition-cone", 2e-10)])
def test_tolerance_that_changes_the_answer_is_rejected(name: str, tol: float, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """A not_absorbable verdict whose proof does not survive the larger tolerance (a choice, or a
    rank, within τ), or an absorbable one whose witness is farther than the smaller tolerance plus the
    rounding allowance (an exact-up-to-rounding flip, ρ∞ ≈ 10⁻¹⁴, passes at any τ: the allowance is part of the
    stated guarantee)."""
    doc, model = certs[name]
    assert not checker.verify_certificate(_with_tolerance(doc, tol), model).accepted


def test_dual_matrix_zeroed_is_rejected(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    for name in ("index-set-not", "skeleton-nondegenerate"):
        doc, model = certs[name]
        cert = doc["blocks"][0]["search"]["certificate"]
        keys = [k for k in ("Y", "A", "B") if isinstance(cert.get(k), list)]
        for k in keys:
            bad = copy.deepcopy(doc)
            bad["blocks"][0]["search"]["certificate"][k] = np.zeros(np.shape(cert[k])).tolist()
            assert not _fully_accepted(bad, model), (name, k)


def test_a_search_record_the_theorem_does_not_use_is_rejected(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """Canonical-form and degenerate-skeleton certificates carry no index-set search (their argument
    does not read it); one added from another certificate is a claim nobody re-checked."""
    search = certs["index-set-not"][0]["blocks"][0]["search"]
    for name in ("canonical-absorbable", "canonical-not", "skeleton-degenerate"):
        doc, model = certs[name]
        assert "search" not in doc["blocks"][0]
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["search"] = search
        assert not checker.verify_certificate(bad, model).accepted, name


def test_informational_fields_are_documented() -> None:
    text = (ROOT / "docs" / "certificates.md").read_text()
    for key in INFORMATIONAL:
        assert f"`{key.split('.')[-1]}`" in text, key


@pytest.mark.parametrize("name", ["skeleton2-rank", "skeleton2-enumerate"])
def test_skeleton2_tolerance_past_every_distance_is_rejected(name: str, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """S = ∅ is at relative distance 1 from (Q) and (L): no proof survives τ = 1."""
    doc, model = certs[name]
    assert not checker.verify_certificate(_with_tolerance(doc, 1.0), model).accepted


@pytest.mark.parametrize(("name", "key", "value"), [("gated-relu-like", "route", "bogus"), ("skeleton2-rank", "case", "relu2-flip"),
                                                    ("gated-skeleton", "case", "relu-like")])
def test_new_skeletons_reject_a_changed_case_or_route(name: str, key: str, value: str,
                                                      certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The strings that choose the checker's route (not tampered with by the number sweep above)."""
    doc, model = certs[name]
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"][key] = value
    assert not _fully_accepted(bad, model)


def _string_tamperings(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every recorded hypothesis flipped (each entry, not only the first two), every recorded
    property's status changed, a property the theorem does not use added, the skip's kind changed,
    a target label changed, a stack's decided verdict weakened to unknown under the same theorem."""
    if len(doc["blocks"]) > 1 and doc["verdict"] != "unknown":
        bad = copy.deepcopy(doc)
        bad["verdict"] = "unknown"
        yield "verdict weakened to unknown", bad
    for bi, b in enumerate(doc["blocks"]):
        for hi, h in enumerate(b.get("hypotheses") or []):
            if isinstance(h.get("holds"), bool):
                bad = copy.deepcopy(doc)
                bad["blocks"][bi]["hypotheses"][hi]["holds"] = not h["holds"]
                yield f"blocks.{bi}.hypotheses.{hi} ({h['name']}) flipped", bad
        for pi, p in enumerate(b.get("properties") or []):
            for status in ("refuted", "unknown"):
                bad = copy.deepcopy(doc)
                bad["blocks"][bi]["properties"][pi]["status"] = status
                yield f"blocks.{bi}.properties.{pi} ({p['name']}) {status}", bad
        bad = copy.deepcopy(doc)
        bad["blocks"][bi].setdefault("properties", []).append({"name": "homogeneous" if b["theorem"]["id"] != "degree" else "even",
                                                              "status": "proved", "statement": "σ is ...", "steps": []})
        yield f"blocks.{bi}: a property the theorem does not use added", bad
        if "target" in (b.get("argument") or {}):
            bad = copy.deepcopy(doc)
            bad["blocks"][bi]["argument"]["target"] = "-M/2"
            yield f"blocks.{bi}.argument.target changed", bad
        kind = b["skip"]["kind"]
        bad = copy.deepcopy(doc)
        bad["blocks"][bi]["skip"]["kind"] = "matrix" if kind != "matrix" else "identity"
        yield f"blocks.{bi}.skip.kind changed", bad


@pytest.mark.parametrize("name", CASES)
def test_every_recorded_hypothesis_property_and_skip_kind_is_rechecked(name: str, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """A hypothesis recorded the other way round (in any block, at any position), a property of σ
    recorded with another status or one the theorem does not use, a skip of another kind: each
    is rejected (a recorded claim is re-derived, or not recorded)."""
    doc, model = certs[name]
    # (canonical-near's skip is exactly invertible but fails the producer's conditioning test,
    # σ_min ≤ 10·d·ε·σ_max: recorded either way the claim is true, and the checker accepts both)
    both_true = {"blocks.0.hypotheses.3 (skip_invertible) flipped"} if name == "canonical-near" else set()
    assert [what for what, bad in _string_tamperings(doc) if what not in both_true and _fully_accepted(bad, model)] == []


@pytest.mark.parametrize("key, value", [("eval_error", 0.5), ("eval_error", -1.0), ("eval_error", float("nan")),
                                        ("eval_error", True), ("n_inputs", -5), ("n_inputs", 2.5)])
def test_witness_numbers_outside_the_verdict_are_rejected(key: str, value: Any,
                                                         certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The producer's witness error is not re-derived, but one the verdict contradicts (above
    τ plus the rounding allowance, negative, not a number) or a count that is not a whole
    number is rejected, for every absorbable block's witness."""
    done = 0
    for name, (doc, model) in certs.items():
        for i, b in enumerate(doc["blocks"]):
            if b["verdict"] != "absorbable" or key not in (b.get("witness") or {}):
                continue
            bad = copy.deepcopy(doc)
            bad["blocks"][i]["witness"][key] = value
            assert not checker.verify_certificate(bad, model).accepted, (name, key, value)
            done += 1
    assert done >= 3


@pytest.mark.parametrize("value", ["0", 0.9, 1e-300, True])
def test_nonzero_entry_index_must_be_a_whole_number(value: Any, certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """M_nonzero_entry's row/col: an index, not a string, a fraction or a bool (int() read them)."""
    done = 0
    for name, (doc, model) in certs.items():
        for i, b in enumerate(doc["blocks"]):
            if not isinstance((b.get("argument") or {}).get("M_nonzero_entry"), dict):
                continue
            for key in ("row", "col"):
                bad = copy.deepcopy(doc)
                bad["blocks"][i]["argument"]["M_nonzero_entry"][key] = value
                assert not checker.verify_certificate(bad, model).accepted, (name, key, value)
                done += 1
    assert done >= 2


@pytest.mark.parametrize(("name", "key", "value"), [("linearization-value", "value_activation", "tanh(x)"),
                                                    ("linearization-value", "h0", "1"),
                                                    ("linearization-value", "h_slopes", ["1", "1"]),
                                                    ("linearization-value", "g_slopes", [None, "1"]),
                                                    ("degree-value", "value_activation", "x**2"),
                                                    ("degree-value", "k_value", 2)])
def test_value_activation_records_are_rechecked(name: str, key: str, value: Any,
                                                certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The linearization and degree arguments with a value activation h: h's name, h(0), the slopes
    and h's degree in the argument are re-derived from h itself (a null slope is accepted as not
    recorded, but a wrong one is not); h's own record and the property claimed for h likewise."""
    doc, model = certs[name]
    assert doc["blocks"][0]["theorem"]["id"] == name.split("-")[0] and checker.verify_certificate(doc, model).accepted
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"][key] = value
    assert not _fully_accepted(bad, model), (key, value)


def test_value_activation_name_and_property_tampering_is_rejected(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    doc, model = certs["linearization-value"]
    bad = copy.deepcopy(doc)
    rec = bad["blocks"][0]["value_activation_function"]
    rec.update(name="tanh", text="tanh(x)", srepr="tanh(Symbol('x', real=True))")
    assert not _fully_accepted(bad, model)
    bad = copy.deepcopy(doc)  # the property of h recorded for the gate's name only, or a property h does not have
    bad["blocks"][0]["properties"].append({"name": "vanishing_gate", "status": "proved", "statement": "h is differentiable", "steps": []})
    assert not _fully_accepted(bad, model)
    # the same weights with h(0) ≠ 0 (sigmoid): the certificate's verdict is not re-derived
    blk = model.replace(value_activation=get_activation("sigmoid"))
    assert not checker.verify_certificate(doc, blk).accepted


def test_an_unread_field_in_a_portfolio_entry_is_not_rechecked() -> None:
    """The search portfolio's entries hold method, status, elapsed and reason (shown, not claims); any
    other field is reported as not re-checked (exit 4), not silently accepted."""
    model = load(str(Path(__file__).resolve().parents[1] / "counterexamples" / "glu_generic.npz"))
    cert = build_certificate(decide(model), model, seed=0).to_json()
    assert checker.verify_certificate(cert, model).accepted
    forged = copy.deepcopy(cert)
    forged["blocks"][0]["search"]["certificate"]["portfolio"][0]["bound"] = 1.0
    rep = checker.verify_certificate(forged, model)
    assert rep.not_rechecked and any("portfolio" in f.where or "portfolio" in f.detail for f in rep.not_rechecked)


def _array_records(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every array record (shape, SHA-256, norms, values) of the certificate, with its place."""
    for bi, b in enumerate(doc["blocks"]):
        for where, recs in (("weights", b.get("weights")), ("witness.block.weights", ((b.get("witness") or {}).get("block") or {}).get("weights"))):
            for k, rec in (recs or {}).items():
                if isinstance(rec, dict) and "values" in rec:
                    yield f"blocks.{bi}.{where}.{k}", rec


def test_records_of_another_json_type_are_not_accepted(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """A record the producer always writes as an object or a list, written as another JSON type, or
    an array's embedded values written as null, is never fully accepted (a cut record, exit 4, or a
    failed check): a null ``values`` was read as "not embedded" while the producer embeds every small array."""
    done = 0
    for name, (doc, model) in certs.items():
        for bi, b in enumerate(doc["blocks"]):
            for key, value in (("hypotheses", {}), ("properties", 0), ("argument", [])):
                if key in b:
                    bad = copy.deepcopy(doc)
                    bad["blocks"][bi][key] = value
                    assert not _fully_accepted(bad, model), (name, key, value)
                    done += 1
            if isinstance((b.get("witness") or {}).get("block"), dict):
                bad = copy.deepcopy(doc)
                bad["blocks"][bi]["witness"]["block"] = 0
                assert not _fully_accepted(bad, model), (name, "witness.block", 0)
        for where, _rec in _array_records(doc):
            bad = copy.deepcopy(doc)
            rec = dict(_array_records(bad))[where]
            rec["values"] = None
            assert not _fully_accepted(bad, model), (name, where)
            done += 1
    assert done >= 20


def test_robust_bar_understated_or_past_the_distance_is_rejected(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """The robust skeleton bar (every block within τ is a flip up to it): recorded below the checker's own bar (a claim
    stronger than it proves), zero, or past the search's proved distance, the certificate is rejected."""
    done = 0
    for name, (doc, model) in certs.items():
        for i, b in enumerate(doc["blocks"]):
            rec = (b.get("argument") or {}).get("robust_bar")
            if rec is None:
                continue
            assert checker.verify_certificate(doc, model).accepted, name
            for value in (rec / 2, 0.0, b["search"]["bound"] * 2):
                bad = copy.deepcopy(doc)
                bad["blocks"][i]["argument"]["robust_bar"] = value
                assert not checker.verify_certificate(bad, model).accepted, (name, value)
                done += 1
    assert done >= 6


def test_records_the_producer_always_writes_are_not_dropped_silently(certs: dict[str, tuple[dict[str, Any], Any]]) -> None:
    """An absorbable verdict's witness, the index-set search, the skeleton's slopes, c∞, target and nondegeneracy list,
    a small array's embedded values — deleted or emptied — and JSON true in place of a number are never fully accepted."""
    done = 0
    for name, (doc, model) in certs.items():
        for bi, b in enumerate(doc["blocks"]):
            th = b["theorem"]["id"] if isinstance(b.get("theorem"), dict) else b.get("theorem")
            edits: list[tuple[str, Any]] = []
            if b["verdict"] == "absorbable" and b.get("witness"):
                edits.append(("witness", lambda e: e.pop("witness")))
            if th == "index-set" and b["verdict"] != "unknown" and "search" in b:
                edits.append(("search", lambda e: e.pop("search")))
            if th == "skeleton" and b["verdict"] == "not_absorbable" and (b.get("argument") or {}).get("case") == "nondegenerate":
                edits += [("c_inf", lambda e: e["argument"].pop("c_inf")), ("target", lambda e: e["argument"].update(target=None)),
                          ("hyps", lambda e: e["argument"].update(nondegeneracy_hypotheses=[]))]
            for k, rec in (b.get("weights") or {}).items():
                if isinstance(rec.get("values"), list) and rec["values"] and isinstance(rec["values"][0], list):
                    edits.append((f"{k}.values", lambda e, k=k: e["weights"][k].pop("values")))
                    edits.append((f"{k}.max_abs", lambda e, k=k: e["weights"][k].update(max_abs=True)))
                    break
            for what, edit in edits:
                bad = copy.deepcopy(doc)
                edit(bad["blocks"][bi])
                assert not _fully_accepted(bad, model), (name, what)
                done += 1
    assert done >= 12


@pytest.mark.parametrize("text", ["1e999999999", "1/1e99999999"])
def test_a_recorded_rational_with_a_huge_exponent_is_refused_at_once(tmp_path: Path, text: str) -> None:
    """'1e999999999' in a canonical form's L0 made Fraction build a billion-digit integer: verify ran for minutes."""
    from absorb.cli import main

    model = Path(__file__).parent.parent / "counterexamples" / "dead_unit.npz"
    cert = tmp_path / "c.json"
    assert main(["check", str(model), "--certificate", str(cert), "-q"]) == 0
    doc = json.loads(cert.read_text())
    doc["blocks"][0]["canonical_form"]["L0"][0][0] = text
    cert.write_text(json.dumps(doc))
    assert main(["verify", str(cert), str(model), "-q"]) in (1, 2)


def test_the_gated_skeletons_step_record_cut_is_not_fully_checked(tmp_path: Path) -> None:
    """The step case's argument is written in full (slopes, target, hypotheses), as the ungated skeleton's: a field
    deleted is a record cut (exit 4), not a certificate that silently claims less (it was exit 0)."""
    from absorb.cli import main

    r = np.random.default_rng(5)
    model = tmp_path / "glu.npz"
    np.savez(model, W_up=r.standard_normal((5, 3)), W_gate=r.standard_normal((5, 3)), W_down=r.standard_normal((3, 5)),
             activation=np.array("glu"))
    cert = tmp_path / "c.json"
    main(["check", str(model), "--certificate", str(cert), "-q"])
    doc = json.loads(cert.read_text())
    arg = doc["blocks"][0].get("argument") or {}
    if doc["blocks"][0]["theorem"]["id"] != "gated-skeleton" or arg.get("case") != "step":
        pytest.skip("this block is not decided by the gated skeleton's step case")
    assert main(["verify", str(cert), str(model), "-q"]) == 0
    del arg["target"]
    cert.write_text(json.dumps(doc))
    assert main(["verify", str(cert), str(model), "-q"]) == 4


@pytest.mark.parametrize("make, theorem", [(_kink_stack, "kink-count"), (_rank_stack, "rank")])
def test_stack_counts_that_hold_by_about_the_tolerance_are_withheld(make, theorem: str) -> None:
    """The kink count and the rank argument are exact: at a τ where one of F's kinks (a sector's sign, a product's
    nonsingularity) holds by about τ only, a stack within τ may lack it — both sides withhold; at 1e-9 they decide."""
    from absorb.plane.conic import stack_map
    from absorb.plane.kinks import barely
    from absorb.plane.rank import nearly_singular

    stack = make()
    assert decide(stack, tol=1e-9).theorem.value == theorem
    F = stack_map([(b.W_up, b.W_down, b.skip) for b in stack.blocks])
    big = 0.05
    screened = barely(F, big) if theorem == "kink-count" else nearly_singular(stack.blocks, big)
    assert screened and decide(stack, tol=big).theorem.value != theorem


def test_malformed_rationals_ids_and_the_boundary_tolerance_are_rejected(tmp_path: Path) -> None:
    """Red team 41c: a recorded rational '1/0' (main and width canonical forms) and a theorem id written as a list were
    internal errors (exit 3); a degree certificate relabelled to τ = ‖M‖∞/(1 + ‖M‖∞) = 1/2 was accepted although
    g = B/2 is within τ of f = x + B(x) exactly at that boundary. Each is rejected now."""
    blk = _blk([[1.0, 0], [-1, 0], [0, 1]], [[2.0, 5, 0], [3, 7, -1]], "relu")
    from absorb.certificate._width import width_entries
    from absorb.engine.width import width_fields

    dec = decide(blk)
    fields = [width_fields(bd.block, width=5, min_width=False, decision=bd) for bd in dec.blocks]
    doc = build_certificate(dec, blk, seed=0, entries=width_entries(dec, fields, seed=0)).to_json()
    assert checker.verify_certificate(doc, blk).accepted
    for where in ("canonical_form", "width"):
        rec = doc["blocks"][0].get(where)
        rec = rec.get("canonical_form") if where == "width" and isinstance(rec, dict) else rec
        if isinstance(rec, dict) and rec.get("L0"):
            bad = copy.deepcopy(doc)
            target = bad["blocks"][0][where] if where != "width" else bad["blocks"][0]["width"]["canonical_form"]
            target["L0"][0][0] = "1/0"
            assert not checker.verify_certificate(bad, blk).accepted, where
    for bad_id in ([], {}, ["canonical-form"]):
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["theorem"]["id"] = bad_id
        assert not checker.verify_certificate(bad, blk).accepted
    sq = _blk([[1.0, 0.5], [-0.3, 1], [0.7, -0.2]], [[0.5, -1, 0.25], [1, 0.3, -0.6]], "relu2")
    doc = build_certificate(decide(sq, tol=1e-4), sq, seed=0).to_json()
    assert doc["verdict"] == "not_absorbable" and doc["theorem"]["id"] == "degree"
    doc["parameters"]["tolerance"] = doc["blocks"][0]["tolerance"] = 0.5
    assert not checker.verify_certificate(doc, sq).accepted
