"""Run a function in a child process under a wall-clock and a memory budget.

Generic on purpose (it imports nothing from the rest of the package), so that any part of
`absorb` can use it, the independent checker included: work whose cost depends on
untrusted input (a user's activation expression handed to sympy, say) runs in a child
process with ``RLIMIT_AS`` set, and is killed when its time is up.

>>> run_limited(sum, [1, 2, 3], timeout=30)
6

The function's return value (and an exception it raises) must be picklable. With the
``fork`` start method (the default where the platform has it and this process runs one
thread) the function itself need not be; with ``spawn`` (the default otherwise) it and its
arguments must be picklable, i.e. the function importable by name.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["BudgetExceeded", "DEFAULT_MEMORY", "run_limited"]

DEFAULT_MEMORY = 2 << 30
"""The default memory budget: 2 GiB of address space beyond what the parent already maps."""


class BudgetExceeded(Exception):
    """The child ran out of time or memory, or died (``kind``: 'time', 'memory' or 'crash')."""

    def __init__(self, kind: str, message: str, *, timeout: float, memory: int) -> None:
        super().__init__(message)
        self.kind, self.timeout, self.memory = kind, timeout, memory


def _address_space() -> int:
    """Bytes of virtual address space this process maps now (0 where unknown)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, memory: int) -> None:
    try:
        import resource

        limit = _address_space() + memory
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # no resource module (Windows): time budget only
        pass
    try:
        out: tuple[str, Any] = ("ok", fn(*args, **kwargs))
    except MemoryError:
        out = ("memory", None)
    except RecursionError:
        out = ("recursion", None)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        out = ("raise", exc)
    try:
        data = pickle.dumps(out)
    except MemoryError:
        data = pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
        data = pickle.dumps(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))
    conn.send_bytes(data)
    conn.close()


def _context(start_method: str | None) -> Any:
    if start_method is None:
        # fork is fast, but a child forked while another thread holds a lock (the import
        # lock, say) can hang: then spawn (slower: the child imports the function's module)
        fork_ok = "fork" in mp.get_all_start_methods() and threading.active_count() == 1
        start_method = "fork" if fork_ok else "spawn"
    return mp.get_context(start_method)


def run_limited(fn: Callable[..., Any], /, *args: Any, timeout: float, memory: int = DEFAULT_MEMORY,
                start_method: str | None = None, **kwargs: Any) -> Any:
    """Return ``fn(*args, **kwargs)`` computed in a child process.

    The child may run ``timeout`` seconds of wall-clock time and map ``memory`` bytes of
    address space beyond the parent's at the time of the call. Past either limit (or if
    the child dies, e.g. on a stack overflow) :class:`BudgetExceeded` is raised; an
    exception raised by ``fn`` is raised again here.
    """
    ctx = _context(start_method)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, kwargs, int(memory)), daemon=True)
    proc.start()
    send.close()
    deadline = time.monotonic() + float(timeout)
    data = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if recv.poll(min(left, 0.5)):
                try:
                    data = recv.recv_bytes()
                except EOFError:  # the child died without answering
                    pass
                break
            if not proc.is_alive() and not recv.poll(0):
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        recv.close()
    if data is None:
        if time.monotonic() >= deadline:
            raise BudgetExceeded("time", f"did not finish within {timeout:g} s", timeout=timeout, memory=memory)
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                why = f"signal {signal.Signals(-code).name}"
            except ValueError:
                why = f"signal {-code}"
        else:
            why = f"exit code {code}"
        raise BudgetExceeded("crash", f"the worker process died ({why})", timeout=timeout, memory=memory)
    status, value = pickle.loads(data)
    if status == "ok":
        return value
    if status == "memory":
        raise BudgetExceeded("memory", f"needed more than {memory / 2**30:g} GiB of memory", timeout=timeout, memory=memory)
    if status == "recursion":
        raise BudgetExceeded("memory", "ran out of stack (recursion too deep)", timeout=timeout, memory=memory)
    raise value

