"""The null-space route (issue 26: a planted degree-2 / gated block at model size): read the
index sets S off the numerical null space of the Gram matrix G = QᵀQ of the homogeneous
condition's columns q_i (the (Q) / (Qg) columns).

An S satisfies the homogeneous condition iff Q 1_S = 0, i.e. 1_S is in the null space of G.
When G is singular (a planted block: the rank and Gram routes prove nothing), its null space N
is spanned by a few eigenvectors of (a float copy of) G, and the 0/1 vectors in N are found by
writing N in reduced row-echelon form: with k pivot rows P (B = N·N[P]⁻¹, so B[P] = I), every
z ∈ N is B·z[P], so a 0/1 vector of N has z[P] ∈ {0,1}^k and the 2^k − 1 nonzero choices list
them all.

This only FINDS candidates, in floats: a candidate S proves nothing. The caller ranks them by
the linear condition and hands each to the flip witness, whose exact check alone decides
``absorbable``; nothing found means nothing (never ``not_absorbable`` from here).
"""

from __future__ import annotations

import numpy as np

from absorb.rigorous import UNIT_ROUNDOFF

MAX_NULL_DIM = 12
"""At most this many null directions are searched (2^k − 1 combinations of the pivot rows)."""
RELATIVE_NULL = 1e-9
"""An eigenvalue of the diagonally scaled Gram matrix H (unit diagonal, λ_max ≤ n) counts as
null up to this times λ_max(H), or the entries' rounding bound if larger: an S planted exactly
has eigenvalue 0, one planted and then rounded to float64 about u² relative, a generic block
λ_min(H) of order 1."""
ZERO_ONE_ATOL = 1e-3
"""How far an entry of a combination may be from 0 or 1 and still be read as 0 or 1."""
MAX_CANDIDATES = 64
"""At most this many candidate sets are returned."""
_CHUNK = 4096


def null_basis(G: np.ndarray, E: np.ndarray | None = None) -> np.ndarray | None:
    """An n×k basis of the numerical null space of the symmetric float Gram matrix G (k ≥ 0), in
    G's own coordinates, or None when it is not read (a non-positive or non-finite diagonal, the
    eigensolver failed, or k > :data:`MAX_NULL_DIM`). ``E`` (optional) bounds G's entries'
    rounding entrywise: eigenvalues within its Frobenius norm (scaled, times 64) count as null
    too. The eigenproblem is solved for H = ΣGΣ, Σ = diag(G_ii^-½), so units of very different
    norms weigh alike; the basis returned is ΣV (x = Σy: Gx = 0 iff Hy = 0)."""
    n = G.shape[0]
    d = np.diag(G).astype(np.float64)
    if n == 0 or not (np.all(np.isfinite(G)) and np.all(np.isfinite(d)) and np.all(d > 0)):
        return None
    sig = 1.0 / np.sqrt(d)
    H = G * sig[:, None] * sig[None, :]
    try:
        lam, V = np.linalg.eigh(H)
    except np.linalg.LinAlgError:
        return None
    top = float(lam[-1])
    if not (np.isfinite(top) and top > 0):
        return None
    thr = max(RELATIVE_NULL * top, 64 * n * UNIT_ROUNDOFF * top)
    if E is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            e = float(np.linalg.norm(E * sig[:, None] * sig[None, :]))
        if np.isfinite(e):
            thr = max(thr, 64 * e)
    k = int(np.count_nonzero(lam <= thr))
    if k > MAX_NULL_DIM:
        return None
    return V[:, :k] * sig[:, None]


def zero_one_vectors(N: np.ndarray, atol: float = ZERO_ONE_ATOL) -> list[tuple[int, ...]]:
    """The supports of the 0/1 vectors (nonzero) in the column span of N (n×k), read in floats:
    pivot rows P by QR with column pivoting on Nᵀ, B = N·N[P]⁻¹ (B[P] = I), and every
    c ∈ {0,1}^k \\ {0} whose B·c is within ``atol`` of a 0/1 vector entrywise. At most
    :data:`MAX_CANDIDATES`, smallest sets first."""
    from scipy.linalg import qr

    n, k = N.shape
    if k == 0 or k > MAX_NULL_DIM:
        return []
    _, _, piv = qr(N.T, mode="economic", pivoting=True)
    P = piv[:k]
    NP = N[P]
    if not np.isfinite(np.linalg.cond(NP)) or np.linalg.cond(NP) > 1e12:
        return []
    B = np.linalg.solve(NP.T, N.T).T  # B = N·NP⁻¹
    idx = np.arange(k)
    found: list[tuple[int, ...]] = []
    for start in range(1, 1 << k, _CHUNK):
        codes = np.arange(start, min(1 << k, start + _CHUNK))
        C = ((codes[:, None] >> idx[None, :]) & 1).astype(np.float64)
        Z = C @ B.T  # rows: the combinations
        off = np.minimum(np.abs(Z), np.abs(Z - 1)).max(axis=1)
        for j in np.flatnonzero(off <= atol):
            found.append(tuple(int(i) for i in np.flatnonzero(Z[j] > 0.5)))
    found = sorted(set(s for s in found if s), key=lambda s: (len(s), s))
    return found[:MAX_CANDIDATES]


def null_candidates(G: np.ndarray, E: np.ndarray | None = None) -> list[tuple[int, ...]]:
    """The index sets S with 1_S in G's numerical null space (:func:`null_basis`,
    :func:`zero_one_vectors`): candidates only, in floats."""
    N = null_basis(G, E)
    return [] if N is None else zero_one_vectors(N)


def linear_residuals(cands: list[tuple[int, ...]], V: np.ndarray, D: np.ndarray, T: np.ndarray) -> list[tuple[float, tuple[int, ...]]]:
    """(‖D[:, S] V[S, :] − T‖_F / ‖T‖_F, S) for each candidate, best first: the linear condition
    alone in floats (V, D, T as :func:`absorb.engine.skeleton2.linear_columns` and its gated
    counterpart build them, T = −M), to rank candidates and skip hopeless ones. Empty when T = 0."""
    m = float(np.linalg.norm(T))
    if not (np.isfinite(m) and m > 0):
        return []
    out = []
    for S in cands:
        idx = list(S)
        with np.errstate(over="ignore", invalid="ignore"):
            r = float(np.linalg.norm(D[:, idx] @ V[idx] - T)) / m
        if np.isfinite(r):
            out.append((r, S))
    return sorted(out)
