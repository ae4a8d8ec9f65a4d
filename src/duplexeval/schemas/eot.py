"""End-of-turn pair files (spec 003) as typed rows: one (true turn end, detector commit) pair per line."""

from __future__ import annotations

from typing import ClassVar

from duplexeval.schemas.base import NonNegTime, Record, Text


class EOTPairRow(Record):
    """One pair after column aliases are resolved: both times are seconds on the same clock, >= 0, within a day."""

    quote_fields: ClassVar[bool] = False
    true_turn_end_s: NonNegTime
    detector_commit_s: NonNegTime
    id: Text | None = None
