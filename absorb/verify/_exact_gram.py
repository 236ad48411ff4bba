"""The checker's exact arithmetic for the degree-2 and gated skeletons (issue 26), in integers:
every float is an integer over a power of two, so the weights become integer arrays with one
exponent each (:func:`ints`), and sums and products of them are exact without a gcd per step.

* The Gram matrix of the (Q) columns vec(w_i ⊗ u_i u_iᵀ), or of the (Qg) columns
  vec(w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ)), from ⟨w ⊗ X, v ⊗ Y⟩ = (w·v)⟨X, Y⟩_F and
  ⟨a bᵀ, c eᵀ⟩_F = (a·c)(b·e): G_ij = (w_i·w_j)(u_i·u_j)², or 2(w_i·w_j)[(g_i·g_j)(u_i·u_j) +
  (g_i·u_j)(u_i·g_j)] — n²·d products where the columns have d³ entries.
* A flip's quadratic part Q = Σ_S w_i ⊗ X_i by the same identity per output a:
  ‖Q_a‖²_F = Σ_{i,j∈S} w_ai w_aj ⟨X_i, X_j⟩_F, so Q = 0 is decided with |S|²·d products.
* Its linear part, moved bias, |f(0)| and the block's scales as exact integer combinations.

Nothing here is shared with the producer.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.model.block import Block

ONE_NORM_MAX_TERMS = 2_000_000
"""A nonzero quadratic part's exact max_a Σ_{b,c} |Q_abc| is summed term by term up to this many
terms (d³·|S|); beyond, the bound d·max_a ‖Q_a‖_F (the producer's limit too: the same q)."""


def ints(a: Any) -> tuple[np.ndarray, int]:
    """(Z, L) with a = Z / 2^L exactly: Z an object array of Python integers, a's shape, L ≥ 0.
    Each float is s·2^k with s its integer significand (frexp's fraction times 2^53, exact);
    L = the largest −k, so only the final shifts are Python-integer operations. A non-finite
    entry raises ValueError."""
    x = np.asarray(a, dtype=np.float64)
    if x.size == 0:
        return np.zeros(x.shape, dtype=object), 0
    if not np.all(np.isfinite(x)):
        raise ValueError("a non-finite weight has no exact integer form")
    fr, k = np.frexp(x.ravel())
    sig = np.ldexp(fr, 53).astype(np.int64)
    k = k.astype(np.int64) - 53
    L = max(0, int(-k[sig != 0].min(initial=0)))
    Z = sig.astype(object) << np.maximum(k + L, 0).astype(object)  # (k + L < 0 only where sig = 0)
    return Z.reshape(x.shape), L


def combine(*terms: tuple[Fraction | int, np.ndarray, int]) -> tuple[np.ndarray, int]:
    """Σ_k r_k·Z_k / 2^e_k (rationals r_k, integer arrays Z_k of one shape) as (Y, den), Y / den
    exactly, Y integers."""
    L = max(e for _r, _z, e in terms)
    D = math.lcm(*(Fraction(r).denominator for r, _z, _e in terms))
    Y: Any = 0
    for r, z, e in terms:
        fr = Fraction(r)
        Y = Y + z * (fr.numerator * (D // fr.denominator) << (L - e))
    return Y, D << L


def max_abs(Y: np.ndarray, den: int) -> Fraction:
    """max |Y| / den exactly (0 when Y is empty)."""
    return Fraction(max((abs(int(v)) for v in np.ravel(Y)), default=0), den)


def row_norm(Y: np.ndarray, den: int) -> tuple[Fraction, Fraction]:
    """(max_r Σ_c |Y_rc|, Σ Y²) of the matrix Y / den exactly: its ∞→∞ norm and squared Frobenius norm."""
    if Y.size == 0:
        return Fraction(0), Fraction(0)
    return (Fraction(max(int(v) for v in np.sum(np.abs(Y), axis=1)), den),
            Fraction(int(np.sum(Y * Y)), den * den))


def _pairs(A: tuple[np.ndarray, int], B: tuple[np.ndarray, int], sym: bool) -> tuple[np.ndarray, int]:
    """P_ij·2^-e = ⟨X_i, X_j⟩_F for X_i = a_i b_iᵀ, or (sym) a_i b_iᵀ + b_i a_iᵀ (four cross terms,
    equal in pairs: 2[(a_i·a_j)(b_i·b_j) + (a_i·b_j)(b_i·a_j)]); A, B: rows a_i, b_i."""
    (Az, eA), (Bz, eB) = A, B
    P = np.dot(Az, Az.T) * np.dot(Bz, Bz.T)
    if sym:
        C = np.dot(Az, Bz.T)  # C_ij = a_i·b_j
        P = 2 * (P + C * C.T)
    return P, 2 * (eA + eB)


def column_gram(W: tuple[np.ndarray, int], A: tuple[np.ndarray, int], B: tuple[np.ndarray, int],
                sym: bool = False) -> tuple[np.ndarray, int]:
    """(G, e): G / 2^e = the Gram matrix of the columns vec(w_i ⊗ X_i) (W: columns w_i)."""
    (Wz, eW) = W
    P, eP = _pairs(A, B, sym)
    return np.dot(Wz.T, Wz) * P, 2 * eW + eP


def quadratic_part(W: tuple[np.ndarray, int], A: tuple[np.ndarray, int], B: tuple[np.ndarray, int],
                   sym: bool = False) -> tuple[Fraction, Fraction]:
    """(q₁, ‖Q‖²_F) for Q = Σ_i w_i ⊗ X_i (X_i as in :func:`_pairs`): q₁ ≥ max_a Σ_{b,c} |Q_abc|
    (so |(xᵀQ_a x)_a|_∞ ≤ q₁|x|²_∞), q₁ = 0 iff Q = 0. ‖Q_a‖²_F = Σ_{i,j} w_ai w_aj ⟨X_i, X_j⟩_F
    exactly; a nonzero Q's q₁ is the exact sum (d³·|S| ≤ :data:`ONE_NORM_MAX_TERMS`) or
    d·max_a ⌈‖Q_a‖_F⌉ (Cauchy–Schwarz over a slice's d² entries)."""
    (Wz, eW), (Az, eA), (Bz, eB) = W, A, B
    d, s = Wz.shape[0], Az.shape[0]
    E = eW + eA + eB
    if d == 0 or s == 0:
        return Fraction(0), Fraction(0)
    P, _ = _pairs(A, B, sym)
    slices = [int(v) for v in np.sum(np.dot(Wz, P) * Wz, axis=1)]  # ‖Q_a‖²_F · 4^E
    total = sum(slices)
    if total == 0:
        return Fraction(0), Fraction(0)
    if d ** 3 * s > ONE_NORM_MAX_TERMS:
        top = max(slices)
        return Fraction(d * (math.isqrt(top - 1) + 1), 1 << E), Fraction(total, 1 << (2 * E))
    one = 0
    for a in range(d):
        Qa = np.dot(Az.T * Wz[a], Bz)  # Σ_i w_ai a_i b_iᵀ
        if sym:
            Qa = Qa + Qa.T
        one = max(one, int(np.sum(np.abs(Qa))))
    return Fraction(one, 1 << E), Fraction(total, 1 << (2 * E))


def _sylvester(A: list[list[int]]) -> bool:
    """Every leading principal minor of the symmetric integer matrix A is > 0 (the pivots of
    fraction-free elimination, exact)."""
    A = [r[:] for r in A]
    last = 1
    for k in range(len(A)):
        piv = A[k][k]
        if piv <= 0:
            return False
        Ak = A[k]
        for i in range(k + 1, len(A)):
            Ai, aik = A[i], A[i][k]
            for j in range(k + 1, len(A)):
                Ai[j] = (Ai[j] * piv - aik * Ak[j]) // last
        last = piv
    return True


def shifted_positive_definite(G: np.ndarray, m: int) -> bool:
    """G − mI ≻ 0 for the symmetric integer matrix G, m ≥ 0: with G = 2^k G' + R (G' = ⌊G/2^k⌋,
    0 ≤ R_ij < 2^k, so ‖R‖₂ ≤ its largest row sum < n·2^k), G' − (⌈m/2^k⌉ + n)I ≻ 0 gives
    λ_min(G − mI) > 2^k·n − ‖R‖₂ > 0; k is chosen so that n·2^k ≤ m·2^-20 (short integers in
    the elimination), k = 0 when m is small (then G − mI itself)."""
    n = G.shape[0]
    k = max(0, m.bit_length() - 21 - n.bit_length())
    shift = (-((-m) >> k) + n) if k else m
    return _sylvester([[(int(G[i, j]) >> k) - (shift if i == j else 0) for j in range(n)] for i in range(n)])


def rank_bound(G: np.ndarray, e: int, M: np.ndarray) -> float | None:
    """A rigorous lower bound on min over S ≠ ∅ of ‖Q 1_S‖ / ‖M‖_F from the exact Gram matrix
    G / 2^e = QᵀQ: √μ/‖M‖_F with G − μI positive definite (μ = mi/2^e chosen here from a float
    guess of λ_min, proved by :func:`shifted_positive_definite`); S = ∅ is at distance 1."""
    n = G.shape[0]
    if n == 0:
        return None
    try:
        Gf = np.array([[float(Fraction(int(v), 1 << e)) for v in row] for row in G])
        lam = float(np.linalg.eigvalsh(Gf)[0])
    except (OverflowError, np.linalg.LinAlgError):
        return None
    if not (math.isfinite(lam) and lam > 0):
        return None
    mi = math.floor(Fraction(lam) / 2 * (1 << e))
    if mi <= 0 or not shifted_positive_definite(G, mi):
        return None
    Mz, eM = ints(M)
    m2 = Fraction(int(np.sum(Mz * Mz)), 1 << (2 * eM))
    r = Fraction(mi, 1 << e) / m2 if m2 else Fraction(1)
    return math.sqrt(float(r)) * (1 - 1e-9) if r < 1 else 1.0 - 1e-9  # (r past float64: the bound is S = ∅'s, 1)


def distance(num: Fraction, Mz: np.ndarray, eM: int) -> float:
    """S's relative distance (‖Q‖²_F + ‖R_L‖²_F)^½ / ‖M‖_F from the exact squared numerator and M's
    integers: the square root of the exact ratio rounded to float (inf when M = 0)."""
    m2 = Fraction(int(np.sum(Mz * Mz)), 1 << (2 * eM))
    return math.sqrt(float(num / m2)) if m2 else math.inf


def _f64(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _vec(a: Any, k: int) -> np.ndarray:
    return np.zeros(k) if a is None else _f64(a).reshape(k)


def relu2_flip(block: Block, wb: Block, S: list[int], a: Fraction, k: Fraction,
               f0: Fraction | None) -> tuple[Fraction, Fraction, Fraction, Fraction, Fraction, Fraction, float]:
    """The flip of S (σ(z) + σ(−z) = a·z² + k): f − g = a·Σ_S w_i (u_i·x)² + R_L x + R_0 exactly,
    R_L = M + 2a·Σ_S c_i w_i u_iᵀ, R_0 = b_down + Σ_S (a·c_i² + k) w_i − b'_down. Returns
    (q, ‖R_L‖∞, |R_0|∞, f0, s₁, s₂(S), r): q = |a|·q₁ of Q = Σ_S w_i ⊗ u_i u_iᵀ
    (:func:`quadratic_part`), f0 = |f(0)|∞ exactly when not given (ReLU²: σ(c) = max(c, 0)²),
    s₁ = max(1, max_r (Σ_b |M_rb| + |a|·Σ_i 2|c_i||w_ri||u_i|₁)), s₂(S) = |a|·max_r Σ_S |w_ri||u_i|₁², r = S's relative distance
    (:func:`distance`)."""
    n, d = block.n, block.d
    U, D, c = _f64(block.W_up).reshape(n, d), _f64(block.W_down).reshape(d, n), _vec(block.b_up, n)
    US, WS, cS = ints(U[S].reshape(len(S), d)), ints(D[:, S].reshape(d, len(S))), ints(c[S])
    q1, q2 = quadratic_part(WS, US, US)
    Mz, eM = ints(block.M)
    lin = np.dot(WS[0] * cS[0], US[0]) if S else np.zeros((d, d), dtype=object)
    rho, rl2 = row_norm(*combine((1, Mz, eM), (2 * a, lin, WS[1] + cS[1] + US[1])))
    moved = [(1, *ints(_vec(block.b_down, d))), (-1, *ints(_vec(wb.b_down, d)))]
    if S:
        moved += [(a, np.dot(WS[0], cS[0] * cS[0]), WS[1] + 2 * cS[1]), (k, np.sum(WS[0], axis=1), WS[1])]
    R0 = max_abs(*combine(*moved))
    if f0 is None:
        cp, Dz = ints(np.maximum(c, 0.0)), ints(D)
        f0 = max_abs(*combine((1, *ints(_vec(block.b_down, d))), (1, np.dot(Dz[0], cp[0] * cp[0]), Dz[1] + 2 * cp[1])))
    Uz, eU = ints(U)
    Wa, eW = ints(np.abs(D))
    Ca, eC = ints(np.abs(c))
    u1 = np.sum(np.abs(Uz), axis=1)
    own = max_abs(np.dot(Wa[:, S], u1[S] * u1[S]), 1 << (eW + 2 * eU)) if S else Fraction(0)
    s1 = max(Fraction(1), max_abs(*combine((1, np.sum(np.abs(Mz), axis=1), eM), (2 * abs(a), np.dot(Wa, Ca * u1), eW + eC + eU))))
    return abs(a) * q1, rho, R0, f0, s1, abs(a) * own, distance(q2 + rl2, Mz, eM)


def gated_flip(block: Block, wb: Block, S: list[int]) -> tuple[Fraction, Fraction, Fraction, Fraction, Fraction, float]:
    """The gated flip of S (σ_g(z) − σ_g(−z) = z): f − g = Σ_S w_i (g_i·x)(u_i·x) + R_L x + R_0,
    R_L = M + Σ_S w_i (c_i u_i + e_i g_i)ᵀ, R_0 = b_down + Σ_S c_i e_i w_i − b'_down (c = b_gate,
    e = b_up). Returns (q, ‖R_L‖∞, |R_0|∞, s₁, s₂(S), r): q = q₁/2 of
    Q = Σ_S w_i ⊗ (g_i u_iᵀ + u_i g_iᵀ), s₁ = max(1, max_a (Σ_b |M_ab| + Σ_i |w_ai|(|c_i||u_i|₁ +
    |e_i||g_i|₁))), s₂(S) = max_a Σ_S |w_ai||g_i|₁|u_i|₁, r as in :func:`relu2_flip`."""
    n, d = block.n, block.d
    G, U, D = _f64(block.W_gate).reshape(n, d), _f64(block.W_up).reshape(n, d), _f64(block.W_down).reshape(d, n)
    c, e = _vec(block.b_gate, n), _vec(block.b_up, n)
    GS, US, WS = ints(G[S].reshape(len(S), d)), ints(U[S].reshape(len(S), d)), ints(D[:, S].reshape(d, len(S)))
    cS, eS = ints(c[S]), ints(e[S])
    q1, q2 = quadratic_part(WS, GS, US, sym=True)
    Mz, eM = ints(block.M)
    terms = [(1, Mz, eM)]
    moved = [(1, *ints(_vec(block.b_down, d))), (-1, *ints(_vec(wb.b_down, d)))]
    if S:
        terms += [(1, np.dot(WS[0] * cS[0], US[0]), WS[1] + cS[1] + US[1]), (1, np.dot(WS[0] * eS[0], GS[0]), WS[1] + eS[1] + GS[1])]
        moved.append((1, np.dot(WS[0], cS[0] * eS[0]), WS[1] + cS[1] + eS[1]))
    rho, rl2 = row_norm(*combine(*terms))
    R0 = max_abs(*combine(*moved))
    (Gz, eG), (Uz, eU), (Wa, eW) = ints(G), ints(U), ints(np.abs(D))
    (Ca, eC), (Ea, eE) = ints(np.abs(c)), ints(np.abs(e))
    g1, u1 = np.sum(np.abs(Gz), axis=1), np.sum(np.abs(Uz), axis=1)
    own = max_abs(np.dot(Wa[:, S], g1[S] * u1[S]), 1 << (eW + eG + eU)) if S else Fraction(0)
    s1 = max(Fraction(1), max_abs(*combine((1, np.sum(np.abs(Mz), axis=1), eM), (1, np.dot(Wa, Ca * u1), eW + eC + eU),
                                           (1, np.dot(Wa, Ea * g1), eW + eE + eG))))
    return q1 / 2, rho, R0, s1, own, distance(q2 + rl2, Mz, eM)
