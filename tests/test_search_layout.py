"""The search package's layout: a thin face, one module per idea, arrows pointing down.

* ``absorb.rigorous`` (the float helpers shared with the engine) imports no absorb module;
* no module of ``absorb.search`` imports the package face ``absorb.search`` itself;
* the engine takes its rounding helpers from ``absorb.rigorous``, not from the search;
* the face is at most 150 lines, every module of the package under 600;
* the portfolio's method names are one ``Literal`` with one table of backends."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import absorb

ROOT = Path(absorb.__file__).parent


def _absorb_imports(path: Path) -> list[str]:
    """Absolute names of the absorb modules ``path`` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module:
                    names.append(mod)
                else:  # `from . import x`: a submodule x, or a name taken from the package face
                    here = ROOT.parent.joinpath(*mod.split("."))
                    names += [f"{mod}.{a.name}" if (here / f"{a.name}.py").exists() or (here / a.name).is_dir()
                              else mod for a in node.names]
            else:
                names += [node.module or ""] + ([f"absorb.{a.name}" for a in node.names]
                                                if node.module == "absorb" else [])
    return [n for n in names if n == "absorb" or n.startswith("absorb.")]


def test_rigorous_helpers_import_no_absorb_module() -> None:
    assert _absorb_imports(ROOT / "rigorous.py") == []


def test_search_modules_never_import_the_package_face() -> None:
    bad = {p.name: names for p in (ROOT / "search").glob("*.py") if p.name != "__init__.py"
           if (names := [n for n in _absorb_imports(p) if n == "absorb.search"])}
    assert not bad, bad


def test_engine_takes_rounding_helpers_from_rigorous() -> None:
    helpers = {"gamma", "magnitudes_ok", "SAFE_EXPONENT", "relative_residual", "UNIT_ROUNDOFF"}
    bad = []
    for path in (ROOT / "engine").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "absorb.search":
                bad += [f"{path.name}: {a.name}" for a in node.names if a.name in helpers]
    assert not bad, bad


def test_module_sizes() -> None:
    for path in (ROOT / "search").glob("*.py"):
        n = len(path.read_text(encoding="utf-8").splitlines())
        assert n <= (150 if path.name == "__init__.py" else 599), (path.name, n)


def test_methods_are_one_literal_with_one_backend_table() -> None:
    from absorb.search import METHODS, portfolio

    assert METHODS == get_args(portfolio.Method) == ("auto", *get_args(portfolio.Backend))
    assert set(portfolio._BACKENDS) == set(get_args(portfolio.Backend))
    for method in portfolio._BACKENDS:
        assert callable(portfolio._backend(method)), method
    assert "type: ignore" not in (ROOT / "search" / "portfolio.py").read_text(encoding="utf-8")
