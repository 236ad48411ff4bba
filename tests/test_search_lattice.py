"""The lattice backend (absorb.search.lattice): the embedding holds the planted set's short
vector exactly, sets are read back from it, planted sets are found and verified; the proof's
rigorous radius holds every set within the search radius (even one that is no solution), a
complete enumeration proves infeasibility, and one cut short (budget, cap) answers unknown."""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from absorb.search import SearchStatus, find_index_set, relative_residual
from absorb.search import _embedding as emb
from absorb.search import lattice as lat
from absorb.search._common import khatri_rao

FOUND, UNKNOWN = SearchStatus.FOUND, SearchStatus.UNKNOWN

needs_engine = pytest.mark.skipif(lat.lattice_engine() is None,
                                  reason="neither fpylll nor python-flint is installed")


def planted(d: int, n: int, seed: int):
    """Gaussian U, D with a set of n/2 columns planted: D[:,S] = −pinv(U[S])."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    D = rng.standard_normal((d, n))
    S = np.sort(rng.choice(n, size=n // 2, replace=False))
    D[:, S] = -np.linalg.pinv(U[S])
    return U, D, -np.eye(d), tuple(int(i) for i in S)


def test_embedding_holds_the_planted_vector() -> None:
    U, D, T, S = planted(2, 24, seed=5)
    K, t = khatri_rao(U, D), T.ravel()
    B = lat.embedding(K, t)
    n = U.shape[0]
    assert len(B) == n + 1 and all(len(row) == n + 1 + K.shape[0] for row in B)
    # Σ_{i∈S} row_i − row_n, in exact integers: ±c on the first n + 1 entries, a short tail
    v = [sum(B[i][k] for i in S) - B[n][k] for k in range(len(B[0]))]
    c = emb._C
    assert all(abs(x) == c for x in v[: n + 1])
    assert max(abs(x) for x in v[n + 1:]) < 64 * c  # rounding of ~n/2 terms, not 2^53
    # read back, in either sign
    assert list(lat.candidates(iter([v]), n)) == [S]
    assert list(lat.candidates(iter([[-x for x in v]]), n)) == [S]
    # a vector that is not of the ±c form gives no candidate
    w = list(v)
    w[0] = 3 * c
    assert list(lat.candidates(iter([w]), n)) == []


@needs_engine
def test_planted_d3_n128_found_and_verified() -> None:
    U, D, T, S = planted(3, 128, seed=0)
    res = find_index_set(U, D, T, method="lattice", timeout=30)
    assert res.status is FOUND, res.reason
    assert res.S == S
    assert relative_residual(U, D, T, res.S) <= 1e-9


@needs_engine
def test_planted_d4_n64_found() -> None:
    U, D, T, S = planted(4, 64, seed=1)
    res = find_index_set(U, D, T, method="lattice", timeout=30)
    assert res.status is FOUND, res.reason
    assert relative_residual(U, D, T, res.S) <= 1e-9


@needs_engine
@pytest.mark.slow
def test_planted_d2_n96_found_by_bkz() -> None:
    """d = 2 (4 equations) is the dense end: LLL alone misses, BKZ-40 finds it (~40–85 s
    on a loaded 2-core machine; no other backend finds it within 60 s)."""
    U, D, T, S = planted(2, 96, seed=0)
    res = find_index_set(U, D, T, method="lattice", timeout=300)
    assert res.status is FOUND, res.reason
    assert res.S == S


@needs_engine
def test_planted_d4_n128_found() -> None:
    U, D, T, S = planted(4, 128, seed=1)
    res = find_index_set(U, D, T, method="lattice", timeout=30)
    assert res.status is FOUND, res.reason
    assert res.S == S


needs_fpylll = pytest.mark.skipif(lat.lattice_engine() != "fpylll", reason="fpylll is not installed")


@needs_engine
def test_generic_finder_alone_is_never_found_nor_infeasible() -> None:
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((40, 2)), rng.standard_normal((2, 40))
    res = lat.solve_lattice(U, D, -np.eye(2), timeout=2, prove=False)
    assert res.status is UNKNOWN and res.bound is None


@needs_fpylll
def test_generic_d2_n64_proved_infeasible_by_enumeration() -> None:
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((64, 2)), rng.standard_normal((2, 64))
    res = find_index_set(U, D, -np.eye(2), method="lattice", timeout=60)
    assert res.status is SearchStatus.INFEASIBLE, res.reason
    assert res.bound > 1e-9 and res.certificate["kind"] == "lattice-enumeration"


@needs_fpylll
def test_planted_d2_n64_found_by_the_proof_lattice() -> None:
    U, D, T, S = planted(2, 64, seed=1)
    plan = lat.lattice_plan(U, D, T, tol=1e-9)
    res = lat.prove_lattice(U, D, T, plan, tol=1e-9, deadline=time.perf_counter() + 60, t0=time.perf_counter())
    assert res.status is FOUND and res.S == S, res.reason


@pytest.mark.parametrize("factor", [0.0, 3.9])
def test_rigorous_radius_holds_every_set_within_the_search_radius(factor: float) -> None:
    """A set at relative residual ≈ factor·tol (≤ SEARCH_FACTOR·tol: a set the enumeration must
    meet, solution or not) lies inside R², in exact integers."""
    from absorb.rigorous import frobenius_bounds

    tol = 1e-9
    U, D, T, S = planted(2, 48, seed=7)
    T = T.copy()
    T[0, 1] = factor * tol * np.linalg.norm(T)  # moves the planted set's residual by ~factor·tol
    rel = relative_residual(U, D, T, S)
    assert rel <= lat.SEARCH_FACTOR * tol * (1 - 1e-6)
    _, t_hi = frobenius_bounds(T)
    basis, R2, c, _ = lat.proof_embedding(khatri_rao(U, D), T.ravel(), lat.SEARCH_FACTOR * tol * t_hi)
    n = U.shape[0]
    v = [sum(basis[i][k] for i in S) - basis[n][k] for k in range(len(basis[0]))]
    assert sum(x * x for x in v) <= R2
    assert all(abs(x) == c for x in v[: n + 1])
    assert list(lat.candidates(iter([v]), n, c)) == [S]


@needs_fpylll
def test_enumeration_cut_short_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """An enumeration that returned its cap of vectors (here 1: the planted set's) may have
    left others out: it proves nothing, and answers nothing but unknown."""
    U, D, T, _ = planted(2, 48, seed=2)
    monkeypatch.setattr(lat, "_MAX_SOLUTIONS", 1)
    plan = lat.lattice_plan(U, D, T, tol=1e-9)
    now = time.perf_counter()
    res = lat.prove_lattice(U, D, T, plan, tol=1e-9, deadline=now + 60, t0=now)
    assert res.status is UNKNOWN and "cap" in res.reason


@needs_fpylll
def test_enumeration_stopped_at_the_deadline_is_unknown() -> None:
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((48, 2)), rng.standard_normal((2, 48))
    T = -np.eye(2)
    plan = lat.lattice_plan(U, D, T, tol=1e-9)
    now = time.perf_counter()
    res = lat.prove_lattice(U, D, T, plan, tol=1e-9, deadline=now - 1.0, t0=now)
    assert res.status is UNKNOWN and "time budget" in res.reason


def test_a_wrong_set_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reduction that hands back a set that is no solution never makes it ``found``."""
    U, D, T, S = planted(2, 24, seed=5)
    wrong = tuple(sorted(set(range(24)) - set(S)))
    n = U.shape[0]

    def fake_reduced(engine, basis, deadline, note):  # (in this process: a spawned child would not see a patch)
        yield "LLL", [[2 if i in wrong else -2 for i in range(n)] + [-2, 0, 0, 0, 0]]

    monkeypatch.setattr(lat, "lattice_engine", lambda: "fpylll")
    monkeypatch.setattr(lat, "_reduced", fake_reduced)
    res = lat.solve_lattice(U, D, T, timeout=5, prove=False)
    assert res.status is UNKNOWN and "1 candidate" in res.reason


def test_missing_engine_is_said_and_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lat, "lattice_engine", lambda: None)
    monkeypatch.setattr(lat, "lattice_seconds", lambda n, r: 0.0)  # no slice too short for LLL
    U, D, T, _ = planted(2, 24, seed=5)
    res = find_index_set(U, D, T, method="lattice", timeout=5)
    assert res.status is UNKNOWN and "pip install absorb[lattice]" in res.reason
    # the portfolio, where MITM is out of reach (n = 96, d = 2), says the same and goes on
    rng = np.random.default_rng(4)
    U, D = rng.standard_normal((96, 2)), rng.standard_normal((2, 96))
    res = find_index_set(U, D, -np.eye(2), timeout=4.0)
    assert res.status is not SearchStatus.INFEASIBLE or res.bound is not None
    methods = [step["method"] for step in res.certificate["portfolio"]]
    assert "lattice" in methods
    assert "absorb[lattice]" in res.reason or res.status is not UNKNOWN


@needs_engine
def test_lll_over_budget_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """LLL cannot be cut short: a basis whose LLL is expected to take over twice the budget
    is not started (d = 4, n = 256: ~30 s expected, against 1 s), neither the finder's nor
    (with fpylll) the proof's; each reduction here fails the test if it is started."""

    def started(*a: object, **k: object) -> None:
        raise AssertionError("a reduction was started")

    monkeypatch.setattr(lat, "_reduced", started)
    if lat.lattice_engine() == "fpylll":
        from fpylll import LLL

        monkeypatch.setattr(LLL, "reduction", started)
        # the proof's plan in this process, where the stand-in above is seen
        monkeypatch.setattr(lat, "run_limited", lambda fn, *a, timeout, **k: fn(*a, **k))
    U, D, T, _ = planted(4, 256, seed=0)
    res = lat.solve_lattice(U, D, T, timeout=1.0)
    assert res.status is UNKNOWN and "LLL of the 257-row basis is expected to take" in res.reason, res.reason


@pytest.mark.skipif(importlib.util.find_spec("flint") is None, reason="python-flint is not installed")
def test_flint_fallback_finds_with_lll(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without fpylll, python-flint's LLL (no BKZ) still finds low-density planted sets."""
    monkeypatch.setattr(lat, "lattice_engine", lambda: "flint")
    U, D, T, S = planted(3, 96, seed=0)
    res = lat.solve_lattice(U, D, T, timeout=30)
    assert res.status is FOUND and res.S == S, res.reason
    assert res.certificate["engine"] == "flint"


def test_portfolio_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``auto`` puts lattice reduction: after a short Z3-PB look when MITM cannot run,
    a slice before a long MITM run, nothing before a short one, nothing LLL cannot fit."""
    import math
    import time

    from absorb.search import portfolio as pf

    U, D, T, _ = planted(2, 96, seed=0)
    run = pf._Portfolio(U, D, T, (U, D, T), 1e-9, 60.0, 0, None, time.perf_counter(), pf._Verifier(U, D, T))
    proof = ["lattice"] if lat.lattice_engine() == "fpylll" else []  # the enumeration's step
    assert [name for name, _ in pf._lattice_steps(run, math.inf, affordable=False)] == [*proof, "z3-pb", "lattice"]
    assert [name for name, _ in pf._lattice_steps(run, 80.0, affordable=True)] == [*proof, "lattice"]
    assert [name for name, _ in pf._lattice_steps(run, 1.0, affordable=True)] == proof
    assert pf._lattice_steps(run, 0.05, affordable=True) == []
    monkeypatch.setattr(lat, "lattice_seconds", lambda n, r: 100.0)  # LLL longer than any slice
    assert pf._lattice_steps(run, math.inf, affordable=False) == []


def test_a_scale_out_of_range_is_declined() -> None:
    """A tolerance so small that σ would need over 300 bits: the plan declines, no proof."""
    U, D, T, _ = planted(2, 24, seed=5)
    plan = lat.lattice_plan(U, D, T, tol=1e-300)
    if lat.lattice_engine() == "fpylll":
        assert plan.why_not is not None and "scale" in plan.why_not
    assert plan.seconds() == float("inf")


@needs_fpylll
def test_enumeration_stopped_by_the_alarm_is_unknown() -> None:
    """d = 2, n = 80 generic: ~10¹² nodes by the plan's estimate; 10 ms are not enough on any
    machine, and the answer is unknown (the process goes on: the alarm is caught)."""
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((80, 2)), rng.standard_normal((2, 80))
    T = -np.eye(2)
    plan = lat.lattice_plan(U, D, T, tol=1e-9)
    assert plan.nodes > 1e9, plan.nodes
    now = time.perf_counter()
    res = lat.prove_lattice(U, D, T, plan, tol=1e-9, deadline=now + 0.01, t0=now)
    assert res.status is UNKNOWN and "time budget" in res.reason


@needs_fpylll
def test_auto_decides_generic_d2_n64_by_the_lattice_proof() -> None:
    """MITM would need ~2^30 sums a side (it refuses at 60 s); auto's lattice step proves it."""
    rng = np.random.default_rng(11)
    U, D = rng.standard_normal((64, 2)), rng.standard_normal((2, 64))
    res = find_index_set(U, D, -np.eye(2), timeout=60)
    assert res.status is SearchStatus.INFEASIBLE and res.method == "lattice", res.reason
    assert res.bound > 1e-9


def test_embedding_of_subnormal_rows_is_refused_not_crashed() -> None:
    """Entries near 2^-1074 against a target of size 1: the scale to 2^bits overflows; the
    backend answers unknown with the reason (it raised OverflowError from int(inf))."""
    from absorb.search import find_index_set

    U = np.full((4, 3), 1e-323)
    D = np.ones((3, 4))
    res = find_index_set(U, D, -np.eye(3), tol=1e-9, method="lattice", timeout=10)
    assert res.status.value == "unknown"
