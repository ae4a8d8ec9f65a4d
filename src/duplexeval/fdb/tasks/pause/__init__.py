"""Pause handling (candor + synthetic): the model should stay silent through the user's annotated pauses."""

from __future__ import annotations

from duplexeval.fdb.tasks.base import LOWER, Headline, Task, one_output_layout
from duplexeval.fdb.tasks.pause.annotation import NAME, PauseAnnotation, PauseChecks
from duplexeval.fdb.tasks.pause.official import PauseOfficial
from duplexeval.fdb.tasks.pause.render import PauseRender
from duplexeval.fdb.tasks.pause.synth import PauseSynth
from duplexeval.fdb.tasks.pause.unified import PAIRED, PauseUnified
from duplexeval.schemas.fdb_names import SUBSETS

TASK = Task(
    name=NAME,
    subsets=SUBSETS.of_task(NAME),
    annotation=PauseAnnotation,
    layout=one_output_layout(PauseAnnotation.file),
    dataset=PauseChecks(),
    unified=PauseUnified(),
    official=PauseOfficial(),
    paired=PAIRED,
    render=PauseRender(),
    synth=PauseSynth(),
    headline=(Headline("pause_intrusion_rate", "pause intrusion rate", LOWER),),
)
