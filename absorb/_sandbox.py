"""Run a function in a child process under a time and a memory budget.

Generic on purpose (it imports nothing from the rest of the package), so that any part of
`absorb` can use it, the independent checker included: work whose cost depends on
untrusted input (a user's activation expression handed to sympy, say) runs in a child
process with ``RLIMIT_AS`` set, and is killed when its time is up: its own CPU time where the
system reports it (Linux), so a loaded machine does not refuse work that fits, within a few
times the budget in wall time; wall time elsewhere.

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

__all__ = ["BudgetExceeded", "DEFAULT_MEMORY", "Job", "run_limited", "start_limited"]

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


def _limit_memory(memory: int) -> None:
    try:
        import resource

        limit = _address_space() + memory
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # no resource module (Windows): time budget only
        pass


def _send(conn: Any, out: tuple[str, Any]) -> None:
    try:
        data = pickle.dumps(out)
    except MemoryError:
        data = pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
        data = pickle.dumps(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))
    conn.send_bytes(data)


_NO_STAGE = object()


def _child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, memory: int, stages: bool = False,
           ahead: bool = False) -> None:
    _limit_memory(memory)
    try:
        if not stages:
            _send(conn, ("ok", fn(*args, **kwargs)))
        else:  # a generator: each value sent, the next computed when the parent asks for it (ahead: at once)
            it = iter(fn(*args, **kwargs))
            value = next(it, _NO_STAGE)
            while value is not _NO_STAGE:
                _send(conn, ("ok", value))
                if ahead:  # computed while the parent works; sent only when it asks
                    value = next(it, _NO_STAGE)
                if conn.recv_bytes() != b"next":
                    break
                if not ahead:
                    value = next(it, _NO_STAGE)
            else:
                _send(conn, ("raise", RuntimeError("the worker has no further stage")))
    except MemoryError:
        _send(conn, ("memory", None))
    except RecursionError:
        _send(conn, ("recursion", None))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        _send(conn, ("raise", exc))
    conn.close()


def _context(start_method: str | None) -> Any:
    if start_method is None:
        # fork is fast, but a child forked while another thread holds a lock (the import
        # lock, say) can hang: then spawn (slower: the child imports the function's module)
        fork_ok = "fork" in mp.get_all_start_methods() and threading.active_count() == 1
        start_method = "fork" if fork_ok else "spawn"
    return mp.get_context(start_method)


class Job:
    """A child process computing the stages of a generator function, one at a time: each
    :meth:`next` lets it compute the next value (or, ``ahead``, hands over the one computed
    already), within its own time budget. The child waits between stages; :meth:`close` (or a
    budget exceeded) ends it. See :func:`start_limited`."""

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict, memory: int, start_method: str | None,
                 ahead: bool = False) -> None:
        ctx = _context(start_method)
        self._conn, child_end = ctx.Pipe(duplex=True)
        self.memory = int(memory)
        self._proc = ctx.Process(target=_child, args=(child_end, fn, args, kwargs, self.memory, True, ahead), daemon=True)
        self._proc.start()
        child_end.close()
        self._started = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def ready(self) -> bool:
        """A message from the child waits to be read (a value computed ahead, or its error)."""
        try:
            return self._proc is not None and self._conn.poll(0)
        except (OSError, EOFError):
            return False

    def next(self, timeout: float) -> Any:
        """The next stage's value, computed within ``timeout`` seconds of wall-clock time (the
        child's memory stays limited as at the start); past it, or if the child dies,
        :class:`BudgetExceeded` (and the job is closed). An exception raised in the child is
        raised again here (and the job is closed)."""
        if self._proc is None:
            raise BudgetExceeded("crash", "the worker process was closed", timeout=timeout, memory=self.memory)
        try:
            if self._started:
                self._conn.send_bytes(b"next")
            self._started = True
        except OSError:
            pass  # it died: reported below
        proc = self._proc
        data, timed_out = _wait(self._conn, proc, timeout)
        if data is None:
            self.close()
        try:
            return _result(data, proc, timeout, self.memory, timed_out)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the child (it may be idle between stages, or still computing)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            self._conn.send_bytes(b"stop")
        except OSError:
            pass
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        self._conn.close()


def start_limited(fn: Callable[..., Any], /, *args: Any, memory: int = DEFAULT_MEMORY, start_method: str | None = None,
                  ahead: bool = False, **kwargs: Any) -> Job:
    """Start ``fn(*args, **kwargs)``, a generator function, in a child process limited to
    ``memory`` bytes of address space beyond the parent's; its values are read one by one
    with :meth:`Job.next`, each within its own time budget (counted from the ask). The child
    computes a stage only when asked for it: an idle job costs no CPU. With ``ahead`` it
    computes the next stage as soon as it has sent one, while the parent works (on a second
    core, the wait at the next ask shrinks or vanishes), and sends it when asked; it may then
    spend CPU on a stage never asked for, until the job is closed. Close the job when done."""
    return Job(fn, args, kwargs, memory, start_method, ahead)


_LOAD_STRETCH = 6.0
"""On a loaded machine the budget counts the child's own CPU time (where the system reports it: Linux), up to this
many times the budget in wall time: other processes' work does not refuse an expression that fits."""


def _cpu_seconds(pid: int | None) -> float | None:
    """The process's user + system CPU time so far (Linux /proc), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _wait(conn: Any, proc: Any, timeout: float) -> tuple[bytes | None, bool]:
    """The child's next message within ``timeout`` seconds, or None; and whether the time
    ran out (else a None means the child died). Where the child's CPU time can be read, the
    budget is its CPU time (within :data:`_LOAD_STRETCH`× the budget in wall time)."""
    start = time.monotonic()
    deadline = start + float(timeout)
    cpu0 = _cpu_seconds(getattr(proc, "pid", None))
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            cpu = None if cpu0 is None else _cpu_seconds(proc.pid)
            if cpu is None or cpu - cpu0 >= timeout or time.monotonic() - start >= _LOAD_STRETCH * timeout:
                return None, True
            deadline = min(start + _LOAD_STRETCH * timeout, time.monotonic() + max(timeout - (cpu - cpu0), 0.1))
            continue
        if conn.poll(min(left, 0.5)):
            try:
                return conn.recv_bytes(), False
            except EOFError:  # the child died without answering
                proc.join(5)
                return None, False
        if not proc.is_alive() and not conn.poll(0):
            return None, False


def _result(data: bytes | None, proc: Any, timeout: float, memory: int, timed_out: bool) -> Any:
    """The value of the child's message ``data`` (None: no message; ``timed_out``: the child
    was still running at the deadline), or the exception it stands for."""
    if data is None:
        if timed_out:
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
    data, timed_out = None, False
    try:
        data, timed_out = _wait(recv, proc, timeout)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        recv.close()
    return _result(data, proc, timeout, memory, timed_out)
