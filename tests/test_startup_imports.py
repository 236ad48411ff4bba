"""Start-up: ``absorb --help``, ``--version`` and usage errors load no numerical library, and
a small built-in block is decided without scipy (docs/performance.md, "Start-up").
Imports, not seconds, are checked: timings belong to benchmarks/bench_sigma.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

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
