"""One exception family for bad user input.

Every message is a single line naming the file, key, shape or value at fault and what
would fix it; the CLI prints it and exits with code 2.
"""

from __future__ import annotations


class AbsorbError(Exception):
    """Base class of every error `absorb` raises on purpose."""


class InvalidInput(AbsorbError, ValueError):
    """Bad input from the user: a file, key, shape, value or option.

    The message is one line and says what would fix it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
