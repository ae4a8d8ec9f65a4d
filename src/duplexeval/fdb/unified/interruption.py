"""User interruption per sample (spec 000), from the transcript after R and VAD segments of the full output.

Exact time base: VAD segments are 16 kHz sample indices (one sample = 62.5 µs) and annotation/word
times are integer µs, so both are compared in half-microsecond *ticks*: a sample index i is 125*i
ticks and t µs is 2*t ticks. Nothing is rounded; reported seconds are ticks / 2e6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from duplexeval.fdb.unified.load import InterruptionInput

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

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "S": self.S_us / 1e6,
            "R": self.R_us / 1e6,
            "T": self.T_us / 1e6,
            "speech_at_onset": self.speech_at_onset,
            "speech_at_end": self.speech_at_end,
            "speech_before_onset": self.speech_before_onset,
            "stop_s": None if self.stop_ticks is None else self.stop_ticks / TICKS_PER_S,
            "speech_in_interruption_s": self.speech_in_interruption_ticks / TICKS_PER_S,
            "interruption_s": (self.R_us - self.S_us) / 1e6,
            "restarts": self.restarts,
            "first_word_s": None if self.first_word_us is None else self.first_word_us / 1e6,
            "latency_s": None if self.latency_us is None else self.latency_us / 1e6,
            "observable_s": (self.T_us - self.R_us) / 1e6,
            "n_words": self.n_words,
            "vad_segments": [[s / 16000, e / 16000] for s, e in self.segments],
        }


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
