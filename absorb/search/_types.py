"""The one result type every index-set backend returns.

The question a backend answers, for ``U = W_up`` (n×d, rows u_i), ``D = W_down`` (d×n,
columns w_i) and a target ``T`` (d×d; ``-I`` for the plain residual, ``-M/c`` in general):

    is there an index set S ⊆ {0..n-1} with  ‖D[:,S] U[S,:] − T‖_F ≤ tol · ‖T‖_F ?

Statuses (three-valued, never read as booleans):

* ``found``      — ``S`` is such a set; ``residual`` is ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F
                   recomputed in float64 by the backend.
* ``infeasible`` — *proved*: every S has relative residual > tol. ``bound`` is a rigorous
                   lower bound on min_S ‖D[:,S]U[S,:] − T‖_F / ‖T‖_F (so bound > tol), and
                   ``certificate`` says how it was proved (exhaustive enumeration with
                   rounding bounds, Z3 over exact rationals, a dual matrix Y, a rank bound).
                   Floating-point solver claims that are not rigorous never give this status.
* ``unknown``    — budget exhausted, or the backend could not decide; ``reason`` says why.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

DEFAULT_TOL = 1e-9
"""Default relative tolerance of the index-set condition (the ``tol`` above), used everywhere."""

#: the index-set search backends (the portfolio keys its table by these)
Backend = Literal["linalg", "enumerate", "mitm", "milp", "z3", "z3-pb", "lattice", "cp-sat"]
#: a search method: one backend, or ``"auto"`` (the portfolio)
Method = Literal["auto", Backend]
METHODS: tuple[str, ...] = ("auto", *get_args(Backend))


class SearchStatus(str, enum.Enum):
    FOUND = "found"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SearchResult:
    status: SearchStatus
    method: str
    reason: str
    S: tuple[int, ...] | None = None
    residual: float | None = None
    bound: float | None = None
    elapsed: float = 0.0
    certificate: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        assert isinstance(self.status, SearchStatus)
        if self.status is SearchStatus.FOUND:
            assert self.S is not None and self.residual is not None
        if self.status is SearchStatus.INFEASIBLE:
            assert self.bound is not None
