"""The checker's own lattice enumeration: no index set S has ‖D_S U_S − T‖_F < ρ = R·‖T‖_F.

Written for the checker alone (it shares nothing with the search; fpylll is a library).
With ``K`` the d²×n matrix of columns ``k_i = vec(w_i u_iᵀ)`` (exact reals: products of two
floats), ``t = vec(T)`` and ``b ∈ {0,1}^n`` the indicator of S, the question is whether
``‖K b − t‖ < ρ``.

Embedding. For a power of two σ and an integer c ≥ 1, with any integers ``A`` (m×n) and
``a`` (m) (here the rounded σK̂ and σt), the rows

    row i (i < n):  2c·e_i        | 0 | A[:, i]
    row n:          c·(1, …, 1)   | c | a

span a lattice holding, for every S, ``v_S = Σ_{i∈S} row_i − row_n = (c(2b − 1), −c, A b − a)``
with ‖v_S‖² = c²(n + 1) + ‖A b − a‖².  Over exact reals
``A b − a = σ(K b − t) + (A − σK) b − (a − σt)``, so with
``δ_j = Σ_i |A_ji − σK_ji| + |a_j − σt_j|`` (computed here in exact rationals, K's entries
being exact products of the weights' floats),

    ‖K b − t‖ < ρ  ⇒  ‖A b − a‖ < σρ + ‖δ‖ ≤ τ := ⌈σρ⌉ + ⌈‖δ‖⌉  ⇒  ‖v_S‖² ≤ R² := c²(n+1) + τ².

ρ is bounded above by R·t_hi with t_hi ≥ ‖T‖_F (an exact sum of squares, then a square root
rounded up).  fpylll reduces the basis (LLL, BKZ-20) and enumerates every lattice vector of
squared norm ≤ R²·(1 + 2^-8) (the margin covers its floating-point Gram–Schmidt data, which
:func:`_float_ok` checks against exact Fractions once per basis); each
vector of the form (±c, …, ±c | ±c | ·) is read back as a set and measured in exact
rationals; the others are no sets.  An enumeration stopped by the time budget, or one that
returned its cap of vectors, proves nothing (a string says why).

Integer data (market split; any weights that are integers after one power-of-two scale
each): with ``U = 2^-g·Ui``, ``D = 2^-h·Di``, ``T = 2^-(g+h)·Ti`` exactly, ``K b − t`` is
2^-(g+h) times an integer vector, so when ρ·2^(g+h) ≤ 1 the sets closer than ρ are exactly
the solutions of ``Ki b = ti`` over the integers.  Those are the vectors with all n + 1
entries ±1 of the lattice L0 = {v = Σ_i a_i·2e_i + λ·(1, …, 1) : Ki a + λ ti = 0} (with
λ = −1, a = b): its basis is read off an LLL-reduced embedding with a large tail weight
(the rows whose tail vanished, a basis of L0 when the other rows' tails are linearly
independent, checked here in exact integers), reduced by BKZ-20 (and BKZ-30 past dimension
40) and enumerated with, at
each level t, the ℓ2 bound ‖π_t(v)‖² ≤ n + 1 and Hölder's ‖π_t(v)‖² = ⟨v, π_t(v)⟩ ≤
‖v‖_∞·‖π_t(v)‖_1 (numba-compiled when numba is installed; else fpylll's ℓ2 enumeration of
L0).  Each vector found is checked in exact integers.

What the completeness rests on: the walks prune with float64 Gram–Schmidt data and float64
arithmetic, with a relative margin 2^-8.  Before a list of vectors is called complete,
:func:`_float_ok` recomputes the Gram–Schmidt data exactly (Fractions), measures the float
data's errors, and bounds, level by level, how far the walk's computed partial sums and
Hölder sums can be from the exact ones for any vector sought; a bound over the margin
declines (a string says why).  For fplll's walk the arithmetic model is its double
recurrence (centers as sums of x_j·μ_jt, partial sums d_t = d_{t+1} + (x_t − c_t)²·r_t).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.verify._mitm import _exact_rel_sq
from absorb.verify._numerics import _in_range

MAX_N = 400
"""Widest block the checker's enumeration takes on (lattice dimension n + 1 + d²)."""
MAX_SOLUTIONS = 4096
_MARGIN = 2.0**-8


@dataclass(frozen=True)
class LatticeResult:
    """``closer`` lists (S, exact relative distance) of the sets found closer than R (empty:
    proved that every S is at relative distance ≥ R); plus the work done."""

    closer: list[tuple[list[int], float]]
    nodes: float
    vectors: int
    reduction: str


def _isqrt_up(q: Fraction) -> int:
    """The least integer ≥ √q (q ≥ 0, exact)."""
    k = math.isqrt(math.ceil(q))
    return k if k * k >= q else k + 1


def _t_hi(T: np.ndarray) -> Fraction:
    """A float ≥ ‖T‖_F (exact comparison of its square with the exact sum of squares)."""
    t_sq = sum((Fraction(float(x)) ** 2 for x in T.reshape(-1)), Fraction(0))
    t_hi = math.sqrt(float(t_sq)) * (1 + 2.0**-40)
    while Fraction(t_hi) ** 2 < t_sq:
        t_hi *= 1 + 2.0**-40
    return Fraction(t_hi)


def _embedding(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float) -> tuple[list[list[int]], int, int]:
    """The basis, R² (an integer) and c of the module docstring."""
    n, d = U.shape
    m = d * d
    K = (D.T[:, :, None] * U[:, None, :]).reshape(n, m).T  # m×n floats (only to pick A)
    t = T.reshape(-1).astype(np.float64)
    rho = Fraction(R) * _t_hi(T)
    rounding = math.sqrt(m) * (n + 1) / 4  # typical ‖δ‖: σρ about six times it
    e = int(round(math.log2(6 * rounding / float(rho))))
    if not -900 <= e <= 300:
        raise ValueError(f"the scale 2^{e} leaves the float range")
    sigma = Fraction(2) ** e
    A = np.rint(K * float(sigma))
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(t * float(sigma)))):
        raise ValueError(f"the scale 2^{e} leaves the float range")
    a = np.rint(t * float(sigma))
    Uq = [[Fraction(float(v)) for v in row] for row in U]
    Dq = [[Fraction(float(v)) for v in row] for row in D]
    delta_sq = Fraction(0)
    for j in range(m):
        r_, c_ = divmod(j, d)
        dj = abs(Fraction(int(a[j])) - sigma * Fraction(float(t[j])))
        dj += sum((abs(Fraction(int(A[j, i])) - sigma * Dq[r_][i] * Uq[i][c_]) for i in range(n)), Fraction(0))
        delta_sq += dj * dj
    tau = math.ceil(sigma * rho) + _isqrt_up(delta_sq)
    c = 1 << max(0, math.ceil(math.log2(4 * tau / math.sqrt(n + 1))))
    basis = []
    for i in range(n):
        row = [0] * (n + 1) + [int(x) for x in A[:, i]]
        row[i] = 2 * c
        basis.append(row)
    basis.append([c] * (n + 1) + [int(x) for x in a])
    return basis, c * c * (n + 1) + tau * tau, c


def lattice_no_set_closer(U: np.ndarray, D: np.ndarray, T: np.ndarray, R: float,
                          budget: float = 60.0) -> LatticeResult | str:
    """Prove that every S has ‖D_S U_S − T‖_F ≥ R·‖T‖_F, or return the sets that do not (in
    ``closer``, exact); a string says why the check was not done.  ``budget`` (seconds)
    stops the enumeration (in the main thread; elsewhere it runs to its end)."""
    try:
        from fpylll import BKZ, LLL, IntegerMatrix
    except ImportError:
        return "fpylll is not installed (pip install absorb[lattice])"
    n, d = U.shape
    if not (R > 0 and math.isfinite(R)):
        return "the radius must be a positive number"
    if n > MAX_N:
        return f"n = {n} > {MAX_N}: out of the enumeration's reach"
    if not _in_range(U, D, T) or not np.any(T):
        return "an entry is outside the range where the checker's float64 bounds hold (or T = 0)"
    U, D = U.astype(np.float64, copy=False), D.astype(np.float64, copy=False)
    t0 = time.perf_counter()
    exact = _integer_data(U, D, T)
    if exact is not None and exact[3] * _t_hi(T) * Fraction(R) <= 1:
        return _kernel_check(U, exact, Fraction(R), budget, t0)
    try:
        basis, R2, c = _embedding(U, D, T, R)
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        return f"no embedding: {exc}"
    M = IntegerMatrix.from_matrix(basis)
    try:
        LLL.reduction(M)
    except RuntimeError as exc:  # fplll gives up in floating point on some bases
        return f"fpylll's LLL failed: {exc}"
    reduction = "LLL"
    if M.nrows > 20:
        try:  # a failed BKZ leaves a basis of the same lattice: the enumeration is only slower
            BKZ.reduction(M, BKZ.Param(block_size=20, max_loops=4, flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS))
            reduction = "BKZ-20"
        except RuntimeError:
            pass
    got = _fplll_vectors(M, R2, t0 + budget)
    if isinstance(got, str):
        return got
    vecs, nodes = got
    closer: list[tuple[list[int], float]] = []
    seen: set[tuple[int, ...]] = set()
    Rq = Fraction(R)
    for v in vecs:
        if abs(v[n]) != c or any(abs(x) != c for x in v[:n]):
            continue
        sign = -1 if v[n] > 0 else 1  # the set's own vector has −c in column n
        S = [i for i in range(n) if sign * v[i] > 0]
        if tuple(S) in seen:
            continue
        seen.add(tuple(S))
        num, den = _exact_rel_sq(U, D, T, S)
        if num < Rq * Rq * den:
            closer.append((S, math.sqrt(num / den)))
    return LatticeResult(closer, nodes, len(vecs), reduction)


def _fplll_vectors(M, radius: int, deadline: float) -> tuple[list[list[int]], float] | str:
    """fplll's enumeration of every vector (one of ±v) of squared norm ≤ radius·(1 + margin) of
    the lattice of M's rows (stopped at ``deadline`` in the main thread): (vectors, nodes)."""
    from fpylll import GSO, Enumeration, EnumerationError

    G = GSO.Mat(M)
    G.update_gso()
    E = Enumeration(G, nr_solutions=MAX_SOLUTIONS)
    timer = threading.current_thread() is threading.main_thread()
    if timer:
        from cysignals.alarm import AlarmInterrupt, alarm, cancel_alarm

        alarm(max(deadline - time.perf_counter(), 0.01))
    try:
        try:
            sols = E.enumerate(0, M.nrows, float(radius) * (1 + _MARGIN), 0)
        finally:  # (an alarm due just now is caught below, whichever line it lands on)
            if timer:
                cancel_alarm()
    except EnumerationError:  # no vector within the radius
        sols = []
    except KeyboardInterrupt as exc:  # cysignals' AlarmInterrupt is one
        if timer and isinstance(exc, AlarmInterrupt):
            return f"the enumeration was stopped at the checker's budget ({E.get_nodes()} nodes)"
        raise
    if len(sols) >= MAX_SOLUTIONS:
        return f"the enumeration returned its cap of {MAX_SOLUTIONS} vectors"
    k = M.nrows
    mu = np.array([[G.get_mu(i, j) if j < i else 0.0 for j in range(k)] for i in range(k)])
    why = _float_ok([list(M[i]) for i in range(k)], mu, np.array([G.get_r(i, i) for i in range(k)]), None, radius)
    if why:
        return f"fplll's float Gram–Schmidt data failed their exact check ({why})"
    return [list(M.multiply_left([int(round(x)) for x in co])) for _, co in sols], float(E.get_nodes())


def _dyadic_scale(X: np.ndarray) -> int | None:
    """The least g ≥ 0 with X·2^g integral and every |X·2^g| < 2^_INT_BITS, else None."""
    g = 0
    for v in np.asarray(X, dtype=np.float64).reshape(-1):
        if not math.isfinite(float(v)):
            return None
        q = Fraction(float(v))
        g = max(g, q.denominator.bit_length() - 1)  # a float's denominator is a power of two
    top = float(np.max(np.abs(X))) if np.size(X) else 0.0
    return g if math.ldexp(top, g) < 2.0**_INT_BITS else None


_INT_BITS = 40


def _integer_data(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[list[list[int]], list[int], int, int] | None:
    """(Ki, ti, n, 2^(g+h)) with K = Ki/2^(g+h) and vec T = ti/2^(g+h) exactly (K's rows
    j·d_in + k hold D_ji·U_ik), or None when the data are not such integers."""
    g, h = _dyadic_scale(U), _dyadic_scale(D)
    if g is None or h is None:
        return None
    scale = 1 << (g + h)
    ti = []
    for v in T.reshape(-1):
        q = Fraction(float(v)) * scale
        if q.denominator != 1 or abs(q) >= 2**(2 * _INT_BITS):
            return None
        ti.append(int(q))
    Ui = [[int(Fraction(float(v)) * (1 << g)) for v in row] for row in U]
    Di = [[int(Fraction(float(v)) * (1 << h)) for v in row] for row in D]
    n, d_in = U.shape
    if D.shape[1] != n or T.size != D.shape[0] * d_in:
        return None
    Ki = [[Di[j][i] * Ui[i][k] for i in range(n)] for j in range(D.shape[0]) for k in range(d_in)]
    return Ki, ti, n, scale


def _rank(rows: list[list[int]]) -> int:
    """Rank over ℚ of integer rows (Bareiss-free elimination in Fractions, exact)."""
    M = [[Fraction(x) for x in r] for r in rows]
    rank = 0
    for col in range(len(M[0]) if M else 0):
        piv = next((i for i in range(rank, len(M)) if M[i][col] != 0), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        for i in range(len(M)):
            if i != rank and M[i][col] != 0:
                f = M[i][col] / M[rank][col]
                M[i] = [a - f * b for a, b in zip(M[i], M[rank])]
        rank += 1
    return rank


def _l0_basis(K: list[list[int]], t: list[int]) -> list[list[int]] | str:
    """A basis of L0 (module docstring) from an LLL-reduced embedding with a large tail weight."""
    from fpylll import LLL, IntegerMatrix

    n = len(K[0])
    top = max([1] + [abs(x) for r in K for x in r] + [abs(x) for x in t])
    for shift in (24, 48, 96):
        W = 1 << (top.bit_length() + shift + n // 3)
        rows = [[2 if j == i else 0 for j in range(n + 1)] + [W * r[i] for r in K] for i in range(n)]
        rows.append([1] * (n + 1) + [W * x for x in t])
        M = IntegerMatrix.from_matrix(rows)
        try:
            LLL.reduction(M)
        except RuntimeError:
            continue
        got = [list(M[i]) for i in range(M.nrows)]
        zero = [v[:n + 1] for v in got if all(x == 0 for x in v[n + 1:])]
        other = [v[n + 1:] for v in got if any(v[n + 1:])]
        if zero and _rank(other) == len(other):
            return zero
    return "the kernel lattice's basis was not separated by LLL"


def _float_ok(B: list[list[int]], mu: np.ndarray, r: np.ndarray, Bs: np.ndarray | None, radius: int) -> str:
    """'' when no float error of :func:`_walk` (``Bs`` given: ℓ2 and Hölder tests) or of
    fplll's enumeration (``Bs`` None: ℓ2 only, its double recurrence) can prune a lattice
    vector v with ‖v‖² ≤ ``radius`` (and ‖v‖_∞ ≤ 1 with ``Bs``); else the reason.

    Exact Gram–Schmidt data in Fractions (μ, r from the Gram matrix; L⁻¹ by substitution;
    b*_i = Σ_j (L⁻¹)_ij b_j), then, along v's path (its coefficients x exact): the exact
    |y_t| ≤ Y_t (√(radius/r_t), and ‖b*_t‖_1/r_t with Hölder), |x_i| ≤ X_i = Σ_j Y_j|(L⁻¹)_ji|
    (x = y·L⁻¹), and with u = 2^-53 the float errors of the center (Ec), of y (Ey), of the ℓ2
    partial sum (Ed, from Eμ, Er measured exactly) and of the projection's ℓ1 norm (EW, from
    EBs): the ℓ2 test keeps v when Ed ≤ margin·radius, the Hölder test (sq = Σŵ², ab = Σ|ŵ|)
    when EW(2√radius + EW + 2) + 3γ_{N+1}(radius + 1) ≤ margin/2 at every level.  Float
    sums of non-negative bounds are inflated by 1 + 2^-30 (≥ their rounding)."""
    k, N = len(B), len(B[0])
    up, u = 1.0 + 2.0**-30, 2.0**-53

    def hi(q: Fraction) -> float:  # a float ≥ q
        f = float(q)
        return f if Fraction(f) >= q else math.nextafter(f, math.inf)

    G = [[sum(a * b for a, b in zip(B[i], B[j])) for j in range(k)] for i in range(k)]
    mq = [[Fraction(0)] * k for _ in range(k)]
    rq = [Fraction(0)] * k
    for i in range(k):
        for j in range(i):
            mq[i][j] = (G[i][j] - sum((mq[j][m] * mq[i][m] * rq[m] for m in range(j)), Fraction(0))) / rq[j]
        rq[i] = G[i][i] - sum((mq[i][m] ** 2 * rq[m] for m in range(i)), Fraction(0))
        if rq[i] <= 0:
            return "the basis rows are dependent"
    inv = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]  # L⁻¹, unit lower triangular
    for i in range(k):
        for j in range(i):
            inv[i][j] = -sum((mq[i][m] * inv[m][j] for m in range(j, i)), Fraction(0))
    gk, g2, gn = (k * u / (1 - k * u)), (2 * u / (1 - 2 * u)), ((N + 1) * u / (1 - (N + 1) * u))
    Y, beta, ebs, bs1 = [], [], [], []
    for i in range(k):
        Y.append(math.nextafter(math.sqrt(hi(radius / rq[i])), math.inf))
        if Bs is not None:
            den = math.lcm(*(q.denominator for q in inv[i][:i + 1]))
            num = [int(q * den) for q in inv[i][:i + 1]]
            star = [Fraction(sum(c * B[j][col] for j, c in enumerate(num)), den) for col in range(N)]
            beta.append(hi(sum((abs(q) for q in star), Fraction(0)) / rq[i]))
            Y[i] = min(Y[i], beta[i])
            ebs.append(hi(sum((abs(Fraction(float(Bs[i, c])) - q) for c, q in enumerate(star)), Fraction(0))))
            bs1.append(float(np.abs(Bs[i]).sum()) * up)
    X = [sum(Y[j] * hi(abs(inv[j][i])) for j in range(i, k)) * up for i in range(k)]
    Ed = EW = 0.0
    w1 = math.sqrt(N * radius) * up
    for t in range(k - 1, -1, -1):
        Ec = sum(X[i] * (hi(abs(Fraction(float(mu[i, t])) - mq[i][t])) + gk * abs(float(mu[i, t])))
                 for i in range(t + 1, k)) * up
        Ey = (Ec + u * (Y[t] + Ec)) * up
        rt, Er = float(r[t]), hi(abs(Fraction(float(r[t])) - rq[t]))
        Ed = (Ed + Ey * (2 * Y[t] + Ey) * rt + Y[t] ** 2 * Er + g2 * (Y[t] + Ey) ** 2 * rt + 2 * u * (radius + 1)) * up
        if not Ed <= _MARGIN * radius * (1 - 2.0**-40):
            return f"level {t}: the float ℓ2 sums may be off by {Ed:.3g}, over the margin"
        if Bs is not None:
            EW = (EW + (Ey + u * (Y[t] + Ey)) * bs1[t] + Y[t] * ebs[t] + 2 * u * (w1 + 1)) * up
            if not (EW * (2 * math.sqrt(radius) + EW + 2) + 3 * gn * (radius + 1)) * up <= _MARGIN / 2:
                return f"level {t}: the float Hölder sums may be off by {EW:.3g}, over the margin"
    return ""


def _walk(mu: np.ndarray, r: np.ndarray, Bs: np.ndarray, bound: float, slack: float, st: np.ndarray,
          x: np.ndarray, center: np.ndarray, step: np.ndarray, sgn: np.ndarray, part: np.ndarray,
          proj: np.ndarray, out: np.ndarray, cap: int) -> None:
    """Resumable Schnorr–Euchner walk over v = Σ x_i b_i (one of ±v) with the ℓ2 and Hölder
    bounds of the module docstring; ``st`` = [level, found, nodes, finished]; at most ``cap``
    steps a call.  Written for numba; plain Python runs it too."""
    k, N = r.shape[0], Bs.shape[1]
    lev = st[0]
    for _ in range(cap):
        if lev == k:
            st[3] = 1
            break
        y = x[lev] - center[lev]
        p = part[lev + 1] + y * y * r[lev]
        if p > bound:  # the zig-zag only moves away from the center: the level is done
            lev += 1
            if lev == k:
                st[3] = 1
                break
        else:
            sq = 0.0
            ab = 0.0
            for j in range(N):
                w = proj[lev + 1, j] + y * Bs[lev, j]
                proj[lev, j] = w
                sq += w * w
                ab += abs(w)
            if sq <= ab * (1.0 + slack) + slack:
                st[2] += 1
                if lev > 0:
                    part[lev] = p
                    lev -= 1
                    acc = 0.0
                    for i in range(lev + 1, k):
                        acc -= x[i] * mu[i, lev]
                    center[lev] = acc
                    x[lev] = int(np.rint(acc))  # the nearest integer: the zig-zag is then ordered by |x − c|
                    sgn[lev] = 1 if acc >= x[lev] else -1
                    step[lev] = 0
                    continue
                if p > 0.5 and st[1] < out.shape[0]:
                    out[st[1], :] = x
                if p > 0.5:
                    st[1] += 1
        # next value at this level: c, c±1, c∓1, c±2, … (only upwards when all above are 0)
        if part[lev + 1] == 0.0:
            x[lev] += 1
        else:
            step[lev] += 1
            x[lev] += sgn[lev] * step[lev]
            sgn[lev] = -sgn[lev]
    st[0] = lev


_WALK: list = []


def _walker():
    """:func:`_walk` compiled by numba when it is installed, else the plain function."""
    if not _WALK:
        try:
            import numba
            _WALK.append(numba.njit(cache=True)(_walk))
        except ImportError:
            _WALK.append(None)
    return _WALK[0]


def _kernel_vectors(M, deadline: float) -> tuple[list[list[int]], float] | str:
    """The nonzero vectors (one of ±v) with ‖v‖_∞ ≤ 1 of the lattice of M's rows."""
    from fpylll import GSO

    k, N = M.nrows, M.ncols
    B = np.array([list(M[i]) for i in range(k)], dtype=np.float64)
    G = GSO.Mat(M)
    G.update_gso()
    mu = np.array([[G.get_mu(i, j) if j < i else float(i == j) for j in range(k)] for i in range(k)])
    Bs = B.copy()
    for i in range(k):  # b*_i = b_i − Σ_{j<i} μ_ij b*_j
        Bs[i] -= mu[i, :i] @ Bs[:i]
    r = (Bs * Bs).sum(axis=1)
    fn = _walker()
    if fn is None:  # plain Python walks ~10^3 nodes a second: fplll's ℓ2 enumeration instead
        return _fplll_vectors(M, N, deadline)
    st = np.array([k - 1, 0, 0, 0], dtype=np.int64)
    x, step, sgn = np.zeros(k, np.int64), np.zeros(k, np.int64), np.ones(k, np.int64)
    center, part, proj = np.zeros(k), np.zeros(k + 1), np.zeros((k + 1, N))
    out = np.zeros((MAX_SOLUTIONS, k), np.int64)
    while not st[3]:
        if time.perf_counter() > deadline:
            return f"the enumeration was stopped at the checker's budget ({st[2]} nodes)"
        fn(mu, r, Bs, N * (1 + _MARGIN), _MARGIN, st, x, center, step, sgn, part, proj, out, 1 << 22)
    if st[1] >= MAX_SOLUTIONS:
        return f"the enumeration returned its cap of {MAX_SOLUTIONS} vectors"
    rows = [list(M[i]) for i in range(k)]
    why = _float_ok(rows, mu, r, Bs, N)
    if why:
        return f"the walk's float Gram–Schmidt data failed their exact check ({why})"
    vecs = [[sum(int(a) * row[j] for a, row in zip(co, rows)) for j in range(N)] for co in out[:st[1]]]
    return vecs, float(st[2])


def _kernel_check(U: np.ndarray, exact: tuple[list[list[int]], list[int], int, int], Rq: Fraction, budget: float,
                  t0: float) -> LatticeResult | str:
    """Every S with ‖D_S U_S − T‖_F < R‖T‖_F solves Ki b = ti (R·‖T‖·2^(g+h) ≤ 1): find them all."""
    from fpylll import BKZ, LLL, IntegerMatrix

    K, t, n, _ = exact
    basis = _l0_basis(K, t)
    if isinstance(basis, str):
        return basis
    M = IntegerMatrix.from_matrix(basis)
    LLL.reduction(M)
    reduction = "kernel lattice, LLL"
    # BKZ-20, and BKZ-30 past dimension 40 (market split m = 7, dimension 55: seconds, against
    # an enumeration of ~10^7 nodes that larger blocks shrink: BKZ-40 1.6× fewer than BKZ-30)
    for block in (20, 30):
        if M.nrows <= (20 if block == 20 else 40):
            break
        try:
            BKZ.reduction(M, BKZ.Param(block_size=block, max_loops=4, flags=BKZ.AUTO_ABORT | BKZ.MAX_LOOPS))
            reduction = f"kernel lattice, BKZ-{block}"
        except RuntimeError:
            break
    got = _kernel_vectors(M, t0 + budget)
    if isinstance(got, str):
        return got
    vecs, nodes = got
    t_sq = sum(x * x for x in t)
    closer: list[tuple[list[int], float]] = []
    for v in vecs:
        if any(abs(x) != 1 for x in v):
            continue
        sign = -1 if v[n] > 0 else 1
        S = [i for i in range(n) if sign * v[i] > 0]
        res_sq = sum((sum(row[i] for i in S) - ti) ** 2 for row, ti in zip(K, t))
        if Fraction(res_sq) < Rq * Rq * t_sq:
            closer.append((S, math.sqrt(res_sq / t_sq)))
    return LatticeResult(closer, nodes, len(vecs), reduction)
