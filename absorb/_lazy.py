"""Lazy public names for a package (PEP 562): imported on first use.

Keeps ``absorb --help``, usage errors and ``import absorb`` from loading numpy, sympy and scipy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: name → the module that defines it
    (``"module:attr"`` when it is defined there under another name).

    A resolved name is cached in the package's ``namespace`` (its ``globals()``).
    """
    def __getattr__(name: str) -> Any:
        if name in exports:
            module, _, attr = exports[name].partition(":")
            value = getattr(importlib.import_module(module), attr or name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
