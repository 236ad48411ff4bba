"""Shared test configuration.

Hypothesis profiles: "ci" is the default and is derandomised, so a green run stays green;
the full run (CI=true or CI_SLOW=1, as .ci/run) loads "ci-long", the same with twice
the examples; HYPOTHESIS_PROFILE=NAME chooses one ("dev" explores with random examples).

``run_absorb(*args)`` (``from conftest import run_absorb``) runs ``absorb ARGS`` in this process
and returns what a subprocess would (a ``subprocess.CompletedProcess`` with returncode,
stdout, stderr): a test about what the
command prints or decides need not pay an interpreter start-up and the imports (about a
second of CPU each). Tests about process behaviour (a real exit status, no traceback, an
encoding, a closed pipe) keep their subprocess.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, settings

_CI = dict(derandomize=True, deadline=None, print_blob=True,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=12, **_CI)  # the default run: a few minutes on two cores
settings.register_profile("ci-long", max_examples=24, **_CI)  # with the slow tests: twice the examples, same seeds
settings.register_profile("dev", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def hypothesis_profile(environ: Mapping[str, str]) -> str:
    """HYPOTHESIS_PROFILE if set, else "ci-long" for the full run (CI=true or CI_SLOW=1), else "ci"."""
    full_run = environ.get("CI") == "true" or environ.get("CI_SLOW") == "1"
    return environ.get("HYPOTHESIS_PROFILE") or ("ci-long" if full_run else "ci")


HYPOTHESIS_PROFILE = hypothesis_profile(os.environ)
settings.load_profile(HYPOTHESIS_PROFILE)

# The persistent analysis cache of expr: activations (absorb/_analysis_cache.py) goes to a
# directory of this session, never to ~/.cache; it starts empty, so the first analysis of
# each expression in a session runs uncached and later ones read the cache (both paths are
# exercised; tests/test_analysis_cache.py compares them). Subprocesses inherit it.
_CACHE_DIR = tempfile.mkdtemp(prefix="absorb-test-cache-")
os.environ["ABSORB_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)


# Threads left running slow down every later test in the same worker: absorb's sandbox (the
# child process that parses a user's activation expression or analyses it) forks only while
# the process runs one thread, and else spawns a fresh interpreter (about 1 s more CPU per
# expression). tqdm's monitor thread outlives its bars: off, as it is only a fallback for
# bars that stop updating. Tests that start dask's event-loop threads are marked ``late``.
try:
    import tqdm
except ImportError:  # pragma: no cover - tqdm is optional
    pass
else:
    tqdm.tqdm.monitor_interval = 0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "late: runs after the other tests, as it leaves threads running (dask's event "
                                       "loop), after which absorb's sandbox spawns instead of forking its workers")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("late") is not None)  # stable: the order is kept otherwise


def run_absorb(*args: str) -> subprocess.CompletedProcess[str]:
    """``absorb ARGS`` in this process: its exit code and what it wrote to stdout and stderr."""
    from absorb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help, --version, usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess(["absorb", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture
def screens_at_any_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screens for near blocks, and the exact arguments they guard, at tolerances past 10⁻⁴ too: there the index-set,
    skeleton, canonical-form and degree-2 routes answer not_absorbable only with the robust skeleton bound (tests/test_robust.py),
    so tests of the screens themselves (which also serve every τ up to 10⁻⁴ and the other routes) lift that rule."""
    from absorb.engine import results
    from absorb.verify import checker

    monkeypatch.setattr(results, "SCREENED_TOL_MAX", 1.0)
    monkeypatch.setattr(checker, "SCREENED_TOL_MAX", 1.0)
