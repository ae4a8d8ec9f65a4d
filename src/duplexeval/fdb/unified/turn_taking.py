"""Smooth turn-taking per sample (spec 000): exactly one of early_start, response, no_response, in µs.

An early start (a word before E) is never a response, so talking through the end of the user's turn
cannot buy a short latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duplexeval.fdb.unified.load import TurnInput

EARLY_START = "early_start"
RESPONSE = "response"
NO_RESPONSE = "no_response"
TURN_OUTCOMES = (EARLY_START, RESPONSE, NO_RESPONSE)


@dataclass(frozen=True)
class TurnRow:
    """One turn-taking sample: outcome, E, first word onset and the latency (None unless a response)."""

    outcome: str
    E_us: int
    T_us: int
    first_word_us: int | None
    latency_us: int | None
    n_words: int

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "E": self.E_us / 1e6,
            "T": self.T_us / 1e6,
            "first_word_s": None if self.first_word_us is None else self.first_word_us / 1e6,
            "latency_s": None if self.latency_us is None else self.latency_us / 1e6,
            "observable_s": (self.T_us - self.E_us) / 1e6,
            "n_words": self.n_words,
        }


def score_turn(inp: TurnInput) -> TurnRow:
    """Classify one eligible turn-taking sample by its first word onset relative to E."""
    if not inp.words:
        return TurnRow(NO_RESPONSE, inp.E_us, inp.T_us, None, None, 0)
    first = min(w.start_us for w in inp.words)
    if first < inp.E_us:
        return TurnRow(EARLY_START, inp.E_us, inp.T_us, first, None, len(inp.words))
    return TurnRow(RESPONSE, inp.E_us, inp.T_us, first, first - inp.E_us, len(inp.words))
