"""Run the shell examples in README.md and docs/*.md and check (or rewrite) the output they show.

Usage::

    python tools/docs_examples.py [--check | --write] [--include-skipped] [-v] [FILE ...]

With no FILE, README.md and docs/*.md of this repository. ``--check`` (the default) exits 1
and prints a diff for every example whose shown output differs from what the commands print
now; ``--write`` rewrites those outputs in place (an example that already matches is left
byte for byte as it is, so its timings are not churned). Exit 0 when everything matches
(or was written), 1 on a mismatch or a failed write, 2 on bad usage.

What is an example
    A fenced code block (any info string: ``text``, ``console``, none) whose first non-blank
    line starts with ``$ ``. Each ``$ `` line is a command (a line ending in ``\\`` continues
    on the next one, an optional ``> `` prompt stripped); the lines after it, up to the next
    command or the end of the block, are the output it is expected to print, stdout and
    stderr together as a terminal shows them.

How the commands run
    Every document gets a fresh scratch folder, shared by its examples in order (so a later
    example may use a file an earlier one wrote). The folder holds symbolic links
    ``examples``, ``counterexamples`` and ``proofs`` to this repository's folders, so commands
    written for the repository root (``absorb check examples/planted_relu.npz``) work
    unchanged, and everything written lands in the scratch folder. Each example starts in the
    scratch folder; a ``cd`` holds for the rest of its example. The path ``/tmp/w`` in a
    command names the scratch folder itself (so ``python examples/make_checkpoint.py
    /tmp/w/demo_bert`` and ``cd /tmp/w`` do what a reader expects); in the output, the
    scratch folder's real path is replaced by ``/tmp/w`` and this interpreter's
    site-packages folder by ``…/site-packages``. Commands run with bash; ``absorb``,
    ``python`` and ``pip`` are those of the interpreter running this script (``absorb`` is
    ``python -m absorb``), and ``$?`` is the previous command's exit status (for
    ``$ echo $?``). Commands change the environment they run in (a ``pip install`` installs
    into it): mark such examples ``skip``. A ``# exit N`` comment on a
    command asserts its exit status. A ``python`` block whose first line is ``# NAME.py`` is
    written to the scratch folder as NAME.py when reached, so ``$ python NAME.py`` runs the
    code the reader sees. When ``jq`` is not installed, ``| jq [-r] [-c] 'FILTER'`` runs a
    small built-in subset of jq instead (comma-separated paths such as ``.verdict``,
    ``.blocks[0].theorem``; see ``jq_subset``).

Directives (an HTML comment on the line right above the block, blank lines allowed between)
    ``<!-- docs-example: skip (REASON) -->``: not run by ``--check`` or ``--write`` (for example
    it needs a package outside the test extras); ``--include-skipped`` runs it.
    ``<!-- docs-example: needs PROGRAM -->``: run only when PROGRAM is on PATH (e.g. pdflatex),
    otherwise reported as skipped.

How output is compared
    Both sides are masked first, so that only what is deterministic is compared: durations
    (``0.013 s``, ``4.8 s``, ``12 ms``) become ``<T>``; sizes (``212 MB``, ``12 385 bytes``,
    ``1.2 GiB``) ``<SIZE>``; dates and times (``2026-12-01``, ``2026-12-01T09:01:40Z``)
    ``<DATE>``; dotted versions (``0.1.0``, ``2.13.0+cpu``) ``<VER>``; absolute temporary paths
    other than ``/tmp/w`` ``<TMP>``; a JSON ``"elapsed"`` or ``"created"`` value ``<V>``.
    Trailing whitespace and trailing blank lines are ignored. Numbers are then compared by
    value, the rest of each line exactly: an integer (``152 inputs``, ``|S| = 2``) must be the
    same; a float (``0.379``, ``1e-09``, ``0.37880182892081943``) must agree to
    ``SIG_DIGITS`` (6) significant digits, or within one unit of the doc's last digit (so
    ``0.154`` matches ``0.155``: the value sat on a rounding boundary); a float below
    ``ROUNDING_LEVEL`` (1e-11) in magnitude, a residual or error at rounding level, is only
    compared as "below 1e-11" (``2.01e-16`` matches ``8.20e-17``, not ``3e-9``). These are
    the digits that change with the BLAS build, its thread count and the CPU's kernels
    (``OPENBLAS_NUM_THREADS``, ``OPENBLAS_CORETYPE``). Where a line differs only in numbers,
    runs of spaces count as one (a table column realigned around a wider number). The output
    is expected line for
    line, except that a line ``...`` (or ``…``; indentation free) abridges it: it stands for any
    number of lines, zero included, so the shown lines must appear in the output in that
    order, lines not separated by ``...`` adjacent, the first shown line the first line of
    the output unless ``...`` precedes it, the last shown line the last one unless ``...``
    follows it. A Python traceback in the output fails the check even where ``...`` would
    cover it, unless the example shows the traceback.

How ``--write`` abridges
    A command shown with ``...`` keeps its abridgement: each shown line is paired, in order,
    with the most similar line of the new output (``difflib`` ratio ≥ 0.6 on the masked text,
    maximised over all orderly pairings); paired lines are replaced by the new ones, lines
    now printed between two shown neighbours are added, runs of the output the doc had
    abridged become ``...`` again, and shown lines with no partner are dropped (listed on
    stderr). A command shown without ``...`` gets its whole output. Review the diff.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINKED = ("examples", "counterexamples", "proofs")  # repository folders visible from the scratch folder
SCRATCH_NAME = "/tmp/w"  # what commands call the scratch folder, and how its real path is printed
SITE_NAME = "…/site-packages"  # how this interpreter's site-packages folder is printed
COMMAND_TIMEOUT = 600.0  # seconds, per command (generous: a loaded 2-core machine runs `absorb prove --all --pdf` for minutes)

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-example:\s*(skip|needs)\b\s*(.*?)\s*-->\s*$")
_PYFILE = re.compile(r"^#\s*([A-Za-z0-9_.-]+\.py)\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
_TRACEBACK = "Traceback (most recent call last):"


# ---------------------------------------------------------------------------------------------
# masking and comparison


_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r'("(?:elapsed|created)"\s*:\s*)("[^"]*"|[-+0-9.eE]+)'), r"\1<V>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"), "<DATE>"),
    (re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z]+)*(?![\w.])"), "<VER>"),
    (re.compile(r"(?<![\w.])\d+(?:[  ,]\d{3})*(?:\.\d+)? ?(?:bytes|B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\b"), "<SIZE>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)? ?(?:s|ms|µs|us|sec|seconds)\b"), "<T>"),
]


def _temp_roots() -> list[str]:
    roots = {"/tmp", "/var/tmp", "/var/folders", "/private/var/folders", tempfile.gettempdir()}
    return sorted({r.rstrip("/") for r in roots if r}, key=len, reverse=True)


_TMP_PATH = re.compile("(?:" + "|".join(re.escape(r) for r in _temp_roots()) + r")/(?!w(?:[/\s'\")]|$))[^\s'\")]*")


def mask(line: str) -> str:
    """The deterministic part of one output line (see the module docstring)."""
    for pattern, repl in _MASKS:
        line = pattern.sub(repl, line)
    return _TMP_PATH.sub("<TMP>", line)


SIG_DIGITS = 6  # floats agree to this many significant digits (or within one unit of the last digit shown)
ROUNDING_LEVEL = 1e-11  # a float below this in magnitude is rounding noise, compared only as "below the bound"
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w]|\.\w)")


_SPACES = re.compile(r" {2,}")


def _is_float(token: str) -> bool:
    return any(ch in token for ch in ".eE")


def _unit(token: str) -> float:
    """One unit of the last digit written in the float ``token`` (``0.379`` → 0.001, ``2.01e-16`` → 1e-18)."""
    mant, _, exp = token.lower().partition("e")
    decimals = len(mant.partition(".")[2])
    return 10.0 ** (int(exp or 0) - decimals)


def number_difference(shown: str, printed: str) -> str | None:
    """None when the number ``printed`` is what ``shown`` shows (see the module docstring), else why not."""
    if shown == printed:
        return None
    if not (_is_float(shown) or _is_float(printed)):
        return "a different count" if shown.lstrip("+-").isdigit() else "a different value"
    x, y = float(shown), float(printed)
    if not (abs(x) < float("inf") and abs(y) < float("inf")):
        return "a different value"
    if abs(x) < ROUNDING_LEVEL:
        if abs(y) < ROUNDING_LEVEL:
            return None
        return f"the doc shows a value at rounding level (below {ROUNDING_LEVEL:g}); this one is not"
    if abs(y) < ROUNDING_LEVEL:
        return f"this value is at rounding level (below {ROUNDING_LEVEL:g}); the doc's is not"
    tol = max(10.0 ** -SIG_DIGITS * max(abs(x), abs(y)), _unit(shown) if _is_float(shown) else 0.0)
    if abs(x - y) <= tol * (1 + 1e-9):
        return None
    return f"they differ in the first {SIG_DIGITS} significant digits"


def line_difference(shown: str, printed: str) -> str | None:
    """None when the output line ``printed`` is what the doc's line ``shown`` shows, masks applied and
    numbers compared by value; else, in words, what differs."""
    a, b = mask(shown.rstrip()), mask(printed.rstrip())
    if a == b:
        return None
    # runs of spaces are one space: a column realigned around a number of another width is the same text
    ta, tb = (_SPACES.sub(" ", t) for t in _NUMBER.split(a)), (_SPACES.sub(" ", t) for t in _NUMBER.split(b))
    ta, tb = list(ta), list(tb)
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    if ta != tb or len(na) != len(nb) or not na:
        return "the text differs"
    for x, y in zip(na, nb):
        why = number_difference(x, y)
        if why:
            return f"the doc shows {x}, the command printed {y}: {why}"
    return None


def _same(shown: list[str], printed: list[str]) -> bool:
    return len(shown) == len(printed) and all(line_difference(a, b) is None for a, b in zip(shown, printed))


def is_ellipsis(line: str) -> bool:
    return line.strip() in ("...", "…")


def _trim(lines: list[str]) -> list[str]:
    lines = [ln.rstrip() for ln in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _find(hay: list[str], needle: list[str], start: int) -> int:
    for i in range(start, len(hay) - len(needle) + 1):
        if _same(needle, hay[i:i + len(needle)]):
            return i
    return -1


def matches(expected: list[str], actual: list[str]) -> bool:
    """True when ``actual`` output lines are what ``expected`` shows: masks, numbers by value, ``...``."""
    exp, act = _trim(expected), _trim(actual)
    if any(_TRACEBACK in ln for ln in act) and not any(_TRACEBACK in ln for ln in exp):
        return False
    if not any(is_ellipsis(ln) for ln in exp):
        return _same(exp, act)
    segments: list[list[str]] = [[]]
    for ln in exp:
        if is_ellipsis(ln):
            segments.append([])
        else:
            segments[-1].append(ln)
    first, middle, last = segments[0], segments[1:-1], segments[-1]
    if not _same(first, act[:len(first)]):
        return False
    pos = len(first)
    for seg in middle:
        if not seg:
            continue
        i = _find(act, seg, pos)
        if i < 0:
            return False
        pos = i + len(seg)
    if not last:
        return True
    return len(act) - len(last) >= pos and _same(last, act[len(act) - len(last):])


def explain(expected: list[str], actual: list[str]) -> str:
    """In words, the first difference between a shown output and the printed one (for a failure report)."""
    exp, act = _trim(expected), _trim(actual)
    if any(_TRACEBACK in ln for ln in act) and not any(_TRACEBACK in ln for ln in exp):
        return "the command failed with a Python traceback"
    shown = [ln for ln in exp if not is_ellipsis(ln)]
    pairs = dict(_pair(shown, act))
    for i, line in enumerate(shown):
        j = pairs.get(i)
        if j is None:
            return f"the shown line {line.strip()!r} is not printed"
        why = line_difference(line, act[j])
        if why:
            return f"in the line {line.strip()!r}, {why}" if why != "the text differs" else \
                f"the shown line {line.strip()!r} now reads {act[j].strip()!r}"
    if len(act) > len(shown) and not any(is_ellipsis(ln) for ln in exp):
        return f"the command printed {len(act) - len(shown)} more line(s) than shown, from {act[len(shown)].strip()!r}"
    return "the shown lines are printed, but not in the shown order or places"


def _pair(shown: list[str], actual: list[str]) -> list[tuple[int, int]]:
    """Order-preserving pairing of shown with actual lines maximising the summed similarity."""
    ms, ma = [mask(s) for s in shown], [mask(a) for a in actual]
    n, m = len(ms), len(ma)
    sim = [[0.0] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            if ms[i] == ma[j] or line_difference(shown[i], actual[j]) is None:
                sim[i][j] = 2.0  # an exact (masked) match beats any number of near ones nearby
            else:
                r = difflib.SequenceMatcher(None, ms[i], ma[j], autojunk=False).ratio()
                sim[i][j] = r if r >= 0.6 else 0.0
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            take = sim[i][j] + best[i + 1][j + 1] if sim[i][j] > 0 else -1.0
            best[i][j] = max(take, best[i + 1][j], best[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if sim[i][j] > 0 and best[i][j] == sim[i][j] + best[i + 1][j + 1]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def render(expected: list[str], actual: list[str]) -> tuple[list[str], list[str]]:
    """The output to write for a command shown as ``expected`` that now prints ``actual``.

    Returns (lines, dropped shown lines). Without ``...`` in ``expected``: all of ``actual``.
    """
    expected, actual = _trim(expected), _trim(actual)
    if not any(is_ellipsis(ln) for ln in expected):
        return actual, []
    shown: list[str] = []
    gap_before: list[str | None] = []  # the ellipsis line (its text) between shown[k-1] and shown[k]
    pending: str | None = None
    for ln in expected:
        if is_ellipsis(ln):
            pending = ln
        else:
            shown.append(ln)
            gap_before.append(pending)
            pending = None
    tail_gap = pending
    pairs = _pair(shown, actual)
    if not pairs:
        return actual, shown
    out: list[str] = []
    prev_i, prev_j = -1, -1
    for i, j in pairs:
        gap = next((g for g in gap_before[prev_i + 1:i + 1] if g is not None), None)
        skipped = actual[prev_j + 1:j]
        if gap is not None:
            if skipped:
                out.append(gap)
        else:
            out.extend(skipped)
        out.append(shown[i] if line_difference(shown[i], actual[j]) is None else actual[j])  # no churn
        prev_i, prev_j = i, j
    rest = actual[prev_j + 1:]
    gap = next((g for g in gap_before[prev_i + 1:] if g is not None), tail_gap)
    if rest:
        if gap is not None:
            out.append(gap)
        else:
            out.extend(rest)
    dropped = [shown[k] for k in range(len(shown)) if k not in {i for i, _ in pairs}]
    return out, dropped


# ---------------------------------------------------------------------------------------------
# parsing


@dataclass
class Command:
    text: str  # the command, continuation lines joined with newlines
    line: int  # 1-based line of its `$ ` in the document
    start: int  # index (0-based, in the document's lines) of its first output line
    end: int  # one past its last output line
    expected: list[str]


@dataclass
class Example:
    path: Path
    line: int  # 1-based line of the opening fence
    commands: list[Command]
    skip: str | None = None  # reason
    needs: list[str] = field(default_factory=list)


@dataclass
class PyFile:
    name: str
    text: str


def parse(path: Path, lines: list[str]) -> list[Example | PyFile]:
    items: list[Example | PyFile] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(2), m.group(3).strip()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        body = range(i + 1, j)  # indices of the block's lines
        nonblank = [k for k in body if lines[k].strip()]
        if info.split()[:1] == ["python"] and nonblank and _PYFILE.match(lines[nonblank[0]].strip()):
            name = _PYFILE.match(lines[nonblank[0]].strip()).group(1)
            items.append(PyFile(name, "".join(ln + "\n" for ln in lines[i + 1:j])))
        elif nonblank and lines[nonblank[0]].startswith("$ "):
            ex = Example(path, i + 1, [])
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            while k >= 0 and (d := _DIRECTIVE.match(lines[k])):
                if d.group(1) == "skip":
                    ex.skip = d.group(2).strip("() ") or "skip"
                else:
                    ex.needs += d.group(2).split()
                k -= 1
            k = nonblank[0]
            while k < j:
                if lines[k].startswith("$ "):
                    at, text = k, lines[k][2:]
                    while text.endswith("\\") and k + 1 < j:
                        k += 1
                        cont = lines[k]
                        text += "\n" + (cont[2:] if cont.startswith("> ") else cont)
                    k += 1
                    start = k
                    while k < j and not lines[k].startswith("$ "):
                        k += 1
                    ex.commands.append(Command(text, at + 1, start, k, lines[start:k]))
                else:
                    k += 1
            items.append(ex)
        i = j + 1
    return items


# ---------------------------------------------------------------------------------------------
# running


def jq_subset(filt: str, data: object) -> list[object]:
    """A few jq filters, enough for the docs: ``.``, ``.key``, ``."key"``, ``.[N]``, chains of them
    (``.blocks[0].theorem``) and several such paths separated by commas."""
    results = []
    for path in _split_commas(filt):
        path = path.strip()
        if not path.startswith("."):
            raise ValueError(f"jq filter {filt!r}: only paths like .a.b[0] are supported without jq")
        value, rest = data, path
        token = re.compile(r'\.?"((?:[^"\\]|\\.)*)"|\.?([A-Za-z_][A-Za-z0-9_]*)|\.?\[(-?\d+)\]|\.$')
        while rest:
            m = token.match(rest)
            if not m or m.end() == 0:
                raise ValueError(f"jq filter {filt!r}: cannot read {rest!r} without jq")
            key, name, idx = m.group(1), m.group(2), m.group(3)
            if key is not None or name is not None:
                k = json.loads(f'"{key}"') if key is not None else name
                value = value.get(k) if isinstance(value, dict) else None
            elif idx is not None:
                value = value[int(idx)] if isinstance(value, list) and -len(value) <= int(idx) < len(value) else None
            rest = rest[m.end():]
        results.append(value)
    return results


def _split_commas(s: str) -> list[str]:
    parts, cur, quoted = [], "", False
    for ch in s:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _jq_main(argv: list[str]) -> int:
    raw = compact = False
    args = []
    for a in argv:
        if a in ("-r", "--raw-output"):
            raw = True
        elif a in ("-c", "--compact-output"):
            compact = True
        else:
            args.append(a)
    if len(args) != 1:
        sys.stderr.write("jq subset: one FILTER expected (reading JSON from stdin)\n")
        return 2
    try:
        values = jq_subset(args[0], json.load(sys.stdin))
    except ValueError as e:  # json.JSONDecodeError included
        sys.stderr.write(f"jq subset: {e}\n")
        return 2
    for value in values:
        if raw and isinstance(value, str):
            print(value)
        elif compact:
            print(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
        else:
            print(json.dumps(value, ensure_ascii=False, indent=2))
    return 0


_JQ_PIPE = re.compile(r"\|\s*jq(?=\s)")


def _shims(bindir: Path) -> None:
    """``absorb``, ``python``, ``python3`` and ``pip`` of this interpreter, first on PATH."""
    exe = shlex.quote(sys.executable)
    for name, target in (("absorb", f"{exe} -m absorb"), ("python", exe), ("python3", exe), ("pip", f"{exe} -m pip")):
        p = bindir / name
        p.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        p.chmod(0o755)


class Session:
    """One document's scratch folder and the state carried from one command to the next."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="absorb-docs-")
        base = Path(self._tmp.name)
        self.root = base / "w"
        self.root.mkdir()
        bindir = base / "bin"
        bindir.mkdir()
        _shims(bindir)
        for name in LINKED:
            if (REPO / name).exists():
                (self.root / name).symlink_to(REPO / name, target_is_directory=True)
        self.state = base / "cwd"
        self.env = dict(os.environ)
        self.env.update(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONHASHSEED="0",
                        PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", TERM="dumb",
                        COLUMNS="120", LC_ALL=os.environ.get("LC_ALL") or "C.UTF-8", TQDM_DISABLE="1",
                        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
        self.env.pop("PYTHONSTARTUP", None)
        self.rc = 0
        self.cwd = self.root
        self._real = sorted({str(self.root), os.path.realpath(self.root)}, key=len, reverse=True)
        self._site = sorted({p for key in ("purelib", "platlib") for p in (sysconfig.get_paths()[key],
                             os.path.realpath(sysconfig.get_paths()[key]))}, key=len, reverse=True)

    def close(self) -> None:
        self._tmp.cleanup()

    def start_example(self) -> None:
        self.cwd = self.root

    def write_file(self, name: str, text: str) -> None:
        (self.root / name).write_text(text)

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT) -> tuple[int, list[str]]:
        cmd = re.sub(r"(?<![\w/.])/tmp/w(?=[/\s'\";&|)]|$)", str(self.root), command)
        if shutil.which("jq", path=self.env["PATH"]) is None:
            cmd = _JQ_PIPE.sub(f"| {shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))} --jq", cmd)
        script = (f"cd {shlex.quote(str(self.cwd))} || exit 99\n(exit {self.rc})\n{cmd}\n"
                  f"__rc=$?\npwd > {shlex.quote(str(self.state))}\nexit $__rc\n")
        try:
            proc = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
            out, self.rc = proc.stdout.decode("utf-8", "replace"), proc.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode("utf-8", "replace") + f"\n[docs_examples: timed out after {timeout:g} s]\n"
            self.rc = 124
        try:
            self.cwd = Path(self.state.read_text().strip())
        except OSError:
            pass
        for real in self._real:
            out = out.replace(real, SCRATCH_NAME)
        for site in self._site:
            out = out.replace(site, SITE_NAME)
        return self.rc, _trim(out.replace("\r\n", "\n").split("\n"))


# ---------------------------------------------------------------------------------------------
# checking and writing


@dataclass
class Outcome:
    command: Command
    actual: list[str]
    rc: int
    ok: bool
    why: str = ""
    elapsed: float = 0.0


def run_example(ex: Example, session: Session) -> list[Outcome]:
    session.start_example()
    outcomes = []
    for c in ex.commands:
        t0 = time.monotonic()
        rc, actual = session.run(c.text)
        elapsed = time.monotonic() - t0
        ok, why = matches(c.expected, actual), ""
        if not ok:
            why = "output differs: " + explain(c.expected, actual)
        want = _EXIT.search(c.text)
        if want and int(want.group(1)) != rc:
            ok, why = False, f"exit status {rc}, the command's comment says {want.group(1)}"
        outcomes.append(Outcome(c, actual, rc, ok, why, elapsed))
    return outcomes


def _diff(c: Command, new: list[str], path: Path) -> str:
    return "".join(difflib.unified_diff([ln + "\n" for ln in _trim(c.expected)], [ln + "\n" for ln in new],
                                        f"{path}:{c.line} (shown)", "(printed now)", lineterm="\n"))


def process(path: Path, *, write: bool, include_skipped: bool = False, verbose: bool = False,
            log=sys.stderr) -> tuple[int, int, list[str]]:
    """Check (or rewrite) one document. Returns (examples run, examples skipped, failure reports)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    items = parse(path, lines)
    if not any(isinstance(it, Example) for it in items):
        return 0, 0, []
    failures: list[str] = []
    edits: list[tuple[int, int, list[str]]] = []
    ran = skipped = 0
    session = Session()
    try:
        for it in items:
            if isinstance(it, PyFile):
                session.write_file(it.name, it.text)
                continue
            missing = [p for p in it.needs if shutil.which(p) is None]
            if (it.skip and not include_skipped) or missing:
                skipped += 1
                why = it.skip if it.skip and not include_skipped else "needs " + ", ".join(missing)
                if verbose:
                    log.write(f"{path}:{it.line}: skipped ({why})\n")
                continue
            ran += 1
            for o in run_example(it, session):
                c = o.command
                if verbose:
                    log.write(f"{path}:{c.line}: $ {c.text.splitlines()[0]}  -> exit {o.rc} in {o.elapsed:.1f} s, {'ok' if o.ok else o.why}\n")
                if o.ok:
                    continue
                new, dropped = render(c.expected, o.actual)
                if not write or not o.why.startswith("output differs"):
                    failures.append(f"{path}:{c.line}: $ {c.text}\n  {o.why}\n" + _diff(c, new, path))
                    continue
                if not matches(new, o.actual):  # render() must give something --check accepts
                    failures.append(f"{path}:{c.line}: could not render an abridged output that matches; "
                                    f"write it by hand\n" + _diff(c, o.actual, path))
                    continue
                if dropped:
                    log.write(f"{path}:{c.line}: shown lines no longer printed, dropped: "
                              + "; ".join(d.strip() for d in dropped) + "\n")
                edits.append((c.start, c.end, _keep_blank_tail(lines[c.start:c.end], new)))
    finally:
        session.close()
    if write and edits:
        for start, end, new in sorted(edits, reverse=True):
            lines[start:end] = new
        path.write_text("\n".join(lines), encoding="utf-8")
        log.write(f"{path}: rewrote {len(edits)} command output(s)\n")
    return ran, skipped, failures


def _keep_blank_tail(old: list[str], new: list[str]) -> list[str]:
    """Keep the blank lines that separated the old output from the next command."""
    tail = 0
    while tail < len(old) and not old[len(old) - 1 - tail].strip():
        tail += 1
    return new + [""] * tail


def default_files() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--jq"]:
        return _jq_main(argv[1:])
    ap = argparse.ArgumentParser(prog="docs_examples.py", description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare the shown outputs (default)")
    mode.add_argument("--write", action="store_true", help="rewrite the outputs that differ")
    ap.add_argument("--include-skipped", action="store_true", help="also run examples marked 'docs-example: skip'")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per command on stderr")
    ap.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md docs/*.md)")
    args = ap.parse_args(argv)
    files = args.files or default_files()
    for f in files:
        if not f.is_file():
            ap.error(f"{f}: no such file")
    total_ran = total_skipped = 0
    all_failures: list[str] = []
    for f in files:
        ran, skipped, failures = process(f, write=args.write, include_skipped=args.include_skipped, verbose=args.verbose)
        total_ran, total_skipped = total_ran + ran, total_skipped + skipped
        all_failures += failures
    for report in all_failures:
        sys.stdout.write(report + "\n")
    print(f"{total_ran} examples run, {total_skipped} skipped, {len(all_failures)} "
          f"{'not written' if args.write else 'mismatched'} command output(s)")
    return 1 if all_failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
