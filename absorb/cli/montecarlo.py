"""``absorb montecarlo``: how often random weights admit an index set (result 5 at scale).

Exit codes: 0 the sweep ran (whatever it measured); 2 bad usage; 1 when a vectorised hit
failed the engine's re-check or a planted control was missed by an exact (enumeration) cell
— signs of a bug, never expected.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

from absorb.cli import EXIT_OK, EXIT_REJECTED, show_progress, verbosity
from absorb.cli._args import at_least, check_writable, positive_ints, seed, tolerance
from absorb.montecarlo._names import DESCRIPTIONS as DISTRIBUTIONS


def _shapes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        try:
            d, n = part.lower().split("x")
            out.append((int(d), int(n)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not DxN (e.g. 3x9)") from None
        if out[-1][0] < 1 or out[-1][1] < 1:
            raise argparse.ArgumentTypeError(f"{part!r}: d and n must be ≥ 1")
    return out


def _names(choices: list[str]):
    def conv(text: str) -> list[str]:
        vals = list(choices) if text == "all" else [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in vals if v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(choices)} (comma-separated) or 'all'")
        return vals
    return conv


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("montecarlo", help="sweep random weights: how often is a block absorbable?",
                       description="Decide N random blocks per cell of a grid (d, n, weight distribution, activation) with "
                       "vectorised index-set searches; report the fraction absorbable with an exact 95% Clopper-Pearson interval, "
                       "the distance to absorbability min_S ||D_S U_S + I||_F/sqrt(d), the degenerate fraction and a planted "
                       "positive control. Every hit is re-checked by the engine. Exit 0: done; 1: a re-check failed; 2: bad usage.",
                       epilog="example: absorb montecarlo --shapes 2x4,3x9 --dist gaussian,ternary --samples 2000 --plot mc.png")
    g = p.add_argument_group("grid")
    g.add_argument("--d", type=positive_ints, default=None, metavar="LIST", help="model dimensions, e.g. 2,3,4 (with --n: their product)")
    g.add_argument("--n", type=positive_ints, default=None, metavar="LIST", help="hidden widths, e.g. 4,8,12")
    g.add_argument("--shapes", type=_shapes, default=None, metavar="DxN,...", help="explicit (d, n) pairs instead of --d × --n, e.g. 2x4,3x9")
    g.add_argument("--dist", type=_names(list(DISTRIBUTIONS)), default=["gaussian"], metavar="LIST",
                   help=f"weight distributions (default gaussian; 'all'): {', '.join(DISTRIBUTIONS)}")
    g.add_argument("--activation", type=_names(["relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "leaky_relu", "softplus"]),
                   default=["relu"], metavar="LIST", help="activations with σ(z) − σ(−z) = c·z (default relu), e.g. relu,gelu")
    g.add_argument("--samples", type=at_least(1), default=1000, metavar="N", help="random blocks per cell (default 1000)")
    g.add_argument("--planted", type=at_least(0), default=None, metavar="N", help="planted positive controls per cell (default min(N, 100))")
    r = p.add_argument_group("run")
    r.add_argument("--seed", type=seed, default=0, metavar="S", help="master seed, 0 to 2^32-1; a cell's weights depend on (seed, d, n, distribution) only, "
                   "not on the other cells asked for (default 0)")
    r.add_argument("--tol", type=tolerance, default=1e-9, metavar="T", help="relative tolerance on ‖D_S U_S + I‖_F/√d, strictly between 0 and 1 (default 1e-9)")
    r.add_argument("--batch", type=at_least(1), default=4096, metavar="B", help="instances decided together (default 4096)")
    r.add_argument("--route", choices=("auto", "enumerate", "dual"), default="auto",
                   help="auto: exhaustive for n ≤ 20, else the least-squares dual bound")
    r.add_argument("--workers", type=at_least(1), default=None, metavar="N", help="run cells on a local dask cluster of N worker processes "
                   "(needs the montecarlo extra: pip install 'absorb[montecarlo]')")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run cells on a running dask scheduler (e.g. tcp://host:8786; "
                   "needs the montecarlo extra)")
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    o.add_argument("--plot", default=None, metavar="OUT.png", help="write a plot of fraction absorbable and distance per cell "
                   "(needs the montecarlo extra: pip install 'absorb[montecarlo]')")
    o.add_argument("--no-progress", action="store_true", help="no progress bar on standard error (the bar shows on a terminal "
                   "only, never with --json or -q)")
    p.set_defaults(func=run)


def _missing(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _check_extras(args: argparse.Namespace) -> None:
    """Refuse, before any cell runs, what would fail after the sweep: a missing optional
    package (dask for --workers/--scheduler, matplotlib for --plot) or an unwritable plot."""
    from pathlib import Path

    from absorb._errors import InvalidInput

    extra = "pip install 'absorb[montecarlo]'"
    if (args.workers is not None or args.scheduler is not None) and (_missing("dask") or _missing("distributed")):
        opt = "--workers" if args.workers is not None else "--scheduler"
        raise InvalidInput(f"{opt} needs dask.distributed, which is not installed; {extra} (or drop {opt})")
    if args.plot is None:
        return
    if _missing("matplotlib"):
        raise InvalidInput(f"--plot needs matplotlib, which is not installed; {extra} (or drop --plot)")
    out = Path(args.plot)
    formats = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp", "pgf")
    if out.suffix.lower().lstrip(".") not in formats:
        raise InvalidInput(f"--plot {args.plot}: unknown image format {out.suffix or '(no suffix)'!r}; end the name in .png, .pdf or .svg")
    check_writable("--plot", args.plot)


def run(args: argparse.Namespace) -> int:
    from absorb._errors import InvalidInput
    from absorb.montecarlo import grid, sweep
    from absorb.montecarlo._render import plot, render_table, to_json

    _check_exclusive(args)
    _check_extras(args)  # up front: never run the whole sweep and then fail on a missing package or path
    shapes = args.shapes or ([(d, n) for d in args.d for n in args.n] if args.d else [(2, 4), (3, 9)])
    planted = min(args.samples, 100) if args.planted is None else args.planted
    cells = grid(d=[], shapes=shapes, distributions=args.dist, activations=args.activation, samples=args.samples, planted=planted)
    bar = _progress_bar(args, len(cells))
    progress = _progress(args, bar)
    try:
        results = sweep(cells, seed=args.seed, tol=args.tol, batch=args.batch, route=args.route, workers=args.workers,
                        scheduler=args.scheduler, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    command = "absorb montecarlo " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if sys.argv[1:2] == ["montecarlo"] else None
    if args.plot:
        try:
            plot(results, args.plot)
        except OSError as exc:
            raise InvalidInput(f"--plot {args.plot}: cannot write ({exc})") from None
    if args.json:
        sys.stdout.write(json.dumps(to_json(results, seed=args.seed, tol=args.tol, command=command), indent=2) + "\n")
    else:
        sys.stdout.write(render_table(results, seed=args.seed, tol=args.tol))
    return _exit_code(results)


def _check_exclusive(args: argparse.Namespace) -> None:
    """Options that exclude or need each other."""
    from absorb._errors import InvalidInput

    if args.shapes is not None and (args.d is not None or args.n is not None):
        raise InvalidInput("give either --shapes DxN,... or --d and --n, not both")
    if args.shapes is None and (args.d is None) != (args.n is None):
        raise InvalidInput("--d and --n go together (their product is the grid); or use --shapes DxN,...")
    if args.workers is not None and args.scheduler is not None:
        raise InvalidInput("give either --workers N or --scheduler ADDRESS, not both")


def _progress_bar(args: argparse.Namespace, total: int) -> Any:
    """A tqdm bar on a terminal (unless --no-progress, or tqdm is not installed), else None."""
    if args.no_progress or not show_progress(args):
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # optional dependency (pip install absorb[montecarlo]): run without a bar
        return None
    return tqdm(total=total, unit="cell", file=sys.stderr, desc="montecarlo", leave=False)


def _progress(args: argparse.Namespace, bar: Any) -> Callable[[Any], Any] | None:
    """The per-cell callback: the bar's tick, a line per cell with -v, else None."""
    if bar is not None:
        return lambda r: bar.update(1)
    if verbosity(args) >= 2:  # -v: a line per finished cell, also into a log file
        return lambda r: sys.stderr.write(f"absorb montecarlo: {r.cell.label()}: {r.counts['absorbable']}/{r.cell.samples} absorbable\n")
    return None


def _exit_code(results: Any) -> int:
    """1 when a hit failed the engine's re-check or an exact cell missed a planted set, else 0."""
    bad = sum(r.recheck["recheck_failed"] for r in results)
    missed = sum(1 for r in results if r.route == "enumerate" and r.planted.get("samples") and r.planted["detected"] < r.planted["samples"])
    if bad or missed:
        sys.stderr.write(f"absorb montecarlo: {bad} hits failed the engine's re-check, {missed} exact cells missed a planted set\n")
        return EXIT_REJECTED
    return EXIT_OK
