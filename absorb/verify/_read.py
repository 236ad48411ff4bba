"""Which recorded fields the checks read: a field that no check of this certificate reads is a claim left unchecked.

The format lists the fields each record may hold, theorem by theorem (:mod:`absorb.verify._load`,
:mod:`absorb.verify._citations`); within a theorem, a case, route or verdict reads only some of them. A field of
another case (a gated argument's ``L_plus`` on the rank route, an absorbable index set's ``robust_bar``, another
model's ``canonical_form``, a stack's ``range_certificate`` under theorem depth) is then in the format but read by
nothing, so whatever it says was accepted. Here every record is wrapped so that reading a key (``[]``, ``get``,
``items``, ``values``, comparing the whole record) marks it; what is left unread after every check, but for what the
format calls descriptive (prose, how the certificate was made), is reported as not re-checked (exit 4).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_SHOWN = re.compile(
    r"\$\.(created|tool|command|paper|reason|input\.path|input\.file_sha256"
    r"|parameters\.(seed|timeout|method|activation_override|checkpoint(\..*)?))"
    r"|.*\.(reason|statement|steps|construction|formula|latex|elapsed)"
    r"|\$\.blocks\[\]\.search\.(method|certificate\.(portfolio|check|iterations))(\..*|\[\].*)?")
"""Paths of the fields that describe, not claim (docs/certificates.md, "What is not a claim"): how the certificate was
made (``absorb verify`` reads ``activation_override`` and ``checkpoint`` to open the model the same way; the arrays it
opens are then checked by their hashes), prose, the search's log."""


class Read(dict):  # type: ignore[type-arg]
    """A record whose reads are marked in ``seen`` (paths as ``$.blocks[].argument.c``)."""

    def __init__(self, record: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__({k: _wrap(v, f"{path}.{k}", seen) for k, v in record.items()})
        self._path, self._seen = path, seen

    def _mark(self, key: object) -> None:
        self._seen.add(f"{self._path}.{key}")

    def __getitem__(self, key: str) -> Any:
        self._mark(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._mark(key)
        return super().get(key, default)

    def items(self) -> Any:
        for key in self:
            self._mark(key)
        return super().items()

    def values(self) -> Any:
        for key in self:
            self._mark(key)
        return super().values()

    def copy(self) -> dict[str, Any]:
        for key in self:
            self._mark(key)
        return dict(super().items())

    def _read_all(self) -> None:
        for key, value in dict.items(self):
            self._mark(key)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Read):
                    item._read_all()

    def __eq__(self, other: object) -> bool:  # (a record compared whole is read whole)
        self._read_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def _wrap(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return Read(value, path, seen)
    if isinstance(value, list):
        return [_wrap(v, f"{path}[]", seen) for v in value]
    return value


def tracked(cert: Any) -> tuple[Any, set[str]]:
    """``cert`` with every record wrapped (:class:`Read`), and the set its reads fill."""
    seen: set[str] = set()
    return (_wrap(cert, "$", seen) if isinstance(cert, dict) else cert), seen


def unread(cert: Any, seen: set[str]) -> list[str]:
    """The paths of the recorded fields no check read (each once, in the order met), descriptive ones aside."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, Read):
            for key, item in dict.items(value):
                path = f"{value._path}.{key}"
                if path not in seen:
                    if not _SHOWN.fullmatch(path) and path not in out:
                        out.append(path)
                else:
                    walk(item)

    walk(cert)
    return out


def audited(verify: Callable[..., Any], cert: Any, *args: Any) -> Any:
    """``verify(cert, *args)`` (a :class:`~absorb.verify._report.Report`) with ``cert``'s reads marked; where it is
    accepted, the fields no check read (:func:`unread`) leave it not fully checked."""
    cert, seen = tracked(cert)
    report = verify(cert, *args)
    if report.accepted and (left := unread(cert, seen)):
        report.unchecked("certificate", "every recorded field is one a check of this certificate reads",
                         f"not read: {', '.join(left)}")
    return report
