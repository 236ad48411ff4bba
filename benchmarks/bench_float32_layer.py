"""End to end on one 7B-sized float32 layer stored in an ``.npz``: ``absorb check`` against one
float64 ``U @ U.T`` of the same layer (docs/performance-scale.md, "float32 layer").

    python benchmarks/bench_float32_layer.py [--d 4096 --n 11008] [--dir DIR]

Writes a generic and a planted (|S| = 5120, ``D[:,S] = −pinv(U[S])`` computed in float64, then
stored in float32) GELU layer, times one float64 ``U @ U.T`` in this process (best of 3), then
runs ``absorb check -q`` on each file as a child process (the planted one at the default
tolerance, at ``--tol 1e-6`` and at ``--tol 1e-4``) and prints wall seconds, the ratio to the product, the child's
peak resident memory (its own ``VmHWM``, Linux) and the verdict.
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


def _check(path: Path, *extra: str) -> tuple[float, float, str]:
    """Wall seconds, the child's peak resident MiB (its VmHWM, Linux) and the verdict."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), "-q", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t
    kib = next((int(ln.split()[1]) for ln in proc.stderr.splitlines() if ln.startswith("VmHWM ")), 0)
    verdict = next((ln.split(":", 1)[1].strip() for ln in proc.stdout.splitlines() if ln.startswith("verdict:")), f"exit {proc.returncode}")
    return wall, kib / 1024, verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--n", type=int, default=11008)
    ap.add_argument("--dir", type=Path, default=None, help="keep the files here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.dir or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        generic, planted = _layers(out, args.d, args.n)
        gemm = _gemm(generic)
        stored = 2 * args.d * args.n * 4 / 2**20
        print(f"d = {args.d}, n = {args.n}; stored float32 layer {stored:.0f} MiB; one float64 U @ U.T: {gemm:.2f} s\n")
        print("| file | options | wall s (× U@U.T) | peak MiB (× stored) | verdict |")
        print("|---|---|---|---|---|")
        for path, extra in ((generic, ()), (planted, ()), (planted, ("--tol", "1e-6")), (planted, ("--tol", "1e-4"))):
            wall, peak, verdict = _check(path, *extra)
            print(f"| {path.stem} | {' '.join(extra) or 'default'} | {wall:.2f} ({wall / gemm:.2f}×) | "
                  f"{peak:.0f} ({peak / stored:.1f}×) | {verdict} |")


if __name__ == "__main__":
    main()
