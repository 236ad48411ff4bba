"""Near-collinear rows of W_up: the nondegeneracy hypothesis of result 5 (docs/mathematics.md §2.5, §3).

Result 5 needs the rows ``u_i`` of ``W_up`` nonzero and pairwise non-collinear; §3 shows the
"iff" fails for collinear or antipodal rows. This module lists the pairs with
``|cos(u_i, u_j)| ≥ 1 − tau`` so a report can name them.

* Zero rows have no direction: they are never part of a pair; :func:`zero_rows` lists them.
* Exact route (small n): a blocked Gram matrix of the normalised rows, O(n²·d).
* Screen (large n, the default above ``exact_max_n``): random orthonormal projection to
  ``m ≪ d`` dimensions, a sort on one projected coordinate, a blocked Gram of the projected
  points inside the sorted windows (O(n²·m) at worst, far less when tau is small), then the
  survivors are checked on the original rows.

**Why the screen cannot miss a pair.** Let ``v_i = u_i/‖u_i‖`` and ``z_i = G v_i`` with
``G`` (m×d) having orthonormal rows, so ``‖G x‖ ≤ ‖x‖`` for every x. For unit vectors
``min(‖v_i − v_j‖², ‖v_i + v_j‖²) = 2 − 2|cos(u_i,u_j)|``, so a pair with
``|cos| ≥ 1 − τ`` has ``min(‖z_i − z_j‖², ‖z_i + z_j‖²) ≤ 2τ``, i.e.
``‖z_i‖² + ‖z_j‖² − 2|z_i·z_j| ≤ 2τ`` (†). Projecting once more onto the first coordinate,
``| |z_i0| − |z_j0| | ≤ min(|z_i0 − z_j0|, |z_i0 + z_j0|) ≤ √(2τ)`` (‡). The screen keeps
every pair satisfying (‡) (by sorting on ``|z_i0|`` and scanning windows) and (†), with
thresholds enlarged by a floating-point margin that dominates every rounding error: all
quantities are bounded by ``‖Ĝ‖₂² ≤ ν`` (ν computed from ``ĜĜᵀ``, ≈ 1) and each is a dot
product of length ≤ d+m, so its rounding error is below ``γ_{d+m+8}·ν`` (Higham §3.1); the
margin used is 16 times that. Hence every pair with ``|cos| ≥ 1 − τ`` survives to the exact
check. Non-collinear pairs survive only with small probability (their projected squared
distance is about ``m/d`` times the true one, and m is chosen ≥ 8·d·τ). The sort on
``|z_i0|`` prunes well when ``τ ≪ 1/d``; for larger τ the screen costs ``n²·m`` flops.

**Deciding a survivor.** The cosine is computed in float64 from the stored values with an
error below ``margin = 16·γ_{d+8}``; pairs whose computed ``|cos|`` is within ``margin`` of
``1 − τ`` are decided exactly, in integers: ``(u_i·u_j)² ≥ (1−τ)² ‖u_i‖²‖u_j‖²`` over the
exact dyadic values (docs/mathematics.md §5). The returned cosine is the float64 value.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np

from absorb._errors import InvalidInput
from absorb.rigorous import all_finite, row_slices
from absorb.rigorous import gamma as _gamma  # Higham's γ_k, the one rounding helper

_U32 = 2.0**-24
"""float32's unit roundoff (the projection screen's single-precision route)."""

__all__ = ["cosine_error", "live_rows", "near_collinear_pairs", "max_abs_cosine", "zero_rows"]

def cosine_error(d: int) -> float:
    """Bound on the float64 error of a cosine between two d-vectors computed here (blocked
    Gram of normalised rows): every routine of this module decides with this margin."""
    return 16.0 * _gamma(d + 8)


def _check_matrix(U: object) -> np.ndarray:
    U = np.asarray(U)
    if U.ndim != 2 or U.dtype.kind != "f" or U.dtype.itemsize > 8:
        raise InvalidInput(f"W_up: expected a 2-d float16/32/64 array, got {U.dtype} of shape {U.shape}")
    if not all_finite(U):
        raise InvalidInput("W_up: has non-finite entries; the direction of such a row is undefined")
    return U


def live_rows(U: np.ndarray) -> np.ndarray:
    """Indices of the nonzero rows of U (read in row blocks: no full-size temporary)."""
    return np.flatnonzero(np.concatenate([np.any(U[sl] != 0, axis=1) for sl in row_slices(U.shape[0], U.shape[1])]))


def _row_blocks(n: int, d: int, nbytes: int = 32 << 20) -> list[tuple[int, int]]:
    return [(sl.start, sl.stop) for sl in row_slices(n, d, nbytes)]


def _normalised_block(U: np.ndarray, i0: int, i1: int) -> np.ndarray:
    """Rows i0:i1 of U in float64, scaled by their max-abs then by their 2-norm (no
    overflow or underflow in the sum of squares); zero rows stay zero."""
    X = U[i0:i1].astype(np.float64)
    s = np.maximum(X.max(axis=1), -X.min(axis=1))  # max |x| per row, without a |X| temporary
    s[s == 0] = 1.0
    X /= s[:, None]
    nrm = np.sqrt(np.einsum("ij,ij->i", X, X))
    nrm[nrm == 0] = 1.0
    X /= nrm[:, None]
    return X


def zero_rows(U: np.ndarray) -> list[int]:
    """Indices of the all-zero rows of ``U`` (dead units: they have no direction, so they
    never appear in :func:`near_collinear_pairs`)."""
    U = _check_matrix(U)
    live = np.zeros(U.shape[0], dtype=bool)
    live[live_rows(U)] = True
    return [int(i) for i in np.flatnonzero(~live)]


def _exact_ints(x: np.ndarray) -> list[int]:
    """Integers X_k with x_k = X_k · 2^e for one common (unreturned) exponent e."""
    m, e = np.frexp(x.astype(np.float64))
    mant = (m * 2.0**53).astype(np.int64)  # exact: |m| < 1 has 53 significant bits
    ex = e.astype(np.int64)
    nz = mant != 0
    if not nz.any():
        return [0] * x.size
    emin = int(ex[nz].min())
    return [int(a) << int(b - emin) if a else 0 for a, b in zip(mant.tolist(), ex.tolist())]


def _exact_at_least(x: np.ndarray, y: np.ndarray, tau: float) -> bool:
    """Exactly: (x·y)² ≥ (1 − τ)² ‖x‖²‖y‖² for the stored dyadic values (0 ≤ τ < 1)."""
    X, Y = _exact_ints(x), _exact_ints(y)
    dot = sum(a * b for a, b in zip(X, Y))
    nx = sum(a * a for a in X)
    ny = sum(b * b for b in Y)
    f = 1 - Fraction(tau)
    return dot * dot * f.denominator**2 >= f.numerator**2 * nx * ny


def _decide(U: np.ndarray, I: np.ndarray, J: np.ndarray, cos: np.ndarray, tau: float,
            margin: float) -> list[tuple[int, int, float]]:
    c = 1.0 - tau  # rounded; ``margin`` ≫ u covers that
    out: list[tuple[int, int, float]] = []
    a = np.abs(cos)
    for i, j, v, av in zip(I.tolist(), J.tolist(), cos.tolist(), a.tolist()):
        if av - margin >= c:
            out.append((i, j, v))
        elif av + margin >= c and _exact_at_least(U[i], U[j], tau):
            out.append((i, j, v))
    return out


def _pair_cosines(U: np.ndarray, I: np.ndarray, J: np.ndarray) -> np.ndarray:
    """float64 cosines of the listed pairs, computed from normalised copies of the rows."""
    out = np.empty(I.size)
    step = max(1, (16 << 20) // (8 * U.shape[1]))
    for k in range(0, I.size, step):
        Xi = _normalised_rows(U, I[k:k + step])
        Xj = _normalised_rows(U, J[k:k + step])
        out[k:k + step] = np.einsum("ij,ij->i", Xi, Xj)
    return out


def _normalised_rows(U: np.ndarray, idx: np.ndarray) -> np.ndarray:
    X = U[idx].astype(np.float64)
    s = np.maximum(X.max(axis=1), -X.min(axis=1))  # max |x| per row, without a |X| temporary
    X /= s[:, None]
    X /= np.sqrt(np.einsum("ij,ij->i", X, X))[:, None]
    return X


def near_collinear_pairs(
    U: np.ndarray,
    *,
    tau: float,
    method: Literal["auto", "exact", "screen"] = "auto",
    exact_max_n: int = 4096,
    seed: int = 0,
    dim: int | None = None,
    antipodal: bool = False,
    keep: bool = False,
) -> list[tuple[int, int, float]]:
    """All pairs ``(i, j, cos)``, ``i < j``, of nonzero rows of ``U`` with
    ``|cos(u_i, u_j)| ≥ 1 − tau``, sorted; ``cos`` is signed (−1: antipodal).

    ``method="exact"`` runs a blocked Gram of all rows (O(n²·d)); ``"screen"`` the
    projection screen of the module docstring (cannot miss a pair; a few passes over U);
    ``"auto"`` picks exact for ``n ≤ exact_max_n``. Both routes decide each candidate the
    same way, exactly at the boundary, so they return the same list. ``tau`` must lie in
    ``[0, 1)``; ``seed`` fixes the projection; ``dim`` its dimension m (default ⌈8·d·τ⌉, at least
    16: a smaller m costs less per pair and lets more non-collinear pairs through to the exact check,
    about 2m/d against 2τ in (†); at m ≈ 2·d·τ a random layer's survivors are still a few per mille). ``antipodal``: only
    the pairs with cos < 0 (the screen then keeps ‖z_i + z_j‖² ≤ 2τ alone: half the survivors). ``keep``: within one
    decision (the engine's screens), the screen's projection is kept for the same array and served to a later call with
    the same seed and dimension (the weights must not change in place meanwhile: a decision starts afresh).

    Example::

        >>> import numpy as np
        >>> U = np.array([[1., 0.], [0., 1.], [-2., 0.], [0., 0.]])
        >>> near_collinear_pairs(U, tau=1e-9)
        [(0, 2, -1.0)]
    """
    U = _check_matrix(U)
    if not (isinstance(tau, (int, float)) and 0.0 <= tau < 1.0):
        raise InvalidInput(f"tau: expected a number in [0, 1), got {tau!r}")
    if method not in ("auto", "exact", "screen"):
        raise InvalidInput(f"method: expected 'auto', 'exact' or 'screen', got {method!r}")
    n, d = U.shape
    c = 1.0 - float(tau)
    margin = cosine_error(d)
    live = live_rows(U)
    if live.size < 2:
        return []
    if method == "exact" or (method == "auto" and n <= exact_max_n):
        I, J = _exact_candidates(U, live, c - margin)
    else:
        I, J = _screen_candidates(U, live, float(tau), seed, dim, antipodal, keep)
    if I.size == 0:
        return []
    cos = _pair_cosines(U, I, J)
    if antipodal:
        I, J, cos = I[cos < 0], J[cos < 0], cos[cos < 0]
    out = _decide(U, I, J, cos, float(tau), margin)
    out.sort()
    return out


def _exact_candidates(U: np.ndarray, live: np.ndarray, thr: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i<j) of live rows whose blocked-Gram |cos| ≥ thr."""
    n, d = U.shape
    Ul = U if live.size == U.shape[0] else U[live]  # no copy when every row is live
    blocks = _row_blocks(live.size, d, 16 << 20)
    norm = [_normalised_block(Ul, a, b) for a, b in blocks]
    Is, Js = [], []
    for bi, (a, _b) in enumerate(blocks):
        for bj in range(bi, len(blocks)):
            c0 = blocks[bj][0]
            G = np.abs(norm[bi] @ norm[bj].T)
            ii, jj = np.nonzero(G >= thr)
            ii = ii + a
            jj = jj + c0
            keep = ii < jj
            Is.append(live[ii[keep]])
            Js.append(live[jj[keep]])
    return np.concatenate(Is), np.concatenate(Js)


def _screen_candidates(U: np.ndarray, live: np.ndarray, tau: float, seed: int, dim: int | None = None,
                       antipodal: bool = False, keep: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i<j) of live rows passing the projection screen (†), (‡) of the module
    docstring (projected to ``dim`` dimensions, default ⌈8·d·τ⌉; ``antipodal``: (†) with ‖z_i + z_j‖² only);
    a superset of the near-collinear (antipodal) pairs. ``keep``: the projection is kept for the same array (one
    decision's screens: :func:`absorb.engine._kept.forget` drops it when the next starts)."""
    n, d = U.shape
    m = int(min(d, max(16, math.ceil(8 * d * tau) if dim is None else dim)))
    if m >= d // 2:
        return _exact_candidates(U, live, 1.0 - tau - 16.0 * _gamma(d + 8))
    rng = np.random.default_rng(seed)
    Gt, _ = np.linalg.qr(rng.standard_normal((d, m)))  # d×m, orthonormal columns
    # ν ≥ ‖G‖₂² ≤ ‖GᵀG‖₂ ≤ 1 + ‖GᵀG − I‖_F (+ its rounding error)
    nu = 1.0 + float(np.linalg.norm(Gt.T @ Gt - np.eye(m))) + 4 * _gamma(d + m)
    # float32 where its rounding is small beside the window (a wide τ): each projected coordinate of a unit row is then off
    # by at most γ32(d + 3) (a float32 product of d terms of unit-bounded ℓ2 mass, the two operands rounded once each),
    # so a projected point by √m·γ32(d + 3)·√ν; the float32 Gram of the m-vectors (each ‖z‖² ≤ ν) adds γ32(m + 8)·4ν
    g32 = math.sqrt(m * nu) * _gamma(d + 3, _U32) + 2.0**-100  # (+ what underflow in float32 may lose, absolutely)
    single = g32 <= math.sqrt(2.0 * tau) / 16

    def project() -> np.ndarray:
        Z = np.empty((live.size, m), dtype=np.float32 if single else np.float64)
        G_ = Gt.astype(np.float32) if single else Gt
        Ul = U if live.size == U.shape[0] else U[live]  # no copy when every row is live
        for a, b in _row_blocks(live.size, d):
            X = _normalised_block(Ul, a, b)
            Z[a:b] = (X.astype(np.float32) if single else X) @ G_
        return Z

    if keep:  # (the same projection serves another screen of the decision: one pass over the weights less)
        from absorb.engine._kept import kept, recall

        got = kept("projection", U)
        if got is not None and got[0] == (live.size, seed, m, False):
            single = False  # (a float64 projection serves where a float32 one would: its window is the narrower)
        Z = recall("projection", U, (live.size, seed, m, single), project)
    else:
        Z = project()
    if single:
        win = math.sqrt(2.0 * tau * nu) + 2 * g32  # (‡): ‖z_i ± z_j‖ of the true points ≤ √(2τν), each computed one off by g32
        thr = win * win + 8 * _gamma(m + 8, _U32) * nu  # (†) with margin
    else:
        err = 16.0 * _gamma(d + m + 8) * nu
        thr = 2.0 * tau * nu + err  # (†) with margin
        win = math.sqrt(thr) + err  # (‡) with margin
    key = np.abs(Z[:, 0])
    order = np.argsort(key, kind="stable")
    Zs, ks = Z[order], key[order]
    sq = np.einsum("ij,ij->i", Zs, Zs)
    Is, Js = [], []
    step = 512 if single else 1024  # (a block of the Gram and its distances: 3 temporaries of step × n)
    for a in range(0, Zs.shape[0], step):
        b = min(Zs.shape[0], a + step)
        hi = int(np.searchsorted(ks, ks[b - 1] + win, side="right"))
        if hi <= a + 1:
            continue
        dist = Zs[a:b] @ Zs[a:hi].T  # (the Gram, turned into the squared distances in place)
        if not antipodal:
            np.abs(dist, out=dist)
        dist *= 2.0 if antipodal else -2.0
        dist += sq[None, a:hi]
        dist += sq[a:b, None]
        if not dist.min() <= thr:  # (most blocks hold no candidate: one reduction instead of a mask and its scan)
            continue
        ii, jj = np.nonzero(dist <= thr)
        jj = jj + a
        ii = ii + a
        keep = jj > ii  # each unordered pair once (window reaches forward only)
        Is.append(ii[keep])
        Js.append(jj[keep])
    if not Is:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    I = live[order[np.concatenate(Is)]]
    J = live[order[np.concatenate(Js)]]
    lo, hi_ = np.minimum(I, J), np.maximum(I, J)
    return lo, hi_


def max_abs_cosine(U: np.ndarray) -> float:
    """``max_{i<j} |cos(u_i, u_j)|`` over the nonzero rows of ``U`` (NaN when fewer than two
    rows are nonzero), by a blocked Gram in float64: O(n²·d), meant for small n and reports
    (error below :func:`cosine_error`)."""
    U = _check_matrix(U)
    n, d = U.shape
    live = live_rows(U)
    if live.size < 2:
        return math.nan
    Ul = U if live.size == U.shape[0] else U[live]  # no copy when every row is live
    blocks = _row_blocks(live.size, d, 16 << 20)
    norm = [_normalised_block(Ul, a, b) for a, b in blocks]
    best = 0.0
    for bi in range(len(blocks)):
        for bj in range(bi, len(blocks)):
            G = np.abs(norm[bi] @ norm[bj].T)
            if bi == bj:
                np.fill_diagonal(G, 0.0)
            best = max(best, float(G.max()))
    return min(best, 1.0)
