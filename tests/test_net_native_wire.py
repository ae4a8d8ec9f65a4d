"""Native full-duplex JSON protocol: pydantic messages, grant checks, and the append/unit/drain ledger."""

from __future__ import annotations

import json

import pytest

from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.native_ledger import NativeLedger


def _granted(**over):
    g = {
        "interaction": "native",
        "native_full_duplex": True,
        "native_unit_ms": 80,
        "first_unit_ms": 80,
        "tail_policy": "flush",
        "input_audio_format": {"type": "audio/pcm", "rate": 16000},
        "output_audio_format": {"type": "audio/pcm", "rate": 24000},
        "rejections": [],
    }
    g.update(over)
    return nw.Granted.model_validate(g)


def test_client_events_serialize_to_the_protocol_shape():
    req = nw.session_request(16000, 24000)
    upd = json.loads(nw.dump(nw.SessionUpdate(event_id="e1", session=req)))
    assert upd["type"] == "session.update"
    assert upd["session"]["audio"]["input"] == {"format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}
    assert upd["session"]["sglang"] == {"interaction": "native", "native_unit_ms": 80, "tail_policy": "flush"}
    assert upd["session"]["output_modalities"] == ["audio"]
    app = json.loads(nw.dump(nw.InputAudioAppend(event_id="e2", audio="AAA=", sglang=nw.AppendMeta(seq=3, t_start_ms=240))))
    assert app == {"type": "input_audio_buffer.append", "event_id": "e2", "audio": "AAA=", "sglang": {"seq": 3, "t_start_ms": 240}}
    assert json.loads(nw.dump(nw.InputAudioEnd(event_id="e3"))) == {"type": "sglang.input_audio.end", "event_id": "e3"}
    with pytest.raises(ValueError):
        nw.SessionClose(event_id="")  # every client event needs a non-empty event_id


def test_server_events_parse_and_violations_are_named():
    ev = nw.parse_server_event(json.dumps({"type": "sglang.input_audio.accepted", "seq": 0, "accepted_end_ms": 80}))
    assert isinstance(ev, nw.Accepted) and ev.accepted_end_ms == 80
    delta = {
        "type": "response.output_audio.delta",
        "response_id": "r",
        "delta": "AAA=",
        "sglang": {"unit_id": 0, "chunk_seq": 0, "media_time": {"t_start_ms": 0, "duration_ms": 80}},
    }
    assert isinstance(nw.parse_server_event(json.dumps(delta)), nw.OutputAudioDelta)
    assert nw.parse_server_event('{"type": "rate_limits.updated"}') == {"type": "rate_limits.updated"}
    for bad, match in [
        ("{nope", "malformed JSON"),
        (b"\x00\x01", "binary frame"),
        ("[1]", "JSON object"),
        ('{"type": "made.up"}', "unknown server event"),
        ('{"type": "sglang.input_audio.drained", "consumed_ms": -1, "discarded_ms": 0, "padding_ms": 0}', "consumed_ms"),
    ]:
        with pytest.raises(nw.NativeWireError, match=match):
            nw.parse_server_event(bad)


def test_pcm_payload_checks():
    assert nw.decode_pcm16(nw.encode_pcm16(b"\x01\x02\x03\x04"), "delta") == b"\x01\x02\x03\x04"
    with pytest.raises(nw.NativeWireError, match="bad base64"):
        nw.decode_pcm16("not base64!!", "delta")
    with pytest.raises(nw.NativeWireError, match="odd-length"):
        nw.decode_pcm16(nw.encode_pcm16(b"\x01\x02\x03"), "delta")


def test_grant_checks():
    req = nw.session_request(16000, 24000)
    assert nw.check_grant(req, _granted()) == []
    assert nw.check_grant(req, _granted(output_audio_format={"type": "audio/pcm", "rate": 22050})) == []
    problems = nw.check_grant(
        req,
        _granted(
            interaction="turn_based",
            native_full_duplex=False,
            native_unit_ms=40,
            tail_policy="pad",
            input_audio_format={"type": "audio/pcm", "rate": 24000},
        ),
    )
    assert len(problems) == 5
    assert "native_unit_ms 40 granted, 80 asked" in problems


def _ledger(n: int) -> NativeLedger:
    led = NativeLedger(unit_ms=80)
    for i in range(n):
        led.on_append(i, i * 80, 80)
    return led


def test_ledger_happy_path():
    led = _ledger(3)
    for i in range(3):
        led.on_accepted(i, (i + 1) * 80)
        led.on_delta(i, 0, i * 80, 80.0)
        led.on_unit_done(i)
    led.on_ended()
    led.on_drained(240, 0, 0)
    assert led.final_problems() == []
    assert led.to_json()["input_ms"] == 240 and led.to_json()["units_done"] == 3


def test_ledger_breaches():
    led = _ledger(2)
    with pytest.raises(nw.NativeWireError, match="never sent"):
        led.on_accepted(5, 480)
    with pytest.raises(nw.NativeWireError, match="accepted to 100 ms"):
        led.on_accepted(0, 100)
    led.on_accepted(0, 80)
    with pytest.raises(nw.NativeWireError, match="accepted twice"):
        led.on_accepted(0, 80)
    with pytest.raises(nw.NativeWireError, match="unit.done 1, expected 0"):
        led.on_unit_done(1)
    led.on_delta(0, 0, 0, 40.0)
    with pytest.raises(nw.NativeWireError, match="chunk_seq 2 after 0"):
        led.on_delta(0, 2, 40, 40.0)
    with pytest.raises(nw.NativeWireError, match="unit 3 after unit 0"):
        led.on_delta(3, 0, 240, 80.0)
    with pytest.raises(nw.NativeWireError, match="drained before ended"):
        led.on_drained(160, 0, 0)
    led.on_ended()
    led.on_drained(120, 40, 0)
    problems = led.final_problems()
    assert "1 append(s) never accepted (first seq 1)" in problems
    assert "consumed 120 ms of 160 ms sent" in problems
    assert "discarded 40 ms" in problems
    assert any("units of 80 ms done" in p for p in problems)
    assert _ledger(1).final_problems()[-1] == "no sglang.input_audio.drained"
