"""The loopback native full-duplex server's conversation rules, transport-free: JSON events in, events out.

It follows the sglang-omni `/v1/realtime` native mode: `session.created` first; `session.update`
must ask for `interaction: native` with turn detection off (unknown fields are rejected as
`unknown_parameter`); the grant lists what was granted and `rejections` for what was not (input
16 or 24 kHz, output 16 or 24 kHz, 80 ms units only). Appends must carry `seq` 0, 1, 2, ... and
`t_start_ms` at the end of the audio so far (else a fatal `seq_mismatch`); each is answered by
`accepted`; every 80 ms unit of input gives one output delta (silence while the model is quiet) and
`unit.done`. `sglang.input_audio.end` gives `ended`, the tail per `tail_policy`, `drained` and
`response.done`; `session.close` gives `session.closed`. `commit`, `response.create` and
`response.cancel` are refused; binary frames are fatal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np

from duplexeval.audio import from_pcm16
from duplexeval.errors import InputError
from duplexeval.systems.base import FRAME_S, FRAME_SAMPLES
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import FullDuplexOutput
from duplexeval.systems.net.moshi_wire import float_to_pcm16
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.server import ServerSession

# One 80 ms unit of 16 kHz PCM16 in -> the model's 80 ms of 16 kHz int16 output.
Step = Callable[[bytes], Awaitable[np.ndarray]]

RATES = (16000, 24000)
DEFAULT_OUTPUT_RATE = 24000


def _event(type_: str, **fields: Any) -> str:
    return json.dumps({"type": type_, **fields}, separators=(",", ":"))


def error_event(code: str, message: str, fatal: bool) -> str:
    return _event("error", error={"type": "invalid_request_error", "code": code, "message": message},
                  sglang={"fatal": fatal})


@dataclass
class Reply:
    """Messages to send in answer to one client message, and whether the server then closes."""

    messages: list[str] = field(default_factory=list)
    close: bool = False


class NativeConversation:
    """One native full-duplex session's rules; `step` runs the model on one unit."""

    def __init__(self, step: Step, session_id: str = "sess_1", grant_unit_ms: int = nw.UNIT_MS) -> None:
        self.step = step
        self.grant_unit_ms = grant_unit_ms  # what the grant says (a test server may say something else)
        self.session_id = session_id
        self.granted: dict[str, Any] | None = None
        self.next_seq = 0
        self.received_ms = 0
        self._pending = np.zeros(0, dtype=np.int16)  # input samples (16 kHz) short of a whole unit
        self._in: StreamResampler | None = None
        self._out: StreamResampler | None = None
        self.units = 0
        self.consumed_ms = 0
        self.discarded_ms = 0
        self.padding_ms = 0
        self.ended = False
        self.response_started = False

    def created(self) -> str:
        return _event("session.created", session={"id": self.session_id, "object": "realtime.session"})

    async def on_message(self, data: str | bytes) -> Reply:
        if isinstance(data, bytes):
            return Reply([error_event("binary_not_supported", "JSON text frames only", True)], close=True)
        try:
            ev = nw.parse_client_event(data)
        except nw.NativeWireError as exc:
            code = "unknown_parameter" if "Extra inputs" in str(exc) else "invalid_event"
            return Reply([error_event(code, str(exc), False)])
        if isinstance(ev, dict):
            if ev["type"] in nw.REFUSED_IN_NATIVE:
                return Reply([error_event("refused_in_native_mode", f"{ev['type']} is not allowed in native mode", False)])
            if ev["type"] == "input_audio_buffer.clear":
                self.discarded_ms += self._pending.shape[0] * 1000 // 16000
                self._pending = self._pending[:0]
                return Reply([_event("input_audio_buffer.cleared")])
            return Reply([error_event("unknown_event", f"unknown client event {ev['type']!r}", False)])
        if isinstance(ev, nw.SessionUpdate):
            return await self._update(ev)
        if self.granted is None:
            return Reply([error_event("not_configured", "session.update must come first", True)], close=True)
        if isinstance(ev, nw.InputAudioAppend):
            return await self._append(ev)
        if isinstance(ev, nw.InputAudioEnd):
            return await self._end()
        assert isinstance(ev, nw.SessionClose)
        return Reply([_event("session.closed", session={"id": self.session_id})], close=True)

    async def _update(self, ev: nw.SessionUpdate) -> Reply:
        if self.granted is not None:
            return Reply([error_event("already_configured", "the session is configured once", False)])
        req = ev.session
        rejections = []
        in_rate = req.audio.input.format.rate
        if in_rate not in RATES:
            rejections.append({"field": "audio.input.format.rate", "reason": f"{in_rate} not supported; 16000 granted"})
            in_rate = 16000
        out_rate = req.audio.output.format.rate
        if out_rate not in RATES:
            rejections.append({"field": "audio.output.format.rate", "reason": f"{out_rate} not supported; 24000 granted"})
            out_rate = DEFAULT_OUTPUT_RATE
        if req.sglang.native_unit_ms != nw.UNIT_MS:
            rejections.append({"field": "sglang.native_unit_ms", "reason": f"only {nw.UNIT_MS} ms units"})
        self.granted = {
            "interaction": "native",
            "native_full_duplex": True,
            "native_unit_ms": self.grant_unit_ms,
            "first_unit_ms": self.grant_unit_ms,
            "tail_policy": req.sglang.tail_policy,
            "supports_server_interrupt": False,
            "supports_truncate": False,
            "supports_resume": False,
            "partial_style": None,
            "input_audio_format": {"type": "audio/pcm", "rate": in_rate},
            "output_audio_format": {"type": "audio/pcm", "rate": out_rate},
            "limits": {"max_session_ms": None, "max_append_ms": 1000},
            "rejections": rejections,
        }
        self._in = StreamResampler(in_rate, 16000)
        self._out = StreamResampler(16000, out_rate)
        session = {"id": self.session_id, "type": "realtime", "output_modalities": ["audio"],
                   "audio": {"input": {"format": self.granted["input_audio_format"], "turn_detection": None},
                             "output": {"format": self.granted["output_audio_format"]}},
                   "sglang": {"granted": self.granted}}
        return Reply([_event("session.updated", session=session)])

    async def _append(self, ev: nw.InputAudioAppend) -> Reply:
        if self.ended:
            return Reply([error_event("input_ended", "append after sglang.input_audio.end", True)], close=True)
        meta = ev.sglang
        if meta.seq != self.next_seq or meta.t_start_ms != self.received_ms:
            why = f"append seq {meta.seq} at {meta.t_start_ms} ms, expected seq {self.next_seq} at {self.received_ms} ms"
            return Reply([error_event("seq_mismatch", why, True)], close=True)
        try:
            raw = nw.decode_pcm16(ev.audio, "input_audio_buffer.append")
        except nw.NativeWireError as exc:
            return Reply([error_event("invalid_audio", str(exc), True)], close=True)
        assert self._in is not None and self.granted is not None
        rate = int(self.granted["input_audio_format"]["rate"])
        x = np.frombuffer(raw, dtype="<i2")
        if x.shape[0] * 1000 % rate:
            return Reply([error_event("invalid_audio", f"{x.shape[0]} samples is not whole milliseconds", True)], close=True)
        dur_ms = x.shape[0] * 1000 // rate
        self.next_seq += 1
        self.received_ms += dur_ms
        pcm16k = x if rate == 16000 else np.frombuffer(
            float_to_pcm16(self._in.process(from_pcm16(x))), dtype="<i2")
        reply = Reply([_event("sglang.input_audio.accepted", seq=meta.seq, accepted_end_ms=self.received_ms)])
        self._pending = np.concatenate([self._pending, pcm16k.astype(np.int16)])
        while self._pending.shape[0] >= FRAME_SAMPLES:
            unit, self._pending = self._pending[:FRAME_SAMPLES], self._pending[FRAME_SAMPLES:]
            reply.messages += await self._unit(unit)
            self.consumed_ms += nw.UNIT_MS
        return reply

    async def _unit(self, unit: np.ndarray) -> list[str]:
        assert self._out is not None and self.granted is not None
        out16 = await self.step(unit.astype("<i2").tobytes())
        out = float_to_pcm16(self._out.process(from_pcm16(out16)))
        msgs = []
        if not self.response_started:
            self.response_started = True
            msgs.append(_event("response.created", response={"id": "resp_1", "status": "in_progress"}))
        rate = int(self.granted["output_audio_format"]["rate"])
        media = {"t_start_ms": self.units * nw.UNIT_MS, "duration_ms": round(len(out) / 2 * 1000 / rate, 3)}
        msgs.append(_event("response.output_audio.delta", response_id="resp_1", item_id="item_1", output_index=0,
                           content_index=0, delta=nw.encode_pcm16(out),
                           sglang={"unit_id": self.units, "chunk_seq": 0, "media_time": media}))
        msgs.append(_event("sglang.unit.done", unit_id=self.units))
        self.units += 1
        return msgs

    async def _end(self) -> Reply:
        if self.ended:
            return Reply([error_event("input_ended", "sglang.input_audio.end twice", False)])
        self.ended = True
        reply = Reply([_event("sglang.input_audio.ended")])
        left = self._pending.shape[0]
        if left:
            assert self.granted is not None
            left_ms = left * 1000 // 16000
            if self.granted["tail_policy"] == "reject":
                self.discarded_ms += left_ms
            else:  # flush and pad both run the last partial unit padded with silence
                unit = np.concatenate([self._pending, np.zeros(FRAME_SAMPLES - left, dtype=np.int16)])
                reply.messages += await self._unit(unit)
                self.consumed_ms += left_ms
                self.padding_ms += nw.UNIT_MS - left_ms
            self._pending = self._pending[:0]
        reply.messages.append(_event("sglang.input_audio.drained", consumed_ms=self.consumed_ms,
                                     discarded_ms=self.discarded_ms, padding_ms=self.padding_ms))
        if self.response_started:
            reply.messages.append(_event("response.done", response={"id": "resp_1", "status": "completed",
                                                                   "status_details": None}))
        return reply


async def flush_deliveries(session: ServerSession, bound_s: float = 2.0) -> None:
    """Wait (bounded) until the session's queued deliveries are on the wire."""
    waited = 0.0
    while session._heap and waited < bound_s and not session.stalled:
        await asyncio.sleep(0.01)
        waited += 0.01


class NativeServerSession(ServerSession):
    """The loopback native full-duplex server (see the module docstring)."""

    protocol: ClassVar[str] = "native-duplex"
    default_path: ClassVar[str] = nw.REALTIME_PATH

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output = FullDuplexOutput()
        unit = int(self.config.options.get("native_unit_ms", nw.UNIT_MS))
        self.conv = NativeConversation(self._step, f"sess_{self.server.connections}", unit)

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """One option: `native_unit_ms` (what the grant says; 80 unless testing a client's grant check)."""

        for key, value in options.items():
            if key != "native_unit_ms":
                raise InputError(f"--option {key}: unknown native-duplex server option (known: native_unit_ms)")
            if not str(value).isdigit() or not 0 < int(value) <= 1000:
                raise InputError(f"--option native_unit_ms={value!r}: expected whole milliseconds in 1..1000")

    async def _step(self, unit: bytes) -> np.ndarray:
        await self.driver.feed(unit)
        return self.output.stream.next_frame()

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.output.on_audio(pcm16k, at_s)

    def on_clear(self, at_s: float, detail: dict[str, Any]) -> None:
        self.output.on_clear(at_s, detail)

    def error_message(self, text: str) -> str | bytes:
        return error_event("server_error", text, True)

    def oversize_message(self, nbytes: int) -> str | bytes:
        return _event("rate_limits.updated", padding="x" * nbytes)

    async def run(self) -> None:
        if urlsplit(self.path).path != nw.REALTIME_PATH:
            await self.send_now(error_event("not_found", f"this server serves {nw.REALTIME_PATH}", True))
            return
        await self.send_now(self.conv.created())
        async for message in self.ws:
            if self.stalled:
                continue
            units_before = self.conv.units
            ms_before = self.conv.received_ms
            reply = await self.conv.on_message(message)
            if self.conv.received_ms > ms_before:  # an accepted append: the session clock follows the input
                self.input_audio((self.conv.received_ms - ms_before) / 1000.0)
            # Output of unit k goes out at k * 80 ms of the input timeline (now, in practice); the rest now.
            at = max(self.now_s(), units_before * FRAME_S)
            if reply.close:  # the last words go out after everything queued, then the server closes
                await flush_deliveries(self)
                for msg in reply.messages:
                    await self.send_now(msg)
                return
            for msg in reply.messages:
                self.deliver(at, msg)
