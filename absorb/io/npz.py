"""Load and save the contract's ``.npz`` format: one block, or a stack ``blocks.{i}.*``.

Arrays are read with ``allow_pickle=False``. Before any array is read, every member's
``.npy`` header is parsed so that a shape that would not fit in memory, or a header that
promises more data than the member holds (a truncated file), is refused with one line.
"""

from __future__ import annotations

import difflib
import os
import re
import zipfile
import zlib
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

import numpy as np

from absorb._errors import InvalidInput
from absorb._validate import keeps_float32
from absorb.io._validate import BLOCK_KEYS, build_block, resolve_activation, resolve_value_activation
from absorb.model.block import Block, Stack

_STACK_KEY = re.compile(r"^blocks\.(0|[1-9][0-9]*)\.(.+)$")  # (one spelling per index: blocks.01, blocks.١ refused)
_STACK_LIKE = re.compile(r"^blocks\.([^.]*)\.(.+)$")
MAX_BYTES_DEFAULT = None  # None: half of physical memory


def _memory_cap() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def _raise_if_crc(path: Path, exc: zipfile.BadZipFile, member: str | None = None) -> None:
    """The one-line error for a member that fails its CRC check, if ``exc`` is that
    (``member``: its name when the caller knows it, else read from zipfile's message)."""
    if "CRC" not in str(exc):
        return
    if member is None:
        crc = re.match(r"Bad CRC-32 for file '(.+)'", str(exc))
        if crc is None:
            return
        member = crc.group(1)
    raise InvalidInput(f"{path}: member {member!r} fails its CRC check; the file is corrupt") from None


class _Member:
    """One ``.npy`` member as its header describes it (parsed by :func:`_check_headers`)."""

    __slots__ = ("info", "key", "shape", "fortran", "dtype", "header_len", "count", "nbytes")

    def __init__(self, info: zipfile.ZipInfo, shape: tuple[int, ...], fortran: bool, dtype: np.dtype, header_len: int) -> None:
        self.info, self.key, self.shape, self.fortran, self.dtype = info, info.filename[:-4], shape, fortran, dtype
        self.header_len = header_len
        self.count = int(np.prod(shape, dtype=object))
        self.nbytes = self.count * dtype.itemsize


def _check_headers(path: Path, zf: zipfile.ZipFile, max_bytes: int) -> list[_Member]:
    total = 0
    members = []
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            continue
        key = info.filename[:-4]
        try:
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = reader(fh)
                header_len = fh.tell()
        except zipfile.BadZipFile as exc:
            _raise_if_crc(path, exc, info.filename)
            raise InvalidInput(f"{path}: member {key!r} is not a valid .npy array ({exc}); re-save the file with numpy.savez") from None
        except (ValueError, OSError, EOFError) as exc:
            raise InvalidInput(f"{path}: member {key!r} is not a valid .npy array ({exc}); re-save the file with numpy.savez") from None
        if dtype.hasobject:
            raise InvalidInput(f"{path}: key {key!r} is an object array; store plain numeric arrays (objects are never unpickled)")
        count = int(np.prod(shape, dtype=object))
        need = count * dtype.itemsize
        if dtype.kind == "V" and need > _OTHER_MAX:  # (refused later all the same: here before its bytes are inflated)
            raise InvalidInput(f"{path}: key {key!r} has dtype {str(dtype)[:60]} (records or raw bytes); store plain numeric arrays")
        if dtype.kind in "US" and need > _OTHER_MAX:  # (a name or an expression: a few hundred characters)
            raise InvalidInput(f"{path}: key {key!r} holds {need} bytes of text; an activation is a name or an "
                               "expression of a few hundred characters")
        if header_len + need > info.file_size:
            raise InvalidInput(f"{path}: key {key!r} promises shape {shape} ({need} bytes) but holds only {info.file_size - header_len}; the file is truncated or corrupt")
        kept32 = key.rsplit(".", 1)[-1] in ("W_up", "W_down", "W_gate") and keeps_float32(dtype, shape)
        total += count * max(4 if kept32 else 8, dtype.itemsize)  # (as held once loaded: large float32 weights stay float32)
        members.append(_Member(info, shape, fortran, dtype, header_len))
    if total > max_bytes:
        raise InvalidInput(f"{path}: the arrays need {total / 2**30:.1f} GiB once loaded, more than the {max_bytes / 2**30:.1f} GiB allowed; "
                           "check the shapes or analyse the model layer by layer from a checkpoint")
    return members


_CHUNK = 8 << 20
"""Bytes read (and added to the CRC) at a time by :func:`_read_stored`."""


def _stored_offset(fh: BinaryIO, info: zipfile.ZipInfo) -> int | None:
    """Where an uncompressed, unencrypted member's bytes start in the file, from its local
    header; None for any other member, or a local header that does not read as zipfile
    would read it (the caller then reads the member through zipfile, which names the fault)."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 or info.compress_size != info.file_size:
        return None
    fh.seek(info.header_offset)
    head = fh.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
    name = fh.read(name_len)
    if name.decode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace") != info.orig_filename:
        return None
    return info.header_offset + 30 + name_len + extra_len


def _read_into(path: Path, fh: BinaryIO, buf: memoryview, crc: int, name: str) -> int:
    """Fill ``buf`` from ``fh``, :data:`_CHUNK` bytes at a time, and return ``crc`` continued
    over them, each chunk summed right after it is read, while it is in cache. (Summing each
    chunk in a second thread while the next is read was tried: on the shared 2-core machine
    it saved no time and cost more system time.)"""
    for a in range(0, len(buf), _CHUNK):
        piece = buf[a:a + _CHUNK]
        if fh.readinto(piece) != len(piece):
            raise InvalidInput(f"{path}: member {name!r} ends before its data does; the file is truncated or corrupt")
        crc = zlib.crc32(piece, crc)
    return crc


def _read_stored(path: Path, fh: BinaryIO, m: _Member, start: int) -> np.ndarray:
    """An uncompressed member read straight into its array: one copy from the file, a chunk
    at a time, each chunk added to the CRC as it is read (:func:`_read_into`; np.load
    reads through zipfile's buffers and copies each piece twice more). The CRC covers the
    whole member (its ``.npy`` header and any bytes after the data too) and is compared
    before the array is returned."""
    info = m.info
    arr = np.empty(m.count, dtype=m.dtype)
    fh.seek(start)
    crc = zlib.crc32(fh.read(m.header_len))
    if m.nbytes:
        crc = _read_into(path, fh, memoryview(arr.view(np.uint8)), crc, info.filename)
    rest = info.file_size - m.header_len - m.nbytes
    while rest > 0:
        tail = fh.read(min(rest, _CHUNK))
        if not tail:
            raise InvalidInput(f"{path}: member {info.filename!r} ends before its data does; the file is truncated or corrupt")
        crc, rest = zlib.crc32(tail, crc), rest - len(tail)
    if crc != info.CRC:
        raise InvalidInput(f"{path}: member {info.filename!r} fails its CRC check; the file is corrupt")
    if m.fortran:
        arr.shape = m.shape[::-1]
        return arr.transpose()
    arr.shape = m.shape
    return arr


def _sequential(fh: BinaryIO) -> None:
    """Tell the kernel the file will be read from start to end (``POSIX_FADV_SEQUENTIAL``: a
    larger read-ahead), where it takes hints. A 7B-sized layer's 344 MiB no longer in the page
    cache were read in about half the time with it (median of five, 1.0 s against 1.9 s)."""
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except OSError:  # pragma: no cover - a file system that takes no hints
            pass


_OTHER_MAX = 1 << 20  # (bytes: a member that is not a .npy array is read, to be named in the refusal, up to this size)


def _read_all(path: Path, *, max_bytes: int | None) -> dict[str, np.ndarray]:
    """Every member of the archive, as np.load gives them (a ``.npy`` member as its array,
    under its name without ``.npy``, read with ``allow_pickle=False``; any other member as
    its bytes), after all headers were checked (:func:`_check_headers`). An uncompressed
    ``.npy`` member (``numpy.savez``) is read straight into its array (:func:`_read_stored`);
    a compressed one (``numpy.savez_compressed``) through zipfile, as np.load reads it.
    Either way every member's CRC is checked, once, as it is read."""
    if not path.exists():
        raise InvalidInput(f"{path}: no such file")
    if path.is_dir():
        raise InvalidInput(f"{path}: is a directory; give a .npz file (checkpoint directories are read by the safetensors loader)")
    if not path.is_file():  # a device, a FIFO, a socket: reading it could block forever or never end
        raise InvalidInput(f"{path}: is not a regular file (a device, pipe or socket); save the weights to a file with numpy.savez")
    with ExitStack() as stack:
        try:
            fh = stack.enter_context(open(path, "rb"))
            _sequential(fh)
            zf = stack.enter_context(zipfile.ZipFile(fh))
            members = {m.info.filename: m for m in _check_headers(path, zf, max_bytes or _memory_cap())}
        except zipfile.BadZipFile:
            raise InvalidInput(f"{path}: not an .npz file (not a zip archive); save the weights with numpy.savez(path, W_up=..., W_down=...)") from None
        except (OSError, EOFError) as exc:
            raise InvalidInput(f"{path}: cannot be read ({exc})") from None
        out: dict[str, np.ndarray] = {}
        try:
            for info in zf.infolist():
                m = members.get(info.filename)
                if m is None:
                    if info.file_size > _OTHER_MAX:  # (not inflated to be refused: a 1 MB member may inflate to 1 GiB)
                        raise InvalidInput(f"{path}: member {info.filename!r} is not a .npy array and inflates to "
                                           f"{info.file_size} bytes; an .npz block holds numpy arrays only (numpy.savez)")
                    out[info.filename] = zf.read(info)  # type: ignore[assignment]  # (as np.load: refused as an unknown key)
                    continue
                start = _stored_offset(fh, m.info)
                if start is not None:
                    out[m.key] = _read_stored(path, fh, m, start)
                else:
                    with zf.open(m.info) as member:
                        out[m.key] = np.lib.format.read_array(member, allow_pickle=False)
        except InvalidInput:
            raise
        except ValueError as exc:
            raise InvalidInput(f"{path}: {exc}; store plain numeric arrays") from None
        except zipfile.BadZipFile as exc:
            _raise_if_crc(path, exc)
            raise InvalidInput(f"{path}: not a readable .npz file ({exc})") from None
        except (OSError, EOFError) as exc:
            raise InvalidInput(f"{path}: not a readable .npz file ({exc})") from None
        return out


def _unknown_key(path: Path, key: str, valid: tuple[str, ...]) -> InvalidInput:
    m = _STACK_KEY.match(key)
    prefix, bare = (f"blocks.{m.group(1)}.", m.group(2)) if m else ("", key)
    same_case = [v for v in valid if v.lower() == bare.lower()]  # w_down → W_down before any near miss (b_down)
    close = same_case or difflib.get_close_matches(bare, valid, n=1, cutoff=0.6)
    hint = f" (did you mean {prefix + close[0]!r}?)" if close else ""
    return InvalidInput(f"{path}: unknown key {key!r}{hint}; expected {', '.join(valid)} or blocks.<i>.<key> for a stack")


def orientation_note(model: Block | Stack, source: str) -> str | None:
    """One line when the weights may be stored transposed, else None.

    ``W_up`` is read as (n, d) (``nn.Linear``: out × in). When that makes the hidden width
    n smaller than the model dimension d, and no bias or skip pins which side is which (the
    transposed arrays would read just as well, as d = n and n = d), the user has probably
    saved ``x @ W`` matrices (in × out); the line says how the file was read and how to
    pass the other orientation.
    """
    blocks = model.blocks if isinstance(model, Stack) else (model,)
    for b in blocks:
        pinned = any(getattr(b, k) is not None for k in ("b_up", "b_gate", "b_down", "skip")) or b.hc is not None
        if b.n < b.d and not pinned:
            where = "" if b.name == "block" else f"{b.name}: "
            return (f"{source}: {where}note: W_up {tuple(b.W_up.shape)} was read as nn.Linear (out, in): n = {b.n} hidden "
                    f"units < d = {b.d}; if the arrays are stored as x @ W (in, out), save W_up.T and W_down.T"
                    f"{' and W_gate.T' if b.W_gate is not None else ''} instead")
    return None


def blocks_from_arrays(data: Mapping[str, np.ndarray], *, source: str, activation: str | None = None,
                       copy: bool = True) -> Block | Stack:
    """Build a block or stack from a flat mapping of the contract's keys (``copy=False``:
    the arrays are the caller's to give away, as :func:`load_npz`'s freshly read ones)."""
    path = Path(source)
    stacked: dict[int, dict[str, np.ndarray]] = {}
    top: dict[str, np.ndarray] = {}
    for key, arr in data.items():
        m = _STACK_KEY.match(key)
        loose = None if m else _STACK_LIKE.match(key)
        if loose and loose.group(2) in BLOCK_KEYS:
            raise InvalidInput(f"{source}: key {key!r}: the block index {loose.group(1)!r} is not written 0, 1, 2, … "
                               f"(ASCII digits, no leading zero); rename it blocks.<i>.{loose.group(2)}")
        if m:
            sub = m.group(2)
            if sub not in BLOCK_KEYS:
                raise _unknown_key(path, key, BLOCK_KEYS)
            stacked.setdefault(int(m.group(1)), {})[sub] = arr
        elif key in BLOCK_KEYS:
            top[key] = arr
        else:
            raise _unknown_key(path, key, BLOCK_KEYS)
    if not stacked:
        if not top:
            raise InvalidInput(f"{source}: the file holds no arrays; a block needs W_up (n, d) and W_down (d, n)")
        act = resolve_activation(top.get("activation"), activation, source=source)
        return build_block(top, source=source, name="block", activation=act, copy=copy,
                           value_activation=resolve_value_activation(top.get("value_activation"), source=source))
    stray = sorted(set(top) - {"activation", "value_activation"})
    if stray:
        raise InvalidInput(f"{source}: key {stray[0]!r} sits beside blocks.<i>.* keys; put it under each block (blocks.<i>.{stray[0]}) or drop the blocks.* keys")
    idx = sorted(stacked)
    if idx != list(range(len(idx))):
        missing = next(i for i, j in enumerate(idx) if i != j)  # (the first gap: idx is sorted, distinct, ≥ 0)
        raise InvalidInput(f"{source}: stack indices must run 0..L-1 without gaps; missing blocks.{missing}.*")
    blocks = []
    for i in idx:
        arrs = stacked[i]
        act = resolve_activation(arrs.get("activation", top.get("activation")), activation, source=source,
                                 key=f"blocks.{i}.activation" if "activation" in arrs else "activation")
        vkey = f"blocks.{i}.value_activation" if "value_activation" in arrs else "value_activation"
        value = resolve_value_activation(arrs.get("value_activation", top.get("value_activation")), source=source, key=vkey)
        blocks.append(build_block(arrs, source=source, name=f"blocks.{i}", activation=act, prefix=f"blocks.{i}.", copy=copy,
                                  value_activation=value))
    d0 = blocks[0].d
    for b in blocks[1:]:
        if b.d != d0:
            raise InvalidInput(f"{source}: {b.name} has model dimension d = {b.d} but blocks.0 has d = {d0}; a stack needs one d throughout")
    return Stack(tuple(blocks))


def load_npz(path: str | os.PathLike[str], *, activation: str | None = None, max_bytes: int | None = MAX_BYTES_DEFAULT) -> Block | Stack:
    """Load one block or a stack from an ``.npz`` file (the keys are in docs/user-guide.md, "Input: .npz").

    ``activation`` overrides the file's ``activation`` key. Raises
    :class:`~absorb._errors.InvalidInput` with a one-line message on any bad input.
    """
    from absorb._validate import check_path

    p = Path(check_path(path))
    data = _read_all(p, max_bytes=max_bytes)
    if not data:
        raise InvalidInput(f"{p}: the file holds no arrays; a block needs W_up (n, d) and W_down (d, n)")
    return blocks_from_arrays(data, source=str(p), activation=activation, copy=False)


def save_npz(path: str | os.PathLike[str], model: Block | Stack, *, activation: str | None = None) -> None:
    """Write a block or stack in the contract's format (HC-lifted blocks are written lifted)."""
    from absorb._validate import check_path

    check_path(path)
    if not isinstance(model, (Block, Stack)):
        raise InvalidInput(f"save_npz needs an absorb.Block or absorb.Stack, got a {type(model).__name__}")
    blocks = model.blocks if isinstance(model, Stack) else (model,)
    out: dict[str, np.ndarray] = {}
    for i, b in enumerate(blocks):
        pre = "" if isinstance(model, Block) else f"blocks.{i}."
        for key, arr in b.arrays().items():
            out[pre + key] = arr
        out[pre + "activation"] = np.array(activation or (b.activation.gated_name or b.activation.name))
        if not b.value_identity:
            out[pre + "value_activation"] = np.array(b.value_activation.name)
    np.savez(path, **out)
