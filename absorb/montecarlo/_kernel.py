"""Vectorised index-set decisions for batches of ungated blocks (docs/mathematics.md §4).

For a batch of weights ``U`` (B×n×d, rows u_i) and ``D`` (B×d×n, columns w_i) and a flip
constant ``c`` (σ(z) − σ(−z) = c·z; c = 1 for ReLU and GELU), every instance asks whether some
``S`` has ``c·D_S U_S = −I`` — the same question as the engine's index-set search with
``T = −I/c`` — and how far the best ``S`` is:

    dist = min_S ‖c·D_S U_S + I‖_F / √d     (relative to ‖I‖_F, as the engine's tolerance).

Two routes, both deciding many instances with a few large BLAS calls:

* :func:`enumerate_batch` (n ≤ :data:`ENUM_MAX_N`) — exact, exhaustive. With
  ``b ∈ {0,1}^n`` the indicator of S, ``a_i = c·vec(w_i u_i^T)`` and ``t = −vec(I)``:
  ``‖K b − t‖² = Σ_i b_i (G_ii − 2h_i) + Σ_{i<j} 2 b_i b_j G_ij + d`` with
  ``G = c²(U Uᵀ)∘(Dᵀ D)`` (a Hadamard product) and ``h_i = −c·u_i·w_i``. The 0/1 matrix
  ``P`` of the monomials ``b_i`` and ``b_i b_j`` over all 2^n subsets is fixed, so the squared
  distances of every subset of every instance are one matrix product ``P @ coef``. The
  minimum, minus a rigorous bound on the rounding of that sum and of ``G`` and ``h``, is a
  lower bound on the distance; the arg-min's residual is recomputed directly.
* :func:`dual_batch` (any n, used when n is too large to enumerate) — a lower bound only.
  ``b*`` solves the (slightly regularised) normal equations ``G b = h``; ``Y = R = c·D
  diag(b*) U + I`` is the least-squares residual, and for every ``b ∈ [0,1]^n``
  ``‖c·D diag(b) U + I‖_F ≥ (tr Y + Σ_i min(0, c·w_iᵀ Y u_i)) / ‖Y‖_F`` (Cauchy–Schwarz
  with ⟨Y, I⟩ = tr Y): the dual certificate of docs/mathematics.md §4 with ``Y = R``, whose value is
  ``‖R‖`` when ``b*`` is the exact least-squares solution. Any ``Y`` gives a valid bound, so
  the regularisation and the solver's accuracy do not matter; the rounding of the bound's
  own evaluation is accounted for. ``b*`` rounded to {0,1} is tried as a candidate ``S``
  (it finds planted sets when ``K`` has full column rank, n ≤ d²).

Statuses are the search's: ``FOUND`` (a set with relative residual ≤ tol, recomputed
directly), ``INFEASIBLE`` (the rigorous lower bound exceeds tol), ``UNKNOWN``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import numpy as np

from absorb.engine.hypotheses import COLLINEAR_TAU
from absorb.rigorous import gamma

ENUM_MAX_N = 20

Route = Literal["auto", "enumerate", "dual"]
"""How a batch is decided: ``enumerate`` (exact, n ≤ ENUM_MAX_N), ``dual`` (lower bounds), ``auto``."""
"""Largest width decided by exhaustive enumeration (2^20 subsets per instance)."""

_EPS = np.finfo(float).eps
_CG_MIN_N = 256  # from this width on, conjugate gradients instead of a dense solve
_SLICE_SUMS = 1 << 17  # subset sums per slice of instances (1 MiB of float64)
FOUND, INFEASIBLE, UNKNOWN = 0, 1, 2
STATUS_NAMES = ("found", "infeasible", "unknown")


def _gamma(k: int) -> float:
    """Higham's γ_k (:func:`absorb.rigorous.gamma`, the producer's one copy) with the unit
    roundoff taken as ε = 2u: the classical bound on the relative rounding of a k-term
    sum, with a factor 2 to spare."""
    return gamma(k, unit=_EPS)


@dataclass(frozen=True)
class BatchResult:
    """Per-instance outcome of a vectorised index-set decision (arrays of length B).

    ``distance``: for ``route == "enumerate"`` the relative residual of the best subset,
    recomputed directly (the exact minimum up to rounding); for ``"dual"`` the rigorous
    lower bound. ``lower_bound``: a rigorous lower bound on min_S relative residual.
    ``S``: a boolean (B, n) mask of the best (enumerate) or rounded (dual) subset.
    """

    status: np.ndarray  # int8: FOUND / INFEASIBLE / UNKNOWN
    distance: np.ndarray
    lower_bound: np.ndarray
    S: np.ndarray
    route: str

    @property
    def exact_distance(self) -> bool:
        return self.route == "enumerate"


@functools.lru_cache(maxsize=64)
def _monomials(n: int, start: int, stop: int) -> np.ndarray:
    """Rows: subsets ``start..stop-1`` (bit i of the index = b_i); columns: b_i, then
    b_i b_j for i < j (``np.triu_indices(n, 1)`` order). Entries 0/1, exact in float64."""
    idx = np.arange(start, stop, dtype=np.int64)
    bits = ((idx[:, None] >> np.arange(n)) & 1).astype(np.float64)
    iu, ju = np.triu_indices(n, 1)
    return np.concatenate([bits, bits[:, iu] * bits[:, ju]], axis=1)


def _residuals(U: np.ndarray, D: np.ndarray, mask: np.ndarray, c: float) -> np.ndarray:
    """‖c·D diag(mask) U + I‖_F / √d per instance, computed directly in float64."""
    d = U.shape[2]
    R = c * np.matmul(D * mask[:, None, :], U) + np.eye(d)
    return np.sqrt(np.einsum("bij,bij->b", R, R) / d)


def _gram(U: np.ndarray, D: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """G = c²(U Uᵀ)∘(Dᵀ D), h_i = −c·u_i·w_i, and ν_i = |c|·‖u_i‖‖w_i‖ (for error bounds)."""
    G = (c * c) * (np.matmul(U, U.transpose(0, 2, 1)) * np.matmul(D.transpose(0, 2, 1), D))
    h = -c * np.einsum("bnk,bkn->bn", U, D)
    nu = abs(c) * np.linalg.norm(U, axis=2) * np.linalg.norm(D, axis=1)
    return G, h, nu


def _half_sums(L: np.ndarray, G: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """q_H(b_H) = Σ_{i∈H} L_i b_i + Σ_{i<j∈H} 2 G_ij b_i b_j for all 2^|H| subsets: (B, 2^|H|)."""
    k = idx.size
    iu, ju = np.triu_indices(k, 1)
    coef = np.concatenate([L[:, idx], 2.0 * G[:, idx[iu], idx[ju]]], axis=1)  # (B, k + k(k-1)/2)
    return coef @ _monomials(k, 0, 1 << k).T


def check_batch(U: object, D: object, *, c: object, tol: object, enumerate_: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The batch entry points' arguments: ``U`` (B, n, d) and ``D`` (B, d, n), finite
    float64; ``c`` a finite nonzero number; ``tol`` in (0, 1); enumeration needs n ≤ ENUM_MAX_N."""
    import math

    from absorb._errors import InvalidInput
    from absorb._validate import as_float_array, check_tolerance

    U = as_float_array(U, source="decide_batch", key="U", copy=False)
    D = as_float_array(D, source="decide_batch", key="D", copy=False)
    if U.ndim != 3 or D.ndim != 3 or U.size == 0 or D.shape != (U.shape[0], U.shape[2], U.shape[1]):
        raise InvalidInput(f"decide_batch: U has shape {U.shape} and D {D.shape}; expected non-empty (B, n, d) and (B, d, n)")
    if isinstance(c, bool) or not isinstance(c, (int, float, np.floating, np.integer)) or not math.isfinite(c) or c == 0:
        raise InvalidInput(f"decide_batch: c = {c!r} must be a finite nonzero number (the flip constant)")
    check_tolerance(tol)
    if enumerate_ and U.shape[1] > ENUM_MAX_N:
        raise InvalidInput(f"decide_batch: enumeration needs n ≤ {ENUM_MAX_N}, got n = {U.shape[1]}; use route 'dual'")
    return U, D


def enumerate_batch(U: np.ndarray, D: np.ndarray, *, c: float = 1.0, tol: float = 1e-9) -> BatchResult:
    """Decide every instance exactly by enumerating all 2^n subsets (n ≤ ENUM_MAX_N).

    Meet in the middle: with the units split into halves A, B,
    ``‖K b − t‖² − d = q_A(b_A) + q_B(b_B) + 2 b_Aᵀ G_AB b_B``; the half sums are two small
    matrix products and the cross terms one more, so the cost per instance is
    O(2^n + 2^{n/2}·n²) instead of O(2^n·n²).
    """
    U, D = check_batch(U, D, c=c, tol=tol, enumerate_=True)
    B, n, d = U.shape
    if n > ENUM_MAX_N:
        raise ValueError(f"enumerate_batch: n = {n} > {ENUM_MAX_N}; use dual_batch")
    G, h, nu = _gram(U, D, c)
    L = np.einsum("bii->bi", G) - 2.0 * h
    n1 = (n + 1) // 2
    A_idx, B_idx = np.arange(n1), np.arange(n1, n)
    nB = n - n1
    bitsA1 = np.concatenate([_monomials(n1, 0, 1 << n1)[:, :n1], np.ones((1 << n1, 1))], axis=1)
    bitsB = _monomials(nB, 0, 1 << nB)[:, :nB]
    best = np.empty(B)
    arg = np.empty(B, dtype=np.int64)
    step = max(1, _SLICE_SUMS >> n)  # instances per slice: the sums of a slice stay in cache
    for s0 in range(0, B, step):
        sl = slice(s0, min(B, s0 + step))
        b = sl.stop - sl.start
        Gs, Ls = G[sl], L[sl]
        # Rows 0..n1-1: 2·G_AB b_B for every b_B; row n1: q_B(b_B). One product with
        # [bits_A, 1] then gives q_B(b_B) + 2 b_Aᵀ G_AB b_B for every (b_A, b_B).
        XT = np.empty((n1 + 1, b, 1 << nB))
        XT[:n1] = (2.0 * np.matmul(Gs[:, :n1, n1:], bitsB.T)).transpose(1, 0, 2)
        XT[n1] = _half_sums(Ls, Gs, B_idx)
        Q = (bitsA1 @ XT.reshape(n1 + 1, -1)).reshape(1 << n1, b, 1 << nB)
        Q += _half_sums(Ls, Gs, A_idx).T[:, :, None]
        m1 = Q.min(axis=0)  # (b, 2^nB)
        u = np.argmin(m1, axis=1)
        rows = np.arange(b)
        best[sl] = m1[rows, u]
        arg[sl] = np.argmin(Q[:, rows, u], axis=0) + (u << n1)
    q = best + d
    # Rounding: each sum has at most m + 1 terms (γ_{m+1} Σ|terms|), plus the coefficients
    # themselves: |fl(G_ij) − G_ij| ≤ γ_{2d+3} ν_i ν_j, |fl(h_i) − h_i| ≤ γ_{d+1} ν_i.
    m = n + n * (n - 1) // 2
    iu, ju = np.triu_indices(n, 1)
    absum = np.abs(L).sum(axis=1) + 2.0 * np.abs(G[:, iu, ju]).sum(axis=1) + d
    s_nu = nu.sum(axis=1)
    err = 2.0 * (_gamma(m + 2) * absum + _gamma(2 * d + 3) * 2.0 * s_nu**2 + _gamma(d + 1) * 2.0 * s_nu)
    lower = np.sqrt(np.maximum(q - err, 0.0) / d)
    mask = ((arg[:, None] >> np.arange(n)) & 1).astype(bool)
    dist = _residuals(U, D, mask.astype(np.float64), c)
    status = np.full(B, UNKNOWN, dtype=np.int8)
    status[lower > tol] = INFEASIBLE
    status[dist <= tol] = FOUND
    return BatchResult(status=status, distance=dist, lower_bound=np.minimum(lower, dist), S=mask, route="enumerate")


def dual_batch(U: np.ndarray, D: np.ndarray, *, c: float = 1.0, tol: float = 1e-9) -> BatchResult:
    """Rigorous lower bounds from the least-squares residual as a dual certificate (any n)."""
    U, D = check_batch(U, D, c=c, tol=tol)
    B, n, d = U.shape
    G, h, _ = _gram(U, D, c)
    # Any b* gives a valid certificate; a tiny ridge keeps the solve defined when K is
    # rank-deficient (n > d², repeated units).
    ridge = 1e-12 * np.maximum(np.einsum("bii->b", G) / n, 1e-300)
    A = G + ridge[:, None, None] * np.eye(n)
    bstar = np.linalg.solve(A, h[..., None])[..., 0] if n < _CG_MIN_N else _cg(A, h)
    Y = c * np.matmul(D * bstar[:, None, :], U) + np.eye(d)
    DtY = np.matmul(D.transpose(0, 2, 1), Y)  # (B, n, d): row i = w_iᵀ Y
    alpha = c * np.einsum("bnk,bnk->bn", DtY, U)  # c·w_iᵀ Y u_i
    # |fl(α_i) − α_i| ≤ γ_{2d+1}|c|·|w_i|ᵀ|Y||u_i| ≤ γ_{2d+1}|c|·‖w_i‖‖Y‖_F‖u_i‖ (Cauchy–Schwarz;
    # cheaper than another n×d×d product and, at γ ≈ 1e-13, no looser in practice);
    # tr Y and ‖Y‖_F are accounted to γ_d and γ_{d²+1} relative.
    y_fro = np.sqrt(np.einsum("bij,bij->b", Y, Y))
    a_err = _gamma(2 * d + 1) * abs(c) * np.linalg.norm(D, axis=1) * np.linalg.norm(U, axis=2) * y_fro[:, None]
    tr = np.einsum("bii->b", Y)
    sign = np.where(tr >= 0, 1.0, -1.0)  # the bound holds for Y and for −Y
    num = sign * tr - _gamma(d) * np.abs(tr) + np.minimum(0.0, sign[:, None] * alpha - a_err).sum(axis=1)
    fro = y_fro * (1.0 + _gamma(d * d + 1))
    lower = np.where(fro > 0, np.maximum(num, 0.0) / np.where(fro > 0, fro, 1.0), 0.0) / np.sqrt(d)
    mask = bstar > 0.5
    # A candidate can only succeed where the bound leaves room (its residual is ≥ the bound).
    resid = lower.copy()
    room = lower <= tol
    if room.any():
        resid[room] = _residuals(U[room], D[room], mask[room].astype(np.float64), c)
    status = np.full(B, UNKNOWN, dtype=np.int8)
    status[lower > tol] = INFEASIBLE
    status[resid <= tol] = FOUND
    dist = np.where(status == FOUND, resid, lower)
    return BatchResult(status=status, distance=dist, lower_bound=np.minimum(lower, resid), S=mask, route="dual")


def _cg(A: np.ndarray, h: np.ndarray, *, rtol: float = 1e-9, maxiter: int = 400) -> np.ndarray:
    """Batched Jacobi-preconditioned conjugate gradients for the SPD systems A b = h (B×n×n).

    For wide blocks (n ≪ d²) the columns of K are nearly orthogonal and G is well
    conditioned (condition number ≈ 2.4 for Gaussian d = 256, n = 1024), so a dozen products
    with the already formed G (n² each) replace an O(n³) factorisation. Accuracy only affects
    the *quality* of the dual bound and of the rounded candidate, never its validity.
    """
    dinv = 1.0 / np.einsum("bii->bi", A)
    x = h * dinv
    r = h - np.matmul(A, x[..., None])[..., 0]
    z = r * dinv
    p = z.copy()
    rz = np.einsum("bi,bi->b", r, z)
    stop = (rtol * np.linalg.norm(h, axis=1)) ** 2
    for _ in range(maxiter):
        if np.all(np.einsum("bi,bi->b", r, r) <= stop):
            break
        Ap = np.matmul(A, p[..., None])[..., 0]
        pAp = np.einsum("bi,bi->b", p, Ap)
        alpha = np.where(pAp > 0, rz / np.where(pAp > 0, pAp, 1.0), 0.0)
        x += alpha[:, None] * p
        r -= alpha[:, None] * Ap
        z = r * dinv
        rz_new = np.einsum("bi,bi->b", r, z)
        beta = np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
        p = z + beta[:, None] * p
        rz = rz_new
    return x


def decide_batch(U: np.ndarray, D: np.ndarray, *, c: float = 1.0, tol: float = 1e-9, route: Route = "auto") -> BatchResult:
    """Enumerate when n ≤ ENUM_MAX_N (exact), else the dual lower bound."""
    from absorb._validate import check_choice

    check_choice(route, ("auto", "enumerate", "dual"), name="route")
    U, D = check_batch(U, D, c=c, tol=tol, enumerate_=route == "enumerate")
    if route == "auto":
        route = "enumerate" if U.shape[1] <= ENUM_MAX_N else "dual"
    if route == "enumerate":
        return enumerate_batch(U, D, c=c, tol=tol)
    if route == "dual":
        return dual_batch(U, D, c=c, tol=tol)
    raise ValueError(f"route {route!r}: expected 'auto', 'enumerate' or 'dual'")


def degenerate_batch(U: np.ndarray, D: np.ndarray, *, tau: float = COLLINEAR_TAU) -> np.ndarray:
    """Which instances fail result 5's hypotheses: d < 2, a zero row of U, a zero column of D,
    or two rows of U with |cos| ≥ 1 − tau (the engine's :func:`~absorb.engine.hypotheses.nondegenerate`)."""
    B, n, d = U.shape
    if d < 2:
        return np.ones(B, dtype=bool)
    norms = np.linalg.norm(U, axis=2)
    zero = np.any(~np.any(U != 0, axis=2), axis=1) | np.any(~np.any(D != 0, axis=1), axis=1)
    V = U / np.where(norms > 0, norms, 1.0)[..., None]
    C = np.abs(np.matmul(V, V.transpose(0, 2, 1)))
    C[:, np.arange(n), np.arange(n)] = 0.0
    return zero | (C.max(axis=(1, 2)) >= 1.0 - tau if n > 1 else np.zeros(B, dtype=bool))
