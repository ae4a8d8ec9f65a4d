"""How the report shows an interruption sample: speaking through R first, [S, R] shaded, the VAD lane drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.fdb.tasks.base import Band, Figure, Mark, RenderRules
from duplexeval.fdb.tasks.interruption.unified import InterruptionRow
from duplexeval.fdb.tasks.turn_taking.render import XLABEL
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report import figures

OUTCOME_RANK = {"speaking_at_end": 0, "no_response": 1, "response": 2, "not_exercised": 4}
OUTCOME_COLORS = {"ineligible": "#bdbdbd", "not_exercised": "#e0c097", "speaking_at_end": "#d9602b",
                  "response": "#2f9e44", "no_response": "#7a869a"}  # fmt: skip


class InterruptionRender(RenderRules[InterruptionRow]):
    """Speaking at R, then no response, then responses (the longest stop and latency first)."""

    vad_lane = True
    bad = frozenset({"speaking_at_end", "no_response"})
    neutral = frozenset({"not_exercised"})

    def severity(self, row: InterruptionRow) -> tuple[int, float]:
        stop = row.stop_s
        return (OUTCOME_RANK[row.outcome], -(stop if stop is not None else 1e9) - float(row.latency_s or 0))

    def why(self, row: InterruptionRow) -> str:
        stop = "no observed stop" if row.stop_s is None else f"stop after {row.stop_s:.2f} s"
        if row.outcome == "not_exercised":
            return "not exercised: silent at S"
        if row.outcome == "response":
            return f"{stop}; response {row.latency_s:.2f} s after R"
        return f"{row.outcome.replace('_', ' ')}; {stop}"

    def vad_segments(self, row: InterruptionRow) -> list[tuple[float, float]]:
        return [(s / 16000, e / 16000) for s, e in row.segments]

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        S, R = record.S, record.R
        return [Mark("S", S, "#d9602b"), Mark("R", R, "#8e44ad")], [Band("interruption", S, R, "#f3d1f4")]

    def figures(self, series: Sequence[tuple[str, Sequence[SampleRow[InterruptionRow]]]],
                colors: Sequence[str]) -> list[Figure]:
        ex = [(label, [r.row for r in rows if r.row is not None and r.row.exercised]) for label, rows in series]
        curve = figures.response_curve("When did each system answer after the interruption? (exercised samples)",
                                       [(lb, [r.latency_s for r in rs]) for lb, rs in ex], colors=colors,
                                       xlabel=XLABEL)
        out = [Figure(curve, figures.CURVE_CAPTION)]
        bars = []
        for label, rows in series:
            counts = {"ineligible": sum(1 for r in rows if not r.eligible)}
            for r in rows:
                if r.row is not None:
                    counts[r.row.outcome] = counts.get(r.row.outcome, 0) + 1
            bars.append((label, counts))
        out.append(Figure(figures.outcome_bars(bars, OUTCOME_COLORS, "What happened at each interruption")))
        out.append(Figure(figures.stop_latencies([(lb, [r.stop_s for r in rs]) for lb, rs in ex], colors=colors)))
        return out
