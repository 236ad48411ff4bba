"""The checker's sampled screen: whether g = B (f without its skip) is within the tolerance at this checker's own
inputs — random directions, ±e_j, points on the kink/gate hyperplanes, the null space of the up rows and the dead
cones, at every scale, then a climb from the worst. A sample proves nothing: what it finds makes a not_absorbable
not re-checked (exit 4), never rejected."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def sampled_near(block: Any, tol: float, seed: int) -> str | None:
    """Whether g = B (f without its skip) is within the tolerance at this checker's own sampled inputs
    (|M x|∞ ≤ τ(|f(x)|∞ + |x|∞ + |f(0)|∞): B dominates the skip), or None. A sample proves nothing,
    so a not_absorbable it contradicts is reported as not re-checked, not rejected."""
    from absorb.verify._weights import _kink_points

    d = block.d
    rng = np.random.default_rng(seed + 104729)
    dirs = np.vstack([np.eye(d), -np.eye(d), rng.standard_normal((128, d))]) if d <= 512 else rng.standard_normal((128, d))
    with np.errstate(all="ignore"):
        f0 = float(np.max(np.abs(block(np.zeros((1, d))))))
        if not math.isfinite(f0):
            return None

        seen: list[np.ndarray] = []

        def within(X: np.ndarray) -> bool:
            den = np.max(np.abs(block(X)), axis=1) + np.max(np.abs(X), axis=1) + f0
            q = np.where(np.isnan(den), 0.0, np.max(np.abs(block.linear(X)), axis=1) / den)  # (f overflowed: not counted)
            seen.extend(X[np.argsort(q)[-2:]] if np.all(np.isfinite(q)) else [])
            return bool(np.all(np.isfinite(q)) and not np.any(den <= 0) and float(np.max(q)) <= tol)

        if not within(dirs[:2]):
            return None  # (most blocks stop here, before the kink points are built)
        try:  # (exact points on the hyperplanes: past the weights' safe magnitudes their arithmetic can overflow)
            kinks = _kink_points([block, block], d, [block])
        except (OverflowError, ValueError, ZeroDivisionError):
            kinks = np.zeros((0, d))
        kinks = np.vstack([kinks, _blind_spots(block)])
        kinks = kinks[np.all(np.isfinite(kinks), axis=1) & np.any(kinks != 0, axis=1)]
        if len(kinks):  # on the kink/gate hyperplanes, where B may vanish on a thin cone
            dirs = np.vstack([dirs, kinks / np.max(np.abs(kinks), axis=1, keepdims=True)])
        far = (1 + f0) / tol
        if not all(within(dirs * t) for t in [10.0**k for k in range(-8, 9, 2)] + [far, far * 1e2, far * 1e4]):
            return None
        if not _climbed(within, np.array(seen), rng):
            return None
    return ("at this checker's sampled inputs (scales 1e-8 to 1e8 and past |f(0)|/τ) g = B, f without its skip, is within "
            "the tolerance: the exact not_absorbable may contradict it")


def _blind_spots(block: Any) -> np.ndarray:
    """Directions no random sample finds, where B may stay bounded while x grows: the null space of the up (and gate)
    rows (n < d), and the cones {R x ≤ −s·1} and {R x ≥ s·1} (R the gate rows of a gated block, else the up rows:
    every unit at one end of σ or its gate) — each cone's point of largest margin s ≤ 1 with |x|∞ ≤ 1, by one
    linear program (scipy's HiGHS), kept where s > 0. Empty past 2·10⁵ weights."""
    R = np.asarray(block.W_gate if block.W_gate is not None else block.W_up, dtype=np.float64)
    n, d = R.shape
    if n * d > 200_000 or not np.all(np.isfinite(R)):
        return np.zeros((0, d))
    rows = np.vstack([R, np.asarray(block.W_up, dtype=np.float64)]) if block.W_gate is not None else R
    _, sv, Vt = np.linalg.svd(rows)
    out = list(Vt[int(np.sum(sv > sv.max(initial=0.0) * 1e-12)):][:4])  # (the null space: B is constant there)
    from scipy.optimize import linprog

    for sign in (1.0, -1.0):  # maximise s subject to sign·R x + s ≤ 0, |x|∞ ≤ 1, s ≤ 1
        try:
            res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.hstack([sign * R, np.ones((n, 1))]), b_ub=np.zeros(n),
                          bounds=[(-1.0, 1.0)] * d + [(None, 1.0)], method="highs")
        except (ValueError, np.linalg.LinAlgError):
            continue
        if res.status == 0 and res.x is not None and res.x[-1] > 0:
            out.append(np.asarray(res.x[:d], dtype=np.float64))
    return np.array(out, dtype=np.float64).reshape(-1, d)


def _climbed(within: Any, X: np.ndarray, rng: np.random.Generator, rounds: int = 60) -> bool:
    """Whether ``within`` still holds after a random local search from the inputs ``X`` (the sample's worst):
    each round tries a random step from every input one at a time and keeps a step on which ``within``
    fails (then False); steps shrink where nothing fails. A thin cone the sample came near is found so."""
    step = 0.5
    for _ in range(rounds):
        Y = X + step * np.max(np.abs(X), axis=1, keepdims=True) * rng.standard_normal(X.shape)
        if not within(Y):
            return False
        step *= 0.9
    return True


def spare_units(block: Any, tol: float, seed: int, one_per_rank: bool) -> str | None:
    """Whether f can spare enough units within the tolerance, at this checker's own sampled inputs, to realise its
    skip in the freed slots (an antipodal pair per rank-one part; one unit where f grows quadratically,
    ``one_per_rank``: a unit with a large bias is affine where f does not hide it): a unit whose output stays below
    τ/2 of |f(x)|∞ + |x|∞ + |f(0)|∞, or one of a nearly collinear pair (cos ≥ 1 − 10⁻⁴) whose move onto the other's
    line (its up row and bias scaled by λ, σ homogeneous of degree k ∈ {1, 2}; λ = 1 otherwise) changes f as
    little; the errors add up to τ/2 at most. Ungated units only for the merges; a sample proves nothing (exit 4)."""
    import sympy as sp

    d, n = block.d, block.n
    if n * d > 1 << 22:
        return None
    rng = np.random.default_rng(seed + 7919)
    V = rng.standard_normal((48, d))
    with np.errstate(all="ignore"):
        f0 = float(np.max(np.abs(block(np.zeros((1, d))))))
        if not math.isfinite(f0):
            return None
        ts = [10.0**k for k in range(-4, 9, 2)] + ([math.sqrt(max(f0, 1.0)), max(f0, 1.0)] if f0 > 0 else [])
        for R, b in ((block.W_up, block.b_up), (block.W_gate, block.b_gate)):  # (units that switch on only far out)
            if R is not None and b is not None:
                far = float(np.max(np.abs(np.asarray(b, dtype=np.float64)) / np.sqrt(np.sum(np.asarray(R, dtype=np.float64) ** 2, axis=1))))
                ts += [10 * far, 1e3 * far] if math.isfinite(far) and far > 1e7 else []
        X = np.concatenate([t * V for t in ts])
        den = np.max(np.abs(block(X)), axis=1) + np.max(np.abs(X), axis=1) + f0
        if not (np.all(np.isfinite(den)) and np.all(den > 0)):
            return None
        W = np.asarray(block.W_down, dtype=np.float64)
        top = np.max(np.abs(W), axis=0)
        U = np.asarray(block.W_up, dtype=np.float64)
        Z = X @ U.T + (0.0 if block.b_up is None else np.asarray(block.b_up, dtype=np.float64))
        if block.W_gate is not None:
            Y = X @ np.asarray(block.W_gate, dtype=np.float64).T + (0.0 if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64))
            vals = block.activation(Y) * (Z if block.value_identity else block.value_activation(Z))
        else:
            vals = block.activation(Z)
        cand = [(float(v), (i,), ()) for i, v in enumerate(np.max(np.abs(vals) * top / den[:, None], axis=0))]
        if block.W_gate is None and n <= 4096:
            from absorb.verify._symbolic import homogeneous_of_degree

            k = next((k for k in (1, 2) if homogeneous_of_degree(block.activation.expr, sp.Integer(k))), None)
            nrm = np.sqrt(np.sum(U * U, axis=1))
            if np.all(nrm > 0):
                cos = (U / nrm[:, None]) @ (U / nrm[:, None]).T
                np.fill_diagonal(cos, -2.0)
                ia, ib = np.nonzero(cos >= 1 - 1e-4)
                keep = np.argsort(-cos[ia, ib], kind="stable")[:128]  # (the closest pairs, both orders, only)
                for a, b in zip(ia[keep], ib[keep]):
                    lam = float(U[b] @ U[a] / (U[a] @ U[a])) if k else 1.0
                    there = lam**k * vals[:, a] if k else vals[:, a]
                    cand.append((float(np.max(np.abs(vals[:, b] - there) * top[b] / den)), (int(b),), (int(a),)))
                    if a < b:  # (the pair's joint output: two units that nearly cancel free both)
                        joint = np.abs(vals[:, [a]] * W[:, a] + vals[:, [b]] * W[:, b]).max(axis=1)
                        cand.append((float(np.max(joint / den)), (int(a), int(b)), ()))
    if any(not math.isfinite(e) for e, _, _ in cand):
        return None
    gone = max(_take(cand, tol / 2), _take([t for t in cand if not t[2]], tol / 2), key=len)  # (joint pairs before merges)
    M = np.asarray(block.M, dtype=np.float64)
    sv = np.linalg.svd(M, compute_uv=False) if np.all(np.isfinite(M)) else np.zeros(0)
    with np.errstate(all="ignore"):  # (a part of the skip below τ·f's size at |x| = 1 needs no slot)
        size = float(np.max(np.max(np.abs(block(V)), axis=1) / np.max(np.abs(V), axis=1)))
    rank = int(np.sum(sv > tol * max(sv[0], size if math.isfinite(size) else 0.0))) if sv.size and sv[0] > 0 else 0
    if not gone or len(gone) < (rank if one_per_rank else 2 * rank):
        return None
    return (f"at this checker's sampled inputs f can spare {len(gone)} unit(s) within the tolerance (negligible, or merged "
            f"into a nearly collinear one), enough to realise the skip's {rank} rank-one part(s) in their slots: the exact "
            "not_absorbable may contradict the tolerance")


def _take(cand: list[tuple[float, tuple[int, ...], tuple[int, ...]]], left: float) -> set[int]:
    """Units freed, cheapest first, while the errors fit in ``left`` (each unit once, none onto a freed unit)."""
    gone: set[int] = set()
    for e, frees, keeps in sorted(cand, key=lambda t: t[0]):
        if e > left:
            break
        if not gone & {*frees, *keeps}:
            left -= e
            gone.update(frees)
    return gone
