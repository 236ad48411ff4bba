"""The dask cluster of the commands that spread their work over processes or machines
(``absorb montecarlo``, ``absorb check CKPT``): ``--workers N`` starts a local cluster of N
single-threaded worker processes, ``--scheduler ADDRESS`` connects to a running scheduler.

dask is an optional dependency (the ``absorb[montecarlo]`` extra); without it both options
are refused with one line that names the extra.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from absorb._errors import InvalidInput

EXTRA = "absorb[montecarlo]"
_BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# as the user set them: a dask nanny writes its own values into os.environ when it spawns a worker
_USER_BLAS = {k: os.environ[k] for k in _BLAS_THREADS if k in os.environ}


def require_distributed() -> Any:
    """``dask.distributed``, or the one-line refusal naming the extra that installs it."""
    try:
        import dask.distributed
    except ImportError:
        raise InvalidInput(f"--workers and --scheduler need dask.distributed, which is not installed; "
                           f"install it with pip install '{EXTRA}'") from None
    return dask.distributed


@contextlib.contextmanager
def dask_client(*, workers: int | None = None, scheduler: str | None = None, processes: bool = True,
                serial_blas: bool = False) -> Iterator[Any]:
    """A ``dask.distributed.Client``: on a new ``LocalCluster`` of ``workers`` processes with one
    thread each (``processes=False``: threads, for tests), or on the scheduler at ``scheduler``.

    dask starts worker processes with one BLAS thread each (``OMP_NUM_THREADS=1`` etc.);
    ``serial_blas`` starts a local cluster's workers with this process's BLAS settings
    instead (the variables as the user set them, or none: the BLAS default), so that every
    matrix product rounds as in a serial run: a BLAS's roundings depend on its thread count
    (one thread per worker changed the last bit of a search bound at 7B size). The cluster
    is closed on leaving the block.
    """
    if workers is not None and scheduler is not None:
        raise InvalidInput("give either --workers N or --scheduler ADDRESS, not both")
    if workers is None and scheduler is None:
        raise InvalidInput("give --workers N or --scheduler ADDRESS")
    distributed = require_distributed()
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InvalidInput(f"--scheduler {scheduler}: cannot connect ({exc}); start one with 'dask scheduler' "
                               "or use --workers N") from None
        try:
            yield client
        finally:
            client.close()
        return
    assert workers is not None
    if workers < 1:
        raise InvalidInput(f"workers = {workers} must be ≥ 1")
    import dask

    serial = serial_blas and processes
    # The environment and the nanny's pre-spawn settings hold for the cluster's whole life, not only
    # its start: a nanny that (re)spawns a worker later reads them then (a worker started after they
    # were restored got dask's one BLAS thread). Non-daemonic workers: a worker analyses an expr:
    # activation (gpt-oss's clamped unit, say) in a sandboxed child process (absorb/_sandbox.py),
    # which a daemonic process may not start.
    with _environ({k: _USER_BLAS.get(k) for k in _BLAS_THREADS} if serial else {}), \
            dask.config.set({"distributed.worker.daemon": False,
                             **({f"distributed.nanny.pre-spawn-environ.{k}": None for k in _BLAS_THREADS} if serial else {})}):
        # silence_logs: a worker holding a whole layer is no reason to warn on the user's terminal;
        # dashboard_address: the scheduler's HTTP server on a free local port (with None it still tried
        # 8787 and warned on stderr when that port was taken, by a notebook's dashboard, say)
        cluster = _local_cluster(distributed, n_workers=workers, threads_per_worker=1, processes=processes,
                                 dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


def _local_cluster(distributed: Any, **kw: Any) -> Any:
    """distributed.LocalCluster(**kw), tried a second time when its event loop did not start:
    distributed waits 10 s for its IO-loop thread and then fails an internal assertion, which a
    busy machine (a test run on two loaded cores) has met."""
    try:
        return distributed.LocalCluster(**kw)
    except AssertionError:
        return distributed.LocalCluster(**kw)


@contextlib.contextmanager
def _environ(values: dict[str, str | None]) -> Iterator[None]:
    """os.environ with ``values`` (None: unset) while the block runs, as before afterwards."""
    before = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


__all__ = ["EXTRA", "cores", "dask_client", "require_distributed"]
