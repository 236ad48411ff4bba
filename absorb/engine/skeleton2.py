"""The degree-2 skeleton (beyond the paper; docs/results/skeleton2.md).

For an ungated σ with σ(s) = αs² + βs + o(s) as s → +∞ (α ≠ 0) and σ(s) = o(s) as s → −∞
(ReLU², GELU², SiLU², softplus²; proved by the asymptotic calculus,
:func:`absorb.symbolic.growth.quadratic_skeleton`), and nondegenerate weights (d ≥ 2, rows
of W_up nonzero and pairwise non-collinear, columns of W_down nonzero), a residual-free
block g of the same kind and width, with or without biases, equals
f(x) = Mx + W_down σ(W_up x + b_up) + b_down only if some index set S has

    (Q)  Σ_{i∈S} w_i ⊗ u_i u_iᵀ = 0               (a d×d×d tensor)
    (L)  M = −Σ_{i∈S} (2α c_i + β) w_i u_iᵀ        (c = b_up, 0 when absent)

For σ with σ(z) + σ(−z) = αz² + k for every real z (ReLU²: α = 1, k = 0; then β = 0;
:func:`square_flip`) the condition is also sufficient: negating (u_i, c_i, w_i) for i in S
changes the block by −Σ_S w_i (α(u_i·x + c_i)² + k), which (Q) and (L) reduce to a constant
that b'_down absorbs.

The search runs over the stacked columns k_i = (vec(w_i ⊗ u_i u_iᵀ), (2αc_i + β)·vec(w_i u_iᵀ))
against the target t = (0, −vec M), with the distance of S measured as ‖K 1_S − t‖₂ / ‖M‖_F:

* the *rank route*: the exact Gram matrix G = QᵀQ of the (Q) columns minus μI is positive
  definite (exact: Sylvester's criterion over the integers), so ‖Q 1_S‖² ≥ μ|S| for every S; with μ > tol²‖M‖²_F
  only S = ∅ is within the tolerance, and S = ∅ leaves (L) as M = 0 (distance 1). This is
  the generic case (n ≤ d·d(d+1)/2, any size the exact arithmetic allows);
* the *enumeration route* (n ≤ :data:`ENUMERATE_MAX_N`): every S, with a rigorous
  floating-point lower bound on its distance;
* the *Gram route* and the *lifted index-set route* (below);
* the *linear route* (:func:`linear_route`): (L) alone, an ordinary square index-set problem
  (up rows (2αc_i + β)·u_i, down columns w_i, target −M) — first at model size
  (:func:`linear_first`), a fallback otherwise. No S within tol of (L) proves ``not_absorbable`` (an S's
  distance from both conditions is at least its distance from (L)); a found S goes to the flip
  witness, whose exact check decides (Q);
* the *null-space route* (:func:`nullspace_route`), when none of these found an S or proved none:
  a planted S makes the (Q) Gram matrix singular with 1_S in its null space, so the 0/1 vectors
  of its float null space, ranked by (L), are candidates for the flip witness (never
  ``not_absorbable``).

Beyond these the answer is ``unknown`` naming what failed. Degenerate weights fail a
hypothesis of necessity only: no ``not_absorbable``, but an S found by a route that can find one
(:func:`degenerate_flip`) still gets its flip witness, which needs no nondegeneracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from absorb.engine import _gram
from absorb.engine import hypotheses as hyp
from absorb.engine._growth2 import set_gain, ungated_gain
from absorb.engine.verdict import BlockDecision, Theorem, Verdict, Witness
from absorb.engine.witness import builtin_name, eval_failure, eval_threshold, evaluation_error, f0_lower
from absorb.model.block import Block
from absorb.rigorous import UNIT_ROUNDOFF, frobenius_bounds, gamma, magnitudes_ok
from absorb.search._types import SearchResult, SearchStatus
from absorb.symbolic import growth

ENUMERATE_MAX_N = 16
"""The enumeration route tries every S up to this width (2^16 sets)."""
EXACT_MAX_N = 48
"""The rank route's exact positive-definiteness test runs up to this width."""
MAX_COLUMN_ENTRIES = 2_000_000
"""d³·n above this: the stacked columns are not built (unknown)."""

_RELU2 = sp.Max(0, sp.Symbol("x", real=True)) ** 2


@dataclass(frozen=True)
class Quadratic:
    """σ(s) = αs² + βs + o(s) at +∞, o(s) at −∞ (exact rationals)."""

    alpha: Fraction
    beta: Fraction


@dataclass(frozen=True)
class SquareFlip:
    """σ(z) + σ(−z) = αz² + k for every real z (exact rationals; :func:`square_flip`)."""

    alpha: Fraction
    k: Fraction


RELU2_FLIP = SquareFlip(Fraction(1), Fraction(0))


def relu2_multiple_form(block: Block) -> tuple[Fraction, Fraction] | None:
    """(α, 0) where σ = α·ReLU² exactly (the built-in, or a piecewise-polynomial spelling proved so by
    :func:`absorb.symbolic.relu2_linear.relu2_multiple`); None otherwise."""
    if builtin_name(block.activation) == "relu2":
        return Fraction(1), Fraction(0)
    from absorb.symbolic.relu2_linear import relu2_multiple

    a = relu2_multiple(block.activation)
    return None if a is None else (Fraction(int(a.p), int(a.q)), Fraction(0))


def is_relu2(block: Block) -> bool:
    """σ is exactly ReLU(z)² (then |f(0)| is computed exactly: σ(c) = max(c, 0)²)."""
    return sp.simplify(block.activation.expr - _RELU2) == 0


def square_flip(block: Block, q: Quadratic) -> SquareFlip | str:
    """σ's proved identity σ(z) + σ(−z) = αz² + k (:func:`absorb.symbolic.properties.square_flip`),
    with α the skeleton's and β = 0 (both follow from the identity: σ(s) + σ(−s) = αs² + βs + o(s)
    at +∞ is even), α and k rational; else why the flip witness does not exist."""
    from absorb.symbolic import properties as props

    pr = props.square_flip(block.activation)
    if not pr.proved:
        return f"the flip witness needs σ(z) + σ(−z) = α·z² + k for every real z ({pr.statement})"
    a, k = pr.value["a"], pr.value["k"]
    if not (isinstance(a, sp.Rational) and isinstance(k, sp.Rational)):
        return f"σ(z) + σ(−z) = {a}·z² + {k}, but a, k are not rational, so its flip cannot be checked exactly"
    sq = SquareFlip(Fraction(int(a.p), int(a.q)), Fraction(int(k.p), int(k.q)))
    if sq.alpha != q.alpha or q.beta != 0:  # (cannot happen when both are proved)
        return f"σ(z) + σ(−z) = {a}·z² + {k}, inconsistent with the skeleton's α = {q.alpha}, β = {q.beta}"
    return sq


# ---------------------------------------------------------------------------- columns --
def columns(block: Block, q: Quadratic) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, L, t): Q (d³×n) with column i = vec(w_i ⊗ u_i u_iᵀ), L (d²×n) with column
    i = (2αc_i + β)·vec(w_i u_iᵀ), and t = −vec M, in float64."""
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    n = U.shape[0]
    c = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    Q = np.einsum("ai,ib,ic->abci", D, U, U).reshape(-1, n)
    scale = 2 * float(q.alpha) * c + float(q.beta)
    L = (np.einsum("ai,ib->abi", D, U) * scale).reshape(-1, n)
    return Q, L, -M.reshape(-1)


def _frac(a: np.ndarray) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)]


def exact_q_columns(block: Block, units: tuple[int, ...] | None = None) -> list[list[Fraction]]:
    """The (Q) columns in exact rationals: column i = vec(w_i ⊗ u_i u_iᵀ), for every unit or
    for ``units`` only (d³ rationals each: a flip witness needs S's alone)."""
    Uf, Df = np.asarray(block.W_up, dtype=np.float64), np.asarray(block.W_down, dtype=np.float64)
    out = []
    for i in range(Uf.shape[0]) if units is None else units:
        u, w = _frac(Uf[i]), _frac(Df[:, i])
        out.append([x * a * b for x in w for a in u for b in u])
    return out


def ldl_positive_definite(G: list[list[int]]) -> bool:
    """Whether the symmetric integer matrix G is positive definite: Sylvester's criterion, the
    leading principal minors being the pivots of fraction-free (Bareiss) elimination, all in
    exact integers (no rational growth)."""
    A = [row[:] for row in G]
    n, prev = len(A), 1
    for k in range(n):
        p = A[k][k]
        if p <= 0:  # the (k+1)-th leading principal minor
            return False
        Ak = A[k]
        for i in range(k + 1, n):
            Ai = A[i]
            aik = Ai[k]
            for j in range(k + 1, n):
                Ai[j] = (Ai[j] * p - aik * Ak[j]) // prev  # exact (Bareiss)
        prev = p
    return True


def shifted_positive_definite(G: np.ndarray, m: int) -> bool:
    """Whether G − mI is positive definite (G a symmetric integer matrix, m ≥ 0), proved exactly
    on fewer bits: with G = 2^k G' + R, G' = ⌊G / 2^k⌋ entrywise, R symmetric with 0 ≤ R_ij < 2^k,
    ‖R‖₂ ≤ max_i Σ_j |R_ij| < n·2^k, so λ_min(G − mI) ≥ 2^k λ_min(G') − m − ‖R‖₂ > 0 once
    G' − (⌈m / 2^k⌉ + n)I is positive definite (:func:`ldl_positive_definite`; k = 0: G − mI). k keeps that
    extra shift n·2^k below m·2^-30: the minors of G' have ~n·log₂(‖G‖/m) bits, not n times the
    bits of G's entries (the dyadic integers of float weights: hundreds)."""
    n = G.shape[0]
    k = max(0, m.bit_length() - 31 - n.bit_length())
    shift = -((-m) >> k) + n if k else m  # ⌈m / 2^k⌉ + n (k = 0: G itself, R = 0)
    return ldl_positive_definite([[(int(G[i, j]) >> k) - (shift if i == j else 0) for j in range(n)] for i in range(n)])


def rank_route(block: Block, tol: float) -> SearchResult | None:
    """The rank route for the degree-2 skeleton's (Q) columns (:func:`rank_route_gram` on
    :func:`exact_gram`: n²·d integer products, no d³-long column)."""
    n, d = block.n, block.d
    if n > EXACT_MAX_N or n > d * d * (d + 1) // 2:
        return None
    U, D = dyadic_ints(np.asarray(block.W_up, dtype=np.float64)), dyadic_ints(np.asarray(block.W_down, dtype=np.float64))
    return rank_route_gram(*exact_gram(D, U, U), block.M, tol)


def rank_route_gram(G: np.ndarray, e: int, M: np.ndarray, tol: float) -> SearchResult | None:
    """The rank route over the exact Gram matrix G / 2^e = QᵀQ of columns q_i (the conditions'
    homogeneous part; G an n×n integer object array, :func:`exact_gram`): a rational μ with
    G − μI positive definite (exact positive-definiteness test) and μ > tol²‖M‖²_F, so every
    nonempty S has ‖Q 1_S‖ ≥ √μ > tol‖M‖_F, and S = ∅ is at distance 1 (the target's other part
    is −M); None when it does not apply."""
    n = G.shape[0]
    if n == 0 or n > EXACT_MAX_N:
        return None
    scale = 1 << e
    try:  # (a float guess of λ_min; the proof below is exact)
        Gf = np.array([[float(Fraction(int(v), scale)) for v in row] for row in G])
        lam = float(np.linalg.eigvalsh(Gf)[0])
    except (np.linalg.LinAlgError, OverflowError):  # (entries past float64's range: no guess, no route)
        return None
    if not (math.isfinite(lam) and lam > 0):
        return None
    M2 = sum(v * v for v in _frac(M))
    mi = math.floor(Fraction(lam / 2) * scale)  # μ = mi / 2^e, rounded down
    mu = Fraction(mi, scale)
    if not mu > Fraction(tol) ** 2 * M2:
        return None
    if not shifted_positive_definite(G, mi):
        return None
    try:
        bound = min(1.0, math.sqrt(float(mu / M2)) * (1 - 1e-12))
    except OverflowError:  # μ/‖M‖² past float64: the bound is 1 (S = ∅), certainly above it
        bound = 1.0 - 1e-12
    return SearchResult(SearchStatus.INFEASIBLE, "rank", "the columns of the homogeneous condition are linearly independent: "
                        "only S = ∅ satisfies it, and S = ∅ leaves M = 0", bound=bound,
                        certificate={"route": "rank", "mu": str(mu)})


def enumeration_why(n: int) -> str:
    """Why the exhaustive search over index sets decided nothing (for an unknown's reason)."""
    if n > ENUMERATE_MAX_N:
        return f"n = {n} > {ENUMERATE_MAX_N} is beyond exhaustive search"
    return (f"the exhaustive search over its 2^{n} index sets bounded none of them (it runs where its columns' entries lie "
            f"in [2^-{_ENUMERATION_EXPONENT}, 2^{_ENUMERATION_EXPONENT}] and the skip's norm is finite: float64 norms of "
            "them neither overflow nor underflow)")


def enumeration_route(block: Block, q: Quadratic, tol: float) -> SearchResult | None:
    """The enumeration route over the degree-2 skeleton's stacked columns (:func:`enumeration_route_columns`)."""
    if block.n > ENUMERATE_MAX_N:
        return None
    Q, L, t = columns(block, q)
    U, D = (np.abs(np.asarray(a, dtype=np.float64)) for a in (block.W_up, block.W_down))
    c = np.zeros(block.n) if block.b_up is None else np.abs(np.asarray(block.b_up, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):  # (an overflow shows as inf: no route)
        AL = (np.einsum("ai,ib->abi", D, U) * (2 * abs(float(q.alpha)) * c + abs(float(q.beta)))).reshape(-1, block.n)
    return enumeration_route_columns(np.vstack([Q, L]), np.concatenate([np.zeros(Q.shape[0]), t]), tol,
                                     A=np.vstack([np.abs(Q), AL]))


_ENUMERATION_EXPONENT = 400
"""Every nonzero entry of the enumeration's columns and target within [2^-400, 2^400]: the squares in
its norms then neither overflow nor underflow (n ≤ 16 units, a few hundred rows)."""


def _enumeration_range(K: np.ndarray, tt: np.ndarray) -> bool:
    for x in (K, tt):
        a = np.abs(x)
        if not np.all(np.isfinite(a)) or a.max(initial=0.0) > 2.0**_ENUMERATION_EXPONENT \
                or np.any((a > 0) & (a < 2.0**-_ENUMERATION_EXPONENT)):
            return False
    return True


def enumeration_route_columns(K: np.ndarray, tt: np.ndarray, tol: float, A: np.ndarray | None = None) -> SearchResult | None:
    """Every S (n ≤ ENUMERATE_MAX_N) against the stacked columns K (rows × n) and target tt
    (whose nonzero part is −vec M): the S with the least float distance, when ≤ tol, is ``found``;
    otherwise ``infeasible`` when each S's rigorous lower bound exceeds tol. The lower bound:
    each entry of K̂ is within γ₅A of the exact one (at most four roundings; A ≥ |K̂| bounds
    the absolute values of the products an entry sums — a sum such as g_b u_c + u_b g_c or
    2αc_i + β may cancel, and its error is relative to its terms, not to K̂; A = |K̂| when
    every entry is one product), and each entry of K̂1_S − t is summed with error
    ≤ γ_{n+1}(A1_S + |t|), so with g = γ_{max(n+7, rows+2)} (≥ γ₅ + γ_{n+1} + their product,
    and the norms' rounding) ‖K1_S − t‖ ≥ ‖r̂‖(1 − g) − g(1 + g)²‖A1_S + |t|‖^, over an upper
    bound of ‖M‖_F."""
    n = K.shape[1]
    if n > ENUMERATE_MAX_N:
        return None
    A = np.abs(K) if A is None else A
    if not (_enumeration_range(K, tt) and _enumeration_range(A, tt)):
        return None
    nM = frobenius_bounds(tt)[1]  # (an upper bound: a rounded-down ‖M‖ would raise every lower bound)
    if not (math.isfinite(nM) and nM > 0):
        return None
    g = gamma(max(n + 7, K.shape[0] + 2))  # entries, sums and the norms' own rounding
    tiny = math.sqrt(K.shape[0]) * n * 2.0**-1070  # an entry of K̂ that underflowed is off by ≤ 4·2^-1074 besides γ₅|K̂|
    found, best, lowest = None, math.inf, math.inf
    idx = np.arange(n)
    for start in range(0, 1 << n, 4096):
        codes = np.arange(start, min(1 << n, start + 4096))
        B = ((codes[:, None] >> idx[None, :]) & 1).astype(np.float64)
        r = np.linalg.norm(B @ K.T - tt[None, :], axis=1)
        a = np.linalg.norm(B @ A.T + np.abs(tt)[None, :], axis=1)
        lo = (r * (1 - g) - g * (1 + g) ** 2 * a - tiny) / (nM * (1 + g))
        if not np.all(np.isfinite(lo)):  # (an overflowed residual proves nothing: min() would skip a nan)
            return None
        dist = r / nM
        hit = np.flatnonzero(dist <= tol)
        if hit.size and float(dist[hit].min()) < best:  # the nearest S: with large biases (L) outweighs (Q) in this
            j = int(hit[np.argmin(dist[hit])])  # distance, and an S off (Q) by O(1) can sit within tol before the exact one
            found, best = tuple(int(i) for i in np.flatnonzero(B[j])), float(dist[j])
        lowest = min(lowest, float(lo.min()))
    if found is not None:
        return SearchResult(SearchStatus.FOUND, "enumerate", f"S = {list(found)} satisfies both conditions within the tolerance",
                            S=found, residual=best, certificate={"route": "enumerate"})
    if lowest > tol:
        return SearchResult(SearchStatus.INFEASIBLE, "enumerate", f"all {1 << n} index sets checked with rounding bounds",
                            bound=lowest, certificate={"route": "enumerate"})
    return SearchResult(SearchStatus.UNKNOWN, "enumerate", f"an index set is within rounding of the tolerance (lower bound "
                        f"{lowest:.3g} ≤ {tol:g})", certificate={"route": "enumerate"})


# ------------------------------------------------------------------------- gram route --
GRAM_MAX_N = 4096
"""The Gram route's float Cholesky runs up to this width (n² float64 entries, a few n³ flops)."""
_GRAM_TINY = 2.0**-1000
"""An absolute term in every entry's error bound: it covers the ≤ 4 underflowed roundings
(each ≤ 2^-1074) a Gram entry can meet after a cancellation (inputs in the range of
:func:`absorb.rigorous.magnitudes_ok`; an overflow shows as a non-finite entry: None)."""


def _symmetric(A: np.ndarray) -> np.ndarray:
    """A's lower triangle mirrored (the exact Gram matrix is symmetric; only the lower
    triangle of the float one is used, and its error bound holds entrywise)."""
    L = np.tril(A)
    return L + np.tril(A, -1).T


def gram_skeleton2(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """(Ĝ, E): the Gram matrix of the (Q) columns q_i = vec(w_i ⊗ u_i u_iᵀ) in float64, without
    the columns, and an entrywise bound |G − Ĝ| ≤ E for the exact G of these float64 weights.

    The identity: ⟨a ⊗ A, b ⊗ B⟩ = Σ_{k,l,m} a_k A_lm b_k B_lm = (a·b)⟨A, B⟩_F, and
    ⟨u uᵀ, v vᵀ⟩_F = Σ_{l,m} u_l u_m v_l v_m = (u·v)², so G_ij = (w_i·w_j)(u_i·u_j)².

    The bound: Ŵ = fl(DᵀD), Û = fl(UUᵀ) have |Ŵ − W| ≤ γ_d·|D|ᵀ|D| and |Û − U| ≤ γ_d·|U||U|ᵀ
    entrywise (Higham 3.5, a length-d dot product in any order, FMA or not); Ĝ = fl(fl(Ŵ·Û)·Û).
    For factors x̂_k = x_k + δ_k with |δ_k| ≤ γ_d X_k, X_k ≥ |x_k|, |Π x̂_k − Π x_k| ≤ Π X_k(1 + γ_d)
    − Π X_k (expand the product: every term is ≤ its counterpart with |x|, |δ| raised to X,
    γ_d X), and the two rounded products add a relative γ₂; so |Ĝ_ij − G_ij| ≤
    ((1 + γ_d)³(1 + γ₂) − 1)·P_ij ≤ γ_{3d+2}·P_ij with P = (|D|ᵀ|D|)∘(|U||U|ᵀ)∘(|U||U|ᵀ) exact.
    The same analysis for the nonnegative P̂ (its float value) gives P ≤ P̂/(1 − γ_{3d+2}) ≤ 2P̂,
    so E = 3γ_{3d+2}·P̂ + 2^-1000 (the factor 3 covering 2 and the rounding of E itself; the
    absolute term the underflows, :data:`_GRAM_TINY`). None when an input is outside the
    range of :func:`absorb.rigorous.magnitudes_ok` or an entry is not finite."""
    U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down))
    if not magnitudes_ok(U, D):
        return None
    d = U.shape[1]
    Wd, Uu = D.T @ D, U @ U.T
    aD, aU = np.abs(D), np.abs(U)
    Wa, Ua = aD.T @ aD, aU @ aU.T
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        G = _symmetric(Wd * Uu * Uu)
        E = _symmetric(3 * gamma(3 * d + 2) * (Wa * Ua * Ua) + _GRAM_TINY)
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(E))):
        return None
    return G, E


def gram_gated(block: Block) -> tuple[np.ndarray, np.ndarray] | None:
    """(Ĝ, E) for the gated (Qg) columns vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)) (as
    :func:`absorb.engine.gated_skeleton.gated_columns` builds them):
    ⟨g uᵀ + u gᵀ, h vᵀ + v hᵀ⟩_F = 2[(g·h)(u·v) + (g·v)(u·h)] (⟨a bᵀ, c eᵀ⟩_F = (a·c)(b·e), four
    terms, equal in pairs), so G_ij = 2(w_i·w_j)[(g_i·g_j)(u_i·u_j) + (g_i·u_j)(u_i·g_j)].
    The bound as in :func:`gram_skeleton2`: each of the two products of three dot products is
    within ((1 + γ_d)³(1 + γ₂) − 1) of its absolute counterpart, their float sum adds γ₁, the
    factor 2 is exact: |Ĝ − G| ≤ γ_{3d+3}·P with P = 2|W|ₐ∘(|G|ₐ∘|U|ₐ + |GU|ₐ∘|GU|ₐᵀ) (the
    products of absolute values), E = 3γ_{3d+3}·P̂ + 2^-1000."""
    Gt, U, D = (np.asarray(a, dtype=np.float64) for a in (block.W_gate, block.W_up, block.W_down))
    if not magnitudes_ok(Gt, U, D):
        return None
    d = U.shape[1]
    aG, aU, aD = np.abs(Gt), np.abs(U), np.abs(D)
    Wd, Wa = D.T @ D, aD.T @ aD
    GG, UU, GU = Gt @ Gt.T, U @ U.T, Gt @ U.T  # GU[i, j] = g_i·u_j
    GGa, UUa, GUa = aG @ aG.T, aU @ aU.T, aG @ aU.T
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        G = _symmetric(2 * Wd * (GG * UU + GU * GU.T))
        E = _symmetric(3 * gamma(3 * d + 3) * (2 * Wa * (GGa * UUa + GUa * GUa.T)) + _GRAM_TINY)
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(E))):
        return None
    return G, E


def gram_lower_bound(G: np.ndarray, E: np.ndarray) -> float | None:
    """A rigorous lower bound of λ_min of every symmetric G' with |G' − G| ≤ E entrywise (G
    symmetric float64), or None.

    s = half the computed λ_min(G) (a float > 0); Â = fl(G − sI) (only the diagonal rounds:
    |(G − sI) − Â| ≤ γ₁|Â| there); L = the float Cholesky factor of Â (numpy; any L will do).
    With A = G − sI exactly and R = A − LLᵀ exactly: C = fl(LLᵀ) has |C − LLᵀ| ≤ γ_n|L||L|ᵀ
    (Higham 3.5); T = fl(|L||L|ᵀ) ≥ (1 − γ_n)|L||L|ᵀ (nonnegative terms); F = fl(Â − C) has
    |Â − C| ≤ (1 + γ₁)|F|. So |R| ≤ γ₁|Â|∘I + (1 + γ₁)|F| + γ_n(1 + 2γ_n)T =: B. LLᵀ ⪰ 0, so
    λ_min(A) ≥ −‖R‖₂ ≥ −‖R‖_F ≥ −‖B‖_F, and λ_min(G) ≥ s − ‖B‖_F; for G', Weyl's inequality
    λ_min(G') ≥ λ_min(G) − ‖G' − G‖₂ ≥ λ_min(G) − ‖E‖_F. The norms are computed in floats and
    raised by (1 + γ_{n²+8}) (a sum of n² nonnegative squares, each square and the root one
    more rounding; B's few entrywise operations add ≤ 4 relative roundings, covered too);
    the final s − r − e is lowered by 4u·s (two subtractions). Underflow: each product in C,
    T, F or a square in a norm that underflows errs by ≤ 2^-1074 absolutely, so the norms err
    by ≤ √(n²(2n + 4)·2^-1074) + 4n²·2^-1074 ≤ n·2^-500 each (n ≤ GRAM_MAX_N), added to both
    (overflow shows as a non-finite value: None). None when G is not finite,
    the estimate is not positive, the Cholesky fails, or the bound is not positive."""
    n = G.shape[0]
    if n == 0 or n > GRAM_MAX_N or not (np.all(np.isfinite(G)) and np.all(np.isfinite(E))):
        return None
    try:
        lam = float(np.linalg.eigvalsh(G)[0])
    except np.linalg.LinAlgError:
        return None
    if not (math.isfinite(lam) and lam > 0):
        return None
    s = lam / 2
    A = G.copy()
    A[np.diag_indices(n)] -= s
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    L = np.tril(L)
    g1, gn = gamma(1), gamma(n)
    aL = np.abs(L)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        B = (1 + g1) * np.abs(A - L @ L.T) + gn * (1 + 2 * gn) * (aL @ aL.T)
    B[np.diag_indices(n)] += g1 * np.abs(np.diag(A))
    up, tiny = 1 + gamma(n * n + 8), n * 2.0**-500  # tiny: the underflows (see the docstring)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        r = float(np.linalg.norm(B)) * up + tiny
        e = float(np.linalg.norm(E)) * up + tiny
    if not (math.isfinite(r) and math.isfinite(e)):
        return None
    mu = (s - r - e) - 4 * UNIT_ROUNDOFF * s
    return mu if mu > 0 else None



def gram_rows_skeleton2(block: Block) -> _gram.LowerGram | None:
    """The (Q) columns' Gram matrix for :func:`gram_route`, by row blocks (any n; the small
    route's (Ĝ, E) of :func:`gram_skeleton2` is built only when n ≤ :data:`GRAM_MAX_N`)."""
    return _gram.lower_gram_skeleton2(block, lambda: gram_skeleton2(block))


def gram_rows_gated(block: Block) -> _gram.LowerGram | None:
    """The (Qg) columns' Gram matrix for :func:`gram_route`, by row blocks (:func:`gram_gated`
    when n ≤ :data:`GRAM_MAX_N`)."""
    return _gram.lower_gram_gated(block, lambda: gram_gated(block))


def gram_route(gram: tuple[np.ndarray, np.ndarray] | _gram.LowerGram | None, M: np.ndarray,
               tol: float) -> SearchResult | None:
    """The rank route's claim at model size: λ_min(G) ≥ μ for the Gram matrix G = QᵀQ of the
    homogeneous condition's columns, so ‖Q 1_S‖² = 1_Sᵀ G 1_S ≥ μ|S| ≥ μ for every S ≠ ∅; with
    μ > tol²‖M‖²_F (exact rationals, ‖M‖_F bounded above by
    :func:`absorb.rigorous.frobenius_bounds`) only S = ∅ is within the tolerance, and S = ∅ is
    at distance 1. μ from :func:`gram_lower_bound` on (Ĝ, E) when n ≤ :data:`GRAM_MAX_N`
    (``gram`` a pair from :func:`gram_skeleton2` / :func:`gram_gated`, or a
    :class:`absorb.engine._gram.LowerGram` from :func:`gram_rows_skeleton2` /
    :func:`gram_rows_gated`), else from :func:`absorb.engine._gram.large_lower_bound`
    (Gershgorin or Rump's Cholesky criterion, n ≤ :data:`absorb.engine._gram.LARGE_MAX_N`).
    The certificate records μ (route ``gram``); None when it does not apply."""
    if gram is None:
        return None
    how = "eigvalsh, Cholesky and its residual"
    if isinstance(gram, _gram.LowerGram):
        if gram.n <= GRAM_MAX_N:
            gram = gram.full()
        elif gram.n <= _gram.LARGE_MAX_N:
            hi = frobenius_bounds(M)[1]
            need = (tol * hi) ** 2 * (1 + 8 * UNIT_ROUNDOFF)
            got = _gram.large_lower_bound(gram, need) if math.isfinite(need) and need > 0 else None
            if got is None:
                return None
            lo, how = got[0], {"gershgorin": "Gershgorin discs", "cholesky": "Rump's Cholesky criterion"}[got[1]]
            return _gram_result(lo, M, tol, how)
        else:
            return None
    if gram is None:
        return None
    lo = gram_lower_bound(*gram)
    return None if lo is None else _gram_result(lo, M, tol, how)


def _gram_result(lo: float, M: np.ndarray, tol: float, how: str) -> SearchResult | None:
    ok, hi = _gram.exceeds(lo, tol, M)
    if not ok:
        return None
    mu = Fraction(lo)
    bound = min(1.0, math.sqrt(lo) / hi * (1 - 1e-12))
    return SearchResult(SearchStatus.INFEASIBLE, "gram", "the Gram matrix of the homogeneous condition's columns is "
                        f"positive definite (λ_min ≥ {lo:.3g}, rigorous float bound: {how}): only S = ∅ satisfies it, "
                        "and S = ∅ leaves M = 0", bound=bound, certificate={"route": "gram", "mu": str(mu)})


# ------------------------------------------------------------------ null-space route --
NULL_TRIES = 3
"""At most this many null-space candidates go to the flip witness's exact check."""


def cached_gram(lg: _gram.LowerGram | None) -> _gram.LowerGram | None:
    """``lg`` with its small route's (Ĝ, E) built once: the Gram route and then the null-space
    route (:func:`null_route_flip`) read the same matrix."""
    import dataclasses
    import functools

    return None if lg is None else dataclasses.replace(lg, full=functools.cache(lg.full))


def nullspace_route(gram: tuple[np.ndarray, np.ndarray] | None, V: np.ndarray, D: np.ndarray, T: np.ndarray,
                    tol: float) -> list[SearchResult]:
    """Candidate S read off the numerical null space of the homogeneous condition's float Gram
    matrix (Ĝ, E) (:func:`absorb.engine._nullspace.null_candidates`: 1_S with Q 1_S = 0 is a
    null vector of G), ranked by the linear condition alone in floats (V, D, T as
    :func:`linear_columns` / the gated counterpart), those within 2·tol (+ rounding) of it only,
    at most :data:`NULL_TRIES`. ``found`` results (method ``nullspace``): candidates for the flip
    witness, whose exact check alone decides; an empty list proves nothing."""
    from absorb.engine import _nullspace

    if gram is None:
        return []
    cands = _nullspace.null_candidates(*gram)
    ranked = [(r, S) for r, S in _nullspace.linear_residuals(cands, V, D, T) if r <= 2 * tol + 1e-9]
    return [SearchResult(SearchStatus.FOUND, "nullspace", f"S = {list(S)} spans the null space of the homogeneous "
                         f"condition's Gram matrix (read in floats) and meets the linear condition within {r:.2e}",
                         S=S, residual=r, certificate={"route": "nullspace"}) for r, S in ranked[:NULL_TRIES]]


def null_route_flip(ctx: Any, lg: _gram.LowerGram | None, lin: tuple[np.ndarray, ...], flip: Any) -> BlockDecision | None:
    """The null-space route (:func:`nullspace_route`) for both handlers, where the other routes found
    no S: each candidate to ``flip(res)`` (the flip witness and its exact check); its decision, or
    None (why each candidate failed goes to ``ctx.notes``). ``lg``: the Gram route's
    (:func:`cached_gram`; only when n ≤ :data:`GRAM_MAX_N`)."""
    if lg is None or lg.n > GRAM_MAX_N:
        return None
    for res in nullspace_route(lg.full(), *lin[:3], ctx.dist_tol):
        out = flip(res)
        if isinstance(out, BlockDecision):
            return out
        ctx.notes.append(f"the null space of the Gram matrix proposed a candidate: {out}")
    return None


# ------------------------------------------------------------------ lifted index-set route --
LIFTED_SECONDS = 10.0
"""The most the index-set engine may spend on the lifted problem past the routes above."""


def pad_lifted(V: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(V, D, T) with D and T padded by zero rows to p = V's width: the index-set problem of a
    square block (d_out = d_in = p), the shape the index-set engine's certificates and the
    checker's re-checks are written for; ‖D[:,S] V[S,:] − T‖_F and ‖T‖_F do not change."""
    p = V.shape[1]
    pad = np.zeros((p - D.shape[0], D.shape[1]))
    return V, np.vstack([D, pad]), np.vstack([T, np.zeros((p - T.shape[0], p))])


def lifted_columns(block: Block, q: Quadratic) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(V, D, T) with the stacked column of unit i equal to vec(w_i v_iᵀ) up to the order of its
    entries: v_i = (vec(u_i u_iᵀ), (2αc_i + β) u_i) (n × p, p = d² + d), D = W_down and
    T = [0 | −M], padded to p rows (:func:`pad_lifted`). So ‖D[:,S] V[S,:] − T‖_F / ‖T‖_F is S's
    distance from (Q), (L) exactly as the routes measure it, and the index-set engine
    (:func:`absorb.search.find_index_set`) searches it. V is rounded (a product, and the linear
    factor's four operations): the fourth array A bounds its entries' magnitudes, so
    |V̂ − V| ≤ γ₄A entrywise (:func:`lifted_slack`)."""
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    n, d = U.shape
    c = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows as inf: no lifted route
        V = np.hstack([np.einsum("ib,ic->ibc", U, U).reshape(n, d * d), (2 * float(q.alpha) * c + float(q.beta))[:, None] * U])
        aU = np.abs(U)
        A = np.hstack([np.einsum("ib,ic->ibc", aU, aU).reshape(n, d * d),
                       (2 * abs(float(q.alpha)) * np.abs(c) + abs(float(q.beta)))[:, None] * aU])
    return (*pad_lifted(V, D, np.hstack([np.zeros((d, d * d)), -M])), A)


def lifted_slack(A: np.ndarray, D: np.ndarray, T: np.ndarray) -> float:
    """How far the rounded lifted problem can sit from the exact one, relative to ‖T‖_F: each
    entry of V̂ is within γ₄A + 2^-1070 of the exact V (at most four roundings; the absolute term
    covers underflow), so for every S, |‖D_S V̂_S − T‖ − ‖D_S V_S − T‖| ≤ Σ_i ‖w_i‖₂ ‖V̂_i − V_i‖₂ ≤
    Σ_i ‖w_i‖₂ (γ₄‖A_i‖₂ + √p·2^-1070) (:func:`slack_from_norms` with a_i = ‖A_i‖₂). A proof that
    every S of the rounded problem is farther than b proves the exact one farther than b − this."""
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.linalg.norm(A, axis=1)
    return slack_from_norms(a, A.shape[1], D, T)


def slack_from_norms(a: np.ndarray, p: int, D: np.ndarray, T: np.ndarray) -> float:
    """Σ_i ‖w_i‖₂ (γ₄ a_i + √p·2^-1070) / ‖T‖_F, raised by 1 % (the float evaluation of this sum;
    inf when not finite), for rows of V with p entries whose magnitudes A_i have ‖A_i‖₂ ≤ a_i
    (:func:`lifted_slack`): the rounded problem's distance of every S is within this of the exact one's."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = gamma(4) * np.asarray(a, dtype=np.float64) + math.sqrt(p) * 2.0**-1070
        num = float(np.sum(np.linalg.norm(D, axis=0) * e))
    den = frobenius_bounds(T)[0]  # (a lower bound: a float ‖T‖ overflowed to inf, or rounded up, would shrink the slack)
    out = num / den * 1.01 if 0 < den < math.inf else math.inf
    return out if math.isfinite(out) else math.inf


def lifted_route(V: np.ndarray, D: np.ndarray, T: np.ndarray, A: np.ndarray, ctx: Any) -> SearchResult | None:
    """The index-set engine over the lifted problem (:func:`lifted_columns`, the gated
    counterpart), within min(--timeout, :data:`LIFTED_SECONDS`): ``found`` (S re-checked by the
    engine in float64; the flip witness's exact check is then the proof) or ``infeasible`` (the
    engine's rigorous proof — a dual matrix, exhaustive or lattice search — that every S of the
    rounded lifted problem is at relative distance > tol + :func:`lifted_slack`, so every S of
    the exact one is farther than tol; the checker re-checks it on the lifted problem it builds
    itself); None otherwise."""
    return _engine_route(V, D, T, ctx, slack=lifted_slack(A, D, T), timeout=min(float(ctx.timeout), LIFTED_SECONDS))


def _engine_route(V: np.ndarray, D: np.ndarray, T: np.ndarray, ctx: Any, *, slack: float, timeout: float,
                  linear: bool = False) -> SearchResult | None:
    """The index-set engine on (V, D, T) within ``timeout``: a found S, or a proof that every S of
    this rounded problem is farther than tol + ``slack`` (the rounding of V's effect); else None
    (:func:`lifted_route`, :func:`linear_route`)."""
    from absorb._errors import InvalidInput
    from absorb.search import find_index_set

    if not (np.any(T) and np.all(np.isfinite(V)) and np.all(np.isfinite(T))):
        return None  # (u_i u_iᵀ overflows past 2^512: the engine would refuse the input)
    tol = ctx.linear_dist_tol if linear else ctx.dist_tol  # ((L) alone: its bar counts f's linear size K_L only)
    try:
        res = find_index_set(V, D, T, tol=tol, timeout=timeout, method=ctx.method, seed=ctx.seed,
                             progress=getattr(ctx, "search_progress", None))
    except InvalidInput:  # the lifted problem is the engine's input, not the user's: no verdict from it
        return None
    if res.status is SearchStatus.FOUND and res.S is not None:
        return res
    if res.status is SearchStatus.INFEASIBLE and res.bound is not None and res.bound - slack > tol:
        return res
    return None


# -------------------------------------------------------------------- linear (L) route --
def linear_columns(block: Block, q: Quadratic) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(V, D, T, a) for the linear condition (L) alone: row i of V is v_i = (2αc_i + β)·u_i
    (n × d), D = W_down, T = −M, so ‖D[:,S] V[S,:] − T‖_F / ‖T‖_F is S's distance from (L) — a
    square index-set problem (p = d, no padding). Each entry of V is within γ₄ of
    A_i = (2|α||c_i| + |β|)·|u_i| (fl(α), ·2 exact, ·c, fl(β), +, ·u: at most four roundings on
    either term); a_i ≥ ‖A_i‖₂ (its float value; the 1 % of :func:`slack_from_norms` covers
    its rounding), without building A."""
    U, D, M = (np.asarray(a, dtype=np.float64) for a in (block.W_up, block.W_down, block.M))
    n = U.shape[0]
    c = np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows as inf: no linear route
        V = (2 * float(q.alpha) * c + float(q.beta))[:, None] * U
        a = (2 * abs(float(q.alpha)) * np.abs(c) + abs(float(q.beta))) * np.linalg.norm(U, axis=1)
    return V, D, -M, a


def linear_first(block: Block) -> bool:
    """Whether the linear route runs before the others: when the d³-sized columns are not built
    (d³·n > :data:`MAX_COLUMN_ENTRIES`) and the Gram route would need its row-block pass
    (n > :data:`GRAM_MAX_N`: minutes at model size, where the index-set engine takes seconds).
    Below that the Gram route is the cheaper proof (milliseconds at d = 48, n = 200, where the
    engine's small-problem portfolio spends about a minute), and the linear route is a fallback."""
    return block.d ** 3 * block.n > MAX_COLUMN_ENTRIES and block.n > GRAM_MAX_N


def linear_route(V: np.ndarray, D: np.ndarray, T: np.ndarray, a: np.ndarray, ctx: Any) -> SearchResult | None:
    """The linear condition (L) alone, decided by the index-set engine within the user's
    --timeout (docs/results/skeleton2.md, "linear route"). (L) is necessary, and an S's distance
    from (Q) and (L) jointly is at least its distance from (L), so the engine's proof that no S
    of the rounded problem is within tol + :func:`slack_from_norms` proves ``not_absorbable``;
    a found S only names the candidate whose flip witness decides (Q) exactly. The result's
    method is ``linear`` (the engine's own method is in the reason; the certificate's case /
    route reads it); None when the engine did not decide."""
    import dataclasses

    slack = slack_from_norms(a, V.shape[1], D, T)
    res = _engine_route(V, D, T, ctx, slack=slack, timeout=float(ctx.timeout), linear=True)
    if res is None:
        return None
    return dataclasses.replace(res, method="linear", reason=f"the linear condition alone ({res.method}): {res.reason}")


# ---------------------------------------------------------------------------- witness --
EXACT_FLIP_MAX_TERMS = 20_000_000
"""A flip witness's exact check computes in integers: beyond this many products it is not run."""


def exact_check_too_large(block: Block, S: tuple[int, ...]) -> str | None:
    """Why a degree-2 (or gated) flip witness of S is not checked exactly, or None: its quadratic
    part's Gram matrices cost |S|²·d integer products (:func:`exact_quadratic`), its linear
    part d²·|S|, the block's scales and |f(0)| n·d; beyond :data:`EXACT_FLIP_MAX_TERMS` of any."""
    s = max(len(S), 1)
    terms = max(s * s * block.d, s * block.d * block.d, block.n * block.d)
    if terms <= EXACT_FLIP_MAX_TERMS:
        return None
    return (f"the exact check of its flip witness ({terms} integer products) is beyond the {EXACT_FLIP_MAX_TERMS} "
            "this implementation checks")


def flip_witness_block(block: Block, S: tuple[int, ...], sq: SquareFlip = RELU2_FLIP) -> Block:
    """The flip witness for σ(z) + σ(−z) = αz² + k (``sq``): negate (u_i, c_i, w_i) for i in S
    (exact), and b'_down = b_down + Σ_S (αc_i² + k) w_i (rounded; for ReLU², Σ_S c_i² w_i)."""
    U, D = np.array(block.W_up, dtype=np.float64), np.array(block.W_down, dtype=np.float64)
    idx = list(S)
    U[idx] *= -1
    D[:, idx] *= -1
    b_up = None if block.b_up is None else np.array(block.b_up, dtype=np.float64)
    cS = np.zeros(len(idx)) if b_up is None else b_up[idx]
    # (ReLU²: 1.0·c² + 0.0 is c² exactly)
    shift = np.asarray(block.W_down, dtype=np.float64)[:, idx] @ (float(sq.alpha) * cS**2 + float(sq.k))
    if b_up is not None:
        b_up[idx] *= -1
    b_down = shift + (0 if block.b_down is None else np.asarray(block.b_down, dtype=np.float64))
    return block.replace(W_up=U, W_down=D, b_up=b_up, b_down=b_down if np.any(b_down) else None, skip=np.zeros((block.d, block.d)),
                         name=block.name + "'")


def dyadic_ints(a: Any) -> tuple[np.ndarray, int]:
    """A float array as integers ``Z`` (an object array, same shape) and ``L`` with a = Z / 2^L
    exactly: sums and products of Z are exact integer arithmetic, no gcd on every step as
    with Fractions (a planted d = 64 flip check took 46 s in Fractions). L is the least such
    L ≥ 0. Vectorised: x = m·2^e (numpy's frexp, exact) with the 53-bit integer mantissa
    m·2^53 stripped of its trailing zeros, so only the final shifts are Python integers (a
    float-by-float conversion took seconds on model-sized weights). Non-finite input raises
    as ``float.as_integer_ratio`` does."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=object), 0
    flat = arr.ravel()
    if not np.all(np.isfinite(flat)):
        float(flat[~np.isfinite(flat)][0]).as_integer_ratio()  # raises (OverflowError / ValueError)
    frac, ex = np.frexp(flat)
    mant = np.ldexp(frac, 53).astype(np.int64)  # exact: |frac| < 1 has 53 bits
    mag = np.abs(mant)
    low = mag & -mag  # the lowest set bit (0 for x = 0)
    tz = np.where(mag == 0, 0, np.frexp(low.astype(np.float64))[1] - 1)
    mant, ex = mant >> tz, np.where(mag == 0, 0, ex.astype(np.int64) - 53 + tz)  # x = mant·2^ex, mant odd or 0
    L = max(0, int(-ex.min()))
    Z = mant.astype(object) << (ex + L).astype(object)
    return Z.reshape(arr.shape), L


def aligned_ints(*terms: tuple[Any, int]) -> tuple[list[Any], int]:
    """Integer arrays ``Z_k / 2^L_k`` brought to one exponent: ([Z'_k], L) with Z'_k / 2^L = Z_k / 2^L_k."""
    L = max(e for _z, e in terms)
    return [z * (1 << (L - e)) for z, e in terms], L


def pair_products(A: tuple[np.ndarray, int], B: tuple[np.ndarray, int], sym: bool = False) -> tuple[np.ndarray, int]:
    """(P, e): P_ij / 2^e = ⟨a_i b_iᵀ, a_j b_jᵀ⟩_F = (a_i·a_j)(b_i·b_j) exactly, the rows of A and B
    dyadic integers (:func:`dyadic_ints`); ``sym``: of a_i b_iᵀ + b_i a_iᵀ, whose four cross terms
    are equal in pairs, P_ij = 2[(a_i·a_j)(b_i·b_j) + (a_i·b_j)(b_i·a_j)] (so for the symmetric
    part ½(a bᵀ + b aᵀ), a quarter of it). Two (three) integer Gram matrices: |S|²·d products."""
    (Ai, eA), (Bi, eB) = A, B
    AA = np.dot(Ai, Ai.T)
    BB = AA if Bi is Ai else np.dot(Bi, Bi.T)
    P = AA * BB
    if sym:
        AB = np.dot(Ai, Bi.T)
        P = 2 * (P + AB * AB.T)
    return P, 2 * (eA + eB)


def exact_gram(W: tuple[np.ndarray, int], A: tuple[np.ndarray, int], B: tuple[np.ndarray, int],
               sym: bool = False) -> tuple[np.ndarray, int]:
    """(G, e): the Gram matrix G / 2^e of the columns q_i = vec(w_i ⊗ a_i b_iᵀ) (``sym``: of
    vec(w_i ⊗ (a_i b_iᵀ + b_i a_iᵀ))), exactly: ⟨w ⊗ X, v ⊗ Y⟩ = (w·v)⟨X, Y⟩_F, so
    G_ij = (w_i·w_j)·P_ij with P from :func:`pair_products` (W's columns, A's and B's rows dyadic
    integers) — n²·d integer products where the columns have d³ entries each."""
    Wi, eW = W
    P, eP = pair_products(A, B, sym)
    return np.dot(Wi.T, Wi) * P, 2 * eW + eP


def _ceil_sqrt(v: int) -> int:
    return 0 if v <= 0 else math.isqrt(v - 1) + 1


def exact_quadratic(W: tuple[np.ndarray, int], A: tuple[np.ndarray, int], B: tuple[np.ndarray, int],
                    sym: bool = False) -> tuple[Fraction, Fraction]:
    """For the tensor Q = Σ_i w_i ⊗ a_i b_iᵀ (``sym``: Σ_i w_i ⊗ (a_i b_iᵀ + b_i a_iᵀ); the columns
    of W, the rows of A and B, dyadic integers from :func:`dyadic_ints`): (q₁, ‖Q‖²_F) with
    q₁ ≥ max_a Σ_{b,c} |Q_abc| (so |(xᵀQ_a x)_a|_∞ ≤ q₁|x|²_∞) and q₁ = 0 iff Q = 0, exactly.

    By Gram matrices, not term by term: ‖Q_a‖²_F = Σ_{i,j} w_ai w_aj P_ij (P from
    :func:`pair_products`), d·|S|² integer products, and ‖Q‖²_F = Σ_a ‖Q_a‖²_F. Q = 0 (the
    flip's exact case) then costs no d³ work. Otherwise q₁ is the exact max_a Σ_{b,c} |Q_abc|,
    one d×d slice at a time (d³·|S| products), when d³·|S| ≤ :data:`MAX_COLUMN_ENTRIES`, else
    the bound d·max_a ⌈‖Q_a‖_F⌉ (Cauchy–Schwarz over a slice's d² entries: at most d times the
    exact value, so a planted-in-float64 set with d³·|S| past that limit needs a d-times
    smaller quadratic residual to be accepted)."""
    (Wi, eW), (Ai, eA), (Bi, eB) = W, A, B
    E = eW + eA + eB
    d, s = Wi.shape[0], Ai.shape[0]
    if s == 0 or d == 0:
        return Fraction(0), Fraction(0)
    P, _ = pair_products(A, B, sym)
    N = [int(v) for v in np.sum(np.dot(Wi, P) * Wi, axis=1)]  # ‖Q_a‖²_F · 2^(2E)
    sq = sum(N)
    if sq == 0:
        return Fraction(0), Fraction(0)
    if d ** 3 * s > MAX_COLUMN_ENTRIES:
        return Fraction(d * _ceil_sqrt(max(N)), 1 << E), Fraction(sq, 1 << (2 * E))
    one = 0
    for a in range(d):
        Qa = np.dot(Ai.T * Wi[a], Bi)
        if sym:
            Qa = Qa + Qa.T
        one = max(one, int(np.sum(np.abs(Qa))))
    return Fraction(one, 1 << E), Fraction(sq, 1 << (2 * E))


def inf_norm_sq(R: np.ndarray, L: int) -> tuple[Fraction, Fraction]:
    """(‖R‖_{∞→∞}, ‖R‖²_F) of the integer matrix R / 2^L, exactly."""
    rows = [int(v) for v in np.sum(np.abs(R), axis=1)] if R.size else [0]
    return Fraction(max(rows), 1 << L), Fraction(int(np.sum(R * R)) if R.size else 0, 1 << (2 * L))


def exact_flip_residuals(block: Block, S: tuple[int, ...], wb: Block, sq: SquareFlip = RELU2_FLIP,
                         f0: Fraction | None = None) -> tuple[Fraction, Fraction, Fraction, Fraction, float]:
    """For the flip g = ``wb`` of S, σ(z) + σ(−z) = αz² + k (``sq``; ReLU²: α = 1, k = 0):
    f(x) − g(x) = αΣ_S w_i (u_i·x)² + R_L x + R_0 exactly, with R_L = M + 2αΣ_S c_i w_i u_iᵀ and
    R_0 = b_down + Σ_S (αc_i² + k) w_i − b'_down. Returns (q, ‖R_L‖_{∞→∞}, |R_0|_∞, |f(0)|_∞) in
    exact rationals, where q = |α|·max_a Σ_{b,c} |Q_abc| for the tensor Q = Σ_S w_i ⊗ u_i u_iᵀ, so
    |αΣ_S w_i (u_i·x)²|_∞ ≤ q|x|²_∞ (q = 0 exactly when the quadratic part vanishes), and S's
    relative distance (‖Q‖²_F + ‖R_L‖²_F)^½ / ‖M‖_F (:func:`exact_distance`: the routes' measure).
    |f(0)|_∞ is exact for ReLU² (σ(c) = max(c, 0)²) when ``f0`` (a rigorous lower bound, any
    other σ) is not given. All in dyadic integers, α and k over their common denominator."""
    d, idx = block.d, list(S)
    den = math.lcm(sq.alpha.denominator, sq.k.denominator)
    A, K = int(sq.alpha * den), int(sq.k * den)  # α = A/den, k = K/den
    U = np.asarray(block.W_up, dtype=np.float64)
    D = np.asarray(block.W_down, dtype=np.float64)
    c = np.zeros(block.n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
    US, WS, cS = dyadic_ints(U[idx].reshape(len(idx), d)), dyadic_ints(D[:, idx].reshape(d, len(idx))), dyadic_ints(c[idx])
    q, q2 = exact_quadratic(WS, US, US)
    Mi = dyadic_ints(block.M)
    lin = (np.dot(WS[0] * (2 * cS[0]), US[0]), WS[1] + cS[1] + US[1])
    (Mz, Lz), L = aligned_ints(Mi, lin)
    rl, rl2 = inf_norm_sq(den * Mz + A * Lz, L)
    bd = dyadic_ints(np.zeros(d) if block.b_down is None else block.b_down)
    bd2 = dyadic_ints(np.zeros(d) if wb.b_down is None else wb.b_down)
    shift = (np.dot(WS[0], cS[0] * cS[0]), WS[1] + 2 * cS[1])
    moved = (np.sum(WS[0], axis=1) if len(idx) else np.zeros(d, dtype=object), WS[1])  # Σ_S w_i (k's share)
    (z0, z1, zk, z2), L0 = aligned_ints(bd, shift, moved, bd2)
    r0 = Fraction(max(abs(int(v)) for v in den * z0 + A * z1 + K * zk - den * z2), (1 << L0) * den)
    if f0 is None:
        cp = dyadic_ints(np.maximum(c, 0.0))
        Dall = dyadic_ints(D.reshape(d, block.n))
        (f_a, f_b), Lf = aligned_ints(bd, (np.dot(Dall[0], cp[0] * cp[0]), Dall[1] + 2 * cp[1]))
        f0 = Fraction(max(abs(int(v)) for v in f_a + f_b), 1 << Lf)
    _, m2 = inf_norm_sq(*Mi)
    return q * abs(sq.alpha), rl / den, r0, f0, exact_distance(q2 + rl2 / (den * den), m2)


def exact_distance(num: Fraction, m2: Fraction) -> float:
    """S's relative distance from the conditions, ‖(Q 1_S, L 1_S + vec M)‖₂ / ‖M‖_F, from the
    exact squared norm ``num`` = ‖Q 1_S‖² + ‖R_L‖²_F of its parts and ``m2`` = ‖M‖²_F: the square
    root of an exact rational rounded to float, then correctly rounded (deterministic; inf when
    M = 0)."""
    if m2 == 0:
        return math.inf
    return math.sqrt(float(num / m2))


def relu2_scales(block: Block, units: tuple[int, ...] = (), alpha: Fraction = Fraction(1)) -> tuple[Fraction, Fraction, Fraction]:
    """The block's own coefficient scales (s₁, s₂) and s₂ over ``units`` only, exact rationals
    (docs/results/skeleton2.md, "Within tolerance"), for σ(s) = αs² + o(s) at +∞ (ReLU²: α = 1):
    s₂ = |α|·max_a Σ_i |w_ai|·|u_i|₁² bounds the quadratic part of f, |αΣ_i w_i (u_i·x)²|_∞ ≤
    s₂|x|²_∞, and s₁ = max(1, max_a (Σ_b |M_ab| + |α|Σ_i 2|c_i||w_ai||u_i|₁)) its linear part (the
    skip and the biases' cross terms); the 1 keeps every flip's absolute linear allowance (ρ∞ ≤ τ,
    the linear-case guarantee's |x|_∞ term). The third, s₂'s sum over ``units``, is a flip set's
    own quadratic size (:func:`flip_epsilon`)."""
    n, d = block.n, block.d
    Ui, eU = dyadic_ints(np.asarray(block.W_up, dtype=np.float64).reshape(n, d))
    Wi, eW = dyadic_ints(np.abs(np.asarray(block.W_down, dtype=np.float64)).reshape(d, n))
    ci, eC = dyadic_ints(np.abs(np.zeros(n) if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)))
    u1 = np.sum(np.abs(Ui), axis=1)
    a = abs(alpha)
    s1, s2, own = scales_from_terms(block, Wi * (u1 * u1), eW + 2 * eU, np.dot(Wi, 2 * ci * u1), eW + eC + eU, units, a)
    return s1, s2 * a, own * a


def scales_from_terms(block: Block, quad: np.ndarray, e_quad: int, cross: np.ndarray, e_cross: int,
                      units: tuple[int, ...], cross_scale: Fraction = Fraction(1)) -> tuple[Fraction, Fraction, Fraction]:
    """(s₁, s₂, s₂ over ``units``) from the integer terms of a block's scales: ``quad`` (d×n, over
    2^e_quad) the quadratic sizes of each unit in each output, ``cross`` (d, over 2^e_cross) the
    biases' linear cross terms of each output, times ``cross_scale`` ≥ 0; s₁ = max(1, max_a
    (Σ_b |M_ab| + cross_scale·cross_a))."""
    Mi, eM = dyadic_ints(block.M)
    (Mz, Cz), L = aligned_ints((np.sum(np.abs(Mi), axis=1), eM), (cross, e_cross))
    r = cross_scale
    lin = Fraction(max(int(v) for v in r.denominator * Mz + r.numerator * Cz), (1 << L) * r.denominator)
    own = quad[:, list(units)]
    return (max(Fraction(1), lin), Fraction(max(int(v) for v in np.sum(quad, axis=1)), 1 << e_quad),
            Fraction(max(int(v) for v in np.sum(own, axis=1)) if own.size else 0, 1 << e_quad))


def flip_epsilon(q: Fraction, rl: Fraction, r0: Fraction, f0: Fraction | float, s1: Fraction, s2: Fraction,
                 thr: float, s2_own: Fraction | None = None) -> tuple[float, bool]:
    """ε for a degree-2 flip witness from its exact residuals: f − g = Q(x) + R_L x + R_0 with
    |Q(x)|_∞ ≤ q|x|²_∞, ‖R_L‖∞ = rl, |R_0|_∞ = r0, and f0 ≤ |f(0)|_∞. Returns (ε, scaled):

    * q = 0 (the quadratic part vanishes exactly) and max(rl, r0/f0) ≤ ``thr``: that ε, the
      linear-case guarantee |f(x) − g(x)|_∞ ≤ ε(|x|_∞ + |f(0)|_∞); scaled = False;
    * else ε = max(q/s₂', rl/s₁, r0/f0), so |f(x) − g(x)|_∞ ≤ ε(|f(0)|_∞ + s₁|x|_∞ + s₂|x|²_∞)
      for every x (the degree-2 guarantee, s₁ ≥ 1 and s₂ the block's own scales:
      :func:`relu2_scales`, :func:`absorb.engine.gated_skeleton.gated_scales`); scaled = True.
      s₂' = ``s2_own`` ≤ s₂ (s₂ when not given): the same scale summed over the flipped units only, so
      ε ≤ τ also says that S's quadratic parts cancel to within τ of their own size — a unit
      whose quadratic part nothing cancels is not "rounding" because a larger unit elsewhere
      dominates s₂ (then |f − g| / |f| is near 1 wherever that unit is off).

    Each ratio is an exact rational rounded to float and raised by a relative 1e-12 (so an
    upper bound); r0 ≠ 0 with f0 = 0 is inf (no relative tolerance covers x = 0)."""
    e0 = 0.0 if r0 == 0 else (float(Fraction(r0) / Fraction(f0)) if f0 > 0 else math.inf)
    if q == 0:
        lin = max(float(rl), e0) * (1 + 1e-12)
        if lin <= thr or s2 <= 0:
            return lin, False
    elif s2 <= 0:
        return math.inf, True
    own = s2 if s2_own is None else s2_own
    if own <= 0:
        return math.inf, True
    return max(float(q / own), float(rl / s1), e0) * (1 + 1e-12), True


def linear_error_bound(q: Fraction, rl: Fraction, r0: Fraction, scaled: bool) -> tuple[float, float] | None:
    """A degree-2 witness's proved ``(a, e)``, |f(x) − g(x)|∞ ≤ a·|x|∞ + e for every x, where its quadratic part is 0
    exactly (f − g = R_L x + R_0: a = ‖R_L‖∞, e = |R_0|∞, raised to floats); None otherwise (a bound with |x|² is not of
    that form). Padding the witness with dead units (``--width``, ``--min-width``) keeps it."""
    if q != 0 or scaled:
        return None
    from absorb.rigorous import float_up

    return float_up(Fraction(rl)), float_up(Fraction(r0))


def flip_guarantee(eps: float, scaled: bool, q: Fraction, s1: Fraction, s2: Fraction) -> str:
    """What a degree-2 flip witness's bound (:func:`flip_epsilon`) guarantees, in words."""
    if not scaled:
        return f"exact: the quadratic part of f − g is 0, |f(x) − g(x)|∞ ≤ {eps:.3g}·(|x|∞ + |f(0)|∞) for every x"
    return (f"within tolerance: |f(x) − g(x)|∞ ≤ {eps:.3g}·(|f(0)|∞ + s₁|x|∞ + s₂|x|∞²) for every x, with the block's own "
            f"linear and quadratic scales s₁ = {float(s1):.6g}, s₂ = {float(s2):.6g}; the quadratic part of f − g is "
            f"{'≤ ' + format(float(q), '.3g') + '·|x|∞²' if q else '0'}")


def flip_change(scaled: bool, how: str) -> str:
    """What negating the units of S does to the block, in words (``how``: :func:`flip_guarantee`)."""
    return ("a constant that b'_down absorbs" if not scaled else
            f"a constant that b'_down absorbs, up to the rounding of the planted weights ({how})")


DEGREE2_GAP = ("its bound is ε(|f(0)|∞ + s₁|x|∞ + s₂|x|∞²), not the tolerance's measure: the quadratic part of f − g is "
               "not exactly 0 (or its linear part is above τ), and where f grows only linearly (a cone on which no unit's "
               "quadratic part acts) such an error eventually exceeds τ(|f(x)|∞ + |x|∞ + |f(0)|∞); no lower bound of f's "
               "growth is proved, so the witness proves nothing")
"""Why a degree-2 witness accepted only in the degree-2 measure (:func:`flip_epsilon`'s scaled case) is no answer."""


def flip_failure(q: Fraction, s2_own: Fraction, eps: float, thr: float, dist: float, err: float) -> str:
    """Why a degree-2 flip witness failed its check, in words (``s2_own``: S's own quadratic
    size, which the acceptance measures q against: :func:`flip_epsilon`)."""
    quad = "zero" if q == 0 else f"nonzero, ≤ {float(q / s2_own) if s2_own else math.inf:.2e}·s₂(S)|x|∞², s₂(S) the flipped units' own quadratic size"
    return (f"quadratic part {quad}, bound {eps:.2e} against {thr:.2e}, relative residual {dist:.2e}, "
            f"sampled error {err:.2e}{eval_failure(err)}")


# ---------------------------------------------------------------------------- handler --
def _quadratic(ctx: Any) -> Quadratic | None:
    if ctx.block.gated:
        return None
    qs = growth.quadratic_skeleton(ctx.block.activation)
    if not qs.proved:
        return None
    ctx.prop(qs)
    a, b = qs.value["alpha"], qs.value["beta"]
    if not (isinstance(a, sp.Rational) and isinstance(b, sp.Rational)):
        ctx.notes.append(f"the degree-2 skeleton applies (α = {a}, β = {b}), but α, β are not rational, so its "
                         "conditions cannot be checked exactly")
        return None
    return Quadratic(Fraction(int(a.p), int(a.q)), Fraction(int(b.p), int(b.q)))


def degree2_skeleton(ctx: Any) -> BlockDecision | None:
    """The handler (absorb.engine.results.RESULTS): σ in the degree-2 class, any biases."""
    q = _quadratic(ctx)
    if q is None:
        return None
    blk = ctx.block
    lead = (f"Degree-2 skeleton: σ(s) = {q.alpha}·s² + {q.beta}·s + o(s) at +∞ and o(s) at −∞, so for nondegenerate weights "
            "a residual-free block of width n (with or without biases) equals f only if some S has "
            "Σ_S w_i ⊗ u_i u_iᵀ = 0 and M = −Σ_S (2α b_up,i + β) w_i u_iᵀ")

    def unknown(why: str, search: SearchResult | None = None) -> BlockDecision:
        # theorem "none": no result concluded (the search, if any, is named in the reason only)
        del search
        notes = "; ".join(dict.fromkeys(ctx.notes))
        return ctx.done(Verdict.UNKNOWN, Theorem.NONE, f"Unknown: {why}" + (f" (also: {notes})." if notes else "."))

    d2, nd = hyp.dimension(blk), hyp.nondegenerate(blk)
    ctx.H.extend([d2, *nd])
    failing = [h.statement for h in (d2, *nd) if not h.holds]
    if failing:  # necessity needs them; the flip witness (sufficiency) does not: still look for S
        why = ("the degree-2 skeleton needs nondegenerate weights (d ≥ 2, nonzero and pairwise non-collinear rows of "
               f"W_up, nonzero columns of W_down) to prove not_absorbable, and {'; '.join(failing)}")
        out = degenerate_flip(ctx, blk, lambda b64: enumeration_route(b64, q, ctx.dist_tol),
                              lambda b64: lifted_columns(b64, q), lambda b64: linear_columns(b64, q),
                              lambda b64, res: _relu2_flip(ctx, blk, b64, res, q), lambda b64: _independent(b64, ctx.dist_tol),
                              lambda b64: _degenerate_null(ctx, b64, q, lambda b, r: _relu2_flip(ctx, blk, b, r, q)))
        return out if isinstance(out, BlockDecision) else unknown(why + (f"; {out}" if out else ""))
    form = relu2_multiple_form(blk)
    set_gain(ctx, ungated_gain(blk, form), exact=form is not None)  # (σ = α·ReLU² + β·z: the flip's identity is exact)
    blk64 = blk.float64()
    small = blk.d ** 3 * blk.n <= MAX_COLUMN_ENTRIES  # the exact and enumeration routes build the columns
    fits = blk.n <= blk.d * blk.d * (blk.d + 1) // 2  # else the (Q) columns are dependent (no rank / Gram route)
    failed: str | None = None  # why an S meeting the conditions (by a route that decides nothing alone) had no witness
    lg: _gram.LowerGram | None = None  # the Gram route's matrix, kept for the null-space route

    first = linear_first(blk)
    res, out = linear_route_first(ctx, lambda: linear_columns(blk64, q), lambda lin: _relu2_flip(ctx, blk, blk64, lin, q))
    if isinstance(out, BlockDecision):
        return out
    failed = out
    if res is None:
        res = rank_route(blk64, ctx.dist_tol) if small else None
        if res is None and (blk.n > EXACT_MAX_N or not small) and fits:
            lg = cached_gram(gram_rows_skeleton2(blk64))
            res = gram_route(lg, blk64.M, ctx.dist_tol)
        if res is None and small:
            res = enumeration_route(blk64, q, ctx.dist_tol)
        if (res is None or res.status is SearchStatus.UNKNOWN) and small:
            res = lifted_route(*lifted_columns(blk64, q), ctx) or res
        if (res is None or res.status is SearchStatus.UNKNOWN) and not first:  # the linear condition alone, as a fallback
            lin = linear_route(*linear_columns(blk64, q), ctx)
            if lin is not None and (lin.status is SearchStatus.INFEASIBLE or res is None):
                res = lin
    if (res is None or res.status is SearchStatus.UNKNOWN) and fits:  # no S found, none excluded: read S off G's null space
        if lg is None and blk.n <= GRAM_MAX_N:
            lg = cached_gram(gram_rows_skeleton2(blk64))
        out = null_route_flip(ctx, lg, linear_columns(blk64, q), lambda r: _relu2_flip(ctx, blk, blk64, r, q))
        if out is not None:
            return out
    if res is None:
        if failed is not None:
            return unknown(failed)
        if not small:
            why = (f"n = {blk.n} is beyond the {_gram.LARGE_MAX_N} units the Gram route runs to" if blk.n > _gram.LARGE_MAX_N
                   else "the Gram matrix of its (Q) columns is not proved positive definite")
            return unknown(f"the degree-2 skeleton applies, but the index-set engine did not decide the linear condition alone "
                           f"within the time limit, {why}, and its columns (d³·n = {blk.d ** 3 * blk.n} entries) "
                           f"are beyond the {MAX_COLUMN_ENTRIES} the other routes build")
        return unknown("the degree-2 skeleton applies, but the (Q) columns are not proved independent and " + enumeration_why(blk.n))
    if res.status is SearchStatus.INFEASIBLE:
        alone = " from (L) alone, so from both" if res.method == "linear" else ""
        return ctx.done(Verdict.NOT_ABSORBABLE, Theorem.SKELETON2,
                        f"{lead}; no S does ({res.method}: every S is at relative distance ≥ {res.bound:.3g} > tolerance"
                        f"{alone}).", search=res)
    if res.status is SearchStatus.UNKNOWN:
        return unknown(f"the degree-2 skeleton applies, but the search did not decide: {res.reason}", res)
    out = _relu2_flip(ctx, blk, blk64, res, q)
    return out if isinstance(out, BlockDecision) else unknown(out, res)


def degenerate_flip(ctx: Any, blk: Block, enumerate_: Any, lifted: Any, linear: Any, flip: Any,
                    independent: Any = None, null: Any = None) -> BlockDecision | str | None:
    """For degenerate weights (a hypothesis of necessity fails, so no ``not_absorbable``): look
    for an S with the routes that can find one — every S (n ≤ :data:`ENUMERATE_MAX_N`), the
    index-set engine over the lifted columns, then over the linear condition alone — and hand
    it to ``flip(b64, res)``, the flip witness, whose exact check alone decides ``absorbable``
    (it uses no nondegeneracy). Returns that decision, or why the S found had no witness, or
    None (no S found; an infeasibility proof is no verdict here). Both handlers' (``enumerate_``,
    ``lifted``, ``linear`` build their routes' input from the float64 block). ``independent(b64)``,
    when given, is a quick proof that no S is near (the Gram route over the units whose
    columns are not zero: a unit with zero columns changes no S's distance), which skips the search.
    ``null(b64)``, when given, is the null-space route over those units (its candidates' flips),
    tried when no route found an S."""
    b64 = blk.float64()
    small = blk.d ** 3 * blk.n <= MAX_COLUMN_ENTRIES
    if independent is not None:
        pre = independent(b64)
        if pre is not None and pre.status is SearchStatus.INFEASIBLE:
            return None
    res = enumerate_(b64) if small and blk.n <= ENUMERATE_MAX_N else None
    if res is not None and res.status is SearchStatus.INFEASIBLE:
        return None  # (every S is beyond the tolerance: no witness of this kind)
    if (res is None or res.status is not SearchStatus.FOUND) and small:
        res = lifted_route(*lifted(b64), ctx)
    if (res is None or res.status is not SearchStatus.FOUND) and not small:
        res = linear_route(*linear(b64), ctx)
    if res is None or res.status is not SearchStatus.FOUND or res.S is None:
        return None if null is None else null(b64)
    return flip(b64, res)


def nonzero_units(b64: Block) -> tuple[np.ndarray, Block] | None:
    """(the units with u_i ≠ 0 and w_i ≠ 0, the block of those units only), or None if there are
    none: a unit with u_i = 0 or w_i = 0 has zero (Q) and (L) columns, so it changes no S's distance."""
    U, D = np.asarray(b64.W_up), np.asarray(b64.W_down)
    keep = np.flatnonzero(np.any(U != 0, axis=1) & np.any(D != 0, axis=0))
    if keep.size == 0:
        return None
    return keep, b64.replace(W_up=U[keep], W_down=D[:, keep], b_up=None if b64.b_up is None else np.asarray(b64.b_up)[keep])


def _degenerate_null(ctx: Any, b64: Block, q: Quadratic, flip: Any) -> BlockDecision | None:
    """The null-space route for degenerate weights: over the units with nonzero columns (a zero
    unit makes the Gram matrix's diagonal vanish), each candidate mapped back to the block's own
    unit numbers and handed to ``flip(b64, res)``, whose exact check alone decides."""
    import dataclasses

    got = nonzero_units(b64)
    if got is None:
        return None
    keep, sub = got
    if sub.n > sub.d * sub.d * (sub.d + 1) // 2:
        return None
    return null_route_flip(ctx, gram_rows_skeleton2(sub), linear_columns(sub, q),
                           lambda r: flip(b64, dataclasses.replace(r, S=tuple(int(keep[i]) for i in r.S or ()))))


def _independent(b64: Block, tol: float) -> SearchResult | None:
    """The Gram route over the units with u_i ≠ 0 and w_i ≠ 0 (a unit with u_i = 0 or
    w_i = 0 has zero (Q) and (L) columns, so it changes no S's distance): INFEASIBLE when only
    S = ∅ is near; None when neither route applies (a speed-up for :func:`degenerate_flip` only)."""
    got = nonzero_units(b64)
    if got is None:
        return None
    sub = got[1]
    if sub.n > sub.d * sub.d * (sub.d + 1) // 2:
        return None
    return gram_route(gram_rows_skeleton2(sub), sub.M, tol)  # (float, rigorous: milliseconds where the exact rank route takes seconds)


def linear_route_first(ctx: Any, columns: Any, flip: Any) -> tuple[SearchResult | None, BlockDecision | str | None]:
    """The linear condition alone, first, where :func:`linear_first` says so (the index-set
    engine at model size, within --timeout): (its infeasibility proof, None), or (None, the flip
    witness's decision for the S it found, or why that S has no witness), or (None, None).
    ``columns()`` builds the route's columns, ``flip(res)`` checks a found S (both handlers')."""
    if not linear_first(ctx.block):
        return None, None
    lin = linear_route(*columns(), ctx)
    if lin is None:
        return None, None
    if lin.status is SearchStatus.INFEASIBLE:
        return lin, None
    return None, flip(lin)


def _relu2_flip(ctx: Any, blk: Block, blk64: Block, res: SearchResult, q0: Quadratic) -> BlockDecision | str:
    """For an S found by a route: the flip witness of σ(z) + σ(−z) = αz² + k (ReLU² and the other
    σ with that identity, :func:`square_flip`), checked exactly (``absorbable``), or why S proves
    nothing (no such identity, a biased witness for a bias-free question, the check failed)."""
    assert res.S is not None
    what = ("the linear condition (L)" if res.method == "linear" else "(Q) and (L) in floats (a candidate of the null-space route)"
            if res.method == "nullspace" else "the degree-2 skeleton's conditions")
    sq = square_flip(blk, q0)
    if isinstance(sq, str):
        return (f"S = {list(res.S)} satisfies {what}, so the skeleton proves nothing, and {sq} "
                f"(σ = {blk.activation_name}; the flip witness exists for ReLU² and σ with that identity only)")
    if (too := exact_check_too_large(blk, res.S)) is not None:
        return f"S = {list(res.S)} satisfies {what}, but {too}"
    wb = flip_witness_block(blk64, res.S, sq)
    if ctx.bias_free_class and (wb.b_up is not None or wb.b_down is not None):
        return f"S = {list(res.S)} gives a witness with biases, but the question is about bias-free blocks"
    relu2 = sq == RELU2_FLIP and is_relu2(blk)
    f0 = None if relu2 else Fraction(f0_lower(blk64))
    q, rl, r0, f0, dist = exact_flip_residuals(blk64, res.S, wb, sq, f0)
    thr = eval_threshold(ctx.tol, blk.n)
    s1, s2, s2_own = relu2_scales(blk64, tuple(res.S), sq.alpha)
    eps, scaled = flip_epsilon(q, rl, r0, f0, s1, s2, thr, s2_own)
    err, m = evaluation_error(blk, wb, blk.d, seed=ctx.seed, accept=thr)
    how = flip_guarantee(eps, scaled, q, s1, s2)
    a, k = str(sq.alpha), str(sq.k)  # (Fraction's own form: "3", "3/2")
    moved = "b_up,i²" if relu2 else f"({a}·b_up,i² + {k})" if sq.k else f"{a}·b_up,i²"
    ident = "ReLU²" if relu2 else f"σ(z) + σ(−z) = {'' if sq.alpha == 1 else a + '·'}z²" + (f" + {k}" if sq.k else "") + " for every real z"
    w = Witness(S=res.S, block=wb, residual=dist, eval_error=max(eps, err), n_inputs=m, exact=q == 0 and eps == 0,
                description=f"negate the up rows, up biases and down columns in S; b'_down = b_down + Σ_S {moved}·w_i; {how}",
                bound=linear_error_bound(q, rl, r0, scaled))
    lin = "2" if sq.alpha == 1 else f"2·{a}"
    if eps <= thr and err <= thr and dist <= ctx.dist_tol and scaled:
        return f"S = {list(res.S)} satisfies {what} up to rounding (relative residual {dist:.2e}), but its flip witness ({ident}): {DEGREE2_GAP}"
    if eps <= thr and err <= thr and dist <= ctx.dist_tol:
        cond = (f"Σ_S w_i ⊗ u_i u_iᵀ = 0 exactly and M = −{lin}·Σ_S b_up,i w_i u_iᵀ" if not scaled else
                f"Σ_S w_i ⊗ u_i u_iᵀ = 0 and M = −{lin}·Σ_S b_up,i w_i u_iᵀ up to rounding")
        change = f"{'' if sq.alpha == 1 else a + '·'}Σ_S w_i (u_i·x + b_up,i)²" + (f" + {k}·Σ_S w_i" if sq.k else "")
        return ctx.done(Verdict.ABSORBABLE, Theorem.SKELETON2,
                        f"Degree-2 skeleton, {ident}: S = {list(res.S)} has {cond} (relative residual {dist:.2e}); "
                        f"negating (u_i, b_up,i, w_i) on S changes the block by −({change}), {flip_change(scaled, how)} "
                        f"(rigorous bound {eps:.2e}; checked on {m} inputs, max relative error {err:.2e}).",
                        witness=w, search=res)
    return (f"S = {list(res.S)} satisfies {what} within the tolerance, but its flip witness ({ident}) failed its "
            f"check ({flip_failure(q, s2_own, eps, thr, dist, err)})")

