"""Points exactly on the kink / gate hyperplanes of two blocks, and the exact
pre-activations there (for the witness check, :mod:`absorb.engine.witness`).

Random inputs never lie on a set of measure zero, but a gate with a jump at 0 (a step,
H(0) ∈ {0, ½, 1}) makes ``f`` and a wrong witness differ exactly there. So the check also
evaluates both blocks at points lying *exactly* on the hyperplanes ``{x : r·x + β = 0}`` of
the rows r of W_gate (gated) or W_up (ungated), with their biases, of both blocks (the units
that do not cancel in ``f − B'``; at most ``_HYPERPLANES`` of them, a seeded sample beyond),
on a few pairwise intersections, and at 0 (:func:`_hyperplane_points`). A point is built
exactly (dyadic coordinates, or a rational coordinate kept in exact form), and every
pre-activation that float rounding could move across 0 is replaced by its exact value
(integer arithmetic on the dyadic weights, :func:`_fix_near_zero`), so σ sees 0 exactly
where the exact pre-activation is 0.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Iterator
from fractions import Fraction

import numpy as np

from absorb.engine._collinear import live_rows
from absorb.engine.hypotheses import _norms
from absorb.model.activations import is_builtin
from absorb.model.block import Block
from absorb.rigorous import gamma as _gamma
from absorb.rigorous import row_slices

_HYPERPLANES = 256
"""Most kink / gate hyperplanes given points of their own (a seeded sample beyond)."""


_INTERSECTIONS = 8
_HP_SCALES = (2.0**-7, 1.0, 2.0**7)
_ALL_SCALES = 64
"""Up to this many hyperplanes get a point at each scale; beyond, one each (scales in turn)."""


_SMALL_X = 2.0**-9
"""Points with |x|_∞ below this (0 among them) measure their error against the size of the
summed terms as well: there |f(x)| + |x| can vanish while rounding does not."""


def _kink_rows(b: Block) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows (and biases) whose zero sets carry σ's kinks or jumps: W_gate when gated, else W_up."""
    return (b.W_gate, b.b_gate) if b.gated else (b.W_up, b.b_up)


_PROBES = 16
"""Coordinates per array read by the cheap keys (here and in the witness check: equal rows ⇒
equal keys; rows that share a key are then compared in full, so the keys decide nothing on
their own)."""


def _probe(width: int) -> np.ndarray:
    return np.unique(np.linspace(0, max(width - 1, 0), min(width, _PROBES)).astype(np.intp))


def _chunks(idx: np.ndarray, width: int) -> list[np.ndarray]:
    return [idx[sl] for sl in row_slices(idx.size, width)]


def _plane(r: np.ndarray, beta: float) -> np.ndarray:
    """The hyperplane ``{x : r·x + β = 0}`` up to sign: (r, β) in float64 with the first
    nonzero of r positive (−0 → 0)."""
    v = np.append(np.asarray(r, dtype=np.float64), float(beta))
    nz = np.flatnonzero(v[:-1])
    return (v if nz.size == 0 or v[nz[0]] > 0 else -v) + 0.0


def _two_product(a: np.ndarray, b: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """``a·b = p + e`` exactly, entrywise (Dekker's product with Veltkamp's split; exact while
    nothing over- or underflows, as for weights in [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT])."""
    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = 134217729.0 * x  # 2^27 + 1
        hi = c - (c - x)
        return hi, x - hi

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    p = a * b
    (ah, al), (bh, bl) = split(a), split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _parallel(v: np.ndarray, s: np.ndarray) -> bool:
    """The :func:`_plane` forms v and s are one hyperplane, v = λ·s for some λ ≠ 0 (decided
    exactly: v_j·s_k = s_j·v_k for every j, k the first nonzero coordinate)."""
    nz = s[:-1] != 0
    if not nz.any() or not np.array_equal(v != 0, s != 0):
        return False
    k = int(np.argmax(nz))
    p1, e1 = _two_product(v, s[k])
    p2, e2 = _two_product(s, v[k])
    return bool(np.array_equal(p1, p2) and np.array_equal(e1, e2))


def _line_chunks(R: np.ndarray, b: np.ndarray | None, idx: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, list[bytes]]]:
    """Rows ``idx`` of R, a block at a time: ``(rows, which are nonzero, cheap keys)``, the
    keys being a few coordinates of each row's :func:`_plane` form divided by its first
    nonzero coordinate, in float32 (one hyperplane, scaled, mostly gets one key; rows that
    share a key are compared exactly, :func:`_parallel`)."""
    idx = np.asarray(idx, dtype=np.intp)
    probe = _probe(R.shape[1])
    for c in _chunks(idx, R.shape[1] + 1):
        Rc = R[c]
        nz = Rc != 0
        first = np.argmax(nz, axis=1)
        pivot = Rc[np.arange(c.size), first].astype(np.float64)
        K = np.hstack([Rc[:, probe].astype(np.float64), (np.zeros(c.size) if b is None else b[c])[:, None]])
        with np.errstate(all="ignore"):
            K = (K / np.where(pivot == 0, 1.0, pivot)[:, None]).astype(np.float32) + np.float32(0.0)
        yield c, nz.any(axis=1), [k.tobytes() for k in np.ascontiguousarray(K)]


def _dyadic_exact(v: np.ndarray, x: np.ndarray) -> Fraction:
    """v·x exactly, for float vectors (every float is a dyadic rational)."""
    nz = (v != 0) & (x != 0)
    if not nz.any():
        return Fraction(0)
    mv, ev = np.frexp(v[nz])
    mx, ex = np.frexp(x[nz])
    a = (mv * 2.0**53).astype(np.int64).tolist()  # exact: |m| < 1 has 53 significant bits
    b = (mx * 2.0**53).astype(np.int64).tolist()
    e = (ev.astype(np.int64) + ex.astype(np.int64) - 106).tolist()
    emin = min(e)
    total = sum((p * q) << (k - emin) for p, q, k in zip(a, b, e))
    return Fraction(total) * Fraction(2) ** emin


def _exact_pre(v: np.ndarray, beta: float, x: np.ndarray, extra: dict[int, Fraction]) -> Fraction:
    """v·x + β exactly at the exact point: x, except at the coordinates in ``extra``."""
    if extra:
        xs = x.copy()
        idx = list(extra)
        xs[idx] = 0.0
        acc = _dyadic_exact(v, xs) + sum((Fraction(float(v[j])) * t for j, t in extra.items()), Fraction(0))
    else:
        acc = _dyadic_exact(v, x)
    return acc + Fraction(float(beta))


class _Points:
    """Points on hyperplanes: float coordinates ``X`` (k×d); point p is exactly ``X[p]``
    except at the coordinates of ``extra[p]`` (exact rationals, rounded in ``X``);
    ``source[p]`` is a hyperplane p lies on, as :func:`_plane` (None: none known).
    ``X``, ``norms`` and ``small`` are derived once, when first asked for after a change."""

    def __init__(self, d: int) -> None:
        self.d = d
        self.rows: list[np.ndarray] = []
        self.extra: list[dict[int, Fraction]] = []
        self.source: list[np.ndarray | None] = []

    def _changed(self) -> None:
        for name in ("X", "norms", "small"):
            self.__dict__.pop(name, None)

    def add(self, x: np.ndarray, extra: dict[int, Fraction] | None = None, source: np.ndarray | None = None) -> None:
        x = np.array(x, dtype=np.float64)
        extra = dict(extra or {})
        for j, t in extra.items():
            x[j] = float(t)
        self.rows.append(x)
        self.extra.append(extra)
        self.source.append(source)
        self._changed()

    def extend(self, other: _Points) -> None:
        self.rows += other.rows
        self.extra += other.extra
        self.source += other.source
        self._changed()

    def part(self, a: int, b: int) -> _Points:
        """Points a to b − 1, as their own set."""
        return self.take(range(a, min(b, len(self.rows))))

    def take(self, idx: Iterable[int]) -> _Points:
        """The listed points, as their own set."""
        out = _Points(self.d)
        for i in idx:
            out.rows.append(self.rows[i])
            out.extra.append(self.extra[i])
            out.source.append(self.source[i])
        return out

    @functools.cached_property
    def X(self) -> np.ndarray:
        return np.array(self.rows).reshape(len(self.rows), self.d)

    @functools.cached_property
    def norms(self) -> np.ndarray:
        """‖x‖₂ of each point."""
        return _norms(self.X, 1)

    @functools.cached_property
    def small(self) -> np.ndarray:
        """The points with |x|_∞ < :data:`_SMALL_X` (0 among them)."""
        return np.abs(self.X).max(axis=1, initial=0.0) < _SMALL_X


def _on_hyperplanes(R: np.ndarray, b: np.ndarray | None, planes: list[np.ndarray], pts: _Points, rng: np.random.Generator) -> None:
    """Points exactly on each hyperplane ``r·x + β = 0`` (rows of R), at three scales.

    The homogeneous part pairs the coordinates, y_j = c·r_k, y_k = −c·r_j (c = ±1, ±2, ±½),
    and fills the coordinates where r_j = 0 freely: r·y = 0 exactly and y is dyadic. A bias
    adds t·e_j with the rational t = −β/r_j (exact in ``extra``). ``planes[i]`` (row i as
    :func:`_plane`) is recorded as the source of row i's points."""
    h, d = R.shape
    perm = rng.permutation(d)
    J, K = perm[0:d - 1:2], perm[1:d:2]
    coef = rng.choice(np.array([1.0, -1.0, 2.0, -2.0, 0.5, -0.5]), size=(h, J.size))
    Y = np.zeros((h, d))
    Y[:, J] = coef * R[:, K]
    Y[:, K] = -coef * R[:, J]
    free = rng.choice(np.array([1.0, -1.0, 0.5, -0.75, 1.5]), size=(h, d))
    Y = np.where(R == 0, free, Y)
    for i in range(h):
        r = R[i]
        j = int(np.argmax(np.abs(r)))
        beta = 0.0 if b is None else float(b[i])
        t = None if beta == 0 else -Fraction(beta) / Fraction(float(r[j]))
        y = Y[i]
        top = float(np.abs(y).max(initial=0.0))
        for s in (_HP_SCALES if h <= _ALL_SCALES else _HP_SCALES[i % 3: i % 3 + 1]):
            ys = y * 2.0 ** (int(np.round(np.log2(s))) - int(np.frexp(top)[1])) if top > 0 else y
            if t is None:
                pts.add(ys, source=planes[i])
            else:
                pts.add(ys, {j: Fraction(float(ys[j])) + t}, source=planes[i])


def _intersections(R: np.ndarray, b: np.ndarray | None, pts: _Points, limit: int) -> None:
    """Exact rational points on two hyperplanes at once (consecutive pairs of rows)."""
    h, d = R.shape
    if d < 2:
        return
    for i in range(min(limit, h - 1)):
        r, q = R[i], R[i + 1]
        beta = Fraction(0) if b is None else Fraction(float(b[i]))
        gam = Fraction(0) if b is None else Fraction(float(b[i + 1]))
        cand = np.argsort(-(np.abs(r) + np.abs(q)))[: min(d, 4)]
        for j, k in itertools.combinations(cand.tolist(), 2):
            rj, rk, qj, qk = (Fraction(float(v)) for v in (r[j], r[k], q[j], q[k]))
            det = rj * qk - rk * qj
            if det == 0:
                continue
            extra: dict[int, Fraction] = {}
            r1, r2 = -beta, -gam
            rest = [l for l in range(d) if l not in (j, k)]
            if rest:
                l = rest[0]
                extra[l] = Fraction(1)
                r1 -= Fraction(float(r[l]))
                r2 -= Fraction(float(q[l]))
            extra[j] = (r1 * qk - r2 * rk) / det
            extra[k] = (rj * r2 - qj * r1) / det
            if max(abs(extra[j]), abs(extra[k])) > 2**64:
                continue  # nearly parallel: the intersection is far out (its evaluation could overflow)
            pts.add(np.zeros(d), extra)
            break


def _hyperplane_points(fb: Block, gb: Block, units: tuple[list[int], list[int]] | None, seed: int,
                       most: int = _HYPERPLANES) -> _Points:
    """Points on the kink/gate hyperplanes of f and of g (those of the units that do not
    cancel in f − g when the blocks compare unit by unit; at most ``most`` of them, a seeded
    sample beyond), a few intersections, and 0."""
    rng = np.random.default_rng(seed + 7919)
    pts = _Points(fb.d)
    planes: list[tuple[np.ndarray, np.ndarray | None, int]] = []  # distinct hyperplanes: (rows, biases, row)
    by_key: dict[bytes, list[int]] = {}

    def plane(t: int) -> np.ndarray:
        R_, b_, i_ = planes[t]
        return _plane(R_[i_], 0.0 if b_ is None else b_[i_])

    for blk, keep in ((fb, None if units is None else units[0]), (gb, None if units is None else units[1])):
        R, b = _kink_rows(blk)
        idx = live_rows(R) if keep is None else np.asarray(keep, dtype=np.intp)
        for c, live, keys in _line_chunks(R, b, idx):
            for i, k in zip(c[live].tolist(), itertools.compress(keys, live)):  # (a zero row has no hyperplane)
                same = by_key.setdefault(k, [])
                if same:
                    v = _plane(R[i], 0.0 if b is None else b[i])
                    if any(_parallel(v, plane(t)) for t in same):
                        continue
                same.append(len(planes))
                planes.append((R, b, i))
    pts.add(np.zeros(fb.d))
    if planes:
        pick = list(range(len(planes)))
        if len(pick) > most:
            pick = sorted(rng.choice(len(pick), most, replace=False).tolist())
        chosen = [plane(t) for t in pick]
        R = np.array([planes[t][0][planes[t][2]] for t in pick], dtype=np.float64)
        bv = np.array([0.0 if planes[t][1] is None else float(planes[t][1][planes[t][2]]) for t in pick])
        bias = None if not np.any(bv) else bv
        _on_hyperplanes(R, bias, chosen, pts, rng)
        _intersections(R, bias, pts, _INTERSECTIONS)
    return pts


def _fix_near_zero(Z: np.ndarray, R: np.ndarray, b: np.ndarray | None, X: np.ndarray, nx: np.ndarray, pts: _Points,
                   budget: list[int], skipped: np.ndarray) -> None:
    """In the pre-activations ``Z = X Rᵀ + b`` of some kink rows R (float64), replace every
    entry that rounding could move across 0 by its exact value's sign-faithful float; mark
    the points skipped because the exact budget ran out."""
    d = X.shape[1]
    # |fl(r·x + β) − (r·x + β)| ≤ γ_{d+1} (Σ|r_j||x_j| + |β|) (the rounding of a rational
    # coordinate in X included), and Σ|r_j||x_j| ≤ ‖r‖‖x‖: a cheap O(k + n) bound
    # ‖r‖ by a plain sum of squares: evaluation_error only gets here with every weight in
    # [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT] (nothing over- or underflows), and its relative
    # error (≤ γ_d) is covered many times by the factor 2
    nr = np.sqrt(np.einsum("ij,ij->i", R, R))
    bound = 2.0 * _gamma(d + 2) * (np.outer(nx, nr) + (0.0 if b is None else np.abs(b))) + d * 2.0**-1060
    near = np.abs(Z) <= bound
    del bound
    near[:, ~np.any(R != 0, axis=1)] = False  # a zero row's pre-activation is its bias, exactly (a padded dead unit, say)
    P, I = np.nonzero(near)  # (P ascending: each point's rows are one slice)
    del near
    starts = np.searchsorted(P, np.arange(Z.shape[0] + 1))
    for p in np.unique(P).tolist():
        rows = I[starts[p]:starts[p + 1]]
        src = pts.source[p]
        if src is not None:  # built on this very hyperplane: exactly zero
            on = np.array([_parallel(_plane(R[i], 0.0 if b is None else b[i]), src) for i in rows.tolist()], dtype=bool)
            Z[p, rows[on]] = 0.0
            rows = rows[~on]
        supp = np.flatnonzero(X[p])
        rows = rows[(R[rows][:, supp] != 0).any(axis=1)] if supp.size else rows[:0]  # else: β alone, exact already
        for i in rows.tolist():
            if budget[0] <= 0:
                skipped[p] = True
                break
            budget[0] -= 1
            z = _exact_pre(R[i], 0.0 if b is None else float(b[i]), X[p], pts.extra[p])
            zf = float(z)
            Z[p, i] = 0.0 if z == 0 else (zf if zf != 0 else math.copysign(5e-324, z))


# ---- the exact sup of a piecewise-linear difference ------------------------------------
_PL_MAX_SYSTEMS = 5_000
"""Most d×d systems solved (in rationals) by :func:`pl_sup_error`; past it: None."""


def _solve(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """The unique solution of A x = b (square, rationals), or None when A is singular."""
    n = len(A)
    M = [row[:] + [v] for row, v in zip(A, b)]
    for col in range(n):
        piv = next((r for r in range(col, n) if M[r][col] != 0), None)
        if piv is None:
            return None
        M[col], M[piv] = M[piv], M[col]
        p = M[col][col]
        for r in range(n):
            if r != col and M[r][col] != 0:
                t = M[r][col] / p
                M[r] = [a - t * c for a, c in zip(M[r], M[col])]
    return [M[i][n] / M[i][i] for i in range(n)]


def _relu_eval(W_up: list[list[Fraction]], W_down: list[list[Fraction]], skip: list[list[Fraction]], x: list[Fraction]) -> list[Fraction]:
    h = [max(sum((u * xi for u, xi in zip(row, x)), Fraction(0)), Fraction(0)) for row in W_up]
    return [sum((m * xi for m, xi in zip(skip[r], x)), Fraction(0)) + sum((w * hi for w, hi in zip(W_down[r], h)), Fraction(0))
            for r in range(len(W_down))]


def pl_sup_error(f: Block, g: Block) -> Fraction | None:
    """``max_{‖x‖_∞ = 1} ‖f(x) − g(x)‖_∞`` exactly, for bias-free ungated ReLU blocks f and g
    of the same d; None when not such blocks or past :data:`_PL_MAX_SYSTEMS`.

    f − g is linear on every cell of the arrangement of both blocks' kink hyperplanes
    ``u·x = 0``, so each |component| is convex there: its max over a facet ``x_j = ±1`` of
    the cube is attained at a vertex of the arrangement restricted to the facet — a point
    where d independent equations hold, ``u·x = 0`` for some rows and ``x_j = ±1`` for at
    least one coordinate. Every such point with ‖x‖_∞ = 1 is enumerated and evaluated in
    rationals."""
    if not (f.d == g.d and not f.gated and not g.gated and f.activation.name == g.activation.name == "relu"
            and is_builtin(f.activation) and is_builtin(g.activation) and not f.has_bias and not g.has_bias):
        return None
    d = f.d

    def fr(A: np.ndarray) -> list[list[Fraction]]:
        return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(np.asarray(A, dtype=np.float64))]

    rows: dict[tuple[Fraction, ...], None] = {}
    for b in (f, g):
        for row in fr(b.W_up):
            if any(row):
                piv = next(v for v in row if v != 0)
                rows.setdefault(tuple(v / piv for v in row))  # one hyperplane per direction
    H = [list(r) for r in rows]
    count = sum(math.comb(len(H), k) * math.comb(d, d - k) * 2 ** (d - k) for k in range(min(len(H), d - 1) + 1))
    if count > _PL_MAX_SYSTEMS:
        return None
    Ff = (fr(f.W_up), fr(f.W_down), fr(f.M))
    Fg = (fr(g.W_up), fr(g.W_down), fr(g.M))
    worst = Fraction(0)
    seen: set[tuple[Fraction, ...]] = set()
    for k in range(min(len(H), d - 1) + 1):
        for hs in itertools.combinations(range(len(H)), k):
            for cols in itertools.combinations(range(d), d - k):
                for signs in itertools.product((1, -1), repeat=d - k):
                    A = [H[i] for i in hs] + [[Fraction(int(j == c)) for j in range(d)] for c in cols]
                    b = [Fraction(0)] * k + [Fraction(s) for s in signs]
                    x = _solve(A, b)
                    if x is None or max(abs(v) for v in x) != 1:
                        continue
                    key = tuple(x)
                    if key in seen:
                        continue
                    seen.add(key)
                    diff = max(abs(a - c) for a, c in zip(_relu_eval(*Ff, x), _relu_eval(*Fg, x)))
                    worst = max(worst, diff)
    return worst
