"""The public face is thin and checked: ``absorb.__all__`` names exactly what is exported."""

from __future__ import annotations

import pytest

import absorb


def test_all_is_exact() -> None:
    import types

    public = {n for n in dir(absorb) if not n.startswith("_")}  # no import machinery leaks (annotations, lazy_exports)
    submodules = {n for n in public if isinstance(getattr(absorb, n), types.ModuleType)}
    assert set(absorb.__all__) == (public - submodules) | {"__version__"}
    for name in absorb.__all__:
        assert getattr(absorb, name) is not None


def test_star_import_and_unknown_name() -> None:
    ns: dict[str, object] = {}
    exec("from absorb import *", ns)
    assert set(absorb.__all__) <= set(ns) | {"__version__"}
    with pytest.raises(AttributeError):
        absorb.no_such_name  # noqa: B018


def test_cli_start_up_does_not_import_sympy() -> None:
    import subprocess
    import sys

    code = "import sys; from absorb.cli import build_parser; build_parser(); print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_docstring_example() -> None:
    import doctest

    assert doctest.testmod(absorb, verbose=False).failed == 0
