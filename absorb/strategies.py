"""Hypothesis strategies for MLP blocks with a skip: property tests of ``absorb`` and of its users.

Every strategy draws the sizes first (``d``, ``n``, depth) and the values after, so that
Hypothesis shrinks a failure towards small blocks before it shrinks the numbers. Values come
either from a drawn seed (``values="seeded"``: Gaussian arrays from
``numpy.random.default_rng(seed)``; the seed shrinks to 0) or from drawn floats
(``values="floats"``: every entry is a multiple of 1/16 in ``[-4, 4]``, drawn as an integer
numerator that shrinks towards 0; all exact in binary and in rational arithmetic). Planted
blocks compute ``W_down[:,S]`` from a pseudo-inverse, so those entries are not simple.

The kinds of blocks follow the mathematics (docs/mathematics.md §2–3):

* ``"generic"`` — weights that satisfy result 5's nondegeneracy hypothesis (rows of
  ``W_up`` nonzero and pairwise non-collinear, columns of ``W_down`` nonzero), checked with
  the engine's own test :func:`absorb.engine.hypotheses.nondegenerate`. Seeded generic
  blocks are Gaussian, hence not absorbable with probability one (result 5); float-valued
  ones may be absorbable by chance.
* ``"planted"`` — absorbable by construction: a random index set ``S`` with ``|S| ≥ d`` and
  ``W_down[:,S] = −(M/c)·pinv(W_up[S,:])``, so ``W_down[:,S] W_up[S,:] = −M/c`` where
  ``σ(z) − σ(−z) = c·z`` (ungated) or ``g(z) + g(−z) = c`` (gated). Flipping the units in
  ``S`` gives a residual-free block equal to ``f`` (result 5's sufficiency, any skip ``M``).
* ``"degenerate"`` — where result 5's necessity does not apply: a zero row of ``W_up``, a
  dead unit (zero column of ``W_down``), two collinear or antipodal rows, or ``d = 1``.

>>> from hypothesis import given, settings
>>> from absorb import decide_block, Verdict
>>> from absorb.strategies import blocks
>>> @settings(max_examples=5, derandomize=True, deadline=None)
... @given(blocks(kind="planted", d=(2, 3), n=(3, 6)))
... def test_planted_is_absorbable(block):
...     assert decide_block(block).verdict is Verdict.ABSORBABLE
>>> test_planted_is_absorbable()

Strategies validate their arguments when they are called and raise
:class:`hypothesis.errors.InvalidArgument` with the offending value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from absorb.model.activations import GATED, Activation, get_activation
from absorb.model.block import Block, Stack, sinkhorn

__all__ = [
    "ACTIVATION_KINDS",
    "BLOCK_KINDS",
    "DEGENERACIES",
    "SKIP_KINDS",
    "activations",
    "blocks",
    "checkpoints_as_dicts",
    "gated_blocks",
    "model_arrays",
    "skip_matrices",
    "stacks",
]

SizeRange = int | tuple[int, int]
ActivationSpec = str | Activation | SearchStrategy | None
Values = Literal["seeded", "floats"]

# Which activations have which property (docs/mathematics.md §2, checked against the sympy proofs in
# absorb.symbolic.properties by tests/test_strategies.py). Simplest first: shrinking goes left.
ACTIVATION_KINDS: dict[str, tuple[str, ...]] = {
    # every ungated built-in activation
    "any": ("relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "leaky_relu", "softplus", "relu2", "sigmoid", "tanh", "identity"),
    # result 5's necessity (the paper proves the "iff" for these only)
    "necessity": ("relu", "gelu"),
    # σ(z) − σ(−z) = c·z with a constant c ≠ 0: planted index sets are absorbable
    "flip": ("relu", "gelu", "gelu_tanh", "silu", "quick_gelu", "leaky_relu", "softplus", "identity"),
    # positively homogeneous of degree k ≠ 1 (result 2: never absorbable)
    "degree": ("relu2",),
    # bounded σ (never absorbable: a residual-free block is bounded)
    "bounded": ("sigmoid", "tanh"),
    # gated names (the gate g); only "glu" has g(z) + g(−z) = c
    "gated": ("glu", "reglu", "swiglu", "geglu", "geglu_tanh", "bilinear"),
    "gated_flip": ("glu",),
}

BLOCK_KINDS = ("generic", "planted", "degenerate")
DEGENERACIES = ("zero_row", "dead_unit", "collinear", "antipodal", "d1")
SKIP_KINDS = ("invertible", "orthogonal", "hc", "mhc", "singular")

_GRID = 16.0  # float values are multiples of 1/16: simple, exact dyadic rationals
_BOUND = 4.0
_MAX_PLANT_COND = 1e4  # cond(W_up[S,:]) bound: the pinv residual stays ≲ cond·ε ≪ 1e-9
_DEFAULT_D = (2, 4)
_DEFAULT_N = (1, 8)


# ---------------------------------------------------------------------------------------
# argument validation


def _check_range(name: str, value: object, *, minimum: int) -> tuple[int, int]:
    """``value`` is an int or a (lo, hi) pair of ints with minimum ≤ lo ≤ hi."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        lo = hi = int(value)
    elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        lo, hi = int(value[0]), int(value[1])
    else:
        raise InvalidArgument(f"{name}={value!r} must be an int or a (min, max) tuple of ints")
    if lo < minimum:
        raise InvalidArgument(f"{name}={value!r}: the smallest allowed value is {minimum}")
    if lo > hi:
        raise InvalidArgument(f"{name}={value!r}: min {lo} is larger than max {hi}")
    return lo, hi


def _check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgument(f"{name}={value!r} must be one of {', '.join(map(repr, choices))}")
    return value


def _activation_strategy(activation: ActivationSpec, *, default: str, gated: bool) -> SearchStrategy[Activation]:
    if activation is None:
        activation = default
    if isinstance(activation, SearchStrategy):
        return activation
    if isinstance(activation, Activation):
        return st.just(activation)
    if isinstance(activation, str):
        try:
            act = get_activation(activation)
        except Exception as exc:  # noqa: BLE001 - InvalidInput from the registry: re-raise as Hypothesis' error
            raise InvalidArgument(f"activation={activation!r}: {exc}") from None
        return st.just(act)
    raise InvalidArgument(f"activation={activation!r} must be a name, an absorb Activation, or a strategy of names or Activations")


def _flip_constant(act: Activation, *, gated: bool) -> float | None:
    """c with σ(z) − σ(−z) = c·z (or g(z) + g(−z) = c when gated), proved by sympy; else None."""
    from absorb.symbolic import properties as props

    prop = props.flip_identity(act, gated=gated)
    return float(prop.value["c"]) if prop.proved else None


# ---------------------------------------------------------------------------------------
# values


def _arrays(draw, shapes: Sequence[tuple[int, ...]], values: Values) -> list[np.ndarray]:
    """Draw one float64 array per shape: Gaussian from a drawn seed, or drawn dyadic floats."""
    if values == "seeded":
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
        return [rng.standard_normal(s) for s in shapes]
    out = []
    # Integer numerators over 16: they shrink to 0 and then to the smallest value that still
    # fails, so shrunk entries are 0, ±1/16, ±1, …; each one exact in binary and in rationals.
    # (Drawing Hypothesis floats instead left shrunk examples with long mantissas.)
    top = int(_BOUND * _GRID)
    elem = st.integers(-top, top).map(lambda k: k / _GRID)
    for s in shapes:
        size = int(np.prod(s))
        xs = draw(st.lists(elem, min_size=size, max_size=size))
        out.append(np.asarray(xs, dtype=np.float64).reshape(s))
    return out


def _nondegenerate(U: np.ndarray, D: np.ndarray) -> bool:
    from absorb.engine.hypotheses import nondegenerate

    blk = Block(U, D, get_activation("relu"))
    return all(h.holds for h in nondegenerate(blk))


def _draw_sizes(draw, d: tuple[int, int], n: tuple[int, int], *, n_at_least_d: bool) -> tuple[int, int]:
    if n_at_least_d:
        dd = draw(st.integers(d[0], min(d[1], n[1])), label="d")
        nn = draw(st.integers(max(n[0], dd), n[1]), label="n")
    else:
        dd = draw(st.integers(*d), label="d")
        nn = draw(st.integers(*n), label="n")
    return dd, nn


# ---------------------------------------------------------------------------------------
# public strategies


def activations(*, kind: str = "any") -> SearchStrategy[Activation]:
    """Activations of one kind (see :data:`ACTIVATION_KINDS`); shrinks towards ReLU.

    ``kind="flip"`` gives the activations for which planted index sets are absorbable,
    ``"necessity"`` those for which result 5 is an "iff" (ReLU, GELU), ``"gated"`` GLU names.
    """
    _check_choice("kind", kind, tuple(ACTIVATION_KINDS))
    return st.sampled_from(ACTIVATION_KINDS[kind]).map(get_activation)


def skip_matrices(*, d: SizeRange = _DEFAULT_D, kind: str = "invertible", values: Values = "seeded") -> SearchStrategy[np.ndarray]:
    """d×d skip matrices ``M`` (``f(x) = M x + B(x)``).

    * ``"invertible"`` — Gaussian, condition number ≤ 1e6 (result 1 reduces it to ``I``);
    * ``"orthogonal"`` — the Q of a Gaussian QR;
    * ``"hc"`` — a Hyper-Connection skip ``H_res ⊗ I_{d/s}`` with ``s ≥ 2`` streams dividing d
      and ``H_res = I + Gaussian/2`` (invertible);
    * ``"mhc"`` — the same with ``H_res`` doubly stochastic (Sinkhorn), invertible;
    * ``"singular"`` — exactly singular: the mHC ``H_res`` with every entry ``1/s``, or a
      Gaussian matrix with a repeated or zero row (bitwise, so singular in exact arithmetic).
    """
    _check_choice("kind", kind, SKIP_KINDS)
    _check_choice("values", values, ("seeded", "floats"))
    dr = _check_range("d", d, minimum=1)
    if kind in ("hc", "mhc", "singular") and dr[1] < 2:
        raise InvalidArgument(f"skip_matrices(kind={kind!r}) needs d ≥ 2, got d={d!r}")
    if kind in ("hc", "mhc", "singular"):
        dr = (max(dr[0], 2), dr[1])

    @st.composite
    def draw_skip(draw) -> np.ndarray:
        dd = draw(st.integers(*dr), label="d")
        return _draw_skip(draw, dd, kind, values)

    return draw_skip()


def _draw_skip(draw, d: int, kind: str, values: Values) -> np.ndarray:
    if kind in ("hc", "mhc"):
        s = draw(st.sampled_from([k for k in range(2, d + 1) if d % k == 0]), label="streams")
        (A,) = _arrays(draw, [(s, s)], values)
        H = sinkhorn(A) if kind == "mhc" else np.eye(s) + 0.5 * A
        sv = np.linalg.svd(H, compute_uv=False)
        assume(sv[-1] > 1e-6 * sv[0])
        return np.kron(H, np.eye(d // s))
    if kind == "singular":
        how = draw(st.sampled_from(("uniform_mhc", "repeated_row", "zero_row")), label="singular")
        if how == "uniform_mhc":
            s = draw(st.sampled_from([k for k in range(2, d + 1) if d % k == 0]), label="streams")
            return np.kron(np.full((s, s), 1.0 / s), np.eye(d // s))
        (M,) = _arrays(draw, [(d, d)], values)
        i = draw(st.integers(0, d - 1))
        j = draw(st.integers(0, d - 2))
        j = j + (j >= i)
        M[j] = M[i] if how == "repeated_row" else 0.0
        return M
    (M,) = _arrays(draw, [(d, d)], values)
    if kind == "orthogonal":
        Q, R = np.linalg.qr(M)
        assume(np.all(np.abs(np.diag(R)) > 1e-6))
        return Q * np.sign(np.diag(R))
    sv = np.linalg.svd(M, compute_uv=False)
    assume(sv[-1] > 1e-6 * sv[0])
    return M


def _draw_activation(draw, act_st, gated) -> Activation:
    act = draw(act_st, label="activation")
    if isinstance(act, str):  # a strategy of names, e.g. st.sampled_from(["swiglu", "geglu"])
        try:
            act = get_activation(act)
        except Exception as exc:  # noqa: BLE001 - any registry error becomes Hypothesis' InvalidArgument
            raise InvalidArgument(f"activation strategy drew {act!r}: {exc}") from None
    if not isinstance(act, Activation):
        raise InvalidArgument(f"activation strategy drew {act!r}; it must draw names or absorb Activations")
    if gated and act.gated_name is None and act.name not in GATED.values():
        raise InvalidArgument(f"gated_blocks: activation {act.name!r} is not a gate; use a gated name such as 'glu' or 'swiglu'")
    return act


def _draw_degenerate_sizes(draw, d, n, degeneracies) -> tuple[str, int, int]:
    """(the degeneracy, d, n): d = 1 for 'd1', n ≥ 2 where a pair of units is needed."""
    how = draw(st.sampled_from(degeneracies), label="degeneracy")
    if how == "d1":
        dd = 1
        nn = draw(st.integers(max(n[0], 2), max(n[1], 2)), label="n")
    else:
        dd = draw(st.integers(*d), label="d")
        lo = 2 if how in ("collinear", "antipodal") else 1  # a pair needs two units
        nn = draw(st.integers(max(n[0], lo), max(n[1], lo)), label="n")
    return how, dd, nn


def _plant(draw, act, gated, U, D, M, dd, nn) -> None:
    """Overwrite columns S of D so that the index set S absorbs the skip (M, or I)."""
    c = _flip_constant(act, gated=gated)
    if c is None:
        what = "g(z) + g(−z) = c" if gated else "σ(z) − σ(−z) = c·z"
        raise InvalidArgument(f"kind='planted' needs an activation with {what}; {act.name!r} has none "
                              f"(use activations(kind={'gated_flip' if gated else 'flip'!r}))")
    S = draw(st.lists(st.integers(0, nn - 1), unique=True, min_size=dd, max_size=nn), label="S")
    S = sorted(S)
    US = U[S]
    sv = np.linalg.svd(US, compute_uv=False)
    assume(sv[-1] > 0 and sv[0] / sv[-1] < _MAX_PLANT_COND)
    target = np.eye(dd) if M is None else M
    D[:, S] = -(target / c) @ np.linalg.pinv(US)


def _degenerate(draw, how, U, D, G, nn, gated) -> None:
    """Make one unit degenerate in the way ``how`` names (in place)."""
    i = draw(st.integers(0, nn - 1), label="unit")
    if how == "zero_row":
        U[i] = 0.0
    elif how == "dead_unit":
        D[:, i] = 0.0
    elif how in ("collinear", "antipodal"):
        j = draw(st.integers(0, nn - 2), label="other unit")
        j = j + (j >= i)
        lam = draw(st.sampled_from((1.0, 2.0, 0.5, 3.0, 0.25)), label="scale")
        U[j] = (lam if how == "collinear" else -lam) * U[i]
        if gated:
            G[j] = (lam if how == "collinear" else -lam) * G[i]


@st.composite
def _block(draw, *, d, n, act_st, kind, degeneracies, biases, skip, values, gated, name="block") -> Block:
    act = _draw_activation(draw, act_st, gated)
    if kind == "degenerate":
        how, dd, nn = _draw_degenerate_sizes(draw, d, n, degeneracies)
    else:
        how = None
        dd, nn = _draw_sizes(draw, d, n, n_at_least_d=kind == "planted")
    M = None if skip is None else _draw_skip(draw, dd, skip, values)
    shapes = [(nn, dd), (dd, nn)] + ([(nn, dd)] if gated else [])
    arrs = _arrays(draw, shapes, values)
    U, D = arrs[0], arrs[1]
    G = arrs[2] if gated else None
    if kind == "planted":
        _plant(draw, act, gated, U, D, M, dd, nn)
    elif kind == "degenerate":
        _degenerate(draw, how, U, D, G, nn, gated)
    if kind == "generic":
        assume(_nondegenerate(U, D))
    b_up = b_gate = b_down = None
    if biases:
        bs = _arrays(draw, [(nn,), (dd,)] + ([(nn,)] if gated else []), values)
        b_up, b_down = bs[0], bs[1]
        b_gate = bs[2] if gated else None
    return Block(W_up=U, W_down=D, activation=act, W_gate=G, b_up=b_up, b_gate=b_gate, b_down=b_down, skip=M, name=name)


def _common_args(d, n, kind, biases, skip, values, degeneracy) -> tuple:
    _check_choice("kind", kind, BLOCK_KINDS)
    _check_choice("values", values, ("seeded", "floats"))
    dr = _check_range("d", d, minimum=1)
    nr = _check_range("n", n, minimum=1)
    if not isinstance(biases, bool):
        raise InvalidArgument(f"biases={biases!r} must be True or False")
    if skip is not None:
        _check_choice("skip", skip, SKIP_KINDS)
        if skip in ("hc", "mhc", "singular"):
            if dr[1] < 2:
                raise InvalidArgument(f"skip={skip!r} needs d ≥ 2, got d={d!r}")
            dr = (max(dr[0], 2), dr[1])
    if kind == "planted" and nr[1] < dr[0]:
        raise InvalidArgument(f"kind='planted' needs n ≥ d (|S| ≥ d), but n={n!r} and d={d!r} leave no such size")
    if degeneracy is None:
        degs = DEGENERACIES
    else:
        if kind != "degenerate":
            raise InvalidArgument(f"degeneracy={degeneracy!r} is only meaningful with kind='degenerate' (got kind={kind!r})")
        degs = (degeneracy,) if isinstance(degeneracy, str) else tuple(degeneracy)
        if not degs:
            raise InvalidArgument("degeneracy=() is empty; give one of " + ", ".join(DEGENERACIES))
        for g in degs:
            _check_choice("degeneracy", g, DEGENERACIES)
    if kind == "degenerate" and skip is not None and "d1" in degs and skip in ("hc", "mhc", "singular"):
        degs = tuple(g for g in degs if g != "d1")
        if not degs:
            raise InvalidArgument(f"degeneracy='d1' cannot be combined with skip={skip!r} (which needs d ≥ 2)")
    return dr, nr, degs


def blocks(*, d: SizeRange = _DEFAULT_D, n: SizeRange = _DEFAULT_N, activation: ActivationSpec = "relu",
           kind: str = "generic", biases: bool = False, skip: str | None = None, values: Values = "seeded",
           degeneracy: str | Sequence[str] | None = None) -> SearchStrategy[Block]:
    """Ungated blocks ``f(x) = M x + W_down σ(W_up x + b_up) + b_down``.

    ``d``, ``n``: an int or an inclusive ``(min, max)`` range (defaults small enough for the
    exhaustive index-set search, n ≤ 18). ``activation``: a name, an
    :class:`~absorb.model.activations.Activation`, or a strategy such as
    :func:`activations`. ``kind``: ``"generic"``, ``"planted"`` (absorbable by construction;
    needs ``n ≥ d`` and a flip activation), or ``"degenerate"`` (``degeneracy`` picks among
    :data:`DEGENERACIES`; ``"d1"`` ignores ``d``). ``biases``: draw ``b_up`` and ``b_down``.
    ``skip``: ``None`` for the identity, or a kind of :func:`skip_matrices`.
    """
    dr, nr, degs = _common_args(d, n, kind, biases, skip, values, degeneracy)
    act_st = _activation_strategy(activation, default="relu", gated=False)
    return _block(d=dr, n=nr, act_st=act_st, kind=kind, degeneracies=degs, biases=biases, skip=skip, values=values, gated=False)


def gated_blocks(*, d: SizeRange = _DEFAULT_D, n: SizeRange = _DEFAULT_N, gate: ActivationSpec = "glu",
                 kind: str = "generic", biases: bool = False, skip: str | None = None, values: Values = "seeded",
                 degeneracy: str | Sequence[str] | None = None) -> SearchStrategy[Block]:
    """Gated (GLU-family) blocks ``f(x) = M x + W_down (g(W_gate x + b_gate) ⊙ (W_up x + b_up)) + b_down``.

    ``gate``: a gated name (``"glu"``, ``"swiglu"``, …), an Activation, or
    ``activations(kind="gated")``. ``kind="planted"`` needs ``g(z) + g(−z) = c`` (the
    sigmoid gate of GLU): ``W_down[:,S] W_up[S,:] = −M/c`` with ``W_up`` the value
    projection, absorbable by negating the gate rows and down columns in ``S`` (docs/mathematics.md §3).
    Degenerate collinear/antipodal pairs are applied to both ``W_up`` and ``W_gate``.
    """
    dr, nr, degs = _common_args(d, n, kind, biases, skip, values, degeneracy)
    act_st = _activation_strategy(gate, default="glu", gated=True)
    return _block(d=dr, n=nr, act_st=act_st, kind=kind, degeneracies=degs, biases=biases, skip=skip, values=values, gated=True)


def stacks(*, depth: SizeRange = (2, 3), d: SizeRange = _DEFAULT_D, n: SizeRange = _DEFAULT_N,
           activation: ActivationSpec = "relu", kind: str = "generic", biases: bool = False, skip: str | None = None,
           values: Values = "seeded") -> SearchStrategy[Stack]:
    """Stacks ``F = f_L ∘ … ∘ f_1`` of ungated blocks with one model dimension ``d``.

    Depth is drawn first, then ``d`` (shared), then each block's width and values. Every
    block is of ``kind``: a stack of planted blocks is absorbable (compose the witnesses).
    The blocks are named ``blocks.0``, ``blocks.1``, … as the npz loader names them.
    """
    lr = _check_range("depth", depth, minimum=1)
    dr, nr, degs = _common_args(d, n, kind, biases, skip, values, None)
    act_st = _activation_strategy(activation, default="relu", gated=False)

    @st.composite
    def draw_stack(draw) -> Stack:
        L = draw(st.integers(*lr), label="depth")
        dd = draw(st.integers(dr[0], min(dr[1], nr[1]) if kind == "planted" else dr[1]), label="d")
        out = []
        for i in range(L):
            out.append(draw(_block(d=(dd, dd), n=nr, act_st=act_st, kind=kind, degeneracies=degs, biases=biases, skip=skip,
                                   values=values, gated=False, name=f"blocks.{i}")))
        return Stack(tuple(out))

    return draw_stack()


def model_arrays(model: Block | Stack) -> dict[str, np.ndarray]:
    """The arrays of a block or stack by the contract's npz keys (``blocks.{i}.`` for stacks),
    with the activation stored as a 0-d string array, as :func:`absorb.io.save_npz` writes."""
    if isinstance(model, Block):
        out = dict(model.arrays())
        out["activation"] = np.array(model.activation.gated_name or model.activation.name)
        return out
    if not isinstance(model, Stack):
        raise InvalidArgument(f"model_arrays: expected a Block or Stack, got {type(model).__name__}")
    out = {}
    for i, b in enumerate(model.blocks):
        for key, arr in b.arrays().items():
            out[f"blocks.{i}.{key}"] = arr
        out[f"blocks.{i}.activation"] = np.array(b.activation.gated_name or b.activation.name)
    return out


def checkpoints_as_dicts(*, models: SearchStrategy | None = None, hyper_connection: bool = False,
                         streams: SizeRange = (2, 3), values: Values = "seeded") -> SearchStrategy[dict[str, np.ndarray]]:
    """Dicts of arrays in the contract's ``.npz`` keys (what ``numpy.savez(path, **d)`` writes).

    ``models``: a strategy of Blocks or Stacks (default: a :func:`blocks` or a :func:`stacks`).
    ``hyper_connection=True`` draws ``H_res`` (s×s), ``H_pre``, ``H_post`` (s,) for a single
    block without ``skip``; the loader then lifts the block to ``R^{sd}`` (docs/mathematics.md §2,
    result 1). Feed the dict to :func:`absorb.io.blocks_from_arrays` or save it as ``.npz``.
    """
    if models is None:
        models = st.one_of(blocks(), stacks())
    if not isinstance(models, SearchStrategy):
        raise InvalidArgument(f"models={models!r} must be a strategy of absorb Blocks or Stacks")
    if not isinstance(hyper_connection, bool):
        raise InvalidArgument(f"hyper_connection={hyper_connection!r} must be True or False")
    sr = _check_range("streams", streams, minimum=1)
    _check_choice("values", values, ("seeded", "floats"))

    @st.composite
    def draw_dict(draw) -> dict[str, np.ndarray]:
        model = draw(models, label="model")
        if not isinstance(model, (Block, Stack)):
            raise InvalidArgument(f"checkpoints_as_dicts: models drew {type(model).__name__}, expected a Block or Stack")
        out = model_arrays(model)
        if hyper_connection:
            if not isinstance(model, Block) or model.skip is not None or model.hc is not None:
                raise InvalidArgument("checkpoints_as_dicts(hyper_connection=True) needs models that draw single blocks without a skip")
            s = draw(st.integers(*sr), label="streams")
            H_res, H_pre, H_post = _arrays(draw, [(s, s), (s,), (s,)], values)
            out.update(H_res=np.eye(s) + 0.5 * H_res, H_pre=H_pre, H_post=H_post)
        return out

    return draw_dict()
