"""The checker's own lattice enumeration (absorb/verify/_lattice.py) confirms a
not_absorbable found by the search's lattice route where its meet-in-the-middle declines
(d = 2, n = 64), reports exactly the sets closer than its radius, and refutes a certificate
moved onto an absorbable block."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main
from absorb.verify._lattice import LatticeResult, lattice_no_set_closer
from tests.test_verify_mitm import planted_near_solutions

pytestmark = pytest.mark.skipif(importlib.util.find_spec("fpylll") is None, reason="fpylll is not installed")


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


@pytest.mark.parametrize("seed", range(3))
def test_lattice_finds_exactly_the_sets_closer_than_the_radius(seed: int) -> None:
    """The sets the checker reports closer than R are exactly those brute force finds."""
    U, D, T, R, want = planted_near_solutions(seed)
    res = lattice_no_set_closer(U, D, T, R)
    assert isinstance(res, LatticeResult)
    assert {tuple(S) for S, _ in res.closer} == want and len(want) >= 1


def test_lattice_declines_rather_than_guess() -> None:
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((12, 2)), rng.standard_normal((2, 12))
    assert isinstance(lattice_no_set_closer(np.ldexp(U, 300), D, -np.eye(2), 1e-9), str)  # out of range
    assert isinstance(lattice_no_set_closer(U, D, -np.eye(2), 0.0), str)


def test_lattice_certificate_is_rechecked_and_a_moved_one_rejected(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(6402)
    U, D = rng.standard_normal((64, 2)), rng.standard_normal((2, 64))
    # (rows folded into a cone of angles (0.25, π − 0.25): no nearly antipodal pair, which beside flips could carry
    # ~10⁻⁶ of the skip within τ — with one, the search must prove that much, past what the lattice does in 600 s)
    ang, r = 0.25 + (np.arctan2(U[:, 1], U[:, 0]) % np.pi) * (np.pi - 0.5) / np.pi, np.linalg.norm(U, axis=1)
    U = np.column_stack([r * np.cos(ang), r * np.sin(ang)])
    model = tmp_path / "generic.npz"
    np.savez(model, W_up=U, W_down=D, activation=np.array("relu"))
    cert = tmp_path / "generic.json"
    # (the distance bar counts f's gain, ~80 here: the lattice enumerates a wider radius, ~10 s quiet)
    assert main(["check", str(model), "--certificate", str(cert), "--timeout", "600"]) == 0
    doc = json.loads(cert.read_text())
    search = doc["blocks"][0]["search"]
    assert doc["verdict"] == "not_absorbable" and search["status"] == "infeasible"
    assert search["method"] == "lattice" and search["certificate"]["kind"] == "lattice-enumeration"
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 0
    assert "the checker's lattice enumeration" in capsys.readouterr().out
    # the same certificate, hashes replaced by those of an absorbable block (same U, planted D)
    S = [3, 10, 11, 20, 33, 41, 50, 63]
    D2 = D.copy()
    D2[:, S] = -np.linalg.pinv(U[S])
    planted = tmp_path / "planted.npz"
    np.savez(planted, W_up=U, W_down=D2, activation=np.array("relu"))
    doc["blocks"][0]["weights"]["W_down"]["sha256"] = _sha(D2)
    for k in ("fro_norm", "max_abs"):
        doc["blocks"][0]["weights"]["W_down"][k] = float(np.linalg.norm(D2) if k == "fro_norm" else np.abs(D2).max())
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(doc))
    assert main(["verify", str(moved), str(planted)]) == 1
    out = capsys.readouterr().out
    assert "rejected: block: no index set is within the distance bar" in out and str(S) in out


def test_lattice_checker_declines_a_radius_out_of_scale() -> None:
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((24, 2)), rng.standard_normal((2, 24))
    assert isinstance(lattice_no_set_closer(U, D, -np.eye(2), 1e-300), str)


def test_lattice_checker_stopped_at_its_budget_declines() -> None:
    """d = 2, n = 80: ~10¹² nodes, out of reach of a 10 ms budget on any machine; a budget spent
    before the enumeration ends gives a reason, never a verdict."""
    rng = np.random.default_rng(6402)
    U, D = rng.standard_normal((80, 2)), rng.standard_normal((2, 80))
    res = lattice_no_set_closer(U, D, -np.eye(2), 4e-9, budget=0.01)
    assert isinstance(res, str) and "stopped" in res
