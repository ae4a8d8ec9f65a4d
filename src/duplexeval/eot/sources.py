"""Where span sets come from: eot-bench's dataset schema (parquet or JSONL), FDB v1.0 CANDOR subsets,
two-channel conversation manifests, and `duplexeval fdb synth`-style scripts (espeak-ng speech).

Each reader returns a ``SpanSet`` whose ``skipped`` counts say what was left out and why; the rules per source
are in docs/eot.md ("Span sets").
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import read_audio_channels, resample
from duplexeval.controller.labels.derive import USER, derive
from duplexeval.controller.labels.sources import assignments, read_manifest
from duplexeval.eot.spans import SpanSet, SpanTurn, make_turn
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.synth import load_script, render_sample
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tasks.pause.annotation import PauseAnnotation
from duplexeval.fdb.tasks.turn_taking.annotation import TurnAnnotation
from duplexeval.jsonio import json_lines, read_text
from duplexeval.units import SAMPLE_RATE, TimedWord

EOT_TAIL_S = 4.0  # an EoT span with no known end is scored this long (past the largest default timeout, 3.5 s)
TURN_LEAD_S = 0.5  # conversation turns keep this much audio before the user's first word
SOURCES = ("auto", "eot-bench", "fdb", "conversations", "synth")


def _bump(skipped: dict[str, int], reason: str, k: int = 1) -> None:
    skipped[reason] = skipped.get(reason, 0) + k


# ----------------------------------------------------------------------------------------- eot-bench schema


def _decode_audio(audio: Any, base: Path, where: str) -> np.ndarray:
    """eot-bench's audio cell: ``{"array", "sampling_rate"}``, ``{"bytes"}`` (an encoded file) or ``{"path"}``; to 16
    kHz."""
    if not isinstance(audio, Mapping):
        raise InputError(f"{where}: audio must be an object with array/sampling_rate, bytes or path")
    if audio.get("array") is not None:
        sr = audio.get("sampling_rate")
        if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or int(sr) <= 0:
            raise InputError(f"{where}: audio.sampling_rate must be a positive integer, got {sr!r}")
        try:
            arr = np.asarray(audio["array"], dtype=np.float32)
        except (TypeError, ValueError):
            raise InputError(f"{where}: audio.array must be a list of numbers") from None
        rate = int(sr)
    else:
        data = audio.get("bytes")
        if isinstance(data, str):
            try:
                data = base64.b64decode(data, validate=True)
            except ValueError:
                raise InputError(f"{where}: audio.bytes is neither bytes nor base64") from None
        if data is not None:
            arr2, rate = read_audio_channels("<bytes>", bytes(data), where=where)
        elif audio.get("path"):
            arr2, rate = read_audio_channels(base / str(audio["path"]), where=where)
        else:
            raise InputError(f"{where}: audio has neither array, bytes nor path")
        if arr2.shape[1] != 1:
            raise InputError(f"{where}: audio has {arr2.shape[1]} channels; a turn is one mono user channel")
        arr = arr2[:, 0]
    if arr.ndim != 1:
        raise InputError(f"{where}: audio.array must be one-dimensional (mono)")
    if arr.size and not np.isfinite(arr).all():
        raise InputError(f"{where}: audio has NaN or infinite samples")
    return resample(np.ascontiguousarray(arr), int(rate), SAMPLE_RATE) if int(rate) != SAMPLE_RATE else arr


def _words(v: Any, where: str) -> tuple[TimedWord, ...]:
    if v is None:
        return ()
    if not isinstance(v, list):
        raise InputError(f"{where}: words must be a list of {{word, start, end}}")
    out = []
    for k, w in enumerate(v):
        if not isinstance(w, Mapping) or "word" not in w:
            raise InputError(f"{where}: words[{k}] must be an object with word, start, end")
        s, e = w.get("start"), w.get("end")
        for name, x in (("start", s), ("end", e)):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0 or x > 1e6:
                raise InputError(f"{where}: words[{k}].{name} must be a finite time in seconds, got {x!r}")
        out.append(TimedWord(str(w["word"]), float(s), float(e)))  # type: ignore[arg-type]
    return tuple(out)


def _messages(v: Any, where: str) -> tuple[dict[str, str], ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(m, Mapping) and "role" in m and "content" in m for m in v):
        raise InputError(f"{where}: messages must be a list of {{role, content}}")
    return tuple({"role": str(m["role"]), "content": str(m["content"])} for m in v)


def turn_from_eotbench_row(row: Mapping[str, Any], base: Path, where: str, skipped: dict[str, int]) -> SpanTurn:
    """One eot-bench dataset row: the last silence span is the true end (eot), every earlier one a hold."""
    for key in ("id", "language", "audio", "silence_spans"):
        if key not in row:
            raise InputError(f"{where}: missing field {key!r} (eot-bench rows need id, language, audio, silence_spans)")
    rid = row["id"]
    rid = str(rid) if isinstance(rid, (int, np.integer)) and not isinstance(rid, bool) else rid
    if not isinstance(rid, str) or not rid:
        raise InputError(f"{where}: id must be a non-empty string")
    where = f"{where}: turn {rid!r}"
    lang = row["language"]
    if not isinstance(lang, str) or not lang.strip():
        raise InputError(f"{where}: language must be a non-empty string")
    spans = row["silence_spans"]
    if not isinstance(spans, list) or not spans:
        raise InputError(f"{where}: silence_spans must be a non-empty list of {{start, end}}")
    sil = []
    for k, s in enumerate(spans):
        if not isinstance(s, Mapping) or "start" not in s or "end" not in s:
            raise InputError(f"{where}: silence_spans[{k}] must be an object with start and end")
        sil.append((s["start"], s["end"], "eot" if k == len(spans) - 1 else "hold"))
    audio = _decode_audio(row["audio"], base, where)
    return make_turn(rid, audio, sil, language=lang.strip().lower(), words=_words(row.get("words"), where),
                     messages=_messages(row.get("messages"), where), group=str(row.get("group") or rid),
                     skipped=skipped, where=where)  # fmt: skip


def read_eotbench(path: str | Path) -> SpanSet:
    """An eot-bench span set: a parquet file (pyarrow) or JSONL, one turn per row."""
    p = Path(path)
    skipped: dict[str, int] = {}
    turns: list[SpanTurn] = []
    if p.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        if not p.is_file():
            raise InputError(f"{p}: file not found")
        try:
            pf = pq.ParquetFile(p)
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"{p}: cannot read parquet: {' '.join(str(exc).split())[:200]}") from None
        k = 0
        for batch in pf.iter_batches(batch_size=64):
            for row in batch.to_pylist():
                k += 1
                turns.append(turn_from_eotbench_row(row, p.parent, f"{p}: row {k}", skipped))
    else:
        for lineno, obj in json_lines(read_text(p), p):
            if not isinstance(obj, dict):
                raise InputError(f"{p}: line {lineno}: each line must be a JSON object")
            turns.append(turn_from_eotbench_row(obj, p.parent, f"{p}: line {lineno}", skipped))
    return _finish(p.stem, "eot-bench", turns, skipped, str(p))


def _finish(name: str, source: str, turns: list[SpanTurn], skipped: dict[str, int], where: str) -> SpanSet:
    seen: set[str] = set()
    for t in turns:
        if t.id in seen:
            raise InputError(f"{where}: duplicate turn id {t.id!r}")
        seen.add(t.id)
    kept = [t for t in turns if t.spans]
    if len(kept) < len(turns):
        _bump(skipped, "turn_without_spans", len(turns) - len(kept))
    if not kept:
        raise InputError(f"{where}: no turn has a silence span of at least 0.1 s to score")
    return SpanSet(name, source, kept, skipped)


# ----------------------------------------------------------------------------------------- FDB v1.0 CANDOR


def read_fdb(path: str | Path, subsets: tuple[str, ...] = ("candor_turn_taking", "candor_pause_handling")) -> SpanSet:
    """FDB v1.0 (or a synth set of the same shape): turn-taking -> one eot span [E, min(T, E + 4 s)] per sample;
    pause handling -> each annotated pause a hold span. Other subsets are counted as skipped."""
    ds = load_dataset(path)
    skipped: dict[str, int] = {}
    turns: list[SpanTurn] = []
    for s in ds.samples():
        if s.subset not in subsets:
            _bump(skipped, f"subset_{s.subset}")
            continue
        where = f"{path}: {s.key}"
        audio = s.read_input_16k()
        T = audio.size / SAMPLE_RATE
        if isinstance(s.record, TurnAnnotation):
            e = s.record.E
            sil = [(min(e, T), min(T, e + EOT_TAIL_S), "eot")]
        elif isinstance(s.record, PauseAnnotation):
            sil = [(a, min(T, b), "hold") for a, b in s.record.spans()]
        else:
            _bump(skipped, f"task_{s.task}")
            continue
        turns.append(make_turn(s.key, audio, sil, group=s.key, skipped=skipped, where=where))
    return _finish(Path(path).name, "fdb", turns, skipped, str(path))


# ----------------------------------------------------------------------------------------- conversations


def read_conversations(path: str | Path) -> SpanSet:
    """User turns of two-channel conversations, by the controller label rules (docs/controller-labels.md): a user
    turn ended by a shift gives its inner pauses as holds and [turn end, min(next user onset, end + 4 s)] as eot."""
    skipped: dict[str, int] = {}
    turns: list[SpanTurn] = []
    for conv in read_manifest(path):
        for cid, c in assignments(conv):
            if c.user_audio is None:
                raise InputError(f"{path}: conversation {cid}: scoring a detector needs the user channel's audio")
            try:
                lab = derive(c.user, c.agent, c.duration_s)
            except InputError as exc:
                raise InputError(f"{path}: conversation {cid}: {exc}") from None
            user_turns = [t for t in lab.turns if t.speaker == USER]
            starts = sorted(v.start_s for v in lab.vocalizations if v.speaker == USER)
            for k, t in enumerate(user_turns):
                if t.ended_by != "shift":
                    _bump(skipped, f"user_turn_ended_by_{t.ended_by}")
                    continue
                a0 = max(0.0, t.start_s - TURN_LEAD_S)
                nxt = next((s for s in starts if s > t.end_s), c.duration_s)
                e1 = min(nxt, t.end_s + EOT_TAIL_S, c.duration_s)
                sil = [(b - a0, n - a0, "hold") for (_, b), (n, _) in zip(t.runs, t.runs[1:]) if n > b]
                sil.append((t.end_s - a0, e1 - a0, "eot"))
                i0, i1 = round(a0 * SAMPLE_RATE), round(e1 * SAMPLE_RATE)
                words = tuple(TimedWord(w, s - a0, e - a0) for w, s, e in (c.user.words or ())
                              if t.start_s <= s and e <= t.end_s + 1e-6)
                turns.append(make_turn(f"{cid}.t{k}", c.user_audio[i0:i1], sil, words=words, group=c.group,
                                       skipped=skipped, where=f"{path}: conversation {cid} turn {k}"))  # fmt: skip
    return _finish(Path(path).stem, "conversations", turns, skipped, str(path))


# ----------------------------------------------------------------------------------------- synth scripts


def read_synth_script(path: str | Path) -> SpanSet:
    """A `fdb synth` script rendered with espeak-ng (see ``span_set_from_script``)."""
    return span_set_from_script(load_script(path), str(path))


def span_set_from_script(script: Any, where: str) -> SpanSet:
    """Pause-handling samples give their pauses as holds and the tail after the last word as eot; turn-taking
    samples give [last word end, min(T, end + 4 s)] as eot; other tasks are counted as skipped."""
    skipped: dict[str, int] = {}
    turns: list[SpanTurn] = []
    for spec in script.samples:
        owner = task_of(spec.subset)
        key = f"{spec.subset}/{spec.id}"
        if owner.annotation not in (PauseAnnotation, TurnAnnotation):
            _bump(skipped, f"task_{owner.name}")
            continue
        r = render_sample(spec, where=f"{where}: sample {key}")
        last = r.words[-1][2]
        sil: list[tuple[float, float, str]] = []
        if owner.annotation is PauseAnnotation:
            sil = [(float(p["timestamp"][0]), float(p["timestamp"][1]), "hold") for p in (r.annotation or [])]
        sil.append((last, min(r.T, last + EOT_TAIL_S), "eot"))
        words = tuple(TimedWord(w, a, b) for w, a, b in r.words)
        turns.append(
            make_turn(key, r.audio, sil, words=words, group=key, skipped=skipped, where=f"{where}: sample {key}"))
    return _finish(script.name, "synth", turns, skipped, where)


def load_span_set(path: str | Path, source: str = "auto") -> SpanSet:
    """Read a span set; ``auto`` picks by what the path is (a folder: FDB; .yaml/.yml: synth; .parquet: eot-bench;
    .jsonl: eot-bench rows when its first row has silence_spans or an audio object, else a conversation manifest)."""
    p = Path(path)
    if source not in SOURCES:
        raise InputError(f"--source {source!r}: use one of {', '.join(SOURCES)}")
    if source == "auto":
        if p.is_dir():
            source = "fdb"
        elif p.suffix.lower() in (".yaml", ".yml"):
            source = "synth"
        elif p.suffix.lower() == ".parquet":
            source = "eot-bench"
        elif p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
            rows = json_lines(read_text(p), p)
            first = rows[0][1] if rows else {}
            eotbench = isinstance(first, dict) and ("silence_spans" in first or isinstance(first.get("audio"), dict))
            source = "eot-bench" if eotbench else "conversations"
        else:
            raise InputError(
                f"{p}: cannot tell the span source from the name; pass --source ({', '.join(SOURCES[1:])})")
    reader = {"eot-bench": read_eotbench, "fdb": read_fdb, "conversations": read_conversations,
              "synth": read_synth_script}[source]
    return reader(p)
