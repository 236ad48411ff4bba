"""``absorb verify CERT.json [MODEL]``: re-derive a certificate's claims independently.

The checker (:mod:`absorb.verify.checker`) shares no code with the decision engine or the
search: it recomputes hashes, hypotheses, witnesses, bounds and the activation facts from
the weights and sympy. Exit codes: 0 accepted (every claim re-checked); 1 rejected (a claim
failed — the first failure is printed); 2 bad input (missing or malformed certificate or
model); 4 not fully checked (nothing failed, but some claim could not be re-checked — a
certificate is only accepted when every claim was). ``--strict`` is kept as a synonym of the
default.
"""

from __future__ import annotations

import argparse
import json
import sys

from absorb.cli import EXIT_OK, EXIT_REJECTED, verbosity

EXIT_INCOMPLETE = 4
"""``verify``: nothing failed, but some claim could not be re-checked (not accepted)."""

_MARK = {"ok": "✓", "fail": "✗", "unchecked": "?"}


def register(sub: argparse._SubParsersAction) -> None:
    from absorb.verify import DEFAULT_SEED

    p = sub.add_parser("verify", help="check a proof certificate independently of the decision engine",
                       description="Re-derive every claim of a certificate written by 'absorb check --certificate OUT.json' "
                       "from the weights: SHA-256 hashes, hypotheses, the activation property the theorem needs (with "
                       "sympy), witnesses (exact rationals where sizes allow, else fresh random inputs) and bounds. "
                       "Exit 0: accepted (every claim re-checked); 1: rejected; 2: bad input; 4: not fully checked (some claim "
                       "could not be re-checked, nothing failed).",
                       epilog="example: absorb verify cert.json model.npz")
    p.add_argument("certificate", help="the .json certificate")
    p.add_argument("model", nargs="?", help="the model file or checkpoint (default: the path recorded in the certificate, "
                   "then the same file name next to the certificate); a checkpoint is opened with the options recorded "
                   "in the certificate (--layers, --up/--down/--gate, --fold-norm) and read one layer at a time")
    p.add_argument("--activation", metavar="SIGMA", help="the activation a certificate made with 'absorb check --activation "
                   "SIGMA' answers for (it overrides the one the model stores): such a certificate is verified only when "
                   "the same SIGMA is given here, so that the question it answers is named on both sides")
    p.add_argument("--strict", action="store_true", help="kept for old scripts: the default already refuses to accept "
                   "a certificate with a claim that could not be re-checked (exit 4)")
    p.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the checker's random inputs (default {DEFAULT_SEED})")
    p.set_defaults(func=run)


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _question(act: str | None, opts: object) -> str:
    """What of the model the accepted verdict is about, where the certificate's options narrow
    or re-read it: the activation it overrides, the layers of a checkpoint it covers."""
    parts = [f"σ = {act} (--activation, not the model's own)"] if act is not None else []
    if isinstance(opts, dict):
        if opts.get("layers") is not None:
            parts.append(f"only the checkpoint layers {opts['layers']} (--layers)")
        roles = [f"--{k} {opts[k]}" for k in ("up", "down", "gate") if opts.get(k)]
        if roles:
            parts.append(f"the matrices named by hand ({', '.join(roles)}), not the layout's own")
        if opts.get("fold_norm"):
            parts.append("the norm weights folded in (--fold-norm)")
    return "; for " + ", ".join(parts) if parts else ""


def run(args: argparse.Namespace) -> int:
    from absorb.io import load, open_checkpoint
    from absorb.verify.checker import load_certificate, resolve_model_path, verify_certificate

    cert = load_certificate(args.certificate)
    path = resolve_model_path(cert, args.certificate, args.model)
    params = cert.get("parameters", {})
    act, opts = params.get("activation_override"), params.get("checkpoint")
    if act != args.activation:
        from absorb._errors import InvalidInput

        if act is None:
            raise InvalidInput(f"{args.certificate}: the certificate was made without --activation (it answers for the "
                               f"activation the model stores); verify it without --activation")
        raise InvalidInput(f"{args.certificate}: the certificate answers for the activation {act!r}, which overrides the "
                           f"one the model stores (absorb check --activation); verify it with --activation {_quoted(act)}")
    if isinstance(opts, dict):  # made from a checkpoint: re-open it with the same options, read lazily
        from absorb._errors import InvalidInput

        for k in ("layers", "up", "down", "gate"):
            if not (opts.get(k) is None or isinstance(opts.get(k), str)):
                raise InvalidInput(f"{args.certificate}: parameters.checkpoint.{k} is {opts.get(k)!r}; the format records "
                                   "the option as written on the command line (a string) or null")
        if not isinstance(opts.get("fold_norm", False), bool):
            raise InvalidInput(f"{args.certificate}: parameters.checkpoint.fold_norm is {opts.get('fold_norm')!r}; the format "
                               "records true or false")
        model = open_checkpoint(path, activation=act, **{k: opts.get(k) for k in ("layers", "up", "down", "gate")},
                                fold_norm=bool(opts.get("fold_norm")))
    else:
        model = load(path, activation=act)
    report = verify_certificate(cert, model, seed=args.seed)
    rejected = not report.accepted
    incomplete = not rejected and bool(report.not_rechecked)
    if args.json:
        out = {"certificate": args.certificate, "model": str(path), **report.to_json(), "strict": args.strict,
               "activation_override": act, "checkpoint_options": opts if isinstance(opts, dict) else None,
               "result": "rejected" if rejected else "not fully checked" if incomplete else "accepted"}
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        lines = [f"absorb verify {args.certificate} against {path}"]
        lines += [f"  {_MARK[f.status]} {f.where}: {f.claim}" + (f" — {f.detail}" if f.detail else "")
                  for f in report.findings]
        n_ok = sum(f.status == "ok" for f in report.findings)
        if report.failures:
            f = report.failures[0]
            lines.append(f"rejected: {f.where}: {f.claim}" + (f" — {f.detail}" if f.detail else ""))
        elif incomplete:
            f = report.not_rechecked[0]
            lines.append(f"not fully checked: {n_ok} checks passed, {len(report.not_rechecked)} claim(s) could not be "
                         f"re-checked, first: {f.where}: {f.claim}" + (f" — {f.detail}" if f.detail else ""))
        else:
            cls = cert.get("class") if isinstance(cert.get("class"), dict) else {}
            about = {True: " (about residual-free blocks with any biases)", False: " (about bias-free residual-free blocks)"}
            tol = params.get("tolerance")
            lines.append(f"accepted: {n_ok} checks passed; verdict {cert['verdict']} at τ = {tol:g}{about.get(cls.get('biases'), '')}"
                         + _question(act, opts))
        sys.stdout.write("\n".join(lines[-1:] if verbosity(args) == 0 else lines) + "\n")  # -q: the result line only
    return EXIT_REJECTED if rejected else EXIT_INCOMPLETE if incomplete else EXIT_OK
