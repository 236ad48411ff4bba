"""Z3 backends: a plain ``If``-sum over exact rationals and a pseudo-Boolean encoding.

Why two: the ``If``-sum is the obvious baseline (docs/mathematics.md §4 measured it: 15 s at d = 3,
n = 30); the pseudo-Boolean (PB) encoding over integers lets Z3's SAT core with cardinality
/PB reasoning take over, which finds planted sets fast.  Both are kept small and behind one
adapter loop (:func:`_run`): every solver object is local to the call, Z3's ``unknown``
(including its timeout) becomes ``unknown``, never ``infeasible``.

Both search with an entrywise box ``|r_jk| ≤ ε_box`` on ``R = D diag(b) U − T`` where
``ε_box = 2·tol·‖T‖_F`` (‖T‖_F replaced by a rigorous upper bound, as a rational):

* *completeness*: a set with ``‖R‖_F ≤ tol‖T‖_F`` has ``max|r_jk| ≤ ‖R‖_F ≤ ε_box``, so it
  satisfies the box; a model is re-verified in float64 (a box solution can have Frobenius
  residual up to d·ε_box) and blocked if it fails;
* *unsat*: every unblocked set has some ``|r_jk| > ε_box``, hence ``‖R‖_F > 2·tol·‖T‖_F``;
  the blocked sets get exact-rational bounds; ``bound`` is the minimum of the two.

**Pseudo-Boolean slack derivation.**  Let ``s = 2^k`` and, for each entry j = (row, col),
``c_ji = round(s·K_ji)`` and ``τ_j = round(s·t_j)``, rounded over exact rationals
(``K_ji = D_row,i · U_i,col`` as a product of two dyadic floats is itself rational), so
``|s·K_ji − c_ji| ≤ 1/2`` and ``|s·t_j − τ_j| ≤ 1/2``.  For any S,

    | s·r_j − (Σ_{i∈S} c_ji − τ_j) | ≤ (|S| + 1)/2 ≤ (n + 1)/2 .

The constraint is ``|Σ_{i∈S} c_ji − τ_j| ≤ B`` with ``B = ⌊s·ε_box + (n+1)/2⌋``.  If
``|r_j| ≤ ε_box`` the integer left side is ≤ s·ε_box + (n+1)/2, hence ≤ B: no solution is
cut off.  If the constraint fails, ``|Σc − τ| ≥ B + 1 > s·ε_box + (n+1)/2``, hence
``s|r_j| > s·ε_box``: unsat keeps the same meaning as over exact rationals.  ``k`` is chosen
so that ``s·ε_box ≥ 64(n+1)`` (the slack then loosens the box by ~1 %) *unless* Z3's PB
constraints, which take 32-bit C ints, force a smaller ``s`` (Σ_i|c_ji| + |τ_j| + B < 2^30).
At tol = 1e-9 that is the usual case: the box is then effectively
``(s·ε_box + (n+1)/2)/s``, much wider than ``ε_box``, so more models fail the float64 check and
get blocked, but the derivation above does not depend on the ratio: unsat stays sound and
no solution is lost.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from absorb.rigorous import frobenius_bounds, relative_residual

from ._common import classify_candidates
from ._types import SearchResult, SearchStatus

#: the box half-width is BOX_FACTOR · tol · ‖T‖_F
BOX_FACTOR = 2


def _exact_K(U: np.ndarray, D: np.ndarray) -> list[list[Fraction]]:
    """Rows j = (row, col) of K as exact rationals: K_ji = D[row, i] · U[i, col]."""
    d_out, n = D.shape
    d_in = U.shape[1]
    Df = [[Fraction(float(x)) for x in row] for row in D]
    Uf = [[Fraction(float(x)) for x in row] for row in U]
    return [[Df[a][i] * Uf[i][b] for i in range(n)] for a in range(d_out) for b in range(d_in)]


def _ceil_log2(q: Fraction) -> int:
    """An integer e with q ≤ 2^e < 4q, for a rational q > 0 (exact, for any magnitude)."""
    return q.numerator.bit_length() - q.denominator.bit_length() + 1


def _run(
    name: str,
    U: np.ndarray,
    D: np.ndarray,
    T: np.ndarray,
    tol: float,
    timeout: float,
    encode: Callable[[object, list, Fraction], None],
) -> SearchResult:
    import z3

    t0 = time.perf_counter()
    n = U.shape[0]
    _, t_hi = frobenius_bounds(T)
    eps_box = BOX_FACTOR * Fraction(tol) * Fraction(t_hi)
    solver = z3.Solver()
    b = [z3.Bool(f"b{i}") for i in range(n)]
    encode(solver, b, eps_box)
    blocked: list[tuple[int, ...]] = []
    while True:
        remaining = timeout - (time.perf_counter() - t0)
        if remaining <= 0:
            return SearchResult(SearchStatus.UNKNOWN, name, f"time budget {timeout:g}s spent",
                                elapsed=time.perf_counter() - t0)
        solver.set("timeout", max(1, int(remaining * 1000)))
        verdict = solver.check()
        if verdict == z3.sat:
            model = solver.model()
            S = tuple(i for i in range(n) if z3.is_true(model.eval(b[i], model_completion=True)))
            res = relative_residual(U, D, T, S)
            if res <= tol:
                return SearchResult(SearchStatus.FOUND, name, "Z3 model, re-verified in float64",
                                    S=S, residual=res, elapsed=time.perf_counter() - t0)
            blocked.append(S)
            solver.add(z3.Or([z3.Not(b[i]) for i in S] + [b[i] for i in range(n) if i not in S]))
            continue
        if verdict == z3.unsat:
            _, _, lower = classify_candidates(U, D, T, blocked, tol)
            box_bound = BOX_FACTOR * tol  # ‖R‖_F > ε_box ≥ BOX_FACTOR·tol·‖T‖_F for the rest
            bound = min(box_bound, lower)
            if bound > tol:
                return SearchResult(
                    SearchStatus.INFEASIBLE, name,
                    f"Z3 unsat for the box |r_jk| ≤ {BOX_FACTOR}·tol·‖T‖_F over exact arithmetic",
                    bound=bound, elapsed=time.perf_counter() - t0,
                    certificate={"kind": "z3-unsat", "blocked": [list(s) for s in blocked]})
            return SearchResult(SearchStatus.UNKNOWN, name,
                                "a blocked set has exact residual ≤ tol but float64 residual > tol",
                                elapsed=time.perf_counter() - t0)
        return SearchResult(SearchStatus.UNKNOWN, name,
                            f"Z3 unknown ({solver.reason_unknown()}) within the budget {timeout:g}s",
                            elapsed=time.perf_counter() - t0)


def solve_z3(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0,
) -> SearchResult:
    """Plain encoding: ``-ε ≤ Σ_i If(b_i, K_ji, 0) − t_j ≤ ε`` over exact rationals (baseline)."""
    import z3

    K = _exact_K(U, D)
    t = [Fraction(float(x)) for x in T.ravel()]

    def q(x: Fraction) -> z3.ArithRef:
        return z3.RealVal(f"{x.numerator}/{x.denominator}")

    def encode(solver: z3.Solver, b: list, eps: Fraction) -> None:
        solver.set("random_seed", seed)
        for j, row in enumerate(K):
            expr = z3.Sum([z3.If(b[i], q(row[i]), z3.RealVal(0)) for i in range(len(b))])
            solver.add(expr - q(t[j]) <= q(eps), expr - q(t[j]) >= -q(eps))

    return _run("z3", U, D, T, tol, timeout, encode)


def solve_z3_pb(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0,
) -> SearchResult:
    """Pseudo-Boolean encoding over integer-scaled coefficients (slack: module docstring)."""
    import z3

    n = U.shape[0]
    K = _exact_K(U, D)
    t = [Fraction(float(x)) for x in T.ravel()]

    def encode(solver: z3.Solver, b: list, eps: Fraction) -> None:
        solver.set("random_seed", seed)
        # Z3's PbLe/PbGe take C ints: keep Σ|c_ji| + |τ_j| + B below 2^30.
        need = max(sum(abs(x) for x in row) + abs(t[j]) for j, row in enumerate(K)) + eps
        # exponents from the exact rationals (floats of them overflow for weights near 2^±500)
        k_fit = 29 - _ceil_log2(need + Fraction(n + 1, 2**20))
        k = min(_ceil_log2(Fraction(64 * (n + 1)) / eps), k_fit)
        s = Fraction(2) ** k
        bound = math.floor(s * eps + Fraction(n + 1, 2))
        for j, row in enumerate(K):
            c = [round(s * x) for x in row]
            tau = round(s * t[j])
            terms = [(b[i], int(c[i])) for i in range(n) if c[i] != 0]
            if not terms:
                if abs(tau) > bound:
                    solver.add(z3.BoolVal(False))
                continue
            solver.add(z3.PbLe(terms, tau + bound), z3.PbGe(terms, tau - bound))

    return _run("z3-pb", U, D, T, tol, timeout, encode)
