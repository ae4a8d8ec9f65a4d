"""Loopback reference servers: serve any in-process system over a real protocol on 127.0.0.1, with faults.

Contract for a protocol server (see ws_pcm.py for the smallest one):

- Subclass `ServerSession`, set `protocol` (and `exclusive = True` for one conversation at a time,
  answered with HTTP 503 while busy; a server that makes the next conversation wait instead holds
  `self.server.conversation_lock()`), optionally `refuse(path, config)` (an HTTP answer before the
  upgrade, e.g. 404 for an unknown path), implement `run()` (the protocol: first messages, then a loop
  over `self.ws`; hand input audio to `await self.driver.feed(pcm16k)`), and the output hooks the
  driver calls: `on_audio(pcm16k, at_s)`, `on_clear(at_s, event)` (the served system's ControlEvent),
  `on_user(kind, at_s, audio_s)` (`started` / `stopped` from the system's own listener, when it has one). Send with
  `self.deliver(at_s, message)` (delivered in order at wall time start + at_s, plus jitter) or
  `await self.send_now(message)`; both go through the fault layer. Provide `error_message(text)`,
  `malformed_message()` and `oversize_message(nbytes)` in the protocol's own shape.
- The framework (`LoopbackServer`) owns the socket (websockets, no compression, no pings, explicit
  max_size), `busy=N` (HTTP 503 for the first N upgrade requests), `slow_start_ms`, the timed faults
  (`disconnect@S` closes with 1011, `error@S` / `malformed@S` / `oversize@S` send one message, `stall@S`
  stops sending and processing), delivery jitter, and the system driver.
- `SystemDriver` runs the system's session on the audio the client sent: frame k (80 ms of 16 kHz)
  is pushed at virtual time k * 0.08 s and polled at (k + 1) * 0.08 s (what it has heard is all it can
  react to), so an item the system emits at `at_s` is delivered at the server's wall time start + at_s.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from duplexeval.errors import InputError
from duplexeval.registry import import_object
from duplexeval.systems.base import (
    CLEAR_QUEUE,
    FRAME_S,
    FRAME_SAMPLES,
    ControlEvent,
    OutputChunk,
    SampleInfo,
    System,
)
from duplexeval.systems.net.faults import Faults
from duplexeval.systems.net.input_clock import InputClock
from duplexeval.systems.net.transport import DEFAULT_MAX_SIZE, WS_LOG
from duplexeval.systems.registry import make_system
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

log = logging.getLogger("duplexeval.serve")
SERVER_T = 3600.0  # the server does not know T; sessions are told an hour


def resample_pcm16(pcm16: bytes, sr_in: int, sr_out: int) -> bytes:
    """Whole-chunk PCM16 resampling with soxr HQ (no stream latency); bytes unchanged when the rates match.

    Cached: a served baseline says the same reply in every session, and resampling a 9 s reply while its
    response is due would delay the response.
    """
    if sr_in == sr_out or not pcm16:
        return pcm16
    return _resample_cached(pcm16, sr_in, sr_out)


@functools.lru_cache(maxsize=64)
def _resample_cached(pcm16: bytes, sr_in: int, sr_out: int) -> bytes:
    import soxr

    from duplexeval.audio import from_pcm16, to_pcm16  # lazy: `serve --help` loads no audio library

    y = soxr.resample(from_pcm16(np.frombuffer(pcm16, dtype="<i2")), sr_in, sr_out, quality="HQ")
    return to_pcm16(y).astype("<i2").tobytes()


class SystemDriver:
    """Feed a client's input to an in-process system session and report what it emits (see module docstring)."""

    def __init__(self, system: System, sink: ServerSession) -> None:
        self.system = system
        self.sink = sink
        self.session: Any = None
        self._buf = bytearray()
        self.frames = 0
        self._speaking = False
        self.closed = False

    async def open(self) -> None:
        self.session = await self.system.open_session(
            SampleInfo(None, None, SERVER_T, int(SERVER_T * INPUT_SAMPLE_RATE)))

    @property
    def heard_s(self) -> float:
        """Input time the system has heard up to."""
        return self.frames * FRAME_S

    async def feed(self, pcm16k: bytes) -> None:
        """Append 16 kHz PCM16 input; every complete 80 ms frame goes to the system, then a poll."""
        if self.closed or self.session is None:
            return
        self._buf.extend(pcm16k)
        step = FRAME_SAMPLES * 2
        while len(self._buf) >= step:
            frame = bytes(self._buf[:step])
            del self._buf[:step]
            t = self.frames * FRAME_S
            await self.session.push_input(frame, t)
            self.frames += 1
            self._listener(t)
            for obj in await self.session.poll_output(self.frames * FRAME_S):
                if isinstance(obj, OutputChunk):
                    pcm = resample_pcm16(bytes(obj.pcm16), obj.sample_rate, INPUT_SAMPLE_RATE)
                    self.sink.on_audio(pcm, float(obj.emitted_at_s))
                elif isinstance(obj, ControlEvent) and obj.kind == CLEAR_QUEUE:
                    self.sink.on_clear(float(obj.emitted_at_s), obj)

    def _listener(self, t: float) -> None:
        """User speech start/stop from the system's own listener (baselines expose `user`)."""
        user = getattr(self.session, "user", None)
        speaking = getattr(user, "speaking", None)
        if speaking is None or speaking == self._speaking:
            return
        self._speaking = bool(speaking)
        if speaking:
            start = getattr(user, "_candidate", None)
            self.sink.on_user("started", self.frames * FRAME_S, start if start is not None else t)
        else:
            end = getattr(user, "last_voice_end", None)
            self.sink.on_user("stopped", self.frames * FRAME_S, end if end is not None else t)

    async def close(self) -> None:
        self.closed = True
        if self.session is not None:
            try:
                await self.session.close()
            except Exception:
                log.exception("system session close failed")


@dataclass(frozen=True)
class ServerEvent:
    """One thing a loopback session did that tests and harnesses check (`server.events`); `event` says which, and
    only that kind's fields are set."""

    event: str  # connect | start | marker_played | offer | truncate | cancel | cancelled
    t: float | None = None  # input time (truncate, cancel, cancelled)
    authorization: bool | None = None  # connect: the upgrade request carried credentials (never their value)
    dialect: str | None = None  # start (telephony): the call the carrier announced
    codec: str | None = None
    rate: int | None = None
    params: list[str] | None = None  # start: the custom parameters' names
    name: object = None  # marker_played: the marker's name as the carrier sent it
    at_s: float | None = None  # marker_played: when
    pc_id: str | None = None  # offer (webrtc)
    item_id: object = None  # truncate: as the client sent it
    audio_end_ms: object = None
    response_id: str | None = None  # cancelled
    reason: str | None = None


@dataclass
class ServeConfig:
    """What a loopback server serves and how it misbehaves."""

    system: System
    faults: Faults = field(default_factory=Faults)
    max_size: int = DEFAULT_MAX_SIZE
    options: dict[str, str] = field(default_factory=dict)  # protocol-specific `--option k=v` (e.g. speed, dialect)
    seed: int = 0


def check_option_values(protocol: str, options: dict[str, str], valid: dict[str, Callable[[str], bool]]) -> None:
    """Refuse an unknown `--option` key or a value its check rejects (a check may raise ValueError), one line each."""
    for key, value in options.items():
        check = valid.get(key)
        if check is None:
            raise InputError(f"--option {key}: unknown {protocol} server option (known: {', '.join(valid)})")
        try:
            ok = check(str(value))
        except ValueError:
            ok = False
        if not ok:
            raise InputError(f"--option {key}={value}: not a valid value")


class ServerSession:
    """One client connection speaking one protocol (subclass per protocol; see the module docstring)."""

    protocol: ClassVar[str] = "?"
    exclusive: ClassVar[bool] = False

    def __init__(self, server: LoopbackServer, ws: ServerConnection) -> None:
        self.server = server
        self.config = server.config
        self.ws = ws
        self.number = server.connections  # this connection's upgrade request, counted from 1
        self.driver = SystemDriver(self.config.system, self)
        self.stalled = False
        self._heap: list[tuple[float, int, str | bytes, str | None, Callable[[], None] | None]] = []
        self._seq = 0
        self._wake = asyncio.Event()
        self._done = False
        self._cancel_at: dict[str, float] = {}
        self._rng = random.Random(self.config.seed + server.connections)
        self._tasks: list[asyncio.Task[Any]] = []
        self.clock = InputClock(self.config.faults.at, self._fault, self._wake)  # input time 0, the timed faults

    @property
    def path(self) -> str:
        req = self.ws.request
        return req.path if req is not None else "/"

    # ---------------------------------------------------------- protocol hooks
    async def run(self) -> None:
        raise NotImplementedError

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        raise NotImplementedError

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        """Default: nothing (a protocol without a barge-in message simply stops sending)."""

    def on_user(self, kind: str, at_s: float, audio_s: float) -> None:
        """The served system's listener heard the user start (`kind` "started", the speech from `audio_s`) or stop
        ("stopped", the speech ended at `audio_s`). Default: nothing."""

    @classmethod
    def refuse(cls, path: str, config: ServeConfig) -> tuple[int, str] | None:
        """(HTTP status, body) to answer the upgrade request for `path` with instead of upgrading; None: upgrade."""
        return None

    def drop(self) -> None:
        """End the connection without a close frame, as a server whose handler raised does (the client sees 1006)."""
        transport = getattr(self.ws, "transport", None)
        if transport is not None:
            transport.abort()

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        """Refuse options this protocol does not know (InputError); the default knows none."""
        if options:

            raise InputError(f"--option: the {cls.protocol} server has no options ({', '.join(sorted(options))} given)")

    def error_message(self, text: str) -> str | bytes:
        raise NotImplementedError

    def malformed_message(self) -> str | bytes:
        return "{this is not json"

    def oversize_message(self, nbytes: int) -> str | bytes:
        return b"\x00" * nbytes

    # ---------------------------------------------------------- helpers
    def now_s(self) -> float:
        """The server session's input time (0 = first input audio); 0 before any input."""
        return self.clock.now_s()

    def input_started(self) -> None:
        """The first input audio arrived (kept for adapters written against the first core; prefer input_audio)."""
        if self.clock.t0 is None:
            self.input_audio(0.0)

    def input_audio(self, seconds: float) -> None:
        """Call for every input audio packet (its duration): keeps the session clock on the input stream
        (`input_clock.InputClock`: the earliest `arrival - audio before it`; the first packet starts the faults)."""
        self._tasks += self.clock.heard(seconds)

    def deliver(self, at_s: float, message: str | bytes, tag: str | None = None,
                on_sent: Callable[[], None] | None = None) -> None:
        """Send `message` at input time `at_s` (now if that has passed); equal times keep the order of calls.

        `tag` groups messages that `cancel(tag, at_s)` can withdraw; `on_sent` runs once it is on the wire.
        """
        heapq.heappush(self._heap, (float(at_s), self._seq, message, tag, on_sent))
        self._seq += 1
        self._wake.set()

    def deliver_stream(self, at_s: float, messages: list[str | bytes], chunk_s: float, lead_s: float, tag: str,
                       on_sent: Callable[[], None] | None = None) -> float:
        """Send a reply's chunks as a bot paces them: chunk i at `at_s + i x chunk_s - lead_s` (never before `at_s`),
        all under `tag` (so a barge-in's `cancel(tag, t)` withdraws the rest). Returns when the last one is due."""
        due = at_s
        for i, msg in enumerate(messages):
            due = max(at_s, at_s + i * chunk_s - lead_s)
            self.deliver(due, msg, tag, on_sent)
        return due

    def cancel(self, tag: str, at_s: float) -> None:
        """Withdraw the messages of `tag` due at or after `at_s` (a cancelled response's remaining deltas)."""
        self._cancel_at[tag] = min(at_s, self._cancel_at.get(tag, float("inf")))

    async def send_now(self, message: str | bytes) -> None:
        if self.stalled:
            return
        t = time.monotonic()
        try:
            await self.ws.send(message)
        except ConnectionClosed:
            return
        self._sent(t, message)

    def _sent(self, t: float, message: str | bytes) -> None:
        """Keep the wall time a message was handed to the socket, when asked to (tests of receipt timing)."""
        if self.server.record_sends:
            self.server.sends.append((self.number, t, message))

    def _withdrawn(self, due: float, tag: str | None) -> bool:
        return tag is not None and due >= self._cancel_at.get(tag, float("inf")) - 1e-9

    async def _sender(self) -> None:
        """Send queued messages in due order; `jitter_ms` adds U(0, J) after each due time (order kept)."""
        jitter = self.config.faults.jitter_ms / 1000.0
        while True:
            if not self._heap:
                if self._done:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            due, _, message, tag, on_sent = self._heap[0]
            if self._withdrawn(due, tag):
                heapq.heappop(self._heap)
                continue
            delay = self.clock.wait_s(due)
            if delay > 0:
                self._wake.clear()
                try:  # a newly queued earlier message (or a cancel) wakes us up
                    await asyncio.wait_for(self._wake.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass
                continue
            heapq.heappop(self._heap)
            if jitter:
                await asyncio.sleep(self._rng.uniform(0.0, jitter))
            if self.stalled or self._withdrawn(due, tag):
                continue
            t = time.monotonic()
            try:
                await self.ws.send(message)
            except ConnectionClosed:
                return
            self._sent(t, message)
            if on_sent is not None:
                on_sent()

    async def _fault(self, kind: str, s: float) -> None:
        assert self.clock.t0 is not None
        delay = self.clock.wait_s(s)
        if delay > 0:
            await asyncio.sleep(delay)
        log.info("fault %s at %.3f s", kind, s)
        if kind == "stall":
            self.stalled = True
            return
        if self.stalled:
            return
        try:
            if kind == "disconnect":
                await self.ws.close(1011, "fault injection: disconnect")
            elif kind == "error":
                await self.ws.send(self.error_message(f"fault injection: error at {s:g} s"))
            elif kind == "malformed":
                await self.ws.send(self.malformed_message())
            elif kind == "oversize":
                await self.ws.send(self.oversize_message(self.config.max_size + 1024))
        except ConnectionClosed:
            pass

    async def serve(self) -> None:
        """Run the session: slow start, the protocol, then stop the sender and the system."""
        await self.driver.open()
        sender = asyncio.get_running_loop().create_task(self._sender())
        try:
            if self.config.faults.slow_start_ms:
                await asyncio.sleep(self.config.faults.slow_start_ms / 1000.0)
            await self.run()
        except ConnectionClosed:
            pass
        finally:
            self._heap.clear()  # the client is gone: nothing queued will ever be sent
            self._done = True
            self._wake.set()
            try:
                await asyncio.wait_for(sender, timeout=2.0)
            except (asyncio.TimeoutError, ConnectionClosed):
                sender.cancel()
            for task in self._tasks:
                task.cancel()
            await self.driver.close()


class LoopbackServer:
    """A websockets server on 127.0.0.1 running `session_cls` per connection over `config.system`."""

    def __init__(self, session_cls: type[ServerSession], config: ServeConfig, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.session_cls = session_cls
        self.config = config
        self.host = host
        self.port = port
        self.connections = 0  # upgrade requests seen (for busy=N)
        self.active = 0
        self.max_active = 0  # the most conversations served at once (tests of replica caps read it)
        self.events: list[ServerEvent] = []  # what sessions did that tests may check (truncates, cancels)
        self.send_log: list[float] | None = None  # a list here: monotonic send time of every audio message (benchmarks)
        self._server: Server | None = None
        self._lock: asyncio.Lock | None = None
        self.record_sends = False  # keep (connection number, monotonic time, message) of every message sent
        self.sends: list[tuple[int, float, str | bytes]] = []
        self.received: list[tuple[int, float, str | bytes]] = []  # and received (where the protocol records them)

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        self.connections += 1
        # whether credentials came (never their value), for tests and harnesses
        self.events.append(ServerEvent("connect", authorization="Authorization" in request.headers))
        if self.connections <= self.config.faults.busy:
            return connection.respond(503, "busy (fault injection)\n")
        if self.session_cls.exclusive and self.active > 0:
            return connection.respond(503, "busy: one conversation at a time\n")
        refused = self.session_cls.refuse(request.path, self.config)
        if refused is not None:
            return connection.respond(refused[0], refused[1])
        return None

    def conversation_lock(self) -> asyncio.Lock:
        """The lock a server that holds one conversation at a time serialises them with (the next one waits)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _handler(self, ws: ServerConnection) -> None:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await self.session_cls(self, ws).serve()
        except Exception:
            log.exception("session failed")
        finally:
            self.active -= 1

    async def start(self) -> int:
        self._server = await serve(
            self._handler, self.host, self.port, compression=None, ping_interval=None,
            max_size=self.config.max_size, process_request=self._process_request, logger=WS_LOG,
        )
        sock = next(iter(self._server.sockets))
        self.port = int(sock.getsockname()[1])
        return self.port

    def url(self, path: str = "/") -> str:
        return f"ws://{self.host}:{self.port}{path}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class ServerThread:
    """Run a LoopbackServer on its own event loop in a daemon thread (tests, the demo, benchmarks)."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"serve-{server.session_cls.protocol}", daemon=True)
        self._error: BaseException | None = None

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> ServerThread:
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def url(self, path: str = "/") -> str:
        return self.server.url(path)

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop)
        try:
            fut.result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

    def __enter__(self) -> ServerThread:  # noqa: PYI034 - a context manager over start()
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerProcess:
    """Run `duplexeval serve PROTOCOL ...` as a child process (its own interpreter: no GIL shared with the client)."""

    def __init__(self, protocol: str, system: str, faults: list[str] | None = None,
                 options: dict[str, str] | None = None, start_timeout_s: float = 60.0) -> None:
        import sys

        self.args = [sys.executable, "-m", "duplexeval", "serve", protocol, "--system", system, "--port", "0"]
        for f in faults or []:
            self.args += ["--fault", f]
        for k, v in (options or {}).items():
            self.args += ["--option", f"{k}={v}"]
        self.start_timeout_s = start_timeout_s
        self.proc: Any = None
        self._url = ""
        self.announced = ""

    def start(self) -> ServerProcess:
        import re
        import subprocess
        import tempfile

        from duplexeval import children

        # dies with this process (SIGKILL included): a pipe it watches (duplexeval.children); stderr to a file,
        # not a pipe nobody drains: a child that logs a lot would block on a full pipe
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = children.start(self.args, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        line: list[str] = []

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            line.append(self.proc.stdout.readline())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(self.start_timeout_s)
        m = re.search(r" on ((?:ws|http)s?://\S+?);", line[0] if line else "")
        if m is None:
            self.stop()
            self._stderr.seek(0)
            err = self._stderr.read()[-500:]
            raise RuntimeError(f"`duplexeval serve` did not start: {' '.join(err.split()) or 'no output'}")
        self._url = m.group(1)
        self.announced = line[0].strip()  # the line the server printed when it listened (its settings, its URL)
        return self

    def url(self, path: str = "/") -> str:
        return self._url  # the announced URL already carries the protocol's path

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:  # noqa: BLE001 - last resort for a child that ignores SIGTERM
                self.proc.kill()
        if self.proc is not None:
            from duplexeval import children

            children.release(self.proc)

    def stderr_tail(self, chars: int = 2000) -> str:
        """The end of what the child wrote on stderr (for a failing test's message)."""
        f = getattr(self, "_stderr", None)
        if f is None:
            return ""
        f.seek(0)
        return str(f.read()[-chars:])

    def __enter__(self) -> ServerProcess:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Protocol name -> "module:ServerSession class" (netproto adds moshi and native-duplex here).
SERVER_PROTOCOLS: dict[str, str] = {
    "ws-pcm": "duplexeval.systems.net.ws_pcm:WsPcmServerSession",
    "openai-realtime": "duplexeval.systems.net.openai_realtime_server:RealtimeServerSession",
    "moshi": "duplexeval.systems.net.moshi_server:MoshiServerSession",
    "native-duplex": "duplexeval.systems.net.native_server:NativeServerSession",
    "telephony": "duplexeval.systems.net.telephony_server:TelephonyServerSession",
    "pipecat-ws": "duplexeval.systems.net.pipecat_ws_server:PipecatWsServerSession",
}


def server_class(protocol: str) -> type[ServerSession]:
    if protocol not in SERVER_PROTOCOLS:

        raise InputError(f"unknown protocol {protocol!r}; available: {', '.join(sorted(SERVER_PROTOCOLS))}")
    cls = import_object(SERVER_PROTOCOLS[protocol], "protocol server")
    assert isinstance(cls, type) and issubclass(cls, ServerSession)
    return cls


def make_server(protocol: str, system: System | str, faults: Faults | None = None, port: int = 0,
                options: dict[str, str] | None = None, max_size: int = DEFAULT_MAX_SIZE) -> LoopbackServer:
    """A LoopbackServer for `protocol` serving `system` (an object or a `--system` spec)."""
    if isinstance(system, str):

        system = make_system(system)
    cls = server_class(protocol)
    cls.check_options(dict(options or {}))
    cfg = ServeConfig(system, faults or Faults(), max_size, dict(options or {}))
    return LoopbackServer(cls, cfg, port=port)


def run_forever(server: LoopbackServer, announce: Callable[[str], None]) -> None:
    """Serve until interrupted (the `duplexeval serve` commands)."""

    async def main() -> None:
        await server.start()
        announce(server.url())
        await asyncio.Future()

    asyncio.run(main())
