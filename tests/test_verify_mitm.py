"""The checker's own meet-in-the-middle confirms infeasibility beyond n = 16 (no dual matrix
needed), and refutes a not_absorbable certificate moved onto an absorbable block."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main
from absorb.verify._mitm import MitmResult, mitm_no_set_closer


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def test_generic_mitm_certificate_is_rechecked_and_a_moved_one_rejected(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3024)
    U, D = rng.standard_normal((24, 3)), rng.standard_normal((3, 24))
    model = tmp_path / "generic.npz"
    np.savez(model, W_up=U, W_down=D, activation=np.array("relu"))
    cert = tmp_path / "generic.json"
    assert main(["check", str(model), "--certificate", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    search = doc["blocks"][0]["search"]
    assert doc["verdict"] == "not_absorbable" and search["status"] == "infeasible"
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 0
    assert "the checker's meet-in-the-middle" in capsys.readouterr().out
    # the same certificate, hashes replaced by those of an absorbable block (same U, planted D)
    D2 = D.copy()
    D2[:, [2, 9, 17]] = -np.linalg.inv(U[[2, 9, 17]])
    planted = tmp_path / "planted.npz"
    np.savez(planted, W_up=U, W_down=D2, activation=np.array("relu"))
    doc["blocks"][0]["weights"]["W_down"]["sha256"] = _sha(D2)
    for k in ("fro_norm", "max_abs"):
        doc["blocks"][0]["weights"]["W_down"][k] = float(np.linalg.norm(D2) if k == "fro_norm" else np.abs(D2).max())
    doc["blocks"][0]["search"]["certificate"] = {"kind": "meet-in-the-middle"}  # no dual matrix, whatever was there
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(doc))
    assert main(["verify", str(moved), str(planted)]) == 1
    out = capsys.readouterr().out
    assert "rejected: block: no index set is within the distance bar" in out and "[2, 9, 17]" in out


def _all_distances(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> np.ndarray:
    n, d = U.shape
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, d * d)
    sums = np.zeros((1, d * d))
    for i in range(n):
        sums = np.concatenate([sums, sums + K[i]])
    return np.linalg.norm(sums - T.reshape(-1), axis=1) / np.linalg.norm(T)


def planted_near_solutions(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, set[tuple[int, ...]]]:
    """(U, D, T, R, the sets brute force finds closer than R): n = 18, d = 2, three
    near-solutions planted at relative distances ~1e-7 (2^18 sets measured)."""
    rng = np.random.default_rng(seed)
    n, d = 18, 2
    U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
    for S in ([1, 4], [7, 11], [3, 16]):
        D[:, S] = -np.linalg.inv(U[S]) * (1 + 1e-7 * rng.standard_normal((d, 1)))
    T = -np.eye(d)
    dist = _all_distances(U, D, T)
    R = float(np.sort(dist)[2] * 1.5 + 1e-9)
    return U, D, T, R, {tuple(i for i in range(n) if k >> i & 1) for k in np.flatnonzero(dist < R).tolist()}


@pytest.mark.parametrize("seed", range(4))
def test_mitm_finds_exactly_the_sets_closer_than_the_radius(seed: int) -> None:
    """The sets the checker reports closer than R are exactly those brute force finds."""
    U, D, T, R, want = planted_near_solutions(seed)
    res = mitm_no_set_closer(U, D, T, R)
    assert isinstance(res, MitmResult)
    assert {tuple(S) for S, _ in res.closer} == want and len(want) >= 1


def test_mitm_declines_rather_than_guess() -> None:
    rng = np.random.default_rng(0)
    U, D = rng.standard_normal((12, 2)), rng.standard_normal((2, 12))
    assert isinstance(mitm_no_set_closer(U, D, -np.eye(2), 0.5), str)  # windows too wide to read pivot bits
    assert isinstance(mitm_no_set_closer(np.ldexp(U, 300), D, -np.eye(2), 1e-9), str)  # out of the trusted range
