"""The checker's affine activations: ungated σ(z) = c·z + k with k ≠ 0 (docs/results/linear.md).

Re-derived here, sharing nothing with the producer: σ's form (k = σ(0), c = σ(1) − k, exact, and
σ ≡ c·y + k on R by pieces), the class the verdict is about (the entry's), the rank arguments
and the witness, rebuilt here and bounded rigorously:

* with biases: f(x) = A x + f(0), A = M + c·W_down W_up; absorbable iff rank A ≤ n (the output
  bias takes up the constant, b'_down = c·W_down b_up + b_down + k·(W_down 1 − W'_down 1));
* bias-free: g = f iff W'_down [c·W'_up | k·1] = [A | k·v], v = W_down 1. Not absorbable when
  σ_{n+1}([A | k·v]) > 0 (rigorous lower bound above τ‖M‖_F), or v = 0 exactly and σ_n(A) > 0
  (W'_down would need n independent columns summing to 0); the witnesses are the producer's
  constructions (n − 1 units of A plus a unit u'_n = 0 carrying the constant, or a factorisation
  of [A | k·v] moved onto k·1 by a scaled reflection), each accepted only with its error proved.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify._compose import prove
from absorb.verify._numerics import _U, _gamma, _in_range, _parse_number, rounding_allowance
from absorb.verify._pieces import Refused, decide_zero, exact_value
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _same_function, _variable
from absorb.verify._weights import InfNorm, _residual

_Y = sp.Symbol("y", real=True)
_EXACT = 200_000
"""Most d·(n + n') for the exact rational constant error and f(0)."""


def affine_constants(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """(c, k) with σ(z) = c·z + k for every real z (k = σ(0), c = σ(1) − k exact; σ ≡ c·y + k by pieces)."""
    x = _variable(expr)
    try:
        k = sp.simplify(exact_value(expr, x, sp.Integer(0)))
        c = sp.simplify(exact_value(expr, x, sp.Integer(1)) - k)
        if not all(v.is_number and v.is_finite and v.is_real for v in (c, k)):
            return None
        return (c, k) if _same_function(expr, c * _Y + k) else None
    except Refused:
        return None
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return None


def _fr(v: float) -> Fraction:
    return Fraction(float(v))


def _constant(block: Block, wb: Block, c: Fraction, k: Fraction) -> tuple[float, float]:
    """(upper bound of |g(0) − f(0)|_∞, lower bound of |f(0)|_∞), f(0) = c·W_down b_up + k·W_down 1 + b_down,
    g(0) = k·W'_down 1 + b'_down: exact rationals when small, else float64 with Higham's bound."""
    d = block.d
    D, W = block.W_down.astype(np.float64), wb.W_down.astype(np.float64)
    bu = np.zeros(block.n) if block.b_up is None else block.b_up.astype(np.float64)
    bd = np.zeros(d) if block.b_down is None else block.b_down.astype(np.float64)
    bn = np.zeros(d) if wb.b_down is None else wb.b_down.astype(np.float64)
    if not all(np.isfinite(a).all() for a in (D, W, bu, bd, bn)):
        return math.inf, 0.0
    if d * (D.shape[1] + W.shape[1]) <= _EXACT:
        worst, top = Fraction(0), Fraction(0)
        for r in range(d):
            f0 = c * sum((_fr(a) * _fr(b) for a, b in zip(D[r], bu)), Fraction(0)) + k * sum(map(_fr, D[r]), Fraction(0)) + _fr(bd[r])
            g0 = k * sum(map(_fr, W[r]), Fraction(0)) + _fr(bn[r])
            worst, top = max(worst, abs(g0 - f0)), max(top, abs(f0))
        return float(worst) * (1 + 4 * _U), float(top) * (1 - 4 * _U)
    cf, kf = float(c), float(k)
    g = _gamma(max(D.shape[1], W.shape[1]) + 10)
    with np.errstate(all="ignore"):
        f0 = cf * (D @ bu) + kf * D.sum(axis=1) + bd
        big_f = abs(cf) * (np.abs(D) @ np.abs(bu)) + abs(kf) * np.abs(D).sum(axis=1) + np.abs(bd)
        big_g = abs(kf) * np.abs(W).sum(axis=1) + np.abs(bn)
        e = float((np.abs(kf * W.sum(axis=1) + bn - f0) + 2 * g * (big_f + big_g)).max(initial=0.0)) * (1 + 4 * g)
        lo = float((np.abs(f0) - 2 * g * big_f).max(initial=0.0)) * (1 - 4 * g)
    return (e if math.isfinite(e) else math.inf), (lo if math.isfinite(lo) and lo > 0 else 0.0)


def _error(ctx: _Ctx, block: Block, wb: Block, c: Fraction, k: Fraction) -> tuple[bool, float, float, str]:
    """Whether wb's error is proved within the tolerance: f − wb = (A − c·W'_down W'_up) x + (f(0) − g(0))
    exactly; the linear part's ∞-operator norm (:func:`_residual` of every unit of the stacked arrays),
    the constant one against |f(0)|_∞."""
    U2 = np.vstack([block.W_up.astype(np.float64), wb.W_up])
    D2 = np.hstack([block.W_down.astype(np.float64), -wb.W_down])
    rho = _residual(U2, D2, block.M, c, list(range(U2.shape[0])))[4]
    e, lo = _constant(block, wb, c, k)
    eps_b = 0.0 if e == 0 else (e / lo if lo > 0 else math.inf)
    allowance = rounding_allowance(block.n)
    ok = rho <= ctx.tol + allowance and eps_b <= allowance
    claim = (f"the affine witness's error is within τ + {allowance:.2g}: ‖A − c·W'_down W'_up‖_∞ ≤ {rho:.3g} and "
             f"|g(0) − f(0)|∞ ≤ {e:.3g} = {eps_b:.3g}·|f(0)|∞ (re-derived)")
    return ok, rho, e, claim


def _svd(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A's SVD as the witnesses use it: singular values ≤ max(A.shape)·u·σ₁ (with u = 2^-53:
    float64's ε) are rounding noise, set to 0 (docs/results/linear.md)."""
    Ul, s, Vt = np.linalg.svd(A)
    s[s <= max(A.shape) * 2 * _U * (float(s[0]) if s.size else 0.0)] = 0.0
    return Ul, s, Vt


def require_recorded_residual(ctx: _Ctx, w: str, b: dict[str, Any], want: float, slack: float) -> None:
    """The witness's recorded residual (required with an ``absorbable`` verdict) is ``want`` within ``slack``: the
    dropped singular values' tail over ‖M‖_F, 0 when none is dropped (the linear and affine constructions)."""
    rec = (b.get("witness") or {}).get("residual")
    _require(ctx, (rec is None and b.get("verdict") != "absorbable") or (
        isinstance(rec, (int, float)) and not isinstance(rec, bool) and abs(rec - want) <= slack), w,
             "the witness's recorded residual is re-derived (the dropped singular values' tail over ‖M‖_F; 0 when none is)",
             f"recorded {rec!r}, re-computed {want:.6g}")


def require_recorded_exactness(ctx: _Ctx, w: str, b: dict[str, Any], rho: float, e: float) -> None:
    """The witness is recorded exact only when its linear part and its constant agree with f's exactly (``rho``, ``e``: their errors)."""
    rec = (b.get("witness") or {}).get("exact")
    _require(ctx, rec in (None, False) or (rec is True and rho == 0 and e == 0), w,
             "the recorded exactness matches (exact only when the linear part and the output bias agree exactly)",
             f"recorded {rec!r}; re-derived linear residual {rho:.3g}, bias rounding {e:.3g}")


def _witnesses(block: Block, A: np.ndarray, cf: float, kf: float, biases: bool, tol: float) -> list[tuple[Block, float]]:
    """The witnesses to try, in order (the constructions of docs/results/linear.md), each with the
    residual it is recorded with: the dropped singular values' tail over ‖M‖_F (0 when none is dropped)."""
    d, n = block.d, block.n
    D = block.W_down.astype(np.float64)
    scale = float(np.linalg.norm(block.M))

    def mk(Wu: np.ndarray, Wd: np.ndarray, bias: np.ndarray | None) -> Block:
        return block.replace(W_up=Wu, W_down=Wd, b_up=None, b_gate=None, b_down=bias, skip=np.zeros((d, d)), name=block.name + "'")

    Ul, s, Vt = _svd(A)
    if biases:
        r = min(n, d)
        Wu, Wd = np.zeros((n, d)), np.zeros((d, n))
        Wu[:r], Wd[:, :r] = Vt[:r], Ul[:, :r] * (s[:r] / cf)
        if n >= d:
            Wu[:d], Wd[:, :d] = np.eye(d), A / cf
        b: Any = cf * (D @ block.b_up) if block.b_up is not None else 0
        b = b + (block.b_down if block.b_down is not None else 0)
        b = b + kf * (D.sum(axis=1) - Wd.sum(axis=1))
        return [(mk(Wu, Wd, np.asarray(b, dtype=float)), 0.0 if n >= d else float(np.sqrt(np.sum(s[n:] ** 2))) / scale)]
    v = D.sum(axis=1)
    out = []
    if n >= d + 1:
        Wu, Wd = np.zeros((n, d)), np.zeros((d, n))
        Wu[:d], Wd[:, :d] = np.eye(d), A / cf
        Wd[:, n - 1] = v - Wd[:, :d].sum(axis=1)
        return [(mk(Wu, Wd, None), 0.0)]
    tail1 = float(np.sqrt(np.sum(s[n - 1:] ** 2)))
    if tail1 <= tol * scale:
        Wu, Wd = np.zeros((n, d)), np.zeros((d, n))
        Wu[: n - 1], Wd[:, : n - 1] = Vt[: n - 1], Ul[:, : n - 1] * (s[: n - 1] / cf)
        Wd[:, n - 1] = v - Wd[:, : n - 1].sum(axis=1)
        out.append((mk(Wu, Wd, None), tail1 / scale))
    Ut, st, Vtt = _svd(np.hstack([A, kf * v[:, None]]))
    tail = float(np.sqrt(np.sum(st[n:] ** 2)))
    if tail <= tol * scale:
        P, Q = Ut[:, :n] * st[:n], Vtt[:n]
        q = Q[:, d]
        nq = float(np.linalg.norm(q))
        if nq > 0:
            e = np.full(n, 1 / math.sqrt(n))
            h = q / nq - e
            nh = float(np.linalg.norm(h))
            H = np.eye(n) - 2 * np.outer(h, h) / nh**2 if nh > 0 else np.eye(n)
            t = kf * math.sqrt(n) / nq
            out.append((mk((t / cf) * (H @ Q[:, :d]), (P @ H) / t, None), tail / scale))
    return out


def check_affine(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    """σ(z) = c·z + k, k ≠ 0, ungated: what the evidence supports, for the entry's class."""
    got = affine_constants(block.activation.expr)
    _require(ctx, got is not None, w, "σ(z) = c·z + k for every real z, k = σ(0), c = σ(1) − k (exact, by pieces)")
    c, k = got  # type: ignore[misc]
    _require(ctx, isinstance(c, sp.Rational) and isinstance(k, sp.Rational) and c != 0 and k != 0, w,
             "c and k are nonzero rationals", f"c = {c}, k = {k}")
    arg = b.get("argument") or {}
    for name, mine in (("c", c), ("k", k)):
        q = _parse_number(arg.get(name))
        _require(ctx, q is not None and decide_zero(q - mine) is True, w, f"the recorded {name} = {mine} is σ's",
                 f"recorded {arg.get(name)!r}")
    biases = bool(ctx.once.get("class_biases"))
    case = "affine-biases" if biases else "affine-bias-free"
    _require(ctx, arg.get("case") == case, w, f"the recorded case is the class's ({case})", f"recorded {arg.get('case')!r}")
    cq, kq = Fraction(int(c.p), int(c.q)), Fraction(int(k.p), int(k.q))
    cf, kf = float(cq), float(kq)
    d, n = block.d, block.n
    U, D, M = block.W_up.astype(np.float64), block.W_down.astype(np.float64), block.M
    _require(ctx, all(np.isfinite(a).all() for a in (U, D, M)), w, "the weights are finite")
    # (the rank bounds below model relative rounding only: products in the subnormals break them)
    in_range = _in_range(U, D, M, np.array([cf, kf]))
    A = M + cf * (D @ U)
    absA = np.abs(M) + abs(cf) * (np.abs(D) @ np.abs(U))
    s = np.linalg.svd(A, compute_uv=False)
    err = _gamma(n + 3) * float(np.linalg.norm(absA)) + 20 * d * _U * float(s[0])
    scale = float(np.linalg.norm(M))
    # no g of rank ≤ n within the tolerance once σ_{n+1} > √d(1 + |f(0)|∞)·τ/(1 − τ): at a y = (x, t) of the top n + 1
    # right singular vectors with G x + b′t = 0, the error at x/t is f itself, |f|/(|f| + |x| + |f(0)|) ≥ a/(1 + a),
    # a = σ_{n+1}/(√d(1 + |f(0)|∞)) (t = 0: along x, a = σ_{n+1}/√d)
    tau = math.sqrt(d) * ctx.tol / (1 - ctx.tol) * (1 + 4 * _U)
    tau_t = tau * (1 + abs(kf) * float(np.max(np.abs(D).sum(axis=1)))) * (1 + 4 * _U)
    verdict = b.get("verdict")
    # a recorded bound is a claim: not above σ's own value plus the rounding (every case, every verdict)
    bounds = [("sigma_lower_bound", float(s[n]) + err if n < d else math.inf)]
    if n < d:
        At = np.hstack([A, kf * D.sum(axis=1)[:, None]])
        st = np.linalg.svd(At, compute_uv=False)
        abs_t = np.hstack([absA, abs(kf) * np.abs(D).sum(axis=1)[:, None]])
        err_t = _gamma(n + 3) * float(np.linalg.norm(abs_t)) + 20 * (d + 1) * _U * float(st[0])
        bounds.append(("augmented_lower_bound", float(st[n]) + err_t))
    for key, top in bounds:
        got_b = arg.get(key)
        _require(ctx, got_b is None or (isinstance(got_b, (int, float)) and not isinstance(got_b, bool) and got_b <= top), w,
                 f"the recorded {key} is not above the singular value it bounds (plus rounding)",
                 f"recorded {got_b!r}, re-derived at most {top:.6g}")
    if in_range and biases and n < d and float(s[n]) - err > tau:
        ctx.report.ok(w, f"σ_{n + 1}(M + c·W_down W_up) ≥ {float(s[n]) - err:.3g} > √d·τ/(1 − τ): rank > n, while every residual-free "
                      "block of width n (with biases) is affine with linear part of rank ≤ n")
        return "not_absorbable", None, 0.0
    if in_range and not biases:
        v_zero = all(math.fsum(row) == 0.0 for row in D.tolist())  # correctly rounded: 0 iff the exact sum is
        if n < d:
            if float(st[n]) - err_t > tau_t:
                ctx.report.ok(w, f"σ_{n + 1}([A | k·W_down 1]) ≥ {float(st[n]) - err_t:.3g} > √d(1 + |f(0)|∞)·τ/(1 − τ): rank > n, while a bias-free "
                              "residual-free block gives W'_down [c·W'_up | k·1], of rank ≤ n")
                return "not_absorbable", None, 0.0
        if v_zero and n <= d and float(s[n - 1]) - err > tau:
            ctx.report.ok(w, f"W_down 1 = 0 exactly and σ_{n}(A) ≥ {float(s[n - 1]) - err:.3g} > √d·τ/(1 − τ): W'_down W'_up = A/c needs "
                          "n independent columns in W'_down, whose sum is not 0")
            return "not_absorbable", None, 0.0
    _require(ctx, verdict != "not_absorbable", w, "a not_absorbable verdict rests on a rank bound re-derived here",
             "no rank bound above √d·τ/(1 − τ) for the recorded class" if in_range else
             "a weight, c or k is outside [2^-200, 2^200], where the float rank bound holds")
    claims = []
    for wb, want in _witnesses(block, A, cf, kf, biases, ctx.tol):
        ok, rho, e, claim = _error(ctx, block, wb, cq, kq)
        if ok:
            ctx.report.ok(w, claim)
            slack = 0.0 if want == 0 else 2 * (max(err, err_t) if n < d else err) / scale + 1e-12 * want
            require_recorded_residual(ctx, w, b, want, slack)
            require_recorded_exactness(ctx, w, b, rho, e)
            prove(wb, rho, e)
            return "absorbable", wb, InfNorm(rho)
        claims.append(claim)
    _require(ctx, verdict != "absorbable", w, "an affine witness rebuilt here is proved within the tolerance",
             "; ".join(claims) or "no construction applies")
    ctx.report.ok(w, "no affine witness is proved within the tolerance: 'unknown' is what the evidence supports")
    return "unknown", None, 0.0


__all__ = ["affine_constants", "check_affine"]
