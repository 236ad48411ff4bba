"""Build the absorbing residual-free block from an index set, and check it independently.

The construction (theory.md §2, result 5, and its extensions):

* ungated σ with σ(z) − σ(−z) = c·z: negate the rows u_i (and b_up,i) for i ∈ S; then
  B'(x) = B(x) − c·D_S(U_S x + b_S). If D_S U_S = −M/c this is f(x) − c·D_S b_S, and
  ``b_down ← b_down + c·D_S b_S`` removes the constant.
* gated g with g(z) + g(−z) = c (sigmoid-gated GLU): negate the gate rows (and b_gate,i)
  and the down columns w_i for i ∈ S; then B'(x) = B(x) − c·D_S(V_S x + b_S) with V the
  value projection, and the same condition and bias fix.

The check evaluates ``f`` and ``B'`` on seeded random inputs at several scales, and — when
the sizes allow — confirms ``D_S U_S = T`` in exact rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.engine.verdict import Witness
from absorb.model.block import Block
from absorb.search import relative_residual

_SCALES = (1e-2, 1.0, 1e2)
_EXACT_MAX_WORK = 200_000  # |S|·d² multiply-adds in Fractions


def flip_block(block: Block, S: tuple[int, ...], c: Fraction) -> Block:
    """The residual-free block obtained by flipping the hidden units in ``S``."""
    idx = np.asarray(S, dtype=int)
    cf = float(c)
    D = block.W_down
    if block.gated:
        W_gate = block.W_gate.copy()
        W_gate[idx] *= -1
        b_gate = None if block.b_gate is None else block.b_gate.copy()
        if b_gate is not None:
            b_gate[idx] *= -1
        W_down = D.copy()
        W_down[:, idx] *= -1
        new = dict(W_gate=W_gate, b_gate=b_gate, W_down=W_down)
    else:
        W_up = block.W_up.copy()
        W_up[idx] *= -1
        b_up = None if block.b_up is None else block.b_up.copy()
        if b_up is not None:
            b_up[idx] *= -1
        new = dict(W_up=W_up, b_up=b_up)
    if block.b_up is not None and idx.size:
        shift = cf * (D[:, idx] @ block.b_up[idx])
        new["b_down"] = shift if block.b_down is None else block.b_down + shift
    return block.replace(**new, skip=np.zeros((block.d, block.d)), name=block.name + "'")


def exact_match(U: np.ndarray, D: np.ndarray, T_num: np.ndarray, c: Fraction, S: tuple[int, ...]) -> bool | None:
    """Whether D_S U_S = −M/c exactly (``T_num`` = M), in rationals; None if too large."""
    d = U.shape[1]
    if len(S) * d * d > _EXACT_MAX_WORK:
        return None
    Uf = [[Fraction(float(v)) for v in U[i]] for i in S]
    Df = [[Fraction(float(D[r, i])) for i in S] for r in range(d)]
    for r in range(d):
        for col in range(d):
            acc = sum((Df[r][k] * Uf[k][col] for k in range(len(S))), Fraction(0))
            if acc * c != -Fraction(float(T_num[r, col])):
                return False
    return True


def evaluation_error(f: "Block | object", g: "Block | object", d: int, *, seed: int, m: int = 48) -> tuple[float, int]:
    """max over seeded random inputs x of |f(x) − g(x)|_∞ / (|f(x)|_∞ + |x|_∞ + tiny)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for scale in _SCALES:
        X = rng.standard_normal((m, d)) * scale
        fx, gx = f(X), g(X)
        denom = np.abs(fx).max(axis=1) + np.abs(X).max(axis=1) + 1e-300
        worst = max(worst, float((np.abs(fx - gx).max(axis=1) / denom).max()))
    return worst, m * len(_SCALES)


def eval_threshold(tol: float, n: int) -> float:
    """Accepted evaluation error: the tolerance plus float64 rounding of a width-n block."""
    return 10.0 * tol + 1e3 * np.finfo(float).eps * np.sqrt(n + 1)


def check_flip_witness(block: Block, S: tuple[int, ...], c: Fraction, *, tol: float, seed: int) -> tuple[Witness, bool]:
    """Construct the flipped block for ``S`` and check it two independent ways."""
    U = block.W_up
    T = -block.M / float(c)
    res = relative_residual(U, block.W_down, T, S)
    wblock = flip_block(block, S, c)
    err, m = evaluation_error(block, wblock, block.d, seed=seed)
    exact = exact_match(U, block.W_down, block.M, c, S)
    how = ("negate the gate rows and down-projection columns" if block.gated else "negate the up-projection rows") + " in S; keep the rest"
    w = Witness(S=tuple(int(i) for i in S), block=wblock, residual=res, eval_error=err, n_inputs=m, exact=exact, description=how)
    ok = res <= tol and err <= eval_threshold(tol, block.n)
    return w, ok
