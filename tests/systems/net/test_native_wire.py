"""Native full-duplex JSON protocol against sglang-omni's definitions (tests/helpers/upstream_sglang.py), and the
ledger."""

from __future__ import annotations

import json

import pytest

from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.native_ledger import NativeLedger
from tests.helpers import upstream_sglang as up


def _granted(**over):
    g = json.loads(json.dumps(up.server_events()["session.updated"]["session"]["sglang"]["granted"]))
    g.update(over)
    return nw.Granted.model_validate(g)


def _client_events(**pins) -> list[dict]:
    req = nw.session_request(**pins)
    return [json.loads(nw.dump(ev)) for ev in (
        nw.SessionUpdate(event_id="evt_1", session=req),
        nw.InputAudioAppend(event_id="evt_2", audio="AAA=", sglang=nw.AppendMeta(seq=0, t_start_ms=0.0)),
        nw.InputAudioAppend(event_id="evt_3", audio="AAA=", sglang=nw.AppendMeta(seq=1, t_start_ms=80.0)),
        nw.InputAudioEnd(event_id="evt_4"), nw.SessionClose(event_id="evt_5"))]


@pytest.mark.parametrize("pins", [{}, {"input_rate": 24000, "output_rate": 22050, "tail_policy": "pad",
                                        "native_unit_ms": 80}, {"output_rate": 16000}])
def test_every_client_event_validates_against_the_upstream_request_model(pins):
    for ev in _client_events(**pins):
        assert up.check_client_event(ev) == [], ev


def test_the_unit_is_asked_for_only_under_the_timebase():
    upd = _client_events(native_unit_ms=80, tail_policy="flush")[0]
    assert upd["session"]["sglang"] == {"interaction": "native", "tail_policy": "flush",
                                        "timebase": {"native_unit_ms": 80}}
    # what the client used to send, and what upstream refuses ("invalid session configuration")
    old = json.loads(json.dumps(upd))
    old["session"]["sglang"] = {"interaction": "native", "native_unit_ms": 80, "tail_policy": "flush"}
    assert up.check_client_event(old) == [".session.sglang.native_unit_ms: extra field"]
    # nothing pinned: no format, no policy, no unit (the deployment's are granted)
    bare = _client_events()[0]["session"]
    assert bare == {"type": "realtime", "output_modalities": ["audio"], "audio": {"input": {}},
                    "sglang": {"interaction": "native"}}


def test_the_checker_is_as_strict_as_the_upstream_models():
    ok = _client_events()[1]
    assert up.check_client_event(ok) == []
    for change, problem in (({"event_id": ""}, "event_id"), ({"extra": 1}, "extra field"),
                            ({"sglang": {"seq": True, "t_start_ms": 0.0}}, "is not int"),
                            ({"sglang": {"seq": 0.0}}, "is not int"), ({"type": "response.cancel"}, "no client event")):
        bad = {**ok, **change}
        assert any(problem in p for p in up.check_client_event(bad)), (change, up.check_client_event(bad))


def test_every_upstream_server_event_parses_and_int_unit_ids_are_violations():
    for kind, ev in up.server_events().items():
        parsed = nw.parse_server_event(json.dumps(ev))
        assert parsed.type == kind  # type: ignore[attr-defined]
    delta = up.server_events()["response.output_audio.delta"]
    parsed = nw.parse_server_event(json.dumps(delta))
    assert nw.unit_index(parsed.sglang.unit_id) == 3  # type: ignore[attr-defined]
    old = json.loads(json.dumps(delta))
    old["sglang"]["unit_id"] = 3  # what the client used to expect
    with pytest.raises(nw.NativeWireError, match=r"sglang.unit_id: Input should be a valid string \(got 3\)"):
        nw.parse_server_event(json.dumps(old))
    done = {"type": "sglang.unit.done", "unit_id": "3"}
    with pytest.raises(nw.NativeWireError, match="unit_id: String should match pattern"):
        nw.parse_server_event(json.dumps(done))
    for bad, match in [
        ("{nope", "malformed JSON"),
        (b"\x00\x01", "binary frame"),
        ("[1]", "JSON object"),
        ('{"type": "made.up"}', "unknown server event"),
        ('{"type": "sglang.input_audio.drained", "accepted_end_ms": 0, "consumed_ms": -1, "discarded_ms": 0, '
         '"padding_ms": 0}', "consumed_ms"),
        ('{"type": "sglang.input_audio.accepted", "seq": 0, "accepted_end_ms": NaN}', "non-finite"),
    ]:
        with pytest.raises(nw.NativeWireError, match=match):
            nw.parse_server_event(bad)


def test_pcm_payload_checks():
    assert nw.decode_pcm16(nw.encode_pcm16(b"\x01\x02\x03\x04"), "delta") == b"\x01\x02\x03\x04"
    with pytest.raises(nw.NativeWireError, match="bad base64"):
        nw.decode_pcm16("not base64!!", "delta")
    with pytest.raises(nw.NativeWireError, match="odd-length"):
        nw.decode_pcm16(nw.encode_pcm16(b"\x01\x02\x03"), "delta")


def test_grant_checks_and_adoption():
    assert nw.check_grant(nw.session_request(), _granted()) == []
    # nothing pinned: whatever the deployment serves is adopted
    assert nw.check_grant(nw.session_request(), _granted(native_unit_ms=20, tail_policy="pad",
                                                         output_audio_format={
                                                             "type": "audio/pcm", "rate": 22050})) == []
    pinned = nw.session_request(16000, 24000, "flush", 80)
    problems = nw.check_grant(pinned, _granted(native_full_duplex=False, native_unit_ms=40, tail_policy="pad",
                                               input_audio_format={"type": "audio/pcm", "rate": 24000}))
    assert problems == ["native_full_duplex not granted", "input_rate 24000 granted, 16000 asked",
                        "tail_policy 'pad' granted, 'flush' asked", "native_unit_ms 40 granted, 80 asked"]
    assert nw.granted_values(_granted()) == {"input_rate": 16000, "output_rate": 24000, "tail_policy": "flush",
                                             "native_unit_ms": 80}


def _ledger(n: int) -> NativeLedger:
    led = NativeLedger(unit_ms=80)
    for i in range(n):
        led.on_append(i, i * 80.0, 80.0)
    return led


def test_ledger_happy_path_with_the_empty_end_of_stream_unit():
    led = _ledger(3)
    for i in range(3):
        led.on_accepted(i, (i + 1) * 80.0)
        led.on_delta(i, 0, 80.0)
        led.on_unit_done(i)
    led.on_ended(240.0)
    led.on_unit_done(3)  # upstream's end-of-stream unit, empty after whole units
    led.on_drained(240.0, 0.0, 0.0)
    assert led.final_problems() == []
    assert led.to_json()["input_ms"] == 240 and led.to_json()["units_done"] == 4


def test_ledger_breaches():
    led = _ledger(2)
    with pytest.raises(nw.NativeWireError, match="never sent"):
        led.on_accepted(5, 480.0)
    with pytest.raises(nw.NativeWireError, match="accepted to 100.0 ms"):
        led.on_accepted(0, 100.0)
    led.on_accepted(0, 80.0)
    with pytest.raises(nw.NativeWireError, match="accepted twice"):
        led.on_accepted(0, 80.0)
    with pytest.raises(nw.NativeWireError, match="unit.done unit_1, expected unit_0"):
        led.on_unit_done(1)
    led.on_delta(0, 0, 40.0)
    with pytest.raises(nw.NativeWireError, match="chunk_seq 2 after 0"):
        led.on_delta(0, 2, 40.0)
    led.on_delta(2, 0, 80.0)  # unit_1 had no audio: allowed
    with pytest.raises(nw.NativeWireError, match="output for unit_1 after unit_2"):
        led.on_delta(1, 0, 80.0)
    with pytest.raises(nw.NativeWireError, match="drained before ended"):
        led.on_drained(160.0, 0.0, 0.0)
    led.on_ended()
    led.on_drained(120.0, 40.0, 0.0)
    problems = led.final_problems()
    assert "1 append(s) never accepted (first seq 1)" in problems
    assert "consumed 120 ms of 160 ms sent" in problems
    assert "discarded 40 ms" in problems
    assert any("units of 80 ms done" in p for p in problems)
    assert _ledger(1).final_problems()[-1] == "no sglang.input_audio.drained"
