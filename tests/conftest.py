"""Shared test configuration.

Hypothesis profiles: "ci" is the default and is derandomised, so a green run stays green;
CI (CI=true) loads "ci-long", the same with more examples; HYPOTHESIS_PROFILE=dev explores
with random examples.

``run_absorb(*args)`` runs ``absorb ARGS`` in this process and returns what a subprocess would
(a ``subprocess.CompletedProcess`` with returncode, stdout, stderr): a test about what the
command prints or decides need not pay an interpreter start-up and the imports (about a
second of CPU each). Tests about process behaviour (a real exit status, no traceback, an
encoding, a closed pipe) keep their subprocess.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=20, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


@pytest.fixture(scope="session")
def absorb_cli():
    """The in-process ``absorb`` command (``run_absorb``) for tests that take it as a fixture."""
    return run_absorb
