"""``absorb`` command line: a registry of subcommands, one module each.

Exit codes (contract): 0 verdict reached, 2 bad input or usage (one line on stderr, no
traceback), 3 no verdict (unknown). Subcommands that are not verdicts define their own
codes in their help (``verify`` uses 1 for a rejected certificate). An unexpected internal
error is reported in one line as a bug (exit 3: no verdict was reached); ``-v`` adds its
traceback.

Every subcommand takes ``-q/--quiet`` (nothing on standard error but errors; ``check`` and
``verify`` print only their verdict or result line) and ``-v/--verbose`` (progress notes on
standard error, also when it is not a terminal). Every error line starts ``absorb: error:``.
Output that the terminal's encoding cannot show (✓, σ, ≥ on a cp1252 console) falls back
to ASCII (v, sigma, >=) instead of failing. A standard error that is closed or cannot be
written does not change the exit code.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from absorb._errors import AbsorbError
from absorb.cli._terminal import ASCII_FALLBACK, _ascii_streams, can_encode

SUBCOMMANDS: tuple[str, ...] = ("check", "verify", "prove", "montecarlo", "explore-depth")
"""Module names under ``absorb.cli``; each defines ``register(subparsers)``."""

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3

__all__ = ["ASCII_FALLBACK", "EXIT_OK", "EXIT_REJECTED", "EXIT_UNKNOWN", "EXIT_USAGE", "SUBCOMMANDS", "build_parser",
           "can_encode", "main", "show_progress", "verbosity"]

def verbosity(args: argparse.Namespace) -> int:
    """0 with ``-q``, 2 with ``-v``, else 1."""
    return int(getattr(args, "verbosity", 1))


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars: on a terminal only, never with ``--json`` or ``-q``."""
    return verbosity(args) >= 1 and not getattr(args, "json", False) and bool(sys.stderr and sys.stderr.isatty())


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2."""

    def _print_message(self, message: str, file: Any = None) -> None:
        """As argparse's, but a failed write (--help to a full disk) is not swallowed: main() reports it."""
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> None:  # type: ignore[override]
        message = " ".join(message.split())  # one voice: every error line starts "absorb: error:"
        sys.stderr.write(f"absorb: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=0, default=1,
                   help="nothing on standard error but errors (no progress, notes or warnings); check and verify "
                   "print only the verdict (result) line")
    g.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=2,
                   help="progress notes on standard error, also when it is not a terminal")


class _Version(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (not for every parse)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        import absorb

        self.version = f"absorb {absorb.__version__}"
        super().__call__(parser, *args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="absorb", description="Decide, prove and explain whether the skip connection around an MLP block "
                     "can be absorbed into a residual-free MLP of the same width (arXiv 2604.23705).")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"absorb.cli.{name.replace('-', '_')}").register(sub)
    from absorb.cli._args import seed

    for p in sub.choices.values():
        _add_verbosity(p)
        for action in p._actions:  # one convention for every --seed: an integer in [0, 2^32 - 1]
            if action.dest == "seed" and action.type is int:
                action.type = seed
    return parser


def _silence_stdout() -> None:
    """After a failed write, point stdout at /dev/null so the exit-time flush cannot fail again."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture stdout)
        pass


def _closed_streams() -> bool:
    """A standard stream the caller closed (``>&-``; Python then sets it to None): standard
    error becomes a sink (the exit code still says what happened); with standard output closed
    nothing can be reported, so True — the run stops as a failed write to it would (exit 2)."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # for the rest of the process
    if sys.stdout is None:
        sys.stderr.write("absorb: error: cannot write the output (standard output is closed); redirect it, e.g. >/dev/null\n")
        return True
    return False


class _ErrorsBestEffort:
    """Standard error whose failed writes are dropped (``2>/dev/full``, a descriptor open for
    reading only): what it carries is advice, and the exit code must not depend on it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _os_error(exc: OSError) -> int:
    """One line for a failed read or write (a full disk, a closed pipe, an unwritable output): exit 2."""
    why = exc.strerror or " ".join(str(exc).split())
    if getattr(exc, "filename", None):
        fix = "free space or choose another path" if exc.errno == errno.ENOSPC else "check the path and its permissions"
        sys.stderr.write(f"absorb: error: {exc.filename}: {why}; {fix}\n")
    else:
        _silence_stdout()
        sys.stderr.write(f"absorb: error: cannot write the output ({why}); free space or redirect it elsewhere\n")
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    if _closed_streams():
        return EXIT_USAGE
    _ascii_streams()
    stderr = sys.stderr
    sys.stderr = _ErrorsBestEffort(stderr)  # type: ignore[assignment]
    try:
        try:
            return _main(argv)
        except SystemExit as exc:  # --help, --version: argparse wrote to stdout and exits 0
            if exc.code in (0, None):
                sys.stdout.flush()  # (a failed write must not wait for the exit, which would drop it)
            raise
    except OSError as exc:  # writing --help or --version (a run's own failed writes are reported in _main)
        return _os_error(exc)
    finally:
        sys.stderr = stderr


_NEGATIVE_EXP = re.compile(r"^-\d[\d.]*[eE][-+]?\d+$")


def _negative_values(argv: Sequence[str]) -> list[str]:
    """``--tol -1e-9`` as ``--tol=-1e-9``: argparse reads a negative number with an exponent as an option (then says
    'expected one argument'), not as the value whose range check names what is wrong."""
    out: list[str] = []
    for tok in argv:
        if out and _NEGATIVE_EXP.match(tok) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(_negative_values(sys.argv[1:] if argv is None else argv))
    if verbosity(args) == 0:  # -q: standard error carries errors only, not numerical warnings
        import warnings

        warnings.simplefilter("ignore")
    try:
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except AbsorbError as exc:
        sys.stderr.write(f"absorb: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("absorb: interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("absorb: error: out of memory; the input is too large for this machine\n")
        return EXIT_USAGE
    except OSError as exc:  # a full disk, a closed pipe, an unwritable output
        return _os_error(exc)
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback by default
        if verbosity(args) >= 2:
            import traceback

            traceback.print_exc()
        msg = " ".join(str(exc).split())[:300]
        hint = "" if verbosity(args) >= 2 else " (rerun with -v for the traceback)"
        sys.stderr.write(f"absorb: internal error: {type(exc).__name__}: {msg}; this is a bug, please report it{hint}\n")
        return EXIT_UNKNOWN


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
