"""Canonical-form certificates (docs/degenerate.md) are re-checked exactly by the checker:
honest ones accepted with nothing left unchecked, edited ones rejected."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from absorb import Block, get_activation
from absorb.certificate import build_certificate
from absorb.cli import main
from absorb.engine import decide
from absorb.verify import checker

CATALOG = Path(__file__).resolve().parent.parent / "counterexamples"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("canon")
    out = {}
    for name in ("d1_relu", "collinear_antipodal", "dead_unit", "singular_mhc_generic"):
        cert = root / f"{name}.json"
        assert main(["check", str(CATALOG / f"{name}.npz"), "--certificate", str(cert)]) == 0
        out[name] = (CATALOG / f"{name}.npz", cert)
    return out


@pytest.mark.parametrize("name", ["d1_relu", "collinear_antipodal", "dead_unit", "singular_mhc_generic"])
def test_catalog_canonical_form_certificates_verify(name: str, certs, capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs[name]
    assert json.loads(cert.read_text())["theorem"]["id"] == "canonical-form"
    capsys.readouterr()
    assert main(["verify", str(cert), str(model)]) == 0
    assert "accepted" in capsys.readouterr().out


def _set(path: list, value):
    def edit(doc: dict) -> None:
        obj = doc["blocks"][0]
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return edit


@pytest.mark.parametrize("name, edit, reason", [
    ("collinear_antipodal", _set(["canonical_form", "witness_exact", "W_down", 0, 0], "5/2"), "the exact residual-free witness has f's canonical form"),
    ("collinear_antipodal", _set(["canonical_form", "L0", 0, 0], "-3"), "the recorded canonical form is f's"),
    ("collinear_antipodal", _set(["canonical_form", "choice", "width"], 2), "the recorded choice"),
    ("collinear_antipodal", _set(["canonical_form", "family"], "even"), "the grouping is 'relu'"),
    ("d1_relu", _set(["canonical_form", "witness_exact", "W_up", 1, 0], "-2"), "the exact residual-free witness has f's canonical form"),
    ("dead_unit", _set(["canonical_form", "min_width"], 3), "the recorded minimum width is the true one"),
    ("dead_unit", _set(["canonical_form", "width"], 4), "the width is the block's own"),
    ("dead_unit", _set(["verdict"], "absorbable"), "the recorded choice fits"),
])
def test_edited_canonical_form_certificate_is_rejected(name, edit, reason, certs, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    model, cert = certs[name]
    doc = json.loads(cert.read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["verify", str(bad), str(model)]) == 1
    out = capsys.readouterr().out
    assert f"rejected: block: {reason}" in out, out.splitlines()[-1]


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
@pytest.mark.parametrize("seed", range(8))
def test_degenerate_instances_verify_completely(act: str, seed: int) -> None:
    """Small-integer weights with copied (scaled / negated) and zeroed rows: every
    canonical-form verdict the engine reaches is confirmed, nothing left unchecked."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(1, 4)), int(rng.integers(2, 5))
    U = rng.integers(-2, 3, size=(n, d)).astype(float)
    for i in range(1, n):
        if rng.random() < 0.5:
            U[i] = U[rng.integers(0, i)] * rng.choice([1.0, -1.0, 2.0, -0.5])  # even family: 2e is another line
    D = rng.integers(-2, 3, size=(d, n)).astype(float)
    M = np.eye(d) if rng.random() < 0.5 else rng.integers(-2, 3, size=(d, d)).astype(float)
    blk = Block(U, D, get_activation(act), skip=M)
    dec = decide(blk)
    cert = build_certificate(dec, blk, seed=0).to_json()
    rep = checker.verify_certificate(json.loads(json.dumps(cert)), blk)
    assert rep.accepted, [f.claim + " — " + f.detail for f in rep.failures]
    if dec.theorem.value == "canonical-form" and dec.verdict.value != "unknown":
        assert not rep.not_rechecked, [f.claim for f in rep.not_rechecked]


@pytest.mark.parametrize("act", ["gelu", "silu"])
def test_even_family_parallel_lines_of_different_lengths(act: str) -> None:
    """Even family: u = 2e and u = e are two lines (σ(2z) is no multiple of σ(z)). The witness
    unit −2x lies on line 2x only; counting it on line x too gave that line both signs, and the
    honest certificate was rejected for a choice (B, δ) it does not make."""
    blk = Block(np.array([[-1.0], [2.0], [1.0]]), np.array([[0.0, -1.0, -2.0]]), get_activation(act))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("absorbable", "canonical-form")
    doc = build_certificate(dec, blk, seed=0).to_json()
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim + " — " + f.detail for f in rep.failures + rep.not_rechecked]
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["canonical_form"]["choice"]["B"] = [0, 1]
    assert not checker.verify_certificate(bad, blk).accepted


def test_softplus_dead_unit_is_not_dropped() -> None:
    """softplus has σ(z) − σ(−z) = z but σ(0) = log 2: f(x) = x + σ(x) + 5σ(0·x) and
    B'(x) = 2σ(x) − σ(−x) have the same canonical form once the unit with u = 0 is dropped,
    yet differ by 5·log 2. The checker must refuse the argument for such σ."""
    from fractions import Fraction as Fr

    from absorb.verify import _canonical, _report

    U, D = np.array([[1.0], [0.0], [0.0]]), np.array([[1.0, 5.0, 0.0]])
    blk = Block(U, D, get_activation("softplus"))
    Up, Dp = [[Fr(1)], [Fr(-1)], [Fr(0)]], [[Fr(2), Fr(-1), Fr(0)]]
    assert _canonical.canonical(_canonical._q(U), _canonical._q(D), [[Fr(1)]], "even") == \
        _canonical.canonical(Up, Dp, [[Fr(0)]], "even")  # the hole: equal forms, different functions
    L0, lines = _canonical.canonical(_canonical._q(U), _canonical._q(D), [[Fr(1)]], "even")
    rec = {"family": "even", "width": 3, "L0": [[str(v) for v in r] for r in L0],
           "lines": [{"e": [str(v) for v in e], "a": [str(v) for v in a], "units": [0]} for e, a in lines.items()],
           "choice": {"B": [0], "delta": [0], "rank": 0, "width": 2},
           "witness_exact": {"W_up": [[str(v) for v in r] for r in Up], "W_down": [[str(v) for v in r] for r in Dp]}}
    ctx = checker._Ctx(_report.Report(), 1e-9, 0)
    with pytest.raises(checker._Reject):
        _canonical.check_canonical_form(ctx, "b", {"verdict": "absorbable", "canonical_form": rec}, blk)
    assert ctx.report.failures[0].claim.startswith("σ(0) = 0 exactly")


def _near_block() -> Block:
    """An exact width-3 degenerate ReLU block (d = 2, up rows 0 and 1 antipodal), its skip moved
    by 10⁻¹¹ in two entries: exactly the canonical form needs 5 units, within tol 3."""
    U = np.array([[1.0, 1.0], [-1.0, -1.0], [2.0, 1.0]])
    D = np.array([[0.0, -1.0, 2.0], [-1.0, -1.0, 3.0]])
    M = np.array([[-2.0 + 1e-11, -2.0], [1.0, 1.0 + 1e-11]])
    return Block(U, D, get_activation("relu"), skip=M)


def test_within_tolerance_canonical_form_certificate_is_accepted() -> None:
    """The honest certificate of an 'absorbable within the tolerance' canonical-form verdict is
    accepted with nothing left unchecked: the checker re-derives the distance of the recorded
    choice's linear part and evaluates its own width-3 block against f."""
    blk = _near_block()
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("absorbable", "canonical-form")
    assert "not exactly" in dec.reason
    doc = build_certificate(dec, blk, seed=0).to_json()
    rec = doc["blocks"][0]["canonical_form"]
    assert rec["near"]["width"] <= 3 and "choice" not in rec and "witness_exact" not in rec
    rep = checker.verify_certificate(doc, blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]
    assert any("C_δ P_B is near rank" in f.claim for f in rep.findings)
    # the same record at a tolerance whose bar is below the true distance (≈ 3e-12 relative) is rejected
    low = copy.deepcopy(doc)
    low["parameters"]["tolerance"] = low["blocks"][0]["tolerance"] = 1e-20
    assert not checker.verify_certificate(low, blk).accepted
    for key, value in (("rank", 1), ("B", []), ("delta", [1, 0])):
        bad = copy.deepcopy(doc)
        bad["blocks"][0]["canonical_form"]["near"][key] = value
        assert not checker.verify_certificate(bad, blk).accepted, key


@pytest.mark.parametrize("act", ["gelu", "silu"])
def test_allow_biases_width_cites_the_skeleton_not_the_canonical_form(act: str) -> None:
    """--allow-biases --width N: the canonical form proves impossibility for bias-free blocks only;
    the same answer for the class with biases rests on the asymptotic skeleton (σ∞ = ReLU)."""
    from absorb.engine.width import decide_width

    rng = np.random.default_rng(1)
    blk = Block(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), get_activation(act))
    from absorb.engine.width import minimal_width

    for allow, want in ((True, "skeleton"), (False, "canonical-form")):
        bd = decide(blk, allow_biases=allow).blocks[0]
        wd = decide_width(blk, 4, decision=bd)
        assert (wd.verdict.value, wd.theorem) == ("not_absorbable", want), wd.reason
        mw = minimal_width(blk, decision=bd)  # the width below the minimum is refuted by the same argument
        assert mw.value is not None and mw.theorem == want, mw.reason


def test_zero_bias_arrays_are_no_biases_for_the_witness() -> None:
    """A bias-free f stored with explicit all-zero b_up and b_down: the checker's rebuilt witness
    listed those arrays and the honest certificate was rejected for the arrays it lists."""
    blk = Block(np.array([[1.0], [2.0]]), np.array([[-2.0, 2.0]]), get_activation("relu"),  # x − 2ReLU(x) + 2ReLU(2x)
                b_up=np.zeros(2), b_down=np.zeros(1))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("absorbable", "canonical-form"), dec.reason
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim + " — " + f.detail for f in rep.failures + rep.not_rechecked]


def test_a_tiny_skip_is_not_the_scale_of_the_tolerance() -> None:
    """f(x) = 10⁻¹²·x + ReLU(x) (d = 1, n = 1): g = ReLU is within 10⁻¹² of f per unit of |x|,
    i.e. within the tolerance; measured against ‖M‖_F = 10⁻¹² the linear part was 'far' and the
    answer not_absorbable. The scale is max(‖M‖_F, 1): absorbable within the tolerance, verified."""
    blk = Block(np.array([[1.0]]), np.array([[1.0]]), get_activation("relu"), skip=np.array([[1e-12]]))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("absorbable", "canonical-form"), dec.reason
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted, [f.claim + " — " + f.detail for f in rep.failures]


def test_a_unit_of_size_1e_15_does_not_make_width_1_impossible() -> None:
    """M = 0, a second unit 10⁻¹⁵ in size: one unit matches f within 10⁻¹⁵; width 1 is not
    'not absorbable' (no line's coefficient is far from zero once the scale is at least 1)."""
    from absorb.engine.width import decide_width

    blk = Block(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 1e-15], [2.0, 0.0]]), get_activation("relu"),
                skip=np.zeros((2, 2)))
    assert decide_width(blk, 1).verdict.value != "not_absorbable"


def test_a_gelu_tanh_not_absorbable_certificate_is_checked_in_seconds() -> None:
    """σ = GELU-tanh, d = 1: the checker compares σ with each σ whose canonical form is unique,
    erf-GELU first; sympy's decision that tanh-GELU − erf-GELU vanishes on a piece never
    returned. A difference seen at 30 digits (about 10⁻³ here) now answers 'not the same' first."""
    blk = Block(np.array([[1.0], [2.0], [-0.5], [3.0]]), np.array([[0.7, -0.3, 1.1, 0.25]]), get_activation("gelu_tanh"))
    dec = decide(blk)
    assert (dec.verdict.value, dec.theorem.value) == ("not_absorbable", "canonical-form"), dec.reason
    rep = checker.verify_certificate(build_certificate(dec, blk, seed=0).to_json(), blk)
    assert rep.accepted and not rep.not_rechecked, [f.claim for f in rep.failures + rep.not_rechecked]


def _mergeable_relu() -> Block:
    """d = 2, n = 4 ReLU: an exact antipodal pair (the canonical-form route) and units 2, 3 nearly antipodal
    (u3 = −R(10⁻⁴)·u2) with a small down column: a width-4 block merging them is within 6.6·10⁻¹⁰ of f."""
    U = np.array([[0.1257302210933933, -0.1321048632913019], [-0.1257302210933933, 0.1321048632913019],
                  [-0.535669373161111, 0.36159505490948474], [0.5357055299881948, -0.3615414861642826]])
    D = np.array([[-0.7037352358069926, -1.2654214710460525, -0.6232744625373522, 1.6530391738897442e-06],
                  [-2.3250307746388343, -0.21879166393254573, -1.2459109472530652, -2.9290694188138067e-05]])
    return Block(U, D, get_activation("relu"))


def _mergeable_gelu(eps: float) -> Block:
    """GELU rows u and −(1 + ε)u beside an exact antipodal pair: distinct atoms of the canonical form, one merge apart."""
    r = np.random.default_rng(0)
    U = r.standard_normal((4, 2))
    U[1] = -U[0]
    U[3] = -(1 + eps) * U[2]
    return Block(U, r.standard_normal((2, 4)), get_activation("gelu"))


@pytest.mark.parametrize("blk, tol", [(_mergeable_relu(), 1e-9), (_mergeable_gelu(1e-9), 1e-9), (_mergeable_gelu(1e-3), 1e-3)])
@pytest.mark.usefixtures("screens_at_any_tolerance")  # (τ = 10⁻³ past 10⁻⁴: tests/conftest.py)
def test_lines_that_merge_within_the_tolerance_withhold_the_canonical_verdict(blk: Block, tol: float,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A width-4 block with two of f's lines merged is within the tolerance (red team: 6.6·10⁻¹⁰ at τ = 10⁻⁹ for ReLU, ~τ/16
    for GELU), while the lines were 'distinct' at the fixed relative 10⁻¹⁰: not_absorbable [canonical-form] was wrong and
    verify accepted it. Now the merge's cost (a bound) within 4× the tolerance withholds the verdict, and the checker
    leaves such a certificate not fully checked."""
    from absorb.certificate import build_certificate
    from absorb.engine import degenerate as degenerate_module
    from absorb.verify.checker import verify_certificate

    dec = decide(blk, tol=tol)
    assert dec.verdict.value == "unknown" and "merge" in dec.reason, dec.reason
    from absorb.engine import results as results_module

    monkeypatch.setattr(degenerate_module, "_mergeable", lambda *a, **k: [])  # (the producer as it was)
    monkeypatch.setattr(results_module, "within_margin", lambda *a, **k: None)
    monkeypatch.setattr(results_module, "near_block", lambda *a, **k: None)
    old = decide(blk, tol=tol)
    assert old.verdict.value == "not_absorbable" and old.theorem.value == "canonical-form"
    rep = verify_certificate(build_certificate(old, blk, seed=0).to_json(), blk)
    assert any("merge" in f.claim for f in rep.not_rechecked), rep.findings


def _midpoint_pair(tau: float, d: int = 8, alpha: float = 0.01) -> Block:
    """Red team 38b/01: ReLU rows e₁ ± ηe₂ (η = 90τ) with equal down columns and a dead unit: merged onto their midpoint
    e₁ they are within 0.9τ (f − g = a·(a second difference) ≤ 0.9τ|x|∞), while moving one onto the other was priced
    2√d times higher, past the 4× margin."""
    eta = 0.9 * tau / alpha
    U = np.zeros((3, d))
    U[0, :2], U[1, :2] = (1, eta), (1, -eta)
    D = np.zeros((d, 3))
    D[:, 0] = D[:, 1] = alpha
    D[:, 2] = alpha
    return Block(U, D, get_activation("relu"), skip=np.outer(0.1 * np.ones(d), np.eye(d)[0]))


def _scaled_pair(act: str, eta: float) -> Block:
    """Red team 38b/03: rows (1 ± η)e₁ of the even family are two lines, which merge at second order (η²s²h''(s))."""
    U = np.array([[1 + eta, 0.0], [1 - eta, 0.0]])
    a = np.array([1.0, 0.5])
    return Block(U, np.stack([a, a], 1), get_activation(act), skip=np.outer([0.3, -0.2], [1.0, 0.0]))


@pytest.mark.parametrize("blk, tol", [(_midpoint_pair(1e-6), 1e-6), (_midpoint_pair(1e-4), 1e-4),
                                      (_scaled_pair("gelu", 1e-3), 1e-6), (_scaled_pair("silu", 1e-3), 1e-6)])
def test_merges_cheaper_than_moving_one_line_onto_the_other_withhold(blk: Block, tol: float, monkeypatch: pytest.MonkeyPatch) -> None:
    from absorb.engine import results as results_module
    from absorb.verify._canonical import _merge_cost  # noqa: F401  (the checker's estimate, exercised through verify)

    monkeypatch.setattr(results_module, "near_block", lambda *a, **k: None)  # (the merge estimate alone)
    dec = decide(blk, tol=tol)
    assert dec.verdict.value == "unknown" and "merge" in dec.reason, dec.reason
