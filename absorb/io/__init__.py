"""Loaders: files become validated blocks (``.npz`` here; checkpoints alongside)."""

from __future__ import annotations

import os
from pathlib import Path

from absorb._errors import InvalidInput
from absorb.io.npz import blocks_from_arrays, load_npz, save_npz
from absorb.model.block import Block, Stack


def load(path: str | os.PathLike[str], *, activation: str | None = None) -> Block | Stack:
    """Load whatever ``path`` is: an ``.npz`` block or stack (checkpoints: see the loaders)."""
    p = Path(path)
    if p.suffix == ".npz" or (p.is_file() and p.read_bytes()[:2] == b"PK"):
        return load_npz(p, activation=activation)
    if not p.exists():
        raise InvalidInput(f"{p}: no such file")
    raise InvalidInput(f"{p}: unsupported input; give an .npz file with W_up and W_down (see docs/user-guide.md)")


__all__ = ["blocks_from_arrays", "load", "load_npz", "save_npz"]
