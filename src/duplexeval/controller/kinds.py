"""The controller artifacts' kinds and schema versions: one home for the stages that write them and the API that reads
them back (stdlib only, so ``duplexeval.controller.api`` can import it without the stages)."""

from __future__ import annotations

REPORT_KIND = "duplexeval.controller.report"
# 2: the artifact header (duplexeval, signature, inputs) replaces duplexeval_version;
# 3: shares in the one stats.Share shape (value, count, n, interval), no longer count, n, rate, wilson95
REPORT_SCHEMA = 3
COMPARE_KIND = "duplexeval.controller.compare"
COMPARE_SCHEMA = 2  # 2: the artifact header (duplexeval, signature, inputs)
BENCH_KIND = "duplexeval.controller.bench"
