"""Capture quality of N concurrent network sessions on one event loop against a loopback server.

Each session streams T seconds of input (80 ms packets on the absolute schedule) to a `duplexeval
serve` child process (its own interpreter, as a real server would be), which serves `turn-based`
with the energy detector and a short reply. Reported per N: send deviation from the schedule
(start - slot: p50 / p99 / max), receipt-stamp delay (how late the receive task stamped a message
after the socket had it: measured with a zero-byte probe task on the same loop, p50 / p99 / max),
the sessions that became `input_pacing_late`, sessions per second of wall time, the client's and the
server child's CPU seconds per session, send durations, the packets more than 5 ms late and where,
and what is needed to compare runs (settings, load average before and after, Python, cores).

Every session's input is made before the first session starts. The server child runs at nice 10 by
default (`--server-nice`): in real use it is another machine, here it shares the client's 2 cores.
`--no-spread` turns off the slot-phase spreading of concurrent sessions (`systems/net/phases.py`) and
`--pin` puts client and server on different cores, both for A/B comparisons.

    .venv/bin/python benchmarks/network_capture.py                   # 32, 64, 128 sessions, openai-realtime
    .venv/bin/python benchmarks/network_capture.py --sessions 32 --protocol ws-pcm --seconds 10
    .venv/bin/python benchmarks/network_capture.py --sessions 32 --protocol telephony   # 20 ms media: 4 sends per frame
    .venv/bin/python benchmarks/network_capture.py --no-spread --server-nice 0   # the pacing before 2026-12-01 12:00
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import phases
from duplexeval.systems.net.server import ServerProcess
from duplexeval.systems.net.trace import verdict
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async

SERVED = "turn-based:vad=energy,text=hello there this is my answer to you"
PATHS = {"openai-realtime": "/v1/realtime", "ws-pcm": "/ws", "telephony": "/ws", "pipecat-ws": "/ws"}


def user_turns(T: float, seed: int) -> np.ndarray:
    """Noise 'user turns' (-20 dBFS) of 1 s every 3 s, int16 16 kHz."""
    rng = np.random.default_rng(seed)
    x = np.zeros(int(T * 16000))
    for a in np.arange(0.3 + 0.1 * (seed % 5), T - 1.0, 3.0):
        i, j = int(a * 16000), int((a + 1.0) * 16000)
        x[i:j] = rng.standard_normal(j - i) * 0.1
    return np.clip(np.rint(x * 32767), -32768, 32767).astype(np.int16)


async def _probe(stop: asyncio.Event, out: list[float], period: float = 0.01) -> None:
    """Loop responsiveness: how late a 10 ms sleep wakes up (what any stamping task would suffer)."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(period)
        out.append(time.monotonic() - t - period)


async def run(n: int, protocol: str, url: str, T: float, client: str) -> dict:
    system = make_system(f"{protocol}:url={url}{',' + client if client else ''}")
    inputs = [user_turns(T, i) for i in range(n)]  # made before any session starts (not on the send path)
    stop = asyncio.Event()
    probe: list[float] = []
    ptask = asyncio.get_running_loop().create_task(_probe(stop, probe))
    t0 = time.monotonic()
    c0 = resource.getrusage(resource.RUSAGE_SELF)

    async def one(i: int) -> dict:
        pcm = inputs[i]
        tr = await run_session_async(system, pcm, SampleInfo("candor_turn_taking", str(i), T, pcm.shape[0]))
        v = verdict(tr.wire.records, T, 10.0)
        sends = [r.to_json() for r in tr.wire.records if r.dir == "send" and r.slot_s is not None]
        late = [r["t"] - r["slot_s"] for r in sends]
        return {"late": late, "seq": [r["seq"] for r in sends],
                "dur": [r["t_done"] - r["t"] for r in sends if "t_done" in r], "reasons": v.reasons,
                "recv": sum(1 for r in tr.wire.records if r.dir == "recv")}

    results = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.monotonic() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    await ptask
    late = np.concatenate([np.asarray(r["late"]) for r in results]) * 1000.0
    dur = np.concatenate([np.asarray(r["dur"]) for r in results]) * 1000.0
    seq = np.concatenate([np.asarray(r["seq"], dtype=int) for r in results])
    over = np.bincount(seq[late > 5.0], minlength=1)
    top = [[int(i), int(over[i])] for i in np.argsort(-over, kind="stable")[:5] if over[i]]
    pr = np.asarray(probe) * 1000.0
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    reasons: dict[str, int] = {}
    for r in results:
        for x in r["reasons"]:
            reasons[x] = reasons.get(x, 0) + 1
    return {
        "sessions": n, "protocol": protocol, "T_s": T, "packets": int(late.size),
        "send_deviation_ms": {"p50": round(float(np.quantile(late, 0.5)), 2),
                              "p99": round(float(np.quantile(late, 0.99)), 2), "max": round(float(late.max()), 2)},
        "stamp_delay_ms": {"p50": round(float(np.quantile(pr, 0.5)), 2), "p99": round(float(np.quantile(pr, 0.99)), 2),
                           "max": round(float(pr.max()), 2)},
        "send_duration_ms": {"p99": round(float(np.quantile(dur, 0.99)), 2), "max": round(float(dur.max()), 2)},
        "packets_over_5ms_late": int((late > 5.0).sum()),
        "over_5ms_by_packet_index_top5": top,  # [packet index, how many sessions' packet i was > 5 ms late]
        "pacing_late_sessions": reasons.get("input_pacing_late", 0),
        "other_reasons": {k: v for k, v in reasons.items() if k != "input_pacing_late"},
        "messages_received": int(sum(r["recv"] for r in results)),
        "wall_s": round(wall, 2), "sessions_per_s": round(n / wall, 3),
        "client_cpu_s_per_session": round(cpu / n, 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_priority(pid: int, nice: int, pin: bool) -> dict:
    """Lower the loopback server's CPU priority and/or pin client and server to different cores."""
    out: dict = {"server_nice": nice, "pinned": False}
    if nice:
        os.setpriority(os.PRIO_PROCESS, pid, nice)
    if pin and hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})
        os.sched_setaffinity(pid, set(cpus[1:]))
        out["pinned"] = True
        out["client_cpus"], out["server_cpus"] = [cpus[0]], cpus[1:]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, action="append",
                    help="Concurrent sessions (repeatable; default 32 64 128).")
    ap.add_argument("--protocol", default="openai-realtime", choices=sorted(PATHS))
    ap.add_argument("--seconds", type=float, default=10.0, help="Input length per session (T).")
    ap.add_argument("--no-spread", action="store_true",
                    help="Start every session's slot 0 at the end of its handshake (no phase spreading; for A/B).")
    ap.add_argument("--server-nice", type=int, default=10,
                    help="Niceness of the loopback server child (default 10: the server is remote in real "
                         "use; 0 = as is).")
    ap.add_argument("--pin", action="store_true", help="Pin the client to the first core and the server to the others.")
    ap.add_argument("--json", type=Path, help="Also write the results here.")
    args = ap.parse_args()
    phases.set_spread(not args.no_spread)
    client = ""
    options: dict[str, str] = {}
    rows = []
    with ServerProcess(args.protocol, SERVED, options=options) as srv:
        setup = _server_priority(srv.proc.pid, args.server_nice, args.pin)
        for n in args.sessions or [32, 64, 128]:
            load0 = [round(x, 2) for x in os.getloadavg()]
            s0 = _cpu_of(srv.proc.pid)
            row = asyncio.run(run(n, args.protocol, srv.url(), args.seconds, client))
            row["server_cpu_s_per_session"] = round((_cpu_of(srv.proc.pid) - s0) / n, 3)
            row.update({"spread": not args.no_spread, **setup, "load_average_before": load0,
                        "cpus": os.cpu_count(), "python": sys.version.split()[0], "argv": sys.argv[1:]})
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
