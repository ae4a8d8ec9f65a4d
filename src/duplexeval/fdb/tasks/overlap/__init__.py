"""FDB v1.5: how a full-duplex system handles speech that overlaps its own (four scenarios, one task).

The four subsets (user interruption, user backchannel, talking to another person, background speech) are
scored by the same official rules (behaviour judge, before/after prosody, timing intervals, paired t-test)
and by our unified rules; what good behaviour is differs per scenario (`scenarios.SCENARIOS`). Each sample is
played to the system twice (`input.wav` and `clean_input.wav`, two sessions) and has four transcripts.
"""

from __future__ import annotations

from duplexeval.fdb.tasks.base import HIGHER, LOWER, Headline, Task
from duplexeval.fdb.tasks.overlap.annotation import LAYOUT, NAME, Metadata, OverlapChecks
from duplexeval.fdb.tasks.overlap.official import OverlapOfficial
from duplexeval.fdb.tasks.overlap.render import OverlapRender
from duplexeval.fdb.tasks.overlap.unified import PAIRED, OverlapUnified
from duplexeval.schemas.fdb_names import SUBSETS

TASK = Task(
    name=NAME,
    subsets=SUBSETS.of_task(NAME),
    annotation=Metadata,
    layout=LAYOUT,
    dataset=OverlapChecks(),
    unified=OverlapUnified(),
    official=OverlapOfficial(),
    paired=PAIRED,
    render=OverlapRender(),
    headline=(
        Headline("good_rate", "good behaviour for the scenario (ours)", HIGHER),
        Headline("stop_latency_s", "stop latency (median)", LOWER),
        Headline("response_latency_s", "response latency (median)", LOWER),
    ),
)
