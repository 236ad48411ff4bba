"""Every recorded field is read by a check of its certificate (absorb/verify/_read.py): a field that the format has,
but that this certificate's case, route or verdict does not read, is a claim nobody checked — the certificate is then
not fully checked (exit 4), never accepted (red team 49a/01). Honest certificates leave nothing unread but prose and
how they were made."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from absorb.cli import main
from absorb.io import load
from absorb.verify import checker


def _made(tmp_path: Path, name: str, arrays: dict) -> tuple[dict, Path]:
    path, cert = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
    np.savez(path, **arrays)
    assert main(["check", str(path), "-q", "--certificate", str(cert)]) in (0, 3)
    return json.loads(cert.read_text()), path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, Path]]:
    tmp = tmp_path_factory.mktemp("read")
    r = np.random.default_rng(49)
    U, D = r.standard_normal((6, 2)), r.standard_normal((2, 6))
    U[1] = -U[0]
    D[:, [2, 4]] = -np.linalg.inv(U[[2, 4]])  # (a planted index set S = {2, 4})
    n, d = 6, 3
    return {
        "index-set": _made(tmp, "A", {"W_up": U, "W_down": D, "activation": np.array("relu")}),
        "canonical-form": _made(tmp, "B", {"W_up": np.array([[1.0, 0], [-1, 0], [0, -1]]),
                                           "W_down": np.array([[2.0, 5, 0], [3, 7, -1]]), "activation": np.array("relu")}),
        "gated-skeleton": _made(tmp, "C", {"W_gate": r.standard_normal((n, d)), "W_up": r.standard_normal((n, d)),
                                           "W_down": r.standard_normal((d, n)), "b_gate": r.standard_normal(n),
                                           "b_up": r.standard_normal(n), "b_down": r.standard_normal(d),
                                           "activation": np.array("swiglu")}),
        "depth": _made(tmp, "E", {"blocks.0.W_up": r.standard_normal((4, 2)), "blocks.0.W_down": r.standard_normal((2, 4)),
                                  "blocks.1.W_up": r.standard_normal((4, 2)), "blocks.1.W_down": r.standard_normal((2, 4)),
                                  "activation": np.array("relu2")}),
    }


def _unread(doc: dict, path: Path) -> list[str]:
    rep = checker.verify_certificate(doc, load(str(path)))
    assert rep.accepted, [f.to_json() for f in rep.failures]
    return [f.detail for f in rep.not_rechecked if "not read" in f.detail]


def test_honest_certificates_leave_nothing_unread(made) -> None:
    for theorem, (doc, path) in made.items():
        assert doc["theorem"]["id"] == theorem
        assert _unread(doc, path) == [], theorem


def _edit(doc: dict, where: str, value: object) -> dict:
    out = copy.deepcopy(doc)
    *head, last = where.split(".")
    rec = out
    for k in head:
        rec = rec[int(k)] if isinstance(rec, list) else rec[k]
    rec[last] = value
    return out


@pytest.mark.parametrize("theorem, where, value", [
    ("index-set", "blocks.0.argument.robust_bar", -1.0),  # (read for a not_absorbable only)
    ("index-set", "blocks.0.canonical_form", "B"),  # (another model's canonical form)
    ("gated-skeleton", "blocks.0.argument.L_plus", "abc"),  # (not read on the rank route)
    ("depth", "stack.range_certificate", {"points": [["1", "0"]], "lambdas": ["1"], "margin": "1/2"}),
])
def test_a_field_no_check_reads_leaves_the_certificate_not_fully_checked(made, theorem: str, where: str,
                                                                          value: object) -> None:
    doc, path = made[theorem]
    if value == "B":
        value = made["canonical-form"][0]["blocks"][0]["canonical_form"]
    left = _unread(_edit(doc, where, value), path)
    assert left and where.replace("blocks.0", "$.blocks[]").replace("stack", "$.stack") in left[0], left
