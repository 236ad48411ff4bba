"""The shell examples in README.md and docs/*.md show what the commands print now.

The runner is tools/docs_examples.py (its docstring has the rules: masks, ``...``, directives);
on a failure, ``python tools/docs_examples.py --write`` rewrites the outputs, then review the diff.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("docs_examples", ROOT / "tools" / "docs_examples.py")
dx = importlib.util.module_from_spec(_spec)
sys.modules["docs_examples"] = dx
_spec.loader.exec_module(dx)

DOCS = [p for p in dx.default_files() if "\n$ " in p.read_text(encoding="utf-8")]
# Documents whose examples take a minute or more on a quiet 2-core machine (certificates.md
# compiles PDFs and runs `absorb prove --all --pdf`; checkpoints.md builds and decides
# checkpoints): run by CI (-m slow included), not by the default `bash .ci/run`. What their
# commands do is tested on its own in test_certificates.py, test_checkpoints.py, test_cli.py.
SLOW_DOCS = {"certificates.md", "checkpoints.md"}


@pytest.mark.parametrize("doc", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_DOCS else p for p in DOCS],
                         ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_doc_examples_print_what_they_show(doc: Path) -> None:
    log = io.StringIO()
    ran, _skipped, failures = dx.process(doc, write=False, log=log)
    assert ran > 0
    assert not failures, ("\n".join(failures) + f"\n{log.getvalue()}"
                          f"refresh with: python tools/docs_examples.py --write {doc.relative_to(ROOT)}")


@pytest.mark.slow
@pytest.mark.parametrize("env", [{"OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Prescott"},
                                 {"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Sandybridge"}],
                         ids=["1-thread-prescott", "2-threads-sandybridge"])
def test_the_readme_examples_hold_under_other_blas_kernels(env: dict[str, str]) -> None:
    """The shown numbers are those of this machine's BLAS; other kernels and thread counts
    (another machine) change last digits, which the comparison must tolerate."""
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_examples.py"), "--check", str(ROOT / "README.md")],
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_docs_have_examples_to_check() -> None:
    names = {p.name for p in DOCS}
    assert {"README.md", "certificates.md", "checkpoints.md"} <= names


# --- the comparison rules ----------------------------------------------------------------------


@pytest.mark.parametrize(("shown", "printed"), [
    ("  search      mitm: found in 0.013 s", "  search      mitm: found in 0.137 s"),
    ("took 4.8 s and 212 MB peak", "took 13 s and 1.2 GB peak"),
    ("3 ms, 12 385 bytes, 25 MiB", "250 ms, 9 bytes, 3 KiB"),
    ("absorb 0.1.0 — schema 1", "absorb 0.2.3 — schema 1"),
    ("with torch 2.13.0+cpu", "with torch 2.14.1"),
    ('"created": "2026-04-30T10:00:00Z", "elapsed": 0.25', '"created": "2026-12-01T09:01:40+00:00", "elapsed": 1.5e-3'),
    ("written to /tmp/pytest-7/x.json", "written to /tmp/tmpab12/x.json"),
    # another BLAS build, thread count or CPU kernel: last digits and rounding-level values move
    ("bound 0.37880182892081943, tolerance 1e-09", "bound 0.37880182892081815, tolerance 1e-09"),
    ("relative residual 2.01e-16", "relative residual 8.20e-17"),
    ("max relative error 3.61e-16 on 152 inputs", "max relative error 0 on 152 inputs"),
    ("re-computed bound 0.378802 by", "re-computed bound 0.378801 by"),  # one unit of the last digit shown
    ("δ 0.154", "δ 0.155"),
    ("layer.2  gelu  not_absorbable  skeleton   0.22", "layer.2  gelu  not_absorbable  skeleton  0.219"),
    ('{"residual": 2.0072118000120444e-16, "fro_norm": 2.7963523174253178}',
     '{"residual": 1.1e-17, "fro_norm": 2.796352317425318}'),
])
def test_volatile_parts_are_masked(shown: str, printed: str) -> None:
    assert dx.matches([shown], [printed])


@pytest.mark.parametrize(("shown", "printed"), [
    ("  search      linalg-sketch-pcg: found in 0.013 s", "  search      mitm: found in 0.137 s"),
    ("proved by enumerate, relative distance ≥ 1", "proved by dual-bound, relative distance ≥ 0.895"),
    ("bound 0.503", "bound 0.379"),
    ("wrote /tmp/w/demo_bert", "wrote /tmp/w/demo_bert2"),
    ("bound 0.37880182892081943", "bound 0.3788"),  # beyond 6 significant digits
    ("δ 0.154", "δ 0.157"),
    ("relative residual 2.01e-16", "relative residual 3.2e-09"),  # rounding level vs a real residual
    ("relative residual 0.917", "relative residual 2e-16"),
    ("checked on 152 inputs", "checked on 144 inputs"),  # counts are exact
    ("accepted: 39 checks passed", "accepted: 32 checks passed"),
    ("S = [1, 4] (|S| = 2)", "S = [1, 5] (|S| = 2)"),
    ("shape [6, 2]", "shape [6, 2, 1]"),
    ("verdict: absorbable", "verdict:  absorbable"),  # no number on the line: spaces are text
    ("max |cos| = 0.996768 <", "max |cos| = 0.99 <"),  # fewer digits printed than shown
])
def test_what_matters_is_compared(shown: str, printed: str) -> None:
    assert not dx.matches([shown], [printed])


def test_a_mismatch_is_explained_in_words() -> None:
    assert dx.explain(["bound 0.503, tolerance 1e-09"], ["bound 0.379, tolerance 1e-09"]) == (
        "in the line 'bound 0.503, tolerance 1e-09', the doc shows 0.503, the command printed 0.379: "
        "they differ in the first 6 significant digits")
    assert "rounding level" in dx.explain(["residual 2.01e-16"], ["residual 3e-09"])
    assert dx.explain(["accepted: 39 checks"], ["accepted: 32 checks"]).endswith("printed 32: a different count")
    assert dx.explain(["head", "...", "gone"], ["head", "x"]) == "the shown line 'gone' is not printed"
    assert "now reads 'verdict: absorbable'" in dx.explain(["verdict: not_absorbable"], ["verdict: absorbable"])
    assert "1 more line(s)" in dx.explain(["a"], ["a", "b"])


def test_ellipsis_rule() -> None:
    out = ["head", "a", "b", "c", "d", "tail"]
    assert dx.matches(["head", "...", "tail"], out)
    assert dx.matches(["head", "...", "b", "c", "...", "tail"], out)
    assert dx.matches(["...", "c", "..."], out)
    assert dx.matches(["head", "a", "...", "  ..."], out)  # indentation of the ellipsis is free
    assert dx.matches(["head", "…", "a", "b", "c", "d", "tail"], out)  # zero lines
    assert not dx.matches(["head", "...", "c", "b", "...", "tail"], out)  # order
    assert not dx.matches(["head", "...", "b", "d", "...", "tail"], out)  # adjacency without "..."
    assert not dx.matches(["a", "...", "tail"], out)  # anchored at the start
    assert not dx.matches(["head", "...", "d"], out)  # anchored at the end
    assert not dx.matches(["head", "...", "x", "...", "tail"], out)
    assert dx.matches(["x", "", ""], ["x  ", ""])  # trailing blanks and whitespace
    assert not dx.matches([], ["something printed"])


def test_a_traceback_fails_even_under_an_ellipsis() -> None:
    out = ["Traceback (most recent call last):", '  File "x.py", line 1', "ValueError: boom"]
    assert not dx.matches(["..."], out)
    assert dx.matches(["Traceback (most recent call last):", "...", "ValueError: boom"], out)


def test_render_keeps_the_abridgement_and_takes_the_new_lines() -> None:
    shown = ["absorb verify x.json against x.npz", "  ...", "  ✓ bound 0.503", "  ✓ old check", "accepted: 29 checks"]
    printed = ["absorb verify x.json against x.npz", "  ✓ a", "  ✓ b", "  ✓ bound 0.379", "  ✓ new check",
               "  ✓ old check", "accepted: 31 checks"]
    new, dropped = dx.render(shown, printed)
    assert new == ["absorb verify x.json against x.npz", "  ...", "  ✓ bound 0.379", "  ✓ new check", "  ✓ old check",
                   "accepted: 31 checks"]
    assert dropped == []
    assert dx.matches(new, printed)
    new, dropped = dx.render(["head", "...", "gone for good", "tail"], ["head", "x", "y", "tail"])
    assert new == ["head", "...", "tail"] and dropped == ["gone for good"]
    assert dx.render(["old"], ["new", "lines"]) == (["new", "lines"], [])  # not abridged: all of it


# --- the runner, on a small document -----------------------------------------------------------

STALE = """# demo

```python
# make_thing.py
print("made")
```

```text
$ python make_thing.py
made
$ python -c "print('a'); print('b 0.5 s')"
a
c 0.1 s
$ python -c "import sys; print('bad'); sys.exit(3)"   # exit 3
bad
$ echo $?
3
```

<!-- docs-example: skip (pretend this needs a package) -->
```text
$ python -c "print('x')"
not x
```

<!-- docs-example: needs no-such-program-here -->
```text
$ no-such-program-here
```

```console
$ mkdir sub && cd sub && python -c "import os; print(os.getcwd())"
/tmp/w/sub
$ python -c "import os; print(os.getcwd())"
/tmp/w/sub
$ ls /tmp/w/sub
$ python -c "print('\\n'.join(map(str, range(20))))"
0
...
17
18
19
```

```text
$ python -c "import os; print(os.getcwd())"
/tmp/w
$ ls examples/planted_relu.npz
examples/planted_relu.npz
```
"""


def test_a_stale_example_fails_and_write_fixes_it(tmp_path: Path) -> None:
    doc = tmp_path / "demo.md"
    doc.write_text(STALE, encoding="utf-8")
    ran, skipped, failures = dx.process(doc, write=False, log=io.StringIO())
    assert (ran, skipped) == (3, 2)
    assert len(failures) == 1, failures
    assert "-c 0.1 s\n+b 0.5 s" in failures[0] and f"{doc}:11" in failures[0]

    ran, skipped, failures = dx.process(doc, write=True, log=io.StringIO())
    assert not failures
    fixed = doc.read_text(encoding="utf-8")
    assert fixed == STALE.replace("c 0.1 s", "b 0.5 s")  # only the mismatched output is rewritten
    assert dx.process(doc, write=False, log=io.StringIO())[2] == []
    dx.process(doc, write=True, log=io.StringIO())
    assert doc.read_text(encoding="utf-8") == fixed  # a passing document is left byte for byte

    _, skipped, failures = dx.process(doc, write=False, include_skipped=True, log=io.StringIO())
    assert skipped == 1 and len(failures) == 1 and "+x" in failures[0]


def test_a_wrong_exit_status_fails(tmp_path: Path) -> None:
    doc = tmp_path / "exit.md"
    doc.write_text('```text\n$ python -c "print(1)"   # exit 2\n1\n```\n', encoding="utf-8")
    failures = dx.process(doc, write=True, log=io.StringIO())[2]
    assert len(failures) == 1 and "exit status 0, the command's comment says 2" in failures[0]


def test_cli_exit_codes(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("```text\n$ echo hi\nhi\n```\n", encoding="utf-8")
    bad.write_text("```text\n$ echo hi\nho\n```\n", encoding="utf-8")
    tool = [sys.executable, str(ROOT / "tools" / "docs_examples.py")]
    assert subprocess.run(tool + ["--check", str(good)], capture_output=True).returncode == 0
    r = subprocess.run(tool + ["--check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "-ho\n+hi" in r.stdout
    assert subprocess.run(tool + [str(tmp_path / "missing.md")], capture_output=True).returncode == 2


# --- the jq subset used where jq is not installed ----------------------------------------------

SAMPLE = {"verdict": "not_absorbable", "theorem": "index-set", "blocks": [{"name": "b", "d": 4, "delta": 0.25}],
          "odd key": [1, 2], "none": None}
FILTERS = [".verdict, .theorem", ".blocks[0].name", ".blocks[0]", '."odd key"', ".blocks[-1].d, .missing", "."]


@pytest.mark.parametrize("filt", FILTERS)
def test_jq_subset(filt: str) -> None:
    got = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_examples.py"), "--jq", filt],
                         input=json.dumps(SAMPLE), capture_output=True, text=True, check=True).stdout
    if shutil.which("jq"):
        want = subprocess.run(["jq", filt], input=json.dumps(SAMPLE), capture_output=True, text=True, check=True).stdout
        assert got == want
    assert got.splitlines()[0] in (json.dumps(dx.jq_subset(filt, SAMPLE)[0]), "{", "[")


def test_jq_subset_values() -> None:
    assert dx.jq_subset(".verdict, .theorem", SAMPLE) == ["not_absorbable", "index-set"]
    assert dx.jq_subset(".blocks[0].delta", SAMPLE) == [0.25]
    assert dx.jq_subset(".nope.deeper", SAMPLE) == [None]
    with pytest.raises(ValueError, match="without jq"):
        dx.jq_subset(".blocks[] | .name", SAMPLE)


def test_a_jq_pipeline_runs_without_jq(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(dx.shutil, "which", lambda name, *a, **k: None if name == "jq" else real_which(name, *a, **k))
    doc = tmp_path / "jq.md"
    doc.write_text("""```text\n$ echo '{"verdict": "absorbable", "blocks": [{"d": 4}]}' | jq '.verdict, .blocks[0].d'\n"""
                   """"absorbable"\n4\n$ echo '{"a": "b"}' | jq -r .a\nb\n```\n""", encoding="utf-8")
    assert dx.process(doc, write=False, log=io.StringIO())[:3] == (1, 0, [])
