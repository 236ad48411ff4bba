"""The exponential result within a tolerance: a ray on which f's units stay bounded, or `unknown`.

Exactly, exponentials and a nonzero linear map are independent, so no residual-free block equals f. Within τ that
proves nothing where f's units grow in every direction: red team 46c/01 fitted, for f(x) = x + A·Σ_i e^{u_i x} (d = 1,
u = ±1 and ±1, ±1/2, ±1/4), a residual-free block of f's own units with nudged down weights within 0.7·τ and 0.07·τ of
f. The verdict is `not_absorbable` only with a ray x = t·v on which every unit stays bounded and the skip's share
‖Mv‖∞/(‖Mv‖∞ + ‖v‖∞) exceeds τ — both checked in exact rationals, by the engine and again by the checker."""

from __future__ import annotations

import numpy as np
import pytest

from absorb import Block, decide, get_activation
from absorb.certificate import build_certificate
from absorb.verify.checker import verify_certificate


def _exp(U: list[list[float]], D: list[list[float]], act: str = "expr:exp(x)") -> Block:
    return Block(np.asarray(U, float), np.asarray(D, float), get_activation(act), skip=np.eye(len(D)))


def _ratio(f: Block, g: Block, X: np.ndarray) -> float:
    F, G = f(X), g(X)
    den = np.abs(F).max(axis=1) + np.abs(X).max(axis=1) + np.abs(f(np.zeros((1, f.d)))).max()
    return float((np.abs(F - G).max(axis=1) / den).max())


@pytest.mark.parametrize(("us", "A"), [((1.0, -1.0), 2e6), ((1.0, -1.0, 0.5, -0.5, 0.25, -0.25), 1e5)])
def test_units_growing_both_ways_leave_the_skip_within_reach(us: tuple[float, ...], A: float) -> None:
    """(red team 46c/01) f(x) = x + A·Σ e^{u_i x}: dropping the skip alone is within 1.1–11·τ at τ = 10⁻⁷, and a block of
    f's own units with nudged down weights came within 0.07–0.7·τ; no ray keeps the units bounded: unknown."""
    f = _exp([[u] for u in us], [[A] * len(us)])
    dec = decide(f, tol=1e-7, timeout=30)
    assert dec.verdict.value == "unknown" and "no direction v was found" in dec.blocks[0].reason, dec.blocks[0].reason
    assert verify_certificate(build_certificate(dec, f, seed=0).to_json(), f).accepted
    g = f.replace(skip=np.zeros((1, 1)))  # (the plain drop: its ratio along x is the skip's share, near τ)
    X = np.linspace(-40, 40, 4001)[:, None]
    assert _ratio(f, g, X) < 20 * 1e-7


@pytest.mark.parametrize("act", ["expr:exp(x)", "expr:2*exp(3*x) - 1", "expr:exp(-x/2)"])
def test_a_ray_where_the_units_stay_bounded_proves_it_within_the_tolerance(act: str) -> None:
    """Units all of one sign along e₁ (after β's sign): on x = t·v they stay bounded, f(tv) = t·v + O(1), and the skip's
    share 1/2 is far past τ: not_absorbable, the ray recorded, and the checker re-derives it."""
    rng = np.random.default_rng(3)
    U = -np.abs(rng.standard_normal((5, 3))) * (-1 if "-x" in act else 1)
    f = Block(U, rng.standard_normal((3, 5)) * 1e3, get_activation(act))
    dec = decide(f, tol=1e-7, timeout=30)
    bd = dec.blocks[0]
    assert dec.verdict.value == "not_absorbable" and bd.theorem.value == "exponential", bd.reason
    v, r = bd.direction
    assert r > 1e-7 and np.all(np.asarray(U) @ np.asarray(v) * (-1 if "-x" in act else 1) <= 0)
    doc = build_certificate(dec, f, seed=0).to_json()
    rep = verify_certificate(doc, f)
    assert rep.accepted and not rep.not_rechecked, [x.claim for x in rep.failures + rep.not_rechecked]


@pytest.mark.parametrize("act", ["expr:exp(sqrt(2)*x)", "expr:3*exp(-pi*x) + 1"])
def test_an_irrational_rate_is_recorded_as_its_rounding_and_verifies(act: str) -> None:
    """β = √2 or −π is recorded as its float64 rounding; the checker compared it exactly with its own √2 and rejected the
    tool's own certificate. Now the rounding of the checker's exact constant must equal the record; another float is
    still rejected."""
    import copy

    rng = np.random.default_rng(3)
    U = np.abs(rng.standard_normal((5, 3))) * (1 if "-pi" in act else -1)
    f = Block(U, rng.standard_normal((3, 5)), get_activation(act))
    dec = decide(f, timeout=30)
    assert dec.verdict.value == "not_absorbable", dec.blocks[0].reason
    doc = build_certificate(dec, f, seed=0).to_json()
    rep = verify_certificate(doc, f)
    assert rep.accepted and not rep.not_rechecked, [x.claim for x in rep.failures + rep.not_rechecked]
    bad = copy.deepcopy(doc)
    bad["blocks"][0]["argument"]["beta"] = float(np.nextafter(bad["blocks"][0]["argument"]["beta"], 0.0))
    assert not verify_certificate(bad, f).accepted
