"""How finely float64 reads f: the screens for near residual-free blocks (:mod:`absorb.engine.tolerance`,
:mod:`absorb.engine._spare`) compare f with candidate blocks at sampled inputs in float64. Where f's terms cancel far
past its size — a unit with a huge bias whose constant the output bias cancels, a huge skip that units nearly undo —
float64 reads f only to within its rounding there, and a candidate within the tolerance can look far off. Such a
block's exact not_absorbable is withheld (:func:`float_blind`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from absorb.engine._nearly_affine import _EPS, _argument_rounding, _value_rounding
from absorb.engine._spare import _SPARE_MAX, _bias_reach
from absorb.model.block import Block

_FAR = 256.0
"""A term of f this many times f's scale at x cancels against the others there."""
_SHARE = 0.125
"""The part of the tolerance that rounding may take before the screens are blind."""


def float_blind(blk: Block, tol: float, seed: int) -> str | None:
    """Why float64 cannot read f to the tolerance at sampled inputs of size 1 and beyond, or None.

    At each sampled x, every term of f at least ``_FAR`` times f's scale den = |f(x)|∞ + |x|∞ + |f(0)|∞ — the skip's
    |M|·|x|, a unit's |w_i|∞·|h_i|, the output bias — cancels against the others, and its rounding stays in f(x): ε
    times the term, and for a unit what its value moves when its pre-activation moves by its own rounding
    ε·(|u_i|·|x| + |b_i|) (σ's slope there, read by a difference). Where those roundings exceed an eighth of τ·den, a
    construction within the tolerance may measure far off, so the sampled screens cannot rule one out: the answer is
    unknown, naming the input. Terms of f's own size are left out — their rounding is σ's conditioning, which the
    screens' comparisons share — and the estimate leaves out the summation's growth with n: it errs towards reading
    f as finer than it is."""
    n, d = blk.n, blk.d
    if not blk.has_bias and n * d > _SPARE_MAX:
        return None  # (bias-free: f(0) = W_down·σ(0) is read later by what needs it; a pass over a large f spared)
    f0 = blk.f0_inf
    if not math.isfinite(f0 / tol):  # (|f(0)|∞ is part of the tolerance's measure: past float64 nothing is read)
        what = ("is not a number in float64 (a unit's value overflows where its weight is 0)" if math.isnan(f0) else
                f"is {f0:.3g}, so τ·|f(0)|∞ is past float64's range" if math.isfinite(f0) else "is past float64's range")
        return (f"Unknown: f(0) {what}, and |f(0)|∞ is part of the tolerance's measure "
                "(|f(x) − g(x)|∞ ≤ τ(|f(x)|∞ + |x|∞ + |f(0)|∞)): f without its skip, or any block near f, may be "
                "within the tolerance at every input float64 holds, which it cannot read; the exact argument rules out "
                "an exact residual-free block only.")
    if n * d > _SPARE_MAX:
        return None
    rng = np.random.default_rng(seed + 31)
    dirs = rng.standard_normal((int(np.clip(1e7 / (n * d), 4, 32)), d))  # (fewer where f is costly: cancellation shows at most x)
    scales = [1.0, 1e2, 1e4, 1e6, 1e8] + _bias_reach(blk)  # (not nearer 0: where f(0) = 0 its scale there shrinks with x)
    X = np.vstack([dirs * t for t in scales])
    with np.errstate(all="ignore"):
        F = blk(X)
        den = np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1) + f0
        ok = np.isfinite(den) & (den > 0)
        if not np.any(ok):
            return None
        X, den = X[ok], den[ok]
        A = np.abs(X)
        wmax = np.max(np.abs(np.asarray(blk.W_down, dtype=np.float64)), axis=0)
        H, moved = _units(blk, X, A)
        size = np.abs(H) * wmax
        far = (size > _FAR * den[:, None]) & np.isfinite(size)
        rho = np.sum(np.where(far, _EPS * size + moved * wmax, 0.0), axis=1)
        skip = np.max(A @ np.abs(np.asarray(blk.M, dtype=np.float64)).T, axis=1)
        rho += np.where(skip > _FAR * den, _EPS * skip, 0.0)
        if blk.b_down is not None:
            bd = float(np.max(np.abs(np.asarray(blk.b_down, dtype=np.float64))))
            rho += np.where(bd > _FAR * den, _EPS * bd, 0.0)
        r = rho / den
        r[~np.isfinite(r)] = 0.0  # (a unit's value overflows there: f's own overflow, not its rounding)
    i = int(np.argmax(r))
    if not r[i] > _SHARE * tol:
        return None
    big = float(max(np.max(np.where(np.isfinite(size[i]), size[i], 0.0)) if n else 0.0, skip[i]))
    return (f"Unknown: f's terms cancel past what float64 resolves: at an input with |x|∞ = {np.max(A[i]):.2e} a term "
            f"of f reaches {big:.2e} while |f(x)|∞ + |x|∞ + |f(0)|∞ = {den[i]:.2e}, so float64 reads f there only to "
            f"within {r[i]:.1e} of that scale (more than {_SHARE:g} of the tolerance {tol:g}); the sampled screens for "
            "near residual-free blocks cannot see to the tolerance, and the exact argument rules out an exact "
            "residual-free block only.")


def _units(blk: Block, X: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hidden layer at the rows of X, and what each unit's value moves when its pre-activations move by their
    rounding (``A`` = |X|)."""

    def pre(R: np.ndarray | None, b: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        R = np.asarray(R, dtype=np.float64)
        b = None if b is None else np.asarray(b, dtype=np.float64)
        Z = X @ R.T if b is None else X @ R.T + b
        return Z, _argument_rounding(A, R, b)

    def moved(fn: Callable[[np.ndarray], np.ndarray], Z: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return fn(Z), _value_rounding(fn, Z, e)

    Z, e = pre(blk.W_up, blk.b_up)
    if not blk.gated:
        return moved(blk.activation, Z, e)
    P, ep = pre(blk.W_gate, blk.b_gate)
    g, dg = moved(blk.activation, P, ep)
    v, dv = moved(blk.value_activation, Z, e) if not blk.value_identity else (Z, e)
    return g * v, dg * np.abs(v) + np.abs(g) * dv
