"""interrupt.json: the typed annotation ([S, R], the user's interrupt, and its text), its checks against the input
(dataset), its microsecond form (scorer) and where the transcript starts (the ASR stage cuts the audio at R)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import TIME_TOLERANCE_S, check_span
from duplexeval.fdb.tasks.base import AsrRules, DatasetRules
from duplexeval.fdb.unified.load import fmt_s, in_window
from duplexeval.schemas.base import OpenRecord
from duplexeval.schemas.fdb import AnnotationList, Timestamp
from duplexeval.units import to_us

NAME = "user_interruption"


class InterruptItem(OpenRecord):
    """The interruption item: the user's interrupt is `timestamp = [S, R]`; `context`/`interrupt` are its text."""

    timestamp: Timestamp  # first: a bad time is reported before missing text
    context: str
    interrupt: str


class InterruptAnnotation(AnnotationList):
    """interrupt.json: `[0].timestamp = [S, R]`."""

    root: list[InterruptItem]
    file: ClassVar[str] = "interrupt.json"
    text_fields: ClassVar[tuple[str, ...]] = ("context", "interrupt")

    @property
    def S(self) -> float:
        return float(self.root[0].timestamp[0])

    @property
    def R(self) -> float:
        return float(self.root[0].timestamp[1])


class InterruptChecks(DatasetRules):
    """Exactly one interruption item, inside the input."""

    def check_annotation(self, record: Any, T: float, where: str) -> None:
        if len(record.items) != 1:
            raise InputError(f"{where}: expected exactly one interruption item, found {len(record.items)}")
        a, b = record.S, record.R
        check_span(a, b, 0, where, T)
        if b > T + TIME_TOLERANCE_S:
            raise InputError(f"{where}: interruption ends at {b} s, after the input's end T = {T:.6f} s")


class InterruptAsr(AsrRules):
    """The official ASR call transcribes the output from R on (and adds R back to every word time)."""

    reads_annotation = True

    def start_s(self, record: Any, T: float, path: Path) -> float:
        R = record.R
        if not 0 <= R < T:
            raise InputError(f"{path}: interrupt end R={R!r} is not a finite time inside [0, T={T})")
        return float(R)


def interrupt_us(rec: InterruptAnnotation, T_us: int, where: str) -> tuple[int, int]:
    """The scorer's [S, R] in µs: inside [0, T] with S <= R."""
    S, R = rec.root[0].timestamp
    S_us, R_us = to_us(S), to_us(R)
    for name, v, v_us in (("S", S, S_us), ("R", R, R_us)):
        if not in_window(v_us, T_us):
            raise InputError(f"{where}: {name}={v!r} is not inside [0, T={fmt_s(T_us)}]")
    if S_us > R_us:
        raise InputError(f"{where}: S={S!r} is after R={R!r}")
    return S_us, R_us
