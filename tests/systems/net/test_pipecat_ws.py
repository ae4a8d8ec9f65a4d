"""pipecat-ws conformance against pipecat's own code: our frames.proto equals pipecat's field by field, our
frames parse with pipecat's `ProtobufFrameSerializer`, pipecat's serialized frames and RTVI messages parse
with ours, and every named violation."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net.pipecat_ws_wire import (
    FrameMessage,
    audio_frame,
    client_ready,
    file_descriptor,
    message_frame,
    parse_frame,
    rtvi_type,
    text_frame,
)
from duplexeval.systems.registry import make_system

pytest.importorskip("pipecat")
from loguru import logger  # noqa: E402

logger.remove()


def _pcm(n: int = 320, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return np.clip(rng.standard_normal(n) * 3000, -32768, 32767).astype("<i2").tobytes()


def test_our_frames_proto_is_pipecats_field_by_field() -> None:
    from google.protobuf import descriptor_pb2
    from pipecat.frames.protobufs import frames_pb2

    theirs = descriptor_pb2.FileDescriptorProto()
    frames_pb2.DESCRIPTOR.CopyToProto(theirs)
    ours = file_descriptor()
    assert theirs.package == ours.package == "pipecat"

    def shape(fd: descriptor_pb2.FileDescriptorProto) -> list[tuple]:
        return [(m.name, [(f.name, f.number, f.type, f.label, f.type_name, f.proto3_optional,
                           f.HasField("oneof_index") and f.oneof_index) for f in m.field],
                 [o.name for o in m.oneof_decl]) for m in fd.message_type]

    assert shape(ours) == shape(theirs)


def test_pipecats_serializer_reads_what_we_send() -> None:
    from pipecat.frames.frames import InputAudioRawFrame, InputTransportMessageFrame
    from pipecat.processors.frameworks.rtvi import models as RTVI
    from pipecat.serializers.protobuf import ProtobufFrameSerializer

    ser = ProtobufFrameSerializer()
    pcm = _pcm()
    frame = asyncio.run(ser.deserialize(audio_frame(pcm, 16000)))
    assert isinstance(frame, InputAudioRawFrame)
    assert (frame.audio, frame.sample_rate, frame.num_channels) == (pcm, 16000, 1)
    ready = client_ready("duplexeval-1")
    msg = asyncio.run(ser.deserialize(message_frame(ready)))
    assert isinstance(msg, InputTransportMessageFrame) and msg.message == ready
    parsed = RTVI.Message.model_validate(msg.message)  # what pipecat's RTVIProcessor does with it
    assert parsed.type == "client-ready" and parsed.id == "duplexeval-1"
    data = RTVI.ClientReadyData(version=parsed.data["version"],
                                about=RTVI.AboutClientData.model_validate(parsed.data["about"]))
    assert data.version == RTVI.PROTOCOL_VERSION and data.about.library == "duplexeval"


def test_we_read_what_pipecats_serializer_sends() -> None:
    from pipecat.frames.frames import (
        InterruptionFrame,
        OutputAudioRawFrame,
        OutputTransportMessageUrgentFrame,
        TextFrame,
        TranscriptionFrame,
    )
    from pipecat.processors.frameworks.rtvi import models as RTVI
    from pipecat.serializers.protobuf import ProtobufFrameSerializer

    ser = ProtobufFrameSerializer()
    pcm = _pcm(640, 1)
    got = parse_frame(asyncio.run(ser.serialize(OutputAudioRawFrame(audio=pcm, sample_rate=24000, num_channels=1))))
    assert (got.kind, got.pcm16, got.rate, got.channels) == ("audio", pcm, 24000, 1)
    assert parse_frame(asyncio.run(ser.serialize(InterruptionFrame()))).kind == "interruption"
    assert parse_frame(asyncio.run(ser.serialize(TextFrame(text="hello")))).text == "hello"
    tr = TranscriptionFrame(text="hi there", user_id="u", timestamp="2026")
    assert parse_frame(asyncio.run(ser.serialize(tr))).kind == "transcription"
    for model, kind in ((RTVI.BotStartedSpeakingMessage(), "bot-started-speaking"),
                        (RTVI.UserStoppedSpeakingMessage(), "user-stopped-speaking"),
                        (RTVI.BotReady(id="7", data=RTVI.BotReadyData(version=RTVI.PROTOCOL_VERSION)), "bot-ready")):
        wire = (
            asyncio.run(ser.serialize(OutputTransportMessageUrgentFrame(message=model.model_dump(exclude_none=True)))))
        assert rtvi_type(parse_frame(wire).message) == kind


@pytest.mark.parametrize(("data", "what"), [
    ("hello", "a text frame"),
    (b"\xff\xff\xff\xff", "not a pipecat Frame"),
    (b"", "none of text, audio"),
    (FrameMessage(audio={"audio": b"ab", "sample_rate": 16000, "num_channels": 2}).SerializeToString(), "2 channels"),
    (FrameMessage(audio={"audio": b"abc", "sample_rate": 16000}).SerializeToString(), "odd-length"),
    (FrameMessage(audio={"audio": b"ab", "sample_rate": 3}).SerializeToString(), "sample_rate 3 Hz"),
    (FrameMessage(message={"data": "{nope"}).SerializeToString(), "data is not JSON"),
])
def test_each_broken_frame_is_named(data: str | bytes, what: str) -> None:
    with pytest.raises(ProtocolViolation, match=what):
        parse_frame(data)


def test_non_rtvi_messages_and_text_are_kept_apart() -> None:
    assert rtvi_type(parse_frame(message_frame({"hello": 1})).message) is None
    assert parse_frame(text_frame("x" * 500)).text == "x" * 200


def test_parameters() -> None:
    assert make_system("pipecat-ws:url=ws://h:1/ws,rate=24000,chunk_ms=40").rate == 24000  # type: ignore[attr-defined]
    from duplexeval.errors import InputError

    with pytest.raises(InputError, match="wait_ready=true needs client_ready=true"):
        make_system("pipecat-ws:client_ready=false")
    with pytest.raises(InputError, match="rate must be one of 8000, 16000, 24000, 48000"):
        make_system("pipecat-ws:rate=22050")
