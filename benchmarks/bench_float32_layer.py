"""End to end on one 7B-sized float32 layer stored in an ``.npz``: ``absorb check`` against one
float64 ``U @ U.T`` of the same layer (docs/performance-scale.md, "float32 layer").

    python benchmarks/bench_float32_layer.py [--d 4096 --n 11008] [--dir DIR [--reuse]] [--rows generic,planted-1e-6]
        [--threads 1] [--source OTHER_CHECKOUT] [--repeat 3]

Writes a generic and a planted (|S| = 5120, ``D[:,S] = −pinv(U[S])`` computed in float64, then
stored in float32) GELU layer, times one float64 ``U @ U.T`` in this process (best of 3), then
runs ``absorb check -q`` on each file as a child process (the planted one at the default
tolerance, at ``--tol 1e-6`` and at ``--tol 1e-4``) and prints wall seconds, the ratio to the product, the child's
CPU seconds (user + system, all threads: less sensitive to a busy machine than the wall time), its
peak resident memory (its own ``VmHWM``, Linux) and the verdict. The children may write bytecode, as an
installed package has it.

``--threads N`` runs the product and every child with N BLAS threads (``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``; the product then runs in a child too, so that the setting
holds): with N = 1 the CPU seconds are the work done, without the busy-waiting of idle BLAS
threads, which on a shared machine is the steadiest measure. ``--source DIR`` adds, for each row,
the same run from another checkout of this package (its root directory), right after this one:
a before/after comparison under the same load. ``--repeat N`` runs each row N times from each
checkout, the checkouts' order alternating, and prints the least wall and CPU seconds of the N
(the runs least disturbed by other work on a shared machine), the largest peak, and every verdict
seen.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _layers(out: Path, d: int, n: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    U = rng.standard_normal((n, d), dtype=np.float32) / np.float32(np.sqrt(d))
    D = rng.standard_normal((d, n), dtype=np.float32) / np.float32(np.sqrt(n))
    generic = out / "generic.npz"
    np.savez(generic, W_up=U, W_down=D, activation=np.array("gelu"))
    S = np.random.default_rng(1).choice(n, min(n, d + d // 4), replace=False)
    D[:, S] = (-np.linalg.pinv(U[S].astype(np.float64))).astype(np.float32)
    planted = out / "planted.npz"
    np.savez(planted, W_up=U, W_down=D, activation=np.array("gelu"))
    return generic, planted


def _gemm(path: Path) -> float:
    """Best of 3 float64 ``U @ U.T`` for the layer's W_up (its arrays are freed on return,
    so that the children below do not inherit this process's memory)."""
    with np.load(path) as z:
        U64 = z["W_up"].astype(np.float64)
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        U64 @ U64.T
        best = min(best, time.perf_counter() - t)
    return best


_GEMM_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[2])
from bench_float32_layer import _gemm
from pathlib import Path
print(_gemm(Path(sys.argv[1])))
"""


def _threads_env(threads: int | None) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if threads is not None:
        for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[key] = str(threads)
    return env


def _gemm_with(path: Path, threads: int | None) -> float:
    """:func:`_gemm`, in a child with ``threads`` BLAS threads when given (set before numpy loads)."""
    if threads is None:
        return _gemm(path)
    out = subprocess.run([sys.executable, "-c", _GEMM_CHILD, str(path), str(Path(__file__).parent)], capture_output=True,
                         text=True, env=_threads_env(threads), check=True)
    return float(out.stdout.strip().splitlines()[-1])


_CHILD = """
import atexit, runpy, sys
def _peak():  # the child's own high-water mark (ru_maxrss would include the parent's pages at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            sys.stderr.write("VmHWM " + line.split()[1] + "\\n")
atexit.register(_peak)
sys.argv = ["absorb", "check"] + sys.argv[1:]
runpy.run_module("absorb", run_name="__main__", alter_sys=True)
"""


def _check(path: Path, *extra: str, threads: int | None = None, source: Path | None = None) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system, all threads), the child's peak resident MiB
    (its VmHWM, Linux) and the verdict. The child may write bytecode (as an installed
    package has it; ``PYTHONDONTWRITEBYTECODE`` is dropped from its environment); it runs
    with ``threads`` BLAS threads when given, and imports absorb from ``source`` when given."""
    import resource

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    env = _threads_env(threads)
    t, c = time.perf_counter(), cpu()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path.resolve()), "-q", *extra], capture_output=True, text=True, env=env,
                          cwd=source)
    wall, used = time.perf_counter() - t, cpu() - c
    kib = next((int(ln.split()[1]) for ln in proc.stderr.splitlines() if ln.startswith("VmHWM ")), 0)
    verdict = next((ln.split(":", 1)[1].strip() for ln in proc.stdout.splitlines() if ln.startswith("verdict:")), f"exit {proc.returncode}")
    return wall, used, kib / 1024, verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--n", type=int, default=11008)
    ap.add_argument("--dir", type=Path, default=None, help="keep the files here (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="with --dir: use generic.npz and planted.npz already there "
                    "(written by an earlier run with the same --d and --n) instead of writing them again")
    ap.add_argument("--rows", default="all", help="which rows to run: all, or a comma-separated subset of "
                    "generic, planted, planted-1e-6, planted-1e-4")
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads for the product and every child "
                    "(1: CPU seconds without idle threads' busy-waiting)")
    ap.add_argument("--source", type=Path, default=None, help="also run each row from this other checkout's root "
                    "(before/after under the same load)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each row from each checkout, their order alternating; "
                    "the least wall and CPU seconds are printed")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.dir or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        generic, planted = out / "generic.npz", out / "planted.npz"
        if not (args.reuse and args.dir and generic.exists() and planted.exists()):
            generic, planted = _layers(out, args.d, args.n)
        gemm = _gemm_with(generic, args.threads)
        stored = 2 * args.d * args.n * 4 / 2**20
        threads = "" if args.threads is None else f" ({args.threads} BLAS thread{'s' if args.threads > 1 else ''})"
        print(f"d = {args.d}, n = {args.n}; stored float32 layer {stored:.0f} MiB; one float64 U @ U.T{threads}: {gemm:.2f} s\n")
        print("| file | options | code | wall s (× U@U.T) | CPU s | peak MiB (× stored) | verdict |")
        print("|---|---|---|---|---|---|---|")
        rows = {"generic": (generic, ()), "planted": (planted, ()), "planted-1e-6": (planted, ("--tol", "1e-6")),
                "planted-1e-4": (planted, ("--tol", "1e-4"))}
        chosen = list(rows) if args.rows == "all" else [r.strip() for r in args.rows.split(",")]
        sources = [("this checkout", None)] + ([] if args.source is None else [(str(args.source), args.source.resolve())])
        for path, extra in (rows[r] for r in chosen):
            runs: dict[str, list[tuple[float, float, float, str]]] = {name: [] for name, _ in sources}
            for i in range(args.repeat):
                for name, source in (sources if i % 2 == 0 else sources[::-1]):
                    runs[name].append(_check(path, *extra, threads=args.threads, source=source))
            for name, _ in sources:
                wall, used = min(r[0] for r in runs[name]), min(r[1] for r in runs[name])
                peak, verdict = max(r[2] for r in runs[name]), ", ".join(sorted({r[3] for r in runs[name]}))
                print(f"| {path.stem} | {' '.join(extra) or 'default'} | {name} | {wall:.2f} ({wall / gemm:.2f}×) | {used:.2f} | "
                      f"{peak:.0f} ({peak / stored:.1f}×) | {verdict} |", flush=True)


if __name__ == "__main__":
    main()
