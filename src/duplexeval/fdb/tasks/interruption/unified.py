"""User interruption by the unified rules (spec 000), from the transcript after R and VAD segments of the output.

Exact time base: VAD segments are 16 kHz sample indices (one sample = 62.5 µs) and annotation/word
times are integer µs, so both are compared in half-microsecond *ticks*: a sample index i is 125*i
ticks and t µs is 2*t ticks. Nothing is rounded; reported seconds are ticks / 2e6.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from duplexeval import stats
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.sample import SampleAudio
from duplexeval.fdb.tasks.base import MetricSpec, OpenedSample, PairedSpec, UnifiedRules, time_units
from duplexeval.fdb.tasks.interruption.annotation import NAME, interrupt_us
from duplexeval.fdb.unified.aggregate import (
    RESPONSE_KINDS,
    Block,
    Counts,
    UnifiedMetric,
    latency,
    response_metrics,
    response_specs,
    share,
)
from duplexeval.fdb.unified.load import check_wav, fmt_s, sample_words
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.fdb_names import ASR_FILE, OUTPUT_WAV
from duplexeval.units import Span, to_us

if TYPE_CHECKING:
    from duplexeval.fdb.tasks.interruption.sensitivity import Sensitivity
    from duplexeval.fdb.unified.load import LoadedTree


@dataclass(frozen=True)
class InterruptionInput:
    """An interruption sample: T, words (all at or after R), S and R in µs, and the checked output.wav (its source,
    read again by the VAD)."""

    T_us: int
    words: tuple[Span, ...]
    S_us: int
    R_us: int
    n_samples: int
    audio: SampleAudio


TICKS_PER_US = 2
TICKS_PER_SAMPLE = 125  # 62.5 µs
TICKS_PER_S = 2_000_000

NOT_EXERCISED = "not_exercised"
SPEAKING_AT_END = "speaking_at_end"
RESPONSE = "response"
NO_RESPONSE = "no_response"
INTERRUPTION_OUTCOMES = (NOT_EXERCISED, SPEAKING_AT_END, RESPONSE, NO_RESPONSE)


@dataclass(frozen=True)
class InterruptionRow:
    """One interruption sample: the outcome, the VAD flags and the stop / speech / restart quantities.

    Times are half-µs ticks. `stop_ticks` is None when S is not covered or the covering segment runs to T.
    """

    outcome: str
    S_us: int
    R_us: int
    T_us: int
    speech_at_onset: bool
    speech_at_end: bool
    speech_before_onset: bool
    stop_ticks: int | None
    speech_in_interruption_ticks: int
    restarts: int
    first_word_us: int | None
    latency_us: int | None
    n_words: int
    segments: tuple[tuple[int, int], ...]

    @property
    def exercised(self) -> bool:
        return self.outcome != NOT_EXERCISED

    @property
    def stop_s(self) -> float | None:
        return None if self.stop_ticks is None else self.stop_ticks / TICKS_PER_S

    @property
    def latency_s(self) -> float | None:
        return None if self.latency_us is None else self.latency_us / 1e6

    @property
    def interruption_ticks(self) -> int:
        """[S, R]'s length in ticks."""
        return (self.R_us - self.S_us) * TICKS_PER_US

    def to_json(self) -> JsonObject:
        return {
            "outcome": self.outcome,
            "S": self.S_us / 1e6,
            "R": self.R_us / 1e6,
            "T": self.T_us / 1e6,
            "speech_at_onset": self.speech_at_onset,
            "speech_at_end": self.speech_at_end,
            "speech_before_onset": self.speech_before_onset,
            "stop_s": self.stop_s,
            "speech_in_interruption_s": self.speech_in_interruption_ticks / TICKS_PER_S,
            "interruption_s": (self.R_us - self.S_us) / 1e6,
            "restarts": self.restarts,
            "first_word_s": None if self.first_word_us is None else self.first_word_us / 1e6,
            "latency_s": self.latency_s,
            "observable_s": (self.T_us - self.R_us) / 1e6,
            "n_words": self.n_words,
            "vad_segments": [[s / 16000, e / 16000] for s, e in self.segments],
        }

    @classmethod
    def from_json(cls, js: JsonObject) -> InterruptionRow:
        """The row back from its unified-samples.jsonl fields (the inverse of `to_json`)."""
        stop, first, lat = js["stop_s"], js["first_word_s"], js["latency_s"]
        return cls(
            outcome=str(js["outcome"]),
            S_us=to_us(js["S"]),
            R_us=to_us(js["R"]),
            T_us=to_us(js["T"]),
            speech_at_onset=bool(js["speech_at_onset"]),
            speech_at_end=bool(js["speech_at_end"]),
            speech_before_onset=bool(js["speech_before_onset"]),
            stop_ticks=None if stop is None else round(float(stop) * TICKS_PER_S),
            speech_in_interruption_ticks=round(float(js["speech_in_interruption_s"]) * TICKS_PER_S),
            restarts=int(js["restarts"]),
            first_word_us=None if first is None else to_us(first),
            latency_us=None if lat is None else to_us(lat),
            n_words=int(js["n_words"]),
            segments=tuple((round(float(a) * 16000), round(float(b) * 16000)) for a, b in js["vad_segments"]),
        )


def r_limit_sample(R_us: int) -> int:
    """The last 16 kHz sample index at or before R (exact: 125 * i <= 2 * R_us)."""
    return (R_us * TICKS_PER_US) // TICKS_PER_SAMPLE


def score_interruption(inp: InterruptionInput, segments: Sequence[tuple[int, int]]) -> InterruptionRow:
    """Classify one eligible interruption sample from its VAD segments (sample indices, end exclusive).

    - speech_at_onset: a segment with start <= S < end; speech_at_end: start < R < end.
    - speech_before_onset: detected speech anywhere in [0, S), i.e. a segment starting before S.
    - stop: end of the segment covering S minus S; no observed stop when that segment runs to T.
    - speech in [S, R]: total overlap of segments with [S, R]; restarts: segments starting inside (S, R).

    Only segments starting at or before R enter any of these; the row keeps just those (`vad_segments`).
    """
    S = inp.S_us * TICKS_PER_US
    R = inp.R_us * TICKS_PER_US
    segs = tuple((int(s), int(e)) for s, e in segments)
    for s, e in segs:
        if not 0 <= s < e <= inp.n_samples:
            raise ValueError(f"VAD segment ({s}, {e}) is not inside the {inp.n_samples}-sample output")
    ticks = [(s * TICKS_PER_SAMPLE, e * TICKS_PER_SAMPLE, e) for s, e in segs]
    covering = [(s, e, e_idx) for s, e, e_idx in ticks if s <= S < e]
    at_onset = bool(covering)
    at_end = any(s < R < e for s, e, _ in ticks)
    before = any(s < S for s, _, _ in ticks)
    stop: int | None = None
    if covering:
        _, e, e_idx = covering[0]
        stop = None if e_idx >= inp.n_samples else e - S
    inside = sum(max(0, min(e, R) - max(s, S)) for s, e, _ in ticks)
    restarts = sum(1 for s, _, _ in ticks if S < s < R)
    first = min((w.start_us for w in inp.words), default=None)
    latency: int | None = None
    if not at_onset:
        outcome = NOT_EXERCISED
    elif at_end:
        outcome = SPEAKING_AT_END
    elif first is not None:  # every word starts at or after R (checked on load)
        outcome = RESPONSE
        latency = first - inp.R_us
    else:
        outcome = NO_RESPONSE
    return InterruptionRow(
        outcome=outcome,
        S_us=inp.S_us,
        R_us=inp.R_us,
        T_us=inp.T_us,
        speech_at_onset=at_onset,
        speech_at_end=at_end,
        speech_before_onset=before,
        stop_ticks=stop,
        speech_in_interruption_ticks=inside,
        restarts=restarts,
        first_word_us=first,
        latency_us=latency,
        n_words=len(inp.words),
        segments=tuple((s, e) for s, e in segs if s * TICKS_PER_SAMPLE <= R),
    )


def interruption_block(rows: Sequence[InterruptionRow], counts: Counts) -> Block:
    """Interruption metrics: exercised_rate over eligible, everything else over exercised samples.

    Unknown outcomes in the selected bounds: the ineligible, plus not_exercised for all but exercised_rate.
    """
    n_elig, sel, inel = counts.eligible, counts.selected, counts.ineligible
    oc = Counter(r.outcome for r in rows)
    ex = [r for r in rows if r.exercised]
    n_ex = len(ex)
    unk = inel + oc[NOT_EXERCISED]
    lat = [r.latency_us for r in ex]
    metrics: dict[str, UnifiedMetric] = {
        "exercised_rate": share(n_ex, n_elig, inel, sel),
        "speaking_at_end_rate": share(oc[SPEAKING_AT_END], n_ex, unk, sel),
    }
    metrics.update(response_metrics(lat, oc[NO_RESPONSE], n_ex, unk, sel))
    metrics["stop_latency_s"] = latency(
        [math.inf if r.stop_ticks is None else r.stop_ticks for r in ex], TICKS_PER_S
    )
    metrics["speech_s_per_interruption_s"] = stats.pooled_seconds(
        [r.speech_in_interruption_ticks for r in ex],
        [(r.R_us - r.S_us) * TICKS_PER_US for r in ex],
        TICKS_PER_S,
    )
    metrics["restart_rate"] = share(sum(1 for r in ex if r.restarts > 0), n_ex, unk, sel)
    return Block(NAME, counts.adding(exercised=n_ex, **{o: oc[o] for o in INTERRUPTION_OUTCOMES}), metrics,
                 observable=True, min_observable_s=min(((r.T_us - r.R_us) / 1e6 for r in rows), default=None))


def parse_interruption(s: OpenedSample) -> InterruptionInput:
    """interrupt.json's S and R, the words (all at or after R), then the hash-checked, 16 kHz output.wav."""
    entry = s.entry
    S_us, R_us = interrupt_us(s.annotation, s.T_us, s.where())
    words = sample_words(s)
    for i, w in enumerate(words):
        if w.start_us < R_us:
            raise InputError(
                f"{s.where(s.transcript_path)}: word {i} starts at {fmt_s(w.start_us)}, before R={fmt_s(R_us)} "
                "(interruption transcripts hold only words from R on)"
            )
    wav_path = s.dir / OUTPUT_WAV
    data = s.read(OUTPUT_WAV)
    assert s.asr is not None  # the scorer opens transcribed samples only
    audio_sha = s.asr.extra.get("audio_sha256")
    if isinstance(audio_sha, str) and audio_sha != entry.files[OUTPUT_WAV]:
        raise RefusalError(
            f"{s.root / ASR_FILE}: sample {entry.key}: transcribed a different output.wav than manifest.json "
            "records; rerun asr"
        )
    n = check_wav(data, wav_path, entry)
    return InterruptionInput(s.T_us, words, S_us, R_us, n, s.audio_source())


class InterruptionUnified(UnifiedRules[InterruptionInput, InterruptionRow]):
    """S and R, the words after R and the VAD segments of output.wav up to R."""

    metric_kinds = {
        "exercised_rate": stats.Share,
        "speaking_at_end_rate": stats.Share,
        **RESPONSE_KINDS,
        "stop_latency_s": stats.Latency,
        "speech_s_per_interruption_s": stats.PooledSeconds,
        "restart_rate": stats.Share,
    }

    def parse(self, sample: OpenedSample) -> InterruptionInput:
        return parse_interruption(sample)

    def vad(self, inp: InterruptionInput) -> tuple[SampleAudio, int | None]:
        """Only segments starting at or before R enter any quantity, so each VAD scan may stop once they are final."""
        return inp.audio, r_limit_sample(inp.R_us)

    def score(self, inp: InterruptionInput, segments: Sequence[tuple[int, int]] | None) -> InterruptionRow:
        return score_interruption(inp, segments or ())

    def row_from_json(self, js: JsonObject) -> InterruptionRow:
        return InterruptionRow.from_json(js)

    def aggregate(self, rows: Sequence[InterruptionRow], counts: Counts) -> Block:
        return interruption_block(rows, counts)

    def sensitivity(self, loaded: LoadedTree, jobs: int | None) -> Sensitivity:
        from duplexeval.fdb.tasks.interruption.sensitivity import analyse

        return analyse(loaded, jobs)


EXERCISED = MetricSpec[InterruptionRow]("exercised_rate", "share", lambda r: r.exercised)
RESPONSE_SPECS: tuple[MetricSpec[InterruptionRow], ...] = response_specs(RESPONSE, NO_RESPONSE)
PAIRED = PairedSpec[InterruptionRow](
    (  # over samples exercised in both (exercised_rate, the gate, over eligible in both)
        MetricSpec("speaking_at_end_rate", "share", lambda r: r.outcome == SPEAKING_AT_END),
        *RESPONSE_SPECS,
        MetricSpec("stop_latency_s", "median", lambda r: time_units(r.stop_ticks), TICKS_PER_S),
        MetricSpec("speech_s_per_interruption_s", "ratio",
                   lambda r: (time_units(r.speech_in_interruption_ticks), time_units(r.interruption_ticks))),
        MetricSpec("restart_rate", "share", lambda r: r.restarts > 0),
    ),
    gate=EXERCISED,
    over="samples exercised in both (exercised_rate: eligible in both)",
)
