"""Deciding a checkpoint: every MLP block of an opened checkpoint, one layer at a time.

Lives in the engine, not in :mod:`absorb.io`: the loaders only read and validate; deciding
is the engine's job, so io/ imports nothing from here.
"""

from __future__ import annotations

from typing import Any

from absorb._errors import InvalidInput
from absorb._validate import Method, check_decide_args
from absorb.engine.decide import DEFAULT_TOL, decide_collection
from absorb.io.safetensors import Checkpoint


def decide_checkpoint(ckpt: Checkpoint, *, tol: float = DEFAULT_TOL, timeout: float = 60.0, seed: int = 0,
                      method: Method = "auto", allow_biases: bool = False, progress: Any = None, on_block: Any = None) -> Any:
    """Decide every block of ``ckpt`` with :func:`absorb.engine.decide_collection`, a block at a time.

    Each block is the isolated MLP with its own identity skip (see :meth:`Checkpoint.analysed`);
    ``timeout`` is the search budget of each block. ``progress`` (optional) is called with
    each block's name before it is decided; ``on_block`` with each block's decision while
    its weights are still loaded.
    """
    if not isinstance(ckpt, Checkpoint):
        raise InvalidInput(f"decide_checkpoint needs a Checkpoint (absorb.load or open_checkpoint), got a {type(ckpt).__name__}")
    check_decide_args(tol=tol, timeout=timeout, seed=seed, method=method)
    return decide_collection(ckpt.blocks(), path=str(ckpt.path), tol=tol, timeout=timeout, seed=seed,
                             method=method, allow_biases=allow_biases, progress=progress, keep_weights=False,
                             on_block=on_block)


__all__ = ["decide_checkpoint"]
