"""Capture accuracy of the telephony, pipecat-ws and webrtc clients on loopback: our receipt of each reply's first
audio against the moment the server put it on the wire.

Each transport's loopback bot (`duplexeval serve telephony | pipecat-ws | webrtc`, here in a thread of this process,
so client and server share one monotonic clock) serves `turn-based` with the energy detector and a short reply; the
user speaks twice per session (0.3-1.3 s and 3.3-4.3 s, T = 7 s), so every session has two reply onsets. The server
logs the monotonic time it sent each audio message (WebRTC: handed each reply's first 20 ms frame to its Opus
encoder); the client's trace has the receipt (its origin + t). Reported per transport: receipt - send of each reply
onset, median / p90 / max, and for webrtc also after the client's own jitter-buffer hold of that frame (`jb_s`, and
`decode_s`, the decoder's hand-over), which is what the target is stated after, and what both receive jitter buffers
held over every frame: the client's (downlink) and the loopback bot's (uplink, stamped the same way). Targets:
telephony and pipecat-ws within 20 ms p90; webrtc within 40 ms p90 after its jitter-buffer delay.

    .venv/bin/python benchmarks/pipecat_transport_timing.py  # 4 sessions per transport, one after another
    .venv/bin/python benchmarks/pipecat_transport_timing.py --sessions 8 --concurrency 4
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.systems.base import SampleInfo  # noqa: E402
from duplexeval.systems.net.faults import Faults  # noqa: E402
from duplexeval.systems.net.server import ServeConfig, ServerThread, make_server  # noqa: E402
from duplexeval.systems.registry import make_system  # noqa: E402
from duplexeval.systems.runner import run_session_async  # noqa: E402

SERVED = "turn-based:vad=energy,text=hello there this is my answer to you"
T = 7.0
SPANS = ((0.3, 1.3), (3.3, 4.3))


def user(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros(int(T * 16000))
    for a, b in SPANS:
        i, j = int(a * 16000), int(b * 16000)
        x[i:j] = rng.standard_normal(j - i) * 0.1
    return np.clip(np.rint(x * 32767), -32768, 32767).astype(np.int16)


def _q(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, int(np.ceil(q * len(s))) - 1)]


def onsets(records: list[dict], origin: float, gap_s: float = 0.3) -> list[tuple[int, float, dict]]:
    """(audio message index, receipt monotonic, record) of each reply's first audio: after a receipt gap of gap_s."""
    out, last, k = [], None, 0
    for rec in records:
        if rec["dir"] != "recv" or "audio" not in rec:
            continue
        mono = origin + float(rec["t"])
        if last is None or mono - last > gap_s:
            out.append((k, mono, rec))
        last = mono
        k += 1
    return out


async def sessions(spec: str, n: int, concurrency: int) -> list:
    system = make_system(spec)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int):
        async with sem:
            pcm = user(i)
            return await run_session_async(system, pcm, SampleInfo("candor_turn_taking", str(i), T, pcm.shape[0]))

    return await asyncio.gather(*(one(i) for i in range(n)))


def measure(transport: str, n: int, concurrency: int) -> None:
    if transport == "webrtc":
        from duplexeval.systems.net.webrtc_server import WebRtcLoopback

        server = WebRtcLoopback(ServeConfig(make_system(SERVED), Faults()))
        path, client = "/api/offer", "webrtc"
    else:
        server = make_server(transport, SERVED, Faults())
        path, client = "/ws", transport
    server.send_log = []
    with ServerThread(server) as th:
        traces = asyncio.run(sessions(f"{client}:url={th.url(path)}", n, concurrency))
    sent = sorted(server.send_log)
    delays, resid, late = [], [], 0.0
    for tr in traces:  # one after another (concurrency 1): a session's sends lie within its own window
        origin = tr.wire.origin
        sends = [r.to_json() for r in tr.wire.records if r.dir == "send" and r.slot_s is not None]
        late = max(late, max(r["t"] - r["slot_s"] for r in sends))
        mine = [x for x in sent if origin - 1.0 <= x <= origin + T + 1.0]
        for k, mono, rec in onsets([r.to_json() for r in tr.wire.records], origin):
            if transport == "webrtc":  # the server logs each reply's first frame; match the latest before the receipt
                before = [x for x in mine if x <= mono]
                if not before:
                    continue
                send = before[-1]
            else:  # WebSockets keep order: the k-th audio message received is the k-th sent
                if k >= len(mine):
                    continue
                send = mine[k]
            d = mono - send
            delays.append(d)
            if "jb_s" in rec:
                resid.append(d - rec["jb_s"])
    if not delays:
        print(f"{transport}: no onsets")
        return
    ms = [d * 1000 for d in delays]
    line = (f"{transport:11s} n={len(ms):2d} receipt - send: median {np.median(ms):6.1f} ms, p90 "
            f"{_q(ms, 0.9):6.1f} ms, max {max(ms):6.1f} ms")
    if resid:
        r = [x * 1000 for x in resid]
        line += (f"; after its jitter-buffer hold: median {np.median(r):5.1f} ms, p90 {_q(r, 0.9):5.1f} ms, max "
                 f"{max(r):5.1f} ms")
    print(line + f" (worst send lateness {late * 1000:.1f} ms)", flush=True)
    if transport == "webrtc":  # both receive jitter buffers: the client's (every frame's jb_s) and the bot's (uplink)
        held = [float(r.fields["jb_s"]) * 1000 for tr in traces for r in tr.wire.records
                if r.dir == "recv" and "jb_s" in r.fields]
        up = [x * 1000 for x in server.uplink_held]
        for side, xs in (("downlink (client)", held), ("uplink (bot)", up)):
            if xs:
                print(f"webrtc      jitter-buffer hold, {side}: {len(xs)} frames, median {np.median(xs):5.1f} ms, "
                      f"p90 {_q(xs, 0.9):5.1f} ms, max {max(xs):5.1f} ms", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=1, help="Sessions at once (the matching assumes 1).")
    ap.add_argument("--transports", default="telephony,pipecat-ws,webrtc")
    a = ap.parse_args()
    print(f"load before {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    for transport in a.transports.split(","):
        measure(transport, a.sessions, a.concurrency)
    print(f"load after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
