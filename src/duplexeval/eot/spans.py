"""Span sets: user turns (16 kHz mono audio) with their silence spans labelled ``hold`` or ``eot``, optional
timed words and chat messages; the causal grid of scored times inside each span.

A turn's times are seconds from the start of its audio. Spans shorter than 0.1 s are skipped and counted
(``SpanSet.skipped``), as eot-bench does; nothing else is dropped without a count.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE, TimedWord

MIN_SPAN_S = 0.1  # eot-bench's min_silence_span
GRID_STEP_S = 0.1  # eot-bench's inference_interval
TRANSCRIPT_LAG_S = 0.5  # eot-bench's transcript_lag
_GRID_EPS = 1e-6
LABELS = ("hold", "eot")


@dataclass(frozen=True)
class SilenceSpan:
    """One silence inside a turn, [start_s, end_s) from the turn's audio start, and what it is."""

    start_s: float
    end_s: float
    label: str  # "hold": the user resumes after it; "eot": the user's turn is over
    index: int  # its position among all the turn's silences (eot-bench's span_index)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class SpanTurn:
    """One user turn: audio from its start, the silences to score, words and prior chat messages."""

    id: str
    language: str
    audio: np.ndarray  # float32, 16 kHz mono
    spans: tuple[SilenceSpan, ...]
    words: tuple[TimedWord, ...] = ()
    messages: tuple[dict[str, str], ...] = ()
    group: str = ""  # the conversation / recording the turn came from (reported; turns are the resampling unit)

    @property
    def duration_s(self) -> float:
        return self.audio.size / SAMPLE_RATE


@dataclass
class SpanSet:
    """Turns from one source, with counts of what was skipped and why."""

    name: str
    source: str  # "eot-bench", "fdb", "conversations", "synth"
    turns: list[SpanTurn]
    skipped: dict[str, int] = field(default_factory=dict)

    def sha256(self) -> str:
        """Hash of everything a prediction depends on: ids, languages, spans, words, messages and audio bytes."""
        h = hashlib.sha256()
        for t in self.turns:
            head = {"id": t.id, "language": t.language, "group": t.group,
                    "spans": [[s.index, s.label, round(s.start_s, 6), round(s.end_s, 6)] for s in t.spans],
                    "words": [[w.text, w.start, w.end] for w in t.words], "messages": list(t.messages)}  # fmt: skip
            h.update(json.dumps(head, sort_keys=True).encode("utf-8"))
            h.update(np.ascontiguousarray(t.audio, dtype=np.float32).tobytes())
        return h.hexdigest()

    @property
    def n_spans(self) -> int:
        return sum(len(t.spans) for t in self.turns)


def make_turn(
    turn_id: str,
    audio16k: np.ndarray,
    silences: Sequence[tuple[float, float, str]],
    *,
    language: str = "en",
    words: Sequence[TimedWord] = (),
    messages: Sequence[dict[str, str]] = (),
    group: str = "",
    skipped: dict[str, int] | None = None,
    where: str = "",
) -> SpanTurn:
    """Validate one turn; silences are (start, end, label) in time order; those under 0.1 s are counted in
    ``skipped``."""
    where = where or f"turn {turn_id!r}"
    if not isinstance(turn_id, str) or not turn_id or any(ord(c) < 32 for c in turn_id):
        raise InputError(f"{where}: id must be a non-empty string without control characters")
    a = np.ascontiguousarray(audio16k, dtype=np.float32)
    if a.ndim != 1:
        raise InputError(f"{where}: audio must be mono")
    if a.size and not np.isfinite(a).all():
        raise InputError(f"{where}: audio has NaN or infinite samples")
    dur = a.size / SAMPLE_RATE
    spans: list[SilenceSpan] = []
    prev_end = -math.inf
    for k, (s, e, label) in enumerate(silences):
        if label not in LABELS:
            raise InputError(f"{where}: silence {k}: label must be 'hold' or 'eot', got {label!r}")
        for name, v in (("start", s), ("end", e)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"{where}: silence {k}: {name} must be a finite number >= 0, got {v!r}")
        if e < s:
            raise InputError(f"{where}: silence {k}: end {e} is before start {s}")
        if s < prev_end - _GRID_EPS:
            raise InputError(f"{where}: silence {k} starts at {s} s, before the previous one ends ({prev_end} s)")
        if e > dur + 0.05:
            raise InputError(f"{where}: silence {k} ends at {e} s, after the audio ({dur:.3f} s)")
        if label == "eot" and k != len(silences) - 1:
            raise InputError(f"{where}: silence {k} is labelled eot but is not the turn's last silence")
        prev_end = e
        if round(float(min(e, dur)), 6) - round(float(s), 6) < MIN_SPAN_S - _GRID_EPS:
            if skipped is not None:
                skipped[f"{label}_shorter_than_0.1s"] = skipped.get(f"{label}_shorter_than_0.1s", 0) + 1
            continue
        spans.append(SilenceSpan(round(float(s), 6), round(float(min(e, dur)), 6), label, k))
    return SpanTurn(turn_id, language, a, tuple(spans), tuple(words), tuple(dict(m) for m in messages), group)


def time_grid(start: float, end: float, step: float = GRID_STEP_S) -> list[float]:
    """Scored times in [start, end]: start, start + step, ..., and the end itself when it is off the grid."""
    n = max(0, math.floor((end - start) / step + _GRID_EPS))
    vals = [round(start + i * step, 6) for i in range(n + 1)]
    if vals[-1] < end - _GRID_EPS:
        vals.append(round(end, 6))
    return vals


def end_sample(t: float) -> int:
    """Samples of audio the detector may see at time t: everything before t."""
    return math.floor(t * SAMPLE_RATE + _GRID_EPS)


def visible_messages(turn: SpanTurn, t: float, lag_s: float) -> list[dict[str, str]]:
    """The turn's prior messages plus the user's words that ended by t - lag (eot-bench's transcript rule)."""
    msgs = [dict(m) for m in turn.messages]
    words = [w.text.strip() for w in turn.words if (w.end if w.end is not None else w.start) <= t - lag_s + _GRID_EPS]
    words = [w for w in words if w]
    if words:
        msgs.append({"role": "user", "content": " ".join(words)})
    return msgs


@dataclass(frozen=True)
class GridPoint:
    """One scored time of one span (the metadata columns of a prediction row)."""

    span_index: int
    label: str
    timestamp: float
    silence_dur: float


def grid_points(turn: SpanTurn, step: float = GRID_STEP_S) -> list[GridPoint]:
    """Every scored time of every span of a turn, in time order."""
    out = []
    for sp in turn.spans:
        for t in time_grid(sp.start_s, sp.end_s, step):
            out.append(GridPoint(sp.index, sp.label, t, round(t - sp.start_s, 6)))
    return out


@dataclass(frozen=True)
class SpanSetSummary:
    """Counts for reports: turns, spans by label, skipped by reason (sorted), and the span set's hash."""

    name: str
    source: str
    n_turns: int
    n_hold_spans: int
    n_eot_spans: int
    skipped: dict[str, int]
    sha256: str

    def to_json(self) -> JsonObject:
        return {"name": self.name, "source": self.source, "n_turns": self.n_turns, "n_hold_spans": self.n_hold_spans,
                "n_eot_spans": self.n_eot_spans, "skipped": dict(self.skipped), "sha256": self.sha256}  # fmt: skip


def span_set_summary(ss: SpanSet) -> SpanSetSummary:
    """Counts for reports: turns, spans by label, skipped by reason."""
    n_hold = sum(1 for t in ss.turns for s in t.spans if s.label == "hold")
    n_eot = sum(1 for t in ss.turns for s in t.spans if s.label == "eot")
    return SpanSetSummary(ss.name, ss.source, len(ss.turns), n_hold, n_eot, dict(sorted(ss.skipped.items())),
                          ss.sha256())
