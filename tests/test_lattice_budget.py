"""The lattice backend keeps to its time budget: its reductions (LLL cannot be interrupted,
nor a BKZ tour) run in a child process that is killed when the budget is spent.

No timing is asserted (the machine is shared): each test gives a budget far below what the
reduction needs (d = 4, n = 256: LLL alone takes ~20 s) and checks the verdict and the
reason, which says that the reduction was stopped; without the child process the reduction
would run to its end and the reason would say how far it got.
"""

from __future__ import annotations

import numpy as np
import pytest

import absorb.search.lattice as lat
from absorb.search import SearchStatus, find_index_set

needs_engine = pytest.mark.skipif(lat.lattice_engine() is None, reason="neither fpylll nor python-flint is installed")
needs_fpylll = pytest.mark.skipif(lat.lattice_engine() != "fpylll", reason="fpylll is not installed")


def _big(d: int = 4, n: int = 256) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Planted |S| = n/2 (as benchmarks/bench_narrow.py --lattice): a basis of dimension
    n + 1 + d² whose LLL takes seconds to tens of seconds."""
    rng = np.random.default_rng(1000 * d + n)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    S = np.sort(rng.choice(n, size=n // 2, replace=False))
    D[:, S] = -np.linalg.pinv(U[S])
    return U, D, -np.eye(d)


@pytest.fixture
def no_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reduction is started whatever its estimated cost (the gate that refuses an LLL
    expected to outlast twice the budget would otherwise answer before any reduction). The reductions run in
    forked children, which see this patch: a spawned one (the sandbox's choice when another thread is alive in
    this worker, which depends on the tests run before) would not."""
    import multiprocessing as mp

    import absorb._sandbox as sandbox

    monkeypatch.setattr(lat, "lattice_seconds", lambda n, r: 0.0)
    monkeypatch.setattr(sandbox, "_context", lambda start_method: mp.get_context("fork"))


@needs_engine
@pytest.mark.usefixtures("no_gate")
def test_the_finders_reduction_is_stopped_at_the_budget() -> None:
    U, D, T = _big()
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=0.5, prove=False)
    assert res.status is SearchStatus.UNKNOWN
    assert "reduction up to nothing" in res.reason and "the reduction was stopped (time" in res.reason


@needs_fpylll
@pytest.mark.usefixtures("no_gate")
def test_the_proofs_reduction_is_stopped_at_the_budget() -> None:
    U, D, T = _big()
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=0.5, find=False)
    assert res.status is SearchStatus.UNKNOWN
    assert "no proof: the reduction was stopped (time" in res.reason


@needs_engine
@pytest.mark.usefixtures("no_gate")
def test_a_tiny_budget_on_a_big_instance_returns_unknown() -> None:
    """The portfolio on d = 2, n = 256 with a budget of one second: it returns, unknown (the
    lattice steps were started, every reduction stopped or declined within the budget). A
    first run imports the solvers: on a loaded machine those imports alone once spent the
    second before the lattice step's turn, and the portfolio stops at its budget."""
    U, D, T = _big(2, 256)
    for _ in range(2):
        res = find_index_set(U, D, T, tol=1e-9, timeout=1.0, method="auto")
        assert res.status is SearchStatus.UNKNOWN
    assert "lattice" in {step["method"] for step in res.certificate["portfolio"]}


@needs_engine
def test_a_found_set_still_comes_back_through_the_child() -> None:
    """d = 3, n = 64 planted: the set the child's reduction shows is read back and verified."""
    U, D, T = _big(3, 64)
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=60.0, prove=False)
    assert res.status is SearchStatus.FOUND and res.residual <= 1e-9
