"""Weight distributions for the Monte Carlo sweep, sampled in batches.

Each sampler draws ``U`` (B×n×d, the up projection, fan-in d) and ``D`` (B×d×n, the down
projection, fan-in n) from one :class:`numpy.random.Generator`. Continuous distributions
give nondegenerate weights with probability one, so result 5 makes "absorbable" a
probability-zero event there; the discrete ones (rounded, quantised, ternary, sparse) put
mass on exact coincidences — zero rows, repeated rows, exact index sets — and the sweep
reports how often their weights are degenerate, where result 5's necessity does not apply.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from absorb.montecarlo._names import DESCRIPTIONS, DISCRETE, SPARSE_DENSITY, T_DF  # noqa: F401  (DISCRETE: re-exported)

Sampler = Callable[[np.random.Generator, tuple[int, ...], int, int], np.ndarray]

_INT8_LEVELS = 127


def _gaussian(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int, fan_out: int) -> np.ndarray:
    return rng.standard_normal(shape)


def _uniform(rng, shape, fan_in, fan_out):
    return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)  # unit variance


def _xavier(rng, shape, fan_in, fan_out):
    a = np.sqrt(6.0 / (fan_in + fan_out))  # Glorot & Bengio uniform
    return rng.uniform(-a, a, shape)


def _kaiming(rng, shape, fan_in, fan_out):
    return rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)  # He normal, fan-in mode


def _student_t(rng, shape, fan_in, fan_out):
    return rng.standard_t(T_DF, shape) / np.sqrt(T_DF / (T_DF - 2.0))  # unit variance


def _sparse(rng, shape, fan_in, fan_out):
    return rng.standard_normal(shape) * (rng.random(shape) < SPARSE_DENSITY)


def _rounded(dtype_name: str) -> Sampler:
    def sample(rng, shape, fan_in, fan_out):
        x = _kaiming(rng, shape, fan_in, fan_out)
        if dtype_name == "bfloat16":
            import ml_dtypes  # imported here: only this distribution needs it

            return x.astype(ml_dtypes.bfloat16).astype(np.float64)
        return x.astype(np.float16).astype(np.float64)

    return sample


def _int8(rng, shape, fan_in, fan_out):
    """Symmetric per-matrix int8 quantisation of a Kaiming sample: q·s, s = max|x|/127."""
    x = _kaiming(rng, shape, fan_in, fan_out)
    scale = np.abs(x).max(axis=(-2, -1), keepdims=True) / _INT8_LEVELS
    scale = np.where(scale > 0, scale, 1.0)
    return np.clip(np.rint(x / scale), -_INT8_LEVELS, _INT8_LEVELS) * scale


def _ternary(rng, shape, fan_in, fan_out):
    """Entries −1, 0, 1 with probability 1/3 each (BitNet-style, scale 1: integer products)."""
    return rng.integers(-1, 2, shape).astype(np.float64)


_SAMPLERS: dict[str, Sampler] = {
    "gaussian": _gaussian, "uniform": _uniform, "xavier": _xavier, "kaiming": _kaiming, "student_t": _student_t,
    "sparse": _sparse, "fp16": _rounded("float16"), "bf16": _rounded("bfloat16"), "int8": _int8, "ternary": _ternary,
}
DISTRIBUTIONS: dict[str, tuple[Sampler, str]] = {name: (_SAMPLERS[name], text) for name, text in DESCRIPTIONS.items()}
"""name → (sampler, description). Discrete ones (:data:`DISCRETE`): sparse, fp16, bf16, int8, ternary."""


def sample_weights(rng: np.random.Generator, dist: str, B: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch ``U`` (B, n, d) and ``D`` (B, d, n) from distribution ``dist``."""
    fn = DISTRIBUTIONS[dist][0]
    U = fn(rng, (B, n, d), d, n)
    D = fn(rng, (B, d, n), n, d)
    return U, D


def plant(rng: np.random.Generator, U: np.ndarray, D: np.ndarray, *, c: float,
          cond_max: float = 1e4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positive controls: ``D[b][:, S_b] = (−pinv(U_S) + Z Nᵀ) / c`` for a random S_b with
    |S_b| ≥ d (``N`` an orthonormal basis of the null space of ``U_Sᵀ``, ``Z`` Gaussian at the
    scale of D), so that ``c·D_S U_S = −I`` up to rounding (≈ cond(U_S)·ε ≪ the tolerance).

    ``U_S`` must have full column rank: an S whose rows are rank-deficient or ill-conditioned
    (cond > cond_max; discrete weights often are) is redrawn, up to 50 times. Returns the new
    ``D``, the (B, n) masks of the planted sets, and which instances were planted (``ok``).
    """
    B, n, d = U.shape
    D = D.copy()
    masks = np.zeros((B, n), dtype=bool)
    ok = np.zeros(B, dtype=bool)
    for b in range(B):
        for _ in range(50):
            k = int(rng.integers(d, n + 1))
            S = np.sort(rng.choice(n, size=k, replace=False))
            US = U[b][S]
            sv = np.linalg.svd(US, compute_uv=False)
            if sv[-1] > 0 and sv[0] / sv[-1] <= cond_max:
                # −pinv(U_S) alone puts every w_i, i ∈ S, in one d-dimensional family
                # (w_i = −(U_Sᵀ U_S)^{-1} u_i), which makes K rank-deficient once
                # |S| > d(d+1)/2. Adding Z Nᵀ (N spans the null space of U_Sᵀ, Z Gaussian)
                # keeps D_S U_S = −I and makes the planted solution a generic one.
                q, _ = np.linalg.qr(US, mode="complete")
                N = q[:, d:]
                Z = rng.standard_normal((d, k - d)) * (np.linalg.norm(D[b]) / np.sqrt(D[b].size) if D[b].any() else 1.0)
                D[b][:, S] = (-np.linalg.pinv(US) + Z @ N.T) / c
                masks[b, S] = True
                ok[b] = True
                break
    return D, masks, ok
