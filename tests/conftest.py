"""Shared test configuration.

Hypothesis profiles: "ci" is the default and is derandomised, so a green run stays green;
the full run (CI=true or CI_SLOW=1, as .ci/run) loads "ci-long", the same with two and a half
times the examples; HYPOTHESIS_PROFILE=NAME chooses one ("dev" explores with random examples).

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
from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, settings

_CI = dict(derandomize=True, deadline=None, print_blob=True,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=12, **_CI)  # the default run: a few minutes on two cores
settings.register_profile("ci-long", max_examples=30, **_CI)  # with the slow tests: more examples, same seeds
settings.register_profile("dev", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def hypothesis_profile(environ: Mapping[str, str]) -> str:
    """HYPOTHESIS_PROFILE if set, else "ci-long" for the full run (CI=true or CI_SLOW=1), else "ci"."""
    full_run = environ.get("CI") == "true" or environ.get("CI_SLOW") == "1"
    return environ.get("HYPOTHESIS_PROFILE") or ("ci-long" if full_run else "ci")


HYPOTHESIS_PROFILE = hypothesis_profile(os.environ)
settings.load_profile(HYPOTHESIS_PROFILE)


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
