"""MLP blocks with a skip, stacks of them, and their numeric and symbolic forms.

Notation (docs/mathematics.md §1): ``W_up`` is n×d (row i is u_i), ``W_down`` is d×n (column i is
w_i), the same orientation as ``nn.Linear`` weights. A block computes

* ungated: ``B(x) = W_down σ(W_up x + b_up) + b_down``
* gated:   ``B(x) = W_down (g(W_gate x + b_gate) ⊙ h(W_up x + b_up)) + b_down``, where the value
  activation ``h`` (``value_activation``) is the identity unless one is given (gpt-oss clamps
  its value branch: ``h(z) = clamp(z, −L, L) + 1``)

and the skip-connected block is ``f(x) = M x + B(x)`` with ``M = skip`` (identity when
``skip`` is None). A *residual-free* block has ``M = 0`` (:attr:`Block.is_residual_free`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as _dc_replace
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from absorb._errors import InvalidInput
from absorb._validate import _CALLS, _label, as_float_array
from absorb.model.activations import Activation, display_name
from absorb.rigorous import all_finite, row_slices, unit_reach

if TYPE_CHECKING:
    import sympy as sp

# ---- validation at the public boundary --------------------------------------------------
# A Block built by a caller is checked (array-likes → float64, shapes, finiteness, gate and
# bias shapes); a Block derived from a checked one inside the package (replace, lifting,
# weight-free placeholders, witnesses) is not: its arrays are internal results, and an
# overflow there is a numerical outcome for the engine to report, not bad user input.
_DERIVING: contextvars.ContextVar[bool] = contextvars.ContextVar("absorb_block_deriving", default=False)

_ARRAY_FIELDS = ("W_up", "W_down", "W_gate", "b_up", "b_gate", "b_down", "skip")
_MATRICES = frozenset({"W_up", "W_down", "W_gate"})
"""The weight matrices: float64, or float32 when large and stored so (the rest is float64)."""


@contextlib.contextmanager
def _deriving() -> Iterator[None]:
    token = _DERIVING.set(True)
    try:
        yield
    finally:
        _DERIVING.reset(token)


def replace(obj, /, **changes):
    """``dataclasses.replace`` that builds a derived :class:`Block` without re-validating it."""
    with _deriving():
        return _dc_replace(obj, **changes)


def _shape(arr: np.ndarray, want: tuple[int | None, ...], *, lab: str, hint: str) -> None:
    ok = arr.ndim == len(want) and all(w is None or w == s for w, s in zip(want, arr.shape))
    if not ok:
        spec = "(" + ", ".join("?" if w is None else str(w) for w in want) + ("," if len(want) == 1 else "") + ")"
        raise InvalidInput(f"{lab} has shape {arr.shape}, expected {spec} {hint}")


def check_arrays(arrays: Mapping[str, object], *, activation: object, source: str = "Block", prefix: str = "",
                 copy: bool = True, value_activation: object = None) -> dict[str, np.ndarray | None]:
    """The checked float64 arrays of one block (``W_up``, ``W_down``, optional gate, biases,
    skip), or one-line :class:`InvalidInput` naming the array and the fix. A large weight
    matrix stored in float32 or narrower stays float32 (:func:`absorb._validate.keeps_float32`).

    Shared by :class:`Block` and every loader (``source`` is then the file, ``prefix`` the
    stack prefix ``blocks.3.``)."""
    if not isinstance(activation, Activation):
        raise InvalidInput(f"{source}: activation {activation!r} is not an Activation; "
                           "build one with absorb.get_activation('relu') (or 'expr:<sympy expression in x>')")
    for req in ("W_up", "W_down"):
        if arrays.get(req) is None:
            raise InvalidInput(f"{source}: missing {req if source in _CALLS and not prefix else 'key ' + repr(prefix + req)}; "
                               "a block needs W_up (n, d) and W_down (d, n)")

    def get(key: str) -> np.ndarray | None:
        v = arrays.get(key)
        return None if v is None else as_float_array(v, source=source, key=key, prefix=prefix, copy=copy,
                                                     matrix=key in _MATRICES)

    lab = lambda key: _label(source, prefix, key)  # noqa: E731
    W_up = get("W_up")
    if W_up.ndim != 2 or min(W_up.shape) < 1:
        raise InvalidInput(f"{lab('W_up')} has shape {W_up.shape}, expected a non-empty 2-D array (n, d)")
    n, d = W_up.shape
    W_down = get("W_down")
    if W_down.ndim == 2 and W_down.shape == (n, d) and n != d:
        raise InvalidInput(f"{lab('W_down')} has shape {W_down.shape}, expected ({d}, {n}); it looks transposed "
                           "(store nn.Linear weights [out, in])")
    _shape(W_down, (d, n), lab=lab("W_down"), hint=f"to match W_up of shape ({n}, {d})")
    out: dict[str, np.ndarray | None] = {"W_up": W_up, "W_down": W_down}
    out["W_gate"] = W_gate = get("W_gate")
    if W_gate is not None:
        _shape(W_gate, (n, d), lab=lab("W_gate"), hint="(same shape as W_up)")
    for key, k, hint in (("b_up", n, "(one entry per hidden unit)"), ("b_gate", n, "(one entry per hidden unit)"),
                         ("b_down", d, "(one entry per model dimension)")):
        out[key] = b = get(key)
        if b is None:
            continue
        if key == "b_gate" and W_gate is None:
            raise InvalidInput(f"{lab('b_gate')} is given but there is no {prefix + 'W_gate'!r}; drop b_gate or add the gate projection")
        _shape(b, (k,), lab=lab(key), hint=hint)
    out["skip"] = skip = get("skip")
    if skip is not None:
        _shape(skip, (d, d), lab=lab("skip"), hint=f"(the skip matrix M is d×d with d = {d})")
    if activation.gated_name and W_gate is None:
        raise InvalidInput(f"{source}: activation {activation.gated_name!r} is gated but there is no "
                           f"{'W_gate' if source in _CALLS and not prefix else 'key ' + repr(prefix + 'W_gate')}; add the gate "
                           f"projection or use an ungated activation such as {activation.name!r}")
    if value_activation is not None:
        what = "value_activation" if source in _CALLS and not prefix else "key " + repr(prefix + "value_activation")
        if not isinstance(value_activation, Activation):
            raise InvalidInput(f"{source}: {what} = {value_activation!r} is not an Activation; build one with "
                               "absorb.get_activation('expr:<sympy expression in x>')")
        if W_gate is None:
            raise InvalidInput(f"{source}: {what} is given but the block is ungated (no "
                               f"{'W_gate' if source in _CALLS and not prefix else repr(prefix + 'W_gate')}); a value activation "
                               "acts on the value branch of a gated block: add the gate projection or drop it")
    return out


def check_decide_inputs(model: object, *, tol: object, timeout: object, seed: object, method: object) -> None:
    """The public boundary of ``decide*``: the scalar arguments, and the model's type and
    arrays (a block's arrays are re-checked here, since numpy arrays can change after the
    block was built, and derived blocks were never checked)."""
    from absorb._validate import check_decide_args

    check_decide_args(tol=tol, timeout=timeout, seed=seed, method=method)
    if model is None or isinstance(model, Stack):
        return  # decide_block checks each block
    if isinstance(model, Block):
        model.check()
        return
    cls = type(model).__name__
    if cls == "Checkpoint":
        raise InvalidInput("a Checkpoint holds many independent blocks: decide it with absorb.decide(checkpoint) "
                           "or absorb.decide_checkpoint(checkpoint)")
    raise InvalidInput(f"cannot decide a {cls}; give an absorb.Block or absorb.Stack (absorb.load reads them from files)")


@dataclass(frozen=True)
class HyperConnection:
    """Hyper-Connection mixing of ``s`` streams: ``f(X) = H_res X + H_post^T B(H_pre X)``."""

    H_res: np.ndarray  # (s, s)
    H_pre: np.ndarray  # (s,)
    H_post: np.ndarray  # (s,)

    def __post_init__(self) -> None:
        if _DERIVING.get():
            return
        src = "HyperConnection"
        H_res = as_float_array(self.H_res, source=src, key="H_res")
        if H_res.ndim != 2 or H_res.shape[0] != H_res.shape[1] or H_res.shape[0] < 1:
            raise InvalidInput(f"HyperConnection: H_res has shape {H_res.shape}, expected a square (s, s) matrix")
        s = H_res.shape[0]
        out = {"H_res": H_res}
        for key in ("H_pre", "H_post"):
            out[key] = a = as_float_array(getattr(self, key), source=src, key=key)
            _shape(a, (s,), lab=f"HyperConnection: {key}", hint=f"(s = {s} streams, from H_res)")
        for key, val in out.items():
            object.__setattr__(self, key, val)

    @property
    def s(self) -> int:
        return int(self.H_res.shape[0])


@dataclass(frozen=True, eq=False)
class Block:
    """One MLP block with its skip. Arrays are float64, validated by the loaders; a large
    weight matrix stored as float32 (or bfloat16, float16) stays float32
    (:func:`absorb._validate.keeps_float32`; :meth:`float64` converts)."""

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
    value_activation: Activation | None = None
    """The activation h of the value branch of a gated block (None: the identity, h(z) = z)."""

    def __post_init__(self) -> None:
        if _DERIVING.get():
            return
        checked = check_arrays({k: getattr(self, k) for k in _ARRAY_FIELDS}, activation=self.activation, copy=False,
                               value_activation=self.value_activation)
        for key, val in checked.items():
            if val is not getattr(self, key):
                object.__setattr__(self, key, val)
        self._check_meta()

    def _check_meta(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidInput(f"Block: name = {self.name!r} is not a string")
        if self.hc is not None and not isinstance(self.hc, HyperConnection):
            raise InvalidInput(f"Block: hc = {self.hc!r} is not a HyperConnection (build the block with lift_hyper_connection)")

    def check(self) -> None:
        """Raise :class:`InvalidInput` unless the arrays are float64 (or float32 weight
        matrices), finite and of matching shapes (the state every :class:`Block` built by a
        caller starts in)."""
        for key in _ARRAY_FIELDS:
            val = getattr(self, key)
            ok = isinstance(val, np.ndarray) and (val.dtype == np.float64 or (key in _MATRICES and val.dtype == np.float32))
            if val is not None and not ok:
                got = f"dtype {val.dtype}" if isinstance(val, np.ndarray) else type(val).__name__
                raise InvalidInput(f"Block: {key} is {got}, expected a float64 array; build blocks with Block(...), "
                                   "which converts array-likes")
        check_arrays({k: getattr(self, k) for k in _ARRAY_FIELDS}, activation=self.activation, copy=False,
                     value_activation=self.value_activation)
        self._check_meta()

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
    def value_identity(self) -> bool:
        """Whether the value branch is linear, h(z) = z (every gated result but boundedness
        assumes it): no value activation, or one whose expression is the variable itself."""
        return self.value_activation is None or self.value_activation.key == "Symbol('x', real=True)"  # srepr of x

    @property
    def activation_name(self) -> str:
        base = display_name(self.activation, gated=self.gated)
        return base if self.value_identity else f"{base} with value activation {self.value_activation.name}"

    @property
    def M(self) -> np.ndarray:
        """The skip matrix (identity when none was given)."""
        return np.eye(self.d) if self.skip is None else self.skip

    @property
    def is_residual_free(self) -> bool:
        return self.skip is not None and not np.any(self.skip)

    # ---- numeric evaluation ---------------------------------------------------------
    def unit_blocks(self, units: np.ndarray | None = None
                    ) -> Iterator[tuple[slice | np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]]:
        """``(idx, W_up[idx], W_gate[idx], W_down[:, idx])`` in float64 over blocks of hidden
        units — of ``units`` (indices) when given, else of all: the whole block at once when
        every weight matrix is float64 and no units are listed, else blocks of at most 16 MiB
        per matrix (a float32 layer is evaluated without a float64 copy of it)."""
        if units is None and self.is_float64:
            yield slice(None), self.W_up, self.W_gate, self.W_down
            return
        f64 = lambda a: a if a.dtype == np.float64 else a.astype(np.float64)  # noqa: E731
        if units is None:
            for idx in row_slices(self.n, self.d, 16 << 20):
                yield idx, f64(self.W_up[idx]), None if self.W_gate is None else f64(self.W_gate[idx]), f64(self.W_down[:, idx])
            return
        for sl in row_slices(len(units), self.d, 16 << 20):  # (np.take: a gather of columns 3× faster than [:, idx])
            idx = np.asarray(units[sl], dtype=np.intp)
            yield (idx, f64(np.take(self.W_up, idx, axis=0)), None if self.W_gate is None else f64(np.take(self.W_gate, idx, axis=0)),
                   f64(np.take(self.W_down, idx, axis=1)))

    def hidden(self, X: np.ndarray, idx: slice | np.ndarray, W_up: np.ndarray, W_gate: np.ndarray | None,
               fix: Callable[[np.ndarray, np.ndarray, np.ndarray | None], None] | None = None, *,
               negated: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The hidden layer of the units ``idx`` at the rows of ``X``, from their float64
        weights (an item of :meth:`unit_blocks`): ``σ(W_up x + b_up)``, or
        ``g(W_gate x + b_gate) ⊙ h(W_up x + b_up)``. ``fix(Z, R, b)``, when given, may change
        in place the pre-activations ``Z = X Rᵀ + b`` at σ's kinks (of the gate when gated)
        before σ sees them. ``negated``: also, as a second array, the hidden layer of the
        same units with the kink row and bias (W_up's, or W_gate's when gated) negated,
        whose pre-activations are exactly ``−Z`` (negation commutes with rounding)."""
        R, b = (W_gate, self.b_gate) if W_gate is not None else (W_up, self.b_up)
        bk = None if b is None else b[idx]
        Z = X @ R.T
        if bk is not None:
            Z = Z + bk
        if fix is not None:
            fix(Z, R, bk)
        H, Hn = self.activation(Z), (self.activation(-Z) if negated else None)
        if W_gate is not None:
            V = X @ W_up.T
            if self.b_up is not None:
                V = V + self.b_up[idx]
            if not self.value_identity:
                V = self.value_activation(V)
            H, Hn = H * V, (None if Hn is None else Hn * V)
        return H if Hn is None else (H, Hn)

    def mlp(self, X: np.ndarray) -> np.ndarray:
        """``B(x)`` for each row of ``X`` (shape (m, d)) — the block without its skip."""
        X = np.atleast_2d(X)
        out = None
        for idx, W_up, W_gate, W_down in self.unit_blocks():
            part = self.hidden(X, idx, W_up, W_gate) @ W_down.T
            out = part if out is None else out + part
        if self.b_down is not None:
            out = out + self.b_down
        return out

    def linear(self, X: np.ndarray) -> np.ndarray:
        """``M x`` for each row of ``X`` (no product when M is the identity or zero)."""
        if self.skip is None:
            return X
        return np.zeros((X.shape[0], self.d)) if self.is_residual_free else X @ self.skip.T

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """``f(x) = M x + B(x)`` for each row of ``X``."""
        X = np.atleast_2d(X)
        return self.linear(X) + self.mlp(X)

    @cached_property
    def f0_inf(self) -> float:
        """|f(0)|∞ in float64 — ∞ or NaN where a unit's value overflows (one pass over the weights, kept; none where no
        unit sees a bias and every unit's value at 0 is exactly 0 with finite weights: f(0) = 0 exactly then)."""
        if not self.has_bias and self._silent_at_zero():
            return 0.0
        with np.errstate(all="ignore"):
            return float(np.max(np.abs(self(np.zeros((1, self.d))))))

    def _silent_at_zero(self) -> bool:
        """Whether, with no biases, f(0) is exactly 0 as float64 computes it: every unit's value at a zero pre-activation
        (σ(0), or g(0)·h(0)) is exactly 0 and every weight is finite (else 0·∞ is NaN there)."""
        z = np.zeros(1)
        with np.errstate(all="ignore"):
            h = np.asarray(self.activation(z), dtype=np.float64)
            if self.gated:
                h = h * (z if self.value_identity else np.asarray(self.value_activation(z), dtype=np.float64))  # type: ignore[misc]
        return h.shape == (1,) and h[0] == 0.0 and all(
            a is None or all_finite(a) for a in (self.W_up, self.W_gate, self.W_down, self.skip))

    @cached_property
    def unit_reach(self) -> float:
        """max_r Σ_i |W_down[r,i]|·‖u_i‖₁ as computed in float64 (:func:`absorb.rigorous.unit_reach`; kept: one pass over
        the weights, which several bounds of a decision read)."""
        return unit_reach(self.W_up, self.W_down)

    @cached_property
    def row_reach(self) -> float:
        """max_r Σ_i |W_down[r,i]|·‖u_i‖₁, raised past its rounding (:attr:`unit_reach`; kept): the
        units add at most L·row_reach·|x|∞ to f − f(0) for a σ with Lipschitz constant L."""
        with np.errstate(all="ignore"):
            return self.unit_reach * (1 + (self.n + self.d + 4) * 2.0**-52)

    # ---- symbolic form --------------------------------------------------------------
    def symbolic(self, xs: Sequence[sp.Symbol] | None = None, *, exact: bool = True) -> sp.Matrix:
        """``f(x)`` as a sympy column vector, weights as exact rationals (floats are dyadic).

        Meant for small instances (proofs, exact checks); cost grows with n·d.
        """
        import sympy as sp

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
            if not self.value_identity:
                (vs,) = self.value_activation.expr.free_symbols or (sp.Symbol("x", real=True),)
                val = sp.Lambda(vs, self.value_activation.expr)
                h = h.applyfunc(val)
            hidden = sp.Matrix([act(g[i]) * h[i] for i in range(self.n)])
        else:
            hidden = h.applyfunc(act)
        out = mat(self.W_down) * hidden + vec(self.b_down, self.d)
        return mat(self.M) * xv + out

    # ---- construction helpers -------------------------------------------------------
    def replace(self, **changes: object) -> Block:
        return replace(self, **changes)

    def without_weights(self) -> Block:
        """A copy whose matrices are zero-stride placeholders of the same shapes (no memory).

        For records that outlive the weights, such as the per-layer decisions of a large
        checkpoint: names, kinds and shapes stay, the weights are gone.
        """
        def ph(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.broadcast_to(np.float64(0.0), a.shape)

        return replace(self, W_up=ph(self.W_up), W_down=ph(self.W_down), W_gate=ph(self.W_gate))

    @property
    def is_float64(self) -> bool:
        """Whether every weight matrix is float64 (else some large one is kept as float32)."""
        return all(a is None or a.dtype == np.float64 for a in (self.W_up, self.W_down, self.W_gate))

    def float64(self) -> Block:
        """This block with float64 weight matrices (exact; itself when they already are):
        for the routes that multiply two weight matrices, which must not round in float32."""
        if self.is_float64:
            return self
        return replace(self, **{k: None if getattr(self, k) is None else getattr(self, k).astype(np.float64)
                                for k in _MATRICES})

    def as_residual_free(self) -> Block:
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
        blocks = tuple(self.blocks) if isinstance(self.blocks, (list, tuple)) else self.blocks
        if not isinstance(blocks, tuple) or not blocks:
            raise InvalidInput(f"Stack: blocks must be a non-empty tuple of absorb.Block, got {type(self.blocks).__name__}"
                               f"{' (empty)' if isinstance(blocks, tuple) else ''}")
        for i, b in enumerate(blocks):
            if not isinstance(b, Block):
                raise InvalidInput(f"Stack: blocks[{i}] is a {type(b).__name__}, not an absorb.Block")
            if b.d != blocks[0].d:
                raise InvalidInput(f"Stack: blocks[{i}] has model dimension d = {b.d} but blocks[0] has d = {blocks[0].d}; "
                                   "a stack needs one d throughout")
        object.__setattr__(self, "blocks", blocks)

    def __len__(self) -> int:
        return len(self.blocks)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        for blk in self.blocks:
            X = blk(X)
        return X


def lift_hyper_connection(block: Block, hc: HyperConnection) -> Block:
    """Lift a Hyper-Connection block to one block on ``R^{sd}`` (docs/mathematics.md §2, result 1).

    ``M = H_res ⊗ I_d``, ``W_up ← W_up (H_preᵀ ⊗ I_d)``, ``W_down ← (H_post ⊗ I_d) W_down``;
    the state ``X ∈ R^{s×d}`` is flattened row by row (stream-major). Biases: ``b_down``
    is spread like ``W_down``; ``b_up``/``b_gate`` stay as they are.
    """
    if not isinstance(block, Block) or not isinstance(hc, HyperConnection):
        raise InvalidInput("lift_hyper_connection(block, hc) needs an absorb.Block and an absorb.HyperConnection")
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


_AFFINE_EXACT_MAX = 200_000
"""Up to this many entries the exactness of ``c·W_up`` is checked entry by entry in rationals;
above, only a power-of-two ``c`` (exact unless the product overflows or is subnormal)."""


def normalise_value(block: Block, c: Fraction, k: Fraction) -> tuple[Block, bool, bool]:
    """The gated block with value activation h(z) = c·z + k (c ≠ 0) written with h(z) = z: the
    same function, with ``W_up → c·W_up`` and ``b_up → c·b_up + k``. Computed in float64 as
    ``W_up * float(c)`` and ``b_up * float(c) + float(k)`` (one fixed order, so that a checker
    redoing it gets the same arrays), and returned with whether each is exact: (block,
    ``c·W_up`` exact, ``c·b_up + k`` exact)."""
    if not block.gated or c == 0:
        raise InvalidInput("normalise_value needs a gated block and c ≠ 0 (h(z) = c·z + k)")
    cf, kf = float(c), float(k)
    W = np.asarray(block.W_up, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        W2 = W * cf
        b = None if block.b_up is None else np.asarray(block.b_up, dtype=np.float64)
        b2 = (np.full(block.n, kf) if k != 0 else None) if b is None else b * cf + kf
    finite = bool(np.all(np.isfinite(W2))) and (b2 is None or bool(np.all(np.isfinite(b2))))
    q = Fraction(cf) if math.isfinite(cf) else None
    w_exact = finite and q == c
    if w_exact:
        num, den = abs(c.numerator), c.denominator
        if num & (num - 1) == 0 and den & (den - 1) == 0:  # c = ±2^e: exact where the product is normal (or 0)
            w_exact = bool(np.all((W == 0) | (np.abs(W2) >= np.finfo(np.float64).tiny)))
        elif W.size <= _AFFINE_EXACT_MAX:
            w_exact = all(Fraction(float(v)) * c == Fraction(float(v) * cf) for v in np.unique(W))
        else:
            w_exact = False
    bvals = np.zeros(block.n) if b is None else b
    b_exact = finite and (b2 is None or all(Fraction(float(v)) * c + k == Fraction(float(r)) for v, r in zip(bvals, b2)))
    nb = replace(block, W_up=W2, b_up=b2, value_activation=None)
    return nb, w_exact, b_exact


def sinkhorn(logits: np.ndarray, *, iters: int = 200) -> np.ndarray:
    """A doubly stochastic matrix from ``exp(logits)`` by Sinkhorn normalisation (mHC).

    Such an ``H_res`` can be singular — every entry ``1/s`` is doubly stochastic — and then
    the invertible-skip reduction does not apply (docs/mathematics.md §2).
    """
    K = np.exp(np.asarray(logits, dtype=float) - np.max(logits))
    for _ in range(iters):
        K = K / K.sum(axis=1, keepdims=True)
        K = K / K.sum(axis=0, keepdims=True)
    return K


FRAME_FREE = 8
"""Blocks whose rows' typical size is within 2^±FRAME_FREE of 1 are decided as they are (:func:`frame_exponent`)."""


def frame_exponent(block: Block) -> int:
    """The k for which ``2^-k·f(2^k·x)`` has rows of typical size 1: the median over nonzero rows of
    ``max_j |W[i, j]|`` (W the gate rows of a gated block, the up rows otherwise) is in [2^-k, 2^(1-k)).
    0 where no row is nonzero."""
    W = block.W_gate if block.gated else block.W_up
    with np.errstate(all="ignore"):  # (max and −min: no copy of a large layer)
        top = np.maximum(W.max(axis=1), -W.min(axis=1)).astype(np.float64) if W.size else np.zeros(0)
    top = top[(top > 0) & np.isfinite(top)]
    if not top.size:
        return 0
    return 1 - int(np.frexp(float(np.sort(top)[(top.size - 1) // 2]))[1])  # (the lower median: no sum to overflow)


def rescale_inputs(block: Block, k: int) -> Block | None:
    """``F(x) = 2^-k·f(2^k·x)``: ``W_up``, ``W_gate`` times 2^k, ``W_down``, ``b_down`` times 2^-k (M and the
    inner biases kept), or None where an entry would round or overflow in its dtype. F has the same
    answer as f at every tolerance: g ↦ 2^-k·g(2^k·x) maps the residual-free blocks of each class onto
    themselves and the tolerance's inequality for (f, g) onto the one for (F, G)."""
    out: dict[str, np.ndarray] = {}
    for key, e in (("W_up", k), ("W_gate", k), ("W_down", -k), ("b_down", -k)):
        a = getattr(block, key)
        if a is None:
            continue
        with np.errstate(all="ignore"):
            b = np.ldexp(a, e).astype(a.dtype, copy=False)
            if not (np.all(np.isfinite(b)) and np.array_equal(np.ldexp(b, -e).astype(a.dtype, copy=False), a)):
                return None
        out[key] = b
    return replace(block, **out)
