"""The official smooth turn-taking rule (`eval_smooth_turn_taking.py`).

Latency = first word start minus `turn_taking.json[0].timestamp[0]`, clamped at 0 (and still
averaged), over takeovers only; no takeover in the subset is a division by zero for the script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from duplexeval.fdb.official.metric import NO_SAMPLES, Metric, null_metric, plain_mean
from duplexeval.fdb.official.rules import NO_TAKEOVER, NOT_PRINTED, TakeTurn, crash_note, latency_sample, take_turn
from duplexeval.fdb.tasks.base import OfficialContext, OfficialOutcome, OfficialRules, Ready
from duplexeval.fdb.transcript import Word
from duplexeval.jsontypes import JsonObject

AVERAGE_TAKE_TURN = "Average take turn"
AVERAGE_LATENCY = "Average latency"


@dataclass(frozen=True)
class TurnTakingSample:
    """One evaluated turn-taking sample."""

    id: str
    turn_end_s: float
    turn: TakeTurn
    latency_s: float | None  # raw, may be negative; None without a takeover
    latency_clamped_s: float | None

    def to_json(self) -> JsonObject:
        return {
            **self.turn.row(self.id),
            "turn_end_s": self.turn_end_s,
            "first_word_s": self.turn.first_start_s,
            "latency_s": self.latency_s,
            "latency_clamped_s": self.latency_clamped_s,
            "official_crash": self.turn.crash,
        }


def turn_taking_sample(sample_id: str, words: Sequence[Word], turn_end_s: float) -> TurnTakingSample:
    """Per-sample TOR and latency; a null last end is an official crash (TOR None)."""
    turn = take_turn(words, null_last_end_uses_start=False)
    raw, clamped = latency_sample(turn, turn_end_s)
    return TurnTakingSample(sample_id, turn_end_s, turn, raw, clamped)


def turn_taking_metrics(samples: Sequence[TurnTakingSample]) -> dict[str, Metric]:
    """`Average take turn` over all samples (higher is better), `Average latency` over takeovers."""
    crash = crash_note(samples)
    if crash:
        return {AVERAGE_TAKE_TURN: null_metric(len(samples), crash), AVERAGE_LATENCY: null_metric(0, crash)}
    lat = [s.latency_clamped_s for s in samples if s.latency_clamped_s is not None]
    tor_note = NOT_PRINTED if samples and not lat else None
    tor = plain_mean([s.turn.took_turn for s in samples], NO_SAMPLES, tor_note)
    latency = plain_mean(lat, NO_SAMPLES if not samples else NO_TAKEOVER)
    return {AVERAGE_TAKE_TURN: tor, AVERAGE_LATENCY: latency}


class TurnOfficial(OfficialRules):
    """TOR and latency from E = `turn_taking.json[0].timestamp[0]`."""

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        done = [turn_taking_sample(s.entry.id, s.words, s.annotation.E) for s in ready]
        return OfficialOutcome(done, turn_taking_metrics(done))
