"""Print a Markdown table of what ``absorb check`` says about every family's synthetic checkpoint.

Usage: ``python examples/family_table.py [--certificate] [--families gpt2,bloom,...] [--dtype F32|F16|BF16]
[--dir DIR] [--out TABLE.md]``.

For each family of ``examples/make_checkpoint.py`` (default sizes; ``--planted 1`` where the
family is ungated with a ReLU/GELU-family activation, so that one layer has an exact index
set) the script writes the checkpoint into a temporary directory (or ``--dir``), runs
``absorb check DIR --json`` in a fresh interpreter and tabulates, from that JSON: the
activation and where it came from, the biases the blocks store, each layer's verdicts and
the theorems used. Nothing is held in the script: rerun it after changing the engine and
the table changes with it. With ``--certificate`` each check also writes ``C.json`` and
``absorb verify C.json DIR`` re-checks it; the last column says accepted or rejected.
Exit status: 0 when every checkpoint was read (and, with ``--certificate``, every
certificate accepted), else 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _make_checkpoint_module():
    spec = importlib.util.spec_from_file_location("make_checkpoint", HERE / "make_checkpoint.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MC = _make_checkpoint_module()


def _absorb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "absorb", *args], capture_output=True, text=True)


def _tower(name: str, layer: int) -> str:
    """The module path before the layer index: ``model.encoder`` of ``model.encoder.layers.0``."""
    m = re.search(rf"(?:^|\.)(?:layers|layer|h|block)\.{layer}(?=\.|$)", name)
    return name[: m.start()] if m else ""


def _short_towers(towers: list[str]) -> dict[str, str]:
    """Label each tower by the first path component that tells them apart (``encoder``, ``text_model``)."""
    if len(set(towers)) <= 1:
        return {t: "" for t in towers}
    parts = {t: t.split(".") for t in towers}
    lead = 0
    while all(len(p) > lead for p in parts.values()) and len({p[lead] for p in parts.values()}) == 1:
        lead += 1
    first = {t: p[lead] if len(p) > lead else t for t, p in parts.items()}  # the first component that differs
    if len(set(first.values())) == len(first):
        return first
    return {t: ".".join(p[lead:]) or t for t, p in parts.items()}


def verdicts_by_layer(blocks: list[dict]) -> str:
    """``L0 unknown · L1 absorbable``; several blocks in a layer (experts) are counted; towers are named."""
    groups: dict[tuple[str, int], Counter[str]] = {}
    for b in blocks:
        key = (_tower(b["name"], b["layer"]), b["layer"])
        groups.setdefault(key, Counter())[b["verdict"]] += 1
    labels = _short_towers([t for t, _ in groups])
    out: dict[str, list[str]] = {}
    for (tower, layer), cnt in sorted(groups.items(), key=lambda kv: (list(labels).index(kv[0][0]), kv[0][1])):
        what = ", ".join(v if k == 1 else f"{v} ×{k}" for v, k in cnt.items())
        out.setdefault(labels[tower], []).append(f"L{layer} {what}")
    return "; ".join(f"{tower}: {' · '.join(v)}" if tower else " · ".join(v) for tower, v in out.items())


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _biases(ckpt: Path) -> str:
    from absorb.io import open_checkpoint

    roles = Counter()
    specs = open_checkpoint(ckpt).specs
    for s in specs:
        for role in ("b_up", "b_gate", "b_down"):
            if getattr(s, role):
                roles[role] += 1
    if not roles:
        return "none"
    return ", ".join(r if k == len(specs) else f"{r} ({k} of {len(specs)} blocks)" for r, k in roles.items())


def planted(family: str) -> int | None:
    """The layer this table plants an index set in (ungated ReLU/GELU families), else None."""
    return 1 if MC.SYNTHETIC[family].flip else None


def make_command(family: str, dtype: str) -> list[str]:
    """The make_checkpoint.py options equivalent to what :func:`row` writes for ``family``."""
    cmd = ["--family", family]
    if planted(family) is not None and family != "bert":  # bert plants layer 1 by default
        cmd += ["--planted", str(planted(family))]
    if dtype != "F32":
        cmd += ["--dtype", dtype]
    return cmd


def row(family: str, work: Path, *, dtype: str, certificate: bool) -> tuple[list[str], bool]:
    """One table row and whether everything went through."""
    syn = MC.SYNTHETIC[family]
    ckpt = work / family
    tensors, cfg, extra = MC.make(family, planted=planted(family) if syn.flip else "default")
    MC.write(ckpt, tensors, cfg, dtype=dtype, extra=extra)
    args = ["check", str(ckpt), "--json"]
    cert = work / f"{family}.cert.json"
    if certificate:
        args += ["--certificate", str(cert)]
    res = _absorb(*args)
    if res.returncode not in (0, 3):
        err = (res.stderr.strip().splitlines() or ["(no message)"])[-1]
        cells = [f"`{family}`", syn.models, "—", "—", f"error (exit {res.returncode}): {err}", "—"]
        return cells + (["—"] if certificate else []), False
    js = json.loads(res.stdout)
    blocks = js["blocks"]
    fams = ", ".join(js["checkpoint"]["families"])
    acts = "; ".join(f"{a} ({src})" for a, src in _distinct([(b["activation"], b.get("activation_source", "")) for b in blocks]))
    theorems = ", ".join(_distinct([b["theorem"] for b in blocks]))
    cells = [f"`{family}` ({fams})", syn.models, acts, _biases(ckpt), verdicts_by_layer(blocks), theorems]
    ok = True
    if certificate:
        ver = _absorb("verify", str(cert), str(ckpt), "--json")
        try:
            vj = json.loads(ver.stdout)
        except json.JSONDecodeError:
            vj = {}
        if vj.get("result") == "accepted":
            extra = "" if vj.get("complete", True) else f", {vj.get('not_rechecked')} not re-checked"
            cells.append(f"accepted ({len(vj.get('findings', []))} checks{extra})")
        else:
            ok = False
            why = vj.get("result") or (ver.stderr.strip().splitlines() or ["?"])[-1]
            cells.append(f"{why} (exit {ver.returncode}, {vj.get('failures', '?')} failures)")
    return cells, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--certificate", action="store_true", help="also write and verify a certificate for each checkpoint")
    ap.add_argument("--families", help="comma-separated subset (default: all; see make_checkpoint.py --list)")
    ap.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    ap.add_argument("--dir", type=Path, help="write the checkpoints here and keep them (default: a temporary directory)")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    families = list(MC.SYNTHETIC)
    if args.families:
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        unknown = [f for f in families if f not in MC.SYNTHETIC]
        if unknown:
            ap.error(f"--families: unknown {', '.join(unknown)}; known: {', '.join(MC.SYNTHETIC)}")

    import absorb

    cmd = " ".join(["python examples/family_table.py", *(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))])
    head = ["family (absorb's layout)", "model examples", "activation (source)", "biases", "per-layer verdicts", "theorem(s)"]
    if args.certificate:
        head.append("certificate (absorb verify)")
    check = "absorb check DIR --json" + (" --certificate C.json` and `absorb verify C.json DIR" if args.certificate else "")
    lines = [f"Produced by `{cmd.strip()}` (absorb {absorb.__version__}, Python {sys.version.split()[0]}): each checkpoint is "
             f"`python examples/make_checkpoint.py DIR OPTIONS` (options below the table), then `{check}`.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    all_ok = True
    with tempfile.TemporaryDirectory(prefix="absorb-families-") as tmp:
        work = args.dir if args.dir is not None else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for fam in families:
            cells, ok = row(fam, work, dtype=args.dtype, certificate=args.certificate)
            all_ok &= ok
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            print(f"  {fam}: done", file=sys.stderr, flush=True)
    lines += ["", "Options: " + "; ".join(f"`{fam}`: `{' '.join(make_command(fam, args.dtype))}`" for fam in families) + "."]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
