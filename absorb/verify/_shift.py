"""The checker's own shifted flips for its tolerance screens: σ(z) − σ(−z − 2s) = c·(z + s) for every real z.

A shifted σ (σ(z) = τ(z + s) for a τ with the flip identity) lets antipodal pairs with biases b − s, −b − s realise
any affine map, so a block of such units may be within the tolerance of f although no exact argument sees it. The
screens need s exactly: a candidate is read numerically and then *proved* for every real z by
:func:`absorb.verify._symbolic.shifted_flip_constant` (by pieces, exact). Candidates (none of them a claim):

* the float estimate s = (A₊ − A₋)/(L₊ − L₋) of σ(z) = L±z + A± + o(1), read at several scales (10³ … 10¹²: a
  shift of 2²⁷ is invisible at 10⁶, a slowly growing even part moves the estimate at 10¹²);
* the root of σ(0) − σ(−2s) − c·s = 0 (the identity at z = 0, c = L₊ + L₋) near each estimate, at 50 digits
  (mpmath), then its rational reconstruction (denominators up to 10⁹, agreeing to 10⁻³⁰) and its form in σ's own
  irrational constants and a few common ones (√2, √3, π, e, log 2: :func:`sympy.nsimplify`);
* minus each exact break point of σ (a hinge at h = −s: ``Max(0, x − √2)``).
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import sympy as sp

from absorb.verify._symbolic import _variable, flip_constant, shifted_flip_constant

_SCALES = (1e3, 1e6, 1e9, 1e12)
_MAX_CANDIDATES = 12
_COMMON = (sp.log(2), sp.pi, sp.E, sp.sqrt(2), sp.sqrt(3))


@lru_cache(maxsize=64)
def _flip(srepr: str) -> Fraction | None:
    e = sp.sympify(srepr)
    c = flip_constant(e, gated=False)
    return Fraction(int(c.p), int(c.q)) if c is not None and c.is_Rational else None


def _ends(act: Any, Z: float = 1e6) -> tuple[float, float, float] | None:
    """(L₊, L₋, s) read from σ at ±Z and ±2Z: the slopes σ(z)/z → L± and the shift s = (A₊ − A₋)/(L₊ − L₋) of
    σ(z) = L±z + A± + o(1) — numbers to try, never a claim; None where σ is not finite there."""
    with np.errstate(all="ignore"):
        v = np.asarray(act(np.array([-2 * Z, -Z, Z, 2 * Z])), dtype=np.float64)
    if not np.all(np.isfinite(v)):
        return None
    lp, lm = (v[3] - v[2]) / Z, (v[1] - v[0]) / Z
    ap, am = v[2] - lp * Z, v[1] + lm * Z
    return lp, lm, ((ap - am) / (lp - lm) if abs(lp - lm) > 1e-9 else 0.0)


@lru_cache(maxsize=64)
def _shifted(srepr: str, s: sp.Expr) -> Fraction | None:
    """c with σ(z) − σ(−z − 2s) = c·(z + s) for every real z, proved exactly for this s (rational, or any real
    number such as √2: a tolerance screen only withholds a verdict, and needs no float64 witness carrying s)."""
    c = shifted_flip_constant(sp.sympify(srepr), s, exact_real=True)
    return Fraction(int(c.p), int(c.q)) if c is not None and c.is_Rational and c != 0 else None


def _root(e: sp.Expr, x: sp.Symbol, c: float, start: float) -> Any:
    """s near ``start`` with σ(0) − σ(−2s) − c·s = 0, at 50 digits (None where the solver fails)."""
    import mpmath as mp

    with mp.workdps(50):
        try:
            h = sp.lambdify(x, e, modules="mpmath")
            s0 = h(mp.mpf(0))
            return mp.findroot(lambda t: s0 - h(-2 * t) - mp.mpf(c) * t, mp.mpf(start), tol=mp.mpf(10) ** -40)
        except (ValueError, ZeroDivisionError, TypeError, OverflowError, ArithmeticError):
            return None


def _plausible(e: sp.Expr, x: sp.Symbol, s: sp.Expr, c: float) -> bool:
    """σ(z) − σ(−z − 2s) − c·(z + s) within 10⁻²⁰ of 0 at four points, at 50 digits: a filter that keeps a wrong
    candidate from the exact proof (where sympy can spend minutes on one), never the proof itself."""
    import mpmath as mp

    with mp.workdps(50):
        try:
            h = sp.lambdify(x, e, modules="mpmath")
            sv = mp.mpf(sp.N(s, 60))
            for z in (mp.mpf("0.3"), mp.mpf("-1.7"), mp.mpf("2.9"), mp.mpf("-0.05")):
                v = h(z) - h(-z - 2 * sv) - mp.mpf(c) * (z + sv)
                if not abs(v) <= mp.mpf(10) ** -20 * (1 + abs(h(z)) + abs(z) + abs(sv)):
                    return False
        except (ValueError, ZeroDivisionError, TypeError, OverflowError, ArithmeticError, NameError):
            return False
    return True


_PSLQ_MAX = 6
"""Up to this many constants of σ, one integer-relation search over all of them; beyond, one per constant."""


def _shift_candidates(act: Any) -> list[sp.Expr]:
    """Exact shifts to try (the module doc's list), each nonzero, real, and at most :data:`_MAX_CANDIDATES`."""
    import mpmath as mp

    e = act.expr
    x = _variable(e)
    out: list[sp.Expr] = []
    consts = [a for a in e.atoms(sp.Function, sp.Pow, sp.NumberSymbol) if a.is_number and a.is_real and not a.is_Rational]
    consts = list(dict.fromkeys(consts + list(_COMMON)))  # (sympy folds exp(x − log 2) into exp(x)/2: log 2 leaves σ)
    for Z in _SCALES:
        got = _ends(act, Z)
        if got is None or not all(math.isfinite(v) for v in got):
            continue
        lp, lm, est = got
        out.append(sp.Rational(*Fraction(est).limit_denominator(1000).as_integer_ratio()))
        r = _root(e, x, round(lp + lm, 9), est)
        if r is None:
            continue
        with mp.workdps(50):
            q = Fraction(int(mp.floor(r * 10**30)), 10**30).limit_denominator(10**9)
            if abs(r - mp.mpf(q.numerator) / q.denominator) < mp.mpf(10) ** -30:
                out.append(sp.Rational(q.numerator, q.denominator))
            # (PSLQ over many constants at once runs for minutes: beyond a few, one constant at a time)
            for basis in ([consts] if len(consts) <= _PSLQ_MAX else [[k] for k in consts]):
                try:
                    out.append(sp.nsimplify(sp.Float(mp.nstr(r, 45), 45), basis, tolerance=1e-35))
                except (ValueError, TypeError, NotImplementedError):
                    pass
    try:
        from absorb.verify._pieces import Refused, break_points

        out += [-p for p in break_points(e, x)]
    except Refused:  # (a σ whose break points this checker cannot list: the other candidates remain)
        pass
    seen = [c for c in dict.fromkeys(out) if c.is_number and c.is_real and c.is_finite and c != 0]
    ends = [g for Z in _SCALES if (g := _ends(act, Z)) is not None and all(map(math.isfinite, g))]
    if not ends:
        return []
    slope = float(Fraction(ends[-1][0] + ends[-1][1]).limit_denominator(1000))  # (c = L₊ + L₋, read farthest out)
    return [c for c in seen[:_MAX_CANDIDATES] if _plausible(e, x, c, slope)]


def _flip_or_shift(act: Any, biased: bool, f_zero: bool = False) -> tuple[Fraction | None, Fraction | float | None]:
    """(c, None) for σ(z) − σ(−z) = c·z; with biases, else (c, s) for σ(z) − σ(−z − 2s) = c·(z + s) — pairs
    (u, b − s, w/c), (−u, −b − s, −w/c) give w·(u·x + b); (None, None) when neither is proved. s is a Fraction, or a
    float for an irrational s (the pairs' biases round: each pair's output moves by a constant ≤ 2L·|s − ŝ|, not
    counted — these maps only withhold a not_absorbable). ``f_zero``: f(0) = 0 (a bias-free f, biases allowed in
    g), where that constant is not within τ·|f(0)|∞ near x = 0: a rational s only."""
    key = sp.srepr(act.expr)
    if key in UNDECIDED:
        return None, None
    try:
        with _budget(BUDGET):
            c = _flip(key)
            if c or not biased:
                return c, None
            if key not in _FOUND:  # (the screens ask several times per block: the candidates are read once per σ)
                _FOUND[key] = next(((c, s) for s in _shift_candidates(act) if (c := _shifted(key, s))), (None, None))
    except _OverBudget:  # (a σ whose exact simplification stalls: the estimated pass reports it as not re-checked)
        UNDECIDED.add(key)
        return None, None
    c, s = _FOUND[key]
    if c is None or (f_zero and not s.is_Rational):
        return None, None
    return c, (Fraction(int(s.p), int(s.q)) if s.is_Rational else float(s))


_FOUND: dict[str, tuple[Any, Any]] = {}
BUDGET = 20.0
"""CPU seconds of exact simplification per σ for its flip and shifted-flip identities (main thread only)."""
UNDECIDED: set[str] = set()
"""σ (by srepr) whose identities were not decided within :data:`BUDGET`."""


class _OverBudget(BaseException):  # (not swallowed by a broad except Exception inside sympy or this checker)
    pass


@contextmanager
def _budget(seconds: float) -> Iterator[None]:
    """Raise :class:`_OverBudget` inside the block after ``seconds`` of CPU time (only in the main thread, where
    signals are delivered — elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _OverBudget

    # CPU time (ITIMER_VIRTUAL, SIGVTALRM): the same budget on a loaded machine, and SIGALRM stays with the lattice
    # enumeration's own alarm (cysignals installs it in C: replacing it from Python would disarm or kill it)
    old = signal.signal(signal.SIGVTALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old if old is not None else signal.SIG_IGN)
