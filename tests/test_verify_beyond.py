"""The independent checker on the results beyond the paper (skeleton, parity, exponential,
bounded without continuity, linear σ = c·z) and on the residual-free class: honest
certificates are accepted with every claim re-checked (`absorb verify` exit 0), tampered
ones are rejected (exit 1)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.io.npz import save_npz
from absorb.verify.checker import verify_certificate

ROOT = Path(__file__).resolve().parent.parent


def _block(act: str, *, bias: bool, d: int = 3, n: int = 5, seed: int = 3, dead: bool = False, name: str = "block") -> Block:
    rng = np.random.default_rng(seed)
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    if dead:
        D[:, 2] = 0.0  # a zero column of W_down: degenerate weights
    return Block(U, D, get_activation(act), b_up=rng.standard_normal(n) if bias else None,
                 b_down=rng.standard_normal(d) if bias else None, skip=np.eye(d), name=name)


# name: (block, expected verdict, theorem, skeleton case)
HONEST: dict[str, tuple[Callable[[], Block], str, str, str | None]] = {
    "gelu-biased-skeleton": (lambda: _block("gelu", bias=True), "not_absorbable", "skeleton", "nondegenerate"),
    "leaky-skeleton": (lambda: _block("leaky_relu", bias=False), "not_absorbable", "skeleton", "nondegenerate"),
    "abs-biased-skeleton-flip-even": (lambda: _block("expr:Abs(x)", bias=True), "not_absorbable", "skeleton", "flip-even"),
    "sublinear-biased-skeleton-zero": (lambda: _block("expr:log(1+x**2)", bias=True), "not_absorbable", "skeleton", "zero"),
    "gelu-biased-degenerate-skeleton": (lambda: _block("gelu", bias=True, dead=True), "not_absorbable", "skeleton",
                                        "degenerate-relu"),
    "abs-parity": (lambda: _block("expr:Abs(x)", bias=False), "not_absorbable", "parity", None),
    "cosh-parity": (lambda: _block("expr:cosh(x)", bias=False), "not_absorbable", "parity", None),
    "exp-biased": (lambda: _block("expr:exp(x)", bias=True), "not_absorbable", "exponential", None),
    "exp-scaled": (lambda: _block("expr:2*exp(3*x)-1", bias=False), "not_absorbable", "exponential", None),
    "tanh-biased-bounded": (lambda: _block("tanh", bias=True), "not_absorbable", "bounded", None),
    "step-biased-bounded": (lambda: _block("expr:0**Max(0,x)", bias=True), "not_absorbable", "bounded", None),
    "sin-biased-bounded": (lambda: _block("expr:sin(x)", bias=True), "not_absorbable", "bounded", None),
    "linear-2x-wide": (lambda: _block("expr:2*x", bias=True, d=3, n=4), "absorbable", "linear", None),
    "linear-2x-narrow": (lambda: _block("expr:2*x", bias=False, d=4, n=2), "not_absorbable", "linear", None),
}


def _findings(rep: Any) -> list[str]:
    return [f"{f.status}: {f.where}: {f.claim} — {f.detail}" for f in rep.findings if f.status != "ok"]


def _cert(blk: Block, **kw: Any) -> dict[str, Any]:
    return build_certificate(decide(blk, seed=0, timeout=30, **kw), blk, seed=0).to_json()


def _accepted(doc: dict[str, Any], blk: Block) -> tuple[bool, list[str]]:
    rep = verify_certificate(doc, blk)
    return rep.accepted and not rep.not_rechecked, _findings(rep)


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_certificate_of_each_new_theorem_verifies_with_exit_0(name: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    make, verdict, theorem, case = HONEST[name]
    model, cert = tmp_path / "m.npz", tmp_path / "c.json"
    save_npz(model, make())
    rc = main(["check", str(model), "--certificate", str(cert)])
    assert rc == 0, capsys.readouterr().out
    doc = json.loads(cert.read_text())
    b = doc["blocks"][0]
    assert (doc["verdict"], b["theorem"]["id"], b["argument"].get("case")) == (verdict, theorem, case)
    assert b["class"]["biases"] == make().has_bias
    assert doc["class"]["biases"] == b["class"]["biases"]
    capsys.readouterr()
    rc = main(["verify", str(cert), str(model), "--json"])
    out = json.loads(capsys.readouterr().out)
    bad = [f"{f['status']}: {f['claim']} — {f['detail']}" for f in out["findings"] if f["status"] != "ok"]
    assert rc == 0 and out["result"] == "accepted", bad


def test_skeleton_certificate_records_the_argument() -> None:
    blk = _block("leaky_relu", bias=False)
    arg = _cert(blk)["blocks"][0]["argument"]
    assert (arg["L_plus"], arg["L_minus"], arg["a"], arg["b"], arg["c_inf"]) == (1, "1/100", "99/100", "1/100", "101/100")
    assert arg["target"] == "-M/c_inf" and arg["nondegeneracy_hypotheses"] == ["d_at_least_2", "rows_nonzero",
                                                                               "columns_nonzero", "rows_noncollinear"]


def _transplant(doc: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``doc``'s claims with the identity (weights, activation) of ``other``'s block: a forger
    adapting a certificate to a model it was not made for."""
    out = copy.deepcopy(doc)
    for k in ("name", "d", "n", "kind", "weights", "activation", "activation_function"):
        out["blocks"][0][k] = copy.deepcopy(other["blocks"][0][k])
    return out


def _edit(doc: dict[str, Any], fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    fn(out["blocks"][0])
    return out


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def fn(b: dict[str, Any]) -> None:
        for k in path[:-1]:
            b = b[k]
        b[path[-1]] = value
    return fn


@pytest.mark.parametrize("what, act, bias, edit, claim", [
    ("L_plus", "gelu", True, _set(("argument", "L_plus"), 2), "recorded slopes"),
    ("L_minus", "leaky_relu", False, _set(("argument", "L_minus"), 0), "recorded slopes"),
    ("a", "leaky_relu", False, _set(("argument", "a"), 1), "recorded skeleton"),
    ("case", "gelu", True, _set(("argument", "case"), "zero"), "a = b = 0"),
    ("case-unknown", "gelu", True, _set(("argument", "case"), "because"), "the case is one of"),
    ("search", "gelu", True, _set(("search", "status"), "timeout"), "proved that no S exists"),
    ("beta", "expr:2*exp(3*x)-1", False, _set(("argument", "beta"), 2), "recorded beta"),
    ("A", "expr:2*exp(3*x)-1", False, _set(("argument", "A"), "1"), "recorded A"),
    ("c", "expr:2*x", False, _set(("argument", "c"), 3), "recorded c"),
    ("class-width", "gelu", True, _set(("class", "width"), 7), "width n"),
    ("class-bias-free-for-biased-f", "gelu", True, _set(("class", "biases"), False), "compared with residual-free blocks with biases"),
])
def test_tampered_claims_are_rejected(what: str, act: str, bias: bool, edit: Callable[[dict[str, Any]], None], claim: str) -> None:
    d, n = (4, 2) if act == "expr:2*x" else (3, 5)
    blk = _block(act, bias=bias, d=d, n=n)
    doc = _cert(blk)
    ok, bad = _accepted(doc, blk)
    assert ok, bad
    ok, bad = _accepted(_edit(doc, edit), blk)
    assert not ok and any(claim in f for f in bad), bad


def test_degenerate_skeleton_needs_its_canonical_form() -> None:
    blk = _block("gelu", bias=True, dead=True)
    doc = _cert(blk)
    assert doc["blocks"][0]["argument"]["case"] == "degenerate-relu" and "canonical_form" in doc["blocks"][0]
    ok, bad = _accepted(_edit(doc, lambda b: b.pop("canonical_form")), blk)
    assert not ok and any("records the canonical form" in f for f in bad), bad


def test_skeleton_claim_on_degenerate_weights_is_rejected() -> None:
    """A nondegenerate-case skeleton certificate moved onto weights with a zero column of W_down."""
    good, dead = _block("gelu", bias=True), _block("gelu", bias=True, dead=True)
    doc = _transplant(_cert(good), _cert(dead))
    doc["blocks"][0]["hypotheses"] = [h for h in doc["blocks"][0]["hypotheses"] if h["name"] != "columns_nonzero"]
    ok, bad = _accepted(doc, dead)
    assert not ok and any("every column of W_down is nonzero" in f for f in bad), bad


def test_swapped_activation_without_finite_slopes_is_rejected() -> None:
    """The skeleton certificate of a biased GELU block, moved onto the same weights with
    σ(z) = z² (no finite slopes; a biased g can equal such f: counterexamples/square_biased_g)."""
    gelu, square = _block("gelu", bias=True), _block("expr:x**2", bias=True)
    doc = _transplant(_cert(gelu), _cert(square))
    ok, bad = _accepted(doc, square)
    assert not ok and any("slopes" in f for f in bad), bad


def test_swapped_activation_to_a_different_slope_is_rejected() -> None:
    """Leaky ReLU's skeleton numbers moved onto softplus (slopes 1, 0): the recorded slopes are not σ's."""
    leaky, elu = _block("leaky_relu", bias=False), _block("softplus", bias=False)
    doc = _transplant(_cert(leaky), _cert(elu))
    ok, bad = _accepted(doc, elu)
    assert not ok and any("recorded slopes" in f for f in bad), bad


def test_parity_claimed_for_a_biased_block_is_rejected() -> None:
    free, biased = _block("expr:Abs(x)", bias=False), _block("expr:Abs(x)", bias=True)
    other = _cert(biased)
    doc = _transplant(_cert(free), other)
    doc["blocks"][0]["hypotheses"] = other["blocks"][0]["hypotheses"]  # honest ones: bias_free fails
    doc["blocks"][0]["class"]["biases"] = True
    ok, bad = _accepted(doc, biased)
    assert not ok and any("bias-free (exact)" in f for f in bad), bad


def test_parity_claimed_for_a_non_even_activation_is_rejected() -> None:
    free, odd = _block("expr:Abs(x)", bias=False), _block("expr:Abs(x) + x/8", bias=False)
    doc = _transplant(_cert(free), _cert(odd))
    ok, bad = _accepted(doc, odd)
    assert not ok and any("σ(−z) = σ(z)" in f for f in bad), bad


@pytest.mark.parametrize("act, theorem", [("relu2", "degree"), ("expr:Abs(x)", "parity")])
def test_bias_free_only_theorem_with_the_class_flipped_to_biases_is_rejected(act: str, theorem: str) -> None:
    blk = _block(act, bias=False)
    doc = _cert(blk)
    assert doc["blocks"][0]["theorem"]["id"] == theorem and doc["blocks"][0]["class"]["biases"] is False
    ok, bad = _accepted(_edit(doc, _set(("class", "biases"), True)), blk)
    assert not ok and any("covers bias-free residual-free blocks only" in f for f in bad), bad


def test_allow_biases_decides_by_the_skeleton_and_verifies() -> None:
    """A bias-free generic ReLU block asked about biased g: result 5 does not cover that class,
    the skeleton does; the certificate states the class and verifies."""
    blk = _block("relu", bias=False)
    doc = _cert(blk, allow_biases=True)
    b = doc["blocks"][0]
    assert (b["theorem"]["id"], b["class"]["biases"], doc["class"]["biases"]) == ("skeleton", True, True)
    ok, bad = _accepted(doc, blk)
    assert ok, bad


def test_exponential_claim_on_a_non_exponential_activation_is_rejected() -> None:
    ex, sq = _block("expr:exp(x)", bias=True), _block("expr:exp(x) + x**2", bias=True)
    doc = _transplant(_cert(ex), _cert(sq))
    ok, bad = _accepted(doc, sq)
    assert not ok and any("A·e^{βz}" in f for f in bad), bad


def test_bounded_claim_on_an_unbounded_activation_is_rejected() -> None:
    th, un = _block("tanh", bias=True), _block("expr:tanh(x) + log(1+x**2)", bias=True)
    doc = _transplant(_cert(th), _cert(un))
    ok, bad = _accepted(doc, un)
    assert not ok and any("bounded on R" in f for f in bad), bad


def test_linear_claim_with_the_wrong_c_in_the_activation_is_rejected() -> None:
    """A rank certificate for σ = 2z moved onto σ = 3z: the witness/rank must use σ's own c."""
    two, three = _block("expr:2*x", bias=True, d=3, n=4), _block("expr:3*x", bias=True, d=3, n=4)
    doc = _transplant(_cert(two), _cert(three))
    ok, bad = _accepted(doc, three)
    assert not ok and any("recorded c" in f for f in bad), bad


OPTIONS = {k: v for k, v in json.loads((ROOT / "counterexamples" / "expected.json").read_text()).items() if v.get("options")}


@pytest.mark.parametrize("entry", sorted(OPTIONS))
def test_catalog_entries_with_options_verify(entry: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    e = OPTIONS[entry]
    model, cert = ROOT / "counterexamples" / e["file"], tmp_path / "c.json"
    rc = main(["check", str(model), *e["options"], "--certificate", str(cert)])
    assert rc == {"unknown": 3}.get(e["verdict"], 0)
    doc = json.loads(cert.read_text())
    assert doc["verdict"] == e["verdict"] and doc["class"]["biases"] is True
    capsys.readouterr()
    rc = main(["verify", str(cert), str(model), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["result"] == "accepted", [f for f in out["findings"] if f["status"] != "ok"]


@pytest.mark.parametrize("name", ["gelu-biased-skeleton", "abs-biased-skeleton-flip-even", "sublinear-biased-skeleton-zero",
                                  "gelu-biased-degenerate-skeleton", "abs-parity", "exp-biased", "step-biased-bounded",
                                  "tanh-biased-bounded", "linear-2x-wide", "linear-2x-narrow"])
def test_latex_certificate_renders_each_new_theorem(name: str) -> None:
    """The LaTeX view states the theorem, its class and the argument (a wide linear block and a
    bounded σ once crashed the template: it read fields those certificates do not have)."""
    from absorb.certificate import Certificate
    from absorb.certificate.latex import render_latex

    blk = HONEST[name][0]()
    tex = render_latex(Certificate(_cert(blk)))
    assert r"\section*{Block" in tex and "The verdict is about residual-free" in tex
    assert HONEST[name][2] in tex
    if name == "exp-biased":  # the property's sentence "σ(z) = A·exp(βz) + C" once lost its β
        assert r"\ensuremath{\beta}" in tex
    if "skeleton" in name:
        assert r"L\ensuremath{_+}" in tex or "L_+" in tex


def test_header_class_must_be_the_blocks() -> None:
    blk = _block("gelu", bias=True)
    doc = _cert(blk)
    assert doc["class"]["biases"] is True
    doc["class"]["biases"] = False
    ok, bad = _accepted(doc, blk)
    assert not ok and any("the certificate's class is its blocks'" in f for f in bad), bad


def test_cli_summary_names_the_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = tmp_path / "m.npz", tmp_path / "c.json"
    save_npz(model, _block("gelu", bias=True))
    assert main(["check", str(model), "--certificate", str(cert)]) == 0
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 0
    assert "(about residual-free blocks with any biases)" in capsys.readouterr().out


_X = __import__("sympy").Symbol("x", real=True)


@pytest.mark.parametrize("text, bounded, finite, slopes", [
    ("sin(x)", True, True, (0, 0)),
    ("0**Max(0,x)", True, True, (0, 0)),          # a jump at 0: bounded without continuity
    ("x/(1+x**2)", True, True, (0, 0)),
    ("exp(x)", False, True, None),
    ("log(1+x**2)", False, True, (0, 0)),
    ("x + tanh(x)", False, True, (1, 1)),
    ("Max(0,x) + x/100", False, True, ("101/100", "1/100")),
    ("1/x", False, False, None),                  # infinite at 0
    ("sqrt(x)", False, False, None),              # not real for x < 0
    ("x**2", False, True, None),
])
def test_sigma_facts_by_pieces(text: str, bounded: bool, finite: bool, slopes: tuple[object, object] | None) -> None:
    import sympy as sp

    from absorb.verify._beyond import bounded_by_pieces, finite_on_reals
    from absorb.verify._beyond import slopes as slopes_of

    e = sp.sympify(text, locals={"x": _X})  # (1/x and sqrt(x) are refused as activations: the checker must refuse them too)
    assert bounded_by_pieces(e) is bounded
    assert finite_on_reals(e) is finite
    got = slopes_of(e) if finite else None
    assert got == (None if slopes is None else tuple(sp.Rational(str(v)) for v in slopes))


def test_a_tiny_rational_flip_constant_is_decided_nonzero() -> None:
    """(red team 46a/01) g(z) = 2⁻¹⁴⁰·sigmoid(z): g(z) + g(−z) = 2⁻¹⁴⁰, a rational inside the documented range; the checker's
    zero test read it by 60 digits (|c| ≤ 10⁻⁴⁰: undecided) and rejected the tool's own absorbable certificate."""
    import sympy as sp

    from absorb.verify._pieces import decide_zero
    from absorb.verify._symbolic import flip_constant

    assert decide_zero(sp.Rational(1, 2**140)) is False and decide_zero(sp.Rational(0)) is True
    x = sp.Symbol("x", real=True)
    assert flip_constant(sp.Rational(1, 2**140) / (1 + sp.exp(-x)), True) == sp.Rational(1, 2**140)


def test_duplicate_up_rows_do_not_break_the_checkers_pair_screen() -> None:
    """(red team 46a/02) rows e₁/2, e₁/2, −e₁/2 (d = 2, n = 3, M = I, GELU): the checker's estimate for nearly opposite pairs
    solved a singular system (LinAlgError: the honest certificate was rejected as malformed); now a least-squares solution."""
    import numpy as np

    from absorb import Block, decide, get_activation
    from absorb.certificate import build_certificate
    from absorb.verify.checker import verify_certificate

    f = Block(np.array([[0.5, 0.0], [0.5, 0.0], [-0.5, 0.0]]), np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]]), get_activation("gelu"))
    dec = decide(f, timeout=60)
    rep = verify_certificate(build_certificate(dec, f, seed=0).to_json(), f)
    assert rep.accepted or rep.not_rechecked, [x.to_json() for x in rep.failures]
    assert not any("well-formed" in x.claim for x in rep.failures)
