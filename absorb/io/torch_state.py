"""PyTorch ``state_dict`` files (``torch.save``: ``.bin``/``.pt``/``.pth``), read only when torch is installed.

torch is an optional extra (``pip install absorb[torch]``); absorb never imports it unless
such a file is given. Files are loaded with ``torch.load(path, map_location="cpu",
weights_only=True)`` — never ``weights_only=False``: the restricted unpickler accepts
tensors, dicts, lists and primitive values and refuses every other global, so a pickle
whose ``__reduce__`` would call ``os.system`` is refused before anything runs. Zip-format
files (``torch.save``'s default since PyTorch 1.6) are memory-mapped (``mmap=True``), so
tensors stay on disk until a block reads them, as with safetensors.

Accepted contents: a dict name → tensor, or a dict whose only entry is ``"state_dict"`` or
``"model"`` holding one. Each tensor becomes a :class:`~absorb.io.tensor_info.TensorInfo`
with the safetensors dtype name (F32, BF16, ...), so family detection, orientation, fusing,
norm folding and layer selection are the very code that reads safetensors; only
:meth:`TorchSource.load` differs. Floats convert to numpy exactly: F64/F32 as they are,
F16/BF16 through ``.to(torch.float32)`` (every fp16/bf16 value is a float32). FP8 and
quantised (``qint8``…) tensors keep a non-float dtype name and are refused with one line by
the shared dtype check, as in safetensors (result 5 needs continuous weights).
"""

from __future__ import annotations

import re
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from absorb._errors import InvalidInput
from absorb.io.tensor_info import TensorInfo

TORCH_SUFFIXES = (".bin", ".pt", ".pth")
TORCH_INDEX_NAME = "pytorch_model.bin.index.json"
# files of a transformers Trainer output directory that are not model weights
_NOT_WEIGHTS = re.compile(r"^(training_args\.bin|optimizer\.pt|scheduler\.pt|scaler\.pt|rng_state.*\.pth)$")

_INSTALL_HINT = ("pip install torch (the optional extra absorb[torch]) to read it, or convert the checkpoint to safetensors "
                 "(safetensors.torch.save_file(torch.load(path, weights_only=True), 'model.safetensors'))")


def torch_module() -> Any | None:
    """``torch`` if it can be imported, else None (it is an optional extra)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def torch_missing(path: Path) -> InvalidInput:
    """The one-line refusal when torch is not installed."""
    return InvalidInput(f"{path}: a PyTorch state_dict file, and torch is not installed; {_INSTALL_HINT}")


def _dtype_name(torch: Any, t: Any) -> str:
    """The safetensors name of a tensor's dtype; quantised and unknown dtypes get their torch
    name, which the shared check refuses as "not a plain float"."""
    names = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
             torch.bool: "BOOL"}
    for attr, name in (("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"), ("float8_e8m0fnu", "F8_E8M0")):
        if getattr(torch, attr, None) is not None:
            names[getattr(torch, attr)] = name
    if t.is_quantized:
        return f"quantised {str(t.dtype).removeprefix('torch.')}"
    return names.get(t.dtype, str(t.dtype).removeprefix("torch."))


def _why(exc: BaseException) -> str:
    """One line from a torch.load error: the refused global when weights_only names one."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    line = next((ln for ln in lines if "GLOBAL" in ln or "Unsupported" in ln), lines[0] if lines else type(exc).__name__)
    line = f"{type(exc).__name__}: {line}"
    return line if len(line) <= 200 else line[:197] + "..."


def load_state_dict(torch: Any, path: Path) -> dict[str, Any]:
    """``torch.load(path, map_location="cpu", weights_only=True)``, checked to be a state_dict.

    Returns name → tensor (CPU, possibly memory-mapped). Raises :class:`InvalidInput` (one
    line) for a file torch cannot load under ``weights_only=True`` (a pickle of other
    objects, a corrupt or non-PyTorch file) and for contents that are not a state_dict.
    """
    try:
        mmap = zipfile.is_zipfile(path)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage deprecation etc.: the CLI's stderr is one line
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - torch raises UnpicklingError, RuntimeError, KeyError, EOFError, ...
        raise InvalidInput(f"{path}: torch.load(weights_only=True) refused the file ({_why(exc)}); it is not a plain "
                           "PyTorch state_dict, or it is corrupt — re-save model.state_dict() with torch.save, or convert "
                           "the checkpoint to safetensors") from None
    if isinstance(obj, dict) and len(obj) == 1 and next(iter(obj)) in ("state_dict", "model") and isinstance(next(iter(obj.values())), dict):
        obj = next(iter(obj.values()))
    if not isinstance(obj, dict):
        raise InvalidInput(f"{path}: holds a {type(obj).__name__}, not a state_dict (a dict of name → tensor); "
                           "save model.state_dict() with torch.save")
    out: dict[str, Any] = {}
    for name, t in obj.items():
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            keys = ", ".join(repr(k) for k in list(obj)[:5]) + (", ..." if len(obj) > 5 else "")
            raise InvalidInput(f"{path}: entry {name!r} is a {type(t).__name__}, not a tensor (keys {keys}); a state_dict maps "
                               "names to tensors — save model.state_dict() alone (a dict holding only 'state_dict' or 'model' "
                               "is also read)")
        if t.layout != torch.strided:
            raise InvalidInput(f"{path}: tensor {name!r} has layout {t.layout}; only dense tensors are read — save dense weights")
        out[name] = t
    return out


class TorchSource:
    """Tensors of loaded state_dicts, converted to numpy one at a time, exactly."""

    def __init__(self, tensors: Mapping[str, Any]) -> None:
        self._tensors = dict(tensors)

    def load(self, info: TensorInfo) -> np.ndarray:
        """The stored values of ``info.name`` as a float32/float64 numpy array (exact), the
        caller's own: :meth:`Checkpoint.read <absorb.io.safetensors.Checkpoint.read>` hands a
        float32 or float64 array on without copying it, and the norm fold scales it in place."""
        import torch

        t = self._tensors[info.name].detach()
        if t.dtype in (torch.float16, torch.bfloat16):
            return t.to(torch.float32).numpy()  # exact (every fp16/bf16 value is a float32); a new tensor
        return t.numpy().copy()  # t.numpy() is the state_dict's own memory: scaling it would change the model


def read_torch(path: Path, files: list[Path], index_map: Mapping[str, Path] | None) -> tuple[dict[str, TensorInfo], TorchSource, list[Path]]:
    """Load ``files`` (or the shards of ``index_map``) → (name → TensorInfo, source, files).

    With an index, every tensor must be in the shard the index names; without one, a name
    in two files is refused (the directory mixes checkpoints), as for safetensors.
    """
    torch = torch_module()
    if torch is None:
        raise torch_missing(files[0] if files else path)
    infos: dict[str, TensorInfo] = {}
    raw: dict[str, Any] = {}
    if index_map is not None:
        shards = sorted(set(index_map.values()))
        loaded = {s: load_state_dict(torch, s) for s in shards}
        for name, shard in index_map.items():
            if name not in loaded[shard]:
                raise InvalidInput(f"{path}: weight_map puts {name!r} in {shard.name!r}, but that shard holds no such tensor; "
                                   "the index does not match the shards")
            raw[name] = loaded[shard][name]
            infos[name] = _info(torch, name, raw[name], shard)
        files = shards
    else:
        for f in files:
            for name, t in load_state_dict(torch, f).items():
                if name in infos:
                    raise InvalidInput(f"{f}: tensor {name!r} is also in {infos[name].file.name}; the directory mixes checkpoints")
                raw[name] = t
                infos[name] = _info(torch, name, t, f)
    return infos, TorchSource(raw), files


def _info(torch: Any, name: str, t: Any, file: Path) -> TensorInfo:
    return TensorInfo(name, file, _dtype_name(torch, t), tuple(int(s) for s in t.shape), 0, 0, 0)


def torch_files_in(directory: Path) -> list[Path]:
    """The state_dict files of a directory: ``pytorch_model.bin`` if present, else every
    .bin/.pt/.pth file except a Trainer's (training_args.bin, optimizer.pt, ...)."""
    if (directory / "pytorch_model.bin").is_file():
        return [directory / "pytorch_model.bin"]
    return sorted(p for p in directory.iterdir() if p.suffix in TORCH_SUFFIXES and p.is_file() and not _NOT_WEIGHTS.match(p.name))


__all__ = ["TORCH_INDEX_NAME", "TORCH_SUFFIXES", "TorchSource", "load_state_dict", "read_torch", "torch_files_in",
           "torch_missing", "torch_module"]
