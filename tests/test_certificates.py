"""Certificates: JSON round trip through the independent checker for every verdict kind,
a table of tamperings (each rejected with exit 1 and its reason), bad input (exit 2),
atomic writes, and the LaTeX/PDF rendering compiled by a real pdflatex."""

from __future__ import annotations

import ast
import json
import math
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb.certificate import Certificate, build_certificate
from absorb.certificate._theorems import theorem_info
from absorb.certificate._util import array_sha256, tex_escape
from absorb.certificate.write import CertificateError, compile_pdf
from absorb.cli import main
from absorb.engine import decide
from absorb.io import load
from absorb.verify import _infeasible, _numerics, _weights, checker

HAVE_PDFLATEX = shutil.which("pdflatex") is not None and shutil.which("pdftotext") is not None


# ----------------------------------------------------------------------- instances --


def _instances(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    d, n = 3, 8
    out: dict[str, dict[str, np.ndarray]] = {}
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    D[:, [1, 4, 6]] = -np.linalg.inv(U[[1, 4, 6]])  # planted: D_S U_S = -I for S = {1, 4, 6}
    out["planted_relu"] = dict(W_up=U, W_down=D, activation=np.array("relu"))
    out["generic_relu"] = dict(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=np.array("relu"))
    out["relu2"] = dict(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=np.array("relu2"))
    out["swiglu"] = dict(W_up=rng.standard_normal((n, d)), W_gate=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)),
                         activation=np.array("swiglu"))
    out["tanh"] = dict(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=np.array("tanh"))
    out["identity"] = dict(W_up=rng.standard_normal((2, d)), W_down=rng.standard_normal((d, 2)), activation=np.array("identity"))
    out["relu2_stack"] = {f"blocks.{i}.{k}": rng.standard_normal(shape) for i in range(2)
                          for k, shape in (("W_up", (n, d)), ("W_down", (d, n)))}
    out["relu2_stack"]["activation"] = np.array("relu2")
    out["hc_relu"] = dict(W_up=rng.standard_normal((n, 2)), W_down=rng.standard_normal((2, n)), H_res=np.array([[1.0, 0.25], [0.125, 0.75]]),
                          H_pre=np.array([0.5, 0.5]), H_post=np.array([1.0, 0.25]), activation=np.array("relu"))
    stack: dict[str, np.ndarray] = {"activation": np.array("gelu")}
    for i in range(2):
        Ui, Di = rng.standard_normal((6, 2)), rng.standard_normal((2, 6))
        Di[:, [0, 3]] = -np.linalg.inv(Ui[[0, 3]])
        stack[f"blocks.{i}.W_up"], stack[f"blocks.{i}.W_down"] = Ui, Di
    out["planted_gelu_stack"] = stack
    out["unknown_sublinear_gap"] = dict(W_up=rng.standard_normal((n, d)), W_down=rng.standard_normal((d, n)), activation=np.array("expr:x + sin(x)"))
    return out


EXPECTED = {  # name: (verdict, theorem)
    "planted_relu": ("absorbable", "index-set"),
    "generic_relu": ("not_absorbable", "index-set"),
    "relu2": ("not_absorbable", "degree"),
    "swiglu": ("not_absorbable", "linearization"),
    "tanh": ("not_absorbable", "bounded"),
    "identity": ("not_absorbable", "linear"),
    "relu2_stack": ("not_absorbable", "depth"),
    "hc_relu": ("not_absorbable", "index-set"),
    "planted_gelu_stack": ("absorbable", "composition"),
    "unknown_sublinear_gap": ("unknown", "none"),
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """name -> (model.npz, certificate.json), made through the CLI."""
    root = tmp_path_factory.mktemp("certs")
    out = {}
    for name, arrays in _instances(np.random.default_rng(7)).items():
        model = root / f"{name}.npz"
        np.savez(model, **arrays)
        cert = root / f"{name}.json"
        rc = main(["check", str(model), "--certificate", str(cert)])
        assert rc == (3 if EXPECTED[name][0] == "unknown" else 0), name
        out[name] = (model, cert)
    return out


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


# ---------------------------------------------------------------------- round trip --


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_certificate_records_verdict_and_verifies(name: str, certs: dict, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs[name]
    doc = _doc(cert)
    assert doc["schema"] == "absorb-certificate" and doc["schema_version"] == 1
    assert (doc["verdict"], doc["theorem"]["id"]) == EXPECTED[name]
    assert doc["parameters"]["tolerance"] == 1e-9 and doc["parameters"]["seed"] == 0
    assert doc["tool"]["absorb"] and doc["tool"]["numpy"] and doc["tool"]["sympy"]
    loaded = load(model)
    blocks = loaded.blocks if hasattr(loaded, "blocks") else (loaded,)
    for b, entry in zip(blocks, doc["blocks"]):
        assert entry["weights"]["W_up"]["sha256"] == array_sha256(b.W_up)
        assert entry["weights"]["W_down"]["sha256"] == array_sha256(b.W_down)
    capsys.readouterr()
    assert main(["verify", str(cert)]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("accepted")


def test_json_round_trip_is_exact(certs: dict) -> None:
    text = certs["planted_relu"][1].read_text()
    c = Certificate.loads(text)
    assert Certificate.loads(c.dumps()).document == c.document
    assert c.verdict == "absorbable" and c.theorem == "index-set"
    w = c.blocks[0]["witness"]
    assert w["S"] == [1, 4, 6] and w["residual"] <= 1e-9


def test_hash_convention_is_float64_little_endian_c_order() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    import hashlib

    assert array_sha256(a) == hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()
    assert array_sha256(np.asfortranarray(a.astype(float))) == array_sha256(a)


def test_verify_json_output_and_model_argument(certs: dict, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs["relu2"]
    capsys.readouterr()
    assert main(["verify", str(cert), str(model), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accepted"] and out["result"] == "accepted" and out["failures"] == 0


def test_builder_rejects_a_mismatched_model() -> None:
    from absorb import Block, get_activation

    a = Block(np.eye(2), -np.eye(2), get_activation("relu"))
    b = Block(np.eye(2), -np.eye(2), get_activation("relu"), name="other")
    with pytest.raises(ValueError):
        build_certificate(decide(a), b, seed=0)


# ------------------------------------------------------------------------- tampering --


def _set(path: list, value: object):
    def mut(doc: dict) -> None:
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return mut


def _degree_for_relu(doc: dict) -> None:
    b = doc["blocks"][0]
    b["theorem"] = theorem_info("degree")  # (a forger cites the whole record: the degree check is what refutes it)
    b["argument"].update(k=2, k_activation=2)
    b["verdict"] = "not_absorbable"
    doc["theorem"] = b["theorem"]


TAMPERINGS = [
    # (id, instance, mutation of the JSON document, substring of the rejection)
    ("changed S", "planted_relu", _set(["blocks", 0, "witness", "S"], [1, 4, 5]), "max(τ, √d"),
    ("changed residual", "planted_relu", _set(["blocks", 0, "witness", "residual"], 1e-10), "recorded residual"),
    ("changed verdict: absorbable -> not", "planted_relu", _set(["blocks", 0, "verdict"], "not_absorbable"), "follows from"),
    ("overstated bound", "generic_relu", _set(["blocks", 0, "search", "bound"], 50.0), "not overstated"),
    ("bound below tolerance", "generic_relu", _set(["blocks", 0, "search", "bound"], 1e-12), "exceeds the distance bar"),
    ("changed verdict: not -> absorbable", "generic_relu", _set(["blocks", 0, "verdict"], "absorbable"), "index set S"),
    ("overall verdict changed", "generic_relu", _set(["verdict"], "absorbable"), "overall verdict"),
    ("wrong theorem for ReLU (degree)", "generic_relu", _degree_for_relu, "homogeneous of degree 2"),
    ("changed weight hash", "generic_relu", _set(["blocks", 0, "weights", "W_up", "sha256"], "0" * 64), "SHA-256 of W_up"),
    ("changed recorded shape", "generic_relu", _set(["blocks", 0, "weights", "W_up", "shape"], [1, 1]), "with shape (1, 1)"),
    ("changed activation", "generic_relu", _set(["blocks", 0, "activation_function", "srepr"], "Symbol('x')"), "activation"),
    ("raised tolerance", "generic_relu", _set(["parameters", "tolerance"], 2.0), "tolerance"),
    ("changed degree k", "relu2", lambda d: d["blocks"][0]["argument"].update(k=3, k_activation=3), "homogeneous of degree 3"),
    ("degree verdict made unknown", "relu2", _set(["blocks", 0, "verdict"], "unknown"), "verdict was changed"),
    ("changed nonzero entry of M", "relu2", _set(["blocks", 0, "argument", "M_nonzero_entry", "value"], 2.0), "M[0,0]"),
    ("linearization on a gate-free theorem", "relu2", _set(["blocks", 0, "theorem"], theorem_info("linearization")), "gated"),
    ("changed g'(0)", "swiglu", _set(["blocks", 0, "argument", "dg0"], "1"), "g'(0)"),
    ("changed Jacobian", "swiglu", lambda d: d["blocks"][0]["argument"]["jacobian_f_at_0"][0].__setitem__(0, "0"), "Jacobian"),
    ("bounded claimed for ReLU", "generic_relu", lambda d: (d["blocks"][0]["theorem"].update(id="bounded"), d["blocks"][0].update(verdict="not_absorbable")), "bounded"),
    ("overstated singular value", "identity", _set(["blocks", 0, "argument", "sigma_lower_bound"], 100.0), "not overstated"),
    ("stack claimed absorbable", "relu2_stack", lambda d: (d.update(verdict="absorbable"), d["theorem"].update(id="composition")), "composition"),
    ("composition claimed as depth", "planted_gelu_stack", lambda d: (d.update(verdict="not_absorbable"), d["theorem"].update(theorem_info("depth"))),
     "o(|x|) at 0"),
    ("another theorem's text under its id", "generic_relu", lambda d: d["blocks"][0]["theorem"].update(statement="at any width"),
     "that result's own"),
    ("changed H_res hash", "hc_relu", _set(["blocks", 0, "weights", "H_res", "sha256"], "f" * 64), "SHA-256 of H_res"),
    ("unknown made not_absorbable", "unknown_sublinear_gap", _set(["blocks", 0, "verdict"], "not_absorbable"), "the evidence supports 'unknown'"),
    ("printed values changed", "relu2", lambda d: d["blocks"][0]["weights"]["W_up"]["values"][0].__setitem__(0, 0.5), "printed values"),
]


@pytest.mark.parametrize("tid,name,mutate,reason", TAMPERINGS, ids=[t[0] for t in TAMPERINGS])
def test_tampered_certificate_is_rejected(tid: str, name: str, mutate, reason: str, certs: dict, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs[name]
    doc = _doc(cert)
    mutate(doc)
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(bad), str(model)]) == 1, tid
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("rejected") and reason in last, last


def test_changed_weight_in_the_model_is_rejected(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs["planted_relu"]
    arrays = dict(np.load(model))
    arrays["W_down"] = arrays["W_down"].copy()
    arrays["W_down"][0, 2] += 1e-3
    other = tmp_path / "changed.npz"
    np.savez(other, **arrays)
    capsys.readouterr()
    assert main(["verify", str(cert), str(other)]) == 1
    assert "SHA-256 of W_down" in capsys.readouterr().out


def test_changed_weight_with_matching_hash_is_still_rejected(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An attacker who also rewrites the hash gains nothing: the witness no longer checks."""
    model, cert = certs["planted_relu"]
    arrays = dict(np.load(model))
    arrays["W_down"] = arrays["W_down"].copy()
    arrays["W_down"][0, 4] += 1e-3  # a column in S
    other = tmp_path / "changed.npz"
    np.savez(other, **arrays)
    doc = _doc(cert)
    doc["blocks"][0]["weights"]["W_down"] = {"shape": [3, 8], "sha256": array_sha256(arrays["W_down"])}
    bad = tmp_path / "cert.json"
    bad.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(bad), str(other)]) == 1
    assert "max(τ, √d" in capsys.readouterr().out


# ------------------------------------------------------------- checker components --


def test_what_could_not_be_rechecked_is_not_accepted(certs: dict, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs["generic_relu"]
    import sys

    # pretend n = 8 is beyond re-enumeration and the dual certificate beyond re-checking
    monkeypatch.setattr(_infeasible, "ENUM_MAX_N", 4)
    monkeypatch.setattr(_numerics, "EXACT_WORK", 0)
    monkeypatch.setitem(sys.modules, "absorb.verify.dual_bound", None)
    capsys.readouterr()
    assert main(["verify", str(cert)]) == 4  # not fully checked is not accepted
    assert "not fully checked" in capsys.readouterr().out
    assert main(["verify", str(cert), "--strict"]) == 4  # --strict: a synonym of the default
    assert "could not be re-checked" in capsys.readouterr().out


@pytest.mark.parametrize("have_module", [True, False])
def test_dual_certificate_recheck(have_module: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Y = I proves infeasibility when every w_iᵀu_i = 0: bound |tr Y|/(‖Y‖‖T‖) = 1."""
    import sys

    import absorb.verify.dual_bound as dual_bound_module
    from absorb import Block, get_activation

    calls = []
    if not have_module:
        monkeypatch.setitem(sys.modules, "absorb.verify.dual_bound", None)  # import fails: exact fallback
    else:  # the module's bound is the one used
        real = dual_bound_module.check_dual_bound
        monkeypatch.setattr(dual_bound_module, "check_dual_bound", lambda *a: calls.append(1) or real(*a))
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    D = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, -1.0]])  # w_i ⟂ u_i
    blk = Block(U, D, get_activation("relu"))
    ok = checker._Ctx(checker.Report(), 1e-9, 0)
    search = {"status": "infeasible", "bound": 0.99, "certificate": {"kind": "dual", "Y": np.eye(2).tolist()}}
    checker._check_infeasible(ok, "b", blk, search, -np.eye(2))
    assert ok.report.accepted and not ok.report.not_rechecked
    bad = checker._Ctx(checker.Report(), 1e-9, 0)
    with pytest.raises(checker._Reject):
        checker._check_infeasible(bad, "b", blk, dict(search, bound=1.5), -np.eye(2))
    # Y = e2 e2ᵀ: c = (0, 0, −1), ⟨T,Y⟩ = −1, so Σ b_i c_i + 1 ranges over [0, 1] ∋ 0: proves nothing.
    low = {"status": "infeasible", "bound": 0.5, "certificate": {"kind": "dual-low-rank", "A": [[0.0], [1.0]], "B": [[0.0], [1.0]]}}
    weak = checker._Ctx(checker.Report(), 1e-9, 0)
    with pytest.raises(checker._Reject):
        checker._check_infeasible(weak, "b", blk, low, -np.eye(2))
    assert bool(calls) == have_module


def test_enumeration_recheck_agrees_with_brute_force() -> None:
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((6, 2)), rng.standard_normal((2, 6))
    lower, upper = checker._enumerate_lower_bound(U, D, -np.eye(2))
    import itertools

    best = min(np.linalg.norm(D[:, list(S)] @ U[list(S)] + np.eye(2)) for r in range(7) for S in itertools.combinations(range(6), r))
    best /= np.sqrt(2)
    assert lower <= best <= upper and upper - lower < 1e-12


def test_symbolic_rederivations() -> None:
    import sympy as sp

    from absorb.model.activations import get_activation

    assert checker.homogeneous_of_degree(get_activation("relu2").expr, sp.Integer(2))
    assert not checker.homogeneous_of_degree(get_activation("relu").expr, sp.Integer(2))
    assert checker._gate_derivative_at_zero(get_activation("silu").expr) == sp.Rational(1, 2)
    assert checker._gate_derivative_at_zero(get_activation("sigmoid").expr) is None
    assert checker.flip_constant(get_activation("softplus").expr, False) == 1
    assert checker.flip_constant(get_activation("leaky_relu").expr, False) == sp.Rational(101, 100)
    assert checker.flip_constant(get_activation("tanh").expr, False) is None
    assert checker.flip_constant(get_activation("sigmoid").expr, True) == 1
    assert checker.is_bounded(get_activation("tanh").expr) and not checker.is_bounded(get_activation("relu").expr)
    assert checker.is_relu_or_gelu(get_activation("gelu").expr) and not checker.is_relu_or_gelu(get_activation("silu").expr)


def test_checker_is_independent_of_the_engine() -> None:
    """The checker module imports nothing from the decision route (AST of its imports)."""
    import absorb.verify.checker as mod

    tree = ast.parse(Path(mod.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    banned = ("absorb.engine", "absorb.search", "absorb.symbolic", "absorb.certificate", "absorb.report")
    assert not [m for m in names if m.startswith(banned)], names


# ----------------------------------------------------------------------- bad input --


def test_verify_bad_input_exits_2(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {
        "missing.json": None,
        "notjson.json": "{not json",
        "other.json": json.dumps({"schema": "something-else"}),
        "future.json": json.dumps({**_doc(certs["relu2"][1]), "schema_version": 99}),
        "nomodel.json": json.dumps({**_doc(certs["relu2"][1]), "input": {"path": str(tmp_path / "gone.npz")}}),
    }
    for fname, text in cases.items():
        p = tmp_path / fname
        if text is not None:
            p.write_text(text)
        capsys.readouterr()
        assert main(["verify", str(p)]) == 2, fname
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err


def test_certificate_suffix_must_be_json_tex_or_pdf(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = certs["relu2"]
    out = tmp_path / "cert.txt"
    with pytest.raises(SystemExit) as exc:
        main(["check", str(model), "--certificate", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ".json, .tex or .pdf" in err
    assert not out.exists()


def test_missing_pdflatex_leaves_nothing_behind(certs: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = certs["relu2"]
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    out = tmp_path / "cert.pdf"
    assert main(["check", str(model), "--certificate", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "texlive-latex-base" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not HAVE_PDFLATEX, reason="pdflatex not installed")
def test_pdflatex_failure_reports_first_error_line() -> None:
    with pytest.raises(CertificateError) as exc:
        compile_pdf("\\documentclass{article}\\begin{document}\\undefinedmacro\\end{document}")
    assert "Undefined control sequence" in str(exc.value) and "\n" not in str(exc.value)


def test_missing_output_directory_is_bad_input(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = certs["relu2"]
    assert main(["check", str(model), "--certificate", str(tmp_path / "no" / "c.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_certificate_at_a_symbolic_link_is_written_where_it_points(certs: dict, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--certificate LINK keeps the link and replaces the file it points to (as open() would),
    checking that file's folder; a link into a missing folder, and a special file, are refused
    before any work."""
    model, reference = certs["relu2"]
    (tmp_path / "store").mkdir()
    target = tmp_path / "store" / "c.json"
    target.write_text("old")
    link = tmp_path / "c.json"
    link.symlink_to(target)
    assert main(["check", str(model), "--certificate", str(link)]) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert _doc(target)["verdict"] == _doc(reference)["verdict"] and sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "store"]
    dangling = tmp_path / "d.json"
    dangling.symlink_to(tmp_path / "missing" / "d.json")
    capsys.readouterr()
    assert main(["check", str(model), "--certificate", str(dangling)]) == 2
    assert "does not exist" in capsys.readouterr().err and dangling.is_symlink()
    # a special file (here a FIFO; as root, /dev/null behind a link) is refused, never renamed over
    import os
    import stat

    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    (tmp_path / "g.json").symlink_to(fifo)
    for out in (fifo, tmp_path / "g.json"):
        assert main(["check", str(model), "--certificate", str(out)]) == 2
        assert "not a regular file" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and (tmp_path / "g.json").is_symlink()
    (tmp_path / "h.json").symlink_to(str(tmp_path / "nofolder") + "/")  # a link to a folder not made yet
    assert main(["check", str(model), "--certificate", str(tmp_path / "h.json")]) == 2
    assert "is a link to a folder" in capsys.readouterr().err and not (tmp_path / "nofolder").exists()
    (tmp_path / "i.json").symlink_to(tmp_path / "h.json")  # the same, one link removed
    (tmp_path / "l1.json").symlink_to(tmp_path / "l2.json")  # a loop
    (tmp_path / "l2.json").symlink_to(tmp_path / "l1.json")
    for out, why in (("i.json", "is a link to a folder"), ("l1.json", "is a loop")):
        assert main(["check", str(model), "--certificate", str(tmp_path / out)]) == 2
        assert why in capsys.readouterr().err and (tmp_path / out).is_symlink()
    assert not (tmp_path / "nofolder").exists()
    (tmp_path / "j.json").symlink_to(str(tmp_path / "newdir") + "/.")  # "newdir/.": a folder too (pathlib drops "/.")
    assert main(["check", str(model), "--certificate", str(tmp_path / "j.json")]) == 2
    assert "is a link to a folder" in capsys.readouterr().err and not (tmp_path / "newdir").exists()


def test_overwritten_certificate_keeps_its_permission_bits(certs: dict, tmp_path: Path) -> None:
    """An existing certificate (or the file a link names) keeps its mode, as open(path, "w")
    would keep it: a private 0600 file does not become world-readable; a new file gets 0666
    less the umask."""
    import os
    import stat

    model, _ = certs["relu2"]
    plain, target, link, new = (tmp_path / n for n in ("plain.json", "target.json", "link.json", "new.json"))
    for f in (plain, target):
        f.write_text("old")
        f.chmod(0o600)
    link.symlink_to(target)
    for out in (plain, link, new):
        assert main(["check", str(model), "--certificate", str(out), "-q"]) == 0
    assert stat.S_IMODE(plain.stat().st_mode) == 0o600 and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert _doc(target)["verdict"] == _doc(plain)["verdict"] and link.is_symlink()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask


# --------------------------------------------------------------------- LaTeX / PDF --


def test_tex_escape_neutralises_user_strings() -> None:
    s = tex_escape(r"a_b%c#d$e&f{g}h~i^j\input{/etc/passwd}σ≥é")
    for bad in ("\\input", "%", "#"):
        assert bad not in s.replace("\\%", "").replace("\\#", "") or bad == "\\input" and "\\textbackslash{}input" in s
    assert "\\textbackslash{}input" in s and "\\ensuremath{\\sigma}" in s and "?" in s


@pytest.mark.skipif(not HAVE_PDFLATEX, reason="pdflatex/pdftotext not installed")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pdf_contains_verdict_theorem_and_hash(name: str, certs: dict, tmp_path: Path) -> None:
    model, cert = certs[name]
    pdf = tmp_path / f"{name}.pdf"
    assert main(["check", str(model), "--certificate", str(pdf)]) in (0, 3)
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = "".join(text.split())
    doc = _doc(cert)
    verdict, theorem = EXPECTED[name]
    assert verdict in flat.replace("\u2011", "") or verdict.replace("_", "") in flat
    assert theorem in flat
    assert doc["blocks"][0]["weights"]["W_up"]["sha256"] in flat
    assert "2604.23705" in flat


@pytest.mark.skipif(not HAVE_PDFLATEX, reason="pdflatex not installed")
def test_user_strings_with_tex_specials_compile(tmp_path: Path) -> None:
    arrays = _instances(np.random.default_rng(1))["relu2"]
    model = tmp_path / "we#ird_%{name}$&~^.npz"
    np.savez(model, **arrays)
    tex = tmp_path / "c.tex"
    pdf = tmp_path / "c.pdf"
    assert main(["check", str(model), "--certificate", str(tex)]) == 0
    assert main(["check", str(model), "--certificate", str(pdf)]) == 0
    assert pdf.read_bytes()[:4] == b"%PDF"


def test_large_matrices_are_summarised_not_printed(tmp_path: Path) -> None:
    from absorb import Block, get_activation
    from absorb.certificate.latex import render_latex

    rng = np.random.default_rng(2)
    blk = Block(rng.standard_normal((12, 3)), rng.standard_normal((3, 12)), get_activation("relu2"))
    cert = build_certificate(decide(blk), blk, seed=0)
    assert "values" not in cert.blocks[0]["weights"]["W_up"]
    tex = render_latex(cert)
    assert "identified by shape, norm and hash only" in tex
    assert cert.blocks[0]["weights"]["W_up"]["sha256"] in tex


def test_evaluation_bound_is_not_vacuous() -> None:
    """The checker's evaluation accepts the true flip and rejects B' = B (off by exactly x)."""
    from absorb import Block, get_activation

    rng = np.random.default_rng(11)
    U = rng.standard_normal((5, 3))
    D = rng.standard_normal((3, 5))
    D[:, [0, 2, 3]] = -np.linalg.inv(U[[0, 2, 3]])
    blk = Block(U, D, get_activation("gelu"))
    *_, rho_inf = checker._residual(U, D, blk.M, Fraction(1), [0, 2, 3])
    from absorb.verify._weights import InfNorm

    allowed = InfNorm(rho_inf)  # per unit of |x|∞, as the index-set check passes it
    good = checker._flip_block(blk, [0, 2, 3], 1.0)
    ok, worst, _ = checker._evaluate(blk, good, [blk], [good], 3, seed=1, allowed_lin=allowed)
    assert ok and worst < 1e-13
    bad = blk.as_residual_free()
    ok, worst, _ = checker._evaluate(blk, bad, [blk], [bad], 3, seed=1, allowed_lin=allowed)
    assert not ok
    near = checker._flip_block(blk, [0, 2], 1.0)  # one unit short
    assert not checker._evaluate(blk, near, [blk], [near], 3, seed=1, allowed_lin=allowed)[0]


@pytest.mark.parametrize("mutate", [
    _set(["blocks", 0, "weights", "W_up", "values"], [[1.0, 2.0]]),
    _set(["blocks", 0], "not a block"),
    _set(["blocks", 0, "argument"], None),
    _set(["blocks", 0, "hypotheses"], [None]),
], ids=["bad values shape", "block not an object", "argument null", "hypothesis null"])
def test_malformed_certificate_is_rejected_not_crashed(mutate, certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs["relu2"]
    doc = _doc(cert)
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(bad), str(model)]) == 1
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("rejected")


def test_checker_collinearity_screen_finds_exact_pairs_across_chunks(monkeypatch: pytest.MonkeyPatch):
    """The checker's O(n²d) screen works in 2048-row chunks over the upper triangle:
    exact pairs inside a chunk, across chunks and with negative ratios are all found,
    and a pair that is only nearly collinear is not. The projection screen (the default
    at this n) finds the same pairs."""
    rng = np.random.default_rng(0)
    U = rng.standard_normal((4500, 3))
    U[4000] = 2.0 * U[10]  # across chunks
    U[2200] = -0.5 * U[2100]  # inside the second chunk
    U[7] = U[5] + 1e-9  # nearly, not exactly
    assert checker._collinear_pairs(U) == ([(10, 4000), (2100, 2200)], None)
    monkeypatch.setattr(_weights, "FULL_GRAM_MAX", 10_000)
    pairs, worst = checker._collinear_pairs(U)
    assert sorted(pairs) == [(10, 4000), (2100, 2200)]
    assert worst == pytest.approx(1.0)


def test_checker_decides_diagonal_skips_exactly_without_an_svd(monkeypatch: pytest.MonkeyPatch):
    """The identity skip of a real model (d = 4096) cost the checker a 13 s SVD; a diagonal
    skip is invertible exactly when no diagonal entry is zero, even a tiny one."""
    def no_svd(*a, **k):
        raise AssertionError("an SVD was computed for a diagonal matrix")

    monkeypatch.setattr(checker.np.linalg, "svd", no_svd)
    from absorb.verify._numerics import EXACT_ELIM_MAX_D

    d = EXACT_ELIM_MAX_D + 5  # past the exact-rank route
    assert checker._invertible(np.eye(d))[0] is True
    tiny = np.diag(np.r_[np.full(d - 1, 2.0), 1e-300])  # the SVD route could not decide this
    assert checker._invertible(tiny)[0] is True
    assert checker._invertible(np.diag(np.r_[np.ones(d - 1), 0.0]))[0] is False
    monkeypatch.undo()
    full = np.eye(d)
    full[0, 1] = 1.0  # not diagonal: the SVD route, still invertible
    assert checker._invertible(full)[0] is True


def test_checker_float_bounds_refuse_extreme_magnitudes() -> None:
    """Weights near 2^-265 (squares of their products are subnormal) or 2^270: the checker's
    float64 bounds assume no underflow or overflow, so its enumeration proves nothing there
    and its float residual bound is infinite (it re-checks in range, as before)."""
    rng = np.random.default_rng(5)
    U, D = rng.standard_normal((6, 2)), rng.standard_normal((2, 6))
    T = D[:, [0, 1, 2]] @ U[[0, 1, 2]] + 0.05 * rng.standard_normal((2, 2))
    assert checker._enumerate_lower_bound(U, D, T) is not None
    for e in (-265, 270):
        assert checker._enumerate_lower_bound(np.ldexp(U, e), np.ldexp(D, e), np.ldexp(T, 2 * e)) is None
    M = -T
    S = list(range(5))  # |S|·d² = 20: the exact path; check the float path with EXACT_WORK = 0
    old = _numerics.EXACT_WORK
    try:
        _numerics.EXACT_WORK = 0
        assert math.isfinite(checker._residual(U, D, M, Fraction(1), S)[1])
        assert checker._residual(np.ldexp(U, 270), np.ldexp(D, 270), np.ldexp(M, 540), Fraction(1), S)[1] == math.inf
    finally:
        _numerics.EXACT_WORK = old


from hypothesis import example  # noqa: E402  (kept out of the import block above)


@settings(max_examples=2 * settings.default.max_examples)  # cheap: twice the profile's count
@given(seed=st.integers(0, 10**6), n=st.integers(2, 60), d=st.integers(2, 12), k=st.integers(0, 6),
       scale=st.sampled_from([0, 300, -300, 540, -540, 1000, -1000]))
# An antipodal pair near 2^-630 and 2^-845: before rows were rescaled by powers of two, their
# norms underflowed to 0, the rows were dropped as zero and the pair was not found.
@example(seed=52, n=3, d=2, k=1, scale=1000)
def test_projection_screen_finds_exactly_the_collinear_pairs(seed, n, d, k, scale) -> None:
    """The checker's projection screen (used above FULL_GRAM_MAX rows) against the full Gram
    of cosines, on rows with planted collinear, antipodal and duplicate pairs, each row scaled
    by its own power of two (up to 2^±1000: norms computed naively would underflow or overflow)."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    planted = []
    for _ in range(k):  # row j := ±2^e·row i (exact), or a small-integer row and a multiple
        i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
        moved = {j}
        if rng.random() < 0.5:
            U[j] = float(rng.choice([-1.0, 1.0])) * 2.0 ** int(rng.integers(-5, 6)) * U[i]
        else:
            U[i] = rng.integers(-4, 5, size=d).astype(float)
            U[j] = float(rng.integers(-3, 4) or 1) * U[i]
            moved.add(i)
        planted = [(a, b) for a, b in planted if not moved & {a, b}] + [(min(i, j), max(i, j))]
    U[rng.random(n) < 0.1] = 0.0  # zero rows are never in a pair
    U = np.ldexp(U, rng.integers(-abs(scale), abs(scale) + 1, size=n)[:, None])
    assert np.all(np.isfinite(U))
    full, worst = checker._collinear_pairs(U)
    old = _weights.FULL_GRAM_MAX
    try:
        _weights.FULL_GRAM_MAX = -1
        screened, none = checker._collinear_pairs(U)
    finally:
        _weights.FULL_GRAM_MAX = old
    assert none is None and worst is not None
    assert sorted(full) == screened
    assert {(a, b) for a, b in planted if U[a].any() and U[b].any()} <= set(screened)


def test_a_file_name_that_is_not_utf8_is_recorded_and_read_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Linux file names are bytes; Python reads b'\\xff' as the lone surrogate '\\udcff', which has no
    UTF-8 form: the certificate records it as its JSON escape and the checker finds the same file."""
    import os

    model = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"m\xff.npz"))
    shutil.copy(Path(__file__).resolve().parents[1] / "examples" / "planted_relu.npz", model)
    cert = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"c\xff.json"))
    assert main(["check", model, "--certificate", cert, "-q"]) == 0
    assert "\\udcff" in Path(cert).read_text(encoding="utf-8")
    assert main(["verify", cert, "-q"]) == 0


def test_a_jacobian_sympy_cannot_evaluate_at_zero_is_left_out() -> None:
    """Gate g(z) = Max(0, z)² + z·√|z|: g(0) = 0 and the linearization holds (J_f(0) = M), but
    sympy's symbolic derivative of z·√|z| reads 0/0 = nan at 0. The certificate recorded
    "nan" as the exact Jacobian and its own checker rejected it; now the record is left out."""
    from absorb import Block, get_activation

    rng = np.random.default_rng(0)
    blk = Block(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), get_activation("expr:Max(0, x)**2 + x*sqrt(Abs(x))"),
                W_gate=rng.standard_normal((4, 2)))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("not_absorbable", "linearization"), dec.reason
    doc = build_certificate(dec, blk, seed=0).to_json()
    assert doc["blocks"][0]["argument"]["jacobian_f_at_0"] is None
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted, [f.claim for f in rep.failures]


def test_a_cancelling_custom_sigma_is_evaluated_with_its_terms_rounding() -> None:
    """σ = log(1 + eᶻ) − log 2 (σ(z) − σ(−z) = z): the planted flip witness is exact, but float64
    evaluates σ near 0 with an error of ulps of log 2, not of |σ(z)|; the checker's rounding
    allowance assumed the latter and rejected the honest certificate."""
    from absorb import Block, get_activation

    rng = np.random.default_rng(11)
    U, D = rng.standard_normal((5, 2)), rng.standard_normal((2, 5))
    D[:, :2] = -np.linalg.inv(U[:2])
    blk = Block(U, D, get_activation("expr:log(1 + exp(x)) - log(2)"))
    dec = decide(blk)
    assert dec.verdict.value == "absorbable", dec.reason
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted, [f.claim + " — " + f.detail for f in rep.failures]
