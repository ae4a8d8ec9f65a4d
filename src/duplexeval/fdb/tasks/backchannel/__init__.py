"""Backchannel (ICC): counted, not scored by the unified rules; the official frequency and JSD are the reference."""

from __future__ import annotations

from duplexeval.fdb.tasks.backchannel.groundtruth import ICC_GT, NAME, BackchannelChecks
from duplexeval.fdb.tasks.backchannel.official import BackchannelOfficial
from duplexeval.fdb.tasks.backchannel.synth import BackchannelSynth
from duplexeval.fdb.tasks.base import RenderRules, Task, one_output_layout
from duplexeval.schemas.fdb_names import SUBSETS


class BackchannelRender(RenderRules[None]):
    """No unified rows: every sample is counted only."""

    counted_note = "the official frequency and JSD are the reference"


TASK = Task(
    name=NAME,
    subsets=SUBSETS.of_task(NAME),
    layout=one_output_layout(None),
    dataset_files=(ICC_GT,),
    dataset=BackchannelChecks(),
    official=BackchannelOfficial(),
    render=BackchannelRender(),
    synth=BackchannelSynth(),
)
