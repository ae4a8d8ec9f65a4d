"""pause.json: the typed annotation, its checks against the input (dataset) and its microsecond form (scorer)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import TIME_TOLERANCE_S, check_span
from duplexeval.fdb.tasks.base import DatasetRules
from duplexeval.fdb.unified.load import fmt_s, in_window
from duplexeval.schemas.base import OpenRecord
from duplexeval.schemas.fdb import AnnotationList, Timestamp
from duplexeval.units import to_us

NAME = "pause_handling"


class PauseItem(OpenRecord):
    """One `[PAUSE]` item: the pause is `timestamp = [start, end]` seconds."""

    timestamp: Timestamp


class PauseAnnotation(AnnotationList):
    """pause.json: one item per pause."""

    root: list[PauseItem]
    file: ClassVar[str] = "pause.json"
    empty: ClassVar[str] = "pause.json lists no pause (must be a non-empty JSON list of objects)"

    @classmethod
    def label(cls, i: int) -> str:
        return f"pause {i}"

    def spans(self) -> list[tuple[float, float]]:
        return [(float(p.timestamp[0]), float(p.timestamp[1])) for p in self.root]


class PauseChecks(DatasetRules):
    """Every pause inside the input (with the published files' rounding tolerance), sorted and disjoint."""

    def check_annotation(self, record: Any, T: float, where: str) -> None:
        prev_end = -math.inf
        for i, (a, b) in enumerate(record.spans()):
            check_span(a, b, i, where, T)
            if b > T + TIME_TOLERANCE_S:
                raise InputError(f"{where}: pause {i} ends at {b} s, after the input's end T = {T:.6f} s")
            if a < prev_end:
                raise InputError(f"{where}: pauses are not sorted and disjoint (pause {i} starts at {a} before the "
                                 f"previous end {prev_end})")
            prev_end = b


def pauses_us(rec: PauseAnnotation, T_us: int, where: str) -> tuple[tuple[int, int], ...]:
    """The scorer's pauses: at least one, each [a, b] with a <= b inside [0, T] (µs, no tolerance), sorted, disjoint."""
    pauses: list[tuple[int, int]] = []
    for i, item in enumerate(rec.root):
        a, b = item.timestamp
        a_us, b_us = to_us(a), to_us(b)
        if a_us > b_us:
            raise InputError(f"{where}: pause {i} ends before it starts ({a!r} > {b!r})")
        if not (in_window(a_us, T_us) and in_window(b_us, T_us)):
            raise InputError(f"{where}: pause {i} [{a!r}, {b!r}] is not inside [0, T={fmt_s(T_us)}]")
        if pauses and a_us < pauses[-1][1]:
            raise InputError(
                f"{where}: pause {i} [{a!r}, {b!r}] starts before pause {i - 1} ends "
                "(pauses must be sorted and not overlapping)"
            )
        pauses.append((a_us, b_us))
    return tuple(pauses)
