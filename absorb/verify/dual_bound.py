"""Independent checker of a low-rank dual certificate (docs/mathematics.md §4 "Certificate of
impossibility", §5 "Floating point and soundness").

For ``U = W_up`` (n×d, rows u_i), ``D = W_down`` (d×n, columns w_i), a target ``T`` (d×d)
and any ``Y ∈ R^{d×d}``, every ``b ∈ [0,1]^n`` satisfies

    ‖D diag(b) U − T‖_F · ‖Y‖_F  ≥  σ⟨T − D diag(b) U, Y⟩          (Cauchy–Schwarz, σ = ±1)
                                =  σ⟨T, Y⟩ − Σ_i b_i σ s_i        (s_i = w_iᵀ Y u_i)
                                ≥  σ⟨T, Y⟩ − Σ_i max(0, σ s_i)     (0 ≤ b_i ≤ 1),

so ``max_σ (σ⟨T,Y⟩ − Σ_i max(0, σ s_i)) / ‖Y‖_F`` is a lower bound on the distance from
``T`` of every ``D[:,S] U[S,:]`` — whatever produced ``Y``. It is never smaller than the
form ``(|⟨T,Y⟩| − Σ_i |s_i|) / ‖Y‖_F`` of docs/mathematics.md §4, and it is exact for the residual
of the box-constrained least-squares problem (its KKT conditions make the two terms
``‖Y‖²`` and 0), so it can also certify when the unconstrained real solution exists but
leaves the box [0,1]^n. A certificate is ``Y = A Bᵀ`` (A, B: d×r);
then ``w_iᵀ Y u_i = Σ_k (w_iᵀ a_k)(b_kᵀ u_i)``, ``⟨T, Y⟩ = ⟨T B, A⟩`` and
``‖Y‖_F² = ⟨AᵀA, BᵀB⟩``, all computable in O(n·d·r) with two matrix products.

This module recomputes that bound from scratch and returns a number that is a true lower
bound for the real-number quantity, for the exact values stored in the arrays. It imports
only numpy and the standard library (nothing from ``absorb.search`` / ``absorb.engine``),
so a bug in a search backend cannot leak into the check of its own output.

Rounding-error account (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1):
all arithmetic is IEEE binary64, round to nearest, unit roundoff ``u = 2⁻⁵³``,
``γ_k = k u / (1 − k u)``.

* A dot product of length k computed in *any* order, with or without FMA — which covers
  every conventional (non-Strassen) BLAS ``gemm``, numpy's pairwise ``sum`` and ``einsum`` —
  satisfies ``|fl(xᵀy) − xᵀy| ≤ γ_k |x|ᵀ|y| + k·η`` with ``η = 2⁻¹⁰⁷⁴`` covering underflow
  (additions whose result is subnormal are exact; each product adds at most η/2).
* ``|x|ᵀ|y| ≤ ‖x‖₂‖y‖₂`` lets every matrix-product error be charged to row/column norms,
  which cost one extra sweep over the weights instead of a second product with ``|U|``,
  ``|D|``.
* A sum of m non-negative floats computed in any order is ≥ (1 − γ_m) × the true sum, so
  ``true ≤ fl / (1 − γ_m)``.
* Every scalar or element-wise step of the bookkeeping is followed by ``nextafter`` in the
  safe direction: a correctly rounded result is within half an ulp of the exact one, so one
  ulp outward is a rigorous bound (this also covers underflow to zero).
* Overflow is not modelled: any non-finite intermediate makes the checker refuse
  (``absolute = 0``). A finite floating sum of squares implies no entry overflowed. A bound
  that comes out 0 is computed once more on a balanced copy (each unit's row u_i and column
  w_i scaled by 2^±k_i, exactly, to comparable sizes): the products w_i u_iᵀ are the same, so
  a block written as u_i·2⁻⁵³⁴, w_i·2⁵³⁴ is checked as the unscaled one is.

float32 weights (both matrices) take the **float32 route**: the certificate is rounded to
float32 (``Y' = fl32(A) fl32(B)ᵀ`` is just another dual matrix; the bound is for it), the
two big products run in float32 BLAS over chunks of ``F32_CHUNK`` = 512 terms whose
partial sums are added in float64, and the per-row sums of squares run in float32. The
same account applies with binary32's ``u = 2⁻²⁴``, ``η = 2⁻¹⁴⁹`` (one extra rounding per
chunk is allowed for libraries that accumulate in float64 and round once). The leading
error term is charged to ``Σ_k ‖a_k‖|P̂_ik|`` rather than ``‖u_i‖ Σ_k ‖a_k‖‖b_k‖``, so
float32 rounding costs about 0.3 % of the bound at LLaMA size. A canary product checks
once per process that float32 ``matmul`` really accumulates in at least 21 bits (not
bfloat16/TF32); if it does not, or if anything overflows in float32, or if the float32
bound comes out 0, the check is redone in float64. float16 (and mixed) inputs are
converted to float64 exactly, block by block (at most ``block_bytes``, default 8 MiB, of
converted copy at a time), so a low-precision model is never duplicated in float64 as a
whole. Cost: one ``U @ B``, one ``Dᵀ @ A`` and one sum of squares per row of ``U`` and
column of ``D``: about 1.4 passes over float32 weights, 3 over float64 ones
(docs/performance-scale.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["DualBound", "ResidualBound", "check_dual_bound", "check_residual"]

_U = 2.0**-53  # unit roundoff of binary64 with round-to-nearest
_ETA = 2.0**-1074  # smallest positive subnormal: absolute slack per underflowing operation
_U32 = 2.0**-24  # the same two constants for binary32 (the float32 product route)
_ETA32 = 2.0**-149

#: length of the float32 partial dot products of the float32 route (see ``_project_rows``)
F32_CHUNK = 512


# --------------------------------------------------------------------------- rounding --


def _gamma(k: int, unit: float = _U) -> float:
    """A float ≥ γ_k = k·u / (1 − k·u) (u = ``unit``); +inf when k·u ≥ 1/2."""
    ku = float(k) * unit  # exact: integer k < 2⁵³ times a power of two
    if not ku < 0.5:
        return math.inf
    return math.nextafter(ku / math.nextafter(1.0 - ku, 0.0), math.inf)


def _one_minus_gamma(k: int, unit: float = _U) -> float:
    """A float ≤ 1 − γ_k (used to bound a true non-negative sum by fl(sum) / (1 − γ_k))."""
    return math.nextafter(1.0 - _gamma(k, unit), 0.0)


def _slack(k: float, eta: float = _ETA) -> float:
    """A float ≥ k·η: the underflow allowance of a dot product of length k."""
    return math.nextafter(float(k) * eta, math.inf)


def _up(x: np.ndarray | float) -> np.ndarray:
    return np.nextafter(x, np.inf)


def _dn(x: np.ndarray | float) -> np.ndarray:
    return np.nextafter(x, -np.inf)


def _sum_up(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """Upper bound on the exact sum of a non-negative float64 array (along ``axis``)."""
    m = x.size if axis is None else x.shape[axis]
    return _up(_up(x.sum(axis=axis)) / _one_minus_gamma(max(m, 1)))


def _sqnorm_up(sq: np.ndarray, k: int, unit: float = _U, eta: float = _ETA) -> np.ndarray:
    """Upper bound on ‖x‖₂ from a computed ``fl(xᵀx)`` of length ``k`` (computed with unit
    roundoff ``unit`` and underflow step ``eta``)."""
    return _up(np.sqrt(_up(_up(sq + _slack(k, eta)) / _one_minus_gamma(k, unit))))


# ------------------------------------------------------------------------------ result --


@dataclass(frozen=True)
class DualBound:
    """A rigorous lower bound on ``min_{b ∈ [0,1]^n} ‖D diag(b) U − T‖_F``.

    ``absolute`` is that bound (0.0 when the certificate proves nothing), ``relative`` is
    ``absolute / ‖T‖_F`` rounded down. The parts are kept for reports, for the better sign
    σ: ``trace_lower`` ≤ σ⟨T, Y⟩, ``leak_upper`` ≥ Σ_i max(0, σ w_iᵀ Y u_i),
    ``y_norm_upper`` ≥ ‖Y‖_F,
    ``t_norm_upper`` ≥ ‖T‖_F. Since the relaxation to b ∈ [0,1]^n contains every 0/1
    vector, ``relative > tol`` proves that no index set S reaches relative residual tol.
    """

    absolute: float
    relative: float
    trace_lower: float
    leak_upper: float
    y_norm_upper: float
    t_norm_upper: float
    note: str

    def certifies(self, tol: float) -> bool:
        """True when the bound proves every S has relative residual > ``tol``."""
        return self.relative > tol


# ------------------------------------------------------------------------------- check --


def _float_array(name: str, x: object) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind != "f" or a.dtype.itemsize > 8:
        raise ValueError(
            f"{name}: dtype {a.dtype} is not float16/float32/float64; cast it to float64"
        )
    return a


def _blocks(n: int, per_block: int) -> Iterator[tuple[int, int]]:
    for i0 in range(0, n, per_block):
        yield i0, min(n, i0 + per_block)


def _sgemm_is_ieee() -> bool:
    """Canary for the float32 route: a BLAS-sized float32 product whose exact value needs
    21 significant bits. A library that accumulates float32 products in a narrower format
    (bfloat16, TF32 "fast math") fails it, and the checker then stays in float64."""
    global _SGEMM_OK
    if _SGEMM_OK is None:
        X = np.full((64, 64), 2.0**-20, dtype=np.float32)
        X[:, 0] = 1.0
        got = X @ np.ones((64, 64), dtype=np.float32)
        _SGEMM_OK = bool(np.all(got == np.float32(1.0 + 63 * 2.0**-20)))
    return _SGEMM_OK


_SGEMM_OK: bool | None = None


def _f32_route_error(d: int) -> tuple[float, float]:
    """``(g, s)`` with ``|P̂_ik − P_ik| ≤ g·|x_i|ᵀ|m_k| + s`` for the float32 route.

    Each entry is a sum, in float64, of ``c = ⌈d/L⌉`` float32 partial dot products of
    length ≤ L (``L = F32_CHUNK``). A partial ``p_j`` is off by ≤ γ32_{L+1}·Σ|x||m| +
    (L+1)η32 (one extra rounding allowed, in case the library accumulates in float64 and
    rounds once at the end; η32 = 2⁻¹⁴⁹ covers underflow), and the float64 sum of the c
    exact float32 values is off by ≤ γ_c·Σ_j|p̂_j| ≤ γ_c·((1 + γ32)Σ|x||m| + (d+c)η32).
    """
    L = min(d, F32_CHUNK)
    c = -(-d // L)
    g32 = _gamma(L + 1, _U32)
    g64 = _gamma(c)
    g = _up(g32 + _up(g64 * _up(1.0 + g32)))
    s32 = _slack((d + c) * 2, _ETA32)  # ≥ (d + c)·η32, with room for the γ_c factor
    return float(g), float(s32)


def _project_rows(X: np.ndarray, M: np.ndarray, block_bytes: int
                  ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``fl(X @ M)`` (m×r, float64), upper bounds on the row norms ‖x_i‖ of X (m×d), and
    ``(g, s)`` with ``|fl(X@M) − X@M|_ik ≤ g‖x_i‖‖m_k‖ + s``.

    float64 X: one product (γ_d, dη). float32 X with a float32 M (the float32 route): the
    product runs in float32 over column chunks of X, accumulated in float64 (see
    :func:`_f32_route_error`); the row sums of squares run in float32 (γ32_{d+1}).
    float16 X: blocks of rows are converted to float64 exactly first."""
    m, d = X.shape
    if X.dtype == np.float64:
        return (X @ M, _sqnorm_up(np.einsum("ij,ij->i", X, X), d), _gamma(d), _slack(d))
    if X.dtype == np.float32 and M.dtype == np.float32:
        out = np.zeros((m, M.shape[1]))
        for c0, c1 in _blocks(d, min(d, F32_CHUNK)):
            out += X[:, c0:c1] @ M[c0:c1]
        sq = np.einsum("ij,ij->i", X, X)
        return (out, _sqnorm_up(sq.astype(np.float64), d + 1, _U32, _ETA32),
                *_f32_route_error(d))
    out = np.empty((m, M.shape[1]))
    sq = np.empty(m)
    Mw = M.astype(np.float64, copy=False)
    for i0, i1 in _blocks(m, max(1, block_bytes // (8 * d))):
        Xb = X[i0:i1].astype(np.float64)  # exact conversion
        out[i0:i1] = Xb @ Mw
        sq[i0:i1] = np.einsum("ij,ij->i", Xb, Xb)
    return out, _sqnorm_up(sq, d), _gamma(d), _slack(d)


def _project_cols(X: np.ndarray, M: np.ndarray, block_bytes: int
                  ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The same as :func:`_project_rows` for ``Xᵀ @ M`` and the column norms of X (d×m):
    ``Xᵀ`` is a view, and BLAS reads it transposed (the same dot products, same bounds)."""
    return _project_rows(X.T, M, block_bytes)


def _abs_row_sums(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Upper bounds on ``Σ_k |X_ik| w_k`` and ``Σ_k |X_ik|`` (columns 0 and 1), X n×r,
    w ≥ 0: one n×r×2 product, each entry a non-negative sum of length r."""
    r = X.shape[1]
    out = np.abs(X) @ np.stack([w, np.ones(r)], axis=1)
    return _up(_up(out + _slack(r)) / _one_minus_gamma(r))


def _refuse(note: str, t_up: float = math.inf) -> DualBound:
    return DualBound(0.0, 0.0, 0.0, math.inf, math.inf, t_up, note)


def check_dual_bound(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray | None,
    A: np.ndarray,
    B: np.ndarray,
    *,
    block_bytes: int = 8 << 20,
    float32_products: bool = True,
) -> DualBound:
    """Recompute, from scratch, the dual lower bound certified by ``Y = A Bᵀ``.

    ``float32_products=False``: for float32 weights, the same ``Y`` (A and B rounded to
    float32) with the products in float64 over exact float64 row blocks: about 3 passes over
    the weights instead of 1.4, and no float32 rounding charged to the bound.

    ``U`` is n×d, ``D`` is d×n, ``T`` is d×d (``None`` means ``−I_d``, the plain residual),
    ``A`` and ``B`` are d×r. Returns a :class:`DualBound` whose ``absolute`` is a true lower
    bound on ``min_{b∈[0,1]^n} ‖D diag(b) U − T‖_F`` for the exact stored values, under
    IEEE arithmetic and a conventional (non-Strassen) matrix product (for float32 weights
    the bound is certified by ``Y`` rounded to float32, see the module docstring); see the
    module docstring for the rounding account. Raises ``ValueError`` on wrong shapes or
    dtypes; non-finite data gives a refusal (``absolute = 0``), never an exception.

    Example::

        >>> import numpy as np
        >>> U = np.eye(2); D = np.eye(2)               # D diag(b) U = diag(b)
        >>> A = np.eye(2); B = np.eye(2)               # Y = I
        >>> round(check_dual_bound(U, D, -np.eye(2), A, B).absolute, 12)  # min ‖diag(b)+I‖ = √2
        1.414213562373
        >>> check_dual_bound(U, D, np.eye(2), A, B).absolute  # b = 1 reaches T = I exactly
        0.0
    """
    U = _float_array("U", U)
    D = _float_array("D", D)
    A = _float_array("A", A).astype(np.float64)
    B = _float_array("B", B).astype(np.float64)
    if U.ndim != 2:
        raise ValueError(f"U: expected a 2-d array (n×d), got shape {U.shape}")
    n, d = U.shape
    if D.shape != (d, n):
        raise ValueError(f"D: expected shape {(d, n)} to match U {U.shape}, got {D.shape}")
    if A.ndim != 2 or A.shape[0] != d or A.shape[1] < 1 or B.shape != A.shape:
        raise ValueError(f"A, B: expected equal shapes (d={d}, r≥1), got {A.shape}, {B.shape}")
    if T is not None:
        T = _float_array("T", T).astype(np.float64)
        if T.shape != (d, d):
            raise ValueError(f"T: expected shape {(d, d)}, got {T.shape}")
    if not (np.isfinite(A).all() and np.isfinite(B).all()):
        return _refuse("A or B has a non-finite entry")
    if T is not None and not np.isfinite(T).all():
        return _refuse("T has a non-finite entry")
    res = _routes(U, D, T, A, B, block_bytes, float32_products)
    if res.absolute == 0.0 and (bal := _balanced(U, D)) is not None:
        # units whose row and column sit at far-apart scales (u_i ~ 2⁻⁵³⁴, w_i ~ 2⁵³⁴: the same
        # f) overflow ‖w_i‖² or drown in the underflow slack; the balanced copy has the same
        # products w_i u_iᵀ exactly, hence the same bound to prove
        res = _routes(*bal, T, A, B, block_bytes, float32_products)
    return res


def _balanced(U: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(U', D')`` with u'_i = 2^k_i·u_i and w'_i = 2^−k_i·w_i, the largest entries of the two
    within a factor 4 of each other: every product w_i u_iᵀ, hence D diag(b) U and each
    w_iᵀ Y u_i, is unchanged. None when no unit needs it or when a scaled entry is not exact
    (a subnormal result, an overflow: checked by scaling back)."""
    with np.errstate(all="ignore"):
        mu, mw = np.abs(U).max(axis=1, initial=0.0), np.abs(D).max(axis=0, initial=0.0)
    live = (mu > 0) & (mw > 0) & np.isfinite(mu) & np.isfinite(mw)
    k = np.where(live, (np.frexp(mw)[1] - np.frexp(mu)[1]) // 2, 0).astype(np.int32)
    if not np.any(np.abs(k) > 1):
        return None
    with np.errstate(all="ignore"):
        U2 = np.ldexp(U, k[:, None]).astype(U.dtype)
        D2 = np.ldexp(D, -k[None, :]).astype(D.dtype)
        exact = (np.array_equal(np.ldexp(U2, -k[:, None]), U) and np.array_equal(np.ldexp(D2, k[None, :]), D)
                 and np.isfinite(U2).all() and np.isfinite(D2).all())
    return (U2, D2) if exact else None


def _routes(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, A: np.ndarray, B: np.ndarray,
            block_bytes: int, float32_products: bool) -> DualBound:
    """The float32 route where it applies, else (or where it proves nothing) float64."""
    if U.dtype == D.dtype == np.float32 and not float32_products:
        with np.errstate(over="ignore"):
            A, B = A.astype(np.float32).astype(np.float64), B.astype(np.float32).astype(np.float64)
        if not (np.isfinite(A).all() and np.isfinite(B).all()):
            return _refuse("A or B overflows float32")
        return _bound(U, D, T, A, B, block_bytes)
    if U.dtype == D.dtype == np.float32 and _sgemm_is_ieee():
        # float32 route: Y is rounded to float32 (a slightly different, still valid dual
        # matrix) so that the two big products run in float32 without a float64 copy.
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        if np.isfinite(A32).all() and np.isfinite(B32).all():
            res = _bound(U, D, T, A32, B32, block_bytes)
            if res.absolute > 0.0:
                return res
            # Overflow in float32 or a bound eaten by float32 rounding: redo in float64.
    return _bound(U, D, T, A, B, block_bytes)


def _bound(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, A_in: np.ndarray,
           B_in: np.ndarray, block_bytes: int) -> DualBound:
    """The bound for validated inputs. ``A_in``/``B_in`` are float64, or float32 for the
    float32 route (their exact values, converted to float64, are the certificate)."""
    n, d = U.shape
    A, B = A_in.astype(np.float64), B_in.astype(np.float64)  # exact
    r = A.shape[1]

    g_d = _gamma(d)

    # ‖T‖_F from above.
    if T is None:
        t_up = float(_up(math.sqrt(d)))
    else:
        t_up = float(_sqnorm_up(np.einsum("ij,ij->", T, T), d * d))

    # Column norms of A and B from above.
    nA = _sqnorm_up(np.einsum("ij,ij->j", A, A), d)
    nB = _sqnorm_up(np.einsum("ij,ij->j", B, B), d)
    ab = float(_sum_up(_up(nA * nB)))  # ≥ Σ_k ‖a_k‖‖b_k‖

    # ---- |⟨T, Y⟩| from below: t = Σ_{jk} A_jk (T B)_jk.
    if T is None:
        t_hat = -float(np.einsum("ij,ij->", A, B))
        err_t = _up(_up(_gamma(d * r) * ab) + _slack(d * r))  # |A|ᵀ|B| ≤ Σ‖a_k‖‖b_k‖
    else:
        C = T @ B  # |Ĉ − TB| ≤ γ_d ‖T_j,:‖‖b_k‖ + dη
        t_hat = float(np.einsum("ij,ij->", A, C))
        abs_a = float(_sum_up(np.abs(A)))
        # Σ_jk |A_jk| γ_d ‖T_j‖ ‖b_k‖ ≤ γ_d ‖T‖_F Σ_k ‖a_k‖‖b_k‖ (Cauchy–Schwarz over j).
        e1 = _up(_up(_up(g_d * t_up) * ab) + _up(_slack(d) * abs_a))
        h = _up(_up(_up(np.einsum("ij,ij->", np.abs(A), np.abs(C))) + _slack(d * r))
                / _one_minus_gamma(d * r))
        e2 = _up(_up(_gamma(d * r) * h) + _slack(d * r))
        err_t = _up(e1 + e2)
    # σ⟨T,Y⟩ ≥ σ t̂ − err_t for both signs σ.
    trace_lo = {+1: float(_dn(t_hat - err_t)), -1: float(_dn(-t_hat - err_t))}

    # ---- ‖Y‖_F² = ⟨AᵀA, BᵀB⟩ from above.
    GA, GB = A.T @ A, B.T @ B
    eA = _up(_up(g_d * _up(np.outer(nA, nA))) + _slack(d))
    eB = _up(_up(g_d * _up(np.outer(nB, nB))) + _slack(d))
    core = abs(float(np.einsum("ij,ij->", GA, GB)))
    core_err = _up(_gamma(r * r) * _sum_up(_up(np.abs(GA) * np.abs(GB))))
    cross = _up(_sum_up(_up(eA * _up(np.outer(nB, nB)))) + _sum_up(_up(np.abs(GA) * eB)))
    y_sq_up = _up(_up(_up(core + core_err) + _slack(r * r)) + cross)
    y_up = float(_up(np.sqrt(y_sq_up)))

    # ---- Σ_i |w_iᵀ Y u_i| from above, with Q = Dᵀ A (n×r) and P = U B (n×r).
    P, nU, gP, sP = _project_rows(U, B_in, block_bytes)  # nU ≥ ‖u_i‖
    Q, nD, gQ, sQ = _project_cols(D, A_in, block_bytes)  # nD ≥ ‖w_i‖
    if not (np.isfinite(nU).all() and np.isfinite(nD).all()
            and np.isfinite(P).all() and np.isfinite(Q).all()):
        return _refuse("a row of U or a column of D is non-finite or overflows", t_up)
    # Per unit i, with |Q̂_ik − Q_ik| ≤ gQ‖w_i‖‖a_k‖ + sQ and |P̂_ik − P_ik| ≤ eP_ik :=
    # gP‖u_i‖‖b_k‖ + sP (so |P_ik| ≤ |P̂_ik| + eP_ik):
    #   Σ_k |Q_ik P_ik − Q̂_ik P̂_ik| ≤ Σ_k |Q − Q̂|(|P̂| + eP) + |Q̂| eP
    #   ≤ gQ‖w_i‖ (Σ_k‖a_k‖|P̂_ik| + gP‖u_i‖ Σ_k‖a_k‖‖b_k‖ + sP Σ_k‖a_k‖)
    #     + sQ (Σ_k|P̂_ik| + gP‖u_i‖ Σ_k‖b_k‖ + r·sP)
    #     + gP‖u_i‖ Σ_k|Q̂_ik|‖b_k‖ + sP Σ_k|Q̂_ik|.
    # Using |P̂_ik| rather than ‖u_i‖‖b_k‖ in the leading term keeps the float32 route's
    # larger unit roundoff from eating the bound. The sums over k are two n×r×2 products.
    g_r = _gamma(r)
    na_sum, nb_sum = float(_sum_up(nA)), float(_sum_up(nB))
    pa = _abs_row_sums(P, nA)  # ≥ Σ_k‖a_k‖|P̂_ik|, Σ_k|P̂_ik|
    qb = _abs_row_sums(Q, nB)  # ≥ Σ_k|Q̂_ik|‖b_k‖, Σ_k|Q̂_ik|
    gPu = _up(gP * nU)  # ≥ gP‖u_i‖
    t1 = _up(_up(gQ * nD) * _up(_up(pa[:, 0] + _up(gPu * ab)) + _up(sP * na_sum)))
    t2 = _up(sQ * _up(_up(pa[:, 1] + _up(gPu * nb_sum)) + _up(r * sP)))
    t3 = _up(_up(gPu * qb[:, 0]) + _up(sP * qb[:, 1]))
    prod_err = _up(_up(t1 + t2) + t3)
    QP = Q * P
    s_hat = QP.sum(axis=1)  # fl(Σ_k Q̂_ik P̂_ik): a dot product of length r
    h_i = _up(_up(np.abs(QP).sum(axis=1) + _slack(r)) / _one_minus_gamma(r))  # ≥ Σ_k|Q̂P̂|
    dot_err = _up(_up(g_r * h_i) + _slack(r))
    e_i = _up(dot_err + prod_err)  # |s_i − ŝ_i| ≤ e_i
    # max(0, σ s_i) ≤ max(0, σ ŝ_i + e_i); Σ_i of that from above, for both signs σ.
    leak_up = {sg: float(_sum_up(np.maximum(0.0, _up(sg * s_hat + e_i)))) for sg in (+1, -1)}
    sign = max((+1, -1), key=lambda sg: float(_dn(trace_lo[sg] - leak_up[sg])))
    trace_lower, leak_upper = trace_lo[sign], leak_up[sign]

    if not all(math.isfinite(v) for v in (trace_lower, leak_upper, y_up, t_up)):
        return _refuse("a non-finite intermediate (overflow)", t_up)
    if y_up <= 0.0:
        return _refuse("Y = A Bᵀ is zero", t_up)
    numer = float(_dn(trace_lower - leak_upper))
    if numer <= 0.0:
        return DualBound(0.0, 0.0, trace_lower, leak_upper, y_up, t_up,
                         f"no certificate: leak {leak_upper:.3e} ≥ trace {trace_lower:.3e}")
    absolute = float(_dn(numer / y_up))
    relative = float(_dn(absolute / t_up))
    return DualBound(absolute, relative, trace_lower, leak_upper, y_up, t_up, "ok")


# ---------------------------------------------------------------------- residual check --


@dataclass(frozen=True)
class ResidualBound:
    """``‖D[:,S] U[S,:] − T‖_F`` recomputed in float64: ``computed`` is the floating value,
    ``upper`` a rigorous upper bound on the exact one, ``t_norm_lower`` ≤ ‖T‖_F (so
    ``upper / t_norm_lower`` bounds the relative residual from above)."""

    computed: float
    upper: float
    t_norm: float
    t_norm_lower: float

    @property
    def relative(self) -> float:
        return self.computed / self.t_norm if self.t_norm > 0 else math.inf

    @property
    def relative_upper(self) -> float:
        if not self.t_norm_lower > 0:
            return math.inf
        return float(_up(self.upper / self.t_norm_lower))


def check_residual(
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray | None,
    S: list[int] | tuple[int, ...] | np.ndarray,
    *,
    block_bytes: int = 64 << 20,
) -> ResidualBound:
    """Recompute ``‖D[:,S] U[S,:] − T‖_F`` in float64 with a rigorous upper bound.

    ``T = None`` means ``−I_d``. The product is accumulated over blocks of S (float16/32
    blocks converted exactly, at most ``block_bytes`` each), so it costs ``2·d²·|S|`` flops
    and a d×d float64 accumulator. Each entry of ``R = D_S U_S − T`` is a sum of ``|S| + 1``
    rounded terms, so ``|R̂ − R| ≤ γ_{|S|+1}(|D_S||U_S| + |T|) + |S|η`` entrywise and
    ``‖|D_S||U_S|‖_F ≤ Σ_{i∈S} ‖w_i‖‖u_i‖`` (docs/mathematics.md §5: a witness is claimed only after
    this recomputation).
    """
    U = _float_array("U", U)
    D = _float_array("D", D)
    n, d = U.shape
    if D.shape != (d, n):
        raise ValueError(f"D: expected shape {(d, n)} to match U {U.shape}, got {D.shape}")
    idx = np.asarray(S, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size):
        raise ValueError(f"S: expected distinct indices in [0, {n}), got {idx.size} entries")
    if T is None:
        R = np.eye(d)
        t_norm = math.sqrt(d)
        t_up, t_dn = float(_up(t_norm)), float(_dn(t_norm))
    else:
        T = _float_array("T", T).astype(np.float64)
        if T.shape != (d, d):
            raise ValueError(f"T: expected shape {(d, d)}, got {T.shape}")
        R = -T
        sq = float(np.einsum("ij,ij->", T, T))
        t_norm = math.sqrt(sq)
        t_up = float(_sqnorm_up(sq, d * d))
        # sq ≤ (1 + γ) true + slack, hence true ≥ (sq − slack) / (1 + γ)
        lo = _dn(_dn(sq - _slack(d * d)) / _up(1.0 + _gamma(d * d)))
        t_dn = float(_dn(np.sqrt(max(float(lo), 0.0))))
    per_block = max(1, block_bytes // (8 * d))
    norm_prod = 0.0  # ≥ Σ_{i∈S} ‖w_i‖‖u_i‖
    for i0, i1 in _blocks(idx.size, per_block):
        sel = idx[i0:i1]
        Db = D[:, sel].astype(np.float64)
        Ub = U[sel].astype(np.float64)
        R += Db @ Ub
        nw = _sqnorm_up(np.einsum("ij,ij->j", Db, Db), d)
        nu = _sqnorm_up(np.einsum("ij,ij->i", Ub, Ub), d)
        norm_prod = float(_up(norm_prod + _sum_up(_up(nw * nu))))
    sqR = float(np.einsum("ij,ij->", R, R))
    computed = math.sqrt(sqR)
    r_up = float(_sqnorm_up(sqR, d * d))
    g = _gamma(idx.size + 1)
    err = _up(_up(g * _up(norm_prod + t_up)) + _slack(idx.size * d * d + d * d))
    upper = float(_up(r_up + err))
    if not math.isfinite(upper):
        upper = math.inf
    return ResidualBound(computed, upper, t_norm, t_dn)
