"""Exact index-set search: is there S with ‖D[:,S] U[S,:] − T‖_F ≤ tol·‖T‖_F?

This package answers the combinatorial core of docs/mathematics.md §4: with ``a_i = vec(w_i u_i^T)``
and ``K = [a_1 … a_n]`` (d²×n), find ``b ∈ {0,1}^n`` with ``K b ≈ vec(T)``, or prove that
none exists, or say "unknown".  One dispatcher, :func:`find_index_set`, sits in front of
small backends (one module each); every backend returns a
:class:`~absorb.search._types.SearchResult`.

Soundness is the contract (docs/mathematics.md §5):

* ``found`` is only ever returned after :func:`relative_residual` — a plain float64
  recomputation of ``‖D[:,S]U[S,:] − T‖_F / ‖T‖_F`` — is ≤ ``tol``; the dispatcher
  recomputes it again itself, whatever backend produced ``S``.
* ``infeasible`` needs a rigorous proof (exhaustive search with explicit floating-point
  error bounds, Z3 ``unsat`` over exact rationals, or a dual matrix ``Y`` checked with
  rounding bounds) and a rigorous lower bound ``bound > tol``.  A floating-point solver
  claim alone (HiGHS "infeasible") never gives this status.
* everything else, including a spent budget, is ``unknown`` with a reason.

Layout (each module imports only the ones above it, never this package face):

* :mod:`absorb.rigorous` — Higham's γ_k, the safe input range, rigorous norms and exact
  residuals, shared with the engine;
* :mod:`._types` — :class:`SearchResult`; :mod:`._common` — ``K`` and the candidate check;
* :mod:`.bounds` — the dual bound of docs/mathematics.md §4 and the box relaxation;
* the backends :mod:`.linalg`, :mod:`.enumerate`, :mod:`.mitm`, :mod:`.milp`, :mod:`.smt`,
  :mod:`.lattice` (optional fpylll or python-flint) and :mod:`.cpsat` (a finder only;
  optional ortools);
* :mod:`.portfolio` — :func:`find_index_set`, which imports the backends lazily.

Nothing does work at import time.

Example::

    >>> import numpy as np
    >>> from absorb.search import find_index_set
    >>> U = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 5.0]])
    >>> D = np.array([[-1.0, 0.0, 7.0], [0.0, -1.0, 2.0]])
    >>> find_index_set(U, D, -np.eye(2)).S
    (0, 1)
"""

from __future__ import annotations

from absorb._lazy import lazy_exports as _lazy_exports

# The public names and where they live, imported on first use (PEP 562): the CLI reads
# DEFAULT_TOL and METHODS without paying for numpy, let alone the backends.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("SAFE_EXPONENT", "UNIT_ROUNDOFF", "exact_relative_residual_bounds", "exact_residual_sq",
                     "frobenius_bounds", "gamma", "magnitudes_ok", "relative_residual", "rescaled", "sqrt_down",
                     "sqrt_up"), "absorb.rigorous"),
    "_rescaled": "absorb.rigorous:rescaled",  # the name the tests and older callers use
    **dict.fromkeys(("classify_candidates", "khatri_rao"), "absorb.search._common"),
    **dict.fromkeys(("DEFAULT_TOL", "SearchResult", "SearchStatus", "METHODS", "Method"), "absorb.search._types"),
    **dict.fromkeys(("dual_bound", "relaxation_bound"), "absorb.search.bounds"),
    **dict.fromkeys(("NARROW_MAX_ENTRIES", "QUICK_MITM_SECONDS", "find_index_set",
                     "_checked"),  # the dispatcher's re-check, for the tests
                    "absorb.search.portfolio"),
}

__all__ = [
    "DEFAULT_TOL",
    "METHODS",
    "Method",
    "NARROW_MAX_ENTRIES",
    "QUICK_MITM_SECONDS",
    "SAFE_EXPONENT",
    "SearchResult",
    "SearchStatus",
    "UNIT_ROUNDOFF",
    "classify_candidates",
    "dual_bound",
    "exact_relative_residual_bounds",
    "exact_residual_sq",
    "find_index_set",
    "frobenius_bounds",
    "gamma",
    "khatri_rao",
    "magnitudes_ok",
    "relative_residual",
    "relaxation_bound",
    "sqrt_down",
    "sqrt_up",
]
# NARROW_MAX_ENTRIES and QUICK_MITM_SECONDS are read by the portfolio from its own module:
# patch absorb.search.portfolio, not this face, to change them.

__getattr__, __dir__ = _lazy_exports("absorb.search", _EXPORTS, globals())
