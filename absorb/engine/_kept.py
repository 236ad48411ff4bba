"""Answers kept for one decision: the screens of a block ask some questions up to three times (the nearly antipodal
pairs, the sampled reach, the pair screens' projection of a layer's rows), each an expensive pass over the weights.

Each name keeps its last answer, by the object it is about (its identity, held weakly) and the other arguments;
:func:`forget` drops them all when a decision starts (a frozen Block's arrays are writable: one changed in place since
would otherwise read a stale answer). Imports nothing of the engine, so that any screen module may use it."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_kept: dict[str, tuple[weakref.ref, object, object]] = {}


def kept(name: str, obj: object) -> tuple[object, object] | None:
    """(args, answer) kept under ``name`` for this very object, or None."""
    got = _kept.get(name)
    return (got[1], got[2]) if got is not None and got[0]() is obj else None


def recall(name: str, obj: object, args: object, compute: Callable[[], T]) -> T:
    """``compute()``, or the answer kept under ``name`` for the same object and ``args``."""
    got = kept(name, obj)
    if got is not None and got[0] == args:
        return got[1]  # type: ignore[return-value]
    out = compute()
    try:
        _kept[name] = (weakref.ref(obj), args, out)
    except TypeError:  # (not an object a weak reference can name)
        pass
    return out


def forget() -> None:
    """Drop the kept answers (a decision starts afresh)."""
    _kept.clear()
