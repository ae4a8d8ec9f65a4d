"""The base a protocol adapter subclasses: connect, handshake, paced sends, stamped receipts, bounded close.

Contract for an adapter (see ws_pcm.py for the smallest one):

- `NetSystem` is a frozen dataclass whose fields are the parameters (`--system NAME:k=v`); it sets the
  class variables `name`, `protocol` and `session_class` (and `default_sessions_per_url` when its servers
  hold a fixed number of conversations), and may override `headers()` / `secrets()` (an API key goes
  there, never into a field; the one redaction point uses them) and `connect_url(info)`, which reads
  `self.url`: always ONE address, because a session runs on a copy of the system whose `url` is its replica.
- Replicas (`replicas.py`) come with the base: `url` may list several addresses (`url=ws://a,ws://b`);
  `open_session` takes a slot on one (at most `max_sessions_per_url` each, 0 = the protocol's default)
  before connecting, and `run_sample` (what `fdb export` calls) runs a sample again on another replica,
  at most `replica_retries` times, when its replica failed (connect_failed or disconnected). The trace
  starts with a `replica` record (which one, attempt, how long the session queued for a slot) and keeps
  `replica_retry` records of the attempts before. An adapter needs no code for any of this.
- `NetSession` subclasses implement only the protocol:
  `handshake()` (after connect, before input; use `expect` / `wait_for` for replies the server owes),
  `encode_input(frame16k) -> (event type, wire message)` for one 80 ms packet,
  `on_message(rec, data)` to decode one received message (a `TraceRecord`: set `rec.kind`, put the protocol's
  fields in `rec.fields`, call `output_audio`, `clear_queue`, `server_error`, `signal`; raise `ProtocolViolation`
  for a broken message), and
  optionally `finish_input()` (after T: end-of-input messages and a drain wait bounded by `drain_s`).
- The base records everything in `self.wire` (a `WireTrace`), runs the receive task, owns the clock the
  runner paces with (`self.clock`: slot i is sent at start + i * 80 ms, absolute), marks the session dead
  when the socket closes, and bounds every wait (`stall_s` for owed replies, `send_timeout_s` per send,
  `drain_s` after T, `T + session_extra_s` in total). A session never raises for a network fault: the
  fault is a record, and `trace.verdict` turns records into eligibility reasons.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar
from urllib.parse import urlsplit

import websockets

from duplexeval import __version__, redaction
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import (
    CLEAR_QUEUE,
    ControlEvent,
    OutputChunk,
    ProtocolViolation,
    Received,
    SampleInfo,
)
from duplexeval.systems.net.phases import planner
from duplexeval.systems.net.replicas import REPLICA_FAILURES, Lease, ReplicaRetry, replica_pool, split_urls
from duplexeval.systems.net.trace import TraceRecord, TraceSettings, WireTrace, how_it_ended, verdict
from duplexeval.systems.net.transport import (
    DEFAULT_MAX_SIZE,
    ConnectFailed,
    Receiver,
    TransportSettings,
    closed_error,
    connect,
    describe,
    log,
    redact,
    send_bounded,
)
from duplexeval.systems.runner import DEFAULT_CALL_TIMEOUT_S, SessionTrace, run_session_async


def wire_len(data: str | bytes) -> int:
    """Bytes of a message on the wire (UTF-8 for text; ASCII text, e.g. base64 JSON, without an encoded copy)."""
    if isinstance(data, str):
        return len(data) if data.isascii() else len(data.encode("utf-8"))
    return len(data)


class SessionOpenFailed(Exception):
    """The session never reached its input phase; `wire` holds what happened (connect attempts, handshake)."""

    def __init__(self, message: str, wire: WireTrace) -> None:
        super().__init__(message)
        self.wire = wire


class HandshakeAborted(Exception):
    """A handshake wait failed; the records already say why (an owed reply, a close, an error event)."""


class TraceClock:
    """The runner's clock for a network session: input-timeline seconds from the session's WireTrace."""

    exact_receipt = False
    name = "wall"

    def __init__(self, wire: WireTrace) -> None:
        self.wire = wire

    def now(self) -> float:
        return self.wire.now()

    async def sleep_until(self, t_s: float) -> None:
        delay = t_s - self.wire.now()
        if delay > 0:
            await asyncio.sleep(delay)



def with_query(url: str, key: str, value: object) -> str:
    """`url` with `key=value` appended to its query string (as the server reads it, unencoded)."""
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"

@dataclass(frozen=True)
class NetSystem:
    """Common parameters of every network adapter (bounds); subclasses add their protocol's parameters."""

    name: ClassVar[str] = "net"
    protocol: ClassVar[str] = "net"
    session_class: ClassVar[type[NetSession]]
    wall_clock: ClassVar[bool] = True
    default_sessions_per_url: ClassVar[int | None] = None  # None: no cap per replica unless the user sets one

    url: str = ""
    max_size: int = DEFAULT_MAX_SIZE
    open_timeout_s: float = 10.0
    stall_s: float = 10.0
    drain_s: float = 5.0
    session_extra_s: float = 30.0
    linger_s: float = 0.0  # keep listening this long after T before closing (records post-window events)
    max_sessions_per_url: int = 0  # sessions at once on one replica; 0 = the protocol's default
    replica_retries: int = 2  # a sample whose replica failed runs again on another one at most this often

    def params(self) -> JsonObject:
        return asdict(self)

    def version(self) -> str:
        return f"duplexeval {__version__}; websockets {websockets.version.version}; protocol {self.protocol}"

    def headers(self) -> dict[str, str]:
        """HTTP headers of the upgrade request (never recorded anywhere)."""
        return {}

    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in any file or log: by default the value of every environment variable
        a `*_env` field names (read through `redaction.secret_from_env`, which registers it)."""
        return tuple(v for f in fields(self) if f.name.endswith("_env")
                     if (v := redaction.secret_from_env(str(getattr(self, f.name)))))

    def connect_url(self, info: SampleInfo) -> str:
        return self.url

    def urls(self) -> list[str]:
        """The replicas' addresses (`url` split at commas)."""
        return split_urls(self.url)

    def sessions_per_url(self) -> int | None:
        """The cap of sessions at once on one replica (None: none)."""
        return self.max_sessions_per_url or self.default_sessions_per_url

    def transport(self) -> TransportSettings:
        return TransportSettings(max_size=self.max_size, open_timeout_s=self.open_timeout_s)

    def validate(self) -> None:
        """Check the common bounds; raise ValueError naming the key."""
        urls = self.urls()
        try:  # before any message can echo the URL
            for url in urls or [self.url]:
                redaction.refuse_url_credentials(url, "url")
        except InputError as exc:
            raise ValueError(str(exc)) from None
        if not urls:
            raise ValueError("url must name at least one ws:// or wss:// address")
        if len(set(urls)) != len(urls):
            raise ValueError(f"url lists the same address twice: {self.url!r}")
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("ws", "wss") or not parts.netloc or not parts.hostname:
                raise ValueError(f"url must be ws:// or wss:// with a host, got {url!r}")
            try:
                port = parts.port
            except ValueError:
                port = -1
            if port is not None and not 1 <= port <= 65535:
                raise ValueError(f"url {url!r}: the port must be a whole number in 1..65535")
        if not (0 <= self.max_sessions_per_url <= 1024):
            raise ValueError("max_sessions_per_url must be between 0 (the protocol's default) and 1024, got "
                             f"{self.max_sessions_per_url}")
        if not (0 <= self.replica_retries <= 16):
            raise ValueError(f"replica_retries must be between 0 and 16, got {self.replica_retries}")
        if not (1024 <= self.max_size <= 256 * 1024 * 1024):
            raise ValueError(f"max_size must be between 1024 and 268435456 bytes, got {self.max_size}")
        for key in ("open_timeout_s", "stall_s", "drain_s", "session_extra_s"):
            v = getattr(self, key)
            if not (0 < v <= 3600):
                raise ValueError(f"{key} must be in (0, 3600] seconds, got {v}")
        if not (0 <= self.linger_s <= 60):
            raise ValueError(f"linger_s must be between 0 and 60 seconds, got {self.linger_s}")

    def pool(self) -> Any:
        """This system's replica pool (shared by every session of the process)."""
        return replica_pool(self.protocol, self.url, self.sessions_per_url())

    async def open_session(self, info: SampleInfo) -> NetSession:
        """A session on the best free replica (waits for a slot; see `replicas.py`)."""
        return await self.open_on(await self.pool().acquire(), info)

    async def open_on(self, lease: Lease, info: SampleInfo, attempt: int = 1) -> NetSession:
        """A session on the replica `lease` holds (the lease is released when the session shuts down)."""
        system = self if lease.url == self.url else replace(self, url=lease.url)
        session = system.session_class(system, info)
        session.lease = lease
        session.wire.meta("replica", **lease.record(attempt).to_json())
        try:
            await session.open()
        except BaseException:
            lease.release()
            raise
        return session

    async def run_sample(self, pcm16: Any, info: SampleInfo,
                         call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SessionTrace:
        """Run one sample (`fdb export`): on one replica, again on another when that replica failed; each call into
        the session bounded by `call_timeout_s` (`--call-timeout`)."""
        pool = self.pool()
        tried: list[ReplicaRetry] = []
        while True:
            lease = await pool.acquire(exclude=[t.replica for t in tried])
            trace = await run_session_async(_OnReplica(self, lease, len(tried) + 1), pcm16, info,
                                            call_timeout_s=call_timeout_s)
            lease.release()  # normally released at shutdown already; a session that never opened is released here
            wire = trace.wire
            reasons = verdict(wire.records, info.T, self.stall_s).reasons if wire is not None else []
            failed = [r for r in reasons if r in REPLICA_FAILURES]
            pool.outcome(lease.replica, bool(failed))
            if wire is not None and tried:
                for k, retry in enumerate(tried):  # what the attempts before met, at the top of the kept trace
                    wire.records.insert(k, TraceRecord("meta", wire.records[0].t if wire.records else 0.0,
                                                       "replica_retry", None, retry.to_json()))
            more = len(tried) < self.replica_retries and len(tried) + 1 < len(pool.replicas)
            if not failed or wire is None or not more:
                return trace
            tried.append(ReplicaRetry(lease.replica.index, lease.record(0).url, len(tried) + 1, failed,
                                      how_it_ended(wire.records)))
            log.warning("replica %d failed a session (%s); running the sample again on another replica",
                        lease.replica.index, ", ".join(failed))


class _OnReplica:
    """The system as the runner sees it for one attempt: its sessions open on one leased replica."""

    wall_clock = True

    def __init__(self, system: NetSystem, lease: Lease, attempt: int) -> None:
        self.system, self.lease, self.attempt = system, lease, attempt
        self.name = system.name

    def params(self) -> JsonObject:
        return self.system.params()

    def version(self) -> str:
        return self.system.version()

    async def open_session(self, info: SampleInfo) -> NetSession:
        return await self.system.open_on(self.lease, info, self.attempt)


class NetSession:
    """One connection driving one input; subclasses implement the protocol hooks (see the module docstring)."""

    def __init__(self, system: NetSystem, info: SampleInfo) -> None:
        self.system = system
        self.info = info
        redaction.register(*system.secrets())  # whatever process runs the session knows what to redact
        redaction.register_headers(system.headers())
        settings = TraceSettings(system.protocol, system.stall_s, system.drain_s, system.session_extra_s,
                                 system.max_size)
        self.wire = WireTrace(system.protocol, settings)
        self.clock = TraceClock(self.wire)
        self.ws: Any = None
        self.receiver: Receiver | None = None
        self.outbox: list[Received] = []
        self.seq = 0
        self.dead = False
        self._signals: dict[str, asyncio.Event] = {}
        self._owed: set[str] = set()
        self._error = asyncio.Event()
        self._watchdog: asyncio.Task[None] | None = None
        self._phase: int | None = None
        self.lease: Lease | None = None  # the replica slot this session holds (released at shutdown)

    # ---------------------------------------------------------- protocol hooks (override)
    async def handshake(self) -> None:
        """After connect, before the first input packet."""

    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        """One 80 ms packet of 16 kHz PCM16 -> (event type for the trace, the wire message)."""
        raise NotImplementedError

    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        """Decode one received message; `rec` is its trace record (already stamped)."""
        raise NotImplementedError

    async def finish_input(self) -> None:
        """After the last packet and the poll at T: end-of-input messages, bounded drain."""

    # ---------------------------------------------------------- helpers for adapters
    def output_audio(self, rec: TraceRecord, pcm16: bytes, rate: int) -> None:
        """Received output audio at `rate` (PCM16 mono): into the trace's sidecar and the runner's outbox."""
        if len(pcm16) % 2:
            raise ProtocolViolation(f"{rec.type}: odd-length PCM16 ({len(pcm16)} bytes)")
        self.wire.add_audio(rec, pcm16, rate)
        t = float(rec.t)
        self.outbox.append(OutputChunk(pcm16, rate, t, received_at_s=t))

    def clear_queue(self, rec: TraceRecord, **detail: Any) -> None:
        """The client drops its queued audio at this message's receipt time."""
        rec.control = CLEAR_QUEUE
        t = float(rec.t)
        self.outbox.append(ControlEvent(CLEAR_QUEUE, t, dict(detail), received_at_s=t))

    def server_error(self, rec: TraceRecord, message: str) -> None:
        rec.error = True
        rec.message = redact(" ".join(str(message).split()), self.system.secrets())[:300]
        self._error.set()  # a handshake waiting for a reply gives up at once

    def expect(self, what: str) -> None:
        """The server owes a reply named `what` (a gap over stall_s while owed is a `timeout`)."""
        if what in self._owed:
            return
        self._owed.add(what)
        self.wire.meta("owe", what=what)
        self._signals[what] = asyncio.Event()

    def signal(self, what: str, rec: TraceRecord | None = None) -> None:
        """The reply `what` arrived (paid at its receipt time)."""
        t = self.wire.now() if rec is None else float(rec.t)
        if what in self._owed:
            self._owed.discard(what)
            self.wire.meta("paid", t, what=what)
        self._signals.setdefault(what, asyncio.Event()).set()

    async def wait_for(self, what: str, timeout_s: float | None = None) -> bool:
        """Wait (bounded, default stall_s) for `signal(what)`; False on timeout, an error event or a closed socket."""
        ev = self._signals.setdefault(what, asyncio.Event())
        closed = self.receiver.closed if self.receiver is not None else asyncio.Event()
        waits = [asyncio.ensure_future(ev.wait()), asyncio.ensure_future(closed.wait()),
                 asyncio.ensure_future(self._error.wait())]
        try:
            await asyncio.wait(waits, timeout=self.system.stall_s if timeout_s is None else timeout_s,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        return ev.is_set()

    async def send(self, kind: str, data: str | bytes, **fields: Any) -> TraceRecord | None:
        """Send one message (bounded by send_timeout_s) and record it with its start and completion times."""
        if self.dead or self.ws is None:
            return None
        t0 = self.wire.now()
        rec = self.wire.send(t0, kind, wire_len(data), **fields)
        try:
            ok = await send_bounded(self.ws, data, self.system.transport().send_timeout_s)
        except Exception as exc:  # noqa: BLE001 - a closed socket ends the session; the receive task records it
            rec.failed = describe(exc, self.system.secrets()) if not closed_error(exc) else "closed"
            self.dead = True
            return rec
        rec.t_done = self.wire.now()
        if not ok:
            self.wire.meta("send_timeout", t0, type=kind)
            self.dead = True
        return rec

    # ---------------------------------------------------------- lifecycle (the runner calls these)
    async def connect_transport(self) -> None:
        """Open the connection and start the receive task: sets `ws` (has `send`) and `receiver` (has `closed`,
        `close()`); records `opened`. A WebSocket here; an adapter on another transport (WebRTC) overrides it."""
        url = self.system.connect_url(self.info)
        try:
            self.ws = await connect(url, self.system.headers(), self.wire, self.system.transport(),
                                    self.system.secrets())
        except ConnectFailed as exc:
            raise SessionOpenFailed(f"connect_failed: {exc}", self.wire) from None
        self.wire.meta("opened")
        self.receiver = Receiver(self.ws, self.wire, self._on_message, self.system.max_size)

    async def open(self) -> None:
        await self.connect_transport()
        assert self.receiver is not None
        try:
            await self.handshake()
        except Exception as exc:  # noqa: BLE001 - recorded, then the session ends before any input
            if not isinstance(exc, HandshakeAborted):
                self.wire.meta("violation", what=f"handshake: {describe(exc, self.system.secrets())}")
            await self._shutdown()
            raise SessionOpenFailed(describe(exc, self.system.secrets()), self.wire) from None
        if self.receiver.closed.is_set():
            raise SessionOpenFailed("the server closed the connection during the handshake", self.wire)
        # Everything alive now (modules, models, codecs) leaves the collector's view, so no full
        # collection can stall the 80 ms schedule (measured: a 108 ms gen-2 pass mid-session in the CLI).
        gc.freeze()
        # Slot 0 is the next free phase of this loop's 80 ms frame (at most one frame from now; at once
        # when no other session runs here), so concurrent sessions do not all send in the same ms.
        plan = planner()
        self._phase, origin = plan.claim(time.monotonic())
        self.wire.start_input(origin)
        bound = self.info.T + self.system.session_extra_s
        self._watchdog = asyncio.get_running_loop().create_task(self._bound(bound))

    async def _bound(self, bound_s: float) -> None:
        await self.clock.sleep_until(bound_s)
        self.wire.meta("session_bound", bound_s=round(bound_s, 6))
        self.dead = True
        if self.receiver is not None:
            await self.receiver.close()

    def _on_message(self, t: float, data: str | bytes) -> None:
        nbytes = wire_len(data)
        rec = self.wire.recv(t, "text" if isinstance(data, str) else "binary", nbytes)
        try:
            self.on_message(rec, data)
        except ProtocolViolation as exc:
            rec.violation = describe(exc, self.system.secrets()).split(": ", 1)[-1]
        if self.receiver is not None and self.receiver.closed.is_set():
            self.dead = True

    async def push_input(self, frame: bytes, t_s: float) -> None:
        if self.dead or (self.receiver is not None and self.receiver.closed.is_set()):
            self.dead = True
            return
        slot = round(t_s, 6)
        seq = self.seq
        self.seq += 1
        kind, data = self.encode_input(frame)
        await self.send(kind, data, seq=seq, slot_s=slot)

    async def poll_output(self, t_s: float) -> list[Received]:
        out, self.outbox = self.outbox, []
        return out

    async def close(self) -> None:
        self.wire.meta("input_end")
        if self.system.linger_s > 0 and not self.dead and self.receiver is not None:
            try:  # listen on after T (a close by the server ends the wait)
                await asyncio.wait_for(self.receiver.closed.wait(), timeout=self.system.linger_s)
            except asyncio.TimeoutError:
                pass
        if not self.dead:
            try:
                await asyncio.wait_for(self.finish_input(), timeout=self.system.drain_s)
            except asyncio.TimeoutError:
                self.wire.meta("drain_timeout", drain_s=self.system.drain_s)
        await self._shutdown()

    async def _shutdown(self) -> None:
        if self.lease is not None:
            self.lease.release()
        if self._phase is not None:
            planner().release(self._phase)
            self._phase = None
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self.receiver is not None:
            await self.receiver.close()
        self.dead = True
