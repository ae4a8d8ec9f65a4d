"""turn_taking.json: the typed annotation (E, the end of the user's turn), its dataset check and scorer form."""

from __future__ import annotations

from typing import Any, ClassVar

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import check_span
from duplexeval.fdb.tasks.base import DatasetRules
from duplexeval.fdb.unified.load import fmt_s, in_window
from duplexeval.schemas.base import OpenRecord
from duplexeval.schemas.fdb import AnnotationList, Timestamp
from duplexeval.units import to_us

NAME = "smooth_turn_taking"


class TurnItem(OpenRecord):
    """The `[TURN-TAKING]` item: `timestamp[0]` is E, the end of the user's turn."""

    timestamp: Timestamp


class TurnAnnotation(AnnotationList):
    """turn_taking.json: E = `[0].timestamp[0]`."""

    root: list[TurnItem]
    file: ClassVar[str] = "turn_taking.json"

    @property
    def E(self) -> float:
        return float(self.root[0].timestamp[0])


class TurnChecks(DatasetRules):
    """Exactly one [TURN-TAKING] item, inside the input."""

    def check_annotation(self, record: Any, T: float, where: str) -> None:
        if len(record.items) != 1:
            raise InputError(f"{where}: expected exactly one [TURN-TAKING] item, found {len(record.items)}")
        a, b = record.items[0].timestamp
        check_span(a, b, 0, where, T)


def turn_end_us(rec: TurnAnnotation, T_us: int, where: str) -> int:
    """The scorer's E = [0].timestamp[0] in µs, inside [0, T]."""
    E = rec.root[0].timestamp[0]
    E_us = to_us(E)
    if not in_window(E_us, T_us):
        raise InputError(f"{where}: E={E!r} is not inside [0, T={fmt_s(T_us)}]")
    return E_us
