"""Moshi / PersonaPlex wire codec: kind bytes, handshake rules, Ogg/Opus round trip, query parameters.

The upstream definitions are in tests/helpers/upstream_moshi.py (each names the file it was read from)."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.resample_stream import StreamResampler
from tests.helpers import upstream_moshi as up
from tests.helpers.resampling import full_polyphase


def _tone(n: int, sr: int, hz: float = 440.0, amp: float = 0.4) -> np.ndarray:
    return (amp * np.sin(2 * np.pi * hz * np.arange(n) / sr)).astype(np.float32)


def test_kind_bytes_are_the_protocols():
    assert {k.name.lower(): k.value for k in mw.Kind} == up.KINDS
    assert mw.encode(mw.Kind.HANDSHAKE, mw.HANDSHAKE_PAYLOAD) == up.RUST_HANDSHAKE
    assert mw.encode(mw.Kind.HANDSHAKE) == up.KYUTAI_HANDSHAKE == up.PERSONAPLEX_HANDSHAKE
    assert mw.encode(mw.Kind.TEXT, b"hi") == b"\x02hi"
    assert mw.decode(b"\x05oops") == mw.MoshiMessage(mw.Kind.ERROR, b"oops")
    assert mw.decode(mw.encode_metadata({"b": 1, "a": 2})).metadata() == {"a": 2, "b": 1}
    assert mw.decode(b"\x03\x01").control() is mw.Control.END_TURN


@pytest.mark.parametrize(("data", "match"), [(b"", "empty"), ("text", "text frame")])
def test_messages_without_a_kind_do_not_decode(data, match):
    with pytest.raises(mw.MoshiWireError, match=match):
        mw.decode(data)


def test_an_unknown_kind_keeps_its_byte():
    for b in (7, 0xFF):
        msg = mw.decode(bytes((b,)) + b"x")
        assert not msg.known and msg.kind == b and msg.name == f"kind_{b}"


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
    assert mw.chat_url("ws://h:8998", "kyutai") == "ws://h:8998/api/chat"
    assert mw.chat_url("ws://h:8998", "rust") == "ws://h:8998/api/chat"
    # PersonaPlex reads both prompts unconditionally: sent even when empty (and by auto, which may meet it)
    for flavor in ("personaplex", "auto"):
        assert mw.chat_url("ws://h:8998", flavor) == "ws://h:8998/api/chat?text_prompt=&voice_prompt="
    url = mw.chat_url("ws://h:8998/api/chat?x=1", "personaplex", text_prompt="You are kind, brief.",
                      voice_prompt="NATF2.pt", seed=7)
    assert url == "ws://h:8998/api/chat?x=1&text_prompt=You+are+kind%2C+brief.&voice_prompt=NATF2.pt&seed=7"
    assert mw.chat_url("ws://h/api/chat", "kyutai", text_prompt="hi") == "ws://h/api/chat?text_prompt=hi"
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
    assert codec.receive(b"\x06") == mw.Discarded("ping before the handshake")
    assert codec.receive(b"\x02hi") == mw.Discarded("text before the handshake")
    assert isinstance(codec.receive(b"\x05busy"), mw.ErrorOut)
    assert codec.receive(b"\x00") == mw.Handshake(b"")
    assert not codec.metadata_before_handshake
    with pytest.raises(mw.MoshiWireError, match="second handshake"):
        codec.receive(b"\x00")
    assert isinstance(codec.receive(b"\x06"), mw.PingOut)
    lead = codec.lead_frames()
    assert len(lead) == mw.SERVER_SKIPPED_FRAMES == up.KYUTAI_SKIPPED_INPUT_FRAMES and lead[0][0] == mw.Kind.AUDIO
    assert codec.lead_frames(0) == []
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


def test_metadata_unknown_kinds_and_text_frames_are_discarded_at_any_point():
    codec = mw.MoshiClientCodec()
    meta = mw.encode_metadata({k: 0 for k in up.RUST_METADATA_KEYS})
    assert isinstance(codec.receive(meta), mw.MetadataOut) and codec.metadata_before_handshake
    assert codec.receive(b"\x07abc") == mw.Discarded("unknown kind 7")  # before the handshake too
    assert codec.receive("a text frame") == mw.Discarded("text frame")
    assert codec.receive(b"") == mw.Discarded("empty message")
    assert codec.receive(b"\x04not json") == mw.Discarded("metadata message is not JSON: Expecting value: line 1 "
                                                          "column 1 (char 0)")
    assert codec.receive(up.RUST_HANDSHAKE) == mw.Handshake(up.RUST_HANDSHAKE[1:])
    assert codec.receive(b"\x09") == mw.Discarded("unknown kind 9")
    assert isinstance(codec.receive(meta), mw.MetadataOut)


def test_a_handshake_of_another_length_is_a_violation():
    with pytest.raises(mw.MoshiWireError, match="handshake of 5 bytes"):
        mw.MoshiClientCodec().receive(b"\x00\x00\x00\x00\x00")


def _pages_of(n_frames: int) -> list[bytes]:
    """An Ogg/Opus stream of `n_frames` 80 ms frames, split into its pages (headers first)."""
    writer = mw.OpusEncoder(24000)
    tone = _tone(1920 * n_frames, 24000, amp=0.3)
    data = b"".join(writer.encode_frame((tone[i * 1920 : (i + 1) * 1920] * 32767).astype("<i2").tobytes())
                    for i in range(n_frames))
    return mw.ogg_pages(data)


def test_ogg_pages_split_and_header_pages():
    pages = _pages_of(3)
    assert [mw.is_header_page(p) for p in pages] == [True, True] + [False] * 6  # two 40 ms pages per frame
    assert all(p[:4] == b"OggS" for p in pages)
    with pytest.raises(mw.MoshiWireError, match="not an Ogg page"):
        mw.ogg_pages(b"xx" + pages[0])
    with pytest.raises(mw.MoshiWireError, match="runs past"):
        mw.ogg_pages(pages[2][:-1])


def test_one_or_several_pages_per_message_decode_to_the_same_audio():
    pages = _pages_of(4)
    head = pages[0] + pages[1]

    def decode(messages: list[bytes]) -> bytes:
        codec = mw.MoshiClientCodec()
        codec.receive(b"\x00")
        return b"".join(codec.receive(mw.encode(mw.Kind.AUDIO, m)).pcm16 for m in messages)  # type: ignore[union-attr]

    rust_like = [head + pages[2]] + pages[3:]  # one page per message, the headers with the first
    python_like = [head + pages[2] + pages[3]] + [pages[i] + pages[i + 1] for i in range(4, len(pages), 2)]
    split_page = [head + pages[2][:30], pages[2][30:]] + pages[3:]  # a page cut across two messages
    ref = decode(python_like)
    assert len(ref) == 2 * 1280 * 4
    assert decode(rust_like) == ref and decode(split_page) == ref


def test_encoder_bytes_are_deterministic():
    def run() -> bytes:
        enc = mw.OpusEncoder()
        x = (_tone(1280 * 4, 16000) * 32767).astype("<i2").tobytes()
        return b"".join(enc.encode_frame(x[i * 2560 : (i + 1) * 2560]) for i in range(4))

    assert run() == run()


@pytest.mark.parametrize("rates", [(16000, 24000), (24000, 16000), (22050, 16000), (16000, 22050), (48000, 16000),
                                   (8000, 16000), (16000, 44100)])
def test_the_resampler_gives_its_definition_s_samples_bit_for_bit(rates):
    rng = np.random.default_rng(7)
    sizes = [int(rates[0] * ms / 1000) for ms in (80, 40, 20, 80, 10, 80)] + [0, 1, 3]
    chunks = [rng.standard_normal(n).astype(np.float32) * 0.3 for n in sizes]
    r = StreamResampler(*rates)
    got = np.concatenate([r.process(c) for c in chunks])
    want = full_polyphase(StreamResampler(*rates), chunks)
    assert got.shape == want.shape and np.array_equal(got, want)  # the same float32 samples, bit for bit
