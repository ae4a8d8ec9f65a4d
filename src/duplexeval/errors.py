"""User-facing errors: one clear line, a non-zero exit, never a traceback."""

from __future__ import annotations

MAX_MESSAGE_CHARS = 1000  # an error line never runs longer than this, whatever value it echoes


def clip(text: str, limit: int = 200) -> str:
    """`text` cut to about `limit` characters, saying how long it was: echoed values stay readable."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def cap_line(line: str) -> str:
    """A whole error line capped at MAX_MESSAGE_CHARS, keeping its start and its end (where the hint is)."""
    if len(line) <= MAX_MESSAGE_CHARS:
        return line
    head, tail = MAX_MESSAGE_CHARS * 3 // 4, MAX_MESSAGE_CHARS // 5
    return f"{line[:head]} ... ({len(line) - head - tail} characters cut) ... {line[-tail:]}"


class DuplexEvalError(Exception):
    """A problem with the user's input or setup; its message is one line naming file, sample and problem."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(cap_line(" ".join(str(message).split())))


class InputError(DuplexEvalError):
    """A file, sample or argument the user gave is malformed or inconsistent."""


class RefusalError(DuplexEvalError):
    """A stage refuses to run (missing prerequisite, hash mismatch, would overwrite a run)."""
