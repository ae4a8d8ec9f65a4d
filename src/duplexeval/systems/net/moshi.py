"""`--system moshi`: drive a Moshi-family server over its binary `/api/chat` protocol.

Three servers speak it, each with its quirks (`flavor`, or `auto` to tell them apart where the
handshake can):

| flavor | server | handshake | before it | query it reads | first input frame |
|---|---|---|---|---|---|
| `kyutai` | Kyutai's Python server (`moshi.server`) | 1 byte | nothing | none | skipped by the server |
| `rust` | Kyutai's Rust `moshi-backend` | 9 bytes | a metadata message | sampling settings | used |
| `personaplex` | NVIDIA PersonaPlex | 1 byte, after its prompts ran | nothing | `text_prompt`, `voice_prompt` (both required), `seed` | used |

`auto` sends `text_prompt` and `voice_prompt` always (the other servers ignore them) and, after a 1-byte
handshake, the lead frame (Kyutai's server needs it; for PersonaPlex it is 80 ms of silence before slot 0);
a 9-byte handshake or a metadata message before it means the Rust backend (no lead frame). The client
waits for the handshake up to `handshake_timeout_s` (a queued conversation waits for the one before it:
Kyutai's and PersonaPlex's servers take one conversation at a time and make the next one wait), records
the wait as `handshake_s` before input slot 0, so it is never counted as latency, then sends one Ogg/Opus
page per 80 ms input packet on the absolute schedule. Output is decoded as one continuous stream whatever
the page boundaries and resampled to 16 kHz; each message's audio is queued FIFO at its receipt, except
silence, which is recorded and not queued (frame_stream.SILENCE_PEAK). Metadata, messages of unknown
kinds, text frames and empty messages are discarded and recorded (`discarded` in the trace record).
"""  # noqa: E501 - a Markdown table row is one line

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import version as package_version
from typing import ClassVar

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.frame_stream import is_silent
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem
from duplexeval.systems.net.trace import TraceRecord

MAX_TEXT_CHARS = 200  # text and metadata kept per trace record
FLAVORS = ("auto", *mw.FLAVORS)
LEAD_FRAMES = {"kyutai": mw.SERVER_SKIPPED_FRAMES, "rust": 0, "personaplex": 0}


class MoshiSession(NetSession):
    """One `/api/chat` conversation: handshake, lead frame, Opus pages in, Opus pages out."""

    system: MoshiSystem

    def __init__(self, system: MoshiSystem, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.codec = mw.MoshiClientCodec()
        self.handshake_s: float | None = None
        self.handshake_bytes: int | None = None

    def detected_flavor(self) -> str:
        """The flavor the handshake shows: `rust`, or `python` (Kyutai's or PersonaPlex's) for a 1-byte one."""
        rust = self.handshake_bytes == 1 + len(mw.HANDSHAKE_PAYLOAD) or self.codec.metadata_before_handshake
        return "rust" if rust else "python"

    async def handshake(self) -> None:
        t_open = self.wire.now()
        if not await self.wait_for("handshake", self.system.handshake_timeout_s):
            if self.receiver is not None and self.receiver.closed.is_set():
                raise HandshakeAborted("the server closed the connection before its handshake")
            self.wire.meta("handshake_timeout", waited_s=self.system.handshake_timeout_s)
            raise HandshakeAborted(f"no handshake within {self.system.handshake_timeout_s} s")
        self.handshake_s = self.wire.now() - t_open
        detected = self.detected_flavor()
        flavor = self.system.flavor
        if flavor == "auto":
            lead = 0 if detected == "rust" else mw.SERVER_SKIPPED_FRAMES
        else:
            lead = LEAD_FRAMES[flavor]
        expected = "rust" if flavor == "rust" else "python"
        self.wire.meta("handshake", handshake_s=round(self.handshake_s, 6), bytes=self.handshake_bytes,
                       flavor=flavor, detected=detected, lead_frames=lead,
                       **({"mismatch": True} if flavor != "auto" and detected != expected else {}))
        for msg in self.codec.lead_frames(lead):
            await self.send("audio.lead", msg)
        # The server answers every input frame with output: a gap over stall_s is a `timeout`.
        self.expect("stream")

    async def finish_input(self) -> None:
        self.signal("stream")  # nothing more is owed once the input has ended

    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        return "audio", self.codec.audio_message(frame)

    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        if isinstance(data, (bytes, bytearray)) and data:
            rec.kind = mw.decode(bytes(data)).name
        ev = self.codec.receive(data)
        if isinstance(ev, mw.Discarded):
            rec.discarded = ev.what[:MAX_TEXT_CHARS]
        elif isinstance(ev, mw.Handshake):
            self.handshake_bytes = 1 + len(ev.payload)
            self.signal("handshake", rec)
        elif isinstance(ev, mw.AudioOut):
            try:
                body = bytes(data)[1:] if isinstance(data, (bytes, bytearray)) else b""
                rec.fields["pages"] = len(mw.ogg_pages(body))
            except mw.MoshiWireError:
                rec.fields["pages"] = None  # a page split across messages: the stream decoder joins them
            if ev.pcm16 and is_silent(ev.pcm16):
                rec.fields["silent"] = len(ev.pcm16) // 2  # samples of silence: recorded, not queued (frame_stream)
            elif ev.pcm16:
                self.output_audio(rec, ev.pcm16, ev.sample_rate)
        elif isinstance(ev, mw.TextOut):
            rec.fields["text"] = ev.text[:MAX_TEXT_CHARS]
        elif isinstance(ev, mw.ErrorOut):
            self.server_error(rec, ev.message)
        elif isinstance(ev, mw.MetadataOut):
            rec.fields["metadata"] = json.dumps(ev.metadata, sort_keys=True)[:MAX_TEXT_CHARS]
            rec.discarded = "metadata"
        elif isinstance(ev, mw.ControlOut):
            rec.fields["action"] = ev.action.name.lower()


@dataclass(frozen=True)
class MoshiSystem(NetSystem):
    """Parameters: `url` (ws://host:8998/api/chat), `flavor` (auto | kyutai | rust | personaplex),
    PersonaPlex's `text_prompt`, `voice_prompt` and `seed` (-1 = not sent), and `handshake_timeout_s`
    (how long the server may take to get ready, a queued conversation included)."""

    name: ClassVar[str] = "moshi"
    protocol: ClassVar[str] = "moshi"
    session_class: ClassVar[type[NetSession]] = MoshiSession
    default_sessions_per_url: ClassVar[int | None] = 1  # Moshi-family servers hold one conversation at a time

    url: str = f"ws://127.0.0.1:{mw.DEFAULT_PORT}{mw.CHAT_PATH}"
    flavor: str = "auto"
    text_prompt: str = ""
    voice_prompt: str = ""
    seed: int = -1
    handshake_timeout_s: float = 600.0

    def connect_url(self, info: SampleInfo) -> str:
        return mw.chat_url(self.url, self.flavor, self.text_prompt, self.voice_prompt,
                           None if self.seed < 0 else self.seed)

    def version(self) -> str:
        return f"{super().version()}; sphn {package_version('sphn')}"

    def validate(self) -> None:
        super().validate()
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {', '.join(FLAVORS)}, got {self.flavor!r}")
        if self.seed < -1:
            raise ValueError(f"seed must be -1 (not sent) or a non-negative integer, got {self.seed}")
        if self.flavor == "personaplex" and not self.voice_prompt:
            raise ValueError("flavor=personaplex needs voice_prompt (a file in the server's voice prompt folder, "
                             "e.g. NATF2.pt)")
        if not (0 < self.handshake_timeout_s <= 3600):
            raise ValueError(f"handshake_timeout_s must be in (0, 3600] seconds, got {self.handshake_timeout_s}")
