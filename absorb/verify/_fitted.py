"""The checker's own fitted screen: a residual-free block fitted to f near f's own units.

The exact arguments rule out a g *equal* to f; where no robust bound covers the tolerance, a
not_absorbable also needs that no g of f's width and class is within τ. Bias shifts, down-column
or value-row shifts on two nearly antipodal units realise a small skip up to ~0.1τ, which no bounded
candidate of :mod:`absorb.verify._tolerance` models. This screen fits every weight (and bias, in
the class with biases) of a block started at f's units, the skip dropped — a trust-region least-
squares fit of the error relative to |f(x)|∞ + |x|∞ + |f(0)|∞ at this checker's own inputs, the
Jacobian by the chain rule (σ' by central differences) — and reads the fit on fresh inputs and on both blocks' hyperplanes.
A sample proves nothing: what it finds is reported as not re-checked, never as a rejection. (Written
for the checker; it shares no code with the producer's fit.)
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from absorb.model.block import Block, replace

MAX_PARAMETERS = 100
"""Blocks with more weights and biases than this are not fitted here."""


def _names(block: Block, biases: bool) -> tuple[str, ...]:
    names = ("W_up", "W_down", "W_gate") if block.gated else ("W_up", "W_down")
    return names + ((("b_up", "b_down", "b_gate") if block.gated else ("b_up", "b_down")) if biases else ())


def _sample(rng: np.random.Generator, count: int, blocks: list[Block]) -> np.ndarray:
    """``count`` directions scaled by 10^U(−3, 5), plus per unit of each block as many of them moved onto its kink
    (gate) hyperplane."""
    d = blocks[0].d
    X = rng.standard_normal((count, d)) * 10.0 ** rng.uniform(-3.0, 5.0, (count, 1))
    parts = [X]
    for b in blocks:
        R, c = (b.W_gate, b.b_gate) if b.gated else (b.W_up, b.b_up)
        for i in range(b.n):
            r = np.asarray(R[i], dtype=np.float64)
            rr = float(r @ r)
            if rr > 0 and math.isfinite(rr):
                Y = X[i % 7::7][:16]
                parts.append(Y - np.outer((Y @ r + (0.0 if c is None else float(c[i]))) / rr, r))
    return np.vstack(parts)


def _worst(f: Block, g: Block, X: np.ndarray, f0: float) -> float:
    with np.errstate(all="ignore"):
        F = f(X)
        q = np.max(np.abs(F - g(X)), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1) + f0)
    return float(np.max(q)) if q.size and np.all(np.isfinite(q)) else math.inf


def fitted_block(block: Any, tol: float, seed: int, biases: bool) -> str | None:
    """A residual-free block of f's width fitted within ``tol`` of f at every input this checker samples, or None."""
    from scipy.optimize import least_squares

    if not isinstance(block, Block) or block.hc is not None or not block.is_float64:
        return None
    biases = biases or block.has_bias
    if block.n * block.d * (3 if block.gated else 2) > MAX_PARAMETERS:  # (checked before any copy of the weights)
        return None
    names = _names(block, biases)
    start = []
    for k in names:
        a = getattr(block, k)
        start.append(np.zeros(block.d if k == "b_down" else block.n) if a is None else np.array(a, dtype=np.float64))
    theta0 = np.concatenate([a.ravel() for a in start])
    if theta0.size > MAX_PARAMETERS:
        return None
    sizes = np.abs(np.concatenate([theta0, np.asarray(block.M, dtype=np.float64).ravel()]))
    if not np.all(np.isfinite(sizes)) or np.any((sizes != 0) & ((sizes < 2.0**-200) | (sizes > 2.0**200))):
        return None  # (a fit in float64 past these sizes overflows or loses its bits)
    cuts = np.cumsum([a.size for a in start])[:-1]
    d = block.d
    bare = replace(block, skip=np.zeros((d, d)))

    def build(theta: np.ndarray) -> Block:
        return replace(bare, **{k: p.reshape(a.shape) for k, p, a in zip(names, np.split(theta, cuts), start)})

    rng = np.random.default_rng(seed + 15485863)
    X = _sample(rng, 5 * theta0.size, [block])
    with np.errstate(all="ignore"):
        F = block(X)
        f0 = float(np.max(np.abs(block(np.zeros((1, d))))))
        den = np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1) + f0
        X, F, den = X[den != 0], F[den != 0], den[den != 0]  # (x = 0 where f(0) = 0 measures nothing)
        scale = 1.0 / den
    if not (math.isfinite(f0) and np.all(np.isfinite(scale))):
        return None

    def errors(theta: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = ((build(theta)(X) - F) * scale[:, None]).ravel()
        return np.where(np.isfinite(out), out, 1e300)

    m, n = X.shape[0], block.n

    def slope(act: Any, Z: np.ndarray) -> np.ndarray:  # σ' by a central difference (a fit needs no exact slope)
        step = 2.0**-20 * (1.0 + np.abs(Z))
        return (act(Z + step) - act(Z - step)) / (2.0 * step)

    def jacobian(theta: np.ndarray) -> np.ndarray:
        """∂(errors)/∂θ by the chain rule: one column block per parameter array, in θ's order."""
        p = dict(zip(names, (q.reshape(a.shape) for q, a in zip(np.split(theta, cuts), start))))
        with np.errstate(all="ignore"):
            if block.gated:
                Zg = X @ p["W_gate"].T + p.get("b_gate", 0.0)
                V = X @ p["W_up"].T + p.get("b_up", 0.0)
                hV = V if block.value_identity else block.value_activation(V)
                dV = 1.0 if block.value_identity else slope(block.value_activation, V)
                Sg = block.activation(Zg)
                H = Sg * hV
                per_row = {"W_up": Sg * dV, "b_up": Sg * dV, "W_gate": slope(block.activation, Zg) * hV}
                per_row["b_gate"] = per_row["W_gate"]
            else:
                Z = X @ p["W_up"].T + p.get("b_up", 0.0)
                H = block.activation(Z)
                per_row = {"W_up": slope(block.activation, Z)}
                per_row["b_up"] = per_row["W_up"]
        cols = []
        for k in names:
            if k == "W_down":  # output r depends on row r of W_down only
                c = np.zeros((m, d, d, n))
                c[:, np.arange(d), np.arange(d), :] = H[:, None, :]
                cols.append(c.reshape(m, d, d * n))
            elif k == "b_down":
                cols.append(np.repeat(np.eye(d)[None], m, axis=0))
            else:
                G = np.einsum("mi,ri->mri", per_row[k], p["W_down"])  # ∂out_r/∂(pre-activation of unit i)
                cols.append(np.einsum("mri,mj->mrij", G, X).reshape(m, d, n * d) if k.startswith("W_") else G)
        J = np.concatenate(cols, axis=2) * scale[:, None, None]
        return np.where(np.isfinite(J), J, 0.0).reshape(m * d, -1)

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = least_squares(errors, theta0, method="trf", jac=jacobian, tr_solver="lsmr", max_nfev=30, xtol=1e-15, ftol=1e-15, gtol=1e-15)
    except (ValueError, np.linalg.LinAlgError):
        return None
    if not np.all(np.isfinite(fit.x)):
        return None
    g = build(fit.x)
    with np.errstate(all="ignore"):
        Y = _sample(np.random.default_rng(seed + 32452843), 10 * theta0.size, [block, g])
    worst = _worst(block, g, Y, f0)
    if not worst <= tol:
        return None
    return (f"a residual-free block fitted here to f (its units, the skip dropped, every weight{' and bias' if biases else ''} "
            f"fitted) is within {worst:.3g} of f at {len(Y)} inputs, on the kink hyperplanes too")


def antipodal_pairs(block: Any, tol: float) -> str | None:
    """Whether pairs of nearly opposite unit rows (gate rows when gated), r̂_j ≈ −r̂_i within 0.2 in ℓ1, may carry f's skip:
    each pair adds v·(σ(r̂·x) − σ(−r̂·x + η)) ≈ v·(r̂·x) for opposite moves of one of its parameters, off by about
    1.2·|v|∞·‖r̂_i + r̂_j‖₁·|x|∞. Here M ≈ Σ v_p r̂_pᵀ is solved with those weights as a ridge, and the leftover row sums
    plus the pairs' errors are compared with τ. An estimate (this checker's own), reported as not re-checked."""
    R = np.asarray(block.W_gate if block.gated else block.W_up, dtype=np.float64)
    n, d = R.shape
    M = np.asarray(block.M, dtype=np.float64)
    if n < 2 or n * n * d > 1 << 26 or not M.any():
        return None
    with np.errstate(all="ignore"):
        length = np.sqrt(np.einsum("ij,ij->i", R, R))
        unit = R / length[:, None]
        lines, widths = [], []
        for i in range(n):
            for j in range(i + 1, n):  # (the rows themselves nearly cancel: σ(s) − σ(−λs) is linear only for λ = 1)
                gap = float(np.abs(R[i] + R[j]).sum() / max(length[i], length[j]))
                if math.isfinite(gap) and gap <= 0.2 and float(unit[i] @ unit[j]) < 0:
                    lines.append(unit[i])
                    widths.append(gap)
        if not lines:
            return None
        L, w = np.array(lines), np.array(widths)
        V = np.linalg.solve(L @ L.T + np.diag(w * w) + 1e-300 * np.eye(len(w)), L @ M.T).T
        left = float(np.max(np.sum(np.abs(M - V @ L), axis=1)))
        guess = left + 1.2 * float(np.sum(np.max(np.abs(V), axis=0) * w))
    if not guess <= tol:
        return None
    return f"{len(w)} nearly opposite pair(s) of unit rows may carry the skip, off by about {guess:.3g} (an estimate)"


def freed_slots(block: Any, tol: float) -> str | None:
    """Whether f's smallest units, dropped and re-aimed at −u_i for units i that stay (σ(z) − σ(−z) = c·z, ungated,
    bias-free), may carry the skip: the skip's parts along t unit lines picked one by one (largest ‖R u_i‖ first, then
    least squares on all picked) leave row sums that, with the t smallest units' sizes 1.2·|w_k|∞·‖u_k‖₁, are compared
    with τ. This checker's own estimate, reported as not re-checked."""
    from absorb.verify._symbolic import flip_constant

    if block.gated or block.has_bias or block.n < 2 or block.n * block.d > 1 << 22:
        return None
    M = np.asarray(block.M, dtype=np.float64)
    if not M.any() or flip_constant(block.activation.expr, gated=False) is None:
        return None
    with np.errstate(all="ignore"):
        U, D = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down, dtype=np.float64)
        sizes = sorted(1.2 * float(np.abs(D[:, k]).max()) * float(np.abs(U[k]).sum()) for k in range(block.n))
        rows = [U[k] / float(np.linalg.norm(U[k])) for k in range(block.n) if np.linalg.norm(U[k]) > 0]
        if not rows:
            return None
        picked: list[np.ndarray] = []
        R = M
        for t in range(1, min(block.d, block.n - 1) + 1):
            if not sizes[t - 1] <= tol:
                return None
            picked.append(max(rows, key=lambda r: float(np.linalg.norm(R @ r))))
            P = np.array(picked)
            R = M - (M @ P.T) @ np.linalg.pinv(P @ P.T) @ P
            guess = float(np.max(np.sum(np.abs(R), axis=1))) + sum(sizes[:t])
            if guess <= tol:
                return f"{t} small unit(s) re-aimed opposite kept units may carry the skip, off by about {guess:.3g} (an estimate)"
    return None


def near_fitted(block: Any, tol: float, seed: int, biases: bool) -> str | None:
    """This module's screens in order of cost — pairs, freed slots, the fit —: why a block within ``tol`` may exist."""
    return antipodal_pairs(block, tol) or freed_slots(block, tol) or fitted_block(block, tol, seed, biases)
