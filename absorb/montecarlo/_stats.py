"""Exact binomial confidence intervals and distance summaries."""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import stats

IntervalKind = Literal["two-sided", "upper", "lower"]


def clopper_pearson(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float, IntervalKind]:
    """Exact (Clopper–Pearson) confidence interval for a binomial proportion k/n.

    With 0 < k < n: the two-sided interval ``[B(α/2; k, n−k+1), B(1−α/2; k+1, n−k)]``
    (B the beta quantile). With k = 0 the interval is reported as a one-sided upper bound
    ``[0, 1 − α^{1/n}]`` (the "rule of three": ≈ 3/n at 95%), and with k = n as a one-sided
    lower bound ``[α^{1/n}, 1]`` — the natural statements when nothing (or everything) hit.

    >>> lo, hi, kind = clopper_pearson(0, 100); kind, round(hi, 4)
    ('upper', 0.0295)
    >>> [round(v, 4) for v in clopper_pearson(5, 100)[:2]]
    [0.0164, 0.1128]
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson: need 0 ≤ k ≤ n and n ≥ 1, got k = {k}, n = {n}")
    alpha = 1.0 - confidence
    if k == 0:
        return 0.0, float(stats.beta.ppf(confidence, 1, n)), "upper"
    if k == n:
        return float(stats.beta.ppf(alpha, n, 1)), 1.0, "lower"
    lo = float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi, "two-sided"


QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def summarize(values: np.ndarray) -> dict[str, float]:
    """min, the quantiles in :data:`QUANTILES` (q05 … q95; q50 is the median), max, mean."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {}
    qs = np.quantile(v, QUANTILES)
    out = {"min": float(v.min())}
    out.update({f"q{int(round(q * 100)):02d}": float(x) for q, x in zip(QUANTILES, qs)})
    out.update(max=float(v.max()), mean=float(v.mean()))
    return out
