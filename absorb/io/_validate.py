"""Validation at the boundary: arrays from any loader become a checked :class:`Block`.

Every failure raises :class:`~absorb._errors.InvalidInput` with one line that names the
source, the key, the shape or value at fault, and what would fix it. Inside the package the
arrays are then trusted: float64, finite, consistent shapes.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from absorb._errors import InvalidInput
from absorb.model.activations import Activation, get_activation
from absorb.model.block import Block, HyperConnection, lift_hyper_connection

BLOCK_KEYS = ("W_up", "W_down", "W_gate", "b_up", "b_gate", "b_down", "skip", "activation", "H_res", "H_pre", "H_post")


def as_float_array(value: object, *, source: str, key: str, copy: bool = True) -> np.ndarray:
    """A finite float64 copy of ``value``, or a one-line error naming ``source`` and ``key``.

    ``copy=False`` reuses a float64 input as is (a loader handing over arrays it owns).
    """
    arr = np.asarray(value)
    if arr.dtype == object:
        raise InvalidInput(f"{source}: key {key!r} is an object array; store plain numeric arrays (objects are never unpickled)")
    if arr.dtype.kind not in "fiub":
        raise InvalidInput(f"{source}: key {key!r} has dtype {arr.dtype}; expected a real floating-point or integer array")
    out = arr.astype(np.float64, copy=copy)
    bad = ~np.isfinite(out)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(out[where]) else "Inf"
        raise InvalidInput(f"{source}: key {key!r} contains {what} at index {where} ({int(bad.sum())} non-finite entries); the weights must be finite")
    return out


def _shape(arr: np.ndarray, want: tuple[int | None, ...], *, source: str, key: str, hint: str) -> None:
    ok = arr.ndim == len(want) and all(w is None or w == s for w, s in zip(want, arr.shape))
    if not ok:
        spec = "(" + ", ".join("?" if w is None else str(w) for w in want) + ("," if len(want) == 1 else "") + ")"
        raise InvalidInput(f"{source}: key {key!r} has shape {arr.shape}, expected {spec} {hint}")


def resolve_activation(stored: object, override: str | None, *, source: str, key: str = "activation") -> Activation:
    if override is not None:
        return get_activation(override)
    if stored is None:
        raise InvalidInput(f"{source}: no activation given; add a key {key!r} (e.g. np.array('relu')) or pass --activation NAME")
    arr = np.asarray(stored)
    if arr.dtype.kind not in "US" or arr.ndim != 0:
        raise InvalidInput(f"{source}: key {key!r} must be a 0-d string array such as np.array('relu'), got dtype {arr.dtype} shape {arr.shape}")
    name = arr.item()
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    try:
        return get_activation(name)
    except InvalidInput as exc:
        raise InvalidInput(f"{source}: key {key!r}: {exc}") from None


def build_block(arrays: Mapping[str, object], *, source: str, name: str = "block", activation: Activation,
                prefix: str = "", copy: bool = True) -> Block:
    """Check shapes and values of one block's arrays and build it (lifting HC if present).

    ``arrays`` maps the contract's keys (without prefix) to array-likes; ``prefix`` is only
    used in messages (``blocks.3.``). ``copy=False`` keeps float64 inputs without copying
    (the checkpoint loader: arrays it has just read and owns, one layer at a time).
    """
    def get(key: str) -> np.ndarray | None:
        return None if key not in arrays else as_float_array(arrays[key], source=source, key=prefix + key, copy=copy)

    for req in ("W_up", "W_down"):
        if req not in arrays:
            raise InvalidInput(f"{source}: missing key {prefix + req!r}; a block needs W_up (n, d) and W_down (d, n)")
    W_up = get("W_up")
    if W_up.ndim != 2 or min(W_up.shape) < 1:
        raise InvalidInput(f"{source}: key {prefix + 'W_up'!r} has shape {W_up.shape}, expected a non-empty 2-D array (n, d)")
    n, d = W_up.shape
    W_down = get("W_down")
    if W_down.ndim == 2 and W_down.shape == (n, d) and n != d:
        raise InvalidInput(f"{source}: key {prefix + 'W_down'!r} has shape {W_down.shape}, expected ({d}, {n}); it looks transposed (store nn.Linear weights [out, in])")
    _shape(W_down, (d, n), source=source, key=prefix + "W_down", hint=f"to match W_up of shape ({n}, {d})")
    W_gate = get("W_gate")
    if W_gate is not None:
        _shape(W_gate, (n, d), source=source, key=prefix + "W_gate", hint="(same shape as W_up)")
    b_up, b_gate, b_down = get("b_up"), get("b_gate"), get("b_down")
    if b_up is not None:
        _shape(b_up, (n,), source=source, key=prefix + "b_up", hint="(one entry per hidden unit)")
    if b_gate is not None:
        if W_gate is None:
            raise InvalidInput(f"{source}: key {prefix + 'b_gate'!r} is given but there is no {prefix + 'W_gate'!r}; drop b_gate or add the gate projection")
        _shape(b_gate, (n,), source=source, key=prefix + "b_gate", hint="(one entry per hidden unit)")
    if b_down is not None:
        _shape(b_down, (d,), source=source, key=prefix + "b_down", hint="(one entry per model dimension)")
    skip = get("skip")
    if skip is not None:
        _shape(skip, (d, d), source=source, key=prefix + "skip", hint=f"(the skip matrix M is d×d with d = {d})")
    if activation.gated_name and W_gate is None:
        raise InvalidInput(f"{source}: activation {activation.gated_name!r} is gated but there is no key {prefix + 'W_gate'!r}; add the gate projection or use an ungated activation such as {activation.name!r}")
    hc_keys = [k for k in ("H_res", "H_pre", "H_post") if k in arrays]
    block = Block(W_up=W_up, W_down=W_down, activation=activation, W_gate=W_gate, b_up=b_up, b_gate=b_gate,
                  b_down=b_down, skip=skip, name=name)
    if not hc_keys:
        return block
    if len(hc_keys) != 3:
        missing = sorted({"H_res", "H_pre", "H_post"} - set(hc_keys))
        raise InvalidInput(f"{source}: Hyper-Connection keys are incomplete: missing {', '.join(prefix + m for m in missing)}; give H_res (s, s), H_pre (s,), H_post (s,)")
    if skip is not None:
        raise InvalidInput(f"{source}: both {prefix + 'skip'!r} and {prefix + 'H_res'!r} are given; a Hyper-Connection block's skip is H_res ⊗ I, so drop one")
    H_res = get("H_res")
    if H_res.ndim != 2 or H_res.shape[0] != H_res.shape[1] or H_res.shape[0] < 1:
        raise InvalidInput(f"{source}: key {prefix + 'H_res'!r} has shape {H_res.shape}, expected a square (s, s) matrix")
    s = H_res.shape[0]
    H_pre, H_post = get("H_pre"), get("H_post")
    _shape(H_pre, (s,), source=source, key=prefix + "H_pre", hint=f"(s = {s} streams, from H_res)")
    _shape(H_post, (s,), source=source, key=prefix + "H_post", hint=f"(s = {s} streams, from H_res)")
    return lift_hyper_connection(block, HyperConnection(H_res=H_res, H_pre=H_pre, H_post=H_post))
