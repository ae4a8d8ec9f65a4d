"""The official user-interruption rule (`eval_user_interruption.py`): TOR and latency after the interrupt end R.

The transcript only holds words after R (the ASR stage cut the audio there). Latency = first word
start minus R, clamped at 0, over takeovers; the judge rates takeovers only (see judge.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from duplexeval.fdb.official.judge import Judge, RatedBlock, Rating
from duplexeval.fdb.official.metric import NO_SAMPLES, NOT_JUDGED, Metric, null_metric, plain_mean
from duplexeval.fdb.official.rules import NO_TAKEOVER, NOT_PRINTED, TakeTurn, crash_note, latency_sample, take_turn
from duplexeval.fdb.official.summary import NOT_JUDGED as NOT_JUDGED_BLOCK
from duplexeval.fdb.tasks.base import OfficialContext, OfficialOutcome, OfficialRules, Ready
from duplexeval.fdb.transcript import Word
from duplexeval.fdb.tree import SampleEntry
from duplexeval.jsontypes import JsonObject

AVERAGE_RATING = "Average rating"
AVERAGE_TAKE_TURN = "Average take turn"
AVERAGE_LATENCY = "Average latency"


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

    def to_json(self) -> JsonObject:
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


class InterruptionOfficial(OfficialRules):
    """TOR and latency per sample, then the judge on the takeovers (when one is configured)."""

    uses_judge = True

    def prepare(self, ctx: OfficialContext, entries: Sequence[SampleEntry]) -> Judge | None:
        """The judge (`--judge openai`), created before any subset is evaluated (a missing key fails first)."""
        return Judge.create(ctx.judge_config, ctx.tree) if ctx.judge_mode == "openai" else None

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        done: list[InterruptionSample] = []
        for sample in ready:
            first = sample.annotation.root[0]  # R = `interrupt.json[0].timestamp[1]`, and the interrupt's texts
            done.append(interruption_sample(sample.entry.id, sample.words, sample.text, float(first.timestamp[1]),
                                            first.context, first.interrupt))
        judge: Judge | None = ctx.prepared
        if judge is None:
            return OfficialOutcome(done, interruption_metrics(done, judged=False), judge=NOT_JUDGED_BLOCK)
        subset, say = ctx.subset, ctx.say
        judge.log_run_start(subset)
        takeovers = [(r.entry, s) for r, s in zip(ready, done) if s.turn.tor == 1]
        for i, (e, s) in enumerate(takeovers, 1):
            say(f"{subset}: judging {e.id} ({i}/{len(takeovers)})")
            s.judge = judge.rate(e.key, e.dir(ctx.tree), s.context, s.interrupt, s.response_text)
        ratings = [s.judge for _, s in takeovers if s.judge is not None]
        rated = sum(1 for r in ratings if r.rating is not None)
        block = RatedBlock(judge.signature(), rated, len(takeovers) - rated, sum(1 for r in ratings if r.attempts > 1))
        st = judge.stats
        say(f"{subset}: judge requests {st['requests']}, retries {st['retries']}, reused {st['reused']}, failed "
            f"{st['failed']}")
        return OfficialOutcome(done, interruption_metrics(done, judged=True), judge=block)
