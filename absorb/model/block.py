"""MLP blocks with a skip, stacks of them, and their numeric and symbolic forms.

Notation (theory.md §1): ``W_up`` is n×d (row i is u_i), ``W_down`` is d×n (column i is
w_i), the same orientation as ``nn.Linear`` weights. A block computes

* ungated: ``B(x) = W_down σ(W_up x + b_up) + b_down``
* gated:   ``B(x) = W_down (g(W_gate x + b_gate) ⊙ (W_up x + b_up)) + b_down``

and the skip-connected block is ``f(x) = M x + B(x)`` with ``M = skip`` (identity when
``skip`` is None). A *residual-free* block has ``M = 0`` (:attr:`Block.is_residual_free`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import sympy as sp

from absorb.model.activations import Activation, display_name


@dataclass(frozen=True)
class HyperConnection:
    """Hyper-Connection mixing of ``s`` streams: ``f(X) = H_res X + H_post^T B(H_pre X)``."""

    H_res: np.ndarray  # (s, s)
    H_pre: np.ndarray  # (s,)
    H_post: np.ndarray  # (s,)

    @property
    def s(self) -> int:
        return int(self.H_res.shape[0])


@dataclass(frozen=True, eq=False)
class Block:
    """One MLP block with its skip. Arrays are float64, validated by the loaders."""

    W_up: np.ndarray
    W_down: np.ndarray
    activation: Activation
    W_gate: np.ndarray | None = None
    b_up: np.ndarray | None = None
    b_gate: np.ndarray | None = None
    b_down: np.ndarray | None = None
    skip: np.ndarray | None = None
    name: str = "block"
    hc: HyperConnection | None = field(default=None, compare=False)
    """Set when this block was lifted from a Hyper-Connection block (for reports)."""

    # ---- shape and kind -------------------------------------------------------------
    @property
    def d(self) -> int:
        return int(self.W_up.shape[1])

    @property
    def n(self) -> int:
        return int(self.W_up.shape[0])

    @property
    def gated(self) -> bool:
        return self.W_gate is not None

    @property
    def has_bias(self) -> bool:
        return any(b is not None and np.any(b != 0) for b in (self.b_up, self.b_gate, self.b_down))

    @property
    def kind(self) -> str:
        return "gated" if self.gated else "ungated"

    @property
    def activation_name(self) -> str:
        return display_name(self.activation, gated=self.gated)

    @property
    def M(self) -> np.ndarray:
        """The skip matrix (identity when none was given)."""
        return np.eye(self.d) if self.skip is None else self.skip

    @property
    def is_residual_free(self) -> bool:
        return self.skip is not None and not np.any(self.skip)

    # ---- numeric evaluation ---------------------------------------------------------
    def mlp(self, X: np.ndarray) -> np.ndarray:
        """``B(x)`` for each row of ``X`` (shape (m, d)) — the block without its skip."""
        X = np.atleast_2d(X)
        H = X @ self.W_up.T
        if self.b_up is not None:
            H = H + self.b_up
        if self.gated:
            G = X @ self.W_gate.T
            if self.b_gate is not None:
                G = G + self.b_gate
            H = self.activation(G) * H
        else:
            H = self.activation(H)
        out = H @ self.W_down.T
        if self.b_down is not None:
            out = out + self.b_down
        return out

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """``f(x) = M x + B(x)`` for each row of ``X``."""
        X = np.atleast_2d(X)
        lin = X if self.skip is None else X @ self.skip.T
        return lin + self.mlp(X)

    # ---- symbolic form --------------------------------------------------------------
    def symbolic(self, xs: Sequence[sp.Symbol] | None = None, *, exact: bool = True) -> sp.Matrix:
        """``f(x)`` as a sympy column vector, weights as exact rationals (floats are dyadic).

        Meant for small instances (proofs, exact checks); cost grows with n·d.
        """
        xs = list(xs) if xs is not None else list(sp.symbols(f"x0:{self.d}", real=True))
        conv = sp.Rational if exact else sp.Float
        xv = sp.Matrix(xs)

        def mat(a: np.ndarray) -> sp.Matrix:
            return sp.Matrix(a.shape[0], a.shape[1], [conv(float(v)) for v in a.ravel()])

        def vec(a: np.ndarray | None, k: int) -> sp.Matrix:
            return sp.zeros(k, 1) if a is None else sp.Matrix([conv(float(v)) for v in a])

        x = self.activation.expr.free_symbols
        (sym,) = x if x else (sp.Symbol("x", real=True),)
        act = sp.Lambda(sym, self.activation.expr)
        h = mat(self.W_up) * xv + vec(self.b_up, self.n)
        if self.gated:
            g = mat(self.W_gate) * xv + vec(self.b_gate, self.n)
            hidden = sp.Matrix([act(g[i]) * h[i] for i in range(self.n)])
        else:
            hidden = h.applyfunc(act)
        out = mat(self.W_down) * hidden + vec(self.b_down, self.d)
        return mat(self.M) * xv + out

    # ---- construction helpers -------------------------------------------------------
    def replace(self, **changes: object) -> "Block":
        return replace(self, **changes)

    def without_weights(self) -> "Block":
        """A copy whose matrices are zero-stride placeholders of the same shapes (no memory).

        For records that outlive the weights, such as the per-layer decisions of a large
        checkpoint: names, kinds and shapes stay, the weights are gone.
        """
        def ph(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.broadcast_to(np.float64(0.0), a.shape)

        return replace(self, W_up=ph(self.W_up), W_down=ph(self.W_down), W_gate=ph(self.W_gate))

    def as_residual_free(self) -> "Block":
        return replace(self, skip=np.zeros((self.d, self.d)))

    def arrays(self) -> dict[str, np.ndarray]:
        """Every weight array by its npz key (the skip only when one was given)."""
        out = {"W_up": self.W_up, "W_down": self.W_down}
        for key in ("W_gate", "b_up", "b_gate", "b_down", "skip"):
            val = getattr(self, key)
            if val is not None:
                out[key] = val
        return out


@dataclass(frozen=True, eq=False)
class Stack:
    """``F = f_L ∘ … ∘ f_1``: blocks applied in order (``blocks[0]`` first)."""

    blocks: tuple[Block, ...]

    def __post_init__(self) -> None:
        assert len(self.blocks) >= 1

    def __len__(self) -> int:
        return len(self.blocks)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        for blk in self.blocks:
            X = blk(X)
        return X


def lift_hyper_connection(block: Block, hc: HyperConnection) -> Block:
    """Lift a Hyper-Connection block to one block on ``R^{sd}`` (theory.md §2, result 1).

    ``M = H_res ⊗ I_d``, ``W_up ← W_up (H_preᵀ ⊗ I_d)``, ``W_down ← (H_post ⊗ I_d) W_down``;
    the state ``X ∈ R^{s×d}`` is flattened row by row (stream-major). Biases: ``b_down``
    is spread like ``W_down``; ``b_up``/``b_gate`` stay as they are.
    """
    d = block.d
    eye = np.eye(d)
    pre = np.kron(hc.H_pre.reshape(1, -1), eye)  # (d, s d)
    post = np.kron(hc.H_post.reshape(-1, 1), eye)  # (s d, d)
    return replace(
        block,
        W_up=block.W_up @ pre,
        W_gate=None if block.W_gate is None else block.W_gate @ pre,
        W_down=post @ block.W_down,
        b_down=None if block.b_down is None else post @ block.b_down,
        skip=np.kron(hc.H_res, eye),
        hc=hc,
    )


def sinkhorn(logits: np.ndarray, *, iters: int = 200) -> np.ndarray:
    """A doubly stochastic matrix from ``exp(logits)`` by Sinkhorn normalisation (mHC).

    Such an ``H_res`` can be singular — every entry ``1/s`` is doubly stochastic — and then
    the invertible-skip reduction does not apply (theory.md §2).
    """
    K = np.exp(np.asarray(logits, dtype=float) - np.max(logits))
    for _ in range(iters):
        K = K / K.sum(axis=1, keepdims=True)
        K = K / K.sum(axis=0, keepdims=True)
    return K
