"""A persistent cache of the analysis of users' ``expr:`` activations, on disk.

The analysis of a custom activation (its proof of being real and finite, and every property
of :data:`absorb.symbolic.properties.ANALYSES`) costs sympy's import and its work, about a
second or two, on every run. It depends only on the expression and on the code that
analyses it, so its outcome is stored once: the expression's sympy form (as ``srepr`` text,
as :mod:`absorb.symbolic._builtin_facts` stores the built-ins') and every property, as
plain literals. A later run of the same expression reads the entry and, like a built-in,
needs no sympy where the decision does not. An entry may also hold ``extras``: products of the same
code derived from the expression alone (the trusted stretches of σ's sample of the real line,
:mod:`absorb.model._samples`), named lists of short integer lists, sealed with the rest.

Soundness: an entry is only the stored result of the same proof code on the same
expression. Its key hashes the canonical parse tree of the expression with the analysis
code itself (every source file of ``absorb/model`` and ``absorb/symbolic``), the versions
of sympy and mpmath and Python's; any change to either gives a new key. An entry that does
not parse, does not match its key, or has an unexpected shape is ignored (and overwritten).

Where: ``$ABSORB_CACHE_DIR`` when set (``off``, ``0``, ``no``, ``false`` or the empty string
turn the cache off), else ``$XDG_CACHE_HOME/absorb``, else ``~/.cache/absorb``; entries are
``expr-<key>.json`` files under ``analysis/``. A missing or read-only directory never fails a
run: the cache is then silently skipped. Writes are atomic (a temporary file, then
``os.replace``). Deleting the directory clears it.

Sealed: every entry carries an HMAC-SHA256 of its content under a random key this cache
keeps in ``analysis/.key`` (created, 0600, by the first write). An entry edited by hand,
copied from another machine's cache, or written with a lost key fails its seal and is ignored
(and analysed afresh), so a changed fact cannot reach a verdict. The cache is trusted as
far as the directory is: whoever can rewrite the key can forge entries, as whoever can
rewrite the installed package can change its proofs. ``absorb verify`` never reads it (the
checker re-derives every recorded property of σ on its own), and ``absorb check --no-cache``
or ``ABSORB_CACHE_DIR=off`` does without it.

Generic on purpose: this module imports nothing heavy (no sympy, no numpy); callers convert
Properties to literals (:func:`absorb.symbolic.facts.dump`) and back.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import hmac
import json
import os
import re
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "directory", "enabled", "extra_for", "facts_for", "read", "register", "store", "store_extra", "write"]

FORMAT = 1
"""The entry format (part of every key)."""
MAX_ENTRY_BYTES = 4 << 20
"""Larger files are not read (a corrupt or foreign file)."""
_OFF = {"", "0", "off", "no", "false", "none"}
_STATUSES = {"proved", "refuted", "unknown"}

_disabled_here = False
_lock = threading.Lock()
_code_digest: str | None = None
_registered: dict[str, tuple[str, str, dict[str, Any] | None]] = {}
"""An activation's key (its srepr) → (canonical expression, the user's text, the entry read for it or None)."""
_extras: dict[str, dict[str, Any]] = {}
"""An activation's key → the extras (:func:`store_extra`) this process computed for it, written with its entry."""


def disable() -> None:
    """Turn the cache off for this process (``--no-cache``)."""
    global _disabled_here
    _disabled_here = True


def directory() -> Path | None:
    """The cache's directory (``…/analysis``), or None when the cache is turned off."""
    if _disabled_here:
        return None
    env = os.environ.get("ABSORB_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in _OFF:
            return None
        root = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = Path(xdg) / "absorb" if xdg and os.path.isabs(xdg) else Path.home() / ".cache" / "absorb"
    return root / "analysis"


def enabled() -> bool:
    return directory() is not None


def _version_of(package: str, relative: str) -> str:
    """The text of a file of ``package`` that states its version, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return "absent"
        path = Path(next(iter(spec.submodule_search_locations))) / relative
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ImportError, ValueError, StopIteration):
        return "unknown"


def code_digest() -> str:
    """A hash of the analysis code (every source file of absorb/model and absorb/symbolic) and
    of the versions of sympy, mpmath and Python: part of every key."""
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        here = Path(__file__).parent
        for sub in ("model", "symbolic"):
            for name in sorted(n for n in os.listdir(here / sub) if n.endswith(".py")):  # (no glob: its regex costs 15 ms)
                h.update(name.encode() + b"\0" + (here / sub / name).read_bytes() + b"\0")
        h.update(_version_of("sympy", "release.py").encode())
        h.update(_version_of("mpmath", "__init__.py").encode())
        h.update(f"{sys.version_info[:3]} format {FORMAT}".encode())
        _code_digest = h.hexdigest()
    return _code_digest


def key(canonical: str) -> str:
    """The key of the entry of the expression whose canonical text is ``canonical``."""
    return hashlib.sha256((code_digest() + "\0" + canonical).encode()).hexdigest()[:40]


# ----- validation of an entry read from disk: nothing in it is trusted -------------------
_ALLOWED_NODES = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.Constant, ast.keyword, ast.UnaryOp, ast.USub,
                  ast.Tuple, ast.List)


_NAME_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_STRING_TAKERS = {"Symbol": _NAME_TEXT, "Dummy": _NAME_TEXT, "Float": _NUMBER_TEXT}
"""The only calls whose first argument may be a string, and what that string must look like:
a name, or a decimal number (as srepr writes Symbol('x'), Float('0.5', precision=53))."""


def _safe_srepr(text: Any) -> bool:
    """``text`` is srepr-like: calls of plain names (none of Python's builtins, none starting
    with ``_``) on literals, a string only as a Symbol's name or a Float's digits; so that
    parsing it later (sympy's sympify evaluates its input, and the string argument of a call
    such as ``S("…")`` as Python) runs nothing but sympy constructors."""
    if not isinstance(text, str) or len(text) > 100_000:
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    allowed_strings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _STRING_TAKERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                    and _STRING_TAKERS[node.func.id].fullmatch(first.value):
                allowed_strings.add(id(first))
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            return False
        if isinstance(node, ast.Name) and (node.id.startswith("_") or hasattr(builtins, node.id)):
            return False
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            return False
        if isinstance(node, ast.Constant) and not isinstance(node.value, (str, int, float, bool, type(None))):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in allowed_strings:
            return False
    return True


def _literal_ok(v: Any) -> bool:
    if isinstance(v, dict):
        return set(v) == {"srepr"} and _safe_srepr(v["srepr"])
    return v is None or isinstance(v, (str, int, float, bool))


def _fact_ok(d: Any) -> bool:
    if not isinstance(d, dict) or set(d) != {"name", "status", "statement", "value", "steps", "witness"}:
        return False
    if not (isinstance(d["name"], str) and d["status"] in _STATUSES and isinstance(d["statement"], str)):
        return False
    if not (isinstance(d["steps"], list) and all(isinstance(s, str) for s in d["steps"])):
        return False
    parts = [d["value"]] + ([d["witness"]] if d["witness"] is not None else [])
    return all(isinstance(part, dict) and all(isinstance(k, str) and _literal_ok(v) for k, v in part.items())
               for part in parts)


_MAX_EXTRA_ITEMS = 1 << 16


def _extras_ok(extras: Any) -> bool:
    """An entry's extras: named lists of short lists of integers (:func:`store_extra`)."""
    return isinstance(extras, dict) and all(
        isinstance(k, str) and _NAME_TEXT.fullmatch(k) and isinstance(v, list) and len(v) <= _MAX_EXTRA_ITEMS
        and all(isinstance(row, list) and len(row) <= 4 and all(type(i) is int for i in row) for row in v)
        for k, v in extras.items())


def _valid(entry: Any, canonical: str) -> bool:
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key(canonical):
        return False
    if not set(entry) <= {"format", "key", "expression", "text", "srepr", "facts", "extras"}:
        return False
    if "extras" in entry and not _extras_ok(entry["extras"]):
        return False
    if entry.get("expression") != canonical or not isinstance(entry.get("text"), str):
        return False
    if not _safe_srepr(entry.get("srepr")):
        return False
    facts = entry.get("facts")
    return isinstance(facts, dict) and bool(facts) and all(isinstance(k, str) and _fact_ok(d) for k, d in facts.items())


# ----- the seal ----------------------------------------------------------------------------
_KEY_BYTES = 32


def _read_small(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` when it holds at most ``limit``, else None (missing, too large, or not a
    regular file: a FIFO or a device there would block or never end). Opened without blocking, checked on the open
    descriptor (what was opened is what is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _secret(where: Path, create: bool) -> bytes | None:
    """This cache's sealing key (``where/.key``): read, or with ``create`` made first (random,
    mode 0600, linked into place so that two processes racing agree on one key); None when
    absent, malformed or unwritable."""
    path = where / ".key"
    if os.path.lexists(path):
        data = _read_small(path, _KEY_BYTES)
        return data if data is not None and len(data) == _KEY_BYTES else None
    if not create:
        return None
    tmp = None
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".key-", suffix=".tmp")  # (mode 0600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(_KEY_BYTES))
        try:
            os.link(tmp, path)  # (fails if another process made one first: use that)
        except FileExistsError:
            pass
        data = _read_small(path, _KEY_BYTES)
        return data if data is not None and len(data) == _KEY_BYTES else None
    except OSError:
        return None
    finally:
        _discard(tmp)


def _discard(tmp: str | None) -> None:
    """Remove a temporary file left by a write that did not complete (quietly)."""
    if tmp is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _seal(entry: dict[str, Any], secret: bytes) -> str:
    """The HMAC-SHA256 of the entry's content (every field but the seal, as sorted JSON)."""
    body = json.dumps({k: v for k, v in entry.items() if k != "seal"}, ensure_ascii=False, sort_keys=True)
    return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()


# ----- reading and writing ------------------------------------------------------------------
def read(canonical: str) -> dict[str, Any] | None:
    """The validated entry of the expression ``canonical`` ({"text", "srepr", "facts", …}), or
    None (cache off, no entry, an unreadable, corrupt or foreign one)."""
    where = directory()
    if where is None:
        return None
    data = _read_small(where / f"expr-{key(canonical)}.json", MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        entry = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not (isinstance(entry, dict) and isinstance(entry.get("seal"), str)):
        return None
    secret = _secret(where, create=False)
    if secret is None or not hmac.compare_digest(entry["seal"], _seal(entry, secret)):
        return None  # edited, foreign, or written under another key
    entry = {k: v for k, v in entry.items() if k != "seal"}
    return entry if _valid(entry, canonical) else None


def write(canonical: str, text: str, srepr: str, facts: dict[str, Any], extras: dict[str, Any] | None = None) -> bool:
    """Store an entry (atomically); False, silently, when the cache is off or cannot be written."""
    where = directory()
    if where is None:
        return False
    entry = {"format": FORMAT, "key": key(canonical), "expression": canonical, "text": text, "srepr": srepr,
             "facts": facts, **({"extras": extras} if extras else {})}
    if not _valid(entry, canonical):  # what could not be read back is not written
        return False
    tmp = None
    try:
        where.mkdir(parents=True, exist_ok=True)
        secret = _secret(where, create=True)
        if secret is None:
            return False
        data = json.dumps({**entry, "seal": _seal(entry, secret)}, ensure_ascii=False, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".expr-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, where / f"expr-{entry['key']}.json")
        tmp = None
        return True
    except (OSError, ValueError, TypeError):
        return False
    finally:
        _discard(tmp)


# ----- the link from an Activation (its key) to its entry ---------------------------------
def register(act_key: str, canonical: str, text: str, entry: dict[str, Any] | None) -> None:
    """Remember that the activation whose key is ``act_key`` is the user's expression
    ``canonical`` (read from the cache as ``entry``, or None when it was analysed afresh)."""
    with _lock:
        _registered[act_key] = (canonical, text, entry)


def _entry_for(act_key: str) -> dict[str, Any] | None:
    """The validated entry of the registered activation ``act_key`` (read when it was registered, else now), or None."""
    with _lock:
        reg = _registered.get(act_key)
    if reg is None or not enabled():
        return None
    canonical, _text, entry = reg
    if entry is None:
        entry = read(canonical)
    return None if entry is None or entry["srepr"] != act_key else entry


def facts_for(act_key: str) -> dict[str, Any] | None:
    """The cached properties (literals, as :func:`absorb.symbolic.facts.dump` writes them) of
    the registered activation ``act_key``, or None."""
    entry = _entry_for(act_key)
    return None if entry is None else entry["facts"]


def store(act_key: str, facts: dict[str, Any]) -> bool:
    """Store the properties of the registered activation ``act_key``, with the extras this process computed for it
    (False when it is not registered, or the cache is off or cannot be written)."""
    with _lock:
        reg = _registered.get(act_key)
        extras = dict(_extras.get(act_key, {}))
    if reg is None:
        return False
    canonical, text, _entry = reg
    return write(canonical, text, act_key, facts, extras)


def extra_for(act_key: str, name: str) -> Any:
    """The extra ``name`` stored with the entry of the registered activation ``act_key`` (:func:`store_extra`), or
    None."""
    entry = _entry_for(act_key)
    return None if entry is None else entry.get("extras", {}).get(name)


def store_extra(act_key: str, name: str, value: list[list[int]]) -> bool:
    """Store ``value`` (a list of short lists of integers: a product of the same analysis code, derived from σ alone)
    as the extra ``name`` of the registered activation ``act_key``: added to its entry now when there is one, else
    with its properties when :func:`store` writes them. False when it is not written now."""
    with _lock:
        _extras.setdefault(act_key, {})[name] = value
        reg = _registered.get(act_key)
    if reg is None or not enabled():
        return False
    canonical, text, _entry = reg
    entry = read(canonical)
    if entry is None or entry["srepr"] != act_key:
        return False
    extras = {**entry.get("extras", {}), name: value}
    if not write(canonical, text, act_key, entry["facts"], extras):
        return False
    with _lock:
        _registered[act_key] = (canonical, text, {**entry, "extras": extras})
    return True
