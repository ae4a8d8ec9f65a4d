"""Smooth turn taking (candor): the model should take the turn soon after the user's turn ends (E)."""

from __future__ import annotations

from typing import Any

from duplexeval import stats
from duplexeval.fdb.compare import TURN_METRICS
from duplexeval.fdb.official.run import annotation, sample_where
from duplexeval.fdb.official.turn_taking import turn_taking_metrics, turn_taking_sample
from duplexeval.fdb.tasks import OfficialContext, OfficialOutcome, SampleFiles, Task, without_segments
from duplexeval.fdb.tree import TURN_TAKING
from duplexeval.fdb.unified.aggregate import RESPONSE_KINDS, turn_block
from duplexeval.fdb.unified.load import TurnInput, parse_turn_taking, sample_words
from duplexeval.fdb.unified.turn_taking import score_turn
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import TurnAnnotation


def parse(s: SampleFiles) -> TurnInput:
    """turn_taking.json's E (checked first), then the transcript's words."""
    E_us = parse_turn_taking(s.annotation, s.T_us, s.annotation_path, s.entry)
    return TurnInput(s.T_us, sample_words(s), E_us)


def turn_end(obj: Any, where: str) -> float:
    """`turn_taking.json[0].timestamp[0]`: the end of the user's turn."""
    return validate(obj, TurnAnnotation, where).E


def official(ctx: OfficialContext, ready: list) -> OfficialOutcome:
    """The official rule (`eval_smooth_turn_taking.py`): TOR and latency from E."""
    done = [
        turn_taking_sample(e.id, w, turn_end(annotation(e, ctx.tree), sample_where(e, ctx.tree))) for e, w, _ in ready
    ]
    return OfficialOutcome(done, turn_taking_metrics(done))


TASK = Task(
    name=TURN_TAKING,
    subsets=("candor_turn_taking",),
    annotation="turn_taking.json",
    annotation_model=TurnAnnotation,
    parse=parse,
    score=without_segments(score_turn),
    aggregate=turn_block,
    metric_kinds={
        "early_start_rate": stats.Share,
        **RESPONSE_KINDS,
    },
    official=official,
    paired_metrics=TURN_METRICS,
)
