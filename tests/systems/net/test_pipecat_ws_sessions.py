"""The pipecat-ws client against its loopback bot: RTVI client-ready / bot-ready before slot 0, the timing
messages in the trace, InterruptionFrame cutting playout at its receipt, and every fault with its reason.
All sessions at once (one server thread each); T = 4.5 s, the user speaks 0.3-1.3 s (and 2.4-3.3 s)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import verdict
from duplexeval.systems.net.transport import CONNECT_RETRIES
from duplexeval.systems.playout import playout
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import Case, run_cases, user_turn

T = 4.5
BARGE = ((0.3, 1.3), (2.4, 3.3))
CLIENT = "stall_s=3.0,open_timeout_s=5"
MID = 2.4


def _case(name: str, *, faults: tuple[str, ...] = (), client: str = "", options: dict | None = None,
          spans: tuple[tuple[float, float], ...] = ((0.3, 1.3),)) -> Case:
    return Case(name, "pipecat-ws", faults, CLIENT + (f",{client}" if client else ""), options=options or {},
                spans=spans, T=T)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    cs = [
        _case("clean"),
        _case("barge", spans=BARGE, options={"pace": "false"}),  # the reply queued at the client
        _case("barge-paced", spans=BARGE),
        _case("rate-24k", client="rate=24000,chunk_ms=40"),
        _case("not-ready", options={"bot_ready": "false"}, client="ready_timeout_s=1.5"),
        _case("no-rtvi", options={"bot_ready": "false"}, client="client_ready=false,wait_ready=false"),
        _case("disconnect", faults=(f"disconnect@{MID}",)),
        _case("error", faults=(f"error@{MID}",)),
        _case("malformed", faults=(f"malformed@{MID}",)),
        _case("oversize", faults=(f"oversize@{MID}",), client="max_size=262144"),
        _case("busy-fail", faults=(f"busy={CONNECT_RETRIES + 1}",)),
        _case("jitter", faults=("jitter_ms=40",)),
    ]
    return {c.name: c for c in run_cases(cs)}


def test_client_ready_and_bot_ready_come_before_the_first_input(cases: dict[str, Case]) -> None:
    c = cases["clean"]
    assert c.reasons_without_pacing() == set()
    first = c.records(dir="send")
    assert first[0]["type"] == "client-ready" and first[0]["t"] < 0
    ready = c.records(rtvi="bot-ready")
    assert len(ready) == 1 and ready[0]["t"] < 0  # the wait is before slot 0: in no latency
    assert c.records(event="paid", what="bot-ready")
    audio = c.records(dir="send", type="audio")
    assert [r["slot_s"] for r in audio[:4]] == [0.0, 0.02, 0.04, 0.06]
    timing = [r["rtvi"] for r in c.records(timing=True)]
    assert timing[:3] == ["user-started-speaking", "user-stopped-speaking", "bot-started-speaking"]
    started = c.records(rtvi="user-started-speaking")[0]["t"]
    assert 0.3 < started < 1.0  # the served listener's onset, as the bot reported it


def test_interruption_frame_cuts_playout_at_its_receipt(cases: dict[str, Case]) -> None:
    c = cases["barge"]
    assert c.reasons_without_pacing() == set()
    cuts = c.records(type="interruption")
    assert len(cuts) == 1 and cuts[0]["control"] == "clear_queue"
    t = cuts[0]["t"]
    assert 2.45 < t < 3.7
    pl = playout(c.items(), round(T * 16000))
    cut = round(t * 16000)
    later = [it.received_at_s for it in c.items() if it.kind == "audio" and it.received_at_s > t]
    stop = round(min(later) * 16000) if later else pl.audio.shape[0]
    # the reply to the second turn comes later
    assert np.any(pl.audio[cut - 320 : cut]) and not np.any(pl.audio[cut:stop])
    assert pl.stats.dropped_by_clear_s > 0.2
    assert c.records(rtvi="bot-stopped-speaking")


def test_a_paced_bot_withdraws_the_rest_at_the_interruption(cases: dict[str, Case]) -> None:
    c = cases["barge-paced"]
    assert c.reasons_without_pacing() == set()
    t = c.records(type="interruption")[0]["t"]
    pl = playout(c.items(), round(T * 16000))
    assert 0.0 < pl.stats.dropped_by_clear_s < 0.2  # only the lead was queued
    after = [r["t"] for r in c.records(dir="recv", type="audio") if r["t"] > t]
    assert not after or min(after) > t + 0.5  # nothing of the interrupted reply follows it


def test_other_rates(cases: dict[str, Case]) -> None:
    c = cases["rate-24k"]
    assert c.reasons_without_pacing() == set()
    sends = c.records(dir="send", type="audio")
    assert len(sends) == 57 * 2 and sends[1]["slot_s"] == 0.04


@pytest.mark.parametrize(("name", "reasons"), [
    ("not-ready", {"timeout"}),
    ("no-rtvi", set()),
    ("disconnect", {"disconnected"}),
    ("error", {"server_error"}),
    ("malformed", {"protocol_violation"}),
    ("oversize", {"protocol_violation"}),
    ("busy-fail", {"connect_failed"}),
    ("jitter", set()),
])
def test_every_fault_gets_its_reason(cases: dict[str, Case], name: str, reasons: set[str]) -> None:
    c = cases[name]
    assert c.reasons_without_pacing() == reasons
    if name == "not-ready":
        assert c.records(event="handshake_timeout")[0]["what"] == "bot-ready"
        assert not c.records(dir="send", type="audio")  # no input before the bot is ready
    if name == "no-rtvi":
        assert not c.records(type="client-ready") and c.records(dir="send", type="audio")
    if name == "malformed":
        assert "not a pipecat Frame" in c.verdict.first_problem.what
    if name == "error":
        assert "fault injection" in c.verdict.first_problem.what


def test_a_single_client_server_refuses_the_second_connection() -> None:
    srv = make_server("pipecat-ws", "turn-based:vad=energy", parse_faults([]), options={"single_client": "true"})
    with ServerThread(srv) as th:
        system = make_system(f"pipecat-ws:url={th.url('/ws')},{CLIENT}")
        pcm = user_turn(2.0)

        async def both() -> list:
            return await asyncio.gather(*(run_session_async(system, pcm, SampleInfo("candor_turn_taking", str(i), 2.0,
                                                                                    pcm.shape[0])) for i in range(2)))

        traces = asyncio.run(both())
    reasons = sorted(tuple(verdict(t.wire.records, 2.0, 3.0).reasons) for t in traces)
    assert reasons[0] in ((), ("input_pacing_late",))
    closed = [r.to_json() for t in traces for r in t.wire.records if r.event == "closed" and r.get("by") == "server"]
    assert len(closed) == 1 and closed[0]["code"] == 1013
