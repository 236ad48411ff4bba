"""The checker's reading of how finely float64 evaluates f where its terms cancel: each term of f at least 2⁸ times
|f(x)|∞ + |x|∞ + |f(0)|∞ at one of this checker's own inputs (the skip, a unit's output, the output bias) is
evaluated again with every parameter it reads moved by a tiny random relative amount; what it moves, scaled back to
float64's unit roundoff, is the rounding it leaves in f(x). Where those add up to a sizable part of the tolerance, the
sampled screens cannot see f to it: a not_absorbable is then not re-checked (exit 4), never rejected."""

from __future__ import annotations

from typing import Any

import numpy as np

_U = 2.0**-53  # float64's unit roundoff
_STEP = 2.0**-30  # the relative move of each parameter (far above the roundoff, far below any of f's own scales)


def float_resolution(block: Any, tol: float, seed: int) -> str | None:
    """Why float64 reads f too coarsely for the tolerance at this checker's inputs, or None. Only terms that cancel
    count — the skip, a unit's output (its down column's largest entry times its value) or the output bias at least
    2⁸ times |f(x)|∞ + |x|∞ + |f(0)|∞ — each by what it moves when every parameter it reads moves by a random ±2⁻³⁰ of
    itself, scaled back to float64's roundoff (the largest of three draws); their sum is held against τ/4 of that
    scale."""
    d, n = block.d, block.n
    if n * d > 1 << 22:
        return None
    rng = np.random.default_rng(seed + 6151)
    X = _inputs(block, rng)
    with np.errstate(all="ignore"):
        f0 = float(np.max(np.abs(block(np.zeros((1, d))))))
        if not np.isfinite(f0 / tol):
            return (f"|f(0)|∞ = {f0} over the tolerance is past float64's range, and |f(0)|∞ is part of the tolerance's "
                    "measure: this checker cannot read f to the tolerance, so the exact not_absorbable is not re-checked "
                    "against it")
        den = np.max(np.abs(block(X)), axis=1) + np.max(np.abs(X), axis=1) + f0
        keep = np.isfinite(den) & (den > 0)
        X, den = X[keep], den[keep]
        if not len(X):
            return None
        W = np.max(np.abs(np.asarray(block.W_down, dtype=np.float64)), axis=0)
        H = _hidden(block, X, None)
        out = np.abs(H) * W
        M = np.asarray(block.M, dtype=np.float64)
        skip = np.max(np.abs(X @ M.T), axis=1)
        bd = 0.0 if block.b_down is None else float(np.max(np.abs(np.asarray(block.b_down, dtype=np.float64))))
        moved = np.zeros(len(X))
        for _ in range(3):
            units = np.abs(_hidden(block, X, rng) - H) * W + _STEP * out  # (the value's move, and the column's)
            units = np.sum(np.where(np.isfinite(out) & (out >= 256 * den[:, None]), units, 0.0), axis=1)
            S = np.max(np.abs(X @ (M * rng.choice((-_STEP, _STEP), size=M.shape)).T), axis=1)
            moved = np.maximum(moved, units + np.where(skip >= 256 * den, S, 0.0)
                               + np.where(bd >= 256 * den, _STEP * bd, 0.0))
        q = np.where(np.isfinite(moved), moved * (_U / _STEP) / den, 0.0)
    i = int(np.argmax(q))
    if not q[i] > tol / 4:
        return None
    return (f"float64 reads f only to within {q[i]:.1e} of |f(x)|∞ + |x|∞ + |f(0)|∞ at an input of size "
            f"{float(np.max(np.abs(X[i]))):.2e} (f's terms cancel there): this checker's sampled screens cannot see to "
            "the tolerance, so the exact not_absorbable is not re-checked against it")


def _hidden(block: Any, X: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """The hidden layer at the rows of X; with ``rng``, from rows and biases each moved by a random ±2⁻³⁰ of itself."""

    def move(a: Any) -> Any:
        if a is None:
            return None
        a = np.asarray(a, dtype=np.float64)
        return a if rng is None else a * (1.0 + rng.choice((-_STEP, _STEP), size=a.shape))

    def pre(R: Any, b: Any) -> np.ndarray:
        Z = X @ move(R).T
        return Z if b is None else Z + move(b)

    Z = pre(block.W_up, block.b_up)
    if block.W_gate is None:
        return block.activation(Z)
    v = Z if block.value_activation is None else block.value_activation(Z)
    return block.activation(pre(block.W_gate, block.b_gate)) * v


def _inputs(block: Any, rng: np.random.Generator) -> np.ndarray:
    """Random directions at scales 10 … 10⁷ and, for units whose bias is large against their row, 10 and 10³ times
    where they switch."""
    d = block.d
    dirs = rng.standard_normal((int(np.clip(1e7 / max(block.n * d, 1), 4, 24)), d))  # (fewer for a large f)
    scales = [10.0, 1e3, 1e5, 1e7]  # (not nearer 0: where f(0) = 0 its scale there shrinks with x)
    for R, b in ((block.W_up, block.b_up), (block.W_gate, block.b_gate)):
        if R is None or b is None:
            continue
        with np.errstate(all="ignore"):
            size = np.hypot.reduce(np.asarray(R, dtype=np.float64), axis=1)
            far = np.abs(np.asarray(b, dtype=np.float64))[size > 0] / size[size > 0]
        far = far[np.isfinite(far)]
        if len(far) and float(np.max(far)) > 1e6:
            scales += [10 * float(np.max(far)), 1e3 * float(np.max(far))]
    return np.vstack([dirs * t for t in scales])


__all__ = ["float_resolution"]
