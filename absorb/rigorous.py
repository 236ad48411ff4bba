"""Rigorous floating-point helpers shared by the producer side (the index-set search and
the engine): Higham's γ_k, the input range in which those rounding analyses hold, exact
power-of-two rescaling into it, directed square roots of rationals, rigorous Frobenius
norms and exact residuals of an index set; and the row blocks (:func:`row_slices`) and
the finiteness test (:func:`all_finite`) with which large float32 weights are read.

The independent checker (``absorb.verify``) keeps its own copies and never imports this
module.  Nothing here does work at import time; it imports only numpy and the standard
library.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Iterable, Iterator
from fractions import Fraction

import numpy as np

__all__ = [
    "SAFE_EXPONENT",
    "UNIT_ROUNDOFF",
    "exact_relative_residual_bounds",
    "exact_residual_sq",
    "flip_inf_upper",
    "frobenius_bounds",
    "gamma",
    "magnitudes_ok",
    "all_finite",
    "abs_row_sums",
    "row_slices",
    "unit_reach",
    "relative_residual",
    "remember_rows",
    "rescaled",
    "sqrt_down",
    "sqrt_up",
]

#: unit roundoff of IEEE binary64 (round to nearest)
UNIT_ROUNDOFF = 2.0**-53

#: the rounding analyses of this package hold for inputs whose nonzero entries lie in
#: [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT] (:func:`magnitudes_ok`)
SAFE_EXPONENT = 200


def row_slices(rows: int, width: int, nbytes: int = 32 << 20) -> list[slice]:
    """Slices of ``rows`` rows, each at most ``nbytes`` as float64 at ``width`` columns:
    how the routes that meet a float32 matrix read it (one float64 block at a time)."""
    step = max(1, nbytes // (8 * max(width, 1)))
    return [slice(i, min(rows, i + step)) for i in range(0, rows, step)]


def unit_reach(W_up: np.ndarray, W_down: np.ndarray) -> float:
    """max_r Σ_i |W_down[r,i]|·‖u_i‖₁ as computed in float64 (a sum of nonnegative terms: the caller raises it past
    its rounding; inf on an overflow): the units of a block with a σ of slope at most L add at most L·(this)·|x|∞. One
    matrix-vector product, |W_up| and |W_down| read a block of rows at a time (no full float64 copy of a float32 layer)."""
    d, n = W_down.shape
    norms = np.zeros(n)
    with np.errstate(all="ignore"):
        for sl in row_slices(n, d):
            norms[sl] = np.abs(np.asarray(W_up[sl], dtype=np.float64)).sum(axis=1)
        spread = 0.0
        for sl in row_slices(d, n):
            spread = max(spread, float(np.max(np.abs(np.asarray(W_down[sl], dtype=np.float64)) @ norms, initial=0.0)))
    return spread if math.isfinite(spread) else math.inf


def all_finite(a: np.ndarray) -> bool:
    """Whether every entry of the float array ``a`` is finite, in one pass and no
    full-size temporary when it is (a finite sum proves it; inf − inf and NaN propagate)."""
    if a.size == 0:
        return True
    if all(s == 0 for s in a.strides):  # a broadcast placeholder: one value
        return bool(np.isfinite(a.flat[0]))
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(a, axis=None)):
            return True
    step = max(1, (1 << 22) // max(1, a.shape[-1] if a.ndim else 1))
    flat = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    return all(bool(np.isfinite(flat[k:k + step]).all()) for k in range(0, flat.shape[0], step))


def gamma(k: int, unit: float = UNIT_ROUNDOFF) -> float:
    """Higham's γ_k = k·u/(1 − k·u), inflated by 1 % to absorb its own rounding.

    Any sum of k+1 floats computed in any order (and any product of k+1 floats) differs
    from the exact value by at most γ_k times the sum of the absolute values of its terms
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1 and §4.2).  ``unit`` is
    the unit roundoff u (binary64 round to nearest unless told otherwise).
    """
    ku = k * unit
    assert ku < 0.01
    return 1.01 * ku / (1.0 - ku)


def magnitudes_ok(*arrays: np.ndarray, hi_exponent: int = SAFE_EXPONENT) -> bool:
    """True when every entry of every array is finite and every nonzero one has
    ``2^-SAFE_EXPONENT ≤ |x| ≤ 2^SAFE_EXPONENT``: the range in which the rounding analyses
    here (Higham's γ_k, relative errors only) hold.

    Why: γ_k models every rounding as relative, which underflow and overflow break (a
    product of weights near 2^-270 squared to 2^-1080 loses all its bits; one near 2^540
    overflows).  In this range a product of up to three nonzero entries lies in
    [2^-600, 2^600], and squares of sums of n ≤ 2^20 such products stay below 2^1024, so
    nothing overflows, and a product or square underflows only after a cancellation, by at
    most 2^-1074 each.  Such errors are covered either by an explicit absolute term
    (the enumeration's norms) or by an error term γ·(sum of the absolute values of the same
    terms) ≥ 2^-53·2^-600 (that sum is exact when all terms are zero) whose 1 % inflation
    in :func:`gamma` exceeds 2^40 of them (the dual bound; the MITM windows also carry an
    absolute 8u).
    Outside the range a rigorous routine proves nothing; the index-set search first
    rescales by exact powers of two (:func:`rescaled`). ``hi_exponent``: another upper end, for a
    caller whose analysis only needs the lower one (the witness evaluation: an overflow there
    shows as inf and fails it)."""
    lo, hi = 2.0**-SAFE_EXPONENT, 2.0**hi_exponent
    seen: set[int] = set()
    for a in arrays:
        if id(a) in seen:  # the same array twice (a witness sharing W_down with f)
            continue
        seen.add(id(a))
        a = np.atleast_2d(np.asarray(a))
        if a.dtype.kind == "f" and a.dtype.itemsize <= 4:  # every finite float32 lies in [2^-149, 2^128]
            if not all_finite(a):
                return False
            continue
        a = a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a
        step = max(1, (1 << 20) // max(1, a.shape[1]))
        for k in range(0, a.shape[0], step):  # row blocks (views, also of a transposed array):
            x = np.abs(a[k:k + step].astype(np.float64, copy=False))  # no full-size temporaries
            if x.size == 0:
                continue
            if not float(x.max()) <= hi:  # also catches nan and inf
                return False
            nz = x[x != 0]
            if nz.size and float(nz.min()) < lo:
                return False
    return True


def rescaled(U: np.ndarray, D: np.ndarray, T: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``U, D, T`` rescaled by exact powers of two into the range of :func:`magnitudes_ok`
    when they are outside it and the rescaling loses no bit; else unchanged.

    Unit i's row of U is multiplied by 2^c_i and its column of D by 2^-c_i (so each product
    D_ji U_ik is unchanged; c_i balances the two), then all of U by 2^-a, all of D by
    2^-b and T by 2^-(a+b): every ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F is unchanged, exactly.  A dual
    matrix Y for the rescaled problem is one for the original (⟨Y, ·⟩ scales by 2^-(a+b)).
    ``T = None`` stands for ``−I`` (kept so when no rescaling is needed)."""
    if magnitudes_ok(U, D) if T is None else magnitudes_ok(U, D, T):
        return U, D, T
    if T is None:
        T = -np.eye(D.shape[0])

    def exponent(x: np.ndarray) -> np.ndarray:
        return np.frexp(x)[1].astype(np.int64)  # x = f·2^e with f in [0.5, 1); e = 0 for 0

    mu, mw = np.abs(U).max(axis=1), np.abs(D).max(axis=0)
    c = np.where((mu > 0) & (mw > 0), (exponent(mw) - exponent(mu)) // 2, 0)
    a = int(exponent(np.max(np.ldexp(mu, c), initial=0.0)))
    b = int(exponent(np.max(np.ldexp(mw, -c), initial=0.0)))
    with np.errstate(over="ignore", under="ignore"):  # a scale that overflows or loses bits fails the round trip below
        U2 = np.ldexp(U, (c - a)[:, None])
        D2 = np.ldexp(D, (-c - b)[None, :])
        T2 = np.ldexp(T, -(a + b))
        exact = (np.array_equal(np.ldexp(U2, (a - c)[:, None]), U) and np.array_equal(np.ldexp(D2, (c + b)[None, :]), D)
                 and np.array_equal(np.ldexp(T2, a + b), T))
    return (U2, D2, T2) if exact else (U, D, T)


_ROWS: dict[str, tuple[tuple[weakref.ref, weakref.ref], np.ndarray | None, tuple[int, ...], np.ndarray, np.ndarray | None]] = {}
"""The row sums of |R̂| (R̂ the float64 residual D_S U_S − T) of the latest residual computed
(:func:`remember_rows`), and those of |D_S||U_S| when given, with weak references to the arrays
U and D they were computed from."""


def _is_minus_identity(T: np.ndarray, sign: float = -1.0) -> bool:
    """T = sign·I exactly (no d×d temporary)."""
    return (T.ndim == 2 and T.shape[0] == T.shape[1] and np.count_nonzero(T) == T.shape[0]
            and bool(np.all(np.diagonal(T) == sign)))


def remember_rows(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, S: Iterable[int], rows: np.ndarray,
                  size_rows: np.ndarray | None = None) -> None:
    """Keep ``rows`` (float64 ``Σ_k |R̂_jk|`` per row j, R̂ = fl(D[:,S] U[S,:] − T), ``T = None``:
    −I, every entry a float64 sum of |S| + 1 products in any order) for :func:`flip_inf_upper`,
    which reads them instead of forming the product again. Only the latest is kept, and
    :func:`flip_inf_upper` consumes it; a target other than −I is held until then (it is
    compared with −M/c there). ``size_rows`` (optional): ``Σ_{i∈S} |D_ji|·fl(Σ_k |U_ik|)`` per
    row j, each a float64 sum of those |S| products in any order (each inner sum of d_in terms
    in any order), which :func:`flip_inf_upper` would otherwise compute itself."""
    _ROWS.pop("last", None)
    try:
        refs = (weakref.ref(U), weakref.ref(D))
    except TypeError:  # (an object without weak references: nothing is kept)
        return
    target = None if T is None or _is_minus_identity(T) else T
    # one entry, replaced whole (a reader sees the old one, the new one, or none)
    size = None if size_rows is None else np.asarray(size_rows, dtype=np.float64).copy()
    _ROWS["last"] = (refs, target, tuple(sorted(int(i) for i in S)), np.asarray(rows, dtype=np.float64).copy(), size)


def _recall_rows(U: np.ndarray, D: np.ndarray, S: tuple[int, ...]
                 ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None] | None:
    """``(T, rows, size_rows)`` kept by :func:`remember_rows` for these very arrays and S (T
    None: −I; size_rows None when not given), else None; either way nothing is kept afterwards."""
    kept = _ROWS.pop("last", None)
    if kept is None:
        return None
    (rU, rD), T, kept_S, rows, size = kept
    if kept_S != S or rU() is not U or rD() is not D:
        return None
    return T, rows, size


def abs_row_sums(R: np.ndarray) -> np.ndarray:
    """``Σ_k |R_jk|`` per row, a block of rows at a time (no second full-size temporary)."""
    return np.concatenate([np.abs(R[sl]).sum(axis=1) for sl in row_slices(R.shape[0], R.shape[1])] or [np.zeros(0)])


def relative_residual(U: np.ndarray, D: np.ndarray, T: np.ndarray | None, S: Iterable[int]) -> float:
    """The float64 relative residual ``‖D[:,S]U[S,:] − T‖_F / ‖T‖_F`` that ``found`` means
    (``T = None``: ``−I``). The row sums of |R̂| of the same product are kept
    (:func:`remember_rows`) for the witness's ∞-norm bound.

    Float32 ``U`` or ``D`` (large layers kept in their storage type) are read in float64
    tiles of at most 32 MiB each: the products are float64 products, never float32 ones."""
    idx = np.asarray(sorted(S), dtype=np.intp)
    d_out, d_in = D.shape[0], U.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):  # out of float range: nan, never ≤ tol
        t_norm = math.sqrt(d_out) if T is None else np.linalg.norm(T)
        if U.dtype == np.float64 and D.dtype == np.float64:
            R = D[:, idx] @ U[idx, :]
            if T is None:
                R[np.diag_indices(d_out)] += 1.0
            else:
                R -= T
            remember_rows(U, D, T, idx.tolist(), abs_row_sums(R))
            return float(np.linalg.norm(R) / t_norm)
        width = max(1, idx.size)
        sq = 0.0
        rows_abs = np.zeros(d_out)
        for cols in row_slices(d_in, width):
            Us = U[idx, cols].astype(np.float64)
            for rows in row_slices(d_out, max(width, cols.stop - cols.start)):  # the tile R too: ≤ 32 MiB
                R = D[rows][:, idx].astype(np.float64) @ Us
                if T is None:
                    lo, hi = max(rows.start, cols.start), min(rows.stop, cols.stop)
                    if lo < hi:
                        k = np.arange(lo, hi)
                        R[k - rows.start, k - cols.start] += 1.0
                else:
                    R -= T[rows, cols]
                sq += float(np.einsum("ij,ij->", R, R))
                rows_abs[rows] += np.abs(R).sum(axis=1)
        remember_rows(U, D, T, idx.tolist(), rows_abs)
        return float(math.sqrt(sq) / t_norm)


def _fractions(A: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.atleast_2d(A)]


def _sqrt_guess(q: Fraction) -> float:
    """√q to within a few ulps for any positive rational (scaled by 4^e so that neither
    ``float(q)`` overflows nor the root lands far into the subnormals)."""
    e = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    scaled = q / Fraction(4) ** e if e >= 0 else q * Fraction(4) ** (-e)
    try:
        return math.ldexp(math.sqrt(float(scaled)), e)
    except OverflowError:
        return math.inf


def sqrt_down(q: Fraction) -> float:
    """Largest convenient float ``x ≥ 0`` with ``x² ≤ q`` (a rigorous lower bound of √q)."""
    if q <= 0:
        return 0.0
    x = min(_sqrt_guess(q), sys.float_info.max)
    while x > 0 and Fraction(x) ** 2 > q:
        x = math.nextafter(x, 0.0)
    return x


def sqrt_up(q: Fraction) -> float:
    """Smallest convenient float ``x`` with ``x² ≥ q`` (a rigorous upper bound of √q)."""
    if q <= 0:
        return 0.0
    x = _sqrt_guess(q) or 5e-324  # (√q below the subnormals: their least is an upper bound)
    while x < math.inf and Fraction(x) ** 2 < q:
        x = math.nextafter(x, math.inf)
    return x


def frobenius_bounds(T: np.ndarray) -> tuple[float, float]:
    """Rigorous floats ``lo ≤ ‖T‖_F ≤ hi``.

    In float64 with Higham's bound when no square can underflow or overflow: the computed
    ``s = Σ x²`` (m squares, m − 1 additions) is within γ_m·s of the exact sum, and the
    scaling, the square root and the final factor each round once more (covered by the
    extra 4u of slack).  Otherwise over exact rationals.
    """
    x = np.asarray(T)
    x = x.reshape(1, -1) if x.ndim < 2 else x.reshape(-1, x.shape[-1])
    big, s, in_range = 0.0, 0.0, True
    for sl in row_slices(x.shape[0], x.shape[1]):  # a block of rows at a time: no full-size temporaries
        a = np.abs(x[sl].astype(np.float64, copy=False)).ravel()
        top = float(a.max(initial=0.0))
        if not top < 1e150 or np.any((a > 0) & (a < 1e-150)):  # (also a nan or an inf)
            in_range = False  # (over exact rationals below, as before)
            break
        big = max(big, top)
        s += float(np.dot(a, a))  # (any order of the same m squares and m − 1 additions)
    if in_range and 1e-150 < big:
        g = gamma(x.size + 4)
        return (math.sqrt(s * (1.0 - g)) * (1.0 - 4.0 * UNIT_ROUNDOFF),
                math.sqrt(s * (1.0 + g)) * (1.0 + 4.0 * UNIT_ROUNDOFF))
    q = sum((Fraction(float(v)) ** 2 for v in x.ravel()), Fraction(0))
    return sqrt_down(q), sqrt_up(q)


def exact_residual_sq(U: np.ndarray, D: np.ndarray, T: np.ndarray, S: Iterable[int]) -> Fraction:
    """``‖D[:,S]U[S,:] − T‖_F²`` over exact rationals (floats are dyadic rationals)."""
    idx = sorted(S)
    d_out, d_in = T.shape
    Df = _fractions(D[:, idx]) if idx else [[] for _ in range(d_out)]
    Uf = _fractions(U[idx, :]) if idx else []
    Tf = _fractions(T)
    total = Fraction(0)
    for j in range(d_out):
        for k in range(d_in):
            acc = -Tf[j][k]
            for s in range(len(idx)):
                acc += Df[j][s] * Uf[s][k]
            total += acc * acc
    return total


def exact_relative_residual_bounds(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, S: Iterable[int]
) -> tuple[float, float]:
    """Rigorous floats ``lo ≤ ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F ≤ hi`` (exact rationals)."""
    r2 = exact_residual_sq(U, D, T, S)
    t2 = sum((Fraction(float(x)) ** 2 for x in np.ravel(T)), Fraction(0))
    q = r2 / t2
    return sqrt_down(q), sqrt_up(q)


# ------------------------------------------------------------------ flip witnesses --
#: most multiply-adds of a flip witness's bounds done in exact rationals (else float64 with
#: a rounding account)
EXACT_FLIP_WORK = 200_000


def _dyadic(A: np.ndarray) -> tuple[list[list[int]], int]:
    """Integers ``Z`` and ``L`` with ``A = Z / 2^L`` exactly (A finite floats)."""
    rows = [[float(v).as_integer_ratio() for v in row] for row in np.atleast_2d(np.asarray(A, dtype=np.float64))]
    L = max((den.bit_length() - 1 for row in rows for _n, den in row), default=0)
    return [[num << (L - den.bit_length() + 1) for num, den in row] for row in rows], L


def _col_row_norms(U: np.ndarray, D: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2-norms of the rows ``U[idx]`` and of the columns ``D[:, idx]``, in float64 tiles (a
    float32 matrix is never copied whole); each within (1 + γ_{k+2}) of the exact norm."""
    un = np.concatenate([np.linalg.norm(U[idx[sl]].astype(np.float64), axis=1) for sl in row_slices(idx.size, U.shape[1])] or [np.zeros(0)])
    wn = np.concatenate([np.linalg.norm(D[:, idx[sl]].astype(np.float64), axis=0) for sl in row_slices(idx.size, D.shape[0])] or [np.zeros(0)])
    return un, wn


def _exact_flip_rows(U: np.ndarray, D: np.ndarray, M: np.ndarray, c: Fraction, idx: np.ndarray
                     ) -> Iterator[tuple[list[int], list[int], int]]:
    """Per row j of ``R = M + c·D_S U_S``, in integers: ``(acc_j, tm_j, den)`` with
    ``R_jk = acc_jk / den`` and ``M_jk = tm_jk / den`` exactly (den = q·2^L, c = p/q): every
    float is an integer times a power of two, so 2^L·q·R = p·(D_S U_S)·2^L + q·M·2^L is an
    integer matrix."""
    Di, eD = _dyadic(D[:, idx])
    Ui, eU = _dyadic(U[idx, :])
    Mi, eM = _dyadic(M)
    L = max(eD + eU, eM)
    sp_, sm = L - eD - eU, L - eM
    p, q = c.numerator, c.denominator
    d_out, d_in = M.shape
    for j in range(d_out):
        tms = [q * (Mi[j][k] << sm) for k in range(d_in)]
        accs = [p * (sum(Di[j][s] * Ui[s][k] for s in range(idx.size)) << sp_) + tms[k] for k in range(d_in)]
        yield accs, tms, q << L


def float_up(x: Fraction) -> float:
    """The least float ≥ the rational ``x`` (inf past the float range)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf if x > 0 else -sys.float_info.max
    while math.isfinite(f) and Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def flip_residual_upper(U: np.ndarray, D: np.ndarray, M: np.ndarray, c: Fraction, S: Iterable[int], rel: float) -> float:
    """A rigorous upper bound of ``ρ = ‖D[:,S]U[S,:] + M/c‖_F / ‖M/c‖_F`` (the exact target
    −M/c, c rational), given ``rel``, its float64 value computed in any order with the
    rounded target ``fl(−M/c)``.

    Since |c|·‖M/c‖_F = ‖M‖_F, ``‖M + c·D_S U_S‖_F ≤ ρ·‖M‖_F`` (what
    :func:`flip_inf_upper` falls back on when no row sums are kept). Exact rationals when |S|·d² ≤ EXACT_FLIP_WORK;
    else Higham's bound ``|fl(R) − R| ≤ γ_{|S|+2}(|D_S||U_S| + |T|)`` entrywise (Frobenius
    norm ≤ γ(Σ_i ‖w_i‖‖u_i‖ + ‖T‖_F)), the rounding of the target (2u·‖T‖_F) and of the
    norms; inf when a weight is outside the range of :func:`magnitudes_ok`."""
    idx = np.asarray(sorted(S), dtype=np.intp)
    d_out, d_in = M.shape
    if not M.any():  # no scale: only an empty S (g = f) has a finite error, 0
        return 0.0 if idx.size == 0 else math.inf
    if idx.size * d_out * d_in <= EXACT_FLIP_WORK:
        r2 = t2 = 0
        for accs, tms, _den in _exact_flip_rows(U, D, M, c, idx):
            r2 += sum(a * a for a in accs)
            t2 += sum(t * t for t in tms)
        return sqrt_up(Fraction(r2, t2)) if t2 else (0.0 if r2 == 0 else math.inf)
    # (float32 weights are in range whenever finite, which a Block's are: no copy to look at)
    small = U.dtype == np.float32 and D.dtype == np.float32
    if not (math.isfinite(rel) and magnitudes_ok(M) and (small or magnitudes_ok(U[idx], D[:, idx]))):
        return math.inf
    un, wn = _col_row_norms(U, D, idx)
    cf = float(c)
    lo, hi = frobenius_bounds(M)
    t_lo, t_hi = lo / abs(cf) * (1 - 4 * UNIT_ROUNDOFF), hi / abs(cf) * (1 + 4 * UNIT_ROUNDOFF)  # ‖M/c‖_F (c and cf agree to u)
    gn = gamma(d_out * d_in + d_in + d_out + 4)
    g = gamma(idx.size + 4)
    sw = float(np.dot(un, wn)) * (1 + gn)
    slack = (g * (sw + t_hi) + 2.02 * UNIT_ROUNDOFF * t_hi) / t_lo  # products, sums, the target's rounding
    return (rel * (1 + gn) / (1 - gn) + slack) * (1 + 8 * UNIT_ROUNDOFF)

def flip_inf_upper(U: np.ndarray, D: np.ndarray, M: np.ndarray | None, c: Fraction, S: Iterable[int], rel: float) -> tuple[float, str]:
    """A rigorous upper bound of ``ρ∞ = ‖M + c·D[:,S]U[S,:]‖_{∞→∞} = max_j Σ_k |R_jk|`` (absolute,
    not relative to ‖M‖), and how it was obtained: ``‖(M + c·D_S U_S) x‖_∞ ≤ ρ∞·‖x‖_∞`` for
    every x, the linear part of a flip witness's error. ``rel``: the float64 relative residual
    (:func:`relative_residual`, or the search's own recomputation) of the same S.

    * exact, in integers, when |S|·d² ≤ EXACT_FLIP_WORK (:func:`_exact_flip_rows`);
    * else from the row sums of |R̂| kept by :func:`remember_rows` for these very arrays (the
      product that gave the residual), with Higham's bound
      ``|R̂ − (D_S U_S − T)| ≤ γ_{|S|+4}(|D_S||U_S| + |T|)`` entrywise — whose row sums are
      ``|D_S|(|U_S|·1) + |T|·1``, cheap — and the rounding of the target T = fl(−M/c) (2.02u|T|);
    * else ``√d_in·ρ·‖M‖_F`` (ρ from :func:`flip_residual_upper`: a row's 1-norm is at most
      √d_in times its 2-norm, which is at most ‖R‖_F = ρ‖M‖_F), sound but conservative.

    inf when a weight is outside the range of :func:`magnitudes_ok`. ``M = None``: the identity
    (d×d with d = U's columns), formed only where a route below needs its entries."""
    idx = np.asarray(sorted(S), dtype=np.intp)
    if M is None:
        d_out = d_in = U.shape[1]
    else:
        d_out, d_in = M.shape
        if not M.any():
            return (0.0 if idx.size == 0 else math.inf), "exact"

    def entries() -> np.ndarray:
        return np.eye(d_out) if M is None else M

    if idx.size * d_out * d_in <= EXACT_FLIP_WORK:
        if not (all_finite(U[idx]) and all_finite(D[:, idx]) and all_finite(entries())):
            return math.inf, "out of range"  # (no rational for an inf entry: nothing is bounded)
        sums = [(sum(abs(a) for a in accs), den) for accs, _tms, den in _exact_flip_rows(U, D, entries(), c, idx)]
        return float_up(max((Fraction(t, den) for t, den in sums), default=Fraction(0))), "exact"
    small = U.dtype == np.float32 and D.dtype == np.float32
    if not (math.isfinite(rel) and (M is None or magnitudes_ok(M)) and (small or magnitudes_ok(U[idx], D[:, idx]))):
        return math.inf, "out of range"
    cf = float(c)
    kept = _recall_rows(U, D, tuple(int(i) for i in idx))
    if kept is not None:
        T, rows, a = kept
        if T is None:
            same = c == 1 and (M is None or _is_minus_identity(M, 1.0))
            t_rows = np.ones(d_out) if same else None
        else:
            with np.errstate(all="ignore"):
                same = T.shape == (d_out, d_in) and np.array_equal(T, -entries() / cf)
            t_rows = abs_row_sums(T) if same else None
        if t_rows is not None and rows.shape == (d_out,):
            if a is not None and a.shape == (d_out,):
                sl_all: list[slice] = []  # (|D_S||U_S|·1 kept with the rows: the same float sums)
            else:
                a, sl_all = np.zeros(d_out), row_slices(idx.size, max(d_in, d_out))
            for sl in sl_all:
                Ub = U[idx[sl]].astype(np.float64)
                us = np.abs(Ub, out=Ub).sum(axis=1)
                del Ub
                Db = D[:, idx[sl]].astype(np.float64)
                a += np.abs(Db, out=Db) @ us  # (in place: one float64 block alive at a time)
                del Db
            g = gamma(idx.size + 4)
            gs = gamma(idx.size + d_in + d_out + 4)  # the float row sums themselves
            with np.errstate(all="ignore"):
                per = rows * (1 + gs) + (g * (a + t_rows) + 2.02 * UNIT_ROUNDOFF * t_rows) * (1 + gs) ** 2
                out = abs(cf) * float(per.max(initial=0.0)) * (1 + 8 * UNIT_ROUNDOFF)
            return (out if math.isfinite(out) else math.inf), "row sums"
    M = entries()
    rho = flip_residual_upper(U, D, M, c, S, rel)
    _lo, hi = frobenius_bounds(M)
    out = math.sqrt(d_in) * (1 + 4 * UNIT_ROUNDOFF) * rho * hi * (1 + 4 * UNIT_ROUNDOFF)
    return (out if math.isfinite(out) else math.inf), "√d·ρ·‖M‖_F"


def flip_bias_error_upper(D: np.ndarray, b_up: np.ndarray | None, b_down: np.ndarray | None, b_new: np.ndarray | None,
                          S: Iterable[int], c: Fraction, s: Fraction = Fraction(0)) -> float:
    """A rigorous upper bound of ``|e|_∞``, ``e = b_new − b_down − c·D[:,S] (b_up[S] + s)``: what a
    flip witness's output bias ``b_new`` misses of the exact shift (the constant part of its
    error; 0 for a bias-free block). Exact rationals when d·|S| ≤ EXACT_FLIP_WORK, else
    float64 with a rounding account (``s`` ≠ 0 — the value h(z) = c_h·z + k of a gated unit,
    s = k/c_h — exact rationals only: inf past that size)."""
    idx = np.asarray(sorted(S), dtype=np.intp)
    d = D.shape[0]
    zero = np.zeros(d)
    bd = zero if b_down is None else np.asarray(b_down, dtype=np.float64)
    bn = zero if b_new is None else np.asarray(b_new, dtype=np.float64)
    if (b_up is None and not s) or idx.size == 0:
        return 0.0 if np.array_equal(bd, bn) else math.inf
    bs = np.zeros(idx.size) if b_up is None else np.asarray(b_up, dtype=np.float64)[idx]
    if not all(all_finite(a) for a in (bs, bd, bn, D[:, idx])):
        return math.inf  # (a moved bias past float64's range: no finite witness)
    if d * idx.size <= EXACT_FLIP_WORK:
        # exact, in integers: q·2^L·e = q·(b_new − b_down)·2^L − p·(D_S b_S)·2^L with c = p/q
        Di, eD = _dyadic(D[:, idx])
        (bi,), eb = _dyadic(bs[None, :])
        (ni,), en = _dyadic(bn[None, :])
        (oi,), eo = _dyadic(bd[None, :])
        L = max(eD + eb, en, eo)
        p, q = c.numerator, c.denominator
        ps, qs = s.numerator, s.denominator  # (c·s·Σ_S D_ri: the shift's share, L ≥ eD)
        tot = 0
        for r in range(d):
            acc = (qs * (q * ((ni[r] << (L - en)) - (oi[r] << (L - eo))) - p * (sum(w * v for w, v in zip(Di[r], bi)) << (L - eD - eb)))
                   - (p * ps * (sum(Di[r]) << (L - eD)) if ps else 0))
            tot = max(tot, abs(acc))
        return float_up(Fraction(tot, (q * qs) << L))
    if s or not (magnitudes_ok(bs, bd, bn) and magnitudes_ok(D[:, idx])):
        return math.inf
    cf = float(c)
    p = np.zeros(d)
    q = np.zeros(d)
    for sl in row_slices(idx.size, d):
        Ds = D[:, idx[sl]].astype(np.float64)
        p += Ds @ bs[sl]
        q += np.abs(Ds) @ np.abs(bs[sl])
    g = gamma(idx.size + 8)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.abs(bn - bd - cf * p)
        e = r + g * (np.abs(bn) + np.abs(bd) + 2 * abs(cf) * q * (1 + g)) * (1 + g)
        out = float(e.max(initial=0.0)) * (1 + 4 * UNIT_ROUNDOFF)
    return out if math.isfinite(out) else math.inf
