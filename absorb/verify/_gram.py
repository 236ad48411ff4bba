"""The checker's Gram route at model size (n beyond ``_skeleton2.GRAM_MAX_N``, up to
:data:`LARGE_MAX_N`): its own proof that G − μI is positive definite for the recorded μ, with
G = QᵀQ the Gram matrix of the degree-2 skeleton's (Q) or the gated skeleton's (Qg) columns,
built here by row blocks (only the lower triangle is kept: one n×n float64 array), then

* Gershgorin's discs on the exact symmetric G − μI (scaled to a unit-size diagonal by exact
  powers of two), the radii from the computed lower entries and their error bounds — enough
  for generic weights, and no factorisation; else
* a float Cholesky of fl(Ĥ − D), D = μΣ² + a margin read off the diagonal alone, in place
  (LAPACK ``dpotrf``): its running to completion proves G − μI ≻ 0 (the a-priori criterion of
  Rump, BIT 46 (2006); the rounding analysis is in :func:`cholesky_margin`).

Every entry's error bound is rank-one, |G_ij − Ĝ_ij| ≤ k·t_i t_j + 2^-990 (Cauchy–Schwarz on
the products of absolute dot products that bound a rounded product of dot products), so no
n×n error matrix is formed. Nothing here is shared with the producer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block
from absorb.verify._numerics import _gamma, _parse_number

LARGE_MAX_N = 16384
"""Beyond this width the checker declines the Gram route (reported not re-checked)."""
_TINY = 2.0**-990  # every underflowed rounding of an entry (each ≤ 2^-1074)
_ETA = 2.0**-1074
_U = 2.0**-53
_BLOCK_BYTES = 48 << 20


def _g(k: int) -> float:
    """γ_k raised by 2 % (its own rounding)."""
    return 1.02 * _gamma(k)


def _row_norms(A: np.ndarray) -> np.ndarray:
    """Upper bounds of the rows' Euclidean norms: √(ŝ(1 + 2γ_k)) ≥ √(ŝ/(1 − γ_k)) for the float
    sum of squares ŝ (k terms), with the root's and the products' roundings in the 2 %."""
    k = A.shape[1]
    return np.sqrt(np.einsum("ij,ij->i", A, A) * (1 + 2 * _g(k + 2))) * (1 + 4 * _U)


def _rows(block: Block) -> tuple[Callable[[int, int], np.ndarray], np.ndarray, float] | None:
    """(rows(i0, i1) = Ĝ[i0:i1, :i1], t, k) with |G_ij − Ĝ_ij| ≤ k·t_i t_j + 2^-990.

    Ungated (Q): G_ij = (w_i·w_j)(u_i·u_j)² (:func:`absorb.verify._skeleton2.gram_s2`), within
    γ_{3d+2}·(|w_i|·|w_j|)(|u_i|·|u_j|)² of the float value, and |a|·|b| ≤ ‖a‖‖b‖: t_i =
    ‖w_i‖‖u_i‖², k = γ_{3d+4} (two spare roundings for t's products). Gated (Qg):
    G_ij = 2(w_i·w_j)[(g_i·g_j)(u_i·u_j) + (g_i·u_j)(u_i·g_j)] within γ_{3d+3} of twice the
    same with absolute values, each of its two products ≤ ‖w_i‖‖w_j‖‖g_i‖‖g_j‖‖u_i‖‖u_j‖:
    t_i = ‖w_i‖‖g_i‖‖u_i‖, k = 4γ_{3d+5}. None outside the checker's range."""
    from absorb.verify._skeleton2 import _gram_ok

    U, D = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down, dtype=np.float64)
    Wt = np.ascontiguousarray(D.T)
    d = U.shape[1]
    if block.gated:
        Gt = np.asarray(block.W_gate, dtype=np.float64)
        if not _gram_ok(Gt, U, D):
            return None

        def gated(i0: int, i1: int) -> np.ndarray:
            with np.errstate(all="ignore"):
                return 2 * (Wt[i0:i1] @ Wt[:i1].T) * ((Gt[i0:i1] @ Gt[:i1].T) * (U[i0:i1] @ U[:i1].T)
                                                      + (Gt[i0:i1] @ U[:i1].T) * (U[i0:i1] @ Gt[:i1].T))

        t = _row_norms(Wt) * _row_norms(Gt) * _row_norms(U) * (1 + 4 * _U)
        return gated, t, 4 * _g(3 * d + 5)
    if not _gram_ok(U, D):
        return None

    def ungated(i0: int, i1: int) -> np.ndarray:
        q = U[i0:i1] @ U[:i1].T
        with np.errstate(all="ignore"):
            return (Wt[i0:i1] @ Wt[:i1].T) * (q * q)

    nu = _row_norms(U)
    return ungated, _row_norms(Wt) * nu * nu * (1 + 4 * _U), _g(3 * d + 4)


def cholesky_margin(n: int, tr: float, top: float, e2: float) -> float:
    """m such that λ_min(H − D) > −m for the exact H when the Cholesky of B = fl(Ĥ_sym − D) (D a
    float diagonal) ran to completion with a finite factor R of positive diagonal (tr ≥ Σ b_ii
    ≥ 0, top ≥ max b_ii, e2 ≥ ‖H − Ĥ_sym‖₂).

    Every entry of R is the rounded quotient (or product with a rounded reciprocal) of b_ij
    minus a sum of ≤ n products in any order, or the rounded root of such a difference, so
    RᵀR = B + Δ with |Δ| ≤ θ|R|ᵀ|R| + τ, θ = γ_{n+4} (≥ n + 2 roundings; Higham's Lemma 8.4
    argument) and τ the underflows: ≤ n + 3 absolute errors of 2^-1075 per entry, one of them
    multiplied by r_jj ≤ √(2·top + 1), τ ≤ (n + 6 + 2√(top + 1))·2^-1074. Column norms:
    ‖r_j‖² = b_jj + Δ_jj ≤ (b_jj + τ)/(1 − θ); (|R|ᵀ|R|)_ij ≤ ‖r_i‖‖r_j‖, and a nonnegative
    bound's 2-norm bounds Δ's: ‖Δ‖₂ ≤ θ(tr + nτ)/(1 − θ) + nτ. R nonsingular: B + Δ ≻ 0,
    λ_min(B) > −‖Δ‖₂. The diagonal shift rounded once (≤ u·top), Weyl for H − Ĥ_sym (e2).
    The handful of float operations here: the factor 1 + 2^-20."""
    th = _g(n + 4)
    tau = (n + 6 + 2 * math.sqrt(top + 1)) * _ETA
    return (th * (tr + n * tau) / (1 - th) + n * tau + _U * top + e2) * (1 + 2.0**-20)


def large_positive_definite(block: Block, m: float) -> tuple[bool, str]:
    """Whether G − mI is proved positive definite for the exact G of ``block``'s (Q) / (Qg)
    columns (m ≥ 0 a float): Gershgorin, else Rump's criterion (:func:`cholesky_margin`), both
    on the diagonally scaled H = ΣGΣ.

    Scaling: Σ = diag(σ), σ_i = 2^-e_i bringing t_i (≈ √G_ii) into [1/2, 1), e_i clipped to
    [−400, 400]; Σ is nonsingular, so G − mI ≻ 0 ⇔ H − mΣ² ≻ 0 (congruence). σ_iσ_j is an exact
    power of two in [2^-800, 2^800], so Ĥ_ij = fl(Ĝ_ij·σ_iσ_j) rounds only on underflow, and
    |H_ij − Ĥ_ij| ≤ k(σt)_i(σt)_j + 2^-990·σ_iσ_j + 2^-1074 =: E_ij (three rank-one terms:
    ‖E‖₂ and E's row sums from their vectors). v_i ≥ mσ_i² (rounded up).

    Gershgorin on the exact symmetric H − diag(mσ²): every eigenvalue lies in some disc, so
    Ĥ_ii − v_i − Σ_{j≠i}|Ĥ_ij| − Σ_j E_ij > 0 for every i proves it positive definite (the
    entries (i, j > i) read from the computed (j, i)); the float sums of ≤ 2n nonnegative
    terms are raised by (1 + γ_{2n+8}), the radius's few operations by 1 + 8u and 1 + 4u, and
    a float difference a − b is positive exactly when a > b.

    Cholesky: d ≥ v + g entrywise (g the margin from the diagonal before factoring); a float
    Cholesky of fl(Ĥ − diag(d)) that runs to completion gives λ_min(H − diag(d)) > −margin
    (:func:`cholesky_margin`, the diagonal b after the shift), and H − diag(v) = (H − diag(d))
    + diag(d − v) ≻ 0 when g > margin."""
    with np.errstate(all="ignore"):
        return _large_pd(block, m)


def _large_pd(block: Block, m: float) -> tuple[bool, str]:
    n = block.n
    built = _rows(block)
    if built is None:
        return False, "the weights are outside the range of the checker's rounding analysis"
    rows, t, k = built
    if not (np.all(np.isfinite(t)) and math.isfinite(k)):
        return False, "the error bound of the Gram entries is not finite"
    if not np.all(t > 0):
        return False, "a unit's column is zero (a zero diagonal entry of the Gram matrix)"
    _, ex = np.frexp(t)
    sig = np.ldexp(1.0, -np.clip(ex, -400, 400))
    G = np.zeros((n, n))  # the lower triangle of Ĥ
    diag, off = np.empty(n), np.zeros(n)
    step = max(1, _BLOCK_BYTES // (8 * n))
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        B = rows(i0, i1) * (sig[i0:i1, None] * sig[None, :i1])
        if not np.isfinite(np.add.reduce(B, axis=None)):  # a finite sum: every entry finite
            return False, "a Gram entry is not finite"
        G[i0:i1, :i1] = B
        r = np.arange(i1 - i0)
        diag[i0:i1] = B[r, i0 + r]
        A = np.abs(B)
        A[:, i0:i1] = np.tril(A[:, i0:i1], -1)
        off[i0:i1] += A.sum(axis=1)
        off[:i1] += A.sum(axis=0)
    up = 1 + _g(2 * n + 8)
    ts = t * sig  # exact (powers of two, no underflow)
    tsum, tsq, ssum, ssq = (float(x) * up for x in (ts.sum(), np.dot(ts, ts), sig.sum(), np.dot(sig, sig)))
    erow = (k * ts * tsum + _TINY * sig * ssum + n * _ETA) * up
    e2 = (k * tsq + _TINY * ssq + n * _ETA) * up
    v = m * (sig * sig) * (1 + 4 * _U) + _ETA  # ≥ mσ² (two roundings; a subnormal's ≤ 2^-1075 each)
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(erow)) and math.isfinite(e2)):
        return False, "μ·σ² or the error bound is not finite"
    gap = diag - (v + (off * up + erow) * (1 + 8 * _U)) * (1 + 4 * _U)
    if bool(np.all(gap > 0)):
        return True, ""
    top = float(diag.max()) * (1 + 2 * _U)
    tr = float(np.maximum(diag, 0).sum()) * up * (1 + 2 * _U)  # Σ b_ii ≤ Σ Ĥ_ii for a shift d ≥ 0
    g = cholesky_margin(n, tr, top, e2) * (1 + 2.0**-10)
    if not math.isfinite(g):
        return False, "the Cholesky criterion's margin is not finite"
    d = (v + g) * (1 + 4 * _U)  # ≥ v + g
    if not bool(np.all(diag > d)):
        i = int(np.argmin(diag - d))
        return False, (f"Gershgorin disc {int(np.argmin(gap))} of the scaled G − μI reaches 0, and diagonal entry {i} "
                       f"({diag[i]:.3g}) is not above μσ_i² plus the Cholesky criterion's margin {g:.3g}")
    idx = np.diag_indices(n)
    G[idx] = diag - d
    b = G[idx].copy()
    from scipy.linalg.lapack import dpotrf

    R, info = dpotrf(G.T, lower=0, clean=0, overwrite_a=1)
    if info != 0:
        return False, f"the float Cholesky of the scaled G − μI − {g:.3g}·I fails at column {info}"
    if not (np.isfinite(np.add.reduce(R, axis=None)) and bool(np.all(np.diag(R) > 0))):
        return False, "the float Cholesky factor is not finite or has a zero pivot"
    margin = cholesky_margin(n, float(np.maximum(b, 0).sum()) * up, float(b.max()), e2)
    if not (b.min() > 0 and g > margin):
        return False, f"the Cholesky criterion's margin {margin:.3g} exceeds the shift's {g:.3g}"
    return True, ""


def frobenius_sq_up(M: np.ndarray) -> Fraction:
    """An upper bound of ‖M‖²_F: the float sum of squares raised by (1 + γ_{k+4}) when every
    nonzero |m| lies in [2^-400, 2^400] (no square underflows or overflows), else exact."""
    x = np.abs(np.asarray(M, dtype=np.float64)).ravel()
    nz = x[x != 0]
    if nz.size == 0:
        return Fraction(0)
    if float(nz.max()) <= 2.0**400 and float(nz.min()) >= 2.0**-400:
        return Fraction(float(np.dot(x, x)) * (1 + _g(x.size + 4)))
    return sum((Fraction(float(v)) ** 2 for v in nz), Fraction(0))


def mu_bound(mu_rec: Any, M: np.ndarray, prove: Callable[[float], tuple[bool, str]]) -> tuple[float | None, str]:
    """(the lower bound √μ/‖M‖_F on every nonempty S's distance, "") when ``prove(m)`` shows
    G − mI positive definite for a float m ≥ the recorded μ (so ‖Q 1_S‖² ≥ μ|S|; S = ∅ is at
    distance 1); else (None, why)."""
    q = _parse_number(mu_rec)
    if q is None or not q > 0:
        return None, f"recorded μ = {mu_rec!r} is not a positive rational"
    mu = Fraction(int(q.p), int(q.q))
    try:
        m = float(mu)
    except OverflowError:
        return None, f"recorded μ = {mu_rec!r} is beyond float64"
    if Fraction(m) < mu:
        m = float(np.nextafter(m, math.inf))
    if not math.isfinite(m):
        return None, f"recorded μ = {mu_rec!r} is beyond float64"
    ok, why = prove(m)
    if not ok:
        return None, f"G − μI not proved positive definite for recorded μ = {mu_rec}: {why}"
    m2 = frobenius_sq_up(M)
    if m2 == 0:
        return None, "M = 0"
    r = Fraction(mu) / Fraction(m2)
    return (math.sqrt(float(r)) * (1 - 1e-9) if r < 1 else 1.0 - 1e-9), ""  # (r past float64: S = ∅'s bound, 1)
