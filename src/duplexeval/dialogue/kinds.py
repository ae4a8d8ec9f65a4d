"""The dialogue artifacts' kinds and their schema version: one home for the stages that write them, the report that
reads them and the API (stdlib only, so ``duplexeval.dialogue.api`` can import it without the stages)."""

from __future__ import annotations

CASES_KIND = "duplexeval.dialogue.cases"
DECISIONS_KIND = "duplexeval.dialogue.decisions"
JUDGEMENTS_KIND = "duplexeval.dialogue.judgements"
REPORT_KIND = "duplexeval.dialogue.report"
COMPARE_KIND = "duplexeval.dialogue.compare"
SCHEMA = 1
