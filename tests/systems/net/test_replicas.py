"""Replicas (`url=ws://a,ws://b`): slots per replica, the spread, retries on a failed replica, the trace's record."""

from __future__ import annotations

import asyncio
import socket

import pytest

from duplexeval.errors import InputError
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.replicas import NoReplica, ReplicaPool, forget_pools, safe_url
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import CONNECT_FAILED, DISCONNECTED, verdict
from duplexeval.systems.registry import make_system
from tests.helpers.net import SERVED, user_turn

T = 1.2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_pool_caps_spreads_and_prefers_healthy_replicas() -> None:
    async def main() -> None:
        pool = ReplicaPool(["ws://a/x", "ws://b/x"], cap=1)
        a = await pool.acquire()
        b = await pool.acquire()
        assert {a.replica.index, b.replica.index} == {0, 1}  # least loaded first: one each
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.05)
        assert not waiter.done()  # both full: the third waits for a slot
        a.release()
        c = await asyncio.wait_for(waiter, 1.0)
        assert c.replica.index == a.replica.index and c.queued_s >= 0.04
        a.release()  # idempotent: the slot is not freed twice
        assert [r.active for r in pool.state()] == [1, 1]
        pool.outcome(b.replica, failed=True)  # b is suspect now
        b.release()
        c.release()
        d = await pool.acquire()
        assert d.replica.index == 0  # the healthy one, although both are free
        e = await asyncio.wait_for(pool.acquire(exclude=[0]), 1.0)  # only the suspect one is left to this sample
        assert e.replica.index == 1
        with pytest.raises(NoReplica):
            await pool.acquire(exclude=[0, 1])

    asyncio.run(main())


def test_urls_are_checked_each_and_the_cap_defaults_per_protocol() -> None:
    moshi = make_system("moshi:url=ws://127.0.0.1:1/api/chat,ws://127.0.0.1:2/api/chat")
    assert moshi.urls() == ["ws://127.0.0.1:1/api/chat", "ws://127.0.0.1:2/api/chat"]  # type: ignore[attr-defined]
    assert moshi.sessions_per_url() == 1  # type: ignore[attr-defined]
    assert make_system("ws-pcm:url=ws://h:1/ws,ws://h:2/ws").sessions_per_url() is None  # type: ignore[attr-defined]
    assert make_system("ws-pcm:url=ws://h:1/ws,max_sessions_per_url=3").sessions_per_url() == 3  # type: ignore[attr-defined]
    for bad, why in (("ws-pcm:url=ws://h:1/ws,http://h:2/ws", "ws:// or wss://"),
                     ("ws-pcm:url=ws://h:1/ws,ws://h:1/ws", "twice"),
                     ("ws-pcm:url=ws://h:1/ws,ws://h:2/ws?token=x", "credential"),
                     ("ws-pcm:url=ws://h:1/ws,max_sessions_per_url=-1", "max_sessions_per_url"),
                     ("ws-pcm:url=ws://h:1/ws,replica_retries=99", "replica_retries")):
        with pytest.raises(InputError, match=why):
            make_system(bad)
    assert safe_url("wss://user:pw@h:1/v1/realtime?model=m&x=1") == "wss://h:1/v1/realtime"


def _servers(n: int, faults: list[list[str]] | None = None) -> list[ServerThread]:
    out = []
    for k in range(n):
        srv = make_server("ws-pcm", SERVED, parse_faults((faults or [[]] * n)[k]))
        out.append(ServerThread(srv).start())
    return out


def _run(spec: str, n: int, state: list[object] | None = None) -> list[object]:
    system = make_system(spec)
    pcm = user_turn(T, spans=((0.2, 0.7),))

    async def main() -> list[object]:
        return list(await asyncio.gather(*(system.run_sample(pcm, SampleInfo("s", f"id{i}", T, pcm.shape[0]))  # type: ignore[attr-defined]
                                           for i in range(n))))

    traces = asyncio.run(main())
    if state is not None:
        state.extend(system.pool().state())  # type: ignore[attr-defined]
    return traces


def test_sessions_spread_with_at_most_the_cap_on_each_replica() -> None:
    forget_pools()
    servers = _servers(2)
    try:
        urls = ",".join(th.url("/ws") for th in servers)
        state: list[object] = []
        traces = _run(f"ws-pcm:url={urls},max_sessions_per_url=1", 4, state)
    finally:
        for th in servers:
            th.stop()
    assert [(s.peak, s.sessions, s.active) for s in state] == [(1, 2, 0), (1, 2, 0)]  # type: ignore[attr-defined]
    assert [th.server.connections for th in servers] == [2, 2]
    for tr in traces:
        recs = tr.wire.records  # type: ignore[attr-defined]
        rep = [r.to_json() for r in recs if r.event == "replica"]
        assert len(rep) == 1 and rep[0]["of"] == 2 and rep[0]["attempt"] == 1
        assert rep[0]["url"] == servers[rep[0]["replica"]].url("/ws")
        v = verdict(recs, T, 10.0)
        assert v.replica is not None and v.replica.replica == rep[0]["replica"]
        assert not set(v.reasons) - {"input_pacing_late"}
    queued = sorted(r.get("queued_s") for tr in traces for r in tr.wire.records if r.event == "replica")  # type: ignore[attr-defined]
    assert queued[:2] == [pytest.approx(0, abs=0.05)] * 2 and queued[2] > 0.5  # the later two waited a session


def test_a_dead_replica_s_samples_run_on_the_others_then_it_is_avoided() -> None:
    forget_pools()
    servers = _servers(1)
    dead = f"ws://127.0.0.1:{_free_port()}/ws"
    try:
        traces = _run(f"ws-pcm:url={dead},{servers[0].url('/ws')},max_sessions_per_url=1", 2)
    finally:
        servers[0].stop()
    reps = [[r.to_json() for r in tr.wire.records if r.event in ("replica", "replica_retry")] for tr in traces]  # type: ignore[attr-defined]
    for tr, rs in zip(traces, reps):
        assert not set(verdict(tr.wire.records, T, 10.0).reasons) - {"input_pacing_late"}  # type: ignore[attr-defined]
        assert rs[-1]["event"] == "replica" and rs[-1]["replica"] == 1
    retried = [rs for rs in reps if rs[0]["event"] == "replica_retry"]
    assert len(retried) == 1  # the first sample tried the dead replica once; the second was sent elsewhere
    r0 = retried[0][0]
    assert r0["replica"] == 0 and r0["reasons"] == [CONNECT_FAILED] and "refused" in r0["what"]
    assert retried[0][1]["attempt"] == 2


def test_a_replica_that_drops_its_session_and_replicas_that_all_fail() -> None:
    forget_pools()
    servers = _servers(2, [["disconnect@0.3"], []])
    try:
        (tr,) = _run(f"ws-pcm:url={servers[0].url('/ws')},{servers[1].url('/ws')}", 1)
    finally:
        for th in servers:
            th.stop()
    retry = [r.to_json() for r in tr.wire.records if r.event == "replica_retry"]  # type: ignore[attr-defined]
    assert [(r["replica"], r["reasons"]) for r in retry] == [(0, [DISCONNECTED])]
    assert retry[0]["what"] == "closed by the server (code 1011)"
    assert DISCONNECTED not in verdict(tr.wire.records, T, 10.0).reasons  # type: ignore[attr-defined]

    forget_pools()
    dead = [f"ws://127.0.0.1:{_free_port()}/ws" for _ in range(3)]
    (tr,) = _run(f"ws-pcm:url={','.join(dead)},replica_retries=1", 1)
    recs = tr.wire.records  # type: ignore[attr-defined]
    assert [r.get("replica") for r in recs if r.event == "replica_retry"] == [0]  # bounded: 1 retry, not 2
    assert [r.get("attempt") for r in recs if r.event == "replica"] == [2]
    assert verdict(recs, T, 10.0).reasons == [CONNECT_FAILED]  # then recorded as failed
