"""Helpers for the network tests: a synthetic user turn, loopback servers in threads, sessions run concurrently.

The served system is `turn-based` with the energy detector (cheap and deterministic) and a short reply;
the user is a -20 dBFS noise burst, so the timeline is known: the user speaks over USER, the listener
releases ~0.1 s later (speech_stopped), and the reply starts REPLY_AT = end + silence + think.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import (
    INPUT_PACING_LATE,
    Verdict,
    received_items,
    verdict,
)
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async

R = TypeVar("R")

SR = 16000
T = 4.0
USER = (0.3, 1.3)
REPLY_AT = USER[1] + 0.5 + 0.2
SERVED = "turn-based:vad=energy,text=hello there this is my answer to you"
PATHS = {"openai-realtime": "/v1/realtime", "ws-pcm": "/ws", "telephony": "/ws", "pipecat-ws": "/ws"}


def user_turn(T: float = T, spans: tuple[tuple[float, float], ...] = (USER,), seed: int = 0) -> np.ndarray:
    """int16 16 kHz input: noise bursts at -20 dBFS over `spans`, silence elsewhere."""
    rng = np.random.default_rng(seed)
    x = np.zeros(round(T * SR), dtype=np.float64)
    for a, b in spans:
        i, j = int(a * SR), int(b * SR)
        x[i:j] = rng.standard_normal(j - i) * 0.1
    return np.clip(np.rint(x * 32767), -32768, 32767).astype(np.int16)


@dataclass
class Case:
    """One session against one loopback server (or none: `protocol` with `no_server`)."""

    name: str
    protocol: str
    faults: tuple[str, ...] = ()
    client: str = ""
    options: dict[str, str] = field(default_factory=dict)
    served: str = SERVED
    no_server: bool = False
    block_at_s: float | None = None  # block the client's event loop here (pacing test)
    spans: tuple[tuple[float, float], ...] = (USER,)
    T: float = T
    # filled by run_cases
    verdict: Verdict | None = None
    trace: Any = None
    server: Any = None

    @property
    def reasons(self) -> set[str]:
        assert self.verdict is not None
        return set(self.verdict.reasons)

    def reasons_without_pacing(self) -> set[str]:
        """The reasons minus input_pacing_late, which a loaded machine may add to any case."""
        return self.reasons - {INPUT_PACING_LATE}

    def records(self, **match: Any) -> list[dict[str, Any]]:
        """The trace's records as their JSON lines, those whose fields equal `match`."""
        rows = [r.to_json() for r in self.trace.wire.records]
        return [r for r in rows if all(r.get(k) == v for k, v in match.items())]

    def items(self) -> list[Any]:
        return received_items(self.trace.wire.records, self.trace.wire.pcm())


def _client_spec(case: Case, url: str) -> str:
    extra = f",{case.client}" if case.client else ""
    return f"{case.protocol}:url={url}{extra}"


async def _run(case: Case, url: str) -> None:
    system = make_system(_client_spec(case, url))
    pcm = user_turn(case.T, case.spans)
    if case.block_at_s is not None:
        import time

        loop = asyncio.get_running_loop()
        loop.call_later(case.block_at_s, time.sleep, 0.3)
    case.trace = await run_session_async(system, pcm, SampleInfo("candor_turn_taking", case.name, case.T, pcm.shape[0]))
    stall_s = float(case.trace.wire.settings.stall_s)
    case.verdict = verdict(case.trace.wire.records, case.T, stall_s)


def run_cases(cases: list[Case]) -> list[Case]:
    """Start a server per case, run every session at once on one event loop, stop the servers."""
    for c in cases:
        if not c.no_server:
            c.server = make_server(c.protocol, c.served, parse_faults(c.faults), options=c.options)
    with serving([c.server for c in cases]) as threads:
        # a case with no server gets port 9 (discard): nothing listens
        urls = [f"ws://127.0.0.1:9{PATHS[c.protocol]}" if th is None else th.url(PATHS[c.protocol])
                for c, th in zip(cases, threads)]
        gather(_run(c, u) for c, u in zip(cases, urls))
    return cases


@contextmanager
def serving(servers: Sequence[Any]) -> Iterator[list[ServerThread | None]]:
    """Each server (a LoopbackServer, a WebRtcLoopback; None for a case without one) in a thread of its own, in
    order; on the way out every one that started is stopped, also when a later one fails to start or a session
    raises."""
    with ExitStack() as stack:
        yield [None if s is None else stack.enter_context(ServerThread(s)) for s in servers]


def gather(sessions: Iterable[Awaitable[R]]) -> list[R]:
    """Run the awaitables at once on one new event loop; their results in order."""
    async def main() -> list[R]:
        return list(await asyncio.gather(*sessions))

    return asyncio.run(main())


@dataclass(frozen=True)
class Echo:
    """A user's own in-process system, loaded by import path (`tests.helpers.net:Echo:gain=2`): echoes its input."""

    name: Any = "echo"
    gain: int = 1

    def params(self) -> dict[str, Any]:
        return {"gain": self.gain}

    def version(self) -> str:
        return "echo 1"

    async def open_session(self, info: SampleInfo) -> Any:
        from duplexeval.systems.base import OutputChunk

        gain = self.gain

        class _S:
            def __init__(self) -> None:
                self.out: list[Any] = []

            async def push_input(self, frame: bytes, t_s: float) -> None:
                x = np.frombuffer(frame, dtype="<i2").astype(np.int32) * gain
                self.out.append(OutputChunk(np.clip(x, -32768, 32767).astype("<i2").tobytes(), SR, t_s))

            async def poll_output(self, t_s: float) -> list[Any]:
                out, self.out = self.out, []
                return out

            async def close(self) -> None:
                return None

        return _S()


class WsServerThread:
    """A plain websockets server on 127.0.0.1 in a thread of its own, running `handler(ws)` for each connection
    (for scripted servers that break a protocol in ways the loopback servers do not)."""

    def __init__(self, handler: Callable[[Any], Awaitable[None]]) -> None:
        self.handler = handler
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        from websockets.asyncio.server import serve

        asyncio.set_event_loop(self.loop)

        async def start() -> None:
            self.server = await serve(self.handler, "127.0.0.1", 0, compression=None, ping_interval=None)
            self.port = self.server.sockets[0].getsockname()[1]

        self.loop.run_until_complete(start())
        self._ready.set()
        self.loop.run_forever()

    def __enter__(self) -> WsServerThread:  # noqa: PYI034
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
