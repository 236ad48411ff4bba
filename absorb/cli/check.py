"""``absorb check PATH``: the verdict for a block, a stack or a checkpoint."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from absorb._errors import InvalidInput
from absorb.cli import EXIT_OK, EXIT_UNKNOWN, can_encode, show_progress, verbosity
from absorb.cli._args import at_least, check_writable, positive, require_pdflatex, seconds, seed, tolerance
from absorb.search._types import DEFAULT_TOL, METHODS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="decide whether the skip connection can be absorbed",
                       description="Decide whether f(x) = M x + B(x) equals a residual-free MLP block of the same width, "
                       "and say which result proves it. Exit 0: verdict reached; 2: bad input; 3: unknown.",
                       epilog="example: absorb check examples/planted_relu.npz --json")
    p.add_argument("path", help=".npz file with W_up, W_down, ... (or blocks.<i>.* for a stack), or a checkpoint: "
                   ".safetensors file, model.safetensors.index.json, or a directory holding them and config.json")
    p.add_argument("--activation", metavar="NAME", help="override the file's activation (a name, or 'expr:<sympy expression in x>')")
    p.add_argument("--json", action="store_true", help="print one JSON object (see docs/user-guide.md) instead of the text report")
    p.add_argument("--tol", type=tolerance, default=DEFAULT_TOL, metavar="T",
                   help="tolerance, strictly between 0 and 1: a witness g may err by |f(x) − g(x)|∞ ≤ T·(|f(x)|∞ + |x|∞ + "
                   "|f(0)|∞) plus a rounding allowance; index sets are searched within a relative distance "
                   f"‖W_down[:,S] W_up[S,:] + M/c‖_F / ‖M/c‖_F of T, more for a small skip (default {DEFAULT_TOL:g}; "
                   "see 'Tolerances' in docs/user-guide.md)")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed for the random inputs and randomised solvers, 0 to 2^32-1 (default 0)")
    p.add_argument("--timeout", type=seconds, default=60.0, metavar="SEC",
                   help="time budget in seconds of the index-set search; a third of it bounds the symbolic analysis "
                   "of an expr: activation (default 60)")
    p.add_argument("--allow-biases", action="store_true", help="ask the wider question: may a residual-free block WITH biases "
                   "equal f, even when f has none? (default: residual-free blocks with the bias pattern of f; every verdict "
                   "names the class it is about)")
    p.add_argument("--method", choices=METHODS, default="auto", help="index-set search backend (default auto: a portfolio)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor store the analysis of an expr: activation in "
                   "the cache (~/.cache/absorb; see 'The analysis cache of custom activations' in docs/user-guide.md)")
    # extra width (docs/min-width.md): per-block JSON fields "width", "min_width", "min_width_detail"
    p.add_argument("--width", type=positive(int), metavar="N", help="also decide whether a residual-free block of N hidden units "
                   "equals f; the exit code then follows this answer (0 decided for every block, 3 otherwise)")
    p.add_argument("--min-width", action="store_true", help="also report the smallest width of a residual-free block equal to f")
    # --- checkpoints (absorb/io/safetensors.py, absorb/io/families.py) ---
    g = p.add_argument_group("checkpoints", "options for checkpoints: .safetensors, sharded indexes, PyTorch .bin/.pt with torch installed (each MLP block decided on its own, "
                             "with its own identity skip; --timeout is then per block)")
    g.add_argument("--layers", metavar="SPEC", help="only these layer numbers, e.g. 0-3,7 (a single number must name a layer the checkpoint has; a range may reach past the last)")
    g.add_argument("--up", metavar="PATTERN", help="name the roles by hand: the up (value) projection's tensor name with {i} for "
                   "the layer, e.g. 'model.layers.{i}.mlp.fc_in.weight' (stored nn.Linear [out, in])")
    g.add_argument("--down", metavar="PATTERN", help="the down projection's tensor name pattern (with --up)")
    g.add_argument("--gate", metavar="PATTERN", help="the gate projection's tensor name pattern (gated blocks; with --up, --down)")
    g.add_argument("--fold-norm", action="store_true", help="fold the gain (and bias) of the norm before each MLP into its up/gate "
                   "projections: analyse the block on normalised inputs")
    m = g.add_mutually_exclusive_group()  # many machines: absorb/engine/distributed.py, docs/checkpoints.md
    m.add_argument("--workers", type=at_least(1), metavar="N", help="decide the layers in parallel on a local dask cluster "
                   "of N worker processes, one layer each at a time (needs absorb[montecarlo])")
    m.add_argument("--scheduler", metavar="ADDRESS", help="decide the layers on the workers of a running dask scheduler, "
                   "e.g. tcp://host:8786; every worker needs the checkpoint at the same path")
    from absorb.certificate.write import certificate_path  # certificates work: --certificate OUT
    p.add_argument("--certificate", type=certificate_path, metavar="OUT",
                   help="also write a proof certificate: OUT.json (checkable by 'absorb verify'), OUT.tex or OUT.pdf "
                   "(for a checkpoint: one certificate for all its blocks, with the checkpoint options recorded)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # imported here so that building the parser (--help, usage errors) stays fast; the engine is
    # imported while a user expression is validated in its child process, when there is one
    from absorb.io import is_checkpoint, load

    if args.no_cache:
        from absorb import _analysis_cache

        _analysis_cache.disable()

    if args.certificate:  # up front: never decide for a minute and then fail to write
        check_writable("--certificate", args.certificate, str(args.path))
        if args.certificate.lower().endswith(".pdf"):
            require_pdflatex(f"--certificate {args.certificate}")
    ckpt_opts = any(getattr(args, k, None) for k in ("layers", "up", "down", "gate", "fold_norm"))
    # the file's content decides (a Lightning .ckpt is a PyTorch zip, whatever its name)
    if is_checkpoint(args.path) or (ckpt_opts and not str(args.path).endswith(".npz")):
        return _run_checkpoint(args)
    _refuse_checkpoint_options(args, ckpt_opts)
    with _engine_while_validating():
        model = load(args.path, activation=args.activation)
    from absorb.engine import Verdict, decide
    from absorb.io.npz import orientation_note

    note = orientation_note(model, str(args.path))
    if note and verbosity(args) >= 1:
        sys.stderr.write(note + "\n")
    progress = _progress(args)
    dec = decide(model, path=args.path, tol=args.tol, timeout=args.timeout, seed=args.seed, method=args.method,
                 allow_biases=args.allow_biases, progress=progress, search_progress=progress)
    if progress and show_progress(args):
        progress(None)  # the status line erased
    fields = []
    if args.width is not None or args.min_width:
        from absorb.engine.width import width_fields
        fields = [width_fields(bd.block, width=args.width, min_width=args.min_width, tol=args.tol, seed=args.seed, decision=bd) for bd in dec.blocks]
    if args.certificate:  # certificates work: written atomically before any output
        from absorb.certificate import write_certificate
        entries = None
        as_json = args.certificate.lower().endswith(".json")
        if fields and as_json:  # the width answers with their evidence, re-derived by absorb verify
            from absorb.certificate._width import width_entries
            entries = width_entries(dec, fields, seed=args.seed)
        write_certificate(dec, model, args.certificate, seed=args.seed, activation=args.activation, method=args.method, timeout=args.timeout,
                          entries=entries)
        if fields and not as_json and verbosity(args) >= 1:
            sys.stderr.write(f"note: {args.certificate} shows the verdict at each block's own width n; the --width/--min-width "
                             "answers and their evidence are in a .json certificate only (absorb verify checks them there)\n")
    _print_decision(args, dec, fields)
    if args.width is not None:
        return EXIT_UNKNOWN if any(f["width"]["verdict"] == Verdict.UNKNOWN.value for f in fields) else EXIT_OK
    return EXIT_UNKNOWN if dec.verdict is Verdict.UNKNOWN else EXIT_OK


def _refuse_checkpoint_options(args: argparse.Namespace, ckpt_opts: bool) -> None:
    """Options that only apply to checkpoints, given with an .npz file: one line each."""
    if ckpt_opts:
        raise InvalidInput(f"{args.path}: --layers, --up/--down/--gate and --fold-norm apply to checkpoints (.safetensors), not .npz files")
    if args.workers is not None or args.scheduler is not None:
        raise InvalidInput(f"{args.path}: --workers and --scheduler spread a checkpoint's layers over dask workers; "
                           "an .npz file is decided in this process (drop the option)")


def _progress(args: argparse.Namespace) -> Callable[[str | None], Any] | None:
    """A self-erasing status line on a terminal (``None`` erases it), a note per line with -v, else None."""
    if show_progress(args):  # one self-erasing status line on a terminal
        return _status_line()
    if verbosity(args) >= 2:  # -v: one note per line, also into a log file
        return lambda name: sys.stderr.write(f"absorb check: {name}\n")
    return None


def _status_line() -> Callable[[str | None], None]:
    """Write ``deciding NAME …`` over the line before: erased to its end with ANSI's ESC [ K, or,
    on a terminal that shows escapes literally (TERM=dumb or unset: Emacs shells, some CI
    consoles), overwritten with spaces."""
    dumb = os.environ.get("TERM", "").strip() in ("", "dumb")
    shown = [0]

    def show(name: str | None) -> None:
        text = "" if name is None else f"deciding {name} …"
        if dumb:
            sys.stderr.write("\r" + text + " " * max(0, shown[0] - len(text)) + ("\r" if name is None else ""))
            shown[0] = len(text)
        else:
            sys.stderr.write(f"\r{text}\x1b[K")
    return show


def _print_decision(args: argparse.Namespace, dec: Any, fields: list[dict[str, Any]]) -> None:
    """The decision (and the width fields, if asked for) as JSON or as the text report."""
    from absorb.report import render_text

    if args.json:
        out = dec.to_json()
        for b, extra in zip(out["blocks"], fields):
            b.update(extra)
        _write_json(out)
    elif verbosity(args) == 0:  # -q: the verdict line only
        sys.stdout.write(render_text(dec).rstrip("\n").rsplit("\n", 1)[-1] + "\n")
    else:
        from absorb.engine.width import width_text

        sys.stdout.write(render_text(dec))
        for bd, extra in zip(dec.blocks, fields):
            sys.stdout.write("".join(line + "\n" for line in width_text(bd.block.name, extra)))


def _engine_while_validating() -> Any:
    """A block inside which reading the model imports the engine while a user expression's
    child process validates it (that wait, sympy's import, then overlaps the engine's)."""
    import importlib

    from absorb.model.activations import while_validating

    return while_validating(lambda: importlib.import_module("absorb.engine"))


def _write_json(out: dict) -> None:
    """The one JSON writer of ``absorb check`` (the documented JSON: one object on stdout), standard
    JSON only: a non-finite float is written as the text ``oo``, ``-oo`` or ``nan`` (RFC 8259 has no
    such numbers; strict parsers refuse ``Infinity``)."""
    def finite(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return "nan" if v != v else ("oo" if v > 0 else "-oo")
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return [finite(x) for x in v] if isinstance(v, (list, tuple)) else v

    # \u escapes where the terminal's encoding cannot show the text: the same JSON, losslessly; a lone
    # surrogate (a file name that is not UTF-8, as Python reads it) as its escape \udcXX, not the raw byte
    text = json.dumps(finite(out), indent=2, default=str, allow_nan=False, ensure_ascii=not can_encode(sys.stdout))
    sys.stdout.write(text.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")


def _run_checkpoint(args: argparse.Namespace) -> int:
    """A checkpoint: one block at a time, a progress bar on stderr, a per-layer table (or JSON)."""
    from tqdm import tqdm

    from absorb.io.safetensors import open_checkpoint
    from absorb.report.table import checkpoint_json, render_table

    if args.width is not None or args.min_width:
        raise InvalidInput(f"{args.path}: --width and --min-width apply to .npz blocks; "
                           "export the layer with absorb.io.save_npz to ask them")
    opts = {"layers": args.layers, "up": args.up, "down": args.down, "gate": args.gate, "fold_norm": bool(args.fold_norm)}
    with _engine_while_validating():
        ckpt = open_checkpoint(args.path, activation=args.activation, **opts)
    from absorb.engine import Verdict, decide_checkpoint
    entries: list[dict] | None = None
    on_block = None
    if args.certificate:  # each block's entry (with its weights' hashes) while its layer is loaded
        from absorb.certificate.build import block_entry

        entries = []
        on_block = lambda bd: entries.append(block_entry(bd))  # noqa: E731
    # the bar shows on a terminal only, never in pipes, with --json or -q
    spread = args.workers is not None or args.scheduler is not None  # one layer per dask task, in the serial order
    with tqdm(total=len(ckpt), unit="block", file=sys.stderr, disable=not show_progress(args), leave=False,
              dynamic_ncols=True) as bar:
        started = [0]

        def progress(name: str) -> None:  # called before each block: the previous one is done
            if verbosity(args) >= 2 and bar.disable:
                sys.stderr.write(f"absorb check: {name}\n")
            bar.set_postfix_str(name, refresh=not started[0])
            if started[0]:
                bar.update(1)
            started[0] += 1

        if spread:
            from absorb.engine.distributed import decide_checkpoint_dask

            dec, values = decide_checkpoint_dask(ckpt, {"activation": args.activation, **opts}, tol=args.tol, timeout=args.timeout,
                                                 seed=args.seed, method=args.method, allow_biases=args.allow_biases,
                                                 workers=args.workers, scheduler=args.scheduler,
                                                 progress=lambda name, s: (bar.set_postfix_str(name, refresh=False), bar.update(1)),
                                                 on_block=block_entry if args.certificate else None)
            entries = values
        else:
            dec = decide_checkpoint(ckpt, tol=args.tol, timeout=args.timeout, seed=args.seed, method=args.method,
                                    allow_biases=args.allow_biases, progress=progress, on_block=on_block)
        bar.update(len(ckpt) - bar.n)
    if args.certificate:  # written atomically before any output, as for .npz blocks
        from absorb.certificate import write_certificate

        write_certificate(dec, None, args.certificate, seed=args.seed, activation=args.activation, method=args.method,
                          timeout=args.timeout, entries=entries, checkpoint=opts)
    by_name = {s.name: s for s in ckpt.specs}
    if args.json:
        extra = {"files": [str(f) for f in ckpt.files], "families": list(ckpt.detection.families),
                 "model_type": ckpt.detection.model_type, "fold_norm": bool(args.fold_norm), "notes": list(ckpt.detection.notes)}
        out = checkpoint_json(dec, analysed=lambda n: ckpt.analysed(by_name[n]), extra=extra)
        for entry in out["blocks"]:
            spec = by_name[entry["name"]]
            entry["layer"] = spec.layer
            entry["activation_source"] = spec.activation_source
        _write_json(out)
    elif verbosity(args) == 0:  # -q: the summary line only (it ends with the verdict)
        from absorb.report.table import summary_line

        sys.stdout.write(summary_line(dec) + "\n")
    else:
        sys.stdout.write(render_table(dec, header=ckpt.describe()))
    return EXIT_UNKNOWN if dec.verdict is Verdict.UNKNOWN else EXIT_OK
