"""The moshi client against each flavor's server: eligible, nothing violated, replies received as sent.

Every flavor of the loopback server runs in a thread of this process (one monotonic clock), records when
it sent each message, and the client's trace must place every audio message within 40 ms of that send
time; the reply's first audio must be the message the server sent for the reply. `flavor=auto` must
tell the Rust backend from the Python servers by its handshake.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.replicas import forget_pools
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import received_items, verdict
from duplexeval.systems.playout import playout
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import REPLY_AT, SERVED, T, user_turn

CASES = [  # (server flavor, client parameters)
    ("kyutai", "flavor=kyutai"),
    ("rust", "flavor=rust"),
    ("personaplex", "flavor=personaplex,voice_prompt=NATF2.pt,text_prompt=You enjoy a good conversation."),
    ("kyutai", "flavor=auto"),
    ("rust", "flavor=auto"),
    ("personaplex", "flavor=auto,voice_prompt=NATM1.pt"),
]


def _run(flavor: str, client: str) -> dict[str, Any]:
    """One session against a fresh server of `flavor` (one at a time: timing is what is checked)."""
    forget_pools()
    srv = make_server("moshi", SERVED, options={"flavor": flavor, "prompt_ms": "200"})
    srv.record_sends = True
    pcm = user_turn()
    with ServerThread(srv) as th:
        system = make_system(f"moshi:url={th.url(mw.CHAT_PATH)},{client}")
        trace = asyncio.run(run_session_async(system, pcm, SampleInfo("candor_turn_taking", "x", T, pcm.shape[0])))
    return {"trace": trace, "sends": srv.sends}


def _run_all() -> list[dict[str, Any]]:
    return [_run(flavor, client) for flavor, client in CASES]


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return _run_all()


def test_every_flavor_is_eligible_without_violations(runs: list[dict[str, Any]]) -> None:
    for (flavor, client), run in zip(CASES, runs):
        v = verdict(run["trace"].wire.records, T, 10.0)
        recs = [r.to_json() for r in run["trace"].wire.records]
        assert not set(v.reasons) - {"input_pacing_late"}, (flavor, client, v.reasons, v)
        assert not [r for r in recs if r.get("violation")], (flavor, client)
        (hs,) = [r for r in recs if r.get("event") == "handshake"]
        assert hs["bytes"] == (9 if flavor == "rust" else 1)
        assert hs["detected"] == ("rust" if flavor == "rust" else "python") and "mismatch" not in hs
        assert hs["lead_frames"] == (1 if flavor == "kyutai" or (client.startswith("flavor=auto") and flavor != "rust")
                                     else 0)
        pages = [r.get("pages") for r in recs if r.get("type") == "audio" and r["dir"] == "recv"]
        per = 1 if flavor == "rust" else 2  # the first message also carries the two header pages
        assert pages[0] == per + 2 and set(pages[1:]) == {per}, (flavor, client)
        if flavor == "rust":  # the metadata before the handshake: recorded and discarded
            assert v.discarded == {"metadata": 1}
        else:
            assert not v.discarded and "discarded" not in v.to_json()
        if flavor == "personaplex":
            assert hs["handshake_s"] > 0.15  # the prompts (200 ms) ran before it, and that wait lies before slot 0
            assert all(r["t"] < 0 for r in recs if r.get("type") == "handshake")


def test_audio_is_received_where_the_server_sent_it(runs: list[dict[str, Any]]) -> None:
    for (flavor, client), run in zip(CASES, runs):
        wire = run["trace"].wire
        got = [r.to_json() for r in wire.records if r.dir == "recv" and r.type == "audio"]
        sent = [(t, m) for _, t, m in run["sends"] if isinstance(m, bytes) and m[:1] == b"\x01"]
        assert len(sent) == len(got) > 0, (flavor, client)
        lags = [r["t"] + wire.origin - t for r, (t, _) in zip(got, sent)]
        assert all(r["bytes"] == len(m) for r, (_, m) in zip(got, sent))  # the same messages, in order
        assert min(lags) >= 0 and float(np.median(lags)) < 0.010, (flavor, client, lags)
        # the reply: its first queued message (silence frames are not queued), played from its receipt
        items = received_items(wire.records, wire.pcm())
        first = next(it for it in items if it.pcm is not None)
        k = next(i for i, r in enumerate(got) if r["t"] == first.received_at_s)
        assert lags[k] < 0.040, (flavor, client, lags[k])  # the reply's onset: within 40 ms of its send time
        assert REPLY_AT - 0.1 < first.received_at_s < REPLY_AT + 0.3, (flavor, client, first.received_at_s)
        pl = playout(items, round(T * 16000), T)
        onset = int(np.argmax(pl.audio != 0))
        lead = int(np.argmax(first.pcm != 0))  # the chunk's own leading zeros
        assert abs(onset - (round(first.received_at_s * 16000) + lead)) <= 1, (
            flavor, client, onset, first.received_at_s)


def test_a_conversation_queued_behind_the_server_s_lock_waits_before_slot_0() -> None:
    """Two sessions at once on one Kyutai-like server (the client's cap raised to 2, so the server's lock
    queues the second): the second waits about the first's length for its handshake, that wait lies before
    input slot 0, and its reply is received where an unqueued session's is."""
    forget_pools()
    srv = make_server("moshi", SERVED, options={"flavor": "kyutai"})
    pcm = user_turn()
    with ServerThread(srv) as th:
        system = make_system(f"moshi:url={th.url(mw.CHAT_PATH)},flavor=kyutai,max_sessions_per_url=2")

        async def both() -> list[Any]:
            return list(await asyncio.gather(*(run_session_async(system, pcm,
                                                                 SampleInfo("candor_turn_taking", k, T, pcm.shape[0]))
                                               for k in ("a", "b"))))

        traces = asyncio.run(both())
    waits = []
    for tr in traces:
        recs = tr.wire.records
        v = verdict(recs, T, 10.0)
        assert not set(v.reasons) - {"input_pacing_late"}, (v.reasons, v)
        (hs,) = [r.to_json() for r in recs if r.event == "handshake"]
        assert hs["t"] < 0  # the wait is before slot 0: in no latency
        waits.append(hs["handshake_s"])
        first = next(it for it in received_items(tr.wire.records, tr.wire.pcm()) if it.pcm is not None)
        assert REPLY_AT - 0.1 < first.received_at_s < REPLY_AT + 0.3, first.received_at_s
    assert min(waits) < 0.5 and max(waits) > T - 0.5, waits  # one waited for the other's whole conversation
