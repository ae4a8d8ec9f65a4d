"""Replicas: one network system served by several addresses (`url=ws://a:8998,ws://b:8998`).

Sessions are spread over the replicas with at most `max_sessions_per_url` at once on each (the protocol's
default when 0: one for the Moshi family, whose servers hold one conversation at a time; no cap otherwise).
A session waits for a free slot before it connects, so the wait is never part of its trace's timeline;
its `replica` record says which replica it ran on and how long it queued.

A replica whose session failed to connect, or was closed by the server before T, is suspect: new
sessions go to the others while any of them is not suspect, and the failed sample is run again from its
start on a replica it has not tried, at most `replica_retries` more times. What the earlier attempts
met is kept in the final trace as `replica_retry` records, so nothing is lost; the sample's verdict is
the last attempt's. A suspect replica is trusted again after a session on it succeeds.

The pool is one per (protocol, URL list, cap) in this process; the slots are counted across event
loops of the process, so a sequential export and a concurrent one both respect the cap (Ray workers
are separate processes and count their own).
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.net.trace import CONNECT_FAILED, DISCONNECTED

# Session reasons that say the replica (not the sample) failed: the sample may be run on another replica.
REPLICA_FAILURES = (CONNECT_FAILED, DISCONNECTED)


def split_urls(url: str) -> list[str]:
    """The comma-separated addresses of `url` (a single address is a list of one)."""
    return [u.strip() for u in url.split(",") if u.strip()]


def safe_url(url: str) -> str:
    """`url` without credentials or query (what a trace or a log may show of a replica)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


@dataclass(frozen=True)
class ReplicaRecord:
    """The fields of a trace's `replica` record: which replica of how many, the attempt, the wait for a slot."""

    replica: int
    url: str  # safe_url: no credentials, no query
    of: int
    attempt: int
    queued_s: float

    def to_json(self) -> JsonObject:
        return {"replica": self.replica, "url": self.url, "of": self.of, "attempt": self.attempt,
                "queued_s": self.queued_s}


@dataclass(frozen=True)
class ReplicaRetry:
    """The fields of a `replica_retry` record: an earlier attempt of the sample on a replica that failed."""

    replica: int
    url: str
    attempt: int
    reasons: list[str]
    what: str | None  # how it ended (trace.how_it_ended)

    def to_json(self) -> JsonObject:
        return {"replica": self.replica, "url": self.url, "attempt": self.attempt, "reasons": self.reasons,
                "what": self.what}


@dataclass(frozen=True)
class ReplicaState:
    """A snapshot of one replica's counters (tests, progress)."""

    replica: int
    url: str
    active: int
    sessions: int
    peak: int
    failures: int


class NoReplica(Exception):
    """Every replica was already tried by this sample."""


@dataclass
class Replica:
    """One address and its live counters."""

    index: int
    url: str
    active: int = 0
    sessions: int = 0
    peak: int = 0  # the most sessions held at once
    failures: int = 0  # consecutive failed sessions; > 0 makes it suspect

    @property
    def suspect(self) -> bool:
        return self.failures > 0


class Lease:
    """A slot on one replica, held from before the connect until the session shuts down (release is idempotent)."""

    def __init__(self, pool: ReplicaPool, replica: Replica, queued_s: float) -> None:
        self.pool = pool
        self.replica = replica
        self.queued_s = queued_s
        self._released = False

    @property
    def url(self) -> str:
        return self.replica.url

    def record(self, attempt: int) -> ReplicaRecord:
        """The fields of the trace's `replica` record."""
        return ReplicaRecord(self.replica.index, safe_url(self.replica.url), len(self.pool.replicas), attempt,
                             round(self.queued_s, 6))

    def release(self) -> None:
        if not self._released:
            self._released = True
            self.pool._release(self.replica)


class ReplicaPool:
    """Slots per replica (`cap` each, None = no cap) and which replicas are suspect."""

    def __init__(self, urls: Iterable[str], cap: int | None) -> None:
        self.replicas = [Replica(i, u) for i, u in enumerate(urls)]
        if not self.replicas:
            raise ValueError("a replica pool needs at least one url")
        self.cap = cap
        self._lock = threading.Lock()
        self._waiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Condition] = (
            weakref.WeakKeyDictionary())

    def _pick(self, exclude: set[int]) -> Replica | None:
        """The replica to use now, or None to wait (call with the lock held); NoReplica if all are excluded."""
        left = [r for r in self.replicas if r.index not in exclude]
        if not left:
            raise NoReplica("every replica was tried")
        healthy = [r for r in left if not r.suspect]
        choose_from = healthy or left  # suspect replicas only when no healthy one is left to wait for
        free = [r for r in choose_from if self.cap is None or r.active < self.cap]
        if not free:
            return None
        best = min(free, key=lambda r: (r.failures, r.active, r.sessions, r.index))
        best.active += 1
        best.sessions += 1
        best.peak = max(best.peak, best.active)
        return best

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        cond = self._waiters.get(loop)
        if cond is None:
            cond = self._waiters[loop] = asyncio.Condition()
        return cond

    async def acquire(self, exclude: Iterable[int] = ()) -> Lease:
        """Wait for a slot on the best replica not in `exclude`; raises NoReplica when none is left."""
        skip = set(exclude)
        t0 = time.monotonic()
        cond = self._condition()
        async with cond:
            while True:
                with self._lock:
                    got = self._pick(skip)
                if got is not None:
                    return Lease(self, got, time.monotonic() - t0)
                try:  # a release on this loop wakes us; one on another loop is seen within the timeout
                    await asyncio.wait_for(cond.wait(), timeout=0.25)
                except asyncio.TimeoutError:
                    pass

    def _release(self, replica: Replica) -> None:
        with self._lock:
            replica.active -= 1
        for loop, cond in list(self._waiters.items()):
            if loop.is_closed():
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if loop is running:
                loop.create_task(_notify(cond))
            else:
                loop.call_soon_threadsafe(_wake, loop, cond)

    def outcome(self, replica: Replica, failed: bool) -> None:
        """A session on `replica` ended: failed (suspect from now on) or fine (trusted again)."""
        with self._lock:
            replica.failures = replica.failures + 1 if failed else 0

    def state(self) -> list[ReplicaState]:
        """The counters of every replica (tests, progress)."""
        with self._lock:
            return [ReplicaState(r.index, safe_url(r.url), r.active, r.sessions, r.peak, r.failures)
                    for r in self.replicas]


def _wake(loop: asyncio.AbstractEventLoop, cond: asyncio.Condition) -> None:
    loop.create_task(_notify(cond))


async def _notify(cond: asyncio.Condition) -> None:
    async with cond:
        cond.notify_all()


_POOLS: dict[tuple[str, str, int | None], ReplicaPool] = {}
_POOLS_LOCK = threading.Lock()


def replica_pool(protocol: str, url: str, cap: int | None) -> ReplicaPool:
    """The process-wide pool of `url`'s replicas for `protocol` with `cap` sessions each."""
    key = (protocol, url, cap)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ReplicaPool(split_urls(url), cap)
        return pool


def forget_pools() -> None:
    """Drop every pool (tests that reuse the same addresses for different servers)."""
    with _POOLS_LOCK:
        _POOLS.clear()
