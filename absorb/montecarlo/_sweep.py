"""The sweep: cells of (d, n, distribution, activation), N samples each, decided in batches.

Each cell draws from its own generator, ``default_rng(SeedSequence(seed, spawn_key=(d, n,
crc32(distribution))))`` (:func:`cell_rng`), and uses a fixed batch size, so a cell's numbers
depend on (seed, d, n, distribution) only: not on its place in the grid, on the other cells
asked for (``--dist gaussian,ternary`` gives the gaussian cell the numbers ``--dist gaussian``
gives it), nor on where or in which order it runs (a dask run equals the single-process run).
Cells that differ only in the activation see the same weights.

What an instance's outcome means (docs/mathematics.md §2, result 5, and §3):

* ``absorbable`` — an index set S with ``c·D_S U_S = −I`` was found by the vectorised
  search *and* re-checked by the single-instance route: for n ≤ 9 the engine's
  ``decide_block`` decides the block from scratch; for larger n the engine's witness check
  for this S (build the flipped block, evaluate it against f on random inputs, and confirm
  ``D_S U_S = −I/c`` in rational arithmetic when small enough). True whatever the weights:
  sufficiency needs no hypothesis.
* ``not_absorbable`` — no S (rigorous lower bound > tol) and result 5 applies: σ is ReLU or
  GELU, d ≥ 2, rows of ``W_up`` nonzero and pairwise non-collinear, columns of ``W_down``
  nonzero.
* ``no_index_set`` — no S, but the weights are degenerate (or σ is not ReLU/GELU): result 5's
  necessity does not apply and the true answer is open here (docs/mathematics.md §3: collinear rows
  can be absorbable without an S).
* ``undecided`` — the search's bound did not clear the tolerance (or a hit failed its
  re-check: counted in ``recheck_failed``, which should stay 0).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.montecarlo import _kernel as K
from absorb.montecarlo._distributions import DISCRETE, DISTRIBUTIONS, plant, sample_weights
from absorb.montecarlo._kernel import Route
from absorb.montecarlo._stats import clopper_pearson, summarize
from absorb.search._types import DEFAULT_TOL

DEFAULT_BATCH = 4096
_RECHECK_DECIDE_MAX_N = 9  # up to here the engine re-decides a hit from scratch (its search is a Python loop over 2^n sets)


@dataclass(frozen=True)
class Cell:
    """One grid point: ``samples`` random blocks and ``planted`` positive controls."""

    d: int
    n: int
    distribution: str
    activation: str
    samples: int
    planted: int

    def label(self) -> str:
        return f"d={self.d} n={self.n} {self.distribution} {self.activation}"


@dataclass
class CellResult:
    """Everything measured in one cell (``to_json`` is the ``--json`` record)."""

    index: int
    cell: Cell
    route: str
    distance_kind: str  # "exact" (enumeration) or "lower_bound" (dual certificate)
    counts: dict[str, int]
    fraction: float
    ci: tuple[float, float]
    ci_kind: str
    degenerate_fraction: float
    distance: dict[str, float]
    planted: dict[str, Any]
    recheck: dict[str, int]
    seconds: float = field(default=0.0, compare=False)
    per_sample_s: float = field(default=0.0, compare=False)

    def to_json(self) -> dict[str, Any]:
        out = {"index": self.index, **asdict(self.cell)}
        out.update(route=self.route, distance_kind=self.distance_kind, counts=dict(self.counts), fraction_absorbable=self.fraction,
                   ci95=list(self.ci), ci_kind=self.ci_kind, degenerate_fraction=self.degenerate_fraction,
                   distance=dict(self.distance), planted=dict(self.planted), recheck=dict(self.recheck),
                   seconds=self.seconds, per_sample_s=self.per_sample_s)
        return out

    def deterministic(self) -> dict[str, Any]:
        """The record without the timings: equal across runs with the same seed."""
        out = self.to_json()
        out.pop("seconds")
        out.pop("per_sample_s")
        return out


def activation_constant(name: str) -> tuple[float, bool]:
    """(c, necessity): σ(z) − σ(−z) = c·z proved by sympy, and whether σ is ReLU or GELU
    (result 5's necessity). Activations without the flip identity are refused: their
    absorbability is not an index-set question."""
    from absorb.model.activations import get_activation
    from absorb.symbolic import properties as props

    act = get_activation(name)
    prop = props.flip_identity(act, gated=False)
    if not prop.proved:
        raise InvalidInput(f"activation {name!r}: σ(z) − σ(−z) = c·z does not hold, so the sweep's index-set condition does not apply; "
                           "use relu, gelu, gelu_tanh, silu, quick_gelu, leaky_relu or softplus")
    necessity = any(act.expr == get_activation(k).expr for k in ("relu", "gelu"))
    return float(prop.value["c"]), necessity


def cell_rng(seed: int, cell: Cell) -> np.random.Generator:
    """The generator of ``cell``: a stream derived from (seed, d, n, distribution) only, never from
    the cell's place in the grid (the distribution's name enters as its CRC-32, stable across runs)."""
    key = (cell.d, cell.n, zlib.crc32(cell.distribution.encode("utf-8")))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _recheck(U: np.ndarray, D: np.ndarray, S: np.ndarray, activation: str, c: float, *, tol: float) -> bool:
    """The single-instance route for one hit: the engine decides (small n) or checks the witness."""
    from absorb.engine import Verdict, decide_block
    from absorb.engine.witness import check_flip_witness
    from absorb.model import Block, get_activation

    block = Block(W_up=np.ascontiguousarray(U), W_down=np.ascontiguousarray(D), activation=get_activation(activation))
    if block.n <= _RECHECK_DECIDE_MAX_N:
        return decide_block(block, tol=tol, timeout=60.0).verdict is Verdict.ABSORBABLE
    cf = Fraction(c).limit_denominator(10**6)
    _, ok = check_flip_witness(block, tuple(int(i) for i in np.flatnonzero(S)), cf, tol=tol, seed=0)
    return ok


def run_cell(cell: Cell, *, index: int, seed: int, tol: float = DEFAULT_TOL, batch: int = DEFAULT_BATCH,
             route: Route = "auto") -> CellResult:
    """Sample, decide (vectorised), re-check every hit, and summarise one cell."""
    c, necessity = activation_constant(cell.activation)
    rng = cell_rng(seed, cell)
    t0 = time.perf_counter()
    n_abs = n_not = n_nos = n_und = n_deg = 0
    rechecked = failed = 0
    dists = []
    used = route
    for start in range(0, cell.samples, batch):
        B = min(batch, cell.samples - start)
        U, D = sample_weights(rng, cell.distribution, B, cell.n, cell.d)
        res = K.decide_batch(U, D, c=c, tol=tol, route=route)
        used = res.route
        deg = K.degenerate_batch(U, D)
        found = res.status == K.FOUND
        ok = np.zeros(B, dtype=bool)
        for b in np.flatnonzero(found):
            ok[b] = _recheck(U[b], D[b], res.S[b], cell.activation, c, tol=tol)
        rechecked += int(found.sum())
        failed += int((found & ~ok).sum())
        infeasible = res.status == K.INFEASIBLE
        nec = infeasible & ~deg if necessity else np.zeros(B, dtype=bool)
        n_abs += int(ok.sum())
        n_not += int(nec.sum())
        n_nos += int((infeasible & ~nec).sum())
        n_und += int(((res.status == K.UNKNOWN) | (found & ~ok)).sum())
        n_deg += int(deg.sum())
        dists.append(res.distance)
    seconds = time.perf_counter() - t0
    lo, hi, kind = clopper_pearson(n_abs, cell.samples)
    planted = _planted_control(cell, rng, c=c, tol=tol, batch=batch, route=route)
    counts = {"absorbable": n_abs, "not_absorbable": n_not, "no_index_set": n_nos, "undecided": n_und, "degenerate": n_deg}
    return CellResult(index=index, cell=cell, route=used, distance_kind="exact" if used == "enumerate" else "lower_bound",
                      counts=counts, fraction=n_abs / cell.samples, ci=(lo, hi), ci_kind=kind,
                      degenerate_fraction=n_deg / cell.samples, distance=summarize(np.concatenate(dists)),
                      planted=planted, recheck={"hits": rechecked, "confirmed": rechecked - failed, "recheck_failed": failed},
                      seconds=seconds, per_sample_s=seconds / cell.samples)


def _planted_control(cell: Cell, rng: np.random.Generator, *, c: float, tol: float, batch: int, route: str) -> dict[str, Any]:
    if cell.planted == 0:
        return {"samples": 0}
    if cell.n < cell.d:
        return {"samples": 0, "note": f"n = {cell.n} < d = {cell.d}: no index set can have |S| ≥ d"}
    detected = total = unplantable = 0
    for start in range(0, cell.planted, batch):
        B = min(batch, cell.planted - start)
        U, D = sample_weights(rng, cell.distribution, B, cell.n, cell.d)
        D, _, ok = plant(rng, U, D, c=c)
        unplantable += int((~ok).sum())
        U, D = U[ok], D[ok]
        if not len(U):
            continue
        res = K.decide_batch(U, D, c=c, tol=tol, route=route)
        hits = np.flatnonzero(res.status == K.FOUND)
        detected += sum(bool(_recheck(U[b], D[b], res.S[b], cell.activation, c, tol=tol)) for b in hits)
        total += len(U)
    out: dict[str, Any] = {"samples": total, "detected": int(detected), "rate": float(detected / total) if total else None}
    if unplantable:
        out["unplantable"] = unplantable  # U_S never well-conditioned in 50 draws (discrete weights)
    return out


def grid(*, d: Sequence[int], n: Sequence[int] | None = None, shapes: Sequence[tuple[int, int]] | None = None,
         distributions: Sequence[str], activations: Sequence[str], samples: int, planted: int) -> list[Cell]:
    """The cells of a sweep, in a fixed order (shapes, then distribution, then activation)."""
    if shapes is None:
        shapes = [(dd, nn) for dd in d for nn in (n or ())]
    for dist in distributions:
        if dist not in DISTRIBUTIONS:
            raise InvalidInput(f"unknown distribution {dist!r}; choose from {', '.join(DISTRIBUTIONS)}")
    for dd, nn in shapes:
        if dd < 1 or nn < 1:
            raise InvalidInput(f"shape d = {dd}, n = {nn}: both must be ≥ 1")
    if samples < 1 or planted < 0:
        raise InvalidInput(f"samples = {samples} must be ≥ 1 and planted = {planted} ≥ 0")
    for a in activations:
        activation_constant(a)
    return [Cell(dd, nn, dist, act, samples, planted) for dd, nn in shapes for dist in distributions for act in activations]


def _task(cell: Cell, index: int, seed: int, tol: float, batch: int, route: str) -> CellResult:
    return run_cell(cell, index=index, seed=seed, tol=tol, batch=batch, route=route)


def sweep(cells: Sequence[Cell], *, seed: int = 0, tol: float = DEFAULT_TOL, batch: int = DEFAULT_BATCH, route: Route = "auto",
          workers: int | None = None, scheduler: str | None = None, processes: bool = True,
          progress: Callable[[CellResult], None] | None = None) -> list[CellResult]:
    """Run every cell (in this process, or as dask tasks) and return results in grid order.

    ``workers``: start a ``dask.distributed.LocalCluster`` with that many workers
    (``processes=False`` keeps them as threads, for tests); ``scheduler``: connect to a running
    dask scheduler at that address. ``progress`` is called once per finished cell.
    """
    from absorb._validate import check_seed, check_tolerance

    check_tolerance(tol)
    check_seed(seed)
    if workers is not None and scheduler is not None:
        raise InvalidInput("give either workers or a scheduler address, not both")
    if workers is not None or scheduler is not None:
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise InvalidInput("running cells on dask (workers, scheduler) needs dask.distributed; "
                               "pip install 'absorb[montecarlo]'") from None
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidInput(f"batch = {batch} must be ≥ 1")
    if route not in ("auto", "enumerate", "dual"):
        raise InvalidInput(f"route {route!r}: choose auto, enumerate or dual")
    if route == "enumerate":
        for cell in cells:
            if cell.n > K.ENUM_MAX_N:
                raise InvalidInput(f"route 'enumerate' needs n ≤ {K.ENUM_MAX_N}, but a cell has n = {cell.n}; use --route auto or dual")
    if workers is None and scheduler is None:
        out = []
        for i, cell in enumerate(cells):
            r = run_cell(cell, index=i, seed=seed, tol=tol, batch=batch, route=route)
            if progress:
                progress(r)
            out.append(r)
        return out
    return _sweep_dask(cells, seed=seed, tol=tol, batch=batch, route=route, workers=workers, scheduler=scheduler,
                       processes=processes, progress=progress)


def _sweep_dask(cells, *, seed, tol, batch, route, workers, scheduler, processes, progress) -> list[CellResult]:
    from absorb._dask import dask_client

    with dask_client(workers=workers, scheduler=scheduler, processes=processes) as client:
        from dask.distributed import as_completed

        futures = [client.submit(_task, cell, i, seed, tol, batch, route, pure=False) for i, cell in enumerate(cells)]
        results: dict[int, CellResult] = {}
        for fut in as_completed(futures):
            r = fut.result()
            results[r.index] = r
            if progress:
                progress(r)
        return [results[i] for i in range(len(cells))]


def is_discrete(distribution: str) -> bool:
    return distribution in DISCRETE


def iter_labels(results: Iterable[CellResult]) -> list[str]:
    return [r.cell.label() for r in results]
