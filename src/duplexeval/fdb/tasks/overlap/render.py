"""How the report shows a v1.5 sample: wrong behaviour for its scenario first, the overlap window shaded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.fdb.tasks.base import Band, Figure, Mark, RenderRules
from duplexeval.fdb.tasks.overlap.unified import CLASSES, OverlapRow
from duplexeval.fdb.unified.rows import SampleRow

OVERLAP_COLOR = "#f3d1f4"
CLASS_COLORS = {"responded": "#2f9e44", "resumed": "#3b6fd4", "continued": "#e8590c", "asked_to_repeat": "#fab005",
                "silent": "#adb5bd"}
STOP_CAPTION = ("F(t): the share of the samples speaking when the overlap began that had stopped (a silence of at "
                "least 500 ms began) within t of its onset; the bar at the right edge never stopped.")
WORDS = {"responded": "responded to the overlap", "resumed": "resumed what it was saying",
         "continued": "talked through the overlap", "asked_to_repeat": "asked for a repeat",
         "silent": "said nothing after the overlap"}


class OverlapRender(RenderRules[OverlapRow]):
    """Samples whose behaviour is not the scenario's good one first (ours, labelled as ours), the judge's tag beside."""

    vad_lane = True
    bad = frozenset(f"not_good_{c}" for c in CLASSES)

    def severity(self, row: OverlapRow) -> tuple[int, float]:
        if row.good:
            return (5, 0.0)
        return (0 if row.behaviour == "silent" else 1, -float(row.post_words))

    def why(self, row: OverlapRow) -> str:
        expected = "respond" if row.expected == "respond" else "carry on"
        text = f"{WORDS.get(row.behaviour, row.behaviour)} (should {expected}; our class)"
        if row.speaking_at_onset:
            stop = row.stop_latency_s
            text += f"; stopped {stop:.2f} s after the overlap began" if stop is not None else "; never stopped"
        if row.judge_tags:
            text += f"; judge: {', '.join(row.judge_tags)}"
        return text

    def outcome(self, row: OverlapRow) -> str:
        return f"{'good' if row.good else 'not good'}: {row.behaviour}"

    def outcome_key(self, row: OverlapRow) -> str:
        return f"{'good' if row.good else 'not_good'}_{row.behaviour}"

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        return [Mark("end", record.end, "#c2185b")], [Band("overlap", record.start, record.end, OVERLAP_COLOR)]

    def figures(self, series: Sequence[tuple[str, Sequence[SampleRow[OverlapRow]]]],
                colors: Sequence[str]) -> list[Figure]:
        from duplexeval.report import figures  # lazy: matplotlib only when a page is drawn

        scored = [(label, [r.row for r in rows if r.eligible and r.row is not None and r.row.behaviour])
                  for label, rows in series]
        bars = [(label, {c: sum(1 for r in rows if r.behaviour == c) for c in CLASS_COLORS})
                for label, rows in scored]
        out = [Figure(figures.outcome_bars(bars, CLASS_COLORS, "What each system did after the overlap (our class)"))]
        stops = [(label, [r.stop_latency_s if r.stop_reached else None for r in rows if r.speaking_at_onset])
                 for label, rows in scored]
        if any(vals for _, vals in stops):
            svg = figures.response_curve("When did each system stop after the overlap began? (speaking at its onset)",
                                         stops, colors=colors, xlabel="seconds after the overlap's onset")
            out.append(Figure(svg, STOP_CAPTION))
        return out
