"""The lattice backend's exact route for integer data (market split): the kernel lattice and
its ∞-norm (Hölder) pruned Schnorr–Euchner enumeration (:mod:`absorb.search.lattice` explains
the route, its exactness argument and the measured node counts; this module holds its pieces).

When U, D and T are integers after one power-of-two scale each (:func:`integer_system`), every
set within the tolerance solves K b = t exactly, and those solutions are the ±1 vectors of the
kernel lattice (:func:`kernel_basis`), enumerated by :func:`holder_enumerate` (compiled by numba
when installed: :func:`_jitted`).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np

from absorb._dask import cores

#: the radius's margin for the float Gram–Schmidt data of an enumeration, and the most solutions
#: one enumeration may return (past it: unknown) — shared with the embedding route's fplll proof
_ENUM_MARGIN = 2.0**-8
_MAX_SOLUTIONS = 4096
#: the exact route: entries of at most this many bits after a power-of-two scale
_EXACT_BITS = 40


def _int_exponent(X: np.ndarray, bits: int) -> int | None:
    """The least e in [−64, 64] with X·2^e integral and every |X·2^e| < 2^bits, else None
    (exact: scaling by a power of two is; one pass of frexp, no trial scalings)."""
    X = np.asarray(X, dtype=np.float64).ravel()
    if not np.all(np.isfinite(X)):
        return None
    X = X[X != 0]
    if not X.size:
        return 0
    mant, ex = np.frexp(np.abs(X))  # |x| = mant·2^ex, mant ∈ [1/2, 1)
    m = np.ldexp(mant, 53).astype(np.int64)  # the 53-bit significand, exact
    low = np.log2((m & -m).astype(np.float64)).astype(np.int64)  # its trailing zero bits
    e = max(-64, int(np.max(53 - ex - low)))  # x·2^e integral iff e ≥ 53 − ex − low
    if e > 64 or math.ldexp(float(np.max(np.abs(X))), e) >= 2.0**bits:
        return None
    return e


def integer_system(U: np.ndarray, D: np.ndarray, T: np.ndarray) -> tuple[list[list[int]], list[int], int] | None:
    """``(Kint, tint, e)`` with K = 2^-e·Kint and t = vec T = 2^-e·tint *exactly* (K the exact
    reals D_ji·U_ik of :func:`khatri_rao`'s layout), when U, D and T are dyadic numbers of at
    most _EXACT_BITS bits after one power-of-two scale each (market split: integers); else None."""
    g, h = _int_exponent(U, _EXACT_BITS), _int_exponent(D, _EXACT_BITS)
    if g is None or h is None:
        return None
    e = g + h
    t = np.asarray(T, dtype=np.float64).ravel()
    if not np.all(np.isfinite(t)) or (t.size and float(np.max(np.abs(np.ldexp(t, e)))) >= 2.0**(2 * _EXACT_BITS)):
        return None
    if not np.all(np.ldexp(t, e) % 1 == 0):
        return None
    Ui = [[int(x) for x in row] for row in np.ldexp(np.asarray(U, dtype=np.float64), g)]
    Di = [[int(x) for x in row] for row in np.ldexp(np.asarray(D, dtype=np.float64), h)]
    n, d_in = len(Ui), (len(Ui[0]) if Ui else 0)
    K = [[Di[j][i] * Ui[i][k] for i in range(n)] for j in range(len(Di)) for k in range(d_in)]
    return K, [int(x) for x in np.ldexp(t, e)], e


def _independent(rows: list[list[int]]) -> bool:
    """Whether integer rows are linearly independent over ℚ (fraction-free elimination, exact)."""
    M = [list(r) for r in rows]
    rank, cols = 0, len(M[0]) if M else 0
    for col in range(cols):
        piv = next((i for i in range(rank, len(M)) if M[i][col]), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        p = M[rank]
        for i in range(rank + 1, len(M)):
            if M[i][col]:
                f = M[i][col]
                M[i] = [p[col] * a - f * b for a, b in zip(M[i], p)]
        rank += 1
    return rank == len(M)


def kernel_basis(K: list[list[int]], t: list[int]) -> list[list[int]] | None:
    """A basis of L0 = {(2b − λ·1, λ) + …: K(Σ) = λ t}, the vectors of the ±1 embedding
    ``row i = (2e_i | 0 | N·K[:, i])``, ``row n = (1 | 1 | N·t)`` whose tail is zero (first n + 1
    coordinates).  LLL with a large N puts them first; they are a basis of L0 when the other
    rows' tails are linearly independent (then a zero-tail combination uses none of them),
    which is checked exactly: None when it fails for every N tried."""
    from fpylll import LLL, IntegerMatrix

    r, n = len(K), len(K[0])
    big = max([1] + [abs(x) for row in K for x in row] + [abs(x) for x in t])
    for extra in (16, 32, 64):
        N = 1 << (big.bit_length() + extra + n // 4)
        rows = []
        for i in range(n):
            row = [0] * (n + 1) + [N * K[j][i] for j in range(r)]
            row[i] = 2
            rows.append(row)
        rows.append([1] * (n + 1) + [N * x for x in t])
        M = IntegerMatrix.from_matrix(rows)
        try:
            LLL.reduction(M)
        except RuntimeError:
            continue
        vecs = [list(M[i]) for i in range(M.nrows)]
        ker = [v[:n + 1] for v in vecs if not any(v[n + 1:])]
        rest = [v[n + 1:] for v in vecs if any(v[n + 1:])]
        if ker and _independent(rest):
            return ker
    return None


def exact_gso(B: list[list[int]]) -> tuple[list[int], list[list[int]], list[list[int]]]:
    """The exact Gram–Schmidt data of independent integer rows B (k×N), in integers only:
    ``(d, lam, P)`` with d[i] the Gram determinant of b_0..b_{i−1} (d[0] = 1, all > 0),
    lam[i][j] = d[j+1]·μ_ij (j < i), and P[i] = d[i]·(b*_i | row i of L⁻¹) (N + k integers),
    where B = L·B* (L unit lower triangular, L_ij = μ_ij), so that r_i = ‖b*_i‖² = d[i+1]/d[i],
    b*_i = P[i][:N]/d[i] and (L⁻¹)_ij = P[i][N + j]/d[i].

    The integral Gram–Schmidt recursion (Cohen, *A Course in Computational Algebraic Number
    Theory*, Alg. 2.6.7) for d and lam, and for P the same recursion on the rows (b_i | e_i):
    with Q⁽ʲ⁾ = d[j]·(the part of (b_i | e_i) orthogonal to b_0..b_{j−1}),
    Q⁽ʲ⁺¹⁾ = (d[j+1]·Q⁽ʲ⁾ − lam[i][j]·P[j]) / d[j].  Every division is exact (Cramer's rule
    makes each d[j]-multiple integral); it is checked, and a remainder raises (a bug, never a
    verdict).  ValueError when the rows are dependent."""
    k, N = len(B), len(B[0])
    G = [[sum(a * b for a, b in zip(B[i], B[j])) for j in range(i + 1)] for i in range(k)]
    d, lam = [1] * (k + 1), [[0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1):
            u = G[i][j]
            for m in range(j):
                u, rem = divmod(d[m + 1] * u - lam[i][m] * lam[j][m], d[m])
                if rem:
                    raise ArithmeticError("integral Gram–Schmidt: an inexact division")
            if j < i:
                lam[i][j] = u
            elif u <= 0:
                raise ValueError("the basis rows are linearly dependent")
            else:
                d[i + 1] = u
    rows: list[np.ndarray] = []  # object arrays of Python ints: exact, with numpy's loops
    for i in range(k):
        q = np.array([int(a) for a in B[i]] + [0] * k, dtype=object)
        q[N + i] = 1
        for j in range(i):
            q = d[j + 1] * q - lam[i][j] * rows[j]
            if any(q % d[j]):
                raise ArithmeticError("integral Gram–Schmidt: an inexact division")
            q //= d[j]
        rows.append(q)
    return d, lam, [[int(a) for a in q] for q in rows]


def _up(num: int, den: int) -> float:
    """A float ≥ num/den (num ≥ 0, den > 0): Python's int/int division is correctly rounded."""
    return math.nextafter(num / den, math.inf)


def _err(f: float, num: int, den: int) -> float:
    """A float ≥ |f − num/den| (den > 0), exact rational arithmetic."""
    p, q = float(f).as_integer_ratio()
    return _up(abs(p * den - num * q), q * den)


#: float bounds below are sums and products of at most ~10^4 non-negative floats, each
#: operation correctly rounded: a relative error ≤ γ_{10^4} < 2^-39 each; _INFLATE covers it
_INFLATE = 1.0 + 2.0**-30
_U = 2.0**-53


def certify_float_gso(B: list[list[int]], mu: np.ndarray, rr: np.ndarray, Bs: np.ndarray | None,
                      ybound: np.ndarray | None, radius_sq: int, margin: float) -> str:
    """'' when the float Gram–Schmidt data an enumeration of the lattice of B's rows prunes
    with are close enough to the exact ones that no vector v with ‖v‖² ≤ radius_sq (and,
    when ``Bs`` is given, ‖v‖_∞ ≤ 1) is pruned; else the reason (then no verdict may rest on
    the enumeration).  The exact data are computed once (:func:`exact_gso`, integers).

    The argument, for such a v = Σ x_i b_i and each level t of its path (x_i, i ≥ t, its own
    integer coefficients, exact): with the exact y_i = ⟨v, b*_i⟩/r_i,
    |y_i| ≤ Y_i := min(‖b*_i‖_1/r_i [Hölder, with Bs], √(radius_sq/r_i)); the coefficients
    x = y·L⁻¹ give |x_i| ≤ X_i := Σ_j Y_j |(L⁻¹)_ji|.  The walk computes, in float64,
    c_t = −Σ_{i>t} x_i μ_it (any summation order: error ≤ γ_k Σ|x_i μ̂_it|), y_t = x_t − c_t,
    d_t = d_{t+1} + y_t²·r_t and w_t = w_{t+1} + y_t·b*_t (with its ℓ1 norm), so, from the
    data errors Eμ, Er, EBs measured exactly against :func:`exact_gso`:

        Ec_t = Σ_{i>t} X_i (Eμ_it + γ_k|μ̂_it|),   Ey_t = Ec_t + u(Y_t + Ec_t),
        Ed_t = Ed_{t+1} + Ey_t(2Y_t + Ey_t) r̂_t + Y_t² Er_t + γ_2 (Y_t + Ey_t)² r̂_t + 2u(radius_sq + 1),
        EW_t = EW_{t+1} + (Ey_t + u(Y_t + Ey_t))‖b̂*_t‖_1 + Y_t EBs_t + 2u(√(N·radius_sq) + 1)

    bound |d̂_t − d_t| and ‖ŵ_t − w_t‖_1 (u = 2^-53; each a float sum rounded upwards by
    _INFLATE).  The prunes then keep v when, at every level: Ed_t ≤ margin·radius_sq
    (ℓ2: d_t ≤ radius_sq, the walk tests radius_sq·(1 + margin)); with Bs, ‖b*_t‖_1/r_t + Ey_t
    ≤ ybound_t (the y-interval), and Ed_t + EW_t ≤ margin/2 (Hölder: d_t ≤ ‖w_t‖_1, the walk
    tests d̂ ≤ ŝ1(1 + margin) + margin, and γ_N ŝ1 ≪ margin·ŝ1); Ed_0 < 1/2 follows (the
    zero-vector test).  The zig-zag visits a level's values in non-decreasing |x − ĉ| and the
    computed |ŷ|, d̂ are monotone in it (rounding is monotone), so a level ended by a failed
    ℓ2 or y test never skips v's value when v's own value passes."""
    k, N = len(B), len(B[0])
    try:
        d, lam, P = exact_gso(B)
    except ValueError as exc:
        return f"the exact Gram–Schmidt check failed: {exc}"
    gk, g2 = k * _U / (1 - k * _U), 2 * _U / (1 - 2 * _U)
    Y, beta, ebs, bs1 = [0.0] * k, [0.0] * k, [0.0] * k, [0.0] * k
    for i in range(k):
        Y[i] = math.nextafter(math.sqrt(_up(radius_sq * d[i], d[i + 1])), math.inf)  # sqrt: correctly rounded
        if Bs is not None:
            beta[i] = _up(sum(abs(a) for a in P[i][:N]), d[i + 1])
            Y[i] = min(Y[i], beta[i])
            ebs[i] = sum(_err(Bs[i, j], P[i][j], d[i]) for j in range(N)) * _INFLATE
            bs1[i] = float(np.abs(Bs[i]).sum()) * _INFLATE
    X = [sum(Y[j] * _up(abs(P[j][N + i]), d[j]) for j in range(i, k)) * _INFLATE for i in range(k)]
    Ed = EW = 0.0
    w1 = math.sqrt(N * radius_sq) * _INFLATE  # ‖w_t‖_1 ≤ √N·‖w_t‖_2 ≤ √(N·radius_sq)
    for t in range(k - 1, -1, -1):
        Ec = sum(X[i] * (_err(mu[i, t], lam[i][t], d[t + 1]) + gk * abs(float(mu[i, t]))) for i in range(t + 1, k))
        Ec *= _INFLATE
        Ey = (Ec + _U * (Y[t] + Ec)) * _INFLATE
        rt, Er = float(rr[t]), _err(rr[t], d[t + 1], d[t])
        Ed = (Ed + Ey * (2 * Y[t] + Ey) * rt + Y[t] * Y[t] * Er + g2 * (Y[t] + Ey) ** 2 * rt
              + 2 * _U * (radius_sq + 1)) * _INFLATE
        if not Ed <= margin * radius_sq * (1 - 2.0**-40):  # the walk's radius_sq·(1 + margin), rounded
            return f"level {t}: the float ℓ2 partial sums may be off by {Ed:.3g} > the margin {margin * radius_sq:.3g}"
        if Bs is not None and ybound is not None:
            EW = (EW + (Ey + _U * (Y[t] + Ey)) * bs1[t] + Y[t] * ebs[t] + 2 * _U * (w1 + 1)) * _INFLATE
            if not (beta[t] + Ey) * _INFLATE <= float(ybound[t]):
                return f"level {t}: the float y-bound {float(ybound[t]):.6g} is below the exact one plus its error"
            if not (Ed + EW) * _INFLATE <= margin / 2:
                return f"level {t}: the float Hölder sums may be off by {Ed + EW:.3g} > half the margin {margin:g}"
    return ""


def _holder_enum(mu: np.ndarray, rr: np.ndarray, Bs: np.ndarray, R2: float, margin: float, x: np.ndarray,
                 dx: np.ndarray, ddx: np.ndarray, c: np.ndarray, dist: np.ndarray, W: np.ndarray,
                 ybound: np.ndarray, state: np.ndarray, sols: np.ndarray, budget: int, stop: int,
                 floor: int, ceil: int) -> int:
    """Schnorr–Euchner enumeration of the nonzero lattice vectors v = Σ x_i b_i (one of ±v)
    with ‖v‖² ≤ R2 and ‖v‖_∞ ≤ 1, over levels ``floor``..``ceil`` (x above ``ceil`` fixed by
    the caller, with ``dist`` and ``W`` there), resumable: ``state`` = [level, recorded,
    nodes, done]; runs at most ``budget`` node evaluations, or until ``stop`` records, and
    returns the evaluations made.  A node passing every prune at level ``floor`` is recorded
    (its x into ``sols``): with floor = 0 the vectors sought (the zero vector left out), with
    floor > 0 the prefixes below which the caller splits the work.

    Prunes at level t (each with the relative ``margin``): ‖π_t(v)‖² ≤ R2 (ℓ2);
    |y_t| ≤ ‖b*_t‖_1/‖b*_t‖² (y_t = ⟨v, b*_t⟩/‖b*_t‖², Hölder with ‖v‖_∞ ≤ 1); and
    ‖w‖² ≤ ‖w‖_1 for w = π_t(v) = Σ_{i≥t} y_i b*_i (‖w‖² = ⟨v, w⟩ ≤ ‖v‖_∞·‖w‖_1; ‖w‖² is the
    ℓ2 partial sum).  The first two grow with |y_t| along the zig-zag (a failure ends the
    level); the third does not (a failure skips this value only).  Written for numba's
    nopython mode; plain Python runs the same code, slower."""
    N = Bs.shape[1]
    t = state[0]
    evals = 0
    while evals < budget:
        if t > ceil:
            state[3] = 1
            break
        evals += 1
        y = x[t] - c[t]
        d = dist[t + 1] + y * y * rr[t]
        if d <= R2 and abs(y) <= ybound[t]:
            s1 = 0.0
            for j in range(N):
                w = W[t + 1, j] + y * Bs[t, j]
                W[t, j] = w
                s1 += abs(w)
            if d <= s1 * (1.0 + margin) + margin:
                state[2] += 1
                if t == floor:
                    if floor > 0 or d > 0.5:  # the zero vector is no solution (a prefix of zeros is)
                        if state[1] < sols.shape[0]:
                            for i in range(floor, x.shape[0]):
                                sols[state[1], i] = x[i]
                        state[1] += 1
                        if state[1] >= stop:
                            evals = budget  # pause here (resumable: the zig-zag goes on below)
                else:
                    dist[t] = d
                    t -= 1
                    s = 0.0
                    for i in range(t + 1, x.shape[0]):
                        s -= x[i] * mu[i, t]
                    c[t] = s
                    x[t] = int(np.rint(s))
                    step = 1 if s >= x[t] else -1
                    dx[t] = step
                    ddx[t] = step
                    continue
            # this value fails (or was recorded): the next one at the same level
        else:  # out of the ℓ2 ball or the y-interval: every later value at this level is too
            t += 1
            if t > ceil:
                state[3] = 1
                break
        if dist[t + 1] != 0.0:
            x[t] += dx[t]
            ddx[t] = -ddx[t]
            dx[t] = ddx[t] - dx[t]
        else:  # all levels above are zero: x ≥ 0 here (−v is v's twin)
            x[t] += 1
    state[0] = t
    return evals


_JIT: Any = None


def _jitted() -> Any:
    """:func:`_holder_enum` compiled by numba (the optional ``absorb[lattice]`` dependency:
    ~10^6–10^7 nodes a second against ~10^4–10^5 in plain Python), or None without numba."""
    global _JIT
    if _JIT is None:
        try:
            import numba
        except ImportError:
            _JIT = False
        else:
            _JIT = numba.njit(cache=True, nogil=True)(_holder_enum)
    return _JIT or None


def _float_gso(B: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The float64 Gram–Schmidt data of the rows B, from a QR of Bᵀ: ``(mu, rr, Bs)`` with
    mu[i, j] = ⟨b_i, b*_j⟩/‖b*_j‖² (j < i), rr[i] = ‖b*_i‖², Bs[i] = b*_i (checked against
    the exact ones by :func:`certify_float_gso` before any claim rests on them)."""
    Q, R = np.linalg.qr(np.array(B, dtype=np.float64).T)  # Bᵀ = Q R: b*_i = R[i, i] q_i
    diag = np.diag(R).copy()
    return (np.ascontiguousarray((R / diag[:, None]).T), diag * diag, np.ascontiguousarray((Q * diag).T))


def holder_enumerate(B: list[list[int]], deadline: float, *, jit: bool = True, first: bool = False,
                     threads: int | None = None) -> tuple[list[list[int]] | None, float, str]:
    """Every nonzero vector v (one of ±v) with ‖v‖_∞ ≤ 1 of the lattice spanned by the integer
    rows B (independent), or with ``first`` the first one found (the enumeration stops
    there): ``(vectors, nodes, "")``, or ``(None, nodes, why)`` when stopped at ``deadline``
    (perf_counter seconds; checked between chunks of nodes) or past the cap of
    _MAX_SOLUTIONS vectors.  The Gram–Schmidt data are float64 (a QR of B's small integer
    rows); every prune carries the relative margin _ENUM_MARGIN, and the vectors returned are
    B's exact integer combinations.  A complete list (every vector, or ``first`` finding none)
    is returned only when :func:`certify_float_gso` proves, against the exact Gram–Schmidt
    data of B, that no float error of the walk can prune a vector sought (else None and the
    reason: no claim).  With numba and ``threads`` > 1 (default: the cores this
    process may use) the tree is cut below its top levels into prefixes that the threads
    take in turn (numba releases the GIL)."""
    k, N = len(B), len(B[0])
    mu, rr, Bs = _float_gso(B)
    ybound = np.abs(Bs).sum(axis=1) / rr * (1 + _ENUM_MARGIN)
    R2 = float(N) * (1 + _ENUM_MARGIN)  # ‖v‖_∞ ≤ 1 ⇒ ‖v‖² ≤ N
    fn = _jitted() if jit else None
    chunk = 1 << 20 if fn is not None else 1 << 14
    run = fn or _holder_enum
    threads = max(1, cores() if threads is None else threads) if fn is not None else 1
    stop = 1 if first else _MAX_SOLUTIONS
    lock, halt = threading.Lock(), [""]

    def fresh() -> list[np.ndarray]:  # x, dx, ddx, c, dist, W
        return [np.zeros(k, np.int64), np.ones(k, np.int64), np.ones(k, np.int64), np.zeros(k), np.zeros(k + 1),
                np.zeros((k + 1, N))]

    def drive(arrs: list[np.ndarray], state: np.ndarray, out: np.ndarray, floor: int, ceil: int, cap: int) -> str:
        while not state[3] and state[1] < cap:
            if halt[0]:
                return halt[0]
            if time.perf_counter() >= deadline:
                return f"the enumeration was stopped at the time budget ({state[2]:.3g} nodes here)"
            run(mu, rr, Bs, R2, _ENUM_MARGIN, *arrs, ybound, state, out, chunk, cap, floor, ceil)
        return ""

    # the prefixes: every node passing the prunes at level `floor` (the top k − floor levels),
    # deep enough for ≥ 64 a thread, or the whole tree in one piece (one thread, small k)
    floor, jobs, top_nodes = 0, np.zeros((1, k), np.int64), 0.0
    if threads > 1 and k >= 16:
        cap = 1 << 15
        for depth in range(4, k - 4, 2):
            arrs, state, out = fresh(), np.array([k - 1, 0, 0, 0], np.int64), np.zeros((cap, k), np.int64)
            why = drive(arrs, state, out, k - depth, k - 1, cap)
            if why:
                return None, float(state[2]), why
            if state[1] >= cap:
                break
            floor, jobs, top_nodes = k - depth, out[:state[1]].copy(), float(state[2])
            if len(jobs) >= 64 * threads:
                break
    total = [top_nodes]
    found: list[np.ndarray] = []
    order = iter(range(len(jobs)))

    def worker() -> None:  # a failure of any kind stops everything: no claim from a partial walk
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - re-raised as the reason, never swallowed into a verdict
            with lock:
                halt[0] = f"the enumeration failed: {exc!r}"

    def work() -> None:
        arrs, out = fresh(), np.zeros((_MAX_SOLUTIONS, k), np.int64)
        x, dx, ddx, c, dist, W = arrs
        while True:
            with lock:
                i = next(order, None)
            if i is None or halt[0]:
                return
            for a in arrs:
                a.fill(0)
            x[floor:] = jobs[i, floor:]
            for lev in range(k - 1, floor - 1, -1):  # the prefix's partial sums, top down
                y = float(x[lev]) + float(mu[lev + 1:, lev] @ x[lev + 1:])
                dist[lev] = dist[lev + 1] + y * y * rr[lev]
                W[lev] = W[lev + 1] + y * Bs[lev]
            ceil = floor - 1 if floor > 0 else k - 1
            lev = ceil
            c[lev] = -float(mu[lev + 1:, lev] @ x[lev + 1:]) if lev < k - 1 else 0.0
            x[lev] = int(np.rint(c[lev]))
            dx[lev] = ddx[lev] = 1 if c[lev] >= x[lev] else -1
            state = np.array([lev, 0, 0, 0], np.int64)
            why = drive(arrs, state, out, 0, ceil, stop)
            with lock:
                total[0] += float(state[2])
                found.extend(out[:min(int(state[1]), _MAX_SOLUTIONS)].copy())
                if why and not halt[0]:
                    halt[0] = why
                if len(found) >= stop and not halt[0]:
                    halt[0] = "enough"
            if why:
                return

    if threads > 1 and len(jobs) > 1:
        pool = [threading.Thread(target=worker, daemon=True) for _ in range(min(threads, len(jobs)))]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    else:
        worker()
    if halt[0] and halt[0] != "enough":
        return None, total[0], halt[0]
    if len(found) >= _MAX_SOLUTIONS:
        return None, total[0], f"the enumeration returned its cap of {_MAX_SOLUTIONS} vectors"
    if not (first and found):  # a claim that the list is complete: it rests on the float data
        why = certify_float_gso(B, mu, rr, Bs, ybound, N, _ENUM_MARGIN)
        if why:
            return None, total[0], f"the float Gram–Schmidt data failed their exact check ({why})"
    vectors = []
    for row in found[:stop]:
        coeffs = [int(a) for a in row]
        vectors.append([sum(a * b[j] for a, b in zip(coeffs, B) if a) for j in range(N)])
    return vectors, total[0], ""
