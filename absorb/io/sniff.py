"""What a file is, told from its first bytes (never from its extension alone).

A Lightning ``.ckpt`` is a ``torch.save`` zip, a ``.bin`` may be a PyTorch pickle or a
CTranslate2 model, an ``.npz`` is a zip of ``.npy`` members: the suffix says little. :func:`sniff`
reads at most a few hundred bytes (and, for a zip, its member list) and names the format;
:func:`refusal` is the one-line refusal of a format absorb does not read, naming what it saw
and what it reads; :func:`is_checkpoint` tells a checkpoint from an ``.npz`` block.
"""

from __future__ import annotations

import importlib
import os
import struct
import zipfile
from pathlib import Path
from typing import Any

from absorb._errors import InvalidInput

# What absorb reads, named in every refusal of a file it does not.
READS = ("an .npz block, a .safetensors checkpoint (or its model.safetensors.index.json, or a directory), "
         "a PyTorch file (torch.save state_dict, Lightning .ckpt, trainer or fairseq dict; needs torch), "
         "an ONNX model (needs onnx) or a GGUF file (needs gguf)")

# kind → how a message names it
NAMES = {
    "npz": "a NumPy .npz archive", "safetensors": "a safetensors file", "torch-zip": "a PyTorch zip file (torch.save)",
    "torch-pickle": "a PyTorch legacy pickle file (torch.save)", "gguf": "a GGUF file", "onnx": "an ONNX model",
    "ctranslate2": "a CTranslate2 model", "zip": "a zip archive", "json": "a JSON file", "unknown": "an unrecognised file",
}


def _head(path: Path, k: int = 512) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(k)
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _zip_kind(path: Path) -> str:
    """``torch-zip`` (a ``*/data.pkl`` member), ``npz`` (``.npy`` members), else ``zip``."""
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return "npz" if path.suffix == ".npz" else "zip"  # a damaged npz: its own loader words the damage
    if any(m == "data.pkl" or m.endswith("/data.pkl") for m in members):
        return "torch-zip"
    if members and all(m.endswith(".npy") for m in members):
        return "npz"
    return "npz" if path.suffix == ".npz" else "zip"


def _is_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 10:
        return False
    (hlen,) = struct.unpack("<Q", head[:8])
    return 0 < hlen <= size - 8 and head[8:9] == b"{"


def _is_ctranslate2(head: bytes) -> bool:
    """CTranslate2's ``model.bin``: uint32 binary version, then a uint16-prefixed, NUL-ended spec name."""
    if len(head) < 8:
        return False
    version, = struct.unpack("<I", head[:4])
    (length,) = struct.unpack("<H", head[4:6])
    if not 1 <= version <= 64 or not 2 <= length <= 256 or len(head) < 6 + length:
        return False
    name = head[6:6 + length]
    return name.endswith(b"\0") and name[:-1].isascii() and name[:-1].replace(b"_", b"").isalnum() and b"Spec" in name


def _is_onnx(head: bytes) -> bool:
    """An ONNX ModelProto: protobuf field 1 (ir_version, a varint) first, or a field that a
    ModelProto starts with (producer_name, opset_import, graph)."""
    return len(head) >= 2 and head[0] == 0x08 and 1 <= head[1] <= 20


def sniff(path: Path) -> str:
    """The kind of the file ``path`` (a key of :data:`NAMES`), from its content."""
    if path.is_dir():
        return "dir"
    if path.exists() and not path.is_file():  # a FIFO would block the read, /dev/zero never end it
        raise InvalidInput(f"{path}: not a regular file (a device, pipe or socket); give a file on disk")
    head = _head(path)
    size = path.stat().st_size
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_kind(path)
    if head.startswith(b"GGUF"):
        return "gguf"
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "torch-pickle"
    if _is_safetensors(head, size):
        return "safetensors"
    if _is_ctranslate2(head):
        return "ctranslate2"
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    if path.suffix == ".onnx" or (_is_onnx(head) and path.suffix not in (".bin", ".pt", ".pth", ".ckpt", ".safetensors", ".npz")):
        return "onnx"
    return "unknown"


def is_ctranslate2_dir(path: Path) -> bool:
    """A CTranslate2 model directory: ``model.bin`` in CTranslate2's format."""
    mb = path / "model.bin"
    return mb.is_file() and _is_ctranslate2(_head(mb))


def refusal(path: Path, kind: str, why: str = "") -> InvalidInput:
    """One line: what ``path`` is, why it is not read, and what absorb reads."""
    what = NAMES.get(kind, kind)
    if kind == "ctranslate2":
        why = why or ("its weights are in CTranslate2's own converted (often int8/float16-quantised) layout, "
                      "which absorb does not read; analyse the original Hugging Face checkpoint it was converted from")
    return InvalidInput(f"{path}: {what}{'; ' + why if why else ''}; absorb reads {READS}")


def optional_package(module: str, path: Path, what: str) -> Any:
    """``import module`` (a reader's optional dependency), or InvalidInput naming the file's
    format (``what``: "a GGUF file") and the extra that installs the package."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InvalidInput(f"{path}: {what}, and the {module} package is not installed; pip install {module} "
                           f"(the optional extra absorb[{module}]) to read it") from None


def is_checkpoint(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a checkpoint the readers of :mod:`absorb.io` read (or refuse with a message):
    a directory, an index, or a file whose content (not its name) is not an ``.npz`` block."""
    p = Path(path)
    if p.is_dir() or p.name.endswith(".index.json"):
        return True
    if not p.is_file():
        return p.suffix in (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx")
    return sniff(p) not in ("npz", "zip", "json", "unknown") or p.suffix in (".safetensors", ".bin", ".pt", ".pth", ".ckpt")


__all__ = ["NAMES", "READS", "is_checkpoint", "is_ctranslate2_dir", "optional_package", "refusal", "sniff"]
