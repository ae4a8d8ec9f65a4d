"""Turn-taking controllers (spec 002): frame and event metrics of a streaming controller's outputs under a frozen
policy. The typed Python API (``duplexeval.controller.api``): the verbs `label`, `run`, `evaluate`, `calibrate`,
`compare`, `bench` (what the commands run), ``score_samples`` for clips of your own in memory, and ``read_*``
for every artifact. See docs/controller.md, section 8.
"""

from duplexeval.controller.api import (
    BenchResult,
    Calibration,
    CompareResult,
    ControllerReport,
    DataFolder,
    bench,
    calibrate,
    compare,
    evaluate,
    label,
    read_bench,
    read_compare,
    read_data,
    read_policy,
    read_report,
    run,
    score_samples,
)

__all__ = [
    "BenchResult",
    "Calibration",
    "CompareResult",
    "ControllerReport",
    "DataFolder",
    "bench",
    "calibrate",
    "compare",
    "evaluate",
    "label",
    "read_bench",
    "read_compare",
    "read_data",
    "read_policy",
    "read_report",
    "run",
    "score_samples",
]
