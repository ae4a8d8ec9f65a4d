"""Phase spreading of concurrent network sessions: each session's slot 0 is in a free part of the 80 ms frame.

The planner is pure (claims at given monotonic times); the end-to-end case runs six ws-pcm sessions at
once on one loop against a loopback server, blocks the loop for 0.3 s mid-run, and checks that every
session's packets stay on its own absolute schedule (origin_k + i * 80 ms) and catch up after the block.
"""

from __future__ import annotations

import asyncio
import itertools
import time

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import phases
from duplexeval.systems.net.phases import PhasePlanner
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import PATHS, SERVED, user_turn

P = 0.08


def _circular_gaps(ph: list[float]) -> list[float]:
    ph = sorted(ph)
    return [b - a for a, b in itertools.pairwise([*ph, ph[0] + P])]


def test_a_lone_session_starts_at_once() -> None:
    p = PhasePlanner()
    tok, origin = p.claim(1234.5678)
    assert origin == 1234.5678
    p.release(tok)
    assert p.phases() == []
    _, again = p.claim(99.0)
    assert again == 99.0  # released: the next session is alone again


def test_claims_spread_the_phases_across_the_frame() -> None:
    for n in (2, 3, 5, 8, 32, 128):
        p = PhasePlanner()
        now = 500.0
        for _ in range(n):
            _, origin = p.claim(now)
            assert now <= origin < now + P  # at most one frame later
            now += 0.0013  # handshakes end at slightly different times
        gaps = _circular_gaps(p.phases())
        assert min(gaps) >= P / (2 * n) - 1e-9
        if n & (n - 1) == 0:  # a power of two fills the frame evenly
            assert max(gaps) - min(gaps) < 1e-9


def test_a_released_phase_is_reused() -> None:
    p = PhasePlanner()
    toks = [p.claim(10.0) for _ in range(4)]  # phases 0, 40, 20, 60 ms after 10.0
    freed = toks[2][1] % P
    p.release(toks[2][0])
    _, origin = p.claim(10.05)
    assert abs(origin % P - freed) < 1e-9


def test_disabled_planner_starts_every_session_at_once() -> None:
    p = PhasePlanner(enabled=False)
    assert [p.claim(7.0)[1] for _ in range(5)] == [7.0] * 5


def test_concurrent_sessions_get_distinct_phases_and_keep_their_schedule() -> None:
    n, T = 6, 2.4
    srv = make_server("ws-pcm", SERVED, [])
    th = ServerThread(srv).start()
    url = th.url(PATHS["ws-pcm"])
    left: list[float] = []

    async def one(i: int):
        system = make_system(f"ws-pcm:url={url}")
        pcm = user_turn(T, seed=i)
        return await run_session_async(system, pcm, SampleInfo("candor_turn_taking", str(i), T, pcm.shape[0]))

    async def main():
        asyncio.get_running_loop().call_later(0.6, time.sleep, 0.3)  # a stall of the whole loop mid-run
        out = await asyncio.gather(*(one(i) for i in range(n)))
        left.extend(phases.planner().phases())
        return out

    try:
        traces = asyncio.run(main())
    finally:
        th.stop()
    assert left == []  # every session released its phase
    origins = [tr.wire.origin for tr in traces]
    assert min(_circular_gaps([o % P for o in origins])) >= P / (2 * n) - 1e-6
    for tr in traces:
        sends = [r.to_json() for r in tr.wire.records if r.dir == "send" and r.slot_s is not None]
        assert [r["seq"] for r in sends] == list(range(30))
        assert [r["slot_s"] for r in sends] == [round(i * P, 6) for i in range(30)]
        late = [r["t"] - r["slot_s"] for r in sends]  # t is seconds after this session's own origin
        assert min(late) >= -1e-6  # never early
        assert max(late) > 0.15  # the block delayed this session too
        tail = [x for r, x in zip(sends, late) if r["slot_s"] >= 1.6]
        assert min(tail) < 0.08  # and it caught up (absolute schedule, no drift)


def test_a_send_the_server_never_reads_times_out_within_its_bound() -> None:
    """send_bounded (asyncio.timeout on 3.11+, wait_for on 3.10) gives up when the socket stops draining."""
    import websockets

    from duplexeval.systems.net.transport import send_bounded

    async def main() -> tuple[list[bool], float]:
        stop = asyncio.Event()

        async def handler(ws: object) -> None:
            await stop.wait()  # never reads: the server's queue, then both TCP buffers fill up

        async with websockets.serve(handler, "127.0.0.1", 0, max_queue=1, max_size=None, compression=None,
                                    close_timeout=0.1) as srv:
            port = srv.sockets[0].getsockname()[1]
            ws = await websockets.connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None,
                                          ping_interval=None, close_timeout=0.1)
            blob = bytes(1 << 20)
            results: list[bool] = []
            t0 = time.monotonic()
            while len(results) < 64 and (not results or results[-1]):
                results.append(await asyncio.wait_for(send_bounded(ws, blob, 0.3), 5.0))  # outer guard: a hang fails
            took = time.monotonic() - t0
            ws.transport.abort()
            stop.set()
            return results, took

    results, took = asyncio.run(main())
    assert results[-1] is False and all(results[:-1])  # the sends that drained were True, then one timed out
    assert took < 10


def test_wire_length_is_the_utf8_size() -> None:
    from duplexeval.systems.net.session import wire_len

    assert wire_len('{"audio": "QUJD"}') == 17
    assert wire_len("héllo") == len("héllo".encode()) == 6  # non-ASCII text: its UTF-8 bytes
    assert wire_len(b"\x00\x01\x02") == 3
