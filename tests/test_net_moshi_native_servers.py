"""The loopback native server's protocol rules without a socket: grants, seq checks, tail policies.

The native conversation is driven directly (its `step` runs the energy-VAD turn-based baseline
through the framework's SystemDriver-equivalent: one 80 ms unit in, one out). The Moshi flavors are
in test_net_moshi_flavors.py.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from net_proto_helpers import SERVED, first_loud_s, tone_input

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import FrameStream
from duplexeval.systems.net.native_server import NativeConversation
from duplexeval.systems.registry import make_system


def _conversation(grant_unit_ms: int = 80) -> NativeConversation:
    session = {}
    stream = FrameStream()

    async def step(unit: bytes) -> np.ndarray:
        if "s" not in session:
            session["s"] = await make_system(SERVED).open_session(SampleInfo(None, None, 3600.0, 0))
            session["k"] = 0
        k = session["k"]
        await session["s"].push_input(unit, k * 0.08)
        for item in await session["s"].poll_output((k + 1) * 0.08):
            stream.add(item)
        session["k"] = k + 1
        return stream.next_frame()

    return NativeConversation(step, grant_unit_ms=grant_unit_ms)


def _types(reply) -> list[str]:
    return [json.loads(m)["type"] for m in reply.messages]


def _append(seq: int, pcm: bytes, t_start_ms: int | None = None) -> str:
    meta = nw.AppendMeta(seq=seq, t_start_ms=seq * 80 if t_start_ms is None else t_start_ms)
    return nw.dump(nw.InputAudioAppend(event_id=f"a{seq}", audio=nw.encode_pcm16(pcm), sglang=meta))


def _update(**over) -> str:
    return nw.dump(nw.SessionUpdate(event_id="u", session=nw.session_request(over.get("in_rate", 16000), over.get("out_rate", 24000), over.get("tail", "flush"))))


async def _configured(**over) -> NativeConversation:
    conv = _conversation()
    reply = await conv.on_message(_update(**over))
    assert _types(reply) == ["session.updated"]
    return conv


def test_native_full_flow_accounting_and_output():
    async def go():
        conv = _conversation()
        assert json.loads(conv.created())["type"] == "session.created"
        upd = json.loads((await conv.on_message(_update())).messages[0])
        granted = nw.Granted.model_validate(upd["session"]["sglang"]["granted"])
        assert nw.check_grant(nw.session_request(16000, 24000), granted) == []
        pcm = tone_input().tobytes()
        out = []
        for i in range(len(pcm) // 2560):
            reply = await conv.on_message(_append(i, pcm[i * 2560 : (i + 1) * 2560]))
            types = _types(reply)
            assert types[0] == "sglang.input_audio.accepted" and types[-2:] == ["response.output_audio.delta", "sglang.unit.done"]
            for m in reply.messages:
                o = json.loads(m)
                if o["type"] == "response.output_audio.delta":
                    assert o["sglang"]["unit_id"] == i and o["sglang"]["media_time"] == {"t_start_ms": i * 80, "duration_ms": 80.0}
                    out.append(np.frombuffer(nw.decode_pcm16(o["delta"], "d"), dtype="<i2"))
        end = await conv.on_message(nw.dump(nw.InputAudioEnd(event_id="e")))
        assert _types(end) == ["sglang.input_audio.ended", "sglang.input_audio.drained", "response.done"]
        assert json.loads(end.messages[1])["consumed_ms"] == 2000
        closed = await conv.on_message(nw.dump(nw.SessionClose(event_id="c")))
        assert _types(closed) == ["session.closed"] and closed.close
        return np.concatenate(out)

    audio_24k = asyncio.run(go())
    assert audio_24k.shape[0] == 25 * 1920  # one 80 ms unit of 24 kHz output per 80 ms of input
    loud = first_loud_s(audio_24k) * 16000 / 24000  # first_loud_s assumes 16 kHz
    assert 0.85 <= loud <= 1.2  # the baseline's reply, ~0.4 s after the 0.6 s tone


def test_native_refusals_and_fatal_errors():
    async def go():
        conv = _conversation()
        first = await conv.on_message(_append(0, bytes(2560)))
        assert first.close and json.loads(first.messages[0])["error"]["code"] == "not_configured"
        conv = await _configured()
        for refused in ("input_audio_buffer.commit", "response.create", "response.cancel"):
            r = await conv.on_message(json.dumps({"type": refused, "event_id": "x"}))
            body = json.loads(r.messages[0])
            assert body["error"]["code"] == "refused_in_native_mode" and not body["sglang"]["fatal"] and not r.close
        update = json.loads(_update())
        update["session"]["turn_detection"] = {"type": "server_vad"}  # top level: not a field of a native session
        unknown = await conv.on_message(json.dumps(update))
        assert json.loads(unknown.messages[0])["error"]["code"] == "unknown_parameter"
        assert (await conv.on_message(b"\x00\x01")).close  # binary frames are fatal
        conv = await _configured()
        await conv.on_message(_append(0, bytes(2560)))
        skipped = await conv.on_message(_append(2, bytes(2560)))
        err = json.loads(skipped.messages[0])
        assert skipped.close and err["error"]["code"] == "seq_mismatch" and err["sglang"]["fatal"]
        conv = await _configured()
        wrong_time = await conv.on_message(_append(0, bytes(2560), t_start_ms=40))
        assert json.loads(wrong_time.messages[0])["error"]["code"] == "seq_mismatch"
        conv = await _configured()
        bad = await conv.on_message(json.dumps({"type": "input_audio_buffer.append", "event_id": "z", "audio": "%%%", "sglang": {"seq": 0, "t_start_ms": 0}}))
        assert json.loads(bad.messages[0])["error"]["code"] == "invalid_audio"

    asyncio.run(go())


@pytest.mark.parametrize(("tail", "consumed", "discarded", "padding", "units"), [("flush", 120, 0, 40, 2), ("pad", 120, 0, 40, 2), ("reject", 80, 40, 0, 1)])
def test_native_tail_policy(tail, consumed, discarded, padding, units):
    async def go():
        conv = await _configured(tail=tail)
        await conv.on_message(_append(0, bytes(2560 + 1280)))  # 120 ms: one unit and a half
        end = await conv.on_message(nw.dump(nw.InputAudioEnd(event_id="e")))
        drained = next(json.loads(m) for m in end.messages if "input_audio.drained" in m)
        assert (drained["consumed_ms"], drained["discarded_ms"], drained["padding_ms"]) == (consumed, discarded, padding)
        assert conv.units == units

    asyncio.run(go())


def test_native_grants_and_rejections():
    async def go():
        conv = _conversation()
        upd = json.loads((await conv.on_message(_update(in_rate=24000, out_rate=22050))).messages[0])
        g = upd["session"]["sglang"]["granted"]
        assert g["input_audio_format"]["rate"] == 24000 and g["output_audio_format"]["rate"] == 24000
        assert [r["field"] for r in g["rejections"]] == ["audio.output.format.rate"]
        conv40 = _conversation(grant_unit_ms=40)
        g40 = nw.Granted.model_validate(json.loads((await conv40.on_message(_update())).messages[0])["session"]["sglang"]["granted"])
        assert nw.check_grant(nw.session_request(16000, 24000), g40) == ["native_unit_ms 40 granted, 80 asked"]

    asyncio.run(go())
