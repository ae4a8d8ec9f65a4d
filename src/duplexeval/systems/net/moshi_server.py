"""`duplexeval serve moshi --flavor kyutai|rust|personaplex`: a loopback Moshi-family `/api/chat` server.

Each flavor behaves as its upstream server does (read from kyutai-labs/moshi `moshi/moshi/server.py`,
`rust/moshi-backend/src/stream_both.rs` and `standalone.rs`, NVIDIA/personaplex `moshi/moshi/server.py`):

| | kyutai | rust | personaplex |
|---|---|---|---|
| conversations | one at a time: the next connection is accepted and waits for the lock (no 503) | side by side | one at a time, like kyutai |
| before the handshake | nothing | a metadata message (kind 4, JSON) | the system prompts run (`prompt_ms`), lock held |
| handshake | the byte 0 | 0 and two u32 (9 bytes) | the byte 0 |
| query | ignored | the sampling settings; a bad number is HTTP 400 | `text_prompt` and `voice_prompt` required, `voice_prompt` one of the voices; `seed` fails (upstream reads `request["seed"]`) |
| first input frame | skipped (the model's past) | used | used |
| output pages | what the writer made for the frame (two 40 ms pages) in one message; the first also carries the Ogg headers | one 40 ms page per message; the first also carries the headers | like kyutai |
| an unknown kind from the client | ignored | ends the conversation | ignored |
| a broken Ogg stream from the client | the connection is dropped | the connection is dropped | the connection is dropped |

A failure upstream raises inside the handler after the upgrade, so the client sees the connection end
without a close frame (code 1006); an unknown path is HTTP 404. Every later input frame gives exactly one
80 ms output frame (silence while the system is quiet), sent when that frame's input has arrived.
Text, control, metadata, handshake and ping messages from the client are ignored.
"""  # noqa: E501 - a Markdown table row is one line

from __future__ import annotations

import asyncio
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

import numpy as np

from duplexeval.errors import InputError
from duplexeval.systems.base import FRAME_S, ControlEvent
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.frame_stream import FullDuplexOutput
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.server import ServeConfig, ServerSession, log
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

SERVER_FLAVORS = mw.FLAVORS
OPTIONS = {"flavor": "kyutai", "prompt_ms": "0"}
# PersonaPlex's packaged voices (its README: NATF0-3, NATM0-3, VARF0-4, VARM0-4), as `.pt` embeddings.
VOICES = frozenset(f"{kind}{i}.pt" for kind, n in (("NATF", 4), ("NATM", 4), ("VARF", 5), ("VARM", 5))
                   for i in range(n))
# The Rust backend's query model: these keys are parsed as numbers (unknown keys are ignored).
RUST_NUMBERS = {"text_temperature": float, "text_topk": int, "audio_temperature": float, "audio_topk": int,
                "max_steps": int, "audio_seed": int, "text_seed": int, "pad_mult": float,
                "repetition_penalty_context": int, "repetition_penalty": float}


def _flavor(config: ServeConfig) -> str:
    return str(config.options.get("flavor", OPTIONS["flavor"]))


class MoshiServerSession(ServerSession):
    """One `/api/chat` conversation in the configured flavor (see the module docstring)."""

    protocol: ClassVar[str] = "moshi"
    default_path: ClassVar[str] = mw.CHAT_PATH

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flavor = _flavor(self.config)
        self.prompt_s = float(self.config.options.get("prompt_ms", OPTIONS["prompt_ms"])) / 1000.0
        self.output = FullDuplexOutput()
        self._decoder = mw.OpusDecoder()
        self._framer = mw.Framer(mw.MOSHI_FRAME_SAMPLES)
        self._down = StreamResampler(mw.MOSHI_SAMPLE_RATE, INPUT_SAMPLE_RATE)
        self._encoder = mw.OpusEncoder(INPUT_SAMPLE_RATE)
        self.to_skip = mw.SERVER_SKIPPED_FRAMES if self.flavor == "kyutai" else 0
        self.skipped = 0

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        """`flavor` (kyutai | rust | personaplex) and `prompt_ms` (PersonaPlex's prompt time, whole ms)."""
        for key, value in options.items():
            if key not in OPTIONS:
                raise InputError(f"--option {key}: unknown moshi server option (known: {', '.join(OPTIONS)})")
            if key == "flavor" and value not in SERVER_FLAVORS:
                raise InputError(f"--flavor {value!r}: expected one of {', '.join(SERVER_FLAVORS)}")
            if key == "prompt_ms" and (not str(value).isdigit() or int(value) > 600_000):
                raise InputError(f"--option prompt_ms={value!r}: expected whole milliseconds in 0..600000")

    @classmethod
    def refuse(cls, path: str, config: ServeConfig) -> tuple[int, str] | None:
        parts = urlsplit(path)
        if parts.path != mw.CHAT_PATH:
            return 404, f"not found: this server serves {mw.CHAT_PATH}\n"
        if _flavor(config) == "rust":  # axum's Query extractor refuses the request before the upgrade
            for key, value in parse_qsl(parts.query, keep_blank_values=True):
                kind = RUST_NUMBERS.get(key)
                try:
                    if kind is not None:
                        kind(value)
                except ValueError:
                    return 400, f"Failed to deserialize query string: {key}: invalid number\n"
        return None

    # the driver's output hooks
    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.output.on_audio(pcm16k, at_s)

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        self.output.on_clear(at_s, event)

    # the fault layer's messages, in this protocol's shape
    def error_message(self, text: str) -> str | bytes:
        return mw.encode_error(text)

    def malformed_message(self) -> str | bytes:
        return mw.encode(mw.Kind.AUDIO, b"this is not an Ogg page, " + bytes(32))

    def oversize_message(self, nbytes: int) -> str | bytes:
        return mw.encode(mw.Kind.AUDIO, b"\x00" * nbytes)

    def _personaplex_query_fails(self) -> str | None:
        """Why PersonaPlex's handler would raise on this query (None: it would not)."""
        query = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
        for key in ("voice_prompt", "text_prompt"):
            if key not in query:
                return f"KeyError: {key!r} (read from the query unconditionally)"
        if query["voice_prompt"] not in VOICES:
            return f"FileNotFoundError: voice prompt {query['voice_prompt']!r} is not one of the voices"
        if "seed" in query:
            return "KeyError: 'seed' (read from the request, not its query)"
        return None

    async def run(self) -> None:
        if self.flavor == "rust":
            metadata = {"text_temperature": 0.8, "text_topk": 250, "audio_temperature": 0.8, "audio_topk": 250,
                        "pad_mult": 0.0, "repetition_penalty_context": 32, "repetition_penalty": 1.0,
                        "lm_model_file": "loopback", "mimi_model_file": "loopback",
                        "build_info": {"served": self.config.system.name}, "instance_name": "duplexeval-loopback"}
            await self.send_now(mw.encode_metadata(metadata))
            await self.send_now(mw.encode(mw.Kind.HANDSHAKE, mw.HANDSHAKE_PAYLOAD))
            await self._converse()
            return
        if self.flavor == "personaplex":
            why = self._personaplex_query_fails()
            if why is not None:
                log.info("personaplex handler raised: %s", why)
                self.drop()
                return
        async with self.server.conversation_lock():  # the next connection waits here, already upgraded
            if self.flavor == "personaplex" and self.prompt_s > 0:
                await asyncio.sleep(self.prompt_s)  # the voice and text prompts run before the handshake
            await self.send_now(mw.encode(mw.Kind.HANDSHAKE))
            await self._converse()

    async def _converse(self) -> None:
        async for message in self.ws:
            if self.stalled:
                continue
            if isinstance(message, str) or not message:
                if self.flavor == "rust" and isinstance(message, str):
                    return  # its receive loop reads the text's first byte as a kind and ends
                continue  # the Python servers log it and go on
            kind = message[0]
            if kind != mw.Kind.AUDIO:
                if self.flavor == "rust" and kind not in tuple(mw.Kind):
                    return  # MsgType::from_u8 fails: the receive loop ends, the connection closes
                continue
            try:
                pcm = self._decoder.feed(message[1:])
            except mw.MoshiWireError as exc:
                log.info("broken Ogg stream from the client: %s", exc)
                self.drop()
                return
            for frame in self._framer.push(pcm):
                await self._frame(frame)

    async def _frame(self, frame_24k: np.ndarray) -> None:
        if self.skipped < self.to_skip:
            self.skipped += 1  # the model treats the first frame as the past (not on the session clock)
            return
        self.input_audio(FRAME_S)
        k = self.driver.frames
        await self.driver.feed(mw.float_to_pcm16(self._down.process(frame_24k)))
        out = self.output.stream.next_frame()
        ogg = self._encoder.encode_frame(out.astype("<i2").tobytes())
        if self.flavor != "rust":
            self.deliver(k * FRAME_S, mw.encode(mw.Kind.AUDIO, ogg))
            return
        pages = mw.ogg_pages(ogg)
        head = b"".join(p for p in pages if mw.is_header_page(p))
        audio = [p for p in pages if not mw.is_header_page(p)]
        for i, page in enumerate(audio):  # one page per message; the headers go with the first audio page
            self.deliver(k * FRAME_S, mw.encode(mw.Kind.AUDIO, (head if i == 0 else b"") + page))
