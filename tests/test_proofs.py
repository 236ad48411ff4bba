"""Every proofs/ script closes its proof with sympy; `absorb prove` runs the same code; a
false claim is not closed; the LaTeX proofs compile."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from absorb.certificate import proofs
from absorb.cli import main

ROOT = Path(__file__).resolve().parent.parent


HAVE_PDFLATEX = shutil.which("pdflatex") is not None


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`absorb prove --all` once (with --pdf when pdflatex is installed)."""
    out = tmp_path_factory.mktemp("proofs")
    assert main(["prove", "--all", "--out", str(out)] + (["--pdf"] if HAVE_PDFLATEX else [])) == 0
    return out


@pytest.mark.parametrize("name", sorted(proofs.PROOFS))
def test_proof_closes_and_writes_latex(name: str, proved: Path) -> None:
    text = (proved / f"{name}.tex").read_text()
    assert "\\documentclass" in text and "\\begin{proof}" in text and "2604.23705" in text
    assert text.count("(SymPy:") >= 3
    if HAVE_PDFLATEX:
        assert (proved / f"{name}.pdf").read_bytes()[:4] == b"%PDF"


def test_every_result_has_a_script() -> None:
    scripts = {p.stem for p in (ROOT / "proofs").glob("*.py")}
    assert scripts == set(proofs.PROOFS)


def test_scripts_run_standalone(tmp_path: Path) -> None:
    """Each script is a thin entry point: run two as real subprocesses (the rest share the code path)."""
    for name in ("degree", "linearization"):
        r = subprocess.run([sys.executable, str(ROOT / "proofs" / f"{name}.py"), "--out", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"{name}.tex").is_file()


def test_prove_cli_all_and_bad_names(proved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sorted(p.stem for p in proved.glob("*.tex")) == sorted(proofs.PROOFS)
    assert main(["prove", "nonsense", "--out", str(tmp_path)]) == 2
    assert main(["prove", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown proof 'nonsense'" in err


def test_a_false_claim_is_not_closed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tanh does not satisfy σ(z) − σ(−z) = z: listing it among the flip activations must fail."""
    monkeypatch.setitem(proofs.FLIP_ACTIVATIONS, "tanh", sp.tanh(proofs.Z))
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("flip_identity")
    assert main(["prove", "flip_identity", "--out", str(tmp_path)]) == 1
    assert not (tmp_path / "flip_identity.tex").exists()
    assert proofs.script_main("flip_identity", ["--out", str(tmp_path)]) == 1


def test_homogeneity_rule_refuses_a_wrong_degree() -> None:
    """The degree step is not vacuous: with the rule for degree 2, B(tx) ≠ t^3 B(x)."""
    s = sp.Function("s")
    rule = proofs._homogeneous_rule(s, sp.Integer(2), proofs.T)
    U, D, x = proofs._mat("u", 2, 2), proofs._mat("w", 2, 2), proofs._vec("x", 2)
    Bt = rule(D * (U * (proofs.T * x)).applyfunc(s))
    with pytest.raises(proofs.ProofError):
        proofs._zero(Bt - proofs.T**3 * D * (U * x).applyfunc(s), "wrong degree")


BEYOND = ("asymptotic_skeleton", "skeleton2", "gated_skeleton", "leaky_reduction", "parity", "exponential")


@pytest.mark.parametrize("name", BEYOND)
def test_beyond_the_paper_proofs_are_marked(name: str, proved: Path) -> None:
    text = (proved / f"{name}.tex").read_text()
    assert "beyond the paper" in text
    if name in ("asymptotic_skeleton", "skeleton2", "gated_skeleton", "leaky_reduction"):  # the kink-line necessity is cited, not checked: it says so
        assert "not machine-checked here" in text


def test_an_odd_function_is_not_proved_even(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(proofs.EVEN_ACTIVATIONS, "ReLU", sp.Max(0, proofs.Z))
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("parity")


def test_a_wrong_slope_is_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """SiLU has slopes (1, 0); claiming (1, 1/100) must fail the skeleton proof."""
    monkeypatch.setitem(proofs.SKELETON_ACTIVATIONS, "SiLU", ("silu", sp.Integer(1), sp.Rational(1, 100)))
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("asymptotic_skeleton")


def test_an_unbounded_activation_has_no_finite_slopes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(proofs.SKELETON_ACTIVATIONS, "x^2", ("expr:x**2", sp.Integer(0), sp.Integer(0)))
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("asymptotic_skeleton")


def test_the_flip_check_refuses_a_wrong_constant() -> None:
    """Flipping leaky units shifts the linear part by (1+α), not by 1 (the ReLU constant)."""
    alpha = sp.Symbol("alpha", positive=True)
    assert proofs._flip_block_check(1 + alpha, "leaky flip")
    with pytest.raises(proofs.ProofError):
        proofs._flip_block_check(1 + alpha, "leaky flip with c = 1", claimed=sp.Integer(1))


def test_an_unbounded_activation_is_not_bounded_by_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(proofs.BOUNDED_BY_INTERVAL, "z", "expr:x*erf(x)")
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("boundedness")


def test_a_wrong_two_term_form_is_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """SiLU² is s² + o(s) at +∞; claiming β = 1 must fail the degree-2 skeleton proof."""
    from absorb.certificate import _proofs_skeleton2 as sk2

    monkeypatch.setitem(sk2.QUADRATIC_ACTIVATIONS, "SiLU²", ("expr:(x/(1 + exp(-x)))**2", sp.Integer(1), sp.Integer(1)))
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("skeleton2")


def test_a_non_step_gate_is_not_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """tanh has limits (1, −1): listing it among the step gates must fail the gated-skeleton proof."""
    from absorb.certificate import _proofs_skeleton2 as sk2

    monkeypatch.setitem(sk2.STEP_GATES, "tanh", "tanh")
    with pytest.raises(proofs.ProofError):
        proofs.run_proof("gated_skeleton")
