"""The public face is thin and checked: ``absorb.__all__`` names exactly what is exported."""

from __future__ import annotations

import absorb


def test_all_is_exact() -> None:
    public = {n for n in vars(absorb) if not n.startswith("_")} - {"annotations"}
    submodules = {n for n in public if type(getattr(absorb, n)).__name__ == "module"}
    assert set(absorb.__all__) == (public - submodules) | {"__version__"}
    for name in absorb.__all__:
        assert hasattr(absorb, name)


def test_docstring_example() -> None:
    import doctest

    assert doctest.testmod(absorb, verbose=False).failed == 0
