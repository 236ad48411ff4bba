"""σ read on a fixed sample of the real line, where its float64 values can be trusted.

The tolerance screens (:mod:`absorb.engine._sigma_samples`, :mod:`absorb.engine.tolerance`) estimate σ's slopes and
defects from its values on :data:`GRID`. For a user's expression, float64 may lose every digit somewhere
(cosh(x)**2 − sinh(x)**2 at x = 30), so every 16th point is evaluated again in mpmath at 128 and 192 bits and a
stretch of the grid is kept only where both ends agree with the float64 value (relative 10⁻⁷).

That comparison costs 0.1–0.3 s per precision for an erf or exp expression, and depends on σ alone, so its outcome
(the trusted stretches, as index ranges of the grid) is stored with σ's analysis in the analysis cache
(:mod:`absorb._analysis_cache`, sealed like the rest of the entry, under the same key, which hashes this module's
source too); a later run of the same expression reads it. A sample, not a bound: the screens that read it only
withhold a verdict.
"""

from __future__ import annotations

import numpy as np

from absorb.model.activations import Activation, is_builtin

GRID = np.unique(np.concatenate([-np.geomspace(1e8, 1e-6, 800), np.linspace(-60, 60, 48001), np.geomspace(1e-6, 1e8, 800)]))
"""The screens' sample of the real line: a fine grid of [−60, 60] (step 0.0025) and geometric tails to ±10⁸."""

_STEP = 16
"""Every ``_STEP``-th point of the grid is evaluated in mpmath; a stretch between two such points is trusted when both
ends are."""

_MEMO: dict[tuple[str, tuple[float, float] | None], tuple[np.ndarray, np.ndarray]] = {}


def trusted_stretches(act: Activation, v: np.ndarray, start: int = 0, stop: int | None = None
                      ) -> list[tuple[int, int]] | None:
    """The ranges [start, stop) of :data:`GRID` indices, within [``start``, ``stop``) (``start`` a multiple of
    ``_STEP``), where σ's float64 values ``v`` (at every point of the grid) agree with its 128- and 192-bit mpmath
    values at both ends of every stretch of ``_STEP`` points (relative 10⁻⁷), merged; None where the expression cannot
    be evaluated in mpmath (every finite float64 value is then read). A stretch is judged by its two ends alone, so a
    part of the grid gets the same stretches as the whole grid has there."""
    from absorb.model._expr_numpy import UnsupportedExpression, precise_form

    stop = len(GRID) if stop is None else stop
    try:
        lo, hi = precise_form(act.key), precise_form(act.key, bits=192)
    except UnsupportedExpression:
        return None
    last = (len(GRID) - 1) // _STEP  # (the last sample's stretch is judged by it alone)
    idx = np.arange(start // _STEP, min((stop - 1) // _STEP + 1, last) + 1) * _STEP
    a, b = lo(GRID[idx]), hi(GRID[idx])
    with np.errstate(all="ignore"):
        tol = 1e-7 * (np.abs(b) + 1e-300)
        good = (np.abs(a - b) <= tol) & (np.abs(v[idx] - b) <= tol)
    mask = np.zeros(len(GRID), dtype=bool)
    mask[idx[0]: idx[0] + len(idx) * _STEP] = np.repeat(good & np.append(good[1:], good[-1]), _STEP)[: len(GRID) - idx[0]]
    mask[:start], mask[stop:] = False, False
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2])]


def _stored(act: Activation) -> list[tuple[int, int]] | None:
    """The trusted stretches of a user's expression stored with its analysis (:mod:`absorb._analysis_cache`), or None."""
    from absorb import _analysis_cache as disk

    stored = disk.extra_for(act.key, "trusted")
    return [(int(s), int(e)) for s, e in stored] if isinstance(stored, list) else None


def _stored_or_new(act: Activation, v: np.ndarray) -> list[tuple[int, int]] | None:
    """The trusted stretches of a user's expression: read from its analysis cache entry, or computed and stored there."""
    from absorb import _analysis_cache as disk

    ranges = _stored(act)
    if ranges is None:
        ranges = trusted_stretches(act, v)
        if ranges is not None:
            disk.store_extra(act.key, "trusted", [[s, e] for s, e in ranges])
    return ranges


def trusted_grid(act: Activation, window: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(z, σ(z)) at the points z of :data:`GRID` where σ's float64 value is finite and, for a user's expression, inside
    a trusted stretch (:func:`trusted_stretches`), so that an expression that loses its digits in float64 (or even at
    128 bits) is read only where it is right. A sample, not a bound.

    ``window`` (lo, hi): only the points in [lo, hi] (and a few beyond, to whole stretches), which are the whole grid's
    trusted points there: an estimate read from them (a largest difference quotient) is one over a subset of the
    whole grid's, for a fraction of its mpmath evaluations."""
    key = getattr(act, "key", "")
    if (key, window) in _MEMO:
        return _MEMO[(key, window)]
    start, stop = 0, len(GRID)
    if window is not None:
        start = int(np.searchsorted(GRID, window[0])) // _STEP * _STEP
        stop = min(-(-int(np.searchsorted(GRID, window[1], side="right")) // _STEP) * _STEP, len(GRID))
        if (key, None) in _MEMO:
            z, v = _MEMO[(key, None)]
            inside = (z >= GRID[start]) & (z <= GRID[stop - 1])
            return z[inside], v[inside]
    with np.errstate(all="ignore"):
        v = np.asarray(act(GRID), dtype=np.float64)
    ok = np.isfinite(v)
    if not is_builtin(act):
        ranges = _stored_or_new(act, v) if window is None else _stored(act)
        if ranges is None and window is not None:
            ranges = trusted_stretches(act, v, start, stop)
        if ranges is not None:
            keep = np.zeros(len(GRID), dtype=bool)
            for s, e in ranges:
                keep[max(s, 0): max(e, 0)] = True
            ok &= keep
    ok[:start], ok[stop:] = False, False
    _MEMO[(key, window)] = (GRID[ok], v[ok])
    return _MEMO[(key, window)]
