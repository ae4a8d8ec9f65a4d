"""How the report shows a v1.5 sample: wrong behaviour for its scenario first, the overlap window shaded."""

from __future__ import annotations

from typing import Any

from duplexeval.fdb.tasks.base import Band, Mark, RenderRules
from duplexeval.fdb.tasks.overlap.unified import CLASSES

OVERLAP_COLOR = "#f3d1f4"
WORDS = {"responded": "responded to the overlap", "resumed": "resumed what it was saying",
         "continued": "talked through the overlap", "asked_to_repeat": "asked for a repeat",
         "silent": "said nothing after the overlap"}


class OverlapRender(RenderRules):
    """Samples whose behaviour is not the scenario's good one first (ours, labelled as ours), the judge's tag beside."""

    vad_lane = True
    bad = frozenset(f"not_good_{c}" for c in CLASSES)

    def severity(self, row: dict[str, Any]) -> tuple[int, float]:
        if row.get("good"):
            return (5, 0.0)
        return (0 if row.get("behaviour") == "silent" else 1, -float(row.get("post_overlap_words") or 0))

    def why(self, row: dict[str, Any]) -> str:
        expected = "respond" if row.get("expected") == "respond" else "carry on"
        text = f"{WORDS.get(str(row.get('behaviour')), row.get('behaviour'))} (should {expected}; our class)"
        if row.get("speaking_at_onset"):
            stop = row.get("stop_latency_s")
            text += f"; stopped {stop:.2f} s after the overlap began" if stop is not None else "; never stopped"
        if row.get("judge_tags"):
            text += f"; judge: {', '.join(row['judge_tags'])}"
        return text

    def outcome(self, row: dict[str, Any]) -> str:
        return f"{'good' if row.get('good') else 'not good'}: {row.get('behaviour')}"

    def outcome_key(self, row: dict[str, Any]) -> str:
        return f"{'good' if row.get('good') else 'not_good'}_{row.get('behaviour')}"

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        return [Mark("end", record.end, "#c2185b")], [Band("overlap", record.start, record.end, OVERLAP_COLOR)]
