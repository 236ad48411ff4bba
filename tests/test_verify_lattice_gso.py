"""The checker's lattice enumerations (kernel walk and fplll) check their float
Gram–Schmidt data against exact Fractions before they may say that no set is closer."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from absorb.verify import _lattice as vl
from tests.test_lattice_market import market

pytestmark = pytest.mark.skipif(importlib.util.find_spec("fpylll") is None, reason="fpylll is not installed")


def _kernel_data(m: int, seed: int):
    from fpylll import GSO, LLL, IntegerMatrix

    U, D, T = market(m, seed)
    K, t, _, _ = vl._integer_data(U, D, T)
    M = IntegerMatrix.from_matrix(vl._l0_basis(K, t))
    LLL.reduction(M)
    k = M.nrows
    G = GSO.Mat(M)
    G.update_gso()
    mu = np.array([[G.get_mu(i, j) if j < i else float(i == j) for j in range(k)] for i in range(k)])
    B = [list(M[i]) for i in range(k)]
    Bs = np.array(B, dtype=np.float64)
    for i in range(k):
        Bs[i] -= mu[i, :i] @ Bs[:i]
    return B, mu, (Bs * Bs).sum(axis=1), Bs, np.array([G.get_r(i, i) for i in range(k)])


def test_true_data_pass_and_data_off_by_more_than_the_margin_are_refused() -> None:
    B, mu, r, Bs, r_fplll = _kernel_data(5, 501)
    N = len(B[0])
    assert vl._float_ok(B, mu, r, Bs, N) == ""
    assert vl._float_ok(B, mu, r_fplll, None, N) == ""
    off = mu.copy()
    off[len(B) - 1, 0] += 1e-2
    assert "level" in vl._float_ok(B, off, r, Bs, N)
    r_off = r_fplll.copy()
    r_off[3] *= 1.05
    assert "ℓ2" in vl._float_ok(B, mu, r_off, None, N)
    s_off = Bs.copy()
    s_off[4] *= 1.02
    assert "Hölder" in vl._float_ok(B, mu, r, s_off, N)


@pytest.mark.parametrize("walk", ["numba", "fplll"])
def test_checker_on_perturbed_data_declines(monkeypatch: pytest.MonkeyPatch, walk: str) -> None:
    """m = 5, seed 501 (no solution): the check's refusal reaches the caller as a reason."""
    if walk == "fplll":
        monkeypatch.setattr(vl, "_WALK", [None])
    elif vl._walker() is None:
        pytest.skip("numba is not installed")
    U, D, T = market(5, 501)
    assert isinstance(vl.lattice_no_set_closer(U, D, T, 1e-6), vl.LatticeResult)
    real = vl._float_ok

    def perturbed(B, mu, r, Bs, radius):
        r = np.asarray(r, dtype=np.float64).copy()
        r[len(B) // 2] *= 1.5
        return real(B, mu, r, Bs, radius)

    monkeypatch.setattr(vl, "_float_ok", perturbed)
    got = vl.lattice_no_set_closer(U, D, T, 1e-6)
    assert isinstance(got, str) and "exact check" in got


def test_embedding_route_on_perturbed_data_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    U, D = rng.standard_normal((24, 2)), rng.standard_normal((2, 24))
    T = -np.eye(2)
    assert isinstance(vl.lattice_no_set_closer(U, D, T, 1e-6), vl.LatticeResult)
    real = vl._float_ok
    monkeypatch.setattr(vl, "_float_ok", lambda B, mu, r, Bs, radius: real(B, mu, np.asarray(r) * 1.5, Bs, radius))
    got = vl.lattice_no_set_closer(U, D, T, 1e-6)
    assert isinstance(got, str) and "exact check" in got
