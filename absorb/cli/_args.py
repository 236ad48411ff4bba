"""argparse converters shared by the subcommands: each turns a bad value into argparse's
one-line usage error (exit 2) that names the value."""

from __future__ import annotations

import argparse
from typing import Callable


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
