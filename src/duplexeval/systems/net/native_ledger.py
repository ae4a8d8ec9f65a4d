"""Accounting for one native full-duplex session: every append accepted, units contiguous, drain numbers.

A capture is trustworthy only if the server consumed exactly the audio that was sent: each append is
acknowledged once with the right end time, `sglang.unit.done` receipts run 0, 1, 2, ... and cover the
input, and `drained` reports consumed = input, discarded = 0 and padding short of one unit. Immediate
breaches raise `NativeWireError`; `final_problems()` lists what the end of the session leaves unmet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplexeval.systems.net.native_wire import NativeWireError


@dataclass
class NativeLedger:
    """Counts kept while a native session runs (all times in milliseconds of input audio)."""

    unit_ms: int
    sent: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (t_start_ms, duration_ms)
    accepted: dict[int, int] = field(default_factory=dict)  # seq -> accepted_end_ms
    units_done: int = 0
    deltas: int = 0
    output_audio_ms: float = 0.0
    last_unit: int = -1
    last_chunk_seq: int = -1
    ended: bool = False
    drained: dict[str, int] | None = None

    @property
    def input_ms(self) -> int:
        return sum(d for _, d in self.sent.values())

    def on_append(self, seq: int, t_start_ms: int, duration_ms: int) -> None:
        if seq != len(self.sent) or t_start_ms != self.input_ms:
            raise NativeWireError(f"append seq {seq} at {t_start_ms} ms is not contiguous")  # our own bug
        self.sent[seq] = (t_start_ms, duration_ms)

    def on_accepted(self, seq: int, accepted_end_ms: int) -> None:
        if seq not in self.sent:
            raise NativeWireError(f"accepted for seq {seq}, which was never sent")
        if seq in self.accepted:
            raise NativeWireError(f"seq {seq} accepted twice")
        start, dur = self.sent[seq]
        if accepted_end_ms != start + dur:
            raise NativeWireError(f"seq {seq} accepted to {accepted_end_ms} ms, sent to {start + dur} ms")
        self.accepted[seq] = accepted_end_ms

    def on_delta(self, unit_id: int, chunk_seq: int, t_start_ms: int, duration_ms: float) -> None:
        if self.drained is not None:
            raise NativeWireError("output audio after drained")
        if unit_id == self.last_unit:
            if chunk_seq != self.last_chunk_seq + 1:
                raise NativeWireError(f"unit {unit_id}: chunk_seq {chunk_seq} after {self.last_chunk_seq}")
        elif unit_id == self.last_unit + 1 or (self.last_unit < 0 and unit_id >= 0):
            if chunk_seq != 0:
                raise NativeWireError(f"unit {unit_id} starts at chunk_seq {chunk_seq}")
        else:
            raise NativeWireError(f"output unit {unit_id} after unit {self.last_unit}")
        if unit_id < self.units_done:
            raise NativeWireError(f"output for unit {unit_id}, already done")
        self.last_unit, self.last_chunk_seq = unit_id, chunk_seq
        self.deltas += 1
        self.output_audio_ms += duration_ms

    def on_unit_done(self, unit_id: int) -> None:
        if unit_id != self.units_done:
            raise NativeWireError(f"unit.done {unit_id}, expected {self.units_done}")
        if self.drained is not None:
            raise NativeWireError("unit.done after drained")
        self.units_done += 1

    def on_ended(self) -> None:
        if self.ended:
            raise NativeWireError("input_audio.ended twice")
        self.ended = True

    def on_drained(self, consumed_ms: int, discarded_ms: int, padding_ms: int) -> None:
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
        if d["consumed_ms"] != self.input_ms:
            problems.append(f"consumed {d['consumed_ms']} ms of {self.input_ms} ms sent")
        if d["discarded_ms"] != 0:
            problems.append(f"discarded {d['discarded_ms']} ms")
        if not 0 <= d["padding_ms"] < self.unit_ms:
            problems.append(f"padding {d['padding_ms']} ms is not short of one {self.unit_ms} ms unit")
        if self.units_done * self.unit_ms != d["consumed_ms"] + d["padding_ms"]:
            problems.append(
                f"{self.units_done} units of {self.unit_ms} ms done for {d['consumed_ms']} + {d['padding_ms']} ms"
            )
        return problems

    def to_json(self) -> dict[str, Any]:
        return {
            "unit_ms": self.unit_ms,
            "appends": len(self.sent),
            "accepted": len(self.accepted),
            "input_ms": self.input_ms,
            "audio_deltas": self.deltas,
            "output_audio_ms": round(self.output_audio_ms, 3),
            "units_done": self.units_done,
            "ended": self.ended,
            "drained": self.drained,
            "problems": self.final_problems(),
        }
