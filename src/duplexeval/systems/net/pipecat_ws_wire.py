"""pipecat's WebSocket protocol: `frames.proto` messages (binary) and the RTVI JSON they carry, both directions.

Each WebSocket message is one binary `pipecat.Frame` (pipecat's `ProtobufFrameSerializer`), a oneof of
`TextFrame` (1), `AudioRawFrame` (2: PCM16 `audio`, `sample_rate`, `num_channels`, optional `pts`),
`TranscriptionFrame` (3), `MessageFrame` (4: `data`, a JSON text; pipecat's RTVI messages travel here) and
`InterruptionFrame` (5: the bot was interrupted, the client drops what it has queued). The message types
are built here from the same field numbers and types as pipecat 1.14's `frames.proto`, in a descriptor
pool of our own (no pipecat import; `tests/systems/net/test_pipecat_ws.py` compares the two descriptors field by
field and runs pipecat's serializer on ours both ways).

RTVI (`label: "rtvi-ai"`): the client says `client-ready` (protocol version and `about`), the bot answers
`bot-ready`, and pipecat's RTVI observer reports `user-started-speaking`, `user-stopped-speaking`,
`bot-started-speaking`, `bot-stopped-speaking` (the timing the trace keeps) among others; `error`
(`data.fatal`) and `error-response` report problems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from duplexeval import __version__
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation

RTVI_LABEL = "rtvi-ai"
RTVI_VERSION = "2.2.0"  # the RTVI protocol pipecat 1.14 speaks (pipecat.processors.frameworks.rtvi.models)
TIMING_EVENTS = ("user-started-speaking", "user-stopped-speaking", "bot-started-speaking", "bot-stopped-speaking")
KINDS = ("text", "audio", "transcription", "message", "interruption")
TEXT_CHARS = 200

_U64, _U32, _STR, _BYTES = (descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
                            descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
                            descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                            descriptor_pb2.FieldDescriptorProto.TYPE_BYTES)
# frames.proto of pipecat-ai 1.14.0: message -> [(field, number, type)]
FIELDS: dict[str, list[tuple[str, int, int]]] = {
    "TextFrame": [("id", 1, _U64), ("name", 2, _STR), ("text", 3, _STR)],
    "AudioRawFrame": [("id", 1, _U64), ("name", 2, _STR), ("audio", 3, _BYTES), ("sample_rate", 4, _U32),
                      ("num_channels", 5, _U32), ("pts", 6, _U64)],
    "TranscriptionFrame": [("id", 1, _U64), ("name", 2, _STR), ("text", 3, _STR), ("user_id", 4, _STR),
                           ("timestamp", 5, _STR)],
    "MessageFrame": [("data", 1, _STR)],
    "InterruptionFrame": [("id", 1, _U64), ("name", 2, _STR)],
}
ONEOF = [("text", 1, "TextFrame"), ("audio", 2, "AudioRawFrame"), ("transcription", 3, "TranscriptionFrame"),
         ("message", 4, "MessageFrame"), ("interruption", 5, "InterruptionFrame")]


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="duplexeval/pipecat_frames.proto", package="pipecat", syntax="proto3")
    for name, fields in FIELDS.items():
        m = f.message_type.add(name=name)
        for fname, num, ftype in fields:
            fd = m.field.add(name=fname, number=num, type=ftype,
                             label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            if fname == "pts":  # `optional uint64 pts = 6;` (proto3 optional: a synthetic oneof)
                fd.proto3_optional = True
                fd.oneof_index = 0
                m.oneof_decl.add(name="_pts")
    frame = f.message_type.add(name="Frame")
    frame.oneof_decl.add(name="frame")
    for fname, num, tname in ONEOF:
        frame.field.add(name=fname, number=num, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                        type_name=f".pipecat.{tname}", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                        oneof_index=0)
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
FrameMessage: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("pipecat.Frame"))


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """Our `frames.proto` as a FileDescriptorProto (for the comparison with pipecat's)."""
    return _file()


# ---------------------------------------------------------------- encode


def audio_frame(pcm16: bytes, rate: int, channels: int = 1) -> bytes:
    msg = FrameMessage()
    msg.audio.audio = pcm16
    msg.audio.sample_rate = rate
    msg.audio.num_channels = channels
    return bytes(msg.SerializeToString())


def message_frame(obj: JsonObject) -> bytes:
    msg = FrameMessage()
    msg.message.data = json.dumps(obj, separators=(",", ":"))
    return bytes(msg.SerializeToString())


def interruption_frame() -> bytes:
    msg = FrameMessage()
    msg.interruption.SetInParent()
    return bytes(msg.SerializeToString())


def text_frame(text: str) -> bytes:
    msg = FrameMessage()
    msg.text.text = text
    return bytes(msg.SerializeToString())


def rtvi(kind: str, msg_id: str = "", data: JsonObject | None = None) -> JsonObject:
    out: JsonObject = {"label": RTVI_LABEL, "type": kind, "id": msg_id}
    if data is not None:
        out["data"] = data
    return out


def client_ready(msg_id: str) -> JsonObject:
    return rtvi("client-ready", msg_id, {"version": RTVI_VERSION,
                                         "about": {"library": "duplexeval", "library_version": __version__}})


# ---------------------------------------------------------------- decode


@dataclass
class WsFrame:
    """One received frame: `kind` in KINDS; audio (pcm16, rate, channels), text, or the message's JSON."""

    kind: str
    pcm16: bytes = b""
    rate: int = 0
    channels: int = 0
    text: str = ""
    message: Any = None


def parse_frame(data: str | bytes) -> WsFrame:
    """One message as pipecat's protocol defines it; ProtocolViolation (named) otherwise."""
    if isinstance(data, str):
        raise ProtocolViolation("a text frame: pipecat's WebSocket protocol sends binary protobuf frames")
    msg: Message = FrameMessage()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise ProtocolViolation(f"not a pipecat Frame protobuf ({' '.join(str(exc).split())[:80]})") from None
    which = msg.WhichOneof("frame")
    if which is None:
        raise ProtocolViolation("a Frame with none of text, audio, transcription, message, interruption set")
    body = getattr(msg, which)
    if which == "audio":
        if body.num_channels not in (0, 1):
            raise ProtocolViolation(f"audio: {body.num_channels} channels, the client plays mono")
        if not 8000 <= body.sample_rate <= 48000:
            raise ProtocolViolation(f"audio: sample_rate {body.sample_rate} Hz is not one audio can have (8000-48000)")
        if len(body.audio) % 2:
            raise ProtocolViolation(f"audio: odd-length PCM16 ({len(body.audio)} bytes)")
        return WsFrame("audio", bytes(body.audio), int(body.sample_rate), int(body.num_channels) or 1)
    if which == "message":
        try:
            obj = json.loads(body.data)
        except json.JSONDecodeError:
            raise ProtocolViolation("message: data is not JSON") from None
        return WsFrame("message", message=obj)
    if which in ("text", "transcription"):
        return WsFrame(which, text=str(body.text)[:TEXT_CHARS])
    return WsFrame("interruption")


def rtvi_type(obj: Any) -> str | None:
    """The RTVI message type of a message frame's JSON (None when it is not RTVI)."""
    if isinstance(obj, dict) and obj.get("label") == RTVI_LABEL and isinstance(obj.get("type"), str):
        return str(obj["type"])[:60]
    return None
