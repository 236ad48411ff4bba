"""The checker's own numerics: hashes, Higham's γ, exact rationals, the trusted float range."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

EXACT_WORK = 200_000
"""Largest |S|·d² (or d³ for eliminations) done in exact rational arithmetic."""
EXACT_ELIM_MAX_D = 24
_U = 2.0**-53
_RANGE_EXPONENT = 200
"""The checker's float64 rounding bounds (relative errors, Higham's γ) are trusted only when
every nonzero entry involved lies in [2^-200, 2^200]: then products of up to three entries
neither underflow nor overflow. What can still underflow, a square after a cancellation
(≤ 2^-1074 each), gets an explicit absolute term. Outside that range the float paths prove
nothing."""


HASH_CONVENTION = "sha256 of the float64 little-endian C-contiguous bytes (np.ascontiguousarray(a, dtype='<f8').tobytes())"
"""The convention a certificate names (``input.hash_convention``): the one :func:`sha256_f64` follows."""


def sha256_f64(a: np.ndarray) -> str:
    """SHA-256 of the float64 little-endian C-contiguous bytes (the certificate convention)."""
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def rounding_allowance(n: int) -> float:
    """The rounding allowance every absorbable verdict states on top of the tolerance at width n:
    1000·ε_mach·√(n+1) (ε_mach = 2⁻⁵²)."""
    return 1e3 * 2 * _U * math.sqrt(n + 1)


def distance_bar(tol: float, n: int, M: np.ndarray, gain: float = 0.0) -> float:
    """The relative distance ‖R_S‖_F / ‖M‖_F every index set must exceed for an accepted proof that
    none counts (R_S = M + c·W_down[:,S] W_up[S,:], the linear error of S's flip): the larger of τ
    and √d·(τ + allowance)/‖M‖_F. A flip witness passes when ‖R_S‖∞ ≤ τ + allowance, and
    ‖R‖∞ (the largest absolute row sum) ≥ the largest row's 2-norm ≥ ‖R‖_F/√d, so past this bar
    no S's flip would pass — also for a small skip, where τ alone leaves flips with
    ‖R_S‖∞ ≤ τ. ‖M‖_F from below: M scaled by a power of two (exact) to entries ≤ 1, those below
    2⁻⁵⁰⁰ dropped, the float sum of squares less Higham's γ_{m+2}; inf when M = 0. ``gain`` K: an upper bound
    of f's gain at infinity (|f∞(v)|∞ ≤ K|v|∞), which multiplies the second term by 1 + K: the tolerance is
    relative to |f(x)|∞ + |x|∞, and along v a flip's error ratio tends to |Rv|∞/(|f∞(v)|∞ + |v|∞) ≥
    |Rv|∞/((1 + K)|v|∞), whose sup is ρ∞/(1 + K)."""
    d = M.shape[0]
    a = np.abs(np.asarray(M, dtype=np.float64)).ravel()
    top = float(a.max(initial=0.0))
    if not top > 0:
        return math.inf
    if not math.isfinite(top):
        return tol
    e = math.frexp(top)[1]  # scaled by 2^-e (exact): entries in (0, 1]; those below 2^-500 dropped (a lower bound)
    b = np.ldexp(a, -e)
    b = b[b >= 2.0**-500]
    sq = float(np.dot(b, b)) * (1 - _gamma(b.size + 2))
    try:
        m_lo = math.ldexp(math.sqrt(sq) * (1 - 2 * _U), e)
    except OverflowError:
        return tol
    return max(tol, math.sqrt(d) * (tol + rounding_allowance(n)) * (1 + gain) / m_lo * (1 + 2.0**-40))


def _gamma(k: int) -> float:
    ku = k * _U
    return ku / (1 - ku) if ku < 0.5 else math.inf


def subset_sums(K: np.ndarray, low_bits: int = 14):
    """Σ_{i∈S} K_i (K: n × m, float64) for every S ⊆ {0, …, n−1}, in chunks of 2^low_bits
    rows: a table of the sums over the low units plus, per chunk, one sum over the high ones
    (each entry a float sum of ≤ n terms, in some order: γ_{n−1} relative to Σ|K_i| bounds its
    rounding whatever the order). Chunk h holds the sets whose code is h·2^low_bits + j."""
    n = K.shape[0]
    k = min(n, low_bits)
    low = np.zeros((1, K.shape[1]))
    for i in range(k):
        low = np.concatenate([low, low + K[i]], axis=0)
    high = np.zeros((1, K.shape[1]))
    for i in range(k, n):
        high = np.concatenate([high, high + K[i]], axis=0)
    for h in high:
        yield low + h


def _frac_matrix(a: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(a)]


def exact_rank(rows: list[list[Fraction]]) -> int:
    """Rank over Q by Gaussian elimination (exact)."""
    A = [r[:] for r in rows]
    rank, ncols = 0, len(A[0]) if A else 0
    for col in range(ncols):
        piv = next((i for i in range(rank, len(A)) if A[i][col] != 0), None)
        if piv is None:
            continue
        A[rank], A[piv] = A[piv], A[rank]
        for i in range(rank + 1, len(A)):
            if A[i][col] != 0:
                f = A[i][col] / A[rank][col]
                A[i] = [a - f * b for a, b in zip(A[i], A[rank])]
        rank += 1
    return rank


def _huge_exponent(text: str) -> bool:
    """Whether a decimal string's exponent is past ±10000 (no certificate number needs one)."""
    import re

    return any(abs(int(e)) > 10000 for e in re.findall(r"[eE]\s*([+-]?\d{1,40})", text)) or bool(re.search(r"[eE]\s*[+-]?\d{41}", text))


def _parse_number(v: object) -> sp.Rational | None:
    """A certificate number (int, float or a rational string such as '1/2') as a sympy
    Rational, parsed with :class:`fractions.Fraction` (never by sympy: untrusted input)."""
    if v is None or isinstance(v, bool):
        return None
    text = None if isinstance(v, (int, float)) else str(v).strip()
    if text is not None and (len(text) > 1000 or _huge_exponent(text)):
        return None  # ('1e999999999' would build a billion-digit integer)
    try:
        q = Fraction(v) if text is None else Fraction(text)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return sp.Rational(q.numerator, q.denominator)



def _in_range(*arrays: np.ndarray) -> bool:
    """Every entry finite, every nonzero one within [2^-_RANGE_EXPONENT, 2^_RANGE_EXPONENT]."""
    for a in arrays:
        x = np.abs(np.asarray(a, dtype=np.float64))
        nz = x[x != 0]
        if nz.size and not (float(nz.max()) <= 2.0**_RANGE_EXPONENT and float(nz.min()) >= 2.0**-_RANGE_EXPONENT):
            return False
    return True


def _float_skip_product(blocks: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P̂ = fl(M_L⋯M_1), an upper bound of |M_L|⋯|M_1|, an upper bound of the underflow part of
    |P̂ − P|). Besides γ_{L(d+1)}|M_L|⋯|M_1|, a product that underflows is off by up to 2^-1075
    absolutely; those errors, d per entry and step, are carried by the later factors:
    U_k = (|M_k| U_{k−1} + d·2^-1074)(1 + 2^-40). The float |M_L|⋯|M_1| may itself have
    underflowed: U is added to it (raised by 2^-40 for its own rounding)."""
    d = blocks[0].d
    Pm, Pa, U = np.eye(d), np.eye(d), np.zeros((d, d))
    with np.errstate(over="ignore", invalid="ignore"):
        for blk in blocks:
            A = np.abs(blk.M)
            Pm, Pa, U = blk.M @ Pm, A @ Pa, (A @ U + d * 2.0**-1074) * (1 + 2.0**-40)
        return Pm, (Pa + U) * (1 + 2.0**-40), U


MOVED_EXACT_WORK = 200_000
"""A flip witness's moved output bias b_down + c·W_down[:,S](b_S + s) is rounded once from its exact
value when d·|S| is at most this (docs/certificates.md), else summed in float64."""


def moved_output_bias(b_down: np.ndarray | None, W_down: np.ndarray, idx: np.ndarray, c: Fraction, b: np.ndarray,
                      s: Fraction = Fraction(0)) -> np.ndarray:
    """b_down + c·W_down[:, idx](b + s) as the witness holds it: rounded once from the exact sum (or
    in float64 past :data:`MOVED_EXACT_WORK` or with a non-finite entry)."""
    d, c = W_down.shape[0], Fraction(c)  # (a float c is read exactly)
    bd = np.zeros(d) if b_down is None else np.asarray(b_down, dtype=np.float64)
    Ds = W_down[:, idx]
    if d * len(idx) > MOVED_EXACT_WORK or not (np.all(np.isfinite(b)) and np.all(np.isfinite(Ds))):
        return bd + float(c) * (Ds @ (b + float(s)))
    # in integers: every float is m/2^e, so with one common 2^L per array the sums need no gcd (one Fraction a row)
    (bi,), eb = _integers(np.asarray(b, dtype=np.float64)[None, :])
    Di, eD = _integers(Ds)
    return np.array([float(Fraction(float(bd[r])) + c * (Fraction(sum(x * v for x, v in zip(row, bi)), 1 << (eD + eb))
                                                         + s * Fraction(sum(row), 1 << eD)))
                     for r, row in enumerate(Di)])


def _integers(A: np.ndarray) -> tuple[list[list[int]], int]:
    """(Z, L) with A = Z / 2^L exactly, Z integers (A finite floats)."""
    rows = [[float(v).as_integer_ratio() for v in row] for row in np.atleast_2d(A)]
    L = max((q.bit_length() - 1 for row in rows for _p, q in row), default=0)
    return [[p << (L - q.bit_length() + 1) for p, q in row] for row in rows], L


@functools.lru_cache(maxsize=64)
def _term_sizes(expr: sp.Expr) -> Callable[[np.ndarray], np.ndarray] | None:
    """z ↦ the sum of the absolute sizes of σ's terms, for a user's σ: a sum of terms that nearly
    cancel (log(1 + eᶻ) − log 2 near 0) is computed in float64 with an error of a few ulps of
    that size, not of |σ(z)|. Sums add their terms' sizes, products multiply them, any other node
    counts as its own absolute value (None: no numpy form). Not a proof of the evaluation error:
    the samples are a second check beside the witness's own bound."""
    def size(e: sp.Expr) -> sp.Expr:
        if e.is_Add:
            return sp.Add(*[size(a) for a in e.args])
        if e.is_Mul:
            return sp.Mul(*[size(a) for a in e.args])
        return sp.Abs(e)

    from absorb.model._expr_numpy import UnsupportedExpression, numpy_form

    try:
        return numpy_form(sp.srepr(size(expr)))
    except (UnsupportedExpression, RecursionError):  # a head the evaluator lacks: no allowance from here
        return None


def sigma_term_error(act: Any, Z: np.ndarray) -> np.ndarray | float:
    """Beyond a few ulps of |σ(z)|: a few ulps of the size of σ's terms (a user's σ only)."""
    from absorb.model.activations import is_builtin

    if is_builtin(act):
        return 0.0
    fn = _term_sizes(act.expr)
    if fn is None:  # (no allowance beyond |σ(z)|'s: never a bound that passes everything)
        return 0.0
    try:
        with np.errstate(all="ignore"):
            out = np.abs(np.asarray(fn(np.asarray(Z, dtype=float)), dtype=float))
    except (ValueError, TypeError, OverflowError):
        return 0.0
    return np.where(np.isfinite(out), out, 0.0)


def _has_bool(v: Any) -> bool:
    """Whether a JSON value (a number or nested lists) holds a boolean where numbers belong."""
    return isinstance(v, bool) or (isinstance(v, list) and any(_has_bool(x) for x in v))


_EMBEDDED = 8
"""Arrays whose every dimension is at most this have their values in the record (docs/certificates.md)."""


def check_array_record(ctx: Any, w: str, rec: Any, a: np.ndarray, what: str) -> None:
    """A recorded array's numbers are ``a``'s: shape, max |entry| exactly, the Frobenius norm to
    within its rounding (a sum of ``a.size`` squares: relative error ≤ (size + 2)·u, doubled for the
    producer's own summation order), and the embedded values exactly."""
    from absorb.verify._report import _require

    if not isinstance(rec, dict):
        _require(ctx, False, w, f"the record of {what} is an object")
    top = float(np.abs(a).max()) if a.size else 0.0
    with np.errstate(over="ignore"):  # (finite entries whose norm overflows: recorded as "inf")
        fro = float(np.linalg.norm(a)) if a.size else 0.0
    rf, rm = rec.get("fro_norm"), rec.get("max_abs")
    fro_ok = ((isinstance(rf, float) and not isinstance(rf, bool)
               and abs(rf - fro) <= 2 * (a.size + 2) * _U * fro + 2.0**-1074)
              or (rf == "inf" and fro == math.inf))
    vals = rec.get("values")
    if "values" not in rec and a.ndim <= 2 and all(s <= _EMBEDDED for s in a.shape):  # (written for every small array)
        ctx.report.unchecked(w, f"the record of {what} holds its values (every dimension ≤ {_EMBEDDED})", "the values were cut")
    try:
        if _has_bool(vals) or isinstance(rm, bool):  # (JSON true is not the number 1)
            raise TypeError
        same = "values" not in rec or vals is not None and np.array_equal(np.asarray(vals, dtype=float).reshape(a.shape), a)
    except (TypeError, ValueError):
        same = False
    if not (list(rec.get("shape", [])) == list(a.shape) and fro_ok and rm == top and same):
        _require(ctx, False, w,
                 f"the recorded shape, Frobenius norm, max |entry| and values of {what} are its own",
                 f"recorded {rec.get('shape')}, ‖·‖_F {rf!r}, max {rm!r}; re-derived {list(a.shape)}, {fro!r}, {top!r}")
