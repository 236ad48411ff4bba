"""argparse converters shared by the subcommands: each turns a bad value into argparse's
one-line usage error (exit 2) that names the value."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive(kind: type) -> Callable[[str], object]:
    """A number of ``kind`` (int or float) that must be > 0."""
    def conv(text: str) -> object:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return v
    return conv


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer ≥ ``minimum``."""
    def conv(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be ≥ {minimum}")
        return v
    return conv


def positive_ints(text: str) -> list[int]:
    """A comma-separated list of positive integers, e.g. ``2,3,4``."""
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers, e.g. 2,3,4")
    return vals


def _from_validator(check: Callable[[object], object], kind: type) -> Callable[[str], object]:
    from absorb._errors import InvalidInput

    def conv(text: str) -> object:
        try:
            v = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        try:
            return check(v)
        except InvalidInput as exc:  # "tol = 2 is out of range; ..." → "'2' is out of range; ..."
            msg = str(exc)
            raise argparse.ArgumentTypeError(f"{text!r}{msg[msg.index(' is '):] if ' is ' in msg else ': ' + msg}") from None
    return conv


def tolerance(text: str) -> float:
    """A relative tolerance strictly between 0 and 1 (:func:`absorb._validate.check_tolerance`)."""
    from absorb._validate import check_tolerance
    return _from_validator(check_tolerance, float)(text)  # type: ignore[return-value]


def seconds(text: str) -> float:
    """A finite number of seconds > 0 (:func:`absorb._validate.check_timeout`)."""
    from absorb._validate import check_timeout
    return _from_validator(check_timeout, float)(text)  # type: ignore[return-value]


def seed(text: str) -> int:
    """A seed, an integer in [0, 2^32 − 1] (:func:`absorb._validate.check_seed`)."""
    from absorb._validate import check_seed
    return _from_validator(check_seed, int)(text)  # type: ignore[return-value]


def check_writable(option: str, path: str, source: str | None = None) -> None:
    """Refuse, before any work, an output path that cannot be written: a missing or
    read-only folder, a folder where the file should be, or a special file (a device, FIFO or
    socket, which the atomic write would replace) there (raises InvalidInput); for a symbolic
    link, those of the path it points to. With ``source`` (the input): also the input itself,
    and, in a checkpoint's folder, the JSON files its reading takes (config.json, a shard index)."""
    import os
    from pathlib import Path

    from absorb._errors import InvalidInput
    from absorb.certificate.write import output_target

    out = output_target(path, option)  # a link: where it points is written; a special file refused there
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise InvalidInput(f"{option} {path}: is a folder; give a file name")
    if not parent.is_dir():
        raise InvalidInput(f"{option} {path}: the folder {str(parent)!r} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InvalidInput(f"{option} {path}: no permission to write there; choose another path")
    if source is not None and out.exists():
        src = Path(source)
        folder = src if src.is_dir() else src.parent
        read = out.name == "config.json" or out.name.endswith(".index.json")
        if out.resolve() == src.resolve() or (read and out.parent.resolve() == folder.resolve()):
            raise InvalidInput(f"{option} {path}: would overwrite {'the input' if out.resolve() == src.resolve() else 'a file the input is read with'} "
                               f"({out.name}); choose another path")


def require_pdflatex(option: str) -> None:
    """Refuse a PDF output up front when pdflatex is not on PATH (same advice as the
    certificate writer gives when it finds none)."""
    import shutil

    from absorb._errors import InvalidInput

    if shutil.which("pdflatex") is None:
        raise InvalidInput(f"{option}: pdflatex not found on PATH; install it (Debian/Ubuntu: apt-get install "
                           "texlive-latex-base) or write a .tex or .json file instead")
