"""Lattice reduction backend: a *finder* of index sets in the narrow regime (n > d²).

Why: for n > d² the problem ``K b = t`` (K is m×n, m = d², b ∈ {0,1}^n) is a
multi-dimensional subset sum whose coefficients are real numbers known to ~50 bits.  With r
equations of ~50 bits each and n unknowns its *density* n / (50·r) is low once d ≥ 3 (d = 3,
n = 128: 0.28), and there lattice reduction finds a planted solution as an unusually short
lattice vector (Lagarias–Odlyzko; Coster et al.), where meet-in-the-middle would need 2^{n/4}
sums per side.  For d = 2 (4 equations) the density is near 0.5 at n = 96 and reduction
needs large BKZ blocks: the backend then mostly spends its budget.

The embedding (Coster, Joux, LaMacchia, Odlyzko, Schnorr, Stern: the ±1 form, which needs
half the density of the 0/1 one when |S| ≈ n/2).  With ``R`` the r×n rows of ``K`` rotated
onto its row space (an SVD; dependent rows only add noise) and an integer scale ``σ``,
``A = round(σ R)``, ``a = round(σ W_rᵀ t)``, the basis rows are

    row i (i < n):  2c·e_i        | 0 | 2·A[:, i]
    row n:          c·(1, …, 1)   | c | 2·a

so a set S gives Σ_{i∈S} row_i − row_n = (c(2b − 1), −c, 2(A b − a)): entries ±c, then a
tail of a few units (the rounding of A and a, and the float error of the planted set).  Its
norm is about c·√(n+1), far below the lattice's typical shortest vector at low density.
LLL, then BKZ with growing block sizes (fpylll; block sizes 10, 20, 30, 40, …, with BKZ 2.0
preprocessing and linear pruning), reduce the basis; after each reduction every
basis vector of the form (±c, …, ±c | ±c | ·) is read back as a set S and handed to
:func:`~absorb.rigorous.relative_residual` (the check every finder makes; the dispatcher
re-checks S again on the caller's arrays).  ``σ`` is chosen so that the largest |R| entry is
2^bits with bits = 53, the precision a set planted in float64 holds, or fewer when r rows
of fewer bits already give 4(n + 1) bits in all (more only slow LLL down).  A set whose
residual is near ``tol`` = 1e-9 leaves a tail of ~10^6 units and is not found this way;
MITM and the MILP finders cover those.

Soundness: this backend only ever answers ``found`` (a verified S) or ``unknown``: a
reduction that finds nothing proves nothing.

Optional dependency: ``fpylll`` (LLL and BKZ, ``pip install absorb[lattice]``); without it
``python-flint``'s LLL is used (no BKZ: fewer sets found); without both the backend answers
``unknown`` saying so, and the ``auto`` portfolio skips it.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Iterator, Sequence

import numpy as np

from absorb.rigorous import relative_residual

from ._common import khatri_rao
from ._types import SearchResult, SearchStatus

__all__ = ["LATTICE_MAX_N", "lattice_engine", "lattice_seconds", "solve_lattice"]

#: the lattice has dimension n + 1 + r; past this many units a reduction is out of budget
LATTICE_MAX_N = 400
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
#: BKZ block sizes tried in turn after LLL (each with at most _TOURS tours)
_BLOCKS = (10, 20, 30, 40, 46, 52, 58)
_TOURS = 4
#: a BKZ block size costs about this many times the previous one (measured 30 → 40: 3.75)
_GROWTH = 4.0
#: LLL's measured cost (seconds) ≈ _LLL_RATE · dim³ for the rows here (fpylll on a loaded
#: 2-core machine: d = 2, n = 64 ≈ 0.3–0.5 s; d = 3, n = 128 ≈ 1.4–4 s); a rough gate
_LLL_RATE = 1.5e-6


def lattice_engine() -> str | None:
    """The reduction library this backend will use: ``"fpylll"``, ``"flint"`` or ``None``
    (imported, not only looked up: fpylll installed without cysignals fails to import)."""
    for name in ("fpylll", "flint"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return name
    return None


def lattice_seconds(n: int, r: int) -> float:
    """Rough seconds of the first (LLL) reduction of the (n + 1 + r)-dimensional basis."""
    return _LLL_RATE * float(n + 1 + r) ** 3


def _rows(K: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """K and t rotated onto K's numerical row space: ``(W_rᵀK, W_rᵀt)`` (r×n, r)."""
    W, s, _ = np.linalg.svd(K, full_matrices=False)
    r = int(np.sum(s > s[0] * 1e-10)) if s.size and s[0] > 0 else 0
    if r == K.shape[0]:  # full row rank: K as it is (a rotation would add its own rounding)
        return K, t
    return W[:, :r].T @ K, W[:, :r].T @ t


def embedding(K: np.ndarray, t: np.ndarray, bits: int | None = None, c: int | None = None) -> list[list[int]]:
    """The (n+1)×(n+1+r) integer basis of the module docstring (Python ints: exact)."""
    bits = _BITS if bits is None else bits
    c = _C if c is None else c
    R, tr = _rows(K, t)
    r, n = R.shape
    bits = min(bits, max(_MIN_BITS, -(-_BITS_PER_UNIT * (n + 1) // max(r, 1))))
    top = float(np.max(np.abs(R))) if R.size else 0.0
    scale = math.ldexp(1.0, bits) / top if top > 0 else 1.0
    A = [[int(x) for x in row] for row in np.rint(R * scale)]
    a = [int(x) for x in np.rint(tr * scale)]
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


def _reduce(engine: str, basis: list[list[int]], deadline: float) -> Iterator[tuple[str, list[list[int]]]]:
    """The reduced basis vectors after LLL and after each BKZ block size (fpylll only), until
    ``deadline`` (perf_counter seconds): ``(step, vectors)``.  LLL itself cannot be cut short
    (the portfolio gates it by :func:`lattice_seconds`); each BKZ call gets the time left."""
    if engine == "flint":
        import flint

        R = flint.fmpz_mat(basis).lll()
        yield "LLL", [[int(R[i, j]) for j in range(R.ncols())] for i in range(R.nrows())]
        return
    from fpylll import BKZ, LLL, IntegerMatrix, Pruning
    from fpylll.fplll.bkz_param import Strategy

    # fpylll's wheels lack fplll's strategy file: BKZ 2.0 preprocessing and linear pruning
    # by hand (d = 2, n = 96 planted: BKZ-40 reached in 41 s instead of 85 s, loaded machine)
    strategies = [Strategy(b, preprocessing_block_sizes=[b - 16] if b > 26 else [],
                           pruning_parameters=[Pruning.LinearPruningParams(b, b // 2)] if b > 20 else [])
                  for b in range(max(_BLOCKS) + 1)]

    M = IntegerMatrix.from_matrix(basis)
    LLL.reduction(M)
    yield "LLL", [list(M[i]) for i in range(M.nrows)]
    last = 0.0  # seconds of the previous block size
    for block in _BLOCKS:
        left = deadline - time.perf_counter()
        # fplll checks max_time only between tours: a block whose first tour is expected
        # (from the previous block, ×_GROWTH) to outlast the budget is not started
        if block > M.nrows or left <= 0.01 or _GROWTH * last / _TOURS > left:
            return
        start = time.perf_counter()
        param = BKZ.Param(block_size=block, strategies=strategies, max_loops=_TOURS, max_time=left,
                          flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS | BKZ.MAX_TIME)
        try:
            BKZ.reduction(M, param)
        except RuntimeError:
            # fplll gives up in double precision on some large bases ("infinite loop in
            # babai"); once more in long double, else stop with what LLL and the previous
            # blocks gave (the basis is still a basis of the same lattice)
            try:
                BKZ.reduction(M, param, float_type="ld")
            except RuntimeError:
                return
        last = time.perf_counter() - start
        yield f"BKZ-{block}", [list(M[i]) for i in range(M.nrows)]


def solve_lattice(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0,
) -> SearchResult:
    """Reduce the embedding of ``K b = vec(T)`` and verify every set read off it:
    ``found`` (float64 residual ≤ tol) or ``unknown``.  ``seed`` is unused (the reduction is
    deterministic)."""
    t0 = time.perf_counter()

    def unknown(reason: str, **cert: object) -> SearchResult:
        return SearchResult(SearchStatus.UNKNOWN, "lattice", reason, elapsed=time.perf_counter() - t0,
                            certificate=dict(cert) or None)

    engine = lattice_engine()
    if engine is None:
        return unknown("neither fpylll nor python-flint is installed (pip install absorb[lattice])")
    n = U.shape[0]
    if n > LATTICE_MAX_N:
        return unknown(f"n = {n} > {LATTICE_MAX_N}: a reduction of that dimension is out of reach")
    K = khatri_rao(U, D)
    lll = lattice_seconds(n, K.shape[0])
    if lll > 2 * timeout:  # LLL cannot be cut short
        return unknown(f"LLL of the {n + 1}-row basis is expected to take ~{lll:.0f}s, over twice "
                       f"the budget {timeout:g}s")
    t = T.ravel().astype(np.float64)
    if not (np.all(np.isfinite(K)) and np.any(K)):
        return unknown("K is zero or not finite: nothing to embed")
    basis = embedding(K, t)
    tried: set[tuple[int, ...]] = set()
    done = "nothing"
    for done, vectors in _reduce(engine, basis, t0 + timeout):
        for S in candidates(iter(vectors), n):
            if S in tried or not S:
                continue
            tried.add(S)
            res = relative_residual(U, D, T, S)
            if res <= tol:
                return SearchResult(SearchStatus.FOUND, "lattice", f"{engine} {done} reduced basis, "
                                    "re-verified in float64", S=S, residual=res,
                                    elapsed=time.perf_counter() - t0,
                                    certificate={"engine": engine, "reduction": done})
    return unknown(f"{engine} reduction up to {done} found no set within tol "
                   f"({len(tried)} candidate sets failed verification; budget {timeout:g}s)",
                   engine=engine, reduction=done, failed_candidates=len(tried))
