"""The ``.npz`` reader (absorb/io/npz.py): an uncompressed member is read straight into its
array, a compressed one through zipfile; both give what np.load gives, and every byte of
every member is under its CRC."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from absorb._errors import InvalidInput
from absorb.io import npz
from absorb.io.npz import _read_all, load_npz


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "a": rng.standard_normal((5, 3)),
        "fortran32": np.asfortranarray(rng.standard_normal((4, 6)).astype(np.float32)),
        "text": np.array("gelu"),
        "empty": np.zeros((0, 3)),
        "big_endian": np.arange(7, dtype=">i4"),
        "scalar": np.array(3.5),
        "half": np.zeros((2, 0, 3), dtype=np.float16),
        "record": np.zeros(3, dtype=[("x", "<f8"), ("y", "<i2")]),
    }


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
@pytest.mark.parametrize("chunk", [npz._CHUNK, 16])  # one read per member, and many
def test_members_read_as_np_load_reads_them(tmp_path: Path, save, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(npz, "_CHUNK", chunk)
    p = tmp_path / "x.npz"
    save(p, **_arrays())
    out = _read_all(p, max_bytes=None)
    with np.load(p) as z:
        ref = {k: z[k] for k in z.files}
    assert list(out) == list(ref)
    for k, want in ref.items():
        got = out[k]
        assert got.dtype == want.dtype and got.shape == want.shape, k
        assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.c_contiguous == want.flags.c_contiguous, k
        assert got.tobytes() == want.tobytes() and got.flags.writeable, k


def _zip_with(path: Path, payload: bytes, name: str = "W_up.npy") -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(name, payload)


def _npy(arr: np.ndarray) -> bytes:
    bio = io.BytesIO()
    np.save(bio, arr)
    return bio.getvalue()


def test_bytes_after_the_data_are_read_and_under_the_crc(tmp_path: Path) -> None:
    """A member may hold bytes after its array (np.load ignores them): they are still part of
    what the CRC covers, so a flipped bit there is found as it is anywhere else."""
    p = tmp_path / "tail.npz"
    _zip_with(p, _npy(np.arange(4.0)) + b"tail")
    assert np.array_equal(_read_all(p, max_bytes=None)["W_up"], np.arange(4.0))
    raw = bytearray(p.read_bytes())
    raw[raw.index(b"tail")] ^= 1
    p.write_bytes(bytes(raw))
    with pytest.raises(InvalidInput, match="member 'W_up.npy' fails its CRC check"):
        _read_all(p, max_bytes=None)


@pytest.mark.parametrize("where", ["header", "last_chunk"])
def test_a_flipped_bit_anywhere_in_a_member_is_named(tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(npz, "_CHUNK", 64)  # the data read in many pieces
    p = tmp_path / "m.npz"
    arr = np.arange(1000, dtype=np.float64)
    np.savez(p, W_up=arr, W_down=arr)
    raw = bytearray(p.read_bytes())
    start = raw.index(b"\x93NUMPY")  # W_up's member
    if where == "header":  # a space of the header's padding made a tab: the header still parses the same
        raw[raw.index(b" \n", start)] = 0x09
    else:  # the last byte of W_up's data
        raw[start + len(_npy(arr)) - 1] ^= 0x01
    p.write_bytes(bytes(raw))
    with pytest.raises(InvalidInput, match="member 'W_up.npy' fails its CRC check; the file is corrupt"):
        _read_all(p, max_bytes=None)


def test_a_member_that_is_not_an_array_is_refused_as_np_load_gives_it(tmp_path: Path) -> None:
    p = tmp_path / "junk.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("notes.txt", b"hello")
        zf.writestr("W_up.npy", _npy(np.ones((2, 3))))
    assert _read_all(p, max_bytes=None)["notes.txt"] == b"hello"
    with pytest.raises(InvalidInput, match="unknown key 'notes.txt'"):
        load_npz(p)


def test_members_whose_elements_are_huge_are_refused_from_their_headers(tmp_path: Path) -> None:
    # a 0-d 800 MB string or record passed the size check (8 bytes an element) and was inflated before its refusal
    for name, arr, msg in (("activation", np.array("x" * (1 << 21)), "key 'activation' holds 8388608 bytes of text"),
                           ("skip", np.zeros((), dtype=[("a", "<f8", (1 << 18,))]), "key 'skip' has dtype")):
        p = tmp_path / f"{name}.npz"
        np.savez_compressed(p, W_up=np.ones((2, 3)), **{name: arr})
        with pytest.raises(InvalidInput, match=msg):
            _read_all(p, max_bytes=None)


def test_a_large_member_that_is_not_an_array_is_refused_unread(tmp_path: Path) -> None:
    # a 1 MB deflated run of zeros inflating to 1 GiB was read whole, only to be refused as an unknown key
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("W_up.npy", _npy(np.ones((2, 3))))
        zf.writestr("readme.txt", bytes(64 << 20))
    with pytest.raises(InvalidInput, match=r"^[^:]*bomb.npz: member 'readme.txt' is not a .npy array and inflates to 67108864 bytes"):
        _read_all(p, max_bytes=None)


def test_a_float32_layer_is_read_as_float32(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    U = rng.standard_normal((40, 8)).astype(np.float32)
    D = rng.standard_normal((8, 40)).astype(np.float32)
    p = tmp_path / "l.npz"
    np.savez(p, W_up=U, W_down=D, activation=np.array("gelu"))
    out = _read_all(p, max_bytes=None)
    assert out["W_up"].dtype == np.float32 and np.array_equal(out["W_up"], U) and np.array_equal(out["W_down"], D)
