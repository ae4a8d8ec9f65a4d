"""`--system native-duplex`: drive a `/v1/realtime` server in `interaction: native` mode (sglang-omni).

Handshake: wait for `session.created`, send `session.update` (audio out, native interaction, turn
detection off) with only the values the user pinned (`input_rate`, `output_rate`, `tail_policy`,
`native_unit_ms`; by default none), wait for `session.updated` and adopt what the deployment grants: its
input rate (the 16 kHz input is resampled to it exactly, 80 ms per append), its output rate (resampled to
16 kHz), its native unit and tail policy. A deployment that refuses a pinned value answers with an error;
the client then asks once more without the pins to learn what the deployment serves, and the session ends
before any input with one line naming both values (`format_refused` record). Then one
`input_audio_buffer.append {audio, sglang: {seq, t_start_ms}}` per 80 ms packet on the absolute schedule.
After T: `sglang.input_audio.end`, a bounded wait for `drained`, `session.close`. Every append, unit and
drain number goes through `NativeLedger`; its verdict is the `accounting` record. Never sent: `commit`,
`response.create`, `response.cancel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from duplexeval.audio import from_pcm16
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import is_silent
from duplexeval.systems.net.moshi_wire import float_to_pcm16
from duplexeval.systems.net.native_ledger import NativeLedger
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem
from duplexeval.systems.net.trace import TraceRecord
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

MAX_TEXT_CHARS = 200
# What each pinnable value is called in the request and in the deployment's error (`param`).
PIN_FIELDS = {"input_rate": "session.audio.input.format", "output_rate": "session.audio.output.format",
              "tail_policy": "session.sglang.tail_policy", "native_unit_ms": "session.sglang.timebase.native_unit_ms"}
PIN_ERRORS = {"tail policy is unavailable": "tail_policy", "native cadence is fixed": "native_unit_ms"}


def _pcm_f32(pcm16: bytes) -> np.ndarray:
    return from_pcm16(np.frombuffer(pcm16, dtype="<i2"))


class NativeSession(NetSession):
    """One native full-duplex conversation over one input."""

    system: NativeDuplexSystem

    def __init__(self, system: NativeDuplexSystem, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.request = nw.session_request(system.input_rate, system.output_rate, system.tail_policy,
                                          system.native_unit_ms)
        self.ledger = NativeLedger()
        self.granted: nw.Granted | None = None
        self.grant_problems: list[str] = []
        self._event = 0
        self._in: StreamResampler | None = None
        self._out: StreamResampler | None = None
        self._sent_samples = 0
        self.fatal = False
        self.refusal: TraceRecord | None = None  # the error record a pinned value was refused with

    def _event_id(self) -> str:
        self._event += 1
        return f"evt_{self._event}"

    # ------------------------------------------------------------------ handshake
    async def _update(self, session: nw.SessionConfiguration) -> bool:
        """Send one session.update; True when the server answered it with session.updated."""
        self.expect("session.updated")
        await self.send("session.update", nw.dump(nw.SessionUpdate(event_id=self._event_id(), session=session)))
        return await self.wait_for("session.updated")

    async def handshake(self) -> None:
        self.expect("session.created")
        if not await self.wait_for("session.created"):
            raise HandshakeAborted("no session.created")
        if not await self._update(self.request):
            if self.refusal is None or not nw.pinned(self.request):
                raise HandshakeAborted("no session.updated")
            # A pinned value was refused: ask once more without pins, only to learn what the deployment serves.
            self._error.clear()
            self.signal("session.updated")  # the first ask is answered (by the error)
            self._signals.pop("session.updated", None)
            served = await self._update(nw.session_request())
            why = self._refused_line(served)
            self.refusal.message = why
            self.wire.meta("format_refused", what=why)
            raise HandshakeAborted(why)
        if self.grant_problems:
            raise HandshakeAborted("grant does not match: " + "; ".join(self.grant_problems))
        # From now until `drained` the server owes a steady stream (accepted, deltas, unit.done): a gap
        # over stall_s while the session is open is a `timeout`.
        self.expect("stream")

    def _refused_line(self, served: bool) -> str:
        """One line: what was asked, what the deployment serves, and what to do."""
        assert self.refusal is not None
        asked = nw.pinned(self.request)
        got = nw.granted_values(self.granted) if served and self.granted is not None else {}
        param, said = self.refusal.get("param"), str(self.refusal.get("server_message", ""))
        keys = [k for k in asked if PIN_FIELDS[k] == param or PIN_ERRORS.get(said) == k]
        keys = keys or [k for k in asked if k in got and got[k] != asked[k]] or list(asked)
        parts = [f"{k}={asked[k]} asked, the deployment serves {got[k]}" if k in got else f"{k}={asked[k]} asked"
                 for k in keys]
        return (f"format refused ({said}): {'; '.join(parts)}; leave {' and '.join(keys)} unset to adopt the "
                "deployment's")

    # ------------------------------------------------------------------ input
    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        assert self.granted is not None and self._in is not None
        rate = self.granted.input_audio_format.rate
        seq = len(self.ledger.sent)
        pcm = frame if rate == INPUT_SAMPLE_RATE else float_to_pcm16(self._in.process(_pcm_f32(frame)))
        t_start_ms = self._sent_samples * 1000.0 / rate
        n = len(pcm) // 2
        self._sent_samples += n
        self.ledger.on_append(seq, t_start_ms, n * 1000.0 / rate)
        msg = nw.InputAudioAppend(event_id=self._event_id(), audio=nw.encode_pcm16(pcm),
                                  sglang=nw.AppendMeta(seq=seq, t_start_ms=t_start_ms))
        return "input_audio_buffer.append", nw.dump(msg)

    async def finish_input(self) -> None:
        self.expect("drained")
        await self.send("sglang.input_audio.end", nw.dump(nw.InputAudioEnd(event_id=self._event_id())))
        await self.wait_for("drained", self.system.drain_s)
        self.expect("session.closed")
        await self.send("session.close", nw.dump(nw.SessionClose(event_id=self._event_id())))
        await self.wait_for("session.closed", min(2.0, self.system.drain_s))

    async def close(self) -> None:
        alive = not self.dead and not (self.receiver is not None and self.receiver.closed.is_set())
        await super().close()
        by_server = any(r.event == "closed" and r.get("by") == "server" for r in self.wire.records)
        # The accounting is a verdict only for a session that lived through its drain wait: a session that
        # died before T already has its reason; one the server closed (or ended with a fatal error)
        # after T could not be checked.
        checked = self.ledger.drained is not None or (alive and not self.fatal and not by_server)
        self.wire.meta("accounting", checked=checked, **self.ledger.to_json())

    # ------------------------------------------------------------------ output
    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        ev = nw.parse_server_event(data)
        rec.kind = ev.type  # type: ignore[attr-defined]
        if isinstance(ev, nw.OutputAudioDelta):
            self._on_delta(rec, ev)
        elif isinstance(ev, nw.Accepted):
            rec.fields["seq"] = ev.seq
            self.ledger.on_accepted(ev.seq, ev.accepted_end_ms)
        elif isinstance(ev, nw.UnitDone):
            rec.fields["unit_id"] = ev.unit_id
            self.ledger.on_unit_done(nw.unit_index(ev.unit_id))
        elif isinstance(ev, nw.TextDelta):
            rec.fields["text"] = ev.delta[:MAX_TEXT_CHARS]
        elif isinstance(ev, nw.ErrorEvent):
            self._on_error(rec, ev)
        elif isinstance(ev, nw.SessionCreated):
            self.signal("session.created", rec)
        elif isinstance(ev, nw.SessionUpdated):
            self._on_granted(rec, ev.session.sglang.granted)
        elif isinstance(ev, nw.Ended):
            self.ledger.on_ended(ev.accepted_end_ms)
        elif isinstance(ev, nw.Drained):
            rec.fields["drained"] = [ev.consumed_ms, ev.discarded_ms, ev.padding_ms]
            self.ledger.on_drained(ev.consumed_ms, ev.discarded_ms, ev.padding_ms)
            self.signal("drained", rec)
            self.signal("stream", rec)
        elif isinstance(ev, nw.SessionClosed):
            self.signal("session.closed", rec)
        elif isinstance(ev, nw.ResponseDone):
            rec.fields["status"] = ev.response.status[:40]

    def _on_error(self, rec: TraceRecord, ev: nw.ErrorEvent) -> None:
        rec.fields["code"] = ev.error.code
        if ev.error.param is not None:
            rec.fields["param"] = ev.error.param[:MAX_TEXT_CHARS]
        self.server_error(rec, f"{ev.error.code or ev.error.type}: {ev.error.message}")
        if self.granted is None and not ev.sglang.fatal and self.refusal is None:  # the update was refused
            self.refusal = rec
            rec.fields["server_message"] = ev.error.message[:MAX_TEXT_CHARS]
        if ev.sglang.fatal:  # a fatal error ends the session: nothing more is sent
            rec.fields["fatal"] = True
            self.fatal = self.dead = True
            self.signal("stream", rec)

    def _on_granted(self, rec: TraceRecord, granted: nw.Granted) -> None:
        self.granted = granted
        rec.fields["granted"] = {**nw.granted_values(granted), "first_unit_ms": granted.first_unit_ms}
        if granted.rejections:
            rec.fields["rejections"] = [f"{r.field}: {r.reason}"[:MAX_TEXT_CHARS] for r in granted.rejections]
        if self.refusal is None:  # (a grant after a refusal only says what the deployment serves)
            self.grant_problems = nw.check_grant(self.request, granted)
            self.ledger.unit_ms = granted.native_unit_ms
            self._in = StreamResampler(INPUT_SAMPLE_RATE, granted.input_audio_format.rate)
            self._out = StreamResampler(granted.output_audio_format.rate, INPUT_SAMPLE_RATE)
        self.signal("session.updated", rec)
        if self.grant_problems:
            raise nw.NativeWireError("grant does not match: " + "; ".join(self.grant_problems))

    def _on_delta(self, rec: TraceRecord, ev: nw.OutputAudioDelta) -> None:
        if self.granted is None or self._out is None or self.refusal is not None:
            raise nw.NativeWireError("output audio before session.updated")
        pcm = nw.decode_pcm16(ev.delta, "response.output_audio.delta")
        meta = ev.sglang
        rec.fields["unit_id"], rec.fields["chunk_seq"] = meta.unit_id, meta.chunk_seq
        rate = self.granted.output_audio_format.rate
        self.ledger.on_delta(nw.unit_index(meta.unit_id), meta.chunk_seq, len(pcm) / 2 * 1000.0 / rate)
        if rate != INPUT_SAMPLE_RATE:
            rec.fields["wire_rate"] = rate
            pcm = float_to_pcm16(self._out.process(_pcm_f32(pcm)))
        if pcm and is_silent(pcm):
            rec.fields["silent"] = len(pcm) // 2  # samples of silence: recorded, not queued (see frame_stream)
        elif pcm:
            self.output_audio(rec, pcm, INPUT_SAMPLE_RATE)


@dataclass(frozen=True)
class NativeDuplexSystem(NetSystem):
    """Parameters: `url` (ws://host/v1/realtime) and the values to pin instead of adopting the deployment's:
    `input_rate`, `output_rate` (0 = the deployment's), `tail_policy` (auto = the deployment's; flush | pad |
    reject), `native_unit_ms` (0 = the deployment's)."""

    name: ClassVar[str] = "native-duplex"
    protocol: ClassVar[str] = "native-duplex"
    session_class: ClassVar[type[NetSession]] = NativeSession

    url: str = "ws://127.0.0.1:8000/v1/realtime"
    input_rate: int = 0
    output_rate: int = 0
    tail_policy: str = "auto"
    native_unit_ms: int = 0

    def validate(self) -> None:
        super().validate()
        for key in ("input_rate", "output_rate"):
            v = getattr(self, key)
            if v and not (8000 <= v <= 48000):
                raise ValueError(f"{key} must be 0 (the deployment's) or in [8000, 48000], got {v}")
        if self.tail_policy not in ("auto", *nw.TAIL_POLICIES):
            raise ValueError(f"tail_policy must be auto or one of {', '.join(nw.TAIL_POLICIES)}, got "
                             f"{self.tail_policy!r}")
        if not (0 <= self.native_unit_ms <= 10000):
            raise ValueError("native_unit_ms must be 0 (the deployment's) or whole ms up to 10000, got "
                             f"{self.native_unit_ms}")
