"""`absorb verify` accepts (exit 0) only when every claim was re-checked: an unchecked claim
exits 4 of its own, a failed one 1; witness fields of trivial (M = 0) certificates are checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main


@pytest.fixture()
def trivial(tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "triv.npz"
    np.savez(model, W_up=np.array([[1.0, 2], [3, 4]]), W_down=np.array([[1.0, 0], [0, 2]]), skip=np.zeros((2, 2)),
             activation=np.array("relu"))
    cert = tmp_path / "triv.json"
    assert main(["check", str(model), "--certificate", str(cert)]) == 0
    return model, cert


def _edit(cert: Path, fn) -> Path:
    doc = json.loads(cert.read_text())
    fn(doc["blocks"][0])
    out = cert.with_name("edited.json")
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("what, edit", [
    ("S", lambda b: b["witness"].__setitem__("S", [0])),
    ("residual", lambda b: b["witness"].__setitem__("residual", 0.5)),
    ("eval_error", lambda b: b["witness"].__setitem__("eval_error", 3.0)),
    ("exact", lambda b: b["witness"].__setitem__("exact", False)),
    ("hash", lambda b: b["witness"]["block"]["weights"]["W_up"].__setitem__("sha256", "0" * 64)),
    ("arrays", lambda b: b["witness"]["block"]["weights"].pop("skip")),
])
def test_edited_trivial_witness_is_rejected(trivial, what, edit, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = trivial
    assert main(["verify", str(cert), str(model)]) == 0
    capsys.readouterr()
    assert main(["verify", str(_edit(cert, edit)), str(model)]) == 1, what
    assert "rejected" in capsys.readouterr().out


def test_not_fully_checked_exits_4_and_says_so_in_json(trivial, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from absorb.verify import _report

    model, cert = trivial
    real = _report.Report.ok

    def unchecked_once(self, where, claim, detail=""):
        if "SHA-256 of W_up" in claim:
            return self.unchecked(where, claim, "pretend")
        return real(self, where, claim, detail)

    monkeypatch.setattr(_report.Report, "ok", unchecked_once)
    capsys.readouterr()
    assert main(["verify", str(cert), str(model), "--json"]) == 4
    out = json.loads(capsys.readouterr().out)
    assert out["result"] == "not fully checked" and out["not_rechecked"] == 1 and out["failures"] == 0
    assert main(["verify", str(cert), str(model), "--strict"]) == 4


def test_a_skip_whose_norm_overflows_has_an_honest_certificate(tmp_path: Path) -> None:
    """Finite skip entries near the float64 limit: ‖M‖_F overflows and is recorded as "inf"; the
    checker re-derives the same overflow instead of rejecting the (not_absorbable) certificate
    (it may decline the search's proof out of its float range: exit 4, not 1)."""
    from conftest import run_absorb

    U = np.array([[1, 0], [0, 1], [1, 2], [2, -1.0]])
    D = np.array([[-1, 0, 0.5, -0.25], [0, -1, 0.75, 1.5]])
    model = tmp_path / "huge_skip.npz"
    np.savez(model, W_up=U, W_down=D, skip=np.eye(2) * 1.7e308, activation=np.array("relu"))
    cert = tmp_path / "huge_skip.json"
    # (unknown since the screens price a unit against f's measure: f ≈ 1.7e308·x leaves the units' 5|x|∞ within
    # τ·|f(x)|∞, and antipodal pairs of width 2d = 4 realise M exactly — a block within τ the exact argument misses)
    assert run_absorb("check", str(model), "-q", "--certificate", str(cert)).returncode in (0, 3)
    r = run_absorb("verify", str(cert), "-q")
    assert r.returncode in (0, 4), r.stdout + r.stderr
    assert "Frobenius" not in r.stdout + r.stderr
