"""Re-checks of 'no index set is within the tolerance'."""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block
from absorb.verify import _numerics
from absorb.verify._numerics import _RANGE_EXPONENT, _U, _frac_matrix, _gamma, _in_range, distance_bar, subset_sums
from absorb.verify._report import _Ctx, _require

ENUM_MAX_N = 20
"""Exhaustive re-enumeration of index sets up to this width (2^20 sets, the search's own limit)."""
ENUM_MAX_ENTRIES = 1 << 28
"""… and up to 2^n · d² residual entries in all (formed in chunks)."""


def _enumerate_lower_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[float, float] | None:
    """(rigorous lower bound, upper bound) on min_S ‖D_S U_S − T‖_F / ‖T‖_F over all 2^n sets.

    Written from scratch: ``a_i = vec(w_i u_iᵀ)`` (rounded products: |â − a| ≤ u|a|), all
    subset sums (``subset_sums``), each entry a float sum of ≤ n + 1 terms so
    |r̂_S − r_S| ≤ e := γ_{n+1}(Σ|â_i| + |t|) + u(1+u)Σ|â_i| entrywise; the computed norm
    is within γ_{m+2} relatively. None when n > ENUM_MAX_N, the work is too large, or an
    entry is outside the range of ``_in_range``.
    """
    n, d = U.shape
    m = d * d
    if n > ENUM_MAX_N or (1 << n) * m > ENUM_MAX_ENTRIES or not _in_range(U, D, T):
        return None
    U, D = U.astype(np.float64, copy=False), D.astype(np.float64, copy=False)  # float32 weights: the products below in float64
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, m)
    t = T.reshape(-1)
    best = min(float(np.sqrt(np.einsum("ij,ij->i", s - t, s - t)).min()) for s in subset_sums(K))
    absK = np.abs(K).sum(axis=0)
    e = _gamma(n + 1) * (absK + np.abs(t)) + _U * (1 + _U) * absK
    gm = _gamma(m + 2)
    # + √(m·2^-1074): the squares of the m residual entries may underflow, by ≤ 2^-1074 each
    e_norm = float(np.linalg.norm(e)) * (1 + gm) + math.sqrt(m) * 2.0**-537
    tn = float(np.linalg.norm(t))
    t_hi, t_lo = tn * (1 + gm), tn * (1 - gm)
    lower = max(0.0, best * (1 - gm) - e_norm) / t_hi
    upper = (best * (1 + gm) + e_norm) / t_lo
    return lower, upper


def _exact_dual_bound(U: np.ndarray, D: np.ndarray, T: np.ndarray, Yq: list[list[Fraction]]) -> tuple[Fraction, Fraction, Fraction]:
    """(numerator, ‖Y‖_F², ‖T‖_F²) of docs/mathematics.md §4's dual bound in exact rationals, in its
    one-sided (box-aware) form: with c_i = w_iᵀYu_i and τ = ⟨T,Y⟩, ⟨Y, D diag(b) U − T⟩
    = Σ b_i c_i − τ lies in [Σ min(0,c_i) − τ, Σ max(0,c_i) − τ] for b ∈ [0,1]^n, and its
    distance from 0 is the numerator (≥ |τ| − Σ|c_i|, the two-sided form)."""
    Tf = _frac_matrix(T)
    d = len(Yq)
    tau = sum((Tf[i][j] * Yq[i][j] for i in range(d) for j in range(d)), Fraction(0))
    lo = hi = -tau
    for i in range(U.shape[0]):
        u, w = _frac_matrix(U[i])[0], _frac_matrix(D[:, i])[0]
        Yu = [sum((Yq[r][k] * u[k] for k in range(d)), Fraction(0)) for r in range(d)]
        ci = sum((w[r] * Yu[r] for r in range(d)), Fraction(0))
        lo += min(ci, Fraction(0))
        hi += max(ci, Fraction(0))
    num = lo if lo > 0 else (-hi if hi < 0 else Fraction(0))
    ysq = sum((v * v for row in Yq for v in row), Fraction(0))
    tsq = sum((v * v for row in Tf for v in row), Fraction(0))
    return num, ysq, tsq


def _dual_relative(U: np.ndarray, D: np.ndarray, T: np.ndarray, A: np.ndarray, B: np.ndarray,
                   claimed: float | None = None) -> tuple[float | None, str]:
    """A rigorous lower bound on min_S ‖D_S U_S − T‖_F / ‖T‖_F from Y = A Bᵀ, or (None, why not).

    Uses ``absorb.verify.dual_bound.check_dual_bound`` (rigorous float64 with a rounding
    account) when that module exists; otherwise, for small instances, the same bound in
    exact rationals with ``Y = A Bᵀ`` formed exactly: rel² = num² / (‖Y‖² ‖T‖²).
    """
    try:
        from absorb.verify.dual_bound import check_dual_bound  # float64 with a rounding account; exact below if absent
    except ImportError:
        check_dual_bound = None
    if check_dual_bound is not None:
        res = check_dual_bound(U, D, T, A, B)
        rel, how = float(res.relative), "absorb.verify.dual_bound.check_dual_bound"
        if U.dtype == D.dtype == np.float32 and claimed is not None and claimed > rel:
            # the float32 products' rounding may eat a little of the bound the search proved in
            # float64: the same Y with float64 products (a slower pass) before calling it overstated
            rel = max(rel, float(check_dual_bound(U, D, T, A, B, float32_products=False).relative))
            how += " (float64 products)"
        return rel, how
    n, d = U.shape
    r = A.shape[1]
    if (n + d * r) * d * d > _numerics.EXACT_WORK:
        return None, "absorb.verify.dual_bound is not available and the instance is too large to re-check exactly"
    Af, Bf = _frac_matrix(A), _frac_matrix(B)
    Yq = [[sum((Af[i][k] * Bf[j][k] for k in range(r)), Fraction(0)) for j in range(d)] for i in range(d)]
    num, ysq, tsq = _exact_dual_bound(U, D, T, Yq)
    if num <= 0 or ysq == 0 or tsq == 0:
        return 0.0, "exact rational arithmetic (the dual matrix proves nothing)"
    rel = math.sqrt(num * num / (ysq * tsq))  # float sqrt of an exact ratio: relative error ≤ 2u
    return rel * (1 - 4 * _U), "exact rational arithmetic"


def _array(v: object) -> np.ndarray | None:
    if isinstance(v, dict) and v.get("omitted"):
        return None
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if a.ndim == 2 and np.all(np.isfinite(a)) else None


def _check_dual_record(ctx: _Ctx, w: str, cert: dict[str, Any], A: np.ndarray, claimed: float, T: np.ndarray,
                       bar: float) -> None:
    """The numbers a low-rank dual certificate records next to A and B are the search record's:
    its rank is A's, its tolerance the search's (the certificate's τ, or the distance ``bar`` re-derived here: the
    producer adds a factor 1 + 2⁻²⁰ and bounds ‖M‖_F its own way, agreeing to γ of M's size), its relative bound the recorded bound and its
    absolute bound that times ‖T‖_F (to a few ulps, or to the rounding of a rigorous upper bound on
    ‖T‖_F, which the search divides by: γ_{size+8} relative for a dense T). (The CG iteration count is
    not a claim.)"""
    t = float(np.linalg.norm(T))
    rel = 1e-12 + 2 * _gamma(T.size + 8)
    agree = 1e-8 + 4 * _gamma(T.size + 8)
    checks = [("rank", lambda v: v == A.shape[1]),
              ("tol", lambda v: v == ctx.tol or (isinstance(v, float) and abs(v / bar / (1 + 2.0**-20) - 1) <= agree)),
              ("bound_rel", lambda v: v == claimed),
              ("bound_abs", lambda v: isinstance(v, float) and abs(v - claimed * t) <= rel * abs(claimed * t))]
    bad = [k for k, ok in checks if k in cert and not ok(cert[k])]
    if bad:
        _require(ctx, False, w, "the dual certificate's rank, tolerance and bounds are the record's",
                 ", ".join(f"{k} = {cert[k]!r}" for k in bad))


def gain_at_infinity(block: Block, slope: float, ends: tuple[float, float] | None = None) -> float:
    """K ≥ sup_v |f∞(v)|∞/|v|∞, f∞(v) = M v + W_down σ∞(W_up v), |σ∞(z)| ≤ ``slope``·|z|: ‖M‖∞ plus slope times
    the largest row of |W_down| applied to the rows' ℓ1 norms of W_up (nonnegative sums, raised by γ_{n+d+4})."""
    with np.errstate(all="ignore"):  # (an overflow: an infinite gain, and no distance proves anything)
        D = np.abs(np.asarray(block.W_down, dtype=np.float64))
        norms = np.abs(np.asarray(block.W_up, dtype=np.float64)).sum(axis=1)
        m_inf = float(np.abs(np.asarray(block.M, dtype=np.float64)).sum(axis=1).max(initial=0.0))
        out = (m_inf + abs(slope) * float((D @ norms).max(initial=0.0))) * (1 + _gamma(block.n + block.d + 4))
    if ends is not None and block.d * block.d * block.n <= 1 << 26:  # the directions ±e_j: often far less
        out = min(out, _at_unit_vectors(block, ends))
    return out if math.isfinite(out) else math.inf


def _at_unit_vectors(block: Block, ends: tuple[float, float]) -> float:
    """K with √d(1 + K) = d·W, W = 1 + max over v = ±e_j of |f∞(v)|∞ (rounded up): there a flip's ratio tends to
    |Rv|∞/(|f∞(v)|∞ + 1), and the largest |R e_j|∞ is max |R_ij| ≥ ‖R‖_F/d."""
    U, D = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down, dtype=np.float64)
    M = np.asarray(block.M, dtype=np.float64)
    top = 0.0
    with np.errstate(all="ignore"):
        for sign in (1.0, -1.0):
            P = sign * U.T  # row j: the pre-activations at sign·e_j
            A = np.where(P > 0, ends[0] * P, ends[1] * P)
            V = sign * M.T + A @ D.T  # row j: f∞(sign·e_j)
            err = _gamma(block.n + 4) * (np.abs(M.T) + np.abs(A) @ np.abs(D.T))
            top = max(top, float((np.abs(V) + err).max()))
    out = math.sqrt(block.d) * (1 + top) - 1
    return out if math.isfinite(out) else math.inf


def cone_gain(block: Block) -> float:
    """Where σ∞ is 0 on the negative side: the K with √d(1 + K) = d(1 + ‖M‖∞)(1 + δ)/δ, from this checker's own
    cone point — x with W_up x ≤ −s·1, |x|∞ ≤ 1 (one LP: the largest margin s), s re-derived here with the
    rounding of W_up x, δ = s/(2·max_i ‖u_i‖₁): at v = x ± δe_j every unit is off at infinity, f∞(v) = M v, and a
    flip's ratio there is ≥ δ·max|R_ij|/((1 + ‖M‖∞)(1 + δ)) ≥ ‖R‖_F/(d(1 + ‖M‖∞)(1 + δ)/δ). inf where no cone."""
    U = np.asarray(block.W_up, dtype=np.float64)
    n, d = U.shape
    if n * d > 1 << 20 or not np.all(np.isfinite(U)):
        return math.inf
    from scipy.optimize import linprog

    try:
        res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.hstack([U, np.ones((n, 1))]), b_ub=np.zeros(n),
                      bounds=[(-1.0, 1.0)] * d + [(None, 1.0)], method="highs")
    except (ValueError, np.linalg.LinAlgError):
        return math.inf
    if res.status != 0 or res.x is None:
        return math.inf
    x = np.clip(np.asarray(res.x[:d], dtype=np.float64), -1.0, 1.0)
    with np.errstate(all="ignore"):
        s = -float(np.max(U @ x + _gamma(d + 2) * (np.abs(U) @ np.abs(x))))
        top = float(np.abs(U).sum(axis=1).max()) * (1 + _gamma(d + 2))
        if not (s > 0 and 0 < top < math.inf):
            return math.inf
        delta = s / (2 * top)
        m_inf = float(np.abs(np.asarray(block.M, dtype=np.float64)).sum(axis=1).max(initial=0.0)) * (1 + _gamma(d + 2))
        out = d * (1 + m_inf) * (1 + delta) / delta / math.sqrt(d) - 1
    return out if math.isfinite(out) else math.inf


def _check_infeasible(ctx: _Ctx, w: str, block: Block, search: dict[str, Any], T: np.ndarray, bar: float | None = None,
                      rec_bar: float | None = None, slopes: tuple[float, float] | None = None, level: float | None = None) -> None:
    """Re-derive 'no index set within the distance bar' and that the recorded bound is not overstated.
    The bar (:func:`distance_bar`) is τ, or more for a small skip: past it no S's flip passes the
    witness check; ``bar``: given by a caller whose problem is not the block's own (a lifted one: the block's bar
    plus the rounding of the lifted rows), ``rec_bar`` then the block's own, which the search recorded. ``slopes``:
    σ's asymptotic slopes (L₊, L₋), for an ungated block whose f grows linearly — the bar then counts f's gain at
    infinity (:func:`gain_at_infinity`, or where L₋ = 0 and it helps :func:`cone_gain`), as the tolerance is
    relative to |f(x)|∞ too."""
    claimed = search.get("bound")
    slope = level if slopes is None else max(abs(slopes[0]), abs(slopes[1]))  # (level: a step gate's largest limit)
    if bar is None:
        bar = distance_bar(ctx.tol, block.n, block.M, 0.0 if slope is None else gain_at_infinity(block, slope, slopes))
        if slopes is not None and slopes[1] == 0 and not (isinstance(claimed, (int, float)) and claimed > bar):
            bar = min(bar, distance_bar(ctx.tol, block.n, block.M, cone_gain(block)))
    _require(ctx, isinstance(claimed, (int, float)) and claimed > bar, w,
             "the recorded bound exceeds the distance bar max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F)" + (
                 "" if slope is None else ", K ≥ f's gain at infinity"), f"bound {claimed!r}, bar {bar:.6g}")
    if slope is not None and rec_bar is None:  # (flips: f − g affine, so c·g is a candidate too; absorb/verify/_scaled.py)
        from absorb.verify._numerics import rounding_allowance
        from absorb.verify._scaled import needed_gain

        K = gain_at_infinity(block, slope, slopes)
        if slopes is not None and slopes[1] == 0:
            K = min(K, cone_gain(block))
        exact = slopes == (1.0, 0.0) and all(getattr(block, k) is None or not np.any(getattr(block, k)) for k in ("b_up", "b_down"))
        K2, nu = needed_gain(block, K, ctx.tol + rounding_allowance(block.n), ctx.seed, exact)  # (exact: the ReLU/GELU flip)
        wide = distance_bar(ctx.tol, block.n, block.M, K2)
        if not claimed > wide:
            ctx.report.unchecked(w, "the recorded bound also excludes every scaled flip c·g_S, c real (f − c·g_S = "
                                 "(1 − c)·f + c·R_S x)", f"bound {claimed!r}, bar with f's sampled nonlinearity ν = {nu:.3g}: {wide:.6g}")
    cert = search.get("certificate") or {}
    U, D = block.W_up, block.W_down
    done = False
    if cert.get("kind") in ("dual-low-rank", "dual"):
        A = _array(cert.get("A") if cert.get("kind") == "dual-low-rank" else cert.get("Y"))
        B = _array(cert.get("B")) if cert.get("kind") == "dual-low-rank" else (None if A is None else np.eye(block.d))
        if A is None or B is None or A.shape != B.shape or A.shape[0] != block.d:
            ctx.report.unchecked(w, "dual certificate Y = A Bᵀ", "the certificate's A, B (or Y) are missing, omitted or malformed")
        else:
            _check_dual_record(ctx, w, cert, A, claimed, T, bar if rec_bar is None else rec_bar)
            rel, how = _dual_relative(U, D, T, A, B, claimed if isinstance(claimed, (int, float)) else None)
            if rel is None:
                ctx.report.unchecked(w, "dual certificate Y = A Bᵀ", how)
            else:
                _require(ctx, rel > bar, w, "the dual certificate proves every S is farther than the distance bar",
                         f"re-computed bound {rel:.6g} by {how}")
                _require(ctx, claimed <= rel * (1 + 1e-9) + 1e-300, w, "the recorded bound is not overstated",
                         f"recorded {claimed:.17g}, re-computed {rel:.17g}")
                ctx.once["distance_lower"] = rel
                done = True
    if not done:
        res = _enumerate_lower_bound(U, D, T)
        if res is None and _in_range(U, D, T):  # (too many sets to enumerate)
            tried = None
            if cert.get("kind") == "lattice-enumeration":  # the search's own route first
                tried = _check_by_lattice(ctx, w, block, search, T, float(claimed), bar)
                if tried is None:
                    return
            _check_by_mitm(ctx, w, block, search, T, float(claimed), bar, lattice_declined=tried)
            return
        if res is None:
            why = f"an entry is outside [2^-{_RANGE_EXPONENT}, 2^{_RANGE_EXPONENT}], where the checker's float64 bounds hold"
            ctx.report.unchecked(w, f"infeasibility proved by {search.get('method')}", f"{why} and no dual matrix was recorded")
            return
        lower, upper = res
        _require(ctx, lower > bar, w, f"re-enumerating all 2^{block.n} index sets: every S is farther than the distance bar {bar:.3g}",
                 f"min relative distance ≥ {lower:.6g}")
        _require(ctx, claimed <= upper, w, "the recorded bound is not overstated",
                 f"recorded {claimed:.17g}, true minimum ≤ {upper:.17g}")
        ctx.once["distance_lower"] = lower



def _check_by_lattice(ctx: _Ctx, w: str, block: Block, search: dict[str, Any], T: np.ndarray, claimed: float, bar: float) -> str | None:
    """The checker's own lattice enumeration (``_lattice``): no S closer than the recorded
    bound, which proves both claims (None: checked), or why it declined (nothing reported),
    within 10× the search's recorded time (at least 30 s)."""
    from absorb.verify._lattice import lattice_no_set_closer

    rec = search.get("elapsed")
    budget = max(30.0, 10 * rec) if isinstance(rec, (int, float)) else 60.0
    t0 = time.perf_counter()
    res = lattice_no_set_closer(block.W_up, block.W_down, T, claimed, budget=budget)
    if isinstance(res, str):
        return res
    el = time.perf_counter() - t0
    how = (f"the checker's lattice enumeration: fpylll {res.reduction}, {res.nodes:.3g} nodes, {res.vectors} vectors "
           f"inside the exact radius, {len(res.closer)} sets closer than the bound; {el:.2f} s"
           + (f" (the search took {rec:.2f} s)" if isinstance(rec, (int, float)) else ""))
    within = [(S, rel) for S, rel in res.closer if rel <= bar]
    _require(ctx, not within, w, f"no index set is within the distance bar: all 2^{block.n} sets are farther than {bar:.3g}",
             f"{how}; S = {within[0][0]} has relative distance {within[0][1]:.3g}" if within else how)
    _require(ctx, not res.closer, w, "the recorded bound is not overstated: no index set is closer than it",
             f"recorded {claimed:.17g}; S = {res.closer[0][0]} is at {res.closer[0][1]!r}" if res.closer
             else f"recorded {claimed:.17g}; {how}")
    ctx.once["distance_lower"] = claimed
    return None


def _check_by_mitm(ctx: _Ctx, w: str, block: Block, search: dict[str, Any], T: np.ndarray, claimed: float, bar: float,
                   lattice_declined: str | None = None) -> None:
    """The checker's own meet-in-the-middle (``_mitm``): no S closer than the recorded bound
    (which proves both claims); if that radius is too wide, no S within the tolerance (and
    the bound itself is left not re-checked); if it declines both, the checker's lattice
    enumeration (unless it already declined: ``lattice_declined`` says why)."""
    from absorb.verify._mitm import mitm_no_set_closer

    t0 = time.perf_counter()
    res = mitm_no_set_closer(block.W_up, block.W_down, T, claimed)
    radius_is_bound = True
    if isinstance(res, str):
        first = res
        radius_is_bound = False
        res = mitm_no_set_closer(block.W_up, block.W_down, T, bar * (1 + 2.0**-40))
        if isinstance(res, str):
            if lattice_declined is None:
                lattice_declined = _check_by_lattice(ctx, w, block, search, T, claimed, bar)
                if lattice_declined is None:
                    return
            ctx.report.unchecked(w, f"infeasibility proved by {search.get('method')}",
                                 f"2^{block.n} sets are too many to enumerate here, no dual matrix recorded, and the checker's meet-in-the-middle "
                                 f"declined: {first}; at the tolerance: {res}; its lattice enumeration: {lattice_declined}")
            return
    el = time.perf_counter() - t0
    rec = search.get("elapsed")
    how = (f"the checker's meet-in-the-middle: rank {res.rank} eliminated, 2^{res.free} free assignments, "
           f"{res.pairs} pairs in the windows, {res.survivors} checked in ℚ; {el:.2f} s"
           + (f" (the search took {rec:.2f} s)" if isinstance(rec, (int, float)) else ""))
    within = [(S, rel) for S, rel in res.closer if rel <= bar]
    _require(ctx, not within, w, f"no index set is within the distance bar: all 2^{block.n} sets are farther than {bar:.3g}",
             f"{how}; S = {within[0][0]} has relative distance {within[0][1]:.3g}" if within else how)
    if radius_is_bound:
        best = min((rel for _, rel in res.closer), default=None)
        _require(ctx, best is None, w, "the recorded bound is not overstated: no index set is closer than it",
                 f"recorded {claimed:.17g}; S = {res.closer[0][0]} is at {best!r}" if res.closer else f"recorded {claimed:.17g}; {how}")
        ctx.once["distance_lower"] = claimed
    else:
        ctx.once["distance_lower"] = bar
        ctx.report.unchecked(w, "the recorded bound is not overstated",
                             f"recorded {claimed:.6g}; only the tolerance was re-checked ({first})")
