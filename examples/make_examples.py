"""Write the shipped example blocks (deterministic: rerun to regenerate them exactly).

    python examples/make_examples.py

* planted_relu.npz   — ReLU, d = 4, n = 16, with an index set S planted so that
                       W_down[:,S] W_up[S,:] = −I: absorbable (result 5, sufficiency).
* generic_gelu.npz   — GELU, d = 4, n = 16, Gaussian weights: not absorbable (result 5).
* swiglu.npz         — SwiGLU, d = 8, n = 32: not absorbable (linearization, result 3).
* relu2_stack.npz    — three ReLU² blocks, d = 6, n = 24: not absorbable (depth, result 4).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(2604_23705)
    d, n = 4, 16
    U = rng.standard_normal((n, d)) / np.sqrt(d)
    D = rng.standard_normal((d, n)) / np.sqrt(n)
    S = np.sort(rng.choice(n, size=6, replace=False))
    D[:, S] = -np.linalg.pinv(U[S])
    np.savez(HERE / "planted_relu.npz", W_up=U, W_down=D, activation=np.array("relu"))

    U = rng.standard_normal((n, d)) / np.sqrt(d)
    D = rng.standard_normal((d, n)) / np.sqrt(n)
    np.savez(HERE / "generic_gelu.npz", W_up=U, W_down=D, activation=np.array("gelu"))

    d, n = 8, 32
    np.savez(HERE / "swiglu.npz", W_gate=rng.standard_normal((n, d)) / np.sqrt(d), W_up=rng.standard_normal((n, d)) / np.sqrt(d),
             W_down=rng.standard_normal((d, n)) / np.sqrt(n), activation=np.array("swiglu"))

    d, n = 6, 24
    arrays = {"activation": np.array("relu2")}
    for i in range(3):
        arrays[f"blocks.{i}.W_up"] = rng.standard_normal((n, d)) / np.sqrt(d)
        arrays[f"blocks.{i}.W_down"] = rng.standard_normal((d, n)) / np.sqrt(n)
    np.savez(HERE / "relu2_stack.npz", **arrays)


if __name__ == "__main__":
    main()
