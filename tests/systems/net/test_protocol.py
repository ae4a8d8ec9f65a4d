"""openai-realtime client and server rules over real loopback sessions, the live playout, the runner's receipt
stamps."""

from __future__ import annotations

import asyncio
import json
import random

import numpy as np
import pytest
import websockets

from duplexeval.systems.base import (
    ControlEvent,
    OutputChunk,
    ProtocolViolation,
    SampleInfo,
)
from duplexeval.systems.net.live import LivePlayout, played_ms
from duplexeval.systems.net.openai_realtime import granted_rates
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.playout import playout
from duplexeval.systems.runner import ReceivedItem, run_session_async
from tests.helpers.net import REPLY_AT, SERVED, Case, run_cases, user_turn

# A user who talks over the reply: first turn 0.3-1.3 s, reply from ~2.0 s, barge-in at 3.0-4.2 s.
TALK_OVER = ((0.3, 1.3), (3.0, 4.2))
CLIENT = "stall_s=2.0,linger_s=0.5"
LONG = SERVED.split(",text=")[0] + ",text=" + " ".join(["this is a much longer answer that keeps going"] * 3)


@pytest.fixture(scope="module")
def sessions() -> dict[str, Case]:
    cs = [
        # generation slower than real time plus jitter: the queue runs dry between deltas, so played < time since the
        # first delta
        Case("truncate", "openai-realtime", ("jitter_ms=30",), CLIENT, {"speed": "0.8"}, LONG, spans=TALK_OVER, T=5.5),
        Case("truncate-24k", "openai-realtime", (), CLIENT, {"speed": "3.0"}, LONG, spans=TALK_OVER, T=5.5),
        Case("no-interrupt", "openai-realtime", (), CLIENT + ",interrupt_response=false", {}, LONG,
             spans=TALK_OVER, T=5.5),
        Case("beta", "openai-realtime", (), CLIENT + ",dialect=beta", {}, SERVED),
        Case("beta-client-ga-server", "openai-realtime", (), CLIENT + ",dialect=beta", {"dialect": "ga"}, SERVED),
        Case("ga-client-beta-server", "openai-realtime", (), CLIENT, {"dialect": "beta"}, SERVED),
        Case("no-auto-response", "openai-realtime", (), CLIENT + ",create_response=false", {}, SERVED),
        Case("semantic", "openai-realtime", (), CLIENT + ",turn_detection=semantic_vad,eagerness=high", {}, SERVED),
    ]
    return {c.name: c for c in run_cases(cs)}


def _truncates(c: Case) -> list[dict]:
    return [json.loads("{}") | r for r in c.records(dir="send", type="conversation.item.truncate")]


def _final_played(c: Case, item_id: str) -> int:
    """16 kHz samples of `item_id` that the offline playout of the trace played."""
    recs = c.records()
    items = c.items()
    pl = playout(items, round(c.T * 16000), c.T)
    audio_recs = [r for r in recs if r["dir"] == "recv" and "audio" in r]
    # received_items emits one audio item per audio record, in order (clear_queue items interleave)
    audio_idx = [i for i, it in enumerate(items) if it.kind == "audio"]
    keep = {audio_idx[k] for k, r in enumerate(audio_recs) if r.get("item_id") == item_id}
    return sum(p.end - p.start for p in pl.placements if p.item in keep)


@pytest.mark.parametrize("name", ["truncate", "truncate-24k"])
def test_truncate_offsets_are_the_played_samples_not_the_wall_clock(sessions: dict[str, Case], name: str) -> None:
    c = sessions[name]
    assert c.reasons_without_pacing() == set(), c.verdict
    session_truncates = c.records()  # the client recorded what it sent
    sent = [r for r in session_truncates if r["dir"] == "send" and r["type"] == "conversation.item.truncate"]
    assert len(sent) == 1
    got = [e for e in c.server.events if e.event == "truncate"]
    assert len(got) == 1
    item_id, ms = got[0].item_id, got[0].audio_end_ms
    played = _final_played(c, item_id)
    assert ms == played_ms(played)  # exactly the milliseconds the playout played of that item
    assert not c.records(dir="recv", type="error")  # and the server accepted it (never more than it sent)
    if name == "truncate":
        # a wall-clock client (speech_started receipt - first delta receipt) would have sent another number
        first = min(r["t"] for r in c.records(dir="recv") if "audio" in r and r.get("item_id") == item_id)
        started = next(r["t"] for r in c.records(dir="recv", type="input_audio_buffer.speech_started")
                       if r["t"] > first)
        wall_ms = int((started - first) * 1000)
        assert abs(wall_ms - ms) > 20, (wall_ms, ms)


def test_server_interrupts_by_itself_so_the_client_does_not_cancel(sessions: dict[str, Case]) -> None:
    c = sessions["truncate-24k"]
    assert not c.records(dir="send", type="response.cancel")
    assert [e.reason for e in c.server.events if e.event == "cancelled"] == ["turn_detected"]
    assert any(r.get("status") == "cancelled" for r in c.records(dir="recv", type="response.done"))
    assert c.records(dir="recv", type="session.updated")[0]["granted_rates"] == [24000, 24000]
    assert {r["audio"][2] for r in c.records(dir="recv") if "audio" in r} == {24000}


def test_without_server_interrupt_the_client_cancels(sessions: dict[str, Case]) -> None:
    c = sessions["no-interrupt"]
    assert c.reasons_without_pacing() == set(), c.verdict
    assert len(c.records(dir="send", type="response.cancel")) == 1
    assert [e.reason for e in c.server.events if e.event == "cancelled"] == ["client_cancelled"]
    assert c.records(dir="recv", type="session.updated")[0]["granted_rates"] == [24000, 24000]


def test_beta_dialect_end_to_end(sessions: dict[str, Case]) -> None:
    c = sessions["beta"]
    assert c.reasons_without_pacing() == set()
    assert c.records(dir="recv", type="response.audio.delta")
    assert not c.records(dir="recv", type="response.output_audio.delta")


def test_the_dialects_are_not_interchangeable(sessions: dict[str, Case]) -> None:
    c = sessions["beta-client-ga-server"]  # the GA server rejects beta fields
    assert c.reasons_without_pacing() == {"server_error"}
    err = c.records(dir="recv", type="error")[0]
    assert err["code"] == "unknown_parameter"
    c = sessions["ga-client-beta-server"]
    assert "server_error" in c.reasons  # the beta server does not know session.type/audio


def test_create_response_false_makes_the_client_ask(sessions: dict[str, Case]) -> None:
    c = sessions["no-auto-response"]
    assert c.reasons_without_pacing() == set()
    asks = c.records(dir="send", type="response.create")
    assert len(asks) == 1 and asks[0]["t"] < REPLY_AT
    assert c.records(dir="recv", type="response.created")


def test_semantic_vad_session_update(sessions: dict[str, Case]) -> None:
    c = sessions["semantic"]
    assert c.reasons_without_pacing() == set()
    assert c.records(dir="recv", type="response.created")


def test_grant_that_does_not_match_is_a_violation() -> None:
    with pytest.raises(ProtocolViolation, match="grant does not match"):
        granted_rates("ga", {"audio": {"input": {"format": {"type": "audio/pcmu"}}, "output": {}}})
    with pytest.raises(ProtocolViolation, match="grant does not match"):
        granted_rates("beta", {"input_audio_format": "g711_ulaw"})
    assert (granted_rates("ga", {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}},
                                           "output": {"format": {"type": "audio/pcm", "rate": 24000}}}})
            == (24000, 24000))
    with pytest.raises(ProtocolViolation, match="24000 Hz only"):  # the GA types allow no other rate
        granted_rates("ga", {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}})


def test_server_rules_for_commit_truncate_and_cancel() -> None:
    """A raw client breaks each rule once; the loopback server answers like the real one."""
    srv = make_server("openai-realtime", SERVED)

    async def talk(url: str) -> list[dict]:
        got: list[dict] = []
        async with websockets.connect(url, compression=None, ping_interval=None, proxy=None) as ws:
            got.append(json.loads(await ws.recv()))
            for ev in ({"type": "input_audio_buffer.commit"},
                       {"type": "conversation.item.truncate", "item_id": "nope", "content_index": 0,
                        "audio_end_ms": 10},
                       {"type": "response.cancel"},
                       {"type": "input_audio_buffer.append", "audio": "not base64!"},
                       {"type": "session.update", "session": {"turn_detection": None, "modalities": ["audio"]}},
                       {"type": "session.update", "session": {"audio": {"input": {"turn_detection": None}}}},
                       {"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
                           "format": {"type": "audio/pcm", "rate": 16000}}}}},
                       {"type": "session.update", "session": {"type": "realtime", "parallel_tool_calls": True,
                                                              "reasoning": {"effort": "low"},
                                                              "audio": {"input": {"turn_detection": None}}}},
                       {"type": "input_audio_buffer.commit"}):
                await ws.send(json.dumps(ev))
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
        return got

    with ServerThread(srv) as th:
        got = asyncio.run(talk(th.url("/v1/realtime")))
    assert got[0]["type"] == "session.created"
    codes = [g.get("error", {}).get("code") or g["type"] for g in got[1:]]
    assert codes == ["commit_not_allowed", "item_not_found", "response_cancel_not_active", "invalid_audio",
                     "unknown_parameter", "missing_required_parameter", "invalid_value", "session.updated",
                     "input_audio_buffer_commit_empty"]
    assert got[7]["error"]["param"] == "session.audio.input.format.rate"  # PCM16 at 24 kHz only
    assert got[8]["session"]["audio"]["input"]["turn_detection"] is None  # SDK-declared fields are accepted


def test_live_playout_matches_the_offline_playout() -> None:
    """The played offsets a client computes live equal what the playout of the same items plays (random runs)."""
    rng = random.Random(0)
    for _ in range(200):
        live = LivePlayout()
        items: list[ReceivedItem] = []
        t = 0.0
        checks = []
        for _k in range(rng.randint(1, 12)):
            t += rng.choice([0.0, 0.01, 0.05, 0.2, 0.7])
            if rng.random() < 0.2:
                key = live.playing_at(t)
                if key is not None:
                    checks.append((key, live.played_samples(key, t), len(items)))
                live.clear(t)
                items.append(ReceivedItem("clear_queue", t, t))
                continue
            rate = rng.choice([16000, 24000])
            n = rng.randint(1, 4000)
            key = f"item{rng.randint(0, 2)}"
            pcm = np.full(n, 100, dtype=np.int16)
            live.add(key, pcm.tobytes(), rate, t)
            items.append(ReceivedItem("audio", t, t, rate, pcm))
            items[-1].detail = {"key": key}
        pl = playout(items, 16000 * 10, 10.0)
        for key, played, upto in checks:
            # offline: samples of `key` placed before the clear at index `upto`, cut by that clear
            offline = sum(p.end - p.start for p in pl.placements
                          if p.item < upto and items[p.item].detail["key"] == key)
            later_cut = any(it.kind == "clear_queue" for it in items[upto + 1:])
            if not later_cut:
                assert played == offline


def test_runner_uses_receipt_stamps_not_the_poll_time() -> None:
    """A wall-clock session's items keep their arrival stamps (the old runner put them on the 80 ms poll grid)."""

    class Stamped:
        name = "stamped"
        wall_clock = True

        def params(self) -> dict:
            return {}

        def version(self) -> str:
            return "test"

        async def open_session(self, info: SampleInfo) -> object:
            class S:
                def __init__(self) -> None:
                    self.sent = False

                async def push_input(self, frame: bytes, t_s: float) -> None:
                    return None

                async def poll_output(self, t_s: float) -> list:
                    if t_s >= 0.16 and not self.sent:
                        self.sent = True
                        return [OutputChunk(b"\x01\x00" * 160, 16000, 0.0, received_at_s=0.1234),
                                ControlEvent("clear_queue", 0.0, {}, received_at_s=0.1301)]
                    return []

                async def close(self) -> None:
                    return None

            return S()

    pcm = user_turn(0.4, spans=((0.1, 0.3),))
    trace = asyncio.run(run_session_async(Stamped(), pcm, SampleInfo(None, None, 0.4, pcm.shape[0])))
    assert trace.clock == "wall"
    assert [round(i.received_at_s, 4) for i in trace.items] == [0.1234, 0.1301]
    assert len(trace.sends) == 5 and all(done >= start for _, start, done in trace.sends)
