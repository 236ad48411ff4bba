"""Every public boundary refuses bad input with one line naming the value and the fix.

Python API (Block, Stack, decide*, find_index_set, the Monte Carlo and exploration entry
points), the CLI's options and outputs (encodings, a full disk, existing files), and the
packaging conventions a new user meets first. Each test here failed before its fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_absorb

import absorb
from absorb import Block, InvalidInput, Stack, decide, find_index_set, get_activation
from absorb.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "planted_relu.npz"
RELU = get_activation("relu")


def run(*args: str, env: dict[str, str] | None = None, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """``absorb ARGS`` as a real process: for what only a process shows (stream encodings, a full
    disk at exit, a read that never ends); the other tests call ``run_absorb`` in process."""
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    enc = (env or {}).get("PYTHONIOENCODING", "utf-8")
    return subprocess.run([sys.executable, "-m", "absorb", *args], stdout=stdout, stderr=subprocess.PIPE, encoding=enc,
                          env=e, timeout=120)


def one_line_exit_2(r: subprocess.CompletedProcess[str], needle: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr


def planted() -> Block:
    return Block(np.eye(2), -np.eye(2), RELU)


# ---- Block and Stack ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,needle", [
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((3, 2))}, "looks transposed"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 4))}, "expected (2, 3)"),
    ({"W_up": np.ones(3), "W_down": np.ones((2, 3))}, "non-empty 2-D"),
    ({"W_up": np.ones((0, 2)), "W_down": np.ones((2, 0))}, "non-empty 2-D"),
    ({"W_up": np.ones((3, 2)), "W_down": np.full((2, 3), np.nan)}, "contains NaN"),
    ({"W_up": np.ones((3, 2)), "W_down": np.full((2, 3), np.inf)}, "contains Inf"),
    ({"W_up": np.ones((3, 2)) + 1j, "W_down": np.ones((2, 3))}, "dtype complex128"),
    ({"W_up": np.array([["a", "b"]] * 3), "W_down": np.ones((2, 3))}, "a string"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 3)), "W_gate": np.ones((2, 3))}, "W_gate has shape"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 3)), "b_up": np.ones(2)}, "b_up has shape"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 3)), "b_gate": np.ones(3)}, "no 'W_gate'"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 3)), "b_down": np.ones(3)}, "b_down has shape"),
    ({"W_up": np.ones((3, 2)), "W_down": np.ones((2, 3)), "skip": np.eye(3)}, "skip has shape"),
    ({"W_up": [[1, 2], [3]], "W_down": np.ones((2, 2))}, "not an array"),
])
def test_block_refuses_bad_arrays(kwargs: dict, needle: str) -> None:
    with pytest.raises(InvalidInput, match="Block") as exc:
        Block(activation=RELU, **kwargs)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_block_refuses_bad_activation_and_gated_without_gate() -> None:
    with pytest.raises(InvalidInput, match="not an Activation"):
        Block(np.ones((3, 2)), np.ones((2, 3)), "relu")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="is gated but there is no W_gate"):
        Block(np.ones((3, 2)), np.ones((2, 3)), get_activation("swiglu"))


def test_block_converts_array_likes_and_keeps_float64_arrays() -> None:
    U = np.eye(2)
    b = Block(U, [[-1, 0], [0, -1]], RELU)
    assert b.W_up is U and b.W_down.dtype == np.float64
    assert Block(np.eye(2, dtype=np.float32), -np.eye(2, dtype=int), RELU).W_up.dtype == np.float64
    assert decide(b).verdict.value == "absorbable"


def test_stack_refuses_empty_mixed_and_mismatched() -> None:
    with pytest.raises(InvalidInput, match="non-empty"):
        Stack(())
    with pytest.raises(InvalidInput, match="not an absorb.Block"):
        Stack((planted(), "x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="one d throughout"):
        Stack((planted(), Block(np.eye(3), -np.eye(3), RELU)))


def test_derived_blocks_are_not_rechecked_but_decide_checks_them() -> None:
    b = planted().replace(W_down=np.full((2, 2), np.nan))  # internal derivations are trusted
    with pytest.raises(InvalidInput, match="contains NaN"):
        decide(b)


# ---- decide*, find_index_set ---------------------------------------------------------------

@pytest.mark.parametrize("kw,needle", [
    ({"tol": -1}, "strictly between 0 and 1"), ({"tol": 0}, "strictly between 0 and 1"),
    ({"tol": 1}, "strictly between 0 and 1"), ({"tol": 2.0}, "strictly between 0 and 1"),
    ({"tol": float("nan")}, "NaN"), ({"tol": "1e-9"}, "not a number"),
    ({"timeout": 0}, "seconds > 0"), ({"timeout": -5}, "seconds > 0"), ({"timeout": float("inf")}, "finite"),
    ({"seed": -1}, "from 0 to"), ({"seed": 2**32}, "from 0 to"), ({"seed": 1.5}, "not an integer"),
    ({"method": "z4"}, "'z4' is not one of"),
])
@pytest.mark.parametrize("fn", ["decide", "decide_block", "decide_stack", "decide_collection"])
def test_decide_functions_refuse_bad_arguments(fn: str, kw: dict, needle: str) -> None:
    from absorb import engine

    model = {"decide": planted(), "decide_block": planted(), "decide_stack": Stack((planted(),)),
             "decide_collection": [planted()]}[fn]
    with pytest.raises(InvalidInput) as exc:
        getattr(engine, fn)(model, **kw)
    assert needle in str(exc.value)


def test_tolerance_one_no_longer_makes_dropping_the_skip_absorbable() -> None:
    rng = np.random.default_rng(0)
    b = Block(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), get_activation("gelu"))
    for tol in (1.0, 2.0):
        with pytest.raises(InvalidInput, match="dropping the skip"):
            decide(b, tol=tol)
        with pytest.raises(InvalidInput):
            find_index_set(b.W_up, b.W_down, -np.eye(2), tol=tol)


@pytest.mark.parametrize("args,needle", [
    ((np.eye(2), -np.eye(2), -np.eye(2)), None),
    ((np.eye(2), -np.eye(2), np.zeros((2, 2))), "target T is zero"),
    ((np.eye(2), -np.eye(3), -np.eye(2)), "one column per row of U"),
    ((np.eye(2), -np.eye(2), -np.eye(3)), "T has shape"),
    ((np.ones(2), -np.eye(2), -np.eye(2)), "U has shape"),
    ((np.eye(2), -np.eye(2) * np.nan, -np.eye(2)), "contains NaN"),
    ((np.eye(2) + 1j, -np.eye(2), -np.eye(2)), "complex"),
])
def test_find_index_set_validates(args: tuple, needle: str | None) -> None:
    if needle is None:
        assert find_index_set(*args).S == (0, 1)
        with pytest.raises(InvalidInput, match="'z4' is not one of"):
            find_index_set(*args, method="z4")
        return
    with pytest.raises(InvalidInput, match="find_index_set") as exc:
        find_index_set(*args)
    assert needle in str(exc.value)


def test_validation_holds_under_python_O() -> None:
    code = ("import numpy as np; from absorb import find_index_set, InvalidInput\n"
            "try:\n    find_index_set(np.eye(2), -np.eye(2), np.zeros((2, 2)))\n"
            "except InvalidInput as e:\n    print('ok', e)\n")
    r = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.startswith("ok find_index_set: the target T is zero"), r.stdout + r.stderr


def test_decide_engine_names_the_right_entry_point_for_other_objects() -> None:
    from absorb.engine import decide as engine_decide

    with pytest.raises(InvalidInput, match="absorb.Block or absorb.Stack"):
        engine_decide("model.npz")  # type: ignore[arg-type]


def test_montecarlo_and_explore_entry_points_validate() -> None:
    from absorb.explore import explore_depth
    from absorb.montecarlo import grid, sweep

    cells = grid(d=[2], n=[4], distributions=["gaussian"], activations=["relu"], samples=2, planted=0)
    with pytest.raises(InvalidInput, match="strictly between 0 and 1"):
        sweep(cells, tol=1.0)
    with pytest.raises(InvalidInput, match="from 0 to"):
        sweep(cells, seed=-1)
    with pytest.raises(InvalidInput, match="'tanh' is not one of"):
        explore_depth(activation="tanh")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="depth = 0"):
        explore_depth(depth=0)


# ---- absorb.decide on checkpoints --------------------------------------------------------------

def _checkpoint(tmp: Path, d: int = 4, n: int = 8, layers: int = 2) -> Path:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    t = {}
    for i in range(layers):
        t[f"model.layers.{i}.mlp.gate_proj.weight"] = rng.standard_normal((n, d)).astype(np.float32)
        t[f"model.layers.{i}.mlp.up_proj.weight"] = rng.standard_normal((n, d)).astype(np.float32)
        t[f"model.layers.{i}.mlp.down_proj.weight"] = rng.standard_normal((d, n)).astype(np.float32)
    tmp.mkdir(parents=True, exist_ok=True)
    save_file(t, str(tmp / "model.safetensors"))
    (tmp / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_act": "silu", "hidden_size": d}))
    return tmp


def test_decide_accepts_a_checkpoint_with_defaults(tmp_path: Path) -> None:
    ck = absorb.load(_checkpoint(tmp_path / "ck"))
    dec = absorb.decide(ck)
    assert dec.structure == "collection" and len(dec.blocks) == 2 and dec.verdict.value == "not_absorbable"
    assert absorb.decide_checkpoint(ck).verdict is dec.verdict
    with pytest.raises(InvalidInput, match="strictly between 0 and 1"):
        absorb.decide(ck, tol=1)
    with pytest.raises(InvalidInput, match="needs a Checkpoint"):
        absorb.decide_checkpoint(planted())  # type: ignore[arg-type]


# ---- CLI ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (("check", str(EXAMPLE), "--seed", "-1"), "from 0 to 4294967295"),
    (("check", str(EXAMPLE), "--tol", "1"), "strictly between 0 and 1"),
    (("montecarlo", "--tol", "2"), "strictly between 0 and 1"),
    (("montecarlo", "--seed", "-3"), "from 0 to 4294967295"),
    (("explore-depth", "--seed", "-1"), "from 0 to 4294967295"),
])
def test_cli_numeric_options(args: tuple[str, ...], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and needle in err


def test_cli_falls_back_to_ascii_when_the_terminal_cannot_encode() -> None:
    r = run("check", str(EXAMPLE), env={"PYTHONIOENCODING": "cp1252"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "v the skip matrix M is nonzero" in r.stdout and "sigma" in r.stdout and ">= 2" in r.stdout
    r = run("check", str(EXAMPLE), "--json", env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and json.loads(r.stdout)["verdict"] == "absorbable"
    r = run_absorb("check", str(EXAMPLE))  # a UTF-8 stream keeps the symbols (in process: text streams are UTF-8)
    assert "✓ the skip matrix M is nonzero" in r.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_cli_full_disk_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        r = run("check", str(EXAMPLE), stdout=full)
    one_line_exit_2(r, "cannot write the output")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("--help",), ("--version",), ("check", "--help")])
def test_help_and_version_to_a_full_disk_is_one_line(args: tuple[str, ...]) -> None:
    """argparse swallows a failed write of its help text and exits 0: the text was lost silently."""
    with open("/dev/full", "w") as full:
        r = run(*args, stdout=full)
    one_line_exit_2(r, "cannot write the output")


def test_closed_standard_streams_keep_the_exit_codes() -> None:
    """Standard output closed (``>&-``): exit 2, "cannot write the output", as for a full disk (not
    an internal error, exit 3); standard error closed: bad input still exits 2 (check and verify),
    a verdict still 0."""
    e = {**os.environ, "PYTHONPATH": str(ROOT)}

    def closed(fd: int, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "absorb", *args], stdout=None if fd == 1 else subprocess.DEVNULL,
                              stderr=None if fd == 2 else subprocess.PIPE, text=True, env=e, timeout=120,
                              preexec_fn=lambda: os.close(fd))

    one_line_exit_2(closed(1, "check", str(EXAMPLE), "-q"), "standard output is closed")
    assert closed(2, "check", "/nonexistent/m.npz").returncode == 2
    assert closed(2, "verify", "/nonexistent/cert.json", str(EXAMPLE)).returncode == 2
    assert closed(2, "check", str(EXAMPLE), "--width", "0").returncode == 2
    assert closed(2, "check", str(EXAMPLE), "-q").returncode == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("how", ["full", "read-only"])
def test_unwritable_standard_error_keeps_the_exit_codes(how: str, tmp_path: Path) -> None:
    """Standard error open but failing every write (``2>/dev/full``, or a descriptor open for
    reading): bad input still exits 2, a verdict still 0, also with -v (progress notes)."""
    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    junk = tmp_path / "bad.npz"
    junk.write_text("x")

    def code(*args: str) -> int:
        with open("/dev/full", "w") if how == "full" else open(os.devnull) as err:
            return subprocess.run([sys.executable, "-m", "absorb", *args], stdout=subprocess.DEVNULL, stderr=err,
                                  env=e, timeout=120).returncode

    assert code("check", str(junk)) == 2
    assert code("verify", str(junk)) == 2
    assert code("check", str(EXAMPLE), "-v") == 0


def test_prove_refuses_an_existing_file_as_out(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("keep me")
    one_line_exit_2(run_absorb("prove", "--all", "--out", str(f)), "exists and is not a folder")
    assert f.read_text() == "keep me"


@pytest.mark.slow
def test_montecarlo_refuses_missing_extras_before_the_sweep(tmp_path: Path) -> None:
    # the base install: matplotlib and dask cannot be imported
    code = ("import sys\n"
            "class Absent:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('matplotlib', 'dask', 'distributed'):\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Absent())\n"
            "from absorb.cli import main\nraise SystemExit(main(sys.argv[1:]))\n")
    base = [sys.executable, "-c", code, "montecarlo", "--shapes", "2x4", "--samples", "50000", "--planted", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for extra, needle in ((["--plot", str(tmp_path / "p.png")], "--plot needs matplotlib"),
                          (["--workers", "2"], "--workers needs dask.distributed")):
        r = subprocess.run(base + extra, capture_output=True, text=True, env=env, timeout=60)
        one_line_exit_2(r, needle)
        assert "absorb[montecarlo]" in r.stderr and not r.stdout
    one_line_exit_2(run("montecarlo", "--shapes", "2x4", "--samples", "5", "--plot", str(tmp_path / "no" / "p.png")),
                    "does not exist")
    one_line_exit_2(run("montecarlo", "--shapes", "2x4", "--samples", "5", "--plot", str(tmp_path / "p.txt")),
                    "unknown image format")


def test_progress_bars_never_in_json_or_pipes() -> None:
    r = run_absorb("montecarlo", "--shapes", "2x4", "--samples", "20", "--planted", "2", "--json")  # stderr: no tty
    assert r.returncode == 0 and r.stderr == "", r.stderr
    json.loads(r.stdout)


def test_quiet_and_verbose_on_every_subcommand() -> None:
    from absorb.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in SUBCOMMANDS:
        opts = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert {"-q", "--quiet", "-v", "--verbose"} <= opts, name
    r = run_absorb("check", str(EXAMPLE), "-v")
    assert r.returncode == 0 and "absorb check: block" in r.stderr
    r = run_absorb("check", str(EXAMPLE), "-q")
    assert r.returncode == 0 and r.stderr == ""


def test_help_texts() -> None:
    r = run_absorb("montecarlo", "--help")
    assert "95%" in r.stdout and "95%%" not in r.stdout
    r = run_absorb("explore-depth", "--help")
    lines = r.stdout.splitlines()
    assert any(ln.strip().startswith("--activation") and "activation of every block" in " ".join(lines) for ln in lines)


def test_explore_depth_text_has_no_python_dicts() -> None:
    r = run_absorb("explore-depth", "--depth", "1", "--restarts", "1", "--samples", "32", "--maxiter", "5")
    assert r.returncode == 0, r.stderr
    assert "{" not in r.stdout and "kink rays of F: " in r.stdout


def test_report_marks_state_facts_without_double_negatives() -> None:
    from absorb.report import render_text

    text = render_text(decide(planted()))
    assert "✗" not in text
    assert "– σ is unbounded" in text
    zero = Block(np.eye(2), -np.eye(2), RELU, skip=np.zeros((2, 2)))
    text = render_text(decide(zero))
    assert "– the skip matrix M is zero" in text and "✗" not in text


def test_antipodal_rows_report_abs_cos_one() -> None:
    from absorb.engine.hypotheses import nondegenerate

    b = Block(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]), np.ones((2, 3)), RELU)
    (stmt,) = [h.statement for h in nondegenerate(b) if h.name == "rows_noncollinear"]
    assert "antipodal" in stmt and "|cos| = 1 " in stmt and "= -1" not in stmt


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zero_rows_and_columns_are_exactly_the_zero_ones(dtype: type) -> None:
    """rows_nonzero / columns_nonzero name exactly the all-zero rows of W_up and columns of
    W_down: a row or column holding only the smallest subnormal of its dtype is nonzero."""
    from absorb.engine.hypotheses import nondegenerate

    tiny = np.finfo(dtype).smallest_subnormal
    U = np.array([[1.0, 2.0], [0.0, 0.0], [tiny, 0.0], [3.0, -1.0]], dtype=dtype)
    D = np.array([[1.0, 0.0, 0.0, tiny], [2.0, 0.0, 1.0, 0.0]], dtype=dtype)
    b = Block(U, D, RELU)
    hyp = {h.name: h for h in nondegenerate(b)}
    assert hyp["rows_nonzero"].value["zero_rows"] == [1] and not hyp["rows_nonzero"].holds
    assert hyp["columns_nonzero"].value["zero_columns"] == [1] and not hyp["columns_nonzero"].holds
    assert hyp["rows_nonzero"].value["min_row_norm"] == 0.0
    ok = {h.name: h for h in nondegenerate(Block(U[[0, 2, 3]], D[:, [0, 2, 3]], RELU))}
    assert ok["rows_nonzero"].holds and ok["columns_nonzero"].holds
    assert 0 < ok["rows_nonzero"].value["min_row_norm"] and 0 < ok["columns_nonzero"].value["min_column_norm"]


# ---- packaging ------------------------------------------------------------------------------

def test_packaging_conventions() -> None:
    import tomllib
    from importlib import metadata

    py = tomllib.loads((ROOT / "pyproject.toml").read_text())
    proj = py["project"]
    assert proj["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "absorb" / "py.typed").exists() and "py.typed" in py["tool"]["setuptools"]["package-data"]["absorb"]
    extras = proj["optional-dependencies"]
    assert set(extras) - {"all"} <= set(extras["all"][0].split("[")[1].rstrip("]").split(","))
    every = proj["dependencies"] + [r for k, v in extras.items() for r in v]
    for name in ("ml_dtypes", "tqdm"):
        assert sum(r.startswith(name) for r in every) == 1, name
    assert absorb.__version__ == metadata.version("absorb") == proj["version"]
    assert not {"annotations", "lazy_exports", "_EXPORTS"} & set(dir(absorb))
    assert absorb.decide.__doc__ and absorb.Verdict.__doc__ and absorb.BlockDecision.__doc__


def test_method_literal_matches_the_backends() -> None:
    from typing import get_args

    from absorb._validate import Method
    from absorb.search import METHODS
    from absorb.search._types import DEFAULT_TOL

    assert get_args(Method) == METHODS
    import inspect

    assert inspect.signature(absorb.decide).parameters["tol"].default == DEFAULT_TOL


def test_loaders_refuse_non_paths() -> None:
    from absorb.io import load_npz, open_checkpoint, save_npz

    for fn in (absorb.load, load_npz, open_checkpoint):
        for bad in (123, b"x.npz", "", None):
            with pytest.raises(InvalidInput, match="is not a path"):
                fn(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="needs an absorb.Block"):
        save_npz("x.npz", "model")  # type: ignore[arg-type]


def test_every_seed_option_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", "cert.json", "--seed", "-1"])
    assert exc.value.code == 2 and "from 0 to 4294967295" in capsys.readouterr().err


def test_montecarlo_batch_entry_points_validate() -> None:
    from absorb.montecarlo import decide_batch, dual_batch, enumerate_batch

    U, D = np.ones((2, 3, 2)), np.ones((2, 2, 3))
    assert decide_batch(U, D).status.shape == (2,)
    for fn in (decide_batch, dual_batch, enumerate_batch):
        with pytest.raises(InvalidInput, match="expected non-empty"):
            fn(U, np.ones((2, 3, 2)))
        with pytest.raises(InvalidInput, match="strictly between 0 and 1"):
            fn(U, D, tol=1.0)
        with pytest.raises(InvalidInput, match="finite nonzero"):
            fn(U, D, c=0.0)
    with pytest.raises(InvalidInput, match="'x' is not one of"):
        decide_batch(U, D, route="x")
    with pytest.raises(InvalidInput, match="contains NaN"):
        decide_batch(U * np.nan, D)


def test_bfloat16_saved_by_numpy_gets_a_fix(tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    p = tmp_path / "bf.npz"
    np.savez(p, W_up=np.eye(2).astype(ml_dtypes.bfloat16), W_down=-np.eye(2), activation=np.array("relu"))
    with pytest.raises(InvalidInput, match=r"astype\(numpy.float32\)"):
        absorb.load(p)


def test_unexpected_errors_are_one_line_and_traceback_only_with_v(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import absorb.cli.check as check

    def boom(args: object) -> int:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(check, "run", boom)
    assert main(["check", str(EXAMPLE)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: boom second line" in err and "Traceback" not in err
    assert main(["check", str(EXAMPLE), "-v"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_check_refuses_unwritable_certificates_before_deciding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one_line_exit_2(run_absorb("check", str(EXAMPLE), "--certificate", str(tmp_path / "no" / "c.json")), "does not exist")
    one_line_exit_2(run_absorb("check", str(EXAMPLE), "--certificate", str(tmp_path)+"/"), "unknown format")
    monkeypatch.setenv("PATH", "")
    r = run_absorb("check", str(EXAMPLE), "--certificate", str(tmp_path / "c.pdf"))
    one_line_exit_2(r, "pdflatex not found on PATH")
    r = run_absorb("prove", "degree", "--pdf", "--out", str(tmp_path / "p"))
    one_line_exit_2(r, "pdflatex not found on PATH")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs FIFOs and /dev/zero")
@pytest.mark.slow
def test_devices_and_fifos_are_refused_not_read_forever(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        for suffix in (".npz", ".safetensors", ".pt"):
            link = tmp_path / f"{target.name}{suffix}"
            link.symlink_to(target)
            one_line_exit_2(run("check", str(link)), "not a regular file")


@pytest.mark.parametrize("n", [8, 200_000])  # a member read whole with its header, and one read in pieces
def test_npz_member_with_a_bad_crc_is_named(tmp_path: Path, n: int, capsys: pytest.CaptureFixture[str]) -> None:
    """The CRC is checked while each member is read (once; no separate pass over the
    file): a flipped bit in the data is one line naming the member, exit 2."""
    p = tmp_path / "m.npz"
    np.savez(p, W_up=np.ones((n, 3)), W_down=np.ones((3, n)), activation=np.array("relu"))
    raw = bytearray(p.read_bytes())
    i = raw.index(b"\x00\x00\xf0?", 200 if n == 8 else 2000)  # a stored 1.0 of W_up
    raw[i + 3] = 0x40
    p.write_bytes(bytes(raw))
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "member 'W_up.npy' fails its CRC check" in err[0], err
