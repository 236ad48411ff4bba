"""Built-in activations' properties: facts proved once, shipped as a table, not re-derived per run.

Every analysis of :data:`absorb.symbolic.properties.ANALYSES` on every built-in activation
(:mod:`absorb.model.activations`) was run by this module's :func:`main` and its outcome written
to :mod:`absorb.symbolic._builtin_facts` as a literal table (sympy values as ``srepr`` strings).
:func:`lookup` answers from that table, for the exact expression the table was derived from
(a registry change makes the entry stale: it is then derived again, as for a user's
expression). tests/test_asymptotic_builtin_facts.py re-derives every entry and compares: the test is the
guard that the table stays true.

Regenerate after changing an analysis or a built-in::

    python -m absorb.symbolic.facts --write
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from absorb.symbolic._core import Property, Status

_TABLE_PATH = Path(__file__).with_name("_builtin_facts.py")


def _dump_value(v: Any) -> Any:
    import sympy as sp

    if isinstance(v, sp.Basic):
        return {"srepr": sp.srepr(v)}
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return {"srepr": sp.srepr(sp.sympify(v))}


def _load_value(v: Any) -> Any:
    if isinstance(v, dict) and "srepr" in v:
        import sympy as sp

        return sp.sympify(v["srepr"])
    return v


class Values(Mapping[str, Any]):
    """A table entry's values (or witness): each sympy value parsed from its ``srepr`` the first
    time it is read, so that a run which only needs a rational constant (:func:`rational`)
    does not import sympy."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = dict(raw)
        self._parsed: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._parsed:
            self._parsed[key] = _load_value(self._raw[key])
        return self._parsed[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __contains__(self, key: object) -> bool:  # (Mapping's would parse the value)
        return key in self._raw

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def raw(self, key: str) -> Any:
        """The table's literal for ``key`` (``{"srepr": …}`` for a sympy value)."""
        return self._raw[key]


_RATIONAL = re.compile(r"Integer\((-?\d+)\)|Rational\((-?\d+), (\d+)\)")


def rational(values: Mapping[str, Any], key: str) -> Fraction | None:
    """``values[key]`` as a Fraction when it is a sympy Integer or Rational, else None; read
    from the table's ``srepr`` without sympy when ``values`` came from the table."""
    if isinstance(values, Values):
        raw = values.raw(key)
        m = _RATIONAL.fullmatch(raw["srepr"]) if isinstance(raw, dict) and isinstance(raw.get("srepr"), str) else None
        if m is not None:
            return Fraction(int(m[1])) if m[1] is not None else Fraction(int(m[2]), int(m[3]))
        if isinstance(raw, dict):
            return None  # another sympy value (irrational, symbolic)
    import sympy as sp

    v = values[key]
    return Fraction(int(v.p), int(v.q)) if isinstance(v, sp.Rational) else None


def dump(pr: Property) -> dict[str, Any]:
    """A Property as plain literals (sympy values as srepr strings)."""
    return {"name": pr.name, "status": pr.status.value, "statement": pr.statement,
            "value": {k: _dump_value(v) for k, v in pr.value.items()}, "steps": list(pr.steps),
            "witness": None if pr.witness is None else {k: _dump_value(v) for k, v in pr.witness.items()}}


def load(d: dict[str, Any]) -> Property:
    return Property(d["name"], Status(d["status"]), d["statement"], value=Values(d["value"]),  # type: ignore[arg-type]
                    steps=tuple(d["steps"]), witness=None if d["witness"] is None else Values(d["witness"]))  # type: ignore[arg-type]


def derive_all() -> dict[str, dict[str, Any]]:
    """Every analysis of every built-in, derived now: {name: {"expr": srepr, "facts": {key: dump}}}."""
    import sympy as sp

    from absorb.model.activations import builtin_exprs
    from absorb.symbolic import growth  # noqa: F401 - registers the growth analyses
    from absorb.symbolic.properties import analyse

    out = {}
    for name, expr in sorted(builtin_exprs().items()):
        out[name] = {"expr": sp.srepr(expr), "facts": {k: dump(pr) for k, pr in analyse(expr).items()}}
    return out


_loaded: dict[str, dict[str, Property]] = {}


def lookup(name: str, expr: Any) -> dict[str, Property] | None:
    """The table's Properties of the built-in ``name`` when ``expr`` (a sympy expression, or its
    ``srepr`` string: an Activation's ``key``) is the expression they were derived from; None
    otherwise (no entry, or a stale one)."""
    try:
        from absorb.symbolic._builtin_facts import FACTS
    except ImportError:  # pragma: no cover - the table is generated and shipped with the package
        return None
    entry = FACTS.get(name)
    if not isinstance(expr, str):
        import sympy as sp

        expr = sp.srepr(expr)
    if entry is None or entry["expr"] != expr:
        return None
    if name not in _loaded:
        _loaded[name] = {k: load(d) for k, d in entry["facts"].items()}
    return dict(_loaded[name])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import pprint

    table = derive_all()
    text = ('"""Generated by ``python -m absorb.symbolic.facts --write``: do not edit by hand.\n\n'
            "Every analysis of every built-in activation, as derived by absorb.symbolic (sympy values\n"
            'as srepr strings). tests/test_asymptotic_builtin_facts.py re-derives each entry and compares."""\n\n'
            f"FACTS = {pprint.pformat(table, width=120, sort_dicts=True)}\n")
    if "--write" in argv:
        _TABLE_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {_TABLE_PATH} ({len(table)} activations)")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
