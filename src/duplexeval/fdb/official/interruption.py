"""Official user-interruption rule (`eval_user_interruption.py`): TOR and latency after the interrupt end R.

The transcript only holds words after R (the ASR stage cut the audio there). Latency = first word
start minus R, clamped at 0, over takeovers; the judge rates takeovers only (see judge.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from duplexeval.fdb.official.metric import NO_SAMPLES, Metric, null_metric, plain_mean
from duplexeval.fdb.official.rules import TakeTurn, take_turn
from duplexeval.fdb.official.turn_taking import NO_TAKEOVER, NOT_PRINTED, crash_note, latency_sample
from duplexeval.fdb.transcript import Word

AVERAGE_RATING = "Average rating"
AVERAGE_TAKE_TURN = "Average take turn"
AVERAGE_LATENCY = "Average latency"
NOT_JUDGED = "not judged (--judge none): the official script always asks gpt-4-turbo"
NEEDS_JUDGE = "needs --judge"  # the printed cell of a rating that was not judged (not a bare dash)


def needs_judge(m: object) -> bool:
    """True for a summary.json metric left empty only because no judge was asked (`--judge none`)."""
    return isinstance(m, dict) and m.get("value") is None and m.get("note") == NOT_JUDGED


@dataclass
class Rating:
    """The judge's verdict on one takeover: rating None when no attempt gave a parsable reply."""

    rating: int | None
    analysis: str | None
    attempts: int
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rating": self.rating,
            "analysis": self.analysis,
            "attempts": self.attempts,
            "retries": max(0, self.attempts - 1),
            "error": self.error,
        }


@dataclass
class InterruptionSample:
    """One evaluated interruption sample; `judge` is filled in for takeovers when a judge runs."""

    id: str
    interrupt_end_s: float
    context: str
    interrupt: str
    response_text: str
    turn: TakeTurn
    latency_s: float | None
    latency_clamped_s: float | None
    judge: Rating | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.turn.row(self.id),
            "interrupt_end_s": self.interrupt_end_s,
            "first_word_s": self.turn.first_start_s,
            "latency_s": self.latency_s,
            "latency_clamped_s": self.latency_clamped_s,
            "rating": None if self.judge is None else self.judge.rating,
            "judge": None if self.judge is None else self.judge.to_json(),
            "official_crash": self.turn.crash,
        }


def interruption_sample(
    sample_id: str, words: Sequence[Word], text: str, interrupt_end_s: float, context: str, interrupt: str
) -> InterruptionSample:
    """Per-sample TOR and latency against R = `interrupt.json[0].timestamp[1]`."""
    turn = take_turn(words, null_last_end_uses_start=False)
    raw, clamped = latency_sample(turn, interrupt_end_s)
    return InterruptionSample(sample_id, interrupt_end_s, context, interrupt, text, turn, raw, clamped)


def interruption_metrics(samples: Sequence[InterruptionSample], judged: bool) -> dict[str, Metric]:
    """`Average rating` (takeovers with a rating), `Average take turn` (all), `Average latency` (takeovers)."""
    crash = crash_note(samples)
    if crash:
        return {
            AVERAGE_RATING: null_metric(0, crash),
            AVERAGE_TAKE_TURN: null_metric(len(samples), crash),
            AVERAGE_LATENCY: null_metric(0, crash),
        }
    takeovers = [s for s in samples if s.turn.tor == 1]
    empty = NO_SAMPLES if not samples else NO_TAKEOVER
    if not judged:
        rating = null_metric(0, NOT_JUDGED)
    else:
        rated = [s.judge.rating for s in takeovers if s.judge is not None and s.judge.rating is not None]
        failed = len(takeovers) - len(rated)
        note = None
        if failed:
            note = (
                f"{failed} takeover sample(s) got no parsable rating within the attempt limit and are left out "
                "(the official script would retry them forever)"
            )
        # with no rating at all the note says why: no takeover (division by zero), or every attempt failed
        rating = plain_mean(rated, note or empty, note)
    tor_note = NOT_PRINTED if samples and not takeovers else None
    tor = plain_mean([s.turn.took_turn for s in samples], NO_SAMPLES, tor_note)
    latency = plain_mean([s.latency_clamped_s for s in takeovers if s.latency_clamped_s is not None], empty)
    return {AVERAGE_RATING: rating, AVERAGE_TAKE_TURN: tor, AVERAGE_LATENCY: latency}
