"""How the report shows a turn-taking sample: early starts first, E marked on the timeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.fdb.tasks.base import Band, Figure, Mark, RenderRules
from duplexeval.fdb.tasks.turn_taking.unified import TurnRow
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report import figures

XLABEL = "seconds after the reference (E for turn-taking, R for interruption)"  # one axis text for both tasks' curves


class TurnRender(RenderRules[TurnRow]):
    """Early starts (the earliest first), then no response, then the longest latencies."""

    bad = frozenset({"early_start", "no_response"})

    def severity(self, row: TurnRow) -> tuple[int, float]:
        if row.outcome == "early_start":
            return (0, float(row.first_word_s or 0.0) - row.E)
        if row.outcome == "no_response":
            return (1, 0.0)
        return (2, -float(row.latency_s or 0.0))

    def why(self, row: TurnRow) -> str:
        if row.outcome == "early_start":
            return f"early start: first word {row.E - float(row.first_word_s or 0.0):.2f} s before E"
        if row.outcome == "response":
            return f"response after {row.latency_s:.2f} s"
        return "no response"

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        return [Mark("E", record.E, "#c2185b")], []

    def reference(self, record: Any) -> float | None:
        return float(record.E)

    def figures(self, series: Sequence[tuple[str, Sequence[SampleRow[TurnRow]]]],
                colors: Sequence[str]) -> list[Figure]:
        curve = [(label, [r.row.latency_s for r in rows if r.row is not None]) for label, rows in series]
        svg = figures.response_curve("When did each system answer? (eligible samples)", curve, colors=colors,
                                     xlabel=XLABEL)
        return [Figure(svg, figures.CURVE_CAPTION)]
