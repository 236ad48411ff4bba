"""Loaders: files become validated blocks (``.npz`` here; checkpoints alongside)."""

from __future__ import annotations

import os
from pathlib import Path

from absorb._errors import InvalidInput
from absorb.io.npz import blocks_from_arrays, load_npz, save_npz
from absorb.io.safetensors import Checkpoint, is_checkpoint, open_checkpoint
from absorb.model.block import Block, Stack


def _starts_with(path: Path, magic: bytes) -> bool:
    """Whether the file begins with ``magic`` (reads only those bytes)."""
    with path.open("rb") as fh:
        return fh.read(len(magic)) == magic


def load(path: str | os.PathLike[str], *, activation: str | None = None) -> Block | Stack | Checkpoint:
    """Load whatever ``path`` is: an ``.npz`` block or stack, or a checkpoint.

    Checkpoints (``.safetensors``, ``model.safetensors.index.json``, a directory) come back
    as a lazy :class:`~absorb.io.safetensors.Checkpoint` (headers checked, blocks read one
    at a time when iterated), never as the whole model in memory.
    """
    from absorb._validate import check_path

    p = Path(check_path(path))
    # --- checkpoints (absorb/io/safetensors.py) ---
    if p.suffix != ".npz" and is_checkpoint(p):
        return open_checkpoint(p, activation=activation)
    if p.suffix == ".npz" or (p.is_file() and _starts_with(p, b"PK")):
        return load_npz(p, activation=activation)
    if not p.exists():
        raise InvalidInput(f"{p}: no such file")
    raise InvalidInput(f"{p}: unsupported input; give an .npz file with W_up and W_down (see docs/user-guide.md)")


__all__ = ["Checkpoint", "blocks_from_arrays", "is_checkpoint", "load", "load_npz", "open_checkpoint", "save_npz"]
