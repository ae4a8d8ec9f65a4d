"""`duplexeval serve moshi`: the loopback Moshi / PersonaPlex `/api/chat` server over an in-process system.

The real server's rules, copied: one conversation at a time (HTTP 503 while busy); the handshake
when it is ready (`slow_start_ms` delays it, as PersonaPlex's prompts do); one continuous Ogg/Opus
stream at 24 kHz each way; the first 80 ms input frame is the past for the model and is ignored;
every later input frame gives exactly one 80 ms output frame (silence while the system is quiet),
sent when that frame's input has arrived. Text, control, metadata and ping messages from the client
are ignored; a text frame, an unknown kind or a bad Ogg stream ends the conversation with an error
message. PersonaPlex's query parameters are checked (`seed` must be an integer) and otherwise unused.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

import numpy as np

from duplexeval.systems.base import (
    FRAME_S,
    INPUT_SAMPLE_RATE,
)
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.frame_stream import FullDuplexOutput
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.server import ServerSession


class MoshiServerSession(ServerSession):
    """One `/api/chat` conversation (see the module docstring)."""

    protocol: ClassVar[str] = "moshi"
    exclusive: ClassVar[bool] = True
    default_path: ClassVar[str] = mw.CHAT_PATH

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output = FullDuplexOutput()
        self._decoder = mw.OpusDecoder()
        self._framer = mw.Framer(mw.MOSHI_FRAME_SAMPLES)
        self._down = StreamResampler(mw.MOSHI_SAMPLE_RATE, INPUT_SAMPLE_RATE)
        self._encoder = mw.OpusEncoder(INPUT_SAMPLE_RATE)
        self.skipped = 0

    # the driver's output hooks
    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.output.on_audio(pcm16k, at_s)

    def on_clear(self, at_s: float, detail: dict[str, Any]) -> None:
        self.output.on_clear(at_s, detail)

    # the fault layer's messages, in this protocol's shape
    def error_message(self, text: str) -> str | bytes:
        return mw.encode_error(text)

    def malformed_message(self) -> str | bytes:
        return bytes((7,)) + b"not a moshi message kind"

    def oversize_message(self, nbytes: int) -> str | bytes:
        return mw.encode(mw.Kind.AUDIO, b"\x00" * nbytes)

    async def run(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != mw.CHAT_PATH:
            await self.send_now(mw.encode_error(f"unknown path {parts.path!r}; this server serves {mw.CHAT_PATH}"))
            return
        seed = dict(parse_qsl(parts.query)).get("seed")
        if seed is not None and not seed.lstrip("-").isdigit():
            await self.send_now(mw.encode_error(f"seed must be an integer, got {seed!r}"))
            return
        await self.send_now(mw.encode(mw.Kind.HANDSHAKE, mw.HANDSHAKE_PAYLOAD))
        async for message in self.ws:
            if self.stalled:
                continue
            try:
                msg = mw.decode(message)
                if msg.kind == mw.Kind.HANDSHAKE:
                    raise mw.MoshiWireError("handshake from the client")
                if msg.kind != mw.Kind.AUDIO:
                    continue
                pcm = self._decoder.feed(msg.payload)
            except mw.MoshiWireError as exc:
                await self.send_now(mw.encode_error(str(exc)))
                return
            for frame in self._framer.push(pcm):
                await self._frame(frame)

    async def _frame(self, frame_24k: np.ndarray) -> None:
        if self.skipped < mw.SERVER_SKIPPED_FRAMES:
            self.skipped += 1  # the model treats the first frame as the past (not on the session clock)
            return
        self.input_audio(FRAME_S)
        k = self.driver.frames
        await self.driver.feed(mw.float_to_pcm16(self._down.process(frame_24k)))
        out = self.output.stream.next_frame()
        self.deliver(k * FRAME_S, mw.encode(mw.Kind.AUDIO, self._encoder.encode_frame(out.astype("<i2").tobytes())))
