"""Smooth turn taking (candor): the model should take the turn soon after the user's turn ends (E)."""

from __future__ import annotations

from duplexeval.fdb.tasks.base import HIGHER, LOWER, Headline, Task, one_output_layout
from duplexeval.fdb.tasks.turn_taking.annotation import NAME, TurnAnnotation, TurnChecks
from duplexeval.fdb.tasks.turn_taking.official import TurnOfficial
from duplexeval.fdb.tasks.turn_taking.render import TurnRender
from duplexeval.fdb.tasks.turn_taking.synth import TurnSynth
from duplexeval.fdb.tasks.turn_taking.unified import PAIRED, TurnUnified
from duplexeval.schemas.fdb_names import SUBSETS

TASK = Task(
    name=NAME,
    subsets=SUBSETS.of_task(NAME),
    annotation=TurnAnnotation,
    layout=one_output_layout(TurnAnnotation.file),
    dataset=TurnChecks(),
    unified=TurnUnified(),
    official=TurnOfficial(),
    paired=PAIRED,
    render=TurnRender(),
    synth=TurnSynth(),
    headline=(
        Headline("early_start_rate", "early start rate", LOWER),
        Headline("response_rate_2s", "responded within 2 s", HIGHER),
        Headline("no_response_rate", "no response rate", LOWER),
        Headline("response_latency_s", "response latency (median)", LOWER),
    ),
)
