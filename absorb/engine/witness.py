"""Build the absorbing residual-free block from an index set, and check it independently.

The construction (docs/mathematics.md §2, result 5, and its extensions):

* ungated σ with σ(z) − σ(−z) = c·z: negate the rows u_i (and b_up,i) for i ∈ S; then
  B'(x) = B(x) − c·D_S(U_S x + b_S). If D_S U_S = −M/c this is f(x) − c·D_S b_S, and
  ``b_down ← b_down + c·D_S b_S`` removes the constant.
* gated g with g(z) + g(−z) = c (sigmoid-gated GLU): negate the gate rows (and b_gate,i)
  and the down columns w_i for i ∈ S; then B'(x) = B(x) − c·D_S(V_S x + b_S) with V the
  value projection, and the same condition and bias fix.

What ``absorbable`` guarantees (docs/user-guide.md, "Witness check"): for every x,
``|f(x) − B'(x)|_∞ ≤ ε·(|f(x)|_∞ + |x|_∞ + |f(0)|_∞)`` with ε ≤ tol + :func:`rounding_allowance`
(relative to the function's own size; |f(0)|_∞ accounts for the float64 rounding of a moved
output bias, and is 0 for a bias-free block). For a flip ε is proved (:func:`flip_bound`:
B' − f = −(M + c·D_S U_S) x + e exactly, e the rounding of the moved bias, so
|f − B'|_∞ ≤ ρ∞|x|_∞ + |e|_∞ with ρ∞ the absolute ∞-operator norm of M + c·D_S U_S); for a
canonical-form construction it is proved from the
rounding of its exact weights (:func:`rounded_construction_bound`) or from the exact
parameter difference (:func:`unit_difference_bound`, :func:`pl_bound`). As a second check,
``f`` and ``B'`` are evaluated on seeded random inputs at several scales **and on the
kink / gate hyperplanes** (:func:`evaluation_error`), and — when the sizes allow —
``D_S U_S = T`` is confirmed in exact rational arithmetic.

The points on the hyperplanes and their exact pre-activations are built in
:mod:`absorb.engine._kink_points`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np

from absorb._validate import matvec
from absorb.engine._kink_points import _fix_near_zero, _hyperplane_points, _kink_rows, _Points, _probe, pl_sup_error
from absorb.engine.hypotheses import _norms
from absorb.engine.verdict import Witness
from absorb.model.activations import is_builtin
from absorb.model.block import Block, Stack
from absorb.rigorous import (
    EXACT_FLIP_WORK,
    _dyadic,
    flip_bias_error_upper,
    flip_inf_upper,
    float_up,
    magnitudes_ok,
    relative_residual,
    row_slices,
    unit_reach,
)
from absorb.rigorous import gamma as _gamma

_SCALES = (1e-2, 1.0, 1e2)
_LARGE_BLOCK = 1 << 22
"""n·d from which a flip witness whose error is already proved is sampled at
:data:`_PROVED_SAMPLE` random inputs per scale instead of 48, and on the hyperplanes of at most
:data:`_PROVED_PLANES` units instead of 256 (the weights of such a block stay float32)."""
_PROVED_SAMPLE = 16
_PROVED_PLANES = 96
_EXACT_MAX_WORK = 200_000  # |S|·d² multiply-adds in Fractions


def moved_bias(block: Block, idx: np.ndarray, c: Fraction, b: np.ndarray, s: Fraction = Fraction(0)) -> np.ndarray:
    """b'_down = b_down + c·D[:, idx] (b + s), rounded once from its exact value where d·|idx| is at
    most :data:`EXACT_FLIP_WORK` (else in float64): with a huge bias the sum cancels (b_down =
    fl(3·b_up)), and the float64 sum kept its rounding, 2^78 at b_up = 2^130 — the exact value
    (fl(3b) − 3b) is itself a float, so the witness is exact there. The sums are taken in integers
    (:func:`absorb.rigorous._dyadic`, as :func:`flip_bias_error_upper` takes them), one Fraction a row."""
    D = block.W_down
    bd = np.zeros(block.d) if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)
    if block.d * idx.size > EXACT_FLIP_WORK or not (np.all(np.isfinite(b)) and np.all(np.isfinite(D[:, idx]))):
        return bd + float(c) * matvec(D[:, idx], b + float(s))
    Di, eD = _dyadic(D[:, idx])
    (bi,), eb = _dyadic(np.asarray(b, dtype=np.float64)[None, :])
    return np.array([_to_float(Fraction(float(bd[r])) + c * (Fraction(sum(w * v for w, v in zip(row, bi)), 1 << (eD + eb))
                                                             + s * Fraction(sum(row), 1 << eD)))
                     for r, row in enumerate(Di)])


def _to_float(q: Fraction) -> float:
    """q rounded to float64, ±inf past its range (a moved bias that float64 cannot hold: no witness is formed from it)."""
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def flip_block(block: Block, S: tuple[int, ...], c: Fraction, s: Fraction = Fraction(0),
               value: tuple[Fraction, Fraction] | None = None) -> Block:
    """The residual-free block obtained by flipping the hidden units in ``S``.

    ``value`` = (c_h, k): a gated block whose value activation is h(z) = c_h·z + k, flipped in its
    own class (its value rows and biases kept): each flipped unit hands c·w_i·h(v_i·x + b_i) to
    the skip, so the output bias moves by c·D_S(c_h·b_S + k), exactly, rounded once.

    ``s`` ≠ 0 (ungated σ with σ(z) − σ(−z − 2s) = c·(z + s), :func:`absorb.symbolic.shift.shifted_flip`):
    the flipped units also get b'_up,i = −b_up,i − 2s, so that σ(−z_i − 2s) = σ(z_i) − c·(z_i + s), and
    the output bias moves by c·D_S(b_S + s) (a bias-free f gets biases: the witness is in the biased class)."""
    idx = np.asarray(S, dtype=int)
    D = block.W_down
    if s:
        if block.gated:
            raise ValueError("a shifted flip is for an ungated σ")
        W_up = block.W_up.copy()
        W_up[idx] *= -1
        b0 = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
        b_up = b0.copy()
        b_up[idx] = -b0[idx] - 2 * float(s)
        b_down = moved_bias(block, idx, c, b0[idx], s)
        return block.replace(W_up=W_up, b_up=b_up, b_down=b_down, skip=np.zeros((block.d, block.d)), name=block.name + "'")
    if block.gated:
        W_gate = block.W_gate.copy()
        W_gate[idx] *= -1
        b_gate = None if block.b_gate is None else block.b_gate.copy()
        if b_gate is not None:
            b_gate[idx] *= -1
        W_down = D.copy()
        W_down[:, idx] *= -1
        new = dict(W_gate=W_gate, b_gate=b_gate, W_down=W_down)
    else:
        W_up = block.W_up.copy()
        W_up[idx] *= -1
        b_up = None if block.b_up is None else block.b_up.copy()
        if b_up is not None:
            b_up[idx] *= -1
        new = dict(W_up=W_up, b_up=b_up)
    ch, k = value if value is not None and block.gated else (Fraction(1), Fraction(0))
    if (block.b_up is not None or k) and idx.size:
        b_S = np.zeros(idx.size) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)[idx]
        new["b_down"] = moved_bias(block, idx, c * ch, b_S, k / ch)
    return block.replace(**new, skip=np.zeros((block.d, block.d)), name=block.name + "'")


def exact_match(U: np.ndarray, D: np.ndarray, T_num: np.ndarray, c: Fraction, S: tuple[int, ...]) -> bool | None:
    """Whether D_S U_S = −M/c exactly (``T_num`` = M), in rationals; None if too large."""
    d = U.shape[1]
    if len(S) * d * d > _EXACT_MAX_WORK:
        return None
    Uf = [[Fraction(float(v)) for v in U[i]] for i in S]
    Df = [[Fraction(float(D[r, i])) for i in S] for r in range(d)]
    for r in range(d):
        for col in range(d):
            acc = sum((Df[r][k] * Uf[k][col] for k in range(len(S))), Fraction(0))
            if acc * c != -Fraction(float(T_num[r, col])):
                return False
    return True


_EXACT_ENTRIES = 4096
"""Most pre-activations near zero decided in exact arithmetic per check (a point left past it
fails the check: its hyperplanes went unchecked)."""


def _blocks_of(obj: object) -> list[Block] | None:
    if isinstance(obj, Block):
        return [obj]
    if isinstance(obj, Stack):
        return list(obj.blocks)
    return None


def _arrays(b: Block) -> list[np.ndarray]:
    return [a for a in (b.W_up, b.W_down, b.W_gate, b.b_up, b.b_gate, b.b_down, b.skip) if a is not None]


def _unit_parts(b: Block) -> list[np.ndarray]:
    """Per-unit arrays (row i of each): W_up, W_down's column, W_gate, the biases (0 if none)."""
    z = np.zeros(b.n)
    parts = [b.W_up, b.W_down.T] + ([b.W_gate] if b.gated else [])
    return parts + [(z if v is None else v)[:, None] for v in (b.b_up, b.b_gate)]


def _unit_keys(b: Block, idx: np.ndarray) -> list[bytes]:
    """A cheap key per listed hidden unit (a few coordinates of each per-unit array)."""
    idx = np.asarray(idx, dtype=np.intp)
    cols = [np.asarray(p[:, _probe(p.shape[1])][idx], dtype=np.float64) + 0.0 for p in _unit_parts(b)]  # −0 → 0
    rows = np.ascontiguousarray(np.hstack(cols)) if cols else np.zeros((idx.size, 0))
    return [r.tobytes() for r in rows]


def _same_unit(f: Block, i: int, g: Block, j: int) -> bool:
    """Unit i of f and unit j of g are identical (every per-unit array, in full)."""
    return all(np.array_equal(a[i], c[j]) for a, c in zip(_unit_parts(f), _unit_parts(g)))


def _same_memory(a: np.ndarray, c: np.ndarray) -> bool:
    """a and c read the same bytes the same way (so they are equal entry by entry)."""
    return (a.__array_interface__["data"][0] == c.__array_interface__["data"][0]
            and a.shape == c.shape and a.strides == c.strides and a.dtype == c.dtype)


def _same_activation(f: Block, g: Block) -> bool:
    """f and g evaluate the same σ: the same expression and the same numpy function (a unit
    cancels only if both blocks compute it alike)."""
    a, c = f.activation, g.activation
    return a is c or (a.expr == c.expr and a.np_fn is c.np_fn)


def _comparable(f: Block, g: Block) -> bool:
    """f and g compare unit by unit: both gated or both not, the same σ (:func:`_same_activation`),
    the same d."""
    return f.gated == g.gated and f.d == g.d and _same_activation(f, g)


def _difference_units(f: Block, g: Block) -> tuple[list[int], list[int]] | None:
    """Units of f and of g that do not cancel in f − g (a unit identical in both contributes
    the same at every input), or None when the blocks are not comparable unit by unit."""
    if not _comparable(f, g):
        return None
    same = np.zeros(min(f.n, g.n), dtype=bool)  # first the units identical in place (a flip keeps the order)
    if same.size:
        same[:] = True
        for a, c in zip(_unit_parts(f), _unit_parts(g)):
            if _same_memory(a, c):
                continue  # one array read twice (a flip keeps W_down, or W_up when gated)
            for sl in row_slices(same.size, a.shape[1]):
                same[sl] &= np.all(a[sl] == c[sl], axis=1)
    rest_f = np.setdiff1d(np.arange(f.n), np.flatnonzero(same))
    rest_g = np.setdiff1d(np.arange(g.n), np.flatnonzero(same))
    pool: dict[bytes, list[int]] = {}
    for i, k in zip(rest_g.tolist(), _unit_keys(g, rest_g)):
        pool.setdefault(k, []).append(i)
    left_f = []
    for i, k in zip(rest_f.tolist(), _unit_keys(f, rest_f)):
        cand = pool.get(k, [])
        hit = next((t for t in range(len(cand) - 1, -1, -1) if _same_unit(f, i, g, cand[t])), None)
        if hit is None:
            left_f.append(i)
        else:
            cand.pop(hit)
    left_g = sorted(i for v in pool.values() for i in v)
    return left_f, left_g


def _same_function(f: Block, g: Block) -> bool:
    """Every unit cancels and the skip and output bias agree: f − g is identically zero."""
    du = _difference_units(f, g)
    if du is None or du[0] or du[1]:
        return False
    zero = np.zeros(f.d)
    return bool(np.array_equal(f.M, g.M) and np.array_equal(zero if f.b_down is None else f.b_down + 0.0,
                                                             zero if g.b_down is None else g.b_down + 0.0))


def _unit_sums(blk: Block, pts: _Points, budget: list[int], units: np.ndarray | None = None,
               signs: np.ndarray | None = None, rounding: list[np.ndarray | None] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """``Σ_i w_i h_i(x)`` over the hidden units ``units`` (all when None) at the exact points —
    σ (or the gate) sees each pre-activation on the right side of 0, exactly 0 on its
    hyperplane; the rest is float64 at ``X`` — with ``Σ_i |w_i||h_i(x)|`` at the points near 0,
    None, and the mask of points skipped. One pass over those units' weights
    (:meth:`Block.unit_blocks`).

    ``signs`` (one per listed unit): the sum is instead ``Σ_i w_i (h_i − s_i h̄_i)``, where
    h̄_i is unit i with its kink row and bias negated (:meth:`Block.hidden`'s ``negated``):
    f − g over the units that g holds mirrored, its W_down column times s_i; the third
    item is then the size term of the mirrored units.

    ``rounding`` (a list, when given): its one item is set to a bound, point by point and
    coordinate by coordinate, on the float64 rounding of the sum returned (the sum of the
    units' exact values at the exact points minus the one computed; :func:`_hidden_error`),
    or None when σ's accuracy is not known; the sum is then taken in at most
    ``2·len(units) + 2`` roundings per coordinate (:data:`_SUM_EXTRA` counts them)."""
    X, nx, small = pts.X, pts.norms, pts.small
    skipped = np.zeros(X.shape[0], dtype=bool)
    out = np.zeros((X.shape[0], blk.d))
    size_small = np.zeros((int(small.sum()), blk.d))
    size_mirror = None if signs is None else np.zeros_like(size_small)
    if units is not None and len(units) == 0:
        if rounding is not None:
            rounding[:] = [np.zeros_like(out)]
        return out, size_small, size_mirror, skipped

    def fix(Z: np.ndarray, R: np.ndarray, bk: np.ndarray | None) -> None:
        _fix_near_zero(Z, R, bk, X, nx, pts, budget, skipped)

    start = 0
    err = None if rounding is None else np.zeros((X.shape[0], blk.d))
    count = blk.n if units is None else len(units)
    for idx, W_up, W_gate, W_down in blk.unit_blocks(units):
        if signs is None:
            H, Hn = blk.hidden(X, idx, W_up, W_gate, fix), None
            T = H
        else:
            H, Hn = blk.hidden(X, idx, W_up, W_gate, fix, negated=True)
            s = signs[start:start + W_down.shape[1]]
            start += W_down.shape[1]
            T = H - s * Hn
        out += T @ W_down.T
        if err is not None:
            e = _hidden_error(blk, X, idx, W_up, W_gate, H, Hn, T)
            if e is None:
                err = None
            else:  # the terms' rounding in the sum (≤ 2·count + extra roundings) and their own errors
                err += (_gamma(2 * count + _SUM_EXTRA + blk.d) * np.abs(T) + e) @ np.abs(W_down).T
        if small.any() and (np.any(H[small]) or (Hn is not None and np.any(Hn[small]))):
            # (σ(0) = 0 and no bias: the hidden layer is 0 at x = 0)
            absW = np.abs(W_down).T
            size_small += np.abs(H[small]) @ absW
            if Hn is not None:
                size_mirror += np.abs(Hn[small]) @ absW
    if rounding is not None:
        rounding[:] = [None if err is None else err * _MARGIN + (count + 1) * 2.0**-1000]
    return out, size_small, size_mirror, skipped


_SUM_EXTRA = 8
"""Roundings a coordinate of a block's evaluation takes besides its hidden units' two each (the
skip's product, the output bias, the difference of f and g): its rounding bound counts them."""
_MARGIN = 1 + 2.0**-20
"""Covers the rounding of a rounding bound's own float64 evaluation (sums and products of
nonnegative terms, each within γ_{n+d} of its exact value)."""
_EXACT_SIGMA = {"relu": 0.0, "identity": 0.0, "leaky_relu": 2.0**-52, "relu2": 2.0**-52}
"""Built-in σ evaluated exactly (relu, identity) or in one rounding (0.01·z, z·z): the relative
error of its numpy value."""


def _sigma_error(act: object, Zabs: np.ndarray, H: np.ndarray, delta: np.ndarray) -> np.ndarray | None:
    """A bound on |σ̂(ẑ) − σ(z)| from an upper bound ``Zabs`` of |ẑ|, ``H`` ≥ |σ̂(ẑ)| and
    ``delta`` ≥ |ẑ − z|: σ's sup |σ′| over [ẑ − δ, ẑ + δ] times δ (:data:`_SIGMA_LIPSCHITZ`;
    2(|ẑ| + δ) for ReLU²) plus the error of σ's numpy value (:data:`_EXACT_SIGMA`, else
    :data:`_SIGMA_REL`); for a user's piecewise-linear expression its derived Lipschitz constant
    and the bound a·|ẑ| + b of its float64 evaluation's error (:func:`expression_sigma`). None for
    a σ with no stated bound (any other user's expression)."""
    if not is_builtin(act):  # type: ignore[arg-type]
        got = expression_sigma(act)
        if got is None:
            return None
        L, a, b = got
        return L * delta + a * Zabs + b
    name = act.name  # type: ignore[attr-defined]
    L = 2.0 * (Zabs + delta) if name == "relu2" else _SIGMA_LIPSCHITZ.get(name)
    if L is None:
        return None
    acc = _EXACT_SIGMA[name] * H if name in _EXACT_SIGMA else _SIGMA_REL * (H + Zabs + delta) + 2.0**-1000
    return L * delta + acc


_EXPR_BOUNDS: dict[str, tuple[float, float, float] | None] = {}


def expression_sigma(act: object) -> tuple[float, float, float] | None:
    """``(L, a, b)`` for a user's piecewise-linear σ (:func:`absorb.symbolic.shift.expression_bounds`):
    |σ(p) − σ(q)| ≤ L|p − q| for all real p, q and |σ̂(z) − σ(z)| ≤ a|z| + b for its float64 value
    (L raised past its rounding); None for a built-in or any other expression (cached by key)."""
    if is_builtin(act) or getattr(act, "expr", None) is None:  # type: ignore[arg-type]
        return None
    key = act.key  # type: ignore[attr-defined]
    if key not in _EXPR_BOUNDS:
        from absorb.symbolic.shift import expression_bounds

        got = expression_bounds(act.expr)  # type: ignore[attr-defined]
        _EXPR_BOUNDS[key] = None if got is None else (float(got[0]) * (1 + 2.0**-52), got[1], got[2])
    return _EXPR_BOUNDS[key]


def sigma_lipschitz(act: object) -> float | None:
    """σ's global Lipschitz constant where one is stated: a built-in's (:data:`_SIGMA_LIPSCHITZ`) or
    a user's piecewise-linear expression's (:func:`expression_sigma`); None otherwise."""
    name = builtin_name(act)
    if name is not None:
        return _SIGMA_LIPSCHITZ.get(name)
    got = expression_sigma(act)
    return None if got is None else got[0]


def builtin_name(act: object) -> str | None:
    """The built-in σ that ``act`` is: its own name, or for a user's expression written as a built-in's sympy
    form (``expr:Max(0,x)`` is ReLU) that built-in's name; None otherwise."""
    if is_builtin(act):  # type: ignore[arg-type]
        return act.name  # type: ignore[attr-defined]
    from absorb.model.activations import get_activation

    key = getattr(act, "key", None)
    return next((name for name in _SIGMA_LIPSCHITZ if key is not None and get_activation(name).key == key), None)


_EVEN_GROWTH = {"relu": 0.5, "gelu": 0.5, "gelu_tanh": 0.5, "silu": 0.5, "quick_gelu": 0.5, "leaky_relu": 0.495}
"""K with |σ(z) − (c/2)·z| ≤ K|z| for every real z, where σ(z) − σ(−z) = c·z (c = 1; leaky ReLU
c = 1.01): σ's even part is |z|/2 (ReLU), z(Φ(z) − 1/2) (GELU), z(s(z) − 1/2) (SiLU), z(s(1.702z) −
1/2) (quick-GELU), (z/2)·tanh(·) (GELU-tanh), each at most |z|/2; 0.99|z|/2 for leaky ReLU."""

_EVEN_LIPSCHITZ = {"relu": 0.5, "leaky_relu": 0.495, "gelu": 0.63, "gelu_tanh": 0.63, "silu": 0.6, "quick_gelu": 0.6, "softplus": 0.5}
"""L_e ≥ sup |e′| for σ's even part e(z) = σ(z) − (c/2)·z: |z|/2 (ReLU), 0.99|z|/2 (leaky ReLU); for GELU
e′(z) = Φ(z) + zφ(z) − 1/2, largest at z = ±√2 (0.62890…; its tanh form 0.62899…); for SiLU e′(z) =
s(z)(1 + z(1 − s(z))) − 1/2, largest at z ≈ ±2.3994 (0.59984…), the same for quick-GELU (SiLU at 1.702z,
scaled); each → 1/2 at ±∞. Softplus: e(z) = log(2cosh(z/2)), e′ = tanh(z/2)/2, below 1/2."""

GATE_BOUNDS = {"sigmoid": (0.5, 1.0, 0.5, 0.25)}
"""(γ = g(0), sup |g|, sup |g − γ|, sup |g′|) for a bounded gate g with g(0) ≠ 0: sigmoid (1/2, 1, 1/2, 1/4)."""


def sigma_even_lipschitz(act: object, c: Fraction) -> float | None:
    """A Lipschitz constant of σ's even part σ(z) − (c/2)·z, where σ(z) − σ(−z) = c·z: a built-in's
    (:data:`_EVEN_LIPSCHITZ`); a user's piecewise-linear expression's, derived from its pieces
    (:func:`absorb.symbolic.shift.expression_bounds`); None otherwise."""
    name = builtin_name(act)
    if name is not None:
        return _EVEN_LIPSCHITZ.get(name)
    if expression_sigma(act) is None:
        return None
    import sympy as sp

    from absorb.model.activations import X
    from absorb.symbolic.shift import expression_bounds

    got = expression_bounds(sp.expand(act.expr - sp.Rational(c.numerator, c.denominator) / 2 * X))  # type: ignore[attr-defined]
    return None if got is None else float(got[0]) * (1 + 2.0**-50)


def sigma_even_growth(act: object, c: Fraction) -> float | None:
    """A K ≥ sup_z |σ(z) − (c/2)·z| / |z| for a σ with σ(0) = 0 and σ(z) − σ(−z) = c·z: a
    built-in's (:data:`_EVEN_GROWTH`); for a user's piecewise-linear expression the least of σ's
    Lipschitz constant and :func:`absorb.symbolic.shift.even_growth`'s bounds; None otherwise."""
    name = builtin_name(act)
    if name is not None:
        return _EVEN_GROWTH.get(name)
    got = expression_sigma(act)
    if got is None:
        return None
    from absorb.symbolic._core import get
    from absorb.symbolic.shift import even_growth

    hom = get(act, "homogeneity")  # (σ's cached facts: proved once per expression)
    k = even_growth(act.expr, c, homogeneous=hom.proved and hom.value.get("k") == 1)  # type: ignore[attr-defined]
    lip = sigma_even_lipschitz(act, c)  # (σ(0) = 0: |e(z)| = |e(z) − e(0)| ≤ Lip(e)|z|)
    return min(v for v in (got[0], None if k is None else float(k) * (1 + 2.0**-50), lip) if v is not None)


def _hidden_error(blk: Block, X: np.ndarray, idx: slice | np.ndarray, W_up: np.ndarray, W_gate: np.ndarray | None,
                  H: np.ndarray, Hn: np.ndarray | None, T: np.ndarray) -> np.ndarray | None:
    """A bound, entry by entry, on |T̂ − T| for the terms ``T`` = H (or H − s·H̄, ``Hn`` given) of
    :func:`_unit_sums` at the points ``X``, T̂ as computed there, T exact at the exact points
    (whose rational coordinates X holds rounded); None when σ (or the value activation) has
    no stated accuracy (:func:`_sigma_error`).

    A pre-activation ẑ = fl(r·x + β) (or its exact value where :func:`_fix_near_zero` set it)
    is within δ = γ_{d+3}(|r|·|x| + |β|) of the exact one (the rounding of x included); σ
    then adds :func:`_sigma_error`; a gate's product ĝ·v̂ adds u|ĝv̂| + |ĝ|·e_v + (|v̂| + e_v)·e_g."""
    R, b = (W_gate, blk.b_gate) if W_gate is not None else (W_up, blk.b_up)
    gd = _gamma(blk.d + 3)
    A = np.abs(X)
    tiny = blk.d * 2.0**-1060

    def pre(W: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(|ẑ| + 2δ, δ) for the rows W: ẑ here is recomputed without the exact fix (which
        moves it by at most 2δ)."""
        Z = X @ W.T
        size = A @ np.abs(W).T
        if bias is not None:
            Z = Z + bias[idx]
            size = size + np.abs(bias[idx])
        delta = gd * size * _MARGIN + tiny
        return np.abs(Z) + 2 * delta, delta

    Zabs, delta = pre(R, b)
    act = blk.activation
    if W_gate is None:
        e = _sigma_error(act, Zabs, np.abs(H), delta)
        en = None if Hn is None or e is None else _sigma_error(act, Zabs, np.abs(Hn), delta)
    else:
        Vabs, dv = pre(W_up, blk.b_up)
        if not blk.value_identity:  # h(v̂): h's own error, and |h(v̂)| read from its value
            Vv = blk.value_activation(X @ W_up.T + (0.0 if blk.b_up is None else blk.b_up[idx]))
            ev = _sigma_error(blk.value_activation, Vabs, np.abs(Vv), dv)
            if ev is None:
                return None
            Vabs = np.abs(Vv) + 2 * ev
            dv = ev
        else:
            Vabs = Vabs - dv  # |v̂| + δ_v ≥ |v|
        e = en = None
        Zg = X @ R.T + (0.0 if b is None else b[idx])  # (without the fix: within 2δ of the fixed ẑ)
        G = np.abs(act(Zg))
        eg = _sigma_error(act, Zabs, G, 2 * delta)
        if eg is not None:
            gb = G + eg  # ≥ |ĝ| at the fixed pre-activation and ≥ |g|
            e = 2.0**-52 * np.abs(H) + gb * dv + (Vabs + dv) * eg
            if Hn is not None:
                Gn = np.abs(act(-Zg))
                egn = _sigma_error(act, Zabs, Gn, 2 * delta)
                en = None if egn is None else 2.0**-52 * np.abs(Hn) + (Gn + egn) * dv + (Vabs + dv) * egn
    if e is None or (Hn is not None and en is None):
        return None
    if Hn is None:
        return e
    return e + en + 2.0**-52 * np.abs(T)


def _mirror_units(f: Block, g: Block, left_f: np.ndarray, left_g: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``(i, j, s)`` of units of f (from ``left_f``) and of g (from ``left_g``) where
    g's unit j is f's unit i with its kink row and bias negated, its W_down column s times
    f's (s = ±1) and every other per-unit array equal: g's unit then contributes
    ``s·w_i h̄_i`` (as :func:`_unit_sums`). Candidates share a cheap key; each pair is then
    compared in full, so a unit that is not mirrored exactly is never paired."""
    none = np.zeros(0, dtype=np.intp)
    if not (_comparable(f, g) and left_f.size and left_g.size):
        return none, none, np.zeros(0)
    (Rf, bf), (Rg, bg) = _kink_rows(f), _kink_rows(g)
    probe = _probe(f.d)

    def keys(R: np.ndarray, b: np.ndarray | None, idx: np.ndarray, sign: float) -> list[bytes]:
        v = np.hstack([R[np.ix_(idx, probe)].astype(np.float64), (np.zeros(idx.size) if b is None else b[idx])[:, None]])
        return [k.tobytes() for k in np.ascontiguousarray(sign * v + 0.0)]  # (−0 → 0)

    pool: dict[bytes, list[int]] = {}
    for j, k in zip(left_g.tolist(), keys(Rg, bg, left_g, -1.0)):
        pool.setdefault(k, []).append(j)
    pi, pj = [], []
    for i, k in zip(left_f.tolist(), keys(Rf, bf, left_f, 1.0)):
        if pool.get(k):
            pi.append(i)
            pj.append(pool[k].pop())
    I, J = np.asarray(pi, dtype=np.intp), np.asarray(pj, dtype=np.intp)
    ok = np.ones(I.size, dtype=bool)
    sign = np.ones(I.size)
    zf, zg = np.zeros(f.n), np.zeros(g.n)
    others = [(f.W_up, g.W_up), ((zf if f.b_up is None else f.b_up)[:, None], (zg if g.b_up is None else g.b_up)[:, None])] if f.gated else []
    for sl in row_slices(I.size, f.d):
        i, j = I[sl], J[sl]
        good = np.all(Rg[j] == -Rf[i], axis=1)
        good &= (zg if bg is None else bg)[j] == -(zf if bf is None else bf)[i]
        for a, c in others:
            if not (_same_memory(a, c) and np.array_equal(i, j)):  # (else: equal)
                good &= np.all(c[j] == a[i], axis=1)
        if _same_memory(f.W_down, g.W_down) and np.array_equal(i, j):
            plus = minus = np.ones(i.size, dtype=bool)
        else:
            Df, Dg = f.W_down[:, i], g.W_down[:, j]
            plus, minus = np.all(Dg == Df, axis=0), np.all(Dg == -Df, axis=0)
        ok[sl] = good & (plus | minus)
        sign[sl] = np.where(plus, 1.0, -1.0)
    return I[ok], J[ok], sign[ok]


def _eval_block_at(blk: Block, pts: _Points, budget: list[int], units: np.ndarray | None = None,
                   rounding: list[np.ndarray | None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``f(x)`` at the exact points (:func:`_unit_sums`), the skipped-point mask, and the
    size of the summed terms at the points near 0. ``units``: only those hidden units are
    summed (the others being identical in the block compared with). ``rounding``: as for
    :func:`_unit_sums`, a bound on the rounding of the value returned (skip and output bias
    included) against f's exact value at the exact points."""
    out, size_small, _none, skipped = _unit_sums(blk, pts, budget, units, rounding=rounding)
    small = pts.small  # elsewhere |x| is the scale, as for random inputs
    lin = blk.linear(pts.X)
    size = np.zeros_like(out)
    if small.any():
        size[small] = size_small + np.abs(lin[small])
    if rounding is not None and rounding[0] is not None:
        g = _gamma(2 * (blk.n if units is None else len(units)) + _SUM_EXTRA + blk.d)
        A = np.abs(pts.X)
        terms = A if blk.skip is None else (np.zeros_like(out) if blk.is_residual_free else A @ np.abs(blk.skip).T)
        if blk.b_down is not None:
            terms = terms + np.abs(blk.b_down)
        rounding[0] = rounding[0] + g * terms * _MARGIN
    if blk.b_down is not None:
        out = out + blk.b_down
        size = size + np.abs(blk.b_down)
    return lin + out, skipped, size


def _eval_at(obj: object, pts: _Points, budget: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f at the points, the skipped-point mask, and the size of the summed terms (|M x| +
    |W_down|·|hidden| + |b_down| of the first block: the scale of the rounding of f (and of
    g), which at x = 0 is the only scale there is)."""
    blocks = _blocks_of(obj)
    assert blocks is not None
    Y, skipped, size = _eval_block_at(blocks[0], pts, budget)
    for blk in blocks[1:]:
        Y = blk(Y)
    return Y, skipped, size


def _inf_norms(A: np.ndarray) -> np.ndarray:
    return np.abs(A).max(axis=1, initial=0.0)


def _rel_errors(diff: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``diff / scale`` per point (∞-norms); inf where either is not finite (an overflow or
    a nan fails the check, never passes it)."""
    ok = np.isfinite(diff) & np.isfinite(scale)
    return np.where(ok, diff / (np.where(ok, scale, 1.0) + 1e-300), np.inf)


def stated_scale(f: object) -> float:
    """``|f(0)|_∞`` of a block or a stack (F(0), the blocks composed), in float64: the constant term
    of the scale ``|f(x)|_∞ + |x|_∞ + |f(0)|_∞`` against which a witness's error is stated (0 for a
    bias-free block, whose f(0) is 0, and for other callables)."""
    blocks = _blocks_of(f)
    if not blocks or not any(b.has_bias or np.any(b.activation(np.zeros(1))) for b in blocks):
        return 0.0
    with np.errstate(all="ignore"):
        y = np.zeros((1, blocks[0].d))
        for b in blocks:
            y = b(y)
        c0 = float(np.abs(y[0]).max(initial=0.0))
    return c0 if math.isfinite(c0) else 0.0


EVAL_MAX_EXPONENT = 400
"""The sampled check evaluates blocks whose nonzero weights lie in [2^-SAFE_EXPONENT,
2^EVAL_MAX_EXPONENT] (:func:`_evaluable`)."""


def _evaluable(*arrays: np.ndarray) -> bool:
    """Every entry finite and every nonzero one in [2^-SAFE_EXPONENT, 2^EVAL_MAX_EXPONENT]: the
    range in which :func:`evaluation_error` evaluates. Its lower end keeps underflow out of the
    rounding analyses (as :func:`absorb.rigorous.magnitudes_ok`); above 2^SAFE_EXPONENT only
    overflow can go wrong, and an overflow gives ±inf or nan, which fails the check (every
    error and scale is read through :func:`_rel_errors`; a hidden sum that might overflow
    unseen is found by :func:`_may_overflow`), while a product of two weights (≤ 2^800) and
    their sums of squares over ≤ 2^200 terms stay finite, and so does every exact
    pre-activation at the hyperplane points (coordinates ≤ 2^600 = 2^400 / 2^-200, times rows
    ≤ 2^400, summed over d < 2^20: below 2^1021, so its float64 value exists). So a planted
    witness with biases of 2^190 (moved biases of 2^382) is evaluated, not refused."""
    return magnitudes_ok(*arrays, hi_exponent=EVAL_MAX_EXPONENT)


def evaluation_error(f: Block | object, g: Block | object, d: int, *, seed: int, m: int = 48,
                     accept: float | None = None, planes: int | None = None) -> tuple[float, int]:
    """max over the check inputs x of |f(x) − g(x)|_∞ / s(x), and their number, where the
    scale s(x) is |f(x)|_∞ + |x|_∞ + |f(0)|_∞ (:func:`stated_scale`; + the size of
    the summed terms, at the points near 0, where the rest can vanish while rounding does not).

    The inputs: ``m`` seeded Gaussian inputs at each of three scales, and (for blocks and
    stacks) the points on the kink / gate hyperplanes of the module docstring (of at most
    ``planes`` hyperplanes, a seeded sample beyond; None: 256). ``inf`` — the
    check fails — when a weight is outside [2^-SAFE_EXPONENT, 2^EVAL_MAX_EXPONENT]
    (:func:`_evaluable`: float64 evaluation there can underflow or overflow, so agreement
    would prove nothing), or
    when an evaluation overflows; a block compared with an identical one is 0 without
    evaluation when out of that range (f − g is identically zero).

    Two blocks that compare unit by unit (a flip keeps every unit but those of S) give
    f − g from the units that do not cancel. ``accept``: each point is then first measured
    against the smaller scale |x|_∞ (+ those units' size terms near 0), which needs no
    other unit; only the points whose error so measured exceeds ``accept`` are measured
    against s(x), evaluating the shared units of f there (and so are the points where the
    shared units could overflow, :func:`_may_overflow`). The result is then at most
    ``accept`` exactly when it is without ``accept``, and never smaller.

    A point whose pre-activations near 0 could not all be decided exactly (the budget of
    :data:`_EXACT_ENTRIES` ran out) makes the error inf: its hyperplanes went unchecked.

    Rounding: for two single blocks, a point whose error exceeds ``accept`` (without it:
    :data:`_ALLOW_FLOOR`) is measured again net of a rigorous bound of both evaluations'
    float64 rounding (:func:`_within_rounding`, with a budget of its own), and the smaller of
    the two counts: an exact witness whose evaluation cancels passes, a witness whose true
    error exceeds the threshold by more than that bound does not. Stacks are measured as
    computed."""
    fb, gb = _blocks_of(f), _blocks_of(g)
    if fb is not None and gb is not None:
        if not _evaluable(*(a for b in fb + gb for a in _arrays(b))):
            same = len(fb) == len(gb) and all(_same_function(x, y) for x, y in zip(fb, gb))
            return (0.0, 0) if same else (math.inf, 0)
    rng = np.random.default_rng(seed)
    worst, count = 0.0, 0
    c0 = stated_scale(f)
    randoms = [rng.standard_normal((m, d)) * scale for scale in _SCALES]
    with np.errstate(all="ignore"):
        if not (fb is not None and gb is not None and fb[0].d == gb[0].d == d):
            for X in randoms:
                fx = f(X)
                e = _rel_errors(_inf_norms(fx - g(X)), _inf_norms(fx) + _inf_norms(X) + c0)
                worst, count = max(worst, float(e.max())), count + m
            return worst, count
        # One pass over the weights for all inputs: the random ones first (no hyperplane
        # source, no size term), then the points on the hyperplanes.
        units = _difference_units(fb[0], gb[0]) if len(fb) == len(gb) == 1 else None
        mirrors = None if units is None else _mirror_units(fb[0], gb[0], *(np.asarray(u, dtype=np.intp) for u in units))
        pts = _Points(d)
        for X in randoms:
            for x in X:
                pts.add(x)
        first = len(pts.rows)
        # (a mirrored unit of g lies on the hyperplane of its unit of f)
        kinks = None if units is None else (units[0], np.setdiff1d(units[1], mirrors[1]))
        pts.extend(_hyperplane_points(fb[0], gb[0], kinks, seed, *(() if planes is None else (planes,))))
        budget = [_EXACT_ENTRIES]
        again = [_EXACT_ENTRIES]  # the rounding allowance's own (the measure is as it was without it)
        step = max(1, (1 << 22) // d)  # points per pass: out, |x| and the rest are (points × d)
        for a in range(0, len(pts.rows), step):
            sub = pts.part(a, a + step)
            extra = np.full(sub.X.shape[0], c0)
            if units is None:
                fx, s1, size = _eval_at(f, sub, budget)
                gx, s2, gsize = _eval_at(g, sub, budget)
                size = np.maximum(size, gsize)
                size[: max(0, first - a)] = 0.0  # random inputs: |f(x)| + |x| is the scale
                skipped = s1 | s2
                e = _rel_errors(_inf_norms(fx - gx), _inf_norms(fx) + _inf_norms(sub.X) + _inf_norms(size) + extra)
            else:
                e, skipped = _unit_errors(fb[0], gb[0], units, mirrors, sub, first - a, budget, accept, extra)
            if len(fb) == len(gb) == 1:  # what the rounding of both evaluations explains is no error
                over = np.flatnonzero(~skipped & np.isfinite(e) & ~(e <= (_ALLOW_FLOOR if accept is None else accept)))
                # the worst few first: with ``accept``, one that rounding does not explain
                # decides the check, and the rest keep their measured error
                over = over[np.argsort(-e[over], kind="stable")]
                worst_few = over[:_ALLOW_FIRST]
                for k, part in enumerate((worst_few, over[_ALLOW_FIRST:])):
                    if part.size == 0 or (k and accept is not None and not np.all(e[worst_few] <= accept)):
                        break
                    part = np.sort(part)
                    net = _within_rounding(fb[0], gb[0], units, mirrors, sub.take(part), int((part < first - a).sum()), again, extra[part])
                    if net is None:
                        break
                    e[part] = np.minimum(e[part], net)
            # A point whose pre-activations could not all be decided exactly (the budget ran
            # out) leaves its hyperplanes unchecked: the check fails, it does not pass.
            e[skipped] = np.inf
            worst, count = max(worst, float(e.max(initial=0.0))), count + int((~skipped).sum())
    return worst, count


def _unit_diff(f: Block, g: Block, units: tuple[list[int], list[int]] | None,
               mirrors: tuple[np.ndarray, np.ndarray, np.ndarray] | None, pts: _Points, randoms: int, budget: list[int],
               rounding: list[np.ndarray | None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(f(x) − g(x), size, skipped)`` at ``pts`` (the first ``randoms`` of them random inputs,
    whose size term is 0): from the units that do not cancel (``units``, ``mirrors``, as in
    :func:`_unit_errors`), or from both blocks in full when ``units`` is None. ``rounding`` (a
    list): its one item is set to a bound on the difference's float64 rounding, coordinate by
    coordinate (None when σ's accuracy is not known; :func:`_unit_sums`)."""
    rf: list[np.ndarray | None] | None = None if rounding is None else []
    rg: list[np.ndarray | None] | None = None if rounding is None else []
    rm: list[np.ndarray | None] | None = None if rounding is None else []
    if units is None:
        fx, s1, size = _eval_block_at(f, pts, budget, rounding=rf)
        gx, s2, gsize = _eval_block_at(g, pts, budget, rounding=rg)
        mirrored, skipped = np.zeros_like(fx), s1 | s2
        if rm is not None:
            rm[:] = [np.zeros_like(fx)]
    else:
        assert mirrors is not None
        left_f, left_g = (np.asarray(u, dtype=np.intp) for u in units)
        mf, mg, signs = mirrors
        fx, s1, size = _eval_block_at(f, pts, budget, np.setdiff1d(left_f, mf), rounding=rf)
        gx, s2, gsize = _eval_block_at(g, pts, budget, np.setdiff1d(left_g, mg), rounding=rg)
        mirrored, m_f, m_g, s3 = _unit_sums(f, pts, budget, mf, signs, rounding=rm)
        if m_g is not None and m_f.size:
            size[pts.small] += m_f
            gsize[pts.small] += m_g
        skipped = s1 | s2 | s3
    size = np.maximum(size, gsize)
    size[: max(0, randoms)] = 0.0  # random inputs: |x| (or |f(x)| + |x|) is the scale
    diff = fx - gx + mirrored
    if rounding is not None:
        parts = [*rf, *rg, *rm]  # type: ignore[misc]
        ok = all(r is not None for r in parts)
        rounding[:] = [(sum(parts) + _gamma(2) * (np.abs(fx) + np.abs(gx) + np.abs(mirrored))) * _MARGIN if ok else None]
    return diff, size, skipped


_ALLOW_FIRST = 8
"""Points measured net of rounding first (the worst ones); the rest only when these pass."""
_ALLOW_FLOOR = 2.0**-40
"""Without ``accept``, the points whose measured error exceeds this are measured again with
the rounding allowance (:func:`_within_rounding`); an error below it is reported as measured."""


def _within_rounding(f: Block, g: Block, units: tuple[list[int], list[int]] | None,
                     mirrors: tuple[np.ndarray, np.ndarray, np.ndarray] | None, pts: _Points, randoms: int,
                     budget: list[int], extra: np.ndarray) -> np.ndarray | None:
    """The errors of :func:`evaluation_error` at ``pts`` net of float64 rounding: per point,
    ``max_j max(0, |fl(f(x) − g(x))_j| − E_j) / s`` with E a rigorous bound on the rounding of
    both evaluations and of their difference (:func:`_unit_diff`: γ_k times the summed terms'
    sizes, and each hidden value's error from its pre-activation's rounding through σ's
    Lipschitz bound and σ's own accuracy), and s = max(0, |f̂(x)|_∞ − f̂'s bound) + |x|_∞ + size
    + ``extra`` (a lower bound of the scale). So an exact witness whose evaluation cancels
    (terms of 2^42 summing to |x|) is not failed by the rounding of f itself, while one whose
    true error exceeds the threshold by more than E still fails. None when σ (or the value
    activation) has no stated accuracy; inf at a point skipped (:data:`_EXACT_ENTRIES`)."""
    rd: list[np.ndarray | None] = []
    diff, size, skipped = _unit_diff(f, g, units, mirrors, pts, randoms, budget, rd)
    rfull: list[np.ndarray | None] = []
    full, f_skip, f_size = _eval_block_at(f, pts, budget, rounding=rfull)
    if rd[0] is None or rfull[0] is None:
        return None
    f_size[: max(0, randoms)] = 0.0
    with np.errstate(all="ignore"):
        excess = _inf_norms(np.maximum(np.abs(diff) - rd[0], 0.0))
        scale = np.maximum(_inf_norms(full) - _inf_norms(rfull[0]), 0.0) + _inf_norms(pts.X) + _inf_norms(np.maximum(size, f_size)) + extra
        e = _rel_errors(excess, scale)
    # a bound that overflowed (or a nan) allows nothing: the point keeps its measured error
    e[skipped | f_skip | ~np.isfinite(rd[0]).all(axis=1)] = np.inf
    return e


def _unit_errors(f: Block, g: Block, units: tuple[list[int], list[int]], mirrors: tuple[np.ndarray, np.ndarray, np.ndarray],
                 pts: _Points, randoms: int, budget: list[int], accept: float | None, extra: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The errors of :func:`evaluation_error` at ``pts`` (the first ``randoms`` of them random
    inputs) for blocks that compare unit by unit, and the mask of the points skipped.

    Units identical in f and g contribute the same at every point, so f − g is the
    difference of the other units' sums (with the skips and output biases); a unit that g
    holds mirrored (``mirrors``, from :func:`_mirror_units`) shares f's pre-activations,
    negated. f is evaluated in full only where the scale s(x) is needed, or where its shared
    units could overflow (:func:`_may_overflow`: an overflow of f fails the check)."""
    left_f = np.asarray(units[0], dtype=np.intp)
    d, size, skipped = _unit_diff(f, g, units, mirrors, pts, randoms, budget)
    diff, nx = _inf_norms(d), _inf_norms(pts.X)
    e = _rel_errors(diff, nx + _inf_norms(size) + extra)  # ≥ the error against s(x)
    suspect = _may_overflow(f, pts, np.setdiff1d(np.arange(f.n), left_f))
    redo = np.flatnonzero(~skipped & (suspect | (True if accept is None else ~(e <= accept))))
    if redo.size:
        part = pts.take(redo)
        full, f_skip, f_size = _eval_block_at(f, part, budget)
        f_size = np.maximum(f_size, size[redo])
        f_size[redo < randoms] = 0.0
        e_full = _rel_errors(diff[redo], _inf_norms(full) + nx[redo] + _inf_norms(f_size) + extra[redo])
        # Where the full evaluation ran out of budget, the error against |x| stands (it is
        # never smaller), unless f's overflow is what was to be seen there.
        e[redo] = np.where(f_skip, np.where(suspect[redo], np.inf, e[redo]), e_full)
    return e, skipped


_GRID = 4096
"""Points per side of the grid on which :func:`_bounded_everywhere` reads σ."""


def _bounded_everywhere(f: Block, pts: _Points, wmax: float) -> bool:
    """A first, cheap look for :func:`_may_overflow`: every pre-activation at these points
    lies in [−B, B] with B = max_i ‖r_i‖₂·max_x ‖x‖₂ + max |β| (Cauchy–Schwarz, r the kink
    rows), and σ read on a grid of [−B, B] (evenly and geometrically spaced, its ends
    included) is finite and small enough that no hidden sum can reach 2^900 (``wmax``: the
    largest row norm of W_down). Only for a
    built-in σ, whose overflow grows with |z| and so shows on the grid (a user's expression
    may spike between grid points): otherwise every point is looked at."""
    if not is_builtin(f.activation):
        return False
    def reach(W: np.ndarray, b: np.ndarray | None) -> float:
        top = float(_norms(W, 1).max(initial=0.0)) * float(pts.norms.max(initial=0.0))
        return top * (1 + 1e-6) + (0.0 if b is None else float(np.abs(b).max(initial=0.0)))

    R, b = _kink_rows(f)
    B = reach(R, b)
    if not (math.isfinite(B) and B < 2.0**64):
        return False
    t = np.concatenate([np.linspace(0.0, B, _GRID), np.geomspace(min(1e-300, B) if B > 0 else 1.0, max(B, 1.0), _GRID)])
    z = np.concatenate([-t, t])
    with np.errstate(all="ignore"):
        top = float(np.abs(f.activation(z)).max())
    if f.gated:
        top *= reach(f.W_up, f.b_up)
    return bool(np.isfinite(top) and top * math.sqrt(f.n) * wmax <= 2.0**900)


def _may_overflow(f: Block, pts: _Points, units: np.ndarray) -> np.ndarray:
    """The points where the float64 sum of f's hidden ``units`` could overflow: a hidden value
    is not finite, or the bound ``max_r ‖W_down[r, :]‖₂ · ‖h(x)‖₂`` on every partial sum
    (Cauchy–Schwarz) exceeds 2^1000. Elsewhere f(x) is finite when its other units are.

    Float32 kink rows (a large layer) of a built-in σ are multiplied in float32, which is half
    the cost and needs no float64 copy: each pre-activation z is then known to within
    E = (γ_d + 2⁻²³)·‖r‖‖x‖ (float32 rounding of the product and of x), and the hidden
    value is evaluated at both ends z ± E (a built-in's overflow grows with |z|: it shows at
    an end). A user's σ is evaluated at the float64 pre-activations, as f's evaluation would."""
    X = pts.X
    bad = np.zeros(X.shape[0], dtype=bool)
    if units.size == 0:
        return bad
    wmax = float(_norms(f.W_down, 1).max(initial=0.0))
    if _bounded_everywhere(f, pts, wmax):
        return bad
    hsq = np.zeros(X.shape[0])
    R_all, b = _kink_rows(f)
    in32 = R_all.dtype == np.float32 and f.W_up.dtype == np.float32 and is_builtin(f.activation)
    with np.errstate(all="ignore"):
        if in32:
            X32 = X.astype(np.float32)
            slack = (_gamma(f.d, 2.0**-24) + 2.0**-23) * pts.norms
            for sl in row_slices(units.size, f.d):
                idx = units[sl]
                R = R_all[idx]
                E = np.outer(slack, _norms(R, 1))
                Z = (X32 @ R.T).astype(np.float64)
                if b is not None:
                    Z += b[idx]
                if f.gated:
                    V = np.abs((X32 @ f.W_up[idx].T).astype(np.float64)) + np.outer(slack, _norms(f.W_up[idx], 1))
                    if f.b_up is not None:
                        V += np.abs(f.b_up[idx])
                    H = np.maximum(np.abs(f.activation(Z - E)), np.abs(f.activation(Z + E))) * V
                else:
                    H = np.maximum(np.abs(f.activation(Z - E)), np.abs(f.activation(Z + E)))
                bad |= ~np.isfinite(H).all(axis=1)
                hsq += np.einsum("ij,ij->i", H, H)
        else:
            for idx, W_up, W_gate, _W_down in f.unit_blocks(units):
                H = f.hidden(X, idx, W_up, W_gate)
                bad |= ~np.isfinite(H).all(axis=1)
                hsq += np.einsum("ij,ij->i", H, H)
        bound = np.sqrt(hsq) * wmax
    return bad | ~(bound <= 2.0**1000)


def eval_failure(err: float) -> str:
    """What an infinite evaluation error means, for a reason (empty when it is finite)."""
    if math.isfinite(err):
        return ""
    return (": no finite error bound (an evaluation overflowed, a point on the kink hyperplanes could not be evaluated exactly "
            "within the budget, or the float64 rounding of a moved bias is not provably small against |f(0)|)")


def rounding_allowance(n: int) -> float:
    """The stated rounding allowance of a witness check at width n: 1000·ε·√(n+1)."""
    return 1e3 * float(np.finfo(float).eps) * math.sqrt(n + 1)


def eval_threshold(tol: float, n: int) -> float:
    """Accepted witness error: the tolerance plus the rounding allowance (:func:`rounding_allowance`)."""
    return tol + rounding_allowance(n)


def distance_tolerance(tol: float, n: int, d: int, m_fro_lower: float, gain: float = 0.0) -> float:
    """The relative distance ‖R_S‖_F / ‖M‖_F (R_S = M + c·W_down[:,S] W_up[S,:], the linear
    error of S's flip) that an index set must exceed for a proof that no S counts: the larger
    of τ and √d·thr/‖M‖_F (thr = :func:`eval_threshold`). The witness check accepts a flip by
    ρ∞ = ‖R_S‖∞ ≤ thr (an absolute bound, not relative to M), and ‖R‖∞ ≥ max_r ‖R_r‖₂ ≥ ‖R‖_F/√d,
    so every S beyond this distance has ρ∞ > thr: no flip the witness check would accept is
    ever excluded — also when the skip is small (‖M‖_F < √d), where τ alone would exclude
    flips with ‖R_S‖∞ ≤ τ. ``m_fro_lower``: a rigorous lower bound on ‖M‖_F (√d for the
    identity); the factor 1 + 2⁻²⁰ covers this product's roundings and keeps it above any
    re-derivation of the same bar from a looser bound on ‖M‖_F.

    ``gain`` K ≥ 0: an upper bound of f's gain at infinity, |f(tv)|∞/t → |f∞(v)|∞ ≤ K|v|∞ (an ungated σ with
    finite slopes: K = ‖M‖∞ + max|L±|·max_r Σ_i |W_down[r,i]|·‖u_i‖₁, :func:`asymptotic_gain`). The tolerance
    measures |f − g| against |f(x)|∞ + |x|∞ + |f(0)|∞, so a flip with ρ∞ > τ can still be within it where f is
    large; but along a direction v, |R(tv) + e|/(|f(tv)|∞ + t|v|∞ + |f(0)|∞) → |Rv|∞/(|f∞(v)|∞ + |v|∞) ≥
    |Rv|∞/((1 + K)|v|∞), whose sup over v is ρ∞/(1 + K): the bar √d·thr·(1 + K)/‖M‖_F leaves no S whose flip is
    within the tolerance in f's own measure."""
    return max(tol, math.sqrt(d) * eval_threshold(tol, n) * (1 + gain) / m_fro_lower * (1 + 2.0**-20))


def asymptotic_gain(M: np.ndarray | None, W_up: np.ndarray, W_down: np.ndarray, slope: float,
                    ends: tuple[float, float] | None = None, spread: float | None = None) -> float:
    """K ≥ sup_v |f∞(v)|∞/|v|∞ for f∞(v) = M v + W_down σ∞(W_up v), |σ∞(z)| ≤ ``slope``·|z| (σ's largest asymptotic
    slope): ‖M‖∞ + slope·max_r Σ_i |W_down[r,i]|·‖u_i‖₁ (M = None: the identity), sums of nonnegative terms in
    float64 raised by γ_{n+d+2} (one matrix-vector product: no n×d temporary beyond |W_down|'s rows in blocks).
    ``spread``: that max as :func:`absorb.rigorous.unit_reach` computed it for these weights (a block's
    :attr:`~absorb.model.block.Block.unit_reach`), else computed here."""
    d, n = W_down.shape
    spread = unit_reach(W_up, W_down) if spread is None else spread
    with np.errstate(all="ignore"):  # (an overflow is an infinite gain: no distance proves anything then)
        m_inf = 1.0 if M is None else float(np.max(np.abs(np.asarray(M, dtype=np.float64)).sum(axis=1), initial=0.0))
        out = (m_inf + abs(slope) * spread) * (1 + _gamma(n + d + 2))
    if ends is not None and d * d * n <= 1 << 26:
        out = min(out, _coordinate_gain(M, W_up, W_down, ends))
    return out if math.isfinite(out) else math.inf


def _coordinate_gain(M: np.ndarray | None, W_up: np.ndarray, W_down: np.ndarray, ends: tuple[float, float]) -> float:
    """The effective K from the 2d directions ±e_j (σ∞(z) = L₊z for z > 0, L₋z for z < 0): at v = ±e_j a flip's
    ratio tends to |R v|∞/(|f∞(v)|∞ + 1) ≥ |R v|∞/W, W = 1 + max_{j,±} |f∞(±e_j)|∞; the 2d values |R(±e_j)|∞ are
    the entries of R, and max |R_ij| ≥ ‖R‖_F/d, so the sup is ≥ ‖R‖_F/(d·W): √d(1 + K) = d·W. Each |f∞(±e_j)|∞
    raised by γ_{n+3} times the size of its terms (float64)."""
    U = np.asarray(W_up, dtype=np.float64)
    D = np.asarray(W_down, dtype=np.float64)
    d = D.shape[0]
    Mf = np.eye(d) if M is None else np.asarray(M, dtype=np.float64)
    lp, lm = ends
    worst = 0.0
    with np.errstate(all="ignore"):
        for sign in (1.0, -1.0):
            Z = sign * U  # column j: the pre-activations at v = sign·e_j
            S = np.where(Z > 0, lp * Z, lm * Z)
            F = sign * Mf + D @ S  # column j: f∞(sign·e_j)
            size = np.abs(Mf) + np.abs(D) @ np.abs(S)
            worst = max(worst, float(np.max(np.abs(F) + _gamma(U.shape[0] + 3) * size)))
    out = math.sqrt(d) * (1 + worst) * (1 + 1e-12) - 1
    return out if math.isfinite(out) else math.inf


def cone_point(R: np.ndarray) -> np.ndarray | None:
    """x with |x|∞ ≤ 1 maximising the margin s of R x ≤ −s·1 (one LP, HiGHS; s ≤ 1), or None where R has no such
    cone (s ≤ 0), is not finite or the LP fails. The margin is the caller's to verify with rounding."""
    R = np.asarray(R, dtype=np.float64)
    n, d = R.shape
    if not np.all(np.isfinite(R)):
        return None
    from scipy.optimize import linprog

    try:  # maximise s subject to R x + s ≤ 0, |x|∞ ≤ 1, s ≤ 1
        res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.hstack([R, np.ones((n, 1))]), b_ub=np.zeros(n),
                      bounds=[(-1.0, 1.0)] * d + [(None, 1.0)], method="highs")
    except (ValueError, np.linalg.LinAlgError):
        return None
    if res.status != 0 or res.x is None or not res.x[d] > 0:
        return None
    return np.clip(np.asarray(res.x[:d], dtype=np.float64), -1.0, 1.0)


def dead_cone_gain(M: np.ndarray | None, W_up: np.ndarray) -> float:
    """A smaller effective gain than :func:`asymptotic_gain` where σ∞ vanishes on the negative side (L₋ = 0: ReLU,
    GELU, SiLU, softplus) and the up rows admit a cone {W_up x < 0} (one LP, HiGHS, n·d ≤ 2²⁰; inf otherwise).
    With x₀ of margin s (W_up x₀ ≤ −s·1, |x₀|∞ ≤ 1, verified here with rounding) and δ = s/(2·max_i ‖u_i‖₁), every
    v = x₀ ± δe_j has W_up v < 0, so f∞(v) = M v; at those 2d directions a flip's ratio tends to
    |Rv|∞/(|Mv|∞ + |v|∞) ≥ |Rv|∞/((1 + ‖M‖∞)(1 + δ)), and max_{j,±} |Rv|∞ ≥ δ·max |R_ij| ≥ δ‖R‖_F/d: so the sup is
    ≥ ‖R‖_F/X with X = d(1 + ‖M‖∞)(1 + δ)/δ. Returned as the K with √d(1 + K) = X (the bar's form)."""
    U = np.asarray(W_up, dtype=np.float64)
    n, d = U.shape
    if n * d > 1 << 20:
        return math.inf
    x = cone_point(U)
    if x is None:
        return math.inf
    with np.errstate(all="ignore"):
        margin = -float(np.max(U @ x + _gamma(d + 2) * (np.abs(U) @ np.abs(x)))) * (1 - 1e-6)  # (rounding of U x)
        width = float(np.max(np.abs(U).sum(axis=1))) * (1 + _gamma(d + 2))
    if not (margin > 0 and 0 < width < math.inf):
        return math.inf
    delta = margin / (2 * width)
    with np.errstate(all="ignore"):
        m_inf = 1.0 if M is None else float(np.max(np.abs(np.asarray(M, dtype=np.float64)).sum(axis=1), initial=0.0)) * (1 + _gamma(d + 2))
        X = d * (1 + m_inf) * (1 + delta) / delta * (1 + 1e-9)
    return X / math.sqrt(d) - 1 if math.isfinite(X) else math.inf


_SIGMA_REL = 2.0**-40
"""Accuracy assumed of a built-in σ's numpy evaluation: |σ̂(z) − σ(z)| ≤ 2⁻⁴⁰(|σ̂(z)| + |z|) + 2⁻¹⁰⁰⁰
for GELU and GELU-tanh (libm's erf and tanh are within a few ulps; |z| covers the cancellation of
1 + erf and 1 + tanh at negative z), 2⁻⁴⁰|σ̂(z)| + 2⁻¹⁰⁰⁰ for the others: ReLU, leaky ReLU and
ReLU² are exact or one rounding; the sigmoid is formed from e^−|z| ∈ (0, 1] without cancellation
(relative error a few ulps; an argument rounded by ≤ 2⁻⁵³ relative, as quick-GELU's 1.702z, moves
log s by at most |z|·2⁻⁵³ ≤ 2⁻⁴³ while e^−|z| is normal, |z| < 745, and below that the true value
is under |z|e^−745 < 2⁻¹⁰⁰⁰ where it is not subnormal-rounded); SiLU and quick-GELU multiply by z
(one rounding); tanh is libm's; softplus is numpy's logaddexp (log1p of e^−|z| plus max(z, 0))."""
_SIGMA_CANCELS = frozenset({"gelu", "gelu_tanh"})
"""The built-ins whose evaluation may cancel at negative z (their error counts |z|, above)."""
_SYMPY_UNITS = 256
"""Most hidden units whose σ(b) a user's σ is evaluated at in sympy (high precision) for f(0)."""


def _sigma_at(act: object, z: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """σ(z) and a rigorous bound on its error, or None when no such bound is known (a user's
    σ at more than :data:`_SYMPY_UNITS` points)."""
    if is_builtin(act):  # type: ignore[arg-type]
        with np.errstate(all="ignore"):
            h = np.asarray(act(z), dtype=np.float64)  # type: ignore[operator]
        size = np.abs(h) + np.abs(z) if act.name in _SIGMA_CANCELS else np.abs(h)  # type: ignore[attr-defined]
        return h, _SIGMA_REL * size + 2.0**-1000
    if z.size > _SYMPY_UNITS:
        return None
    import sympy as sp

    expr = act.expr  # type: ignore[attr-defined]
    (x,) = expr.free_symbols or (sp.Symbol("x"),)
    vals = {}
    for v in np.unique(z).tolist():
        r = sp.N(expr.subs(x, sp.Rational(v)), 40)
        if not r.is_real or not r.is_finite:
            return None
        vals[v] = float(r)
    h = np.array([vals[v] for v in z.tolist()], dtype=np.float64)
    return h, 2.0**-50 * np.abs(h) + 2.0**-1000


def _f0_enclosure(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """``(y, e)``: f(0) = W_down σ(b_up) + b_down (gated: W_down (g(b_gate) ⊙ h(b_up)) + b_down) is
    within e of the float64 y, entrywise; ``(b_down, 0)`` exactly when no unit sees a bias and
    σ(0) = 0 (exact substitution); None when σ's accuracy is not known (:func:`_sigma_at`)."""
    n, d = block.n, block.d
    bd = np.zeros(d) if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)
    zb = block.b_gate if block.gated else block.b_up
    if block.b_up is None or not np.any(block.b_up):  # gated: g(b_gate) ⊙ 0; ungated: σ(0) per unit
        expr = block.activation.expr
        x = next(iter(expr.free_symbols), None)
        if block.gated and block.value_identity or not block.gated and (x is None and expr == 0 or x is not None and expr.subs(x, 0) == 0):
            return bd, np.zeros(d)
    z = np.zeros(n) if zb is None else zb
    got = _sigma_at(block.activation, np.asarray(z, dtype=np.float64))
    if got is None:
        return None
    h, eh = got
    if block.gated:
        v = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
        ev = np.zeros(n)
        if not block.value_identity:  # (h(b_up), enclosed as σ is)
            got_v = _sigma_at(block.value_activation, v)
            if got_v is None:
                return None
            v, ev = got_v
        eh = eh * np.abs(v) + (np.abs(h) + eh) * ev + 2 * _gamma(1) * np.abs(h * v)
        h = h * v
    with np.errstate(all="ignore"):
        y = matvec(block.W_down, h) + bd
        absD = np.abs(block.W_down)
        ey = _gamma(n + 4) * (matvec(absD, np.abs(h)) + np.abs(bd)) * (1 + _gamma(n + 4)) + matvec(absD, eh) * (1 + _gamma(n + 2))
    return y, ey


def f0_lower(block: Block) -> float:
    """A rigorous lower bound of ``|f(0)|_∞`` (f(0) = W_down σ(b_up) + b_down, or the gated
    W_down (g(b_gate) ⊙ b_up) + b_down): float64 with a rounding account (max_j of
    |y_j| − its error bound, y the float64 value, :func:`_f0_enclosure`); 0 when σ's
    accuracy is not known (:func:`_sigma_at`) or the weights are out of range."""
    got = _f0_enclosure(block)
    if got is None:
        return 0.0
    y, ey = got
    with np.errstate(all="ignore"):
        lo = float((np.abs(y) - ey * (1 + 4 * _gamma(1))).max(initial=0.0)) * (1 - 4 * _gamma(1))
    return lo if math.isfinite(lo) and lo > 0 else 0.0


def f0_upper(block: Block) -> float:
    """A rigorous upper bound of ``|f(0)|_∞`` (:func:`_f0_enclosure`; 0 exactly for a block
    whose units see no bias with σ(0) = 0 and no output bias); inf when none is known."""
    got = _f0_enclosure(block)
    if got is None:
        return math.inf
    y, ey = got
    with np.errstate(all="ignore"):
        hi = float((np.abs(y) + ey).max(initial=0.0))
    if hi == 0.0:
        return 0.0
    hi *= 1 + 4 * _gamma(1)
    return hi if math.isfinite(hi) else math.inf


def _affine_eps(block: Block, rho: float, e: float) -> tuple[float, float, str]:
    """``(ε, ε_b, why)`` for an error known to be at most ``rho·|x|_∞ + e``: ε_b = e / (a rigorous
    lower bound of |f(0)|_∞, :func:`f0_lower`), ε = max(rho, ε_b), so the error is at most
    ε·(|x|_∞ + |f(0)|_∞). ``why`` says what is missing when ε is inf."""
    if e == 0:
        eps_b = 0.0
    else:
        lo = f0_lower(block) if math.isfinite(e) else 0.0
        eps_b = e / lo if lo > 0 else math.inf
    why = ""
    if not math.isfinite(rho):
        why = "no rigorous bound on the linear part of the error (a weight outside [2^-200, 2^200])"
    elif not math.isfinite(eps_b):
        why = (f"the moved bias is off by up to {e:.3g} in float64, and |f(0)| is not provably larger "
               "(the constant error is not within the tolerance of f(0))")
    return max(rho, eps_b), eps_b, why


_SHIFT_WORK = 200_000
"""Most d·|S| for the exact constant error of a shifted flip (:func:`_shift_bias_error`)."""


def _shift_bias_error(block: Block, wblock: Block, S: tuple[int, ...], c: Fraction, s: Fraction) -> float:
    """A rigorous upper bound of the constant error |e|_∞ of a shifted flip g (:func:`flip_block` with
    ``s``): g − f = −(M + c·D_S U_S) x + e for every x, where, with η_i = b'_up,i − (−b_up,i − 2s) the
    rounding of a flipped unit's new bias, |e_r| ≤ |b'_down,r − b_down,r − c·Σ_S D_ri (b_up,i + s)|
    + L·Σ_S |D_ri|·|η_i| (σ is L-Lipschitz: :data:`_SIGMA_LIPSCHITZ`, or a user's piecewise-linear
    σ's :func:`expression_sigma`; needed only when some η_i ≠ 0). Exact rationals; inf past
    :data:`_SHIFT_WORK`, or when an η_i ≠ 0 and σ has no stated Lipschitz constant."""
    idx = sorted(S)
    d = block.d
    if d * len(idx) > _SHIFT_WORK:
        return math.inf
    try:
        F = lambda v: Fraction(float(v))  # noqa: E731
        b0 = [F(0.0)] * block.n if block.b_up is None else [F(v) for v in block.b_up]
        eta = {i: F(wblock.b_up[i]) - (-b0[i] - 2 * s) for i in idx}
        bd = [F(0.0)] * d if block.b_down is None else [F(v) for v in block.b_down]
        bn = [F(0.0)] * d if wblock.b_down is None else [F(v) for v in wblock.b_down]
    except (OverflowError, ValueError):  # an inf or nan weight
        return math.inf
    L: float | None = 0.0
    if any(eta.values()):
        L = sigma_lipschitz(block.activation)
        if L is None:
            return math.inf
    worst = Fraction(0)
    for r in range(d):
        Dr = {i: F(block.W_down[r, i]) for i in idx}
        e = abs(bn[r] - bd[r] - c * sum((Dr[i] * (b0[i] + s) for i in idx), Fraction(0)))
        e += Fraction(L) * sum((abs(Dr[i]) * abs(eta[i]) for i in idx), Fraction(0))
        worst = max(worst, e)
    out = float(worst)
    return out if Fraction(out) >= worst else math.nextafter(out, math.inf)


def flip_bound(block: Block, wblock: Block, S: tuple[int, ...], c: Fraction, rel: float,
               s: Fraction = Fraction(0), value: tuple[Fraction, Fraction] | None = None
               ) -> tuple[float, float, str, tuple[float, float]]:
    """The rigorous error of a flip witness g (:func:`flip_block`) of f: ``(ε, ε_b, why, (ρ∞, e))`` with

        |f(x) − g(x)|_∞ ≤ ρ∞·|x|_∞ + e ≤ ε·(|f(x)|_∞ + |x|_∞ + |f(0)|_∞)   for every x ∈ ℝ^d.

    σ(z) − σ(−z) = c·z (resp. g(z) + g(−z) = c for a gate) makes ``g − f = −(M + c·D_S U_S) x
    + e`` exactly, with e = b′_down − b_down − c·D_S b_S the rounding of the moved bias:
    the linear part is at most ρ∞·|x|_∞ (ρ∞ a rigorous upper bound of the absolute
    ∞-operator norm of M + c·D_S U_S, :func:`flip_inf_upper`), the constant one
    |e|_∞ = ε_b·|f(0)|_∞ (ε_b from a rigorous lower bound of |f(0)|_∞, :func:`f0_lower`);
    ε = max(ρ∞, ε_b). ``rel``: the float64 relative residual of S. ``why`` says what is
    missing when ε is inf. ``s`` ≠ 0: a shifted flip (σ(z) − σ(−z − 2s) = c·(z + s)), whose
    constant error also counts the shift and the rounding of the new biases (:func:`_shift_bias_error`).
    ``value`` = (c_h, k): a gated f with value activation h(z) = c_h·z + k flipped in its own class
    (:func:`flip_block`): the same with U = c_h·W_up (exact in float64: the caller's condition) and the
    bias shifted by c·D_S(c_h·b_S + k)."""
    ch, k = value if value is not None and block.gated else (Fraction(1), Fraction(0))  # (as flip_block reads it)
    U = block.W_up if ch == 1 else block.W_up * float(ch)
    rho, _how = flip_inf_upper(U, block.W_down, None if block.skip is None else block.skip, c, S, rel)  # (None: M = I)
    e = (_shift_bias_error(block, wblock, S, c, s) if s
         else flip_bias_error_upper(block.W_down, block.b_up, block.b_down, wblock.b_down, S, c * ch, k / ch))
    eps, eps_b, why = _affine_eps(block, rho, e)
    return eps, eps_b, why, (rho, e)


def linear_bound(block: Block, wb: Block, c: Fraction, k: Fraction = Fraction(0)
                 ) -> tuple[float, float, str, tuple[float, float]]:
    """The rigorous error of a linear witness g of f (σ(z) = c·z, ungated), as :func:`flip_bound`:
    f(x) − g(x) = (M + c·W_down W_up − c·W'_down W'_up) x + (c·W_down b_up + b_down − b'_down)
    exactly. The linear part is the residual of the index set "every unit" of the stacked
    arrays [W_up; W'_up] and [W_down, −W'_down] (:func:`flip_inf_upper`, exact rationals when
    small), the constant one the rounding of the output bias (:func:`flip_bias_error_upper`,
    the moved bias of every unit). σ(z) = c·z + k (k ≠ 0, g with b'_up = 0): the constant part
    gains k·(W_down 1 − W'_down 1) (:func:`affine_constant_error`); the linear part is the same."""
    U2 = np.vstack([block.W_up, wb.W_up]).astype(np.float64)
    D2 = np.hstack([block.W_down, -wb.W_down]).astype(np.float64)
    S2 = tuple(range(U2.shape[0]))
    T = -block.M / float(c)
    rel = relative_residual(U2, D2, T, S2)
    rho, _how = flip_inf_upper(U2, D2, block.M, c, S2, rel)
    del T
    if k:  # (|f(0)|∞'s lower bound from the same rationals: f0_lower evaluates a user's σ at ≤ 256 units only)
        e, lo = affine_constant_error(block, wb, c, k)
        eps_b = 0.0 if e == 0 else (e / lo if lo > 0 else math.inf)
        why = ("no rigorous bound on the linear part of the error (a weight outside [2^-200, 2^200])" if not math.isfinite(rho) else
               f"the constant g(0) − f(0) is off by up to {e:.3g} in float64, and |f(0)| is not provably larger" if
               not math.isfinite(eps_b) else "")
        return max(rho, eps_b), eps_b, why, (rho, e)
    else:
        e = flip_bias_error_upper(block.W_down, block.b_up, block.b_down, wb.b_down, tuple(range(block.n)), c)
    eps, eps_b, why = _affine_eps(block, rho, e)
    return eps, eps_b, why, (rho, e)


def affine_constant_error(block: Block, wb: Block, c: Fraction, k: Fraction) -> tuple[float, float]:
    """A rigorous upper bound of |e|_∞, e = g(0) − f(0) = b'_down + k·W'_down 1 − b_down − c·W_down b_up
    − k·W_down 1: the constant part of the error of a witness g (no b'_up) of an ungated f with
    σ(z) = c·z + k; and a rigorous lower bound of |f(0)|_∞ (f(0) = c·W_down b_up + k·W_down 1 + b_down).
    Exact rationals (Fractions, row by row) when d·(n + n') ≤ EXACT_FLIP_WORK, else float64 with
    Higham's bound; (inf, 0) out of range or with a b'_up."""
    if wb.b_up is not None and np.any(wb.b_up):
        return math.inf, 0.0
    d = block.d
    D, W = np.asarray(block.W_down, dtype=np.float64), np.asarray(wb.W_down, dtype=np.float64)
    zero = np.zeros(d)
    bd = zero if block.b_down is None else np.asarray(block.b_down, dtype=np.float64)
    bn = zero if wb.b_down is None else np.asarray(wb.b_down, dtype=np.float64)
    bu = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    if not all(np.isfinite(a).all() for a in (D, W, bd, bn, bu)):
        return math.inf, 0.0
    if d * (D.shape[1] + W.shape[1]) <= EXACT_FLIP_WORK:
        Fr = Fraction
        worst, top = Fraction(0), Fraction(0)
        for r in range(d):
            f0 = (c * sum((Fr(float(a)) * Fr(float(b)) for a, b in zip(D[r], bu)), Fr(0)) + k * sum((Fr(float(a)) for a in D[r]), Fr(0))
                  + Fr(float(bd[r])))
            g0 = k * sum((Fr(float(a)) for a in W[r]), Fr(0)) + Fr(float(bn[r]))
            worst, top = max(worst, abs(g0 - f0)), max(top, abs(f0))
        return float_up(worst), max(0.0, float(top) * (1 - 4 * _gamma(1)))
    if not magnitudes_ok(D, W) or not magnitudes_ok(bd, bn, bu):
        return math.inf, 0.0
    cf, kf = float(c), float(k)
    g = _gamma(max(D.shape[1], W.shape[1]) + 10)
    with np.errstate(over="ignore", invalid="ignore"):
        f0 = cf * (D @ bu) + kf * D.sum(axis=1) + bd
        big_f = abs(cf) * (np.abs(D) @ np.abs(bu)) + abs(kf) * np.abs(D).sum(axis=1) + np.abs(bd)
        big_g = abs(kf) * np.abs(W).sum(axis=1) + np.abs(bn)
        out = float((np.abs(kf * W.sum(axis=1) + bn - f0) + 2 * g * (big_f + big_g)).max(initial=0.0)) * (1 + 4 * g)
        lo = float((np.abs(f0) - 2 * g * big_f).max(initial=0.0)) * (1 - 4 * g)
    return (out if math.isfinite(out) else math.inf), (lo if math.isfinite(lo) and lo > 0 else 0.0)


def check_flip_witness(block: Block, S: tuple[int, ...], c: Fraction, *, tol: float, seed: int,
                       residual: float | None = None, s: Fraction = Fraction(0),
                       value: tuple[Fraction, Fraction] | None = None) -> tuple[Witness, bool]:
    """Construct the flipped block for ``S`` and check it: a rigorous bound on its error
    (:func:`flip_bound`, the guarantee) and, as a second check, its evaluation against f
    (:func:`evaluation_error`, on random inputs and the kink hyperplanes).

    ``residual``: ``‖D_S U_S + M/c‖_F / ‖M/c‖_F`` when the caller has already recomputed it
    from these very arrays (find_index_set's re-check of a found set), else computed here.
    The witness's ``eval_error`` is the larger of the bound and the sampled error. The sample
    is taken only when the bound holds (when it does not, the witness fails whatever the
    samples show: ``eval_error`` is the bound and ``n_inputs`` 0), a smaller one for a block of
    n·d ≥ :data:`_LARGE_BLOCK`. ``s`` ≠ 0: the shifted flip of an ungated σ with
    σ(z) − σ(−z − 2s) = c·(z + s) (:func:`flip_block`), checked the same way. ``value`` = (c_h, k): a
    gated f with value activation h(z) = c_h·z + k (c_h·W_up exact in float64), flipped in its own class."""
    U = block.W_up if value is None or value[0] == 1 or not block.gated else block.W_up * float(value[0])
    # (T is kept alive: the row sums of this product are kept for flip_bound; not formed when
    # the caller has the residual: a d×d float64 array, 128 MiB at d = 4096)
    T = -block.M / float(c) if residual is None else None
    res = relative_residual(U, block.W_down, T, S) if residual is None else residual
    wblock = flip_block(block, S, c, s, value)
    thr = eval_threshold(tol, block.n)
    bound, eps_b, why, ae = flip_bound(block, wblock, S, c, res, s, value)
    del T
    # (the bound is the guarantee: no condition on the relative residual, which is relative to ‖M‖)
    proved = bound <= thr and eps_b <= rounding_allowance(block.n)
    if proved:  # the sampled check, second to the proof (a smaller sample for a large block)
        large = block.n * block.d >= _LARGE_BLOCK
        err, m = evaluation_error(block, wblock, block.d, seed=seed, accept=thr, m=_PROVED_SAMPLE if large else 48,
                                  planes=_PROVED_PLANES if large else None)
    else:  # the witness fails whatever the samples show: its error is the bound, nothing is evaluated
        err, m = 0.0, 0
    exact = exact_match(U, block.W_down, block.M, c, S) if len(S) * block.d * block.d <= _EXACT_MAX_WORK else None
    how = ("negate the gate rows and down-projection columns" if block.gated else "negate the up-projection rows") + " in S; keep the rest"
    if s:
        how = f"negate the up-projection rows in S and set their biases to −b_up,i − 2s (shift s = {s}); keep the rest"
    how += (f"; rigorous bound |f(x) − g(x)|∞ ≤ {bound:.3g}·(|f(x)|∞ + |x|∞ + |f(0)|∞) for every x" if not why else f"; {why}")
    w = Witness(S=tuple(int(i) for i in S), block=wblock, residual=res, eval_error=max(bound, err), n_inputs=m, exact=exact, description=how,
                bound=ae if not why else None)
    return w, proved and err <= thr


_LIPSCHITZ = {"relu": 1.0, "gelu": 1.2, "gelu_tanh": 1.2, "silu": 1.2, "quick_gelu": 1.2}
"""|σ(a) − σ(b)| ≤ L|a − b| and |σ(z)| ≤ L|z| for every real a, b, z (sup |σ′|: GELU 1.129,
GELU-tanh 1.13, SiLU and quick-GELU 1.100; stated with a margin)."""


def rounded_construction_bound(block: Block, up: list[list[Fraction]], down: list[list[Fraction]], wb: Block) -> float:
    """ε with |f(x) − g(x)|_∞ ≤ ε·|x|_∞ (≤ ε·(|f(x)|_∞ + |x|_∞)) for every x, where g = ``wb`` is
    the float64 rounding of an exact bias-free construction ``(up, down)`` (rationals) known
    to equal f exactly (the same canonical form): unit by unit,
    ‖w σ(u·x) − ŵ σ(û·x)‖₂ ≤ L(‖w − ŵ‖₂‖u‖₂ + ‖ŵ‖₂‖u − û‖₂)‖x‖₂ (each unit is Lipschitz in its
    weights, σ(0) = 0), summed to K, and |f − g|_∞ ≤ ‖f − g‖₂ ≤ K‖x‖₂ ≤ K√d|x|_∞: ε = K√d.
    inf for a σ without a stated Lipschitz constant."""
    L = sigma_lipschitz(block.activation)
    if L is None or wb.gated or wb.b_up is not None or wb.b_down is not None:
        return math.inf
    total = 0.0
    for i, row in enumerate(up):
        col = [down[r][i] for r in range(len(down))]
        du = [float(abs(a - Fraction(float(b)))) for a, b in zip(row, wb.W_up[i])]
        dw = [float(abs(a - Fraction(float(b)))) for a, b in zip(col, wb.W_down[:, i])]
        if not any(du) and not any(dw):
            continue
        nu = math.sqrt(sum(float(a) ** 2 for a in row))
        nw_hat = float(np.linalg.norm(wb.W_down[:, i]))
        total += L * (math.sqrt(sum(v * v for v in dw)) * nu + nw_hat * math.sqrt(sum(v * v for v in du)))
    if total == 0.0:  # every weight rounded exactly: g is the exact construction
        return 0.0
    # each float above is within a few ulps of its exact value: a relative margin of 1e-9 covers them
    return total * (1 + 1e-9) * math.sqrt(block.d) * (1 + 1e-12)


def pl_bound(f: Block, g: Block) -> float:
    """ε with |f(x) − g(x)|_∞ ≤ ε·|x|_∞ for every x, decided exactly for bias-free ReLU
    blocks of small d and width (:func:`pl_sup_error`: V = max over |x|_∞ = 1 of
    |f − g|_∞, and f − g is positively homogeneous, so ε = V); inf where it is not decided."""
    V = pl_sup_error(f, g)
    if V == 0:
        return 0.0
    if V is None:
        return math.inf
    return float(V) * (1 + 1e-12)


_FLIP_C = {"relu": Fraction(1), "gelu": Fraction(1), "gelu_tanh": Fraction(1), "silu": Fraction(1), "quick_gelu": Fraction(1)}
"""σ(z) − σ(−z) = c·z for every real z (built-ins of the canonical-form family; σ(0) = 0)."""
_HOMOGENEOUS = {"relu"}
_UNIT_WORK = 50_000
"""Most (units × d) of both blocks for :func:`unit_difference_bound` (exact rationals)."""


def _normal_units(b: Block, c: Fraction, homogeneous: bool) -> tuple[list[list[Fraction]], dict[tuple[Fraction, ...], list[Fraction]]]:
    """b(x) = A x + Σ_k W_k σ(u_k·x) with each row u_k sign-normalised (first nonzero entry > 0;
    σ(−z) = σ(z) − c·z moves the rest into A), scaled to max |entry| = 1 when σ is positively
    homogeneous, and equal rows merged (exact rationals)."""
    d = b.d
    A = [[Fraction(float(v)) for v in row] for row in b.M]
    units: dict[tuple[Fraction, ...], list[Fraction]] = {}
    for i in range(b.n):
        u = [Fraction(float(v)) for v in b.W_up[i]]
        w = [Fraction(float(v)) for v in b.W_down[:, i]]
        if not any(u) or not any(w):
            continue  # σ(0) = 0: a dead unit, or a zero column, adds nothing
        if next(v for v in u if v != 0) < 0:
            u = [-v for v in u]
            for r in range(d):
                if w[r]:
                    for k in range(d):
                        A[r][k] -= c * w[r] * u[k]
        if homogeneous:
            t = max(abs(v) for v in u)
            u = [v / t for v in u]
            w = [v * t for v in w]
        acc = units.setdefault(tuple(u), [Fraction(0)] * d)
        for r in range(d):
            acc[r] += w[r]
    return A, units


def _norm_up(v: Iterable[Fraction]) -> float:
    return math.sqrt(float(sum((x * x for x in v), Fraction(0)))) * (1 + 1e-12)


def unit_difference_bound(f: Block, g: Block) -> float:
    """ε with |f(x) − g(x)|_∞ ≤ ε·|x|_∞ for every x (ε = K√d from ‖f(x) − g(x)‖₂ ≤ K‖x‖₂,
    as in :func:`rounded_construction_bound`), from the exact difference of the two
    blocks' parameters (bias-free, ungated, the same built-in σ with σ(z) − σ(−z) = c·z and a
    stated Lipschitz constant L; inf otherwise or past :data:`_UNIT_WORK`).

    Both are written as A x + Σ_k W_k σ(u_k·x) (:func:`_normal_units`); then
    f − g = (A_f − A_g) x + Σ over f's rows matched to g's nearest (W σ(u·x) − W′ σ(u′·x)),
    each at most L(‖W − W′‖‖u‖ + ‖W′‖‖u − u′‖)‖x‖ (or the two terms' L‖W‖‖u‖‖x‖ each,
    whichever is smaller; unmatched rows the latter)."""
    name = builtin_name(f.activation) or ""
    c, L = _FLIP_C.get(name), _LIPSCHITZ.get(name)
    if (c is None or L is None or f.activation.expr != g.activation.expr or f.d != g.d
            or f.gated or g.gated or f.has_bias or g.has_bias or (f.n + g.n + f.d) * f.d > _UNIT_WORK):
        return math.inf
    hom = name in _HOMOGENEOUS
    Af, Uf = _normal_units(f, c, hom)
    Ag, Ug = _normal_units(g, c, hom)
    lin = _norm_up(a - b for ra, rb in zip(Af, Ag) for a, b in zip(ra, rb))
    fk, gk = list(Uf), list(Ug)
    if fk and gk:
        F = np.array([[float(v) for v in u] for u in fk])
        G = np.array([[float(v) for v in u] for u in gk])
        dist = np.linalg.norm(F[:, None, :] - G[None, :, :], axis=2)
    total = lin
    used: set[int] = set()
    for i, u in enumerate(fk):
        alone = L * _norm_up(Uf[u]) * _norm_up(u)
        j = None
        if gk:
            order = np.argsort(dist[i], kind="stable")
            j = next((int(k) for k in order if int(k) not in used), None)
        if j is None:
            total += alone
            continue
        v = gk[j]
        paired = L * (_norm_up(a - b for a, b in zip(Uf[u], Ug[v])) * _norm_up(u) + _norm_up(Ug[v]) * _norm_up(a - b for a, b in zip(u, v)))
        other = L * _norm_up(Ug[v]) * _norm_up(v)
        if paired <= alone + other:
            used.add(j)
            total += paired
        else:
            total += alone
    total += sum(L * _norm_up(Ug[v]) * _norm_up(v) for j, v in enumerate(gk) if j not in used)
    if total == 0.0:
        return 0.0
    return total * (1 + 1e-9) * math.sqrt(f.d) * (1 + 1e-12)


# ------------------------------------------------------------------ stacks of witnesses --
_SIGMA_LIPSCHITZ = {**_LIPSCHITZ, "leaky_relu": 1.0, "identity": 1.0, "tanh": 1.0, "softplus": 1.0, "sigmoid": 0.26}
"""|σ(a) − σ(b)| ≤ L|a − b| for every real a, b (sup |σ′|: leaky ReLU, identity, tanh, softplus 1,
sigmoid 1/4; stated with a margin where it is not exact). Only the Lipschitz property: σ(0)
need not be 0 here."""
_TINY = 2.0**-1000
"""Absolute slack of a sum of nonnegative float products (what an underflow can lose)."""


def _up(x: float, ops: int = 1) -> float:
    """x (a nonnegative float result of ``ops`` roundings of nonnegative terms) raised past
    every rounding: (1 + 4u)^ops, plus an absolute 2⁻¹⁰⁰⁰ for underflow; inf stays inf."""
    if not math.isfinite(x):
        return math.inf
    return x * (1 + 2.0**-51) ** ops + _TINY


def lipschitz_upper(block: Block) -> float:
    """A rigorous upper bound of the ∞-norm Lipschitz constant of the block x ↦ f(x):
    ‖M‖_∞ + L_σ·max_j Σ_i |W_down[j,i]|·‖W_up[i,:]‖₁ (L_σ from :data:`_SIGMA_LIPSCHITZ`, or a user's piecewise-linear σ's :func:`expression_sigma`), in
    float64 sums of nonnegative terms raised past their rounding (γ_{n+d+2} relative, and
    2⁻¹⁰⁰⁰ absolute for underflow). inf for a gated block (g(W_gate x) ⊙ (W_up x) is not
    globally Lipschitz) and for σ without a stated constant."""
    L = sigma_lipschitz(block.activation)
    if block.gated or L is None:
        return math.inf
    with np.errstate(all="ignore"):
        us = np.concatenate([np.abs(block.W_up[sl].astype(np.float64)).sum(axis=1) for sl in row_slices(block.n, block.d)]
                            or [np.zeros(0)])
        hid = np.abs(block.W_down.astype(np.float64)) @ us
        lin = np.abs(np.asarray(block.M, dtype=np.float64)).sum(axis=1)  # (M = I when no skip is given)
        g = 1 + _gamma(block.n + block.d + 4)
        top = float((lin * g + L * hid * g * (1 + 2.0**-51)).max(initial=0.0))
    return _up(top, 2)


def stack_f0_lower(fs: list[Block]) -> float:
    """A rigorous lower bound of |F(0)|_∞, F = f_L ∘ … ∘ f_1 (0 where none is known): the float64 values
    ŷ_k = f_k(ŷ_{k−1}), ŷ_0 = 0, each an f_k(0)-enclosure (:func:`_f0_enclosure`) of f_k with its biases
    moved by ŷ_{k−1} (b_up + W_up ŷ, b_down + M ŷ, their rounding δ counted through σ's Lipschitz constant),
    the error before it carried by f_k's ∞-norm Lipschitz bound (:func:`lipschitz_upper`)."""
    if not fs or any(f.gated for f in fs):
        return 0.0
    d = fs[0].d
    y, err = np.zeros(d), 0.0
    for f in fs:
        L, Lf = sigma_lipschitz(f.activation), lipschitz_upper(f)
        if L is None or not math.isfinite(Lf):
            return 0.0
        U, D, M = (np.asarray(a, dtype=np.float64) for a in (f.W_up, f.W_down, f.M))
        bu = np.zeros(f.n) if f.b_up is None else np.asarray(f.b_up, dtype=np.float64)
        bd = np.zeros(d) if f.b_down is None else np.asarray(f.b_down, dtype=np.float64)
        with np.errstate(all="ignore"):
            nu, nd = U @ y + bu, M @ y + bd
            du = _gamma(d + 2) * (np.abs(U) @ np.abs(y) + np.abs(bu))
            dd = _gamma(d + 2) * (np.abs(M) @ np.abs(y) + np.abs(bd))
        got = _f0_enclosure(f.replace(b_up=nu, b_down=nd, b_gate=None))
        if got is None:
            return 0.0
        yn, ey = got
        with np.errstate(all="ignore"):
            ev = (ey * (1 + 4 * _gamma(1)) + (np.abs(D) @ (L * du)) * (1 + _gamma(f.n + 2)) + dd) * (1 + 4 * _gamma(1))
            err = float(np.max(ev, initial=0.0)) + _up(Lf * err, 1)
        y = yn
        if not (math.isfinite(err) and np.all(np.isfinite(y))):
            return 0.0
    lo = (float(np.max(np.abs(y), initial=0.0)) - err * (1 + 4 * _gamma(1))) * (1 - 4 * _gamma(1))
    return lo if lo > 0 else 0.0


def composed_bound(fs: list[Block], gs: list[Block], bounds: list[tuple[float, float] | None]) -> tuple[float, float, float, str]:
    """The error of the composed witness G = g_L ∘ … ∘ g_1 of F = f_L ∘ … ∘ f_1, from each block's
    proved bound |f_k(y) − g_k(y)|_∞ ≤ a_k|y|_∞ + e_k (``bounds``, :attr:`Witness.bound`):
    ``(ε, α, β, why)`` with

        |F(x) − G(x)|_∞ ≤ α|x|_∞ + β ≤ ε·(|F(x)|_∞ + |x|_∞ + |F(0)|_∞)   for every x.

    With y_k = f_k(y_{k−1}) and z_k = g_k(z_{k−1}) (y_0 = z_0 = x):
    |y_k − z_k| ≤ |f_k(y_{k−1}) − g_k(y_{k−1})| + |g_k(y_{k−1}) − g_k(z_{k−1})|
    ≤ a_k|y_{k−1}| + e_k + Lip(g_k)|y_{k−1} − z_{k−1}|, and |y_k| ≤ Lip(f_k)|y_{k−1}| + |f_k(0)|
    (:func:`lipschitz_upper`, :func:`f0_upper`): so |y_k| ≤ P_k|x| + Q_k and
    α_k = Lip(g_k)α_{k−1} + a_kP_{k−1}, β_k = Lip(g_k)β_{k−1} + a_kQ_{k−1} + e_k, each step
    raised past its float rounding. ε = max(α, β / s) with s a rigorous lower bound of the stack's own
    |F(0)|_∞ ≥ |f_L(0)|_∞ − Lip(f_L)·|y_{L−1}(0)|_∞ ≥ :func:`f0_lower`(f_L) − Lip(f_L)·Q_{L−1} (layers whose
    biases cancel through the stack leave F(0) small: a constant error is stated against F's own, not
    against a layer's); ε = α when β = 0. ``why`` names what is missing when ε is inf."""
    P, Q, alpha, beta = 1.0, 0.0, 0.0, 0.0
    for k, (f, g, ab) in enumerate(zip(fs, gs, bounds)):
        if ab is None:
            return math.inf, math.inf, math.inf, f"block {k} ({f.name}) has no rigorous error bound for its witness"
        a, e = ab
        last = k == len(fs) - 1
        Lg = lipschitz_upper(g) if k else 0.0  # (α, β are 0 before the first block)
        Lf, c = (lipschitz_upper(f), f0_upper(f)) if not last else (0.0, 0.0)
        if not (math.isfinite(Lg) and math.isfinite(Lf) and math.isfinite(c)):
            what = "is gated or its σ has no stated Lipschitz constant" if not (math.isfinite(Lg) and math.isfinite(Lf)) \
                else "has no rigorous bound on |f(0)|"
            return math.inf, math.inf, math.inf, f"block {k} ({f.name}) {what}"
        alpha = _up(Lg * alpha + a * P, 3)
        beta = _up(Lg * beta + a * Q + e, 4) if (beta or Q or e) else 0.0
        if not last:
            P, Q = _up(Lf * P, 1), (_up(Lf * Q + c, 2) if (Q or c) else 0.0)
    if not math.isfinite(alpha) or not math.isfinite(beta):
        return math.inf, alpha, beta, "the composed bound overflowed"
    if beta == 0.0:
        return alpha, alpha, beta, ""
    s = max(stack_f0_lower(fs), f0_lower(fs[-1]) - (_up(lipschitz_upper(fs[-1]) * Q, 1) if Q else 0.0))  # (|y_{L−1}(0)|∞ ≤ Q)
    s *= 1 - 2.0**-50
    if not s > 0:
        return math.inf, alpha, beta, f"the composed constant error {beta:.3g} has no provably nonzero |F(0)|∞ to be stated against"
    return max(alpha, _up(beta / s, 1)), alpha, beta, ""
