"""End-of-turn detectors (spec 003's pair score and eot-bench's policy sweep): the typed Python API.

The verbs are what `duplexeval eot score | predict | sweep | compare | check` run (``duplexeval.eot.api``);
``score_pairs`` and ``sweep_predictions`` score data of your own in memory; ``read_*`` read every artifact back.
Spec 003's own functions keep their names here (``EOTPair``, ``false_cutoff_rate``, ``hang_rate``,
``median_latency_s``); its dict-returning ``score`` is ``duplexeval.eot.pairs.score`` (``duplexeval.eot.score``
is the `eot score` verb). See docs/eot.md, section 9.
"""

from duplexeval.eot.api import (
    CheckResult,
    CompareResult,
    OperatingPoint,
    PairScore,
    PredictResult,
    SweepSummary,
    check,
    compare,
    predict,
    read_compare,
    read_pairs,
    read_predictions,
    read_report,
    read_sweep,
    score,
    score_pairs,
    sweep,
    sweep_config,
    sweep_predictions,
)
from duplexeval.eot.pairs import (
    DEFAULT_LATENCY_BANDS_MS,
    EOTPair,
    false_cutoff_rate,
    hang_rate,
    median_latency_s,
)

__all__ = [
    "DEFAULT_LATENCY_BANDS_MS",
    "CheckResult",
    "CompareResult",
    "EOTPair",
    "OperatingPoint",
    "PairScore",
    "PredictResult",
    "SweepSummary",
    "check",
    "compare",
    "false_cutoff_rate",
    "hang_rate",
    "median_latency_s",
    "predict",
    "read_compare",
    "read_pairs",
    "read_predictions",
    "read_report",
    "read_sweep",
    "score",
    "score_pairs",
    "sweep",
    "sweep_config",
    "sweep_predictions",
]
