"""σ's trusted sample of the real line (absorb/model/_samples.py), read by the tolerance screens.

A part of the grid (a window) is judged exactly as the whole grid judges it there, so an estimate read from a window is
one over a subset of the whole grid's points. (That the trusted stretches are stored with the analysis, sealed:
tests/test_analysis_cache.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from absorb.engine import tolerance
from absorb.model import _samples
from absorb.model.activations import get_activation
from absorb.symbolic import properties as props

EXPRESSIONS = ["x*(1+erf(x/sqrt(2)))/2", "x*tanh(log(1+exp(x)))", "cosh(x)**2-sinh(x)**2+x", "x-sin(x)",
               "log(cosh(x))", "exp(x)*x"]
WINDOWS = [(-2.0, 2.0), (-60.0, 60.0), (-1e9, 1e9), (5.0, 6.0), (1e3, 1e7), (-37.3, -36.9), (0.0, 0.0), (9e7, 2e8)]


def _forget() -> None:
    get_activation.cache_clear()
    props.clear_cache()
    _samples._MEMO.clear()


def _cut(z: np.ndarray, window: tuple[float, float]) -> np.ndarray:
    """The whole grid's points in the window's stretches."""
    grid, step = _samples.GRID, _samples._STEP
    start = int(np.searchsorted(grid, window[0])) // step * step
    stop = min(-(-int(np.searchsorted(grid, window[1], side="right")) // step) * step, len(grid))
    return (z >= grid[start]) & (z <= grid[stop - 1])


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_a_window_is_judged_as_the_whole_grid_judges_it(expr: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABSORB_CACHE_DIR", "off")
    _forget()
    act = get_activation("expr:" + expr)
    z, v = _samples.trusted_grid(act)
    assert 0 < len(z) < len(_samples.GRID) or expr == "x-sin(x)"
    whole = dict(_samples._MEMO)
    for window in WINDOWS:
        _samples._MEMO.clear()  # judged afresh, on the window alone
        zw, vw = _samples.trusted_grid(act, window)
        inside = _cut(z, window)
        assert np.array_equal(zw, z[inside]) and np.array_equal(vw, v[inside]), window
        _samples._MEMO.clear()
        _samples._MEMO.update(whole)  # read from the whole grid's result
        zc, vc = _samples.trusted_grid(act, window)
        assert np.array_equal(zc, zw) and np.array_equal(vc, vw), window
        # an estimate over the window is at most the whole grid's
        est = tolerance._sampled_lipschitz(act, 0.5, window)
        assert est is None or est <= tolerance._sampled_lipschitz(act, 0.5)
    _forget()


def test_digits_lost_in_float64_are_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """cosh(x)**2 − sinh(x)**2 + x is 1 + x; float64 loses its digits as |x| grows (relative 10⁻⁷ is gone past
    |x| ≈ 13, where the window reads nothing), not near 0."""
    monkeypatch.setenv("ABSORB_CACHE_DIR", "off")
    _forget()
    act = get_activation("expr:cosh(x)**2-sinh(x)**2+x")
    z, v = _samples.trusted_grid(act, (-30.0, 30.0))
    assert np.all(np.abs(v - (1 + z)) <= 1e-5 * (1 + np.abs(z)))  # (stretches are judged at their ends)
    assert np.any(np.abs(z) < 1) and not np.any(np.abs(z) > 14)
    _forget()
