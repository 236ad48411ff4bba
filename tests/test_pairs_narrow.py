"""The nearly antipodal pairs' screens look only as near antipodal as can matter (absorb/engine/_fit.py).

Each screen compares something a pair of defect δ contributes with a bar: the capacity √d·margin·τ'(1 + 1/(1.2δ)) with
the search's bound, the least-squares estimate with margin·τ' (it is at least ‖M‖∞·1.2δ_min/√d), a turned unit's cost
(at least its down column's size · |u|₂ · δ) with 5√d times the budget. Past the δ where that comparison cannot turn,
pairs are not looked for — on a 7B-sized layer a Gram of every unit in 168 projected dimensions, against one in 16 that
reuses the nondegeneracy check's projection. The answers must be the ones every pair up to the widest angle gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from absorb.engine import _collinear, _fit
from absorb.engine._kept import forget
from absorb.engine.hypotheses import nondegenerate
from absorb.model.activations import get_activation
from absorb.model.block import Block

pytestmark = pytest.mark.usefixtures("screens_at_any_tolerance")  # (the screens past 10⁻⁴ too: tests/conftest.py)


def _block(act: str, n: int, d: int, deltas: list[float], seed: int, scale: float = 1.0) -> Block:
    """A random block (identity skip) whose first units come in pairs u, −u + δ·w (|w|₂ = 1 ⟂ u, so ‖û_i + û_j‖ ≈ δ),
    down columns of size ``scale`` (tiny ones make a turned unit cheap)."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    for k, delta in enumerate(deltas):
        u = U[2 * k]
        w = rng.standard_normal(d)
        w -= (w @ u) * u
        U[2 * k + 1] = -u + delta * w / np.linalg.norm(w)
    D = rng.standard_normal((d, n)) * scale / math.sqrt(n)
    return Block(W_up=U, W_down=D, activation=get_activation(act), skip=np.eye(d))


def _every_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: every screen reads every pair up to the widest angle, whatever angle it asks for."""
    whole = _fit._antipodal.__wrapped__ if hasattr(_fit._antipodal, "__wrapped__") else _fit._antipodal
    monkeypatch.setattr(_fit, "_antipodal", lambda R, homogeneous, angle=_fit._PAIR_ANGLE: whole(R, homogeneous))


CASES = [("relu", 40, 8, [1e-9, 1e-5, 3e-3, 0.05], 0, 1.0), ("gelu", 40, 8, [2e-6, 0.1], 1, 1.0),
         ("relu", 40, 8, [0.15], 2, 1e-6), ("gelu", 60, 6, [], 3, 1.0), ("gelu", 30, 8, [1e-4, 1e-3], 4, 1e-8),
         ("relu", 4200, 64, [1e-10, 1e-6, 1e-3, 0.01, 0.19], 5, 1.0), ("gelu", 4200, 64, [], 6, 1e-7)]


@pytest.mark.parametrize("act, n, d, deltas, seed, scale", CASES)
@pytest.mark.parametrize("tol", [1e-9, 1e-6, 1e-3])
def test_the_screens_answer_as_with_every_pair(act: str, n: int, d: int, deltas: list[float], seed: int, scale: float,
                                               tol: float, monkeypatch: pytest.MonkeyPatch) -> None:
    blk = _block(act, n, d, deltas, seed, scale)
    clear = nondegenerate(blk)[2].value["tau"] if nondegenerate(blk)[2].holds else 0.0
    answers = []
    for reference in (False, True):
        forget()
        with monkeypatch.context() as m:
            if reference:
                _every_pair(m)
            got = [_fit.pairs_realise_skip(blk, tol, 4.0, gap) for gap in (None, 0.0, 1e-3, 1.0)]
            got.append(_fit.freed_units_realise_skip(blk, tol, 4.0))
            for need in (1e-12, 1e-6, 1e-3, 1.0):
                cap = _fit.pair_capacity(blk, tol, 4.0, need=need, clear=0.0 if reference else clear)[0]
                got.append(cap >= need)
        answers.append(got)
    assert answers[0] == answers[1]
    forget()


def test_a_narrower_angle_is_read_from_a_wider_answer() -> None:
    blk = _block("relu", 40, 8, [1e-6, 1e-3, 0.05], 7)
    R = np.asarray(blk.W_up)
    forget()
    i, _, delta, j = _fit._antipodal(R, True)
    assert sorted(zip(i.tolist(), j.tolist())) == [(0, 1), (2, 3), (4, 5)]
    for angle in (1e-2, 2e-6, 1e-9):
        ni, _, nd, _ = _fit._antipodal(R, True, angle)  # (served from the kept answer)
        assert ni.tolist() == i[delta <= angle].tolist() and np.array_equal(nd, delta[delta <= angle])
        forget()
        fi, _, fd, _ = _fit._antipodal(R, True, angle)  # (searched afresh at that angle)
        assert fi.tolist() == ni.tolist() and np.array_equal(fd, nd)
        _fit._antipodal(R, True)
    forget()


def test_the_narrow_screen_of_a_large_layer_reuses_the_nondegeneracy_projection(monkeypatch: pytest.MonkeyPatch) -> None:
    blk = _block("gelu", 4200, 64, [1e-4], 8)
    calls = []
    real = _collinear._normalised_block
    monkeypatch.setattr(_collinear, "_normalised_block", lambda *a: calls.append(1) or real(*a))
    forget()
    assert nondegenerate(blk)[2].holds
    first = len(calls)
    i, _, delta, _ = _fit._antipodal(np.asarray(blk.W_up), False, 1e-3)
    assert i.tolist() == [0] and first > 0 and len(calls) == first  # (no second pass over the rows)
    forget()
