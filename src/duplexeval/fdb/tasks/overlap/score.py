"""Our rules over one subset folder in the official per-sample layout: rows, then the subset's block."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duplexeval.fdb.tasks.overlap import unified
from duplexeval.fdb.tasks.overlap.behavior import TAG_FILE, parse_reply
from duplexeval.fdb.tasks.overlap.layout import METADATA_FILE, Metadata, id_key
from duplexeval.fdb.tasks.overlap.official import CLEAN_OUTPUT_JSON, OUTPUT_JSON, OUTPUT_WAV, read_16k, read_words
from duplexeval.jsonio import read_json
from duplexeval.schemas import validate
from duplexeval.units import to_us
from duplexeval.vad import SCORER_SETTINGS, SileroVad

NOT_TRANSCRIBED = "no output.json"


def judge_tags(d: Path) -> tuple[list[str] | None, str | None]:
    """The judge's accepted tags from `content_tag.json` (None, None: not judged)."""
    p = d / TAG_FILE
    if not p.is_file():
        return None, None
    obj = json.loads(p.read_text(encoding="utf-8"))
    saved = {k: v for k, v in obj.items() if k != "duplexeval"} if isinstance(obj, dict) else obj
    _, tags, err = parse_reply(json.dumps(saved))
    return tags, err


def score_subset(subset: str, sdir: Path, vad: SileroVad, ids: Sequence[str] | None = None,
                 stop_silence_ms: int = unified.STOP_SILENCE_MS) -> tuple[list[unified.OverlapRow], dict[str, Any]]:
    """Rows of every sample folder of a subset (natural order) and the subset's aggregate block."""
    names = list(ids) if ids is not None else sorted((p.name for p in sdir.iterdir() if p.is_dir()), key=id_key)
    rows: list[unified.OverlapRow] = []
    not_scored: dict[str, int] = {}
    ready = []
    for sid in names:
        d = sdir / sid
        if not (d / OUTPUT_JSON).is_file():
            not_scored[NOT_TRANSCRIBED] = not_scored.get(NOT_TRANSCRIBED, 0) + 1
            continue
        md = validate(read_json(d / METADATA_FILE), Metadata, d / METADATA_FILE)
        audio = read_16k(d / OUTPUT_WAV)
        clean = read_words(d / CLEAN_OUTPUT_JSON) if (d / CLEAN_OUTPUT_JSON).is_file() else []
        ready.append((sid, d, md, audio, read_words(d / OUTPUT_JSON), clean))
    segs = vad.segments_many([r[3] for r in ready], SCORER_SETTINGS)
    for (sid, d, md, audio, words, clean), sg in zip(ready, segs):
        tags, err = judge_tags(d)
        T_us = to_us(audio.shape[0] / 16000)
        rows.append(unified.score(subset, sid, T_us, to_us(md.start), to_us(md.end), sg, words, clean,
                                  stop_silence_ms, tags, err))
    return rows, unified.aggregate(rows, len(names), not_scored)
