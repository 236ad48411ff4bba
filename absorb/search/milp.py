"""HiGHS (``scipy.optimize.milp``) backend: a candidate finder, not a prover.

Why: a branch-and-bound MILP solver is a standard baseline for the narrow regime
(docs/mathematics.md §4 measured HiGHS: d = 3, n = 48 infeasible in 16 s, d = 2, n = 48 timing out).
The encoding is the entrywise box ``t_j − ε ≤ (K b)_j ≤ t_j + ε`` with binary ``b`` and
``ε = tol·‖T‖_F`` (every set with Frobenius residual ≤ tol·‖T‖_F satisfies it).

Soundness: HiGHS works in floating point with absolute feasibility tolerances (~1e-7),
far above ``tol``.  So

* a HiGHS solution is only a *candidate*: it is rounded to 0/1 and re-verified in float64;
  a failed candidate is cut off with a no-good cut and HiGHS runs again (budget allowing);
* HiGHS "infeasible" is a floating-point claim, not a proof: it gives ``unknown`` with
  ``certificate["highs"] = "infeasible"`` (the benchmark reports it as the baseline's
  claim; the portfolio never treats it as a verdict).
"""

from __future__ import annotations

import time

import numpy as np

from absorb.rigorous import frobenius_bounds, relative_residual

from ._common import khatri_rao
from ._types import SearchResult, SearchStatus


def solve_milp(
    U: np.ndarray, D: np.ndarray, T: np.ndarray, *, tol: float = 1e-9, timeout: float = 60.0,
    seed: int = 0,
) -> SearchResult:
    """Ask HiGHS for a 0/1 point in the box; ``found`` (verified) or ``unknown``.

    ``seed`` is unused (scipy does not expose HiGHS's random seed).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    t0 = time.perf_counter()
    n = U.shape[0]
    K = khatri_rao(U, D)
    t = T.ravel()
    _, t_hi = frobenius_bounds(T)
    eps = tol * t_hi
    rows = [K]
    lows = [t - eps]
    highs = [t + eps]
    tried = 0
    while True:
        remaining = timeout - (time.perf_counter() - t0)
        if remaining <= 0.002:  # (the portfolio gives HiGHS 10 ms slices)
            return SearchResult(SearchStatus.UNKNOWN, "milp", f"time budget {timeout:g}s spent "
                                f"({tried} HiGHS candidates failed verification)",
                                elapsed=time.perf_counter() - t0)
        res = milp(
            np.zeros(n), integrality=np.ones(n), bounds=Bounds(0, 1),
            constraints=LinearConstraint(np.vstack(rows), np.concatenate(lows), np.concatenate(highs)),
            options={"time_limit": remaining, "presolve": True},
        )
        if res.x is not None:
            S = tuple(int(i) for i in np.nonzero(np.round(res.x) > 0.5)[0])
            r = relative_residual(U, D, T, S)
            if r <= tol:
                return SearchResult(SearchStatus.FOUND, "milp", "HiGHS solution, re-verified in float64",
                                    S=S, residual=r, elapsed=time.perf_counter() - t0)
            # no-good cut: Σ_{i∈S}(1 − b_i) + Σ_{i∉S} b_i ≥ 1
            tried += 1
            cut = np.ones(n)
            cut[list(S)] = -1.0
            rows.append(cut[None, :])
            lows.append(np.array([1.0 - len(S)]))
            highs.append(np.array([np.inf]))
            continue
        if res.status == 2:
            return SearchResult(SearchStatus.UNKNOWN, "milp",
                                "HiGHS reports infeasible (a floating-point claim, not a proof)",
                                elapsed=time.perf_counter() - t0,
                                certificate={"highs": "infeasible", "failed_candidates": tried})
        return SearchResult(SearchStatus.UNKNOWN, "milp",
                            f"HiGHS stopped without a solution ({res.message}); budget {timeout:g}s",
                            elapsed=time.perf_counter() - t0, certificate={"highs": str(res.status)})
