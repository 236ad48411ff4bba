"""Hugging Face style checkpoints (``.safetensors``), read lazily, one MLP block at a time.

Accepted inputs: a single ``.safetensors`` file, a sharded checkpoint's
``model.safetensors.index.json`` (its ``weight_map`` names the shard of every tensor; one
layer's tensors may sit in different shards), or a directory holding either, normally with
the model's ``config.json``. PyTorch ``state_dict`` files (``.bin``/``.pt``/``.pth``,
``pytorch_model.bin.index.json``) are read through :mod:`absorb.io.torch_state` when torch
is installed; the tensors then come from a :class:`~absorb.io.torch_state.TorchSource`
instead of :class:`SafetensorsSource`, and everything else below is shared.

Nothing is read but headers until the blocks are iterated: :func:`open_checkpoint` parses
and checks every shard's header (length, JSON, dtype, shape, byte range inside the file),
refuses quantised checkpoints, finds the MLP blocks from the tensor names
(:mod:`absorb.io.families`) and checks their shapes. :meth:`Checkpoint.blocks` then yields
one validated :class:`~absorb.model.block.Block` at a time through
``safetensors.safe_open(path, framework="np")``, so at most one block's tensors (plus one
transient copy) are in memory — never the whole model.

Floats: F64, F32, F16 and BF16 are converted to float64 exactly (every such value is a
float64); a large F32, BF16 or F16 weight matrix to float32, also exactly
(:func:`absorb._validate.keeps_float32`): it is analysed in float32 storage. BF16 goes through ``ml_dtypes``; without it, by the exact bit identity
``float32 bits = bf16 bits << 16``. FP8, integer and packed tensors (GPTQ/AWQ ``qweight``,
``qzeros``, ``scales``; FP8 ``weight_scale_inv``; MXFP4 ``_blocks``/``_scales``;
bitsandbytes) are refused: their weights are not plain floats, and result 5's "probability
one" needs continuous weights. The exception is gpt-oss's experts (:mod:`absorb.io.gpt_oss`),
whose MXFP4 values are dequantised exactly.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Container, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from absorb._errors import InvalidInput
from absorb._validate import float64_rows, keeps_float32, matvec
from absorb.io._validate import build_block
from absorb.io.families import BlockSpec, Detection, ManualRoles, detect, parse_layers, select_layers, split_slice
from absorb.io.gpt_oss import is_gpt_oss
from absorb.io.sniff import is_checkpoint, is_ctranslate2_dir, refusal, sniff
from absorb.io.tensor_info import TensorInfo
from absorb.io.torch_state import TORCH_INDEX_NAME, TORCH_SUFFIXES, read_torch, torch_files_in, torch_missing
from absorb.model.activations import get_activation
from absorb.model.block import Block
from absorb.rigorous import all_finite

INDEX_NAME = "model.safetensors.index.json"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors format's own limit

_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E4M3FN": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
             "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8, "C64": 8}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")
_NP_DTYPE = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}

# Tensor-name marks of quantised checkpoints (GPTQ/AWQ, FP8 block scales, MXFP4, bitsandbytes).
_QUANT = re.compile(r"(\.qweight|\.qzeros|\.g_idx|\.weight_scale_inv|\.weight_scale|\.input_scale|_blocks|\.absmax|"
                    r"\.quant_map|\.quant_state[.\w]*|\.SCB|\.weight_format)$")


def require_regular_file(path: Path, what: str = "file") -> None:
    """Refuse a device, FIFO or socket before opening it: reading one could block forever
    (a FIFO without a writer) or never end (``/dev/zero``)."""
    if path.exists() and not path.is_file() and not path.is_dir():
        raise InvalidInput(f"{path}: the {what} is not a regular file (a device, pipe or socket); give a file on disk")


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse and check one ``.safetensors`` header without reading any tensor.

    Checks: the 8-byte length, the header fits in the file and the format's 100 MiB
    limit, JSON object, each entry's dtype, shape and ``data_offsets`` (inside the file,
    and exactly ``prod(shape) · itemsize`` bytes long). Returns (tensors, metadata).
    """
    require_regular_file(path, "safetensors file")
    raw, hlen, size = _raw_header(path)
    header = _header_json(path, raw)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict):
        raise InvalidInput(f"{path}: __metadata__ in the header is not an object; the file is corrupt")
    data_len = size - 8 - hlen
    out = {name: _header_entry(path, name, ent, data_len=data_len, data_start=8 + hlen) for name, ent in header.items()}
    return out, {str(k): str(v) for k, v in meta.items()}


def _raw_header(path: Path) -> tuple[bytes, int, int]:
    """(header bytes, their length, file size), the length checked against the file."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise InvalidInput(f"{path}: truncated safetensors file ({size} bytes; the header length alone takes 8)")
            (hlen,) = struct.unpack("<Q", head)
            if hlen > _MAX_HEADER or 8 + hlen > size:
                raise InvalidInput(f"{path}: the header claims {hlen} bytes but the file has {size}; the file is truncated or not safetensors")
            raw = fh.read(hlen)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return raw, hlen, size


def _json_why(exc: ValueError) -> str:
    """What ``json.loads`` refused, in a user's words (Python's advice on its digit limit is for programmers)."""
    return "it holds an integer of thousands of digits" if "integer string conversion" in str(exc) else str(exc)


def _parse_json(path: Path, raw: bytes, what: str, advice: str = "") -> Any:
    """``raw`` (UTF-8 JSON text) parsed, or one line naming ``path`` and ``what`` it should hold."""
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise InvalidInput(f"{path}: the {what} is nested too deeply to read; the file is corrupt") from None
    except ValueError as exc:  # not UTF-8, not JSON, or an integer past Python's digit limit
        raise InvalidInput(f"{path}: the {what} is not valid JSON ({_json_why(exc)}){advice}") from None


def _header_json(path: Path, raw: bytes) -> dict[str, Any]:
    header = _parse_json(path, raw, "safetensors header", "; the file is truncated or corrupt")
    if not isinstance(header, dict):
        raise InvalidInput(f"{path}: the safetensors header is not a JSON object; the file is corrupt")
    return header


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _header_entry(path: Path, name: str, ent: object, *, data_len: int, data_start: int) -> TensorInfo:
    """One header entry, checked: dtype known, shape and offsets well formed, bytes inside the file."""
    if not isinstance(ent, dict) or not {"dtype", "shape", "data_offsets"} <= set(ent):
        raise InvalidInput(f"{path}: header entry {name!r} lacks dtype, shape or data_offsets; the file is corrupt")
    dtype, shape, offs = ent["dtype"], ent["shape"], ent["data_offsets"]
    if dtype not in _ITEMSIZE:
        raise InvalidInput(f"{path}: tensor {name!r} has dtype {dtype!r}, which absorb cannot read; give F32, F16 or BF16 weights")
    if (not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape)
            or not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) for o in offs)):
        raise InvalidInput(f"{path}: tensor {name!r} has a malformed shape {shape!r} or data_offsets {offs!r}; the file is corrupt")
    b, e = offs
    need = int(np.prod(shape, dtype=object)) * _ITEMSIZE[dtype]
    if not 0 <= b <= e <= data_len:
        raise InvalidInput(f"{path}: tensor {name!r} has data_offsets [{b}, {e}] outside the {data_len} data bytes; the file is truncated or corrupt")
    if e - b != need:
        raise InvalidInput(f"{path}: tensor {name!r} of shape {shape} {dtype} needs {need} bytes but data_offsets [{b}, {e}] give {e - b}; the file is corrupt")
    return TensorInfo(name, path, dtype, tuple(shape), b, e, data_start)


def _read_json(path: Path, what: str) -> Any:
    require_regular_file(path, what)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    return _parse_json(path, raw, what)


def _resolve(path: Path) -> tuple[list[Path], Path | None, Path, bool]:
    """(checkpoint files, index file or None, directory that should hold config.json, whether
    they are PyTorch files). A directory prefers safetensors over PyTorch files. A file's
    format is told from its content (:func:`absorb.io.sniff.sniff`), not its extension:
    formats read elsewhere (ONNX, GGUF) or not at all (CTranslate2) are refused here by name."""
    if not path.exists():
        raise InvalidInput(f"{path}: no such file or directory")
    require_regular_file(path, "checkpoint")
    if path.is_dir():
        idx = path / INDEX_NAME
        if idx.is_file():
            return [], idx, path, False
        files = sorted(path.glob("*.safetensors"))
        if files:
            return files, None, path, False
        if is_ctranslate2_dir(path):
            raise refusal(path, "ctranslate2")
        if (path / TORCH_INDEX_NAME).is_file():
            return [], path / TORCH_INDEX_NAME, path, True
        torch_files = torch_files_in(path)
        if torch_files:
            return torch_files, None, path, True
        raise InvalidInput(f"{path}: the directory holds no .safetensors file, no {INDEX_NAME} and no PyTorch state_dict; "
                           "give a checkpoint directory or file")
    if path.name.endswith(".index.json"):
        return [], path, path.parent, path.name.endswith(".bin.index.json")
    kind = sniff(path)
    if kind == "safetensors":
        return [path], None, path.parent, False
    if kind in ("torch-zip", "torch-pickle"):
        return [path], None, path.parent, True
    if kind == "unknown" and path.suffix == ".safetensors":  # a damaged header: read_header words the damage
        return [path], None, path.parent, False
    if kind in ("unknown", "zip") and path.suffix in TORCH_SUFFIXES:  # torch.load words what is wrong with it
        return [path], None, path.parent, True
    raise refusal(path, kind, "not a checkpoint absorb reads" if kind not in ("ctranslate2",) else "")


def torch_refusal(path: Path) -> InvalidInput:
    """The refusal of a PyTorch file when torch is not installed (kept for callers; see
    :func:`absorb.io.torch_state.torch_missing`)."""
    return torch_missing(path)


def _shard_map(index: Path) -> dict[str, Path]:
    data = _read_json(index, "checkpoint index")
    wm = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(wm, dict) or not wm:
        raise InvalidInput(f"{index}: no weight_map (tensor name → shard file) in the index; the index is corrupt")
    out: dict[str, Path] = {}
    for name, shard in wm.items():
        if not isinstance(shard, str) or not shard or Path(shard).is_absolute() or ".." in Path(shard).parts:
            raise InvalidInput(f"{index}: weight_map entry {name!r} → {shard!r} is not a shard file name beside the index")
        out[str(name)] = index.parent / shard
    return out


def _bf16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    """BF16 → float32, exactly: a bfloat16 is the top 16 bits of a float32."""
    return (u16.astype(np.uint32) << 16).view(np.float32)


def _ml_dtypes_available() -> bool:
    try:
        import ml_dtypes  # noqa: F401  (registers 'bfloat16' with numpy, which safetensors needs)
    except ImportError:  # pragma: no cover - ml_dtypes is a dependency
        return False
    return True


class SafetensorsSource:
    """Reads one tensor of a ``.safetensors`` shard, in its stored dtype (F16/F32/F64/BF16)."""

    def load(self, info: TensorInfo) -> np.ndarray:
        if info.dtype == "BF16" and not _ml_dtypes_available():  # pragma: no cover - ml_dtypes is a dependency
            return _bf16_bits_to_f32(self._raw(info, np.dtype("<u2")))
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(info.file), framework="np") as fh:
                return fh.get_tensor(info.name)
        except SafetensorError as exc:
            raise InvalidInput(f"{info.file}: tensor {info.name!r} cannot be read ({exc}); the file is corrupt") from None
        except OSError as exc:
            raise InvalidInput(f"{info.file}: cannot be read ({exc.strerror or exc})") from None

    def load_item(self, info: TensorInfo, index: int) -> np.ndarray:
        """``load(info)[index]``, reading only that entry of the leading axis (one stacked expert)."""
        if info.dtype == "BF16" and not _ml_dtypes_available():  # pragma: no cover - ml_dtypes is a dependency
            return self.load(info)[index]
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(info.file), framework="np") as fh:
                return fh.get_slice(info.name)[index:index + 1][0]
        except SafetensorError as exc:
            raise InvalidInput(f"{info.file}: tensor {info.name!r} cannot be read ({exc}); the file is corrupt") from None
        except OSError as exc:
            raise InvalidInput(f"{info.file}: cannot be read ({exc.strerror or exc})") from None

    @staticmethod
    def _raw(info: TensorInfo, dtype: np.dtype) -> np.ndarray:  # pragma: no cover - fallback without ml_dtypes
        count = (info.end - info.begin) // dtype.itemsize
        return np.fromfile(info.file, dtype=dtype, count=count, offset=info.data_start + info.begin).reshape(info.shape)


class TensorSource(Protocol):
    """Where :meth:`Checkpoint.read` gets a tensor's stored values (any float numpy dtype
    that converts to float64 exactly): safetensors shards, or loaded PyTorch state_dicts."""

    def load(self, info: TensorInfo) -> np.ndarray: ...


def _scale_columns(W: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``W diag g`` in place (the loader owns ``W``). Each product of a float32 weight and a
    float64 gain that is a float32 (no offset) is exact in float64 (24 + 24 ≤ 53 significant
    bits); a float32 ``W`` stays float32 when every product is a float32 (bfloat16 ×
    bfloat16 always is), else the result is float64."""
    if W.dtype == np.float64:
        W *= g[None, :]
        return W
    for sl, Wb in float64_rows(W):
        p = Wb * g[None, :]
        with np.errstate(over="ignore"):
            p32 = p.astype(np.float32)
        if not np.array_equal(p32, p):  # a product needs more than float32: the layer goes float64
            out = W.astype(np.float64)  # rows before sl are scaled already (exactly)
            out[sl.start:] *= g[None, :]
            return out
        W[sl] = p32
    return W


class Checkpoint:
    """A checkpoint opened for analysis: headers checked, MLP blocks found, nothing read yet.

    Iterate :meth:`blocks` (or the object itself) for validated blocks, one at a time, in
    the order of their names (``model.layers.2.mlp`` before ``model.layers.10.mlp``).
    """

    def __init__(self, path: Path, tensors: Mapping[str, TensorInfo], files: tuple[Path, ...], config: Mapping[str, Any] | None,
                 detection: Detection, *, fold_norm: bool, source: TensorSource | None = None) -> None:
        self.path = path
        self.source: TensorSource = source if source is not None else SafetensorsSource()
        self.tensors = dict(tensors)
        self.files = files
        self.config = config
        self.detection = detection
        self.fold_norm = fold_norm

    @property
    def specs(self) -> tuple[BlockSpec, ...]:
        return self.detection.blocks

    def __len__(self) -> int:
        return len(self.specs)

    def __iter__(self) -> Iterator[Block]:
        return self.blocks()

    # ---- reading --------------------------------------------------------------------
    def read(self, name: str, *, transpose: bool = False) -> np.ndarray:
        """One tensor as a finite, C-ordered float64 array (a one-line error naming it otherwise);
        a large F32/BF16/F16 matrix as float32 (exact: :func:`absorb._validate.keeps_float32`).

        ``transpose`` returns the transpose (GPT-2's Conv1D ``[in, out]`` → ``[out, in]``)
        with a single allocation.
        """
        info = self.tensors[name]
        if info.dtype not in FLOAT_DTYPES:
            raise InvalidInput(f"{info.file}: tensor {name!r} is {info.dtype}, not a plain float (F32, F16, BF16); "
                               "quantised or integer weights are not analysed — use the unquantised checkpoint")
        raw = self.source.load(info)
        want = np.float32 if keeps_float32(raw.dtype, raw.shape) else np.float64
        arr = raw.T if transpose else raw
        arr = arr if arr.dtype == want and arr.flags.c_contiguous and arr.flags.writeable else np.array(arr, dtype=want, order="C")
        del raw
        if tuple(arr.shape[::-1] if transpose else arr.shape) != info.shape:  # pragma: no cover - guarded by the header check
            raise InvalidInput(f"{info.file}: tensor {name!r} has shape {arr.shape}, but the header says {list(info.shape)}")
        if not all_finite(arr):
            bad = ~np.isfinite(arr)
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InvalidInput(f"{info.file}: tensor {name!r} contains {'NaN' if np.isnan(arr[where]) else 'Inf'} at index {where} "
                               f"({int(bad.sum())} non-finite entries); the weights must be finite")
        return arr

    def arrays(self, spec: BlockSpec) -> dict[str, np.ndarray]:
        """The contract's keys (W_up, W_down, W_gate, b_*) for one block, oriented [out, in]."""
        def mat(name: str) -> np.ndarray:
            return self.read(name, transpose=spec.transposed)

        out: dict[str, np.ndarray] = {}
        if spec.gate_up is not None:
            fused = mat(spec.gate_up)
            out["W_gate"], out["W_up"] = fused[: spec.n], fused[spec.n:]  # row blocks: C-contiguous views
            del fused
            if spec.b_up is not None:
                b = self.read(spec.b_up)
                out["b_gate"], out["b_up"] = b[: spec.n], b[spec.n:]
        else:
            out["W_up"] = mat(spec.up)
            if spec.gate is not None:
                out["W_gate"] = mat(spec.gate)
            if spec.b_up is not None:
                out["b_up"] = self.read(spec.b_up)
            if spec.b_gate is not None:
                out["b_gate"] = self.read(spec.b_gate)
        out["W_down"] = mat(spec.down)
        if spec.b_down is not None:
            out["b_down"] = self.read(spec.b_down)
        if spec.skip is not None:  # a skip matrix M read from an ONNX graph
            out["skip"] = self.read(spec.skip)
        return out

    def block(self, spec: BlockSpec) -> Block:
        """Read, validate (shared :func:`~absorb.io._validate.build_block`) and fold one block."""
        arrays = self.arrays(spec)
        act = get_activation(spec.activation)
        value = None if spec.value_activation is None else get_activation(spec.value_activation)
        # copy=False: these float64 arrays are ours, freshly read; one copy per layer is enough
        blk = build_block(arrays, source=str(self.tensors[spec.down].file), name=spec.name, activation=act,
                          prefix=spec.name + ".", copy=False, value_activation=value)
        del arrays
        if self.fold_norm and spec.norm is not None:
            blk = self._fold(blk, spec)
        return blk

    def _fold(self, blk: Block, spec: BlockSpec) -> Block:
        """Fold the preceding norm ``y = g ⊙ z + β`` into the up/gate projections.

        ``W (g ⊙ z + β) + b = (W diag g) z + (W β + b)``: the gain scales the columns, the
        norm's bias moves into ``b_up``/``b_gate``. In float64, products of an fp32 (or
        narrower) weight and gain are exact (24 + 24 ≤ 53 significant bits); a gain with an
        offset (Gemma's ``1 + w``) is first rounded to float64 (relative error ≤ 2⁻⁵³), as
        ``1 + w`` of a small fp32 ``w`` may need more bits.
        """
        norm = spec.norm
        assert norm is not None
        g = self.read(norm.weight) + norm.offset
        beta = self.read(norm.bias) if norm.bias is not None else None
        changes: dict[str, np.ndarray] = {}
        for W_key, b_key in (("W_up", "b_up"), ("W_gate", "b_gate")):
            W = getattr(blk, W_key)
            if W is None:
                continue
            if beta is not None:
                b = getattr(blk, b_key)
                shift = matvec(W, beta)
                changes[b_key] = shift if b is None else b + shift
            scaled = _scale_columns(W, g)
            if scaled is not W:
                changes[W_key] = scaled
        return blk.replace(**changes) if changes else blk

    def blocks(self) -> Iterator[Block]:
        """Yield each block in turn, reading only its tensors (one layer in memory at a time
        when the consumer drops each block before asking for the next)."""
        for spec in self.specs:
            yield self.block(spec)

    # ---- descriptions ---------------------------------------------------------------
    def analysed(self, spec: BlockSpec, *, generic: bool = False) -> str:
        """What map is analysed for ``spec``, in one sentence (the JSON's ``analysed``).

        ``generic`` writes the norm's layer number as ``{i}`` (one line for all layers).
        """
        if self.fold_norm and spec.norm is not None:
            norm = spec.norm.describe()
            if generic:
                norm = norm.replace(f".{spec.layer}.", ".{i}.", 1)
            what = (f"the isolated MLP block on normalised inputs with the gain folded in: f(z) = z + B(g ⊙ z"
                    f"{' + β' if spec.norm.bias else ''}), g the gain of the {norm}, with its own identity skip, "
                    "as in the paper (z ranges over all of R^d, not only the sphere the norm outputs)")
        else:
            what = "the isolated MLP block f(x) = x + B(x) with its own identity skip, as in the paper"
        if spec.family in ("onnx", "gguf") and spec.skip is not None:
            return f"the MLP block f(x) = M x + B(x) with the skip M the graph wires around it; {spec.residual}"
        if spec.family == "onnx" and spec.residual.startswith("the graph's residual Add") and "f(x) = x + B(x)" in spec.residual:
            return f"the MLP block f(x) = x + B(x) with the identity skip the graph wires around it; {spec.residual}"
        if spec.family == "manual":
            return f"{what}; the roles were named by hand, so how the model wires this block's residual is not known"
        return f"{what}; {spec.residual}, which is not the paper's setting end to end"

    def describe(self) -> list[str]:
        """Header lines for reports: files, families, activation sources, analysed map."""
        det = self.detection
        lines = [f"checkpoint: {len(self.files)} file{'s' if len(self.files) != 1 else ''}, {len(self.tensors)} tensors"
                 + (f", model_type {det.model_type!r}" if det.model_type else "")
                 + ("" if self.config is not None else ", no config.json")]
        from absorb.io.families import FAMILY_BY_KEY
        for fk in det.families:
            label = FAMILY_BY_KEY[fk].label if fk in FAMILY_BY_KEY else _OTHER_LABELS.get(fk, "roles named by hand")
            specs = [s for s in self.specs if s.family == fk]
            acts = sorted({f"{s.activation}{f' with value activation {s.value_activation}' if s.value_activation else ''} "
                           f"({s.activation_source})" for s in specs})
            lines.append(f"family: {label}: {len(specs)} block{'s' if len(specs) != 1 else ''}; activation {'; '.join(acts)}")
        for s in sorted({self.analysed(s, generic=True) for s in self.specs}):
            lines.append(f"analysed: {s}")
        lines += [f"note: {n}" for n in det.notes]
        return lines


_OTHER_LABELS = {"onnx": "ONNX graph (MatMul/Gemm → activation → MatMul/Gemm, skip from the residual Add)",
                 "gpt_oss": "gpt-oss experts (mlp.experts.gate_up_proj interleaved gate/up, down_proj, biases; MXFP4 or plain)",
                 "gguf": "GGUF (llama.cpp blk.{i}.ffn_*)"}


def open_checkpoint(path: str | os.PathLike[str], *, activation: str | None = None, layers: str | Container[int] | None = None,
                    up: str | None = None, down: str | None = None, gate: str | None = None,
                    fold_norm: bool = False) -> Checkpoint:
    """Open a checkpoint: check every header, refuse quantised weights, find the MLP blocks.

    ``activation`` overrides config.json; ``layers`` (``"0-3,7"`` or a set) keeps those
    layer numbers; ``up``/``down``/``gate`` name the roles by hand (patterns with ``{i}``);
    ``fold_norm`` folds the preceding norm's gain into the up/gate projections.
    Raises :class:`~absorb._errors.InvalidInput` (one line) before any weight is read.
    """
    from absorb._validate import check_path

    p = Path(check_path(path))
    if p.is_file() and not p.name.endswith(".index.json") and sniff(p) in ("onnx", "gguf"):
        return _open_graph_file(p, sniff(p), activation=activation, layers=layers, manual=_manual_roles(up, down, gate),
                                fold_norm=fold_norm)
    files, index, cfg_dir, is_torch = _resolve(p)
    wm = _shard_map(index) if index is not None else None
    if wm is not None:
        assert index is not None
        _check_shards_present(index, wm)
    source: TensorSource | None = None
    stored_config: dict[str, Any] | None = None
    container_notes: list[str] = []
    if is_torch:  # the same TensorInfo records; tensors come from the loaded state_dicts
        tensors, source, files, stored_config, container_notes = read_torch(index or p, files, wm)
    elif wm is not None:
        assert index is not None
        tensors, files = _tensors_of_index(index, wm)
    else:
        tensors = _tensors_of_files(files)
    if not tensors:
        raise InvalidInput(f"{p}: the checkpoint holds no tensors")
    cfg_path = cfg_dir / "config.json"
    config = _read_config(cfg_path)
    if config is None and stored_config is not None:
        config = stored_config
        container_notes.append(f"no config.json: the configuration is {stored_config['__source__']}")
    manual = _manual_roles(up, down, gate)
    if manual is None and is_gpt_oss(tensors):  # stacked, interleaved experts, MXFP4 or plain: absorb/io/gpt_oss.py
        return _open_gpt_oss(p, tensors, files, config, cfg_path=cfg_path, source=source, activation=activation, layers=layers,
                             fold_norm=fold_norm, notes=container_notes)
    _refuse_quantised(tensors, config, source=str(p), cfg_path=cfg_path)
    if manual is not None:  # rows of fused tensors named by hand: NAME[:half], NAME[1::2], ...
        tensors, source = _row_selections(tensors, source, manual)
    layer_set = parse_layers(layers) if isinstance(layers, str) else layers
    det = detect({n: t.shape for n, t in tensors.items()}, config, source=str(p), activation=activation, manual=manual,
                 layers=layer_set, fold_norm=fold_norm)
    for spec in det.blocks:
        _check_spec(spec, tensors, p, activation=activation, fold_norm=fold_norm)
    if container_notes:
        det = replace(det, notes=tuple(container_notes) + det.notes)
    return Checkpoint(p, tensors, tuple(files), config, det, fold_norm=fold_norm, source=source)


def _open_gpt_oss(p: Path, tensors: dict[str, TensorInfo], files: list[Path], config: dict[str, Any] | None, *, cfg_path: Path,
                  source: TensorSource | None, activation: str | None, layers: str | Container[int] | None, fold_norm: bool,
                  notes: list[str]) -> Checkpoint:
    """A gpt-oss checkpoint: one block per expert of every layer (absorb/io/gpt_oss.py)."""
    from absorb.io.gpt_oss import read_gpt_oss

    if fold_norm:
        raise InvalidInput(f"{p}: a gpt-oss checkpoint: --fold-norm is not supported for its experts; drop --fold-norm")
    inner = source if source is not None else SafetensorsSource()
    tensors, src, det = read_gpt_oss(p, tensors, config, inner=inner, cfg_path=cfg_path, activation=activation)
    layer_set = parse_layers(layers) if isinstance(layers, str) else layers
    det = replace(det, blocks=tuple(select_layers(list(det.blocks), layer_set, source=str(p))), notes=tuple(notes) + det.notes)
    for spec in det.blocks:
        _check_spec(spec, tensors, p, activation=None, fold_norm=False)
    return Checkpoint(p, tensors, tuple(files), config, det, fold_norm=False, source=src)


def _open_graph_file(p: Path, kind: str, *, activation: str | None, layers: str | Container[int] | None,
                     manual: ManualRoles | None, fold_norm: bool) -> Checkpoint:
    """An ONNX model or a GGUF file: blocks found by their own readers (absorb/io/onnx_model.py, gguf_file.py)."""
    what = "an ONNX model" if kind == "onnx" else "a GGUF file"
    if manual is not None:
        raise InvalidInput(f"{p}: {what}: --up/--down/--gate name tensors of a safetensors or PyTorch checkpoint; "
                           f"{what}'s blocks are found from its {'graph' if kind == 'onnx' else 'tensor names and metadata'}")
    if fold_norm:
        raise InvalidInput(f"{p}: {what}: --fold-norm is not supported for it; drop --fold-norm")
    if kind == "onnx":
        from absorb.io.onnx_model import read_onnx

        tensors, source, det = read_onnx(p, activation=activation)
    else:
        from absorb.io.gguf_file import read_gguf

        tensors, source, det = read_gguf(p, activation=activation)
    layer_set = parse_layers(layers) if isinstance(layers, str) else layers
    det = replace(det, blocks=tuple(select_layers(list(det.blocks), layer_set, source=str(p))))
    for spec in det.blocks:
        _check_spec(spec, tensors, p, activation=activation, fold_norm=False)
    return Checkpoint(p, tensors, (p,), None, det, fold_norm=False, source=source)


class _RowsSource:
    """Rows of stored tensors (``NAME[:half]``, ``NAME[1::2]``…), read through another source."""

    def __init__(self, inner: TensorSource, base: Mapping[str, TensorInfo]) -> None:
        self.inner = inner
        self.base = dict(base)

    def load(self, info: TensorInfo) -> np.ndarray:
        name, sel = split_slice(info.name)
        if sel is None or info.name in self.base:
            return self.inner.load(self.base[info.name])
        arr = self.inner.load(self.base[name])
        half = arr.shape[0] // 2
        rows = {":half": slice(0, half), "half:": slice(half, None), "0::2": slice(0, None, 2), "1::2": slice(1, None, 2)}[sel]
        return np.ascontiguousarray(arr[rows])  # a copy: the caller owns it


def _row_selections(tensors: dict[str, TensorInfo], source: TensorSource | None,
                    manual: ManualRoles) -> tuple[dict[str, TensorInfo], TensorSource | None]:
    """Add ``NAME[sel]`` entries (weights and their biases) for the row selections the role patterns use."""
    sels = {sel for p in (manual.up, manual.down, manual.gate) if p for sel in [split_slice(p)[1]] if sel}
    if not sels:
        return tensors, source
    out = dict(tensors)
    for name, info in tensors.items():
        if not (name.endswith((".weight", ".bias")) and info.shape and info.shape[0] >= 2):
            continue
        rows = info.shape[0]
        if rows % 2:
            continue  # an odd number of rows has no halves: a pattern naming it then matches nothing
        for sel in sels:
            key = f"{name}[{sel}]"
            out[key] = TensorInfo(key, info.file, info.dtype, (rows // 2,) + info.shape[1:], info.begin, info.end, info.data_start)
    return out, _RowsSource(source if source is not None else SafetensorsSource(), tensors)


def _check_shards_present(index: Path, wm: Mapping[str, Path]) -> None:
    for shard in sorted(set(wm.values())):
        if not shard.is_file():
            names = [n for n, s in wm.items() if s == shard]
            raise InvalidInput(f"{index}: shard {shard.name!r} (holding {names[0]!r}"
                               f"{f' and {len(names) - 1} more' if len(names) > 1 else ''}) is missing; download every shard")


def _tensors_of_index(index: Path, wm: Mapping[str, Path]) -> tuple[dict[str, TensorInfo], list[Path]]:
    """Every tensor of a sharded safetensors checkpoint, each in the shard its index names."""
    shards = sorted(set(wm.values()))
    headers = {shard: read_header(shard)[0] for shard in shards}
    tensors: dict[str, TensorInfo] = {}
    for name, shard in wm.items():
        info = headers[shard].get(name)
        if info is None:
            raise InvalidInput(f"{index}: weight_map puts {name!r} in {shard.name!r}, but that shard holds no such tensor; the index does not match the shards")
        tensors[name] = info
    return tensors, shards


def _tensors_of_files(files: list[Path]) -> dict[str, TensorInfo]:
    """Every tensor of unindexed safetensors files; a name in two files is refused."""
    tensors: dict[str, TensorInfo] = {}
    for f in files:
        hdr, _meta = read_header(f)
        for name, info in hdr.items():
            if name in tensors:
                raise InvalidInput(f"{f}: tensor {name!r} is also in {tensors[name].file.name}; the directory mixes checkpoints")
            tensors[name] = info
    return tensors


def _read_config(cfg_path: Path) -> dict[str, Any] | None:
    config = _read_json(cfg_path, "model config") if cfg_path.is_file() else None
    if config is not None and not isinstance(config, dict):
        raise InvalidInput(f"{cfg_path}: config.json is not a JSON object")
    return config


def _manual_roles(up: str | None, down: str | None, gate: str | None) -> ManualRoles | None:
    if (up is None) != (down is None) or (gate is not None and up is None):
        raise InvalidInput("--up and --down name the roles by hand together (--gate optional); give both or neither")
    return ManualRoles(up=up, down=down, gate=gate) if up is not None and down is not None else None


def _check_spec(spec: BlockSpec, tensors: Mapping[str, TensorInfo], p: Path, *, activation: str | None, fold_norm: bool) -> None:
    """Every tensor the block reads is a plain float; a gated --activation needs a gate."""
    norm = (spec.norm.weight, spec.norm.bias) if fold_norm and spec.norm else ()
    for t in spec.tensors() + tuple(n for n in norm if n):
        info = tensors[t]
        if info.dtype not in FLOAT_DTYPES:
            raise InvalidInput(f"{info.file}: tensor {t!r} is {info.dtype}, not a plain float (F32, F16, BF16); "
                               "quantised or integer weights are not analysed — use the unquantised checkpoint")
    if activation is not None and get_activation(activation).gated_name and not spec.gated:
        raise InvalidInput(f"{p}: --activation {activation} is gated but {spec.name} has no gate projection; "
                           f"give the ungated name (e.g. {get_activation(activation).name})")


def _refuse_quantised(tensors: Mapping[str, TensorInfo], config: Mapping[str, Any] | None, *, source: str, cfg_path: Path) -> None:
    qc = None if config is None else config.get("quantization_config")
    if qc:
        method = qc.get("quant_method", "?") if isinstance(qc, dict) else "?"
        raise InvalidInput(f"{cfg_path}: the model is quantised (quantization_config, quant_method {method!r}); "
                           "its weights are not plain floats — analyse the unquantised checkpoint")
    names = set(tensors)
    for name in sorted(names):
        q = _QUANT.search(name)
        packed_scales = name.endswith(("_scales", ".scales")) and any(n.endswith((".qweight", "_blocks")) for n in names)
        if q or packed_scales:
            kind = ("GPTQ/AWQ" if re.search(r"qweight|qzeros|g_idx|scales$", name) else
                    "FP8" if "scale" in name else "MXFP4" if name.endswith("_blocks") else "bitsandbytes")
            raise InvalidInput(f"{tensors[name].file}: tensor {name!r} marks a quantised ({kind}) checkpoint; its weights are "
                               "not plain floats — analyse the unquantised checkpoint")


__all__ = ["Checkpoint", "SafetensorsSource", "TensorInfo", "TensorSource", "is_checkpoint", "open_checkpoint", "read_header", "torch_refusal"]
