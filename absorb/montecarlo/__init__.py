"""Monte Carlo evidence on genericity: how often random weights admit an index set.

Result 5 (docs/mathematics.md §2) says that for nondegenerate ReLU/GELU weights a block is absorbable
iff some ``S`` has ``W_down[:,S] W_up[S,:] = −I``, and that this fails with probability one
under continuous weight distributions. :func:`sweep` measures it: per cell of a grid of
(d, n, distribution, activation) it decides N random instances in vectorised batches
(:func:`decide_batch`), re-checks every hit with the single-instance engine, and reports the
fraction absorbable with an exact Clopper–Pearson interval, the distance to absorbability
``min_S ‖D_S U_S + I‖_F/√d``, the fraction of degenerate weights (where result 5's
necessity does not apply), and a planted positive control.

>>> from absorb.montecarlo import grid, sweep
>>> cells = grid(d=[2], n=[4], distributions=["gaussian"], activations=["relu"], samples=200, planted=20)
>>> r, = sweep(cells, seed=0)
>>> r.counts["absorbable"], r.planted["rate"]
(0, 1.0)
"""

from absorb._lazy import lazy_exports

_EXPORTS = {
    "DISCRETE": "absorb.montecarlo._distributions",
    "DISTRIBUTIONS": "absorb.montecarlo._distributions",
    "plant": "absorb.montecarlo._distributions",
    "sample_weights": "absorb.montecarlo._distributions",
    "ENUM_MAX_N": "absorb.montecarlo._kernel",
    "Route": "absorb.montecarlo._kernel",
    "BatchResult": "absorb.montecarlo._kernel",
    "decide_batch": "absorb.montecarlo._kernel",
    "degenerate_batch": "absorb.montecarlo._kernel",
    "dual_batch": "absorb.montecarlo._kernel",
    "enumerate_batch": "absorb.montecarlo._kernel",
    "clopper_pearson": "absorb.montecarlo._stats",
    "summarize": "absorb.montecarlo._stats",
    "Cell": "absorb.montecarlo._sweep",
    "CellResult": "absorb.montecarlo._sweep",
    "activation_constant": "absorb.montecarlo._sweep",
    "cell_rng": "absorb.montecarlo._sweep",
    "grid": "absorb.montecarlo._sweep",
    "run_cell": "absorb.montecarlo._sweep",
    "sweep": "absorb.montecarlo._sweep",
}

__all__ = [
    "DISCRETE",
    "DISTRIBUTIONS",
    "ENUM_MAX_N",
    "Route",
    "BatchResult",
    "Cell",
    "CellResult",
    "activation_constant",
    "cell_rng",
    "clopper_pearson",
    "decide_batch",
    "degenerate_batch",
    "dual_batch",
    "enumerate_batch",
    "grid",
    "plant",
    "run_cell",
    "sample_weights",
    "summarize",
    "sweep",
]

__getattr__, __dir__ = lazy_exports("absorb.montecarlo", _EXPORTS, globals())
