"""The shipped table of built-in activations' properties (absorb/symbolic/_builtin_facts.py)
is re-derived here, entry by entry: the table is only as good as this test.

After a deliberate change to an analysis or a built-in, regenerate it with
``python -m absorb.symbolic.facts --write`` and review the diff."""

from __future__ import annotations

import pytest
import sympy as sp

from absorb.model.activations import _BUILTIN, builtin_exprs, get_activation
from absorb.symbolic import facts, growth  # noqa: F401 - growth registers its analyses in props.ANALYSES
from absorb.symbolic import properties as props
from absorb.symbolic._builtin_facts import FACTS


def _same(a: object, b: object) -> bool:
    if isinstance(a, sp.Float) or isinstance(b, sp.Float):  # 50-digit witnesses: agree far below their margins
        return abs(sp.N(a, 50) - sp.N(b, 50)) <= sp.Float(10) ** -30 * (1 + abs(sp.N(a, 50)))
    if isinstance(a, sp.Basic) and isinstance(b, sp.Basic):
        return a == b or sp.simplify(a - b) == 0
    return a == b


def test_every_builtin_has_an_entry() -> None:
    assert set(FACTS) == set(_BUILTIN)
    for name, expr in builtin_exprs().items():
        assert _BUILTIN[name][0] == sp.srepr(expr), f"{name}: the registry's srepr differs from its definition"
        assert FACTS[name]["expr"] == sp.srepr(expr), f"{name}: the table is stale; regenerate it"
        assert {k for k, _ in props.ANALYSES} <= set(FACTS[name]["facts"]), f"{name}: an analysis is missing"


@pytest.mark.parametrize("name", sorted(_BUILTIN))
def test_table_matches_a_fresh_derivation(name: str) -> None:
    expr = builtin_exprs()[name]
    fresh = props.analyse(expr)
    shipped = facts.lookup(name, expr)
    assert shipped is not None
    for key, pr in fresh.items():
        got = shipped[key]
        assert (got.name, got.status, got.statement, got.steps) == (pr.name, pr.status, pr.statement, pr.steps), (name, key)
        assert set(got.value) == set(pr.value) and all(_same(got.value[k], pr.value[k]) for k in pr.value), (name, key)
        assert (got.witness is None) == (pr.witness is None), (name, key)
        if pr.witness is not None:
            assert set(got.witness) == set(pr.witness)
            assert all(_same(got.witness[k], pr.witness[k]) for k in pr.witness), (name, key)


def test_builtins_are_answered_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """No analysis runs for a built-in whose table entry is current."""
    props.clear_cache()

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("a built-in was re-derived")

    monkeypatch.setattr(props, "analyse", fail)
    try:
        act = get_activation("gelu")
        assert props.flip_identity(act, gated=False).value["c"] == 1
        from absorb.symbolic import growth

        assert growth.asymptotic_slopes(act).value["L_plus"] == 1
    finally:
        props.clear_cache()


def test_a_stale_entry_is_not_used() -> None:
    assert facts.lookup("gelu", sp.Symbol("x", real=True) ** 2) is None
    assert facts.lookup("no_such_activation", sp.Integer(0)) is None


def test_rational_read_without_sympy_agrees_with_sympy() -> None:
    """facts.rational reads a table value's srepr as a Fraction without sympy; it must give what
    sympy's parse gives (a Fraction for every Integer/Rational, None for anything else)."""
    from fractions import Fraction

    seen = 0
    for entry in FACTS.values():
        for d in entry["facts"].values():
            for raw in (d["value"], d["witness"] or {}):
                lazy = facts.Values(raw)
                for key in raw:
                    v = facts._load_value(raw[key])
                    want = Fraction(int(v.p), int(v.q)) if isinstance(v, sp.Rational) else None
                    assert facts.rational(lazy, key) == want, (key, raw[key])
                    assert facts.rational(dict(lazy), key) == want
                    seen += want is not None
    assert seen > 10
    assert facts.rational(facts.Values({"c": {"srepr": "Pow(Integer(2), Rational(1, 2))"}}), "c") is None
