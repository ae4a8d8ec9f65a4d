"""User-facing errors: one clear line, a non-zero exit, never a traceback."""

from __future__ import annotations


class DuplexEvalError(Exception):
    """A problem with the user's input or setup; its message is one line naming file, sample and problem."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class InputError(DuplexEvalError):
    """A file, sample or argument the user gave is malformed or inconsistent."""


class RefusalError(DuplexEvalError):
    """A stage refuses to run (missing prerequisite, hash mismatch, would overwrite a run)."""
