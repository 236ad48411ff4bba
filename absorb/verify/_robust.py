"""The checker's own robust skeleton bound (docs/mathematics.md, "Robust skeleton").

Written apart from the producer's (absorb/engine/_robust.py): the angles between the lines of
the up rows come from the Lagrange identity |u|²|v|² sin²φ = Σ_{a<b} (u_a v_b − u_b v_a)² — a sum
of squares, no cancellation — each minor widened by its two roundings, instead of from the Gram
matrix. The argument, for σ∞ = a·ReLU + b·z, c = a + 2b, ε = τ'(1 + K):

* r_i = 4ε/(J_i − 2ε), J_i = |a|·|w_i|∞·|u_i|₂: at that scale every point of the kink hyperplane of
  unit i whose segment meets no other kink is crossed by a kink of any g within τ;
* those crossings are bands of the hyperplane's unit sphere S^{m-1} (m = d − 1) of measure at most
  β_m(r·cot φ), β_m(w) = min(1, w) for m = 2, min(1, w·√(2(m−1)/π)) for m ≥ 3 (the density of one
  coordinate on S^{m-1} is at most Γ(m/2)/(√π·Γ((m−1)/2)) < √((m−1)/(2π)) by Watson's inequality);
  on S^0 (d = 2) a band holds both points or none;
* so some unit of g lies within ψ_i of unit i's line, tan ψ_i = n·β'_m·r_i/A_i (d = 2: r_i); disjoint
  cones match the units one to one;
* the weight step at half-length r'_i (the bad set of measure ≤ 1/2, or empty for d = 2) bounds
  |w'_j|u'_j| − w_i|u_i||∞ by δ_i, each matched product w'_j u'_jᵀ lies within
  E_i = √d·(δ_i + |w_i|∞|u_i|·2 sin(ψ_i/2)) of ±w_i u_iᵀ in ‖·‖_∞, and the odd part puts some S with
  ‖M + c·D_S U_S‖_∞ ≤ ε + |c|/2·Σ E_i; the bar is √d times that over ‖M‖_F.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_U = 2.0**-53
_WIDEN = 1 + 1e-10
"""Each derived number is moved this far (relatively) in its safe direction: far above the few roundings after the angles."""
MAX_WORK = 2**28
"""n²·d² past which the Lagrange minors are not formed (the producer records no robust bar past it either)."""


def _band(w: float, m: int) -> float:
    if m == 1:
        return 1.0 if w * _WIDEN >= 1 else 0.0
    slope = 1.0 if m == 2 else math.sqrt(2 * (m - 1) / math.pi)
    return min(1.0, slope * w * _WIDEN)


def _line_angles(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin φ lower bounds, cos φ upper bounds) of the angles between the lines of every pair of rows."""
    n, d = U.shape
    a_idx, b_idx = np.triu_indices(d, 1)
    norm2 = np.sqrt((U * U).sum(axis=1))
    hi_norm = norm2 * (1 + (d + 2) * _U)
    sin_lo = np.ones((n, n))
    for i in range(n):
        ui = U[i]
        m = ui[a_idx][None, :] * U[:, b_idx] - ui[b_idx][None, :] * U[:, a_idx]
        err = 2.2 * _U * (np.abs(ui[a_idx][None, :] * U[:, b_idx]) + np.abs(ui[b_idx][None, :] * U[:, a_idx]))
        low = np.maximum(np.abs(m) - err, 0.0)
        s = np.sqrt((low * low).sum(axis=1) * (1 - (len(a_idx) + 2) * _U))
        sin_lo[i] = s * (1 - 4 * _U) / (hi_norm[i] * hi_norm)
    sin_lo = np.minimum(np.minimum(sin_lo, sin_lo.T), 1.0)
    np.fill_diagonal(sin_lo, 0.0)
    cos_hi = np.sqrt(np.maximum(0.0, 1 - sin_lo * sin_lo)) * _WIDEN
    return sin_lo, np.minimum(cos_hi, 1.0)


def robust_distance_bar(U: np.ndarray, D: np.ndarray, M: np.ndarray | None, a: float, b: float, tol: float) -> tuple[float | None, str]:
    """(the bar, how) — or (None, why not): every residual-free g within ``tol`` of f has an S with
    ‖M + c·D_S U_S‖_F/‖M‖_F ≤ bar."""
    n, d = U.shape
    if d < 2 or a == 0:
        return None, "d < 2 or σ∞ has no kink"
    if n * n * d * d > MAX_WORK:  # (before any float64 copy of a large float32 layer)
        return None, f"n²·d² = {n * n * d * d:.3g} is past the checker's budget for the angles ({MAX_WORK:.3g})"
    U, D = (np.asarray(x, dtype=np.float64) for x in (U, D))
    M = np.eye(d) if M is None else np.asarray(M, dtype=np.float64)  # (None: the identity skip)
    with np.errstate(all="ignore"):
        if not (np.isfinite(U).all() and np.isfinite(D).all() and np.isfinite(M).all()):
            return None, "a weight is not finite"
        ex = np.frexp(np.abs(U).max(axis=1, initial=0.0))[1]  # (rows scaled by powers of 2, exactly: no subnormal square)
        Us = np.ldexp(U, -ex[:, None])
        unorm = np.ldexp(np.sqrt((Us * Us).sum(axis=1)), ex)
        u_lo, u_hi = unorm * (1 - (d + 2) * _U), unorm * (1 + (d + 2) * _U)
        wtop = np.abs(D).max(axis=0)
        reach = float(np.max(np.abs(D) @ np.abs(U).sum(axis=1))) * (1 + (n + d + 4) * _U)
        K = (float(np.abs(M).sum(axis=1).max()) * (1 + (d + 2) * _U) + max(abs(a + b), abs(b)) * reach) * _WIDEN
        eps = tol * (1 + K) * _WIDEN
        jump = abs(a) * wtop * u_lo / _WIDEN
        if not (math.isfinite(eps) and np.all(jump > 2 * eps)):
            return None, f"a unit's kink |a|·|w_i|∞·|u_i|₂ (least {float(jump.min()):.3g}) is not above 2ε = {2 * eps:.3g}"
        r = 4 * eps / (jump - 2 * eps) * _WIDEN
        sin_lo, cos_hi = _line_angles(Us)  # (angles do not change with the rows' scales)
        off = ~np.eye(n, dtype=bool)
        if n > 1 and not np.all(sin_lo[off] > 0):
            return None, "two rows' lines are not separated"
        m = d - 1
        slope = 1.0 if m <= 2 else math.sqrt(2 * (m - 1) / math.pi)
        psi = np.zeros(n)
        phi = np.arcsin(np.minimum(sin_lo, 1.0)) / _WIDEN  # (lines: angles in [0, π/2], arcsin increasing)
        for i in range(n):
            cots = cos_hi[i][off[i]] / sin_lo[i][off[i]] * _WIDEN
            A = 1 - sum(_band(float(r[i] * ct), m) for ct in cots)
            if A <= 0:
                return None, f"unit {i}'s kink is crowded at the scale r = {r[i]:.3g}"
            t = r[i] * _WIDEN if m == 1 else n * slope * r[i] / A * _WIDEN
            psi[i] = math.atan(t) * _WIDEN
        total = 0.0
        for i in range(n):
            far = [phi[i, k] - psi[k] for k in range(n) if k != i]
            if any(f <= psi[i] for f in far):
                return None, f"the cone about unit {i} (half-angle {psi[i]:.3g}) meets another's"
            if m == 1:
                rp = 0.5 * min((math.tan(f) for f in far), default=math.inf) / _WIDEN
            else:
                cot_sum = sum(1 / math.tan(f) for f in far) * _WIDEN
                rp = 1 / (4 * slope * cot_sum) / _WIDEN if cot_sum > 0 else math.inf
            rp = min(rp, 1e3)
            lost = (rp * 2 * math.sin(psi[i] / 2) ** 2 + math.sin(psi[i])) * _WIDEN  # r'(1 − cos ψ) + sin ψ
            tmin = (rp - lost) / _WIDEN
            if not tmin > 0:
                return None, f"the cone about unit {i} is too wide to read its weight"
            dk = (wtop[i] * u_hi[i] * lost / tmin + eps * (4 + 2 * rp) / (abs(a) * tmin)) * _WIDEN
            total += math.sqrt(d) * (dk + wtop[i] * u_hi[i] * 2 * math.sin(psi[i] / 2)) * _WIDEN
        delta = (eps + abs(a + 2 * b) / 2 * total) * _WIDEN
        mf = float(np.sqrt((M * M).sum())) * (1 - (d * d + 2) * _U)
        if not mf > 0:
            return None, "M = 0"
        bar = math.sqrt(d) * delta / mf * _WIDEN
    if not math.isfinite(bar):
        return None, "the bar overflows"
    return bar, f"ε = {eps:.3g}, largest cone half-angle {float(psi.max()):.3g} rad"


def check_robust(ctx: Any, w: str, b: dict[str, Any], block: Any, a: float, bb: float) -> None:
    """After a flip route's search was re-checked (its proved distance in ``ctx.once['distance_lower']``): where this
    checker's robust bar is below that distance, every residual-free block within τ is ruled out (``ctx.once['robust']``,
    so the screens need not look at 4τ); a recorded ``robust_bar`` must be this checker's bar or more and below the
    distance (proved as recorded: a larger bar below the distance is a weaker claim), or it is a false claim; one the checker cannot derive is left not re-checked."""
    from absorb.verify._numerics import rounding_allowance
    from absorb.verify._report import _require

    rec = (b.get("argument") or {}).get("robust_bar")
    low = ctx.once.get("distance_lower")
    bar, how = robust_distance_bar(block.W_up, block.W_down, block.skip, a, bb, ctx.tol + rounding_allowance(block.n))
    if bar is None or not isinstance(low, float):
        if rec is not None:
            ctx.report.unchecked(w, "the robust skeleton bound rules out every residual-free block within the tolerance",
                                 how if bar is None else "the search's distance was not re-derived here")
        return
    if rec is not None:
        claimed = (b.get("search") or {}).get("bound")
        _require(ctx, isinstance(rec, float) and rec >= bar * (1 - 1e-7) and isinstance(claimed, float) and claimed > rec, w,
                 "the recorded robust bar is at least this checker's (to 10⁻⁷; a larger one is a weaker claim, proved too), and "
                 "the search's recorded distance exceeds it",
                 f"recorded {rec!r}, re-derived {bar:.6g} ({how}), search bound {claimed!r}")
        if not low > rec:
            ctx.report.unchecked(w, "the proved distance of every index set exceeds the recorded robust bar",
                                 f"this checker proved every S past {low:.3g} only, the bar is {rec:.3g}")
    if low > bar:
        ctx.once["robust"] = True
        ctx.report.ok(w, "every residual-free block within the tolerance flips f's units up to an S within the robust bar, "
                      "which the proved distance exceeds (robust skeleton bound)", f"bar {bar:.3g} < {low:.3g}; {how}")
