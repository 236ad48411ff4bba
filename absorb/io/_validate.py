"""Validation at the boundary: arrays from any loader become a checked :class:`Block`.

Every failure raises :class:`~absorb._errors.InvalidInput` with one line that names the
source, the key, the shape or value at fault, and what would fix it. Inside the package the
arrays are then trusted: float64, finite, consistent shapes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from absorb._errors import InvalidInput
from absorb._validate import as_float_array
from absorb.model.activations import Activation, get_activation
from absorb.model.block import Block, HyperConnection, _deriving, _shape, check_arrays, lift_hyper_connection

BLOCK_KEYS = ("W_up", "W_down", "W_gate", "b_up", "b_gate", "b_down", "skip", "activation", "value_activation", "H_res", "H_pre",
              "H_post")


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


def resolve_value_activation(stored: object, *, source: str, key: str = "value_activation") -> Activation | None:
    """The value activation h of a gated block from its stored string (a name or ``expr:…``,
    parsed like ``activation``), or None (the identity) when the key is absent."""
    if stored is None:
        return None
    return resolve_activation(stored, None, source=source, key=key)


def build_block(arrays: Mapping[str, object], *, source: str, name: str = "block", activation: Activation,
                prefix: str = "", copy: bool = True, value_activation: Activation | None = None) -> Block:
    """Check shapes and values of one block's arrays and build it (lifting HC if present).

    ``arrays`` maps the contract's keys (without prefix) to array-likes; ``prefix`` is only
    used in messages (``blocks.3.``). ``copy=False`` keeps float64 inputs without copying
    (the checkpoint loader: arrays it has just read and owns, one layer at a time).
    """
    arrays = {k: v for k, v in arrays.items() if k != "value_activation"}
    checked = check_arrays(arrays, activation=activation, source=source, prefix=prefix, copy=copy, value_activation=value_activation)
    skip = checked["skip"]

    def get(key: str) -> np.ndarray | None:
        return None if key not in arrays else as_float_array(arrays[key], source=source, key=key, prefix=prefix, copy=copy)

    hc_keys = [k for k in ("H_res", "H_pre", "H_post") if k in arrays]
    with _deriving():  # checked above: no second pass over the arrays
        block = Block(activation=activation, name=name, value_activation=value_activation, **checked)
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
    _shape(H_pre, (s,), lab=f"{source}: key {prefix + 'H_pre'!r}", hint=f"(s = {s} streams, from H_res)")
    _shape(H_post, (s,), lab=f"{source}: key {prefix + 'H_post'!r}", hint=f"(s = {s} streams, from H_res)")
    with _deriving():
        hc = HyperConnection(H_res=H_res, H_pre=H_pre, H_post=H_post)
    return lift_hyper_connection(block, hc)
