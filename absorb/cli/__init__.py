"""``absorb`` command line: a registry of subcommands, one module each.

Exit codes (contract): 0 verdict reached, 2 bad input or usage (one line on stderr, no
traceback), 3 no verdict (unknown). Subcommands that are not verdicts define their own
codes in their help (``verify`` uses 1 for a rejected certificate).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from absorb._errors import AbsorbError

SUBCOMMANDS: tuple[str, ...] = ("check", "verify", "prove", "montecarlo", "explore-depth")
"""Module names under ``absorb.cli``; each defines ``register(subparsers)``."""

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    from absorb import __version__

    parser = _Parser(prog="absorb", description="Decide, prove and explain whether the skip connection around an MLP block "
                     "can be absorbed into a residual-free MLP of the same width (arXiv 2604.23705).")
    parser.add_argument("--version", action="version", version=f"absorb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"absorb.cli.{name.replace('-', '_')}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except AbsorbError as exc:
        sys.stderr.write(f"absorb: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("absorb: interrupted\n")
        return 130
    except MemoryError:
        sys.stderr.write("absorb: error: out of memory; the input is too large for this machine\n")
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
