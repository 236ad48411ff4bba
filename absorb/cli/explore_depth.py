"""``absorb explore-depth``: numerical evidence on the open problem (deep stacks of ReLU/GELU
residual blocks). Prints best fitting errors against depth and width; never a verdict.
Exit 0 when the exploration ran, 2 on bad options."""

from __future__ import annotations

import argparse
import json
import sys

from absorb.cli import EXIT_OK
from absorb.cli._args import positive, positive_ints, seed

_COLUMNS_HELP = ("Columns: depth L and width w of the fit; train err and test err, the best relative error "
                 "‖G − F‖_F / ‖F‖_F of the residual-free stack G against the residual stack F on the training inputs "
                 "and on as many held-out ones; kinks F/G, for ReLU in d = 2, the number of kink rays of F and of G "
                 "(a G equal to F has the same rays); best start, the start that reached it (constructed: each "
                 "block without its skip plus antipodal pairs; random#k: the k-th random start).")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explore-depth", help="numerical evidence on the open problem: fit residual-free stacks to residual stacks",
                       description="Fit L residual-free blocks of width w to L random residual blocks of width n (seeded L-BFGS "
                       "from constructed and random starts) and report the best relative error against depth and width. "
                       "Numerical evidence, not a verdict. See docs/open-problem.md.",
                       epilog=_COLUMNS_HELP + " Example: absorb explore-depth --d 2 --n 3 --depth 3 --seed 0 --json")
    p.add_argument("--d", type=positive(int), default=2, help="model dimension (default 2)")
    p.add_argument("--n", type=positive(int), default=3, help="hidden width of the residual blocks (default 3)")
    p.add_argument("--depth", type=positive(int), default=3, help="largest depth L (default 3)")
    p.add_argument("--widths", type=positive_ints, default=None, help="widths w of the residual-free blocks (default n, n+1, n+d)")
    p.add_argument("--activation", choices=("relu", "gelu"), default="relu", help="activation of every block (default relu)")
    p.add_argument("--restarts", type=positive(int), default=3, help="random starts per fit, besides the constructed one (default 3)")
    p.add_argument("--samples", type=positive(int), default=256, help="training inputs (default 256; as many held out)")
    p.add_argument("--maxiter", type=positive(int), default=300, help="L-BFGS iterations per start (default 300)")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed of targets, inputs and starts, 0 to 2^32-1 (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


_STRUCTURE_NAMES = {"kink_rays_F": "kink rays of F", "angles_F": "their angles (rad)"}


def _structure_text(val: object) -> str:
    """A structure record as prose: ``kink rays of F: 6; their angles (rad): 0.7607, 0.977, …``."""
    if not isinstance(val, dict):
        return str(val)
    parts = []
    for k, v in val.items():
        name = _STRUCTURE_NAMES.get(k, k.replace("_", " "))
        if isinstance(v, (list, tuple)):
            v = ", ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in v) or "none"
        parts.append(f"{name}: {v}")
    return "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    from absorb.explore import explore_depth

    rep = explore_depth(d=args.d, n=args.n, depth=args.depth, widths=args.widths, activation=args.activation, seed=args.seed,
                        restarts=args.restarts, samples=args.samples, maxiter=args.maxiter)
    if args.json:
        sys.stdout.write(json.dumps(rep.to_json(), indent=2) + "\n")
        return EXIT_OK
    out = [f"absorb explore-depth — {rep.label}",
           f"{rep.activation}, d = {rep.d}, n = {rep.n}, seed {rep.seed}; per-block minimal widths {rep.per_block_min_width}",
           "", f"{'depth':>5} {'width':>5} {'train err':>10} {'test err':>10}  {'kinks F/G':>9}  best start"]
    for r in rep.results:
        k = f"{r.kink_rays_F}/{r.kink_rays_G}" if r.kink_rays_F is not None else "-"
        out.append(f"{r.depth:>5} {r.width:>5} {r.train_error:>10.3e} {r.test_error:>10.3e}  {k:>9}  {r.start}")
    for key, val in rep.structure.items():
        out.append(f"{key}: {_structure_text(val)}")
    out.append("columns: train/test err = best ‖G − F‖_F / ‖F‖_F on training / held-out inputs; kinks F/G = kink rays "
               "of F and of the fit G (ReLU, d = 2); best start = the start that reached it (see --help)")
    out.append(f"({rep.label})")
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK
