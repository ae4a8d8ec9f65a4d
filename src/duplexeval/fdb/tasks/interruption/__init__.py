"""User interruption (synthetic): the model should stop talking when the user cuts in, and answer the interruption."""

from __future__ import annotations

from duplexeval.fdb.official.judge import RATING_FILE
from duplexeval.fdb.tasks.base import HIGHER, LOWER, NEITHER, Headline, Task, one_output_layout
from duplexeval.fdb.tasks.interruption.annotation import NAME, InterruptAnnotation, InterruptAsr, InterruptChecks
from duplexeval.fdb.tasks.interruption.official import InterruptionOfficial
from duplexeval.fdb.tasks.interruption.render import InterruptionRender
from duplexeval.fdb.tasks.interruption.synth import InterruptionSynth
from duplexeval.fdb.tasks.interruption.unified import PAIRED, InterruptionUnified
from duplexeval.schemas.fdb_names import SUBSETS

TASK = Task(
    name=NAME,
    subsets=SUBSETS.of_task(NAME),
    annotation=InterruptAnnotation,
    layout=one_output_layout(InterruptAnnotation.file, RATING_FILE),
    dataset=InterruptChecks(),
    asr=InterruptAsr(),
    unified=InterruptionUnified(),
    official=InterruptionOfficial(),
    paired=PAIRED,
    render=InterruptionRender(),
    synth=InterruptionSynth(),
    headline=(
        Headline("exercised_rate", "exercised rate (spoke at S)", NEITHER),
        Headline("speaking_at_end_rate", "still speaking at R", LOWER),
        Headline("response_rate_2s", "responded within 2 s of R", HIGHER),
        Headline("no_response_rate", "no response rate", LOWER),
        Headline("stop_latency_s", "stop latency (median)", LOWER),
        Headline("response_latency_s", "response latency (median)", LOWER),
    ),
)
