"""The `openai` SDK's own realtime client against `duplexeval serve openai-realtime`, GA and beta.

It connects, configures the session, streams espeak speech at 24 kHz in real time, barges in over the
reply (and truncates what it heard), and parses every event with the SDK; each event also validates
strictly (tests/helpers/openai_sdk.py). The session must complete: a reply, a cancelled reply at the barge-in,
the truncate answered, and the reply to the barge-in turn completed.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import numpy as np
import pytest
from openai import AsyncOpenAI

from duplexeval.audio import resample
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.tts import synthesize
from tests.helpers.openai_sdk import check_server_event

SERVED = ("turn-based:vad=energy,think_ms=0,silence_ms=400,text=well that is a long story and I will tell it "
          "to you slowly")
CHUNK_S = 0.1


def _speech(text: str) -> bytes:
    audio = resample(synthesize(text).audio, 16000, 24000)
    return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()


async def _session(url: str, beta: bool) -> dict[str, Any]:
    client = AsyncOpenAI(api_key="sk-loopback-test", websocket_base_url=url)
    realtime = client.beta.realtime if beta else client.realtime
    first, second = _speech("hello there, how are you today?"), _speech("wait, stop, let me ask something else")
    silence = bytes(int(24000 * CHUNK_S) * 2)
    events: list[Any] = []
    raw: list[str] = []
    state: dict[str, Any] = {"heard": {}, "barged": False}

    async with realtime.connect(model="gpt-realtime") as conn:
        if beta:
            await conn.session.update(session={"modalities": ["audio", "text"], "input_audio_format": "pcm16",
                                               "output_audio_format": "pcm16", "voice": "alloy",
                                               "turn_detection": {"type": "server_vad", "silence_duration_ms": 400}})
        else:
            await conn.session.update(session={"type": "realtime", "output_modalities": ["audio"], "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": 24000},
                          "turn_detection": {"type": "server_vad", "silence_duration_ms": 400}},
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy"}}})

        async def stream() -> None:
            plan = [first, silence * 18, None, second, silence * 40]  # None: wait until the reply is heard
            for part in plan:
                if part is None:
                    for _ in range(100):
                        if state["heard"]:
                            break
                        await asyncio.sleep(0.05)
                    await asyncio.sleep(0.5)  # let the reply play a while, then talk over it
                    state["barged"] = True
                    continue
                step = int(24000 * CHUNK_S) * 2
                for off in range(0, len(part), step):
                    await conn.input_audio_buffer.append(audio=base64.b64encode(part[off : off + step]).decode())
                    await asyncio.sleep(CHUNK_S)

        async def receive() -> None:
            delta = "response.audio.delta" if beta else "response.output_audio.delta"
            async for ev in conn:
                events.append(ev)
                raw.append(ev.to_json())
                if ev.type == delta:
                    n = len(base64.b64decode(ev.delta)) // 2
                    state["heard"][ev.item_id] = state["heard"].get(ev.item_id, 0) + n
                elif (ev.type == "input_audio_buffer.speech_started" and state["barged"] and state["heard"]
                      and "truncated" not in state):
                    item = list(state["heard"])[-1]
                    ms = int(state["heard"][item] / 24)  # what this client received (and "played") of it
                    await conn.conversation.item.truncate(item_id=item, content_index=0, audio_end_ms=ms)
                    state["truncated"] = (item, ms)
                elif ev.type == "response.done" and ev.response.status == "completed" and state.get("truncated"):
                    return  # the reply to the barge-in turn: the session is complete

        receiver = asyncio.ensure_future(receive())
        await stream()
        await asyncio.wait_for(receiver, 20)
    return {"events": events, "raw": raw, "state": state}


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
def test_the_sdk_client_completes_a_session_with_a_barge_in(beta: bool) -> None:
    import json

    # streamed slower than played: still streaming at the barge-in
    srv = make_server("openai-realtime", SERVED, options={"speed": "0.5"})
    with ServerThread(srv) as th:
        out = asyncio.run(_session(th.url("/v1"), beta))
    dialect = "beta" if beta else "ga"
    types = [ev.type for ev in out["events"]]
    for text in out["raw"]:
        ev = json.loads(text)
        assert check_server_event(dialect, ev) == [], ev["type"]
    assert types[0] == "session.created" and "session.updated" in types
    statuses = [ev.response.status for ev in out["events"] if ev.type == "response.done"]
    assert statuses[0] == "cancelled" or "cancelled" in statuses  # the barge-in cancelled the reply being heard
    assert statuses[-1] == "completed"
    cancelled = next(ev for ev in out["events"] if ev.type == "response.done" and ev.response.status == "cancelled")
    assert cancelled.response.status_details.reason == "turn_detected"
    truncs = [(ev.item_id, ev.audio_end_ms) for ev in out["events"] if ev.type == "conversation.item.truncated"]
    assert truncs == [out["state"]["truncated"]]
    dones = [ev.response.id for ev in out["events"] if ev.type == "response.done"]
    assert len(dones) == len(set(dones))  # each response ends once
    assert "error" not in types
