"""A local fit of a residual-free block to f: the screen for near blocks that no bound of
:mod:`absorb.engine.tolerance` models.

An exact not_absorbable rules out blocks *equal* to f; under a tolerance, a route without the
robust skeleton bound (docs/results/robust.md) also needs that no block within τ exists, and the
bounded screens try only the candidates they know (flips, units moved onto a near line, pairs
realising the skip). Red teams found others by optimisation: bias shifts on two nearly antipodal
units of a ReLU² or gated block realise a small skip up to ~0.1τ. This screen does what they did,
locally: it starts from f's own units with the skip dropped, adjusts every weight (and bias, where
the class allows them) by Levenberg–Marquardt on f's relative error at sampled inputs — with the
Jacobian in closed form, σ' by central differences — and measures the fitted g on fresh inputs and
on the kink (gate) hyperplanes of both blocks. A sample, not a proof: it withholds, never decides.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from absorb.engine._kept import kept, recall
from absorb.model.block import Block, replace
from absorb.rigorous import magnitudes_ok, row_slices

FIT_MAX_PARAMS = 100
"""Blocks with more parameters than this are not fitted (the Jacobian has (inputs·d) × parameters entries)."""
_POINTS_PER_PARAM = 6
_ITERATIONS = 60


def _keys(blk: Block, biases: bool) -> list[str]:
    keys = ["W_up", "W_down"] + (["W_gate"] if blk.gated else [])
    return keys + (["b_up", "b_down"] + (["b_gate"] if blk.gated else []) if biases else [])


def _start(blk: Block, keys: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for k in keys:
        a = getattr(blk, k)
        out[k] = (np.zeros(blk.d if k == "b_down" else blk.n) if a is None else np.asarray(a, dtype=np.float64)).copy()
    return out


def _slope(act, Z: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    h = 1e-6 * (1.0 + np.abs(Z))
    return (act(Z + h) - act(Z - h)) / (2 * h)


def _inputs(rng: np.random.Generator, m: int, d: int, planes: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
    """m inputs at scales 10⁻³…10⁵ (|x|∞), and as many again projected onto the hyperplanes u·x + b = 0 of ``planes``."""
    Z = rng.standard_normal((m, d))
    Z /= np.maximum(np.abs(Z).max(axis=1, keepdims=True), 1e-300)
    X = Z * 10.0 ** rng.uniform(-3, 5, m)[:, None]
    out = [X]
    rows = [(u, 0.0 if b is None else b[i]) for R, b in planes for i, u in enumerate(R)]
    for k, (u, b) in enumerate(rows):
        nu = float(u @ u)
        if nu > 0:
            Q = X[k::max(1, len(rows))][: max(4, m // max(1, len(rows)))]
            out.append(Q - np.outer((Q @ u + b) / nu, u))
    return np.vstack(out)


def _planes(b: Block) -> list[tuple[np.ndarray, np.ndarray | None]]:
    return [(b.W_gate, b.b_gate)] if b.gated else [(b.W_up, b.b_up)]


def _ratio(f: Block, g: Block, X: np.ndarray, f0: float) -> float:
    with np.errstate(all="ignore"):
        F = f(X)
        den = np.abs(F).max(axis=1) + np.abs(X).max(axis=1) + f0
        r = np.abs(F - g(X)).max(axis=1) / den
    return float(np.max(r)) if np.all(np.isfinite(r)) else float("inf")


def fitted_near(blk: Block, tol: float, seed: int, biases: bool, margin: float) -> str | None:
    """Why a not_absorbable would contradict the tolerance: a residual-free block of f's width fitted to f within
    ``margin``·τ at every sampled input (fresh inputs and both blocks' hyperplanes), or None."""
    if blk.hc is not None or blk.skip is not None and not np.any(blk.skip):
        return None
    biases = biases or blk.has_bias
    keys = _keys(blk, biases)
    sizes = {"W_up": blk.n * blk.d, "W_down": blk.n * blk.d, "W_gate": blk.n * blk.d, "b_up": blk.n, "b_gate": blk.n, "b_down": blk.d}
    if sum(sizes[k] for k in keys) > FIT_MAX_PARAMS:  # (before any copy: a 7B layer's weights are GBs)
        return None
    from scipy.optimize import least_squares  # (after the size test: 0.3 s of imports a large layer never needs)

    start = _start(blk, keys)
    shapes = [(k, start[k].shape) for k in keys]
    P = sum(a.size for a in start.values())
    if P > FIT_MAX_PARAMS or not blk.is_float64 or not magnitudes_ok(*start.values(), blk.M):
        return None  # (past 2^±200 a fit's sums overflow or lose every bit: the bounded screens and the rules on scale serve)
    rng = np.random.default_rng(seed + 7919)
    d, n = blk.d, blk.n
    X = _inputs(rng, _POINTS_PER_PARAM * P, d, _planes(blk))
    with np.errstate(all="ignore"):
        F = blk(X)
        f0 = float(np.abs(blk(np.zeros((1, d)))).max())
        den = np.abs(F).max(axis=1) + np.abs(X).max(axis=1) + f0
    if not (np.all(np.isfinite(F)) and np.isfinite(f0)):
        return None
    keep = den > 0  # (x = 0 with f(0) = 0: no error is measured there)
    X, F, den = X[keep], F[keep], den[keep]
    rf = replace(blk, skip=np.zeros((d, d)))
    wt = 1.0 / den

    def unpack(th: np.ndarray) -> dict[str, np.ndarray]:
        out, o = {}, 0
        for k, s in shapes:
            size = int(np.prod(s))
            out[k] = th[o:o + size].reshape(s)
            o += size
        return out

    def parts(th: np.ndarray):  # type: ignore[no-untyped-def]
        p = unpack(th)
        bu, bg = p.get("b_up"), p.get("b_gate")
        if blk.gated:
            Zg = X @ p["W_gate"].T + (0.0 if bg is None else bg)
            V = X @ p["W_up"].T + (0.0 if bu is None else bu)
            hv = V if blk.value_identity else blk.value_activation(V)
            return p, blk.activation(Zg), hv, Zg, V
        Z = X @ p["W_up"].T + (0.0 if bu is None else bu)
        return p, blk.activation(Z), None, Z, None

    def residual(th: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            p, S, hv, _, _ = parts(th)
            H = S if hv is None else S * hv
            r = (((H @ p["W_down"].T + p.get("b_down", 0.0)) - F) * wt[:, None]).ravel()
        return np.where(np.isfinite(r), r, 1e150)

    def jacobian(th: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            J = _jacobian(th)
        return np.where(np.isfinite(J), J, 0.0)

    def _jacobian(th: np.ndarray) -> np.ndarray:
        p, S, hv, Z, V = parts(th)
        D = p["W_down"]
        H = S if hv is None else S * hv
        m = X.shape[0]
        J = np.zeros((m, d, P))
        o = 0
        for k, s in shapes:
            size = int(np.prod(s))
            if k == "W_down":  # ∂G_r/∂D_ri = H_i
                blkJ = np.zeros((m, d, d, n))
                for r in range(d):
                    blkJ[:, r, r, :] = H
                J[:, :, o:o + size] = blkJ.reshape(m, d, size)
            elif k == "b_down":
                J[:, :, o:o + size] = np.broadcast_to(np.eye(d), (m, d, d))
            else:
                if k in ("W_up", "b_up"):  # ungated: σ'(Z); gated: the value branch, σ(Z_g)·h'(V)
                    Dz = _slope(blk.activation, Z) if hv is None else S * (1.0 if blk.value_identity else _slope(blk.value_activation, V))
                else:  # the gate: σ'(Z_g)·h(V)
                    Dz = _slope(blk.activation, Z) * hv
                A = Dz[:, None, :] * D[None, :, :]  # (m, d, n): ∂G_r/∂z_i
                if k.startswith("W_"):
                    J[:, :, o:o + size] = (A[:, :, :, None] * X[:, None, None, :]).reshape(m, d, size)
                else:
                    J[:, :, o:o + size] = A
            o += size
        return (J * wt[:, None, None]).reshape(m * d, P)

    th0 = np.concatenate([start[k].ravel() for k in keys])
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (scipy's own warnings on a hard problem: the fit is measured below anyway)
            sol = least_squares(residual, th0, jac=jacobian, method="lm", max_nfev=_ITERATIONS, xtol=1e-15, ftol=1e-15, gtol=1e-15)
    except (ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None
    if not np.all(np.isfinite(sol.x)):
        return None
    g = replace(rf, **{k: v.copy() for k, v in unpack(sol.x).items()})
    with np.errstate(all="ignore"):
        X2 = _inputs(np.random.default_rng(seed + 104729), 2 * _POINTS_PER_PARAM * P, d, _planes(blk) + _planes(g))
    err = _ratio(blk, g, X2, f0)
    if not err <= margin * tol:
        return None
    return (f"a residual-free block fitted to f (f's own units with the skip dropped, every weight{' and bias' if biases else ''} "
            f"adjusted by least squares) is within {err:.3g} = {err / tol:.2g}·τ of f at {X2.shape[0]} sampled inputs (fresh "
            "ones and both blocks' kink hyperplanes)")


_PAIR_ANGLE = 0.2
"""Nearly antipodal pairs up to this ‖û_i + û_j‖₁ (unit rows) take part in :func:`pairs_realise_skip`."""


_PAIR_TAU = 0.0205
"""1 − cos of the widest angle a pair within :data:`_PAIR_ANGLE` can make: ‖û_i + û_j‖₂ ≤ 0.2 gives cos ≤ −0.98, and rows
with ‖r_i + r_j‖₂ ≤ 0.2·max(|r_i|, |r_j|) make an angle of at most asin 0.2 with −r_j (cos ≤ −0.9798)."""
_PAIR_DIM = 2.0
"""The projection screen that finds the pairs of a block past n²d = 2²⁶ projects to ⌈2·d·τ⌉ dimensions (τ =
:data:`_PAIR_TAU`; :func:`absorb.engine._collinear.near_collinear_pairs`): it cannot miss a pair, and a random layer's
non-pairs pass it a few per mille of the time (to the exact cosine), at a quarter of the default dimension's cost."""
def _antipodal(R: np.ndarray, homogeneous: bool, angle: float = _PAIR_ANGLE
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nearly antipodal pairs (i, j) of rows of R with their ‖û_i + û_j‖₁ ≤ ``angle`` (at most :data:`_PAIR_ANGLE`;
    rows of unequal length pair where σ is homogeneous, else the rows themselves must nearly cancel): a Gram of the unit
    rows, or past n²d = 2²⁶ the exact Gram of :func:`absorb.engine._collinear.near_collinear_pairs` up to 4096 units
    and its projection screen past them (|cos| ≥ 1 − :func:`_pair_tau` of the angle holds every such pair: at
    :data:`_PAIR_ANGLE`, :data:`_PAIR_TAU`); ``(i, û_i, δ, j)``. Only the pairs' rows are copied; the last answer is
    kept for the same array (the screens of one block ask up to three times), and serves a narrower angle too."""
    angle = min(max(angle, _ANGLE_FLOOR), _PAIR_ANGLE)
    got = kept("antipodal", R)
    if got is not None and got[0][0] == homogeneous and got[0][1] > angle:  # type: ignore[index]
        i, Ui, delta, j = got[1]  # type: ignore[misc]
        keep = delta <= angle
        return i[keep], Ui[keep], delta[keep], j[keep]
    return recall("antipodal", R, (homogeneous, angle), lambda: _find_antipodal(R, homogeneous, angle))


def _capacity_angle(need: float, d: int, tol: float, margin: float) -> float:
    """The δ past which a pair's capacity √d·margin·τ·(1 + 1/(1.2δ)) (:func:`_capacity`) stays below ``need`` — pairs
    farther from antipodal cannot change a comparison of the capacity with ``need`` — doubled (a margin for rounding);
    inf where every pair can."""
    q = need / (math.sqrt(d) * margin * tol)
    return 2 / (1.2 * (q - 1)) if 1 + 2.0**-20 < q < math.inf else math.inf


_ANGLE_FLOOR = 1e-6
"""The narrowest angle the pairs' screens look within: a computed δ is off by about ε·√d·|û|∞·d ≲ 10⁻¹³ absolutely, so
above this floor a pair's computed and true δ agree to 10⁻⁷ relatively (covered by :func:`_pair_tau`'s margin), and
which side of the angle a pair falls is the same for the screen that finds it and the δ that is compared."""


def _pair_tau(angle: float) -> float:
    """1 − cos of the widest angle a pair within ``angle`` (< 1) can make: ‖û_i + û_j‖₂ ≤ δ gives cos ≤ −(1 − δ²/2), and
    ‖r_i + r_j‖₂ ≤ δ·max(|r_i|, |r_j|) an angle of at most asin δ with −r_j, cos ≤ −√(1 − δ²); 1 − √(1 − δ²) =
    δ²/(1 + √(1 − δ²)) ≥ δ²/2 covers both (raised by 10⁻⁵: the rounding of a computed δ, :data:`_ANGLE_FLOOR`)."""
    return angle * angle / (1 + math.sqrt(1 - angle * angle)) * (1 + 1e-5)


def _find_antipodal(R: np.ndarray, homogeneous: bool, angle: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from absorb.engine.hypotheses import _norms

    n, d = R.shape
    with np.errstate(all="ignore"):
        size = _norms(R, 1)
        if n * n * d <= 1 << 26:
            Rn = R / size[:, None]
            ok = np.all(np.isfinite(Rn), axis=1)
            i, j = np.nonzero(np.triu(Rn @ Rn.T < -0.5, 1) & ok[:, None] & ok[None, :])
        else:
            from absorb.engine._collinear import near_collinear_pairs

            tau = _PAIR_TAU if angle >= _PAIR_ANGLE else _pair_tau(angle)
            pairs = near_collinear_pairs(R, tau=tau, dim=math.ceil(_PAIR_DIM * d * tau), antipodal=True, keep=True)
            i, j = (np.array([p[k] for p in pairs], dtype=np.intp) for k in (0, 1))
        Ri, Rj = np.asarray(R[i], dtype=np.float64), np.asarray(R[j], dtype=np.float64)
        Ui = Ri / size[i, None]
        if homogeneous:  # (ReLU(−λs) = λ·ReLU(−s), ReLU² λ²: rows of unequal length pair as well, the move rescaled)
            delta = np.abs(Ui + Rj / size[j, None]).sum(axis=1)
        else:  # (σ(s) − σ(−λs) is linear only for λ = 1: the rows themselves must nearly cancel)
            delta = np.abs(Ri + Rj).sum(axis=1) / np.maximum(size[i], size[j])
    keep = np.isfinite(delta) & (delta <= angle)
    return i[keep], Ui[keep], delta[keep], j[keep]


def _reach(blk: Block, seed: int = 0) -> float:
    """s = the largest sampled |x|∞ / (|f(x)|∞ + |x|∞ + |f(0)|∞), in (0, 1]: an error a·|x|∞ is at most a·s of the
    tolerance's measure at those inputs. The screens below price a construction by its absolute error per |x|∞; where f
    is large against |x| the tolerance allows 1/s times more (red team 43c: a gated pair, a ReLU² pair and a freed GELU
    unit 0.02–0.56τ from f were priced at several τ). Sampled at random directions over 10⁻⁴…10⁸ (fewer on a large
    block): a sample's s is at most the true one, so a cost read with it is at most the true relative cost — the screens
    withhold more, never less. 1 where f overflows or nothing is read. The last answer is kept for the same block."""
    return recall("reach", blk, seed, lambda: _sampled_reach(blk, seed))


def _sampled_reach(blk: Block, seed: int) -> float:
    rng = np.random.default_rng(seed + 29)
    large = blk.n * blk.d > 1 << 22
    dirs = rng.standard_normal((4 if large else 32, blk.d))
    X = np.vstack([np.zeros((1, blk.d))] + [dirs * t for t in ((1e-2, 1.0, 1e4) if large else (1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6, 1e8))])
    with np.errstate(all="ignore"):
        F = blk(X)  # (f(0) in the same pass: row 0)
        xs = np.max(np.abs(X[1:]), axis=1)
        den = np.max(np.abs(F[1:]), axis=1) + xs + np.max(np.abs(F[0]))
        ok = np.isfinite(den) & (den > 0)
        out = float(np.max(xs[ok] / den[ok])) if np.any(ok) else 1.0
    return min(max(out, 1e-300), 1.0) if math.isfinite(out) else 1.0


def pair_capacity(blk: Block, tol: float, margin: float, need: float = math.inf,
                  clear: float = 0.0) -> tuple[float, float, int]:
    """(cap, δ_min, count) for the nearly antipodal pairs of f's units not exactly antipodal (count 0: none, cap 0): beside
    flips of other units they can carry at most ‖R‖_F ≤ cap = √d·margin·τ·(1 + 1/(L·δ_min)) of what the flips leave, R =
    Σ_p v_p û_pᵀ (up to margin·τ), since each costs L·|v_p|∞·δ_p ≥ L·δ_min·|v_p|₂/√d and Σ_p |v_p|₂ ≥ ‖R‖_F (L = 1.2).

    ``need``, ``clear``: the caller asks only whether cap exceeds ``need``, and no two rows of f's W_up have
    |cos| ≥ 1 − ``clear`` (a hypothesis proved on these weights; 0: none known). A pair's cap exceeds ``need`` only
    for δ < δ* = 1/(L(Q − 1)), Q = need/(√d·margin·τ') (:func:`_capacity_angle`), so only those pairs are looked for
    (a narrower projection screen on a large layer); and δ ≤ δ* puts a pair's rows at |cos| ≥ 1 − :func:`_pair_tau`
    (δ*): where that is within ``clear`` no pair can matter, and (0, inf, 0) is returned without looking."""
    R = np.asarray(blk.W_gate if blk.gated else blk.W_up)
    if R.shape[0] < 2 or blk.is_residual_free:
        return 0.0, math.inf, 0
    from absorb.symbolic._core import get as analysis

    t = tol / _reach(blk)
    star = _capacity_angle(need, R.shape[1], t, margin)  # (wider pairs' cap is below need: found or not, the same answer)
    if clear > 0 and not blk.gated and star < 1 and _pair_tau(max(star, _ANGLE_FLOOR)) <= clear:
        return 0.0, math.inf, 0
    return _capacity(_antipodal(R, analysis(blk.activation, "homogeneity").proved, star)[2], R.shape[1], t, margin)


def _capacity(delta: np.ndarray, d: int, tol: float, margin: float) -> tuple[float, float, int]:
    """:func:`pair_capacity` from the pairs' defects δ (those not exactly antipodal count)."""
    delta = delta[delta > 0]
    if not delta.size:
        return 0.0, math.inf, 0
    lo = float(delta.min())
    return float(math.sqrt(d) * margin * tol * (1 + 1 / (1.2 * lo))), lo, int(delta.size)


def pairs_realise_skip(blk: Block, tol: float, margin: float, gap: float | None = 0.0) -> str | None:
    """Whether nearly antipodal units may realise f's skip within ``margin``·τ — the mechanism a local fit misses on a large
    block or for a large skip: opposite moves of one parameter of a pair i, j with û_j ≈ −û_i (down columns, up or value
    biases, value rows) add v·(σ(û·x) − σ(−û·x + η)) ≈ v·(û·x), erring by about L·|v|∞·|η|, |η| ≤ ‖û_i + û_j‖₁|x|∞. The
    skip's parts along the pairs' lines, M ≈ Σ_p v_p û_pᵀ, are fitted by least squares weighted by those errors (ridge
    δ_p² on v_p), and the estimate ‖M − Σ v_p û_pᵀ‖∞ + L·Σ_p |v_p|∞δ_p (L = 1.2, ReLU/GELU/SiLU's flip slopes and more)
    is compared with margin·τ. Beside flips of other units (exact moves), the pairs must carry what the flips leave, at
    least ``gap`` = a proved lower bound of min_S ‖M + c·W_down[:,S] W_up[S,:]‖_F (0: none known): where their capacity
    (:func:`pair_capacity`) reaches it, that is not excluded either (None: the route's condition is not
    of that form, and only the least-squares estimate runs). An estimate, not a bound: it withholds, never decides."""
    R = np.asarray(blk.W_gate if blk.gated else blk.W_up)
    n, d = R.shape
    if n < 2 or blk.is_residual_free:
        return None
    from absorb.symbolic._core import get as analysis

    homogeneous = analysis(blk.activation, "homogeneity").proved  # (σ, or the gate: σ(−λs) = λ^k·σ(−s))
    reach = _reach(blk)  # (an error a·|x|∞ is a·reach of the tolerance's measure: f may be large against |x|)
    # Which pairs can matter: est ≥ ‖M‖∞·min(1, 1.2δ_min/√d) (‖M‖∞ ≤ rest + √d·Σ_p |v_p|∞ for unit û_p), so the estimate
    # reaches margin·τ/reach only with a pair within δ** = √d·margin·τ/(1.2·reach·‖M‖∞), and the capacity reaches the
    # gap only within its angle; no pair that near: neither can (doubled, for rounding)
    with np.errstate(all="ignore"):  # (‖M‖∞ a block of rows at a time: no d×d temporary on a wide layer)
        m_inf = 1.0 if blk.skip is None else max(float(np.abs(blk.skip[sl]).sum(axis=1).max()) for sl in row_slices(d, d))
        near = 2 * math.sqrt(d) * margin * tol / (1.2 * reach * m_inf) if m_inf > 0 else math.inf
    near = max(near if math.isfinite(near) else math.inf,
               0.0 if gap is None else _capacity_angle(gap, d, tol / reach, margin))
    if not len(_antipodal(R, homogeneous, near)[0]):
        return None
    i, Uh, delta, _ = _antipodal(R, homogeneous)  # (the least squares reads every pair)
    M = np.asarray(blk.M, dtype=np.float64)
    with np.errstate(all="ignore"):
        G = Uh @ Uh.T + np.diag(delta**2)
        V = np.linalg.lstsq(G, Uh @ M.T, rcond=None)[0].T  # (d, pairs): M ≈ V Uh
        rest = np.abs(M - V @ Uh).sum(axis=1).max()
        est = float(rest + 1.2 * np.sum(np.abs(V).max(axis=0) * delta))
    if est * reach <= margin * tol:
        return (f"nearly antipodal units ({len(i)} pair(s), the closest {float(delta.min()):.2g} from antipodal) may realise the "
                f"skip by opposite moves of one parameter of each pair, erring by about {est:.3g}·|x|∞ = "
                f"{est * reach / tol:.2g}·τ of f's measure (an estimate)")
    cap, lo, count = _capacity(delta, d, tol / reach, margin)  # (the pairs found above: not searched again)
    if gap is not None and count and cap >= gap:
        return (f"nearly antipodal units ({count} pair(s), the closest {lo:.2g} from "
                f"antipodal) may carry parts of the skip up to ‖·‖_F ≈ {cap:.3g} within the tolerance, "
                + (f"at least the {gap:.3g} that every flip of other units leaves (the search's bound)" if gap > 0 else
                   "and this route proves no bound on what flips of other units leave")
                + ": a block combining them is not excluded (an estimate)")
    return None


def freed_units_realise_skip(blk: Block, tol: float, margin: float) -> str | None:
    """Whether a unit of f can be made, within ``margin``·τ, a free slot along one of f's unit lines (ungated σ with
    σ(z) − σ(−z) = c·z, any biases): dropped (its output varies by at most L·|w_k|∞·‖u_k‖₁·|x|∞, L = 1.2; its value at 0
    moves into b_down) and re-aimed opposite a unit i that f keeps, or, where it nearly opposes a unit i already, turned
    exactly opposite it (a change of L·|w_k|∞·‖u_k − u_k'‖₁·|x|∞, u_k' = −λu_i, λ = |u_k|₂/|u_i|₂ where σ is homogeneous,
    else 1; bias −λb_i). The pair (i, k) then carries v·(u_i·x) exactly, of any size — a rank-one part of the skip, which
    beside flips and other pairs no search of the exact routes rules out: such a unit withholds by itself (a dead unit is
    the exact routes' free slot). An estimate: it withholds, never decides."""
    from absorb.symbolic._core import get as analysis

    if blk.gated or blk.n < 2 or blk.is_residual_free or not analysis(blk.activation, "flip_identity[ungated]").proved:
        return None
    with np.errstate(all="ignore"):  # (a block of rows at a time: no copy of a large layer)
        wmax = 1.2 * np.concatenate([np.maximum(c.max(axis=0), -c.min(axis=0)) for c in np.array_split(
            blk.W_down, max(1, blk.n // 2048), axis=1)]).astype(np.float64)
        size = wmax * np.concatenate([np.abs(r).sum(axis=1) for r in np.array_split(blk.W_up, max(1, blk.n // 2048))])
        from absorb.engine.hypotheses import _norms

        R, homogeneous = np.asarray(blk.W_up), analysis(blk.activation, "homogeneity").proved
        norms = _norms(R, 1)
        budget = margin * tol / _reach(blk)  # (a change a·|x|∞ is a·reach of the tolerance's measure)
        # unit b turned opposite unit a costs at least wmax_b·|u_b|₂·δ (‖u_b + λu_a‖₁ = |u_b|₂·δ, or ≥ δ·max |u|₂), and
        # only a cost within 5√d·budget changes anything below: pairs past that δ are not looked for (doubled, rounding)
        low = float(np.min(wmax * norms, initial=math.inf))
        near = 2 * 5 * math.sqrt(blk.d) * budget / low if low > 0 else math.inf
        i, _, _, j = _antipodal(R, homogeneous, near)  # (units turned opposite others: the pairs' rows only are read)
        for a, b in ((i, j), (j, i)):  # (unit b turned opposite unit a)
            lam = norms[b] / norms[a] if homogeneous else np.ones(len(a))
            turn = wmax[b] * np.abs(np.asarray(R[b], dtype=np.float64) + lam[:, None] * R[a]).sum(axis=1)
            np.minimum.at(size, b, np.where(np.isfinite(turn), turn, np.inf))
        # (past the pairs' angle ‖u_k + λu_i‖₁ ≥ 0.2·|u_k|₂ ≥ 0.2·‖u_k‖₁/√d: only a unit of size ≤ 5√d·margin·τ turns cheaply)
        for k in np.flatnonzero((size > budget) & (size <= 5 * np.sqrt(blk.d) * budget))[:256]:
            scale = norms[k] / norms if homogeneous else np.ones(blk.n)  # (u_i scaled to |u_k|₂ where σ is homogeneous)
            rk = np.asarray(R[k], dtype=np.float64)
            turn = np.concatenate([wmax[k] * np.abs(rk + scale[sl, None] * R[sl]).sum(axis=1)  # (a block of rows at a time)
                                   for sl in row_slices(blk.n, blk.d)])
            turn[k] = np.inf
            size[k] = min(size[k], float(np.min(np.where(np.isfinite(turn), turn, np.inf))))
    cheap = np.flatnonzero((size > 0) & (size <= budget))
    if not cheap.size:
        return None
    k = int(cheap[np.argmin(size[cheap])])
    return (f"{cheap.size} unit(s) of f can be freed, or turned exactly opposite a unit they nearly oppose, within "
            f"{float(size[cheap].max()):.2g}·|x|∞ (unit {k}: {float(size[k]):.2g}) — within the tolerance: each then carries a "
            "rank-one part of the skip exactly, and with flips or other pairs a block within the tolerance is not excluded")


def near_block(blk: Block, tol: float, seed: int, biases: bool, margin: float, gap: float | None = 0.0) -> str | None:
    """The screens of this module in order of cost — pairs, freed units, the local fit — : why a block within
    ``margin``·τ may exist, or None. ``gap``: a proved lower bound of what flips leave of the skip (0: none known;
    :func:`pairs_realise_skip`)."""
    return (pairs_realise_skip(blk, tol, margin, gap) or freed_units_realise_skip(blk, tol, margin)
            or fitted_near(blk, tol, seed, biases, margin))
