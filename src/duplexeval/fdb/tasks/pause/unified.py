"""Pause handling by the unified rules (spec 000): intrusion flags, owned intervals and pause coverage, in integer µs.

The window is a non-yielding user turn: from the first pause start to T, a model word onset takes the
floor too early. Pause i owns [a_i, a_{i+1}); the last pause owns [a_n, T] (closed, so a word at T counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from duplexeval import stats
from duplexeval.fdb.tasks.base import MetricSpec, OpenedSample, PairedSpec, UnifiedRules, time_units
from duplexeval.fdb.tasks.pause.annotation import NAME, pauses_us
from duplexeval.fdb.unified.aggregate import Block, Counts, UnifiedMetric, share
from duplexeval.fdb.unified.load import sample_words
from duplexeval.jsontypes import JsonObject
from duplexeval.units import US_PER_S, Span, to_us


@dataclass(frozen=True)
class PauseInput:
    """A pause-handling sample: T, the model's words and the annotated pauses `[a, b]`, all in µs."""

    T_us: int
    words: tuple[Span, ...]
    pauses: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PauseRow:
    """The per-sample pause quantities; the flags feed the sample shares, the counts the pooled ratios."""

    pause_intrusion: bool
    inside_pause_onset: bool
    pre_pause_speech: bool
    carry_in: bool
    any_speech: bool
    intrusion_words: int
    n_pauses: int
    pauses_intruded: int
    pause_us: int
    covered_us: int
    first_pause_us: int
    pauses: tuple[tuple[int, int], ...]
    n_words: int

    def to_json(self) -> JsonObject:
        """The spec's per-sample fields for unified-samples.jsonl (times in seconds)."""
        return {
            "pause_intrusion": self.pause_intrusion,
            "inside_pause_onset": self.inside_pause_onset,
            "pre_pause_speech": self.pre_pause_speech,
            "carry_in": self.carry_in,
            "any_speech": self.any_speech,
            "intrusion_words": self.intrusion_words,
            "n_words": self.n_words,
            "first_pause_s": self.first_pause_us / 1e6,
            "pauses": [[a / 1e6, b / 1e6] for a, b in self.pauses],
            "n_pauses": self.n_pauses,
            "pauses_intruded": self.pauses_intruded,
            "pause_s": self.pause_s,
            "intrusion_s": self.intrusion_s,
        }

    @classmethod
    def from_json(cls, js: JsonObject) -> PauseRow:
        """The row back from its unified-samples.jsonl fields (the inverse of `to_json`)."""
        return cls(
            pause_intrusion=bool(js["pause_intrusion"]),
            inside_pause_onset=bool(js["inside_pause_onset"]),
            pre_pause_speech=bool(js["pre_pause_speech"]),
            carry_in=bool(js["carry_in"]),
            any_speech=bool(js["any_speech"]),
            intrusion_words=int(js["intrusion_words"]),
            n_pauses=int(js["n_pauses"]),
            pauses_intruded=int(js["pauses_intruded"]),
            pause_us=to_us(js["pause_s"]),
            covered_us=to_us(js["intrusion_s"]),
            first_pause_us=to_us(js["first_pause_s"]),
            pauses=tuple((to_us(a), to_us(b)) for a, b in js["pauses"]),
            n_words=int(js["n_words"]),
        )

    @property
    def pause_s(self) -> float:
        """The annotated pause time in seconds."""
        return self.pause_us / 1e6

    @property
    def intrusion_s(self) -> float:
        """The pause time covered by model words, in seconds."""
        return self.covered_us / 1e6


def union_length_inside(spans: list[tuple[int, int]], windows: tuple[tuple[int, int], ...]) -> int:
    """Length of (union of spans) ∩ (union of disjoint windows); zero-length spans add nothing."""
    merged: list[list[int]] = []
    for s, e in sorted(sp for sp in spans if sp[1] > sp[0]):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    total = 0
    for a, b in windows:
        for s, e in merged:
            lo, hi = max(a, s), min(b, e)
            if hi > lo:
                total += hi - lo
    return total


def owned_intervals(pauses: tuple[tuple[int, int], ...], T_us: int) -> list[tuple[int, int, bool]]:
    """(start, end, end_closed) for each pause's owned time: to the next pause start, the last to T inclusive."""
    out: list[tuple[int, int, bool]] = []
    for i, (a, _) in enumerate(pauses):
        if i + 1 < len(pauses):
            out.append((a, pauses[i + 1][0], False))
        else:
            out.append((a, T_us, True))
    return out


def score_pause(inp: PauseInput) -> PauseRow:
    """All pause-handling quantities of one eligible sample."""
    words: tuple[Span, ...] = inp.words
    p1 = inp.pauses[0][0]
    starts = [w.start_us for w in words]
    intruding = [s for s in starts if s >= p1]
    inside = any(a <= s < b for s in starts for a, b in inp.pauses)
    carry = any(w.start_us < p1 < w.end_us for w in words)
    intruded = 0
    for lo, hi, closed in owned_intervals(inp.pauses, inp.T_us):
        if any(lo <= s and (s <= hi if closed else s < hi) for s in starts):
            intruded += 1
    return PauseRow(
        pause_intrusion=bool(intruding),
        inside_pause_onset=inside,
        pre_pause_speech=any(s < p1 for s in starts),
        carry_in=carry,
        any_speech=bool(words),
        intrusion_words=len(intruding),
        n_pauses=len(inp.pauses),
        pauses_intruded=intruded,
        pause_us=sum(b - a for a, b in inp.pauses),
        covered_us=union_length_inside([(w.start_us, w.end_us) for w in words], inp.pauses),
        first_pause_us=p1,
        pauses=inp.pauses,
        n_words=len(words),
    )


def pause_block(rows: Sequence[PauseRow], counts: Counts) -> Block:
    """Pause-handling metrics over eligible samples; pooled ratios over their pauses and pause seconds."""
    n, sel, unk = counts.eligible, counts.selected, counts.ineligible

    def flag(name: str) -> stats.Share:
        return share(sum(1 for r in rows if getattr(r, name)), n, unk, sel)

    metrics: dict[str, UnifiedMetric] = {
        "pause_intrusion_rate": flag("pause_intrusion"),
        "pause_intrusion_per_pause": stats.pooled_count([r.pauses_intruded for r in rows], [r.n_pauses for r in rows]),
        "intrusion_s_per_pause_s": stats.pooled_seconds([r.covered_us for r in rows], [r.pause_us for r in rows],
                                                        US_PER_S),
        "inside_pause_onset_rate": flag("inside_pause_onset"),
        "pre_pause_speech_rate": flag("pre_pause_speech"),
        "carry_in_rate": flag("carry_in"),
        "any_speech_rate": flag("any_speech"),
    }
    return Block(NAME, counts.adding(pauses=sum(r.n_pauses for r in rows)), metrics)


class PauseUnified(UnifiedRules[PauseInput, PauseRow]):
    """pause.json's pauses (checked first), then the transcript's words; no VAD."""

    metric_kinds = {
        "pause_intrusion_rate": stats.Share,
        "pause_intrusion_per_pause": stats.PooledCount,
        "intrusion_s_per_pause_s": stats.PooledSeconds,
        "inside_pause_onset_rate": stats.Share,
        "pre_pause_speech_rate": stats.Share,
        "carry_in_rate": stats.Share,
        "any_speech_rate": stats.Share,
    }

    def parse(self, sample: OpenedSample) -> PauseInput:
        pauses = pauses_us(sample.annotation, sample.T_us, sample.where())
        return PauseInput(sample.T_us, sample_words(sample), pauses)

    def score(self, inp: PauseInput, segments: Sequence[tuple[int, int]] | None) -> PauseRow:
        return score_pause(inp)

    def row_from_json(self, js: JsonObject) -> PauseRow:
        return PauseRow.from_json(js)

    def aggregate(self, rows: Sequence[PauseRow], counts: Counts) -> Block:
        return pause_block(rows, counts)


PAIRED = PairedSpec[PauseRow]((
    MetricSpec("pause_intrusion_rate", "share", lambda r: r.pause_intrusion),
    MetricSpec("pause_intrusion_per_pause", "ratio", lambda r: (r.pauses_intruded, r.n_pauses)),
    MetricSpec("intrusion_s_per_pause_s", "ratio", lambda r: (time_units(r.covered_us), time_units(r.pause_us))),
    MetricSpec("inside_pause_onset_rate", "share", lambda r: r.inside_pause_onset),
    MetricSpec("pre_pause_speech_rate", "share", lambda r: r.pre_pause_speech),
    MetricSpec("carry_in_rate", "share", lambda r: r.carry_in),
    MetricSpec("any_speech_rate", "share", lambda r: r.any_speech),
))
