"""`--system native-duplex`: drive a `/v1/realtime` server in `interaction: native` mode (sglang-omni style).

Handshake: wait for `session.created`, send `session.update` (turn detection off, one audio output,
native 80 ms units), wait for `session.updated` and check its `session.sglang.granted` (a grant that
does not match is a protocol violation; the server's `rejections` are recorded either way). Then one
`input_audio_buffer.append {audio, sglang: {seq, t_start_ms}}` per 80 ms packet on the absolute
schedule. After T: `sglang.input_audio.end`, a bounded wait for `drained`, `session.close`. Every
append, unit and drain number goes through `NativeLedger`; its verdict is the `accounting` record.
Never sent: `commit`, `response.create`, `response.cancel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from duplexeval.audio import from_pcm16
from duplexeval.systems.base import FRAME_S, INPUT_SAMPLE_RATE, SampleInfo
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import is_silent
from duplexeval.systems.net.moshi_wire import float_to_pcm16
from duplexeval.systems.net.native_ledger import NativeLedger
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem

FRAME_MS = round(FRAME_S * 1000)
INPUT_RATES = (16000, 24000)
MAX_TEXT_CHARS = 200


def _pcm_f32(pcm16: bytes) -> np.ndarray:
    return from_pcm16(np.frombuffer(pcm16, dtype="<i2"))


class NativeSession(NetSession):
    """One native full-duplex conversation over one input."""

    system: NativeDuplexSystem

    def __init__(self, system: NativeDuplexSystem, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.request = nw.session_request(system.input_rate, system.output_rate, system.tail_policy)
        self.ledger = NativeLedger(unit_ms=FRAME_MS)
        self.granted: nw.Granted | None = None
        self.grant_problems: list[str] = []
        self._event = 0
        self._in = StreamResampler(INPUT_SAMPLE_RATE, system.input_rate)
        self._out: StreamResampler | None = None
        self.fatal = False

    def _event_id(self) -> str:
        self._event += 1
        return f"evt_{self._event}"

    # ------------------------------------------------------------------ handshake
    async def handshake(self) -> None:
        self.expect("session.created")
        if not await self.wait_for("session.created"):
            raise HandshakeAborted("no session.created")
        update = nw.SessionUpdate(event_id=self._event_id(), session=self.request)
        self.expect("session.updated")
        await self.send("session.update", nw.dump(update))
        if not await self.wait_for("session.updated"):
            raise HandshakeAborted("no session.updated")
        if self.grant_problems:
            raise HandshakeAborted("grant does not match: " + "; ".join(self.grant_problems))
        # From now until `drained` the server owes a steady stream (accepted, deltas, unit.done): a gap
        # over stall_s while the session is open is a `timeout`.
        self.expect("stream")

    # ------------------------------------------------------------------ input
    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        seq = len(self.ledger.sent)
        pcm = frame if self.system.input_rate == INPUT_SAMPLE_RATE else float_to_pcm16(self._in.process(_pcm_f32(frame)))
        self.ledger.on_append(seq, seq * FRAME_MS, FRAME_MS)
        msg = nw.InputAudioAppend(
            event_id=self._event_id(), audio=nw.encode_pcm16(pcm), sglang=nw.AppendMeta(seq=seq, t_start_ms=seq * FRAME_MS)
        )
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
        by_server = any(r["dir"] == "meta" and r.get("event") == "closed" and r.get("by") == "server"
                        for r in self.wire.records)
        # The accounting is a verdict only for a session that lived through its drain wait: a session that
        # died before T already has its reason; one the server closed (or ended with a fatal error)
        # after T could not be checked.
        checked = self.ledger.drained is not None or (alive and not self.fatal and not by_server)
        self.wire.meta("accounting", checked=checked, **self.ledger.to_json())

    # ------------------------------------------------------------------ output
    def on_message(self, rec: dict[str, Any], data: str | bytes) -> None:
        ev = nw.parse_server_event(data)
        if isinstance(ev, dict):
            rec["type"] = ev["type"]
            return
        rec["type"] = ev.type  # type: ignore[attr-defined]
        if isinstance(ev, nw.OutputAudioDelta):
            self._on_delta(rec, ev)
        elif isinstance(ev, nw.Accepted):
            rec["seq"] = ev.seq
            self.ledger.on_accepted(ev.seq, ev.accepted_end_ms)
        elif isinstance(ev, nw.UnitDone):
            rec["unit_id"] = ev.unit_id
            self.ledger.on_unit_done(ev.unit_id)
        elif isinstance(ev, nw.TranscriptDelta):
            rec["text"] = ev.delta[:MAX_TEXT_CHARS]
        elif isinstance(ev, nw.ErrorEvent):
            self.server_error(rec, f"{ev.error.code or ev.error.type}: {ev.error.message}")
            if ev.sglang.fatal:  # a fatal error ends the session: nothing more is sent
                rec["fatal"] = True
                self.fatal = self.dead = True
                self.signal("stream", rec)
        elif isinstance(ev, nw.SessionCreated):
            self.signal("session.created", rec)
        elif isinstance(ev, nw.SessionUpdated):
            self._on_granted(rec, ev.session.sglang.granted)
        elif isinstance(ev, nw.Ended):
            self.ledger.on_ended()
        elif isinstance(ev, nw.Drained):
            rec["drained"] = [ev.consumed_ms, ev.discarded_ms, ev.padding_ms]
            self.ledger.on_drained(ev.consumed_ms, ev.discarded_ms, ev.padding_ms)
            self.signal("drained", rec)
            self.signal("stream", rec)
        elif isinstance(ev, nw.SessionClosed):
            self.signal("session.closed", rec)
        elif isinstance(ev, nw.ResponseDone):
            rec["status"] = str(ev.response.get("status"))[:40]

    def _on_granted(self, rec: dict[str, Any], granted: nw.Granted) -> None:
        self.granted = granted
        rec["granted"] = {
            "native_unit_ms": granted.native_unit_ms,
            "first_unit_ms": granted.first_unit_ms,
            "tail_policy": granted.tail_policy,
            "input_rate": granted.input_audio_format.rate,
            "output_rate": granted.output_audio_format.rate,
        }
        if granted.rejections:
            rec["rejections"] = [f"{r.field}: {r.reason}"[:MAX_TEXT_CHARS] for r in granted.rejections]
        self.grant_problems = nw.check_grant(self.request, granted)
        self._out = StreamResampler(granted.output_audio_format.rate, INPUT_SAMPLE_RATE)
        self.signal("session.updated", rec)
        if self.grant_problems:
            raise nw.NativeWireError("grant does not match: " + "; ".join(self.grant_problems))

    def _on_delta(self, rec: dict[str, Any], ev: nw.OutputAudioDelta) -> None:
        if self.granted is None or self._out is None:
            raise nw.NativeWireError("output audio before session.updated")
        pcm = nw.decode_pcm16(ev.delta, "response.output_audio.delta")
        meta = ev.sglang
        rec["unit_id"], rec["chunk_seq"] = meta.unit_id, meta.chunk_seq
        self.ledger.on_delta(meta.unit_id, meta.chunk_seq, meta.media_time.t_start_ms, meta.media_time.duration_ms)
        rate = self.granted.output_audio_format.rate
        if rate != INPUT_SAMPLE_RATE:
            rec["wire_rate"] = rate
            pcm = float_to_pcm16(self._out.process(_pcm_f32(pcm)))
        if pcm and is_silent(pcm):
            rec["silent"] = len(pcm) // 2  # samples of silence: recorded, not queued (see frame_stream)
        elif pcm:
            self.output_audio(rec, pcm, INPUT_SAMPLE_RATE)


@dataclass(frozen=True)
class NativeDuplexSystem(NetSystem):
    """Parameters: `url` (ws://host/v1/realtime), `input_rate` (16000 or 24000, what is sent),
    `output_rate` (asked for; the granted rate is used), `tail_policy` (flush | pad | reject)."""

    name: ClassVar[str] = "native-duplex"
    protocol: ClassVar[str] = "native-duplex"
    session_class: ClassVar[type[NetSession]] = NativeSession

    url: str = "ws://127.0.0.1:8000/v1/realtime"
    input_rate: int = 16000
    output_rate: int = 24000
    tail_policy: str = "flush"

    def validate(self) -> None:
        super().validate()
        if self.input_rate not in INPUT_RATES:
            raise ValueError(f"input_rate must be one of {', '.join(map(str, INPUT_RATES))}, got {self.input_rate}")
        if not (8000 <= self.output_rate <= 48000):
            raise ValueError(f"output_rate must be in [8000, 48000], got {self.output_rate}")
        if self.tail_policy not in nw.TAIL_POLICIES:
            raise ValueError(f"tail_policy must be one of {', '.join(nw.TAIL_POLICIES)}, got {self.tail_policy!r}")
