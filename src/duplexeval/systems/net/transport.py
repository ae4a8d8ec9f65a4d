"""The WebSocket transport every adapter uses: bounded connect with retries, and a receive task that stamps arrivals.

Contract:
- `connect(url, headers, trace, settings)` opens a `websockets` client connection with no compression,
  no keepalive pings (a server may not answer them), no proxy, an explicit `max_size` (8 MiB by default)
  and open/close timeouts. HTTP 503 ("busy") and a refused connection are retried at most
  `CONNECT_RETRIES` times, `RETRY_DELAY_S` apart; every attempt is a `connect_attempt` record.
  Anything else (or running out of retries) raises `ConnectFailed`.
- `Receiver` runs one task that reads messages and hands each to `on_message(t, data)` with `t` taken
  on the trace's monotonic clock the moment the message arrived, never at a later poll. A message
  over `max_size` becomes a `violation` record; a close becomes a `closed` record (`by` client or
  server, with the code).
- Header values (API keys) are never recorded; `redact` strips secrets (in every form `redaction` knows)
  from any text that is, before it is cut to its bound (a cut never leaves half a key).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from duplexeval import __version__, redaction
from duplexeval.systems.net.trace import WireTrace

log = logging.getLogger("duplexeval.net")
# websockets' own logger at DEBUG prints the upgrade request headers (an Authorization header with them);
# the connections get this one, pinned at INFO, so no logging setup can make it print a key.
WS_LOG = logging.getLogger("duplexeval.net.websockets")
WS_LOG.setLevel(logging.INFO)

_TIMEOUT = getattr(asyncio, "timeout", None)  # Python 3.11+
CONNECT_RETRIES = 3  # retries after the first attempt, on HTTP 503 or a refused connection only
RETRY_DELAY_S = 0.25
DEFAULT_MAX_SIZE = 8 * 1024 * 1024
MESSAGE_TOO_BIG = 1009


@dataclass(frozen=True)
class TransportSettings:
    """Bounds of one connection (all recorded in the trace header)."""

    max_size: int = DEFAULT_MAX_SIZE
    open_timeout_s: float = 10.0
    close_timeout_s: float = 2.0
    send_timeout_s: float = 5.0


class ConnectFailed(Exception):
    """The server could not be reached (after the allowed retries)."""


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with `secrets` (registered here) and every other known secret removed in every form (`redaction`)."""
    return redaction.redact_with(text, secrets)


def _why(exc: BaseException) -> tuple[str, bool]:
    """A short outcome label for a failed attempt and whether it may be retried."""
    if isinstance(exc, InvalidStatus):
        code = exc.response.status_code
        return f"http_{code}", code == 503
    if isinstance(exc, ConnectionRefusedError):
        return "refused", True
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout", False
    return type(exc).__name__, False


async def connect(
    url: str,
    headers: dict[str, str],
    trace: WireTrace,
    settings: TransportSettings,
    secrets: Iterable[str] = (),
) -> ClientConnection:
    """Open the connection, retrying 503 / refused at most CONNECT_RETRIES times; raise ConnectFailed."""
    secrets = tuple(secrets)
    last = ""
    for attempt in range(1, CONNECT_RETRIES + 2):
        t = trace.now()
        try:
            ws = await websockets.connect(
                url,
                additional_headers=headers or None,
                compression=None,
                ping_interval=None,
                proxy=None,
                max_size=settings.max_size,
                open_timeout=settings.open_timeout_s,
                close_timeout=settings.close_timeout_s,
                user_agent_header=f"duplexeval/{__version__}",
                logger=WS_LOG,
            )
        except Exception as exc:  # noqa: BLE001 - every failure is a recorded attempt
            outcome, retry = _why(exc)
            last = redact(f"{outcome}: {' '.join(str(exc).split())}", secrets)[:300]
            trace.meta("connect_attempt", t, attempt=attempt, result=outcome)
            if retry and attempt <= CONNECT_RETRIES:
                log.warning("connect %s attempt %d: %s; retrying in %.2f s", _safe_url(url), attempt, outcome,
                            RETRY_DELAY_S)
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            raise ConnectFailed(last) from None
        trace.meta("connect_attempt", t, attempt=attempt, result="ok")
        return ws
    raise ConnectFailed(last)  # pragma: no cover - the loop always returns or raises


def _safe_url(url: str) -> str:
    """The URL without its query string (a user may put a token there)."""
    return url.split("?", 1)[0]


OnMessage = Callable[[float, "str | bytes"], Awaitable[None] | None]


class Receiver:
    """One task reading `ws`; each message is stamped on arrival and passed to `on_message(t, data)`."""

    def __init__(self, ws: ClientConnection, trace: WireTrace, on_message: OnMessage,
                 max_size: int = DEFAULT_MAX_SIZE) -> None:
        self.ws = ws
        self.max_size = max_size
        self.trace = trace
        self.on_message = on_message
        self.closing_by_client = False
        self.closed = asyncio.Event()
        self.last_t: float | None = None
        self.task: asyncio.Task[None] = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                data = await self.ws.recv()
                t = self.trace.now()
                self.last_t = t
                res = self.on_message(t, data)
                if res is not None:
                    await res
        except ConnectionClosed as exc:
            t = self.trace.now()
            sent = exc.sent
            too_big = sent is not None and sent.code == MESSAGE_TOO_BIG
            if too_big:
                self.trace.meta("violation", t, what=f"a message over the size bound ({self.max_size} bytes)")
            rcvd = exc.rcvd
            by = "client" if self.closing_by_client or too_big else "server"
            self.trace.meta("closed", t, by=by, code=None if rcvd is None else rcvd.code,
                            reason=None if rcvd is None else rcvd.reason[:200])
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken decoder is the adapter's bug, recorded not raised
            self.trace.meta("violation", self.trace.now(), what=f"receive failed: {type(exc).__name__}: {exc}"[:300])
            self.trace.meta("closed", self.trace.now(), by="client", code=None, reason="receive error")
        finally:
            self.closed.set()

    async def close(self) -> None:
        """Close from the client side (recorded as `by: client`) and wait for the receive task, bounded."""
        self.closing_by_client = True
        try:
            await asyncio.wait_for(self.ws.close(), timeout=self.ws.close_timeout or 2.0)
        except Exception as exc:  # noqa: BLE001 - the close handshake is best effort
            log.debug("close handshake: %s", type(exc).__name__)
        try:
            await asyncio.wait_for(self.closed.wait(), timeout=2.0)
        except asyncio.TimeoutError:
            self.task.cancel()
            self.trace.meta("closed", self.trace.now(), by="client", code=None, reason="receive task cancelled")


async def send_bounded(ws: ClientConnection, data: str | bytes, timeout_s: float) -> bool:
    """Send one message within `timeout_s`; False when it timed out (the caller records `send_timeout`).

    On Python 3.11+ `asyncio.timeout` bounds the send inside the caller's task: no task per packet (as
    `wait_for` makes before 3.12), so the frame is written in the loop step of the deadline that woke it.
    """
    try:
        if _TIMEOUT is not None:
            async with _TIMEOUT(timeout_s):
                await ws.send(data)
        else:  # Python 3.10
            await asyncio.wait_for(ws.send(data), timeout=timeout_s)
        return True
    except asyncio.TimeoutError:
        return False


def closed_error(exc: BaseException) -> bool:
    """True for the errors a send raises when the socket is already closed."""
    return isinstance(exc, ConnectionClosed)


def describe(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    return redact(f"{type(exc).__name__}: {' '.join(str(exc).split())}", secrets)[:300]


__all__ = [
    "CONNECT_RETRIES",
    "DEFAULT_MAX_SIZE",
    "RETRY_DELAY_S",
    "ConnectFailed",
    "Receiver",
    "TransportSettings",
    "closed_error",
    "connect",
    "describe",
    "redact",
    "send_bounded",
]
