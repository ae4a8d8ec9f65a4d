"""The one interface every ASR backend implements, and the word-time checks the stage applies.

A backend turns 16 kHz mono audio into words with absolute times; it never sees files. The stage
validates what it returns (finite, start <= end, inside [0, T]) and never clips a bad time.
"""

from __future__ import annotations

import importlib.metadata
import math
from typing import Protocol, runtime_checkable

import numpy as np

from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE, US_PER_S, TimedWord, to_us

__all__ = ["SAMPLE_RATE", "Backend", "Word", "check_words", "package_versions", "round_words"]


Word = TimedWord  # the ASR layer's name for the shared timed word (text, start, end in seconds)


@runtime_checkable
class Backend(Protocol):
    """An ASR backend: a name, a signature that pins everything its output depends on, and transcribe."""

    name: str

    def signature(self) -> JsonObject:
        """Backend name, package versions, model file SHA-256s and options (JSON-ready, deterministic)."""
        ...

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        """Words of `audio16k` (float32 mono 16 kHz) with times in seconds plus `offset_s`."""
        ...


def package_versions(*names: str) -> dict[str, str | None]:
    """Installed versions of the named distributions (None when absent), for signatures."""
    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            out[n] = None
    return out


def round_words(words: list[Word]) -> list[Word]:
    """Round times to the microsecond grid of spec 000 (`to_us`), so the same audio gives the same bytes.

    `to_us` is monotonic, so a time at or before T stays at or before T on the grid; Python's
    `round(x, 6)` is not the same rule (7.6128125 -> 7.612813 while to_us gives 7612812 us) and could
    push a word that ends on the last sample past T. Non-finite values pass through for the checks.
    """

    def r(x: float) -> float:
        return to_us(x) / US_PER_S if math.isfinite(x) else x

    return [Word(w.text, r(w.start), None if w.end is None else r(w.end)) for w in words]


def _num(x: object) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)


def check_words(words: list[Word], T: float, *, allow_null_end: bool = False) -> str | None:
    """The first problem with these word times as one line, or None: finite, start <= end, inside [0, T]."""
    for i, w in enumerate(words):
        label = f"word {i} ({str(w.text).strip()!r})"
        if not isinstance(w.text, str) or not w.text.strip():
            return f"word {i} has empty text"
        if not _num(w.start) or not math.isfinite(float(w.start)):
            return f"{label} has a start that is not a finite number: {w.start!r}"
        if w.end is None:
            if not allow_null_end:
                return f"{label} has no end time"
        elif not _num(w.end) or not math.isfinite(float(w.end)):
            return f"{label} has an end that is not a finite number: {w.end!r}"
        # Compared on the microsecond grid every later stage uses (spec 000: times are rounded first).
        T_us, start_us = to_us(T), to_us(float(w.start))
        if start_us < 0 or start_us > T_us:
            return f"{label} starts at {float(w.start)!r} s, outside [0, T={T!r}]"
        if w.end is not None:
            end_us = to_us(float(w.end))
            if end_us < start_us:
                return f"{label} ends before it starts ({float(w.start)!r} > {float(w.end)!r})"
            if end_us > T_us:
                return f"{label} ends at {float(w.end)!r} s, after T={T!r}"
    return None
