"""σ = α·ReLU(z)² + β·z, α ≠ 0, β ≠ 0 (beyond the paper; docs/results/skeleton2.md, "ReLU² plus a
linear term").

The degree-2 skeleton needs σ(s) = o(s) at −∞; σ = α·ReLU² + β·z is β·s there. For this exact σ
(proved for every real z by :func:`relu2_linear_form`) and nondegenerate weights (d ≥ 2, rows of
W_up nonzero and pairwise non-collinear, columns of W_down nonzero), with A_i = w_i u_iᵀ:

* the Hessian jumps of f's quadratic spline identify g's units with f's, u'_i = λ_i u_i,
  c'_i = λ_i c_i; with the (Q) columns w_i ⊗ u_i u_iᵀ linearly independent (the rank route of
  :mod:`absorb.engine.skeleton2`) no unit is flipped (λ_i > 0), and then g = f iff
  Σ_i μ_i A_i = T := M/β + Σ_i A_i for μ_i = 1/λ_i > 0 — a linear program;
* ``absorbable``: μ > 0 from the LP (HiGHS, μ_i ≥ t maximised), the witness
  u'_i = u_i/μ_i, c'_i = c_i/μ_i, w'_i = μ_i² w_i, b'_down = b_down + β Σ_i (1 − μ_i) w_i c_i
  (no nondegeneracy needed), its error bounded in exact rationals (:func:`witness_bound`);
* ``not_absorbable``: a Farkas matrix Y with ⟨Y, A_i⟩ ≤ 0 for every i and ⟨Y, T⟩ > 0, checked in
  exact rationals: every μ ≥ 0 has ‖β(Σ μ_i A_i − T)‖_F ≥ |β|⟨Y, T⟩ / ‖Y‖_F, above τ‖M‖_F.

Anything else is ``unknown`` with the reason.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.engine import hypotheses as hyp
from absorb.engine.verdict import BlockDecision, Theorem, Verdict, Witness
from absorb.model.block import Block
from absorb.rigorous import SAFE_EXPONENT, magnitudes_ok
from absorb.search._types import SearchResult, SearchStatus

EXACT_MAX = 200_000
"""n·d² above this: the exact rational checks are not run (unknown)."""
LP_MAX_N = 4096
"""The linear programs run up to this width."""
MU_MIN = 1e-6
"""The LP's μ_i ≥ t must reach t ≥ MU_MIN·max μ_i: an LP that only finds μ_i → 0 is no witness."""


# ------------------------------------------------------------------------------ σ --
def relu2_linear_form(act: Any) -> tuple[Fraction, Fraction] | str:
    """(α, β) with σ(z) = α·ReLU(z)² + β·z for every real z (both nonzero rationals), by σ's analysis
    :func:`absorb.symbolic.relu2_linear.relu2_linear_form` (run with the others in the budgeted child
    process and cached; read from the shipped table for a built-in σ); else why not."""
    from absorb.symbolic._core import get

    pr = get(act, "relu2_linear")
    if not pr.proved:
        return pr.statement
    a, b = pr.value["alpha"], pr.value["beta"]
    return Fraction(int(a.p), int(a.q)), Fraction(int(b.p), int(b.q))


# ---------------------------------------------------------------------------- exact --
def _fr(a: Any) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def _fr_mat(a: Any) -> list[list[Fraction]]:
    a = np.asarray(a, dtype=np.float64)
    return [_fr(row) for row in a]


def target(M: list[list[Fraction]], U: list[list[Fraction]], D: list[list[Fraction]], beta: Fraction) -> list[list[Fraction]]:
    """T = M/β + Σ_i w_i u_iᵀ, exact (U: n rows u_i, D: d rows of W_down)."""
    d, n = len(M), len(U)
    return [[M[a][b] / beta + sum(D[a][i] * U[i][b] for i in range(n)) for b in range(d)] for a in range(d)]


def farkas_bound(block: Block, beta: Fraction, Y: np.ndarray) -> Fraction | None:
    """For a float d×d matrix Y: if ⟨Y, A_i⟩ ≤ 0 for every i and ⟨Y, T⟩ > 0 (exact rationals), the
    squared lower bound (β⟨Y, T⟩)² / (‖Y‖²_F ‖M‖²_F) on the squared relative distance
    ‖β(Σ μ_i A_i − T)‖²_F / ‖M‖²_F over every μ ≥ 0; else None."""
    U, D, M, Yf = _fr_mat(block.W_up), _fr_mat(block.W_down), _fr_mat(block.M), _fr_mat(Y)
    d, n = block.d, block.n
    YU = [[sum(Yf[a][b] * U[i][b] for b in range(d)) for i in range(n)] for a in range(d)]  # Y u_i
    inner = [sum(D[a][i] * YU[a][i] for a in range(d)) for i in range(n)]  # ⟨Y, w_i u_iᵀ⟩ = w_iᵀ Y u_i
    if any(v > 0 for v in inner):
        return None
    yt = sum(Yf[a][b] * M[a][b] for a in range(d) for b in range(d)) / beta + sum(inner)
    if not yt > 0:
        return None
    y2 = sum(v * v for row in Yf for v in row)
    m2 = sum(v * v for row in M for v in row)
    return (beta * yt) ** 2 / (y2 * m2)


def witness_bound(block: Block, wb: Block, mu: list[Fraction], alpha: Fraction, beta: Fraction
                  ) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """(q, l, r, ρ²) with |f(x) − g(x)|_∞ ≤ q|x|²_∞ + l|x|_∞ + r for every x, exact rationals, g = ``wb``
    (float64 weights) against the exact witness ĝ of μ (u_i/μ_i, c_i/μ_i, μ_i² w_i):
    f − ĝ = −R_L x − R_0 exactly (R_L = βΣ(μ_i − 1)A_i − M, R_0 = βΣ(μ_i − 1)w_i c_i + b'_down − b_down),
    and unit by unit, with s = (u_i·x + c_i)/μ_i, s' = u'_i·x + c'_i, e = s' − s, δw = w'_i − μ_i² w_i:
    g_i − ĝ_i = δw σ(s') + μ_i² w_i (σ(s') − σ(s)), |σ(s')| ≤ |α|s'² + |β||s'|,
    |σ(s') − σ(s)| ≤ |e|(|α|(|s| + |s'|) + |β|), each of |s|, |s'|, |e| ≤ a|x|_∞ + b; ρ² = ‖R_L‖²_F / ‖M‖²_F,
    the squared relative residual of the linear program's equation (the witness's ``residual``)."""
    d, n = block.d, block.n
    U, D, M = _fr_mat(block.W_up), _fr_mat(block.W_down), _fr_mat(block.M)
    c = [Fraction(0)] * n if block.b_up is None else _fr(block.b_up)
    bd = [Fraction(0)] * d if block.b_down is None else _fr(block.b_down)
    U2, D2 = _fr_mat(wb.W_up), _fr_mat(wb.W_down)
    c2 = [Fraction(0)] * n if wb.b_up is None else _fr(wb.b_up)
    bd2 = [Fraction(0)] * d if wb.b_down is None else _fr(wb.b_down)
    aa, ab = abs(alpha), abs(beta)
    # the exact affine part
    RL = [[beta * sum((mu[i] - 1) * D[a][i] * U[i][b] for i in range(n)) - M[a][b] for b in range(d)] for a in range(d)]
    R0 = [beta * sum((mu[i] - 1) * D[a][i] * c[i] for i in range(n)) + bd2[a] - bd[a] for a in range(d)]
    q = [Fraction(0)] * d
    lin = [sum(abs(v) for v in RL[a]) for a in range(d)]
    r = [abs(v) for v in R0]
    for i in range(n):
        m = mu[i]
        a_s, b_s = sum(abs(v) for v in U[i]) / m, abs(c[i]) / m
        a_e, b_e = sum(abs(U2[i][b] - U[i][b] / m) for b in range(d)), abs(c2[i] - c[i] / m)
        if a_e == 0 and b_e == 0 and all(D2[a][i] == m * m * D[a][i] for a in range(d)):
            continue  # (the unit is exactly ĝ's)
        a_p, b_p = a_s + a_e, b_s + b_e  # |s'|
        # |σ(s')| ≤ |α|(a_p X + b_p)² + |β|(a_p X + b_p)
        sig = (aa * a_p * a_p, 2 * aa * a_p * b_p + ab * a_p, aa * b_p * b_p + ab * b_p)
        # |e|(|α|(|s| + |s'|) + |β|): (a_e X + b_e)(k1 X + k0)
        k1, k0 = aa * (a_s + a_p), aa * (b_s + b_p) + ab
        dif = (a_e * k1, a_e * k0 + b_e * k1, b_e * k0)
        for a in range(d):
            dw, w2 = abs(D2[a][i] - m * m * D[a][i]), m * m * abs(D[a][i])
            q[a] += dw * sig[0] + w2 * dif[0]
            lin[a] += dw * sig[1] + w2 * dif[1]
            r[a] += dw * sig[2] + w2 * dif[2]
    rho2 = sum(v * v for row in RL for v in row) / sum(v * v for row in M for v in row)
    return max(q), max(lin), max(r), rho2


def f0_exact(block: Block, alpha: Fraction, beta: Fraction) -> Fraction:
    """|f(0)|_∞ = |W_down σ(c) + b_down|_∞ exactly, σ(c) = α max(c, 0)² + βc."""
    if block.b_up is None and block.b_down is None:
        return Fraction(0)
    D = _fr_mat(block.W_down)
    c = [Fraction(0)] * block.n if block.b_up is None else _fr(block.b_up)
    bd = [Fraction(0)] * block.d if block.b_down is None else _fr(block.b_down)
    s = [alpha * max(v, Fraction(0)) ** 2 + beta * v for v in c]
    return max(abs(sum(D[a][i] * s[i] for i in range(block.n)) + bd[a]) for a in range(block.d))


# ------------------------------------------------------------------------------ LPs --
def _a_matrix(b64: Block) -> np.ndarray:
    """d² × n: column i = vec(w_i u_iᵀ) (row-major)."""
    U, D = np.asarray(b64.W_up), np.asarray(b64.W_down)
    return np.einsum("ai,ib->abi", D, U).reshape(-1, b64.n)


def solve_mu(b64: Block, beta: float, lp: tuple | None = None) -> np.ndarray | None:
    """μ > 0 with Σ μ_i A_i = T (HiGHS: maximise t subject to μ_i ≥ t, t ≤ 1, then a few
    least-squares corrections of the equation's float residual that keep μ ≥ t/2); None when
    the LP's best t is below :data:`MU_MIN`·max μ (no strictly positive solution found). ``lp``: :func:`_lp_mu`'s
    answer, when already solved."""
    got = _lp_mu(b64, beta) if lp is None else lp
    if got is None:
        return None
    mu, t, A, T = got
    if not (t > 0 and t >= MU_MIN * float(mu.max())):
        return None
    for _ in range(3):
        r = T - A @ mu
        step = np.linalg.lstsq(A, r, rcond=None)[0]
        if not np.all(mu + step >= t / 2):
            break
        mu = mu + step
    return mu


def boundary_mu(b64: Block, beta: float, lp: tuple | None = None) -> list[np.ndarray]:
    """Where the LP's μ ≥ 0 reaches the boundary (some μ_i → 0: the unit's part must vanish, as in a flip's set, and
    no μ > 0 solves the equation exactly): μ with those entries raised to ε = 2⁻²⁰, 2⁻⁴⁰ or 2⁻⁶⁰ — the rescaled unit
    u_i/ε, ε²·w_i keeps its ReLU² part exactly and leaves β·ε·w_i u_iᵀ of the linear one, a witness within the
    tolerance when that is small (:func:`_witness` bounds it exactly). Empty where the LP is infeasible. ``lp``:
    :func:`_lp_mu`'s answer, when already solved."""
    got = _lp_mu(b64, beta) if lp is None else lp
    if got is None:
        return []
    mu = got[0]
    top = float(mu.max()) if len(mu) else 0.0
    if not (top > 0 and math.isfinite(top)):
        return []
    low = mu <= 2.0**-30 * top
    return [np.where(low, eps, mu) for eps in (2.0**-20, 2.0**-40, 2.0**-60)] if np.any(low) else []


def _lp_mu(b64: Block, beta: float) -> tuple[np.ndarray, float, np.ndarray, np.ndarray] | None:
    """The LP's μ ≥ 0 and its best t (maximise t with μ_i ≥ t, t ≤ 1, Σ μ_i A_i = T), with A and T; None when it
    fails or is infeasible."""
    from scipy.optimize import linprog

    A = _a_matrix(b64)
    n = b64.n
    T = (np.asarray(b64.M) / beta).reshape(-1) + A.sum(axis=1)
    s = max(float(np.abs(A).max()), float(np.abs(T).max()), 1e-300)
    Aeq = np.hstack([A / s, np.zeros((A.shape[0], 1))])
    Aub = np.hstack([-np.eye(n), np.ones((n, 1))])  # t − μ_i ≤ 0
    c = np.zeros(n + 1)
    c[-1] = -1.0
    res = linprog(c, A_ub=Aub, b_ub=np.zeros(n), A_eq=Aeq, b_eq=T / s, bounds=[(0, 1e6)] * n + [(None, 1)], method="highs")
    if res.status != 0 or res.x is None:
        return None
    mu, t = np.asarray(res.x[:n], dtype=np.float64), float(res.x[-1])
    mu[~A.any(axis=0)] = 1.0  # a unit with A_i = 0 (a zero column of W_down or row of W_up) is in no equation: the LP
    # left its μ_i anywhere (up to the 1e6 bound, which failed the ratio of solve_mu); 1 keeps it as it is
    return mu, t, A, T


def solve_farkas(b64: Block, beta: float) -> np.ndarray | None:
    """A d×d matrix Y with ⟨Y, A_i⟩ ≤ −1 (columns normalised) and |Y_k| ≤ 10⁶ maximising ⟨Y, T⟩
    (strict, so that rounding Y to float64 keeps every ⟨Y, A_i⟩ < 0), then the same with
    ⟨Y, A_i⟩ ≤ 0 and |Y_k| ≤ 1; None when neither finds ⟨Y, T⟩ > 0. A candidate only: the
    exact check is :func:`farkas_bound`."""
    from scipy.optimize import linprog

    A = _a_matrix(b64)
    T = (np.asarray(b64.M) / beta).reshape(-1) + A.sum(axis=1)
    nrm = np.linalg.norm(A, axis=0)
    if not np.all(nrm > 0):
        return None
    An = (A / nrm).T
    Tn = T / max(float(np.linalg.norm(T)), 1e-300)
    for rhs, box in ((-1.0, 1e6), (0.0, 1.0)):
        res = linprog(-Tn, A_ub=An, b_ub=np.full(b64.n, rhs), bounds=[(-box, box)] * A.shape[0], method="highs")
        if res.status == 0 and res.x is not None and -float(res.fun) > 0:
            return np.asarray(res.x, dtype=np.float64).reshape(b64.d, b64.d)
    return None


def witness_block(b64: Block, mu: np.ndarray, beta: float) -> Block:
    """u'_i = u_i/μ_i, c'_i = c_i/μ_i, w'_i = μ_i² w_i, b'_down = b_down + β Σ_i (1 − μ_i) w_i c_i, no skip."""
    U, D = np.asarray(b64.W_up), np.asarray(b64.W_down)
    c = None if b64.b_up is None else np.asarray(b64.b_up) / mu
    bd = None
    if b64.b_up is not None or b64.b_down is not None:
        bd = (np.zeros(b64.d) if b64.b_down is None else np.asarray(b64.b_down, dtype=np.float64)).copy()
        if b64.b_up is not None:
            bd = bd + beta * np.sum(D * ((1 - mu) * np.asarray(b64.b_up))[None, :], axis=1)  # (no BLAS: the checker rebuilds these bits)
        if not np.any(bd):
            bd = None
    return b64.replace(W_up=U / mu[:, None], W_down=D * (mu * mu)[None, :], b_up=c, b_down=bd,
                       skip=np.zeros((b64.d, b64.d)), name=b64.name + "'")


# -------------------------------------------------------------------------- handler --
def _candidate(ctx: Any) -> tuple[Fraction, Fraction] | None:
    blk = ctx.block
    if blk.gated or not blk.activation.name.startswith("expr:"):
        return None  # (no built-in σ is α·ReLU² + β·z with β ≠ 0)
    form = relu2_linear_form(blk.activation)
    return None if isinstance(form, str) else form


def decide_relu2_linear(ctx: Any) -> BlockDecision | None:
    """The handler: σ = α·ReLU² + β·z exactly (α, β ≠ 0), ungated; None when σ is not of that form."""
    form = _candidate(ctx)
    if form is None:
        return None
    alpha, beta = form
    blk = ctx.block
    b64 = blk.float64()
    a_, b_ = (str(q) if len(str(q)) <= 24 else f"{float(q):.6g}" for q in (alpha, abs(beta)))  # (10⁻³¹⁰ as a float)
    sig = f"σ(z) = {'' if alpha == 1 else f'{a_}·'}ReLU(z)² {'+' if beta > 0 else '−'} {'' if abs(beta) == 1 else f'{b_}·'}z"
    lead = (f"{sig} exactly, so with u'_i = λ_i u_i (nondegenerate weights, no flip) "
            "g = f iff Σ_i μ_i w_i u_iᵀ = M/β + Σ_i w_i u_iᵀ for some μ > 0 (μ_i = 1/λ_i)")

    def unknown(why: str) -> BlockDecision:
        notes = "; ".join(dict.fromkeys(ctx.notes))
        return ctx.done(Verdict.UNKNOWN, Theorem.NONE, f"Unknown: {why}" + (f" (also: {notes})." if notes else "."))

    if blk.n * blk.d * blk.d > EXACT_MAX or blk.n > LP_MAX_N:
        return unknown(f"{sig}, but n·d² = {blk.n * blk.d ** 2} is beyond the {EXACT_MAX} "
                       "entries the exact checks of its linear program run to")
    if not magnitudes_ok(np.array([float(alpha), float(beta)])):  # (M/β overflows at β = 10⁻³¹⁰: red team 45a/01)
        return unknown(f"{sig}, but α or β is outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where its linear program's "
                       "float64 data (M/β) and rounding bounds hold; rescale σ's constants")
    d2, nd = hyp.dimension(blk), hyp.nondegenerate(blk)
    ctx.H.extend([d2, *nd])
    lp = _lp_mu(b64, float(beta))  # (one LP for both readings: μ > 0, or its zeros raised)
    exact_mu = None if lp is None else solve_mu(b64, float(beta), lp)
    edge = [] if exact_mu is not None or lp is None else boundary_mu(b64, float(beta), lp)
    failed = "the linear program found no μ with every μ_i > 0"
    for mu in [exact_mu] if exact_mu is not None else edge:
        why = lead if exact_mu is not None else (f"{lead}; the linear program's μ ≥ 0 reaches 0 (no μ > 0 solves it "
                                                 f"exactly), and its zeros raised to {float(mu.min()):.3g} leave a "
                                                 "rescaled block within the tolerance")
        out = _witness(ctx, b64, mu, alpha, beta, why, exact_mu is None)
        # μ on a dyadic grid: b'_down = b_down + βΣ(1 − μ_i)c_i w_i may then be exact, where f(0) = 0 leaves no room
        # for its rounding (the equation's residual grows by ~2^-bits, bounded exactly like the rest)
        # μ a power of two per unit (where it is one up to 2^-30): then u_i/μ_i and μ_i²·w_i are exact, and so the
        # quadratic part of f − g is 0 — which the tolerance's measure needs (a nonzero one is no witness)
        two = 2.0 ** np.round(np.log2(np.maximum(mu, 2.0**-1000)))
        grids = ([two] if np.all(np.abs(two / mu - 1) <= 2.0**-30) else []) + [np.round(mu * 2.0**b) / 2.0**b for b in (20, 40)]
        for grid in grids:
            if isinstance(out, BlockDecision):
                break
            if np.all(grid > 0) and not np.array_equal(grid, mu):
                out = _witness(ctx, b64, grid, alpha, beta, why, exact_mu is None)
        if isinstance(out, BlockDecision):
            return out
        failed = out if exact_mu is not None else \
            f"the linear program found no μ with every μ_i > 0, and raising its zeros to 2⁻²⁰, 2⁻⁴⁰ or 2⁻⁶⁰ fails ({out})"
    failing = [h.statement for h in (d2, *nd) if not h.holds]
    if failing:
        return unknown(f"{sig}: {failed}, and not_absorbable needs nondegenerate weights "
                       f"({'; '.join(failing)})")
    from absorb.engine._growth2 import set_gain, ungated_gain
    from absorb.engine.skeleton2 import EXACT_MAX_N, gram_route, gram_rows_skeleton2, rank_route

    set_gain(ctx, ungated_gain(blk, form), one_unit=True, exact=True)  # (σ'(0) = β ≠ 0: a unit with a small up row is linear)
    rank = rank_route(b64, ctx.dist_tol)
    if rank is None and blk.n > EXACT_MAX_N and blk.n <= blk.d * blk.d * (blk.d + 1) // 2:
        rank = gram_route(gram_rows_skeleton2(b64), b64.M, ctx.dist_tol)  # (λ_min(QᵀQ) ≥ μ, rigorous in floats)
    if rank is None or rank.status is not SearchStatus.INFEASIBLE:
        return unknown(f"{sig}: {failed}, and the (Q) columns w_i ⊗ u_i u_iᵀ are not proved linearly independent with "
                       "margin (the skeleton's exact rank route, n ≤ 48, or its Gram route, n ≤ d·d(d+1)/2), so a "
                       "flipped unit is not excluded")
    route = {"route": "gram", "mu": (rank.certificate or {}).get("mu")} if rank.method == "gram" else {"route": "rank"}
    Y = solve_farkas(b64, float(beta))
    b2 = None if Y is None else farkas_bound(blk, beta, Y)
    if b2 is None or not b2 > Fraction(ctx.dist_tol) ** 2:
        why = "no Farkas matrix Y was found" if Y is None else "the Farkas matrix Y failed its exact check" if b2 is None else (
            f"the Farkas bound {math.sqrt(float(b2)):.3g} is within the tolerance")
        return unknown(f"{sig}, no flip possible, but {failed} and {why}")
    bound = math.sqrt(float(b2)) * (1 - 1e-12)  # (≤ 1 up to rounding: μ = 1 is at distance 1)
    res = SearchResult(SearchStatus.INFEASIBLE, "farkas", "no μ ≥ 0 solves the linear condition within the tolerance",
                       bound=bound, certificate={"route": "farkas", "Y": [[float(v) for v in row] for row in Y],
                                                 "bound": bound, **route})
    return ctx.done(Verdict.NOT_ABSORBABLE, Theorem.RELU2_LINEAR,
                    f"{lead}; the (Q) columns are linearly independent (so no unit is flipped), and a Farkas matrix Y with "
                    f"⟨Y, w_i u_iᵀ⟩ ≤ 0 for every i and ⟨Y, T⟩ > 0 (exact) puts every μ ≥ 0 at relative distance ≥ "
                    f"{bound:.3g} > tolerance.", search=res)


def _witness(ctx: Any, b64: Block, mu: np.ndarray, alpha: Fraction, beta: Fraction, lead: str,
             raised: bool = False) -> BlockDecision | str:
    from absorb.engine.skeleton2 import flip_epsilon, linear_error_bound, relu2_scales
    from absorb.engine.witness import eval_threshold, evaluation_error

    blk = ctx.block
    wb = witness_block(b64, mu, float(beta))
    mus = [Fraction(float(v)) for v in mu]
    q, rl, r0, rho2 = witness_bound(b64, wb, mus, alpha, beta)
    f0 = f0_exact(b64, alpha, beta)
    s1, s2, _ = relu2_scales(b64, (), alpha)
    thr = eval_threshold(ctx.tol, blk.n)
    eps, scaled = flip_epsilon(q, rl, r0, f0, s1, s2, thr)
    if not eps <= thr:
        return f"the witness of the linear program's μ has proved error {eps:.2e} above {thr:.2e}"
    if scaled:
        from absorb.engine.skeleton2 import DEGREE2_GAP

        return f"the witness of the linear program's μ: {DEGREE2_GAP}"
    err, m = evaluation_error(blk, wb, blk.d, seed=ctx.seed, accept=thr)
    if not err <= thr:
        return f"the witness of the linear program's μ failed the sampled check (error {err:.2e})"
    dist = math.sqrt(float(rho2))
    how = (f"|f(x) − g(x)|∞ ≤ {eps:.3g}·(|x|∞ + |f(0)|∞) for every x (the quadratic part of f − g is 0), bounded in exact "
           "rationals from the float64 weights")
    w = Witness(S=None, block=wb, residual=dist, eval_error=max(eps, err), n_inputs=m, exact=False,
                description=f"u'_i = u_i/μ_i, b'_up,i = b_up,i/μ_i, w'_i = μ_i²·w_i, b'_down = b_down + β·Σ_i (1 − μ_i) "
                            f"b_up,i w_i (min μ_i = {float(mu.min()):.3g}); {how}", bound=linear_error_bound(q, rl, r0, scaled))
    res = SearchResult(SearchStatus.FOUND, "lp", "μ > 0 from the linear program", S=(), residual=dist, certificate={
        "route": "lp", "mu": [float(v) for v in mu]})
    return ctx.done(Verdict.ABSORBABLE, Theorem.RELU2_LINEAR,
                    f"{lead}; {'with' if raised else 'the linear program gives'} μ > 0 (min μ_i = {float(mu.min()):.3g}, "
                    f"relative residual {dist:.2e}), "
                    f"and the rescaled block equals f: {how} (checked on {m} inputs, max relative error {err:.2e}).",
                    witness=w, search=res)
