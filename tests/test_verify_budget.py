"""The checker's exact simplification of σ's flip identities has a time budget: a σ whose identity does not
settle within it (many irrational constants) makes a not_absorbable 'not re-checked' (exit 4) instead of
stalling verify, and a σ that settles is unaffected."""

from __future__ import annotations

import numpy as np
import pytest

from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.verify import _shift
from absorb.verify._tolerance import contradiction

S = "log(3) + pi**(1/3) + exp(1/3) + atan(1/7) + sqrt(2) + 2**(1/3) + log(5)"


def _block(act: str) -> Block:
    rng = np.random.default_rng(3)
    return Block(W_up=rng.standard_normal((4, 2)), W_down=rng.standard_normal((2, 4)), activation=get_activation(act),
                 b_up=rng.standard_normal(4), b_down=np.ones(2), skip=rng.standard_normal((2, 2)))


def test_a_stalling_identity_is_reported_not_rechecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shift, "BUDGET", 1e-3)
    monkeypatch.setattr(_shift, "_FOUND", {})
    _shift.UNDECIDED.clear()
    _shift._flip.cache_clear()
    _shift._shifted.cache_clear()
    blk = _block(f"expr:(x - ({S}))/(1 + exp(({S}) - x))")
    assert contradiction(blk, 1e-9) is None  # (the exact pass: nothing proved, nothing claimed)
    got = contradiction(blk, 1e-9, estimated=True)
    assert got is not None and "not decided within" in got
    _shift.UNDECIDED.clear()


def test_the_budget_stops_only_what_runs_past_it() -> None:
    with _shift._budget(5.0):
        x = sum(range(1000))
    assert x == 499500
    with pytest.raises(_shift._OverBudget), _shift._budget(0.01):
        while True:
            pass
