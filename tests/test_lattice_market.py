"""The exact (kernel-lattice) route for integer data, market split: integer_system reads the
data exactly or declines; the ∞-norm pruned enumeration (plain Python and numba) returns
exactly the 0/1 solutions brute force finds; the search decides as MITM does and the
checker's own kernel enumeration agrees, in exact integers."""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from absorb.search import SearchStatus, find_index_set
from absorb.search import lattice as lat

pytestmark = pytest.mark.skipif(importlib.util.find_spec("fpylll") is None, reason="fpylll is not installed")
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba is not installed")


def market(m: int, seed: int, n: int | None = None, planted: bool = False):
    """Cornuéjols–Dawande: coefficients 0..99, n = 10(m − 1), right side ⌊Σ/2⌋ (U = ones,
    D = A); ``planted``: the right side A x of a random 0/1 x instead."""
    n = n or 10 * (m - 1)
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m, n))
    b = A @ rng.integers(0, 2, size=n) if planted else A.sum(axis=1) // 2
    return np.ones((n, 1)), A.astype(np.float64), b.astype(np.float64)[:, None]


def brute(D: np.ndarray, T: np.ndarray) -> set[tuple[int, ...]]:
    """Every 0/1 x with A x = b (n ≤ 20: 2^n columns at once)."""
    n = D.shape[1]
    X = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(np.int64)
    hit = np.all(X @ D.T.astype(np.int64) == T[:, 0].astype(np.int64), axis=1)
    return {tuple(int(i) for i in np.flatnonzero(x)) for x in X[hit]}


def test_integer_system_reads_integers_exactly_and_declines_the_rest() -> None:
    U, D, T = market(3, 0)
    K, t, e = lat.integer_system(U, D, T)
    assert e == 0 and K == D.astype(np.int64).tolist() and t == T[:, 0].astype(np.int64).tolist()
    K2, t2, e2 = lat.integer_system(U / 4, D, T / 4)  # dyadic: one exact scale
    assert e2 == 2 and K2 == K and t2 == t
    rng = np.random.default_rng(0)
    assert lat.integer_system(rng.standard_normal((8, 2)), rng.standard_normal((2, 8)), -np.eye(2)) is None
    assert lat.integer_system(U, D, T + 0.1) is None  # T not on the grid
    assert lat.integer_system(U, D * 2.0**45, T) is None  # too many bits


@pytest.mark.parametrize("jit", [False, pytest.param(True, marks=needs_numba)])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_holder_enumeration_finds_exactly_the_solutions(seed: int, jit: bool) -> None:
    """m = 3, n = 16 (2^16 sets by brute force; planted right sides for odd seeds): the ±1
    vectors of the kernel lattice are exactly the solutions."""
    U, D, T = market(3, seed, n=16, planted=seed % 2 == 1)
    K, t, _ = lat.integer_system(U, D, T)
    B = lat.kernel_basis(K, t)
    assert B is not None and len(B) == 16 + 1 - 3
    vecs, nodes, why = lat.holder_enumerate(B, time.perf_counter() + 60, jit=jit)
    assert vecs is not None, why
    got = set(lat.candidates(iter(vecs), 16, 1))
    assert all(abs(x) == 1 for v in vecs for x in v)  # ‖v‖_∞ ≤ 1 and odd: ±1
    assert got == brute(D, T) and (got or seed % 2 == 0)


@pytest.mark.parametrize("seed", [400, 401, 402, 500, 501])
def test_kernel_route_decides_market_split_as_mitm_does(seed: int) -> None:
    U, D, T = market(seed // 100, seed)
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=60, find=False)
    ref = find_index_set(U, D, T, tol=1e-9, timeout=60, method="mitm")
    assert ref.status is not SearchStatus.UNKNOWN
    assert res.status is ref.status, res.reason
    assert res.certificate["route"] == "kernel"
    if res.status is SearchStatus.INFEASIBLE:
        assert res.bound > 1e-9 and res.bound * np.linalg.norm(T) < 1  # below the integer grid
    else:
        assert np.array_equal(D[:, list(res.S)].sum(axis=1), T[:, 0])


def test_a_stopped_kernel_enumeration_is_unknown() -> None:
    U, D, T = market(5, 501)
    plan = lat.lattice_plan(U, D, T, tol=1e-9)
    assert plan.route == "kernel"
    now = time.perf_counter()
    res = lat.prove_lattice(U, D, T, plan, tol=1e-9, deadline=now - 1.0, t0=now)
    assert res.status is SearchStatus.UNKNOWN


def test_a_tolerance_wider_than_the_grid_keeps_the_embedding_route() -> None:
    """tol·‖T‖ ≥ 1: sets with K b ≠ t may lie within tol, which the kernel route cannot see."""
    U, D, T = market(4, 400)
    plan = lat.lattice_plan(U, D, T, tol=1.0 / np.linalg.norm(T))
    assert plan.route == "embedding"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_checker_kernel_route_reports_exactly_the_solutions(seed: int) -> None:
    from absorb.verify._lattice import LatticeResult, lattice_no_set_closer

    U, D, T = market(3, seed, n=16, planted=seed > 0)
    res = lattice_no_set_closer(U, D, T, 1e-6)
    assert isinstance(res, LatticeResult) and res.reduction.startswith("kernel")
    assert {tuple(S) for S, _ in res.closer} == brute(D, T) and (res.closer or seed == 0)


def test_checker_confirms_the_searchs_infeasibility() -> None:
    from absorb.verify._lattice import LatticeResult, lattice_no_set_closer

    U, D, T = market(5, 501)
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=60, find=False)
    assert res.status is SearchStatus.INFEASIBLE
    chk = lattice_no_set_closer(U, D, T, res.bound)
    assert isinstance(chk, LatticeResult) and chk.reduction.startswith("kernel") and chk.closer == []


@needs_numba
def test_threads_walk_the_same_tree() -> None:
    """Cut into prefixes for two threads, the walk visits the same nodes and returns the same
    vectors as in one piece (m = 5: a kernel lattice of dimension 36)."""
    for seed in (500, 502):
        U, D, T = market(5, seed)
        K, t, _ = lat.integer_system(U, D, T)
        B = lat.kernel_basis(K, t)
        one = lat.holder_enumerate(B, time.perf_counter() + 60, threads=1)
        two = lat.holder_enumerate(B, time.perf_counter() + 60, threads=2)
        assert one[0] is not None and two[0] is not None
        assert one[1] == two[1] and sorted(one[0]) == sorted(two[0]) and one[0]


def test_without_numba_fplll_walks_the_kernel_lattice(monkeypatch: pytest.MonkeyPatch) -> None:
    """No numba: the search and the checker enumerate the same kernel lattice with fplll's ℓ2
    enumeration instead, and still decide (m = 5: ~10^5 nodes)."""
    from absorb.search import _kernel
    from absorb.verify import _lattice as vlat

    monkeypatch.setattr(_kernel, "_JIT", False)
    monkeypatch.setattr(vlat, "_WALK", [None])
    U, D, T = market(5, 501)
    plan = lat.lattice_plan(U, D, T, tol=1e-9, budget=60)
    res = lat.solve_lattice(U, D, T, tol=1e-9, timeout=60, find=False)
    assert plan.engine == "fplll" and res.status is SearchStatus.INFEASIBLE, res.reason
    assert res.certificate["engine"] == "fpylll+fplll"
    chk = vlat.lattice_no_set_closer(U, D, T, res.bound)
    assert isinstance(chk, vlat.LatticeResult) and chk.closer == [] and chk.reduction.startswith("kernel")
