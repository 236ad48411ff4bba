"""The Gram route at model size (issue 26): λ_min of the Gram matrix G = QᵀQ of the degree-2 /
gated skeleton's homogeneous columns bounded below without eigvalsh, without the n×n error
matrix and without a residual product, so that n = 16384 (Persimmon's and Nemotron's ReLU²
blocks, d = 4096) is decided in minutes with at most two n×n float64 arrays alive.

G is built by row blocks from a few GEMMs (:class:`LowerGram`): only its lower triangle, each
row block Ĝ[I, :max I] once. Every entry obeys |G_ij − Ĝ_ij| ≤ coef·s_i s_j + 2^-1000 with a
rank-one s (Cauchy–Schwarz on the products of absolute dot products that the small route's
entrywise E uses), so ‖E‖₂ and E's row sums are read off s without forming E.

Both proofs run on H = ΣGΣ, Σ a diagonal of exact powers of two that brings every unit's
√G_ii to about 1 (:func:`scaled`; λ_min(G) ≥ λ_min(H)/max σ_i²), so that units of very
different norms weigh alike. Two proofs, the cheaper first (:func:`large_lower_bound`):

* Gershgorin on the exact symmetric G, with each row's radius taken from the computed lower
  entries and their bounds — it concludes in the same pass for generic (random-like) weights,
  whose off-diagonal entries are ~d^-1.5 of the diagonal;
* Rump's a-priori criterion ("Verification of positive definiteness", BIT 46, 2006): a float
  Cholesky of fl(Ĝ − cI) that runs to completion proves λ_min(G) ≥ c − margin, the margin read
  off the diagonal alone (:func:`rump_margin`). One in-place LAPACK ``dpotrf`` per try.

For n ≤ :data:`absorb.engine.skeleton2.GRAM_MAX_N` the small route (eigvalsh, Cholesky and its
residual) is kept as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.model.block import Block
from absorb.rigorous import UNIT_ROUNDOFF, all_finite, frobenius_bounds, gamma, magnitudes_ok, row_slices

LARGE_MAX_N = 16384
"""The large route runs up to this width: two n×n float64 arrays (4 GiB at n = 16384)."""
TINY = 2.0**-1000
"""The absolute term of every Gram entry's error bound (the underflows after a cancellation;
as ``skeleton2._GRAM_TINY``)."""
_ETA = 2.0**-1074  # the smallest subnormal
_U = UNIT_ROUNDOFF


@dataclass(frozen=True)
class LowerGram:
    """The Gram matrix of the homogeneous condition's columns, by row blocks.

    ``rows(i0, i1)`` is Ĝ[i0:i1, :i1] (float64; only the entries on or below the diagonal are
    used); every used entry has |G_ij − Ĝ_ij| ≤ coef·s_i·s_j + tiny·r_i·r_j + eta for the exact G
    of these float64 weights (r = 1 when None); ``full()`` is the small route's (Ĝ, E)."""

    n: int
    rows: Callable[[int, int], np.ndarray]
    s: np.ndarray
    coef: float
    full: Callable[[], tuple[np.ndarray, np.ndarray] | None]
    r: np.ndarray | None = None
    tiny: float = TINY
    eta: float = 0.0


def scaled(lg: LowerGram) -> tuple[LowerGram, int] | None:
    """(H, k): H = ΣĜΣ by row blocks with Σ = diag(σ), σ_i = 2^-e_i the power of two that brings
    s_i (≈ √G_ii) into [1/2, 1) (e_i clipped to [−400, 400]), and 2^k = max σ_i.

    Congruence: G = Σ⁻¹HΣ⁻¹ for the exact H = ΣGΣ, so xᵀGx = yᵀHy with y = Σ⁻¹x, ‖y‖ ≥ ‖x‖/2^k:
    λ_min(G) ≥ λ_min(H)·2^-2k. The diagonal scaling makes every unit weigh alike in the
    Gershgorin radii and in the Cholesky criterion's trace term (units of very different
    norms otherwise let the largest set the margin). Each σ_iσ_j is an exact power of two in
    [2^-800, 2^800] and Ĥ_ij = fl(Ĝ_ij·σ_iσ_j) rounds only on underflow (≤ 2^-1075): the
    bound becomes coef·(σs)_i(σs)_j + tiny·(σr)_i(σr)_j + σ_iσ_j·eta + 2^-1074 (eta = 0 here).
    None when some s_i is 0 (a zero Gram diagonal: not positive definite)."""
    if lg.r is not None or lg.eta != 0 or not np.all(lg.s > 0):
        return None
    _, e = np.frexp(lg.s)
    e = np.clip(e, -400, 400)
    sig = np.ldexp(1.0, -e)

    def rows(i0: int, i1: int) -> np.ndarray:
        with np.errstate(under="ignore"):
            return lg.rows(i0, i1) * (sig[i0:i1, None] * sig[None, :i1])

    return LowerGram(lg.n, rows, lg.s * sig, lg.coef, lg.full, r=sig, tiny=lg.tiny, eta=_ETA), int(-e.min())


def _norms_up(A: np.ndarray, k: int) -> np.ndarray:
    """Float upper bounds of the Euclidean norms of A's rows (length k): the computed sum of
    squares is within γ_k of the exact one, so ‖a‖ ≤ √(ŝ/(1 − γ_k)); raised by (1 + γ_{k+4})
    (≥ (1 − γ_k)^-1/2 and the root's and the raise's own roundings)."""
    return np.sqrt(np.einsum("ij,ij->i", A, A)) * (1 + gamma(k + 4))


def lower_gram_skeleton2(block: Block, full: Callable[[], tuple[np.ndarray, np.ndarray] | None]) -> LowerGram | None:
    """The degree-2 skeleton's (Q) columns vec(w_i ⊗ u_i u_iᵀ): Ĝ_ij = fl(fl(w_i·w_j)·fl(u_i·u_j)²)
    (the identity and the rounding analysis of :func:`absorb.engine.skeleton2.gram_skeleton2`):
    |Ĝ_ij − G_ij| ≤ γ_{3d+2}·(|w_i|·|w_j|)(|u_i|·|u_j|)² ≤ γ_{3d+2}·s_i s_j with s_i = ‖w_i‖‖u_i‖²
    (Cauchy–Schwarz; ŝ from :func:`_norms_up`, raised by one more (1 + γ₂) for its two
    products). None outside :func:`absorb.rigorous.magnitudes_ok`."""
    U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down))
    if not magnitudes_ok(U, D):
        return None
    n, d = U.shape
    DT = np.ascontiguousarray(D.T)

    def rows(i0: int, i1: int) -> np.ndarray:
        W, Q = DT[i0:i1] @ DT[:i1].T, U[i0:i1] @ U[:i1].T
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            return W * (Q * Q)

    nu = _norms_up(U, d)
    s = _norms_up(DT, d) * nu * nu * (1 + gamma(3))
    return LowerGram(n, rows, s, gamma(3 * d + 2), full)


def lower_gram_gated(block: Block, full: Callable[[], tuple[np.ndarray, np.ndarray] | None]) -> LowerGram | None:
    """The gated skeleton's (Qg) columns vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)):
    Ĝ_ij = 2 w_i·w_j [(g_i·g_j)(u_i·u_j) + (g_i·u_j)(u_i·g_j)] (the identity and the rounding of
    :func:`absorb.engine.skeleton2.gram_gated`, γ_{3d+3} times 2|w_i|·|w_j|[(|g_i|·|g_j|)(|u_i|·|u_j|)
    + (|g_i|·|u_j|)(|u_i|·|g_j|)] ≤ 4 s_i s_j with s_i = ‖w_i‖‖g_i‖‖u_i‖ by Cauchy–Schwarz)."""
    Gt, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    if not magnitudes_ok(Gt, U, D):
        return None
    n, d = U.shape
    DT = np.ascontiguousarray(D.T)

    def rows(i0: int, i1: int) -> np.ndarray:
        W, GG, UU = DT[i0:i1] @ DT[:i1].T, Gt[i0:i1] @ Gt[:i1].T, U[i0:i1] @ U[:i1].T
        GU, UG = Gt[i0:i1] @ U[:i1].T, U[i0:i1] @ Gt[:i1].T  # g_i·u_j and u_i·g_j
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            return 2 * W * (GG * UU + GU * UG)

    s = _norms_up(DT, d) * _norms_up(Gt, d) * _norms_up(U, d) * (1 + gamma(3))
    return LowerGram(n, rows, s, 4 * gamma(3 * d + 3), full)


def _e_norm_up(lg: LowerGram) -> tuple[float, np.ndarray]:
    """(an upper bound of ‖E‖₂, upper bounds of E's row sums) for the entrywise bound
    E = coef·ssᵀ + tiny·rrᵀ + eta·11ᵀ (symmetric, nonnegative, a sum of three rank-one terms:
    ‖E‖₂ ≤ coef‖s‖² + tiny‖r‖² + n·eta, row i ≤ coef·s_i·Σs + tiny·r_i·Σr + n·eta); sums of n
    nonnegative terms raised by (1 + γ_{2n+8}), which also covers the few products."""
    n, up = lg.n, 1 + gamma(2 * lg.n + 8)
    r = np.ones(n) if lg.r is None else lg.r
    with np.errstate(over="ignore", invalid="ignore"):
        s2, r2 = float(np.dot(lg.s, lg.s)) * up, float(np.dot(r, r)) * up
        ssum, rsum = float(lg.s.sum()) * up, float(r.sum()) * up
        norm = (lg.coef * s2 + lg.tiny * r2 + n * lg.eta) * up
        return norm, (lg.coef * lg.s * ssum + lg.tiny * r * rsum + n * lg.eta) * up


def lower_pass(lg: LowerGram, store: bool) -> tuple[np.ndarray | None, np.ndarray, np.ndarray] | None:
    """One pass over the row blocks: (the lower triangle of Ĝ in an n×n array, or None when not
    stored; diag(Ĝ); off) with off_i the float sum of |Ĝ_ij| over j < i and |Ĝ_ji| over j > i
    (the computed lower entries, each used once). None when an entry is not finite."""
    n = lg.n
    G = np.zeros((n, n)) if store else None
    diag, off = np.empty(n), np.zeros(n)
    for sl in row_slices(n, n):
        i0, i1 = sl.start, sl.stop
        B = lg.rows(i0, i1)
        if not all_finite(B):
            return None
        k = np.arange(i1 - i0)
        diag[i0:i1] = B[k, i0 + k]
        if G is not None:
            G[i0:i1, :i1] = B
        A = np.abs(B)
        A[:, i0:i1] = np.tril(A[:, i0:i1], -1)  # the strictly lower entries only
        off[i0:i1] += A.sum(axis=1)
        off[:i1] += A.sum(axis=0)
    return G, diag, off


def gershgorin_bound(lg: LowerGram, diag: np.ndarray, off: np.ndarray) -> float | None:
    """A rigorous lower bound of λ_min(G) by Gershgorin's theorem on the exact symmetric G
    (its eigenvalues are real and each lies in a disc |λ − G_ii| ≤ Σ_{j≠i} |G_ij|), so
    λ_min(G) ≥ min_i (Ĝ_ii − Σ_{j≠i}|Ĝ_ij| − Σ_j E_ij) with E the entrywise bound (G_ij for
    j > i is G_ji, bounded through the computed Ĝ_ji). ``off`` is a float sum of ≤ n
    nonnegative terms (raised by 1 + γ_{2n+8}); the radius adds ≤ 4 roundings (the factor
    1 + 8u) and the final difference one (a positive result is lowered by 2u). None when not
    positive."""
    _, erow = _e_norm_up(lg)
    with np.errstate(over="ignore", invalid="ignore"):
        rad = (off * (1 + gamma(2 * lg.n + 8)) + erow) * (1 + 8 * _U)
        lb = float(np.min(diag - rad))
    if not (math.isfinite(lb) and lb > 0):
        return None
    return lb * (1 - 2 * _U)


def rump_margin(n: int, bdiag_sum: float, bdiag_max: float, e_norm: float) -> float:
    """An upper bound m with λ_min(G) ≥ c − m whenever LAPACK's Cholesky of B = fl(Ĝ − cI)
    (the lower triangle of Ĝ mirrored, the diagonal shifted in floats) runs to completion
    with a finite factor R̂ of positive diagonal (Rump 2006, Thm 2.3; derived here).

    The backward error (Higham, *Accuracy and Stability*, Thm 10.3 and Lemma 8.4): each entry
    r_ij (i < j) of R̂ is (b_ij − Σ_{k<i} r_ki r_kj)/r_ii with the sum in any order and
    grouping (blocked, FMA or not) and the division either rounded once or done as a product
    with a rounded reciprocal (LAPACK ``dpotf2``, OpenBLAS's triangular solves), r_ii the
    rounded root of the rounded b_ii − Σ r_ki²: every entry carries ≤ n + 2 relative
    roundings, so R̂ᵀR̂ = B + Δ with |Δ| ≤ θ|R̂|ᵀ|R̂| + τ, θ = γ_{n+3} (one to spare). Cauchy–
    Schwarz: (|R̂|ᵀ|R̂|)_ij ≤ ‖r_i‖‖r_j‖ (columns of R̂), and ‖r_i‖² = b_ii + Δ_ii ≤ (b_ii + τ)/(1
    − θ); so ‖Δ‖₂ ≤ θ Σ‖r_i‖² + nτ ≤ θ(tr B + nτ)/(1 − θ) + nτ (a matrix dominated entrywise
    by a nonnegative one has no larger 2-norm; ‖vvᵀ‖₂ = ‖v‖²). R̂ nonsingular, so B + Δ = R̂ᵀR̂
    ≻ 0 and λ_min(B) > −‖Δ‖₂. Underflow (entries of τ): each underflowed product or quotient
    errs by ≤ 2^-1075 absolutely, ≤ n + 2 of them per entry, the quotient's multiplied back
    by r_ii ≤ √(2 b_ii + 1): τ = (n + 4 + 2√(max b + 1))·2^-1074 per entry. The diagonal shift
    rounds once: Ĝ − cI = B − D_r, |D_r| ≤ u·max b_ii; and λ_min(G) ≥ λ_min(Ĝ_sym) − ‖E‖₂
    (Weyl). Together λ_min(G) > c − [θ(tr B + nτ)/(1 − θ) + nτ + u·max b + ‖E‖₂]. tr B is a
    float sum of n nonnegative terms (raised by 1 + γ_{2n+8}); the few operations here are
    covered by the final factor 1 + 2^-20."""
    theta = gamma(n + 3)
    tau = (n + 4 + 2 * math.sqrt(bdiag_max + 1)) * _ETA
    tr = bdiag_sum * (1 + gamma(2 * n + 8))
    m = theta * (tr + n * tau) / (1 - theta) + n * tau + _U * bdiag_max + e_norm
    return m * (1 + 2.0**-20)


def cholesky_succeeds(G: np.ndarray, c: float, copy: bool) -> tuple[bool, float, float]:
    """Whether LAPACK's Cholesky of fl(Ĝ − cI) (the lower triangle of ``G``) runs to completion
    with a finite factor of positive diagonal; with B's diagonal sum and maximum (for
    :func:`rump_margin`). ``copy``: factor a copy (G is kept) or G itself (it is overwritten)."""
    from scipy.linalg.lapack import dpotrf

    n = G.shape[0]
    A = G.copy() if copy else G
    idx = np.diag_indices(n)
    A[idx] = A[idx] - c
    bd = A[idx].copy()
    if not (np.all(np.isfinite(bd)) and np.all(bd > 0)):
        return False, 0.0, 0.0
    R, info = dpotrf(A.T, lower=0, clean=0, overwrite_a=1)  # A.T is Fortran-ordered: A's lower triangle, in place
    ok = info == 0 and all_finite(R) and bool(np.all(np.diag(R) > 0))
    return ok, float(bd.sum()), float(bd.max())


def large_lower_bound(lg: LowerGram, need: float) -> tuple[float, str] | None:
    """(μ, how): μ > ``need`` a rigorous lower bound of λ_min(G) (how: ``gershgorin`` or
    ``cholesky``), or None.

    On H = ΣGΣ (:func:`scaled`), μ = μ_H·2^-2k. One pass stores Ĥ's lower triangle;
    Gershgorin first (μ_H = half its bound, so the
    checker's own, slightly different bound still clears μ); else Rump's criterion with c
    tried from min_i Ĝ_ii/4 down to the least c with margin ≤ c/4 and c/2 > need (at most
    three float Cholesky factorisations of a copy of Ĥ): μ_H = c/2 ≤ c − margin. Peak memory:
    Ĥ and one copy (2n² float64) plus the row blocks (:func:`absorb.rigorous.row_slices`)."""
    if lg.n == 0 or not all_finite(lg.s):
        return None
    sc = scaled(lg)
    if sc is None:
        return None
    lg, k = sc  # H = ΣGΣ: λ_min(G) ≥ λ_min(H)·2^-2k
    with np.errstate(over="ignore"):
        got = _lower_bound_h(lg, math.ldexp(need, 2 * k) * (1 + 4 * _U))
    if got is None:
        return None
    mu = math.ldexp(got[0], -2 * k)
    return (mu, got[1]) if mu >= 2.0**-1000 and mu > need else None  # (normal: the scaling was exact)


def _lower_bound_h(lg: LowerGram, need: float) -> tuple[float, str] | None:
    n = lg.n
    if not math.isfinite(need):
        return None
    out = lower_pass(lg, store=True)
    if out is None or out[0] is None:
        return None
    G, diag, off = out
    lb = gershgorin_bound(lg, diag, off)
    if lb is not None and lb / 2 > need:
        return lb / 2, "gershgorin"
    e_norm, _ = _e_norm_up(lg)
    dmin, dmax = float(diag.min()), float(diag.max())
    if not (math.isfinite(e_norm) and dmin > 0 and math.isfinite(dmax)):
        return None
    m_bar = rump_margin(n, float(diag.sum()) * (1 + 2 * _U), dmax * (1 + 2 * _U), e_norm)  # B's diagonal ≤ Ĝ's (c > 0)
    c_min = max(4 * m_bar, 2 * need) * (1 + 4 * _U)
    if not c_min < dmin:
        return None
    tries = [c for c in (dmin / 4, dmin / 64) if c > c_min] + [c_min]
    for k, c in enumerate(tries):
        ok, bsum, bmax = cholesky_succeeds(G, c, copy=k < len(tries) - 1)
        if ok and 4 * rump_margin(n, bsum, bmax, e_norm) <= c:
            return c / 2, "cholesky"
    return None


def exceeds(mu: float, tol: float, M: np.ndarray) -> tuple[bool, float]:
    """(μ > tol²‖M‖²_F proved, an upper bound of ‖M‖_F) — :func:`absorb.rigorous.frobenius_bounds`,
    the comparison in exact rationals."""
    hi = frobenius_bounds(M)[1]
    return hi > 0 and Fraction(mu) > (Fraction(tol) * Fraction(hi)) ** 2, hi
