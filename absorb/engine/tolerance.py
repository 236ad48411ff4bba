"""How close f is to a residual-free block: the screens that keep an exact ``not_absorbable`` from
contradicting the tolerance.

The exact arguments (degree, linearization, result 5, the skeleton, the canonical form …) rule out a
residual-free g *equal* to f; ``absorbable`` means within the tolerance. :func:`within_tolerance`
looks, by bound and with no search, for a residual-free block of the asked width within the
tolerance of f (f without its skip; units that realise a linear or affine map exactly), and by
sample for B dominating its skip. What it finds only ever withholds a verdict (the answer becomes
``unknown``, saying why); it never claims one. The checker re-derives the same question its own way
(``absorb.verify._tolerance``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from absorb.engine._sigma_samples import _at_zero, _flip_defect, _float_at_zero
from absorb.model._samples import trusted_grid as _trusted_grid
from absorb.model.activations import Activation, is_builtin
from absorb.model.block import Block
from absorb.symbolic import facts
from absorb.symbolic._core import get as _analysis  # the property functions' cache, without importing sympy


def _unit_sizes(block: Block) -> np.ndarray:
    """|w_i|∞·|u_i|₁ for each unit (w_i a column of W_down, u_i a row of W_up): its reach per unit of |x|∞."""
    U, D = np.abs(np.asarray(block.W_up, dtype=np.float64)), np.abs(np.asarray(block.W_down, dtype=np.float64))
    with np.errstate(all="ignore"):  # (inf: no bound, as it should be)
        return np.max(D, axis=0) * np.sum(U, axis=1)


def _block_size(block: Block) -> float:
    """Σ_i |w_i|∞·|u_i|₁ (:func:`_unit_sizes`), with a small margin for its float rounding (not a rigorous one
    for large n: the screen that reads it only ever withholds a verdict): |W_down φ(W_up x)|∞ ≤ λ·size·|x|∞ for
    any φ with |φ(z)| ≤ λ|z| — the block's reach per unit of |x|∞."""
    with np.errstate(over="ignore"):
        return float(np.sum(_unit_sizes(block))) * (1 + (block.d + 2) * 2.0**-52)


def within_tolerance(blk: Block, tol: float, seed: int, width: int | None = None, biases: bool | None = None,
                     one_per_rank: bool = False, reads_f: bool = True) -> str | None:
    """Why an exact not_absorbable would contradict the tolerance (``absorbable`` means
    |f(x) − g(x)|∞ ≤ τ(|f(x)|∞ + |x|∞ + |f(0)|∞) for a residual-free g), or None. Residual-free
    blocks of width ``width`` (n when None; a narrower g is padded with dead units) are tried by
    bound, with no search:

    * f without its skip, g = B: f − g = M x, |M x|∞ ≤ ‖M‖∞|x|∞ (largest absolute row sum);
    * a linear map x ↦ A x that residual-free units realise exactly, with
      |f(x) − A x|∞ ≤ K·Σ_i |w_i|∞|u_i|₁·|x|∞ = r|x|∞ (:func:`_linear_parts`), while
      |f(x)|∞ ≥ (s − r)|x|∞ with s ≤ min |A x|∞/|x|∞ (:func:`_gain`); for f with biases (or σ(0) ≠ 0) an affine map
      x ↦ A x + β, β = f(0), with |f(x) − A x − β|∞ ≤ r|x|∞, and |f(x)|∞ + |f(0)|∞ ≥ (s − r)|x|∞.

    ``biases``: whether g may have biases (the question's class; f's own biases when None) — then a shifted
    flip's pairs and gated units whose gate sees only a bias c with g(c) ≠ 0 realise the maps too.

    And by sample, units that f can spare (:func:`absorb.engine._spare._spare_units`): ``one_per_rank`` where one spare unit realises a
    rank-one part of the skip (f growing quadratically: a unit with a large bias, or a small up row and a large down
    column, is affine where f does not hide it), else two (an antipodal pair); for a narrower ``width``, whether f is
    within τ of a block with fewer active units or lines.

    Before the sampled screens, whether float64 reads f to the tolerance at all
    (:func:`absorb.engine._rounding.float_blind`: f(0) past float64, or terms that cancel far past f's size) — unless
    ``reads_f`` is False: an argument that holds along rays to infinity whatever f's finite values (boundedness: every
    residual-free g is bounded) needs no reading of them."""
    width = blk.n if width is None else width
    biases = blk.has_bias if biases is None else biases or blk.has_bias
    normM = 1.0 if blk.skip is None else _row_sum(blk.M, blk.d)
    if normM * (1 - tol) <= tol and width >= blk.n:  # (g = c·B, c = 1/(1 + ‖M‖∞): f − cB = (1 − c)f + c·M x)
        return (f"Unknown: f is within the tolerance of its own residual-free part B scaled by c = 1/(1 + ‖M‖∞) "
                f"(|M x|∞ ≤ {normM:.3g}·|x|∞, and f − cB = (1 − c)·f + c·M x is at most ‖M‖∞/(1 + ‖M‖∞)·(|f(x)|∞ + |x|∞) "
                "≤ τ(|f(x)|∞ + |x|∞)), so the exact argument rules out an exact residual-free block only.")
    flat = _near_constant(blk, normM, tol, biases)
    if flat is not None:
        return flat
    from absorb.engine._rounding import float_blind

    blind = float_blind(blk, tol, seed) if reads_f else None
    if blind is not None:
        return blind
    sampled = _without_skip_sampled(blk, tol, seed) if width >= blk.n else None
    if sampled is not None:
        return sampled
    if blk.n * blk.d > 1 << 24 or not normM < 2.0**500:  # (pairs for a huge M overflow)
        return _nearly_linear(blk, tol, width)
    f0: list[float] = []  # (a rigorous lower bound of |f(0)|∞, formed when a map with a constant error needs it)

    def f0_low() -> float:
        if not f0:
            from absorb.engine.witness import f0_lower

            f0.append(f0_lower(blk))
        return f0[0]

    for sub, kept in _unit_subsets(blk):
        why = _near_linear(sub, kept, normM, tol, width, f0_low, biases)
        if why is not None:
            return why
    from absorb.engine._spare import _spare_units

    return _spare_units(blk, tol, seed, one_per_rank, biases, width if width < blk.n else None) or _nearly_linear(blk, tol, width)


SCREEN_MARGIN = 4.0
"""A not_absorbable resting on a distance (the route's own candidates: flips) is withheld where the sampled screens find
another residual-free block within this multiple of the tolerance: their candidates (a unit moved onto a near-collinear
one's line, pairs realising the skip) err several times more than fits found by optimisation (9°-apart rows: the screen's
3.4e-2 against a fitted 1.35e-2)."""


def within_margin(blk: Block, tol: float, seed: int, biases: bool | None = None) -> str | None:
    """:func:`within_tolerance` at :data:`SCREEN_MARGIN`·τ (at most 1/2; float64's reading of f was judged at τ), after
    it found nothing at τ: "<margin>× the tolerance (<what it found>)", or None."""
    wide = min(SCREEN_MARGIN * tol, 0.5)
    why = within_tolerance(blk, wide, seed, biases=biases, reads_f=False) if wide > tol else None
    return None if why is None else f"{SCREEN_MARGIN:g}× the tolerance ({why.removeprefix('Unknown: ').rstrip('.')})"


def _near_constant(blk: Block, normM: float, tol: float, biases: bool) -> str | None:
    """Whether g = f(0), a constant (no unit at all: b_down = f(0); with no biases allowed only where f(0) = 0), is
    within the tolerance: |f(x) − f(0)|∞ ≤ r|x|∞, and |f(x)|∞ + |f(0)|∞ ≥ |f(x) − f(0)|∞, so (1 − τ)·r ≤ τ suffices
    — at a large tolerance a small f needs no unit at all. An ungated block: σ(z) − σ(b) = t·(z − b) + (the rest),
    so r = ‖M + t·W_down W_up‖∞ + K_t·Σ_i |w_i|∞|u_i|₁ with K_t ≥ the rest's Lipschitz constant (sup |σ(z) − σ(0) −
    t·z|/|z| bias-free); t = 0 with σ's stated Lipschitz constant, and t ∈ {0, σ's mean slopes} with K_t read on
    the grid (an estimate: this only withholds)."""
    from absorb.engine.witness import sigma_lipschitz

    if not tol < 1 or blk.n * blk.d > 1 << 22 or blk.gated and not blk.value_identity:
        return None
    bar = tol / (1 - tol) * (1 - 1e-12)
    if not blk.gated and not is_builtin(blk.activation):  # (a user's σ: finite slopes at ±∞ from its cached facts first —
        sl = _analysis(blk.activation, "asymptotic_slopes")  # no sympy for σ that grows faster, x**2)
        lp, lm = (facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else (None, None)
        if lp is None or lm is None:
            return None
        # (f(tv)/t → M v + W_down σ∞(W_up v) as t → ∞, σ∞(z) = L±·z: a direction whose limit is past the bar rules the
        # map out with no σ evaluated — a user's σ costs a compilation at its first evaluation)
        V = np.random.default_rng(0).standard_normal((3, blk.d))
        with np.errstate(all="ignore"):
            Z = V @ np.asarray(blk.W_up, dtype=np.float64).T
            F = blk.linear(V) + np.where(Z > 0, float(lp) * Z, float(lm) * Z) @ np.asarray(blk.W_down, dtype=np.float64).T
            lim = np.max(np.abs(F), axis=1) / np.max(np.abs(V), axis=1)
        if np.any(lim > bar * (1 + 1e-9)):
            return None
    zero = not blk.has_bias and (blk.gated or _float_at_zero(blk.activation) == 0.0)  # (f(0) = 0: this only withholds)
    if not (biases or zero):
        return None
    size = _block_size(blk)
    # every r below bounds sup |f(x) − f(0)|∞/|x|∞ from above: a few inputs where that ratio is already past the bar
    # rule the map out at the cost of one evaluation of f (no σ constant read, no grid, no sympy)
    X = np.vstack([np.zeros((1, blk.d)), np.random.default_rng(0).standard_normal((3, blk.d)) * np.array([[1e-3], [1.0], [1e3]])])
    with np.errstate(all="ignore"):
        F = blk(X)
        seen = np.max(np.abs(F[1:] - F[0]), axis=1) / np.max(np.abs(X[1:]), axis=1)
    if np.any(seen > bar) or not np.all(np.isfinite(seen)):
        return None
    if blk.gated:  # f − f(0) = (M + t·W_down W_up)x + W_down[(g(G x + c) − t) ⊙ U x + (g(G x + c) − g(c)) ⊙ b_up]
        z, v = _trusted_grid(blk.activation)
        lip = _sampled_lipschitz(blk.activation)
        if not len(z) or lip is None:
            return None
        DU = _product(blk)  # (formed once for the t below)
        for t in sorted({0.0, _at_zero(blk.activation), float(np.max(v) + np.min(v)) / 2}):
            dev = float(np.max(np.abs(v - t)))
            r = _row_sum(_plus_product(blk, t, DU), blk.d) + (_gated_reach(blk, dev, lip) if blk.has_bias else dev * size)
            if math.isfinite(r) and r <= bar:
                return _constant_reason(r, f" (the gate's deviation from {t:.6g} estimated from samples)")
        return None
    L = sigma_lipschitz(blk.activation)
    if L is not None and normM + L * size <= bar:
        return _constant_reason(normM + L * size, "")
    if normM - size * (L if L is not None else math.inf) > bar:  # (no t can help: ‖M + tDU‖ ≥ ‖M‖ − |t|·size)
        return None
    with np.errstate(all="ignore"):
        ends = np.asarray(blk.activation(np.array([-1.0, 1.0, -1e6, 1e6])), dtype=np.float64)
    ts = {0.0, float(ends[1] - ends[0]) / 2, float(ends[3] - ends[2]) / 4e6}
    DU = _product(blk)  # (formed once for the t below)
    for t in sorted(t for t in ts if math.isfinite(t)):
        K = _sampled_lipschitz(blk.activation, t) if blk.has_bias else _sampled_quotient(blk.activation, t)
        r = _row_sum(_plus_product(blk, t, DU), blk.d) + (K if K is not None else math.inf) * size
        if math.isfinite(r) and r <= bar:
            return _constant_reason(r, f" (σ(z) − {t:.6g}·z's constant estimated from samples)")
    return None


def _constant_reason(r: float, note: str) -> str:
    return (f"Unknown: f is within the tolerance of the constant g = f(0) (|f(x) − f(0)|∞ ≤ {r:.3g}·|x|∞ ≤ τ/(1 − τ)·|x|∞"
            f"{note}), a residual-free block with no unit at all; the exact argument rules out an exact residual-free "
            "block only.")


def _unit_subsets(blk: Block):  # type: ignore[no-untyped-def]
    """(f restricted to a set T of its units, n − |T|): all units, then the smallest units by |w_i|∞|u_i|₁ in sets
    of the sizes the maps of :func:`_linear_parts` need (2·rank(M), 2d, rank(M), d, +1): a residual-free g may keep
    f's other units as they are and spend T's slots on the map, so that a few tiny units near ordinary ones
    (near-dead or pruned) count as what they are."""
    yield blk, 0
    n, d = blk.n, blk.d
    sizes = _unit_sizes(blk)
    if not np.all(np.isfinite(sizes)) or n * d > 1 << 20:
        return
    order, total = np.argsort(sizes, kind="stable"), float(np.sum(sizes))
    rank = int(np.linalg.matrix_rank(blk.M)) if blk.skip is not None else d
    for t in sorted({2 * rank, 2 * rank + 1, 2 * d, rank, d}):
        T = np.sort(order[:t])
        if not 0 < t < n or not float(np.sum(sizes[T])) < 0.5 * total:
            continue
        pick = {k: (None if getattr(blk, k) is None else np.asarray(getattr(blk, k))[T]) for k in ("W_up", "W_gate", "b_up", "b_gate")}
        yield blk.replace(W_down=np.asarray(blk.W_down)[:, T], **pick), n - t


def _near_linear(blk: Block, kept: int, normM: float, tol: float, width: int, f0_low, biases: bool) -> str | None:  # type: ignore[no-untyped-def]
    """The first map of :func:`_linear_parts` for ``blk`` (f's units in T) within the tolerance, with ``kept`` of f's
    other units kept as they are, or None. ``f0_low()``: a lower bound of the whole f's |f(0)|∞, for a map whose
    error has a constant part C·Σ_i |w_i|∞ besides r|x|∞ (then r < τ and that constant ≤ τ|f(0)|∞ suffice)."""
    size = _block_size(blk)
    for A, K, per_rank, how, units, affine, C in _linear_parts(blk, normM, size, tol, biases):
        r = K * size
        if not np.all(np.isfinite(A)):
            continue
        if C:
            with np.errstate(all="ignore"):
                const = C * float(np.sum(np.max(np.abs(np.asarray(blk.W_down, dtype=np.float64)), axis=0)))
            if not (r * (1 - tol) < tol and const * (1 - tol) <= tol * f0_low()):  # (g scaled by 1 − τ, as below)
                continue
        normA = _row_sum(A, blk.d)
        rank = int(np.linalg.matrix_rank(A))
        # a bias-free g carries a constant W_down σ(0)·1 (σ(0) ≠ 0) on an unbalanced pair (tu, w/(ct)), (−tu, −w/(ct) + v):
        # w(u·x) + v σ(−t u·x), within |v|·G·t|u|₁|x|∞ of w(u·x) + v σ(0) for any t > 0; with no pair, one unit with up row 0
        extra = 1 if affine and not blk.has_bias and rank == 0 else 0
        if not (r <= tol * (1 + normA) and per_rank * rank + extra + kept <= width):
            continue
        # (1 − τ)g is residual-free too (W_down, b_down scaled) and f − (1 − τ)g = τ·f + (1 − τ)(f − g): within the tolerance
        # where (1 − τ)·r ≤ τ, whatever |f(x)|; else |f(x)|∞ ≥ (s − r)|x|∞ must make up for r ≥ τ
        if not r * (1 - tol) < tol:  # (for x ↦ A x + β, β = f(0): |f(x)|∞ + |f(0)|∞ ≥ |A x|∞ − r|x|∞ all the same; not so
            s = _gain(A) if not kept else 0.0  # where kept units add to f)
            if not r < tol * (1 + max(s - r, 0.0)):
                continue
        elif r >= tol:
            how = f"(1 − τ) times {how}"
        where = f"{width} ≥ {per_rank}·rank(A) residual-free units realise {units}"
        if kept:
            where = (f"{per_rank}·rank(A) residual-free units realise {units} in the slots of f's {blk.n} smallest units, "
                     f"the other {kept} kept as they are ({width} in all at most)")
            how = how.replace("f(0)", "f(0) of those units")
        return (f"Unknown: f is within the tolerance (|f(x) − g(x)|∞ ≤ {r:.3g}·|x|∞) of g = {how}, which {where}; "
                "the exact argument rules out an exact residual-free block only.")
    return None


def _gain(A: np.ndarray) -> float:
    """A lower bound of min |A x|∞/|x|∞ over x ≠ 0 (0 where A is singular or the bound fails): with X ≈ A⁻¹ and
    R = I − X A, x = X(A x) + R x gives |A x|∞ ≥ (1 − ‖R‖∞)/‖X‖∞·|x|∞ (R's float64 rounding counted; exact for
    A = I, where σ_min(A)/√d would lose a factor √d)."""
    d = A.shape[0]
    try:
        with np.errstate(all="ignore"):
            X = np.linalg.inv(A)
            E = np.abs(np.eye(d) - X @ A) + (d + 3) * 2.0**-52 * (np.abs(X) @ np.abs(A) + 1)
    except np.linalg.LinAlgError:
        return 0.0
    rho, nx = _row_sum(E, d), _row_sum(X, d)
    if not (math.isfinite(rho) and math.isfinite(nx) and rho < 1 and nx > 0):
        return 0.0
    return (1 - rho) / nx * (1 - 1e-12)


def _without_skip_sampled(blk: Block, tol: float, seed: int) -> str | None:
    """Whether g = B (f without its skip) is within the tolerance at sampled inputs — |M x|∞ ≤
    τ(|f(x)|∞ + |x|∞ + |f(0)|∞), which holds for every x when B dominates (|B(x)|∞ ≥ c|x|∞, c ≫
    ‖M‖∞/τ) although ‖M‖∞ > τ. Sampled, not proved: enough to withhold an exact verdict (the answer
    becomes unknown, saying so), never to claim one. A handful of inputs first (most blocks stop
    there), then ±e_j, random directions and points on the kink/gate hyperplanes (where B may
    vanish on a thin cone), at scales 10⁻⁸ … 10⁸ and up to 10⁴·(1 + |f(0)|∞)/τ (where the constant
    |f(0)|∞ no longer hides the skip)."""
    from absorb.engine._kink_points import _hyperplane_points

    d = blk.d
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((256, d))
    if _skip_shows_far_out(blk, dirs[:4], tol):
        return None
    with np.errstate(all="ignore"):
        f0 = blk.f0_inf  # (0 without evaluating f where no unit sees a bias and each unit is exactly 0 at 0)
        far = (1 + f0) / tol if math.isfinite(f0) else math.inf
        if not math.isfinite(far):
            return None

        def ratio(X: np.ndarray) -> np.ndarray | None:
            den = np.max(np.abs(blk(X)), axis=1) + np.max(np.abs(X), axis=1) + f0
            q = np.max(np.abs(blk.linear(X)), axis=1) / den
            q[np.isnan(den)] = 0.0  # (f overflowed there, 0·inf or inf − inf: B's size, not a sign of the skip; not counted)
            return q if np.all(np.isfinite(q)) and not np.any(den <= 0) and float(np.max(q)) <= tol * (1 - 1e-6) else None

        per_scale = int(np.clip(1e8 / max(blk.n * d, 1), 4, 32))  # (directions per scale: fewer where f is costly)
        X0 = np.vstack([dirs[:4]] + [dirs[:per_scale] * t for t in (1e-4, 1e-2, 1.0, 1e2, 1e4, 1e8, far)])
        q0 = ratio(X0)  # (one evaluation of f)
        if q0 is None:
            return None  # (most blocks stop here, at a few directions over the scales, before the kink points and dead cones)
        try:  # (exact points on the hyperplanes: past the weights' safe magnitudes their arithmetic can overflow)
            kinks = _hyperplane_points(blk, blk, None, seed).X
        except (OverflowError, ValueError, ZeroDivisionError):
            kinks = np.zeros((0, d))
        kinks = np.vstack([kinks, _dead_cones(blk)])
        kinks = kinks[np.all(np.isfinite(kinks), axis=1) & np.any(kinks != 0, axis=1)]
        kinks = kinks / np.max(np.abs(kinks), axis=1, keepdims=True) if len(kinks) else kinks
        na = min(d, 256)
        axes = np.zeros((2 * na, d))
        axes[np.arange(na), np.arange(na)], axes[na + np.arange(na), np.arange(na)] = 1.0, -1.0
        base = np.vstack([axes, dirs, kinks])
        scales = [10.0**e for e in range(-8, 9, 2)] + [far * 10.0**e for e in (0, 2, 4)]

        m, best = 4, [(float(q0[i]), X0[i]) for i in np.argsort(q0[:4])[-2:]]  # (its 4 unscaled inputs start the count and the climb)
        for X in (base * t for t in scales):
            q = ratio(X)
            if q is None:
                return None
            m += len(X)
            best += [(float(q[i]), X[i]) for i in np.argsort(q)[-2:]]
        # then climb from the 8 worst inputs (random steps, shrinking where none helps): a thin cone the sample touched
        X = np.array([x for _, x in sorted(best, key=lambda t: t[0])[-8:]])
        q, step = ratio(X), 0.3
        for _ in range(40):
            if q is None:
                return None
            Y = X + step * np.max(np.abs(X), axis=1, keepdims=True) * rng.standard_normal(X.shape)
            w = ratio(Y)
            if w is None:
                return None
            up = w > q
            X[up], q[up], step = Y[up], w[up], step if np.any(up) else step * 0.6
            m += len(Y)
    return (f"Unknown: at {m} sampled inputs (random, on the kink hyperplanes, at scales 1e-8 to {scales[-1]:.0e}) f is within "
            "the tolerance of its own residual-free part B (|M x|∞ ≤ tol·(|f(x)|∞ + |x|∞ + |f(0)|∞): B dominates the skip). "
            "Sampled, not proved for every x, but enough to withhold the exact argument, which rules out an exact "
            "residual-free block only.")


def _dead_cones(blk: Block) -> np.ndarray:
    """Points x with R x ≤ −1 and with R x ≥ 1 (R = W_gate for a gated block, else W_up; one small LP each,
    :func:`absorb.engine.witness.cone_point`, scaled by its margin):
    on such a cone every unit sits at one end of σ (or of its gate), where B may vanish although no random input
    lands there (ordinary weights: n ≤ 2d makes the cone likely). Empty where the LP is infeasible, too large
    (n·d > 2·10⁵) or fails."""
    from absorb.engine.witness import cone_point

    R = np.asarray(blk.W_gate if blk.gated else blk.W_up, dtype=np.float64)
    n, d = R.shape
    if n * d > 200_000:
        return np.zeros((0, d))
    out = []
    for sign in (1.0, -1.0):
        x = cone_point(sign * R)
        if x is not None:
            with np.errstate(all="ignore"):
                s = float(np.min(-sign * (R @ x)))
            if s >= 1e-6:  # (R x ≤ −1 resp. ≥ 1 after scaling by 1/s, within the old |x|∞ ≤ 10⁶)
                out.append(x / s)
    return np.array(out).reshape(-1, d)


def _skip_shows_far_out(blk: Block, X: np.ndarray, tol: float) -> bool:
    """For a user's ungated σ with proved slopes L± at ±∞ (read from its cached facts: no σ evaluated,
    no scipy or sympy imported): whether the skip shows at the inputs t·X as t → ∞, where f(tx)/t →
    M x + W_down σ∞(W_up x), σ∞(z) = L₊z (z > 0), L₋z (z < 0), by more than twice the tolerance —
    then the sampled screen's far samples fail too, and it need not evaluate f."""
    if blk.gated or is_builtin(blk.activation) or blk.n * blk.d > 1 << 24:
        return False
    sl = _analysis(blk.activation, "asymptotic_slopes")
    lp, lm = (facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else (None, None)
    if lp is None or lm is None:
        return False
    with np.errstate(all="ignore"):
        Z, MX = X @ np.asarray(blk.W_up, dtype=np.float64).T, blk.linear(X)
        F = MX + np.where(Z > 0, float(lp) * Z, float(lm) * Z) @ np.asarray(blk.W_down, dtype=np.float64).T
        q = np.max(np.abs(MX), axis=1) / (np.max(np.abs(F), axis=1) + np.max(np.abs(X), axis=1))
    return bool(np.all(np.isfinite(q)) and float(np.max(q)) > 2 * tol)


_APPROX = 8.0
"""A nearly linear f is withheld where τ ≥ σ_{k+1}(M)/(8(1 + ‖M‖₂)), k = width // 2: below that a residual-free block
would have to approximate the part of M x its pairs cannot realise far better than any fit found (three ReLU units
fit the identity in d = 2 within 0.27; an estimate, not a bound: this only withholds)."""


def _nearly_linear(blk: Block, tol: float, width: int) -> str | None:
    """Why f is too nearly linear for an exact argument: an ungated f whose σ grows linearly (asymptotic slopes not
    both 0: units can approximate a linear map) and whose units add at most β|x|∞ to its affine part, β = L·max_r
    Σ_i |W_down[r,i]|·‖u_i‖₁ ≤ τ (L: σ's Lipschitz constant; for a user's σ the grid's estimate — this only
    withholds), and more units than rank M; None otherwise. Then f is within τ of the linear map M x, and a
    residual-free g that approximates M x — nonlinearly too: three ReLU units at 120° are within 0.289 of the
    identity in d = 2, with fewer units than the 2·rank M an exact realisation takes — may be within the tolerance;
    no exact argument bounds that. (With n ≤ rank M units no g comes close: its even part matches its linear part
    where every u_i·x = 1.)"""
    from absorb.engine.witness import sigma_lipschitz

    if blk.gated:
        return None
    sl = _analysis(blk.activation, "asymptotic_slopes")  # (cached facts: no sympy)
    lp, lm = (facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else (None, None)
    if lp is None or lm is None or lp == lm == 0:
        return None
    if not is_builtin(blk.activation):
        # a slope already too steep near 0 withholds nothing (the whole grid's estimate is a largest quotient over
        # more points, so at least this one), for a 20th of the grid's mpmath evaluations
        near = _sampled_lipschitz(blk.activation, window=_CENTRE)
        if near is not None and not blk.row_reach * near <= tol:
            return None
    L = sigma_lipschitz(blk.activation) if is_builtin(blk.activation) else _sampled_lipschitz(blk.activation)
    if L is None or not math.isfinite(L):
        return None
    beta = blk.row_reach * L
    if not beta <= tol:
        return None
    sv = np.ones(blk.d) if blk.skip is None else np.linalg.svd(np.asarray(blk.M, dtype=np.float64), compute_uv=False)
    rank = int(np.sum(sv > sv[0] * blk.d * 2.0**-52)) if sv.size and sv[0] > 0 else 0
    if width <= rank:  # (n ≤ rank M units: at x with u_i·x = 1 for all i, g's even part is as large as its odd part A x)
        return None
    pairs = width // 2  # (pairs realise the largest rank-`pairs` part exactly; the rest, of size σ_{pairs+1}, is approximated:
    rest = float(sv[pairs]) if pairs < rank else 0.0  # the red team's best fits err 0.27·σ (identity) to 0.9·σ (diag(1, .02)))
    if tol < rest / (_APPROX * (1 + float(sv[0]))):
        return None
    near = (f"is within β = {beta:.3g} (times |x|∞) of the affine map M x + f(0) — its units add at most that, β ≤ τ —"
            if is_builtin(blk.activation) else f"may be within β ≈ {beta:.3g} (times |x|∞) of the affine map M x + f(0) — an "
            "estimate from σ's Lipschitz constant sampled on a grid, not a bound (it only withholds a verdict), β ≤ τ —")
    return (f"Unknown: f {near} so a residual-free block that approximates M x with {width} units, nonlinearly as well, may be "
            "within the tolerance, and no lower bound on that approximation is proved; the exact argument rules out an "
            "exact residual-free block only.")


def limit_share(blk: Block) -> float:
    """‖M‖∞/(1 + ‖M‖∞), rounded down: the skip's share of f(x) − g(x) along the ray of M's heaviest row's signs, where
    every residual-free g grows slower than |x| (σ bounded, σ∞ ≡ 0) or f's units are o(|x|) at 0 (degree, linearization)
    — the tolerance such an argument clears, at every width."""
    with np.errstate(all="ignore"):
        norm = float(np.abs(np.asarray(blk.M, dtype=np.float64)).sum(axis=1).max()) * (1 - (blk.d + 2) * 2.0**-52)
    return norm / (1 + norm) * (1 - 2.0**-50) if np.isfinite(norm) else 1 - 2.0**-50


def vanishing_skeleton(properties: object) -> bool:
    """Among a decision's σ properties, the asymptotic slopes are proved 0 on both sides (a = b = 0: σ∞ ≡ 0, so every
    residual-free block has g(tv)/t → 0 along every ray)."""
    slopes = next((p for p in properties if p.name == "asymptotic_slopes"), None)  # type: ignore[attr-defined]
    return slopes is not None and slopes.proved and all(k in slopes.value and facts.rational(slopes.value, k) == 0
                                                         for k in ("a", "b"))  # (cached facts: no sympy)


def _row_sum(A: np.ndarray, d: int) -> float:
    """‖A‖∞ (largest absolute row sum), raised past its rounding."""
    return float(np.max(np.sum(np.abs(A), axis=1))) * (1 + (d + 2) * 2.0**-52)


def _linear_parts(blk: Block, normM: float, size: float, tol: float, biases: bool):  # type: ignore[no-untyped-def]
    """Candidates (A, K, units per rank, A's formula, how the units realise it, whether a constant β = f(0) is added, C) with
    |f(x) − A x − β|∞ ≤ K·size·|x|∞ + C·Σ_i |w_i|∞ and units that realise x ↦ A x exactly, ``units per rank`` of them per rank-one
    term (read, not recorded: no verdict rests on them; a candidate that cannot pass the screen's first test is not formed):

    * ungated, σ(z) − σ(−z) = c·z (c ≠ 0): antipodal pairs (u, w/c), (−u, −w/c) give w·(u·x), 2 units per
      rank (with biases (u, b, w/c), (−u, −b, −w/c) give w·(u·x + b), and b_down the rest of f(0)). With
      e the even part σ(z) − (c/2)z:
      - A = M: f − A x − β = W_down(σ(W_up x + b_up) − σ(b_up)), K ≥ sup |σ(z) − σ(0)|/|z| bias-free, σ's
        Lipschitz constant with biases;
      - A = M + (c/2)·W_down W_up: f − A x − β = W_down(e(W_up x + b_up) − e(b_up)), K ≥ sup |e(z) − e(0)|/|z|
        bias-free (:func:`absorb.engine.witness.sigma_even_growth` for σ(0) = 0), e's Lipschitz constant with
        biases (:func:`absorb.engine.witness.sigma_even_lipschitz`);
      β = f(0) where f has biases or σ(0) ≠ 0. For a user's σ that is not piecewise linear these sups are
      estimated on a grid (:func:`_trusted_grid`), and the reason says so. With biases σ(z) − σ(−z − 2s) = c·(z + s)
      (a shifted flip) serves as well: pairs (u, b − s, w/c), (−u, −b − s, −w/c) give w·(u·x + b). For a user's σ
      with a constant in the map, where K is too large (a steep bump), the split σ(z) − t·z = q(z) + ρ(z)
      (:func:`_sampled_oscillation`: q the hinge of σ's slopes at ±∞, ρ bounded) gives
      |f(x) − A x − β|∞ ≤ K_q·size·|x|∞ + osc ρ·Σ_i |w_i|∞ (the last element: osc ρ; 0 for the others);
    * gated with a linear value branch, gate g bounded with γ = g(0) ≠ 0: one unit with gate
      row 0 gives γ·w·(u·x); A = M with K = sup |g|, and A = M + γ·W_down W_up with
      K = sup |g − γ| (:data:`absorb.engine.witness.GATE_BOUNDS`; for a user's gate, estimated on the grid);
      with biases x ↦ M x + f(0) within :func:`_gated_reach`."""
    from absorb.engine.witness import (
        GATE_BOUNDS,
        builtin_name,
        sigma_even_growth,
        sigma_even_lipschitz,
        sigma_lipschitz,
    )

    reach = tol * (1 + normM)  # r ≤ τ(1 + ‖A‖∞) with ‖A‖∞ ≤ ‖M‖∞ + |γ|·size for either A
    act = blk.activation
    if blk.gated:
        if not blk.value_identity:
            return
        bounds, units = GATE_BOUNDS.get(getattr(act, "name", None)) if is_builtin(act) else None, ""
        if bounds is None and not is_builtin(act):  # a user's gate: estimated on the grid where a map can pass
            with np.errstate(all="ignore"):  # (sup |g| ≥ |g(0)|, sup |g − g(0)| ≥ |g(±30) − g(0)|: a filter)
                g = np.asarray(act(np.array([0.0, -30.0, 30.0])), dtype=np.float64)
            g[0] = _at_zero(act)
            lo = float(np.max(np.abs(g[1:] - g[0])))
            lo = min(abs(float(g[0])), lo if math.isfinite(lo) else math.inf)
            if math.isfinite(g[0]) and (g[0] != 0 or biases) and lo * size <= reach + tol * abs(float(g[0])) * size:
                bounds = _sampled_gate(act, biases)
            units = " (the gate's bounds estimated from samples)"
        if bounds is None:
            return
        gamma, sup_g, sup_dev, lip = bounds
        if gamma == 0.0:  # (with biases: a gate row 0 and a gate bias c with g(c) ≠ 0 give g(c)·w·(u·x); A = M only)
            units = f"as gated units with gate row 0 and a gate bias c where g(c) ≠ 0{units}"
            sup_dev = math.inf
        else:
            units = f"as gated units with gate row 0 (g(0) = {gamma:.6g}){units}"
        if not blk.has_bias:
            if sup_g * size <= reach + tol * abs(gamma) * size:
                yield blk.M, sup_g, 1, "the linear map A = M", units, False, 0.0
            if sup_dev * size <= reach + tol * abs(gamma) * size:
                yield _plus_product(blk, gamma), sup_dev, 1, f"the linear map A = M + {gamma:.6g}·W_down W_up", units, False, 0.0
            return
        # f − (A x + f(0)) = W_down[(g(G x + c) − t) ⊙ U x + (g(G x + c) − g(c)) ⊙ b_up], t = 0 or γ
        r = _gated_reach(blk, sup_g, lip)
        if r <= reach:
            yield blk.M, r / size if size > 0 else 0.0, 1, "the affine map x ↦ A x + β, A = M, β = f(0)", units, True, 0.0
        r = _gated_reach(blk, sup_dev, lip)
        if r <= reach + tol * abs(gamma) * size:
            yield (_plus_product(blk, gamma), r / size if size > 0 else 0.0, 1,
                   f"the affine map x ↦ A x + β, A = M + {gamma:.6g}·W_down W_up, β = f(0)", units, True, 0.0)
        return
    flip = _analysis(act, "flip_identity[ungated]")  # (read, not recorded: the verdict does not rest on it)
    c = facts.rational(flip.value, "c") if flip.proved else None
    shift = None
    if not c and biases:  # σ(z) − σ(−z − 2s) = c·(z + s): the pairs' biases take the shift
        sh = _analysis(act, "shifted_flip")
        if sh.proved:  # (s may be irrational, √2: the pairs' biases −s then round, by ≤ ulp(s)/2 each, which moves
            # each pair's output by a constant ≤ 2L·|s − ŝ|·|w/c|, not counted: the screen only withholds a
            # not_absorbable, so a map it overrates costs an unknown, never a wrong verdict)
            c, shift = facts.rational(sh.value, "c"), facts.rational(sh.value, "s") or float(sh.value["s"])
            if not isinstance(shift, Fraction) and not blk.has_bias:  # (f(0) = 0: the rounding of −s is not within τ|f(0)|)
                c, shift = None, None
    defect, approx = 0.0, False
    if not c:  # σ whose flip identity fails by δ(z) = σ(z) − σ(−z) − c·z (c = L₊ − L₋ ≠ 0): pairs still serve, within a
        # small defect (a user's σ), or scaled where f(0) ≠ 0 (below)
        c, approx = _slope_gap(act, blk.d, any_sigma=blk.has_bias or _at_zero(act) != 0.0), True
        if not c:
            return
    half = abs(float(c)) / 2
    # lower bounds read from σ's cached facts (no σ evaluated, no sympy): either K for A = M is ≥ |c|/2 and ≥ |L±|,
    # and for the even part ≥ |L± − c/2| (σ(z)/z → L± at ±∞); a map that cannot pass is not formed
    sl = _analysis(act, "asymptotic_slopes")
    ends = [v for v in ((facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else ()) if v is not None]
    L_low = max([half, *(abs(float(v)) for v in ends)])
    K_low = max([0.0, *(abs(float(v) - float(c) / 2) for v in ends)])
    first, second = L_low * size <= reach, K_low * size <= reach + tol * half * size
    if not (first or second):
        return
    zero = _at_zero(act)
    if not math.isfinite(zero):
        return
    affine, biased = blk.has_bias or zero != 0.0, blk.has_bias
    # (where f(0) may be ≠ 0 the scaled pair (tu, w/(ct)), (−tu, −w/(ct)) gives w(u·x) + (w/(ct))·δ(t u·x), δ(y) = o(|y|):
    # within τ(|x|∞ + |f(0)|∞) for t large where |f(0)|∞ > 0 — a constant part as small as wished, checked below)
    scaled = approx and affine
    if approx and not scaled:  # (only now, where a map can pass: the defect's sup costs σ's pieces or the grid)
        defect = _flip_defect(act, c)
        if not defect:
            return
    pairs = (f"in antipodal pairs (σ(z) − σ(−z) = {c}·z)" if shift is None else
             f"in antipodal pairs with biases b − s, −b − s (σ(z) − σ(−z − 2s) = {c}·(z + s), s = {shift})")
    if scaled:
        pairs = (f"in scaled antipodal pairs (tu, w/({c}t)), (−tu, −w/({c}t)) (σ(z) − σ(−z) = {c}·z + δ(z), δ(y) = o(|y|): "
                 "the rest within τ|f(0)| for t large)")
    floor = 2.0**-1000 if scaled else 0.0  # (a positive constant part: the map then needs |f(0)|∞ > 0, proved below)
    if defect:
        pairs = (f"in antipodal pairs, within their defect (σ(z) − σ(−z) = {c}·z + δ(z), |δ(z)| ≤ {defect:.3g}|z|, which the "
                 "error counts)")

    def with_defect(A: np.ndarray, K: float) -> float:  # pairs (v, s·u/c), (−v, −s·u/c) per singular triple of A add δ's share
        if not defect or size <= 0:
            return K
        S = np.linalg.svd(A, compute_uv=True)
        return K + defect * float(np.sum(S[1] * (np.max(np.abs(S[0]), axis=0) * np.sum(np.abs(S[2]), axis=1)))) / (abs(float(c)) * size)
    to = "the affine map x ↦ A x + β, β = f(0), " if affine else "the linear map "
    # a user's σ (not a built-in as written): where the sample reads a smaller constant than the one derived (the
    # pieces' structural bound is not the least; none for a smooth σ), the estimate serves — the screen only withholds
    user = builtin_name(act) is None
    if first:
        L, note = sigma_lipschitz(act), ""
        est = (_sampled_lipschitz(act) if biased else _sampled_quotient(act, 0.0)) if user else None
        if est is not None and (L is None or est < L * (1 - 1e-6)):  # |σ(z) − σ(0)| ≤ G|z| bias-free (G ≤ L: a steep bump makes L ≫ G)
            L, what = est, ("Lipschitz constant" if biased else "sup |σ(z) − σ(0)|/|z|")
            note = f" (σ's {what} estimated from samples as {L:.3g})"
        if L is not None and L * size <= reach:
            yield blk.M, with_defect(blk.M, L), 2, to + "A = M", pairs + note, affine, floor
        elif user and affine and len(ends) == 2 and L_low * size < tol:
            osc = _sampled_oscillation(act, 0.0, ends, shift)
            if osc is not None:
                yield (blk.M, with_defect(blk.M, L_low), 2, to + "A = M", pairs + f" (σ within {L_low:.3g}|z| plus a part that varies by "
                       f"{osc:.3g}, estimated from samples)", affine, osc + floor)
    if second:
        K, note = (sigma_even_lipschitz(act, c) if affine else sigma_even_growth(act, c)), ""
        est = (_sampled_lipschitz(act, float(c) / 2) if biased else _sampled_quotient(act, float(c) / 2)) if user else None
        if est is not None and (K is None or est < K * (1 - 1e-6)):
            K, what = est, f"{'Lipschitz constant' if biased else 'sup |e(z) − e(0)|/|z|'} of its even part e(z) = σ(z) − ({c}/2)z"
            note = f" (σ's {what} estimated from samples as {K:.3g})"
        if K is not None and K * size <= reach + tol * half * size:
            A = _plus_product(blk, float(c) / 2)
            if np.all(np.isfinite(A)):
                yield A, with_defect(A, K), 2, to + f"A = M + ({c}/2)·W_down W_up", pairs + note, affine, floor
        elif user and affine and len(ends) == 2 and K_low * size < tol:
            osc = _sampled_oscillation(act, float(c) / 2, ends, shift)
            A = _plus_product(blk, float(c) / 2)
            if osc is not None and np.all(np.isfinite(A)):
                yield (A, with_defect(A, K_low), 2, to + f"A = M + ({c}/2)·W_down W_up",
                       pairs + f" (its even part e(z) = σ(z) − ({c}/2)z within {K_low:.3g}|z| plus a part that varies by "
                       f"{osc:.3g}, estimated from samples)", affine, osc + floor)


def _slope_gap(act: Activation, d: int, any_sigma: bool = False) -> object:
    """c = L₊ − L₋ ≠ 0 from a user's σ's proved slopes at ±∞ (its cached facts: no σ evaluated, no sympy): the flip
    constant pairs would have if σ(z) − σ(−z) = c·z held up to a small defect (:func:`_flip_defect`); None for a
    built-in, past d = 512 (an SVD per map), or without both slopes — except with ``any_sigma`` (f(0) may be ≠ 0:
    scaled pairs, no defect to count), any σ at any d."""
    if not any_sigma and (is_builtin(act) or d > 512):
        return None
    sl = _analysis(act, "asymptotic_slopes")
    lp, lm = (facts.rational(sl.value, "L_plus"), facts.rational(sl.value, "L_minus")) if sl.proved else (None, None)
    return None if lp is None or lm is None or lp == lm else lp - lm


def _gated_reach(blk: Block, sup_g: float, lip: float) -> float:
    """Σ_i |w_i|∞·(sup |g|·|u_i|₁ + sup |g′|·|b_up,i|·|g_i|₁) (g_i a row of W_gate), with a margin for its
    float rounding: |f(x) − M x − f(0)|∞ ≤ that·|x|∞ for a gated f with biases and a linear value branch."""
    U, G, D = (np.abs(np.asarray(a, dtype=np.float64)) for a in (blk.W_up, blk.W_gate, blk.W_down))
    bu = np.zeros(blk.n) if blk.b_up is None else np.abs(np.asarray(blk.b_up, dtype=np.float64))
    with np.errstate(all="ignore"):
        r = float(np.sum(np.max(D, axis=0) * (sup_g * np.sum(U, axis=1) + lip * bu * np.sum(G, axis=1))))
    return r * (1 + (blk.d + 4) * 2.0**-52) if math.isfinite(r) else math.inf


_CENTRE = (-2.0, 2.0)
"""The part of the grid read first where a large estimate already decides a screen (:func:`_nearly_linear`)."""


def _sampled_lipschitz(act: Activation, slope: float = 0.0, window: tuple[float, float] | None = None) -> float | None:
    """The largest difference quotient of σ(z) − slope·z between neighbouring trusted points of the grid
    (:func:`_trusted_grid`; only those in ``window``, whose neighbouring trusted points are neighbours in the whole
    grid too, so that the estimate over a window is at most the whole grid's): an estimate of sup |σ′ − slope| from
    below, not a bound (the screen that reads it only withholds a verdict, so an estimate from below withholds more,
    never less); None with fewer than 2 trusted points."""
    z, v = _trusted_grid(act, window)
    if len(z) < 2:
        return None
    q = np.abs(np.diff(v - slope * z)) / np.diff(z)
    return float(np.max(q))


def _sampled_quotient(act: Activation, slope: float) -> float | None:
    """The largest |σ(z) − σ(0) − slope·z|/|z| at the trusted points z ≠ 0 of the grid (:func:`_trusted_grid`): an
    estimate of its sup from below, not a bound (the screen that reads it only withholds a verdict); None without
    a finite σ(0) or a trusted point."""
    z, v = _trusted_grid(act)
    v0 = _float_at_zero(act)
    keep = z != 0
    if not (math.isfinite(v0) and np.any(keep)):
        return None
    return float(np.max(np.abs(v[keep] - v0 - slope * z[keep]) / np.abs(z[keep])))


def _sampled_gate(act: Activation, zero_ok: bool = False) -> tuple[float, float, float, float] | None:
    """(γ = g(0), sup |g|, sup |g − γ|, sup |g′|) of a user's gate, the sups estimated on the trusted grid
    (:func:`_trusted_grid`; :func:`_sampled_lipschitz`); None where γ is not finite, or is 0 (unless ``zero_ok``:
    with biases a gate bias c with g(c) ≠ 0 serves — None then where g is 0 at every point of the grid)."""
    z, v = _trusted_grid(act)
    gamma = _at_zero(act)  # (exactly 0 where a tiny float64 value is rounding: tanh(x) + sin(3)² + cos(3)² − 1)
    lip = _sampled_lipschitz(act)
    if not (math.isfinite(gamma) and (gamma != 0.0 or zero_ok and np.any(v != 0)) and len(z) and lip is not None):
        return None
    return gamma, float(np.max(np.abs(v))), float(np.max(np.abs(v - gamma))), lip


def _sampled_oscillation(act: Activation, slope: float, ends: list, shift: object) -> float | None:  # type: ignore[type-arg]
    """max − min of ρ(z) = σ(z) − slope·z − q(z) at the trusted points of the grid (:func:`_trusted_grid`), q the
    hinge at h = −s (0 without a shift s) with slopes L₊ − slope right of h and L₋ − slope left of it (``ends`` =
    [L₊, L₋], σ(z)/z → L± at ±∞): σ(z) − slope·z = q(z) + ρ(z) with q Lipschitz (max |L± − slope|), so
    |(σ − slope·z)(y) − (σ − slope·z)(b)| ≤ max |L± − slope|·|y − b| + osc ρ — a steep bounded bump costs its
    height, not its slope. An estimate from below, not a bound (the screen that reads it only withholds a verdict)."""
    z, v = _trusted_grid(act)
    if len(z) < 2:
        return None
    h = -float(shift) if shift else 0.0  # type: ignore[arg-type]
    lp, lm = float(ends[0]) - slope, float(ends[1]) - slope
    with np.errstate(all="ignore"):
        rho = v - slope * z - np.where(z >= h, lp * (z - h), lm * (z - h))
    out = float(rho.max() - rho.min())
    return out if math.isfinite(out) else None


def _product(blk: Block) -> np.ndarray:
    """W_down W_up in float64."""
    with np.errstate(all="ignore"):
        return np.asarray(blk.W_down, dtype=np.float64) @ np.asarray(blk.W_up, dtype=np.float64)


def _plus_product(blk: Block, t: float, DU: np.ndarray | None = None) -> np.ndarray:
    """M + t·W_down W_up in float64 (inf or nan where it overflows: the screen then skips it); ``DU``: W_down W_up
    when the caller already formed it (:func:`_product`, for a loop over several t)."""
    with np.errstate(all="ignore"):
        return blk.M + t * (_product(blk) if DU is None else DU)
