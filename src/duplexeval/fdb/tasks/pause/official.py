"""The official pause-handling rule (`eval_pause_handling.py`): the take-turn rule on the whole transcript.

`pause.json` is never read, so qualifying speech anywhere in the window counts as a takeover.
A null last end falls back to the last word's start (the only script that guards against it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from duplexeval.fdb.official.metric import NO_SAMPLES, Metric, plain_mean
from duplexeval.fdb.official.rules import TakeTurn, take_turn
from duplexeval.fdb.tasks.base import OfficialContext, OfficialOutcome, OfficialRules, Ready
from duplexeval.fdb.transcript import Word
from duplexeval.jsontypes import JsonObject

AVERAGE_TAKE_TURN = "Average take turn"


@dataclass(frozen=True)
class PauseSample:
    """One evaluated pause sample: its take-turn decision."""

    id: str
    turn: TakeTurn

    def to_json(self) -> JsonObject:
        return {**self.turn.row(self.id), "null_last_end": self.turn.null_last_end}


def pause_sample(sample_id: str, words: Sequence[Word]) -> PauseSample:
    """Per-sample TOR with the pause script's null-end fallback."""
    return PauseSample(sample_id, take_turn(words, null_last_end_uses_start=True))


def pause_metrics(samples: Sequence[PauseSample]) -> dict[str, Metric]:
    """`Average take turn` = mean TOR over the samples (lower is better)."""
    return {AVERAGE_TAKE_TURN: plain_mean([s.turn.took_turn for s in samples], NO_SAMPLES)}


class PauseOfficial(OfficialRules):
    """The take-turn rule on the whole transcript; pause.json is never read."""

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        done = [pause_sample(s.entry.id, s.words) for s in ready]
        return OfficialOutcome(done, pause_metrics(done))
