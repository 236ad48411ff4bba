"""``absorb check PATH``: the verdict for a block, a stack or a checkpoint."""

from __future__ import annotations

import argparse
import json
import sys

from absorb.cli import EXIT_OK, EXIT_UNKNOWN
from absorb.engine import DEFAULT_TOL, Verdict, decide
from absorb.io import load
from absorb.report import render_text
from absorb.search import METHODS


def _positive(kind: type) -> object:
    def conv(text: str) -> object:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return v
    return conv


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="decide whether the skip connection can be absorbed",
                       description="Decide whether f(x) = M x + B(x) equals a residual-free MLP block of the same width, "
                       "and say which result proves it. Exit 0: verdict reached; 2: bad input; 3: unknown.",
                       epilog="example: absorb check examples/planted_relu.npz --json")
    p.add_argument("path", help=".npz file with W_up, W_down, ... (or blocks.<i>.* for a stack)")
    p.add_argument("--activation", metavar="NAME", help="override the file's activation (a name, or 'expr:<sympy expression in x>')")
    p.add_argument("--json", action="store_true", help="print one JSON object (see docs/user-guide.md) instead of the text report")
    p.add_argument("--tol", type=_positive(float), default=DEFAULT_TOL, metavar="T",
                   help=f"relative tolerance on ‖W_down[:,S] W_up[S,:] + M‖_F / ‖M‖_F (default {DEFAULT_TOL:g})")
    p.add_argument("--seed", type=int, default=0, help="seed for the random inputs and randomised solvers (default 0)")
    p.add_argument("--timeout", type=_positive(float), default=60.0, metavar="SEC", help="time budget of the index-set search (default 60)")
    p.add_argument("--method", choices=METHODS, default="auto", help="index-set search backend (default auto: a portfolio)")
    from absorb.certificate.write import certificate_path  # certificates work: --certificate OUT
    p.add_argument("--certificate", type=certificate_path, metavar="OUT",
                   help="also write a proof certificate: OUT.json (checkable by 'absorb verify'), OUT.tex or OUT.pdf")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = load(args.path, activation=args.activation)
    progress = None
    if sys.stderr.isatty() and not args.json:
        progress = lambda name: sys.stderr.write(f"\rdeciding {name} …\x1b[K")  # noqa: E731
    dec = decide(model, path=args.path, tol=args.tol, timeout=args.timeout, seed=args.seed, method=args.method, progress=progress)
    if progress:
        sys.stderr.write("\r\x1b[K")
    if args.certificate:  # certificates work: written atomically before any output
        from absorb.certificate import write_certificate
        write_certificate(dec, model, args.certificate, seed=args.seed, activation=args.activation, method=args.method, timeout=args.timeout)
    if args.json:
        sys.stdout.write(json.dumps(dec.to_json(), indent=2, default=str) + "\n")
    else:
        sys.stdout.write(render_text(dec))
    return EXIT_UNKNOWN if dec.verdict is Verdict.UNKNOWN else EXIT_OK
