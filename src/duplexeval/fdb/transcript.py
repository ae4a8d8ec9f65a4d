"""`output.json` transcripts in the official shape: read, validate structure, write.

`{"text": "w1 w2", "chunks": [{"text": "w1", "timestamp": [start, end]}]}`; `end` may be null
(CrisperWhisper-era files), and word text may carry leading spaces in old files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.asr.base import Word
from duplexeval.jsonio import dumps
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import OutputJson
from duplexeval.units import US_PER_S, to_us

__all__ = ["US_PER_S", "Word", "parse_output_json", "to_us", "transcript_bytes", "transcript_json"]


def parse_output_json(obj: Any, path: Path | str) -> list[Word]:
    """Validate the official transcript shape (schemas.fdb.OutputJson): finite, in-range numbers, ends may be null."""
    rec = validate(obj, OutputJson, path)
    return [Word(ch.text, float(ch.timestamp[0] or 0.0), None if ch.timestamp[1] is None else float(ch.timestamp[1]))
            for ch in rec.chunks]


def transcript_json(words: list[Word]) -> JsonObject:
    """The official output.json object for a word list (word text without leading spaces)."""
    texts = [w.text.strip() for w in words]
    return {
        "text": " ".join(texts),
        "chunks": [{"text": t, "timestamp": [w.start, w.end]} for t, w in zip(texts, words)],
    }


def transcript_bytes(words: list[Word]) -> bytes:
    """Canonical bytes of output.json (deterministic)."""
    return dumps(transcript_json(words)).encode("utf-8")
