"""PyTorch ``state_dict`` files (``torch.save``: ``.bin``/``.pt``/``.pth``), read only when torch is installed.

torch is an optional extra (``pip install absorb[torch]``); absorb never imports it unless
such a file is given. Files are loaded with ``torch.load(path, map_location="cpu",
weights_only=True)`` — never ``weights_only=False``: the restricted unpickler accepts
tensors, dicts, lists and primitive values and refuses every other global, so a pickle
whose ``__reduce__`` would call ``os.system`` is refused before anything runs. Zip-format
files (``torch.save``'s default since PyTorch 1.6) are memory-mapped (``mmap=True``), so
tensors stay on disk until a block reads them, as with safetensors.

Accepted contents (:func:`unwrap`): a dict name → tensor, or a training checkpoint that holds
one — Lightning ``.ckpt`` (``state_dict``), a trainer dict (``model_state_dict`` beside
``config``, ``metrics``, ``version``), fairseq (``model`` beside ``args``/``cfg``), DeepSpeed
(``module``). Metadata objects such checkpoints pickle (``argparse.Namespace``, Lightning's
``AttributeDict``, omegaconf configs, numpy scalars, paths) are admitted through an explicit
allowlist (:func:`allowlist`) that maps each to a harmless stand-in; the unpickler stays
torch's restricted one, so any other global is refused before it runs. A config stored in
the container (``config``, ``hyper_parameters``, fairseq's ``args``) is used when no
config.json lies beside the file. Each tensor becomes a :class:`~absorb.io.tensor_info.TensorInfo`
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

TORCH_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
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


class _Opaque:
    """Stand-in for a harmless metadata object of a training checkpoint (a pickled config,
    a numpy scalar among the metrics, a path): keeps its arguments and state, runs nothing."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Opaque:
        obj = object.__new__(cls)
        obj.args = args
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state


# The explicit allowlist: globals of training checkpoints that are metadata, never code to run.
# Each name maps to a harmless stand-in (or to argparse.Namespace itself, which only sets attributes),
# so torch.load(weights_only=True) builds them without importing their modules or calling their code.
# Everything else stays refused by torch's restricted unpickler (os.system, builtins.eval, ...).
_AS_DICT = ("pytorch_lightning.utilities.parsing.AttributeDict", "lightning.pytorch.utilities.parsing.AttributeDict",
            "lightning_fabric.utilities.data.AttributeDict", "lightning.fabric.utilities.data.AttributeDict",
            "transformers.tokenization_utils_base.BatchEncoding", "collections.defaultdict")
_AS_OPAQUE = ("omegaconf.dictconfig.DictConfig", "omegaconf.listconfig.ListConfig", "omegaconf.base.ContainerMetadata",
              "omegaconf.base.Metadata", "omegaconf.nodes.AnyNode", "omegaconf.nodes.StringNode", "omegaconf.nodes.IntegerNode",
              "omegaconf.nodes.FloatNode", "omegaconf.nodes.BooleanNode", "omegaconf.nodes.EnumNode", "typing.Any",
              "builtins.dict", "builtins.list", "builtins.int", "builtins.float", "builtins.str", "builtins.tuple",
              "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar", "numpy.dtype",
              "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct", "numpy.ndarray",
              "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib._local.PosixPath", "pathlib._local.WindowsPath",
              "datetime.datetime", "datetime.date", "datetime.timedelta", "torch.torch_version.TorchVersion",
              "packaging.version.Version", "enum.Enum")
_NUMPY_DTYPE_CLASSES = tuple(f"numpy.dtypes.{n}DType" for n in ("Float64", "Float32", "Float16", "Int64", "Int32", "Int16",
                                                                 "Int8", "UInt8", "Bool", "Str", "Bytes", "Object"))


# A transformers configuration object saved beside the weights ({'model_state_dict': ..., 'config': model.config}):
# its class name varies by model, so names of this form found in the file are admitted as stand-ins too.
_HF_CONFIG = re.compile(r"^transformers\.(models\.[\w.]+\.configuration_\w+|configuration_utils)\.\w*Config$")


def allowlist() -> list[tuple[Any, str]]:
    """(stand-in, global name) pairs for ``torch.serialization.safe_globals``."""
    import argparse
    from collections import OrderedDict

    out: list[tuple[Any, str]] = [(argparse.Namespace, "argparse.Namespace")]
    out += [(OrderedDict, name) for name in _AS_DICT]
    out += [(_Opaque, name) for name in _AS_OPAQUE + _NUMPY_DTYPE_CLASSES]
    return out


# Where training frameworks keep the model's weights, in order of preference:
# Lightning 'state_dict', trainer scripts 'model_state_dict', fairseq 'model', DeepSpeed 'module'.
_WEIGHT_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "network", "model_state", "weights", "params")
# Where they keep the model's configuration (used only when no config.json lies beside the file).
_CONFIG_KEYS = ("config", "model_config", "hyper_parameters", "hparams", "args", "cfg")


def _is_state_dict(torch: Any, v: object) -> bool:
    return (isinstance(v, dict) and bool(v) and all(isinstance(k, str) for k in v)
            and all(isinstance(t, torch.Tensor) for t in v.values()))


def _plain(v: object, depth: int = 0) -> object:
    """JSON-like values of a config (strings, numbers, booleans, nested dicts); others dropped."""
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    if isinstance(v, dict) and depth < 3:
        return {str(k): _plain(x, depth + 1) for k, x in v.items() if isinstance(k, str) and _plain(x, depth + 1) is not _DROP}
    return _DROP


_DROP = object()


def _config_of(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    import argparse

    v = obj.get(key)
    if isinstance(v, argparse.Namespace):
        v = vars(v)
    elif isinstance(v, _Opaque) and isinstance(getattr(v, "state", None), dict):
        v = v.state  # a transformers config object: its attributes (hidden_act, hidden_size, model_type, ...)
    if not isinstance(v, dict):
        return None
    cfg = _plain(v)
    assert isinstance(cfg, dict)
    if isinstance(cfg.get("model"), dict) and not any(k in cfg for k in ("hidden_act", "activation_fn", "activation_function")):
        cfg = {**cfg, **cfg["model"]}  # fairseq's cfg.model, a trainer's {'model': {...}} section
    if "activation_fn" in cfg and not any(k in cfg for k in ("hidden_act", "activation_function", "activation")):
        cfg["activation_function"] = cfg["activation_fn"]  # fairseq's name
    cfg["__source__"] = f"the checkpoint's {key!r} entry"
    return cfg


def unwrap(torch: Any, obj: object, path: Path) -> tuple[dict[str, Any], str | None, dict[str, Any] | None]:
    """(state_dict, the key it was under or None, the config stored beside it or None).

    Reads a plain state_dict, a Lightning ``.ckpt`` (``state_dict`` beside ``epoch``,
    ``optimizer_states``, ``hyper_parameters``…), a trainer dict (``model_state_dict``
    beside ``config``, ``metrics``, ``version``…), fairseq (``model`` beside ``args``/``cfg``).
    """
    if _is_state_dict(torch, obj):
        assert isinstance(obj, dict)
        return obj, None, None
    if not isinstance(obj, dict):
        raise InvalidInput(f"{path}: holds a {type(obj).__name__}, not a state_dict (a dict of name → tensor); "
                           "save model.state_dict() with torch.save")
    cands = [k for k, v in obj.items() if isinstance(k, str) and _is_state_dict(torch, v)]
    key = next((k for k in _WEIGHT_KEYS if k in cands), cands[0] if len(cands) == 1 else None)
    if key is None:
        # one level deeper: {'model': {'state_dict': {...}}}
        for k in _WEIGHT_KEYS:
            inner = obj.get(k)
            if isinstance(inner, dict) and not _is_state_dict(torch, inner):
                try:
                    sd, where, cfg = unwrap(torch, inner, path)
                except InvalidInput:
                    continue
                return sd, f"{k}.{where}" if where else k, cfg
        keys = ", ".join(repr(k) for k in list(obj)[:8]) + (", ..." if len(obj) > 8 else "")
        if len(cands) > 1:
            raise InvalidInput(f"{path}: several entries hold weights ({', '.join(map(repr, cands))}) and none is a known "
                               f"model entry ({', '.join(_WEIGHT_KEYS)}); save the model's state_dict alone")
        bad = next((k for k, v in obj.items() if not isinstance(v, torch.Tensor)), None)
        raise InvalidInput(f"{path}: no entry holds the model's weights (a dict of name → tensor) among keys {keys}"
                           f"{f'; entry {bad!r} is a {type(obj[bad]).__name__}, not a tensor' if bad is not None else ''}; absorb reads a "
                           f"state_dict, alone or under one of {', '.join(_WEIGHT_KEYS)} (Lightning, trainer, fairseq)")
    cfg = next((c for c in (_config_of(obj, k) for k in _CONFIG_KEYS) if c), None)
    return obj[key], key if len(obj) > 1 else None, cfg  # {'state_dict': sd} alone is a state_dict


def load_container(torch: Any, path: Path) -> tuple[dict[str, Any], str | None, dict[str, Any] | None]:
    """``torch.load(path, map_location="cpu", weights_only=True)`` with :func:`allowlist`, unwrapped.

    Returns (name → tensor, the entry it was under, the stored config). Raises
    :class:`InvalidInput` (one line) for a file torch cannot load under ``weights_only=True``
    (a pickle of other objects, a corrupt or non-PyTorch file) and for contents that hold no state_dict.
    """
    try:
        mmap = zipfile.is_zipfile(path)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    allowed = allowlist()
    scan = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)  # torch >= 2.5
    if scan is not None:
        try:
            found = scan(path)
        except Exception:  # noqa: BLE001 - a damaged file: torch.load below words the damage
            found = []
        allowed += [(_Opaque, name) for name in found if _HF_CONFIG.match(name)]
    try:
        with warnings.catch_warnings(), torch.serialization.safe_globals(allowed):
            warnings.simplefilter("ignore")  # TypedStorage deprecation etc.: the CLI's stderr is one line
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - torch raises UnpicklingError, RuntimeError, KeyError, EOFError, ...
        raise InvalidInput(f"{path}: torch.load(weights_only=True) refused the file ({_why(exc)}); it is not a plain "
                           "PyTorch state_dict, or it is corrupt — re-save model.state_dict() with torch.save, or convert "
                           "the checkpoint to safetensors") from None
    sd, key, cfg = unwrap(torch, obj, path)
    for name, t in sd.items():
        if t.layout != torch.strided:
            raise InvalidInput(f"{path}: tensor {name!r} has layout {t.layout}; only dense tensors are read — save dense weights")
    return sd, key, cfg


def load_state_dict(torch: Any, path: Path) -> dict[str, Any]:
    """The state_dict of ``path`` (see :func:`load_container`), name → tensor."""
    return load_container(torch, path)[0]


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
        device = getattr(getattr(t, "device", None), "type", "cpu")
        if device != "cpu":  # map_location="cpu" moves every stored tensor but a meta one (shape and dtype, no values)
            raise InvalidInput(f"{info.file}: tensor {info.name!r} is on the {device} device and holds no values; "
                               "save the model's weights once they are loaded (the state_dict of a materialised model)")
        if t.dtype in (torch.float16, torch.bfloat16):
            return t.to(torch.float32).numpy()  # exact (every fp16/bf16 value is a float32); a new tensor
        return t.numpy().copy()  # t.numpy() is the state_dict's own memory: scaling it would change the model


def read_torch(path: Path, files: list[Path], index_map: Mapping[str, Path] | None
               ) -> tuple[dict[str, TensorInfo], TorchSource, list[Path], dict[str, Any] | None, list[str]]:
    """Load ``files`` (or the shards of ``index_map``) → (name → TensorInfo, source, files,
    the config stored in the container or None, notes for the report).

    With an index, every tensor must be in the shard the index names; without one, a name
    in two files is refused (the directory mixes checkpoints), as for safetensors.
    """
    torch = torch_module()
    if torch is None:
        raise torch_missing(files[0] if files else path)
    infos: dict[str, TensorInfo] = {}
    raw: dict[str, Any] = {}
    config: dict[str, Any] | None = None
    notes: list[str] = []

    def load(f: Path) -> dict[str, Any]:
        nonlocal config
        sd, key, cfg = load_container(torch, f)
        if key is not None:
            note = f"the weights are the {key!r} entry of {f.name} (a training checkpoint; its other entries are not read)"
            if note not in notes:
                notes.append(note)
        if config is None and cfg is not None:
            config = cfg
        return sd

    if index_map is not None:
        shards = sorted(set(index_map.values()))
        loaded = {s: load(s) for s in shards}
        for name, shard in index_map.items():
            if name not in loaded[shard]:
                raise InvalidInput(f"{path}: weight_map puts {name!r} in {shard.name!r}, but that shard holds no such tensor; "
                                   "the index does not match the shards")
            raw[name] = loaded[shard][name]
            infos[name] = _info(torch, name, raw[name], shard)
        files = shards
    else:
        for f in files:
            for name, t in load(f).items():
                if name in infos:
                    raise InvalidInput(f"{f}: tensor {name!r} is also in {infos[name].file.name}; the directory mixes checkpoints")
                raw[name] = t
                infos[name] = _info(torch, name, t, f)
    return infos, TorchSource(raw), files, config, notes


def _info(torch: Any, name: str, t: Any, file: Path) -> TensorInfo:
    return TensorInfo(name, file, _dtype_name(torch, t), tuple(int(s) for s in t.shape), 0, 0, 0)


def torch_files_in(directory: Path) -> list[Path]:
    """The state_dict files of a directory: ``pytorch_model.bin`` if present, else every
    .bin/.pt/.pth file except a Trainer's (training_args.bin, optimizer.pt, ...)."""
    if (directory / "pytorch_model.bin").is_file():
        return [directory / "pytorch_model.bin"]
    return sorted(p for p in directory.iterdir() if p.suffix in TORCH_SUFFIXES and p.is_file() and not _NOT_WEIGHTS.match(p.name))


__all__ = ["TORCH_INDEX_NAME", "TORCH_SUFFIXES", "TorchSource", "allowlist", "load_container", "load_state_dict", "read_torch", "torch_files_in",
           "torch_missing", "torch_module", "unwrap"]
