"""Hypotheses of the results, checked on the actual weights, each with its numbers.

Exact where the hypothesis is exact (a stored float is an exact dyadic rational: an entry
is zero or it is not). Where floating point decides (collinearity, invertibility), the
check is conservative: it reports ``holds=True`` only when the computed quantity clears
the tolerance by far more than its rounding error, so the exact hypothesis then holds.
"""

from __future__ import annotations

import numpy as np

from absorb._validate import float64_rows
from absorb.engine._collinear import cosine_error, max_abs_cosine, near_collinear_pairs
from absorb.engine.verdict import Hypothesis
from absorb.model.block import Block

COLLINEAR_TAU = 1e-10
"""Rows with |cos| ≥ 1 − τ count as collinear (conservatively degenerate).

Result 5 needs *exact* non-collinearity. A cosine computed in float64 from d-vectors is
off by at most about (d + 2)·ε, so any computed |cos| < 1 − τ with τ ≥ 8(d + 2)ε proves
|cos| < 1 exactly; :func:`nondegenerate` uses τ = max(COLLINEAR_TAU, 8(d + 2)ε)."""

_EPS = np.finfo(float).eps
_EXACT_COSINE_MAX_N = 4096


def _norms(A: np.ndarray, axis: int) -> np.ndarray:
    """2-norms along ``axis`` of a 2-D ``A`` without overflow or underflow in the squares
    (scaled by the max-abs first; a norm past the float range is inf, silently), in float64,
    over blocks of the other axis (a float32 ``A`` is never copied whole)."""
    A = np.asarray(A)
    if A.ndim != 2:
        return _norms_f64(np.asarray(A, dtype=np.float64), axis)
    if A.dtype == np.float32:  # squares of float32 values neither over- nor underflow in float64: one pass,
        # summed in float64 as einsum reads (no float64 copy of A)
        return np.sqrt(np.einsum("ij,ij->i" if axis == 1 else "ij,ij->j", A, A, dtype=np.float64))
    if axis == 1:
        return np.concatenate([_norms_f64(Ab, 1) for _sl, Ab in float64_rows(A)] or [np.zeros(0)])
    return np.concatenate([_norms_f64(Ab, 1) for _sl, Ab in float64_rows(A.T)] or [np.zeros(0)])


def _norms_f64(A: np.ndarray, axis: int) -> np.ndarray:
    s = np.max(np.abs(A), axis=axis, keepdims=True, initial=0.0)
    s = np.where(s == 0, 1.0, s)
    with np.errstate(over="ignore"):
        return np.linalg.norm(A / s, axis=axis) * np.squeeze(s, axis=axis)


def skip_nonzero(block: Block) -> Hypothesis:
    if block.skip is None:  # the identity: no d×d matrix needed
        return Hypothesis("skip_nonzero", True, "the skip matrix M is nonzero", {"nonzero_entries": block.d, "fro_norm": float(np.sqrt(block.d))})
    M = block.M
    nz = int(np.count_nonzero(M))
    return Hypothesis("skip_nonzero", nz > 0, "the skip matrix M is nonzero" if nz else "the skip matrix M is zero",
                      {"nonzero_entries": nz, "fro_norm": float(_norms(M.reshape(1, -1), 1)[0])})


def bias_free(block: Block) -> Hypothesis:
    present = [k for k in ("b_up", "b_gate", "b_down") if getattr(block, k) is not None and np.any(getattr(block, k))]
    return Hypothesis("bias_free", not present,
                      "the block has no (nonzero) biases" if not present else f"the block has nonzero biases: {', '.join(present)}",
                      {"nonzero_biases": present})


def dimension(block: Block) -> Hypothesis:
    return Hypothesis("d_at_least_2", block.d >= 2, f"d = {block.d} {'≥' if block.d >= 2 else '<'} 2", {"d": block.d})


def skip_invertible(block: Block) -> Hypothesis:
    """M invertible, proved by σ_min(M) > 10·d·ε·σ_max(M) (SVD is backward stable)."""
    if block.skip is None:
        return Hypothesis("skip_invertible", True, "M = I (identity skip)", {"cond": 1.0})
    if block.hc is not None:
        H = block.hc.H_res  # M = H_res ⊗ I: invertible iff H_res is; the small matrix decides it
        s = np.linalg.svd(H, compute_uv=False)
        k = H.shape[0]
    else:
        s = np.linalg.svd(block.skip, compute_uv=False)
        k = block.d
    smax, smin = float(s[0]), float(s[-1])
    cond = smax / smin if smin > 0 else float("inf")
    ok = smax > 0 and smin > 10 * k * _EPS * smax
    what = "H_res" if block.hc is not None else "M"
    return Hypothesis("skip_invertible", bool(ok),
                      f"{what} is invertible (condition number {cond:.3g})" if ok else
                      f"{what} is singular or too close to singular to prove invertible (σ_min = {smin:.3g}, σ_max = {smax:.3g})",
                      {"sigma_min": smin, "sigma_max": smax, "cond": cond})


def nondegenerate(block: Block, *, tau: float = COLLINEAR_TAU) -> tuple[Hypothesis, ...]:
    """Result 5's nondegeneracy: nonzero rows of W_up, nonzero columns of W_down, rows of
    W_up pairwise non-collinear (|cos| < 1 − tau)."""
    U, D = block.W_up, block.W_down
    tau = max(tau, 8 * (block.d + 2) * _EPS)
    # One pass per matrix: a norm from _norms is 0 exactly for a zero row (column): a nonzero
    # one is at least its max |entry| (the squares are scaled by it, or are float32 squares in
    # float64, which do not underflow).
    u_norms, w_norms = _norms(U, 1), _norms(D, 0)
    zero_rows, zero_cols = np.flatnonzero(u_norms == 0), np.flatnonzero(w_norms == 0)
    rows = Hypothesis("rows_nonzero", zero_rows.size == 0,
                      "every row of W_up is nonzero" if zero_rows.size == 0 else f"rows {_few(zero_rows)} of W_up are zero",
                      {"zero_rows": zero_rows.tolist()[:20], "min_row_norm": float(u_norms.min(initial=np.inf))})
    cols = Hypothesis("columns_nonzero", zero_cols.size == 0,
                      "every column of W_down is nonzero" if zero_cols.size == 0 else f"columns {_few(zero_cols)} of W_down are zero",
                      {"zero_columns": zero_cols.tolist()[:20], "min_column_norm": float(w_norms.min(initial=np.inf))})
    mc = max_abs_cosine(U) if block.n <= _EXACT_COSINE_MAX_N else None
    # A computed max below 1 − τ by more than its rounding bound proves that no pair is
    # near-collinear: the pair search (a second Gram) is then skipped.
    clear = mc is not None and np.isfinite(mc) and mc < 1.0 - tau - cosine_error(block.d)
    pairs = [] if clear else near_collinear_pairs(U, tau=tau, keep=True)  # (its projection may serve the pairs' screen)
    value: dict[str, object] = {"tau": tau, "collinear_pairs": [[i, j] for i, j, _ in pairs[:20]]}
    if mc is not None:
        value["max_abs_cos"] = mc
    if pairs:
        i, j, c = pairs[0]
        more = f" and {len(pairs) - 1} more pair{'s' if len(pairs) > 2 else ''}" if len(pairs) > 1 else ""
        stmt = (f"rows {i} and {j} of W_up are collinear{', antipodal' if c < 0 else ''} "
                f"(|cos| = {abs(c):.12g} ≥ 1 − {tau:g})" + more)
    else:
        if mc is not None and np.isfinite(mc):
            stmt = f"rows of W_up pairwise non-collinear (max |cos| = {mc:.6g} < 1 − {tau:g})"
        else:
            value.pop("max_abs_cos", None)
            stmt = f"rows of W_up pairwise non-collinear (no pair with |cos| ≥ 1 − {tau:g})"
    coll = Hypothesis("rows_noncollinear", not pairs, stmt, value)
    return rows, cols, coll


def _few(idx: np.ndarray) -> str:
    s = ", ".join(str(int(i)) for i in idx[:5])
    return s + (f" (and {idx.size - 5} more)" if idx.size > 5 else "")
