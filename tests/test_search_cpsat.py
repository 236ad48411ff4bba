"""The CP-SAT finder (absorb.search.cpsat, optional ortools): planted sets are found and
re-verified, a wrong set is never accepted (neither by the backend nor by the dispatcher),
its "infeasible" is no verdict, the budget is kept, the ``auto`` portfolio gives it a slice
only where meet-in-the-middle cannot run, and ``absorb check --help`` does not import it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest
from test_search_lattice import planted

from absorb.search import SearchResult, SearchStatus, find_index_set, relative_residual
from absorb.search import cpsat as cs
from absorb.search import portfolio as pf

FOUND, INFEASIBLE, UNKNOWN = SearchStatus.FOUND, SearchStatus.INFEASIBLE, SearchStatus.UNKNOWN


def planted_half(d: int, n: int, seed: int):
    """Gaussian U, D with n/2 columns planted (D[:,S] = −pinv(U[S])), as benchmarks/bench_narrow.py."""
    return planted(d, n, seed)[:3]


def generic(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((d, n)), -np.eye(d)


def test_planted_d2_found_and_verified() -> None:
    pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T = planted_half(2, 48, seed=2048)
    res = find_index_set(U, D, T, method="cp-sat", timeout=20)
    assert res.status is FOUND, res.reason
    assert res.method == "cp-sat"
    assert relative_residual(U, D, T, res.S) <= 1e-9  # the caller's own recomputation


class _LyingSolver:
    """A stand-in for ``cp_model.CpSolver`` whose first answer is a wrong set (every
    variable true) and whose second is "infeasible"."""

    def __init__(self) -> None:
        from ortools.sat.python import cp_model

        self.parameters = types.SimpleNamespace()
        self.calls = 0
        self._model = cp_model

    def solve(self, model):
        self.calls += 1
        return self._model.FEASIBLE if self.calls == 1 else self._model.INFEASIBLE

    def boolean_value(self, literal) -> bool:
        return True

    def status_name(self, status) -> str:
        return "X"

    def stop_search(self) -> None:
        pass


def test_backend_rejects_a_wrong_candidate_and_its_infeasible_is_no_proof(monkeypatch) -> None:
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    monkeypatch.setattr(cp_model, "CpSolver", _LyingSolver)
    U, D, T = generic(2, 12, seed=1)
    assert relative_residual(U, D, T, tuple(range(12))) > 1e-9
    res = find_index_set(U, D, T, method="cp-sat", timeout=5)
    assert res.status is UNKNOWN
    assert "not a proof" in res.reason
    assert res.certificate["failed_candidates"] == 1


def test_two_searches_offering_the_same_wrong_set_count_it_once(monkeypatch) -> None:
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    monkeypatch.setattr(cp_model, "CpSolver", _LyingSolver)
    U, D, T = generic(2, 12, seed=1)
    res = cs.solve_cpsat(U, D, T, timeout=5, threads=2)
    assert res.status is UNKNOWN and "not a proof" in res.reason
    assert res.certificate["failed_candidates"] == 1


class _SeededSolver:
    """A stand-in for ``cp_model.CpSolver`` that records each search's (seed, work) and
    answers with the set ``S`` only for seed ``finder``; the search it runs beside (seed
    ``finder − 1``, until ``started`` is set) waits until stopped (at most 30 s) and answers
    unknown; every other search answers unknown at once."""

    def __init__(self, S: tuple[int, ...], finder: int, log: list, started: threading.Event) -> None:
        from ortools.sat.python import cp_model

        self.parameters = types.SimpleNamespace()
        self.S, self.finder, self.log, self.started = S, finder, log, started
        self.stopped = threading.Event()
        self._cp = cp_model

    def solve(self, model):
        seed = self.parameters.random_seed
        self.log.append((seed, self.parameters.max_deterministic_time))
        if seed == self.finder:
            self.started.wait(30)  # the other search of the round is under way
            return self._cp.FEASIBLE
        if seed == self.finder - 1 and not self.started.is_set():
            self.started.set()
            self.stopped.wait(30)
        return self._cp.UNKNOWN

    def boolean_value(self, literal) -> bool:
        return literal.index in self.S

    def status_name(self, status) -> str:
        return "X"

    def stop_search(self) -> None:
        self.stopped.set()


def test_two_searches_run_side_by_side_and_the_first_set_stops_the_other(monkeypatch) -> None:
    """With threads ≥ 2: two searches a round, seeds 0, 1 then 2, 3 (the second round with
    twice the work); the set found by seed 3 is verified and returned, and stops seed 2's
    search."""
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T, S = planted(2, 24, seed=5)
    log: list = []
    made: list[_SeededSolver] = []
    started = threading.Event()

    def factory() -> _SeededSolver:
        made.append(_SeededSolver(S, 3, log, started))
        return made[-1]

    monkeypatch.setattr(cp_model, "CpSolver", factory)
    res = cs.solve_cpsat(U, D, T, timeout=60, threads=8)
    assert res.status is FOUND and res.S == S
    assert len(made) == cs.CHAINS == 2
    w = cs.FIRST_ROUND_WORK
    assert sorted(log) == [(0, w), (1, w), (2, 2 * w), (3, 2 * w)]
    assert made[0].stopped.is_set()  # seed 2's search (the first chain) was told to stop
    # one thread: one search a round, seeds 0, 1, 2, 3 in turn
    log.clear(), made.clear(), started.set()
    res = cs.solve_cpsat(U, D, T, timeout=60, threads=1)
    assert res.status is FOUND and len(made) == 1
    assert log == [(0, w), (1, 2 * w), (2, 4 * w), (3, 8 * w)]


def _record_hints(monkeypatch, cp_model, S) -> dict[int, list[int]]:
    """Each search's solution hint, by its seed (the solvers find S at once)."""
    hints: dict[int, list[int]] = {}

    class Recorder(_SeededSolver):
        def solve(self, model):
            hint = model.proto.solution_hint
            hints[self.parameters.random_seed] = [v for _, v in sorted(zip(hint.vars, hint.values))]
            return super().solve(model)

    started = threading.Event()
    started.set()
    monkeypatch.setattr(cp_model, "CpSolver", lambda: Recorder(S, 1, [], started))
    return hints


def test_each_search_but_the_first_starts_from_an_lp_vertex_hint(monkeypatch) -> None:
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T, S = planted(2, 24, seed=5)
    hints = _record_hints(monkeypatch, cp_model, S)
    res = cs.solve_cpsat(U, D, T, timeout=60, threads=2)
    assert res.status is FOUND and res.S == S
    assert sorted(hints) == [0, 1] and hints[0] == []  # the first search has none
    assert len(hints[1]) == 24 and set(hints[1]) <= {0, 1}
    K, t = cs.khatri_rao(U, D), T.ravel()
    # the rounded vertex: its residual is that of rounding at most d_out·d_in = 4 entries
    b = np.array(hints[1], dtype=float)
    assert np.linalg.norm(K @ b - t) <= 4 * np.abs(K).max() + 1e-9


def test_from_hint_first_n_on_the_first_search_starts_from_a_vertex_too(monkeypatch) -> None:
    cp_model = pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T, S = planted(2, 24, seed=5)
    hints = _record_hints(monkeypatch, cp_model, S)
    monkeypatch.setattr(cs, "HINT_FIRST_N", 24)  # n = 24 counts as wide enough here
    res = cs.solve_cpsat(U, D, T, timeout=60, threads=2)
    assert res.status is FOUND and res.S == S
    assert sorted(hints) == [0, 1] and len(hints[0]) == 24 and set(hints[0]) <= {0, 1}


def test_from_hint_first_n_on_the_searches_alternate_lp_levels(monkeypatch) -> None:
    """Round k's search c (the (k·chains + c)-th) uses LP level 1 when even, 2 when odd, from
    HINT_FIRST_N on; below, level 2 for every search. Each round's levels are read as it starts."""
    pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T = generic(2, 24, seed=3)  # no set: the rounds go on until the budget
    levels: list[list[int]] = []
    clock = [0.0]

    def tick() -> float:
        clock[0] += 1.0  # one "second" a reading: three rounds fit a 6.5-s budget
        return clock[0]

    def no_answer(cp_model, solvers, models, x, seeds, work, left):
        levels.append([s.parameters.linearization_level for s in solvers])
        return [(cp_model.UNKNOWN, "UNKNOWN", None)] * len(solvers)

    monkeypatch.setattr(cs, "_round", no_answer)
    for first_n, threads, want in ((24, 2, [[1, 2], [1, 2], [1, 2]]), (24, 1, [[1], [2], [1]]), (25, 2, [[2, 2]] * 3)):
        monkeypatch.setattr(cs, "HINT_FIRST_N", first_n)
        levels.clear()
        clock[0] = 0.0
        monkeypatch.setattr(cs, "time", types.SimpleNamespace(perf_counter=tick))
        cs.solve_cpsat(U, D, T, timeout=6.5, threads=threads)
        assert levels[:3] == want, (first_n, threads, levels)


def test_dispatcher_rejects_a_wrong_set_the_backend_calls_found(monkeypatch) -> None:
    """Even a backend that lies about its residual is re-checked in one place (_checked)."""
    U, D, T = generic(2, 12, seed=1)

    def lying(U, D, T, **kw):
        return SearchResult(FOUND, "cp-sat", "lie", S=(0, 1, 2), residual=0.0)

    monkeypatch.setattr(cs, "solve_cpsat", lying)
    res = find_index_set(U, D, T, method="cp-sat", timeout=5)
    assert res.status is UNKNOWN and "rejected" in res.reason


def test_timeout_respected(monkeypatch) -> None:
    """The budget is kept on CP-SAT's own clock and on the backend's: each round's searches
    may run at most what is left of it, and once the clock has reached the budget no
    further round starts.  The backend's clock is a stand-in here, moved on by the whole of
    what each round was allowed (a round that ends so has no answer), so that nothing
    depends on this machine's speed."""
    pytest.importorskip("ortools.sat.python.cp_model")
    U, D, T = generic(2, 96, seed=3)  # (about 2^-30 sets within tol expected: CP-SAT searches on)
    clock = [100.0]
    allowed: list[float] = []
    real_round = cs._round

    def timed_round(cp_model, solvers, models, x, seeds, work, left):
        assert left > 0 and len(allowed) < 10, (left, allowed)  # a round after the budget was spent
        out = real_round(cp_model, solvers, models, x, seeds, work, left)
        allowed.append(left)
        assert all(s.parameters.max_time_in_seconds <= left for s in solvers)
        clock[0] += left  # the round ran as long as it was allowed, and ended without an answer
        return [(cp_model.UNKNOWN, "UNKNOWN", None)] * len(out)

    monkeypatch.setattr(cs, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(cs, "_round", timed_round)
    res = find_index_set(U, D, T, method="cp-sat", timeout=0.5)
    assert res.status is not INFEASIBLE
    assert allowed == [0.5] and "time budget 0.5s spent" in res.reason, (allowed, res.reason)


def test_a_model_too_large_to_build_in_the_budget_is_declined(monkeypatch) -> None:
    U, D, T = generic(2, 4000, seed=0)  # 16000 terms: ~0.3 s to build, against 0.05 s

    def build(*a, **k):
        raise AssertionError("the model was built")

    monkeypatch.setattr(cs, "_model", build)
    res = find_index_set(U, D, T, method="cp-sat", timeout=0.05)
    assert res.status is UNKNOWN and "to build" in res.reason, res.reason


def test_missing_ortools_is_unknown_not_an_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)  # `from ortools.sat.python import …` fails
    monkeypatch.setitem(sys.modules, "ortools.sat.python.cp_model", None)
    U, D, T = planted_half(2, 16, seed=0)
    res = find_index_set(U, D, T, method="cp-sat", timeout=5)
    assert res.status is UNKNOWN and "ortools is not installed" in res.reason


def _spy(monkeypatch) -> list[float]:
    """Replace the CP-SAT backend by one that records its budget and answers unknown (and
    checks that it is given one search thread a core)."""
    budgets: list[float] = []

    def spy(U, D, T, *, timeout, **kw):
        assert kw["threads"] == pf._idle_cores()
        budgets.append(timeout)
        return SearchResult(UNKNOWN, "cp-sat", "spy")

    monkeypatch.setattr(cs, "solve_cpsat", spy)
    monkeypatch.setattr(cs, "available", lambda: True)
    return budgets


def _portfolio(U, D, T, timeout: float) -> tuple[pf._Portfolio, list[tuple[str, object]]]:
    """An ``auto`` run on these arrays and its narrow steps (built, not run)."""
    from absorb.search.mitm import mitm_plan

    run = pf._Portfolio(U, D, T, (U, D, T), 1e-9, timeout, 0, None, time.perf_counter(), pf._Verifier(U, D, T))
    est = mitm_plan(U, D, T).seconds(pf._cores())
    return run, pf._narrow_steps(run, [], est <= pf.QUICK_MITM_SECONDS, est, ("mitm", lambda: None))


def _steps(U, D, T, timeout: float) -> list[tuple[str, object]]:
    return _portfolio(U, D, T, timeout)[1]


def test_portfolio_gives_cpsat_a_slice_only_past_mitms_reach(monkeypatch) -> None:
    budgets = _spy(monkeypatch)
    # d = 2, n = 24 (MITM decides at once) and d = 3, n = 64 (MITM runs within 60 s): no CP-SAT
    for d, n in ((2, 24), (3, 64)):
        assert "cp-sat" not in [name for name, _ in _steps(*planted_half(d, n, seed=1), 60.0)], (d, n)
    # d = 2, n = 128 and 256: MITM cannot run; CP-SAT after the lattice proof's step and the
    # Z3-PB look, in front of the lattice finder (n = 128) or of Z3-PB and HiGHS (n = 256)
    steps = _steps(*planted_half(2, 128, seed=1), 60.0)
    names = [name for name, _ in steps]
    assert names.count("cp-sat") == 1
    at = names.index("cp-sat")
    assert names[at - 1] == "z3-pb" and names[at + 1] == "lattice" and "lattice" in names[:at], names
    # its budget: CPSAT_SHARE of what is left, when the lattice finder's slice follows ...
    assert dict(steps)["cp-sat"]().status is UNKNOWN
    assert len(budgets) == 1 and 0.9 * pf.CPSAT_SHARE * 60 < budgets[0] <= pf.CPSAT_SHARE * 60
    steps = _steps(*planted_half(2, 256, seed=1), 60.0)
    names = [name for name, _ in steps]
    assert names.count("cp-sat") == 1 and names.index("cp-sat") < names.index("z3-pb"), names
    # ... and CPSAT_ALONE_SHARE when none does (n = 256: LLL expected to outlast that slice)
    assert dict(steps)["cp-sat"]().status is UNKNOWN
    assert len(budgets) == 2 and 0.9 * pf.CPSAT_ALONE_SHARE * 60 < budgets[1] <= pf.CPSAT_ALONE_SHARE * 60


def test_portfolio_gives_cpsat_a_second_search_only_with_an_idle_core(monkeypatch) -> None:
    monkeypatch.setattr(pf, "_cores", lambda: 2)
    for load, threads in ((0.2, 2), (1.0, 2), (1.4, 2), (1.6, 1), (2.0, 1), (11.0, 1)):
        monkeypatch.setattr(pf.os, "getloadavg", lambda load=load: (load, load, load))
        assert pf._idle_cores() == threads, load
    monkeypatch.setattr(pf, "_cores", lambda: 1)
    monkeypatch.setattr(pf.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert pf._idle_cores() == 1


def test_portfolio_rechecks_the_cpsat_step_set(monkeypatch) -> None:
    """In ``auto`` too, a set the CP-SAT step calls found is re-checked (_checked) and a wrong
    one is not returned: the step counts as unknown and the portfolio goes on."""
    monkeypatch.setattr(cs, "available", lambda: True)
    monkeypatch.setattr(cs, "solve_cpsat", lambda U, D, T, **kw: SearchResult(
        FOUND, "cp-sat", "lie", S=(0, 1, 2), residual=0.0))
    run, steps = _portfolio(*generic(2, 128, seed=5), 60.0)
    assert run.attempt(next(step for step in steps if step[0] == "cp-sat")) is None
    assert run.trail[-1]["status"] == "unknown" and "rejected" in run.trail[-1]["reason"]


def test_portfolio_leaves_cpsat_out_when_ortools_is_missing(monkeypatch) -> None:
    _spy(monkeypatch)
    monkeypatch.setattr(cs, "available", lambda: False)
    for n in (128, 256):
        assert "cp-sat" not in [name for name, _ in _steps(*planted_half(2, n, seed=1), 60.0)]


def test_check_help_does_not_import_ortools() -> None:
    code = ("import sys\nfrom absorb.cli import main\ntry:\n    main(['check', '--help'])\nexcept SystemExit:\n"
            "    pass\nassert not any(m.split('.')[0] == 'ortools' for m in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "cp-sat" in out.stdout  # one of --method's choices
