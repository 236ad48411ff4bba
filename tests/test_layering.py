"""The package's layers, read from the ASTs of its modules (nothing is imported to check them).

absorb/io/ (loaders: files → validated blocks) sits below the engine: it imports nothing
from the engine, the search, the certificate, the checker, the reports or the CLI — not even
inside a function. No two modules import each other at module level (an import cycle), and
no cycle, even through imports inside functions, runs through absorb/io or absorb/engine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import absorb

ROOT = Path(absorb.__file__).parent
ABOVE_IO = ("absorb.engine", "absorb.search", "absorb.certificate", "absorb.verify", "absorb.report", "absorb.cli")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _owner(name: str) -> str:
    """The module of the package that ``name`` (a module or a name inside one) lives in."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _edges(*, top_level: bool) -> dict[str, set[str]]:
    """module → the package's modules it imports (``top_level``: only at import time)."""
    edges: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        nodes = tree.body if top_level else list(ast.walk(tree))
        targets: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                targets |= {_owner(a.name) for a in node.names if a.name.split(".")[0] == "absorb"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] == "absorb":
                    targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else _owner(base) for a in node.names}
        edges[mod] = targets - {mod}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_walk_sees_the_package() -> None:
    edges = _edges(top_level=False)
    assert "absorb.io.safetensors" in edges and "absorb.engine.decide" in edges
    assert "absorb.io.safetensors" in edges["absorb.engine.decide"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the detector detects


def test_io_imports_nothing_above_it() -> None:
    edges = _edges(top_level=False)
    io = {m: sorted(t for t in ts if t.startswith(ABOVE_IO)) for m, ts in edges.items() if m.startswith("absorb.io")}
    assert len(io) >= 6, io
    assert not {m: ts for m, ts in io.items() if ts}, io


def test_no_import_cycle_at_module_level() -> None:
    assert _cycles(_edges(top_level=True)) == []


def test_no_cycle_through_io_or_the_engine() -> None:
    bad = [c for c in _cycles(_edges(top_level=False)) if any(m.startswith(("absorb.io", "absorb.engine")) for m in c)]
    assert bad == []
