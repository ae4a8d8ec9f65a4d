"""The webrtc client against its loopback bot (aiortc on both ends, in this process): SmallWebRTC offer/answer,
20 ms input frames on their slots, RTVI before slot 0, the jitter buffer's hold on every received frame, the
bot's barge-in, and every fault with its reason. All sessions at once; T = 4 s, the user speaks 0.3-1.3 s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.server import ServeConfig
from duplexeval.systems.net.trace import INPUT_PACING_LATE, received_items, verdict
from duplexeval.systems.net.transport import CONNECT_RETRIES
from duplexeval.systems.playout import playout
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import gather, serving, user_turn

pytest.importorskip("aiortc")
from duplexeval.systems.net.webrtc_server import WebRtcLoopback  # noqa: E402

T = 4.0
SERVED = "turn-based:vad=energy,text=hello there this is my answer to you"
CLIENT = "stall_s=1.5,open_timeout_s=8"


@dataclass
class RtcCase:
    name: str
    faults: tuple[str, ...] = ()
    client: str = ""
    spans: tuple[tuple[float, float], ...] = ((0.3, 1.3),)
    no_server: bool = False
    trace: Any = None
    reasons: set[str] = field(default_factory=set)
    server: Any = None

    def records(self, **match: Any) -> list[dict[str, Any]]:
        rows = [r.to_json() for r in self.trace.wire.records]
        return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _run(cases: list[RtcCase]) -> dict[str, RtcCase]:
    for c in cases:
        if not c.no_server:
            c.server = WebRtcLoopback(ServeConfig(make_system(SERVED), parse_faults(c.faults)))

    async def one(c: RtcCase, url: str) -> None:
        system = make_system(f"webrtc:url={url},{CLIENT}" + (f",{c.client}" if c.client else ""))
        pcm = user_turn(T, c.spans)
        c.trace = await run_session_async(system, pcm, SampleInfo("candor_turn_taking", c.name, T, pcm.shape[0]))
        c.reasons = set(verdict(c.trace.wire.records, T, 1.5).reasons) - {INPUT_PACING_LATE}

    with serving([c.server for c in cases]) as threads:
        urls = ["http://127.0.0.1:9/api/offer" if th is None else th.url("/api/offer") for th in threads]
        gather(one(c, u) for c, u in zip(cases, urls))
    return {c.name: c for c in cases}


@pytest.fixture(scope="module")
def cases() -> dict[str, RtcCase]:
    """In groups of at most three sessions: aiortc runs DTLS, SRTP and Opus for both ends in this one process
    (about a sixth of a core per end, measured), which a shared 2-core machine cannot give nine at once."""
    groups = [
        [RtcCase("clean"), RtcCase("busy-fail", faults=(f"busy={CONNECT_RETRIES + 1}",)),
         RtcCase("refused", no_server=True)],
        [RtcCase("barge", spans=((0.3, 1.3), (2.2, 3.2))), RtcCase("malformed", faults=("malformed@2.4",))],
        [RtcCase("disconnect", faults=("disconnect@2.4",)), RtcCase("error", faults=("error@2.4",))],
        [RtcCase("oversize", faults=("oversize@1.0",), client="max_size=4096"),
         RtcCase("stall", faults=("stall@2.0",))],
    ]
    out: dict[str, RtcCase] = {}
    for group in groups:
        out.update(_run(group))
    return out


def test_a_clean_call(cases: dict[str, RtcCase]) -> None:
    c = cases["clean"]
    assert c.reasons == set()
    assert [r["type"] for r in c.records(dir="send")][:2] == ["signalling", "client-ready"]
    ready = c.records(rtvi="bot-ready")
    assert len(ready) == 1 and ready[0]["t"] < 0
    sends = c.records(dir="send", type="audio")
    assert len(sends) == 50 * 4 and [r["slot_s"] for r in sends[:4]] == [0.0, 0.02, 0.04, 0.06]
    timing = [r["rtvi"] for r in c.records(timing=True)]
    assert timing[:3] == ["user-started-speaking", "user-stopped-speaking", "bot-started-speaking"]
    items = received_items(c.trace.wire.records, c.trace.wire.pcm())
    first = min(it.received_at_s for it in items if it.kind == "audio")
    assert 2.0 < first < 2.8  # the reply (due ~2.0 s) after both jitter buffers and the codec


def test_every_received_frame_says_how_long_the_jitter_buffer_held_it(cases: dict[str, RtcCase]) -> None:
    c = cases["clean"]
    frames = c.records(dir="recv", type="audio")
    held = [r for r in frames if "jb_s" in r]
    assert len(held) >= 0.95 * len(frames) > 150
    assert all(r["jb_s"] >= 0 and r["decode_s"] >= 0 for r in held)
    jb = c.records(event="jitter_buffer")[0]
    assert ((jb["capacity"], jb["prefetch"], jb["ptime_ms"]) == (16, 4, 20)
            and 0.9 * len(held) <= jb["frames"] <= len(held))
    assert 0.04 <= jb["held_median_s"] <= 0.2  # prefetch 4 x 20 ms, plus whatever the loaded machine adds
    uplink = c.server.uplink_summary()
    assert uplink.frames > 150 and uplink.held_median_s is not None and 0.04 <= uplink.held_median_s <= 0.2


def test_the_bots_barge_in_stops_its_audio(cases: dict[str, RtcCase]) -> None:
    c = cases["barge"]
    assert c.reasons == set()
    stopped = c.records(rtvi="bot-stopped-speaking")
    assert len(stopped) == 1
    t_stop = stopped[0]["t"]
    items = received_items(c.trace.wire.records, c.trace.wire.pcm())
    audio = playout(items, round(T * 16000)).audio
    # what was already in flight still plays (the message overtakes the audio, which waits in the jitter
    # buffer): the bot was speaking around the message, its last speech arrives within the buffer's hold
    # (and a frame), and our playout ends one 20 ms frame after that
    jb = c.records(event="jitter_buffer")[0]
    spoken = [r for r in c.records(dir="recv", type="audio") if "audio" in r]
    assert any(abs(r["t"] - t_stop) < 0.3 for r in spoken)
    last = max(spoken, key=lambda r: r["t"])
    assert last["t"] - t_stop <= jb["held_p90_s"] + 0.06
    placed = playout(items, round(T * 16000)).placements
    stop = max(p.end for p in placed if items[p.item].emitted_at_s <= last["t"])  # everything that had arrived
    assert not np.any(audio[stop:])  # nothing plays after the last speech the bot sent


@pytest.mark.parametrize(("name", "reasons"), [
    ("disconnect", {"disconnected"}),
    ("error", {"server_error"}),
    ("malformed", {"protocol_violation"}),
    ("oversize", {"protocol_violation"}),
    ("stall", {"timeout"}),
    ("busy-fail", {"connect_failed"}),
    ("refused", {"connect_failed"}),
])
def test_every_fault_gets_its_reason(cases: dict[str, RtcCase], name: str, reasons: set[str]) -> None:
    c = cases[name]
    assert c.reasons == reasons
    if name == "busy-fail":
        assert [r["result"] for r in c.records(event="connect_attempt")] == ["http_503"] * (CONNECT_RETRIES + 1)
    if name == "refused":
        assert c.records(event="connect_attempt")[0]["result"] == "refused"
