"""The Moshi / PersonaPlex `/api/chat` wire format: kind-byte messages and Ogg/Opus audio at 24 kHz.

Every WebSocket message is binary; byte 0 is the kind (0 handshake, 1 audio, 2 text, 3 control,
4 metadata JSON, 5 error UTF-8, 6 ping), the rest its payload (kyutai-labs/moshi rust/protocol.md).
A message of an unknown kind is discarded, as protocol.md says and Kyutai's Python server and client
do; so are text frames and empty messages, which both log and skip. The handshake is the single byte 0
from Kyutai's Python server and PersonaPlex, 0 plus two u32 (protocol and model version) from the Rust
moshi-backend, which also sends a metadata message before it. Audio in both directions is one
continuous Ogg/Opus stream at 24 kHz mono; a message carries one Ogg page (Rust: one 40 ms page per
message, the first also carrying the OpusHead and OpusTags pages) or several (the Python servers send
what their writer produced), so the client decodes the stream whatever the page boundaries. Written and
read with the `sphn` package. Pure codec: no sockets here (the adapter and the loopback server use it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import sphn  # type: ignore[import-untyped]

from duplexeval.audio import from_pcm16, to_pcm16
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

MOSHI_SAMPLE_RATE = 24000
MOSHI_FRAME_SAMPLES = 1920  # 80 ms at 24 kHz
CHAT_PATH = "/api/chat"
DEFAULT_PORT = 8998
# The server treats the first input frame as "in the past" and ignores it, so its output is one frame
# behind; the client sends this many silent lead frames right after the handshake to keep every
# sample of the user's audio (see `MoshiClientCodec.lead_frames`).
SERVER_SKIPPED_FRAMES = 1
# Handshake payload the Rust backend sends: protocol version and model version, u32 little-endian (the
# Python servers send the kind byte alone).
HANDSHAKE_PAYLOAD = (0).to_bytes(4, "little") + (0).to_bytes(4, "little")
HANDSHAKE_PAYLOADS = (0, len(HANDSHAKE_PAYLOAD))
FLAVORS = ("kyutai", "rust", "personaplex")


class Kind(IntEnum):
    """Byte 0 of every message."""

    HANDSHAKE = 0
    AUDIO = 1
    TEXT = 2
    CONTROL = 3
    METADATA = 4
    ERROR = 5
    PING = 6


class Control(IntEnum):
    """Payload byte of a CONTROL message."""

    START = 0
    END_TURN = 1
    PAUSE = 2
    RESTART = 3


class MoshiWireError(ProtocolViolation):
    """A message that breaks the Moshi wire format (unknown kind, text frame, bad UTF-8/JSON/Ogg)."""


@dataclass(frozen=True)
class MoshiMessage:
    """One decoded message: its kind (an int when the kind is unknown) and raw payload (audio: Ogg bytes)."""

    kind: Kind | int
    payload: bytes

    @property
    def known(self) -> bool:
        return isinstance(self.kind, Kind)

    @property
    def name(self) -> str:
        """The kind's name as the trace records it (`kind_N` for an unknown one)."""
        return self.kind.name.lower() if isinstance(self.kind, Kind) else f"kind_{self.kind}"

    def text(self) -> str:
        """The payload of a TEXT or ERROR message as UTF-8."""
        try:
            return self.payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MoshiWireError(f"{self.name} message is not UTF-8: {exc}") from None

    def metadata(self) -> JsonObject:
        """The payload of a METADATA message as a JSON object."""
        try:
            obj = json.loads(self.payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise MoshiWireError(f"metadata message is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise MoshiWireError("metadata message is not a JSON object")
        return obj

    def control(self) -> Control:
        """The action of a CONTROL message."""
        if len(self.payload) != 1 or self.payload[0] not in tuple(Control):
            raise MoshiWireError(f"control message has a bad payload {self.payload[:8]!r}")
        return Control(self.payload[0])


def encode(kind: Kind, payload: bytes = b"") -> bytes:
    """One wire message: the kind byte, then the payload."""
    return bytes((int(kind),)) + payload


def encode_text(text: str) -> bytes:
    return encode(Kind.TEXT, text.encode("utf-8"))


def encode_error(message: str) -> bytes:
    return encode(Kind.ERROR, message.encode("utf-8"))


def encode_metadata(obj: JsonObject) -> bytes:
    return encode(Kind.METADATA, json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def decode(data: bytes | str) -> MoshiMessage:
    """Parse one received message (an unknown kind keeps its byte); a text frame or an empty one raises."""
    if isinstance(data, str):
        raise MoshiWireError("text frame on a binary protocol")
    if not data:
        raise MoshiWireError("empty message")
    kind: Kind | int = Kind(data[0]) if data[0] in _KINDS else int(data[0])
    return MoshiMessage(kind, bytes(data[1:]))


_KINDS = frozenset(int(k) for k in Kind)


def ogg_pages(data: bytes) -> list[bytes]:
    """Split bytes that hold whole Ogg pages into the pages (RFC 3533 page layout); MoshiWireError otherwise."""
    pages, i = [], 0
    while i < len(data):
        if data[i : i + 4] != b"OggS" or len(data) < i + 27:
            raise MoshiWireError(f"not an Ogg page at byte {i}")
        n_seg = data[i + 26]
        end = i + 27 + n_seg + sum(data[i + 27 : i + 27 + n_seg])
        if end > len(data):
            raise MoshiWireError(f"an Ogg page at byte {i} runs past the message")
        pages.append(bytes(data[i:end]))
        i = end
    return pages


def is_header_page(page: bytes) -> bool:
    """True for the OpusHead / OpusTags pages that open an Ogg Opus stream (RFC 7845)."""
    start = 27 + page[26]
    return page[start : start + 8] in (b"OpusHead", b"OpusTags")


def chat_url(url: str, flavor: str = "auto", text_prompt: str = "", voice_prompt: str = "",
             seed: int | None = None) -> str:
    """The `/api/chat` URL with the query parameters the flavor's server reads, in a fixed order.

    PersonaPlex reads `text_prompt` and `voice_prompt` unconditionally (NVIDIA/personaplex
    moshi/moshi/server.py), so they are always sent for it and for `auto` (Kyutai's server ignores the
    query, the Rust backend's query model ignores keys it does not know); `seed` only when given.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(f"url must start with ws:// or wss://, got {url!r}")
    path = parts.path if parts.path not in ("", "/") else CHAT_PATH
    query = parse_qsl(parts.query, keep_blank_values=True)
    always = flavor in ("auto", "personaplex")
    for key, value in (("text_prompt", text_prompt), ("voice_prompt", voice_prompt)):
        if value or always:
            query.append((key, value))
    if seed is not None:
        query.append(("seed", str(int(seed))))
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query), ""))


def _pcm16_to_float(pcm16: bytes) -> np.ndarray:
    if len(pcm16) % 2:
        raise MoshiWireError("odd-length PCM16")
    return from_pcm16(np.frombuffer(pcm16, dtype="<i2"))


def float_to_pcm16(x: np.ndarray) -> bytes:
    """float32 in [-1, 1] -> PCM16 little-endian bytes (soundfile's scale, rounded, clipped)."""
    return to_pcm16(np.asarray(x, dtype=np.float32)).astype("<i2").tobytes()


class OpusEncoder:
    """PCM16 frames at `sr_in` -> one Ogg/Opus page per 80 ms frame at 24 kHz (sphn)."""

    def __init__(self, sr_in: int = INPUT_SAMPLE_RATE) -> None:
        self._resampler = StreamResampler(sr_in, MOSHI_SAMPLE_RATE)
        self._writer = sphn.OpusStreamWriter(MOSHI_SAMPLE_RATE)
        self.sr_in = sr_in
        self.frame_in = sr_in * 80 // 1000
        self.frames = 0

    def encode_frame(self, pcm16: bytes) -> bytes:
        """One 80 ms frame of PCM16 at `sr_in` -> its Ogg bytes (the first one carries the stream headers)."""
        x = _pcm16_to_float(pcm16)
        if x.shape[0] != self.frame_in:
            raise ValueError(f"expected {self.frame_in} samples per frame, got {x.shape[0]}")
        y = self._resampler.process(x)
        self.frames += 1
        return bytes(self._writer.append_pcm(np.ascontiguousarray(y, dtype=np.float32)))

    def encode_silence(self) -> bytes:
        return self.encode_frame(bytes(self.frame_in * 2))


def _crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return tuple(table)


_CRC = _crc_table()  # Ogg's CRC-32: polynomial 0x04c11db7, initial 0, not reflected, no final xor (RFC 3533)


def ogg_crc(page: bytes) -> int:
    """The CRC-32 of an Ogg page as RFC 3533 defines it (computed with the page's own CRC field zeroed)."""
    crc = 0
    for b in page:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) & 0xFF) ^ b]
    return crc


class OggPages:
    """Splits a received byte stream into whole Ogg pages and checks each one (capture pattern, version, CRC), so a
    corrupt page is a protocol violation; libopus behind sphn would decode a page with a broken CRC as if it were
    sound, and the sample would stay eligible with garbage in it."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.pages = 0

    def push(self, data: bytes) -> bytes:
        """Append bytes; return the bytes of the pages they completed (each checked), holding back a partial page."""
        self._buf.extend(data)
        out = bytearray()
        buf = self._buf
        while len(buf) >= 27:
            if buf[:4] != b"OggS" or buf[4] != 0:
                nxt = buf.find(b"OggS", 1)  # resynchronise on the next page; what comes before it is dropped
                del buf[: nxt if nxt > 0 else len(buf)]
                raise MoshiWireError(f"bad Ogg page {self.pages}: no OggS capture pattern (version 0) at its start")
            nseg = buf[26]
            if len(buf) < 27 + nseg:
                break
            size = 27 + nseg + sum(buf[27 : 27 + nseg])
            if len(buf) < size:
                break
            page = bytes(buf[:size])
            del buf[:size]
            self.pages += 1
            if ogg_crc(page[:22] + b"\0\0\0\0" + page[26:]) != int.from_bytes(page[22:26], "little"):
                # the message is a violation (the sample is ineligible); the stream goes on with the next page
                raise MoshiWireError(f"bad Ogg page {self.pages - 1}: CRC mismatch (the page is corrupt)")
            out.extend(page)
        return bytes(out)


class OpusDecoder:
    """A received Ogg/Opus byte stream -> PCM16 at 24 kHz, whatever the page boundaries (each page checked)."""

    def __init__(self) -> None:
        self._reader = sphn.OpusStreamReader(MOSHI_SAMPLE_RATE)
        self._pages = OggPages()
        self.bytes_in = 0
        self.samples_out = 0

    def feed(self, ogg: bytes) -> np.ndarray:
        """Append bytes; return the float32 samples they completed (possibly none)."""
        self.bytes_in += len(ogg)
        whole = self._pages.push(ogg)
        if not whole:
            return np.zeros(0, np.float32)
        try:
            pcm = self._reader.append_bytes(whole)
        except (ValueError, RuntimeError) as exc:
            raise MoshiWireError(f"bad Ogg/Opus audio: {exc}") from None
        out = np.asarray(pcm, dtype=np.float32).ravel() if pcm is not None else np.zeros(0, np.float32)
        self.samples_out += int(out.shape[0])
        return out


class Framer:
    """Collects float samples and hands them out in whole frames of `frame` samples."""

    def __init__(self, frame: int) -> None:
        self.frame = frame
        self._buf = np.zeros(0, dtype=np.float32)

    def push(self, x: np.ndarray) -> list[np.ndarray]:
        self._buf = np.concatenate([self._buf, np.asarray(x, dtype=np.float32)])
        n = self._buf.shape[0] // self.frame
        frames = [self._buf[i * self.frame : (i + 1) * self.frame] for i in range(n)]
        self._buf = self._buf[n * self.frame :]
        return frames

    @property
    def pending(self) -> int:
        return int(self._buf.shape[0])


# ---- the client's side of a conversation, independent of the transport ----


@dataclass(frozen=True)
class Handshake:
    """The server is ready (PersonaPlex: its prompts have run); audio may flow from now on."""

    payload: bytes


@dataclass(frozen=True)
class AudioOut:
    """Decoded output audio: PCM16 bytes at `sample_rate` (16 kHz after the client's resampler)."""

    pcm16: bytes
    sample_rate: int
    ogg_bytes: int


@dataclass(frozen=True)
class TextOut:
    text: str


@dataclass(frozen=True)
class MetadataOut:
    metadata: JsonObject


@dataclass(frozen=True)
class ErrorOut:
    message: str


@dataclass(frozen=True)
class ControlOut:
    action: Control


@dataclass(frozen=True)
class PingOut:
    pass


@dataclass(frozen=True)
class Discarded:
    """A message the client skips: an unknown kind, a text frame, an empty message, or a message the
    protocol does not expect before the handshake (text, control, ping). Recorded, never a violation."""

    what: str


ServerEvent = Handshake | AudioOut | TextOut | MetadataOut | ErrorOut | ControlOut | PingOut | Discarded


class MoshiClientCodec:
    """The client's protocol rules: a handshake (of 1 or 9 bytes) before any audio, metadata and
    messages of unknown kinds discarded at any point (`Discarded`, the caller records them), and the
    output stream decoded (Ogg/Opus 24 kHz, one or several pages per message) and resampled to
    `out_rate` continuously (no per-message edges). Input frames (16 kHz PCM16, 80 ms) become Ogg pages;
    `lead_frames(n)` gives the silent frame(s) a server that skips its first input frame needs, sent
    right after the handshake so no user audio is lost.
    """

    def __init__(self, sr_in: int = INPUT_SAMPLE_RATE, out_rate: int = INPUT_SAMPLE_RATE) -> None:
        self.encoder = OpusEncoder(sr_in)
        self.decoder = OpusDecoder()
        self.out_rate = out_rate
        self._out_resampler = StreamResampler(MOSHI_SAMPLE_RATE, out_rate)
        self.handshaken = False
        self.metadata_before_handshake = False

    def lead_frames(self, n: int = SERVER_SKIPPED_FRAMES) -> list[bytes]:
        """Wire messages for `n` skipped lead frame(s): silence the server treats as the past."""
        return [encode(Kind.AUDIO, self.encoder.encode_silence()) for _ in range(n)]

    def audio_message(self, pcm16_frame: bytes) -> bytes:
        """The wire message for one 80 ms input frame; refused before the handshake."""
        if not self.handshaken:
            raise MoshiWireError("audio before the server's handshake")
        return encode(Kind.AUDIO, self.encoder.encode_frame(pcm16_frame))

    def receive(self, data: bytes | str) -> ServerEvent:
        """Decode one server message into an event (a violation raises `MoshiWireError`)."""
        if isinstance(data, str):
            return Discarded("text frame")
        if not data:
            return Discarded("empty message")
        msg = decode(data)
        if not msg.known:
            return Discarded(f"unknown kind {msg.kind}")
        if msg.kind == Kind.METADATA:
            self.metadata_before_handshake = self.metadata_before_handshake or not self.handshaken
            try:
                return MetadataOut(msg.metadata())
            except MoshiWireError as exc:
                return Discarded(str(exc))
        if not self.handshaken:
            if msg.kind == Kind.HANDSHAKE:
                if len(msg.payload) not in HANDSHAKE_PAYLOADS:
                    raise MoshiWireError(f"handshake of {len(msg.payload) + 1} bytes (1 or 9 expected)")
                self.handshaken = True
                return Handshake(msg.payload)
            if msg.kind == Kind.ERROR:
                return ErrorOut(msg.text())
            if msg.kind == Kind.AUDIO:
                raise MoshiWireError("audio message before the handshake")
            return Discarded(f"{msg.name} before the handshake")
        if msg.kind == Kind.HANDSHAKE:
            raise MoshiWireError("second handshake")
        if msg.kind == Kind.AUDIO:
            x = self.decoder.feed(msg.payload)
            pcm = float_to_pcm16(self._out_resampler.process(x)) if x.shape[0] else b""
            return AudioOut(pcm, self.out_rate, len(msg.payload))
        if msg.kind == Kind.TEXT:
            return TextOut(msg.text())
        if msg.kind == Kind.METADATA:
            return MetadataOut(msg.metadata())
        if msg.kind == Kind.ERROR:
            return ErrorOut(msg.text())
        if msg.kind == Kind.CONTROL:
            return ControlOut(msg.control())
        return PingOut()


def opus_round_trip(pcm16: np.ndarray) -> np.ndarray:
    """What a Moshi server hears of 16 kHz int16 input: 24 kHz Ogg/Opus there and back, 80 ms frames.

    The same chain the adapter and the loopback server run (lead frame, resampler, sphn encoder,
    decoder, resampler), for comparing a served system with its in-process run on equal input.
    """
    x = np.asarray(pcm16, dtype="<i2")
    pad = (-x.shape[0]) % 1280
    x = np.concatenate([x, np.zeros(pad, dtype="<i2")])
    enc, dec = OpusEncoder(INPUT_SAMPLE_RATE), OpusDecoder()
    framer, down = Framer(MOSHI_FRAME_SAMPLES), StreamResampler(MOSHI_SAMPLE_RATE, INPUT_SAMPLE_RATE)
    for _ in range(SERVER_SKIPPED_FRAMES):  # the client's silent lead frame, which the server skips
        framer.push(dec.feed(enc.encode_silence()))
    out = []
    for i in range(x.shape[0] // 1280):
        for frame in framer.push(dec.feed(enc.encode_frame(x[i * 1280 : (i + 1) * 1280].tobytes()))):
            out.append(np.frombuffer(float_to_pcm16(down.process(frame)), dtype="<i2"))
    y = np.concatenate(out) if out else np.zeros(0, dtype="<i2")
    return y[: pcm16.shape[0]].astype(np.int16)
