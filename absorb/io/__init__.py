"""Loaders: files become validated blocks (``.npz`` here; checkpoints alongside)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from absorb._errors import InvalidInput
from absorb._lazy import lazy_exports
from absorb.io.npz import blocks_from_arrays, load_npz, save_npz
from absorb.io.sniff import is_checkpoint, refusal, sniff
from absorb.model.block import Block, Stack

if TYPE_CHECKING:
    from absorb.io.safetensors import Checkpoint, open_checkpoint

# the checkpoint readers (and the name tables they import) load on first use: an .npz run never needs them
__getattr__, __dir__ = lazy_exports(__name__, {"Checkpoint": "absorb.io.safetensors", "open_checkpoint": "absorb.io.safetensors"},
                                    globals())


def load(path: str | os.PathLike[str], *, activation: str | None = None) -> Block | Stack | Checkpoint:
    """Load whatever ``path`` is: an ``.npz`` block or stack, or a checkpoint.

    Checkpoints (``.safetensors``, ``model.safetensors.index.json``, a directory, PyTorch
    files, ONNX, GGUF) come back as a lazy :class:`~absorb.io.safetensors.Checkpoint`
    (headers checked, blocks read one at a time when iterated), never as the whole model in
    memory. The format is told from the file's content (:func:`absorb.io.sniff.sniff`): a
    Lightning ``.ckpt`` is a PyTorch zip, not an ``.npz``, whatever its name.
    """
    from absorb._validate import check_path

    p = Path(check_path(path))
    if not p.exists():
        raise InvalidInput(f"{p}: no such file")
    if p.is_dir() or p.name.endswith(".index.json"):
        from absorb.io.safetensors import open_checkpoint

        return open_checkpoint(p, activation=activation)
    kind = sniff(p)
    if kind == "npz" or (kind in ("zip", "unknown", "json") and p.suffix == ".npz") or (kind == "zip" and not is_checkpoint(p)):
        return load_npz(p, activation=activation)  # a damaged or foreign .npz: the npz loader words it
    if is_checkpoint(p):
        from absorb.io.safetensors import open_checkpoint

        return open_checkpoint(p, activation=activation)
    raise refusal(p, kind, "not a format absorb reads")


__all__ = ["Checkpoint", "blocks_from_arrays", "is_checkpoint", "load", "load_npz", "open_checkpoint", "save_npz"]
