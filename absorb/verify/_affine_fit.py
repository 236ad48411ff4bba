"""The checker's own fits of units that are nearly affine where f is read (for the sampled screen of
:mod:`absorb.verify._sampled`): an ungated unit against a line in u·x — least squares in centred form, and σ's
tangent at the unit's bias — with the rounding of a large bias taken off each sample's misfit; a gated unit against
a plane in u·x and G·x. A sample proves nothing: what these find only leaves a not_absorbable not re-checked."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_STEP = 2.0**-30
_U = 2.0**-53


def affine_units(act: Any, X: np.ndarray, XU: np.ndarray, bu: np.ndarray, U: np.ndarray, W: np.ndarray,
                 vals: np.ndarray, top: np.ndarray, den: np.ndarray, profile: dict[int, np.ndarray], origin: bool = False
                 ) -> list[tuple[float, tuple[int, ...], tuple[int, ...], Any]]:
    """Ungated units nearly affine where f is read: σ(u·x + c) against α + β·u·x (least squares weighted 1/den in
    centred form, or σ's tangent at c by a symmetric difference), its map β·w uᵀ joining the skip, α·w the output
    bias. Each sample's misfit less the value's rounding there: the pre-activation moved by a random ±2⁻³⁰ of its
    terms, scaled back to the unit roundoff, plus the roundoff of the value itself, plus twice its difference from σ in
    long double (σ = eˣ − 1 at a tiny argument keeps a few digits in float64). The misfit at each sample is recorded in
    ``profile`` by the candidate's id. ``origin``: lines through 0 only (a bias-free class where σ(0) = 0: no unit
    keeps a constant)."""
    q = (1.0 / den)[:, None] ** 2
    with np.errstate(all="ignore"):
        rng = np.random.default_rng(3)
        moved = act((X * (1 + _STEP * rng.choice((-1.0, 1.0), size=X.shape))) @ U.T
                    + bu * (1 + _STEP * rng.choice((-1.0, 1.0), size=bu.shape)))
        noise = np.abs(moved - vals) * (_U / _STEP) * 4 + 2 * _U * np.abs(vals)
        try:
            ext = np.asarray(act((XU + bu).astype(np.longdouble)))
            if ext.dtype == np.longdouble and ext.shape == vals.shape:
                gap = np.abs(ext - vals).astype(np.float64)
                noise = noise + 2 * np.where(np.isfinite(gap), gap, 0.0)
        except (TypeError, ValueError, AttributeError):
            pass
        mz, mv = (q * XU).sum(axis=0) / q.sum(), (q * vals).sum(axis=0) / q.sum()
        if origin:
            mz, mv = np.zeros_like(mz), np.zeros_like(mv)
        var = (q * (XU - mz) ** 2).sum(axis=0)
        beta = np.where(var > 0, (q * (XU - mz) * (vals - mv)).sum(axis=0) / var, 0.0)
        fit = np.maximum(np.abs(vals - mv - beta * (XU - mz)) - noise, 0.0) * top / den[:, None]
        step = np.maximum(np.abs(bu), 1.0) / 2.0**20
        slope = (act(bu + step) - act(bu - step)) / (2 * step)
        tan = np.maximum(np.abs(vals - act(bu) - slope * XU) - noise, 0.0) * top / den[:, None]
        use = np.max(tan, axis=0) < np.max(fit, axis=0)
        fit, beta = np.where(use, tan, fit), np.where(use, slope, beta)
        off = np.max(fit, axis=0)
    out: list[tuple[float, tuple[int, ...], tuple[int, ...], Any]] = []
    for i in range(len(off)):
        if math.isfinite(off[i]) and math.isfinite(beta[i]):
            out.append((float(off[i]), (i,), (), (beta[i] * W[:, i], U[i])))
            profile[id(out[-1])] = fit[:, i]
    return out


def through_gate(P: np.ndarray, Z: np.ndarray, vals: np.ndarray, W: np.ndarray, U: np.ndarray, G: np.ndarray,
                  top: np.ndarray, den: np.ndarray, biases: bool) -> list[tuple[float, tuple[int, ...], tuple[int, ...], Any]]:
    """Gated units nearly affine through both rows where f is read: the unit's value against a·(u·x) + b·(G·x) (+ a
    constant where g may have biases: both sides centred), by least squares weighted 1/den, solved by Cramer's rule;
    the map w(a u + b G)ᵀ joins the skip."""
    q = (1.0 / den)[:, None] ** 2
    with np.errstate(all="ignore"):
        if biases:
            mean = [(q * v).sum(axis=0) / q.sum() for v in (Z, P, vals)]
            Z, P, vals = Z - mean[0], P - mean[1], vals - mean[2]
        szz, spp, szp = (q * Z * Z).sum(axis=0), (q * P * P).sum(axis=0), (q * Z * P).sum(axis=0)
        szv, spv = (q * Z * vals).sum(axis=0), (q * P * vals).sum(axis=0)
        det = szz * spp - szp * szp
        a = np.where(det != 0, (szv * spp - spv * szp) / det, 0.0)
        b = np.where(det != 0, (szz * spv - szp * szv) / det, 0.0)
        off = np.max(np.abs(vals - a * Z - b * P) * top / den[:, None], axis=0)
    return [(float(off[i]), (i,), (), (W[:, i], a[i] * U[i] + b[i] * G[i])) for i in range(len(off))
            if math.isfinite(off[i]) and math.isfinite(a[i]) and math.isfinite(b[i])]
