"""Fit ``L`` residual-free blocks of width ``w`` to ``L`` residual blocks of width ``n``.

The open problem (docs/mathematics.md §2, result 5): can ``F = f_L ∘ … ∘ f_1`` with
``f_ℓ(x) = x + W_down,ℓ σ(W_up,ℓ x)`` equal ``G = B'_L ∘ … ∘ B'_1`` of the same width when no
single block can be absorbed? This module measures how close seeded optimisation gets:
L-BFGS (scipy) on a sample of inputs, gradients by hand-written backpropagation in numpy,
from a *constructed* start (each ``B'_ℓ`` is ``B_ℓ`` without its skip, plus as many antipodal
pairs ``σ(z) − σ(−z) = z`` on coordinate axes as the extra width allows, or the exact
per-block witness when the width reaches the block's minimal width) and from random starts.
A small error is evidence that a residual-free stack exists; a large one is evidence (not
proof) that it does not. For ReLU in ``d = 2`` the exact piecewise-linear structure — the
kink rays of ``F`` and of the fitted ``G`` — is computed by splitting cones.

Everything is reproducible from ``seed`` (numpy.random.default_rng only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import optimize, special

from absorb.engine.verdict import Verdict
from absorb.engine.width import decide_width
from absorb.model.activations import get_activation
from absorb.model.block import Block, Stack

LABEL = "numerical evidence, not a verdict"
Act = Literal["relu", "gelu"]


def _sigma(act: Act, z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0) if act == "relu" else 0.5 * z * (1.0 + special.erf(z / math.sqrt(2.0)))


def _dsigma(act: Act, z: np.ndarray) -> np.ndarray:
    if act == "relu":
        return (z > 0).astype(float)
    return 0.5 * (1.0 + special.erf(z / math.sqrt(2.0))) + z * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def _forward(params: list[tuple[np.ndarray, np.ndarray]], X: np.ndarray, act: Act) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    cache = []
    for U, D in params:
        Z = X @ U.T
        H = _sigma(act, Z)
        cache.append((X, Z))
        X = H @ D.T
    return X, cache


def _loss_grad(theta: np.ndarray, shapes: list[tuple[int, int]], X: np.ndarray, Y: np.ndarray, act: Act) -> tuple[float, np.ndarray]:
    params = _unpack(theta, shapes)
    G, cache = _forward(params, X, act)
    R = G - Y
    m = len(X)
    loss = 0.5 * float((R * R).sum()) / m
    dX = R / m
    grads = []
    for (U, D), (Xin, Z) in zip(reversed(params), reversed(cache)):
        H = _sigma(act, Z)
        dD = dX.T @ H
        dZ = (dX @ D) * _dsigma(act, Z)
        dU = dZ.T @ Xin
        dX = dZ @ U
        grads.append((dU, dD))
    g = np.concatenate([np.concatenate([dU.ravel(), dD.ravel()]) for dU, dD in reversed(grads)])
    return loss, g


def _unpack(theta: np.ndarray, shapes: list[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    out, k = [], 0
    for w, d in shapes:
        U = theta[k:k + w * d].reshape(w, d)
        k += w * d
        D = theta[k:k + w * d].reshape(d, w)
        k += w * d
        out.append((U, D))
    return out


def _pack(params: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    return np.concatenate([np.concatenate([U.ravel(), D.ravel()]) for U, D in params])


@dataclass(frozen=True)
class FitResult:
    depth: int
    width: int
    train_error: float  # ‖G − F‖_F / ‖F‖_F on the training sample
    test_error: float  # the same on held-out inputs
    start: str  # which start reached it
    iterations: int
    kink_rays_F: int | None = None
    kink_rays_G: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("depth", "width", "train_error", "test_error", "start", "iterations", "kink_rays_F", "kink_rays_G")}


@dataclass(frozen=True)
class DepthReport:
    label: str
    activation: str
    d: int
    n: int
    seed: int
    settings: dict[str, Any]
    per_block_min_width: list[int | None]
    results: list[FitResult] = field(default_factory=list)
    structure: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "activation": self.activation, "d": self.d, "n": self.n, "seed": self.seed,
                "settings": self.settings, "per_block_min_width": self.per_block_min_width,
                "results": [r.to_json() for r in self.results], "structure": self.structure}


def _targets(d: int, n: int, L: int, act: Act, rng: np.random.Generator) -> list[Block]:
    a = get_activation(act)
    return [Block(rng.standard_normal((n, d)) / math.sqrt(d), rng.standard_normal((d, n)) / math.sqrt(n), a, name=f"blocks.{i}")
            for i in range(L)]


def _constructed(block: Block, width: int) -> tuple[np.ndarray, np.ndarray, str]:
    """B without its skip, plus antipodal axis pairs for as much of the identity as fits; or
    the exact witness when the width allows one (docs/min-width.md)."""
    wd = decide_width(block, width)
    if wd.verdict is Verdict.ABSORBABLE and wd.witness is not None:
        return wd.witness.block.W_up.copy(), wd.witness.block.W_down.copy(), "exact-witness"
    d, n = block.d, block.n
    U = np.zeros((width, d))
    D = np.zeros((d, width))
    k = min(n, width)
    U[:k], D[:, :k] = block.W_up[:k], block.W_down[:, :k]
    for j in range(min((width - k) // 2, d)):
        U[k + 2 * j, j], D[j, k + 2 * j] = 1.0, 1.0
        U[k + 2 * j + 1, j], D[j, k + 2 * j + 1] = -1.0, -1.0
    return U, D, "skip-dropped+axis-pairs"


def kink_rays_2d(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]], *, tol: float = 1e-9) -> list[float]:
    """Angles (radians, in [0, 2π)) of the rays where a bias-free ReLU composition on R² changes
    its linear piece. ``blocks``: (W_up, W_down, skip or None) applied in order. Exact up to
    floating point: cones are split at the rays ``(J_ℓᵀ u_i)·(cos θ, sin θ) = 0`` and the
    Jacobian is propagated cone by cone; adjacent cones with equal Jacobians are merged."""
    cones = [(0.0, 2 * math.pi, np.eye(2))]
    for U, D, M in blocks:
        Mm = np.eye(2) if M is None else M
        new = []
        for a, b, J in cones:
            cuts = []
            for u in U:
                v = J.T @ u
                if np.linalg.norm(v) <= tol:
                    continue
                base = math.atan2(v[1], v[0]) + math.pi / 2  # v·(cos θ, sin θ) = 0
                for t in (base, base + math.pi):
                    t = t % (2 * math.pi)
                    if a + tol < t < b - tol:
                        cuts.append(t)
            edges = [a, *sorted(cuts), b]
            for lo, hi in zip(edges[:-1], edges[1:]):
                mid = 0.5 * (lo + hi)
                y = J @ np.array([math.cos(mid), math.sin(mid)])
                pattern = (U @ y > 0).astype(float)
                new.append((lo, hi, (Mm + D @ (pattern[:, None] * U)) @ J))
        cones = new
    rays = []
    for (_a0, b0, J0), (_a1, _b1, J1) in zip(cones, cones[1:] + cones[:1]):
        if not np.allclose(J0, J1, atol=1e-9 * (1 + np.abs(J0).max())):
            rays.append(round(b0 % (2 * math.pi), 12))
    return sorted(set(rays))


def _check_explore_args(activation: object, seed: object, d: object, n: object, depth: object, widths: object,
                        restarts: object, samples: object, maxiter: object) -> None:
    from absorb._errors import InvalidInput
    from absorb._validate import check_choice, check_seed

    check_choice(activation, ("relu", "gelu"), name="activation")
    check_seed(seed)
    for name, v, lo in (("d", d, 1), ("n", n, 1), ("depth", depth, 1), ("restarts", restarts, 0), ("samples", samples, 1),
                        ("maxiter", maxiter, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InvalidInput(f"explore_depth: {name} = {v!r} must be an integer ≥ {lo}")
    if widths is not None and (not widths or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in widths)):
        raise InvalidInput(f"explore_depth: widths = {widths!r} must be a non-empty list of positive integers")


def _structure(F: Stack, blocks: list[Block], activation: Act, d: int) -> tuple[list[float] | None, dict[str, Any] | None]:
    """(F's kink rays for ReLU in d = 2, else None; the structure entry of this depth, if any)."""
    rays_F = None
    entry = None
    if activation == "relu" and d == 2:
        rays_F = kink_rays_2d([(b.W_up, b.W_down, None) for b in blocks])
        entry = {"kink_rays_F": len(rays_F), "angles_F": [round(t, 6) for t in rays_F]}
    if activation == "relu" and d == 1:
        c_pos, c_neg = float(F(np.array([[1.0]]))[0, 0]), float(-F(np.array([[-1.0]]))[0, 0])
        entry = {"F(x)": f"{c_pos:.6g}·x for x > 0, {c_neg:.6g}·x for x < 0",
                 "note": "bias-free ReLU maps on R are positively homogeneous: one kink at 0, and a width-2 "
                         "residual-free block realises any such map, so depth adds nothing in d = 1"}
    return rays_F, entry


def _best_fit(blocks: list[Block], w: int, d: int, restarts: int, rng: np.random.Generator, data: tuple[np.ndarray, ...],
              activation: Act, maxiter: int) -> tuple[float, float, str, int, list]:
    """The best of the constructed start and ``restarts`` random ones: (train error, test error, start, iterations, params)."""
    Xtr, Ytr, Xte, Yte = data
    L = len(blocks)
    shapes = [(w, d)] * L
    starts = []
    cons = [_constructed(b, w) for b in blocks]
    starts.append(("constructed" if all(c[2] != "exact-witness" for c in cons) else "constructed(exact-witness)",
                   _pack([(c[0], c[1]) for c in cons])))
    for r in range(restarts):
        starts.append((f"random#{r}", _pack([(rng.standard_normal((w, d)) / math.sqrt(d), rng.standard_normal((d, w)) / math.sqrt(w))
                                             for _ in range(L)])))
    best = None
    for name, th0 in starts:
        res = optimize.minimize(_loss_grad, th0, args=(shapes, Xtr, Ytr, activation), jac=True, method="L-BFGS-B",
                                options={"maxiter": maxiter, "gtol": 1e-14, "ftol": 1e-16})
        params = _unpack(res.x, shapes)
        tr = float(np.linalg.norm(_forward(params, Xtr, activation)[0] - Ytr) / np.linalg.norm(Ytr))
        te = float(np.linalg.norm(_forward(params, Xte, activation)[0] - Yte) / np.linalg.norm(Yte))
        if best is None or tr < best[0]:
            best = (tr, te, name, int(res.nit), params)
    return best  # type: ignore[return-value]


def explore_depth(*, d: int = 2, n: int = 3, depth: int = 3, widths: list[int] | None = None, activation: Act = "relu",
                  seed: int = 0, restarts: int = 3, samples: int = 256, maxiter: int = 300) -> DepthReport:
    """Best relative error of ``L`` residual-free blocks of width ``w`` fitted to ``L`` random
    residual blocks of width n, for each depth 1..``depth`` and each width — numerical evidence."""
    _check_explore_args(activation, seed, d, n, depth, widths, restarts, samples, maxiter)
    widths = sorted(set(widths or [n, n + 1, n + d]))
    rng = np.random.default_rng(seed)
    blocks = _targets(d, n, depth, activation, rng)
    per_block = []
    from absorb.engine.width import minimal_width

    for b in blocks:
        per_block.append(minimal_width(b).value)
    Xtr = rng.standard_normal((samples, d))
    Xte = rng.standard_normal((samples, d))
    results = []
    structure: dict[str, Any] = {}
    for L in range(1, depth + 1):
        F = Stack(tuple(blocks[:L]))
        Ytr, Yte = F(Xtr), F(Xte)
        rays_F, entry = _structure(F, list(blocks[:L]), activation, d)
        if entry is not None:
            structure[f"depth {L}"] = entry
        for w in widths:
            tr, te, name, nit, params = _best_fit(list(blocks[:L]), w, d, restarts, rng, (Xtr, Ytr, Xte, Yte), activation, maxiter)
            rays_G = None
            if rays_F is not None:
                rays_G = len(kink_rays_2d([(U, D, np.zeros((d, d))) for U, D in params]))
            results.append(FitResult(L, w, tr, te, name, nit, None if rays_F is None else len(rays_F), rays_G))
    settings = {"depth": depth, "widths": widths, "restarts": restarts, "samples": samples, "maxiter": maxiter}
    return DepthReport(LABEL, activation, d, n, seed, settings, per_block, results, structure)
