"""The checker shares no code with the producer: absorb/verify imports nothing from the
search, the engine, the certificate builder or the symbolic layer, and the search and the
engine import nothing from absorb/verify (ASTs of every module, both ways)."""

from __future__ import annotations

import ast
from pathlib import Path

import absorb

ROOT = Path(absorb.__file__).parent
VERIFY_MAY_IMPORT = ("absorb.verify", "absorb.model", "absorb.io", "absorb._errors", "absorb._sandbox")


def _imports(pkg: str) -> dict[str, list[str]]:
    """module file -> absolute names of the absorb modules it imports (relative ones resolved)."""
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / pkg.split(".", 1)[1].replace(".", "/")).rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        here = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        names = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                    names += [mod] + [f"{mod}.{a.name}" for a in node.names] if not node.module else [mod]
                else:
                    names.append(node.module or "")
                    if node.module == "absorb":
                        names += [f"absorb.{a.name}" for a in node.names]
        out[str(rel)] = [n for n in names if n == "absorb" or n.startswith("absorb.")]
    return out


def test_verify_imports_only_model_io_and_errors() -> None:
    bad = {m: [n for n in names if not n.startswith(VERIFY_MAY_IMPORT)] for m, names in _imports("absorb.verify").items()}
    assert not {m: v for m, v in bad.items() if v}, bad
    assert _imports("absorb.verify")  # the walk found the modules


def test_search_and_engine_import_nothing_from_verify() -> None:
    for pkg in ("absorb.search", "absorb.engine"):
        found = _imports(pkg)
        assert found, pkg
        bad = {m: [n for n in names if n.startswith("absorb.verify")] for m, names in found.items()}
        assert not {m: v for m, v in bad.items() if v}, bad


def test_verify_modules_are_small() -> None:
    """The checker is split into modules of < 600 lines, its package __init__ < 150."""
    for path in (ROOT / "verify").glob("*.py"):
        n = len(path.read_text(encoding="utf-8").splitlines())
        assert n < (150 if path.name == "__init__.py" else 600), (path.name, n)
