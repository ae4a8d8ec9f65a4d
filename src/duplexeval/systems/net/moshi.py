"""`--system moshi`: drive a Moshi or NVIDIA PersonaPlex server over its binary `/api/chat` protocol.

The client waits for the server's handshake (PersonaPlex sends it only after its prompts ran; that
wait is recorded as `handshake_s` and lies before input slot 0, so it is excluded from every
latency), sends the silent lead frame the server skips (its one-frame offset), then one Ogg/Opus
page per 80 ms input packet on the absolute schedule. Output pages are decoded as one continuous
stream and resampled to 16 kHz without per-chunk edges; each is queued FIFO at its receipt, except
silence frames, which are recorded and not queued (frame_stream.SILENCE_PEAK).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import version as package_version
from typing import Any, ClassVar

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.frame_stream import is_silent
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem

MAX_TEXT_CHARS = 200  # text and metadata kept per trace record


class MoshiSession(NetSession):
    """One `/api/chat` conversation: handshake, lead frame, Opus pages in, Opus pages out."""

    system: MoshiSystem

    def __init__(self, system: MoshiSystem, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.codec = mw.MoshiClientCodec()
        self.handshake_s: float | None = None

    async def handshake(self) -> None:
        t_open = self.wire.now()
        if not await self.wait_for("handshake", self.system.handshake_timeout_s):
            if self.receiver is not None and self.receiver.closed.is_set():
                raise HandshakeAborted("the server closed the connection before its handshake")
            self.wire.meta("handshake_timeout", waited_s=self.system.handshake_timeout_s)
            raise HandshakeAborted(f"no handshake within {self.system.handshake_timeout_s} s")
        self.handshake_s = self.wire.now() - t_open
        self.wire.meta("handshake", handshake_s=round(self.handshake_s, 6))
        for msg in self.codec.lead_frames():
            await self.send("audio.lead", msg)
        # The server answers every input frame with an output frame: a gap over stall_s is a `timeout`.
        self.expect("stream")

    async def finish_input(self) -> None:
        self.signal("stream")  # nothing more is owed once the input has ended

    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        return "audio", self.codec.audio_message(frame)

    def on_message(self, rec: dict[str, Any], data: str | bytes) -> None:
        if isinstance(data, (bytes, bytearray)) and data:
            rec["type"] = mw.Kind(data[0]).name.lower() if data[0] in tuple(mw.Kind) else f"kind_{data[0]}"
        ev = self.codec.receive(data)
        if isinstance(ev, mw.Handshake):
            self.signal("handshake", rec)
        elif isinstance(ev, mw.AudioOut):
            if ev.pcm16 and is_silent(ev.pcm16):
                rec["silent"] = len(ev.pcm16) // 2  # samples of silence: recorded, not queued (frame_stream)
            elif ev.pcm16:
                self.output_audio(rec, ev.pcm16, ev.sample_rate)
        elif isinstance(ev, mw.TextOut):
            rec["text"] = ev.text[:MAX_TEXT_CHARS]
        elif isinstance(ev, mw.ErrorOut):
            self.server_error(rec, ev.message)
        elif isinstance(ev, mw.MetadataOut):
            rec["metadata"] = json.dumps(ev.metadata, sort_keys=True)[:MAX_TEXT_CHARS]
        elif isinstance(ev, mw.ControlOut):
            rec["action"] = ev.action.name.lower()


@dataclass(frozen=True)
class MoshiSystem(NetSystem):
    """Parameters: `url` (ws://host:8998/api/chat), PersonaPlex's `text_prompt`, `voice_prompt`, `seed`
    (-1 = not sent), and `handshake_timeout_s` (how long the server may take to get ready)."""

    name: ClassVar[str] = "moshi"
    protocol: ClassVar[str] = "moshi"
    session_class: ClassVar[type[NetSession]] = MoshiSession
    default_sessions_per_url: ClassVar[int | None] = 1  # Moshi-family servers hold one conversation at a time

    url: str = f"ws://127.0.0.1:{mw.DEFAULT_PORT}{mw.CHAT_PATH}"
    text_prompt: str = ""
    voice_prompt: str = ""
    seed: int = -1
    handshake_timeout_s: float = 60.0

    def connect_url(self, info: SampleInfo) -> str:
        return mw.chat_url(self.url, self.text_prompt, self.voice_prompt, None if self.seed < 0 else self.seed)

    def version(self) -> str:
        return f"{super().version()}; sphn {package_version('sphn')}"

    def validate(self) -> None:
        super().validate()
        if self.seed < -1:
            raise ValueError(f"seed must be -1 (not sent) or a non-negative integer, got {self.seed}")
        if not (0 < self.handshake_timeout_s <= 3600):
            raise ValueError(f"handshake_timeout_s must be in (0, 3600] seconds, got {self.handshake_timeout_s}")
