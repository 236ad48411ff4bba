"""The command line: verdicts, the JSON contract, exit codes, and one clear line for every
kind of bad input. Most tests run ``absorb`` in process (conftest.run_absorb); a few run a
real subprocess, for what only a process shows: its exit status, no traceback, and no
output from an injected expression."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import run_absorb

from absorb import InvalidInput, load_npz
from absorb.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


absorb = run_absorb  # in process: an interpreter start-up (about a second of CPU) saved per call


def absorb_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "absorb", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize(("name", "verdict", "theorem", "code"), [
    ("planted_relu.npz", "absorbable", "index-set", 0),
    ("generic_gelu.npz", "not_absorbable", "index-set", 0),
    ("swiglu.npz", "not_absorbable", "linearization", 0),
    ("relu2_stack.npz", "not_absorbable", "depth", 0),
])
def test_examples_json(name: str, verdict: str, theorem: str, code: int) -> None:
    r = absorb("check", str(EXAMPLES / name), "--json")
    assert r.returncode == code, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == verdict and out["theorem"] == theorem
    assert out["path"].endswith(name)
    for b in out["blocks"]:
        for key in ("name", "activation", "d", "n", "verdict", "theorem", "reason", "tolerance"):
            assert key in b
        assert b["verdict"] in ("absorbable", "not_absorbable", "unknown")
        if b["verdict"] == "absorbable" and b["theorem"] == "index-set":
            assert isinstance(b["witness"]["S"], list) and all(isinstance(i, int) for i in b["witness"]["S"])


def test_text_report_and_unknown_exit_code(tmp_path: Path) -> None:
    r = absorb("check", str(EXAMPLES / "planted_relu.npz"))
    assert r.returncode == 0 and "verdict: absorbable" in r.stdout and "S = [" in r.stdout
    rng = np.random.default_rng(0)
    p = tmp_path / "asymptotically_linear.npz"  # σ(s)/s → 1 at ±∞: no kinks in the skeleton, no result applies
    np.savez(p, W_up=rng.standard_normal((6, 3)), W_down=rng.standard_normal((3, 6)), activation=np.array("expr:x + sin(x)"))
    r = absorb("check", str(p), "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["verdict"] == "unknown"


def test_activation_override_and_options(tmp_path: Path) -> None:
    r = absorb("check", str(EXAMPLES / "generic_gelu.npz"), "--activation", "relu2", "--json", "--tol", "1e-6", "--seed", "3")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["theorem"] == "degree" and out["blocks"][0]["tolerance"] == 1e-6


def test_help() -> None:
    r = absorb("--help")
    assert r.returncode == 0 and "check" in r.stdout
    r = absorb("check", "--help")
    assert r.returncode == 0 and "--json" in r.stdout and "Exit 0" in r.stdout


def _good(rng: np.random.Generator, d: int = 3, n: int = 5) -> dict[str, np.ndarray]:
    return {"W_up": rng.standard_normal((n, d)), "W_down": rng.standard_normal((d, n)), "activation": np.array("relu")}


def _write(path: Path, **arrays: object) -> Path:
    np.savez(path, **arrays)
    return path


def _bad_cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    rng = np.random.default_rng(0)
    g = _good(rng)
    cases: list[tuple[str, list[str], str]] = []

    def add(name: str, expect: str, extra: list[str] | None = None, **arrays: object) -> None:
        cases.append((name, [str(_write(tmp / f"{name}.npz", **arrays))] + (extra or []), expect))

    add("missing_down", "missing key 'W_down'", W_up=g["W_up"], activation=g["activation"])
    add("misnamed", "did you mean 'W_up'", W_Up=g["W_up"], W_down=g["W_down"], activation=g["activation"])
    # the same letters in another case are suggested before near misses (w_down is W_down, not b_down)
    add("lower_case", "did you mean 'W_down'", W_up=g["W_up"], w_down=g["W_down"], activation=g["activation"])
    add("stack_case", "did you mean 'blocks.0.W_down'", **{"blocks.0.W_up": g["W_up"], "blocks.0.w_DOWN": g["W_down"],
                                                         "activation": g["activation"]})
    add("wrong_shape", "expected (3, 5)", W_up=g["W_up"], W_down=rng.standard_normal((3, 6)), activation=g["activation"])
    add("transposed", "looks transposed", W_up=g["W_up"], W_down=g["W_down"].T, activation=g["activation"])
    nan = g["W_up"].copy()
    nan[2, 1] = np.nan
    add("nan", "contains NaN at index (2, 1)", W_up=nan, W_down=g["W_down"], activation=g["activation"])
    inf = g["W_down"].copy()
    inf[0, 0] = np.inf
    add("inf", "contains Inf", W_up=g["W_up"], W_down=inf, activation=g["activation"])
    add("unknown_act", "unknown activation 'rleu'", W_up=g["W_up"], W_down=g["W_down"], activation=np.array("rleu"))
    add("no_act", "no activation given", W_up=g["W_up"], W_down=g["W_down"])
    add("gated_no_gate", "is gated but there is no key 'W_gate'", W_up=g["W_up"], W_down=g["W_down"], activation=np.array("swiglu"))
    add("complex", "dtype complex128", W_up=g["W_up"] + 1j, W_down=g["W_down"], activation=g["activation"])
    add("bad_bias", "key 'b_up' has shape (4,)", W_up=g["W_up"], W_down=g["W_down"], b_up=np.ones(4), activation=g["activation"])
    add("hc_incomplete", "missing H_post", W_up=g["W_up"], W_down=g["W_down"], H_res=np.eye(2), H_pre=np.ones(2), activation=g["activation"])
    add("skip_and_hc", "drop one", W_up=g["W_up"], W_down=g["W_down"], skip=np.eye(3), H_res=np.eye(2), H_pre=np.ones(2),
        H_post=np.ones(2), activation=g["activation"])
    add("stack_gap", "missing blocks.1", **{"blocks.0.W_up": g["W_up"], "blocks.0.W_down": g["W_down"], "blocks.2.W_up": g["W_up"], "blocks.2.W_down": g["W_down"], "activation": g["activation"]})
    add("stack_huge_index", "missing blocks.0", **{"blocks.99999999999999999999.W_up": g["W_up"],  # (no set of 10²⁰ indices built)
                                                   "blocks.99999999999999999999.W_down": g["W_down"], "activation": g["activation"]})
    add("stack_alias", "is not written 0, 1, 2", **{"blocks.0.W_up": g["W_up"], "blocks.0.W_down": g["W_down"],  # (blocks.1 and
        "blocks.1.W_up": g["W_up"], "blocks.1.W_down": g["W_down"], "blocks.01.W_up": g["W_up"],  # blocks.01 were one index:
        "blocks.01.W_down": g["W_down"], "activation": g["activation"]})  # one pair silently dropped)
    add("stack_d_mismatch", "one d throughout", **{"blocks.0.W_up": g["W_up"], "blocks.0.W_down": g["W_down"], "blocks.1.W_up": rng.standard_normal((5, 4)),
                                              "blocks.1.W_down": rng.standard_normal((4, 5)), "activation": g["activation"]})
    add("empty", "holds no arrays")
    add("zero_width", "non-empty 2-D", W_up=np.zeros((0, 3)), W_down=np.zeros((3, 0)), activation=g["activation"])
    add("bad_override", "unknown activation", ["--activation", "nope"], **g)
    add("injection", "unknown name", ["--activation", "expr:__import__('os').system('echo hi')"], **g)
    np.savez(tmp / "objects.npz", W_up=np.array([1, "a"], dtype=object), W_down=g["W_down"], activation=g["activation"])
    cases.append(("objects", [str(tmp / "objects.npz")], "object array"))
    (tmp / "text.npz").write_text("not a zip\n")
    cases.append(("not_npz", [str(tmp / "text.npz")], "not an .npz file"))
    full = (tmp / "missing_down.npz").read_bytes()
    good = _write(tmp / "good.npz", **g).read_bytes()
    (tmp / "truncated.npz").write_bytes(good[: len(good) // 2])
    cases.append(("truncated", [str(tmp / "truncated.npz")], "npz"))
    assert full
    cases.append(("no_file", [str(tmp / "nope.npz")], "no such file"))
    cases.append(("directory", [str(tmp)], str(tmp)))
    cases.append(("bad_tol", [str(tmp / "good.npz"), "--tol", "-1"], "strictly between 0 and 1"))
    # tolerances >= 1 let S = {} (drop the skip) pass as absorption
    cases.append(("tol_one", [str(tmp / "good.npz"), "--tol", "1"], "strictly between 0 and 1"))
    cases.append(("tol_two", [str(tmp / "good.npz"), "--tol", "2"], "strictly between 0 and 1"))
    cases.append(("tol_negative_exponent", [str(tmp / "good.npz"), "--tol", "-1e-9"], "strictly between 0 and 1"))  # (not "expected one argument")
    cases.append(("negative_seed", [str(tmp / "good.npz"), "--seed", "-1"], "from 0 to 4294967295"))
    cases.append(("huge_seed", [str(tmp / "good.npz"), "--seed", str(2**32)], "from 0 to 4294967295"))
    cases.append(("infinite_timeout", [str(tmp / "good.npz"), "--timeout", "inf"], "finite number of seconds"))
    cases.append(("bad_method", [str(tmp / "good.npz"), "--method", "magic"], "invalid choice"))
    # a header promising far more data than the member holds
    with zipfile.ZipFile(tmp / "huge.npz", "w") as zf:
        with zf.open("W_up.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
            fh.write(b"\0" * 64)
    cases.append(("huge_header", [str(tmp / "huge.npz")], "truncated or corrupt"))
    return cases


def test_bad_inputs_give_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from absorb.cli import main

    failures = []
    for name, args, expect in _bad_cases(tmp_path):
        try:
            code = main(["check", *args])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        if not (code == 2 and len(lines) == 1 and expect in lines[0] and lines[0].startswith("absorb: error: ") and not out):
            failures.append(f"{name}: rc={code} stderr={err!r}")
    assert not failures, "\n".join(failures)


# one case per kind of refusal (the loader, the expression parser, argparse): the test above checks
# every case's message in process; nan, not_npz and negative_seed took the same paths as these
@pytest.mark.parametrize("name", ["huge_header", "injection", "bad_tol"])
def test_bad_inputs_through_a_subprocess_have_no_traceback(tmp_path: Path, name: str) -> None:
    (case,) = [c for c in _bad_cases(tmp_path) if c[0] == name]
    r = absorb_subprocess("check", *case[1])
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1 and case[2] in r.stderr
    assert "hi" not in r.stdout


def test_memory_cap_refuses_absurd_sizes(tmp_path: Path) -> None:
    p = _write(tmp_path / "big.npz", W_up=np.zeros((400, 300)), W_down=np.zeros((300, 400)), activation=np.array("relu"))
    with pytest.raises(InvalidInput, match="GiB once loaded, more than"):
        load_npz(p, max_bytes=100_000)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``absorb ARGS`` in this process (no interpreter start-up): (exit code, stdout, stderr)."""
    from absorb.cli import main

    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code)
    out, err = capsys.readouterr()
    return code, out, err


def test_weights_that_may_be_stored_transposed_get_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    up, down = rng.standard_normal((32, 8)), rng.standard_normal((8, 32))  # d = 8, n = 32, saved as x @ W
    p = _write(tmp_path / "xw.npz", W_up=up.T, W_down=down.T, activation=np.array("relu"))
    code, out, err = _run(capsys, "check", str(p), "--timeout", "10")
    assert code in (0, 3) and "d = 32, n = 8" in out
    (note,) = err.strip().splitlines()
    assert "n = 8 hidden units < d = 32" in note and "save W_up.T and W_down.T instead" in note
    assert _run(capsys, "check", str(p), "--timeout", "10", "-q")[2] == ""  # -q: errors only
    ok = _write(tmp_path / "ok.npz", W_up=up, W_down=down, activation=np.array("relu"))
    assert _run(capsys, "check", str(ok), "--timeout", "10")[2] == ""
    # a bias pins the orientation: n < d is then what the user meant
    pinned = _write(tmp_path / "pinned.npz", W_up=up.T, W_down=down.T, b_up=np.ones(8), activation=np.array("relu"))
    assert "note" not in _run(capsys, "check", str(pinned), "--timeout", "5")[2]


def test_quiet_prints_only_the_verdict_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "check", str(EXAMPLES / "planted_relu.npz"), "-q") == (0, "verdict: absorbable\n", "")
    assert _run(capsys, "check", str(EXAMPLES / "relu2_stack.npz"), "--quiet")[1] == "verdict: not_absorbable\n"
    cert = tmp_path / "c.json"
    assert _run(capsys, "check", str(EXAMPLES / "planted_relu.npz"), "-q", "--certificate", str(cert))[0] == 0
    code, out, _ = _run(capsys, "verify", str(cert), "-q")
    assert code == 0 and len(out.splitlines()) == 1 and out.startswith("accepted: ")
    assert json.loads(_run(capsys, "check", str(EXAMPLES / "planted_relu.npz"), "-q", "--json")[1])["verdict"] == "absorbable"


def test_json_has_a_schema_version_and_a_witness_key_in_every_block(capsys: pytest.CaptureFixture[str]) -> None:
    for name, has_witness in (("planted_relu.npz", True), ("generic_gelu.npz", False), ("relu2_stack.npz", False)):
        out = json.loads(_run(capsys, "check", str(EXAMPLES / name), "--json")[1])
        assert out["schema"] == "absorb-check" and out["schema_version"] == 1
        assert "witness" in out
        for b in out["blocks"]:
            assert "witness" in b and (b["witness"] is not None) == has_witness, (name, b["witness"])


def test_caret_is_a_power_in_activation_expressions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", str(EXAMPLES / "planted_relu.npz"), "--activation", "expr:Max(0,x)^3", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["theorem"] == "degree" and doc["blocks"][0]["activation"] == "expr:Max(0, x)**3"


def test_usage_errors_speak_with_the_same_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "check", str(EXAMPLES / "planted_relu.npz"), "--tol", "2")
    assert code == 2 and err.startswith("absorb: error: argument --tol: ") and "'absorb check --help'" in err
    code, _, err = _run(capsys, "prove", "nonsense", "--out", "unused")
    assert code == 2 and err.startswith("absorb: error: unknown proof")


@pytest.mark.parametrize("term", ["xterm-256color", "dumb", None])
def test_status_line_on_a_terminal(monkeypatch: pytest.MonkeyPatch, term: str | None) -> None:
    """On a terminal, `absorb check` shows one self-erasing status line: erased with ANSI's ESC [ K,
    except where the terminal would print that escape literally (TERM=dumb or unset): overwritten
    with spaces there. It ends erased either way."""
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    if term is None:
        monkeypatch.delenv("TERM", raising=False)
    else:
        monkeypatch.setenv("TERM", term)
    assert main(["check", str(EXAMPLES / "planted_relu.npz")]) == 0
    out = err.getvalue()
    assert "deciding block" in out
    assert ("\x1b" in out) == (term == "xterm-256color")
    assert out.rsplit("\r", 2)[-2].strip() == "" or out.endswith("\x1b[K")  # the last write erases the line


def test_json_is_standard_json(capsys: pytest.CaptureFixture[str]) -> None:
    """`--json` is RFC 8259 JSON: an unbounded σ's limit (+∞) is the text "oo", never the bare
    Infinity that JavaScript's JSON.parse and other strict parsers refuse."""
    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    assert main(["check", str(EXAMPLES / "planted_relu.npz"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=refuse)
    bounded = next(p for p in out["blocks"][0]["properties"] if p["name"] == "bounded")
    assert bounded["status"] == "refuted" and bounded["witness"]["limit"] == "oo"


def test_json_with_a_file_name_that_is_not_utf8_is_utf8(tmp_path: Path) -> None:
    """The path of a file named with the byte 0xff (Python's lone surrogate) is written as the JSON
    escape \\udcff: stdout stays UTF-8, and strict JSON (the raw byte made it neither)."""
    import os
    import shutil

    model = os.path.join(os.fsencode(str(tmp_path)), b"a\xff.npz")
    shutil.copy(EXAMPLES / "planted_relu.npz", model)
    r = subprocess.run([os.fsencode(sys.executable), b"-m", b"absorb", b"check", model, b"--json"], capture_output=True,
                       cwd=str(ROOT), env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.decode("utf-8"))
    assert out["path"].endswith("a\udcff.npz") and out["verdict"] == "absorbable"
