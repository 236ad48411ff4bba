"""The lattice enumerations' float Gram–Schmidt data are checked against exact ones before
any claim rests on them (absorb.search._kernel.certify_float_gso): true data pass, data off
by more than the enumeration's margin are refused, and a refused check leaves no verdict."""

from __future__ import annotations

import importlib.util
import time
from fractions import Fraction

import numpy as np
import pytest

from absorb.search import SearchStatus
from absorb.search import _kernel as kr
from absorb.search import lattice as lat
from tests.test_lattice_market import market

needs_fpylll = pytest.mark.skipif(importlib.util.find_spec("fpylll") is None, reason="fpylll is not installed")


def test_exact_gso_is_the_gram_schmidt_of_the_rows() -> None:
    """Integers only, against the textbook recursion in Fractions on a random basis."""
    rng = np.random.default_rng(5)
    B = rng.integers(-9, 10, size=(6, 9)).tolist()
    d, lam, P = kr.exact_gso(B)
    star: list[list[Fraction]] = []
    for i, b in enumerate(B):
        v = [Fraction(x) for x in b]
        for j, s in enumerate(star):
            mu = sum(Fraction(x) * y for x, y in zip(b, s)) / sum(y * y for y in s)
            assert lam[i][j] == mu * d[j + 1]
            v = [a - mu * y for a, y in zip(v, s)]
        star.append(v)
        assert [Fraction(x, d[i]) for x in P[i][:9]] == v
        assert Fraction(d[i + 1], d[i]) == sum(y * y for y in v)
    # the coefficient part is L⁻¹: b*_i = Σ_j (L⁻¹)_ij b_j
    for i in range(6):
        comb = [sum(Fraction(P[i][9 + j], d[i]) * B[j][c] for j in range(6)) for c in range(9)]
        assert comb == star[i]
    with pytest.raises(ValueError):
        kr.exact_gso([[1, 2, 3], [2, 4, 6]])


@needs_fpylll
def test_true_float_data_pass_and_data_off_by_more_than_the_margin_are_refused() -> None:
    U, D, T = market(5, 501)
    K, t, _ = lat.integer_system(U, D, T)
    B = lat.kernel_basis(K, t)
    k, N = len(B), len(B[0])
    mu, rr, Bs = kr._float_gso(B)
    yb = np.abs(Bs).sum(axis=1) / rr * (1 + kr._ENUM_MARGIN)
    m = kr._ENUM_MARGIN
    assert kr.certify_float_gso(B, mu, rr, Bs, yb, N, m) == ""
    assert kr.certify_float_gso(B, mu, rr, None, None, N, m) == ""  # the ℓ2-only form (fplll)
    tiny = mu.copy()
    tiny[k - 1, 0] += 1e-13  # well inside the margin: still accepted
    assert kr.certify_float_gso(B, tiny, rr, Bs, yb, N, m) == ""
    off = mu.copy()
    off[k - 1, 0] += 1e-2
    assert "level" in kr.certify_float_gso(B, off, rr, Bs, yb, N, m)
    r_off = rr.copy()
    r_off[3] *= 1.05  # an ℓ2 partial sum 5 % too large at level 3
    assert "ℓ2" in kr.certify_float_gso(B, mu, r_off, None, None, N, m)
    y_off = yb.copy()
    y_off[2] = np.abs(Bs[2]).sum() / rr[2] * (1 - 1e-9)  # below the exact Hölder bound
    assert "y-bound" in kr.certify_float_gso(B, mu, rr, Bs, y_off, N, m)
    s_off = Bs.copy()
    s_off[5] *= 1.02
    assert "Hölder" in kr.certify_float_gso(B, mu, rr, s_off, yb, N, m)


@needs_fpylll
@pytest.mark.parametrize("jit", [False, True])
def test_a_walk_on_perturbed_data_claims_nothing(monkeypatch: pytest.MonkeyPatch, jit: bool) -> None:
    """m = 4 (infeasible, seed 400): with the float μ moved by 10^-2 the walk may prune a
    solution, so its empty list is no proof: None and the reason, and the search says unknown."""
    if jit and kr._jitted() is None:
        pytest.skip("numba is not installed")
    U, D, T = market(4, 400)
    K, t, _ = lat.integer_system(U, D, T)
    B = lat.kernel_basis(K, t)
    vecs, _, why = lat.holder_enumerate(B, time.perf_counter() + 60, jit=jit)
    assert vecs == [], why  # the true data: a complete, empty list
    real = kr._float_gso

    def perturbed(rows):
        mu, rr, Bs = real(rows)
        mu = mu.copy()
        mu[len(rows) - 1, 0] += 1e-2
        return mu, rr, Bs

    monkeypatch.setattr(kr, "_float_gso", perturbed)
    vecs, _, why = lat.holder_enumerate(B, time.perf_counter() + 60, jit=jit)
    assert vecs is None and "exact check" in why


@needs_fpylll
def test_fplll_enumeration_on_perturbed_data_claims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fplll routes check fplll's own float data the same way (wired: a refusal there
    turns the infeasible verdict of generic d = 2, n = 24 into unknown)."""
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((24, 2)), rng.standard_normal((2, 24))
    T = -np.eye(2)
    assert lat.solve_lattice(U, D, T, timeout=60, find=False).status is SearchStatus.INFEASIBLE
    real = lat.certify_float_gso

    def perturbed(B, mu, rr, Bs, yb, radius, margin):
        rr = rr.copy()
        rr[len(B) // 2] *= 1.5
        return real(B, mu, rr, Bs, yb, radius, margin)

    monkeypatch.setattr(lat, "certify_float_gso", perturbed)
    res = lat.solve_lattice(U, D, T, timeout=60, find=False)
    assert res.status is SearchStatus.UNKNOWN and "exact check" in res.reason
