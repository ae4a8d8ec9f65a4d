"""Duplex dialogue evaluation (spec 004, Wang et al. 2024): FTED, ir_mid / ir_end / MIR, PIR_mid,
PRR_mid, the paper's precision and recall, PRR per interruption reason and PRRavg.

Stages meet through files: ``synth`` (case set) -> ``run`` (decisions.jsonl, cases.jsonl) ->
``score`` (judgements.jsonl, dialogue.json) -> ``compare``. The typed Python API (``duplexeval.dialogue.api``):
the verbs, ``score_samples`` for evidence of your own in memory, and ``read_*`` for every artifact. See
docs/dialogue.md.
"""

from duplexeval.dialogue.api import (
    CompareResult,
    DialogueScore,
    Judgements,
    RunRecord,
    SynthResult,
    compare,
    read_cases,
    read_compare,
    read_judgements,
    read_report,
    read_run,
    run,
    score,
    score_samples,
    synth,
)

__all__ = [
    "CompareResult",
    "DialogueScore",
    "Judgements",
    "RunRecord",
    "SynthResult",
    "compare",
    "read_cases",
    "read_compare",
    "read_judgements",
    "read_report",
    "read_run",
    "run",
    "score",
    "score_samples",
    "synth",
]
