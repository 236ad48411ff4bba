"""Start-up: ``absorb --help``, ``--version`` and usage errors load no numerical library, and
a small built-in block is decided without scipy (docs/performance.md, "Start-up").
Imports, not seconds, are checked: timings belong to benchmarks/bench_sigma.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

HEAVY = ("numpy", "scipy", "sympy", "z3", "highspy", "torch", "onnx", "importlib.metadata")


def _loaded(argv: list[str], *, cwd: str | None = None) -> tuple[set[str], int, str]:
    code = ("import sys\nfrom absorb.cli import main\ntry:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    rc = e.code\nsys.stderr.write('\\nLOADED ' + ' '.join(sorted(sys.modules)) + '\\n')\nraise SystemExit(rc)")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd)
    mods = set(out.stderr.rsplit("LOADED ", 1)[1].split())
    return mods, out.returncode, out.stdout


def test_help_version_and_usage_errors_load_no_numerics() -> None:
    for argv in (["--help"], ["check", "--help"], ["montecarlo", "--help"], ["--version"], ["check"]):
        mods, rc, stdout = _loaded(argv)
        assert rc in (0, 2), argv
        heavy = sorted(m for m in mods if m.split(".")[0] in HEAVY or m in HEAVY)
        heavy = [m for m in heavy if not (argv == ["--version"] and m.startswith("importlib.metadata"))]
        assert heavy == [], (argv, heavy)
    _mods, _rc, stdout = _loaded(["--version"])
    assert stdout.startswith("absorb ")


def test_small_builtin_block_needs_no_scipy(tmp_path) -> None:
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((24, 6)) / np.sqrt(6), rng.standard_normal((6, 24)) / np.sqrt(24)
    path = tmp_path / "gelu.npz"
    np.savez(path, W_up=U, W_down=D, activation=np.array("gelu"))
    mods, rc, stdout = _loaded(["check", "-q", str(path)])
    assert rc == 0 and "not_absorbable" in stdout
    assert not any(m == "scipy" or m.startswith("scipy.") for m in mods)
    # an .npz block needs no checkpoint reader (nor its name tables): imported only for a checkpoint
    assert "absorb.io.safetensors" not in mods and "absorb.io.families" not in mods


def test_small_builtin_blocks_are_decided_without_sympy(tmp_path) -> None:
    """A built-in activation's properties are read from the shipped table (absorb.symbolic.facts)
    with their values unparsed, so deciding a small GELU or ReLU block never imports sympy; the
    verdict is the one the symbolic path gives (``.expr`` read: sympy loaded)."""
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((24, 6)) / np.sqrt(6), rng.standard_normal((6, 24)) / np.sqrt(24)
    for act in ("gelu", "relu"):
        path = tmp_path / f"{act}.npz"
        np.savez(path, W_up=U, W_down=D, activation=np.array(act))
        mods, rc, stdout = _loaded(["check", str(path)])
        assert rc == 0 and "verdict: not_absorbable" in stdout, (act, stdout)
        assert not any(m == "sympy" or m.startswith("sympy.") for m in mods), act
    # the same GELU block, with sympy loaded and σ's expression parsed first: the same verdict
    code = ("import sys\nfrom absorb.model.activations import get_activation\nget_activation('gelu').expr\n"
            "from absorb.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "assert 'sympy' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code, "check", str(tmp_path / "gelu.npz")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "verdict: not_absorbable" in out.stdout


def test_builtin_activation_expression_is_parsed_on_first_read() -> None:
    code = ("import sys\nfrom absorb.model.activations import get_activation, is_builtin\n"
            "a = get_activation('gelu')\nassert is_builtin(a) and a.key.startswith('Mul(')\n"
            "assert 'sympy' not in sys.modules\nimport sympy as sp\n"
            "assert sp.srepr(a.expr) == a.key and a.expr.has(sp.erf)\n"
            "from absorb.model.activations import X\nassert a.expr.free_symbols == {X}\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("expr", ["x**2", "Max(0, x) + Min(0, exp(x) - 1)"])
def test_a_custom_activation_decided_twice_imports_no_sympy_the_second_time(tmp_path, expr: str) -> None:
    """An expr: activation's analysis runs in one child process (validation, then the
    properties), which alone imports sympy; its outcome is stored in the analysis cache, so
    the second run reads it and, as for a built-in, starts no child and imports no sympy (ELU:
    nor does reading its proved slopes a = 1, b = 0 for the tolerance screens)."""
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((24, 6)) / np.sqrt(6), rng.standard_normal((6, 24)) / np.sqrt(24)
    path = tmp_path / "block.npz"
    np.savez(path, W_up=U, W_down=D, activation=np.array("expr:" + expr))
    code = ("import sys\nimport absorb._sandbox as sb\nif len(sys.argv) > 2:\n    sb.run_limited = sb.start_limited = None\n"
            "from absorb.cli import main\nrc = main(['check', sys.argv[1]])\n"
            "print('LOADED', rc, 'sympy' in sys.modules, 'scipy' in sys.modules)")
    env = {**os.environ, "ABSORB_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-c", code, str(path), "no-child"], capture_output=True, text=True, env=env)
    assert first.stdout.rsplit("LOADED", 1)[1].split() == ["0", "False", "False"], first.stderr
    assert second.stdout.rsplit("LOADED", 1)[1].split() == ["0", "False", "False"], second.stderr
    assert "verdict: not_absorbable" in first.stdout
    untimed = [re.sub(r"in \d+\.\d+ s", "in … s", run.stdout.rsplit("LOADED", 1)[0]) for run in (first, second)]
    assert untimed[0] == untimed[1]  # the same report (but for its times)
    assert len(list((tmp_path / "cache").rglob("expr-*.json"))) == 1
