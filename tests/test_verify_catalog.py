"""Every counterexample in the catalog and every example model: `absorb check --certificate`
then `absorb verify` (default mode) accepts with every claim re-checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from absorb.cli import main

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted((ROOT / "counterexamples").glob("*.npz")) + sorted((ROOT / "examples").glob("*.npz"))
OPTIONS = {name: e.get("options", []) for name, e in json.loads((ROOT / "counterexamples" / "expected.json").read_text()).items()}


def test_catalog_is_not_empty() -> None:
    assert len(MODELS) >= 15


@pytest.mark.parametrize("model", MODELS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_certificate_of_every_catalog_model_verifies_completely(model: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    cert = tmp_path / f"{model.stem}.json"
    options = OPTIONS.get(model.stem, []) if model.parent.name == "counterexamples" else []
    rc = main(["check", *options, str(model), "--certificate", str(cert)])
    assert rc in (0, 3), rc
    capsys.readouterr()
    rc = main(["verify", str(cert), str(model), "--json"])
    out = json.loads(capsys.readouterr().out)
    bad = [f"{f['status']}: {f['claim']} — {f['detail']}" for f in out["findings"] if f["status"] != "ok"]
    assert rc == 0 and out["result"] == "accepted", bad
