"""CPU per bounded send: `asyncio.wait_for` (a task per send) vs `asyncio.timeout` (the caller's task).

Sends 4,000 text messages of 3,500 characters (an openai-realtime append of 80 ms at 16 kHz) over a
loopback WebSocket, alternating the two forms over 3 rounds, and prints the client thread's CPU
microseconds per send (`time.thread_time`, so other processes' load does not count).

    .venv/bin/python benchmarks/send_bound_cpu.py
"""

from __future__ import annotations

import asyncio
import json
import time

import websockets


async def main() -> None:
    async def sink(ws: websockets.ServerConnection) -> None:
        async for _ in ws:
            pass

    async with websockets.serve(sink, "127.0.0.1", 0, compression=None) as srv:
        port = srv.sockets[0].getsockname()[1]
        async with websockets.connect(f"ws://127.0.0.1:{port}", compression=None, ping_interval=None) as ws:
            msg = "x" * 3500
            res: dict[str, list[float]] = {"wait_for": [], "timeout": []}
            for _ in range(3):
                for name in res:
                    c0 = time.thread_time()
                    for _ in range(4000):
                        if name == "wait_for":
                            await asyncio.wait_for(ws.send(msg), timeout=5)
                        else:
                            async with asyncio.timeout(5):
                                await ws.send(msg)
                        await asyncio.sleep(0)
                    res[name].append(round((time.thread_time() - c0) / 4000 * 1e6, 1))
            print(json.dumps({"cpu_us_per_send": res}))


if __name__ == "__main__":
    asyncio.run(main())
