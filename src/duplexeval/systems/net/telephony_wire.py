"""Telephony media-stream WebSockets: the four carriers' messages, both directions, as data and pure functions.

We play the carrier (Twilio Media Streams, Telnyx media streaming, Plivo audio streams, Exotel
voicebot). Each dialect names the same few things differently; this module holds the names and
builds/parses the JSON text frames, so the client (`telephony.py`) and the loopback bot
(`telephony_server.py`) speak exactly the same shapes. Sources: the providers' documentation and
pipecat's own serializers (`pipecat/serializers/twilio.py`, `telnyx.py`, `plivo.py`, `exotel.py`) and
its `parse_telephony_websocket`, which recognises a call from the `start` message.

| | twilio | telnyx | plivo | exotel |
|---|---|---|---|---|
| first messages | `connected`, `start` | `connected`, `start` | `start` | `connected`, `start` |
| stream id | `streamSid` | `stream_id` | `streamId` | `stream_sid` |
| audio | mu-law 8 kHz | PCMU / PCMA 8 kHz | mu-law 8 kHz, L16 8 / 16 kHz | L16 (slin) 8 / 16 / 24 kHz |
| bot audio | `media` | `media` | `playAudio` (contentType, sampleRate) | `media` |
| bot marker -> reply | `mark` -> `mark` | `mark` -> `mark` | `checkpoint` -> `playedStream` | `mark` -> `mark` |
| barge-in | `clear` (pending marks come back) | `clear` | `clearAudio` -> `clearedAudio` (pending checkpoints dropped) | `clear` |
| end | `stop` | `stop` | (the socket closes) | `stop` |

Every carrier message after `connected` carries a sequence number counting from 1 (strings for Twilio
and Telnyx, numbers for Plivo and Exotel); media chunks count from 1 and carry the milliseconds since
the stream started.
"""  # noqa: E501 - a Markdown table row is one line

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net import g711
from duplexeval.systems.net.pcm import json_message

DIALECTS = ("twilio", "telnyx", "plivo", "exotel")
CODECS = ("mulaw", "alaw", "l16")
NAME_CHARS = 100  # a mark name kept in the trace


@dataclass(frozen=True)
class Dialect:
    """One carrier's names (see the module table)."""

    name: str
    connected: JsonObject | None  # the first message, None when the carrier sends none
    stream_key: str  # the stream id's key (top level of every message)
    seq_key: str
    seq_str: bool  # sequence numbers, chunks and timestamps as strings
    media_out: str  # the bot's audio event
    marker: str  # the bot's marker event
    marker_reply: str  # the carrier's reply when the marked audio has played
    clear: str  # the bot's barge-in event
    cleared: str | None  # the carrier's reply to a clear, if any
    echo_on_clear: bool  # pending markers are answered at a clear (else dropped)
    sends_stop: bool
    codecs: tuple[tuple[str, int], ...]  # (codec, rate) the carrier streams; the first is the default
    track: bool  # media carries `track`


DIALECT = {
    "twilio": Dialect("twilio", {"event": "connected", "protocol": "Call", "version": "1.0.0"}, "streamSid",
                      "sequenceNumber", True, "media", "mark", "mark", "clear", None, True, True,
                      (("mulaw", 8000),), True),
    "telnyx": Dialect("telnyx", {"event": "connected", "version": "1.0.0"}, "stream_id", "sequence_number", True,
                      "media", "mark", "mark", "clear", None, True, True, (("mulaw", 8000), ("alaw", 8000)), True),
    "plivo": Dialect("plivo", None, "streamId", "sequenceNumber", False, "playAudio", "checkpoint", "playedStream",
                     "clearAudio", "clearedAudio", False, False, (("mulaw", 8000), ("l16", 8000), ("l16", 16000)),
                     True),
    "exotel": Dialect("exotel", {"event": "connected"}, "stream_sid", "sequence_number", False, "media", "mark",
                      "mark", "clear", None, True, True, (("l16", 8000), ("l16", 16000), ("l16", 24000)), False),
}
# Every bot-side event name of any dialect: one of another dialect is a protocol violation.
BOT_EVENTS = {e for d in DIALECT.values() for e in (d.media_out, d.marker, d.clear)}

TELNYX_ENCODING = {"mulaw": "PCMU", "alaw": "PCMA"}
PLIVO_CONTENT = {"mulaw": "audio/x-mulaw", "l16": "audio/x-l16"}


def default_codec(dialect: str) -> tuple[str, int]:
    return DIALECT[dialect].codecs[0]


def check_codec(dialect: str, codec: str, rate: int) -> None:
    """ValueError unless the carrier streams `codec` at `rate`."""
    d = DIALECT[dialect]
    if (codec, rate) not in d.codecs:
        ok = ", ".join(f"{c}@{r}" for c, r in d.codecs)
        raise ValueError(f"dialect {dialect} streams {ok}; got {codec}@{rate}")


# ---------------------------------------------------------------- codecs


def encode_audio(pcm16: bytes, codec: str) -> bytes:
    """PCM16 little-endian at the wire rate -> the wire codec's bytes."""
    if codec == "mulaw":
        return g711.lin2ulaw(pcm16)
    if codec == "alaw":
        return g711.lin2alaw(pcm16)
    return pcm16


def decode_audio(data: bytes, codec: str, what: str) -> bytes:
    """The wire codec's bytes -> PCM16 little-endian; ProtocolViolation on an odd L16 payload."""
    if codec == "mulaw":
        return g711.ulaw2lin(data)
    if codec == "alaw":
        return g711.alaw2lin(data)
    if len(data) % 2:
        raise ProtocolViolation(f"{what}: odd-length L16 payload ({len(data)} bytes): not 16-bit PCM")
    return data


def b64_payload(value: object, what: str) -> bytes:
    """Strict base64 -> bytes; ProtocolViolation naming `what`."""
    if not isinstance(value, str) or not value:
        raise ProtocolViolation(f"{what}: no base64 payload")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolViolation(f"{what}: bad base64") from None


# ---------------------------------------------------------------- call identity


@dataclass(frozen=True)
class CallIds:
    """The ids a carrier puts in `start` (deterministic per sample, so reruns send the same)."""

    stream: str
    call: str
    account: str


def call_ids(dialect: str, key: str, account: str = "") -> CallIds:
    """Ids in each carrier's own shape, derived from `key` (the sample's subset/id)."""
    h = hashlib.sha256(f"duplexeval telephony {key}".encode()).hexdigest()
    if dialect == "twilio":
        return CallIds("MZ" + h[:32], "CA" + h[32:64], account or "AC" + "0" * 32)
    if dialect == "telnyx":
        u = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}".upper()
        return CallIds(u, "v3:" + h[32:64], account or "00000000-0000-0000-0000-000000000000")
    if dialect == "plivo":
        return CallIds(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}",
                       f"{h[32:40]}-{h[40:44]}-{h[44:48]}-{h[48:52]}-{h[52:64]}", account or "MA" + "0" * 18)
    return CallIds(h[:32], h[32:64], account or "duplexeval")


# ---------------------------------------------------------------- carrier -> bot


class CarrierMessages:
    """Builds the carrier's messages of one call, numbering them as the carrier does."""

    def __init__(self, dialect: str, ids: CallIds, codec: str, rate: int, params: dict[str, str],
                 chunk_ms: int = 20) -> None:
        self.d = DIALECT[dialect]
        self.ids = ids
        self.codec = codec
        self.rate = rate
        self.params = dict(params)
        self.chunk_ms = chunk_ms
        self.seq = 0
        self.chunks = 0

    def _num(self, n: int) -> str | int:
        return str(n) if self.d.seq_str else n

    def _next(self) -> str | int:
        self.seq += 1
        return self._num(self.seq)

    def first(self) -> list[str]:
        """The messages before any audio: `connected` (when the carrier sends one) and `start`."""
        out = [json.dumps(self.d.connected)] if self.d.connected is not None else []
        return [*out, json.dumps(self.start())]

    def start(self) -> JsonObject:
        d, ids, p = self.d.name, self.ids, self.params
        if d == "twilio":
            start: JsonObject = {
                "accountSid": ids.account, "streamSid": ids.stream, "callSid": ids.call, "tracks": ["inbound"],
                "customParameters": p,
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": self.rate, "channels": 1}}
            return {"event": "start", "sequenceNumber": self._next(), "start": start, "streamSid": ids.stream}
        if d == "telnyx":
            start = {"user_id": ids.account, "call_control_id": ids.call, "call_session_id": ids.stream.lower(),
                     "from": p.get("from", "+10000000000"), "to": p.get("to", "+10000000001"), "custom_parameters": p,
                     "media_format": {"encoding": TELNYX_ENCODING[self.codec], "sample_rate": self.rate, "channels": 1}}
            return {"event": "start", "sequence_number": self._next(), "stream_id": ids.stream, "start": start}
        if d == "plivo":
            start = {"callId": ids.call, "streamId": ids.stream, "accountId": ids.account, "tracks": ["inbound"],
                     "mediaFormat": {"encoding": PLIVO_CONTENT[self.codec], "sampleRate": self.rate}}
            return {"event": "start", "sequenceNumber": self._next(), "start": start,
                    "extra_headers": ";".join(f"{k}={v}" for k, v in p.items())}
        start = {"stream_sid": ids.stream, "call_sid": ids.call, "account_sid": ids.account,
                 "from": p.get("from", "09000000000"), "to": p.get("to", "09000000001"), "custom_parameters": p,
                 "media_format": {"encoding": "base64", "sample_rate": str(self.rate),
                                  "bit_rate": f"{self.rate * 16 // 1000}kbps"}}
        return {"event": "start", "sequence_number": self._next(), "stream_sid": ids.stream, "start": start}

    def media(self, pcm16: bytes) -> str:
        """One inbound chunk (PCM16 at the wire rate)."""
        self.chunks += 1
        media: JsonObject = {}
        if self.d.track:
            media["track"] = "inbound"
        media["chunk"] = self._num(self.chunks)
        media["timestamp"] = str((self.chunks - 1) * self.chunk_ms)
        media["payload"] = base64.b64encode(encode_audio(pcm16, self.codec)).decode("ascii")
        msg: JsonObject = {"event": "media", self.d.seq_key: self._next(), self.d.stream_key: self.ids.stream,
                               "media": media}
        if self.d.name == "plivo":
            msg["extra_headers"] = "{}"
        return json.dumps(msg, separators=(",", ":"))

    def marker_reply(self, name: str) -> str:
        """The carrier's answer to a bot marker whose audio has played."""
        if self.d.name == "plivo":
            return json.dumps({"event": "playedStream", "sequenceNumber": self._next(), "streamId": self.ids.stream,
                               "name": name})
        return json.dumps({"event": "mark", self.d.seq_key: self._next(), self.d.stream_key: self.ids.stream,
                           "mark": {"name": name}})

    def cleared(self) -> str | None:
        if self.d.cleared is None:
            return None
        return json.dumps({"event": self.d.cleared, self.d.seq_key: self._next(), self.d.stream_key: self.ids.stream})

    def stop(self) -> str | None:
        if not self.d.sends_stop:
            return None
        if self.d.name == "twilio":
            body: JsonObject = {"accountSid": self.ids.account, "callSid": self.ids.call}
        elif self.d.name == "telnyx":
            body = {"user_id": self.ids.account, "call_control_id": self.ids.call}
        else:
            body = {"call_sid": self.ids.call, "account_sid": self.ids.account, "reason": "callended"}
        return json.dumps(
            {"event": "stop", self.d.seq_key: self._next(), self.d.stream_key: self.ids.stream, "stop": body})


# ---------------------------------------------------------------- bot -> carrier


@dataclass
class BotEvent:
    """One parsed bot message: `media` (pcm16 at `rate`), `marker` (name), `clear`, `error`, or `ignored`."""

    kind: str
    event: str
    pcm16: bytes = b""
    rate: int = 0
    name: str = ""
    message: str = ""


def parse_bot(data: str | bytes, dialect: str, stream_id: str, codec: str, rate: int) -> BotEvent:
    """One bot message as the carrier reads it; ProtocolViolation (named) for anything it would reject."""
    d = DIALECT[dialect]
    msg = json_message(data, "event")
    ev = msg["event"]
    sid = msg.get(d.stream_key)
    if sid is not None and sid != stream_id and ev in (d.media_out, d.marker, d.clear):
        raise ProtocolViolation(f"{ev}: {d.stream_key} {str(sid)[:40]!r} is not this call's stream")
    if ev == d.media_out:
        media = msg.get("media")
        if not isinstance(media, dict):
            raise ProtocolViolation(f"{ev}: no media object")
        if dialect == "plivo":
            ctype, srate = media.get("contentType"), media.get("sampleRate")
            want = PLIVO_CONTENT.get(codec)
            if ctype != want or srate != rate:
                raise ProtocolViolation(f"playAudio: wrong codec {ctype!r} at {srate!r} Hz, the stream is {want} "
                                        f"at {rate} Hz")
        raw = b64_payload(media.get("payload"), ev)
        return BotEvent("media", ev, decode_audio(raw, codec, ev), rate)
    if ev == d.marker:
        name = (msg.get("name") if dialect == "plivo" else (msg.get("mark") or {}).get("name")
                if isinstance(msg.get("mark"), dict) else None)
        if not isinstance(name, str) or not name:
            raise ProtocolViolation(f"{ev}: no name")
        return BotEvent("marker", ev, name=name)
    if ev == d.clear:
        return BotEvent("clear", ev)
    if ev == "error":  # no carrier defines it from the bot; a bot that reports an error is taken at its word
        return BotEvent("error", ev, message=str(msg.get("message") or msg.get("error") or "")[:300])
    if ev in BOT_EVENTS:
        raise ProtocolViolation(f"{ev!r} is another carrier's event (this stream speaks {dialect})")
    return BotEvent("ignored", ev[:60])


# ---------------------------------------------------------------- bot side (the loopback server)


@dataclass
class CallStart:
    """What a bot learns from the carrier's first messages."""

    dialect: str
    stream: str
    call: str
    codec: str
    rate: int
    params: JsonObject  # the carrier's custom parameters as sent


def detect_dialect(msg: JsonObject) -> str | None:
    """pipecat's rules (`parse_telephony_websocket`): which carrier a `start`-bearing message is from."""
    start = msg.get("start")
    if not isinstance(start, dict):
        return None
    if msg.get("event") == "start" and "streamSid" in start and "callSid" in start:
        return "twilio"
    if "stream_id" in msg and "call_control_id" in start:
        return "telnyx"
    if "streamId" in start and "callId" in start:
        return "plivo"
    if msg.get("event") == "start" and "stream_sid" in start and "call_sid" in start and "account_sid" in start:
        return "exotel"
    return None


def read_start(msg: JsonObject) -> CallStart:
    """The call a `start` message announces; ValueError when it is not one."""
    dialect = detect_dialect(msg)
    if dialect is None:
        raise ValueError("not a start message of any known carrier")
    s = msg["start"]
    if dialect == "twilio":
        fmt = s.get("mediaFormat") or {}
        if fmt.get("encoding") != "audio/x-mulaw":
            raise ValueError(f"twilio streams audio/x-mulaw, start says {fmt.get('encoding')!r}")
        return CallStart(dialect, s["streamSid"], s["callSid"], "mulaw", int(fmt.get("sampleRate", 8000)),
                         dict(s.get("customParameters") or {}))
    if dialect == "telnyx":
        fmt = s.get("media_format") or {}
        codec = {v: k for k, v in TELNYX_ENCODING.items()}.get(str(fmt.get("encoding")))
        if codec is None:
            raise ValueError(f"telnyx encoding {fmt.get('encoding')!r} is not PCMU or PCMA")
        return CallStart(dialect, msg["stream_id"], s["call_control_id"], codec, int(fmt.get("sample_rate", 8000)),
                         dict(s.get("custom_parameters") or {}))
    if dialect == "plivo":
        fmt = s.get("mediaFormat") or {}
        codec = {v: k for k, v in PLIVO_CONTENT.items()}.get(str(fmt.get("encoding")))
        if codec is None:
            raise ValueError(f"plivo encoding {fmt.get('encoding')!r} is not audio/x-mulaw or audio/x-l16")
        return CallStart(dialect, s["streamId"], s["callId"], codec, int(fmt.get("sampleRate", 8000)), {})
    fmt = s.get("media_format") or {}
    return CallStart(dialect, s["stream_sid"], s["call_sid"], "l16", int(fmt.get("sample_rate", 8000)),
                     dict(s.get("custom_parameters") or {}))


def bot_media(call: CallStart, pcm16: bytes) -> str:
    """A bot's audio message (PCM16 at the call's rate) in the call's dialect."""
    d = DIALECT[call.dialect]
    payload = base64.b64encode(encode_audio(pcm16, call.codec)).decode("ascii")
    if call.dialect == "plivo":
        return json.dumps({"event": "playAudio", "media": {"contentType": PLIVO_CONTENT[call.codec],
                                                           "sampleRate": call.rate, "payload": payload},
                           "streamId": call.stream})
    msg: JsonObject = {"event": "media", "media": {"payload": payload}}
    if call.dialect != "telnyx":
        msg[d.stream_key] = call.stream
    return json.dumps(msg)


def bot_marker(call: CallStart, name: str) -> str:
    if call.dialect == "plivo":
        return json.dumps({"event": "checkpoint", "streamId": call.stream, "name": name})
    msg: JsonObject = {"event": "mark", "mark": {"name": name}}
    if call.dialect != "telnyx":
        msg[DIALECT[call.dialect].stream_key] = call.stream
    return json.dumps(msg)


def bot_clear(call: CallStart) -> str:
    d = DIALECT[call.dialect]
    msg: JsonObject = {"event": d.clear}
    if call.dialect != "telnyx":
        msg[d.stream_key] = call.stream
    return json.dumps(msg)


def parse_carrier(data: str | bytes) -> JsonObject:
    """A carrier message as a bot reads it (ValueError when it is not a JSON object with an event)."""
    if isinstance(data, bytes):
        raise ValueError("a binary frame (carriers send JSON text)")
    msg = json.loads(data)
    if not isinstance(msg, dict) or not isinstance(msg.get("event"), str):
        raise ValueError("a JSON message without a string 'event'")
    return msg
