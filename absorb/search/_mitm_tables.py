"""Exact integer tables of the meet-in-the-middle backend (:mod:`.mitm`): quantised
columns, sorted subset sums built by merges, circular range gathers, and the float filter
of matched pairs.  Pure functions of their arguments: the tuning constants stay in
:mod:`.mitm`, which re-exports these names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import numpy as np


def _quantise(x: np.ndarray, Q: int) -> np.ndarray:
    """Integers ≡ round(x·2^Q) (mod 2^Q), in [0, 2^Q): at most ½ unit from x·2^Q mod 2^Q.

    ``x·2^Q`` and ``fmod`` are exact in binary floating point and ``rint`` rounds once, so
    the only error is the rounding to the nearest integer (no ``frac(x)``, which rounds for
    tiny negative x)."""
    r = np.fmod(np.rint(np.asarray(x, dtype=np.float64) * 2.0**Q), 2.0**Q)
    return r.astype(np.int64) & np.int64((1 << Q) - 1)


def _subset_sums_mod(q: np.ndarray, Q: int) -> np.ndarray:
    """All 2^k subset sums of the integers ``q`` modulo 2^Q (index = mask), by doubling."""
    out = np.zeros(1, dtype=np.int64)
    top = np.int64((1 << Q) - 1)
    for x in q:
        out = np.concatenate([out, (out + x) & top])
    return out


def _sorted_subset_sums(q: np.ndarray, Q: int, low_bits: int) -> np.ndarray:
    """Sorted keys ``(s << low_bits) | mask`` of all 2^k subset sums s = Σ_{i∈mask} q_i mod 2^Q.

    Built without a full sort: adding q_i to a sorted list and reducing modulo 2^Q rotates
    it into two sorted runs, and a stable sort (timsort, for int64) merges the three runs
    in linear time.  Needs ``Q + low_bits ≤ 61`` and ``len(q) ≤ low_bits``.
    """
    assert Q + low_bits <= 61 and len(q) <= low_bits
    if len(q) <= 10:  # small: one sort costs less than the Python loop of merges
        keys = (_subset_sums_mod(q, Q) << low_bits) | np.arange(1 << len(q), dtype=np.int64)
        keys.sort()
        return keys
    keys = np.zeros(1, dtype=np.int64)
    wrap = np.int64(1 << (Q + low_bits))
    for i, x in enumerate(q):
        shifted = keys + np.int64((int(x) << low_bits) | (1 << i))  # bit i is free: | is +
        cut = int(np.searchsorted(shifted, wrap))
        merged = np.concatenate([keys, shifted[cut:] - wrap, shifted[:cut]])
        del shifted
        merged.sort(kind="stable")
        keys = merged
    return keys


def _ranges(beg: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """The concatenated index ranges [beg_i, beg_i + cnt_i), in order (cnt_i ≥ 0)."""
    return np.repeat(beg - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()), dtype=np.int64)


def _circular_gather(vals: np.ndarray, lo: int, hi: int, offsets: np.ndarray,
                     top: np.int64) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, g) with ``(vals[i] + offsets[g]) mod 2^Q`` in the circular interval
    [lo, hi) mod 2^Q (``top`` = 2^Q − 1; lo ≡ hi means all of them, from lo on), as
    (indices into the sorted ``vals``, offset indices), ordered by g and then by value.

    For each g it is one circular range of ``vals``: up to two index ranges."""
    a = (np.int64(lo) - offsets) & top
    b = (np.int64(hi) - offsets) & top
    ia = np.searchsorted(vals, a)
    ib = np.searchsorted(vals, b)
    inner = a < b
    beg = np.stack([ia, np.zeros_like(ia)], axis=1).ravel()
    end = np.stack([np.where(inner, ib, vals.size), np.where(inner, 0, ib)], axis=1).ravel()
    cnt = end - beg
    return _ranges(beg, cnt), np.repeat(np.arange(2 * offsets.size, dtype=np.int64) >> 1, cnt)


def _bits(masks: np.ndarray, k: int) -> np.ndarray:
    return ((masks[:, None] >> np.arange(k, dtype=np.int64)) & 1).astype(np.float64)


class _InlinePool:
    """The slice of ``ThreadPoolExecutor`` used above, running each call at once in this
    thread (for a single unit of work, or ``threads=1``)."""

    def __enter__(self) -> _InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        fut: Future = Future()
        fut.set_result(fn(*args))
        return fut


def _filter(
    left: np.ndarray, right: np.ndarray, N1: int, N2: int, GF1: np.ndarray, GF2: np.ndarray,
    h: np.ndarray, W: np.ndarray, usable: np.ndarray, P: np.ndarray, F1: np.ndarray,
    F2: np.ndarray,
) -> tuple[list[tuple[int, ...]] | None, str]:
    """Filter matched pairs on every usable coordinate and read off the pivot bits.

    Each test is a necessary condition with its own rigorous window W_j, so dropping a pair
    here never drops a set within the search radius.
    """
    bl = _bits(left, N1)
    br = _bits(right, N2)
    v = (h[None, :] - bl @ GF1.T) - br @ GF2.T  # c × r, error ≤ δ_j per coordinate
    frac = np.abs(v - np.round(v))
    ok = np.all(frac[:, usable] <= W[usable], axis=1)
    out: list[tuple[int, ...]] = []
    for a in np.nonzero(ok)[0]:
        opts = [[k for k in (0, 1) if abs(v[a, j] - k) <= W[j]] for j in range(v.shape[1])]
        if any(not o for o in opts):
            continue
        combos = math.prod(len(o) for o in opts)
        if combos > 4096:
            return None, f"{combos} pivot-bit combinations for one pair: windows too wide"
        base = [int(i) for i in F1[bl[a] > 0]] + [int(i) for i in F2[br[a] > 0]]
        for choice in np.ndindex(*[len(o) for o in opts]):
            piv = [int(P[j]) for j, c in enumerate(choice) if opts[j][c] == 1]
            out.append(tuple(sorted(base + piv)))
    return out, ""
