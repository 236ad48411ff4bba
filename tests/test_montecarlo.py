"""absorb.montecarlo: the vectorised decisions agree with the single-instance engine on every
instance; exact intervals; dask equals one process; planted controls are always found."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
from conftest import run_absorb

from absorb import Block, Theorem, Verdict, decide_block, get_activation
from absorb.engine import hypotheses as hyp
from absorb.montecarlo import (
    DISTRIBUTIONS,
    clopper_pearson,
    degenerate_batch,
    dual_batch,
    enumerate_batch,
    grid,
    plant,
    run_cell,
    sample_weights,
    sweep,
)
from absorb.montecarlo import _kernel as K
from absorb.search import find_index_set


# --- Clopper–Pearson against published values ------------------------------------------------
@pytest.mark.parametrize("k, n, lo, hi, kind", [
    (5, 100, 0.016431, 0.112835, "two-sided"),  # Clopper & Pearson (1934) / standard tables
    (1, 10, 0.002529, 0.445016, "two-sided"),
    (50, 100, 0.398321, 0.601679, "two-sided"),
    (0, 100, 0.0, 0.029513, "upper"),  # 1 − 0.05^(1/100), the "rule of three" ≈ 3/n
    (0, 1000, 0.0, 0.002991, "upper"),
    (10, 10, 0.741134, 1.0, "lower"),  # 0.05^(1/10)
])
def test_clopper_pearson_known_values(k, n, lo, hi, kind) -> None:
    a, b, kd = clopper_pearson(k, n)
    assert kd == kind
    assert a == pytest.approx(lo, abs=2e-6) and b == pytest.approx(hi, abs=2e-6)


def test_clopper_pearson_closed_forms() -> None:
    for n in (1, 7, 300):
        assert clopper_pearson(0, n)[1] == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)
        assert clopper_pearson(n, n)[0] == pytest.approx(0.05 ** (1 / n), rel=1e-12)


@pytest.mark.parametrize("k, n", [(-1, 5), (6, 5), (0, 0)])
def test_clopper_pearson_rejects(k, n) -> None:
    with pytest.raises(ValueError):
        clopper_pearson(k, n)


# --- the kernel against brute force and against the engine ----------------------------------
def _brute(U: np.ndarray, D: np.ndarray, c: float = 1.0) -> float:
    n, d = U.shape
    return min(np.linalg.norm(c * D[:, list(S)] @ U[list(S)] + np.eye(d)) / np.sqrt(d)
               for k in range(n + 1) for S in itertools.combinations(range(n), k))


@pytest.mark.parametrize("n, d", [(1, 1), (3, 1), (2, 2), (5, 2), (8, 3), (11, 3), (6, 4)])
def test_enumeration_distance_is_the_brute_force_minimum(n: int, d: int) -> None:
    rng = np.random.default_rng(n * 10 + d)
    U, D = sample_weights(rng, "gaussian", 40, n, d)
    if n >= d:
        D[:10], _, _ = plant(rng, U[:10], D[:10], c=1.0)
    r = enumerate_batch(U, D)
    for b in range(40):
        best = _brute(U[b], D[b])
        assert r.distance[b] == pytest.approx(best, abs=1e-9)
        assert r.lower_bound[b] <= best + 1e-15
        assert (r.status[b] == K.FOUND) == (best <= 1e-9)


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("n, d", [(4, 2), (7, 3)])
def test_vectorised_agrees_with_engine_on_every_instance(dist: str, n: int, d: int) -> None:
    """Every instance of a small sweep: the batch status equals the engine's search status,
    and the classification matches decide_block's verdict."""
    rng = np.random.default_rng(hash((dist, n, d)) % 2**32)
    U, D = sample_weights(rng, dist, 24, n, d)
    D[:6], _, _ = plant(rng, U[:6], D[:6], c=1.0)
    res = enumerate_batch(U, D)
    deg = degenerate_batch(U, D)
    relu = get_activation("relu")
    for b in range(24):
        block = Block(U[b], D[b], relu)
        single = find_index_set(U[b], D[b], -np.eye(d), tol=1e-9)
        assert K.STATUS_NAMES[res.status[b]] == single.status.value
        dec = decide_block(block)
        nondeg = all(h.holds for h in [hyp.dimension(block), *hyp.nondegenerate(block)])
        assert deg[b] == (not nondeg)
        if res.status[b] == K.FOUND:
            assert dec.verdict is Verdict.ABSORBABLE
        elif res.status[b] == K.INFEASIBLE and not deg[b]:
            assert dec.verdict is Verdict.NOT_ABSORBABLE and dec.theorem is Theorem.INDEX_SET
        elif res.status[b] == K.INFEASIBLE:
            # degenerate weights: result 5 says nothing; the engine's canonical-form procedure
            # may still decide (the sweep counts these apart, as degenerate)
            assert dec.theorem is not Theorem.INDEX_SET or dec.verdict is Verdict.UNKNOWN


def test_dual_bound_is_a_lower_bound_and_finds_planted_sets() -> None:
    rng = np.random.default_rng(3)
    for n, d in [(6, 3), (9, 3), (12, 4), (16, 4)]:
        U, D = sample_weights(rng, "gaussian", 30, n, d)
        D[:10], masks, ok = plant(rng, U[:10], D[:10], c=1.0)
        exact = enumerate_batch(U, D)
        dual = dual_batch(U, D)
        assert np.all(dual.lower_bound <= exact.distance + 1e-12)
        assert np.all(dual.status[:10] == K.FOUND)  # n ≤ d²: K has full column rank
        assert not np.any(dual.status[10:] == K.FOUND)


def test_leaky_relu_constant() -> None:
    # σ(z) − σ(−z) = 1.01 z: the target is −I/1.01.
    rng = np.random.default_rng(5)
    U, D = sample_weights(rng, "gaussian", 8, 5, 2)
    D, _, _ = plant(rng, U, D, c=1.01)
    assert np.all(enumerate_batch(U, D, c=1.01).status == K.FOUND)
    assert not np.any(enumerate_batch(U, D, c=1.0).status == K.FOUND)


def test_degenerate_batch_matches_engine() -> None:
    U = np.array([[[1.0, 0.0], [-2.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    D = np.ones((3, 2, 3))
    assert degenerate_batch(U, D).tolist() == [True, False, True]
    D[1][:, 2] = 0.0
    assert degenerate_batch(U, D).tolist() == [True, True, True]


# --- sweeps ----------------------------------------------------------------------------------
# the full grid takes over a minute on 2 cores: the default run checks a smaller one, CI both
@pytest.mark.parametrize("size", ["small", pytest.param("full", marks=pytest.mark.slow)])
def test_planted_detection_is_complete_and_generic_never_absorbable(size: str) -> None:
    if size == "full":
        cells = grid(d=[], shapes=[(2, 5), (3, 9), (8, 24)], distributions=["gaussian", "kaiming", "student_t"],
                     activations=["relu", "gelu"], samples=300, planted=40)
    else:
        cells = grid(d=[], shapes=[(2, 5), (8, 24)], distributions=["gaussian", "student_t"],
                     activations=["relu", "gelu"], samples=100, planted=12)
    for r in sweep(cells, seed=1):
        assert r.planted["rate"] == 1.0, r.cell
        assert r.counts["absorbable"] == 0  # result 5: probability zero for continuous weights
        assert r.recheck["recheck_failed"] == 0
        assert sum(r.counts[k] for k in ("absorbable", "not_absorbable", "no_index_set", "undecided")) == r.cell.samples
        assert r.ci_kind == "upper"


def test_ternary_hits_are_rechecked_and_counted() -> None:
    (r,) = sweep(grid(d=[2], n=[6], distributions=["ternary"], activations=["relu"], samples=400, planted=20), seed=2)
    assert r.counts["absorbable"] > 0 and r.recheck["confirmed"] == r.recheck["hits"] == r.counts["absorbable"]
    lo, hi = r.ci
    assert lo < r.fraction < hi and r.ci_kind == "two-sided"


def test_same_seed_same_results_and_cells_independent_of_order() -> None:
    cells = grid(d=[], shapes=[(2, 4), (3, 6)], distributions=["gaussian", "int8"], activations=["relu"], samples=120, planted=10)
    a = [r.deterministic() for r in sweep(cells, seed=7)]
    b = [r.deterministic() for r in sweep(cells, seed=7)]
    assert a == b
    # A cell's numbers depend on (seed, d, n, distribution) only, not on its place or the other cells.
    alone = run_cell(cells[3], index=3, seed=7).deterministic()
    assert alone == a[3]
    assert [r.deterministic() for r in sweep(cells, seed=8)] != a


def test_a_cells_numbers_do_not_depend_on_the_rest_of_the_grid() -> None:
    both = grid(d=[], shapes=[(2, 4)], distributions=["gaussian", "ternary"], activations=["relu"], samples=80, planted=5)
    alone = grid(d=[], shapes=[(2, 4)], distributions=["ternary"], activations=["relu"], samples=80, planted=5)
    (t_both,) = [r for r in sweep(both, seed=3) if r.cell.distribution == "ternary"]
    (t_alone,) = sweep(alone, seed=3)
    assert t_both.index != t_alone.index  # another place in the grid, the same numbers
    strip = lambda r: {k: v for k, v in r.deterministic().items() if k != "index"}  # noqa: E731
    assert strip(t_both) == strip(t_alone)
    # the same (d, n, distribution) under another activation sees the same weights
    from absorb.montecarlo import cell_rng

    g, r = cell_rng(3, both[0]), cell_rng(3, dataclasses.replace(both[0], activation="gelu"))
    assert np.array_equal(g.standard_normal(5), r.standard_normal(5))
    assert not np.array_equal(cell_rng(3, both[0]).standard_normal(5), cell_rng(3, both[1]).standard_normal(5))


@pytest.mark.late  # dask's threads outlive the cluster (see conftest)
def test_dask_equals_single_process() -> None:
    pytest.importorskip("dask.distributed")
    cells = grid(d=[], shapes=[(2, 4), (3, 7)], distributions=["gaussian", "ternary"], activations=["relu"], samples=150, planted=10)
    single = [r.deterministic() for r in sweep(cells, seed=11)]
    dist = [r.deterministic() for r in sweep(cells, seed=11, workers=2, processes=False)]
    assert dist == single
    # --scheduler ADDRESS: a running scheduler (here an in-process one).
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        remote = [r.deterministic() for r in sweep(cells[:2], seed=11, scheduler=cluster.scheduler_address)]
    assert remote == single[:2]


def test_cli_json_and_plot(tmp_path) -> None:
    out = tmp_path / "mc.png"
    proc = run_absorb("montecarlo", "--shapes", "2x4", "--dist", "gaussian,ternary",  # in process
                      "--samples", "100", "--planted", "10", "--json", "--no-progress", "--plot", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["distribution"] for c in doc["cells"]] == ["gaussian", "ternary"]
    assert doc["cells"][0]["planted"]["rate"] == 1.0
    assert out.stat().st_size > 1000 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv", [
    ["--shapes", "3y9"], ["--d", "2"], ["--dist", "cauchy"], ["--activation", "relu2"], ["--samples", "0"],
    ["--d", "2", "--n", "4", "--shapes", "2x4"], ["--workers", "1", "--scheduler", "tcp://x:1"], ["--tol", "-1"],
    ["--route", "enumerate", "--shapes", "4x32"],
])
def test_cli_usage_errors_exit_2(argv, capsys) -> None:
    from absorb.cli import main

    try:
        code = main(["montecarlo", "--no-progress", *argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_plot_labels_in_math_and_lists_only_series_it_holds(tmp_path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from absorb.montecarlo._render import plot

    figs = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figs.append(self))
    cells = grid(d=[], shapes=[(2, 4)], distributions=["gaussian"], activations=["relu"], samples=60, planted=5)
    plot(sweep(cells, seed=0), str(tmp_path / "p.png"))
    ax1, ax2 = figs[0].axes
    assert "$" in ax2.get_ylabel() and "\\min_S" in ax2.get_ylabel()  # mathtext, not literal underscores
    legend1 = [t.get_text() for t in ax1.get_legend().get_texts()]
    legend2 = [t.get_text() for t in ax2.get_legend().get_texts()]
    assert "none hit: upper bound" in legend1 and "hits: two-sided interval" not in legend1  # no gaussian hits
    assert "exact (enumeration)" in legend2 and "lower bound (LS dual)" not in legend2
