"""The persistent analysis cache of ``expr:`` activations (absorb/_analysis_cache.py).

A stored entry is only the result of the same proof code on the same expression: a run that
reads it gives the same verdict and the same JSON as a run without it; a corrupt, foreign or
hostile entry is ignored; a missing or unwritable directory never fails a run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_absorb

from absorb import _analysis_cache as cache
from absorb.model import _samples
from absorb.model._expr_text import canonical, parse
from absorb.model.activations import get_activation
from absorb.symbolic import _core
from absorb.symbolic import properties as props

EXPRESSIONS = ["x**2", "x*tanh(log(1+exp(x)))", "Max(0, x) + Min(0, exp(x) - 1)", "x*(1+erf(x/sqrt(2)))/2",
               "1-0**Max(0,x)", "Max(0,x)**3", "x + tanh(x)**2"]


def _forget() -> None:
    """What a fresh process would not have: the in-memory caches."""
    get_activation.cache_clear()
    props.clear_cache()
    _samples._MEMO.clear()
    cache._extras.clear()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ABSORB_CACHE_DIR", str(tmp_path / "c"))
    _forget()
    yield tmp_path / "c" / "analysis"
    _forget()


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("cache") / "b.npz"
    np.savez(path, W_up=rng.standard_normal((6, 3)), W_down=rng.standard_normal((3, 6)), activation=np.array("relu"))
    return path


def _json(block: Path, expr: str) -> object:
    _forget()
    r = run_absorb("check", str(block), "--json", "--activation", "expr:" + expr, "--timeout", "30")
    assert r.returncode in (0, 3), r.stderr
    return _untimed(json.loads(r.stdout))


def _untimed(v: object) -> object:
    """The JSON without its wall-clock times (which differ from run to run anyway)."""
    if isinstance(v, dict):
        return {k: _untimed(w) for k, w in v.items() if "elapsed" not in k}
    if isinstance(v, list):
        return [_untimed(w) for w in v]
    return v


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_same_verdict_and_json_with_and_without_the_cache(block: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                           expr: str) -> None:
    cold = _json(block, expr)  # analysed in the child process, stored
    assert len(list(cache_dir.glob("expr-*.json"))) == 1

    def no_child(*_a: object, **_k: object) -> None:
        raise AssertionError("a cached expression must not be analysed again")

    with monkeypatch.context() as m:
        m.setattr("absorb._sandbox.run_limited", no_child)
        warm = _json(block, expr)  # read from the cache: no child process at all
    monkeypatch.setenv("ABSORB_CACHE_DIR", "off")
    uncached = _json(block, expr)
    assert warm == cold == uncached
    assert len(list(cache_dir.glob("expr-*.json"))) == 1


def test_entry_round_trips_every_property(cache_dir: Path) -> None:
    act = get_activation("expr:x*tanh(log(1+exp(x)))")
    props.prepare(act)
    fresh = {k: pr.to_json() for k, pr in props._cache[act.key].items()}
    _forget()
    act2 = get_activation("expr:x*tanh(log(1+exp(x)))")
    assert act2.key not in _core._waiting and act2.key == act.key and act2.name == act.name  # read, no child
    props.prepare(act2)
    assert {k: pr.to_json() for k, pr in props._cache[act2.key].items()} == fresh
    z = np.linspace(-30, 30, 61)
    np.testing.assert_allclose(act2(z), act(z), rtol=1e-13, atol=0)


def _entry_path(expr: str) -> Path:
    where = cache.directory()
    assert where is not None
    return where / f"expr-{cache.key(canonical(parse(expr)))}.json"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign key", "other expression", "hostile srepr",
                                    "hostile value", "bad status", "empty facts", "flipped fact", "no seal"])
def test_a_damaged_entry_is_ignored_and_rewritten(cache_dir: Path, damage: str) -> None:
    expr = "x**2"
    props.prepare(get_activation("expr:" + expr))
    path = _entry_path(expr)
    good = json.loads(path.read_text(encoding="utf-8"))
    bad = json.loads(json.dumps(good))
    if damage == "garbage":
        text = "\x00not json"
    else:
        if damage == "foreign key":
            bad["key"] = "0" * 40
        elif damage == "other expression":
            bad["expression"] = canonical(parse("x**3"))
        elif damage == "hostile srepr":
            bad["srepr"] = "__import__('os').system('false')"
        elif damage == "hostile value":
            bad["facts"]["homogeneity"]["value"]["k"] = {"srepr": "open('/etc/passwd').read()"}
        elif damage == "bad status":
            bad["facts"]["homogeneity"]["status"] = "proven"
        elif damage == "empty facts":
            bad["facts"] = {}
        elif damage == "flipped fact":  # well-formed, but not what the analysis proved: the seal no longer matches
            bad["facts"]["bounded"]["status"] = "proved"
            bad["facts"]["bounded"]["statement"] = "σ is bounded"
        elif damage == "no seal":
            del bad["seal"]
        text = json.dumps(bad)
        if damage == "truncated":
            text = text[: len(text) // 2]
    path.write_text(text, encoding="utf-8")
    assert cache.read(canonical(parse(expr))) is None
    _forget()
    act = get_activation("expr:" + expr)
    assert act.key in _core._waiting  # validated afresh, its child waiting to analyse
    assert props.homogeneity(act).value["k"] == 2
    assert json.loads(path.read_text(encoding="utf-8")) == good  # and stored again


def test_unwritable_or_off_never_fails_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for where in (str(blocker / "sub"), "off", "0", ""):
        monkeypatch.setenv("ABSORB_CACHE_DIR", where)
        _forget()
        r = run_absorb("check", str(block), "--activation", "expr:x**2+x", "-q")
        assert r.returncode in (0, 3) and r.stderr == "", r.stderr
    assert blocker.read_text() == "not a directory"
    assert not (tmp_path / "off").exists()
    _forget()


def test_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ABSORB_CACHE_DIR", str(tmp_path / "a"))
    assert cache.directory() == tmp_path / "a" / "analysis"
    monkeypatch.setenv("ABSORB_CACHE_DIR", "OFF")
    assert cache.directory() is None and not cache.enabled()
    monkeypatch.delenv("ABSORB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.directory() == tmp_path / "x" / "absorb" / "analysis"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert cache.directory() == tmp_path / "h" / ".cache" / "absorb" / "analysis"


def test_the_key_covers_the_code_and_the_expression() -> None:
    a, b = canonical(parse("x**2")), canonical(parse("x^2"))
    assert a == b and cache.key(a) == cache.key(b)  # spelling does not matter
    assert cache.key(a) != cache.key(canonical(parse("x**3")))
    old, before = cache._code_digest, cache.key(a)
    try:
        cache._code_digest = "0" * 64  # another analysis code
        other = cache.key(a)
    finally:
        cache._code_digest = old
    assert other != before == cache.key(a)


def test_no_cache_flag_writes_nothing(cache_dir: Path, block: Path) -> None:
    r = run_absorb("check", str(block), "--no-cache", "--activation", "expr:x**2+2*x", "-q")
    assert r.returncode in (0, 3), r.stderr
    assert not cache_dir.exists() or not list(cache_dir.glob("expr-*.json"))
    cache._disabled_here = False  # the flag holds for the rest of the process: undo it here
    _forget()


def test_an_entry_sealed_under_another_key_is_ignored(cache_dir: Path) -> None:
    """Copied from another cache, or its key lost: the seal fails, the expression is analysed
    afresh, and the entry is written again under this cache's key."""
    expr = "x**2"
    props.prepare(get_activation("expr:" + expr))
    path = _entry_path(expr)
    assert cache.read(canonical(parse(expr))) is not None
    key_file = path.parent / ".key"
    assert key_file.stat().st_mode & 0o077 == 0  # private to its owner
    key_file.write_bytes(b"\x01" * 32)  # another cache's key
    assert cache.read(canonical(parse(expr))) is None
    key_file.unlink()  # no key at all
    assert cache.read(canonical(parse(expr))) is None
    _forget()
    act = get_activation("expr:" + expr)
    assert props.homogeneity(act).value["k"] == 2
    assert cache.read(canonical(parse(expr))) is not None  # sealed anew under a new key


@pytest.mark.parametrize("text, ok", [
    ("Add(Mul(Float('0.10000000000000001', precision=53), Symbol('x')), Rational(1, 3), oo)", True),
    ("Piecewise(ExprCondPair(Symbol('x'), StrictGreaterThan(Symbol('x'), Integer(0))), ExprCondPair(Integer(0), true))", True),
    ("S(\"__import__('os').system('true') or 1\")", False),  # sympify evaluates a string argument as Python
    ("sympify('1+1')", False),
    ("Symbol(\"__import__('os')\")", False),
    ("Float('1e5; import os', precision=53)", False),
    ("Add(Integer(1), 'x')", False),
])
def test_srepr_strings_only_as_names_and_digits(text: str, ok: bool) -> None:
    assert cache._safe_srepr(text) is ok


# ----- the trusted stretches of σ's sample (absorb/model/_samples.py), stored with the analysis -----

def test_the_trusted_stretches_are_stored_with_the_analysis(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expr = "x*tanh(log(1+exp(x)))"
    act = get_activation("expr:" + expr)
    z, v = _samples.trusted_grid(act)  # before the analysis is stored: kept for its entry
    props.prepare(act)
    entry = cache.read(canonical(parse(expr)))
    assert entry is not None and entry["extras"]["trusted"] and len(entry["facts"]) > 3
    _forget()

    def no_mpmath(*a: object, **k: object) -> None:
        raise AssertionError("evaluated again")

    monkeypatch.setattr("absorb.model._expr_numpy.precise_form", no_mpmath)
    again = get_activation("expr:" + expr)  # a later run: the entry is read
    z2, v2 = _samples.trusted_grid(again)
    assert np.array_equal(z, z2) and np.array_equal(v, v2)
    zw, _ = _samples.trusted_grid(again, (-2.0, 2.0))  # a window reads the stored stretches too
    assert np.isin(zw, z).all() and np.isin(z[(z >= -2.0) & (z <= 2.0)], zw).all()


def test_stretches_computed_after_the_analysis_are_added_to_its_entry(cache_dir: Path) -> None:
    expr = "log(cosh(x))"
    act = get_activation("expr:" + expr)
    props.prepare(act)
    assert "extras" not in cache.read(canonical(parse(expr)))
    _samples.trusted_grid(act)
    entry = cache.read(canonical(parse(expr)))
    assert entry is not None and entry["extras"]["trusted"][0][0] >= 0 and "bounded" in entry["facts"]


@pytest.mark.parametrize("extras", [{"trusted": [[0, 1.5]]}, {"trusted": [["0", 1]]}, {"trusted": [[0, 1, 2, 3, 4]]},
                                    {"trusted": [0, 1]}, {"trusted": "all"}, {"__class__": [[0, 1]]}, [[0, 1]],
                                    {"trusted": [[True, 1]]}])
def test_malformed_extras_are_neither_written_nor_read(cache_dir: Path, extras: object) -> None:
    expr = "x**2"
    act = get_activation("expr:" + expr)
    props.prepare(act)
    entry = cache.read(canonical(parse(expr)))
    assert entry is not None
    assert not cache.write(entry["expression"], entry["text"], entry["srepr"], entry["facts"], extras)  # type: ignore[arg-type]
    assert cache.read(canonical(parse(expr))) == entry


def test_an_edited_stretch_breaks_the_seal(cache_dir: Path) -> None:
    expr = "x*(1+erf(x/sqrt(2)))/2"
    act = get_activation("expr:" + expr)
    props.prepare(act)
    _samples.trusted_grid(act)
    path = next(cache_dir.glob("expr-*.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["extras"]["trusted"] = [[0, len(_samples.GRID)]]  # every point trusted: not what was measured
    path.write_text(json.dumps(data), encoding="utf-8")
    assert cache.read(canonical(parse(expr))) is None


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "key fifo"])
def test_an_entry_that_is_not_a_regular_file_is_ignored(cache_dir: Path, kind: str) -> None:
    """A FIFO in an entry's place would block the run, a device (/dev/zero) never end: only a regular file of at most
    MAX_ENTRY_BYTES is read (red team 49b/02); the expression is analysed afresh and the run answers as without a cache."""
    import os

    expr = "x**2"
    props.prepare(get_activation("expr:" + expr))
    path = _entry_path(expr)
    target = path.parent / ".key" if kind == "key fifo" else path
    target.unlink()
    if kind in ("fifo", "key fifo"):
        os.mkfifo(target)
    elif kind == "device":
        target.symlink_to("/dev/zero")
    else:
        target.mkdir()
    assert cache.read(canonical(parse(expr))) is None
    _forget()
    assert props.homogeneity(get_activation("expr:" + expr)).value["k"] == 2
