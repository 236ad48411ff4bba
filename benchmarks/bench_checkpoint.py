"""Benchmark of ``absorb check`` on whole 7B-shaped checkpoints, serial and on a local dask cluster.

    python benchmarks/bench_checkpoint.py [--layers 32] [--models falcon,llama] [--workers 2]
                                          [--dir DIR] [--seed 0] [--shrink K]

Writes synthetic BF16 checkpoints, one shard per layer, with a ``model.safetensors.index.json``
and a ``config.json`` (to ``--dir``, else a temporary directory removed afterwards):

* ``falcon``: Falcon-7B's MLP, ``transformer.h.{i}.mlp.dense_h_to_4h`` / ``dense_4h_to_h``,
  d = 4544, n = 18176, bias-free GELU (the index-set search at scale);
* ``llama``: LLaMA-7B's MLP, ``model.layers.{i}.mlp.{gate,up,down}_proj``, d = 4096,
  n = 11008, SwiGLU (decided by linearization: the cost is reading and checking).

Weights are seeded Gaussians, ``W_up ~ N(0, 1/d)`` and ``W_down ~ N(0, 1/n)``, rounded to
BF16. Each checkpoint is decided as ``absorb check CKPT`` does it, in this process
(``decide_checkpoint``), then as ``absorb check CKPT --workers N`` does it
(``decide_checkpoint_dask`` on a local cluster started by the same code), and the two
decisions are compared (they must be identical but for the searches' wall-clock times).

Times are per layer (serial: from one layer's decision to the next, reading included;
workers: a task's seconds on its worker, opening and reading included) and whole (workers:
from submitting the tasks to the last result; the cluster's start is printed apart). Every
time is also given as a multiple of one float64 ``U @ U.T`` (U = W_up of layer 0, n×d),
timed in this process between the two runs, because the machine is shared and absolute
seconds are noise. Peak memory is the growth of the peak resident set (Linux: ``VmHWM``,
reset through ``/proc/self/clear_refs`` before each run) over the resident set when the
run started: of this process for the serial run, of each worker process for the workers
(both after importing absorb), given in MiB and as a multiple of one layer's stored bytes.
``--shrink K`` divides d and n by K for a quick try.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb._dask import cores, dask_client
from absorb.engine import decide_checkpoint
from absorb.engine.distributed import decide_checkpoint_dask
from absorb.io.safetensors import open_checkpoint

MODELS = {
    "falcon": {"label": "Falcon-7B-shaped", "d": 4544, "n": 18176, "gated": False},
    "llama": {"label": "LLaMA-7B-shaped", "d": 4096, "n": 11008, "gated": True},
}
MIB = 2 ** 20


# ---- checkpoints ----------------------------------------------------------------------
def write_checkpoint(out: Path, model: str, *, d: int, n: int, layers: int, seed: int) -> int:
    """One BF16 shard per layer, an index and config.json; returns one layer's stored bytes."""
    import ml_dtypes
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16

    def gauss(shape: tuple[int, int], fan_in: int) -> np.ndarray:
        a = rng.standard_normal(shape, dtype=np.float32)
        a *= np.float32(1 / np.sqrt(fan_in))
        return a.astype(bf16)

    weight_map: dict[str, str] = {}
    layer_bytes = 0
    for i in range(layers):
        if model == "falcon":
            p = f"transformer.h.{i}"
            t = {f"{p}.mlp.dense_h_to_4h.weight": gauss((n, d), d), f"{p}.mlp.dense_4h_to_h.weight": gauss((d, n), n),
                 f"{p}.input_layernorm.weight": np.ones(d, dtype=bf16), f"{p}.input_layernorm.bias": np.zeros(d, dtype=bf16)}
            mlp = (f"{p}.mlp.dense_h_to_4h.weight", f"{p}.mlp.dense_4h_to_h.weight")
        else:
            p = f"model.layers.{i}"
            t = {f"{p}.mlp.gate_proj.weight": gauss((n, d), d), f"{p}.mlp.up_proj.weight": gauss((n, d), d),
                 f"{p}.mlp.down_proj.weight": gauss((d, n), n), f"{p}.post_attention_layernorm.weight": np.ones(d, dtype=bf16),
                 f"{p}.input_layernorm.weight": np.ones(d, dtype=bf16)}
            mlp = tuple(f"{p}.mlp.{r}_proj.weight" for r in ("gate", "up", "down"))
        layer_bytes = sum(t[k].nbytes for k in mlp)
        fname = f"model-{i + 1:05d}-of-{layers:05d}.safetensors"
        save_file(t, str(out / fname), metadata={"format": "np"})
        weight_map.update({k: fname for k in t})
        del t
    if model == "falcon":
        cfg = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "hidden_size": d, "num_hidden_layers": layers,
               "activation": "gelu", "bias": False, "parallel_attn": True, "new_decoder_architecture": False}
    else:
        cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": n,
               "num_hidden_layers": layers, "hidden_act": "silu"}
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2) + "\n")
    return layer_bytes


# ---- memory (Linux /proc; getrusage elsewhere) -------------------------------------------
def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak() -> int:
    """Reset this process's peak resident set to the current one; return the current (bytes)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rss = _status_kib("VmRSS")
    return (rss or 0) * 1024


def peak() -> int:
    """This process's peak resident set (bytes) since the last reset_peak (since start without /proc)."""
    hwm = _status_kib("VmHWM")
    if hwm is not None:
        return hwm * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _warm() -> None:
    """Import on a worker what a task imports, so that its peak is the layer's, not the imports'."""
    import absorb.certificate.build
    import absorb.engine.decide
    import absorb.engine.distributed  # noqa: F401


def _timeless(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if k != "elapsed"}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    return obj


# ---- one model ------------------------------------------------------------------------
def run_model(model: str, where: Path, *, layers: int, workers: int, seed: int, shrink: int) -> dict[str, Any]:
    m = MODELS[model]
    d, n = m["d"] // shrink, m["n"] // shrink
    t = time.perf_counter()
    stored = write_checkpoint(where, model, d=d, n=n, layers=layers, seed=seed)
    t_write = time.perf_counter() - t
    ckpt = open_checkpoint(where)
    assert len(ckpt) == layers and ckpt.specs[0].d == d and ckpt.specs[0].n == n, ckpt.describe()
    kw = dict(tol=1e-9, timeout=60.0, seed=seed, method="auto")

    # serial, in this process: absorb check CKPT
    _warm()
    base = reset_peak()
    marks = [time.perf_counter()]
    serial = decide_checkpoint(ckpt, on_block=lambda bd: marks.append(time.perf_counter()), **kw)
    t_serial = marks[-1] - marks[0]
    peak_serial = peak() - base
    per_serial = [b - a for a, b in zip(marks, marks[1:])]

    # the baseline: one float64 U @ U.T of layer 0, in this process
    spec = ckpt.specs[0]
    U = ckpt.read(spec.up, transpose=spec.transposed).astype(np.float64)  # (read keeps a large layer float32)
    t = time.perf_counter()
    G = U @ U.T
    t_gemm = time.perf_counter() - t
    del U, G

    # workers: absorb check CKPT --workers N (the same cluster code)
    t = time.perf_counter()
    with dask_client(workers=workers, serial_blas=True) as client:
        t_cluster = time.perf_counter() - t
        client.run(_warm)
        bases = client.run(reset_peak)
        per_dist: dict[str, float] = {}
        t = time.perf_counter()
        spread, _ = decide_checkpoint_dask(ckpt, {}, client=client, progress=lambda name, s: per_dist.__setitem__(name, s), **kw)
        t_dist = time.perf_counter() - t
        peaks = client.run(peak)
        blas = {str(v) for v in client.run(os.getenv, "OPENBLAS_NUM_THREADS").values()}
    peak_workers = {w: peaks[w] - bases[w] for w in peaks}
    return {
        "model": model, "label": m["label"], "d": d, "n": n, "layers": layers, "stored": stored, "write": t_write,
        "gemm": t_gemm, "cluster": t_cluster, "workers": workers, "blas": sorted(blas),
        "serial": {"per": per_serial, "whole": t_serial, "peak": peak_serial},
        "dask": {"per": [per_dist[s.name] for s in ckpt.specs], "whole": t_dist, "peak": max(peak_workers.values()),
                 "peaks": sorted(peak_workers.values())},
        "identical": _timeless(serial.to_json()) == _timeless(spread.to_json()),
        "verdicts": serial.extra["summary"],
    }


def _per(xs: list[float], g: float) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.1f} ({xs[0] / g:.2f}×)"
    med = statistics.median(xs)
    return f"{med:.1f} ({med / g:.2f}×); {min(xs):.1f}–{max(xs):.1f}"


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| model (d, n), layers | run | per layer s (× U@U.T): median; min–max | whole s (× U@U.T) | "
             "peak MiB per process (× stored layer) |", "|---|---|---|---|---|"]
    for r in results:
        g = r["gemm"]
        name = f"{r['label']} ({r['d']}, {r['n']}), {r['layers']}"
        for run, key in (("serial", "serial"), (f"{r['workers']} workers", "dask")):
            x = r[key]
            pk = f"{x['peak'] / MIB:.0f} ({x['peak'] / r['stored']:.2f}×)"
            if key == "dask":
                pk += " each: " + ", ".join(f"{p / MIB:.0f}" for p in x["peaks"])
            lines.append(f"| {name} | {run} | {_per(x['per'], g)} | {x['whole']:.1f} ({x['whole'] / g:.2f}×) | {pk} |")
    out = "\n".join(lines) + "\n\n"
    for r in results:
        out += (f"- {r['label']}: one float64 U@U.T ({r['n']}×{r['d']} @ {r['d']}×{r['n']}) {r['gemm']:.1f} s; one layer "
                f"{r['stored'] / MIB:.0f} MiB stored (BF16), {4 * r['stored'] / MIB:.0f} MiB as float64; cluster start "
                f"{r['cluster']:.1f} s; OPENBLAS_NUM_THREADS of the workers {', '.join(r['blas'])} (None: the BLAS default, as in this process); writing the checkpoint {r['write']:.1f} s; "
                f"verdicts {r['verdicts']}; decisions identical serial vs workers: {'yes' if r['identical'] else 'NO'}\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=32, help="layers per checkpoint (default 32, as both 7B models)")
    ap.add_argument("--models", default="falcon,llama", help="comma-separated: falcon, llama (default both)")
    ap.add_argument("--workers", type=int, default=2, help="local dask workers (default 2)")
    ap.add_argument("--dir", type=Path, default=None, help="write the checkpoints here and keep them (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shrink", type=int, default=1, help="divide d and n by K (a quick try; default 1)")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad or args.layers < 1 or args.workers < 1 or args.shrink < 1:
        ap.error(f"models from {', '.join(MODELS)}; --layers, --workers and --shrink ≥ 1 (got {bad or ''})")
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_checkpoint_"))
    print(f"# bench_checkpoint: {args.layers} layers, {args.workers} workers, {cores()} cores, seed {args.seed}, "
          f"checkpoints in {root}", flush=True)
    results = []
    try:
        for m in models:
            r = run_model(m, root / m, layers=args.layers, workers=args.workers, seed=args.seed, shrink=args.shrink)
            results.append(r)
            print(f"# {m} done: serial {r['serial']['whole']:.1f} s, workers {r['dask']['whole']:.1f} s, U@U.T {r['gemm']:.1f} s",
                  flush=True)
            if args.dir is None:
                shutil.rmtree(root / m, ignore_errors=True)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(table(results), end="")
    return 0 if all(r["identical"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
