"""Accounting for one native full-duplex session: every append accepted, units in order, drain numbers.

A capture is trustworthy only if the server consumed exactly the audio that was sent: each append is
acknowledged once with the right end time, `sglang.unit.done` receipts run unit_0, unit_1, ... and cover
the input (plus, at most, one empty end-of-stream unit: upstream cuts one at the end when the input
filled whole units), output deltas belong to units not yet done (in order, `chunk_seq` 0, 1, ... within a unit), and
`drained` reports consumed = input, discarded = 0 and padding short of one unit. Times are float
milliseconds as the server sends them (sglang-omni `runtime.py`: sample counts over the rate), compared
within a microsecond. Immediate breaches raise `NativeWireError`; `final_problems()` lists what the end of
the session leaves unmet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.net.native_wire import NativeWireError

TOL_MS = 1e-3


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL_MS


@dataclass
class NativeLedger:
    """Counts kept while a native session runs (times in milliseconds of input audio)."""

    unit_ms: int = 0  # the granted native unit (set from the grant)
    sent: dict[int, tuple[float, float]] = field(default_factory=dict)  # seq -> (t_start_ms, duration_ms)
    accepted: dict[int, float] = field(default_factory=dict)  # seq -> accepted_end_ms
    units_done: int = 0
    deltas: int = 0
    output_audio_ms: float = 0.0
    last_unit: int = -1
    last_chunk_seq: int = -1
    ended: bool = False
    drained: dict[str, float] | None = None

    @property
    def input_ms(self) -> float:
        return sum(d for _, d in self.sent.values())

    def on_append(self, seq: int, t_start_ms: float, duration_ms: float) -> None:
        if seq != len(self.sent) or not _close(t_start_ms, self.input_ms):
            raise NativeWireError(f"append seq {seq} at {t_start_ms} ms is not contiguous")  # our own bug
        self.sent[seq] = (t_start_ms, duration_ms)

    def on_accepted(self, seq: int, accepted_end_ms: float) -> None:
        if seq not in self.sent:
            raise NativeWireError(f"accepted for seq {seq}, which was never sent")
        if seq in self.accepted:
            raise NativeWireError(f"seq {seq} accepted twice")
        start, dur = self.sent[seq]
        if not _close(accepted_end_ms, start + dur):
            raise NativeWireError(f"seq {seq} accepted to {accepted_end_ms} ms, sent to {start + dur} ms")
        self.accepted[seq] = accepted_end_ms

    def on_delta(self, unit: int, chunk_seq: int, audio_ms: float) -> None:
        if self.drained is not None:
            raise NativeWireError("output audio after drained")
        if unit < self.units_done:
            raise NativeWireError(f"output for unit_{unit}, already done")
        if unit == self.last_unit:
            if chunk_seq != self.last_chunk_seq + 1:
                raise NativeWireError(f"unit_{unit}: chunk_seq {chunk_seq} after {self.last_chunk_seq}")
        elif unit > self.last_unit:  # a unit may have no audio at all, so later units may skip ids
            if chunk_seq != 0:
                raise NativeWireError(f"unit_{unit} starts at chunk_seq {chunk_seq}")
        else:
            raise NativeWireError(f"output for unit_{unit} after unit_{self.last_unit}")
        self.last_unit, self.last_chunk_seq = unit, chunk_seq
        self.deltas += 1
        self.output_audio_ms += audio_ms

    def on_unit_done(self, unit: int) -> None:
        if unit != self.units_done:
            raise NativeWireError(f"unit.done unit_{unit}, expected unit_{self.units_done}")
        if self.drained is not None:
            raise NativeWireError("unit.done after drained")
        self.units_done += 1

    def on_ended(self, accepted_end_ms: float | None = None) -> None:
        if self.ended:
            raise NativeWireError("input_audio.ended twice")
        if accepted_end_ms is not None and not _close(accepted_end_ms, self.input_ms):
            raise NativeWireError(f"ended at {accepted_end_ms} ms, {self.input_ms} ms sent")
        self.ended = True

    def on_drained(self, consumed_ms: float, discarded_ms: float, padding_ms: float) -> None:
        if not self.ended:
            raise NativeWireError("drained before ended")
        if self.drained is not None:
            raise NativeWireError("drained twice")
        self.drained = {"consumed_ms": consumed_ms, "discarded_ms": discarded_ms, "padding_ms": padding_ms}

    def final_problems(self) -> list[str]:
        """What the finished session leaves unmet (empty when the accounting holds)."""
        problems = []
        missing = [s for s in self.sent if s not in self.accepted]
        if missing:
            problems.append(f"{len(missing)} append(s) never accepted (first seq {missing[0]})")
        if not self.ended:
            problems.append("no sglang.input_audio.ended")
        if self.drained is None:
            problems.append("no sglang.input_audio.drained")
            return problems
        d = self.drained
        if not _close(d["consumed_ms"], self.input_ms):
            problems.append(f"consumed {d['consumed_ms']:g} ms of {self.input_ms:g} ms sent")
        if not _close(d["discarded_ms"], 0.0):
            problems.append(f"discarded {d['discarded_ms']:g} ms")
        if self.unit_ms and not 0 <= d["padding_ms"] < self.unit_ms:
            problems.append(f"padding {d['padding_ms']:g} ms is not short of one {self.unit_ms} ms unit")
        if self.unit_ms:  # the units cover the input; the end-of-stream unit may be an extra, empty one
            covered = d["consumed_ms"] + d["padding_ms"]
            need = math.ceil((covered - TOL_MS) / self.unit_ms)
            if not need <= self.units_done <= need + 1:
                problems.append(f"{self.units_done} units of {self.unit_ms} ms done for {d['consumed_ms']:g} + "
                                f"{d['padding_ms']:g} ms")
        return problems

    def to_json(self) -> JsonObject:
        return {
            "unit_ms": self.unit_ms,
            "appends": len(self.sent),
            "accepted": len(self.accepted),
            "input_ms": round(self.input_ms, 3),
            "audio_deltas": self.deltas,
            "output_audio_ms": round(self.output_audio_ms, 3),
            "units_done": self.units_done,
            "ended": self.ended,
            "drained": self.drained,
            "problems": self.final_problems(),
        }
