"""`pipecat-ws`: drive a pipecat bot over its own WebSocket protocol (protobuf frames, RTVI messages inside).

```
--system 'pipecat-ws:url=ws://HOST:PORT/ws[,rate=16000,chunk_ms=20,wait_ready=true]'
```

The client does what pipecat's own WebSocket clients do (shapes in `pipecat_ws_wire.py`): after the
upgrade it sends RTVI `client-ready` and waits for `bot-ready` (`wait_ready`, bounded by
`ready_timeout_s`: the bot's pipeline start is not part of any latency, and a bot that never gets
ready is a `timeout`), then streams the input as `AudioRawFrame`s of `chunk_ms` at `rate` on the
absolute schedule. Received `AudioRawFrame`s are queued FIFO at their receipt (pipecat's server
transports send audio faster than real time and let the client's buffer play it); an
`InterruptionFrame` drops what is queued at its receipt, as pipecat's clients do on barge-in. RTVI
messages are recorded with their type (`rtvi`); the timing ones (user/bot started/stopped speaking)
also keep their time in the trace as they arrived, and an RTVI `error` with `fatal` is a
`server_error`. A text frame, bytes that are not a `pipecat.Frame`, a frame with nothing set,
non-mono or odd-length audio, or a message frame whose data is not JSON is a protocol violation.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

from duplexeval.audio import audio_library_versions
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.chunked import CHUNK_MS, ChunkedSession
from duplexeval.systems.net.pipecat_ws_wire import (
    TIMING_EVENTS,
    audio_frame,
    client_ready,
    message_frame,
    parse_frame,
    rtvi_type,
)
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem
from duplexeval.systems.net.trace import TraceRecord

RATES = (8000, 16000, 24000, 48000)
_IDS = itertools.count(1)


class PipecatWsSession(ChunkedSession):
    system: PipecatWs

    def __init__(self, system: PipecatWs, info: SampleInfo) -> None:
        super().__init__(system, info, system.rate, system.chunk_ms)

    async def handshake(self) -> None:
        if self.system.client_ready:
            async def send_ready(msg: JsonObject) -> None:
                await self.send("client-ready", message_frame(msg))

            await ready_handshake(self, send_ready, self.system.wait_ready, self.system.ready_timeout_s)

    def encode_chunk(self, pcm16: bytes) -> tuple[str, str | bytes]:
        return "audio", audio_frame(pcm16, self.wire_rate)

    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        frame = parse_frame(data)
        rec.kind = frame.kind
        if frame.kind == "audio":
            self.output_audio(rec, frame.pcm16, frame.rate)
        elif frame.kind == "interruption":
            self.clear_queue(rec, reason="InterruptionFrame")
        elif frame.kind in ("text", "transcription"):
            rec.fields["text"] = frame.text
        elif frame.kind == "message":
            rtvi_message(self, rec, frame.message)


def rtvi_message(session: NetSession, rec: TraceRecord, obj: Any) -> None:
    """Record an RTVI message (pipecat-ws and webrtc): its type; bot-ready pays the handshake; a fatal error is a server
    error."""
    kind = rtvi_type(obj)
    if kind is None:
        rec.fields["json"] = True
        return
    rec.fields["rtvi"] = kind
    if kind == "bot-ready":
        session.signal("bot-ready", rec)
    elif kind in TIMING_EVENTS:
        rec.fields["timing"] = True
    elif kind in ("error", "error-response"):
        body = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        text = str(body.get("message") or body.get("error") or "")
        if kind == "error" and body.get("fatal"):
            session.server_error(rec, text)
        else:
            rec.message = text[:300]


async def ready_handshake(session: NetSession, send_ready: Any, wait: bool, timeout_s: float) -> None:
    """RTVI: send client-ready (through `send_ready(message)`) and, when `wait`, wait for bot-ready (bounded)."""
    await send_ready(client_ready(f"duplexeval-{next(_IDS)}"))
    if not wait:
        return
    session.expect("bot-ready")
    if not await session.wait_for("bot-ready", timeout_s):
        closed = session.receiver is not None and session.receiver.closed.is_set()
        if not closed and not session._error.is_set():
            session.wire.meta("handshake_timeout", waited_s=timeout_s, what="bot-ready")
        raise HandshakeAborted("no bot-ready")


@dataclass(frozen=True)
class PipecatWs(NetSystem):
    """A pipecat bot over its WebSocket transport: protobuf frames (frames.proto), RTVI client-ready / bot-ready."""

    name: ClassVar[str] = "pipecat-ws"
    protocol: ClassVar[str] = "pipecat-ws"
    session_class: ClassVar[type[NetSession]] = PipecatWsSession

    url: str = "ws://127.0.0.1:8765/ws"
    rate: int = 16000  # the input's AudioRawFrame sample_rate
    chunk_ms: int = 20
    client_ready: bool = True  # send RTVI client-ready after the upgrade
    wait_ready: bool = True  # and wait for bot-ready before the first input (slot 0)
    ready_timeout_s: float = 10.0

    def version(self) -> str:
        return f"{super().version()}; rtvi client-ready {self.client_ready}; {audio_library_versions()}"

    def validate(self) -> None:
        super().validate()
        if self.rate not in RATES:
            raise ValueError(f"rate must be one of {', '.join(map(str, RATES))}, got {self.rate}")
        if self.chunk_ms not in CHUNK_MS:
            raise ValueError(f"chunk_ms must be one of {', '.join(map(str, CHUNK_MS))}, got {self.chunk_ms}")
        if self.wait_ready and not self.client_ready:
            raise ValueError("wait_ready=true needs client_ready=true (bot-ready answers client-ready)")
        if not (0 < self.ready_timeout_s <= 600):
            raise ValueError(f"ready_timeout_s must be in (0, 600], got {self.ready_timeout_s}")
