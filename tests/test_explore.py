"""The depth explorer (absorb.explore): reproducible, and its exact structure is right."""

from __future__ import annotations

import json
import math

import numpy as np

from absorb.cli import main
from absorb.explore import explore_depth, kink_rays_2d
from absorb.explore.depth import LABEL, _loss_grad, _pack

SMALL = dict(d=2, n=2, depth=2, widths=[2, 4], restarts=1, samples=64, maxiter=60)


def test_report_reproducible_from_seed() -> None:
    a = explore_depth(seed=3, **SMALL).to_json()
    b = explore_depth(seed=3, **SMALL).to_json()
    c = explore_depth(seed=4, **SMALL).to_json()
    assert a == b
    assert a != c
    assert a["label"] == LABEL == "numerical evidence, not a verdict"


def test_exact_witness_start_reaches_zero_at_minimal_width() -> None:
    """At width n + d every block is absorbable (Theorem W), so the constructed start is exact."""
    rep = explore_depth(seed=0, **SMALL)
    assert rep.per_block_min_width == [4, 4]
    for r in rep.results:
        if r.width == 4:
            assert r.train_error < 1e-12 and r.start == "constructed(exact-witness)"


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    shapes = [(3, 2), (3, 2)]
    theta = _pack([(rng.standard_normal((3, 2)), rng.standard_normal((2, 3))) for _ in range(2)])
    X, Y = rng.standard_normal((20, 2)), rng.standard_normal((20, 2))
    for act in ("gelu", "relu"):
        f0, g = _loss_grad(theta, shapes, X, Y, act)
        h = 1e-6
        for k in rng.choice(len(theta), 6, replace=False):
            e = np.zeros_like(theta)
            e[k] = h
            fd = (_loss_grad(theta + e, shapes, X, Y, act)[0] - _loss_grad(theta - e, shapes, X, Y, act)[0]) / (2 * h)
            assert abs(fd - g[k]) <= 1e-5 * (1 + abs(fd))


def _jacobian_changes(blocks, m: int = 20000) -> int:
    """Count linear-piece changes along a fine sweep of the circle (independent of the cone code)."""
    th = (np.arange(m) + 0.5) * 2 * math.pi / m
    X = np.stack([np.cos(th), np.sin(th)], axis=1)
    pats = []
    for U, D, M in blocks:
        Z = X @ U.T
        pats.append(Z > 0)
        X = (X if M is None else X @ M.T) + np.maximum(Z, 0) @ D.T
    key = np.concatenate(pats, axis=1)
    changes = 0
    for i in range(m):
        j = (i + 1) % m
        if not np.array_equal(key[i], key[j]):
            changes += 1
    return changes


def test_kink_rays_single_block_and_composition() -> None:
    rng = np.random.default_rng(2)
    U1, D1 = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    assert len(kink_rays_2d([(U1, D1, None)])) == 6  # each unit kinks on its line: two rays
    U2, D2 = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    rays = kink_rays_2d([(U1, D1, None), (U2, D2, None)])
    assert len(rays) == _jacobian_changes([(U1, D1, None), (U2, D2, None)])


def test_cli_json(capsys) -> None:
    assert main(["explore-depth", "--json", "--n", "2", "--depth", "1", "--widths", "2", "--restarts", "1", "--samples", "32",
                 "--maxiter", "20", "--seed", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["label"] == LABEL and out["results"][0]["width"] == 2
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["explore-depth", "--widths", "0"])
    assert exc.value.code == 2
