"""What a certificate answers is named and checked on both sides: the structure it records is
the model's, its class's width and sentence are the checked ones, an --activation override
must be repeated to verify, a --layers subset is named in the summary, and a linear witness
is "exact" only when it is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main

ROOT = Path(__file__).resolve().parents[1]
CE = ROOT / "counterexamples"


def _cert(tmp_path: Path, src: Path, *extra: str) -> tuple[Path, Path, dict]:
    model = tmp_path / src.name
    shutil.copy(src, model)
    cert = tmp_path / "c.json"
    main(["check", str(model), "--certificate", str(cert), "-q", *extra])
    return model, cert, json.loads(cert.read_text())


def _verify(cert: Path, doc: dict, model: Path, *extra: str) -> int:
    cert.write_text(json.dumps(doc))
    return main(["verify", str(cert), str(model), *extra])


def test_a_stack_relabelled_as_a_collection_is_rejected(tmp_path: Path) -> None:
    model, cert, doc = _cert(tmp_path, CE / "relu_stack_generic.npz")
    assert doc["input"]["structure"] == "stack"
    doc["input"]["structure"], doc["verdict"] = "collection", "not_absorbable"
    assert _verify(cert, doc, model) == 1


@pytest.mark.parametrize("edit", ["width_none", "width_other", "statement", "extra_key", "header_statement"])
def test_the_class_is_the_checked_one(tmp_path: Path, edit: str) -> None:
    model, cert, doc = _cert(tmp_path, CE / "generic_relu.npz")
    assert _verify(cert, doc, model) == 0
    cls = doc["blocks"][0]["class"]
    if edit == "width_none":
        del cls["width"]
    elif edit == "width_other":
        cls["width"] = cls["width"] + 5
    elif edit == "statement":
        cls["statement"] = "residual-free ungated relu blocks of every width, with any biases"
    elif edit == "extra_key":
        cls["widths"] = "all"
    else:
        doc["class"]["statement"] = "residual-free blocks of every kind, activation and width, with any biases"
    assert _verify(cert, doc, model) == 1


def test_an_activation_override_is_named_on_both_sides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz", "--activation", "relu2")
    assert doc["verdict"] == "not_absorbable"  # for σ = relu2, not the file's relu (absorbable)
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 2
    assert "--activation relu2" in capsys.readouterr().err
    assert main(["verify", str(cert), str(model), "--activation", "relu", "-q"]) == 2
    assert main(["verify", str(cert), str(model), "--activation", "relu2", "-q"]) == 0
    assert "σ = relu2 (--activation" in capsys.readouterr().out


def test_a_layer_subset_is_named_in_the_summary(tmp_path: Path) -> None:
    ck, cert = tmp_path / "ck", tmp_path / "c.json"
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_checkpoint.py"), "--family", "falcon", "--d", "3", "--n", "6",
                    "--layers", "3", "--planted", "0", str(ck)], check=True, capture_output=True, timeout=120)
    assert main(["check", str(ck), "--layers", "0", "--certificate", str(cert), "-q"]) in (0, 3)
    r = subprocess.run([sys.executable, "-m", "absorb", "verify", "-q", str(cert), str(ck)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0 and "only the checkpoint layers" in r.stdout, r.stdout + r.stderr


def test_a_linear_witness_claimed_exact_is_checked(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    src = tmp_path / "src.npz"
    np.savez(src, W_up=rng.standard_normal((3, 3)), W_down=rng.standard_normal((3, 3)), activation=np.array("identity"))
    (tmp_path / "m").mkdir()
    model, cert, doc = _cert(tmp_path / "m", src)
    assert doc["verdict"] == "absorbable" and doc["theorem"]["id"] == "linear"
    assert _verify(cert, doc, model) == 0
    doc["blocks"][0]["witness"]["exact"] = True  # W'_down W'_up ≠ M + W_down W_up exactly (rounding)
    assert _verify(cert, doc, model) == 1


def test_non_finite_and_huge_numbers_are_bad_input_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    text = json.dumps(doc).replace('"tolerance": 1e-09', '"tolerance": Infinity', 1)
    assert "Infinity" in text
    cert.write_text(text)
    assert main(["verify", str(cert), str(model)]) == 2
    assert "Infinity" in capsys.readouterr().err
    doc["blocks"][0]["argument"]["c"] = "1e999999999"  # would build a billion-digit integer
    assert _verify(cert, doc, model) == 1


def test_json_a_reader_may_read_otherwise_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A repeated key (Python keeps the last value, other readers the first: "absorbable" then
    "not_absorbable"), an integer past float64's range (it crashed comparisons with floats) and
    nesting past the recursion limit are refused on reading: one line, exit 2."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    text = json.dumps(doc)
    dup = text.replace('"verdict": "absorbable"', '"verdict": "not_absorbable", "verdict": "absorbable"', 1)
    assert dup != text
    for bad, word in ((dup, "'verdict' appears twice"),
                      (text.replace('"tolerance": 1e-09', '"tolerance": 1' + "0" * 400, 1), "past float64's range"),
                      (text.replace('"tolerance": 1e-09', '"tolerance": 1e400', 1), "past float64's range"),
                      (text.replace('"tolerance": 1e-09', '"tolerance": -1e-400', 1), "below float64's smallest subnormal"),
                      (text.replace('"paper": {', '"paper": {"x": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1), "nested too deeply"),
                      (text.replace('"tolerance": 1e-09', '"tolerance": ' + "9" * 5000, 1), "an integer of thousands of digits"),
                      (text[: text.index('"verdict": "') + 14], "Unterminated string starting at: line 1")):
        assert bad != text
        cert.write_text(bad)
        capsys.readouterr()
        assert main(["verify", str(cert), str(model)]) == 2
        err = capsys.readouterr().err
        assert word in err and len(err.strip().splitlines()) == 1, err
    cert.write_text(text.replace('"tolerance": 1e-09', '"tolerance": ' + str(2**1023), 1))  # in range: read, then judged
    assert main(["verify", str(cert), str(model), "-q"]) == 1


@pytest.mark.parametrize("key", ["input", "parameters", "theorem", "class"])
def test_root_records_of_the_wrong_json_type_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """A root record that must be an object (null allowed for theorem and class) given as a list, a string or a number
    crashed verify (exit 3, an AttributeError): refused on reading, one line, exit 2."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    for bad in ([], "x", 7) + ((None,) if key in ("input", "parameters") else ()):
        cert.write_text(json.dumps({**doc, key: bad}))
        capsys.readouterr()
        assert main(["verify", str(cert), str(model)]) == 2
        err = capsys.readouterr().err
        assert f"key {key!r} must be a JSON object" in err and len(err.strip().splitlines()) == 1, err


def test_fields_read_before_the_checker_of_the_wrong_type_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    for where, key, args in (("input", "path", []), ("parameters", "activation_override", [str(model)])):
        for bad in (7, [1], True):
            cert.write_text(json.dumps({**doc, where: {**doc[where], key: bad}}))
            capsys.readouterr()
            assert main(["verify", str(cert), *args]) == 2
            assert f"{where}.{key} must be a string or null" in capsys.readouterr().err


def test_hash_convention_and_nested_records_are_checked(tmp_path: Path) -> None:
    """The named hash convention must be the checker's (else the array hashes mean something
    else); fields outside the format inside the checkpoint options and the canonical form's
    exact witness leave the certificate not fully checked (exit 4)."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    doc["input"]["hash_convention"] = "md5 of the float32 bytes"
    assert _verify(cert, doc, model) == 1
    model, cert, doc = _cert(tmp_path, CE / "collinear_antipodal.npz")
    found = [b for b in doc["blocks"] if isinstance((b.get("canonical_form") or {}).get("witness_exact"), dict)]
    assert found
    found[0]["canonical_form"]["witness_exact"]["b_down"] = [["1"], ["2"]]
    assert _verify(cert, doc, model) == 4
    doc["parameters"]["checkpoint"] = {"layers": None, "up": None, "down": None, "gate": None, "fold_norm": False, "dtype": "bf16"}
    from absorb.verify._load import unknown_fields
    assert ("parameters.checkpoint", ["dtype"]) in unknown_fields(doc)


def test_labels_no_route_reads_are_not_accepted_as_checked(tmp_path: Path) -> None:
    """A search certificate's kind the checker's routes do not know is a claim nobody checked
    (exit 4); a gated flip (absorbable) that names a search route claims a route it did not take."""
    model, cert, doc = _cert(tmp_path, CE / "relu2_wide_generic.npz")
    sc = doc["blocks"][0]["search"]["certificate"]
    assert isinstance(sc, dict)
    sc["kind"] = "exhaustive-exact-rational-proof"
    assert _verify(cert, doc, model) == 4
    model, cert, doc = _cert(tmp_path, CE / "swiglu_biased_planted.npz")
    assert doc["verdict"] == "absorbable" and doc["blocks"][0]["argument"]["route"] is None
    assert _verify(cert, doc, model) == 0
    doc["blocks"][0]["argument"]["route"] = "linear"
    assert _verify(cert, doc, model) == 1


def test_canonical_form_indices_are_whole_numbers(tmp_path: Path) -> None:
    model, cert, doc = _cert(tmp_path, CE / "collinear_antipodal.npz")
    assert _verify(cert, doc, model) == 0
    ok = json.loads(json.dumps(doc))
    for edit in ("delta", "width"):
        doc = json.loads(json.dumps(ok))
        found = [b for b in doc["blocks"] if isinstance(b.get("canonical_form"), dict)]
        cf = found[0]["canonical_form"]
        if edit == "delta" and isinstance(cf.get("choice"), dict):
            cf["choice"]["delta"] = [v + 0.5 if i == 0 else v for i, v in enumerate(cf["choice"]["delta"])]
        else:
            cf["width"] = cf["width"] + 0.5
        assert _verify(cert, doc, model) == 1, edit


def test_an_honest_shifted_index_set_certificate_is_accepted(tmp_path: Path) -> None:
    """σ(z) = ReLU(z − 3/2) has no flip identity σ(z) − σ(−z) = c·z but the shifted one
    σ(z) − σ(−z − 2s) = c·(z + s), s = −3/2: with biases allowed the planted S is a witness (its
    units get biases 3), and the certificate recording s is accepted."""
    U = np.array([[1.0, 0], [0, 1], [1, 1], [1, -2], [0.5, 3]])
    D = np.array([[-1.0, 0, 0.5, -0.25, 0.75], [0, -1, 1.25, 0.5, -1]])
    src = tmp_path / "src.npz"
    np.savez(src, W_up=U, W_down=D, activation=np.array("expr:Max(0,x-3/2)"))
    (tmp_path / "m").mkdir()
    model, cert, doc = _cert(tmp_path / "m", src, "--allow-biases")
    assert doc["verdict"] == "absorbable" and doc["blocks"][0]["argument"]["s"] == "-3/2"
    assert _verify(cert, doc, model) == 0


def test_a_canonical_witness_beyond_the_guarantee_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exact width-5 witness whose float64 rounding (1/3 → fl(1/3), coefficients near 2^44) is
    off by ~5e-4 relative where f vanishes: the engine says unknown; a producer patched to accept
    it (eval_error then edited to 1e-16) must not pass the checker, whose own bound of the rounding
    (through σ's Lipschitz constant) is far above τ."""
    from absorb import Block, get_activation
    from absorb.certificate import build_certificate
    from absorb.engine import decide
    from absorb.engine import degenerate as dg

    B = 2.0**40
    U = np.array([[3.0, 1], [3, -1], [3, 2], [1, -1], [-1, 1]])
    W = np.array([[5 * B, 0, -4 * B, 1, 3], [0, 5 * B, -2 * B, 2, -1]])
    M = -(W[:, :3] @ U[:3]) + np.outer(np.array([7 * B, 5 * B]), U[3])
    model = tmp_path / "blk.npz"
    np.savez(model, W_up=U, W_down=W, skip=M, activation=np.array("relu"))
    blk = Block(U, W, get_activation("relu"), skip=M)
    assert decide(blk).verdict.value == "unknown"
    monkeypatch.setattr(dg, "eval_threshold", lambda tol, N: float("inf"))  # the forger's producer
    dec = decide(blk)
    assert dec.verdict.value == "absorbable"
    doc = build_certificate(dec, blk, seed=0).to_json()
    doc["blocks"][0]["witness"]["eval_error"] = 1e-16
    assert _verify(tmp_path / "forged.json", doc, model) == 1


@pytest.mark.parametrize("tol", [2.0, 1.0, True, 0.0])
def test_a_tolerance_outside_0_1_is_rejected(tmp_path: Path, tol: object) -> None:
    """At τ ≥ 1 dropping the skip (S = ∅, residual 1) would pass as absorption: the producer refuses
    such a τ, and so must the checker (JSON true reads as 1)."""
    model, cert, doc = _cert(tmp_path, CE / "generic_relu.npz")
    doc["parameters"]["tolerance"] = tol
    for b in doc["blocks"]:
        b["tolerance"] = tol
    b = doc["blocks"][0]
    doc["verdict"] = b["verdict"] = "absorbable"
    b["witness"] = {"S": [], "residual": 1.0}
    b.pop("search", None)
    assert _verify(cert, doc, model) == 1


def test_an_out_of_range_block_names_the_range_and_the_fix(tmp_path: Path) -> None:
    """docs/degenerate.md: outside [2^-200, 2^200] the canonical form's answer is unknown, naming the
    range and the fix; the reason printed is the index set's, so it must carry the canonical form's. A block
    wholly at 2^300 is decided through its exact rescaling (docs/user-guide.md, Scale); rows at 2^300 and
    2^-300 side by side stay out of range in every frame."""
    U, D = np.array([[1.0, 0], [-1, 0], [0, 1]]), np.array([[2.0, 5, 0], [3, 7, -1]])
    model = tmp_path / "b.npz"

    def check(s: np.ndarray) -> dict:
        np.savez(model, W_up=U * s[:, None], W_down=D / s[None, :], activation=np.array("relu"))
        r = subprocess.run([sys.executable, "-m", "absorb", "check", str(model), "--json"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
        return json.loads(r.stdout)["blocks"][0]

    assert check(np.full(3, 2.0**300))["verdict"] == check(np.ones(3))["verdict"] == "absorbable"
    b = check(np.array([2.0**300, 2.0**300, 2.0**-300]))
    assert b["verdict"] == "unknown" and "2^200" in b["reason"] and "rescale" in b["reason"], b["reason"]


def test_a_collections_theorem_and_added_fields_are_checked(tmp_path: Path) -> None:
    """A collection cites no single result (its verdict follows from its blocks'); a field outside the
    format anywhere in the fixed-shape parts is a claim no check reads: not accepted (exit 4)."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    assert _verify(cert, doc, model) == 0
    for where in ("root", "parameters", "input", "witness", "hypothesis", "weights"):
        d = json.loads(json.dumps(doc))
        b = d["blocks"][0]
        target = {"root": d, "parameters": d["parameters"], "input": d["input"], "witness": b["witness"],
                  "hypothesis": b["hypotheses"][0], "weights": b["weights"]["W_up"]}[where]
        target["proved_at_every_width"] = True
        assert _verify(cert, d, model) == 4, where


def test_fields_of_another_case_or_outside_the_format_are_not_accepted(tmp_path: Path) -> None:
    """A field no check reads — the value-activation variant's fields on a block without h, a Gram
    bound on a rank-route argument, an added key in the search record or the activation record —
    leaves the certificate not fully checked (exit 4)."""
    model, cert, doc = _cert(tmp_path, CE / "relu2_bias_free_class.npz")
    assert _verify(cert, doc, model) == 0
    for edit in ("k_value", "search", "function"):
        d = json.loads(json.dumps(doc))
        b = d["blocks"][0]
        if edit == "k_value":
            b["argument"].update(value_activation="x**7", k_value=6)
        elif edit == "search":
            b["search"] = {"method": "mitm", "status": "infeasible", "all_sets": 1024}
        else:
            b["activation_function"]["lipschitz"] = 0
        assert _verify(cert, d, model) in (1, 4), edit


@pytest.mark.parametrize("gone", ["blocks.0.class", "blocks.0.hypotheses", "blocks.0.properties", "blocks.0.argument",
                                  "input.structure", "blocks.0.witness.block"])
def test_a_record_without_a_field_its_format_writes_is_rejected(tmp_path: Path, gone: str) -> None:
    """Deleting a field the checker reads is a tampering, not a certificate that says less."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    assert doc["verdict"] == "absorbable" and _verify(cert, doc, model) == 0
    *path, key = gone.split(".")
    rec = doc
    for p in path:
        rec = rec[int(p)] if p.isdigit() else rec[p]
    del rec[key]
    assert _verify(cert, doc, model) == 1


@pytest.mark.parametrize("tol", ["0.001", "0.0015"])  # (from 0.002 on the bar, which counts every scaled flip c·g_S
# (K ≈ 71 widened by about 1 + 1/ν, ν = 0.5), reaches S = [0, 11, 13], whose flip fails: unknown; from 0.003 on units 6 and 11,
# at cos 0.99989, come within the tolerance of collinear — both sides withhold)
@pytest.mark.usefixtures("screens_at_any_tolerance")  # (the degree-2 route past 10⁻⁴: tests/conftest.py)
def test_twenty_units_are_re_enumerated_bound_included(tmp_path: Path, tol: str) -> None:
    """n = 20 (the search's own enumeration limit): the checker re-enumerates every set itself,
    so the honest certificate is accepted in full (it was exit 4: the checker stopped at 16) and
    a recorded search bound raised tenfold is rejected."""
    model, cert, doc = _cert(tmp_path, CE / "relu2_wide_generic.npz", "--tol", tol)
    assert doc["verdict"] == "not_absorbable"
    assert _verify(cert, doc, model) == 0
    search = doc["blocks"][0].get("search")
    if search:  # (the lifted index-set route records its search; the skeleton's own enumeration does not)
        search["bound"] = 10 * search["bound"]
        assert _verify(cert, doc, model) == 1


@pytest.mark.parametrize("n,low_bits", [(0, 14), (1, 14), (5, 2), (7, 3), (6, 14)])
def test_subset_sums_cover_every_set_once_in_code_order(n: int, low_bits: int) -> None:
    """The checker's chunked enumeration: chunk h, row j is the set with code h·2^low_bits + j
    (integer entries, so every float sum is exact and the comparison is exact anywhere)."""
    from absorb.verify._numerics import subset_sums

    K = np.random.default_rng(n).integers(-50, 50, size=(n, 3)).astype(np.float64)
    rows = np.concatenate(list(subset_sums(K, low_bits)), axis=0)
    assert rows.shape == (1 << n, 3)
    for code in range(1 << n):
        assert np.array_equal(rows[code], K[[i for i in range(n) if code >> i & 1]].sum(axis=0))


@pytest.mark.parametrize("gate", ["tanh(Max(0,x))", "1/(1+exp(-x)) + exp(-x**2)/10", "Max(0,tanh(x))"])
def test_honest_gated_skeleton_certificates_of_users_step_gates_verify(tmp_path: Path, gate: str) -> None:
    """A step-like user gate (L₋ = 0, L₊ = 1) without a flip identity: the refuted flip identity (tried for a witness)
    is not recorded, and max(0, tanh z)'s finiteness and limits are derived by the checker (by structure, and as
    the max of its arguments' limits), so the honest not_absorbable verifies."""
    rng = np.random.default_rng(11)
    G, U, D = rng.standard_normal((2, 2)), rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    model, cert = tmp_path / "g.npz", tmp_path / "c.json"
    np.savez(model, W_gate=G, W_up=U, W_down=D, activation=np.array("expr:" + gate))
    main(["check", str(model), "--tol", "1e-5", "--certificate", str(cert), "-q"])  # (past 1e-4 the route needs a robust bound)
    doc = json.loads(cert.read_text())
    assert doc["verdict"] == "not_absorbable" and all(p["status"] == "proved" for p in doc["blocks"][0]["properties"])
    assert main(["verify", str(cert), str(model), "-q"]) == 0


def test_finiteness_by_structure_refuses_division_roots_and_logs() -> None:
    import sympy as sp

    from absorb.verify._beyond import _finite_by_structure

    x = sp.Symbol("x", real=True)
    assert _finite_by_structure(sp.Max(0, sp.tanh(x)) + sp.exp(-x**2) * x**3 - sp.Abs(sp.atan(x)))
    for bad in (1 / x, sp.log(1 + x**2), sp.sqrt(x), x ** sp.Rational(1, 3), sp.Max(0, 1 / (1 + sp.exp(-x))), sp.nan, sp.oo * x):
        assert not _finite_by_structure(bad), bad


def test_checkpoint_options_of_a_wrong_type_are_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """parameters.checkpoint records the options as written (strings or null, fold_norm a boolean): another type
    is a malformed certificate (exit 2, one line naming the field), never an internal error nor accepted."""
    ck, cert = tmp_path / "ck", tmp_path / "c.json"
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_checkpoint.py"), "--family", "falcon", "--d", "3", "--n", "6",
                    "--layers", "2", "--planted", "0", str(ck)], check=True, capture_output=True, timeout=120)
    main(["check", str(ck), "--layers", "1", "--certificate", str(cert), "-q"])
    ok = json.loads(cert.read_text())
    for key, val in (("layers", 1), ("layers", [1]), ("layers", True), ("fold_norm", "yes"), ("fold_norm", 1), ("up", 5)):
        doc = json.loads(json.dumps(ok))
        doc["parameters"]["checkpoint"][key] = val
        capsys.readouterr()
        assert _verify(cert, doc, ck) == 2, (key, val)
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"parameters.checkpoint.{key}" in err, err


def test_a_gate_whose_float_value_at_zero_is_rounding_is_zero() -> None:
    """tanh(x) + sin(3)² + cos(3)² − 1 is tanh exactly (float64 gives g(0) = −1.1·10⁻¹⁶): its constant has no certified
    sign, so that spelling is refused (write 0); tanh itself is decided (linearization) with no map of 'gate row 0' units
    claimed (such units are 0)."""
    from absorb import Block, decide, get_activation
    from absorb._errors import InvalidInput
    from absorb.verify._tolerance import contradiction

    rng = np.random.default_rng(11)
    G, U, D = rng.standard_normal((2, 2)), rng.standard_normal((2, 2)), 1e-5 * rng.standard_normal((2, 2))
    blk = Block(U, D, get_activation("expr:tanh(x)"), W_gate=G)
    dec = decide(blk, tol=1e-3)
    assert dec.verdict.value == "not_absorbable" and dec.theorem.value == "linearization", dec.reason
    assert contradiction(blk, 1e-3, estimated=True) is None
    with pytest.raises(InvalidInput, match="sign is not certified"):
        get_activation("expr:tanh(x) + sin(3)**2 + cos(3)**2 - 1")


def test_records_cut_short_or_padded_are_not_fully_checked(tmp_path: Path) -> None:
    """A record the producer always writes in full, with a field deleted (a flip's constant c, every hypothesis, an
    argument's M_nonzero_entry, the witness block's arrays, min_width.exists), or a field the format does not have
    inside a --min-width claim's witness: not fully checked (exit 4) or rejected, never accepted as checked."""
    model, cert, doc = _cert(tmp_path, CE / "biases_planted.npz", "--tol", "1e-3")
    assert _verify(cert, doc, model) == 0
    for cut in (("witness", "c"), ("argument", "M_nonzero_entry")):
        d = json.loads(json.dumps(doc))
        del d["blocks"][0][cut[0]][cut[1]]
        assert _verify(cert, d, model) == 4, cut
    d = json.loads(json.dumps(doc))
    d["blocks"][0]["hypotheses"] = []
    assert _verify(cert, d, model) == 4
    d = json.loads(json.dumps(doc))
    del d["blocks"][0]["hypotheses"][0]["statement"]
    assert _verify(cert, d, model) == 4
    model, cert, doc = _cert(tmp_path, CE / "collinear_antipodal.npz", "--tol", "1e-3", "--min-width")
    assert _verify(cert, doc, model) == 0
    d = json.loads(json.dumps(doc))
    del d["blocks"][0]["min_width"]["exists"]
    assert _verify(cert, d, model) in (1, 4)
    wit = (d["blocks"][0]["min_width"].get("upper_claim") or {}).get("witness")
    if isinstance(wit, dict):
        d = json.loads(json.dumps(doc))
        d["blocks"][0]["min_width"]["upper_claim"]["witness"]["zz"] = 1
        assert _verify(cert, d, model) == 4
    d = json.loads(json.dumps(doc))
    del d["blocks"][0]["witness"]["block"]["weights"]
    assert _verify(cert, d, model) in (1, 4)


def test_a_record_written_as_null_is_a_record_cut(tmp_path: Path) -> None:
    """A field every certificate writes, or one a record always carries, set to null counts as absent: the witness's
    float block and the properties were silently not checked (exit 0)."""
    model, cert, doc = _cert(tmp_path, CE / "planted_relu.npz")
    for path, code in ((("witness", "block"), 4), (("witness", "block", "weights"), 4), (("argument", "M_nonzero_entry"), 4),
                       (("properties",), 1)):
        bad = json.loads(json.dumps(doc))
        rec = bad["blocks"][0]
        for k in path[:-1]:
            rec = rec[k]
        rec[path[-1]] = None
        assert _verify(cert, bad, model, "-q") == code, path
