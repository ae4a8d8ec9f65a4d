"""The end-of-turn artifacts' kinds and schema versions: one home for the stages that write them and the API that reads
them back (stdlib only, so ``duplexeval.eot.api`` can import it without the stages)."""

from __future__ import annotations

REPORT_KIND = "duplexeval.eot.report"
REPORT_SCHEMA = 2
SWEEP_KIND = "duplexeval.eot.sweep"
SWEEP_SCHEMA = 1
COMPARE_KIND = "duplexeval.eot.compare"
COMPARE_SCHEMA = 1
SWEEP_FILES = ("summary.json", "sweep.parquet", "pareto.png", "operating_points.png")  # what `eot sweep --out` writes
