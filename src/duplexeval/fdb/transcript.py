"""`output.json` transcripts in the official shape: read, validate structure, write.

`{"text": "w1 w2", "chunks": [{"text": "w1", "timestamp": [start, end]}]}`; `end` may be null
(CrisperWhisper-era files), and word text may carry leading spaces in old files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.jsonio import dumps

US_PER_S = 1_000_000


def to_us(seconds: float) -> int:
    """Seconds to integer microseconds, rounded (spec 000: times are rounded before any comparison)."""
    return int(round(seconds * US_PER_S))


@dataclass(frozen=True)
class Word:
    """One transcript word; `end` is None when the file has a null end."""

    text: str
    start: float
    end: float | None


def parse_output_json(obj: Any, path: Path | str) -> list[Word]:
    """Validate the official transcript shape; numbers must be finite, ends may be null."""
    if not isinstance(obj, dict):
        raise InputError(f"{path}: transcript must be a JSON object with 'text' and 'chunks'")
    chunks = obj.get("chunks")
    if not isinstance(chunks, list):
        raise InputError(f"{path}: 'chunks' must be a list")
    words: list[Word] = []
    for i, ch in enumerate(chunks):
        if not isinstance(ch, dict):
            raise InputError(f"{path}: chunks[{i}] must be an object")
        text = ch.get("text")
        if not isinstance(text, str):
            raise InputError(f"{path}: chunks[{i}].text must be a string")
        ts = ch.get("timestamp")
        if not isinstance(ts, (list, tuple)) or len(ts) != 2:
            raise InputError(f"{path}: chunks[{i}].timestamp must be [start, end]")
        start, end = ts
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not math.isfinite(start):
            raise InputError(f"{path}: chunks[{i}] ({text.strip()!r}) has a start that is not a finite number: {start!r}")
        if end is not None and (isinstance(end, bool) or not isinstance(end, (int, float)) or not math.isfinite(end)):
            raise InputError(f"{path}: chunks[{i}] ({text.strip()!r}) has an end that is neither null nor a finite number: {end!r}")
        words.append(Word(text, float(start), None if end is None else float(end)))
    return words


def transcript_json(words: list[Word]) -> dict[str, Any]:
    """The official output.json object for a word list (word text without leading spaces)."""
    texts = [w.text.strip() for w in words]
    return {
        "text": " ".join(texts),
        "chunks": [{"text": t, "timestamp": [w.start, w.end]} for t, w in zip(texts, words)],
    }


def transcript_bytes(words: list[Word]) -> bytes:
    """Canonical bytes of output.json (deterministic)."""
    return dumps(transcript_json(words)).encode("utf-8")
