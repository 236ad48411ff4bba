"""Units nearly affine where f is read, for the spare-unit screen (:mod:`absorb.engine._spare`): an ungated unit
against a line in u·x (weighted least squares, or σ's tangent at its bias, each sample's misfit less the rounding a
large bias puts into u·x + b), a gated unit against a plane in u·x and G·x. A unit that is nearly affine frees its slot
and hands its map to the skip."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

_Cand = tuple[float, str, tuple[int, ...], tuple[int, ...], "tuple[np.ndarray, np.ndarray] | None"]
"""(sampled error, what, units freed, units kept, (v, u): the map v uᵀ the freed slots take on besides the skip)."""


_EPS = 2.0**-52
_SPREAD = 2.0**16
"""An argument's rounding is spread by this factor before σ sees it, so that σ's own rounding does not hide the move."""


def _argument_rounding(A: np.ndarray, R: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """Each pre-activation's rounding at the rows of X (``A`` = |X|, rows R, biases b): ε·(|X|·|R|ᵀ + |b|)."""
    a = A @ np.abs(R).T
    return _EPS * (a if b is None else a + np.abs(b))


def _value_rounding(fn: Callable[[np.ndarray], np.ndarray], Z: np.ndarray, e: np.ndarray) -> np.ndarray:
    """What fn's value moves when its argument Z moves by its rounding ``e`` (read by a difference, spread and scaled
    back by :data:`_SPREAD`)."""
    out = np.zeros(np.shape(Z))
    cols = np.flatnonzero(np.any(e != 0, axis=0)) if np.ndim(Z) == 2 else None
    if cols is not None and len(cols) < Z.shape[1]:  # (only the units whose arguments move: σ read on those)
        if len(cols):
            out[:, cols] = _value_rounding(fn, Z[:, cols], e[:, cols])
        return out
    v = fn(Z)
    return np.maximum(np.abs(fn(Z + _SPREAD * e) - v), np.abs(fn(Z - _SPREAD * e) - v)) / _SPREAD


def _affine_units(Zx: np.ndarray, H: np.ndarray, W: np.ndarray, U: np.ndarray, wmax: np.ndarray, den: np.ndarray,
                  noise: np.ndarray, profiles: dict[int, np.ndarray], tangent: tuple[np.ndarray, np.ndarray],
                  through_zero: bool = False) -> list[_Cand]:
    """Candidates for ungated units that are nearly affine where f is read: σ(u_i·x + c_i) ≈ α_i + β_i·(u_i·x), fitted
    by least squares weighted by 1/den (``Zx``: u_i·x at the samples, ``H``: σ there); the unit frees its slot and
    hands the map β_i·w_i u_iᵀ to the skip (α_i·w_i to the output bias where biases are allowed; bias-free, to a unit
    of zero row — the freed slot then holds that constant, counted free all the same: an over-count errs towards
    unknown). ``noise``:
    the rounding of each H (a large bias rounds u·x + c before σ sees it), taken off each sample's misfit — a unit
    whose misfit is rounding is affine (errs towards unknown). Each candidate's misfit per sample goes to
    ``profiles`` (by the candidate's id), for :func:`_greedy`'s joint account. ``tangent`` (σ(c_i), σ'(c_i)): σ's
    tangent at the bias, tried too — a unit with a large bias is that line plus its Taylor remainder, which the
    weighted fit, pulled by the rounding near 0, can miss. ``through_zero``: the line through 0 (α = 0: a bias-free g
    keeps no constant of a unit whose σ(0) = 0, and its freed slot is then dead)."""
    wt = 1.0 / den[:, None]
    s0, s1, s2 = np.sum(wt**2, axis=0), np.sum(wt**2 * Zx, axis=0), np.sum(wt**2 * Zx * Zx, axis=0)
    t0, t1 = np.sum(wt**2 * H, axis=0), np.sum(wt**2 * H * Zx, axis=0)
    det = s0 * s2 - s1 * s1
    with np.errstate(all="ignore"):
        if through_zero:
            beta, alpha = np.where(s2 > 0, t1 / s2, 0.0), np.zeros_like(s0)
        else:
            beta = np.where(det > 0, (s0 * t1 - s1 * t0) / det, 0.0)
            alpha = (t0 - beta * s1) / s0
        miss = np.maximum(np.abs(H - alpha - beta * Zx) - noise, 0.0) * wmax * wt
        near = np.maximum(np.abs(H - tangent[0] - tangent[1] * Zx) - noise, 0.0) * wmax * wt
        better = np.max(near, axis=0) < np.max(miss, axis=0)
        miss = np.where(better, near, miss)
        beta = np.where(better, tangent[1], beta)
        err = np.max(miss, axis=0)
    out: list[_Cand] = []
    for i in range(len(err)):
        if math.isfinite(err[i]) and math.isfinite(beta[i]):
            out.append((float(err[i]), f"unit {i} nearly affine (error {err[i]:.2e})", (i,), (), (beta[i] * W[:, i], U[i])))
            profiles[id(out[-1])] = miss[:, i]
    return out


def _gated_affine(XU: np.ndarray, XG: np.ndarray, H: np.ndarray, W: np.ndarray, U: np.ndarray, G: np.ndarray,
                  wmax: np.ndarray, den: np.ndarray, biases: bool) -> list[_Cand]:
    """Candidates for gated units nearly affine where f is read through both rows: g(G_i·x + c)(u_i·x + b) ≈
    α + β·(u_i·x) + γ·(G_i·x) — a gate with a large bias is g(c) + g'(c)·G_i·x there, and times a large b its slope
    is a linear part of its own — by least squares weighted 1/den (α = 0 unless g may have biases); the unit frees its
    slot and hands w_i(β u_i + γ G_i)ᵀ to the skip (α·w_i to the output bias)."""
    n = H.shape[1]
    wt = 1.0 / den
    cols = [np.ones_like(XU), XU, XG] if biases else [XU, XG]
    A = np.stack(cols, axis=2) * wt[:, None, None]  # (samples, units, parameters)
    y = H * wt[:, None]
    with np.errstate(all="ignore"):
        top = np.maximum(np.max(np.abs(A), axis=0), 1e-300)  # (columns scaled to 1: normal equations well scaled)
        As = A / top[None]
        N = np.einsum("sip,siq->ipq", As, As)
        rhs = np.einsum("sip,si->ip", As, y)
        out: list[_Cand] = []
        ok = np.all(np.isfinite(N), axis=(1, 2)) & np.all(np.isfinite(rhs), axis=1)
        coef = np.full(rhs.shape, np.nan)
        for i in np.flatnonzero(ok):
            try:
                coef[i] = np.linalg.solve(N[i], rhs[i])
            except np.linalg.LinAlgError:
                continue
        err = np.max(np.abs(y - np.einsum("sip,ip->si", As, coef)) * wmax, axis=0)
        coef = coef / top
    for i in range(n):
        if math.isfinite(err[i]) and np.all(np.isfinite(coef[i])):
            beta, gamma = coef[i, -2], coef[i, -1]
            out.append((float(err[i]), f"unit {i} nearly affine through its gate (error {err[i]:.2e})", (i,), (),
                        (W[:, i], beta * U[i] + gamma * G[i])))
    return out
