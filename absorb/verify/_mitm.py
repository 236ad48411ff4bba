"""The checker's own meet-in-the-middle: no index set S has ‖D_S U_S − T‖_F < ρ = R·‖T‖_F.

Written for the checker alone (it shares nothing with the search). With ``K`` the d²×n
matrix of columns ``k_i = vec(w_i u_iᵀ)`` (exact reals: products of two floats), ``t =
vec(T)`` and ``b ∈ {0,1}^n`` the indicator of S, the question is whether ``‖K b − t‖ < ρ``.

Reduction. Any float matrix ``M`` (r×d²) gives, over the reals, ``M(K b − t) = G b − h`` with
``G = M K``, ``h = M t``, and ``|(M(Kb − t))_j| ≤ ‖M_j‖₂ ‖Kb − t‖``. ``M`` is the
pseudo-inverse of r columns ``P`` of ``K`` (QR with column pivoting, r = numerical rank), so
``G[:, P] ≈ I``: with ``η_j = Σ_k |G_{j,P_k} − δ_jk|`` and the free units ``F`` (the others),
every S with ``‖Kb − t‖ ≤ ρ`` satisfies, for every j,

    |h_j − Σ_{i ∈ F∩S} G_ji − [P_j ∈ S]| ≤ ‖M_j‖ρ + η_j,

i.e. ``v_j = h_j − Σ_{F∩S} G_ji`` is within that radius of 0 or 1, and the pivot bits are
read off ``v``. Only the 2^|F| free assignments are searched: F is split into halves A, B;
the partial sums of each half are enumerated by doubling (vectorised); one side is sorted on
one coordinate j*; for every sum of the other side the two windows (τ = 0, 1) are found by
binary search; the pairs are filtered on every coordinate; the survivors are checked in
exact rationals. Nothing about how ``M`` was computed is trusted: ``G`` and ``h`` are
recomputed products whose rounding is bounded (Higham's γ), and so are the partial sums
and the window arithmetic, so every window is widened by a rigorous bound on the
difference between the computed and the exact ``v_j`` (valid while every entry is in the
range of ``_in_range``: no underflow or overflow).

Cost: 2^|A| + 2^|B| sums per coordinate (|F| = n − r; d = 4, n = 48: 2^16 each; d = 2,
n = 48: 2^22) plus one sort. Refused (None) when a side would exceed ``MAX_SIDE`` sums,
when the windows are too wide to read the pivot bits (η_j ≥ 1/4), or when more than
``MAX_PAIRS`` pairs land in the windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.verify._numerics import _U, _gamma, _in_range

MAX_SIDE_BITS = 22
"""At most 2^22 partial sums per half (r coordinates of float64 each: 32·r MiB)."""
MAX_PAIRS = 20_000_000
MAX_EXACT = 20_000
_CHUNK = 1 << 18


@dataclass(frozen=True)
class MitmResult:
    """``closer`` lists (S, exact relative distance) of the sets found closer than R (empty:
    proved that every S is at relative distance ≥ R); plus the work done."""

    closer: list[tuple[list[int], float]]
    free: int
    rank: int
    pairs: int
    survivors: int


def _exact_rel_sq(U: np.ndarray, D: np.ndarray, T: np.ndarray, S: list[int]) -> tuple[Fraction, Fraction]:
    """(‖D_S U_S − T‖², ‖T‖²) exactly in rationals."""
    d = T.shape[0]
    Uq = [[Fraction(float(v)) for v in U[i]] for i in S]
    Dq = [[Fraction(float(D[r, i])) for i in S] for r in range(d)]
    num = Fraction(0)
    den = Fraction(0)
    for r in range(d):
        for c in range(d):
            t = Fraction(float(T[r, c]))
            acc = sum((Dq[r][k] * Uq[k][c] for k in range(len(S))), Fraction(0)) - t
            num += acc * acc
            den += t * t
    return num, den


def _subset_sums(G: np.ndarray) -> np.ndarray:
    """All 2^k partial sums of the k columns of G (r×k), as r×2^k: bit i of the index is
    column i. Each entry is a float sum of at most k terms."""
    out = np.zeros((G.shape[0], 1))
    for i in range(G.shape[1]):
        out = np.concatenate([out, out + G[:, i:i + 1]], axis=1)
    return out


def mitm_no_set_closer(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float) -> MitmResult | str:
    """Prove that every S has ‖D_S U_S − T‖_F ≥ R·‖T‖_F, or return the sets that do not (in
    ``closer``, exact); a string says why the check was not done."""
    from scipy.linalg import qr  # scipy: a library, not the producer's code

    n, d = U.shape
    m = d * d
    if not (R > 0 and math.isfinite(R)):
        return "the radius must be a positive number"
    if not _in_range(U, D, T):
        return "an entry is outside the range where the checker's float64 bounds hold"
    U, D = U.astype(np.float64, copy=False), D.astype(np.float64, copy=False)  # float32 weights: the products below in float64
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, m).T  # m×n, k_i = vec(w_i u_iᵀ), each entry one rounding
    t = T.reshape(-1).astype(np.float64)
    if not np.any(K):
        return "K = 0"
    _, Rq, piv = qr(K, mode="economic", pivoting=True)
    diag = np.abs(np.diag(Rq))
    r = int(np.sum(diag > diag[0] * max(m, n) * 1e-10))
    P = [int(i) for i in piv[:r]]
    F = [i for i in range(n) if i not in set(P)]
    N = len(F)
    nA = N // 2
    if max(nA, N - nA) > MAX_SIDE_BITS:
        return f"{N} free units after eliminating rank {r}: the halves would exceed 2^{MAX_SIDE_BITS} sums"
    Mx = np.linalg.pinv(K[:, P])  # r×m; any matrix would do: nothing about it is trusted
    if not (np.all(np.isfinite(Mx)) and _in_range(Mx)):
        return "the elimination matrix is out of range"
    absK = np.abs(K)
    G = Mx @ K  # r×n
    h = Mx @ t
    gm = _gamma(m + 2)
    # every computed sum of non-negative terms (k ≤ max(m, n) + 8 of them) is ≥ (1 − γ_k)·exact:
    # multiplying by `up` makes it an upper bound
    up = 1 + 4 * _gamma(max(m, n) + 8)
    errG = gm * (np.abs(Mx) @ absK) * up  # |Ĝ − M K| (K exact: |K̂ − K| ≤ u|K|), entrywise
    errh = gm * (np.abs(Mx) @ np.abs(t)) * up
    eye = np.eye(r)
    eta = (np.abs(G[:, P] - eye) + errG[:, P]).sum(axis=1) * up
    tn_up = float(np.linalg.norm(t)) * up
    rho = R * tn_up * (1 + 2 * _U)
    Mn_up = np.linalg.norm(Mx, axis=1) * up
    A_cols, B_cols = F[:nA], F[nA:]
    sumA = np.abs(G[:, A_cols]).sum(axis=1) * up
    sumB = np.abs(G[:, B_cols]).sum(axis=1) * up
    eA = _gamma(len(A_cols) + 1) * sumA  # the doubling sums: ≤ |A| terms each
    eB = _gamma(len(B_cols) + 1) * sumB
    W = (Mn_up * rho + eta + errh + errG[:, F].sum(axis=1) * up + eA + eB) * (1 + 16 * _U)
    W = W + 8 * _U * (np.abs(h) + 1 + sumA + sumB + W)  # the window arithmetic below: ≤ 4 roundings
    if not np.all(np.isfinite(W)) or float(W.max()) >= 0.25:
        return f"the windows are too wide to read the pivot bits (max {float(W.max()):.3g} ≥ 1/4)"
    SA = _subset_sums(G[:, A_cols])  # r×2^|A|
    SB = _subset_sums(G[:, B_cols])
    js = int(np.argmin(W / (sumA + sumB + 1e-300)))
    found = _window_pairs(SA, SB, h, W, js)
    if isinstance(found, str):
        return found
    ai, bi, pairs = found
    if ai.size > MAX_EXACT:
        return f"{ai.size} candidate sets survive the windows: too many to check exactly"
    closer = _exact_closer(U, D, T, R, ai, bi, A_cols, B_cols, P, SA, SB, h, W)
    return MitmResult(closer, N, r, pairs, int(ai.size))


def _window_pairs(SA: np.ndarray, SB: np.ndarray, h: np.ndarray, W: np.ndarray,
                  js: int) -> tuple[np.ndarray, np.ndarray, int] | str:
    """The (A-half, B-half) subset pairs whose pivot values h − SA − SB all lie within W of 0 or
    1, found by sorting row ``js``; (their A indices, B indices, the pairs scanned), or why not."""
    order = np.argsort(SA[js])
    keyA = SA[js][order]
    orderB = np.argsort(SB[js])[::-1]  # so that h − τ − SB[js] increases: sorted needles
    pairs = 0
    cand_a: list[np.ndarray] = []
    cand_b: list[np.ndarray] = []
    for b0 in range(0, orderB.size, _CHUNK):
        ob = orderB[b0:b0 + _CHUNK]
        sb = SB[:, ob]
        for tau in (0.0, 1.0):
            x = h[js] - tau - sb[js]
            lo = np.searchsorted(keyA, x - W[js], side="left")
            hit = np.flatnonzero((lo < keyA.size) & (keyA[np.minimum(lo, keyA.size - 1)] <= x + W[js]))
            if hit.size == 0:
                continue
            hi = np.searchsorted(keyA, x[hit] + W[js], side="right")
            cnt = hi - lo[hit]
            total = int(cnt.sum())
            pairs += total
            if pairs > MAX_PAIRS:
                return f"more than {MAX_PAIRS} pairs in the windows"
            bi = np.repeat(hit, cnt)
            ai = order[np.repeat(lo[hit], cnt) + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))]
            v = h[:, None] - SA[:, ai] - sb[:, bi]  # r×pairs
            near0 = np.abs(v) <= W[:, None]
            near1 = np.abs(v - 1.0) <= W[:, None]
            keep = np.all(near0 | near1, axis=0)
            cand_a.append(ai[keep])
            cand_b.append(ob[bi[keep]])
    ai = np.concatenate(cand_a) if cand_a else np.zeros(0, dtype=np.int64)
    bi = np.concatenate(cand_b) if cand_b else np.zeros(0, dtype=np.int64)
    return ai, bi, pairs


def _exact_closer(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float, ai: np.ndarray, bi: np.ndarray, A_cols: list[int],
                  B_cols: list[int], P: list[int], SA: np.ndarray, SB: np.ndarray, h: np.ndarray,
                  W: np.ndarray) -> list[tuple[list[int], float]]:
    """The candidate sets, completed by their pivot bits, that are closer than R in exact arithmetic."""
    r = len(P)
    closer: list[tuple[list[int], float]] = []
    Rq_ = Fraction(R)
    for a, b in zip(ai.tolist(), bi.tolist()):
        S = [A_cols[i] for i in range(len(A_cols)) if a >> i & 1] + [B_cols[i] for i in range(len(B_cols)) if b >> i & 1]
        v = h - SA[:, a] - SB[:, b]
        S += [P[j] for j in range(r) if abs(v[j] - 1.0) <= W[j]]
        num, den = _exact_rel_sq(U, D, T, sorted(S))
        if num < Rq_ * Rq_ * den:
            closer.append((sorted(S), math.sqrt(num / den)))
    return closer
