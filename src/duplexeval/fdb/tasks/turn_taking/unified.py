"""Smooth turn taking by the unified rules (spec 000): exactly one of early_start, response, no_response, in µs.

An early start (a word before E) is never a response, so talking through the end of the user's turn
cannot buy a short latency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from duplexeval import stats
from duplexeval.fdb.tasks.base import MetricSpec, OpenedSample, PairedSpec, UnifiedRules
from duplexeval.fdb.tasks.turn_taking.annotation import NAME, turn_end_us
from duplexeval.fdb.unified.aggregate import (
    RESPONSE_KINDS,
    Block,
    Counts,
    UnifiedMetric,
    response_metrics,
    response_specs,
    share,
)
from duplexeval.fdb.unified.load import sample_words
from duplexeval.jsontypes import JsonObject
from duplexeval.units import Span, to_us


@dataclass(frozen=True)
class TurnInput:
    """A turn-taking sample: T, the model's words and the reference E (end of the user's turn), in µs."""

    T_us: int
    words: tuple[Span, ...]
    E_us: int


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

    @property
    def E(self) -> float:
        return self.E_us / 1e6

    @property
    def first_word_s(self) -> float | None:
        return None if self.first_word_us is None else self.first_word_us / 1e6

    @property
    def latency_s(self) -> float | None:
        return None if self.latency_us is None else self.latency_us / 1e6

    def to_json(self) -> JsonObject:
        return {
            "outcome": self.outcome,
            "E": self.E,
            "T": self.T_us / 1e6,
            "first_word_s": self.first_word_s,
            "latency_s": self.latency_s,
            "observable_s": (self.T_us - self.E_us) / 1e6,
            "n_words": self.n_words,
        }

    @classmethod
    def from_json(cls, js: JsonObject) -> TurnRow:
        """The row back from its unified-samples.jsonl fields (the inverse of `to_json`)."""
        return cls(str(js["outcome"]), to_us(js["E"]), to_us(js["T"]), _us(js["first_word_s"]), _us(js["latency_s"]),
                   int(js["n_words"]))


def _us(seconds: float | None) -> int | None:
    return None if seconds is None else to_us(seconds)


def score_turn(inp: TurnInput) -> TurnRow:
    """Classify one eligible turn-taking sample by its first word onset relative to E."""
    if not inp.words:
        return TurnRow(NO_RESPONSE, inp.E_us, inp.T_us, None, None, 0)
    first = min(w.start_us for w in inp.words)
    if first < inp.E_us:
        return TurnRow(EARLY_START, inp.E_us, inp.T_us, first, None, len(inp.words))
    return TurnRow(RESPONSE, inp.E_us, inp.T_us, first, first - inp.E_us, len(inp.words))


def turn_block(rows: Sequence[TurnRow], counts: Counts) -> Block:
    """Turn-taking metrics over eligible samples; a sample without a response has latency +inf."""
    n, sel, unk = counts.eligible, counts.selected, counts.ineligible
    oc = Counter(r.outcome for r in rows)
    lat = [r.latency_us for r in rows]
    metrics: dict[str, UnifiedMetric] = {"early_start_rate": share(oc[EARLY_START], n, unk, sel)}
    metrics.update(response_metrics(lat, oc[NO_RESPONSE], n, unk, sel))
    return Block(NAME, counts.adding(**{o: oc[o] for o in TURN_OUTCOMES}), metrics, observable=True,
                 min_observable_s=min(((r.T_us - r.E_us) / 1e6 for r in rows), default=None))


class TurnUnified(UnifiedRules[TurnInput, TurnRow]):
    """turn_taking.json's E (checked first), then the transcript's words; no VAD."""

    metric_kinds = {"early_start_rate": stats.Share, **RESPONSE_KINDS}

    def parse(self, sample: OpenedSample) -> TurnInput:
        E_us = turn_end_us(sample.annotation, sample.T_us, sample.where())
        return TurnInput(sample.T_us, sample_words(sample), E_us)

    def score(self, inp: TurnInput, segments: Sequence[tuple[int, int]] | None) -> TurnRow:
        return score_turn(inp)

    def row_from_json(self, js: JsonObject) -> TurnRow:
        return TurnRow.from_json(js)

    def aggregate(self, rows: Sequence[TurnRow], counts: Counts) -> Block:
        return turn_block(rows, counts)


RESPONSE_SPECS: tuple[MetricSpec[TurnRow], ...] = response_specs(RESPONSE, NO_RESPONSE)
PAIRED = PairedSpec[TurnRow]((
    MetricSpec("early_start_rate", "share", lambda r: r.outcome == EARLY_START),
    *RESPONSE_SPECS,
))
