"""Telephony wire conformance: our carrier messages read by pipecat's own serializers and call parser, the
frames pipecat's serializers send read by ours, G.711 against `audioop`, the named violations, and the
credential rules of `param.NAME=VALUE`."""

from __future__ import annotations

import asyncio
import base64
import json
import types
import warnings

import numpy as np
import pytest

from duplexeval.errors import InputError
from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net import g711
from duplexeval.systems.net.telephony_wire import (
    DIALECTS,
    CarrierMessages,
    call_ids,
    default_codec,
    parse_bot,
    read_start,
)
from duplexeval.systems.registry import make_system

pytest.importorskip("pipecat")
from loguru import logger  # noqa: E402 - pipecat's logger, installed with it

logger.remove()  # pipecat logs every frame it cannot serialize at WARNING; the asserts say what matters


def _audioop():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import audioop
        except ImportError:
            return None
    return audioop


def test_g711_tables_equal_audioop_on_every_sample_and_code() -> None:
    audioop = _audioop()
    if audioop is None:
        pytest.skip("audioop is not in this Python (3.13+)")
    every = np.arange(-32768, 32768, dtype="<i2").tobytes()
    codes = bytes(range(256))
    assert g711.lin2ulaw(every) == audioop.lin2ulaw(every, 2)
    assert g711.lin2alaw(every) == audioop.lin2alaw(every, 2)
    assert g711.ulaw2lin(codes) == audioop.ulaw2lin(codes, 2)
    assert g711.alaw2lin(codes) == audioop.alaw2lin(codes, 2)


def _tone(rate: int, ms: int = 20, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    n = rate * ms // 1000
    x = np.sin(2 * np.pi * 440 * np.arange(n) / rate) * 8000 + rng.standard_normal(n) * 300
    return np.clip(np.rint(x), -32768, 32767).astype("<i2").tobytes()


def _roundtrip(codec: str, pcm: bytes) -> bytes:
    """What survives the codec (PCM16 -> wire -> PCM16), by the reference tables."""
    if codec == "mulaw":
        return g711.ulaw2lin(g711.lin2ulaw(pcm))
    if codec == "alaw":
        return g711.alaw2lin(g711.lin2alaw(pcm))
    return pcm


class _FakeWebSocket:
    """What pipecat's `parse_telephony_websocket` reads: `iter_text()` over the carrier's first messages."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = messages

    def iter_text(self):  # noqa: ANN201 - an async generator, as starlette's
        async def gen():
            for m in self.messages:
                yield m

        return gen()


def _serializer(dialect: str, ids, codec: str, rate: int):  # noqa: ANN001, ANN202
    """pipecat's serializer for the call, as a bot builds it (auto_hang_up off: no carrier REST call offline)."""
    if dialect == "twilio":
        from pipecat.serializers.twilio import TwilioFrameSerializer

        return TwilioFrameSerializer(ids.stream, ids.call, params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
    if dialect == "telnyx":
        from pipecat.serializers.telnyx import TelnyxFrameSerializer

        enc = {"mulaw": "PCMU", "alaw": "PCMA"}[codec]
        return TelnyxFrameSerializer(ids.stream, enc, enc, params=TelnyxFrameSerializer.InputParams(auto_hang_up=False))
    if dialect == "plivo":
        from pipecat.serializers.plivo import PlivoFrameSerializer

        return PlivoFrameSerializer(ids.stream, params=PlivoFrameSerializer.InputParams(auto_hang_up=False))
    from pipecat.serializers.exotel import ExotelFrameSerializer

    return ExotelFrameSerializer(ids.stream, ids.call,
                                 params=ExotelFrameSerializer.InputParams(exotel_sample_rate=rate))


# (dialect, codec, rate) pipecat's serializers can take: Plivo's always reads and writes mu-law at 8 kHz.
FORMATS = [("twilio", "mulaw", 8000), ("telnyx", "mulaw", 8000), ("telnyx", "alaw", 8000), ("plivo", "mulaw", 8000),
           ("exotel", "l16", 8000), ("exotel", "l16", 16000), ("exotel", "l16", 24000)]


@pytest.mark.parametrize(("dialect", "codec", "rate"), FORMATS)
def test_pipecat_reads_our_carrier_messages(dialect: str, codec: str, rate: int) -> None:
    from pipecat.frames.frames import InputAudioRawFrame
    from pipecat.runner.utils import parse_telephony_websocket

    ids = call_ids(dialect, "candor_turn_taking/1")
    msgs = CarrierMessages(dialect, ids, codec, rate, {"customer": "42"})
    first = msgs.first()
    kind, call = asyncio.run(parse_telephony_websocket(_FakeWebSocket(first)))
    assert kind == dialect
    assert call["stream_id"] == ids.stream and call["call_id"] == ids.call
    if dialect == "telnyx":
        assert call["outbound_encoding"] == {"mulaw": "PCMU", "alaw": "PCMA"}[codec]
    if dialect == "twilio":
        assert call["body"] == {"customer": "42"}
    ser = _serializer(dialect, ids, codec, rate)
    asyncio.run(ser.setup(types.SimpleNamespace(audio_in_sample_rate=rate, audio_out_sample_rate=rate)))
    pcm = _tone(rate)
    frame = asyncio.run(ser.deserialize(msgs.media(pcm)))
    assert isinstance(frame, InputAudioRawFrame) and frame.sample_rate == rate
    # the payload survives exactly (same rate: no resampling on either side)
    assert frame.audio == _roundtrip(codec, pcm)
    # the first message pipecat sees is the one our start message is (no message lost or merged)
    assert read_start(json.loads(first[-1])).dialect == dialect


@pytest.mark.parametrize(("dialect", "codec", "rate"), FORMATS)
def test_we_read_what_pipecats_serializers_send(dialect: str, codec: str, rate: int) -> None:
    from pipecat.frames.frames import InterruptionFrame, OutputAudioRawFrame, OutputTransportMessageFrame

    ids = call_ids(dialect, "synthetic_user_interruption/3")
    ser = _serializer(dialect, ids, codec, rate)
    asyncio.run(ser.setup(types.SimpleNamespace(audio_in_sample_rate=rate, audio_out_sample_rate=rate)))
    pcm = _tone(rate, 40, seed=1)
    wire = asyncio.run(ser.serialize(OutputAudioRawFrame(audio=pcm, sample_rate=rate, num_channels=1)))
    ev = parse_bot(wire, dialect, ids.stream, codec, rate)
    assert ev.kind == "media" and ev.rate == rate
    assert ev.pcm16 == _roundtrip(codec, pcm)
    clear = asyncio.run(ser.serialize(InterruptionFrame()))
    assert parse_bot(clear, dialect, ids.stream, codec, rate).kind == "clear"
    # a bot's marker goes out as a transport message (pipecat sends none of its own)
    marker = {"event": "checkpoint", "streamId": ids.stream, "name": "reply-1"} if dialect == "plivo" else \
        {"event": "mark", "mark": {"name": "reply-1"}}
    out = asyncio.run(ser.serialize(OutputTransportMessageFrame(message=marker)))
    ev = parse_bot(out, dialect, ids.stream, codec, rate)
    assert ev.kind == "marker" and ev.name == "reply-1"


def _media(payload: str, dialect: str = "twilio", stream: str = "MZ1") -> str:
    return json.dumps({"event": "media", "streamSid": stream, "media": {"payload": payload}})


@pytest.mark.parametrize(("data", "what"), [
    (b"\x00\x01", "binary frame"),
    ("{not json", "not JSON"),
    ('{"media": {}}', "without a string 'event'"),
    (_media("@@@"), "bad base64"),
    (_media(""), "no base64 payload"),
    ('{"event": "media", "streamSid": "MZ1"}', "no media object"),
    (_media(base64.b64encode(b"ab").decode(), stream="MZ9"), "is not this call's stream"),
    ('{"event": "mark", "streamSid": "MZ1", "mark": {}}', "mark: no name"),
    ('{"event": "playAudio", "media": {}}', "another carrier's event"),
    ('{"event": "clearAudio"}', "another carrier's event"),
])
def test_twilio_carrier_names_each_broken_message(data: str | bytes, what: str) -> None:
    with pytest.raises(ProtocolViolation, match=what):
        parse_bot(data, "twilio", "MZ1", "mulaw", 8000)


def test_codec_violations_of_l16_and_plivo() -> None:
    odd = base64.b64encode(b"abc").decode()
    with pytest.raises(ProtocolViolation, match="odd-length L16"):
        parse_bot(json.dumps({"event": "media", "media": {"payload": odd}}), "exotel", "S", "l16", 8000)
    wrong = {"event": "playAudio", "streamId": "S", "media": {"contentType": "audio/x-l16", "sampleRate": 16000,
                                                             "payload": base64.b64encode(b"ab").decode()}}
    with pytest.raises(ProtocolViolation, match="wrong codec 'audio/x-l16' at 16000 Hz, the stream is "
                                                "audio/x-mulaw at 8000"):
        parse_bot(json.dumps(wrong), "plivo", "S", "mulaw", 8000)


def test_unknown_events_are_ignored_and_a_bot_error_is_an_error() -> None:
    assert parse_bot('{"event": "rtvi-ping"}', "twilio", "MZ1", "mulaw", 8000).kind == "ignored"
    ev = parse_bot('{"event": "error", "message": "llm down"}', "telnyx", "x", "mulaw", 8000)
    assert ev.kind == "error" and ev.message == "llm down"


def test_every_dialect_has_a_default_codec_it_streams() -> None:
    for d in DIALECTS:
        codec, rate = default_codec(d)
        make_system(f"telephony:dialect={d}")  # validates
        assert rate == 8000 and codec in ("mulaw", "l16")


def test_custom_parameters_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    sys_ = make_system("telephony:dialect=twilio,param.customer=42,param.lang=en-US")
    assert sys_.param == {"customer": "42", "lang": "en-US"}  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"param.auth_token looks like a credential: give it as "
                                         r"param.auth_token=env:VARIABLE"):
        make_system("telephony:param.auth_token=abc123")
    with pytest.raises(InputError, match="the environment variable 'BOT_TOKEN_X' is not set"):
        make_system("telephony:param.token=env:BOT_TOKEN_X")
    monkeypatch.setenv("BOT_TOKEN_X", "s3cr3t-value")
    sys_ = make_system("telephony:param.token=env:BOT_TOKEN_X")
    assert sys_.params()["param"] == {"token": "env:BOT_TOKEN_X"}
    assert sys_.secrets() == ("s3cr3t-value",)  # type: ignore[attr-defined]
    assert sys_.resolved_params() == {"token": "s3cr3t-value"}  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="has no parameter group 'nope'"):
        make_system("telephony:nope.x=1")
    with pytest.raises(InputError, match="dialect twilio streams mulaw@8000; got l16@8000"):
        make_system("telephony:codec=l16")
    with pytest.raises(InputError, match="chunk_ms must be one of 10, 20, 40, 80"):
        make_system("telephony:chunk_ms=30")
