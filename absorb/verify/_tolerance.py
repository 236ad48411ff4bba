"""A ``not_absorbable`` against the tolerance, re-derived here.

The exact arguments (degree, linearization, result 5, the skeleton, the canonical form …) rule
out a residual-free g *equal* to f. ``absorbable`` means within the tolerance τ:
|f(x) − g(x)|∞ ≤ τ(|f(x)|∞ + |x|∞ + |f(0)|∞) for every x. So a ``not_absorbable`` is false at τ
when some residual-free g of f's width and class is that close, and this module looks for one by
bound, with no search (this checker's own derivation; it shares no code with the producer):

* g = B, f without its skip: f − g = M x and |M x|∞ ≤ ‖M‖∞|x|∞ (exact row sums).
* g a block of units that realise an affine map x ↦ A x + β exactly, with
  |f(x) − A x − β|∞ ≤ r|x|∞, r = K·Σ_i |w_i|∞|u_i|₁ (w_i a column of W_down, u_i a row of W_up):
  - ungated, σ(z) − σ(−z) = c·z with c ≠ 0 (:func:`absorb.verify._symbolic.flip_constant`): a pair
    (u, b, w/c), (−u, −b, −w/c) gives w·(u·x + b), so 2·rank(A) units (one more for a constant
    W_down σ(0)·1 of a bias-free f, up row 0): A = M, K = σ's Lipschitz constant; and, bias-free
    with σ(0) = 0, A = M + (c/2)·W_down W_up with K = the Lipschitz constant of σ(z) − (c/2)z;
  - gated, linear value branch, bias-free, a gate with γ = g(0) ≠ 0 and sup |g|, sup |g − γ| in
    :data:`GATES`: a unit with gate row 0 gives γ·w·(u·x), so rank(A) units: A = M, K = sup |g|;
    A = M + γ·W_down W_up, K = sup |g − γ|.
  |f(x)|∞ + |f(0)|∞ ≥ (s − r)|x|∞ with s = σ_min(A)/√d (β = f(0) where there is a constant), so
  r ≤ τ(1 + max(s − r, 0)) suffices.

For a user's σ that is not piecewise linear none of these constants is known: ``estimated=True`` runs the
ungated maps with sup |σ(z) − σ(0)|/|z| (bias-free; with biases σ's Lipschitz constant) and sup |σ(z) − (c/2)z|/|z|
estimated on a grid, and for any user's σ with a constant in the map (biases, or σ(0) ≠ 0) the split
σ(z) − t·z = q(z) + ρ(z) (:func:`_split`: a hinge q with σ's slopes at ±∞ and a bounded ρ, whose variation is read on
the grid); what it finds is reported as not re-checked, never as a rejection. With biases, σ(z) − σ(−z − 2s) = c·(z + s)
serves as well as the flip identity (pairs with biases b − s, −b − s; s read from σ far out, then proved exactly).

Every constant here is an upper bound (or, in the estimated pass, an estimate), so a map found within the
tolerance is a residual-free g within it: the not_absorbable is false, whatever the producer's screen missed.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import sympy as sp

from absorb.verify import _shift
from absorb.verify._numerics import _U, exact_rank, rounding_allowance
from absorb.verify._pieces import decide_zero, pl_lipschitz
from absorb.verify._sampled import sampled_near  # noqa: F401  (the sampled screen, re-exported)
from absorb.verify._shift import _ends, _flip_or_shift
from absorb.verify._symbolic import _sigma_lipschitz, _variable

EVEN = {"relu": 0.5, "leaky_relu": 0.495, "gelu": 0.5, "gelu_tanh": 0.5, "silu": 0.5, "quick_gelu": 0.5}
"""sup |σ′(z) − c/2| is not needed for these: |σ(z) − (c/2)z| ≤ K|z| with K = 1/2 (ReLU |z|/2, GELU
z(Φ(z) − 1/2), SiLU z(s(z) − 1/2), quick-GELU z(s(1.702z) − 1/2), GELU-tanh (z/2)·tanh(·)); leaky
ReLU (slope 1/100) 0.99/2."""

GATES = {"sigmoid": (0.5, 1.0, 0.5, 0.25)}
"""(g(0), sup |g|, sup |g − g(0)|, sup |g′|) of a bounded gate with g(0) ≠ 0."""

_SAFETY = 1.0


@lru_cache(maxsize=64)
def _even_lipschitz(srepr: str, c: Fraction) -> float | None:
    e = sp.sympify(srepr)
    x = _variable(e)
    L = pl_lipschitz(sp.expand(e - sp.Rational(c.numerator, c.denominator) / 2 * x), x)
    return None if L is None else float(L) * (1 + 4 * _U)


_LIPSCHITZ: dict[str, float | None] = {}


def _lipschitz(block: Any) -> float | None:
    """:func:`absorb.verify._symbolic._sigma_lipschitz` of a user's σ, once per expression."""
    key = sp.srepr(block.activation.expr)
    if key not in _LIPSCHITZ:
        _LIPSCHITZ[key] = _sigma_lipschitz(block)
    return _LIPSCHITZ[key]


_Z = np.unique(np.concatenate([-np.logspace(9, -7, 800), np.arange(-20000, 20001) / 400, np.logspace(-7, 9, 800)]))
"""This checker's sample of the line: [−50, 50] in steps of 1/400 and logarithmic tails to ±10⁹."""
_SEEN: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _grid(act: Any) -> tuple[np.ndarray, np.ndarray]:
    """(z, σ(z)) at the points of :data:`_Z` where σ's float64 value is finite and, for a user's expression, agrees
    with mpmath at 160 and 224 bits at the ends of its stretch of 20 points (relative 10⁻⁸): σ is read only where
    its value is right (cosh(200x) overflows past |x| ≈ 3.5; cosh(x)**2 − sinh(x)**2 loses every digit past 20)."""
    from absorb.model.activations import is_builtin

    key = act.key
    if key not in _SEEN:
        with np.errstate(all="ignore"):
            v = np.asarray(act(_Z), dtype=np.float64)
        ok = np.isfinite(v)
        if not is_builtin(act):
            from absorb.model._expr_numpy import UnsupportedExpression, precise_form

            try:
                at = np.arange(0, len(_Z), 20)
                a, b = precise_form(key, bits=160)(_Z[at]), precise_form(key, bits=224)(_Z[at])
                with np.errstate(all="ignore"):
                    right = (np.abs(a - b) <= 1e-8 * np.abs(b)) & (np.abs(v[at] - b) <= 1e-8 * np.abs(b) + 1e-300)
                ok &= np.repeat(right & np.append(right[1:], right[-1]), 20)[: len(_Z)]
            except UnsupportedExpression:
                pass
        _SEEN[key] = (_Z[ok], v[ok])
    return _SEEN[key]


def _at_zero(act: Any) -> float:
    """σ(0) as σ's float64 evaluation gives it, and exactly 0 where a user's expression is 0 at 0 though its
    float64 value is not (terms that cancel: 3.5·10⁻¹⁸, sin(3)² + cos(3)² − 1 = −1.1·10⁻¹⁶), decided exactly."""
    with np.errstate(all="ignore"):
        v = float(np.asarray(act(np.zeros(1)), dtype=np.float64).reshape(-1)[0])
    if 0 < abs(v) < 1e-9 and getattr(act, "expr", None) is not None and decide_zero(act.expr.subs(_variable(act.expr), 0)) is True:
        return 0.0
    return v


def _grid_lipschitz(act: Any, slope: float = 0.0) -> float | None:
    """The largest difference quotient of σ(z) − slope·z between neighbouring points of :func:`_grid`: an
    estimate of sup |σ′ − slope| for a user's smooth σ, not a bound — a claim resting on it is reported as not re-checked."""
    z, v = _grid(act)
    return float(np.max(np.abs(np.diff(v - slope * z)) / np.diff(z))) if len(z) > 1 else None


def _grid_ratio(act: Any, slope: float) -> float | None:
    """The largest |σ(z) − σ(0) − slope·z|/|z| at the points z ≠ 0 of :func:`_grid`: an estimate of its sup from
    below, not a bound — a claim resting on it is reported as not re-checked."""
    z, v = _grid(act)
    v0 = _at_zero(act)
    keep = z != 0
    if not (math.isfinite(v0) and np.any(keep)):
        return None
    return float(np.max(np.abs(v[keep] - v0 - slope * z[keep]) / np.abs(z[keep])))


def _grid_gate(act: Any, zero_ok: bool = False) -> tuple[float, float, float, float] | None:
    """(g(0), sup |g|, sup |g − g(0)|, sup |g′|) of a user's gate, the sups estimated on :func:`_grid` (not bounds);
    None where g(0) is not finite, or 0 (unless ``zero_ok`` and g ≠ 0 somewhere on the grid)."""
    z, v = _grid(act)
    g0 = _at_zero(act)
    lip = _grid_lipschitz(act)
    if not (math.isfinite(g0) and (g0 != 0.0 or zero_ok and np.any(v != 0)) and len(z) and lip is not None):
        return None
    return g0, float(np.max(np.abs(v))), float(np.max(np.abs(v - g0))), lip


def _up(v: float, ops: int) -> float:
    return v * (1 + (ops + 2) * _U) if math.isfinite(v) else math.inf


def _rank_at_most(A: np.ndarray, k: int) -> bool:
    """rank(A) ≤ k, exactly (A's float entries as rationals); False when not decided cheaply."""
    if min(A.shape) <= k:
        return True
    if A.shape[0] > 64:
        return False
    return exact_rank([[Fraction(float(v)) for v in row] for row in A]) <= k


def contradiction(block: Any, tol: float, width: int | None = None, estimated: bool = False, biases: bool = False) -> str | None:
    """Why a not_absorbable of ``block`` at tolerance ``tol`` is false (a residual-free g of ``width``
    units (n when None) and f's class within the tolerance, found by bound), or None. g may keep some of
    f's units as they are and spend the slots of its smallest units on the map (:func:`_subsets`).
    ``biases``: the class allows g biases though f has none (a shifted flip's pairs, a gate bias c with g(c) ≠ 0)."""
    d, n = block.d, block.n
    width = n if width is None else width
    M = np.asarray(block.M, dtype=np.float64)
    with np.errstate(all="ignore"):
        normM = _up(float(np.max(np.sum(np.abs(M), axis=1))), d)
        low = float(np.max(np.sum(np.abs(M), axis=1))) * (1 - (d + 2) * 2.0**-52)  # (rounded down: τ at the boundary is within)
    if (1 - tol) * low <= tol and width >= n:  # (|f − cB|∞ ≤ (1 − c)|f(x)|∞ + c‖M‖∞|x|∞ = ‖M‖∞/(1 + ‖M‖∞)·(|f(x)|∞ + |x|∞))
        return (f"‖M‖∞ = {normM:.3g} ≤ τ/(1 − τ): f is within the tolerance of c·B, its own residual-free part scaled by "
                "c = 1/(1 + ‖M‖∞) (f − cB = (1 − c)·f + c·M x)")
    if n * d > 1 << 24 or not normM < 2.0**500:
        return _nearly_linear(block, tol, width) if estimated else None
    biased = any(getattr(block, k) is not None and np.any(getattr(block, k)) for k in ("b_up", "b_down", "b_gate"))
    g_biases = biases or biased
    if (flat := _constant_g(block, normM, tol, g_biases, biased, estimated)) is not None:
        return flat
    low: list[float] = []

    def f0_low() -> float:  # (a rigorous lower bound of the whole f's |f(0)|∞, formed where a map needs it)
        if not low:
            from absorb.verify._at_zero import _f0_lower

            low.append(_f0_lower(block))
        return low[0]

    for part, kept in _subsets(block):
        U, D = np.asarray(part.W_up, dtype=np.float64), np.asarray(part.W_down, dtype=np.float64)
        with np.errstate(all="ignore"):
            size = _up(float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1))), part.n + d)
        reach = tol * (1 + normM) / (_SAFETY * size) if size else math.inf
        for A, K, units, C in _maps(part, M, U, D, biased, reach, tol, estimated, g_biases):
            r = _SAFETY * K * size
            if not (math.isfinite(r) and np.all(np.isfinite(A)) and units + kept <= width):
                continue
            if C is not None:  # (an error r|x|∞ + C·Σ_i |w_i|∞: within τ(|x|∞ + |f(0)|∞) when r < τ and the constant ≤ τ|f(0)|∞)
                with np.errstate(all="ignore"):
                    const = _SAFETY * C * _up(float(np.sum(np.max(np.abs(D), axis=0))), part.n)
                if (1 - tol) * r < tol and (1 - tol) * const <= tol * f0_low():  # ((1 − τ)g: f − (1 − τ)g = τf + (1 − τ)(f − g))
                    return (f"f is within {r:.3g}·|x|∞ + {const:.3g} of a block of {units} residual-free units that realise "
                            "an affine map exactly" + (f" and {kept} of f's units kept as they are" if kept else "")
                            + f", ≤ {width} units, which is within the tolerance (|f(0)|∞ ≥ {f0_low():.3g})")
                continue
            # (x ↦ A x + f(0): |f(x)|∞ + |f(0)|∞ ≥ |A x|∞ − r|x|∞ all the same; not where kept units add to f)
            if (1 - tol) * r < tol or (not kept and r < tol * (1 + max(_lower_gain(A) - r, 0.0))):
                return (f"f is within {r:.3g}·|x|∞ of a block of {units} residual-free units that realise an affine map exactly"
                        + (f" and {kept} of f's units kept as they are" if kept else "") + f", ≤ {width} units, which is within the tolerance")
    if estimated and not block.gated and sp.srepr(block.activation.expr) in _shift.UNDECIDED:
        return f"σ's flip and shifted-flip identities were not decided within {_shift.BUDGET:g} s of CPU time, so their maps were not tried"
    return _nearly_linear(block, tol, width) if estimated else None


def _constant_g(block: Any, normM: float, tol: float, g_biases: bool, biased: bool, estimated: bool) -> str | None:
    """g = f(0) with no unit (b_down = f(0); bias-free only where f(0) = 0 exactly): |f(x) − f(0)|∞ ≤ r|x|∞ and
    |f(x)|∞ + |f(0)|∞ ≥ |f(x) − f(0)|∞, so (1 − τ)·r ≤ τ puts g within the tolerance. Exact pass (ungated):
    r = ‖M‖∞ + L·Σ_i |w_i|∞|u_i|₁, L σ's Lipschitz constant (this checker's own). Estimated pass: σ(z) = t·z + (the
    rest) for t ∈ {0, σ's mean slopes}, r = ‖M + t·W_down W_up‖∞ + K_t·size with K_t read on the grid (gated, a
    linear value branch: the gate's deviation from t, and with biases its slope times |b_up|)."""
    from absorb.model.activations import is_builtin

    if not tol < 1 or block.n * block.d > 1 << 22:
        return None
    act = block.activation
    gated = block.W_gate is not None
    if gated and not block.value_identity:
        return None
    if not (g_biases or not biased and (gated or _at_zero(act) == 0.0)):
        return None
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    with np.errstate(all="ignore"):
        wmax, u1 = np.max(np.abs(D), axis=0), np.sum(np.abs(U), axis=1)
        size = _up(float(np.sum(wmax * u1)), block.n + block.d)
    rs: list[float] = []
    if not estimated and not gated:
        L = _lipschitz(block) if not is_builtin(act) else _sigma_lipschitz(block)
        rs = [] if L is None else [_up(normM + L * size, 4)]
    elif estimated:
        z, v = _grid(act)
        if len(z) < 2:
            return None
        if gated:
            lip = _grid_lipschitz(act) or 0.0
            bu = np.zeros(block.n) if block.b_up is None else np.abs(np.asarray(block.b_up, dtype=np.float64))
            gate = lip * bu * np.sum(np.abs(np.asarray(block.W_gate, dtype=np.float64)), axis=1)
            ts = {0.0, _at_zero(act), float(np.max(v) + np.min(v)) / 2}
        else:
            ts = {0.0, float(np.mean(np.diff(v[[0, -1]]) / np.diff(z[[0, -1]]))), float((v[np.searchsorted(z, 1.0)] - v[np.searchsorted(z, -1.0)]) / 2)}
        with np.errstate(all="ignore"):
            DU = D @ U  # (formed once for the t below)
        for t in ts:
            if not math.isfinite(t):
                continue
            with np.errstate(all="ignore"):
                Mt = _up(float(np.max(np.sum(np.abs(M + t * DU), axis=1))), block.n + block.d)
                if gated:
                    K_part = float(np.sum(wmax * (float(np.max(np.abs(v - t))) * u1 + (gate if biased else 0.0))))
                else:
                    K = _grid_lipschitz(act, t) if biased else _grid_ratio(act, t)
                    K_part = math.inf if K is None else K * size
            rs.append(Mt + K_part)
    for r in rs:
        if math.isfinite(r) and (1 - tol) * r < tol:
            return (f"f is within {r:.3g}·|x|∞ ≤ τ/(1 − τ)·|x|∞ of the constant f(0), a residual-free block with no unit: "
                    "within the tolerance")
    return None


def _nearly_linear(block: Any, tol: float, width: int) -> str | None:
    """An ungated f with σ of linear growth (σ(z)/z → slopes not both 0, this checker's own limits) within β|x|∞ of
    its affine part (β = L·max_r Σ_i |W_down[r,i]|·‖u_i‖₁, L σ's Lipschitz constant) with β ≤ τ: a residual-free g
    approximating M x alone, nonlinearly (fewer units than an exact realisation takes), may be within the tolerance;
    no exact argument bounds that approximation."""
    from absorb.verify._beyond import slopes
    from absorb.verify._symbolic import _sigma_lipschitz

    if block.W_gate is not None:
        return None
    got = slopes(block.activation.expr)
    if got is None or got[0] == got[1] == 0:
        return None
    L = _sigma_lipschitz(block)
    if L is None or not math.isfinite(L):
        return None
    with np.errstate(all="ignore"):
        u1 = np.sum(np.abs(np.asarray(block.W_up, dtype=np.float64)), axis=1)
        beta = _up(float(np.max(np.abs(np.asarray(block.W_down, dtype=np.float64)) @ u1, initial=0.0)) * L, block.n + block.d)
    if not beta <= tol:
        return None
    sv = np.linalg.svd(np.asarray(block.M, dtype=np.float64), compute_uv=False)
    rank = int(np.sum(sv > sv[0] * block.d * 2.0**-52)) if sv.size and sv[0] > 0 else 0
    if width <= rank:  # (n ≤ rank M units: where every u_i·x = 1 their even part is as large as their linear part)
        return None
    rest = float(sv[width // 2]) if width // 2 < rank else 0.0  # (what pairs cannot realise; fits err a fraction of it)
    if tol < rest / (8 * (1 + float(sv[0]))):
        return None
    return (f"f is within β = {beta:.3g}·|x|∞ of its affine part, β ≤ τ: a residual-free block approximating M x with "
            "its units, nonlinearly too, may be within the tolerance (not bounded by the exact argument)")


def _lower_gain(A: np.ndarray) -> float:
    """≤ min |A x|∞/|x|∞: with Y ≈ A⁻¹ and E ≥ |I − Y A| (its rounding included), |x|∞ ≤ ‖Y‖∞|A x|∞ + ‖E‖∞|x|∞,
    so (1 − ‖E‖∞)/‖Y‖∞ is one; 0 where that fails."""
    d = A.shape[0]
    try:
        with np.errstate(all="ignore"):
            Y = np.linalg.inv(A)
            E = np.abs(np.eye(d) - Y @ A) + _up((d + 2) * _U, d) * (np.abs(Y) @ np.abs(A) + 1)
            e, y = _up(float(np.max(np.sum(E, axis=1))), d), _up(float(np.max(np.sum(np.abs(Y), axis=1))), d)
    except np.linalg.LinAlgError:
        return 0.0
    return (1 - e) / y * (1 - 8 * _U) if math.isfinite(e) and math.isfinite(y) and e < 1 and y > 0 else 0.0


def _subsets(block: Any):  # type: ignore[no-untyped-def]
    """(f with only the units T, the number of f's other units): all of them first; then T the t smallest units by
    |w_i|∞·|u_i|₁ for t ∈ {rank M, 2·rank M, 2·rank M + 1, d, 2d}, where they hold under half of f's size. A g that
    keeps the other units realises f's T-part's map in T's slots."""
    yield block, 0
    n, d = block.n, block.d
    with np.errstate(all="ignore"):
        w = np.max(np.abs(np.asarray(block.W_down, dtype=np.float64)), axis=0) * np.sum(np.abs(np.asarray(block.W_up, dtype=np.float64)), axis=1)
    if n * d > 1 << 20 or not np.all(np.isfinite(w)):
        return
    rank = int(np.linalg.matrix_rank(np.asarray(block.M, dtype=np.float64)))
    order = np.argsort(w, kind="stable")
    for t in sorted({rank, 2 * rank, 2 * rank + 1, d, 2 * d}):
        T = np.sort(order[:t])
        if 0 < t < n and float(np.sum(w[T])) < 0.5 * float(np.sum(w)):
            cut = {k: None if getattr(block, k) is None else np.asarray(getattr(block, k))[T] for k in ("W_up", "W_gate", "b_up", "b_gate")}
            yield block.replace(W_down=np.asarray(block.W_down)[:, T], **cut), n - t


EVEN_LIPSCHITZ = {"relu": 0.5, "leaky_relu": 0.495, "gelu": 0.63, "gelu_tanh": 0.63, "silu": 0.6, "quick_gelu": 0.6, "softplus": 0.5}
"""sup |e′| of the even part e(z) = σ(z) − (c/2)z (needed with biases, or σ(0) ≠ 0): ReLU 1/2, leaky ReLU 0.99/2;
GELU e′(z) = Φ(z) + zφ(z) − 1/2, largest at ±√2 (0.6289, the tanh form 0.6290); SiLU e′(z) = s(z)(1 + z(1 − s(z))) − 1/2,
largest at ±2.3994 (0.5998; quick-GELU is SiLU at 1.702z, scaled: the same); softplus e(z) = log(2cosh(z/2)),
e′ = tanh(z/2)/2, below 1/2."""


def _maps(block: Any, M: np.ndarray, U: np.ndarray, D: np.ndarray, biased: bool, reach: float,  # type: ignore[no-untyped-def]
          tol: float, estimated: bool = False, g_biases: bool = False):
    """(A, K, units needed) for the maps of the module's docstring, cheapest first. ``reach``: τ(1 + ‖M‖∞)/(2·size),
    the K below which a map with ‖A‖∞ ≤ ‖M‖∞ can pass (‖A‖∞ ≤ ‖M‖∞ + |γ|·size otherwise); σ's flip constant
    (sympy work) is derived only when some map can pass."""
    from absorb.model.activations import is_builtin

    act = block.activation
    name = act.name if is_builtin(act) else None
    if block.W_gate is not None:
        if not block.value_identity:
            return
        bounds = GATES.get(name) if name is not None and not estimated else None
        if name is None and estimated:  # a user's gate: estimated on the grid, where a map can pass (sup |g| ≥ |g(0)|,
            with np.errstate(all="ignore"):  # sup |g − g(0)| ≥ |g(±30) − g(0)|: a filter)
                g = np.asarray(act(np.array([0.0, -30.0, 30.0])), dtype=np.float64)
            g[0] = _at_zero(act)
            lo = float(np.max(np.abs(g[1:] - g[0])))
            if math.isfinite(g[0]) and (g[0] != 0 or g_biases) and min(abs(float(g[0])), lo if math.isfinite(lo) else math.inf) <= reach + tol * abs(float(g[0])):
                bounds = _grid_gate(act, g_biases)
        if bounds is None:
            return
        gamma, sup_g, sup_dev, lip = bounds
        if gamma == 0.0:  # (g's biases: gate row 0, gate bias c with g(c) ≠ 0 gives g(c)·w·(u·x); only A = M)
            sup_dev = math.inf
        if biased:  # f − (A x + f(0)) = W_down[(g(G x + c) − t) ⊙ U x + (g(G x + c) − g(c)) ⊙ b_up], t = 0 (A = M) or
            bu = np.zeros(block.n) if block.b_up is None else np.abs(np.asarray(block.b_up, dtype=np.float64))  # γ (A = M + γDU)
            with np.errstate(all="ignore"):
                wmax, u1 = np.max(np.abs(D), axis=0), np.sum(np.abs(U), axis=1)
                gate_i = lip * bu * np.sum(np.abs(np.asarray(block.W_gate, dtype=np.float64)), axis=1)
                size = float(np.sum(wmax * u1))
            for A, sup in ((M, sup_g), (None, sup_dev)):
                with np.errstate(all="ignore"):
                    if A is None:
                        A = M + gamma * (D @ U)  # (its float rounding: within γ_{n+2}|γ|Σ|w_i||u_i|, counted below)
                    r = _up(float(np.sum(wmax * (sup * u1 + gate_i))), block.n + block.d)
                if not (size > 0 and math.isfinite(r) and np.all(np.isfinite(A))):
                    continue
                rank = int(np.linalg.matrix_rank(A))
                if _rank_at_most(A, rank):
                    yield A, r / size * (1 + 4 * _U) + (block.n + 4) * _U * abs(gamma), rank, None
            return
        for A, K in ((M, sup_g), (None, sup_dev)):
            if A is None:
                with np.errstate(all="ignore"):
                    A = M + gamma * (D @ U)
            r = np.linalg.matrix_rank(A) if np.all(np.isfinite(A)) else block.d
            if _rank_at_most(A, int(r)):
                yield A, K, int(r), None
        return
    L = _lipschitz(block) if name is None else _sigma_lipschitz(block)
    smooth = name is None and L is None  # a user's σ that is not piecewise linear: its constants only estimated
    zero = _at_zero(act)
    if not math.isfinite(zero):
        return
    affine = biased or zero != 0.0
    if estimated and name is not None:  # (a built-in σ with no flip identity, ELU: scaled pairs where f(0) may be ≠ 0)
        if affine and _flip_or_shift(act, g_biases, not biased)[0] is None:
            yield from _defect_maps(block, M, U, D, biased, smooth, L, affine, reach)
        return
    if not estimated and smooth:
        return
    if estimated and affine:  # a user's σ (any): a slope plus a bounded part, the part's size read on the grid
        yield from _split(block, M, U, D, g_biases, tol)
    if estimated and _flip_or_shift(act, g_biases, not biased)[0] is None:  # pairs within a small flip defect (an estimate)
        yield from _defect_maps(block, M, U, D, biased, smooth, L, affine, reach)
    if estimated != smooth:  # (the estimated pass covers exactly the maps that need those estimates)
        return
    if estimated:  # on a grid, not bounds: with biases Lipschitz constants, bias-free sup |σ(z) − σ(0) − slope·z|/|z|
        with np.errstate(all="ignore"):  # (c read numerically first, so that sympy runs only where a map can pass)
            c_num = float(np.asarray(act(np.ones(1)) - act(-np.ones(1)), dtype=np.float64).reshape(-1)[0])
            ends = np.asarray(act(np.array([-30.0, 30.0])), dtype=np.float64) - zero
            k_lo = float(np.max(np.abs(ends - c_num / 2 * np.array([-30.0, 30.0])))) / 30  # (about the sup's size: a filter)
        if not (abs(c_num) / 2 <= reach or not k_lo > reach + tol * abs(c_num) / 2):
            return  # (neither map can pass: the grid, with its mpmath points, is not formed)
        L = _grid_lipschitz(act) if biased else _grid_ratio(act, 0.0)
        K_est = None if not math.isfinite(c_num) else _grid_lipschitz(act, c_num / 2) if biased else _grid_ratio(act, c_num / 2)
        if not ((L is not None and L <= reach) or (K_est is not None and K_est <= reach + tol * abs(c_num) / 2)):
            return
    if L is None:
        return
    even_table = EVEN_LIPSCHITZ if affine else EVEN
    # a built-in's K are known without c (|c| ≤ 2L): neither map can pass past this
    if name is not None and not (L <= reach or even_table.get(name, math.inf) <= reach + tol * L / 2):
        return
    c, _s = _flip_or_shift(act, g_biases, not biased)
    if not c:
        return
    r = int(np.linalg.matrix_rank(M))
    # a bias-free g carries a constant W_down σ(0)·1 on an unbalanced pair (tu, w/(ct)), (−tu, −w/(ct) + v), within
    # |v|·L·t|u|₁|x|∞ of w(u·x) + v σ(0) for any t > 0; only with no pair at all does it need a unit of its own
    if _rank_at_most(M, r):
        yield M, L, 2 * r + (1 if affine and not biased and r == 0 else 0), None
    if estimated:
        K = _grid_lipschitz(act, float(c) / 2) if biased else _grid_ratio(act, float(c) / 2)
    elif name is not None:
        K = even_table.get(name)
    else:
        K = _even_lipschitz(sp.srepr(act.expr), c)  # (sup |e′| ≥ sup |e(z) − e(0)|/|z|)
    if K is None:
        return
    with np.errstate(all="ignore"):
        A = M + float(c) / 2 * (D @ U)
    if not np.all(np.isfinite(A)):
        return
    # A in float64 is within γ_{n+2}·|c|/2·Σ_i |w_i||u_i| of the exact map: counted in K
    K = K + (block.n + 4) * _U * abs(float(c)) / 2
    r = int(np.linalg.matrix_rank(A))
    if _rank_at_most(A, r):
        yield A, K, 2 * r + (1 if affine and not biased and r == 0 else 0), None


def _split(block: Any, M: np.ndarray, U: np.ndarray, D: np.ndarray, biased: bool, tol: float):  # type: ignore[no-untyped-def]
    """(A, k, units, C) for a user's σ with σ(z) − t·z = q(z) + ρ(z), t = 0 (A = M) or c/2 (A = M + (c/2)·W_down W_up),
    q the hinge at −s with slopes L± − t (k = max |L± − t|, read at ±10⁶: :func:`_ends`) and ρ varying by C on
    :func:`_grid`: |f(x) − A x − f(0)|∞ ≤ k·Σ|w_i|∞|u_i|₁·|x|∞ + C·Σ|w_i|∞ — a steep bounded bump costs its height, not
    its slope. Estimates, never bounds: what they find is reported as not re-checked."""
    act = block.activation
    ends = _ends(act)
    if ends is None:
        return
    lp, lm, _ = ends
    with np.errstate(all="ignore"):
        size = float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1)))
    # (c = L₊ − L₋ for either identity: the even slope is about |L₊ + L₋|/2; sympy runs only where a map can pass)
    if not (math.isfinite(size) and _SAFETY * min(max(abs(lp), abs(lm)), abs(lp + lm) / 2) * size < tol):
        return
    f_zero = not any(getattr(block, k) is not None and np.any(getattr(block, k)) for k in ("b_up", "b_down", "b_gate"))
    c, s = _flip_or_shift(act, biased, f_zero)
    if not c:
        return
    z, v = _grid(act)
    h = -float(s) if s else 0.0
    for t in (0.0, float(c) / 2):
        k = max(abs(lp - t), abs(lm - t)) * (1 + 1e-6)
        if not (_SAFETY * k * size < tol and len(z) > 1):
            continue
        with np.errstate(all="ignore"):
            rho = v - t * z - np.where(z >= h, (lp - t) * (z - h), (lm - t) * (z - h))
            A = M if t == 0.0 else M + t * (D @ U)
            C = float(rho.max() - rho.min())
        if math.isfinite(C) and np.all(np.isfinite(A)):
            rank = int(np.linalg.matrix_rank(A))
            if _rank_at_most(A, rank):
                yield A, k, 2 * rank, C


def _defect(act: Any, c: float, smooth: bool) -> float | None:
    """κ ≥ sup_{z≠0} |σ(z) − σ(−z) − c·z|/|z|: for a piecewise-linear σ at its break points and their mirrors (the
    defect δ is linear between them and δ(0) = 0), next to 0 and far out, exactly (sympy); for a smooth σ read on
    :func:`_grid`'s points whose mirror is there too. An estimate either way for what it serves (reported as not
    re-checked)."""
    if smooth:
        z, v = _grid(act)
        pos = z > 0
        both, i, j = np.intersect1d(z[pos], -z[~pos], return_indices=True)
        if not len(both):
            return None
        with np.errstate(all="ignore"):
            k = float(np.max(np.abs(v[pos][i] - v[~pos][j] - c * both) / both))
        return k if math.isfinite(k) else None
    from absorb.verify._pieces import exact_value, pieces

    e = act.expr
    x = _variable(e)
    try:
        pts, _ = pieces(e, x)
        cq = sp.nsimplify(c)
        cand = {abs(p) for p in pts if p != 0}
        lo, hi = (min(cand) / 2, 2 * max(cand)) if cand else (sp.Integer(1), sp.Integer(2))
        out = 0.0
        for t in [*cand, lo, hi, 2 * hi]:
            for z in (t, -t):
                dz = exact_value(e, x, z) - exact_value(e, x, -z) - cq * z
                out = max(out, float(abs(dz / z)))
        return out * (1 + 1e-12)
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: no estimate
        return None


def _defect_maps(block: Any, M: np.ndarray, U: np.ndarray, D: np.ndarray, biased: bool, smooth: bool, L: float | None,  # type: ignore[no-untyped-def]
                 affine: bool = False, reach: float = math.inf):
    """(A, K, units, C) for A = M and A = M + (c/2)·W_down W_up realised by antipodal pairs of a σ whose flip identity
    fails by a defect δ: c = L₊ − L₋ (σ's slopes at ±∞, :func:`_ends`), κ = :func:`_defect`, and a pair (v, s·u/c),
    (−v, −s·u/c) per singular triple (s, u, v) of A gives s·u(v·x) within s|u|∞κ|v·x|/|c|, added to K (C None). Where
    f(0) may be ≠ 0 (``affine``) the pair scaled by t, (tv, s·u/(ct)), (−tv, −s·u/(ct)), leaves s·u·δ(t v·x)/(ct),
    δ(y) = o(|y|): within τ(|x|∞ + |f(0)|∞) for t large — κ = 0, and C a positive constant as small as wished (the
    caller then asks |f(0)|∞ > 0)."""
    act = block.activation
    ends = _ends(act)
    if ends is None or abs(ends[0] - ends[1]) < 1e-9 or (block.d > 512 and not affine):
        return
    c = float(Fraction(ends[0] - ends[1]).limit_denominator(1000))
    if c == 0:
        return
    kappa = 0.0 if affine else _defect(act, c, smooth)
    if kappa is None:
        return
    with np.errstate(all="ignore"):
        size = float(np.sum(np.max(np.abs(D), axis=0) * np.sum(np.abs(U), axis=1)))
    for t, K in ((0.0, L if L is not None else _grid_lipschitz(act) if biased else _grid_ratio(act, 0.0)),
                 (c / 2, _grid_lipschitz(act, c / 2) if biased else _grid_ratio(act, c / 2))):
        with np.errstate(all="ignore"):
            A = M if t == 0.0 else M + t * (D @ U)
        if K is None or not (size > 0 and np.all(np.isfinite(A))) or (affine and K > reach):  # (reach: no map past it passes)
            continue
        share = 0.0
        if kappa:
            Us, S, Vt = np.linalg.svd(A)
            share = kappa * float(np.sum(S * np.max(np.abs(Us), axis=0) * np.sum(np.abs(Vt), axis=1))) / (abs(c) * size)
        rank = int(np.linalg.matrix_rank(A))
        if _rank_at_most(A, rank):
            yield A, K + share, 2 * rank, (2.0**-1000 if affine else None)


def limit_share(block: Any) -> float:
    """‖M‖∞/(1 + ‖M‖∞), rounded down (the checker's own): the skip's share along the ray of M's heaviest row's signs."""
    with np.errstate(all="ignore"):
        norm = float(np.abs(np.asarray(block.M, dtype=np.float64)).sum(axis=1).max()) * (1 - (block.d + 2) * 2.0**-52)
    return norm / (1 + norm) * (1 - 2.0**-50) if np.isfinite(norm) else 0.0


def proved_within(th: Any, b: dict[str, Any], block: Any, tol: float) -> bool:
    """The not_absorbable covers every block within τ by its own argument, re-derived by its check — parity's point, the
    exponential ray, the skeleton with σ∞ ≡ 0 (its case re-derived) whose share exceeds τ + the allowance: no screen
    is asked."""
    if th in ("parity", "exponential"):
        return True
    return (th == "skeleton" and (b.get("argument") or {}).get("case") == "zero"
            and limit_share(block) > tol + rounding_allowance(block.n))
