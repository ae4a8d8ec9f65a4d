"""The shared take-turn rule of the official FDB v1.0 evaluators (pause, turn-taking, interruption).

Reproduced number for number: plain float arithmetic on the transcript times as written (no
microsecond rounding, unlike the unified rules), so a span of 0.9999999999999998 s is under 1 s
exactly as it is for the official scripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from duplexeval.fdb.transcript import Word
from duplexeval.jsontypes import JsonObject

TURN_DURATION_THRESHOLD_S = 1  # `turn_duration_threshold`
TURN_NUM_WORDS_THRESHOLD = 3  # `turn_num_words_threshold`

# Why a per-sample value could not be computed the official way (the official script raises here).
CRASH_NULL_LAST_END = "the last word has a null end: the official script raises a TypeError here"


@dataclass(frozen=True)
class TakeTurn:
    """One sample's take-turn decision: `tor` is 0/1, or None when the official code would crash."""

    tor: int | None
    n_words: int
    span_s: float | None  # last word end (or start, see below) minus first word start
    first_start_s: float | None
    null_last_end: bool = False
    crash: str | None = None

    @property
    def took_turn(self) -> int:
        """TOR as 0/1 for averaging; only valid when the official code would not crash."""
        if self.tor is None:
            raise ValueError(f"no TOR: {self.crash}")
        return self.tor

    def row(self, sample_id: str) -> JsonObject:
        """The fields every evaluated sample row starts with: id and this take-turn decision."""
        return {"id": sample_id, "evaluated": True, "tor": self.tor, "n_words": self.n_words, "span_s": self.span_s}


def take_turn(words: Sequence[Word], *, null_last_end_uses_start: bool) -> TakeTurn:
    """TOR = 1 when the whole transcript spans >= 1 s, or spans less but has more than 3 words.

    `null_last_end_uses_start`: pause handling replaces a null last end with the last start;
    turn-taking and interruption subtract None and crash, which is reported as `crash`.
    """
    n = len(words)
    if n == 0:
        return TakeTurn(0, 0, None, None)
    first = words[0].start
    last_end = words[-1].end
    null_last = last_end is None
    if last_end is None:
        if not null_last_end_uses_start:
            return TakeTurn(None, n, None, first, null_last_end=True, crash=CRASH_NULL_LAST_END)
        last_end = words[-1].start
    span = last_end - first
    if span < TURN_DURATION_THRESHOLD_S:
        tor = 0 if n <= TURN_NUM_WORDS_THRESHOLD else 1
    else:
        tor = 1
    return TakeTurn(tor, n, span, first, null_last_end=null_last)


def clamp_latency(latency_s: float) -> float:
    """A negative latency (reply started before the reference time) counts as 0 and stays in the mean."""
    return 0.0 if latency_s < 0 else latency_s


NO_TAKEOVER = "no takeover: the official script divides by zero here (and prints no result for this subset)"
NOT_PRINTED = "computed as the official script does, but it crashes before printing it (no takeover in the subset)"


def latency_sample(turn: TakeTurn, reference_s: float) -> tuple[float | None, float | None]:
    """(raw, clamped) latency of a takeover: first word start minus the reference time."""
    if turn.tor != 1 or turn.first_start_s is None:
        return None, None
    raw = turn.first_start_s - reference_s
    return raw, clamp_latency(raw)


class _Decided(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def turn(self) -> TakeTurn: ...


def crash_note(samples: Sequence[_Decided]) -> str | None:
    """If any sample would crash the official script, the note naming the first one."""
    for s in samples:
        if s.turn.crash:
            return f"sample {s.id}: {s.turn.crash} (and prints no result for this subset)"
    return None
