"""The finder's embedding of the index-set problem into an integer lattice, and the index sets
read back off its reduced vectors (:mod:`absorb.search.lattice`, whose docstring states the
construction): the rows of K and t rotated onto K's numerical row space and scaled to
integers of at most ``_BITS`` bits."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

#: bits of the scaled rows' largest entry, at most: float64 keeps 53, and a set planted in
#: float64 is exact to ~1 unit there (the tail is then mostly the rounding of A, a few units)
_BITS = 53
#: ... and at least _BITS_PER_UNIT·(n + 1) bits in all (r rows): a density n/(r·bits) of
#: about 1/4, below which more bits only slow LLL down (d = 4, n = 128: 32 bits a row
#: instead of 53)
_BITS_PER_UNIT = 4
_MIN_BITS = 16
#: the ±1 coordinates' scale c: 2 halves the weight of the tail's rounding noise against the
#: ±c part (d = 3, n = 128, seeds 0–2: all found by BKZ-20 with c = 2; with c = 1 one
#: needed BKZ-30 and one was missed)
_C = 2

def _rows(K: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """K and t rotated onto K's numerical row space: ``(W_rᵀK, W_rᵀt)`` (r×n, r)."""
    W, s, _ = np.linalg.svd(K, full_matrices=False)
    r = int(np.sum(s > s[0] * 1e-10)) if s.size and s[0] > 0 else 0
    if r == K.shape[0]:  # full row rank: K as it is (a rotation would add its own rounding)
        return K, t
    return W[:, :r].T @ K, W[:, :r].T @ t


def embedding(K: np.ndarray, t: np.ndarray, bits: int | None = None, c: int | None = None) -> list[list[int]] | None:
    """The (n+1)×(n+1+r) integer basis of the module docstring (Python ints: exact); None when
    the scaled rows leave float64's range (entries near 2^-1074 against a target near 1: the
    scale that brings them to ``bits`` bits overflows)."""
    bits = _BITS if bits is None else bits
    c = _C if c is None else c
    R, tr = _rows(K, t)
    r, n = R.shape
    bits = min(bits, max(_MIN_BITS, -(-_BITS_PER_UNIT * (n + 1) // max(r, 1))))
    top = float(np.max(np.abs(R))) if R.size else 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        scale = math.ldexp(1.0, bits) / top if top > 0 else 1.0
        RS, ts = np.rint(R * scale), np.rint(tr * scale)
    if not (math.isfinite(scale) and np.all(np.isfinite(RS)) and np.all(np.isfinite(ts))):
        return None
    A = [[int(x) for x in row] for row in RS]
    a = [int(x) for x in ts]
    basis = []
    for i in range(n):
        row = [0] * (n + 1) + [2 * A[j][i] for j in range(r)]
        row[i] = 2 * c
        basis.append(row)
    basis.append([c] * (n + 1) + [2 * x for x in a])
    return basis


def candidates(vectors: Iterator[Sequence[int]], n: int, c: int | None = None) -> Iterator[tuple[int, ...]]:
    """The sets read off reduced vectors of the form ±(c(2b − 1) | −c | tail)."""
    c = _C if c is None else c
    for v in vectors:
        last = int(v[n])
        if abs(last) != c or any(abs(int(x)) != c for x in v[:n]):
            continue
        sign = -1 if last > 0 else 1  # the set's own vector has −c here
        yield tuple(i for i in range(n) if sign * int(v[i]) > 0)
