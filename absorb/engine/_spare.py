"""Units f can spare: the sampled screen that withholds a not_absorbable where f's near-degenerate units leave room for
its skip (:func:`_spare_units`, called last by :func:`absorb.engine.tolerance.within_tolerance`).

A residual-free g may keep f's units but for a few it frees — a negligible unit, one merged into a nearly collinear
one, a nearly opposite pair that is nearly a linear map, a unit flipped onto an opposite one's line, gated units under
one gate — and spend the freed slots on the skip (antipodal pairs, or units that are affine). Each construction is
tried by sample, not proved: what it finds only ever withholds a verdict. The checker re-derives the question its own
way (``absorb.verify._sampled.spare_units``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from absorb.engine._near_pairs import _NEAR_MAX, _amplitudes, _moved_onto_line, _near_collinear, _row_norms
from absorb.engine._nearly_affine import _EPS, _affine_units, _argument_rounding, _Cand, _gated_affine, _value_rounding
from absorb.engine._sigma_samples import _at_zero, _flip_defect
from absorb.model.activations import Activation, is_builtin
from absorb.model.block import Block
from absorb.symbolic import facts
from absorb.symbolic._core import get as _analysis  # the property functions' cache, without importing sympy

_PAIRS_MAX = 64
"""Close pairs tried per block and kind, the cheapest first by :func:`_close_pairs`'s estimate."""
_SPARE_MAX = 1 << 22
"""n·d above this: no spare-unit screen (its samples evaluate every unit; merges compare every pair)."""


def _spare_units(blk: Block, tol: float, seed: int, one_per_rank: bool, biases: bool = False,
                 width: int | None = None) -> str | None:
    """Units f can spare, by sample: a unit whose own output stays small against |f(x)|∞ + |x|∞ + |f(0)|∞ at every
    sampled x (a negligible unit); for the close pairs of :func:`_close_pairs` (up rows with their biases, or gate rows
    of a gated block): a unit j moved onto unit i's line (u_j → λu_i, c_j → λc_i for σ homogeneous of degree k,
    merging into w_i + λ^k w_j; u_j → u_i otherwise), a pair that nearly cancels, gated units merged under one gate
    (:func:`_gated_merges`), a nearly antipodal pair whose joint output is nearly a map x ↦ v(u_i·x) + β, and an ungated
    unit flipped onto an antipodal one's line and merged (σ(−z) = σ(z) − c·z; :func:`_antipodal_pairs`) — the maps
    joining the skip. The samples are random directions and each close pair's worst ones (:func:`_pair_directions`).
    Each freed slot can realise part of the skip: an antipodal pair w·σ(b·x) − w·σ(−b·x) = w·c·b·x a rank-one part
    (within the flip defect's share, :func:`_pair_defect`), and (``one_per_rank``; a gated unit with a linear value
    branch whose gate sees a constant c with g(c) ≠ 0: ``biases``, or g(0) ≠ 0) one unit; a gated unit whose gate is
    nearly constant is nearly that affine unit, its map joining the skip. The cheapest candidates first within τ (a
    construction within τ is a g within τ; a sampled error reads low, which errs towards unknown): where their errors,
    the skip's parts the freed slots do not realise (:func:`_beyond_rank`) and the pairs' defect add up to less than
    τ, or where a flip of the units that stay leaves no more of the skip than the freed slots realise
    (:func:`_flipped_rest`; withheld unsearched where σ has no flip identity or many units stay), the verdict is
    withheld. Before all that, two units that are not negligible but nearly collinear for the tolerance
    (:mod:`absorb.engine._near_pairs`) withhold it: f is then within τ of a block whose rows are
    collinear, which the exact arguments do not cover. Sampled, not proved: this errs towards unknown; it never claims
    absorbable.

    ``width`` below n (a narrower g asked for): only whether f is within τ of a block with fewer units — a nearly
    collinear pair, any two units, whose move onto one line is within τ (the exact width arguments count distinct
    lines), or a unit that is not dead but whose share is at most τ (a block with one active unit fewer)."""
    n, d = blk.n, blk.d
    large = n * d > _SPARE_MAX  # (past it only the nearly collinear pairs, by cosines or projections: the rest costs more)
    if large and width is not None:
        return None
    rng = np.random.default_rng(seed + 17)
    U = np.asarray(blk.W_up, dtype=np.float64)
    W = np.asarray(blk.W_down, dtype=np.float64)
    c = np.zeros(n) if blk.b_up is None else np.asarray(blk.b_up, dtype=np.float64)
    f0 = blk.f0_inf
    if not math.isfinite(f0):
        return None
    kappa = 0.0  # (κ/|c| with σ(z) − σ(−z) = c·z + δ(z), |δ(z)| ≤ κ|z|: what a pair's realisation misses)
    if blk.gated:
        # (a unit with gate row 0 is g(c)·h(u·x + b): affine where h is (h(z) = z here) and its gate sees a constant
        # c with g(c) ≠ 0 — biases allowed, or g(0) ≠ 0; else no gated unit is linear and freed slots realise nothing)
        if not blk.value_identity or not (width is not None or one_per_rank or biases or _at_zero(blk.activation) != 0.0):
            return None
        one_per_rank = True
        G = np.asarray(blk.W_gate, dtype=np.float64)
        cg = np.zeros(n) if blk.b_gate is None else np.asarray(blk.b_gate, dtype=np.float64)
        R = np.column_stack([G, cg])
    else:
        # (with biases one unit of σ = A·e^{βz} + C is e^{βεz}/(Aβε) = 1/(Aβε) + z + O(εz²): one unit per rank)
        one_per_rank = one_per_rank or (biases and _analysis(blk.activation, "exponential_form").proved)
        kappa = 0.0 if one_per_rank else math.nan  # (read where a unit is freed: a user's σ's defect costs a grid)
        R = np.column_stack([U, c])

    def degree() -> object:  # (σ's degree of homogeneity: read only where a pair is near — reading a fact parses it)
        hom = _analysis(blk.activation, "homogeneity")
        return facts.rational(hom.value, "k") if hom.proved else None  # (a rational k read without sympy)

    with np.errstate(all="ignore"):
        same, opposite = ([], []) if large else _close_pairs(R, W * (np.abs(U).sum(axis=1) if blk.gated else 1.0), degree)
        k = degree() if same or opposite else None
        # (random directions, and for the closest pairs the directions where their difference shows most: the sign
        # vector of the rows' difference, and its part on the first unit's hyperplane)
        dirs = np.vstack([rng.standard_normal((8 if large else 64, d)), _pair_directions(R[:, :d], same, opposite, k)])
        reach = _bias_reach(blk)  # (units that switch on only far out: sampled there too)
        scales = [1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6, 1e8] + ([max(f0, 1.0) ** 0.5, max(f0, 1.0)] if f0 > 0 else []) + reach
        X = np.vstack([dirs * t for t in scales])
        F = blk(X)
        den = np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1) + f0
        ok = np.isfinite(den) & (den > 0)  # (where f overflows — σ = e^z far out — nothing is read)
        if np.count_nonzero(ok) < len(dirs):
            return None
        X, den = X[ok], den[ok]
        wmax = np.max(np.abs(W), axis=0)  # |w_i|∞
        XU = X @ U.T
        Z = XU + c
        if blk.gated:
            XG = X @ G.T
            gates = blk.activation(XG + cg)
            H = gates * Z
        else:
            H = blk.activation(Z)
        part = np.abs(H) * wmax / den[:, None]  # (unit i's share at each sample)
        share = np.max(part, axis=0)  # unit i's sampled share
        profiles: dict[int, np.ndarray] = {}  # (a candidate's error at each sample, where it is known: summed jointly)
        amp = _amplitudes(G if blk.gated else U, U, wmax, X, den, blk.gated)  # (contiguous rows: R's are a strided view)
        # (pairs nearly collinear for the tolerance past the fixed cut — a negligible unit's among them — also go
        # through the constructions below: two units each within τ may cancel only jointly)
        # (one cosine pass for both uses: every unit, for the constructions; units not negligible, for the outright
        # withholding below)
        if width is not None:  # (a narrower g: units that merge or drop within τ, whatever the skip)
            alive = share[share > 0]  # (a dead unit is the exact argument's own: it counts it)
            if len(alive) and float(alive.min()) <= tol * (1 - 1e-3):
                i = int(np.flatnonzero(share == alive.min())[0])
                return (f"Unknown: unit {i}'s output is {share[i]:.2e} of f's scale at the sampled inputs, within the "
                        "tolerance: f is within it of a block with one active unit fewer, which the exact width argument "
                        "does not cover.")
            live = np.where(share > 0, amp, np.inf)  # (a dead unit moved anywhere changes nothing the argument reads)
            return _moved_onto_line(blk, _near_collinear(R[:, :d], [live], tol, [_NEAR_MAX])[0], R, wmax, X, den, scales,
                                    tol, f0)
        every, sizable = _near_collinear(R[:, :d], [amp, np.where(share > tol, amp, np.inf)], tol, [64, _NEAR_MAX])
        if large:
            pairing = blk.gated or one_per_rank or _pair_defect(blk.activation, biases, blk.has_bias, f0 > 0) is not None
            # (negligible units too: without the pair directions a unit's share reads low, and one pair moved within τ
            # is a block the exact argument does not cover)
            return _moved_onto_line(blk, every, R, wmax, X, den, [1.0, 1e4, 1e8], tol, f0, worst=4) \
                if every and pairing else None  # (each extra input costs a pass over a large f: few)
        had = set(same) | set(opposite)
        more = [(i, j) for i, j, cs in every if (i, j) not in had]
        if more and k is None:
            k = degree()
        same, opposite = same + [(i, j) for i, j in more if R[i, :d] @ R[j, :d] > 0], \
            opposite + [(i, j) for i, j in more if R[i, :d] @ R[j, :d] < 0]
        if blk.gated:
            moves = _gated_merges(same, R, W, gates, Z, den, k)
            # (a unit whose gate is nearly its constant g(c) over the inputs where it shows: nearly the affine unit
            # g(c)·w(u·x + b), which frees its slot and hands that map to the skip — its constant to the output bias)
            g0 = blk.activation(cg)
            off = np.max(np.abs(gates - g0) * np.abs(Z) * wmax / den[:, None], axis=0)
            moves += [(float(off[i]), f"unit {i} nearly affine (error {off[i]:.2e})", (i,), (), (g0[i] * W[:, i], U[i]))
                      for i in range(n) if math.isfinite(off[i]) and (biases or c[i] == 0.0)]
            moves += _gated_affine(XU, XG, H, W, U, G, wmax, den, biases)
        else:
            moves = _merge_errors(same, U, W, H, wmax, den, k)
            # (a unit nearly affine where f shows it — a large bias's tangent; bias-free, a nearly linear σ's small kink or
            # a tiny row of exp or softplus² —: its map joins the skip; its constant joins the output bias where biases are
            # allowed, else stays in its slot by a zero row (w·σ(0)), or is 0 where σ(0) = 0)
            e = _argument_rounding(np.abs(X), U, c)  # (each pre-activation's rounding: read where a bias
            e[:, np.abs(c) < 1e3 * _row_norms(U)] = 0.0  # dominates its row — elsewhere it is σ's own, ε·|h|)
            h = np.maximum(np.abs(c), 1.0) * 2.0**-20  # (σ's slope at the bias by a central difference)
            slope = (blk.activation(c + h) - blk.activation(c - h)) / (2 * h)
            s0 = None if biases else _at_zero(blk.activation)
            moves += _affine_units(XU, H, W, U, wmax, den, _EPS * np.abs(H) + _value_rounding(blk.activation, Z, e)
                                   + 2 * _own_rounding(blk.activation, Z, H), profiles,
                                   (blk.activation(c) if biases else np.full(n, s0), slope), through_zero=s0 == 0.0)
        moves += _antipodal_pairs(opposite, X, U, W, H, wmax, den, biases, not blk.gated)
    shares = [float(v) for v in share if math.isfinite(v)]
    if len(shares) != n:
        return None
    if sizable and (blk.gated or one_per_rank or _pair_defect(blk.activation, biases, blk.has_bias, f0 > 0) is not None):
        with np.errstate(all="ignore"):
            why = _moved_onto_line(blk, sizable, R, wmax, X, den, scales, tol, f0)
        if why is not None:
            return why
    tiny = [(v, f"unit {i} (share {v:.2e})", (i,), (), None) for i, v in enumerate(shares)]
    profiles.update({id(t): part[:, i] for i, t in enumerate(tiny)})
    M = np.asarray(blk.M, dtype=np.float64)
    how = "one unit each (f grows quadratically, or a gated unit whose gate is constant is affine)" if one_per_rank \
        else "an antipodal pair each"
    # (a near-cancelling pair frees both units jointly, where merging one into the other first would free one; an
    # antipodal pair's map joins the skip, which may raise its rank: each choice of candidates is tried, the skip's
    # parts past what the freed slots realise counted against what is left)
    seen: dict[tuple[tuple[int, ...], int], tuple[float, float]] = {}
    flips = {id(m) for m in moves if m[3] and m[4] is not None}  # (a flipped merge: which of the two units stays matters)
    inside = _in_skip_range(M, [m for m in moves if m[4] is not None])  # (maps that add no rank to a low-rank skip)
    for cands in (tiny + moves, tiny + [m for m in moves if not m[3]], tiny + [m for m in moves if m[4] is None],
                  tiny + [m for m in moves if id(m) not in flips or m[3][0] < m[2][0]],
                  tiny + [m for m in moves if id(m) not in flips or m[3][0] > m[2][0]],
                  tiny + [m for m in moves if m[4] is None or id(m) in inside]):
        for budget in (tol,):  # (the whole tolerance: a construction within it is a g within it — a sampled error reads
            # low, which errs towards unknown)
            freed, maps, spent, gone, into = _greedy(cands, budget, profiles)
            if not freed:
                continue
            if math.isnan(kappa):  # (inf: no pair of σ's units is nearly linear — freed slots realise no part of the skip)
                got = _pair_defect(blk.activation, biases, blk.has_bias, f0 > 0)
                kappa = math.inf if got is None else got
            if not maps and not math.isfinite(kappa):
                continue
            rank = len(freed) if one_per_rank else len(freed) // 2 if math.isfinite(kappa) else 0
            key = (tuple(sorted(id(m) for m in maps)), rank)  # (the choices often agree: one SVD of a d × d map each)
            if key not in seen:
                with np.errstate(all="ignore"):
                    seen[key] = _beyond_rank(M, maps, rank, X, den)
            drop, kept = seen[key]
            named = list(dict.fromkeys(freed))  # (a pair frees two slots: named once)
            spare = (f"Unknown: f can spare {len(freed)} unit(s) within the tolerance ({', '.join(named[:4])}"
                     f"{', …' if len(named) > 4 else ''}; sampled), and the freed slots can realise ")
            if spent + drop + (kappa * kept if rank else 0.0) <= tol * (1 - 1e-3):
                return (f"{spare}the skip's {min(rank, d)} largest rank-one part(s), {how}, the rest within {drop:.2e} "
                        "of f's scale; the exact argument rules out an exact residual-free block only.")
            if (1 <= rank or maps) and rank < d and len(gone) < n:  # (rank 0: the maps that joined the skip, flips cancelling)
                # (f's other units may be flipped so that what is left of the skip has rank ≤ rank: every set of the
                # units that stay is tried where σ(z) = σ(−z) + c·z (a gate: g(z) + g(−z) = c) and they are few; else —
                # a ReLU-like gate's flip, a degree-2 one, a flip within a defect, many units — it is withheld)
                stay = sorted(set(range(n)) - gone)
                c = _flip_constant(blk.activation, biases, blk.gated) if blk.gated or (not one_per_rank and kappa == 0.0) else None
                if c is None and not rank and not blk.gated and _flip_constant(blk.activation, biases) is None:
                    continue  # (σ has no flip: nothing cancels the maps but the slots, which realise nothing here)
                if c is None or len(stay) > _FLIP_SEARCH or (1 << len(stay)) * d**3 > 1 << 30:
                    return (f"{spare}any rank-{rank} linear map, {how}; a flip of f's other units may leave no more of the "
                            "skip than that, which no search here rules out; the exact argument rules out an exact "
                            "residual-free block only.")
                with np.errstate(all="ignore"):
                    drop, S = _flipped_rest(M, maps, rank, U, W, c, stay, into, X, den)
                if spent + drop <= tol * (1 - 1e-3):
                    return (f"{spare}the rank-{rank} part of the skip that a flip of units {S} (σ(z) = σ(−z) + {c:g}·z) "
                            f"leaves, {how}, the rest within {drop:.2e} of f's scale; the exact argument rules out an "
                            "exact residual-free block only.")
    return None


def _own_rounding(act: Activation, Z: np.ndarray, H: np.ndarray) -> np.ndarray:
    """An estimate of σ's own float64 rounding at Z (H = σ(Z)): |σ(Z) in extended precision − H| — a user's σ = eˣ − 1
    at a tiny argument cancels to a few digits, which a unit's misfit must not count (0 where σ has no extended
    evaluation)."""
    try:
        with np.errstate(all="ignore"):
            wide = np.asarray(act(Z.astype(np.longdouble)))
        if wide.dtype != np.longdouble or wide.shape != H.shape:
            return np.zeros_like(H)
        out = np.abs(wide - H).astype(np.float64)
    except (TypeError, ValueError, AttributeError):
        return np.zeros_like(H)
    return np.where(np.isfinite(out), out, 0.0)


def _flip_constant(act: Activation, biases: bool, gated: bool = False) -> float | None:
    """c where σ(z) − σ(−z) = c·z is proved (or, with biases, σ(z) − σ(−z − 2s) = c·(z + s): a flip's constants join
    the output bias); for a gate, c where g(z) + g(−z) = c (a unit g(G_i x)(u_i·x + β_i) flipped moves c·w_i u_iᵀ into
    the skip, c·w_i β_i into the output bias); None otherwise."""
    for name in (("flip_identity[gated]",) if gated else ("flip_identity[ungated]",) + (("shifted_flip",) if biases else ())):
        pr = _analysis(act, name)
        c = facts.rational(pr.value, "c") if pr.proved else None
        if c:
            return float(c)
    return None


def _in_skip_range(M: np.ndarray, cands: list[_Cand]) -> set[int]:
    """ids of the candidates whose map v uᵀ adds no rank to M (to a relative 10⁻²): v in M's column space or u in its
    row space — cheaper candidates whose maps would each cost the skip a rank-one part must not crowd them out of the
    greedy choice. M's spaces from its diagonal, or its SVD (d ≤ 1024; none past it)."""
    if not cands or not np.all(np.isfinite(M)):
        return set()
    d = M.shape[0]
    diag = np.diagonal(M)
    if not np.any(M - np.diag(diag)):
        off = diag == 0
        col = row = None
    elif d <= 1024:
        P, S, Qt = np.linalg.svd(M)
        r = int(np.sum(S > S[0] * 1e-9)) if S.size and S[0] > 0 else 0
        col, row, off = P[:, :r], Qt[:r].T, None
    else:
        return set()
    out = set()
    for m in cands:
        v, u = m[4]  # type: ignore[misc]
        for x, basis in ((v, col), (u, row)):
            rest = x * off if off is not None else x - basis @ (basis.T @ x)  # type: ignore[union-attr]
            if float(np.linalg.norm(rest)) <= 1e-2 * float(np.linalg.norm(x)):
                out.add(id(m))
    return out


def _beyond_rank(M: np.ndarray, maps: list[tuple[np.ndarray, np.ndarray]], rank: int, X: np.ndarray,
                 den: np.ndarray) -> tuple[float, float]:
    """For A = M + Σ v uᵀ over ``maps``: (max over the sampled x of |A_r x|∞/den(x), A_r the part of A past its
    ``rank`` largest singular triples — what slots that realise those leave of x ↦ A x; Σ s|p|∞|q|₁ over those triples
    (s, p, q), which a pair's defect scales); inf where A is not finite. No d × d SVD where M is diagonal and no map
    joins it (its triples are (|m_i|, ±e_i, e_i)), nor where M = c·I (the identity skip) with maps: A = c·I on the
    complement of the maps' span Q, and Qᵀ A Q is small."""
    d = M.shape[0]
    if not (np.all(np.isfinite(M)) and all(np.all(np.isfinite(v)) and np.all(np.isfinite(u)) for v, u in maps)):
        return math.inf, math.inf
    a = np.diagonal(M)
    diagonal = not np.any(M - np.diag(a))
    if diagonal and not maps:
        top = np.argsort(-np.abs(a), kind="stable")
        kept = float(np.sum(np.abs(a[top[:rank]])))
        rest = np.zeros_like(a)
        rest[top[rank:]] = a[top[rank:]]
        out = float(np.max(np.max(np.abs(X * rest), axis=1) / den)) if rank < d else 0.0
        return (out if math.isfinite(out) else math.inf), kept
    if diagonal and np.all(a == a[0]) and 2 * len(maps) < d:
        c = float(a[0])
        V, Uu = np.column_stack([v for v, _ in maps]), np.column_stack([u for _, u in maps])
        Q = np.linalg.qr(np.column_stack([V, Uu]))[0]  # (d × q, q ≤ 2·len(maps))
        B = c * np.eye(Q.shape[1]) + (Q.T @ V) @ (Uu.T @ Q)
        Pb, Sb, Qbt = np.linalg.svd(B)
        q = Q.shape[1]
        mine = min(int(np.sum(Sb >= abs(c))), rank)  # (the r largest: B's above |c|, the complement's d − q of value |c|,
        other = min(rank - mine, d - q)  # then B's below)
        mine = min(rank - other, q)
        # (part of the complement only: counted whole, an over-estimate — what is left of it is |c| all the same)
        P, Qr = Q @ Pb[:, :mine], Q @ Qbt[:mine].T
        kept = float(np.sum(Sb[:mine] * np.max(np.abs(P), axis=0) * np.sum(np.abs(Qr), axis=0))) + other * abs(c) * math.sqrt(d)
        Y = X @ Q  # (A_r x = c(x − Q Qᵀx) [none of it where the complement is realised] + Q (B − B_mine) Qᵀ x)
        Bm = B - (Pb[:, :mine] * Sb[:mine]) @ Qbt[:mine]
        out = np.abs((Y @ Bm.T) @ Q.T + (0.0 if other == d - q else c * (X - Y @ Q.T)))
        out = float(np.max(np.max(out, axis=1) / den))
        return (out if math.isfinite(out) else math.inf), kept
    A = M + sum((np.outer(v, u) for v, u in maps), np.zeros_like(M))
    P, S, Qt = np.linalg.svd(A)
    kept = float(np.sum(S[:rank] * np.max(np.abs(P[:, :rank]), axis=0) * np.sum(np.abs(Qt[:rank]), axis=1)))
    if rank >= d:
        return 0.0, kept
    out = float(np.max(np.max(np.abs(X @ ((P[:, rank:] * S[rank:]) @ Qt[rank:]).T), axis=1) / den))
    return (out if math.isfinite(out) else math.inf), kept


def _pair_defect(act: Activation, biases: bool, biased: bool, f0: bool) -> float | None:
    """κ/|c| for antipodal pairs of σ that realise a linear map: 0 where σ(z) − σ(−z) = c·z is proved (or, with biases,
    σ(z) − σ(−z − 2s) = c·(z + s)); 0 too where f(0) ≠ 0 (``f0``) and σ has slopes L± at ±∞ with c = L₊ − L₋ ≠ 0 —
    the scaled pair (tu, w/(ct)), (−tu, −w/(ct)) gives w(u·x) + (w/(ct))·δ(t u·x) with δ(y) = σ(y) − σ(−y) − c·y =
    o(|y|), within τ(|x|∞ + |f(0)|∞) for t large; else κ ≥ sup |δ(z)|/|z| for a user's σ (:func:`_flip_defect`:
    exact for a piecewise-linear σ, else estimated); None where no pair is nearly linear."""
    if _flip_constant(act, False) is not None:
        return 0.0
    if _analysis(act, "exponential_form").proved:  # (σ = A·e^{βz} + C: the scaled pair (σ(εz) − σ(−εz))/(2Aβε) = z +
        return 0.0  # O(ε²z³), within τ where f grows like e^{|β||x|} — read as realised: this only withholds)
    sh = _analysis(act, "shifted_flip") if biases else None
    if sh is not None and sh.proved and (biased or facts.rational(sh.value, "s") is not None):
        return 0.0  # (an irrational s rounds in the pairs' biases: a constant, not within τ|f(0)| where f(0) = 0)
    sl = _analysis(act, "asymptotic_slopes")
    lp, lm = (facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else (None, None)
    if lp is None or lm is None or lp == lm:
        return None
    if f0:
        return 0.0
    kappa = None if is_builtin(act) else _flip_defect(act, lp - lm)
    return kappa / abs(float(lp - lm)) if kappa is not None else None


def _bias_reach(blk: Block) -> list[float]:
    """Scales where units with large biases switch on or off: 10 and 1000 times max_i |b_i|/‖u_i‖₂ (up and gate rows),
    where that is past the fixed scales; else none."""
    out = []
    for W, b in ((blk.W_up, blk.b_up), (blk.W_gate, blk.b_gate)):
        if W is None or b is None:
            continue
        with np.errstate(all="ignore"):
            bb = np.abs(np.asarray(b, dtype=np.float64))
            if float(np.max(bb / np.max(np.abs(W), axis=1))) <= 1e7:  # (‖u‖₂ ≥ |u|∞: no unit switches far out; no
                continue  # float64 copy of a large W read for its norms)
            r = float(np.max(bb / np.linalg.norm(np.asarray(W, dtype=np.float64), axis=1)))
        if math.isfinite(r) and r > 1e7:
            out += [10 * r, 1e3 * r]
    return out


def _greedy(cands: list[_Cand], budget: float, profiles: dict[int, np.ndarray] | None = None
            ) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray]], float, set[int], dict[int, int]]:
    """The cheapest first while their errors fit in ``budget``: what each frees (a unit once, never onto a freed one),
    the linear maps the chosen candidates hand to the freed slots, their errors' sum, the units freed, and those of
    them merged into one that stays (freed unit → the unit it joins). Where every chosen candidate's error is known
    at each sample (``profiles``), their sum is taken per sample, then its largest — the joint construction's error
    there, which two units whose misfits peak at different inputs do not double."""
    freed: list[str] = []
    maps: list[tuple[np.ndarray, np.ndarray]] = []
    gone: set[int] = set()
    into: dict[int, int] = {}
    spent = 0.0
    joint: np.ndarray | None = None if not profiles else 0.0  # type: ignore[assignment]
    for cand in sorted(cands, key=lambda t: t[0]):
        err, what, frees, keeps, lin = cand
        if err > budget:  # (sorted: none after it fits alone, nor jointly)
            break
        prof = None if joint is None or profiles is None else profiles.get(id(cand))
        total = float(np.max(joint + prof)) if prof is not None else spent + err
        if total > budget:
            if prof is None:
                break
            continue  # (a profiled candidate that does not fit jointly: a cheaper mix may still)
        if gone & {*frees, *keeps}:
            continue
        joint = joint + prof if prof is not None else None
        spent = total
        gone.update(frees)
        freed.extend([what] * len(frees))
        maps += [] if lin is None else [lin]
        into.update({j: keeps[0] for j in frees} if keeps and lin is None else {})
    return freed, maps, spent, gone, into


_FLIP_SEARCH = 20
"""Most units (left after the freed ones) whose flips :func:`_flipped_rest` enumerates (2²⁰ sets, and 2^k·d³ ≤ 2³⁰)."""


def _flipped_rest(M: np.ndarray, maps: list[tuple[np.ndarray, np.ndarray]], rank: int, U: np.ndarray, W: np.ndarray,
                  c: float, stay: list[int], into: dict[int, int], X: np.ndarray, den: np.ndarray) -> tuple[float, list[int]]:
    """The least sampled |A_r x|∞/den(x) over sets S of the units that stay (each with the units merged into it), A = M
    + Σ maps + c·Σ_{i∈S} w_i u_iᵀ — a flip of S (σ(z) = σ(−z) + c·z) moves c·w_i u_iᵀ into the skip — and A_r its part
    past the ``rank`` largest singular triples (what the freed slots leave); with the best S. Every S is tried (2^|stay|
    d × d spectra); the five nearest rank ``rank`` by their singular values are sampled."""
    T = np.stack([np.outer(W[:, i], U[i]) + sum((np.outer(W[:, j], U[j]) for j, i2 in into.items() if i2 == i),
                                                np.zeros_like(M)) for i in stay])
    A0 = M + sum((np.outer(v, u) for v, u in maps), np.zeros_like(M))
    k = len(stay)
    tails, codes = [], []
    for lo in range(0, 1 << k, 1 << 14):  # (2¹⁴ sets at a time: the five least tails of each chunk kept)
        code = np.arange(lo, min(lo + (1 << 14), 1 << k))
        bits = ((code[:, None] >> np.arange(k)[None, :]) & 1).astype(np.float64)
        with np.errstate(all="ignore"):
            A = A0[None] + c * np.einsum("sk,kij->sij", bits, T)
            if not np.all(np.isfinite(A)):
                return math.inf, []
            tail = np.sum(np.linalg.svd(A, compute_uv=False)[:, rank:], axis=1)
        keep = np.argsort(tail, kind="stable")[:5]
        tails += list(tail[keep])
        codes += list(code[keep])
    best, at = math.inf, []
    for t in np.argsort(tails, kind="stable")[:5]:
        S_ = [stay[i] for i in range(k) if int(codes[t]) >> i & 1]
        P, S, Qt = np.linalg.svd(A0 + c * sum((T[stay.index(i)] for i in S_), np.zeros_like(A0)))
        with np.errstate(all="ignore"):
            out = float(np.max(np.max(np.abs(X @ ((P[:, rank:] * S[rank:]) @ Qt[rank:]).T), axis=1) / den))
        if out < best:
            best, at = out, S_
    return best, at


_CLOSE = 1 - 1e-3
"""|cos| of two rows at least this: a pair the screen tries (the closest :data:`_PAIRS_MAX` by :func:`_close_pairs`)."""


def _close_pairs(R: np.ndarray, W: np.ndarray, degree: Callable[[], object]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Pairs i < j of rows of R (up or gate rows, with their bias) with cos ≥ :data:`_CLOSE` (nearly collinear) and
    cos ≤ −:data:`_CLOSE` (nearly antipodal): the :data:`_PAIRS_MAX` whose merge is nearest by a first-order estimate
    — |w|∞·|r̂_j ∓ r_i|₁, with unit j rescaled to unit i's row length (r̂_j = r_j/λ, ŵ_j = λ^k w_j) where σ is
    homogeneous of degree k (``degree()``, asked only where a pair is near) — and for antipodal pairs also the
    :data:`_PAIRS_MAX` whose joint output is nearest a linear map (that estimate plus |w_i ± ŵ_j|∞·|r_i|₁): not the
    most nearly parallel, so that many near pairs that do not merge do not hide one that does. The cosines are formed
    in blocks of rows (none past n²·d = 2³⁵, or with a zero row)."""
    n, m = R.shape
    norms = np.linalg.norm(R, axis=1)
    if float(n) * n * m > 2.0**35 or np.any(norms == 0) or not np.all(np.isfinite(R)):
        return [], []
    Rn = R / norms[:, None]
    found: dict[float, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {1.0: [], -1.0: []}
    for lo in range(0, n, 512):  # (blocks of 512 rows against all: no n × n matrix for a wide layer)
        C = Rn[lo:lo + 512] @ Rn.T
        C[np.arange(C.shape[0])[:, None] >= np.arange(n)[None, :] - lo] = 0.0  # (pairs i < j only)
        for sign in (1.0, -1.0):
            ii, jj = np.nonzero(sign * C >= _CLOSE)
            found[sign].append((ii + lo, jj, sign * C[ii, jj]))
    if not any(len(p[0]) for v in found.values() for p in v):
        return [], []
    k = degree()
    out = []
    for sign in (1.0, -1.0):
        a, b, cos = (np.concatenate([p[t] for p in found[sign]]) for t in range(3))
        keep = np.argsort(-cos, kind="stable")[: max(_PAIRS_MAX, (1 << 22) // max(m, 1))]
        a, b = a[keep], b[keep]
        lam = norms[b] / norms[a] if k is not None else np.ones(len(a))
        wb = W[:, b].T * (lam ** float(k))[:, None] if k is not None else W[:, b].T
        wa = W[:, a].T
        gap = np.abs(R[b] / lam[:, None] - sign * R[a]).sum(axis=1) * np.maximum(np.abs(wa).max(axis=1), np.abs(wb).max(axis=1))
        gap = np.where(np.isfinite(gap), gap, np.inf)
        picks = list(np.argsort(gap, kind="stable")[:_PAIRS_MAX])
        if sign < 0:  # (an opposite pair also as a linear map: its down columns' mismatch counts)
            lone = np.minimum(np.abs(wa + wb).max(axis=1), np.abs(wa - wb).max(axis=1)) * np.abs(R[a]).sum(axis=1)
            picks += [t for t in np.argsort(np.where(np.isfinite(lone), gap + lone, np.inf), kind="stable")[:_PAIRS_MAX] if t not in picks]
        out.append([(int(a[t]), int(b[t])) for t in picks])
    return out[0], out[1]


def _pair_directions(R: np.ndarray, same: list[tuple[int, int]], opposite: list[tuple[int, int]], k: object) -> np.ndarray:
    """For the 16 closest pairs of each kind: ±s and ±(s with its part along r_i removed), s the sign vector of
    r̂_j ∓ r_i (rows rescaled as in :func:`_close_pairs`) — where |(r̂_j ∓ r_i)·x| is largest for |x|∞ = 1, and on unit
    i's hyperplane, where a random direction rarely looks."""
    out = []
    for sign, pairs in ((1.0, same[:16]), (-1.0, opposite[:16])):
        for i, j in pairs:
            ri, rj = R[i], R[j]
            if not (ri @ ri > 0 and rj @ rj > 0):  # (a zero row: no line, no direction)
                continue
            lam = float(np.linalg.norm(rj) / np.linalg.norm(ri)) if k is not None else 1.0
            sv = np.sign(rj / lam - sign * ri)
            if not np.any(sv):
                continue
            on = sv - float(sv @ ri) / float(ri @ ri) * ri
            out += [sv, -sv] + ([on, -on] if np.all(np.isfinite(on)) and np.any(on) else [])
    return np.array(out, dtype=np.float64).reshape(-1, R.shape[1])


def _merge_errors(pairs: list[tuple[int, int]], U: np.ndarray, W: np.ndarray, H: np.ndarray, wmax: np.ndarray,
                  den: np.ndarray, k: object) -> list[_Cand]:
    """Candidates (:data:`_Cand`) for nearly collinear pairs (:func:`_close_pairs`): unit b moved onto unit a's line
    (frees b, keeps a), and the pair's joint output (frees both: two units that nearly cancel). ``H``: σ at the
    sampled pre-activations, one column per unit."""
    out: list[_Cand] = []
    for i, j in pairs:
        for a, b in ((i, j), (j, i)):  # (move b onto a's line: σ(λ(u_a·x + c_a)) = λ^k σ(u_a·x + c_a), λ > 0)
            if k is not None and not U[a] @ U[a] > 0:  # (a zero up row: no line to move onto)
                continue
            lam = float(U[b] @ U[a]) / float(U[a] @ U[a]) if k is not None else 1.0
            moved = lam ** float(k) * H[:, a] if k is not None else H[:, a]  # type: ignore[arg-type]
            err = float(np.max(np.abs(H[:, b] - moved) * wmax[b] / den))
            if math.isfinite(err):
                out.append((err, f"unit {b} merged into unit {a} (error {err:.2e})", (b,), (a,), None))
        both = float(np.max(np.max(np.abs(np.outer(H[:, i], W[:, i]) + np.outer(H[:, j], W[:, j])), axis=1) / den))
        if math.isfinite(both):
            out.append((both, f"units {i} and {j} together (share {both:.2e})", (i, j), (), None))
    return out


def _antipodal_pairs(pairs: list[tuple[int, int]], X: np.ndarray, U: np.ndarray, W: np.ndarray, H: np.ndarray,
                     wmax: np.ndarray, den: np.ndarray, biases: bool, flips: bool) -> list[_Cand]:
    """Candidates (:data:`_Cand`) for nearly antipodal pairs (:func:`_close_pairs`): their joint output r(x) against the
    map v·(u_i·x) + β fitted to it (least squares weighted by 1/den; β = 0 unless g may have biases) — where
    σ(z) − σ(−z) = c·z the pair is nearly that map, and a residual-free g spends both slots elsewhere, the map
    v u_iᵀ joining the skip its freed slots realise (β in b_down); with ``flips`` (ungated) also each unit flipped
    onto the other's line and merged into it."""
    out: list[_Cand] = []
    for i, j in pairs:
        r = (np.outer(H[:, i], W[:, i]) + np.outer(H[:, j], W[:, j])) / den[:, None]
        z = X @ U[i]
        A = np.column_stack([z, np.ones_like(z)] if biases else [z]) / den[:, None]
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(r))):  # (LAPACK may not return on inf or NaN)
            continue
        coef = np.linalg.lstsq(A, r, rcond=None)[0]
        err = float(np.max(np.abs(r - A @ coef)))
        if math.isfinite(err) and np.all(np.isfinite(coef)):
            out.append((err, f"units {i} and {j}, nearly antipodal, as a linear map (error {err:.2e})", (i, j), (),
                        (coef[0], U[i])))
        if not flips:
            continue
        for a, b in ((i, j), (j, i)):  # (σ(−z) = σ(z) − c·z: unit b flipped onto a's line, merged into a, its linear part
            z = X @ U[a]  # joining the skip — h_b ≈ α·h_a + γ·(u_a·x) + β, fitted with weights |w_b|∞/den)
            scale = wmax[b] / den
            A = np.column_stack([H[:, a], z] + ([np.ones_like(z)] if biases else [])) * scale[:, None]
            if not (np.all(np.isfinite(A)) and np.all(np.isfinite(H[:, b] * scale))):
                continue
            coef = np.linalg.lstsq(A, H[:, b] * scale, rcond=None)[0]
            err = float(np.max(np.abs(H[:, b] * scale - A @ coef)))
            if math.isfinite(err) and np.all(np.isfinite(coef)):
                out.append((err, f"unit {b} flipped and merged into unit {a} (error {err:.2e})", (b,), (a,),
                            (coef[1] * W[:, b], U[a])))
    return out


def _gated_merges(pairs: list[tuple[int, int]], R: np.ndarray, W: np.ndarray, gates: np.ndarray, Z: np.ndarray,
                  den: np.ndarray, k: object) -> list[_Cand]:
    """Candidates (:data:`_Cand`) for gated units (linear value branch, values ``Z``) whose gate rows with their gate
    biases (``R``) are nearly collinear: unit b given unit a's gate (scaled by λ^k for a gate homogeneous of degree k,
    else as it is), then merged into a — their value parts v(x) = u·x + c nearly proportional (w_a + μw_b), or their
    down columns (v_a + νv_b) — frees b; the pair's joint output frees both (two units that nearly cancel)."""
    out: list[_Cand] = []
    for i, j in pairs:
        pair = np.outer(gates[:, i] * Z[:, i], W[:, i]) + np.outer(gates[:, j] * Z[:, j], W[:, j])
        both = float(np.max(np.max(np.abs(pair), axis=1) / den))
        if math.isfinite(both):
            out.append((both, f"units {i} and {j} together (share {both:.2e})", (i, j), (), None))
        for a, b in ((i, j), (j, i)):
            ra, za, wa = float(R[a] @ R[a]), float(Z[:, a] @ Z[:, a]), float(W[:, a] @ W[:, a])  # (0 for subnormal rows too)
            lam = float(R[b] @ R[a]) / ra if k is not None and ra > 0 else 1.0
            shared = lam ** float(k) * gates[:, a] if k is not None else gates[:, a]  # type: ignore[arg-type]  # (b's gate, as a's)
            mu = float(Z[:, b] @ Z[:, a]) / za if za > 0 else 0.0
            nu = float(W[:, b] @ W[:, a]) / wa if wa > 0 else 0.0
            for merged in (np.outer(gates[:, a] * Z[:, a], W[:, a]) + np.outer(shared * mu * Z[:, a], W[:, b]),
                           np.outer(gates[:, a] * Z[:, a] + shared * nu * Z[:, b], W[:, a])):
                err = float(np.max(np.max(np.abs(pair - merged), axis=1) / den))
                if math.isfinite(err):
                    out.append((err, f"unit {b} merged into unit {a} (error {err:.2e})", (b,), (a,), None))
    return out
