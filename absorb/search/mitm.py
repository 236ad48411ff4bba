"""Meet-in-the-middle over pivoted partial sums: the exact engine of the narrow regime.

Why: for n > d² the problem ``K b = t`` (K is m×n, m = d²) is a multi-dimensional subset
sum; no polynomial method is known (docs/mathematics.md §4) and the best exact approach is
meet-in-the-middle.  Three ideas make it cheaper than the textbook 2^{n/2}:

1. **Pivoting removes r = rank K variables.**  Choose r well-conditioned pivot columns P of
   K (QR with column pivoting) and ``M = K_P^+`` (r×m).  Then ``g_i = M a_i`` is ≈ the unit
   vector e_j for the j-th pivot, so for a solution S the value
   ``v_j = h_j − Σ_{i∈S∖P} g_ij`` (with ``h = M t``) must be within a tiny radius ρ_j of the
   pivot bit ``[P_j ∈ S] ∈ {0,1}``: the pivot bits are *determined* by the free bits.
   Matching the free part modulo 1 leaves only N = n − r free variables, so each side has
   2^{N/2} elements instead of 2^{n/2} (d = 2, n = 48: 2^22 instead of 2^24; d = 4, n = 48:
   2^16 instead of 2^24).
2. **Match on one coordinate in exact integers, never sort.**  On the matching coordinate
   j* (the tightest window), every free column and h are quantised once to integers modulo
   2^Q (:func:`_quantise`, ≤ ½ unit each); all partial sums are then exact.  Adding a column
   to a sorted list of sums modulo 2^Q only rotates it, so each side's sorted table is built
   by linear-time merges (:func:`_sorted_subset_sums`), with the side's mask packed into
   the low bits of each int64 key; each chunk of the streamed side is one rotation of a
   single sorted table.
3. **Never hold a side whole; search region by region, in cache.**  Each side is a sorted
   low table (≤ 2^20 sums) plus the subset sums of its remaining (high) columns, one
   offset per chunk.  A stored side of more than 2^16 sums is cut by value into 2^p
   regions; each region's stored sums are gathered from the low table (one circular range
   per offset) and merged, and the queries that land in the region are gathered the same
   way, so memory stays at a few tables of ≤ 2^20 sums whatever n is.  Each query's keys
   are found by two lookups in a prefix count over small cells of the region (a binary
   search into a 256 MiB table cost ~240 ns per query).  A second coordinate, also in
   exact integers, discards almost all matched pairs before the float filter checks every
   coordinate, reads off the pivot bits, and the few survivors are checked exactly.
   (d = 4, n = 64 finishes in about 1 s and d = 3, n = 64 in about 24 s on 2 cores, in
   150 MB; with one whole sorted stored side and a binary search per query it took 115 s
   and 1 GB.)

Soundness (why a complete run proves infeasibility).  ``M`` is any float matrix; all that is
used is the identity ``M(K b − t) = Σ_{i∈S} g_i − h`` over exact reals and
``|M_j (K b − t)| ≤ ‖M_j‖₂ ‖K b − t‖₂``.  If ``‖K b − t‖ ≤ ε'`` then, with
``η_j ≥ Σ_k |g_{j,P_k} − δ_jk|`` bounding the pivot columns' deviation from unit vectors,

    |v_j − [P_j ∈ S]| ≤ ‖M_j‖·ε' + η_j =: ρ_j        for every j.

Every float quantity (g, h, and the float partial sums of the filter) is computed with an
explicit Higham bound δ_j (γ_k · Σ|terms|, see the code; valid because U, D, T are in the
range of ``magnitudes_ok``, which the plan checks), and a pair is kept whenever
the computed circular distance is ≤ W_j = ρ_j + δ_j (plus, on the two integer
coordinates, ½ unit per quantised term).  Regions, chunks and cells only partition those
exact integer comparisons: each streamed sum lands in exactly one region, whose stored
slice holds every stored sum within the window of it, and the cells scanned for a query
hold every key within the window (a test checks the matched-pair counts against one whole
sorted table).  Hence every
set with ‖K b − t‖ ≤ ε' is among the candidates, and every other set has some j with
``|M_j(K b − t)| > ‖M_j‖ε'``, i.e. ``‖K b − t‖ > ε'``.  We take ε' = 4·tol·‖T‖_F (upper
bound), so the reported ``bound`` is ≥ 4·tol unless an exactly-checked candidate comes
closer.  Candidates are verified by their float64 residual (``found``) or bounded over exact
rationals; a budget overrun or a memory cap gives ``unknown``.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass

import numpy as np

from absorb.rigorous import SAFE_EXPONENT, UNIT_ROUNDOFF, frobenius_bounds, gamma, magnitudes_ok

from ._common import classify_candidates, khatri_rao
from ._mitm_tables import (
    _circular_gather,
    _filter,
    _InlinePool,
    _quantise,
    _ranges,
    _sorted_subset_sums,
    _subset_sums_mod,
)
from ._types import SearchResult, SearchStatus

#: the search radius is SEARCH_FACTOR · tol · ‖T‖_F: more candidates, a larger bound
SEARCH_FACTOR = 4.0
#: memory cap (bytes) for the tables a run builds; past it the backend answers ``unknown``
MEMORY_CAP = 2 * 1024**3
#: bytes per sum of a sorted low table while it is built (sums, keys, merges' scratch)
_BYTES_PER_ELEMENT = 40
#: each side's sorted low table holds at most 2^_LOW_BITS sums (the rest of the side's
#: columns give one offset per chunk or region run)
_LOW_BITS = 20
#: expected pairs past which the run is refused: matched on one coordinate, and left after
#: the second coordinate's integer test (the rest go through the float filter, in batches)
_MAX_MATCHED = 4.0e9
_MAX_PAIRS = 5.0e7
_FILTER_BATCH = 1 << 17
#: candidate pairs (query, stored key in a scanned cell) expanded at a time
_MAX_CANDIDATES = 1 << 22
#: matched pairs handled per second and worker thread (measured: found among the scanned
#: cells, compared, tested on the second coordinate)
_PAIR_RATE = 5.0e6
#: cost model used to refuse hopeless runs early (seconds per element, measured on 2 cores):
#: building the stored side (one sorted table, one thread; or region by region, a gather
#: and a sort of each region, per worker thread) and one streamed query (per worker
#: thread); at most two workers are counted
_SEC_PER_STORED = 15e-9
_SEC_PER_REGION_SUM = 60e-9
_SEC_PER_QUERY = 40e-9
#: stored slices of at most 2^_REGION_BITS keys (512 KiB) are searched at a time
_REGION_BITS = 16
#: a batch of chunks gathers about 2^_BATCH_BITS queries of a region at a time
_BATCH_BITS = 17
#: seconds between two progress notes
_NOTE_SECONDS = 0.25
#: at most 2^_CELL_BITS cells per stored slice in the prefix count that finds each query's keys
_CELL_BITS = 19
_u = UNIT_ROUNDOFF


def _seconds(N1: int, N2: int, threads: int) -> float:
    """Estimated wall time of 2^N1 streamed queries against 2^N2 stored sums."""
    regions = N2 > _REGION_BITS
    workers = min(max(1, threads), 2) if regions else 1  # regions run in parallel
    stored = 2.0**N2 * (_SEC_PER_REGION_SUM / workers if regions else _SEC_PER_STORED)
    return stored + 2.0**N1 * _SEC_PER_QUERY / workers


#: m·min(m, n) past which :func:`_qr_pivoted` hands the factorisation to LAPACK (scipy), whose
#: import (about 0.25 s) is then small next to the numpy loop's cost
_LAPACK_QR_ENTRIES = 1 << 16


def _qr_pivoted(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Economic QR with column pivoting, ``A[:, piv] = Q R`` (Businger–Golub: at each step the
    remaining column of largest norm, the first on a tie, then a Householder reflection).

    In numpy: K has m = d² ≤ a few dozen rows, so the min(m, n) steps cost well under a
    millisecond, where importing scipy.linalg costs a quarter of a second. The norms are
    recomputed at each step (no downdating)."""
    A = np.array(A, dtype=np.float64)
    m, n = A.shape
    k_max = min(m, n)
    if m * k_max > _LAPACK_QR_ENTRIES:  # LAPACK's blocked geqp3: the loop below took 10 s at m = 4096, n = 256
        from scipy.linalg import qr

        Q, R, piv = qr(A, mode="economic", pivoting=True)
        return Q, R, piv
    piv = np.arange(n)
    reflections: list[tuple[int, np.ndarray, np.ndarray]] = []
    for k in range(k_max):
        rest = A[k:, k:]
        j = k + int(np.einsum("ij,ij->j", rest, rest).argmax())
        if j != k:
            A[:, [k, j]] = A[:, [j, k]]
            piv[k], piv[j] = piv[j], piv[k]
        v = A[k:, k].copy()
        vv = float(v @ v)
        if vv == 0.0:
            continue
        v[0] += math.copysign(math.sqrt(vv), v[0])
        bv = (2.0 / float(v @ v)) * v
        rest -= np.outer(bv, v @ rest)  # (a view: A is updated in place)
        reflections.append((k, v, bv))
    # Q's first k_max columns, H_0 ⋯ H_{k−1} [I; 0], applied from the last reflection back: an
    # m×k_max matrix throughout (an m×m one cost minutes for the (L) columns' m = d² = 4096)
    Q = np.eye(m, k_max)
    for k, v, bv in reversed(reflections):
        Q[k:] -= np.outer(bv, v @ Q[k:])
    return Q, np.triu(A[:k_max]), piv


def _rank_pivots(Kh: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Numerical rank r of K, its QR column pivots (well-conditioned pivots first) and a left
    inverse ``M`` (r×m) of the r pivot columns, ``R₁₁⁻¹ Q₁ᵀ`` from the same factorisation
    (a pseudo-inverse by SVD cost 5× as much at d = 4; the windows hold for any M)."""
    Q, R, piv = _qr_pivoted(Kh)
    diag = np.abs(np.diag(R))
    r = int(np.sum(diag > diag[0] * 1e-8))
    return r, piv, np.linalg.solve(R[:r, :r], Q[:, :r].T)


def _split(N: int) -> tuple[int, int]:
    """Sizes (streamed, stored) of the two sides for N free variables: balanced, since
    neither side is ever held whole (only tables of ≤ 2^_LOW_BITS sums are)."""
    return N - N // 2, N // 2


def _low_bits(Nside: int, p: int) -> int:
    """Bits of a side's sorted low table: small next to the side (2^−4 of it, so building it
    by merges is cheap), but its runs in each of the 2^p regions ≥ 2^6 long, ≤ 2^_LOW_BITS."""
    return min(Nside, _LOW_BITS, max(Nside - 4, p + 6))


def _table_bytes(L1: int, L2: int, H: int, H2: int) -> int:
    """Bytes of the tables a run holds throughout: each side's sorted low table (2^L1 and
    2^L2 keys, with their second-coordinate sums and the merges' scratch) and the offsets of
    its 2^H (2^H2) high-column subsets, on both coordinates.  (A batch of candidate pairs
    adds at most _MAX_CANDIDATES of each of a few index arrays.)"""
    return _BYTES_PER_ELEMENT * ((1 << L1) + (1 << L2)) + 2 * 8 * ((1 << H) + (1 << H2))


@dataclass
class MitmPlan:
    """What a run will match, computed once by :func:`mitm_plan`: the portfolio estimates a
    run's time from it (:meth:`seconds`) and hands it to :func:`solve_mitm`.

    ``why_not`` is a reason no run can work (then the other fields are unset); otherwise
    the pivots ``P`` (r of them), the free columns of the two sides ``F1``/``F2``, the
    transformed system ``G``, ``h`` with rigorous windows ``W`` (``usable``: the
    coordinates with ``W < 1/4``), the matching coordinate ``js`` and the second one
    ``j2``, and the number of pairs expected to match on ``js`` and on both."""

    why_not: str | None = None
    r: int = 0
    P: np.ndarray | None = None
    F1: np.ndarray | None = None
    F2: np.ndarray | None = None
    G: np.ndarray | None = None
    h: np.ndarray | None = None
    W: np.ndarray | None = None
    usable: np.ndarray | None = None
    js: int = 0
    j2: int | None = None
    eps_search: float = 0.0
    t_hi: float = 0.0
    expected_pairs: float = 0.0
    expected_left: float = 0.0

    @property
    def sides(self) -> tuple[int, int]:
        assert self.F1 is not None and self.F2 is not None
        return self.F1.size, self.F2.size

    def seconds(self, threads: int = 1) -> float:
        """Estimated wall time of a complete run (``inf`` when none can be made)."""
        if self.why_not is not None:
            return math.inf
        N1, N2 = self.sides
        return _seconds(N1, N2, threads) + self.expected_pairs / (_PAIR_RATE * min(max(1, threads), 2))


def mitm_plan(U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, seed: int = 0) -> MitmPlan:
    """Pivots, the transformed system ``g = M K``, ``h = M t`` with rigorous windows, the
    split of the free variables (``seed`` shuffles it) and the matching coordinates.

    ``M`` is any float matrix (here the pseudo-inverse of the pivot columns, from the QR); everything
    the windows rely on is bounded below (module docstring, *Soundness*)."""
    rng = np.random.default_rng(seed)
    if not magnitudes_ok(U, D, T):
        return MitmPlan(f"an entry of U, D or T is outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where the "
                        "windows' rounding bounds hold (find_index_set rescales by powers of two first)")
    Kh = khatri_rao(U, D)  # m × n floats
    if not np.any(Kh):
        return MitmPlan("K = 0: nothing to match (the dual bound decides this case)")
    t = T.ravel().astype(np.float64)
    m = t.size
    r, piv, M = _rank_pivots(Kh)  # M: r × m
    P = piv[:r]
    F = piv[r:].copy()
    rng.shuffle(F)
    N = F.size
    N1, N2 = _split(N)
    if N1 > 40:
        return MitmPlan(f"N = n − rank K = {N} free variables: 2^{N1} sums a side is out of reach")
    absM = np.abs(M)
    G = M @ Kh  # r × n
    # |ĝ − g| ≤ γ_{m+2}|M||K| (dot product) + |M|·u|K̂|(1+2u) (the products D_ji U_ik)
    eG = (2 * gamma(m + 3) + 3 * _u) * (absM @ np.abs(Kh)) * (1 + 2 * gamma(m + 3))
    h = M @ t
    eh = 2 * gamma(m + 3) * (absM @ np.abs(t))
    m_row = np.sqrt(np.sum(M * M, axis=1)) * (1 + 2 * gamma(m + 2))
    dev = np.abs(G[:, P] - np.eye(r)) + eG[:, P]
    eta = dev.sum(axis=1) * (1 + 2 * gamma(r + 1))

    _, t_hi = frobenius_bounds(T)
    eps_search = SEARCH_FACTOR * tol * t_hi
    rho = (m_row * eps_search + eta) * (1 + 4 * _u)
    F1, F2 = F[:N1], F[N1:]
    S1 = np.abs(G[:, F1]).sum(axis=1)
    S2 = np.abs(G[:, F2]).sum(axis=1)
    delta = 2 * (gamma(N1 + 1) * (S1 + np.abs(h)) + gamma(N2 + 1) * S2 + eG[:, F].sum(axis=1)
                 + eh + _u * (np.abs(h) + S1 + S2) + 8 * _u)
    W = (rho + delta) * (1 + 4 * _u)
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(G)) and np.all(np.isfinite(h))):
        return MitmPlan("the pivoted system overflows (K_P nearly singular)")
    usable = np.nonzero(W < 0.25)[0]
    if usable.size == 0:
        return MitmPlan(f"pivoted system too ill-conditioned: smallest window {W.min():.2e}")
    # Matching coordinate: the smallest window relative to how far the partial sums spread
    # modulo 1 (a coordinate on which the free columns barely move matches everything;
    # structured instances, e.g. rank-deficient planted ones, have such coordinates).
    spread = np.minimum(1.0, 4.0 * np.sqrt(np.sum(G[:, F] ** 2, axis=1)))
    score = W[usable] / np.maximum(spread[usable], 1e-300)
    order = np.argsort(score, kind="stable")
    # a second coordinate filters the matched pairs in integer arithmetic before _filter
    j2 = int(usable[order[1]]) if order.size > 1 else None
    expected_pairs = 2.0**N * min(1.0, 2.0 * float(score[order[0]]))
    expected_left = expected_pairs * (min(1.0, 2.0 * float(score[order[1]])) if j2 is not None else 1.0)
    if expected_left > _MAX_PAIRS or expected_pairs > _MAX_MATCHED:
        return MitmPlan(f"no selective matching coordinates: ~{expected_pairs:.1e} pairs expected, "
                        f"~{expected_left:.1e} after the second coordinate (caps {_MAX_MATCHED:.0e}, "
                        f"{_MAX_PAIRS:.0e})")
    return MitmPlan(None, r, P, F1, F2, G, h, W, usable, int(usable[order[0]]), j2, eps_search, t_hi,
                    expected_pairs, expected_left)


Unit = tuple[int, int, int]
Matched = tuple[int, "list[tuple[int, ...]] | None", str]


def _completed(match: Callable[[Unit], Matched], units: list[Unit], threads: int,
               progress: Callable[[str], None] | None, label: str) -> Generator[tuple[int, Matched], None, None]:
    """``(units done, match(unit))`` for each unit in order, ``threads`` at a time (at most
    two queued per worker; one unit: no pool, its start-up is the cost), with a progress
    note about every _NOTE_SECONDS.  Closing the iterator early cancels the queued units."""
    n_units = len(units)
    workers = max(1, min(threads, n_units))
    with ThreadPoolExecutor(max_workers=workers) if workers > 1 else _InlinePool() as pool:
        pending: deque = deque()
        nxt = 0
        done = 0
        next_note = time.perf_counter() + _NOTE_SECONDS
        try:
            while pending or nxt < n_units:
                while nxt < n_units and len(pending) < 2 * workers:
                    pending.append(pool.submit(match, units[nxt]))
                    nxt += 1
                result = pending.popleft().result()
                done += 1
                if result[1] is not None and progress is not None and time.perf_counter() > next_note:
                    next_note = time.perf_counter() + _NOTE_SECONDS
                    progress(f"meet-in-the-middle: {done}/{n_units} {label}")
                yield done, result
        finally:
            for f in pending:
                f.cancel()


def _unknown(reason: str, t0: float, **cert: object) -> SearchResult:
    return SearchResult(SearchStatus.UNKNOWN, "mitm", reason, elapsed=time.perf_counter() - t0,
                        certificate=dict(cert) or None)


def solve_mitm(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray,
    *,
    tol: float = 1e-9,
    timeout: float = 60.0,
    seed: int = 0,
    memory_cap: int = MEMORY_CAP,
    threads: int = 1,
    plan: MitmPlan | None = None,
    progress: Callable[[str], None] | None = None,
) -> SearchResult:
    """Pivoted meet-in-the-middle: ``found``, ``infeasible`` (complete run) or ``unknown``.

    ``seed`` shuffles the free variables between the two sides (it changes which solution
    is met first, never the verdict).  ``memory_cap`` bounds the tables it builds, in bytes;
    ``threads`` regions of the stored side run concurrently (numpy releases the GIL in its
    gathers, sorts and lookups).  ``plan`` is :func:`mitm_plan`'s result for the same
    ``U, D, T, tol, seed`` when the caller already has it.  ``progress`` (optional) is
    called about every quarter second with ``"meet-in-the-middle: <done>/<all> regions"``.
    """
    t0 = time.perf_counter()
    plan = plan or mitm_plan(U, D, T, tol=tol, seed=seed)
    if plan.why_not is not None:
        return _unknown(plan.why_not, t0)
    r, P, F1, F2, G, h, W, usable = plan.r, plan.P, plan.F1, plan.F2, plan.G, plan.h, plan.W, plan.usable
    js, j2, eps_search, t_hi, expected_pairs = plan.js, plan.j2, plan.eps_search, plan.t_hi, plan.expected_pairs
    N1, N2 = plan.sides
    N = N1 + N2
    est = plan.seconds(threads)
    if est > 1.5 * timeout:  # hand the budget to the finders of the portfolio instead
        return _unknown(f"estimated {est:.0f}s for 2^{N1}+2^{N2} partial sums and ~{expected_pairs:.1e} "
                        f"matched pairs (n − rank K = {N}) exceeds the time budget {timeout:g}s", t0)
    GF1, GF2 = G[:, F1], G[:, F2]

    # ---- quantise the matching coordinate: exact integer arithmetic modulo 2^Q ---------
    # The stored side is cut by value into 2^p regions of about 2^_REGION_BITS sums; each
    # side is a sorted low table (L bits) plus the subset sums of its high columns (one
    # offset per chunk), so neither side is ever held whole.  With p = 0 the stored side is
    # one sorted table.  Queries come in chunks of 2^L1, fewer when they match often
    # (≤ ~2^22 pairs per chunk).
    p = max(0, N2 - _REGION_BITS)
    L2 = _low_bits(N2, p) if p else N2
    per_query = expected_pairs / 2.0**N1
    L1 = min(_low_bits(N1, p), max(1, int(math.floor(22 - math.log2(max(per_query, 1e-300))))))
    H, H2 = N1 - L1, N2 - L2
    if H > 22:
        return _unknown(f"2^{H} chunks of 2^{L1} queries: pairs match too often "
                        f"(~{per_query:.1e} per query)", t0)
    if _table_bytes(L1, L2, H, H2) > memory_cap:
        return _unknown(f"N = n − rank K = {N} free variables: the tables need {_table_bytes(L1, L2, H, H2)} "
                        f"bytes, more than the memory cap of {memory_cap} bytes", t0)
    Q = 61 - max(N2, L1)
    # Each free column and h become integers ≡ round(x·2^Q) (mod 2^Q); a sum of k of them
    # differs from 2^Q·(the exact sum of the float x's) by ≤ k/2 units modulo 2^Q, and
    # nothing else is rounded.  The window adds those units (N + 1 terms) and 2 to spare.
    top = np.int64((1 << Q) - 1)

    def coordinate(j: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Coordinate j in integers: (window, stored low columns, the stored high columns'
        subset sums, negated streamed low columns (h − Σg ≡ h + Σ(−g)), h + the streamed
        high columns' subset sums: each chunk's start)."""
        q2 = _quantise(GF2[j], Q)
        neg = (-_quantise(GF1[j], Q)) & top
        starts = (_subset_sums_mod(neg[L1:], Q) + _quantise(h[j:j + 1], Q)[0]) & top
        return (int(math.ceil(W[j] * 2.0**Q)) + (N + 2) // 2 + 2, q2[:L2], _subset_sums_mod(q2[L2:], Q),
                neg[:L1], starts)

    wq, q2_low, high2, q1_low, starts = coordinate(js)
    if j2 is not None:  # tables indexed by mask (not sorted) for the second coordinate
        wq2, q2_low2, high2_2, q1_low2, starts2 = coordinate(j2)
        r_low2 = _subset_sums_mod(q2_low2, Q)
        low_tab2 = _subset_sums_mod(q1_low2, Q)
    mask2 = np.int64((1 << N2) - 1)
    low2_mask = np.int64((1 << L2) - 1)
    loc_mask = np.int64((1 << L1) - 1)
    low_tab = _sorted_subset_sums(q1_low, Q, L1)  # streamed side: keys (value << L1) | mask
    low_val = low_tab >> L1
    if p == 0:  # the whole stored side, sorted keys (value << N2) | mask, padded by ±wq
        keys = _sorted_subset_sums(q2_low, Q, N2)
        wrap = np.int64(1 << (Q + N2))
        R_all = np.concatenate([keys[keys >= np.int64(((1 << Q) - wq - 1) << N2)] - wrap, keys,
                                keys[keys < np.int64((wq + 1) << N2)] + wrap])
        del keys
    else:
        low2_tab = _sorted_subset_sums(q2_low, Q, L2)
        low2_val = low2_tab >> L2

    n_chunks = 1 << H
    batch = min(n_chunks, 1 << max(0, p + _BATCH_BITS - L1))  # ~2^_BATCH_BITS queries a batch
    # p > 0: a unit is a region (its stored slice is built once, then met by every chunk's
    # queries that land in it, a batch at a time); p = 0: a unit is one batch of chunks
    units = [(k, 0, n_chunks) for k in range(1 << p)] if p else \
        [(0, c0, min(n_chunks, c0 + batch)) for c0 in range(0, n_chunks, batch)]
    deadline = t0 + timeout

    def stored_slice(k: int) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray] | None:
        """Region k's stored side: (sorted keys (u << N2) | mask of every stored sum u within
        wq of its values [k, k+1)·2^(Q−p), unwrapped so that u − wq … u + wq compare as
        plain integers; the values u; the cells' base and bits; the cells' prefix count),
        or None when it is empty.

        Cells of 2^cs ≥ 2·wq + 1 values, about 4 per stored key where the window allows:
        the keys within wq of a query x are among the keys of cell(x − wq) … cell(x + wq)
        (one or two cells), found by two lookups in the prefix count (a few ns per query,
        where a binary search costs ~40 even in cache, ~240 into a 256 MiB table)."""
        if p == 0:
            keys = R_all
        else:
            lo_v = (k << (Q - p)) - wq
            at, run = _circular_gather(low2_val, lo_v, ((k + 1) << (Q - p)) + wq + 1, high2, top)
            lk = low2_tab[at]
            u = (((lk >> L2) + high2[run] - lo_v) & top) + lo_v
            keys = (u << N2) | (lk & low2_mask) | (run << L2)
            keys.sort(kind="stable")  # 2^H2 sorted runs: timsort merges them
        if keys.size == 0:
            return None
        vals = keys >> N2
        base = int(vals[0]) - wq
        span = int(vals[-1]) + wq + 1 - base
        cs = max((2 * wq).bit_length(), (span - 1).bit_length() - min(_CELL_BITS, keys.size.bit_length() + 1))
        first = np.zeros((span >> cs) + 3, dtype=np.int64)
        np.cumsum(np.bincount((vals - base) >> cs, minlength=first.size - 1), out=first[1:])
        return keys, vals, base, cs, first

    whole = stored_slice(0) if p == 0 else None  # p = 0: one stored side, shared by every unit

    def match(unit: tuple[int, int, int]) -> tuple[int, list[tuple[int, ...]] | None, str]:
        """Region k against chunks c_lo … c_hi−1: (pairs matched, candidate sets or None, why)."""
        k, c_lo, c_hi = unit
        if time.perf_counter() > deadline:
            return 0, None, "timeout"
        region = whole if p == 0 else stored_slice(k)
        if region is None:
            return 0, [], ""
        Rs, vals, base, cs, first = region
        total = 0
        out: list[tuple[int, ...]] = []
        for c0 in range(c_lo, c_hi, batch):
            if time.perf_counter() > deadline:
                return 0, None, "timeout"
            s = starts[c0:min(c_hi, c0 + batch)]
            # the queries x = v + s (mod 2^Q) in region k (p = 0: all, from the smallest on)
            at, ch = _circular_gather(low_val, k << (Q - p), (k + 1) << (Q - p), s, top)
            lk = low_tab[at]
            del at
            qs = ((lk >> L1) + s[ch]) & top
            x = qs - (wq + base)  # x − wq, from the cells' base; may fall outside: clipped, then empty
            lo = first.take(x >> cs, mode="clip")
            x += 2 * wq
            cnt = first.take((x >> cs) + 1, mode="clip") - lo
            del x
            near = np.nonzero(cnt)[0]
            lo, cnt = lo[near], cnt[near]
            upto = np.cumsum(cnt)
            g0 = 0
            while g0 < near.size:  # ≤ _MAX_CANDIDATES candidate pairs at a time (a query has
                # at most a region's keys): bounded memory even where sums coincide a lot
                if time.perf_counter() > deadline:
                    return 0, None, "timeout"
                done_before = int(upto[g0 - 1]) if g0 else 0
                g1 = max(g0 + 1, int(np.searchsorted(upto, done_before + _MAX_CANDIDATES, side="right")))
                qi = np.repeat(near[g0:g1], cnt[g0:g1])
                ki = _ranges(lo[g0:g1], cnt[g0:g1])
                g0 = g1
                ok = np.nonzero(np.abs(vals[ki] - qs[qi]) <= wq)[0]
                qi, ki = qi[ok], ki[ok]
                total += int(qi.size)
                if qi.size == 0:
                    continue
                cq = ch[qi] + c0
                left = (cq << L1) | (lk[qi] & loc_mask)
                right = Rs[ki] & mask2
                del qi, ki
                if j2 is not None:  # circular distance on the second coordinate, exact integers
                    v2 = (low_tab2[left & loc_mask] + starts2[cq] - r_low2[right & low2_mask]
                          - high2_2[right >> L2]) & top
                    keep = np.nonzero(np.minimum(v2, (top + 1) - v2) <= wq2)[0]
                    del v2
                    left, right = left[keep], right[keep]
                del cq
                for b0 in range(0, left.size, _FILTER_BATCH):  # bounded memory for unselective chunks
                    if time.perf_counter() > deadline:
                        return 0, None, "timeout"
                    cands, why = _filter(left[b0:b0 + _FILTER_BATCH], right[b0:b0 + _FILTER_BATCH],
                                         N1, N2, GF1, GF2, h, W, usable, P, F1, F2)
                    if cands is None:
                        return 0, None, why
                    out.extend(cands)
                    if len(out) > 5_000:
                        return 0, None, "more than 5000 candidate sets in one unit: windows too wide"
        return total, out, ""

    n_pairs = 0
    n_cands = 0
    best_lower = math.inf
    label = "regions" if p else "batches"
    with closing(_completed(match, units, threads, progress, label)) as results:
        for done, (pairs, cands, why) in results:
            if cands is None:
                if why == "timeout":
                    why = (f"time budget {timeout:g}s spent after {done - 1}/{len(units)} units "
                           f"(2^{N1}×2^{N2} partial sums, 2^{p} regions, rank {r})")
                return _unknown(why, t0)
            n_pairs += pairs
            if cands:
                n_cands += len(cands)
                S, res, lower = classify_candidates(U, D, T, cands, tol)
                if S is not None:
                    return SearchResult(
                        SearchStatus.FOUND, "mitm", f"pivoted meet-in-the-middle (rank {r}, "
                        f"2^{N1}×2^{N2})", S=S, residual=res, elapsed=time.perf_counter() - t0)
                best_lower = min(best_lower, lower)
    bound = min(eps_search / t_hi * (1 - 4 * _u), best_lower)
    cert = {"kind": "meet-in-the-middle", "rank": r, "pivots": [int(i) for i in P],
            "sides": [N1, N2], "pairs_matched": n_pairs, "candidates": n_cands,
            "search_radius": eps_search}
    if bound > tol:
        return SearchResult(
            SearchStatus.INFEASIBLE, "mitm",
            f"complete pivoted meet-in-the-middle over 2^{N1}×2^{N2} partial sums with "
            "rigorous rounding windows", bound=bound, elapsed=time.perf_counter() - t0,
            certificate=cert)
    return _unknown(f"a candidate has exact residual ≤ tol but float64 residual > tol "
                    f"(bound {bound:.3e})", t0, **cert)
