"""The robust skeleton bound: a flip route's ``not_absorbable`` for *every* residual-free block within τ.

The exact arguments (result 5, the skeleton) rule out a residual-free g *equal* to f; within a
tolerance τ a g need not flip f's units, and blocks fitted by optimisation can be closer than any
flip. This module proves, where its conditions hold, that every g within τ is a flip up to a
stated error, so a search bound past that error rules them all out (docs/mathematics.md,
"Robust skeleton"). Setting: σ with the asymptotic skeleton σ∞(z) = a·ReLU(z) + b·z (a ≠ 0),
c = a + 2b; f∞(x) = M x + Σ_i w_i σ∞(u_i·x) with nonzero, pairwise non-collinear rows u_i and
nonzero columns w_i, d ≥ 2; any residual-free g of width n (biases allowed) has
g∞(x) = Σ_j w'_j σ∞(u'_j·x), and g within τ of f gives |f∞(x) − g∞(x)|∞ ≤ ε|x|∞ with
ε = τ'(1 + K), K ≥ f∞'s gain and τ' = τ plus the rounding allowance.

1. *A kink needs a kink.* For p on H_i = {u_i·x = 0}, |p|₂ = 1, whose segment p ± r·v_i
   (v_i = u_i/|u_i|₂) crosses no other H_k, the second difference of f∞ is a·w_i·|u_i|₂·r, of h = f∞ − g∞
   at most ε(4 + 2r) in ∞-norm, and of g∞ zero unless some unit's hyperplane crosses the segment.
   With r = r_i = 4ε/(J_i − 2ε), J_i = |a|·|w_i|∞·|u_i|₂, every such p is crossed.
2. *Counting.* Unit j crosses the segment at p iff |q_j·p| < r·cot φ_j (φ_j: the angle between the
   lines of u'_j and u_i, q_j the unit projection of u'_j on H_i) — a band of H_i's unit sphere
   S^{m-1}, m = d − 1, of measure at most frac_m(r·cot φ_j) (frac_m(w) ≤ min(1, a_m·w): a_2 = 1,
   a_m = √(2(m−1)/π) by Gautschi's inequality; on S^0 a band holds both points or none). The
   points p whose segment meets another H_k are such bands too. If the g bands and f's own cover
   H_i's sphere, some unit has tan φ_j ≤ tan ψ_i = n·a_m·r_i/A_i, A_i = 1 − Σ_k frac_m(r_i·cot φ_ik)
   (m = 1: tan φ_j ≤ r_i). Where the cones of half-angle ψ_i about the lines of the u_i are
   disjoint, the n units of g are matched one to one with f's, each within its cone.
3. *Weights.* At a point p of H_i whose segment (half-length r'_i) meets no other H_k and no other
   matched unit (a set of measure ≥ 1/2 by the choice of r'_i), the second differences give
   |κ_j − w_i|u_i|₂|∞ ≤ δκ_i with κ_j = w'_j·|u'_j|₂, and so ‖w'_j u'_jᵀ − s_i·w_i u_iᵀ‖∞ ≤ E_i
   (s_i = ±1: the side of the cone u'_j lies on).
4. *Odd parts.* The odd part of h is ((M + (c/2)·D U) − (c/2)·D'U')·x, at most ε|x|∞, so
   ‖M + c·D_S U_S‖_∞ ≤ Δ = ε + (|c|/2)·Σ_i E_i with S = {i : s_i = −1}, and
   ‖·‖_F ≤ √d·‖·‖_∞: a search bound min_S ‖M + c·D_S U_S‖_F/‖M‖_F > √d·Δ/‖M‖_F leaves no g within τ.

The numbers are computed in float64 and widened past their rounding (the Gram matrix by
γ_{d+2}·|u_i||u_k|, every derived quantity by a relative 10⁻⁹ — far above float64's rounding of
the few operations that follow). The checker derives the same bound by its own code
(absorb/verify/_robust.py).
"""

from __future__ import annotations

import math

import numpy as np

from absorb.engine.witness import asymptotic_gain

_SLACK = 1e-9
"""Relative widening of each derived quantity (past float64's rounding of the few operations it took)."""
_R_CAP = 1e3
"""The weight step's half-length r' is at most this (past it the errors no longer shrink)."""
_MAX_WORK = 2**28
"""n²·d² past which the bound is not tried (the checker's Lagrange minors of every pair cost that)."""


def _frac(w: np.ndarray, m: int) -> np.ndarray:
    """Upper bound on the normalised measure of a band {p ∈ S^{m-1} : |q·p| ≤ w} (vectorised)."""
    w = np.asarray(w, dtype=np.float64)
    if m == 1:
        return (w >= 1 - _SLACK).astype(np.float64)
    a_m = 1.0 if m == 2 else math.sqrt(2 * (m - 1) / math.pi)
    return np.minimum(1.0, a_m * w * (1 + _SLACK))


def robust_bar(U: np.ndarray, D: np.ndarray, M: np.ndarray | None, a: float, b: float, tol: float) -> float | str:
    """√d·Δ/‖M‖_F (module doc) for the skeleton σ∞ = a·ReLU + b·z at tolerance ``tol`` (the allowance
    included by the caller), or why the argument does not conclude (a sentence)."""
    n, d = U.shape
    if d < 2 or a == 0:
        return "it needs d ≥ 2 and a kink in σ∞"
    if n * n * d * d > _MAX_WORK:  # (before any float64 copy: a 7B-sized float32 layer is not copied for a no)
        return f"n²·d² = {n * n * d * d:.3g} is past the pairwise work it allows ({_MAX_WORK:.3g})"
    U = np.asarray(U, dtype=np.float64)
    D = np.asarray(D, dtype=np.float64)
    M = np.eye(d) if M is None else np.asarray(M, dtype=np.float64)  # (None: the identity skip)
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(D)) and np.all(np.isfinite(M))):
        return "a weight is not finite"
    u = float(np.finfo(np.float64).eps) / 2
    g = (d + 2) * u / (1 - (d + 2) * u)
    with np.errstate(all="ignore"):
        # rows scaled by powers of 2 (exact) to a largest entry in [1/2, 1): the angles do not change, and no square or
        # product is subnormal (there float64's rounding is absolute, not relative: rows 2^-534 apart read 0.16 rad for 1e-3)
        ex = np.frexp(np.abs(U).max(axis=1, initial=0.0))[1]
        Us = np.ldexp(U, -ex[:, None])
        nus = np.sqrt(np.einsum("ij,ij->i", Us, Us))
        nu = np.ldexp(nus, ex)
        wmax = np.abs(D).max(axis=0) if n else np.zeros(0)
        c = a + 2 * b
        K = asymptotic_gain(M, U, D, max(abs(a + b), abs(b)))  # (‖M‖∞ + max|L±|·max_r Σ_i |w_ri|·‖u_i‖₁, raised past rounding)
        eps = tol * (1 + K) * (1 + _SLACK)
        J = abs(a) * wmax * nu * (1 - _SLACK)
        if not math.isfinite(eps) or np.any(J <= 2 * eps):
            i = int(np.argmin(J - 2 * eps)) if n else 0
            return (f"unit {i}'s kink (|a|·|w_i|∞·|u_i|₂ = {J[i]:.3g}) is not above 2ε = {2 * eps:.3g} "
                    "(ε = τ'·(1 + K)): a block within the tolerance need not have a kink near it")
        r = 4 * eps / (J - 2 * eps) * (1 + _SLACK)
        G = Us @ Us.T
        outer = np.outer(nus, nus)
        cos_hi = np.minimum(1.0, (np.abs(G) + g * outer) / (outer * (1 - g)))
        sin_lo = np.sqrt(np.maximum(0.0, 1 - cos_hi * cos_hi)) * (1 - _SLACK)
        off = ~np.eye(n, dtype=bool)
        if np.any(sin_lo[off] <= 0):
            return "two units' rows are too close to collinear for their angle to be bounded away from 0"
        phi = np.arctan2(sin_lo, cos_hi) * (1 - _SLACK)  # (a lower bound on each pair's line angle)
        cot = np.where(off, cos_hi / np.where(off, sin_lo, 1.0), 0.0) * (1 + _SLACK)
        m = d - 1
        crowd = np.where(off, _frac(r[:, None] * cot, m), 0.0).sum(axis=1)
        A = 1 - crowd
        if np.any(A <= 0):
            i = int(np.argmin(A))
            return f"unit {i}'s kink is crowded by the others' at the localisation scale r = {r[i]:.3g}"
        if m == 1:
            tan_psi = r * (1 + _SLACK)
        else:
            tan_psi = n * (1.0 if m == 2 else math.sqrt(2 * (m - 1) / math.pi)) * r / A * (1 + _SLACK)
        psi = np.arctan(tan_psi) * (1 + _SLACK)
        gap = phi - psi[:, None] - psi[None, :]
        if n > 1 and np.any(gap[off] <= 0):
            i, k = np.unravel_index(np.argmin(np.where(off, gap, np.inf)), gap.shape)
            return (f"the cones about units {i} and {k} (half-angles {psi[i]:.3g}, {psi[k]:.3g} rad) overlap "
                    f"(their lines are {phi[i, k]:.3g} rad apart): a block within the tolerance need not match them one to one")
        rest = np.where(off, phi - psi[None, :], np.pi / 2)  # (other matched units' lines, seen from unit i)
        cot_rest = np.where(off, 1 / np.tan(rest), 0.0) * (1 + _SLACK)
        if m == 1:
            rp = 0.5 * np.where(off, np.tan(rest), np.inf).min(axis=1, initial=np.inf)
        else:
            a_m = 1.0 if m == 2 else math.sqrt(2 * (m - 1) / math.pi)
            tot = cot_rest.sum(axis=1)
            rp = np.where(tot > 0, 1 / (4 * a_m * np.where(tot > 0, tot, 1.0)), np.inf)
        rp = np.minimum(rp, _R_CAP) * (1 - _SLACK)
        short = (2 * rp * np.sin(psi / 2) ** 2 + np.sin(psi)) * (1 + _SLACK)  # r' − t_min = r'(1 − cos ψ) + sin ψ, no cancellation
        t_min = (rp - short) * (1 - _SLACK)
        if np.any(t_min <= 0):
            i = int(np.argmin(t_min))
            return f"unit {i}'s cone (half-angle {psi[i]:.3g} rad) is too wide for its weight to be read off"
        dk = (wmax * nu * short / t_min + eps * (4 + 2 * rp) / (abs(a) * t_min)) * (1 + _SLACK)
        E = math.sqrt(d) * (dk + wmax * nu * 2 * np.sin(psi / 2)) * (1 + _SLACK)
        delta = (eps + abs(c) / 2 * float(E.sum())) * (1 + _SLACK)
        mf = float(np.linalg.norm(M)) * (1 - _SLACK)
        if not mf > 0:
            return "M = 0"
        bar = math.sqrt(d) * delta / mf * (1 + _SLACK)
    return bar if math.isfinite(bar) else "the bound overflows"
