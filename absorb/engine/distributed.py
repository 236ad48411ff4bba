"""A checkpoint's MLP blocks decided as dask tasks, one layer per task, on one machine or many.

:func:`decide_checkpoint_dask` is :func:`absorb.engine.decide_checkpoint` spread
over a dask cluster. The client opens the checkpoint (headers only) for its list of blocks,
and ships no weights: each task gets the checkpoint's path, the options it was opened with
and one block's name, opens the checkpoint itself with :func:`open_checkpoint`, checks that
it sees the same layout of that block's tensors as the client (same names, dtypes, shapes
and byte ranges in same-named files), and reads only those tensors. It decides the block
with :func:`absorb.engine.decide_collection` — the serial code path, with the same
arguments — and returns the decision without its weight matrices (``keep_weights=False``),
with the value of ``on_block`` (e.g. the block's certificate entry), computed on the worker
while the weights are loaded. The client puts the decisions back in the checkpoint's order,
so the result is the serial run's, whatever order the layers finish in.

Every worker therefore needs the checkpoint files at the same path (a shared filesystem)
and memory for one layer at a time (docs/checkpoints.md, "Many machines").
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.engine.decide import collection_decision, decide_collection
from absorb.io.families import BlockSpec
from absorb.io.safetensors import Checkpoint, open_checkpoint

OPEN_OPTIONS = ("activation", "layers", "up", "down", "gate", "fold_norm")
"""The keyword arguments of :func:`open_checkpoint` that a task repeats."""

_CONST_MIN = 1024  # arrays with fewer entries travel as they are


def decide_checkpoint_dask(ckpt: Checkpoint, options: Mapping[str, Any], *, tol: float, timeout: float, seed: int,
                           method: str = "auto", allow_biases: bool = False, workers: int | None = None,
                           scheduler: str | None = None,
                           client: Any = None, processes: bool = True,
                           progress: Callable[[str, float], None] | None = None,
                           on_block: Callable[[Any], Any] | None = None) -> tuple[Any, list[Any] | None]:
    """Decide every block of ``ckpt`` as dask tasks; return ``(decision, values)``.

    ``options``: the keyword arguments ``ckpt`` was opened with (:data:`OPEN_OPTIONS`); each
    task opens the checkpoint again with them. The cluster: ``workers`` (a local cluster of
    that many processes, or threads with ``processes=False``), ``scheduler`` (an address),
    or an existing dask ``client``. ``decision`` is what :func:`decide_checkpoint` returns
    for the same arguments; ``values`` (when ``on_block`` is given) holds
    ``on_block(block_decision)`` of each block, computed on the worker while the block's
    weights are loaded, in the checkpoint's order (``on_block`` must pickle: a module-level
    function such as :func:`absorb.certificate.build.block_entry`). ``progress`` is called
    with each block's name and its seconds on the worker as it finishes.

    A task's error is raised here as the serial run would raise it: the error of the first
    failing block in the checkpoint's order (later blocks are cancelled).
    """
    bad = set(options) - set(OPEN_OPTIONS)
    if bad:
        raise ValueError(f"decide_checkpoint_dask: unknown checkpoint options {sorted(bad)}")
    specs = ckpt.specs
    if not specs:
        raise ValueError("decide_checkpoint_dask needs at least one block")
    # tasks open the absolute path: a worker's working directory is not the client's
    where = os.path.abspath(ckpt.path)
    opts = dict(options)
    args = [(where, opts, spec.name, layout(ckpt, spec), tol, timeout, seed, method, allow_biases, on_block) for spec in specs]
    if client is not None:
        got = _gather(client, args, specs, progress)
    else:
        from absorb._dask import dask_client

        # serial_blas: products round as in the serial run (dask's default is one BLAS thread)
        with dask_client(workers=workers, scheduler=scheduler, processes=processes, serial_blas=True) as c:
            got = _gather(c, args, specs, progress)
    decisions = [bd for bd, _ in got]
    return collection_decision(decisions, path=str(ckpt.path), tol=tol), ([v for _, v in got] if on_block else None)


def layout(ckpt: Checkpoint, spec: BlockSpec) -> tuple[Any, ...]:
    """What a task must see of one block to read the same weights as the client: the block's
    spec and, for each tensor it reads (its norm's too), the file name, dtype, shape and byte range."""
    names = spec.tensors() + ((spec.norm.weight,) + ((spec.norm.bias,) if spec.norm.bias else ()) if spec.norm else ())
    infos = tuple((t, i.file.name, i.dtype, i.shape, i.begin, i.end, i.data_start)
                  for t in names if (i := ckpt.tensors.get(t)) is not None)
    return (spec, infos)


# ---- the task (runs on a worker) -----------------------------------------------------
def _decide_layer(path: str, options: dict[str, Any], name: str, expect: tuple[Any, ...], tol: float, timeout: float,
                  seed: int, method: str, allow_biases: bool, on_block: Callable[[Any], Any] | None) -> tuple[_Wire, Any, float]:
    """Open the checkpoint, decide block ``name`` as :func:`decide_checkpoint` would, and
    return (its decision for the wire, ``on_block``'s value, seconds)."""
    t0 = time.perf_counter()
    try:
        ckpt = open_checkpoint(path, **options)
    except InvalidInput as exc:
        raise InvalidInput(f"on the worker on {socket.gethostname()}: {exc} (every worker needs the same checkpoint files "
                           "at the same path)") from None
    spec = next((s for s in ckpt.specs if s.name == name), None)
    if spec is None or layout(ckpt, spec) != expect:
        raise InvalidInput(f"{path}: the worker on {socket.gethostname()} sees another checkpoint there than the client "
                           f"(block {name} {'is missing' if spec is None else 'has other tensors'}); every worker needs the "
                           "same checkpoint files at the same path")
    values: list[Any] = []
    dec = decide_collection((ckpt.block(s) for s in (spec,)), path=str(ckpt.path), tol=tol, timeout=timeout, seed=seed,
                            method=method, allow_biases=allow_biases, keep_weights=False,
                            on_block=None if on_block is None else (lambda bd: values.append(on_block(bd))))
    (bd,) = dec.blocks
    return _Wire(bd), (values[0] if values else None), time.perf_counter() - t0


def _gather(client: Any, args: list[tuple[Any, ...]], specs: Sequence[BlockSpec],
            progress: Callable[[str, float], None] | None) -> list[tuple[Any, Any]]:
    """Submit one task per block, collect them as they finish, return them in block order."""
    from dask.distributed import as_completed
    from distributed import KilledWorker
    from distributed.utils import CancelledError

    futures = {client.submit(_decide_layer, *a, pure=False, priority=-i): i for i, a in enumerate(args)}
    done: dict[int, tuple[Any, Any]] = {}
    errors: dict[int, BaseException] = {}
    for fut in as_completed(list(futures)):
        i = futures[fut]
        if fut.cancelled():
            continue
        try:
            wire, value, seconds = fut.result()
        except CancelledError:  # cancelled after a failing block: it has nothing to report
            continue
        except KilledWorker:
            errors[i] = InvalidInput(f"{specs[i].name}: the dask worker deciding it died (out of memory? each worker needs "
                                     "memory for one layer, about 3 times its stored size as float32; see docs/checkpoints.md)")
        except Exception as exc:  # noqa: BLE001 - raised as the serial run would: the first failing block in order
            errors[i] = exc
        else:
            done[i] = (wire.decision, value)
            if progress:
                progress(specs[i].name, seconds)
            continue
        for f, j in futures.items():  # blocks after a failing one cannot change what is raised
            if j > i and not f.done():
                f.cancel()
    if errors:
        raise errors[min(errors)]
    return [done[i] for i in range(len(args))]


# ---- what crosses the wire -----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Const:
    """A constant array by its value, shape and dtype: ``broadcast`` (zero strides, like the
    placeholders of ``Block.without_weights``) or ``zeros`` (a contiguous array of +0.0)."""

    kind: str
    value: Any
    shape: tuple[int, ...]
    dtype: str

    @staticmethod
    def of(a: object) -> _Const | None:
        if not isinstance(a, np.ndarray) or a.size < _CONST_MIN:
            return None
        if all(s == 0 for s in a.strides):
            return _Const("broadcast", a.flat[0].item(), a.shape, a.dtype.str)
        if a.flags.c_contiguous and not a.view(np.uint8).any():  # every byte 0: +0.0, not -0.0
            return _Const("zeros", 0, a.shape, a.dtype.str)
        return None

    def array(self) -> np.ndarray:
        if self.kind == "broadcast":
            return np.broadcast_to(np.array(self.value, dtype=self.dtype), self.shape)
        return np.zeros(self.shape, dtype=self.dtype)


def _swap(block: Any, to_wire: bool) -> Any:
    if block is None:
        return None
    changes = {}
    for f in dataclasses.fields(block):
        v = getattr(block, f.name)
        c = _Const.of(v) if to_wire else (v.array() if isinstance(v, _Const) else None)
        if c is not None:
            changes[f.name] = c
    return block.replace(**changes) if changes else block  # Block.replace: a derived block, not re-validated


class _Wire:
    """A block decision as it is pickled between worker and client: its blocks' constant
    arrays (the weight placeholders, a witness's zero skip) travel as :class:`_Const`, not as
    their d×n bytes (pickle copies a zero-stride array in full)."""

    def __init__(self, decision: Any) -> None:
        self.decision = decision

    def __reduce__(self) -> tuple[Any, ...]:
        bd = self.decision
        w = bd.witness
        packed = dataclasses.replace(bd, block=_swap(bd.block, True),
                                     witness=None if w is None else dataclasses.replace(w, block=_swap(w.block, True)))
        return (_unwire, (packed,))


def _unwire(packed: Any) -> _Wire:
    w = packed.witness
    return _Wire(dataclasses.replace(packed, block=_swap(packed.block, False),
                                     witness=None if w is None else dataclasses.replace(w, block=_swap(w.block, False))))


__all__ = ["OPEN_OPTIONS", "decide_checkpoint_dask", "layout"]
