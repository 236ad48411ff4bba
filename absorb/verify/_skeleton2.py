"""The checker's re-derivation of the degree-2 skeleton (docs/results/skeleton2.md), by its
own route: σ's two-term form at ±∞ from its outermost pieces (``_asymptotic`` expansions, no
sympy limit, no sample), and

* ``not_absorbable``: the nondegeneracy of the weights (necessity needs it; the flip does not)
  and its own proof that no index set S is within the tolerance of
  (Q) Σ_S w_i ⊗ u_i u_iᵀ = 0 and (L) M = −Σ_S (2αc_i + β) w_i u_iᵀ, measured as
  ‖(Q 1_S, L 1_S + vec M)‖₂ / ‖M‖_F — either an exact positive-definiteness test of QᵀQ − μI (Sylvester, integer elimination)
  (only S = ∅ is close to (Q), and S = ∅ is at distance 1), or every S enumerated with
  rounding bounds (n ≤ 20), or the Gram route; or the recorded index-set proof re-checked on
  the lifted problem (case ``index-set``) or on (L) alone (case ``linear``: up rows
  (2αc_i + β)·u_i built here, target −M — (L)'s distance is a lower bound on the joint one);
  the exact test's Gram matrix and the flip's residuals in integers (:mod:`absorb.verify._exact_gram`);
* ``absorbable`` (σ with σ(z) + σ(−z) = αz² + k for every real z, β = 0, k = 2σ(0) rational,
  re-derived by pieces: ReLU² and others): the flip of S rebuilt here,
  f − g = αΣ_S w_i (u_i·x)² + R_L x + R_0 exactly, with the quadratic part (zero,
  or for a set planted in float64 bounded by q|x|²_∞ within the tolerance of the block's own
  quadratic scale s₂, docs/user-guide.md "Witness check"), R_L and R_0 bounded exactly.

Nothing is recorded for the search: the checker re-derives infeasibility itself.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.model.block import Block
from absorb.verify import _exact_gram, _gram
from absorb.verify._asymptotic import why_not_at_infinity
from absorb.verify._at_zero import _f0_lower
from absorb.verify._gram import mu_bound
from absorb.verify._numerics import _gamma, _parse_number, distance_bar, rounding_allowance, sha256_f64, subset_sums
from absorb.verify._pieces import decide_zero, exact_value
from absorb.verify._report import _Ctx, _require
from absorb.verify._symbolic import _variable, outer_pieces, vanishes_on_reals
from absorb.verify._weights import InfNorm, _block_arrays

CASES = ("rank", "gram", "enumerate", "index-set", "linear", "relu2-flip")
ENUMERATE_MAX_N = 20
RANK_MAX_N = 48


def two_term_form(expr: sp.Expr) -> tuple[tuple[sp.Expr, sp.Expr] | None, str]:
    """((α, β), "") with σ(s) = αs² + βs + o(s) as s → +∞ (α ≠ 0) and σ(s) = o(s) as s → −∞,
    each limit derived on the outermost piece: α = lim σ/s², β = lim (σ − αs²)/s at +∞ and
    lim σ/s = 0 at −∞; else (None, why)."""
    split = outer_pieces(expr)
    if isinstance(split, str):
        return None, split
    x, pcs = split
    top, bottom = pcs[-1].expr, pcs[0].expr
    a, why = why_not_at_infinity(top / x**2, x, 1)
    if a is None or not isinstance(a, sp.Rational) or a == 0:
        return None, f"lim σ(s)/s² at +∞: {why or f'{a} is not a nonzero rational'}"
    b, why = why_not_at_infinity(sp.expand(top - a * x**2) / x, x, 1)
    if b is None or not isinstance(b, sp.Rational):
        return None, f"lim (σ(s) − αs²)/s at +∞: {why or f'{b} is not rational'}"
    m, why = why_not_at_infinity(bottom / x, x, -1)
    if m is None or decide_zero(m) is not True:
        return None, f"lim σ(s)/s at −∞: {why or f'{m} ≠ 0'}"
    return (a, b), ""


def _square_flip(expr: sp.Expr, a: sp.Rational) -> sp.Rational | None:
    """k with σ(z) + σ(−z) = a·z² + k for every real z, a = α re-derived from σ's pieces: k is
    forced to 2σ(0) (z = 0) and must be rational; then σ(z) + σ(−z) − az² − k is 0 at every break
    point and simplifies to 0 on every piece. None when that is not proved."""
    x = _variable(expr)
    try:
        k = sp.simplify(2 * exact_value(expr, x, sp.Integer(0)))
    except Exception:  # noqa: BLE001 - sympy raises assorted errors on hard input: not proved
        return None
    if not isinstance(k, sp.Rational):
        return None
    return k if vanishes_on_reals(expr + expr.subs(x, -x) - a * x**2 - k, x) else None


def _is_relu2(expr: sp.Expr) -> bool:
    """σ = ReLU(z)² for every real z (by pieces): then |f(0)| is computed exactly, σ(c) = max(c, 0)²."""
    x = _variable(expr)
    return vanishes_on_reals(expr - sp.Max(0, x) ** 2, x)


def _rank_bound(block: Block) -> float | None:
    """The rank route for the degree-2 skeleton's (Q) columns vec(w_i ⊗ u_i u_iᵀ), from their
    exact Gram matrix (w_i·w_j)(u_i·u_j)² (:mod:`absorb.verify._exact_gram`)."""
    if block.n > RANK_MAX_N:
        return None
    U = _exact_gram.ints(block.W_up)
    return _exact_gram.rank_bound(*_exact_gram.column_gram(_exact_gram.ints(block.W_down), U, U), block.M)


def _enumeration_bound(block: Block, a: Fraction, b: Fraction) -> float | None:
    """The enumeration route over the degree-2 skeleton's stacked columns."""
    n, d = block.n, block.d
    if n > ENUMERATE_MAX_N:
        return None
    U = np.asarray(block.W_up, dtype=np.float64)
    W = np.asarray(block.W_down, dtype=np.float64)
    c = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    cols, mags = [], []
    with np.errstate(over="ignore", invalid="ignore"):  # (an overflow shows as inf: no bound)
        for i in range(n):
            q = np.multiply.outer(W[:, i], np.outer(U[i], U[i])).ravel()
            lin = (2 * float(a) * c[i] + float(b)) * np.outer(W[:, i], U[i]).ravel()
            cols.append(np.concatenate([q, lin]))
            mags.append(np.concatenate([np.abs(q), (2 * abs(float(a) * c[i]) + abs(float(b))) * np.abs(np.outer(W[:, i], U[i])).ravel()]))
    return enumeration_bound(np.array(cols), d ** 3, np.asarray(block.M, dtype=np.float64), np.array(mags))


def enumeration_bound(K: np.ndarray, zeros: int, M: np.ndarray, A: np.ndarray | None = None) -> float | None:
    """min over every S of a rigorous lower bound on ‖Σ_S k_i − (0, −vec M)‖ / ‖M‖_F (K: n ×
    rows, the first ``zeros`` rows against 0; float64, n ≤ ENUMERATE_MAX_N): r̂ is within γ(A1_S + |t|) of
    the exact residual entrywise, γ = γ_{n+rows+8} covering the ≤ 4 roundings of an entry, the
    sums and the norms; A bounds the absolute values of the products an entry of K sums (an
    entry that is a sum may cancel: its rounding is relative to its terms); |K| when None."""
    n = K.shape[0]
    if n > ENUMERATE_MAX_N or (1 << n) * K.shape[1] > 1 << 28:
        return None
    A = np.abs(K) if A is None else A
    t = np.concatenate([np.zeros(zeros), -np.asarray(M, dtype=np.float64).ravel()])
    # every nonzero entry within [2^-400, 2^400] (K's are products of ≤ 4 weights): no square
    # in a norm below overflows or underflows; an entry of K that underflowed is off by ≤ 2^-1072
    for x in (K, A, t):
        ax = np.abs(x)
        if not np.all(np.isfinite(ax)) or ax.max(initial=0.0) > 2.0**400 or np.any((ax > 0) & (ax < 2.0**-400)):
            return None
    g = _gamma(n + K.shape[1] + 8)
    nm = float(np.linalg.norm(M)) * (1 + g)
    tiny = math.sqrt(K.shape[1]) * n * 2.0**-1070
    worst = math.inf
    for r, e in zip(subset_sums(K), subset_sums(A)):
        r -= t
        e += np.abs(t)
        lo = (np.sqrt(np.einsum("ij,ij->i", r, r)) * (1 - g) - g * (1 + g) ** 2 * np.sqrt(np.einsum("ij,ij->i", e, e)) - tiny) / nm
        if not np.all(np.isfinite(lo)):  # (a nan would be skipped by min(): no bound)
            return None
        worst = min(worst, float(lo.min()))
    return worst


# ------------------------------------------------------------------------- gram route --
GRAM_MAX_N = 4096
"""Beyond this width the checker's Gram route is :mod:`absorb.verify._gram`'s (by row blocks)."""
_TINY = 2.0**-990  # covers every underflowed rounding of an entry (each ≤ 2^-1074)
_SAFE = 2.0**200  # the producer's range too (absorb.rigorous.SAFE_EXPONENT), so no honest record is refused for it


def _gk(k: int) -> float:
    """γ_k raised by 2 % (its own rounding)."""
    return 1.02 * _gamma(k)


def _gram_ok(*arrays: np.ndarray) -> bool:
    """Every entry finite with 0 or 2^-200 ≤ |x| ≤ 2^200: products of two stay normal, so every
    rounding but those after a cancellation (the absolute 2^-990) is relative; an overflow
    later shows as a non-finite entry, which is refused."""
    for a in arrays:
        x = np.abs(np.asarray(a, dtype=np.float64))
        if not np.all(np.isfinite(x)) or x.max(initial=0.0) > _SAFE or np.any((x > 0) & (x < 1 / _SAFE)):
            return False
    return True


def gram_s2(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """(Ĝ, E) with |G − Ĝ| ≤ E for the Gram matrix G of the (Q) columns vec(w_i ⊗ u_i u_iᵀ):
    G_ij = Σ_{a,b,c} w_ia u_ib u_ic w_ja u_jb u_jc = (w_i·w_j)(u_i·u_j)², read off the triple sum.
    Ĝ = fl(p·q·q) with p, q rounded dot products (each within γ_d of its exact value relative
    to the dot product of absolute values); the exact product of three perturbed factors is
    within (1 + γ_d)³ − 1 ≤ γ_{3d} of the product of the absolute dot products, the two float
    products add 2u: in all γ_{3d+2} times P (exact, with P ≤ 1.5·P̂ for its float value P̂),
    so E = 2γ_{3d+4}·P̂ + 2^-990."""
    U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down))
    if not _gram_ok(U, D):
        return None
    d = U.shape[1]
    p, q = D.T @ D, U @ U.T
    pa, qa = np.abs(D).T @ np.abs(D), np.abs(U) @ np.abs(U).T
    with np.errstate(all="ignore"):
        G = p * (q * q)
        E = 2 * _gk(3 * d + 4) * (pa * (qa * qa)) + _TINY
    return G, np.maximum(E, E.T)


def gram_gated(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """(Ĝ, E) for the (Qg) columns vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)): expanding the Frobenius
    product of the two sums of rank-one matrices, G_ij = 2(w_i·w_j)[(g_i·g_j)(u_i·u_j) +
    (g_i·u_j)(u_i·g_j)]; E as in :func:`gram_s2` with one more rounded sum: 2γ_{3d+5}·P̂ + 2^-990."""
    Gt, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    if not _gram_ok(Gt, U, D):
        return None
    d = U.shape[1]
    aG, aU, aD = np.abs(Gt), np.abs(U), np.abs(D)
    gu, gua = Gt @ U.T, aG @ aU.T
    with np.errstate(all="ignore"):
        G = 2 * (D.T @ D) * ((Gt @ Gt.T) * (U @ U.T) + gu * gu.T)
        E = 2 * _gk(3 * d + 5) * (2 * (aD.T @ aD) * ((aG @ aG.T) * (aU @ aU.T) + gua * gua.T)) + _TINY
    return G, np.maximum(E, E.T)


def gram_positive_definite(G: np.ndarray, E: np.ndarray, m: float) -> tuple[bool, str]:
    """Whether every symmetric G' with |G' − G| ≤ E has G' − mI positive definite — by
    Sylvester's law of inertia, not by a factorisation's residual.

    Â = fl(G − mI); X = the lower triangle of a float inverse of Â's Cholesky factor, checked
    to have a nonzero diagonal: X is exactly nonsingular, so A = G' − mI and Y = X A Xᵀ have
    the same inertia, and Y is symmetric. With A = Â + Δ, |Δ| ≤ E + γ₁|Â| (only the diagonal
    rounds), Z = fl(XÂ) and Ŷ = fl(ZXᵀ): |Y − Ŷ| ≤ |X||Δ||X|ᵀ + γ_n|X||Â||X|ᵀ + γ_n|Z||X|ᵀ =: F
    (Higham 3.5 twice). F̂ computed from nonnegative float products is ≥ F/(1 + γ_{4n+16})
    (two chained products of n terms and four more roundings). Gershgorin on the real
    symmetric Y: if Ŷ_ii − F_ii − Σ_{j≠i}(|Ŷ_ij| + F_ij) > 0 for every i, every eigenvalue of Y
    is positive, so Y and A are positive definite (the sums raised by (1 + γ_{n+8}) before the
    exact float comparison). Underflow: a product that underflows errs by ≤ 2^-1074
    absolutely, so Z, Ŷ and the products in F̂ each err by ≤ n·2^-1074 per entry before being
    multiplied by |X| (row sums ≤ s_X): F also gets 8n·2^-1074·(1 + s_X)², and anything non-finite
    is refused."""
    with np.errstate(all="ignore"):  # overflow is refused as a non-finite value
        return _inertia(G, E, m)


def _inertia(G: np.ndarray, E: np.ndarray, m: float) -> tuple[bool, str]:
    n = G.shape[0]
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(E))):
        return False, "the Gram matrix or its error bound is not finite"
    A = np.array(G, dtype=np.float64)
    A[np.diag_indices(n)] -= m
    try:
        C = np.linalg.cholesky(A)
        X = np.tril(np.linalg.inv(np.tril(C)))
    except np.linalg.LinAlgError:
        return False, "G − μI has no float Cholesky factor"
    if not (np.all(np.isfinite(X)) and np.all(np.diag(X) != 0)):
        return False, "the approximate inverse factor is singular or not finite"
    gn, up = _gk(n), 1 + _gk(4 * n + 16)
    aA, aX = np.abs(A), np.abs(X)
    Z = X @ A
    Y = Z @ X.T
    H = E + (gn + _gk(1)) * aA
    sx = float(aX.sum(axis=1).max()) * (1 + _gk(n + 2))  # ≥ max row sum of |X|
    tau = 8 * n * 2.0**-1074 * (1 + sx) ** 2  # every underflow in Z, Ŷ and F
    F = ((aX @ H) @ aX.T + gn * (np.abs(Z) @ aX.T)) * up + tau
    if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(F))):
        return False, "X(G − μI)Xᵀ or its error bound is not finite"
    R = np.abs(Y) + F
    R[np.diag_indices(n)] = 0
    rad = (R.sum(axis=1) + np.diag(F)) * (1 + _gk(n + 8))
    if not np.all(np.isfinite(rad)):
        return False, "the Gershgorin radii are not finite"
    bad = np.flatnonzero(~(np.diag(Y) > rad))
    if bad.size:
        i = int(bad[0])
        return False, f"Gershgorin disc {i} of X(G − μI)Xᵀ reaches 0 (centre {Y[i, i]:.3g}, radius {rad[i]:.3g})"
    return True, ""


def gram_bound(gram: tuple[np.ndarray, np.ndarray] | None, mu_rec: Any, M: np.ndarray) -> tuple[float | None, str]:
    """(the lower bound √μ/‖M‖_F on every nonempty S's distance, "") when G − μI is proved
    positive definite for the recorded μ (so ‖Q 1_S‖² ≥ μ|S|; S = ∅ is at distance 1); else
    (None, why). μ is rounded up to a float m ≥ μ before the test (G − mI ⪰ ... ⇒ G − μI);
    :func:`absorb.verify._gram.mu_bound`."""
    if gram is None:
        return None, "the weights are outside the range of the checker's rounding analysis"
    return mu_bound(mu_rec, M, lambda m: gram_positive_definite(gram[0], gram[1], m))


def _flip(block: Block, S: list[int], a: Fraction = Fraction(1), k: Fraction = Fraction(0)) -> Block:
    """The producer's construction, rebuilt here (the same float operations): negate (u_i, c_i, w_i)
    on S, b'_down = b_down + Σ_S (a·c_i² + k) w_i (for a = 1, k = 0: Σ_S c_i² w_i)."""
    U, D = np.array(block.W_up, dtype=np.float64), np.array(block.W_down, dtype=np.float64)
    U[S] *= -1
    D[:, S] *= -1
    b_up, shift = None, np.zeros(block.d)
    W0 = np.asarray(block.W_down, dtype=np.float64)[:, S]
    if block.b_up is not None:
        b_up = np.array(block.b_up, dtype=np.float64)
        sq = b_up[S] ** 2
        shift = W0 @ (sq if (a, k) == (1, 0) else float(a) * sq + float(k))
        b_up[S] *= -1
    elif k != 0:
        shift = W0 @ np.full(len(S), float(k))
    b_down = shift + (0 if block.b_down is None else np.asarray(block.b_down, dtype=np.float64))
    return block.replace(W_up=U, W_down=D, b_up=b_up, b_down=b_down if np.any(b_down) else None,
                         skip=np.zeros((block.d, block.d)), name=block.name + "'")


def _nondegenerate(ctx: _Ctx, w: str, block: Block) -> None:
    from absorb.verify._beyond import _nondegenerate as nd

    nd(ctx, w, block)


def check_skeleton2(ctx: _Ctx, w: str, b: dict[str, Any], block: Block) -> tuple[str, Block | None, float]:
    if b.get("verdict") == "unknown":
        return "unknown", None, 0.0
    from absorb.verify._beyond import _nonzero_skip, finite_on_reals

    arg = b.get("argument") or {}
    _require(ctx, not block.gated, w, "the block is ungated (the degree-2 skeleton is about ungated blocks)")
    _nonzero_skip(ctx, w, b, block)
    act = block.activation.expr
    _require(ctx, finite_on_reals(act), w, "σ is real and finite at every real point")
    form, why = two_term_form(act)
    _require(ctx, form is not None, w, "σ(s) = αs² + βs + o(s) at +∞ (α ≠ 0, rational) and o(s) at −∞ (the checker's own "
             "expansions of the outermost pieces)", why, fail_only=True)
    a, bb = form  # type: ignore[misc]
    ra, rb = _parse_number(arg.get("alpha")), _parse_number(arg.get("beta"))
    _require(ctx, ra is not None and rb is not None and decide_zero(ra - a) is True and decide_zero(rb - bb) is True, w,
             f"the recorded α = {a}, β = {bb} are σ's", f"recorded α = {arg.get('alpha')!r}, β = {arg.get('beta')!r}")
    case = arg.get("case")
    _require(ctx, case in CASES, w, f"the case is one of {', '.join(CASES)}", f"recorded {case!r}")
    af, bf = Fraction(int(a.p), int(a.q)), Fraction(int(bb.p), int(bb.q))
    if b.get("verdict") == "not_absorbable":
        _nondegenerate(ctx, w, block)  # (necessity only: the flip witness below is checked without it)
        from absorb.verify._relu2_linear import sigma_form

        size_bound(ctx, w, block, (af, Fraction(0)) if bf == 0 and sigma_form(act, af, Fraction(0)) else None)
        _require(ctx, case in ("rank", "gram", "enumerate", "index-set", "linear"), w,
                 "a not_absorbable verdict rests on the rank, the Gram, the enumeration, the lifted index-set or the "
                 "linear route")
        if case == "gram":
            return _check_gram(ctx, w, block, arg.get("mu"), gram_s2, "(Q)")
        if case == "linear":
            return check_linear(ctx, w, b, block, *linear_rows(block, af, bf))
        if case == "index-set":
            Uf = np.asarray(block.W_up, dtype=np.float64)
            cf = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
            V = np.array([np.concatenate([np.outer(u, u).ravel(), (2 * float(af) * ci + float(bf)) * u]) for u, ci in zip(Uf, cf)])
            A = np.array([np.concatenate([np.outer(abs(u), abs(u)).ravel(), (2 * abs(float(af) * ci) + abs(float(bf))) * abs(u)])
                          for u, ci in zip(Uf, cf)])
            return check_lifted(ctx, w, b, V, np.asarray(block.W_down, dtype=np.float64), np.asarray(block.M, dtype=np.float64), A)
        bound = _rank_bound(block) if case == "rank" else _enumeration_bound(block, af, bf)
        if bound is None:  # (the checker's own bound declined: too many sets, or entries out of its range)
            ctx.report.unchecked(w, f"every index set S is at relative distance > τ from (Q) and (L) ({case})",
                                 "this checker's own bound declined on this block")
            return "not_absorbable", None, 0.0
        bar = bar2(ctx, block.n, block.M)
        _require(ctx, bound > bar, w,
                 f"every index set S is at relative distance > {bar:.3g} = max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F) from (Q) and (L) "
                 f"({case}, re-derived here)",
                 f"lower bound {bound!r}")
        scaled2(ctx, w, bound, block.n, block.M)
        return "not_absorbable", None, 0.0
    _require(ctx, case == "relu2-flip", w, "an absorbable verdict comes with the degree-2 flip")
    _require(ctx, bb == 0, w, "β = 0 (σ(z) + σ(−z) is even, so a flip identity needs it)", f"β = {bb}")
    kk = _square_flip(act, a)
    _require(ctx, kk is not None, w, f"σ(z) + σ(−z) = {a}·z² + k for every real z, k = 2σ(0) rational (by pieces)")
    k = Fraction(int(kk.p), int(kk.q))  # type: ignore[union-attr]
    wit = b.get("witness") or {}
    S = wit.get("S")
    _require(ctx, isinstance(S, list) and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < block.n for i in S)
             and len(set(S)) == len(S), w, f"S is a set of distinct hidden units in 0..{block.n - 1}")
    wb = _flip(block, sorted(S), af, k)
    exact_f0 = (af, k) == (1, 0) and _is_relu2(act)  # σ(c) = max(c, 0)²: f(0) exactly
    q, rho, R0, f0, s1, s2, dist = _exact_gram.relu2_flip(block, wb, sorted(S), af, k, None if exact_f0 else Fraction(_f0_lower(block)))
    return accept_exact_flip(ctx, w, wit, wb, rho, R0, f0, linear=f"‖M + 2·{a}·Σ_S c_i w_i u_iᵀ‖_∞",
                             bias=f"|b_down + Σ_S ({a}·c_i² + {k}) w_i − b'_down|_∞", quadratic="L",
                             quad=(q, s1, s2, dist))


def accept_exact_flip(ctx: _Ctx, w: str, wit: dict[str, Any], wb: Block, rho: Fraction, R0: Fraction, f0: Fraction,
                      *, linear: str, bias: str, quadratic: str,
                      quad: tuple[Fraction, Fraction, Fraction, float] | None = None) -> tuple[str, Block, InfNorm]:
    """The end of every skeleton flip witness's check, from its exact residuals: ρ = ‖M + (the
    flipped units' linear part)‖∞ and R0 = |the moved bias's error|∞ against f0 ≤ |f(0)|∞ (a lower
    bound or the value), both within τ + 1000·ε·√(n+1) (relative to |f(0)| for R0); the recorded
    exactness, residual and witness hashes must match what was rebuilt here.

    ``quad`` = (q, s₁, s₂, r) for a degree-2 flip: f − g has a quadratic part bounded by q|x|²_∞,
    which must vanish exactly (q = 0): a quadratic error of any size eventually exceeds
    τ(|f(x)|∞ + |x|∞ + |f(0)|∞) where f grows only linearly, so it is no witness within the tolerance."""
    allowance = Fraction(rounding_allowance(wb.n))
    thr = Fraction(ctx.tol) + allowance
    q = quad[0] if quad is not None else Fraction(0)
    # (a quadratic part of f − g that is not exactly 0 is no error within τ(|f(x)|∞ + |x|∞ + |f(0)|∞): where f grows
    # only linearly it eventually exceeds it, whatever its size)
    _require(ctx, q == 0, w, f"the quadratic part of f − g ({quadratic}) is exactly 0", f"≤ {float(q):.3g}·|x|²_∞")
    _require(ctx, rho <= thr, w, f"{linear} ≤ τ + the rounding allowance (exact)", f"{float(rho):.3g}")
    _require(ctx, R0 == 0 or R0 <= thr * f0, w, f"{bias} ≤ (τ + allowance)·|f(0)|_∞ (exact)",
             f"{float(R0):.3g} against |f(0)| ≥ {float(f0):.3g}")
    exact = q == 0 and rho == 0 and R0 == 0
    _require(ctx, wit.get("exact") in (None, exact), w, "the recorded exactness matches", f"recorded {wit.get('exact')!r}")
    _require(ctx, exact or wit.get("eval_error") != 0, w, "a witness that is not exact records a nonzero error",
             f"recorded {wit.get('eval_error')!r}")
    res = wit.get("residual")
    _require(ctx, res is None or (isinstance(res, (int, float)) and not isinstance(res, bool) and 0 <= res < math.inf
                                  and (res == 0) == (rho == 0)), w,
             f"the recorded residual is finite and ≥ 0 (0 iff ({quadratic}) holds exactly)", f"recorded {res!r}")
    recs = (wit.get("block") or {}).get("weights")
    if recs is not None:
        mine = _block_arrays(wb)
        _require(ctx, isinstance(recs, dict) and set(recs) == set(mine) and all(
            isinstance(recs[k], dict) and recs[k].get("sha256") == sha256_f64(v) for k, v in mine.items()), w,
                 "the witness block is the flip of S rebuilt here (SHA-256)")
    return "absorbable", wb, InfNorm(float(rho) * (1 + 1e-12), float(q) * (1 + 1e-12))


def check_lifted(ctx: _Ctx, w: str, b: dict[str, Any], V: np.ndarray, D: np.ndarray, M: np.ndarray,
                 A: np.ndarray, p: int | None = None, cols: str = "the lifted columns", linear: bool = False
                 ) -> tuple[str, None, float]:
    """The lifted index-set route: unit i's stacked column (its quadratic and its linear part) is
    vec(w_i v_iᵀ) up to the order of entries, v_i = row i of ``V`` (built by the caller from
    the weights), so "no S within τ of (Q) and (L)" is the index-set statement for the block
    with up rows v_i, down columns w_i (padded with zero rows to a square p × p problem) and
    target [0 | −M] (padded likewise): the recorded search's proof is re-checked on it by the
    index-set checker (a dual matrix, re-enumeration, lattice or meet-in-the-middle). V is
    rounded here (≤ 4 roundings an entry, A bounding the exact entries' magnitudes), so the
    proof, about the rounded problem, must also beat the tolerance by the rounding's effect,
    Σ_i ‖w_i‖(γ₄‖A_i‖ + √p·2^-1070) / ‖M‖_F (bounded here, generously; ``A`` may be any array
    whose rows' norms bound those of the magnitudes, with p, the rows' length, given then)."""
    from absorb.model.activations import get_activation
    from absorb.verify._infeasible import _check_infeasible

    search = b.get("search") or {}
    _require(ctx, search.get("status") == "infeasible", w, f"the index-set search over {cols} proved infeasibility",
             f"search status {search.get('status')!r}")
    n, p = V.shape[0], V.shape[1] if p is None else p
    _require(ctx, p == V.shape[1], w, "the lifted rows have the stated length", f"{V.shape[1]} entries, stated {p}")
    d = D.shape[0]
    if p == d:  # a square problem already: no padding (and no copy of D)
        Dp, Tp = D, -M
    else:
        Dp = np.vstack([D, np.zeros((p - d, n))])
        Tp = np.zeros((p, p))
        Tp[:d, p - d:] = -M
    with np.errstate(over="ignore", invalid="ignore"):
        err = _gamma(4) * np.sqrt(np.sum(A * A, axis=1)) + math.sqrt(p) * 2.0**-1070
        top = float(np.max(np.abs(M))) if M.size else 0.0  # ‖M‖_F from M scaled by its largest entry: no square under- or overflows
        nm = top * float(np.sqrt(np.sum((M / top) ** 2))) * (1 - 1e-12) if top > 0 else 0.0
        slack = float(np.sqrt(np.sum(D * D, axis=0)) @ err) * 1.02 / nm if nm > 0 else math.inf
    claimed = search.get("bound")
    bar = bar2(ctx, n, M, linear)  # (the block's own d and ‖M‖_F, not the padded problem's)
    _require(ctx, isinstance(claimed, (int, float)) and math.isfinite(slack) and claimed - slack > bar, w,
             f"the recorded bound exceeds the distance bar max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F) = {bar:.3g} by more than the "
             f"rounding of {cols}", f"bound {claimed!r}, rounding allowance {slack:.3g}")
    scaled2(ctx, w, claimed - slack, n, M, linear)
    _check_infeasible(ctx, w, Block(V, Dp, get_activation("identity"), skip=-Tp), search, Tp, bar=bar + slack, rec_bar=bar)
    return "not_absorbable", None, 0.0


def linear_rows(block: Block, a: Fraction, b: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """(V, r): the up rows of the linear condition (L) alone, v_i = (2a c_i + b)·u_i, rounded here
    (fl(a), ·2, ·c_i, fl(b), +, ·u: each exact entry's two terms meet at most four roundings, so
    |V̂ − V| ≤ γ₄(2|a||c_i| + |b|)|u_i|), and r_i ≥ ‖(2|a||c_i| + |b|)|u_i|‖₂ in float (its
    rounding is inside the 2 % :func:`check_lifted` adds)."""
    U = np.asarray(block.W_up, dtype=np.float64)
    c = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(all="ignore"):
        V = np.multiply(U, (2 * float(a) * c + float(b))[:, None])
        r = (2 * abs(float(a)) * np.abs(c) + abs(float(b))) * np.sqrt(np.einsum("ij,ij->i", U, U))
    return V, r


def check_linear(ctx: _Ctx, w: str, b: dict[str, Any], block: Block, V: np.ndarray, r: np.ndarray) -> tuple[str, None, float]:
    """The linear route (docs/results/skeleton2.md): (L) — or (Lg) — alone is necessary, and an S's
    distance from both conditions is at least its distance from (L) alone (the stacked residual
    contains (L)'s), so the recorded proof that every S of the square index-set problem (up rows
    v_i = row i of ``V``, built by the caller from the weights; down columns w_i; target −M) is
    farther than τ + the rounding of V proves the claim. Re-checked by :func:`check_lifted` on
    that problem, ``r`` bounding the rows' magnitudes (an n × 1 array: its row norms are r)."""
    _require(ctx, V.shape == (block.n, block.d) and np.all(np.isfinite(V)) and np.all(np.isfinite(r)), w,
             "the linear condition's rows are finite (an n × d problem)")
    return check_lifted(ctx, w, b, V, np.asarray(block.W_down, dtype=np.float64), np.asarray(block.M, dtype=np.float64),
                        np.asarray(r, dtype=np.float64)[:, None], p=block.d, cols="the linear condition's rows", linear=True)


def _check_gram(ctx: _Ctx, w: str, block: Block, mu: Any, build: Any, name: str) -> tuple[str, Block | None, float]:
    """The Gram route, re-derived here: :func:`gram_bound` (Sylvester's law of inertia) up to
    :data:`GRAM_MAX_N` units, :func:`absorb.verify._gram.large_positive_definite` (Gershgorin or
    the Cholesky criterion, by row blocks) up to :data:`absorb.verify._gram.LARGE_MAX_N`;
    declined (not re-checked) beyond, or when d·d(d+1)/2 < n (the columns are then dependent)."""
    n, d = block.n, block.d
    bar = bar2(ctx, n, block.M)
    claim = f"every index set S is at relative distance > {bar:.3g} = max(τ, √d·(τ + allowance)·(1 + K)/‖M‖_F) from {name} (Gram route: QᵀQ − μI positive definite)"
    if n > _gram.LARGE_MAX_N:
        ctx.report.unchecked(w, claim, f"n = {n} > {_gram.LARGE_MAX_N}: the checker declines the Gram route at this size")
        return "not_absorbable", None, 0.0
    _require(ctx, n <= d * d * (d + 1) // 2, w, "n ≤ d·d(d+1)/2 (else the columns are dependent)")
    if n > GRAM_MAX_N:
        bound, why = _gram.mu_bound(mu, block.M, lambda m: _gram.large_positive_definite(block, m))
        how = "Gershgorin discs or the float Cholesky criterion"
    else:
        bound, why = gram_bound(build(block), mu, block.M)
        how = "Sylvester's law of inertia"
    _require(ctx, bound is not None and bound > bar, w, claim + f", re-derived here by {how}",
             why or f"lower bound {bound!r}")
    scaled2(ctx, w, bound, n, block.M)
    return "not_absorbable", None, 0.0


def size_bound(ctx: _Ctx, w: str, block: Block, form: tuple[Fraction, Fraction] | None, lip: float | None = None) -> None:
    """K ≥ f's size for the degree-2 routes' distance bar (:mod:`absorb.verify._growth2`), required finite and kept
    for :func:`bar2` (``form``: σ = α·ReLU² + β·z where checked; ``lip``: a gated block's gate Lipschitz constant)."""
    from absorb.verify import _growth2

    K, KL, why = _growth2.gated_gain(block, lip) if block.gated else _growth2.ungated_gain(block, form)
    _require(ctx, K is not None, w, "f's size is bounded (|f(x) − f(0)|∞ ≤ L|x|∞ + Q|x|²∞, f's quadratic part at "
             f"infinity ≤ Q∞|x|²∞: K = K_L + √d·Q∞ = {K if K is not None else math.inf:.4g}), so a distance bar excludes "
             "every flip whose error is within the tolerance in f's measure", why)
    ctx.once["gain2"], ctx.once["gain2_linear"] = K, KL
    if K is not None and KL is not None:  # (c·g for real c: f − g is quadratic, so f's third differences bound it)
        from absorb.verify._numerics import rounding_allowance
        from absorb.verify._scaled import needed_gains

        thr = ctx.tol + rounding_allowance(block.n)
        (ctx.once["gain2s"], ctx.once["gain2s_linear"]), ctx.once["nu2"] = needed_gains(
            block, (K, KL), thr, ctx.seed, form is not None and not block.gated, 3)


def scaled2(ctx: _Ctx, w: str, bound: Any, n: int, M: np.ndarray, linear: bool = False) -> None:
    """A degree-2 distance that clears :func:`bar2` but not the bar with every scaled candidate c·g counted
    (:func:`absorb.verify._scaled.needed_gain`, third differences: sampled) leaves the verdict not fully checked."""
    K2 = ctx.once.get("gain2s_linear" if linear else "gain2s")
    if K2 is None:
        return
    wide = distance_bar(ctx.tol, n, M, K2)
    if not (isinstance(bound, (int, float)) and bound > wide):
        ctx.report.unchecked(w, "the distance also excludes every candidate scaled by a real c (f − c·g = (1 − c)·f + c·(f − g), "
                             "f − g quadratic)", f"bound {bound!r}, bar with f's sampled third differences ν = "
                             f"{ctx.once.get('nu2', 0.0):.3g}: {wide:.6g}")


def bar2(ctx: _Ctx, n: int, M: np.ndarray, linear: bool = False) -> float:
    """The degree-2 routes' distance bar: :func:`distance_bar` with the K of :func:`size_bound` (inf without one);
    ``linear``: for a distance from the linear condition alone, with K_L (a candidate's quadratic residual is not
    part of it)."""
    return distance_bar(ctx.tol, n, M, ctx.once.get("gain2_linear" if linear else "gain2", math.inf))
