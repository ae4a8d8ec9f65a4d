"""How the report shows a pause-handling sample: intrusions first, the pauses shaded on the timeline."""

from __future__ import annotations

from typing import Any

from duplexeval.fdb.tasks.base import Band, Mark, RenderRules
from duplexeval.fdb.tasks.pause.unified import PauseRow

PAUSE_COLOR = "#ffe08a"


class PauseRender(RenderRules[PauseRow]):
    """Intrusions first, the longest covered pause time first among them."""

    bad = frozenset({"intrusion"})

    def severity(self, row: PauseRow) -> tuple[int, float]:
        return (0, -row.intrusion_s) if row.pause_intrusion else (5, 0.0)

    def why(self, row: PauseRow) -> str:
        if row.pause_intrusion:
            return (f"intrusion: {row.intrusion_words} onset(s), {row.intrusion_s:.2f} s of {row.pause_s:.2f} "
                    "s pause covered")
        return "no word after the first pause"

    def outcome(self, row: PauseRow) -> str:
        return "pause intrusion" if row.pause_intrusion else "no intrusion"

    def outcome_key(self, row: PauseRow) -> str:
        return "intrusion" if row.pause_intrusion else "no_intrusion"

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        return [], [Band("pause", a, b, PAUSE_COLOR) for a, b in record.spans()]
