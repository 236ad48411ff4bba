"""The rendered certificate reads as typeset mathematics: engine sentences in math mode,
hypothesis numbers under human labels, a collection naming each block's own result, and
every catalog certificate compiling with pdflatex."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from absorb.certificate._util import tex_prose
from absorb.certificate.latex import _LABELS, hypothesis_label
from absorb.cli import main

ROOT = Path(__file__).resolve().parent.parent
CATALOG = sorted((ROOT / "counterexamples").glob("*.npz")) + sorted((ROOT / "examples").glob("*.npz"))
needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")


def _outside_math(tex: str) -> str:
    tex = re.sub(r"\\[$&#%_{}]", "", tex)  # escaped specials are text
    return re.sub(r"\$[^$]*\$|\\ensuremath\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", " ", tex)


def _tex(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / (path.stem + ".tex")
    main(["check", str(path), "--certificate", str(out), "-q"])
    capsys.readouterr()
    return out.read_text(encoding="utf-8")


def _reason_paragraph(tex: str) -> str:
    return tex.split(r"\end{claim}", 1)[1].split(r"\section*", 1)[0]


def test_prose_typesets_the_engine_patterns() -> None:
    s = tex_prose("Index set found (|S| = 3) with W_down[:,S] W_up[S,:] = -M (relative residual 8.20e-17)")
    assert "W_down" not in s and r"W\_down" not in s
    assert r"$W_{\mathrm{down}}[:,S]\,W_{\mathrm{up}}[S,:] = -M$" in s
    assert r"$8.20\times10^{-17}$" in s and "$|S|$" in s
    assert tex_prose("σ∞-skeleton") == r"$\sigma_\infty$-skeleton"
    assert tex_prose("0.00e+00") == "$0$"


@given(st.text(max_size=60))
@example(r"\input{/etc/passwd} $x$ 1e-5e3 W_up[ ] |S| ^_")
def test_prose_never_leaves_tex_specials_unescaped(text: str) -> None:
    out = _outside_math(tex_prose(text))
    # outside math, every TeX special is escaped: no bare $, no command other than the escapes
    assert "$" not in out
    assert not re.search(r"\\(?!textbackslash\{\}|textasciicircum\{\}|textasciitilde\{\}|ldots\{\})", out)


def test_every_label_is_not_a_code_key() -> None:
    for key, label in _LABELS.items():
        assert "_" not in re.sub(r"\$[^$]*\$", "", label), key
    assert hypothesis_label("some_new_key") == "some new key"


@pytest.mark.parametrize("name", ["counterexamples/leaky_relu_planted.npz", "counterexamples/generic_relu.npz",
                                  "counterexamples/collinear_antipodal.npz", "counterexamples/dead_unit_planted.npz"])
def test_reason_paragraph_is_typeset(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tex = _tex(ROOT / name, tmp_path, capsys)
    para = _reason_paragraph(tex)
    assert "W_down[:,S]" not in para and r"W\_down[:,S]" not in para
    assert not re.search(r"\d[eE][-+]?\d", _outside_math(para)), para
    # hypothesis numbers are labelled in words, never by their code key
    for key in _LABELS:
        if "_" in key:
            assert tex.count(key.replace("_", r"\_") + " $=") == 0, key
    assert "No result applies" not in tex
    # engine text is escaped once, never twice (a doubly escaped $ or \\ shows up in the PDF)
    assert "textbackslash" not in tex and r"\$" not in tex
    hyps = tex.split("Hypotheses checked on these weights", 1)[1].split(r"\end{itemize}", 1)[0]
    assert r"$W_{\mathrm{up}}$" in hyps and r"W\_up" not in hyps


def test_collection_certificate_names_each_blocks_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    ck = tmp_path / "bert"
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_checkpoint.py"), str(ck), "--family", "bert"],
                   check=True, capture_output=True)
    tex = _tex(ck, tmp_path, capsys)
    claim = tex.split(r"\begin{claim}", 1)[1].split(r"\end{claim}", 1)[0]
    assert "result \\textbf{none}" not in claim and "result none" not in claim
    assert "each block by its own result" in claim and r"\textbf{skeleton}" in claim


@needs_pdflatex
@pytest.mark.parametrize("path", CATALOG, ids=[f"{p.parent.name}/{p.stem}" for p in CATALOG])
def test_every_catalog_certificate_compiles(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cert.pdf"
    rc = main(["check", str(path), "--certificate", str(out), "-q"])
    capsys.readouterr()
    assert rc in (0, 3) and out.read_bytes().startswith(b"%PDF")


def test_substituted_formulas_read_as_written_by_hand() -> None:
    from absorb.certificate.latex import tidy_math

    assert tidy_math(r"\sigma(-1) - -1\,\sigma(1) = 1 \ne 0") == r"\sigma(-1) + \sigma(1) = 1 \ne 0"
    assert tidy_math(r"\sigma(-2) - -2\,\sigma(1)") == r"\sigma(-2) + 2\,\sigma(1)"
    assert tidy_math(r"\sigma(2) - 2\,\sigma(1)") == r"\sigma(2) - 2\,\sigma(1)"
    assert tidy_math(r"\Delta_k = \sigma(0+k+1) - \sigma(0+k)") == r"\Delta_k = \sigma(k+1) - \sigma(k)"
    assert tidy_math(r"\Delta_k = \sigma(-3+k+1)") == r"\Delta_k = \sigma(-3+k+1)"
    assert tidy_math(r"\lim \sigma(x) = oo, x + -1") == r"\lim \sigma(x) = \infty, x - 1"
    assert tidy_math(r"\mathrm{foo} + \cos") == r"\mathrm{foo} + \cos"


def test_sympy_infinity_reads_as_the_symbol() -> None:
    from absorb.report.text import readable

    assert readable("σ(x) → oo as x → +∞; σ(x) → -oo as x → −∞") == "σ(x) → ∞ as x → +∞; σ(x) → −∞ as x → −∞"
    assert readable("foo zoo oo.") == "foo zoo ∞."


def test_the_single_block_certificate_reads_well(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tex = _tex(ROOT / "examples" / "planted_relu.npz", tmp_path, capsys)
    assert r"\section*{Block: ungated relu" in tex and "Block \\texttt{block}" not in tex
    assert re.search(r"pdftitle=\{Certificate: the skip connection is absorbable\}", tex)
    assert " oo " not in tex and "- -" not in tex and "(0+k" not in tex
    main(["check", str(ROOT / "examples" / "planted_relu.npz")])
    assert " oo " not in capsys.readouterr().out
