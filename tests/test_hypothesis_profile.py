"""The Hypothesis profile registered in tests/conftest.py governs every property test.

A test's own ``settings(derandomize=..., deadline=...)`` would silently override it (a
random run under the CI profile, or a fixed seed under HYPOTHESIS_PROFILE=dev); a
``max_examples`` below the profile's needs a reason in a comment on the same line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).parent
FILES = sorted(p for p in TESTS.glob("test_*.py"))


def _settings_calls(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = path.read_text(encoding="utf-8").splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "settings":
            yield node, lines[node.lineno - 1]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_test_overrides_the_profile(path: Path) -> None:
    bad = []
    for node, line in _settings_calls(path):
        keys = {k.arg for k in node.keywords}
        if keys & {"derandomize", "deadline"} and "find(" not in line and "settings=settings(" not in line:
            bad.append(f"{path.name}:{node.lineno}: sets {sorted(keys & {'derandomize', 'deadline'})}")
        for k in node.keywords:
            if k.arg == "max_examples" and isinstance(k.value, ast.Constant) \
                    and k.value.value < settings.get_profile("ci").max_examples and "#" not in line:
                bad.append(f"{path.name}:{node.lineno}: max_examples={k.value.value} without a reason")
    assert not bad, bad


def test_the_profile_named_by_the_environment_is_loaded() -> None:
    from conftest import HYPOTHESIS_PROFILE

    profile = settings.get_profile(HYPOTHESIS_PROFILE)
    for key in ("derandomize", "deadline", "max_examples"):
        assert getattr(settings.default, key) == getattr(profile, key), key
    for name in ("ci", "ci-long"):  # the default run and the full run: derandomised, no deadline
        assert settings.get_profile(name).derandomize and settings.get_profile(name).deadline is None
    assert settings.get_profile("ci-long").max_examples > settings.get_profile("ci").max_examples


@pytest.mark.parametrize(("env", "expected"), [({}, "ci"), ({"CI": "true"}, "ci-long"), ({"CI_SLOW": "1"}, "ci-long"),
                                               ({"CI": "false"}, "ci"), ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, "dev")])
def test_the_full_run_gets_more_examples(env: dict[str, str], expected: str) -> None:
    from conftest import hypothesis_profile

    assert hypothesis_profile(env) == expected
