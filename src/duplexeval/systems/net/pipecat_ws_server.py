"""The pipecat-ws loopback bot: serve any in-process system over pipecat's WebSocket protocol (`serve pipecat-ws`).

As pipecat's transports with `ProtobufFrameSerializer` behave: binary `pipecat.Frame`s only; input
`AudioRawFrame`s at any rate (resampled to 16 kHz for the served system); RTVI `client-ready` is
answered with `bot-ready`; the system's audio goes out as `AudioRawFrame`s of `out_chunk_ms` (40 ms,
pipecat's default chunk) at 16 kHz, paced at real time from the reply's start, `lead_ms` (40) ahead, as
pipecat's output transports send (`--option pace=false`: the whole reply at once); its barge-in withdraws
what was not sent yet and sends an `InterruptionFrame` plus RTVI `bot-stopped-speaking`; RTVI `user-started-speaking` /
`user-stopped-speaking`
come from the system's own listener, `bot-started-speaking` with each reply. A text frame or bytes
that do not parse are ignored, as pipecat's serializer does (it logs them). `--option single_client=true`
imitates `WebsocketServerTransport`: a second connection while one is open is closed with 1013;
`--option bot_ready=false` never answers `client-ready` (a bot that never gets ready).
Faults: `error@S` sends an RTVI `error` with `fatal: true`, `malformed@S` bytes that are not a Frame,
`oversize@S` an `AudioRawFrame` of max_size + 1 KiB.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from duplexeval.systems.base import ControlEvent, ProtocolViolation
from duplexeval.systems.net.pcm import StreamResampler
from duplexeval.systems.net.pipecat_ws_wire import (
    audio_frame,
    interruption_frame,
    message_frame,
    parse_frame,
    rtvi,
    rtvi_type,
)
from duplexeval.systems.net.server import ServerSession, check_option_values
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

SERVER_OPTIONS = {"out_chunk_ms": "40", "single_client": "false", "bot_ready": "true", "pace": "true", "lead_ms": "40"}


class PipecatWsServerSession(ServerSession):
    """One connection of the pipecat-ws loopback bot."""

    protocol: ClassVar[str] = "pipecat-ws"
    default_path: ClassVar[str] = "/ws"

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        check_option_values(cls.protocol, options, {"out_chunk_ms": lambda v: 10 <= int(v) <= 1000,
                                                    "single_client": lambda v: v.lower() in ("true", "false"),
                                                    "bot_ready": lambda v: v.lower() in ("true", "false"),
                                                    "pace": lambda v: v.lower() in ("true", "false"),
                                                    "lead_ms": lambda v: 0 <= int(v) <= 10000})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opts = {**SERVER_OPTIONS, **self.config.options}
        self.out_chunk_ms = int(opts["out_chunk_ms"])
        self.single = str(opts["single_client"]).lower() == "true"
        self.bot_ready = str(opts["bot_ready"]).lower() == "true"
        self.pace = str(opts["pace"]).lower() == "true"
        self.lead_s = int(opts["lead_ms"]) / 1000.0
        self.replies = 0
        self.current: str | None = None
        self._to16k: dict[int, StreamResampler] = {}

    async def run(self) -> None:
        if self.single and self.server.active > 1:
            await self.ws.close(1013, "Server already has a connected client")
            return
        async for message in self.ws:
            if self.stalled:
                continue
            try:
                frame = parse_frame(message)
            except ProtocolViolation:
                continue  # pipecat's serializer logs and drops what it cannot parse
            if frame.kind == "audio":
                rs = self._to16k.setdefault(frame.rate, StreamResampler(frame.rate, INPUT_SAMPLE_RATE))
                self.input_audio(len(frame.pcm16) / 2 / frame.rate)
                await self.driver.feed(rs(frame.pcm16))
            elif frame.kind == "message" and rtvi_type(frame.message) == "client-ready" and self.bot_ready:
                msg_id = str(frame.message.get("id", ""))
                await self.send_now(message_frame(rtvi("bot-ready", msg_id, {"version": "2.2.0"})))

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.deliver(at_s, message_frame(rtvi("bot-started-speaking")))
        step = INPUT_SAMPLE_RATE * self.out_chunk_ms // 1000 * 2
        msgs: list[str | bytes] = [audio_frame(pcm16k[o : o + step], INPUT_SAMPLE_RATE)
                                   for o in range(0, len(pcm16k), step)]
        self.replies += 1
        self.current = f"reply-{self.replies}"
        if self.pace:  # as pipecat's output transports send: at about real time, a little ahead
            self.deliver_stream(at_s, msgs, self.out_chunk_ms / 1000.0, self.lead_s, self.current, self._log_send)
        else:
            for msg in msgs:
                self.deliver(at_s, msg, self.current, self._log_send)

    def _log_send(self) -> None:
        """When each audio message went on the wire (monotonic; benchmarks/pipecat_transport_timing.py)."""
        if self.server.send_log is not None:
            self.server.send_log.append(time.monotonic())

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        if self.current is not None:  # what the bot had not sent yet of the reply it stops
            self.cancel(self.current, at_s)
        self.deliver(at_s, interruption_frame())
        self.deliver(at_s, message_frame(rtvi("bot-stopped-speaking")))

    def on_user(self, kind: str, at_s: float, audio_s: float) -> None:
        self.deliver(at_s, message_frame(rtvi(f"user-{kind}-speaking")))

    def error_message(self, text: str) -> str | bytes:
        return message_frame(rtvi("error", "", {"message": text, "fatal": True}))

    def malformed_message(self) -> str | bytes:
        return b"\xff\xff\xff\xff"

    def oversize_message(self, nbytes: int) -> str | bytes:
        return audio_frame(b"\x00" * (nbytes + (nbytes % 2)), INPUT_SAMPLE_RATE)
