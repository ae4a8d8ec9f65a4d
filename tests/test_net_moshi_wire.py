"""Moshi / PersonaPlex wire codec: kind bytes, handshake rules, Ogg/Opus round trip, query parameters."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.resample_stream import StreamResampler


def _tone(n: int, sr: int, hz: float = 440.0, amp: float = 0.4) -> np.ndarray:
    return (amp * np.sin(2 * np.pi * hz * np.arange(n) / sr)).astype(np.float32)


def test_kind_bytes_are_the_protocols():
    assert [k.value for k in mw.Kind] == [0, 1, 2, 3, 4, 5, 6]
    assert mw.encode(mw.Kind.TEXT, b"hi") == b"\x02hi"
    assert mw.decode(b"\x05oops") == mw.MoshiMessage(mw.Kind.ERROR, b"oops")
    assert mw.decode(mw.encode_metadata({"b": 1, "a": 2})).metadata() == {"a": 2, "b": 1}
    assert mw.decode(b"\x03\x01").control() is mw.Control.END_TURN


@pytest.mark.parametrize(
    ("data", "match"),
    [(b"", "empty"), (b"\x07x", "unknown message kind 7"), ("text", "text frame"), (b"\xffx", "unknown")],
)
def test_bad_messages_are_violations(data, match):
    with pytest.raises(mw.MoshiWireError, match=match):
        mw.decode(data)


def test_bad_payloads_are_violations():
    with pytest.raises(mw.MoshiWireError, match="UTF-8"):
        mw.decode(b"\x02\xff\xfe").text()
    with pytest.raises(mw.MoshiWireError, match="JSON"):
        mw.decode(b"\x04{not json").metadata()
    with pytest.raises(mw.MoshiWireError, match="object"):
        mw.decode(b"\x04[1]").metadata()
    with pytest.raises(mw.MoshiWireError, match="control"):
        mw.decode(b"\x03\x09").control()


def test_chat_url_query_parameters():
    assert mw.chat_url("ws://h:8998") == "ws://h:8998/api/chat"
    url = mw.chat_url("ws://h:8998/api/chat?x=1", text_prompt="You are kind, brief.", voice_prompt="NATF2.pt", seed=7)
    assert url == "ws://h:8998/api/chat?x=1&text_prompt=You+are+kind%2C+brief.&voice_prompt=NATF2.pt&seed=7"
    with pytest.raises(ValueError, match="ws://"):
        mw.chat_url("http://h/api/chat")


def test_stream_resampler_exact_frames_and_small_delay():
    x = _tone(1280 * 25, 16000)
    up = StreamResampler(16000, 24000)
    y = np.concatenate([up.process(x[i * 1280 : (i + 1) * 1280]) for i in range(25)])
    assert y.shape[0] == 1920 * 25  # exactly 1920 per frame, every frame
    down = StreamResampler(24000, 16000)
    z = np.concatenate([down.process(y[i * 1920 : (i + 1) * 1920]) for i in range(25)])
    assert z.shape[0] == x.shape[0]
    lag = round(up.delay_samples * 2 / 3 + down.delay_samples)
    assert lag <= 32  # under 2 ms of delay for the round trip
    assert np.max(np.abs(z[lag + 200 : -200] - x[200 : x.shape[0] - lag - 200])) < 0.01


def test_opus_round_trip_through_the_client_codec():
    """Client encodes 16 kHz frames to Ogg/Opus 24 kHz; a server-side decoder gets the tone back."""
    codec = mw.MoshiClientCodec()
    codec.receive(mw.encode(mw.Kind.HANDSHAKE, mw.HANDSHAKE_PAYLOAD))
    x = _tone(1280 * 12, 16000, amp=0.3)
    pcm = (x * 32767).astype("<i2").tobytes()
    server = mw.OpusDecoder()
    got = []
    for i in range(12):
        msg = mw.decode(codec.audio_message(pcm[i * 2560 : (i + 1) * 2560]))
        assert msg.kind is mw.Kind.AUDIO and msg.payload[:4] == b"OggS"
        got.append(server.feed(msg.payload))
    y = np.concatenate(got)
    assert y.shape[0] == 1920 * 12
    ref = _tone(1920 * 12, 24000, amp=0.3)
    # Opus is lossy: compare energy and the dominant frequency, not samples.
    assert abs(np.sqrt(np.mean(y[4000:] ** 2)) - np.sqrt(np.mean(ref[4000:] ** 2))) < 0.05
    spec = np.abs(np.fft.rfft(y[4000:]))
    assert abs(np.argmax(spec) * 24000 / (y.shape[0] - 4000) - 440) < 5


def test_client_codec_handshake_rules_and_output_decoding():
    codec = mw.MoshiClientCodec()
    with pytest.raises(mw.MoshiWireError, match="before the server's handshake"):
        codec.audio_message(bytes(2560))
    with pytest.raises(mw.MoshiWireError, match="audio message before the handshake"):
        codec.receive(b"\x01OggS")
    assert isinstance(codec.receive(b"\x06"), mw.PingOut)
    assert isinstance(codec.receive(b"\x05busy"), mw.ErrorOut)
    assert codec.receive(b"\x00") == mw.Handshake(b"")
    with pytest.raises(mw.MoshiWireError, match="second handshake"):
        codec.receive(b"\x00")
    lead = codec.lead_frames()
    assert len(lead) == mw.SERVER_SKIPPED_FRAMES and lead[0][0] == mw.Kind.AUDIO
    # Server output: an Ogg stream of 24 kHz frames -> continuous 16 kHz PCM16, 1280 samples per frame.
    writer = mw.OpusEncoder(24000)
    tone = _tone(1920 * 5, 24000, amp=0.3)
    total = 0
    for i in range(5):
        page = writer.encode_frame((tone[i * 1920 : (i + 1) * 1920] * 32767).astype("<i2").tobytes())
        ev = codec.receive(mw.encode(mw.Kind.AUDIO, page))
        assert isinstance(ev, mw.AudioOut) and ev.sample_rate == 16000
        total += len(ev.pcm16) // 2
    assert total == 1280 * 5
    assert codec.receive(mw.encode_text(" hello")) == mw.TextOut(" hello")
    with pytest.raises(mw.MoshiWireError, match="bad Ogg"):
        codec.receive(b"\x01OggS\x20garbage that is not a page" * 3)


def test_encoder_bytes_are_deterministic():
    def run() -> bytes:
        enc = mw.OpusEncoder()
        x = (_tone(1280 * 4, 16000) * 32767).astype("<i2").tobytes()
        return b"".join(enc.encode_frame(x[i * 2560 : (i + 1) * 2560]) for i in range(4))

    assert run() == run()
