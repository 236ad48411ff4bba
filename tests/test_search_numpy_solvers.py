"""The narrow regime's own small solvers (numpy, so that a small block is decided without
importing scipy): the pivoted QR of the MITM plan and the box least squares of the dual
bound, each against scipy's routine on the same input."""

from __future__ import annotations

import numpy as np
import pytest

from absorb.search._common import khatri_rao
from absorb.search.bounds import _box_least_squares, relaxation_bound
from absorb.search.mitm import _qr_pivoted, _rank_pivots


def _instances(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for k in range(count):
        d, n = int(rng.integers(2, 6)), int(rng.integers(2, 60))
        U, D = rng.standard_normal((n, d)), rng.standard_normal((d, n))
        if k % 3 == 1 and n >= d:  # planted: D[:,S] U[S] = −I
            S = rng.choice(n, int(rng.integers(d, n + 1)), replace=False)
            D[:, S] = -np.linalg.pinv(U[S])
        if k % 3 == 2:  # small integers: ties and rank deficiency
            U, D = rng.integers(-2, 3, (n, d)).astype(float), rng.integers(-2, 3, (d, n)).astype(float)
        yield U, D


def test_pivoted_qr_matches_lapack() -> None:
    import scipy.linalg

    for U, D in _instances(0, 60):
        K = khatri_rao(U, D)
        Q, R, piv = _qr_pivoted(K)
        k = min(K.shape)
        scale = max(1.0, float(np.abs(K).max()))
        assert Q.shape == (K.shape[0], k) and R.shape == (k, K.shape[1])
        assert np.abs(Q @ R - K[:, piv]).max() <= 1e-12 * scale
        assert np.abs(Q.T @ Q - np.eye(k)).max() <= 1e-12
        assert sorted(piv.tolist()) == list(range(K.shape[1]))
        _Q2, R2, _piv2 = scipy.linalg.qr(K, mode="economic", pivoting=True)
        # the same |R_kk| (the pivots may differ only between columns of equal norm)
        assert np.allclose(np.abs(np.diag(R)), np.abs(np.diag(R2)), rtol=1e-9, atol=1e-12 * scale)
        r, P, M = _rank_pivots(K)
        if r:
            assert np.allclose(M @ K[:, P[:r]], np.eye(r), atol=1e-8)


@pytest.mark.parametrize("seed", [1, 2])
def test_box_least_squares_reaches_the_optimum(seed: int) -> None:
    from scipy.optimize import lsq_linear

    for U, D in _instances(seed, 60):
        d = U.shape[1]
        K, t = khatri_rao(U, D), -np.eye(d).ravel()
        x = _box_least_squares(K, t)
        assert x is not None
        assert np.all((0.0 <= x) & (x <= 1.0))
        ref = lsq_linear(K, t, bounds=(0.0, 1.0), method="bvls", tol=1e-14, max_iter=10_000).x
        f, f_ref = np.linalg.norm(K @ x - t), np.linalg.norm(K @ np.clip(ref, 0, 1) - t)
        assert f <= f_ref * (1 + 1e-9) + 1e-12
        # KKT: no variable at a bound is pulled into the box, free ones have zero gradient
        w = K.T @ (t - K @ x)
        tol = 1e-9 * max(1.0, float(np.abs(K).sum(axis=0).max()))
        assert np.all(w[x <= 0.0] <= tol) and np.all(w[x >= 1.0] >= -tol)
        inside = (x > 0.0) & (x < 1.0)
        assert np.all(np.abs(w[inside]) <= tol)
        # the dual bound built from it is the relaxation's distance (no weaker than before)
        bound, _Y = relaxation_bound(U, D, -np.eye(d))
        assert bound >= f / np.sqrt(d) * (1 - 1e-9) - 1e-12
