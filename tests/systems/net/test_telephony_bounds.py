"""The telephony client's bound on markers waiting for their audio to play: a bot that queues 2 s of audio and then
sends more markers than MAX_PENDING_MARKS breaks the protocol, named, and the client keeps no more than the bound."""

from __future__ import annotations

import asyncio
import base64
import json

import numpy as np
from websockets.asyncio.server import ServerConnection

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.telephony import MAX_PENDING_MARKS
from duplexeval.systems.net.trace import TraceRecord, verdict
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import WsServerThread

T = 1.2


class MarkerFloodBot(WsServerThread):
    """A Twilio-stream bot: at `start` it sends 2 s of audio and then `n` markers."""

    def __init__(self, n: int) -> None:
        super().__init__(self._call)
        self.n = n

    async def _call(self, ws: ServerConnection) -> None:
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("event") == "start":
                sid = msg["streamSid"]
                payload = base64.b64encode(bytes([0x7F]) * 16000).decode()  # 2 s of mu-law silence-ish
                await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": payload}}))
                for i in range(self.n):
                    await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": f"m{i}"}}))


def _call(n: int) -> list[dict]:
    with MarkerFloodBot(n) as bot:
        system = make_system(f"telephony:url=ws://127.0.0.1:{bot.port}/ws,stall_s=3")
        pcm = np.zeros(int(T * 16000), dtype=np.int16)
        trace = asyncio.run(run_session_async(system, pcm, SampleInfo("candor_turn_taking", "1", T, pcm.shape[0])))
    return [r.to_json() for r in trace.wire.records]


def test_more_markers_pending_than_the_bound_is_a_violation() -> None:
    records = _call(MAX_PENDING_MARKS + 5)
    v = verdict([TraceRecord.from_json(r) for r in records], T, 3.0)
    assert "protocol_violation" in v.reasons
    assert v.first_problem is not None
    assert v.first_problem.what == f"mark: more than {MAX_PENDING_MARKS} markers pending"
    assert (len([r for r in records if r.get("type") == "mark" and r["dir"] == "recv" and "plays_at_s" in r])
            == MAX_PENDING_MARKS)


def test_markers_up_to_the_bound_are_kept() -> None:
    records = _call(MAX_PENDING_MARKS)
    assert "protocol_violation" not in verdict([TraceRecord.from_json(r) for r in records], T, 3.0).reasons
    marks = [r for r in records if r.get("type") == "mark" and r["dir"] == "recv"]
    assert len(marks) == MAX_PENDING_MARKS and all(r["plays_at_s"] >= 2.0 for r in marks)  # after the 2 s queued
