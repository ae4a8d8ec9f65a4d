"""Smooth turn taking (candor): the model should take the turn soon after the user's turn ends (E)."""

from __future__ import annotations

from duplexeval.fdb.tasks.base import Task, one_output_layout
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
        ("early_start_rate", "early_start_rate"),
        ("response_rate_2s", "response_rate_2s"),
        ("no_response_rate", "no_response_rate"),
        ("response_latency_s", "response_latency_s (median)"),
    ),
)
