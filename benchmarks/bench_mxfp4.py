"""Benchmark of reading one gpt-oss MXFP4 expert: absorb's dequantiser against the reference's loop.

    python benchmarks/bench_mxfp4.py [--d 2880] [--n 2880] [--repeat 3] [--seed 0]

One expert's ``gate_up_proj`` of gpt-oss-20b's shape ([2I, H/32, 16] bytes and [2I, H/32] scales,
H = I = 2880 by default) is dequantised two ways in this process, and the results are compared
(they must be identical, bit for bit):

* ``baseline``: the reference's procedure (transformers' ``convert_moe_packed_tensors``, in numpy):
  look up the low nibbles into the even columns and the high nibbles into the odd ones, then
  ``ldexp`` by ``scale − 127``, in float64;
* ``absorb``: :func:`absorb.io.gpt_oss.dequantize_mxfp4` (one lookup of both nibbles of a byte and
  a float32 product by a table of powers of two).

Printed: the best of ``--repeat`` times of each, and their ratio (baseline / absorb: above 1 means
absorb is faster). Then the time to read one whole expert block (gate, up, down and biases)
through :func:`absorb.io.open_checkpoint` from a one-layer synthetic checkpoint written by
``examples/make_checkpoint.py``, as a multiple of the ``absorb`` dequantisation time.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from absorb.io.gpt_oss import FP4_VALUES, dequantize_mxfp4  # noqa: E402
from absorb.io.safetensors import open_checkpoint  # noqa: E402


def baseline(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    rows, groups, b = blocks.shape
    out = np.empty((rows * groups, 2 * b))
    flat = blocks.reshape(rows * groups, b)
    out[:, 0::2] = FP4_VALUES[flat & 0x0F]
    out[:, 1::2] = FP4_VALUES[flat >> 4]
    out = np.ldexp(out, scales.reshape(-1, 1).astype(np.int32) - 127)
    return out.reshape(rows, groups * 2 * b)


def best(fn, repeat: int) -> tuple[float, np.ndarray]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=2880)
    ap.add_argument("--n", type=int, default=2880)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    blocks = rng.integers(0, 256, size=(2 * args.n, args.d // 32, 16), dtype=np.uint8)
    scales = rng.integers(120, 130, size=(2 * args.n, args.d // 32), dtype=np.uint8)
    t_base, ref = best(lambda: baseline(blocks, scales), args.repeat)
    t_abs, got = best(lambda: dequantize_mxfp4(blocks, scales), args.repeat)
    assert np.array_equal(ref, got.astype(np.float64)), "the two dequantisations differ"
    print(f"gate_up of one expert, [{2 * args.n}, {args.d}]: baseline {t_base:.3f} s, absorb {t_abs:.3f} s, "
          f"ratio {t_base / t_abs:.2f}x (identical values, {got.dtype})")
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "examples" / "make_checkpoint.py")
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    with tempfile.TemporaryDirectory() as tmp:
        tensors, cfg, extra = mc.make("gpt_oss", d=args.d, n=args.n, layers=1, seed=args.seed)
        mc.write(Path(tmp), tensors, cfg, extra=extra)
        ck = open_checkpoint(tmp)
        ck.block(ck.specs[0])  # imports and caches out of the timing
        t_read, _ = best(lambda: ck.block(ck.specs[1]), args.repeat)
    print(f"one expert block read through open_checkpoint: {t_read:.3f} s = {t_read / t_abs:.2f}x one gate_up dequantisation")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
