"""Checks of the public API's scalar arguments: one place, one message per mistake.

Every public entry point (``decide*``, ``find_index_set``, the Monte Carlo and certificate
entry points, the CLI's converters) calls these before doing any work, so a bad value is an
:class:`~absorb._errors.InvalidInput` naming the argument, the value and what would fix it,
never an ``AssertionError`` or a numpy error from deep inside. ``assert`` is kept for
internal invariants only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from absorb._errors import InvalidInput
from absorb.rigorous import all_finite, row_slices
from absorb.search._types import METHODS, Backend, Method  # noqa: F401  (re-exported: the checks' vocabulary)

if TYPE_CHECKING:  # annotations only
    import os

#: seeds reach numpy's SeedSequence (non-negative) and Z3's ``random_seed`` (unsigned 32-bit)
SEED_MAX = 2**32 - 1


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInput(f"{name} = {value!r} is not a number; give a float such as 1e-9")
    out = float(value)
    if math.isnan(out):
        raise InvalidInput(f"{name} is NaN; give a number")
    return out


def check_tolerance(tol: object, *, name: str = "tol") -> float:
    """A relative tolerance: a number strictly between 0 and 1.

    At 1 or more the empty index set S = ∅ (residual ‖M‖_F / ‖M‖_F = 1) would already be
    within tolerance, so any block would count as absorbable by dropping its skip.
    """
    v = _real(tol, name)
    if not 0.0 < v < 1.0:
        raise InvalidInput(f"{name} = {tol!r} is out of range; a relative tolerance lies strictly between 0 and 1 "
                           "(e.g. 1e-9): at 1 or more dropping the skip would pass as absorption")
    return v


def check_timeout(timeout: object, *, name: str = "timeout") -> float:
    """A time budget in seconds: a finite number > 0."""
    v = _real(timeout, name)
    if not (v > 0 and math.isfinite(v)):
        raise InvalidInput(f"{name} = {timeout!r} is out of range; give a finite number of seconds > 0 (e.g. 60)")
    return v


def check_seed(seed: object, *, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^32 − 1]."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidInput(f"{name} = {seed!r} is not an integer; give an integer from 0 to {SEED_MAX}")
    v = int(seed)
    if not 0 <= v <= SEED_MAX:
        raise InvalidInput(f"{name} = {v} is out of range; give an integer from 0 to {SEED_MAX}")
    return v


def check_choice(value: object, choices: Iterable[str], *, name: str) -> str:
    """One of ``choices`` (a string)."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise InvalidInput(f"{name} = {value!r} is not one of {', '.join(repr(c) for c in choices)}")
    return value


def check_path(path: object, *, name: str = "path") -> os.PathLike[str] | str:
    """A file-system path: a ``str`` or an ``os.PathLike`` (not bytes, not a number, not empty)."""
    import os

    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise InvalidInput(f"{name} = {path!r} is not a path; give a file or folder name as a str or pathlib.Path")
    if "\0" in path:
        raise InvalidInput(f"{name} = {path!r} contains a NUL character; give a valid path")
    return path


def check_decide_args(*, tol: object, timeout: object, seed: object, method: object) -> None:
    """The arguments every ``decide*`` function shares."""
    check_tolerance(tol)
    check_timeout(timeout)
    check_seed(seed)
    check_choice(method, METHODS, name="method")


def check_search_inputs(U: object, D: object, T: object, *, tol: object, timeout: object, seed: object,
                        method: object) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The arguments of :func:`absorb.search.find_index_set`: ``U`` (n×d_in), ``D``
    (d_out×n) and a nonzero target ``T`` (d_out×d_in; ``None``: ``−I``, square), finite, as
    float64 arrays (large float32 ``U``, ``D`` stay float32: :func:`keeps_float32`)."""
    src = "find_index_set"
    U, D = (as_float_array(a, source=src, key=k, prefix="", copy=False, matrix=True) for a, k in ((U, "U"), (D, "D")))
    T = None if T is None else as_float_array(T, source=src, key="T", prefix="", copy=False)
    for a, k, want in ((U, "U", "(n, d_in)"), (D, "D", "(d_out, n)"), (T, "T", "(d_out, d_in)")):
        if a is not None and (a.ndim != 2 or a.size == 0):
            raise InvalidInput(f"find_index_set: {k} has shape {a.shape}, expected a non-empty 2-D array {want}")
    if D.shape[1] != U.shape[0]:
        raise InvalidInput(f"find_index_set: D has shape {D.shape} but U has shape {U.shape}; D must have one column per row of U")
    if T is None and D.shape[0] != U.shape[1]:
        raise InvalidInput(f"find_index_set: T = None means −I, which needs D's rows ({D.shape[0]}) to match U's columns ({U.shape[1]})")
    if T is not None and T.shape != (D.shape[0], U.shape[1]):
        raise InvalidInput(f"find_index_set: T has shape {T.shape}, expected ({D.shape[0]}, {U.shape[1]}) (rows of D, columns of U)")
    if T is not None and not np.any(T != 0):
        raise InvalidInput("find_index_set: the target T is zero; the tolerance is relative to ‖T‖_F, so give a nonzero T")
    check_tolerance(tol)
    check_timeout(timeout)
    check_seed(seed)
    check_choice(method, METHODS, name="method")
    return U, D, T


__all__ = ["Method", "SEED_MAX", "check_choice", "check_decide_args", "check_path", "check_search_inputs", "check_seed", "check_timeout", "check_tolerance"]


# ---- arrays -------------------------------------------------------------------------
#: sources that are Python calls, not files: their arrays are arguments, not keys
_CALLS = frozenset({"Block", "HyperConnection", "find_index_set", "decide_batch"})


def _label(source: str, prefix: str, key: str) -> str:
    return f"{source}: {key}" if source in _CALLS and not prefix else f"{source}: key {prefix + key!r}"


#: A weight matrix (``W_up``, ``W_down``, ``W_gate``) stored as float32, float16 or bfloat16
#: with at least this many entries is kept as float32 (narrower types converted exactly;
#: every such value is a float32): no float64 copy of a large layer is made. The routes
#: that reach such a matrix read it in float64 row blocks or upcast their own operands
#: (docs/user-guide.md, "Tolerances"; docs/performance-scale.md). Smaller ones become float64 (cheap), so
#: every route, the exact ones included, sees them unchanged.
FLOAT32_MIN_ENTRIES = 1 << 22

_NARROW = frozenset({"float32", "float16", "bfloat16"})


def keeps_float32(dtype: np.dtype, shape: tuple[int, ...]) -> bool:
    """Whether a weight matrix of this stored dtype and shape stays float32 (:data:`FLOAT32_MIN_ENTRIES`)."""
    return np.dtype(dtype).name in _NARROW and len(shape) == 2 and math.prod(shape) >= FLOAT32_MIN_ENTRIES


def float64_rows(A: np.ndarray, nbytes: int = 32 << 20) -> Iterator[tuple[slice, np.ndarray]]:
    """``(rows, A[rows] in float64)`` over the row blocks of a 2-D ``A`` (:func:`row_slices`):
    a float32 matrix is read in float64 without a full-size float64 copy."""
    for sl in row_slices(A.shape[0], A.shape[1], nbytes):
        blk = A[sl]
        yield sl, (blk if blk.dtype == np.float64 else blk.astype(np.float64))


def matvec(W: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``W @ v`` in float64: one product when ``W`` is float64, else over float64 row blocks
    of ``W`` (a float32 ``W`` is never copied whole)."""
    if W.dtype == np.float64:
        return W @ v
    return np.concatenate([Wb @ v for _sl, Wb in float64_rows(W)] or [np.zeros(0)])


def as_float_array(value: object, *, source: str, key: str, prefix: str = "", copy: bool = True,
                   matrix: bool = False) -> np.ndarray:
    """A finite float64 array from ``value``, or a one-line error naming ``source`` and ``key``.

    ``copy=False`` reuses a float64 input as is (a loader handing over arrays it owns).
    ``matrix=True`` (a weight matrix) keeps a large float32 input as float32, and converts
    a large float16/bfloat16 one to float32 (:func:`keeps_float32`).
    Real floating-point, integer and boolean dtypes are converted; complex, object, string
    and opaque (e.g. bfloat16 seen as raw bytes) dtypes are refused.
    """
    lab = _label(source, prefix, key)
    if isinstance(value, np.ndarray) and (value.dtype == np.float64 or (matrix and value.dtype == np.float32 and keeps_float32(value.dtype, value.shape))):
        out = np.array(value) if copy else np.asarray(value)  # np.asarray: a plain ndarray (no np.matrix semantics)
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as exc:  # ragged nested lists and the like
            raise InvalidInput(f"{lab} is not an array ({' '.join(str(exc).split())[:120]}); give a numeric array") from None
        if arr.dtype == object:
            raise InvalidInput(f"{lab} is an object array; store plain numeric arrays (objects are never unpickled)")
        kind = arr.dtype.kind
        if kind not in "fiub" and arr.dtype.name != "bfloat16":
            what = {"c": "complex", "U": "a string", "S": "a byte string", "V": "raw bytes", "M": "a date", "m": "a time delta"}
            if kind == "V" and arr.dtype.itemsize == 2:  # what numpy.savez makes of a bfloat16 array
                raise InvalidInput(f"{lab} has dtype {arr.dtype} (raw 2-byte values: numpy.savez stores bfloat16 arrays so, "
                                   "without their type); convert them with .astype(numpy.float32) before saving")
            raise InvalidInput(f"{lab} has dtype {arr.dtype} ({what.get(kind, 'not numeric')}); expected a real floating-point "
                               "or integer array (convert it with .astype(numpy.float64))")
        want = np.float32 if matrix and keeps_float32(arr.dtype, arr.shape) else np.float64
        try:
            out = arr.astype(want, copy=copy)
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidInput(f"{lab} cannot be converted to float64 ({exc}); give a real numeric array") from None
    if not all_finite(out):
        bad = ~np.isfinite(out)
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        count = int(bad.sum())
        what = "NaN" if np.isnan(out[where]) else "Inf"
        raise InvalidInput(f"{lab} contains {what} at index {where} ({count} non-finite entries); the weights must be finite")
    return out
