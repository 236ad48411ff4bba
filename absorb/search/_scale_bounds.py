"""The search's own rigorous bounds for its certificates at model scale: the dual bound of a
low-rank dual matrix ``Y = A Bᵀ`` (docs/mathematics.md §4 "Certificate of impossibility",
§5 "Floating point and soundness") and the residual of a candidate index set.

Independent of the checker's ``absorb.verify.dual_bound`` in fact, not only in name: the
same inequality, a different rounding account and different code, built on
:mod:`absorb.rigorous` (Higham's γ_k inflated by 1 %, its input range, rigorous Frobenius
norms, the float64 row blocks in which large float32 weights are read). A test
(tests/test_search_bounds.py) checks that the two agree to a stated tolerance on many blocks
and that neither module imports the other's side.

The inequality. For ``U`` (n×d_in, rows u_i), ``D`` (d_out×n, columns w_i), a target ``T`` and
any ``Y``, every ``b ∈ [0,1]^n`` has ‖D diag(b) U − T‖_F ‖Y‖_F ≥ σ⟨T − D diag(b) U, Y⟩
= σ⟨T, Y⟩ − Σ_i b_i σ s_i ≥ σ⟨T, Y⟩ − Σ_i max(0, σ s_i) with s_i = w_iᵀ Y u_i and σ = ±1;
for ``Y = A Bᵀ``, ``s_i = Σ_k (Dᵀ A)_ik (U B)_ik``, ``⟨T, Y⟩ = ⟨T B, A⟩`` and
``‖Y‖_F² = ⟨AᵀA, BᵀB⟩``.

The rounding account (all products in float64, u = 2⁻⁵³, γ_k = ``rigorous.gamma(k)``). Inside
the range of :func:`absorb.rigorous.magnitudes_ok` no product underflows or overflows, so
every dot product of length k is within γ_k·|x|ᵀ|y| of the exact one, and we charge
``|x|ᵀ|y| ≤ ‖x‖‖y‖`` *and then Cauchy–Schwarz once more over the rank index k* (the checker
instead sums |P̂_ik|‖a_k‖ term by term):

* ``|P̂_ik − P_ik| ≤ γ_{d_in}‖u_i‖‖b_k‖``, ``|Q̂_ik − Q_ik| ≤ γ_{d_out}‖w_i‖‖a_k‖``, so with
  ``α = ‖A‖_F``, ``β = ‖B‖_F`` (upper bounds)
  ``|ŝ_i − s_i| ≤ γ_r‖Q̂_i‖‖P̂_i‖ + γ_{d_in}‖u_i‖‖Q̂_i‖β + γ_{d_out}‖w_i‖(‖P̂_i‖α + γ_{d_in}‖u_i‖αβ)``;
* ``|τ̂ − ⟨T, Y⟩| ≤ γ_{d_out·r}‖T̂B‖_F α + γ_{d_in}‖T‖_F α β`` (T = −I: ``γ_{d·r} α β``);
* ``‖Y‖_F² ≤ fl⟨ÂᵀÂ, B̂ᵀB̂⟩ + γ_{r²}‖Ĝ_A‖‖Ĝ_B‖ + γ_{d_in}‖Ĝ_A‖β² + γ_{d_out}(‖Ĝ_B‖ + γ_{d_in}β²)α²``;
* every norm is an upper bound (``√(fl(Σx²)(1 + γ_{k+4}))(1 + 4u)``), every short scalar or
  element-wise formula is inflated by ``(1 + 16u)`` (it has fewer than 8 roundings, each
  ≤ u relatively, all on non-negative terms), and a sum of m non-negative terms by
  ``(1 + γ_m)``.

Inputs outside that range (after the search's own exact rescaling) are refused (bound 0).
float32 or float16 weights are read in float64 row blocks (exact conversions); a float32
model's dual matrix is rounded to float32 first (``fl32(A) fl32(B)ᵀ`` is just another dual
matrix), as the checker does, so that both bound the same ``Y``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from absorb.rigorous import (
    UNIT_ROUNDOFF,
    abs_row_sums,
    frobenius_bounds,
    gamma,
    magnitudes_ok,
    remember_rows,
    row_slices,
)

__all__ = ["DualBound", "ResidualBound", "check_dual_bound", "check_residual"]

_INFLATE = 1.0 + 16 * UNIT_ROUNDOFF
"""Covers the roundings of one short formula of non-negative terms (fewer than 8 operations)."""


@dataclass(frozen=True)
class DualBound:
    """A rigorous lower bound on ``min_{b ∈ [0,1]^n} ‖D diag(b) U − T‖_F``: ``absolute`` (0.0 when
    nothing is proved) and ``relative = absolute / ‖T‖_F`` rounded down; the parts for the better
    sign σ: ``trace_lower`` ≤ σ⟨T, Y⟩, ``leak_upper`` ≥ Σ_i max(0, σ s_i), ``y_norm_upper`` ≥
    ‖Y‖_F, ``t_norm_upper`` ≥ ‖T‖_F. ``relative > tol`` proves no index set is within tol."""

    absolute: float
    relative: float
    trace_lower: float
    leak_upper: float
    y_norm_upper: float
    t_norm_upper: float
    note: str

    def certifies(self, tol: float) -> bool:
        return self.relative > tol


def _refused(note: str, t_up: float = math.inf) -> DualBound:
    return DualBound(0.0, 0.0, 0.0, math.inf, math.inf, t_up, note)


def _norm_up(sq: np.ndarray | float, k: int) -> np.ndarray:
    """Upper bounds on ‖x‖ from computed sums of squares ``sq`` of length ``k``."""
    return np.sqrt(np.asarray(sq, dtype=np.float64) * (1.0 + gamma(k + 4))) * (1.0 + 4 * UNIT_ROUNDOFF)


def _floats(name: str, x: object) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind != "f" or a.dtype.itemsize > 8:
        raise ValueError(f"{name}: dtype {a.dtype} is not float16/float32/float64; cast it to float64")
    return a


def _rows_times(X: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fl(X @ M), fl(Σ_j X_ij²))`` in float64, X read in float64 row blocks (M float64)."""
    m, k = X.shape
    out, sq = np.empty((m, M.shape[1])), np.empty(m)
    for rows in row_slices(m, k):
        Xb = X[rows].astype(np.float64, copy=False)
        out[rows] = Xb @ M
        sq[rows] = np.einsum("ij,ij->i", Xb, Xb)
    return out, sq


def check_dual_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, A: np.ndarray, B: np.ndarray, *,
                     block_bytes: int = 8 << 20) -> DualBound:
    """The rigorous dual bound certified by ``Y = A Bᵀ`` (see the module docstring).

    ``U`` n×d_in, ``D`` d_out×n, ``T`` d_out×d_in (``None``: ``−I``, needs d_out = d_in), ``A``
    d_out×r, ``B`` d_in×r. Raises ``ValueError`` on wrong shapes or dtypes; non-finite or
    out-of-range data gives a refusal (``absolute = 0``). ``block_bytes`` is accepted for
    compatibility (row blocks are :func:`absorb.rigorous.row_slices`').

    >>> import numpy as np
    >>> b = check_dual_bound(np.eye(2), np.eye(2), -np.eye(2), np.eye(2), np.eye(2))
    >>> abs(b.absolute - 2 ** 0.5) < 1e-12    # min ‖diag(b) + I‖_F over the box is √2
    True
    """
    del block_bytes
    U, D = _floats("U", U), _floats("D", D)
    A, B = _floats("A", A).astype(np.float64), _floats("B", B).astype(np.float64)
    if U.ndim != 2 or D.ndim != 2 or D.shape[1] != U.shape[0]:
        raise ValueError(f"U, D: expected shapes (n, d_in), (d_out, n), got {U.shape}, {D.shape}")
    n, d_in = U.shape
    d_out = D.shape[0]
    if A.ndim != 2 or A.shape[0] != d_out or A.shape[1] < 1 or B.shape != (d_in, A.shape[1]):
        raise ValueError(f"A, B: expected shapes (d_out={d_out}, r≥1), (d_in={d_in}, r), got {A.shape}, {B.shape}")
    if T is None and d_out != d_in:
        raise ValueError(f"T: None means −I, which needs d_out = d_in, got {d_out} and {d_in}")
    if T is not None:
        T = _floats("T", T).astype(np.float64, copy=False)
        if T.shape != (d_out, d_in):
            raise ValueError(f"T: expected shape {(d_out, d_in)}, got {T.shape}")
    if U.dtype == D.dtype == np.float32:  # the checker bounds fl32(A) fl32(B)ᵀ for float32 models: the same Y here
        with np.errstate(over="ignore"):
            A, B = A.astype(np.float32).astype(np.float64), B.astype(np.float32).astype(np.float64)
    if not magnitudes_ok(U, D, A, B, *(() if T is None else (T,))):
        return _refused("an entry of U, D, T, A or B is non-finite or outside the range of absorb.rigorous.magnitudes_ok")
    r = A.shape[1]
    if T is None:
        t_lo = t_up = math.sqrt(d_out)
        t_lo, t_up = t_lo * (1 - 2 * UNIT_ROUNDOFF), t_up * (1 + 2 * UNIT_ROUNDOFF)
    else:
        t_lo, t_up = frobenius_bounds(T)
    alpha, beta = frobenius_bounds(A)[1], frobenius_bounds(B)[1]

    # s_i and its error bound e_i
    P, su = _rows_times(U, B)  # P = U B, ‖u_i‖²
    Q, sw = _rows_times(D.T, A)  # Q = Dᵀ A, ‖w_i‖²
    nu, nw = _norm_up(su, d_in), _norm_up(sw, d_out)
    nP = _norm_up(np.einsum("ij,ij->i", P, P), r)
    nQ = _norm_up(np.einsum("ij,ij->i", Q, Q), r)
    s_hat = np.einsum("ij,ij->i", Q, P)
    g_in, g_out = gamma(d_in), gamma(d_out)
    e = (gamma(r) * nQ * nP + g_in * nu * nQ * beta + g_out * nw * (nP * alpha + g_in * nu * alpha * beta)) * _INFLATE

    # τ = ⟨T, Y⟩ and its error bound
    if T is None:
        tau = -float(np.einsum("ij,ij->", A, B))
        e_tau = gamma(d_out * r) * alpha * beta * _INFLATE
    else:
        TB = T @ B
        tau = float(np.einsum("ij,ij->", TB, A))
        tb_up = frobenius_bounds(TB)[1]
        e_tau = (gamma(d_out * r) * tb_up * alpha + gamma(d_in) * t_up * alpha * beta) * _INFLATE  # T B in float64

    # ‖Y‖_F from above
    gram_a, gram_b = A.T @ A, B.T @ B
    ga, gb = frobenius_bounds(gram_a)[1], frobenius_bounds(gram_b)[1]
    y_sq = float(np.einsum("ij,ij->", gram_a, gram_b))
    y_sq_up = (max(y_sq, 0.0) + (gamma(r * r) * ga * gb + gamma(d_in) * ga * beta**2
                                 + gamma(d_out) * (gb + gamma(d_in) * beta**2) * alpha**2)) * _INFLATE
    y_up = math.sqrt(y_sq_up) * (1 + 4 * UNIT_ROUNDOFF)

    best: tuple[float, float, float] | None = None
    for sg in (1.0, -1.0):
        terms = np.maximum(0.0, sg * s_hat + e) * (1 + 2 * UNIT_ROUNDOFF)
        leak = float(terms.sum()) * (1.0 + gamma(max(n, 1))) * (1 + 2 * UNIT_ROUNDOFF)
        trace = (sg * tau - e_tau) * (1 - 2 * UNIT_ROUNDOFF) if sg * tau - e_tau > 0 else (sg * tau - e_tau) * (1 + 2 * UNIT_ROUNDOFF)
        numer = trace - leak
        numer = numer * (1 - 2 * UNIT_ROUNDOFF) if numer > 0 else numer * (1 + 2 * UNIT_ROUNDOFF)
        if best is None or numer > best[0]:
            best = (numer, trace, leak)
    assert best is not None
    numer, trace, leak = best
    if not all(math.isfinite(v) for v in (numer, y_up, t_up)):
        return _refused("a non-finite intermediate (overflow)", t_up)
    if not y_up > 0.0:
        return _refused("Y = A Bᵀ is zero", t_up)
    if numer <= 0.0:
        return DualBound(0.0, 0.0, trace, leak, y_up, t_up, f"no certificate: leak {leak:.3e} ≥ trace {trace:.3e}")
    absolute = numer / y_up * (1 - 2 * UNIT_ROUNDOFF)
    relative = absolute / t_up * (1 - 2 * UNIT_ROUNDOFF)
    return DualBound(absolute, relative, trace, leak, y_up, t_up, "ok")


@dataclass(frozen=True)
class ResidualBound:
    """``‖D[:,S] U[S,:] − T‖_F`` in float64: ``computed``, a rigorous ``upper`` bound on the exact
    value, ``t_norm`` and ``t_norm_lower`` ≤ ‖T‖_F."""

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
        return self.upper / self.t_norm_lower * (1 + 2 * UNIT_ROUNDOFF)


def _take64(A: np.ndarray, sel: np.ndarray, axis: int, buf: np.ndarray | None) -> tuple[np.ndarray, bool]:
    """The rows (``axis`` 0) or columns (1) ``sel`` of ``A`` in float64, and whether they lie in
    the range of :func:`absorb.rigorous.magnitudes_ok`: a float64 ``A`` is gathered (a copy);
    a narrower one is widened into ``buf`` (exact conversions) a few MiB at a time, with no
    narrow copy of the whole block (for float32 the range check is finiteness)."""
    if buf is None:
        out = np.take(A, sel, axis=axis)
        return out, magnitudes_ok(out)
    ok = True
    if axis == 1:
        out = buf[:, :sel.size]
        for rows in row_slices(A.shape[0], sel.size, 4 << 20):
            piece = np.take(A[rows], sel, axis=1)
            ok = ok and magnitudes_ok(piece)
            np.copyto(out[rows], piece)
    else:
        out = buf[:sel.size]
        for part in row_slices(sel.size, A.shape[1], 4 << 20):
            piece = np.take(A, sel[part], axis=0)
            ok = ok and magnitudes_ok(piece)
            np.copyto(out[part], piece)
    return out, ok


def check_residual(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, S: list[int] | tuple[int, ...] | np.ndarray, *,
                   block_bytes: int = 64 << 20) -> ResidualBound:
    """``‖D[:,S] U[S,:] − T‖_F`` with a rigorous upper bound (``T = None``: ``−I``).

    ``R = D_S U_S − T`` is formed in float64 (float32/16 columns of D and rows of U read in
    exact float64 blocks of at most ``block_bytes``); each entry is a dot product of length
    |S| plus one subtraction, so ``|R̂ − R| ≤ γ_{|S|+1}(|D_S||U_S| + |T|)`` entrywise inside the
    range of :func:`absorb.rigorous.magnitudes_ok`, and ``‖|D_S||U_S|‖_F ≤ Σ_{i∈S}‖w_i‖‖u_i‖``.
    ``‖R̂‖_F`` and ``‖T‖_F`` come from :func:`absorb.rigorous.frobenius_bounds`. Outside the
    range the upper bound is +inf (nothing is claimed)."""
    U, D = _floats("U", U), _floats("D", D)
    n, d = U.shape
    if D.shape != (d, n):
        raise ValueError(f"D: expected shape {(d, n)} to match U {U.shape}, got {D.shape}")
    idx = np.asarray(S, dtype=np.int64).reshape(-1)
    # The terms in increasing index order (the same products summed in another order, which
    # γ covers): a sorted gather reads D's rows forwards.
    order = np.sort(idx)
    if idx.size and (order[0] < 0 or order[-1] >= n or bool(np.any(order[1:] == order[:-1]))):
        raise ValueError(f"S: expected distinct indices in [0, {n}), got {idx.size} entries")
    if T is None:
        t_norm = math.sqrt(d)
        t_lo, t_up = t_norm * (1 - 2 * UNIT_ROUNDOFF), t_norm * (1 + 2 * UNIT_ROUNDOFF)
    else:
        T = _floats("T", T).astype(np.float64, copy=False)
        if T.shape != (d, d):
            raise ValueError(f"T: expected shape {(d, d)}, got {T.shape}")
        t_norm = float(np.linalg.norm(T))
        t_lo, t_up = frobenius_bounds(T)
    step = max(1, block_bytes // (8 * max(d, 1)))
    norm_prod = 0.0
    in_range = T is None or magnitudes_ok(T)
    # R = D_S U_S is accumulated in place: the first block of terms is written into R by the
    # product itself, each later one through a reused buffer of a block of rows; −T is
    # subtracted last. Each entry is still one float64 sum of the same |S| + 1 terms. float32/16
    # blocks are widened into float64 buffers allocated once (exact conversions).
    R = np.zeros((d, d)) if order.size == 0 else np.empty((d, d))
    rows_of = row_slices(d, d, block_bytes)
    part = np.empty((min(d, rows_of[0].stop - rows_of[0].start), d)) if order.size > step else None
    size_rows = np.zeros(d)
    k = min(step, order.size)
    buf_D = None if D.dtype == np.float64 else np.empty((d, k))
    buf_U = None if U.dtype == np.float64 else np.empty((k, d))
    for k0 in range(0, order.size, step):
        sel = order[k0:k0 + step]
        Db, ok_D = _take64(D, sel, 1, buf_D)
        Ub, ok_U = _take64(U, sel, 0, buf_U)
        in_range = in_range and ok_D and ok_U
        if k0 == 0:
            np.matmul(Db, Ub, out=R)
        else:
            assert part is not None
            for rows in rows_of:  # R += Db @ Ub without a d×d temporary
                out = part[:rows.stop - rows.start]
                np.matmul(Db[rows], Ub, out=out)
                R[rows] += out
        nw = _norm_up(np.einsum("ij,ij->j", Db, Db), d)
        nu = _norm_up(np.einsum("ij,ij->i", Ub, Ub), d)
        norm_prod += float((nw * nu).sum()) * (1 + gamma(sel.size)) * _INFLATE
        # |D_S|(|U_S|·1), for the witness's ∞-norm bound (in place: these blocks are done with)
        size_rows += np.abs(Db, out=Db) @ np.abs(Ub, out=Ub).sum(axis=1)
        del Db, Ub
    del part, buf_D, buf_U
    if T is None:
        R.ravel()[::d + 1] += 1.0  # R − T with T = −I (R is contiguous: the diagonal, in place)
    else:
        for rows in rows_of:
            R[rows] -= T[rows]
    remember_rows(U, D, T, idx.tolist(), abs_row_sums(R), size_rows)  # for the witness's ∞-norm bound (no second product)
    computed = float(np.linalg.norm(R))
    if not in_range or not math.isfinite(computed):
        return ResidualBound(computed, math.inf, t_norm, t_lo)
    r_up = frobenius_bounds(R)[1]
    err = gamma(idx.size + 1) * (norm_prod + t_up) * _INFLATE
    return ResidualBound(computed, (r_up + err) * _INFLATE, t_norm, t_lo)
