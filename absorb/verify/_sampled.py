"""The checker's sampled screen: whether g = B (f without its skip) is within the tolerance at this checker's own
inputs — random directions, ±e_j, points on the kink/gate hyperplanes, the null space of the up rows and the dead
cones, at every scale, then a climb from the worst. A sample proves nothing: what it finds makes a not_absorbable
not re-checked (exit 4), never rejected."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from absorb.verify._affine_fit import affine_units, through_gate


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


def spare_units(block: Any, tol: float, seed: int, one_per_rank: bool, biases: bool = False,
                width: int | None = None) -> str | None:
    """Whether f can spare enough units within the tolerance, at this checker's own sampled inputs, to realise its
    skip in the freed slots (an antipodal pair per rank-one part; one unit where f grows quadratically,
    ``one_per_rank``, or a gated unit with a linear value branch whose gate sees a constant with a nonzero value —
    ``biases`` (the class allows them: a pair's map may then carry a constant too), or g(0) ≠ 0): a unit whose
    output stays small against |f(x)|∞ + |x|∞ + |f(0)|∞; for the near pairs of :func:`_near` (up rows, or the gate
    rows of a gated block), one moved onto the other's line (its row scaled by λ, σ homogeneous of degree k ∈ {1, 2};
    λ = 1 otherwise) and merged, a pair that nearly cancels, a nearly antipodal pair whose joint output is nearly a
    map x ↦ v(u·x) (+ β), and an ungated unit flipped onto an antipodal one's line (σ(−z) = σ(z) − c·z) and merged —
    the maps joining the skip; the errors (within τ), the skip's parts the slots leave
    and the pairs' flip defect add up to less than τ. A sample proves nothing (exit 4). ``width`` below n: only
    whether a unit that is not dead stays within τ or two units come within τ of collinear (a block of fewer active
    units or lines)."""
    import sympy as sp

    d, n = block.d, block.n
    wide = n * d > 1 << 22  # (past it only units within τ of collinear: by cosines, or past n²·d = 2³⁵ projections)
    if wide and (width is not None or n * d > 1 << 24):
        return None
    gated = block.W_gate is not None
    U = np.asarray(block.W_up, dtype=np.float64)
    W = np.asarray(block.W_down, dtype=np.float64)
    bu = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(all="ignore"):
        f0 = float(np.max(np.abs(block(np.zeros((1, d))))))
    if not math.isfinite(f0):
        return None
    kappa: float | None = 0.0  # (κ/|c| for pairs of a σ with σ(z) − σ(−z) = c·z + δ(z), |δ(z)| ≤ κ|z|)
    if gated:
        from absorb.verify._tolerance import _at_zero  # (exactly 0 where a float value at 0 is rounding)

        if not block.value_identity or not (width is not None or one_per_rank or biases or _at_zero(block.activation) != 0.0):
            return None  # (gate row 0 gives g(c)·h(u·x + b): affine only for h(z) = z, and a constant c with g(c) ≠ 0)
        one_per_rank = True
        R = np.column_stack([np.asarray(block.W_gate, dtype=np.float64),
                             np.zeros(n) if block.b_gate is None else np.asarray(block.b_gate, dtype=np.float64)])
    else:
        if not one_per_rank:
            kappa = math.nan  # (read where a unit is freed: a user's σ's defect costs a grid)
        R = np.column_stack([U, bu])
    from absorb.verify._symbolic import homogeneous_of_degree

    k = next((k for k in (1, 2) if homogeneous_of_degree(block.activation.expr, sp.Integer(k))), None)
    with np.errstate(all="ignore"):
        near = ([], []) if wide else _near(R, W * (np.abs(U).sum(axis=1) if gated else 1.0), k)
        rng = np.random.default_rng(seed + 7919)
        V = np.vstack([rng.standard_normal((12 if wide else 48, d)), _worst_directions(R[:, :d], near, k)])
        ts = [10.0**e for e in range(-4, 9, 2)] + ([math.sqrt(max(f0, 1.0)), max(f0, 1.0)] if f0 > 0 else [])
        for Rw, b in ((block.W_up, block.b_up), (block.W_gate, block.b_gate)):  # (units that switch on only far out)
            if Rw is not None and b is not None:
                far = float(np.max(np.abs(np.asarray(b, dtype=np.float64)) / np.sqrt(np.sum(np.asarray(Rw, dtype=np.float64) ** 2, axis=1))))
                ts += [10 * far, 1e3 * far] if math.isfinite(far) and far > 1e7 else []
        X = np.concatenate([t * V for t in ts])
        den = np.max(np.abs(block(X)), axis=1) + np.max(np.abs(X), axis=1) + f0
        fine = np.isfinite(den) & (den > 0)  # (f overflows far out for σ = e^z: those inputs are not read)
        if np.count_nonzero(fine) < len(V):
            return None
        X, den = X[fine], den[fine]
        top = np.max(np.abs(W), axis=0)
        XU = X @ U.T
        Z = XU + bu
        if gated:
            gate = block.activation(np.column_stack([X, np.ones(len(X))]) @ R.T)
            vals = gate * Z
        else:
            vals = block.activation(Z)
        part = np.abs(vals) * top / den[:, None]
        sh = np.max(part, axis=0)
        profile: dict[int, np.ndarray] = {}  # (a candidate's error at each sample, where known: summed jointly)
        cand: list[tuple[float, tuple[int, ...], tuple[int, ...], Any]] = [(float(v), (i,), (), None) for i, v in enumerate(sh)]
        profile.update({id(t): part[:, i] for i, t in enumerate(cand)})
        # (pairs nearly collinear for the tolerance past the fixed cut, negligible units' too, join the pairs below)
        xs = np.max(np.abs(X), axis=1)
        far = xs >= max(float(xs.max()) / 100, 1.0)  # (f read far out: a row turned by θ costs about amp·θ there)
        amp = top * np.hypot.reduce(R[:, :d], axis=1)  # (hypot: no overflow at 10³⁰⁸)
        if not np.any(far):
            amp = np.full(n, np.inf)
        elif gated:
            amp = amp * np.hypot.reduce(U, axis=1) / np.max(den[far] / xs[far] ** 2)
        else:
            amp = amp / np.max(den[far] / xs[far])
        if width is not None:
            live = sh[sh > 0]
            if len(live) and float(live.min()) <= tol:
                return (f"a unit that is not dead has output {float(live.min()):.2e} of f's scale at this checker's "
                        "inputs: f is within the tolerance of a block with one active unit fewer")
            return _collinear_within(block, R, _tau_pairs(R[:, :d], tol, [np.where(sh > 0, amp, np.inf)], [256])[0], top,
                                     X, den, ts, tol, f0, lambda: True)
        every, sizable = _tau_pairs(R[:, :d], tol, [amp, np.where(sh > tol, amp, np.inf)], [64, 256])
        if wide:  # (negligible units too: their shares read low without the pair directions)
            return _collinear_within(block, R, every, top, X, den, ts, tol, f0,
                                     lambda: gated or one_per_rank or _pair_defect(block, biases, f0 > 0) is not None)
        had = set(near[0]) | set(near[1])
        extra_pairs = [(a, b, cs) for a, b, cs in every if (a, b) not in had]
        near = (near[0] + [(a, b) for a, b, cs in extra_pairs if cs > 0], near[1] + [(a, b) for a, b, cs in extra_pairs if cs < 0])
        if not gated:  # (a unit nearly affine where f is read: its map joins the skip; bias-free, its constant stays in
            # its slot by a zero row, or is 0 where σ(0) = 0 — a nearly linear σ's kink, a tiny row of eˣ)
            zero = not biases and float(block.activation(np.zeros(1))[0]) == 0.0
            cand += affine_units(block.activation, X, XU, bu, U, W, vals, top, den, profile, origin=zero)
        if gated:  # (a unit whose gate is nearly g(c), c its gate bias: nearly an affine unit, its map joining the skip)
            g0 = block.activation(R[:, d])
            dev = np.max(np.abs(gate - g0) * np.abs(Z) * top / den[:, None], axis=0)
            cand += [(float(dev[i]), (i,), (), (g0[i] * W[:, i], U[i])) for i in range(n)
                     if math.isfinite(dev[i]) and (biases or bu[i] == 0.0)]
            cand += through_gate(X @ np.asarray(block.W_gate, dtype=np.float64).T, XU, vals, W, U,
                                  np.asarray(block.W_gate, dtype=np.float64), top, den, biases)
        for i, j in near[0]:
            for a, b in ((i, j), (j, i)):
                both = np.outer(vals[:, a], W[:, a]) + np.outer(vals[:, b], W[:, b])
                if a < b:  # (the pair's joint output: two units that nearly cancel free both)
                    cand.append((float(np.max(np.abs(both).max(axis=1) / den)), (a, b), (), None))
                lam = float(R[b] @ R[a] / (R[a] @ R[a])) if k else 1.0
                there = lam**k * (gate[:, a] if gated else vals[:, a]) if k else (gate[:, a] if gated else vals[:, a])
                if not gated:
                    cand.append((float(np.max(np.abs(vals[:, b] - there) * top[b] / den)), (b,), (a,), None))
                    continue
                p = float(Z[:, b] @ Z[:, a] / (Z[:, a] @ Z[:, a])) if np.any(Z[:, a]) else 0.0
                q = float(W[:, b] @ W[:, a] / (W[:, a] @ W[:, a])) if np.any(W[:, a]) else 0.0
                for one in (np.outer(vals[:, a], W[:, a]) + np.outer(there * p * Z[:, a], W[:, b]),  # (b under a's gate,
                            np.outer(vals[:, a] + there * q * Z[:, b], W[:, a])):  # value parts or down columns proportional)
                    cand.append((float(np.max(np.abs(both - one).max(axis=1) / den)), (b,), (a,), None))
        for a, b in near[1]:  # nearly antipodal: the joint output against v·(u_a·x) + β, fitted with weights 1/den
            r = (np.outer(vals[:, a], W[:, a]) + np.outer(vals[:, b], W[:, b])) / den[:, None]
            basis = np.column_stack([X @ U[a]] + ([np.ones(len(X))] if biases else [])) / den[:, None]
            if not (np.isfinite(basis).all() and np.isfinite(r).all()):
                return None  # (no fit on inf or NaN: LAPACK may not return)
            coef = np.linalg.lstsq(basis, r, rcond=None)[0]
            cand.append((float(np.max(np.abs(r - basis @ coef))), (a, b), (), (coef[0], U[a])))
            for a2, b2 in ((a, b), (b, a)) if not gated else ():  # (b2 flipped onto a2's line: v_b2 ≈ α v_a2 + γ u_a2·x + β)
                wgt = top[b2] / den
                basis = np.column_stack([vals[:, a2], X @ U[a2]] + ([np.ones(len(X))] if biases else [])) * wgt[:, None]
                if not (np.isfinite(basis).all() and np.isfinite(vals[:, b2] * wgt).all()):
                    return None
                coef = np.linalg.lstsq(basis, vals[:, b2] * wgt, rcond=None)[0]
                cand.append((float(np.max(np.abs(vals[:, b2] * wgt - basis @ coef))), (b2,), (a2,),
                             (coef[1] * W[:, b2], U[a2])))
    if any(not math.isfinite(e) for e, _, _, _ in cand):
        return None
    with np.errstate(all="ignore"):
        why = _collinear_within(block, R, sizable, top, X, den, ts, tol, f0,
                                lambda: gated or one_per_rank or _pair_defect(block, biases, f0 > 0) is not None)
    if why is not None:
        return why
    M = np.asarray(block.M, dtype=np.float64)
    flipped = {id(t) for t in cand if t[2] and t[3] is not None}
    low = _adds_no_rank(M, [t for t in cand if t[3] is not None])  # (maps a low-rank skip absorbs: not crowded out)
    picks = (cand, [t for t in cand if not t[2]], [t for t in cand if t[3] is None],  # (joint pairs before merges)
             [t for t in cand if id(t) not in flipped or t[2][0] < t[1][0]],  # (which unit of a flipped
             [t for t in cand if id(t) not in flipped or t[2][0] > t[1][0]],  # pair stays matters)
             [t for t in cand if t[3] is None or id(t) in low])
    done: dict[tuple[tuple[int, ...], int], tuple[float, float]] = {}
    for pick in picks:
        for left in (tol,):  # (the whole tolerance: a sampled error reads low, which errs towards "not fully checked")
            gone, extra, used, joined = _take(pick, left, profile)
            if not gone:
                continue
            if kappa is not None and math.isnan(kappa):  # (None: no pair of σ's units is nearly linear — freed slots
                kappa = _pair_defect(block, biases, f0 > 0)  # realise no part of the skip, the maps may still cancel it)
            if kappa is None and not extra:
                continue
            r = len(gone) if one_per_rank else len(gone) // 2 if kappa is not None else 0
            key = (tuple(sorted(id(m) for m in extra)), r)  # (the picks often agree: one d × d SVD per distinct map)
            if key not in done:
                done[key] = _leftover(M, extra, r, kappa or 0.0, X, den)
            rest, miss = done[key]
            spared = (f"at this checker's sampled inputs f can spare {len(gone)} unit(s) within the tolerance "
                      "(negligible, merged into a nearly collinear one, or a nearly antipodal pair taken as a linear "
                      "map), ")
            if used + rest + miss <= tol * (1 - 1e-3):
                return (f"{spared}enough to realise the skip's {min(r, d)} largest rank-one part(s) in their slots, the rest "
                        f"within {rest:.2e}: the exact not_absorbable may contradict the tolerance")
            if (1 <= r or extra) and r < d and len(gone) < n:  # (a flip of the units that stay may leave a skip of rank ≤ r)
                stay = [i for i in range(n) if i not in gone]
                c = None
                if gated:  # (g(z) + g(−z) = c: a flipped gated unit moves c·w uᵀ into the skip)
                    from absorb.verify._symbolic import flip_constant

                    got = flip_constant(block.activation.expr, True)
                    c = float(got) if got is not None and got.is_Rational else None
                elif not one_per_rank and kappa == 0.0:
                    from absorb.verify._shift import _flip_or_shift

                    c = _flip_or_shift(block.activation, biases or block.has_bias, f0 == 0.0)[0]
                if c is None and not r and not gated:
                    from absorb.verify._shift import _flip_or_shift

                    if _flip_or_shift(block.activation, biases or block.has_bias, f0 == 0.0)[0] is None:
                        continue  # (σ has no flip: only the slots cancel the maps, and they realise nothing here)
                if c is None or len(stay) > 20 or (1 << len(stay)) * d**3 > 1 << 30:
                    return (f"{spared}whose slots realise any rank-{r} linear map; flipping some of the other units may "
                            "leave no more of the skip than that, which this checker does not search: the exact "
                            "not_absorbable may contradict the tolerance")
                with np.errstate(all="ignore"):
                    after = _after_flips(M, extra, r, U, W, float(c), stay, joined, X, den)
                if used + after <= tol * (1 - 1e-3):
                    return (f"{spared}whose slots realise the rank-{r} part of the skip that a flip of some of the other "
                            f"units leaves, the rest within {after:.2e}: the exact not_absorbable may contradict the "
                            "tolerance")
    return None


def _adds_no_rank(M: np.ndarray, cand: list[tuple[float, tuple[int, ...], tuple[int, ...], Any]]) -> set[int]:
    """ids of the candidates whose map v uᵀ lies (to 1 %) in M's column space by v or in its row space by u, read off
    M's SVD (d ≤ 1024) or, for a diagonal M, its nonzero diagonal."""
    d = M.shape[0]
    if not cand or not np.all(np.isfinite(M)) or (d > 1024 and np.count_nonzero(M - np.diag(np.diag(M)))):
        return set()
    if np.count_nonzero(M - np.diag(np.diag(M))) == 0:
        zero = np.diag(M) == 0

        def outside(x: np.ndarray, _: Any) -> np.ndarray:
            return x * zero
        cols = rows = None
    else:
        P, S, Qt = np.linalg.svd(M)
        r = int(np.sum(S > 1e-9 * S[0])) if S[0] > 0 else 0
        cols, rows = P[:, :r], Qt[:r].T

        def outside(x: np.ndarray, B: Any) -> np.ndarray:
            return x - B @ (B.T @ x)
    keep = set()
    for t in cand:
        v, u = t[3]
        if any(np.linalg.norm(outside(x, B)) <= 1e-2 * np.linalg.norm(x) for x, B in ((v, cols), (u, rows))):
            keep.add(id(t))
    return keep


def _leftover(M: np.ndarray, extra: list[Any], r: int, kappa: float, X: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """For A = M + Σ v uᵀ over ``extra``: (max over the sampled x of |A_r x|∞/den, A_r what r rank-one parts of A leave;
    κ/|c| times those parts' Σ s|p|∞|q|₁, what pairs realising them miss); inf where A is not finite. A diagonal M
    alone needs no SVD; M = c·I with maps needs one in the maps' span only, where the r parts take all of the
    complement (value |c|) or none of it."""
    d = M.shape[0]
    if not (np.all(np.isfinite(M)) and all(np.all(np.isfinite(v)) and np.all(np.isfinite(u)) for v, u in extra)):
        return math.inf, math.inf
    diag = np.diag(M).copy()
    plain = np.count_nonzero(M - np.diag(diag)) == 0
    if plain and not extra:
        big = np.argsort(np.abs(diag))[::-1][:r]
        miss = kappa * float(np.sum(np.abs(diag[big])))
        diag[big] = 0.0
        with np.errstate(all="ignore"):
            return float(np.max(np.abs(X * diag).max(axis=1) / den)), miss
    if plain and np.all(diag == diag[0]) and 2 * len(extra) < d:
        c = float(diag[0])
        Vs, Us = np.array([v for v, _ in extra]).T, np.array([u for _, u in extra]).T
        basis, _ = np.linalg.qr(np.hstack([Vs, Us]))
        small = c * np.eye(basis.shape[1]) + (basis.T @ Vs) @ (Us.T @ basis)  # (A on the span; c on its complement)
        Ps, Ss, Qs = np.linalg.svd(small)
        room = d - basis.shape[1]
        above = int(np.sum(Ss >= abs(c)))
        take_c = max(0, min(r - min(above, r), room))
        take_s = min(r - take_c, basis.shape[1])
        # (part of the complement only: counted whole, an over-estimate — what is left of it is |c| anyway)
        lead = basis @ Ps[:, :take_s], basis @ Qs[:take_s].T
        miss = kappa * (float(np.sum(Ss[:take_s] * np.abs(lead[0]).max(axis=0) * np.abs(lead[1]).sum(axis=0)))
                        + take_c * abs(c) * math.sqrt(d))
        proj = X @ basis
        left = (proj @ (small - (Ps[:, :take_s] * Ss[:take_s]) @ Qs[:take_s]).T) @ basis.T
        if take_c < room:
            left = left + c * (X - proj @ basis.T)
        with np.errstate(all="ignore"):
            return float(np.max(np.abs(left).max(axis=1) / den)), miss
    A = M + sum((np.outer(v, u) for v, u in extra), np.zeros_like(M))
    P, S, Qt = np.linalg.svd(A)
    miss = kappa * float(np.sum(S[:r] * np.abs(P[:, :r]).max(axis=0) * np.abs(Qt[:r]).sum(axis=1)))
    with np.errstate(all="ignore"):
        rest = 0.0 if r >= d else float(np.max(np.abs(X @ ((P[:, r:] * S[r:]) @ Qt[r:]).T).max(axis=1) / den))
    return rest, miss


def _near(R: np.ndarray, W: np.ndarray, k: int | None) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Pairs (a, b), a < b, of rows of R with cos ≥ 1 − 10⁻³ and with cos ≤ −1 + 10⁻³: the 128 whose merge looks
    cheapest to first order — |r_b/λ ∓ r_a|₁ times the larger |w|∞ (λ = |r_b|/|r_a| where σ is homogeneous of degree
    k, else 1) — and for antipodal pairs also the 128 whose joint output looks nearest a linear map (that plus
    min |w_a ± λ^k w_b|∞·|r_a|₁); not the most nearly parallel. Cosines by blocks of 256 rows (none past n²·d = 2³⁵,
    or with a zero row)."""
    n, m = R.shape
    nrm = np.sqrt(np.sum(R * R, axis=1))
    if not (np.all(nrm > 0) and np.all(np.isfinite(R))) or float(n) * n * m > 2.0**35:
        return [], []
    unit = R / nrm[:, None]
    got = []
    for sign in (1.0, -1.0):
        ia_l, ib_l, cs_l = [], [], []
        for lo in range(0, n, 256):
            cos = sign * (unit[lo:lo + 256] @ unit.T)
            ra, rb = np.nonzero(cos >= 1 - 1e-3)
            up = rb > ra + lo
            ia_l.append(ra[up] + lo)
            ib_l.append(rb[up])
            cs_l.append(cos[ra[up], rb[up]])
        ia, ib, cs = np.concatenate(ia_l), np.concatenate(ib_l), np.concatenate(cs_l)
        first = np.argsort(-cs, kind="stable")[: max(128, (1 << 22) // m)]
        ia, ib = ia[first], ib[first]
        lam = nrm[ib] / nrm[ia] if k else np.ones(len(ia))
        wa, wb = W[:, ia].T, W[:, ib].T * ((lam**k)[:, None] if k else 1.0)
        cost = np.nan_to_num(np.abs(R[ib] / lam[:, None] - sign * R[ia]).sum(axis=1)
                             * np.maximum(np.abs(wa).max(axis=1), np.abs(wb).max(axis=1)), nan=np.inf)
        best = list(np.argsort(cost, kind="stable")[:128])
        if sign < 0:
            lin = cost + np.minimum(np.abs(wa + wb).max(axis=1), np.abs(wa - wb).max(axis=1)) * np.abs(R[ia]).sum(axis=1)
            best += [t for t in np.argsort(np.nan_to_num(lin, nan=np.inf), kind="stable")[:128] if t not in set(best)]
        got.append([(int(ia[t]), int(ib[t])) for t in best])
    return got[0], got[1]


def _worst_directions(R: np.ndarray, near: tuple[list[tuple[int, int]], list[tuple[int, int]]], k: int | None) -> np.ndarray:
    """For the first 16 pairs of each kind: ±sign(r_b/λ ∓ r_a) — where that difference shows most at |x|∞ = 1 — and
    the same with its part along r_a removed (on unit a's hyperplane), directions a random sample rarely meets."""
    out: list[np.ndarray] = []
    for sign, pairs in ((1.0, near[0][:16]), (-1.0, near[1][:16])):
        for a, b in pairs:
            if not (R[a] @ R[a] > 0 and R[b] @ R[b] > 0):  # (a zero row has no line)
                continue
            lam = float(np.sqrt(R[b] @ R[b] / (R[a] @ R[a]))) if k else 1.0
            s = np.sign(R[b] / lam - sign * R[a])
            flat = s - float(s @ R[a]) / float(R[a] @ R[a]) * R[a]
            out += ([s, -s] if np.any(s) else []) + ([flat, -flat] if np.all(np.isfinite(flat)) and np.any(flat) else [])
    return np.array(out, dtype=np.float64).reshape(-1, R.shape[1])


def _take(cand: list[tuple[float, tuple[int, ...], tuple[int, ...], Any]], left: float,
          profile: dict[int, np.ndarray]) -> tuple[set[int], list[Any], float, list[tuple[int, int]]]:
    """Units freed, cheapest first, while the errors fit in ``left`` (each unit once, none onto a freed unit), the
    linear maps the chosen pairs hand to the freed slots, the errors' sum, and (freed, kept) for each plain merge.
    While every one taken has its error at each sample (``profile``) they are added sample by sample."""
    gone: set[int] = set()
    maps: list[Any] = []
    joined: list[tuple[int, int]] = []
    used, acc = 0.0, np.zeros(0)
    both = True
    for t in sorted(cand, key=lambda t: t[0]):
        e, frees, keeps, lin = t
        p = profile.get(id(t)) if both else None
        now = float(np.max(acc + p)) if p is not None and len(acc) else (float(np.max(p)) if p is not None else used + e)
        if now > left:
            if p is None:
                break
            continue
        if not gone & {*frees, *keeps}:
            acc, both = (acc + p if len(acc) else p.copy(), True) if p is not None else (acc, False)
            used = now
            gone.update(frees)
            maps += [] if lin is None else [lin]
            joined += [(frees[0], keeps[0])] if keeps and lin is None else []
    return gone, maps, used, joined


def _unit_rows(P: np.ndarray) -> np.ndarray:
    """P's rows (none zero) scaled to unit length, each divided by its largest entry first (no overflow at 10³⁰⁸)."""
    unit = P / np.max(np.abs(P), axis=1)[:, None]
    return unit / np.sqrt(np.sum(unit * unit, axis=1))[:, None]


def _tau_pairs(P: np.ndarray, tol: float, amps: list[np.ndarray], most: list[int]) -> list[list[tuple[int, int, float]]]:
    """For each amplitude vector (a unit's cost per radian of turning its row, read far out; inf leaves it out): the
    pairs (a, b, cos), a < b, of rows of P that the exact arguments count as non-collinear (|cos| < 1 − 10⁻¹⁰) with
    sin θ times the smaller amplitude at most 2τ, the ``most`` least — one pass of cosines by blocks of 256 rows
    (rows scaled by their largest entry first; none with a zero row; past n²·d = 2³⁵ by projections,
    :func:`absorb.verify._far_pairs.far_pairs`)."""
    n, d = P.shape
    big = np.max(np.abs(P), axis=1) if n else np.zeros(0)
    if not (np.all(big > 0) and np.all(np.isfinite(P))) or any(np.any(np.isnan(a)) for a in amps):
        return [[] for _ in amps]
    unit = _unit_rows(P)
    if float(n) * n * d > 2.0**35:
        from absorb.verify._far_pairs import far_pairs

        return [far_pairs(unit, amp, tol, m) for amp, m in zip(amps, most)]
    found: list[list[tuple[int, int, float, float]]] = [[] for _ in amps]
    for lo in range(0, n, 256):
        cos = np.clip(unit[lo:lo + 256] @ unit.T, -1.0, 1.0)
        sin = np.sqrt(np.maximum(0.0, 1.0 - cos**2))
        ok0 = (np.abs(cos) < 1 - 1e-10) & (np.arange(n)[None, :] > np.arange(lo, lo + cos.shape[0])[:, None])
        for amp, m, out in zip(amps, most, found):
            with np.errstate(invalid="ignore"):
                val = sin * np.minimum(amp[lo:lo + 256, None], amp[None, :])
            ra, rb = np.nonzero(ok0 & (val <= 2 * tol) & np.isfinite(val))
            if len(ra) > m:
                pick = np.argpartition(val[ra, rb], m)[:m]
                ra, rb = ra[pick], rb[pick]
            out += [(int(x) + lo, int(y), float(val[x, y]), float(cos[x, y])) for x, y in zip(ra, rb)]
    return [[(a, b, c) for a, b, _, c in sorted(out, key=lambda t: t[2])[:m]] for out, m in zip(found, most)]


_EXP: dict[str, bool] = {}


def _exponential(act: Any) -> bool:
    """σ = A·e^{βz} + C, proved here (:func:`absorb.verify._beyond.exponential_constants`), once per σ."""
    import sympy as sp

    key = sp.srepr(act.expr)
    if key not in _EXP:
        from absorb.verify._beyond import exponential_constants

        _EXP[key] = exponential_constants(act.expr) is not None
    return _EXP[key]


def _collinear_within(block: Any, R: np.ndarray, got: list[tuple[int, int, float]], top: np.ndarray, X: np.ndarray,
                      den: np.ndarray, ts: list[float], tol: float, f0: float, linear: Any) -> str | None:
    """Whether two units that are not negligible (share > τ) and that the exact arguments count as non-collinear
    (|cos| < 1 − 10⁻¹⁰ between their rows, biases left out) come within τ of collinear: for the pairs ``got``
    (:func:`_tau_pairs`), unit b's row replaced by its projection on unit a's line (bias kept), the change sampled
    here — at this checker's inputs and along the first 16 pairs' sign vectors of the change (and those on a's
    hyperplane). Only where residual-free units can realise a linear map
    (``linear()``, asked once a pair is found): else the exact argument is a limit that no near block escapes."""
    d, n = block.d, block.n
    P = R[:, :d]
    if not got or not linear():
        return None
    unit = _unit_rows(P)
    Ub = np.asarray(block.W_up, dtype=np.float64)
    bu = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    moves = [(a, b, cs) for i, j, cs in got for a, b in ((i, j), (j, i))]
    extra = []
    for a, b, _ in moves[:32]:
        s = np.sign((P[b] @ unit[a]) * unit[a] - P[b])
        t = s - (s @ unit[a]) * unit[a]
        extra += [s, -s, t, -t]
    Y = np.concatenate([v * np.array(extra) for v in ts])
    dy = np.max(np.abs(block(Y)), axis=1) + np.max(np.abs(Y), axis=1) + f0
    keep = np.isfinite(dy) & (dy > 0)
    X, den = np.vstack([X, Y[keep]]), np.concatenate([den, dy[keep]])
    for a, b, cs in moves:
        onto = (P[b] @ unit[a]) * unit[a]
        change = np.abs(block.activation(X @ onto + R[b, d]) - block.activation(X @ P[b] + R[b, d]))
        if block.W_gate is not None:
            change = change * np.abs(X @ Ub[b] + bu[b])
        worst = float(np.max(change * top[b] / den))
        if worst <= tol * (1 - 1e-3):
            return (f"units {a} and {b} are nearly collinear (cos {cs:.6f}, rows without biases): unit {b}'s row "
                    f"projected on unit {a}'s line changes f by {worst:.2e} of its scale at this checker's inputs, within "
                    "the tolerance, where the exact argument needs non-collinear rows: the exact not_absorbable may "
                    "contradict the tolerance")
    return None


def _after_flips(M: np.ndarray, extra: list[Any], r: int, U: np.ndarray, W: np.ndarray, c: float, stay: list[int],
                 joined: list[tuple[int, int]], X: np.ndarray, den: np.ndarray) -> float:
    """min over sets S of the units in ``stay`` of what r rank-one parts leave of A_S = M + Σ v uᵀ (``extra``) +
    c·Σ_{i∈S} (w_i u_iᵀ + the units merged into i), sampled (:func:`_leftover`) for the three S whose (r+1)-th singular
    value is least. The units are split in two halves, each half's sums walked in Gray-code order (one rank-one term
    added or taken away per step); every sum of the second half is added to all of the first's at once."""
    terms = {i: np.outer(W[:, i], U[i]) for i in stay}
    for j, i in joined:
        if i in terms:
            terms[i] = terms[i] + np.outer(W[:, j], U[j])

    def walk(units: list[int], start: np.ndarray) -> np.ndarray:
        A, mats, on = start.copy(), [start.copy()], [False] * len(units)
        for step in range(1, 1 << len(units)):
            bit = (step & -step).bit_length() - 1  # (Gray code: the lowest set bit of step flips)
            A = A - c * terms[units[bit]] if on[bit] else A + c * terms[units[bit]]
            on[bit] = not on[bit]
            mats.append(A.copy())
        return np.array(mats)

    half = len(stay) // 2
    low = walk(stay[:half], M + sum((np.outer(v, u) for v, u in extra), np.zeros_like(M)))
    high = walk(stay[half:], np.zeros_like(M))
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return math.inf
    best: list[tuple[float, np.ndarray]] = []
    for h in high:
        stack = low + h
        nxt = np.linalg.svd(stack, compute_uv=False)[:, r]
        best = sorted(best + [(float(nxt[t]), stack[t]) for t in np.argsort(nxt)[:3]], key=lambda t: t[0])[:3]
    return min(_leftover(A, [], r, 0.0, X, den)[0] for _, A in best)


def _pair_defect(block: Any, biases: bool, f0: bool) -> float | None:
    """κ/|c| for this checker's antipodal pairs of σ: 0 where σ(z) − σ(−z) = c·z (or, with biases, a shifted flip) is
    proved here (:func:`absorb.verify._shift._flip_or_shift`); 0 where f(0) ≠ 0 (``f0``) and σ has distinct slopes at
    ±∞ (a pair scaled by t leaves (w/t)·δ(t u·x), δ(y) = o(|y|): within τ|f(0)| for t large); else c = L₊ − L₋ from
    σ's slopes and κ ≥ sup |σ(z) − σ(−z) − c·z|/|z| (:func:`absorb.verify._tolerance._defect`); None otherwise."""
    from fractions import Fraction

    from absorb.model.activations import is_builtin
    from absorb.verify._shift import _ends, _flip_or_shift
    from absorb.verify._tolerance import _defect, _lipschitz

    act = block.activation
    f_zero = all(getattr(block, k) is None for k in ("b_up", "b_down"))
    if _flip_or_shift(act, biases or not f_zero, f_zero)[0]:
        return 0.0
    if _exponential(act):  # (σ = A·e^{βz} + C: (σ(εz) − σ(−εz))/(2Aβε) = z + O(ε²z³),
        return 0.0  # which f's exponential growth hides: read as realised, as this only withholds)
    ends = _ends(act)
    if ends is None or abs(ends[0] - ends[1]) < 1e-9:
        return None
    if f0:
        return 0.0
    c = float(Fraction(ends[0] - ends[1]).limit_denominator(1000))
    if is_builtin(act):  # (a built-in σ with no flip identity — ELU, tanh — has no nearly linear pair)
        return None
    kappa = _defect(act, c, _lipschitz(block) is None) if c else None  # (exact at the break points of a piecewise-linear σ)
    return kappa / abs(c) if kappa is not None else None
