"""`ws-pcm`: raw PCM16 over WebSocket, the protocol many home-made agents speak (client adapter and server).

Wire: the client sends one binary frame of PCM16 mono little-endian at the declared `rate` per 80 ms;
the server sends binary PCM16 frames at the same rate whenever it speaks, and optional JSON text
control messages: `{"type": "clear"}` (barge-in: drop what is queued) and `{"type": "error",
"message": ...}`. Other JSON types are recorded and ignored. With `declare_rate=true` the client adds
`?rate=N` to the URL. The protocol owes the client no replies, so a stalled ws-pcm server is only
seen as missing audio (`timeout` cannot be detected; see docs/network.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from duplexeval.systems.base import ControlEvent, SampleInfo
from duplexeval.systems.net.pcm import StreamResampler, json_message
from duplexeval.systems.net.server import ServerSession, resample_pcm16
from duplexeval.systems.net.session import NetSession, NetSystem, with_query
from duplexeval.systems.net.trace import TraceRecord
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

RATES = (8000, 16000, 22050, 24000, 44100, 48000)


class WsPcmSession(NetSession):
    system: WsPcm

    def __init__(self, system: WsPcm, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.resample = StreamResampler(INPUT_SAMPLE_RATE, system.rate)

    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        return "audio", self.resample(frame)

    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        if isinstance(data, bytes):
            rec.kind = "audio"
            self.output_audio(rec, data, self.system.rate)
            return
        msg = json_message(data, "type")
        rec.kind = msg["type"]
        if msg["type"] == "clear":
            self.clear_queue(rec, reason="server clear")
        elif msg["type"] == "error":
            self.server_error(rec, str(msg.get("message", "")))


@dataclass(frozen=True)
class WsPcm(NetSystem):
    """Raw PCM16 over WebSocket at a declared rate; `{"type": "clear"}` for barge-in."""

    name: ClassVar[str] = "ws-pcm"
    protocol: ClassVar[str] = "ws-pcm"
    session_class: ClassVar[type[NetSession]] = WsPcmSession

    url: str = "ws://127.0.0.1:8765/ws"
    rate: int = 16000
    declare_rate: bool = True

    def connect_url(self, info: SampleInfo) -> str:
        if not self.declare_rate:
            return self.url
        return with_query(self.url, "rate", self.rate)

    def validate(self) -> None:
        super().validate()
        if self.rate not in RATES:
            raise ValueError(f"rate must be one of {', '.join(map(str, RATES))}, got {self.rate}")


class WsPcmServerSession(ServerSession):
    """The ws-pcm loopback server: binary PCM in and out at `?rate=` (default 16000), JSON clear/error."""

    protocol: ClassVar[str] = "ws-pcm"
    default_path: ClassVar[str] = "/ws"
    rate: int = INPUT_SAMPLE_RATE

    async def run(self) -> None:
        q = parse_qs(urlsplit(self.path).query)
        try:
            self.rate = int(q.get("rate", [str(INPUT_SAMPLE_RATE)])[0])
        except ValueError:
            self.rate = 0
        if self.rate not in RATES:
            await self.ws.close(1008, f"unsupported rate {q.get('rate')}")
            return
        to16k = StreamResampler(self.rate, INPUT_SAMPLE_RATE)
        async for message in self.ws:
            if self.stalled:
                continue
            if isinstance(message, bytes):
                if len(message) % 2:
                    await self.send_now(self.error_message("odd-length PCM16 input"))
                    continue
                self.input_audio(len(message) / 2 / self.rate)
                await self.driver.feed(to16k(message))

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        pcm = resample_pcm16(pcm16k, INPUT_SAMPLE_RATE, self.rate)
        step = self.rate  # frames of at most 0.5 s (2 bytes per sample), all due when the system spoke
        for off in range(0, len(pcm), step):
            self.deliver(at_s, pcm[off : off + step])

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        self.deliver(at_s, json.dumps({"type": "clear"}))

    def error_message(self, text: str) -> str | bytes:
        return json.dumps({"type": "error", "message": text})
