"""Certified width answers: ``absorb check --width N --min-width --certificate C.json`` records each
block's width and minimal-width answers with their evidence, and ``absorb verify`` re-derives each
by its own route (absorb/verify/_width.py; docs/min-width.md, docs/certificates.md)."""

from __future__ import annotations

import copy
import glob
import json
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main
from absorb.io import load
from absorb.verify import checker

CE = Path("counterexamples")


def _cert(tmp_path: Path, path: Path | str, *args: str) -> dict:
    out = tmp_path / "c.json"
    assert main(["check", str(path), "-q", "--certificate", str(out), *args]) in (0, 3)
    return json.loads(out.read_text())


def _verify(doc: dict, path: Path | str) -> checker.Report:
    return checker.verify_certificate(doc, load(str(path)))


def _width_failures(rep: checker.Report) -> list[str]:
    return [f"{f.where}: {f.claim} ({f.detail})" for f in rep.failures if "width" in f.where]


def _honest(rep: checker.Report) -> None:
    assert rep.accepted and not rep.not_rechecked, [f.to_json() for f in rep.failures + rep.not_rechecked]
    assert any("width" in f.where for f in rep.findings)


def _rejected(doc: dict, path: Path | str) -> list[str]:
    rep = _verify(doc, path)
    fails = _width_failures(rep)
    assert not rep.accepted and fails, [f.to_json() for f in rep.failures]
    return fails


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, dict]:
    """Honest certificates, one per route (each a few hundred ms to make)."""
    t = tmp_path_factory.mktemp("wcert")
    made = {}
    for key, path, args in [
        ("relu_1", CE / "planted_relu.npz", ("--width", "1", "--min-width")),  # canonical form: not absorbable; min width 6
        ("relu_7", CE / "planted_relu.npz", ("--width", "7")),  # the main witness (6 units) and a dead unit
        ("relu_1_biases", CE / "planted_relu.npz", ("--width", "1", "--allow-biases")),  # the skeleton
        ("dead_4", CE / "dead_unit.npz", ("--width", "4", "--min-width")),  # the canonical form's exact witness; min width 4
        ("dead_2", CE / "dead_unit.npz", ("--width", "2")),  # the main proof at n = 3
        ("bounded_5", CE / "gpt_oss_expert.npz", ("--width", "5", "--min-width")),  # width-independent: no width works
        ("leaky_1", CE / "leaky_relu_generic.npz", ("--width", "1",)),
    ]:
        made[key] = (_cert(t, path, *args), path)
    return made


@pytest.mark.parametrize("key, route, verdict", [
    ("relu_1", "canonical-form", "not_absorbable"), ("relu_7", "main-witness", "absorbable"),
    ("relu_1_biases", "skeleton", "not_absorbable"), ("dead_4", "canonical-form", "absorbable"),
    ("dead_2", "main-proof", "not_absorbable"), ("bounded_5", "every-width", "not_absorbable"),
    ("leaky_1", "main-proof", "not_absorbable"),
])
def test_honest_certificates_verify(certs, key, route, verdict) -> None:
    doc, path = certs[key]
    w = doc["blocks"][0]["width"]
    assert (w["route"], w["verdict"]) == (route, verdict)
    _honest(_verify(doc, path))


def test_min_width_records(certs) -> None:
    mw = certs["relu_1"][0]["blocks"][0]["min_width"]
    assert (mw["value"], mw["lower"], mw["upper"]) == (6, 6, 6)
    assert mw["upper_claim"]["asked"] == 6 and mw["upper_claim"]["route"] == "main-witness"
    assert mw["lower_claim"]["asked"] == 5 and mw["lower_claim"]["verdict"] == "not_absorbable"
    mw = certs["dead_4"][0]["blocks"][0]["min_width"]
    assert mw["value"] == 4 and mw["upper_claim"]["route"] == "canonical-form"
    mw = certs["bounded_5"][0]["blocks"][0]["min_width"]
    assert mw["exists"] is False and "upper_claim" not in mw


def _tamper(certs, key: str, edit) -> list[str]:
    doc, path = certs[key]
    doc = copy.deepcopy(doc)
    edit(doc["blocks"][0])
    return _rejected(doc, path)


def test_changed_width_is_rejected(certs) -> None:
    def asked(v):
        return lambda b: b["width"].update(asked=v)
    assert any("dead units" in f for f in _tamper(certs, "relu_7", asked(8)))
    _tamper(certs, "relu_1", asked(6))  # 6 units suffice (within the tolerance: the planted block is rounded)
    assert any("≤ n" in f for f in _tamper(certs, "dead_2", asked(4)))  # the main proof covers widths up to n only
    _tamper(certs, "relu_1_biases", asked(6))


def test_changed_witness_is_rejected(certs) -> None:
    def entry(b):
        wx = b["width"]["canonical_form"]["witness_exact"]
        wx["W_up"][0][0] = str(float(wx["W_up"][0][0]) + 1)

    def drop_unit(b):
        wx = b["width"]["canonical_form"]["witness_exact"]
        wx["W_up"].pop()
        for row in wx["W_down"]:
            row.pop()

    def hash_(b):
        b["width"]["witness"]["block"]["weights"]["W_up"]["sha256"] = "0" * 64

    def choice(b):
        b["width"]["canonical_form"]["choice"]["width"] -= 1

    for edit in (entry, drop_unit, hash_, choice):
        _tamper(certs, "dead_4", edit)

    def fewer(b):
        b["width"]["witness_width"] = 5
        b["width"]["dead_units"] = 2
    assert any("main witness" in f for f in _tamper(certs, "relu_7", fewer))


def test_changed_min_width_is_rejected(certs) -> None:
    edits = [
        lambda m: m.update(value=5),
        lambda m: m.update(value=5, lower=5, upper=5),
        lambda m: m.update(lower=7),
        lambda m: m.update(value=None, upper=7),
        lambda m: m.update(theorem="degree"),
        lambda m: m["lower_claim"].update(verdict="absorbable"),
        lambda m: m["upper_claim"].update(asked=5, dead_units=-1),
        lambda m: m.update(value=None, lower=None),  # a lower bound's record without the bound
    ]
    for edit in edits:
        _tamper(certs, "relu_1", lambda b, e=edit: e(b["min_width"]))
    _tamper(certs, "bounded_5", lambda b: b["min_width"].update(exists=True, value=5, lower=5, upper=5))


def test_changed_theorem_route_or_verdict_is_rejected(certs) -> None:
    _tamper(certs, "relu_1", lambda b: b["width"].update(theorem="index-set"))
    _tamper(certs, "relu_7", lambda b: b["width"].update(theorem="canonical-form"))
    _tamper(certs, "bounded_5", lambda b: b["width"].update(theorem="degree"))
    _tamper(certs, "relu_1", lambda b: b["width"].update(route="main-proof"))  # the main verdict is absorbable
    _tamper(certs, "relu_1", lambda b: b["width"].update(route="every-width"))
    _tamper(certs, "relu_7", lambda b: b["width"].update(verdict="not_absorbable", route="main-proof"))
    _tamper(certs, "bounded_5", lambda b: b["width"].update(verdict="absorbable"))
    # σ = leaky ReLU: its slope at −∞ is not ReLU's, so the skeleton route does not apply
    assert any("slopes" in f for f in _tamper(certs, "leaky_1", lambda b: b["width"].update(route="skeleton", theorem="skeleton")))


def test_changed_class_is_rejected(certs) -> None:
    """The canonical form's impossibility is about bias-free blocks: with the class widened to
    biases (the main verdict, absorbable, still checks) the width answer no longer follows."""
    doc, path = certs["relu_1"]
    doc = copy.deepcopy(doc)
    doc["blocks"][0]["class"].update(biases=True, statement=None)
    doc["class"].update(biases=True, statement=None)
    doc["theorem"] = doc["blocks"][0]["theorem"]
    fails = _rejected(doc, path)
    assert any("bias-free" in f for f in fails)


def test_unverifiable_claims_are_not_rechecked(certs) -> None:
    doc, path = certs["relu_7"]
    doc = copy.deepcopy(doc)
    doc["blocks"][0]["width"]["extra"] = 1
    rep = _verify(doc, path)
    assert rep.accepted and any("extra" in f.detail for f in rep.not_rechecked)
    doc, path = certs["relu_1"]
    doc = copy.deepcopy(doc)
    doc["blocks"][0]["width"].update(route="none", verdict="not_absorbable")
    del doc["blocks"][0]["min_width"]["lower_claim"]
    rep = _verify(doc, path)
    assert rep.accepted and len([f for f in rep.not_rechecked if "width" in f.where]) == 2


def test_cli_note_only_for_latex(tmp_path, capsys) -> None:
    p = CE / "dead_unit.npz"
    assert main(["check", str(p), "--width", "4", "--certificate", str(tmp_path / "c.json")]) == 0
    assert "note:" not in capsys.readouterr().err
    assert main(["check", str(p), "--width", "4", "--certificate", str(tmp_path / "c.tex")]) == 0
    assert ".json certificate only" in capsys.readouterr().err


def _widths(n: int, d: int) -> list[int]:
    return sorted({k for k in (1, n - 1, n, n + 1, n + 2 * d) if k >= 1})


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(glob.glob("counterexamples/*.npz") + glob.glob("examples/*.npz")))
def test_every_catalogue_file_verifies(tmp_path, path) -> None:
    """Honest certificates at widths 1, n − 1, n, n + 1, n + 2d with --min-width, with and without
    --allow-biases: nothing rejected, nothing left not re-checked."""
    model = load(path)
    first = model if hasattr(model, "W_up") else list(getattr(model, "blocks", model))[0]
    for biases in ((), ("--allow-biases",)):
        for k in _widths(first.n, first.d):
            doc = _cert(tmp_path, path, "--width", str(k), "--min-width", *biases)
            rep = _verify(doc, path)
            assert rep.accepted and not rep.not_rechecked, (k, biases, [f.to_json() for f in rep.failures + rep.not_rechecked])


def test_a_min_width_whose_existence_is_open_verifies_fully(tmp_path: Path) -> None:
    # (exists: null is honest — a null-as-absent rule left such certificates not fully checked)
    doc = _cert(tmp_path, CE / "biased_gelu_generic.npz", "--width", "3", "--min-width")
    assert doc["blocks"][0]["min_width"].get("exists") is None
    rep = _verify(doc, CE / "biased_gelu_generic.npz")
    assert rep.accepted and not rep.not_rechecked, [f.to_json() for f in rep.failures + rep.not_rechecked]


def test_a_within_tolerance_width_answer_verifies(tmp_path: Path) -> None:
    """--tol 0.1 --width 6 on a generic ReLU block (d = 2, n = 5): absorbable within the
    tolerance by the canonical form (rigorous ∞-norm bound 0.0725). The checker bounded the same
    block's error by √d·‖·‖₂ (0.105 > 0.1) and rejected the honest answer; it now takes the
    largest row sum of the linear part when that is less."""
    import numpy as np

    rng = np.random.default_rng(0)
    p = tmp_path / "b.npz"
    np.savez(p, W_up=rng.standard_normal((5, 2)), W_down=rng.standard_normal((2, 5)), activation="relu")
    doc = _cert(tmp_path, p, "--tol", "0.1", "--width", "6")
    assert doc["blocks"][0]["width"]["verdict"] == "absorbable" and "near" in doc["blocks"][0]["width"]["canonical_form"]
    _honest(_verify(doc, p))


def test_changed_nested_width_records_are_caught(certs) -> None:
    """The array records of a width witness are re-derived (max |entry|, shape); a min-width record's
    theorem is one of its bounds' records'; an unknown width cites no result; a field the checker does not
    read in a width record's canonical form is 'not re-checked'."""
    def max_abs(b):
        recs = b["width"]["witness"]["block"]["weights"]
        recs["W_down"]["max_abs"] *= 10

    def shape(b):
        recs = b["width"]["witness"]["block"]["weights"]
        recs["W_down"]["shape"] = [recs["W_down"]["shape"][0], -recs["W_down"]["shape"][1]]

    for edit in (max_abs, shape):
        _tamper(certs, "dead_4", edit)
    _tamper(certs, "relu_1", lambda b: b["min_width"].update(theorem="skeleton"))  # cited by neither bound's record
    assert certs["relu_1"][0]["blocks"][0]["min_width"]["value"] is not None
    _tamper(certs, "relu_1", lambda b: b["min_width"].update(theorem="none"))  # (red team 45c/01: a value that cites nothing)
    doc, path = certs["dead_4"]
    doc = copy.deepcopy(doc)
    doc["blocks"][0]["width"]["canonical_form"]["lines"][0]["note"] = 1
    rep = _verify(doc, path)
    assert rep.accepted and rep.not_rechecked, [f.to_json() for f in rep.failures]


def test_an_unknown_width_cites_no_result(tmp_path) -> None:
    doc = _cert(tmp_path, CE / "glu_planted.npz", "--width", "3")
    w = doc["blocks"][0]["width"]
    assert (w["verdict"], w["route"]) == ("unknown", "none")
    doc["blocks"][0]["width"]["theorem"] = "bounded"
    _rejected(doc, CE / "glu_planted.npz")


@pytest.mark.usefixtures("screens_at_any_tolerance")  # (τ = 10⁻³ past 10⁻⁴: tests/conftest.py)
def test_a_narrower_not_absorbable_that_two_merging_lines_contradict_is_not_rechecked(tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A certificate claiming not_absorbable at width 1 for f within 10⁻⁴ of a width-1 block (two up rows 10⁻⁴ rad
    apart, the rest of f an exact antipodal cancellation of the skip) — as a producer without the narrower screen
    wrote it: the checker's own screen finds the pair, so the width claim is not re-checked (exit 4)."""
    import numpy as np
    from test_width import _near_line_pair

    import absorb.engine.tolerance as tolerance_mod  # (width.py reads it at call time; the main decision has its own)

    f = _near_line_pair(1e-4, 1.0)
    path = tmp_path / "f.npz"
    np.savez(path, W_up=f.W_up, W_down=f.W_down, activation=np.array("relu"))
    import absorb.engine.degenerate as degenerate_mod

    monkeypatch.setattr(tolerance_mod, "within_tolerance", lambda *a, **k: None)
    monkeypatch.setattr(degenerate_mod, "_mergeable", lambda *a, **k: [])  # (the canonical form's own merge bound too)
    doc = _cert(tmp_path, path, "--width", "1", "--tol", "1e-3")
    assert doc["blocks"][0]["width"]["verdict"] == "not_absorbable"
    rep = _verify(doc, path)
    assert rep.accepted and any("width 1" in f.claim and ("nearly collinear" in f.detail or "merge" in f.detail)
                                for f in rep.not_rechecked), rep.findings


@pytest.mark.slow
def test_a_min_width_witness_whose_linear_pairs_land_on_a_line_verifies(tmp_path) -> None:
    """Red team 39a/06: bias-free GELU d = 4, n = 13 with M = v·e₁ᵀ and unit 0's row e₁; the exact search runs over budget,
    the upper bound's choice is B = ∅ with antipodal pairs for L₀ — one of which lands on line 0, so the witness reads as
    B = [0]. verify rejected the honest certificate (exit 1); the witness is another description of the same form."""
    from absorb.cli import main

    rng = np.random.default_rng(1)
    U = rng.normal(size=(13, 4))
    U[0], U[1] = [1, 0, 0, 0], [-1, 0.5, 0, 0]
    model, cert = tmp_path / "f.npz", tmp_path / "c.json"
    np.savez(model, W_up=U, W_down=rng.normal(size=(4, 13)), skip=np.outer(rng.normal(size=4), [1, 0, 0, 0]) * 5e-3,
             activation=np.array("gelu"))
    main(["check", str(model), "--tol", "1e-4", "--min-width", "--certificate", str(cert), "-q"])
    assert main(["verify", str(cert), str(model), "-q"]) == 0


@pytest.mark.parametrize("name, n", [("relu2_biased_planted", 5), ("swiglu_biased_planted", 4), ("relu2_linear_planted", 6)])
def test_an_exact_degree_two_witness_answers_every_wider_width(tmp_path, name, n) -> None:
    """Red team 44c/01: the degree-2 skeleton's, the gated skeleton's and the relu2-linear witnesses carried no proved
    (a, e) bound, so padding them (--width N ≥ n) was refused and even --width n came back unknown beside an absorbable
    verdict; their quadratic part is 0 exactly, so f − g = R_L x + R_0 and the bound is (‖R_L‖∞, |R_0|∞)."""
    model = Path(__file__).parent.parent / "counterexamples" / f"{name}.npz"
    for width in (n, n + 2):
        cert = tmp_path / f"w{width}.json"
        assert main(["check", str(model), "--tol", "1e-6", "--width", str(width), "--certificate", str(cert), "-q"]) == 0
        doc = json.loads(cert.read_text())
        entry = doc["blocks"][0]["width"]
        assert entry["verdict"] == "absorbable", entry
        assert checker.verify_certificate(doc, load(str(model))).accepted


def test_the_canonical_form_is_citable_only_where_it_covers_f(tmp_path) -> None:
    """An unknown width answer or a minimal-width record may cite the canonical-form procedure "that computed it" — only
    where that procedure covers f (ungated, bias-free, σ with σ(z) − σ(−z) = z): a biased SwiGLU block's records
    relabelled to it are rejected (red team 49a/02)."""
    path = CE / "swiglu_biased_planted.npz"
    doc = _cert(tmp_path, path, "--width", "2", "--min-width")
    _honest(_verify(doc, path))
    for field in ("min_width", "width"):
        bad = copy.deepcopy(doc)
        bad["blocks"][0][field]["theorem"] = "canonical-form"
        assert any("ungated" in f for f in _rejected(bad, path)), field
