"""``absorb prove [--all | NAME ...] --out DIR``: run the machine-checked proofs.

Each proof (:mod:`absorb.certificate.proofs`, also runnable as ``proofs/NAME.py``) is closed
step by step by SymPy on symbolic weights and written as ``DIR/NAME.tex`` (``--pdf``: also
``DIR/NAME.pdf``). Exit 0: every requested proof closed; 1: SymPy could not close a step of
some proof (named on stderr); 2: bad usage (unknown name, no name and no --all).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from absorb._errors import InvalidInput
from absorb.cli import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, verbosity
from absorb.cli._args import require_pdflatex


def register(sub: argparse._SubParsersAction) -> None:
    from absorb.certificate._theorems import PROOF_NAMES as PROOFS

    p = sub.add_parser("prove", help="prove the paper's results with sympy and write LaTeX proofs",
                       description="Run the machine-checked proofs (" + ", ".join(PROOFS) + ") and write one LaTeX proof "
                       "each. Exit 0: all closed; 1: sympy could not close a step; 2: bad usage.",
                       epilog="example: absorb prove --all --out build/proofs --pdf")
    p.add_argument("names", nargs="*", metavar="NAME", help="proofs to run: " + ", ".join(PROOFS))
    p.add_argument("--all", action="store_true", help="run every proof")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--pdf", action="store_true", help="also compile each proof with pdflatex")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from absorb.certificate.proofs import PROOFS, ProofError, write_proof

    unknown = [n for n in args.names if n not in PROOFS]
    if unknown:
        sys.stderr.write(f"absorb: error: unknown proof {unknown[0]!r}; known: {', '.join(PROOFS)}\n")
        return EXIT_USAGE
    names = list(PROOFS) if args.all else args.names
    if not names:
        sys.stderr.write(f"absorb: error: name a proof ({', '.join(PROOFS)}) or pass --all\n")
        return EXIT_USAGE
    if args.pdf:  # up front: no .tex files written before the first PDF fails
        require_pdflatex("--pdf")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"--out {args.out}: exists and is not a folder; give a folder (created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"--out {args.out}: cannot create the folder ({exc.strerror or exc}); choose a writable place") from None
    failed = 0
    for name in names:
        try:
            paths = write_proof(name, args.out, pdf=args.pdf)
        except ProofError as exc:
            sys.stderr.write(f"absorb prove: {name}: not closed: {exc}\n")
            failed += 1
            continue
        if verbosity(args) >= 1:
            sys.stdout.write(f"{name}: proved ({', '.join(str(p) for p in paths)})\n")
    return EXIT_REJECTED if failed else EXIT_OK
