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


SKETCH_PAST = 1 << 34
"""Past n²d = this many products the nearly opposite rows are found through a sketch (:func:`_candidates`)."""


def _lengths(R: np.ndarray) -> np.ndarray:
    """|r_i|₂ in float64, 2048 rows at a time (no float64 copy of a float32 layer); inf past the range, 0 for a zero row."""
    out = np.empty(R.shape[0])
    with np.errstate(all="ignore"):
        for a in range(0, R.shape[0], 2048):
            B = np.asarray(R[a:a + 2048], dtype=np.float64)
            top = np.max(np.abs(B), axis=1, initial=0.0)
            out[a:a + 2048] = top * np.sqrt(np.einsum("ij,ij->i", B / np.where(top > 0, top, 1.0)[:, None],
                                                      B / np.where(top > 0, top, 1.0)[:, None]))
    return out


def _candidates(R: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j that may have cos(r_i, r_j) ≤ −0.975: every such pair, and few others. Up to n²d = 2³⁴ cosines a block
    of rows at a time; past that a Gaussian sketch Y = R̂·G (d×m, m = ⌈d/8⌉ ≥ 32, seeded here): ‖G·v‖₂ ≤ s·|v|₂ with s² the
    largest eigenvalue of GᵀG (raised past its rounding), and cos ≤ −0.975 means |r̂_i + r̂_j|₂² ≤ 0.05, so every such pair
    has |y_i + y_j|₂² ≤ 0.05·s² — while a random pair's is about 2m ≈ 0.25·d, against 0.05·s² ≈ 0.09·d."""
    n, d = R.shape
    good = np.isfinite(length) & (length > 0)
    scale = np.where(good, length, np.inf)
    found_i, found_j = [], []
    sketch = n * n * d > SKETCH_PAST
    if sketch:  # (m = d/8: a random pair's |y_i + y_j|² ≈ 2χ²_m, mean d/4, against the bar ≈ 0.05·(√d + √m)² ≈ d/11 —
        # at d/16 the bar was 0.6 of the mean, and a layer of 8300 × 256 let 3.6·10⁶ pairs through)
        m = max(32, math.ceil(d / 8))
        G = np.random.default_rng(20261205).standard_normal((d, m))
        s2 = float(np.max(np.linalg.eigvalsh(G.T @ G))) * (1 + 1e-9) + 1e-9 * d * m
        Y = np.concatenate([(np.asarray(R[a:a + 2048], dtype=np.float64) / scale[a:a + 2048, None]) @ G
                            for a in range(0, n, 2048)])
        Y = np.where(np.isfinite(Y), Y, 0.0)
        q = np.einsum("ij,ij->i", Y, Y)
        bar = 0.05 * s2 * (1 + 1e-6) + 1e-6
    else:
        Y = np.where(good[:, None], np.asarray(R, dtype=np.float64) / scale[:, None], 0.0)
    step = max(1, (1 << 22) // max(1, n))
    for a in range(0, n, step):
        C = Y[a:a + step] @ Y.T  # (rows a.., all rows)
        ii, jj = np.nonzero(q[a:a + step, None] + q[None, :] + 2 * C <= bar) if sketch else np.nonzero(C < -0.97)
        ii = ii + a
        keep = (jj > ii) & good[ii] & good[jj]
        found_i.append(ii[keep])
        found_j.append(jj[keep])
    return np.concatenate(found_i), np.concatenate(found_j)


def _opposite_rows(R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs i < j of rows that nearly cancel, ‖r_i + r_j‖₁ ≤ 0.2·max(|r_i|₂, |r_j|₂) (which makes cos(r_i, r_j) ≤
    −cos(asin 0.2) < −0.979): (i, the unit rows r̂_i, those ℓ1 gaps, j), from the candidates of :func:`_candidates`."""
    length = _lengths(R)
    with np.errstate(all="ignore"):
        I, J = _candidates(R, length)
        gaps = np.concatenate([np.abs(np.asarray(R[I[a:a + 4096]], dtype=np.float64) + R[J[a:a + 4096]]).sum(axis=1)
                               for a in range(0, len(I), 4096)] or [np.zeros(0)]) / np.maximum(length[I], length[J])
        keep = np.isfinite(gaps) & (gaps <= 0.2)  # (4096 candidates at a time: no copy of every candidate's rows)
        I, J = I[keep], J[keep]
        return I, np.asarray(R[I], dtype=np.float64) / length[I, None], gaps[keep], J


def _room(block: Any) -> float:
    """max |x|∞ / (|f(x)|∞ + |x|∞ + |f(0)|∞) over this checker's own inputs (in (0, 1]): an error a·|x|∞ is at most
    a·(this) of the tolerance's measure there, so where f is large against |x| a construction may cost more per |x|∞
    (a sample reads the maximum low: the estimates below then withhold more, never less). 1 where nothing is read."""
    rng = np.random.default_rng(4099)
    big = block.n * block.d > 1 << 22
    V = rng.standard_normal((5 if big else 40, block.d))
    X = np.concatenate([V * 10.0**e for e in ((-1, 1, 3) if big else range(-5, 10, 2))])
    with np.errstate(all="ignore"):
        f0 = float(np.max(np.abs(block(np.zeros((1, block.d))))))
        size = np.max(np.abs(X), axis=1)
        den = np.max(np.abs(block(X)), axis=1) + size + (f0 if math.isfinite(f0) else math.inf)
        ratio = size / den
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    return float(min(1.0, ratio.max())) if ratio.size else 1.0


def antipodal_pairs(block: Any, tol: float, gap: float | None = 0.0) -> str | None:
    """Whether pairs of nearly opposite unit rows (gate rows when gated), r̂_j ≈ −r̂_i within 0.2 in ℓ1, may carry f's skip:
    each pair adds v·(σ(r̂·x) − σ(−r̂·x + η)) ≈ v·(r̂·x) for opposite moves of one of its parameters, off by about
    1.2·|v|∞·‖r̂_i + r̂_j‖₁·|x|∞. Here M ≈ Σ v_p r̂_pᵀ is solved with those weights as a ridge, and the leftover row sums
    plus the pairs' errors are compared with τ. Beside exact flips of other units, the pairs must carry what the flips
    leave, at least ``gap`` (the recorded search's bound times ‖M‖_F; 0: none): pairs not exactly opposite that can carry
    √d·τ·(1 + 1/(1.2·min gap_p)) ≥ that leave it open too (None: a route whose condition is not of that form). An
    estimate (this checker's own), reported as not re-checked."""
    R = np.asarray(block.W_gate if block.gated else block.W_up)
    n, d = R.shape
    M = np.asarray(block.M, dtype=np.float64)
    if n < 2 or not M.any():
        return None
    _, L, w, _ = _opposite_rows(R)
    if not len(w):
        return None
    tol = tol / _room(block)  # (the estimates below are per |x|∞: f large against |x| leaves them more room)
    with np.errstate(all="ignore"):
        V = np.linalg.lstsq(L @ L.T + np.diag(w * w), L @ M.T, rcond=None)[0].T  # (duplicate rows: singular, red team 46a/02)
        left = float(np.max(np.sum(np.abs(M - V @ L), axis=1)))
        guess = left + 1.2 * float(np.sum(np.max(np.abs(V), axis=0) * w))
        carry = math.sqrt(d) * tol * (1 + 1 / (1.2 * float(np.min(w[w > 0], initial=math.inf))))  # (Σ|v_p|₂δ_p ≥ δ_min‖R‖_F)
    if guess <= tol:
        return f"{len(w)} nearly opposite pair(s) of unit rows may carry the skip, off by about {guess:.3g} (an estimate)"
    if gap is not None and np.any(w > 0) and carry >= gap:
        return (f"{int(np.sum(w > 0))} nearly opposite pair(s) of unit rows may carry parts of the skip up to about {carry:.3g} "
                f"(‖·‖_F), {'past' if gap > 0 else 'and no bound is recorded on'} what flips of other units leave"
                + (f" ({gap:.3g})" if gap > 0 else "") + " (an estimate)")
    return None


def freed_slots(block: Any, tol: float) -> str | None:
    """Whether a unit of f small within τ may be freed and re-aimed at −u_i (bias −b_i) for a unit i that stays, or one
    nearly opposite u_i turned exactly opposite it (1.2·|w_k|∞·‖u_k + u_i‖₁ within τ) (σ(z) − σ(−z) = c·z, ungated, any
    biases): it then carries v·(u_i·x) exactly, a rank-one part of the skip along any unit line,
    which beside flips or nearly opposite pairs of other units no search of the exact routes rules out. A unit of nonzero
    size 1.2·|w_k|∞·‖u_k‖₁ ≤ τ leaves the verdict open. This checker's own estimate, reported as not re-checked."""
    from absorb.verify._symbolic import flip_constant

    if block.gated or block.n < 2:
        return None
    M = np.asarray(block.M, dtype=np.float64)
    if not M.any() or flip_constant(block.activation.expr, gated=False) is None:
        return None
    with np.errstate(all="ignore"):
        sizes = np.array([1.2 * float(np.max(np.abs(block.W_down[:, k]))) * float(np.sum(np.abs(block.W_up[k], dtype=np.float64)))
                          for k in range(block.n)])  # (unit by unit: no copy of a large layer)
        U = np.asarray(block.W_up)  # (a unit nearly opposite another, turned exactly opposite it: a free slot)
        I, _, _, J = _opposite_rows(U)
        for a, k in zip(np.concatenate([I, J]).tolist(), np.concatenate([J, I]).tolist()):
            turned = np.asarray(U[k], dtype=np.float64) + U[a]
            sizes[k] = min(sizes[k], 1.2 * float(np.max(np.abs(block.W_down[:, k]))) * float(np.sum(np.abs(turned))))
        tol = tol / _room(block)  # (sizes per |x|∞: f large against |x| leaves them more room)
        for k in [k for k in range(block.n) if tol < sizes[k] <= 5 * math.sqrt(block.d) * tol][:256]:  # (past the pairs)
            uk = np.asarray(U[k], dtype=np.float64)
            turn = 1.2 * float(np.max(np.abs(block.W_down[:, k]))) * np.concatenate(
                [np.sum(np.abs(uk + U[a:a + 2048]), axis=1) for a in range(0, block.n, 2048)])
            turn[k] = np.inf
            sizes[k] = min(sizes[k], float(np.min(np.where(np.isfinite(turn), turn, np.inf))))
    small = [k for k in range(block.n) if 0 < sizes[k] <= tol]
    if not small:
        return None
    return (f"{len(small)} unit(s) vary by at most {max(sizes[k] for k in small):.3g}·|x|∞: re-aimed opposite kept units they "
            "carry rank-one parts of the skip, which with flips or nearly opposite pairs may complete a block (an estimate)")


def near_fitted(block: Any, tol: float, seed: int, biases: bool, gap: float | None = 0.0) -> str | None:
    """This module's screens in order of cost — pairs, freed slots, the fit —: why a block within ``tol`` may exist
    (``gap``: what flips leave of the skip at least, :func:`antipodal_pairs`)."""
    return antipodal_pairs(block, tol, gap) or freed_slots(block, tol) or fitted_block(block, tol, seed, biases)
