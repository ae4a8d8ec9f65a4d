"""The loopback native server's protocol rules without a socket: grants, seq checks, tail policies.

The native conversation is driven directly (its `step` runs the energy-VAD turn-based baseline
through the framework's SystemDriver-equivalent: one 80 ms unit in, one out). The Moshi flavors are
in tests/systems/net/test_moshi_flavors.py.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from duplexeval.errors import InputError
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import FrameStream
from duplexeval.systems.net.native_server import Deployment, NativeConversation, deployment_of
from duplexeval.systems.registry import make_system
from tests.helpers import upstream_sglang as up
from tests.helpers.net_protocols import SERVED, first_loud_s, tone_input


def _conversation(deployment: Deployment | None = None) -> NativeConversation:
    session = {}
    stream = FrameStream()

    async def step(unit: bytes) -> np.ndarray:
        if "s" not in session:
            session["s"] = await make_system(SERVED).open_session(SampleInfo(None, None, 3600.0, 0))
            session["k"] = 0
            session["buf"] = b""
        session["buf"] += unit
        while len(session["buf"]) >= 2560:  # the served system steps in 80 ms frames
            frame, session["buf"] = session["buf"][:2560], session["buf"][2560:]
            k = session["k"]
            await session["s"].push_input(frame, k * 0.08)
            for item in await session["s"].poll_output((k + 1) * 0.08):
                stream.add(item)
            session["k"] = k + 1
        return stream.next_frame(len(unit) // 2)

    return NativeConversation(step, deployment=deployment)


def _msgs(reply) -> list[dict]:
    return [json.loads(m) for m in reply.messages]


def _types(reply) -> list[str]:
    return [m["type"] for m in _msgs(reply)]


def _append(seq: int, pcm: bytes, t_start_ms: float | None = None, rate: int = 16000) -> str:
    meta = nw.AppendMeta(seq=seq, t_start_ms=seq * len(pcm) / 2 * 1000 / rate if t_start_ms is None else t_start_ms)
    return nw.dump(nw.InputAudioAppend(event_id=f"a{seq}", audio=nw.encode_pcm16(pcm), sglang=meta))


def _update(**pins) -> str:
    return nw.dump(nw.SessionUpdate(event_id="u", session=nw.session_request(**pins)))


async def _configured(deployment: Deployment | None = None, **pins) -> NativeConversation:
    conv = _conversation(deployment)
    reply = await conv.on_message(_update(**pins))
    assert _types(reply) == ["session.updated"], _msgs(reply)
    return conv


def _error(reply) -> tuple[str, str, str | None, bool]:
    (m,) = _msgs(reply)
    assert m["type"] == "error" and not reply.close
    return m["error"]["code"], m["error"]["message"], m["error"]["param"], m["sglang"]["fatal"]


def _keys(obj, prefix=""):
    """Every key path of a JSON object (for comparing the shapes of events)."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(prefix + k)
            out |= _keys(v, prefix + k + ".")
    return out


def test_native_full_flow_accounting_and_output():
    async def go():
        conv = _conversation()
        created = json.loads(conv.created())
        assert created["session"]["sglang"] == {"granted": None}
        sent = [created]
        upd = _msgs(await conv.on_message(_update()))[0]
        sent.append(upd)
        granted = nw.Granted.model_validate(upd["session"]["sglang"]["granted"])
        assert nw.check_grant(nw.session_request(), granted) == []
        pcm = tone_input().tobytes()
        out = []
        for i in range(len(pcm) // 2560):
            reply = await conv.on_message(_append(i, pcm[i * 2560 : (i + 1) * 2560]))
            sent += _msgs(reply)
            types = _types(reply)
            assert types[0] == "sglang.input_audio.accepted" and types[-2:] == [
                "response.output_audio.delta", "sglang.unit.done"]
            for o in _msgs(reply):
                if o["type"] == "response.output_audio.delta":
                    assert o["sglang"]["unit_id"] == f"unit_{i}"
                    assert o["sglang"]["media_time"] == {"t_start_ms": i * 80.0, "duration_ms": 80.0}
                    out.append(np.frombuffer(nw.decode_pcm16(o["delta"], "d"), dtype="<i2"))
        end = await conv.on_message(nw.dump(nw.InputAudioEnd(event_id="e")))
        sent += _msgs(end)
        assert _types(end) == ["sglang.input_audio.ended", "sglang.unit.done", "sglang.input_audio.drained",
                               "response.output_audio.done", "response.done"]
        assert _msgs(end)[1]["unit_id"] == "unit_25"  # the empty end-of-stream unit after whole units
        assert _msgs(end)[2]["consumed_ms"] == 2000.0
        closed = await conv.on_message(nw.dump(nw.SessionClose(event_id="c")))
        sent += _msgs(closed)
        assert _types(closed) == ["session.closed"] and closed.close
        return np.concatenate(out), sent

    audio_24k, sent = asyncio.run(go())
    assert audio_24k.shape[0] == 25 * 1920  # one 80 ms unit of 24 kHz output per 80 ms of input
    loud = first_loud_s(audio_24k) * 16000 / 24000  # first_loud_s assumes 16 kHz
    assert 0.85 <= loud <= 1.2  # the baseline's reply, ~0.4 s after the 0.6 s tone
    # Every event has the shape of the upstream projection's event of its type, and parses in the client.
    ref = up.server_events()
    for ev in sent:
        assert ev["event_id"].startswith("evt_")
        want = ref[ev["type"]]
        if ev["type"] == "session.updated":  # the session echoes the configuration asked for
            assert _keys(ev["session"]["sglang"]["granted"]) == _keys(want["session"]["sglang"]["granted"])
        else:
            extra = _keys(ev) - _keys(want)
            assert not extra, (ev["type"], extra)
        nw.parse_server_event(json.dumps(ev))


def test_native_refusals_are_errors_and_the_session_goes_on():
    async def go():
        conv = _conversation()
        assert _error(await conv.on_message(_append(0, bytes(2560)))) == (
            "invalid_state", "session is not OPEN", None, False)
        # what the client used to send: the unit beside the interaction, not under the timebase
        old = json.loads(_update())
        old["session"]["sglang"]["native_unit_ms"] = 80
        assert _error(await conv.on_message(json.dumps(old))) == (
            "invalid_request", "invalid session configuration", "sglang.native_unit_ms", False)
        td = json.loads(_update())
        td["session"]["turn_detection"] = {"type": "server_vad"}  # top level: not a field of the session
        assert _error(await conv.on_message(json.dumps(td)))[1:3] == ("invalid session configuration", "turn_detection")
        vad = json.loads(_update())
        vad["session"]["audio"]["input"]["turn_detection"] = {"type": "server_vad"}
        assert _error(await conv.on_message(json.dumps(vad)))[:2] == up.ERRORS["vad"]
        for pins, param in (({"output_rate": 22050}, "session.audio.output.format"),
                            ({"input_rate": 24000}, "session.audio.input.format")):
            assert _error(await conv.on_message(_update(**pins)))[:3] == (*up.ERRORS["format"], param)
        assert _error(await conv.on_message(_update(tail_policy="pad")))[:2] == up.ERRORS["tail"]
        assert _error(await conv.on_message(_update(native_unit_ms=40)))[:2] == up.ERRORS["unit"]
        assert _error(await conv.on_message(b"\x00\x01"))[:2] == ("invalid_request", "binary frames are unsupported")
        assert _error(await conv.on_message("{nope"))[:2] == ("invalid_request", "invalid JSON")
        assert (_error(await conv.on_message(json.dumps({"type": "response.cancel", "event_id": "x"})))[0]
                == "not_supported")
        assert _error(await conv.on_message(json.dumps({"type": "session.close"})))[:3] == (
            "invalid_request", "Field required", "event_id")
        assert conv.state == "CREATED"
        conv = await _configured()
        for refused in nw.REFUSED_IN_NATIVE:
            assert _error(await conv.on_message(json.dumps({"type": refused, "event_id": "x"})))[:2] == (
                "not_applicable", "manual turn commands are not granted")
        assert _types(await conv.on_message(_append(0, bytes(2560)))) == [
            "sglang.input_audio.accepted", "response.created", "response.output_audio.delta", "sglang.unit.done"]
        assert _error(await conv.on_message(_append(2, bytes(2560))))[:2] == (
            "invalid_state", "audio seq must be contiguous")
        assert _error(await conv.on_message(_append(1, bytes(2560), t_start_ms=40.0)))[:2] == (
            "invalid_state", "input media time must be sample-contiguous")
        bad = (
            json.dumps(
                {"type": "input_audio_buffer.append", "event_id": "z", "audio": "%%%",
                 "sglang": {"seq": 1, "t_start_ms": 80.0}}))
        assert _error(await conv.on_message(bad))[:3] == ("invalid_request", "invalid base64 audio", "audio")
        assert _types(await conv.on_message(_append(1, bytes(2560)))) == [
            "sglang.input_audio.accepted", "response.output_audio.delta", "sglang.unit.done"]  # still going

    asyncio.run(go())


@pytest.mark.parametrize(("tail", "consumed", "discarded", "padding", "units"),
                         [("flush", 120.0, 0.0, 0.0, 2), ("pad", 120.0, 0.0, 40.0, 2), ("reject", None, None, None, 1)])
def test_native_tail_policy(tail, consumed, discarded, padding, units):
    async def go():
        conv = await _configured(Deployment(tail_policy=tail))
        await conv.on_message(_append(0, bytes(2560 + 1280)))  # 120 ms: one unit and a half
        end = await conv.on_message(nw.dump(nw.InputAudioEnd(event_id="e")))
        if tail == "reject":
            assert _error(end)[:2] == ("invalid_state", "partial native unit; append more audio before EOS")
        else:
            drained = next(m for m in _msgs(end) if m["type"] == "sglang.input_audio.drained")
            assert ((drained["consumed_ms"], drained["discarded_ms"], drained["padding_ms"])
                    == (consumed, discarded, padding))
        assert conv.units == units

    asyncio.run(go())


def test_native_grants_are_the_deployment_s():
    async def go():
        dep = Deployment(input_rate=24000, output_rate=22050, tail_policy="pad", native_unit_ms=40)
        conv = _conversation(dep)
        upd = _msgs(await conv.on_message(_update()))[0]  # nothing pinned: the deployment's values
        g = nw.Granted.model_validate(upd["session"]["sglang"]["granted"])
        assert nw.granted_values(g) == {"input_rate": 24000, "output_rate": 22050, "tail_policy": "pad",
                                        "native_unit_ms": 40}
        assert upd["session"]["audio"]["output"]["format"] == {"type": "audio/pcm", "rate": 22050}
        reply = await conv.on_message(_append(0, bytes(2 * 1920), rate=24000))  # 80 ms at 24 kHz: two 40 ms units
        assert ([m["sglang"]["unit_id"] for m in _msgs(reply) if m["type"] == "response.output_audio.delta"]
                == ["unit_0", "unit_1"])
        assert {len(nw.decode_pcm16(m["delta"], "d")) for m in _msgs(reply)
                if m["type"] == "response.output_audio.delta"} == {2 * 882}

    asyncio.run(go())


def test_native_deployment_options_are_checked():
    assert deployment_of({"output_rate": "22050"}) == Deployment(output_rate=22050)
    for bad, match in (({"rate": "1"}, "unknown native-duplex server option"), ({"tail_policy": "drop"}, "tail_policy"),
                       ({"native_unit_ms": "30", "input_rate": "22050"}, "whole samples"),
                       ({"input_rate": "x"}, "whole numbers")):
        with pytest.raises(InputError, match=match):
            deployment_of(bad)
