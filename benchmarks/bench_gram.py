"""Benchmark of the degree-2 / gated skeletons' Gram route and linear route (docs/results/skeleton2.md).

    python benchmarks/bench_gram.py [--d 64 --n 256] [--gated] [--seed 0] [--model-scale] [--large] [--linear]
    python benchmarks/bench_gram.py --d 4096 --n 16384 --model-scale   # Persimmon / Nemotron ReLU² size
    python benchmarks/bench_gram.py --d 4096 --n 16384 --model-scale --linear   # the linear route instead
    python benchmarks/bench_gram.py --d 4096 --n 16384 --model-scale --end-to-end   # decide + certificate + verify

Seeded Gaussian blocks (U, D ~ N(0, 1), or N(0, 1/d) with ``--model-scale``, the scale of a
trained model's weights; biases N(0, 1), skip = I). Every time is printed next to a baseline
measured in the same process (the machine is shared, so absolute seconds are noise).

* n ≤ GRAM_MAX_N (the small route, unless ``--large``): baseline one float64 ``G @ G`` of the
  n×n Gram matrix (n³ multiply-adds); phases: the producer's Ĝ and entrywise E, its λ_min lower
  bound (eigvalsh + Cholesky + residual), the checker's Sylvester-inertia proof of μ.
* n > GRAM_MAX_N or ``--large`` (the row-block route, absorb.engine._gram / absorb.verify._gram):
  baseline one float64 GEMM ``U[:1024] @ U.T`` (1024·n·d multiply-adds; the route's GEMMs do
  about n²d/1024·(2 ungated, 5 gated) of these); phases: the producer's route (one pass of row
  blocks, then Gershgorin or Rump's Cholesky criterion), the checker's re-derivation of μ. Peak
  resident memory of each phase (VmHWM, reset before it through /proc/self/clear_refs) is
  printed in units of one n×n float64 array.
* ``--linear``: the linear route on the same block (the index-set engine on (L) alone: up rows
  (2αc_i + β)·u_i, or b_gate,i u_i + b_up,i g_i, down columns w_i, target −M), same baseline GEMM;
  phases: the producer's route (building the rows and the engine, timeout 600 s), the checker's
  re-check of its proof (:func:`absorb.verify._skeleton2.check_linear`: its own rows, the
  rounding slack, the recorded dual matrix); peak resident memory of each phase in GiB and in
  units of the stored float64 weights (W_up and W_down, plus W_gate).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from absorb import Block, get_activation
from absorb.engine import skeleton2 as sk2
from absorb.verify import _gram as vgram
from absorb.verify import _skeleton2 as vsk2


def _hwm_reset() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _hwm() -> float:
    """VmHWM in bytes (0 where /proc is absent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


def _baseline(blk: Block) -> float:
    """Seconds of the same-process baseline every ratio is against: U[:1024] @ U.T in float64."""
    U = np.asarray(blk.W_up, dtype=np.float64)
    t = time.perf_counter()
    _ = U[:1024] @ U.T
    return time.perf_counter() - t


def _large(blk: Block, gated: bool) -> None:
    n, d = blk.n, blk.d
    t_base = _baseline(blk)
    nn = 8.0 * n * n
    base_mem = _hwm()
    print(f"d = {d}, n = {n}, {'gated' if gated else 'ReLU²'} (row-block route): baseline U[:1024] @ U.T {t_base:.3f} s; "
          f"one n×n float64 = {nn / 2**30:.2f} GiB; resident before: {base_mem / 2**30:.2f} GiB; load {os.getloadavg()[0]:.2f}")
    reset = _hwm_reset()
    t = time.perf_counter()
    res = sk2.gram_route((sk2.gram_rows_gated if gated else sk2.gram_rows_skeleton2)(blk), blk.M, 1e-9)
    t_route = time.perf_counter() - t
    peak = _hwm()
    how = None if res is None else res.reason.split("rigorous float bound: ")[1].split(")")[0]
    print(f"  decide (producer) {t_route:8.2f} s  ({t_route / t_base:7.1f}× baseline)  -> "
          f"{None if res is None else (res.status.value, f'{res.bound:.3g}', how)}")
    print(f"    peak resident {peak / 2**30:.2f} GiB = {(peak - base_mem) / nn:+.2f} n² float64 over the inputs"
          + ("" if reset else " (VmHWM not resettable here: the process's peak)"))
    if res is None:
        return
    mu = res.certificate["mu"]
    reset = _hwm_reset()
    t = time.perf_counter()
    bound, why = vgram.mu_bound(mu, blk.M, lambda m: vgram.large_positive_definite(blk, m))
    t_check = time.perf_counter() - t
    peak = _hwm()
    print(f"  verify (checker)  {t_check:8.2f} s  ({t_check / t_base:7.1f}× baseline, {t_check / t_route:.2f}× the producer)"
          f"  -> bound {bound} {why}")
    print(f"    peak resident {peak / 2**30:.2f} GiB = {(peak - base_mem) / nn:+.2f} n² float64 over the inputs")
    print(f"  μ = {float(Fraction(mu)):.4g}")


def _linear(blk: Block, gated: bool) -> None:
    from types import SimpleNamespace

    from absorb.certificate.build import _trim_search_certificate
    from absorb.engine.gated_skeleton import gated_linear_columns
    from absorb.verify._gated_relu import linear_rows_gated
    from absorb.verify._report import Report, _Ctx, _Reject

    n, d = blk.n, blk.d
    t_base = _baseline(blk)
    ww = 8.0 * n * d * (3 if gated else 2)
    base_mem = _hwm()
    print(f"d = {d}, n = {n}, {'gated' if gated else 'ReLU²'} (linear route): baseline U[:1024] @ U.T {t_base:.3f} s; "
          f"stored float64 weights {ww / 2**30:.2f} GiB; resident before: {base_mem / 2**30:.2f} GiB; load {os.getloadavg()[0]:.2f}")
    ctx = SimpleNamespace(tol=1e-9, timeout=600.0, method="auto", seed=0, search_progress=None)
    q = sk2.Quadratic(Fraction(1), Fraction(0))
    reset = _hwm_reset()
    t = time.perf_counter()
    res = sk2.linear_route(*(gated_linear_columns(blk) if gated else sk2.linear_columns(blk, q)), ctx)
    t_route = time.perf_counter() - t
    peak = _hwm()
    print(f"  decide (producer) {t_route:8.2f} s  ({t_route / t_base:7.1f}× baseline)  -> "
          f"{None if res is None else (res.status.value, res.reason.split(':')[0], f'{res.bound:.3g}' if res.bound else res.S)}")
    print(f"    peak resident {peak / 2**30:.2f} GiB = {peak / ww:.2f}× the stored weights"
          + ("" if reset else " (VmHWM not resettable here: the process's peak)"))
    if res is None or res.status.value != "infeasible":
        return
    b = {"search": {"status": "infeasible", "bound": res.bound, "elapsed": res.elapsed,
                    "certificate": _trim_search_certificate(res.certificate)}}
    reset = _hwm_reset()
    t = time.perf_counter()
    vctx = _Ctx(report=Report(), tol=1e-9, seed=0)
    try:
        vsk2.check_linear(vctx, "block", b, blk, *(linear_rows_gated(blk) if gated else vsk2.linear_rows(blk, q.alpha, q.beta)))
        ok = not vctx.report.failures and not vctx.report.not_rechecked
    except _Reject:
        ok = False
    t_check = time.perf_counter() - t
    peak = _hwm()
    print(f"  verify (checker)  {t_check:8.2f} s  ({t_check / t_base:7.1f}× baseline, {t_check / t_route:.2f}× the producer)"
          f"  -> {'accepted' if ok else [f.claim for f in vctx.report.failures + vctx.report.not_rechecked]}")
    print(f"    peak resident {peak / 2**30:.2f} GiB = {peak / ww:.2f}× the stored weights")


def _end_to_end(blk: Block) -> None:
    """``decide`` (every result tried, hypotheses included), ``build_certificate`` and
    ``verify_certificate`` on the block as given (its own dtype), against the same baseline."""
    from absorb.certificate import build_certificate
    from absorb.engine import decide
    from absorb.verify import checker

    t_base = _baseline(blk)
    print(f"d = {blk.d}, n = {blk.n}, {'gated' if blk.gated else 'ReLU²'}, {np.asarray(blk.W_up).dtype} weights (end to end): "
          f"baseline U[:1024] @ U.T {t_base:.3f} s; load {os.getloadavg()[0]:.2f}")
    reset = _hwm_reset()
    t = time.perf_counter()
    dec = decide(blk, timeout=600)
    t_dec = time.perf_counter() - t
    bd = dec.blocks[0]
    print(f"  decide            {t_dec:8.2f} s  ({t_dec / t_base:7.1f}× baseline)  -> {bd.verdict.value}, {bd.theorem.value}, "
          f"{None if bd.search is None else bd.search.method}")
    t = time.perf_counter()
    doc = build_certificate(dec, blk, seed=0).to_json()
    t_cert = time.perf_counter() - t
    t = time.perf_counter()
    rep = checker.verify_certificate(doc, blk)
    t_ver = time.perf_counter() - t
    print(f"  certificate       {t_cert:8.2f} s  ({t_cert / t_base:7.1f}× baseline)")
    print(f"  verify            {t_ver:8.2f} s  ({t_ver / t_base:7.1f}× baseline)  -> accepted {rep.accepted}, "
          f"complete {not rep.not_rechecked}")
    print(f"  peak resident {_hwm() / 2**30:.2f} GiB" + ("" if reset else " (the process's peak)"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--gated", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model-scale", action="store_true", help="weights N(0, 1/d) instead of N(0, 1)")
    ap.add_argument("--large", action="store_true", help="the row-block route even for n ≤ GRAM_MAX_N")
    ap.add_argument("--linear", action="store_true", help="the linear route ((L) alone, the index-set engine) instead")
    ap.add_argument("--end-to-end", action="store_true", help="decide, certificate and verify on float32 weights, skip = I")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    d, n = a.d, a.n
    sc = 1 / np.sqrt(d) if a.model_scale else 1.0
    U, D = sc * rng.standard_normal((n, d)), sc * rng.standard_normal((d, n))
    if a.gated:
        blk = Block(U, D, get_activation("silu"), W_gate=sc * rng.standard_normal((n, d)), b_gate=rng.standard_normal(n),
                    b_up=rng.standard_normal(n))
        build, check = sk2.gram_gated, vsk2.gram_gated
    else:
        blk = Block(U, D, get_activation("relu2"), b_up=rng.standard_normal(n))
        build, check = sk2.gram_skeleton2, vsk2.gram_s2
    if a.end_to_end:  # a checkpoint's float32 weights, through Block(...) (float64 below its size limit)
        f32 = lambda v: None if v is None else np.asarray(v, dtype=np.float32)  # noqa: E731
        e2e = Block(f32(blk.W_up), f32(blk.W_down), blk.activation, W_gate=f32(blk.W_gate), b_gate=blk.b_gate,
                    b_up=blk.b_up, skip=np.eye(d))
        del U, D, blk
        _end_to_end(e2e)
        return
    blk = blk.float64()
    del U, D
    if a.linear:
        _linear(blk, a.gated)
        return
    if a.large or n > sk2.GRAM_MAX_N:
        sk2.GRAM_MAX_N = 0  # the row-block route at any n
        _large(blk, a.gated)
        return
    t = time.perf_counter()
    gram = build(blk)
    t_build = time.perf_counter() - t
    assert gram is not None
    t = time.perf_counter()
    _ = gram[0] @ gram[0]
    t_base = time.perf_counter() - t
    t = time.perf_counter()
    res = sk2.gram_route(gram, blk.M, 1e-9)
    t_route = time.perf_counter() - t
    print(f"d = {d}, n = {n}, {'gated' if a.gated else 'ReLU²'}: baseline G@G {t_base:.3f} s")
    print(f"  build Ĝ, E   {t_build:8.3f} s  ({t_build / t_base:6.2f}× baseline)")
    print(f"  gram route   {t_route:8.3f} s  ({t_route / t_base:6.2f}× baseline)  -> "
          f"{None if res is None else (res.status.value, res.bound)}")
    if res is None:
        return
    mu = Fraction(res.certificate["mu"])
    lam = float(np.linalg.eigvalsh(gram[0])[0])
    print(f"  μ = {float(mu):.4g}, computed λ_min = {lam:.4g} (μ/λ = {float(mu) / lam:.3f})")
    t = time.perf_counter()
    bound, why = vsk2.gram_bound(check(blk), res.certificate["mu"], blk.M)
    t_check = time.perf_counter() - t
    print(f"  checker      {t_check:8.3f} s  ({t_check / t_base:6.2f}× baseline)  -> bound {bound} {why}")


if __name__ == "__main__":
    main()
