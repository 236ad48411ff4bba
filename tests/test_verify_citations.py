"""The checker's own table of theorem records (absorb/verify/_citations.py) is the producer's:
every id a certificate may cite, with the digest of its title, source, statement, needs and
classes. When a statement changes on purpose, paste the table this test prints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from absorb.certificate._theorems import THEOREMS, WITH_VALUE_ACTIVATION, theorem_info
from absorb.cli import main
from absorb.verify import _citations

CE = Path(__file__).resolve().parents[1] / "counterexamples"


def test_the_checker_knows_every_theorem_record_as_written() -> None:
    fresh = {k: _citations.digest(theorem_info(k)) for k in THEOREMS}
    table = "\n".join(f'    "{k}": "{v}",' for k, v in fresh.items())
    assert fresh == _citations.DIGESTS, f"update DIGESTS in absorb/verify/_citations.py to:\n{table}"
    value = {k: _citations.digest(theorem_info(k, value_activation=True)) for k in WITH_VALUE_ACTIVATION}
    table = "\n".join(f'    "{k}": "{v}",' for k, v in value.items())
    assert value == _citations.VALUE_DIGESTS, f"update VALUE_DIGESTS in absorb/verify/_citations.py to:\n{table}"


def test_another_theorems_text_under_an_id_is_rejected(tmp_path: Path) -> None:
    model = tmp_path / "generic_relu.npz"
    shutil.copy(CE / "generic_relu.npz", model)
    cert = tmp_path / "c.json"
    main(["check", str(model), "--certificate", str(cert), "-q"])
    doc = json.loads(cert.read_text())
    assert doc["theorem"]["id"] == "index-set"
    assert main(["verify", str(cert), str(model), "-q"]) == 0
    for where in ("top", "block", "classes"):
        d = json.loads(json.dumps(doc))
        degree = {k: v for k, v in theorem_info("degree").items() if k != "id"}
        if where == "top":
            d["theorem"].update(degree)
        elif where == "block":
            d["blocks"][0]["theorem"].update(degree)
        else:
            d["blocks"][0]["theorem"]["classes"] = "any"
        cert.write_text(json.dumps(d))
        assert main(["verify", str(cert), str(model), "-q"]) == 1, where
