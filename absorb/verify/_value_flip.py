"""The flip witness of a gated block whose value activation is affine, h(z) = c_h·z + k, rebuilt in
f's own class (the checker's own construction; it shares no code with the producer).

Where ``c_h·b_up + k`` rounds in float64, the normalised block (h(z) = z, ``c_h·W_up``,
``fl(c_h·b_up + k)``) is not f, and its flip is no witness for f. The flip of S built on f itself
is: negate the gate rows, gate biases and down columns of S, keep f's value rows, biases and h.
With g(a) + g(−a) = c for the gate, each flipped unit w·g(a)·h(v) becomes −w·g(−a)·h(v) =
w·g(a)·h(v) − c·w·h(v), so g − f = −(M + c·c_h·D_S U_S) x − c·D_S(c_h·b_S + k) + (b'_down − b_down)
exactly: the linear part is the normalised block's (c_h·W_up is exact — the condition for this
witness), and the constant part is what the rounded b'_down misses of the exact shift, re-derived
here in rationals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from absorb.model.block import Block
from absorb.verify._at_zero import _f0_lower
from absorb.verify._numerics import EXACT_WORK, moved_output_bias


def value_flip_block(f: Block, S: Sequence[int], c: Fraction, ch: Fraction, k: Fraction) -> tuple[Block, float, float]:
    """(the flip of S of the gated f with value activation h(z) = ch·z + k, in f's own class; a
    rigorous upper bound e of |b'_down − b_down − c·D_S(ch·b_S + k)|_∞ — inf past
    :data:`EXACT_WORK` or with a non-finite entry, where nothing is proved; e over a rigorous
    lower bound of |f(0)|_∞, the constant error in the tolerance's measure)."""
    idx = np.asarray(list(S), dtype=int)
    G, Dn = f.W_gate.copy(), f.W_down.copy()
    G[idx] *= -1
    Dn[:, idx] *= -1
    bg = None if f.b_gate is None else f.b_gate.copy()
    if bg is not None:
        bg[idx] *= -1
    b_S = np.zeros(idx.size) if f.b_up is None else np.asarray(f.b_up, dtype=np.float64)[idx]
    new = moved_output_bias(f.b_down, f.W_down, idx, c * ch, b_S, k / ch) if idx.size else f.b_down
    g = f.replace(W_gate=G, b_gate=bg, W_down=Dn, b_down=new, skip=np.zeros((f.d, f.d)), name=f.name + "'")
    e = _constant_error(f, g, idx, c, ch, k)
    lo = _f0_lower(f) if 0 < e < math.inf else 0.0  # (f(0) = W_down (g(b_gate) ⊙ h(b_up)) + b_down)
    return g, e, 0.0 if e == 0 else math.nextafter(e / lo, math.inf) if lo > 0 else math.inf  # (rounded up)


def _constant_error(f: Block, g: Block, idx: np.ndarray, c: Fraction, ch: Fraction, k: Fraction) -> float:
    d = f.d
    if not idx.size:
        return 0.0
    b_S = np.zeros(idx.size) if f.b_up is None else np.asarray(f.b_up, dtype=np.float64)[idx]
    bd = np.zeros(d) if f.b_down is None else np.asarray(f.b_down, dtype=np.float64)
    bn = np.zeros(d) if g.b_down is None else np.asarray(g.b_down, dtype=np.float64)
    Ds = np.asarray(f.W_down, dtype=np.float64)[:, idx]
    if d * idx.size > EXACT_WORK or not all(np.all(np.isfinite(a)) for a in (b_S, bd, bn, Ds)):
        return math.inf
    h = [ch * Fraction(float(v)) + k for v in b_S]
    worst = Fraction(0)
    for r in range(d):
        shift = c * sum((Fraction(float(w)) * v for w, v in zip(Ds[r], h)), Fraction(0))
        worst = max(worst, abs(Fraction(float(bn[r])) - Fraction(float(bd[r])) - shift))
    out = float(worst)
    return out if Fraction(out) >= worst else math.nextafter(out, math.inf)
