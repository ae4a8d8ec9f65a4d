"""Pause handling (candor + synthetic): the model should stay silent through the user's annotated pauses."""

from __future__ import annotations

from duplexeval import stats
from duplexeval.fdb.compare import PAUSE_METRICS
from duplexeval.fdb.official.pause import pause_metrics, pause_sample
from duplexeval.fdb.tasks import OfficialContext, OfficialOutcome, SampleFiles, Task, without_segments
from duplexeval.fdb.tree import PAUSE_HANDLING
from duplexeval.fdb.unified.aggregate import PooledCount, PooledSeconds, pause_block
from duplexeval.fdb.unified.load import PauseInput, parse_pauses, sample_words
from duplexeval.fdb.unified.pause import score_pause
from duplexeval.schemas.fdb import PauseAnnotation


def parse(s: SampleFiles) -> PauseInput:
    """pause.json's pauses (checked first), then the transcript's words."""
    pauses = parse_pauses(s.annotation, s.T_us, s.annotation_path, s.entry)
    return PauseInput(s.T_us, sample_words(s), pauses)


def official(ctx: OfficialContext, ready: list) -> OfficialOutcome:
    """The official rule (`eval_pause_handling.py`): the take-turn rule on the whole transcript."""
    done = [pause_sample(e.id, w) for e, w, _ in ready]
    return OfficialOutcome(done, pause_metrics(done))


TASK = Task(
    name=PAUSE_HANDLING,
    subsets=("candor_pause_handling", "synthetic_pause_handling"),
    annotation="pause.json",
    annotation_model=PauseAnnotation,
    parse=parse,
    score=without_segments(score_pause),
    aggregate=pause_block,
    metric_kinds={
        "pause_intrusion_rate": stats.Share,
        "pause_intrusion_per_pause": PooledCount,
        "intrusion_s_per_pause_s": PooledSeconds,
        "inside_pause_onset_rate": stats.Share,
        "pre_pause_speech_rate": stats.Share,
        "carry_in_rate": stats.Share,
        "any_speech_rate": stats.Share,
    },
    official=official,
    paired_metrics=PAUSE_METRICS,
)
