"""Golden test over counterexamples/: ``absorb check --json`` on every file, compared with
``counterexamples/expected.json``; and never a verdict that contradicts the true answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_absorb

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "counterexamples"
EXPECTED = json.loads((CATALOG / "expected.json").read_text())


def _check(path: Path) -> tuple[int, dict, str]:
    options = EXPECTED.get(path.stem, {}).get("options", [])
    proc = run_absorb("check", "--json", *options, str(path))  # in process: a second of start-up saved per file
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    return proc.returncode, doc, proc.stderr


@pytest.fixture(scope="module")
def outputs() -> dict[str, tuple[int, dict, str]]:
    return {f.stem: _check(f) for f in sorted(CATALOG.glob("*.npz"))}


def test_every_file_has_an_entry_and_back(outputs) -> None:
    assert set(outputs) == set(EXPECTED)
    for e in EXPECTED.values():
        assert (CATALOG / e["file"]).is_file()
        assert e["truth"] in ("absorbable", "not_absorbable", "open")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_never_contradicts_the_truth(outputs, name: str) -> None:
    code, doc, err = outputs[name]
    assert doc, err
    truth, verdict = EXPECTED[name]["truth"], doc["verdict"]
    if truth == "absorbable":
        assert verdict != "not_absorbable", f"{name}: WRONG not_absorbable for an absorbable block: {doc['reason']}"
    elif truth == "not_absorbable":
        assert verdict != "absorbable", f"{name}: WRONG absorbable for a non-absorbable block: {doc['reason']}"
    else:  # open problem: a definite verdict needs a proof we do not have
        assert verdict == "unknown", f"{name}: a definite verdict on an open case: {doc['reason']}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_and_theorem_as_expected(outputs, name: str) -> None:
    code, doc, err = outputs[name]
    e = EXPECTED[name]
    assert (doc["verdict"], doc["theorem"]) == (e["verdict"], e["theorem"]), doc.get("reason")
    assert code == (3 if e["verdict"] == "unknown" else 0)
    if doc["verdict"] == "absorbable" and doc["theorem"] == "index-set":
        assert doc["blocks"][0]["witness"]["S"]
        if "S" in e:
            assert doc["blocks"][0]["witness"]["S"] == e["S"]
