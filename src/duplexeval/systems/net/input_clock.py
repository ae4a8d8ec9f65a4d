"""A loopback server session's input clock: where input time 0 is on the server's monotonic clock.

Every loopback server (`server.ServerSession` for the WebSocket protocols, `webrtc_server.WebRtcServerSession`)
delivers the served system's output at input times, so both keep the same rule: the origin is the earliest
`arrival - audio received before it` over all input packets, so a client whose first packets were late (a busy
machine) does not shift every later delivery; the first packet starts the timed faults (`--fault KIND@S`, S in
input time).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

FaultCall = Callable[[str, float], Coroutine[Any, Any, None]]


class InputClock:
    """The input timeline of one served session (see the module docstring)."""

    def __init__(self, faults: Sequence[tuple[str, float]], fire: FaultCall, wake: asyncio.Event) -> None:
        self.t0: float | None = None  # monotonic time of input time 0; None before any input
        self._heard_s = 0.0
        self._faults = tuple(faults)
        self._fire = fire  # the session's fault action, awaited from input time S on
        self._wake = wake  # set when the origin moves, so a sender waiting on the old one looks again

    def heard(self, seconds: float) -> list[asyncio.Task[None]]:
        """An input packet of `seconds` arrived now; returns the timed-fault tasks it started (on the first one)."""
        implied = time.monotonic() - self._heard_s
        self._heard_s += seconds
        first = self.t0 is None
        if self.t0 is None or implied < self.t0:
            self.t0 = implied
            self._wake.set()
        if not first:
            return []
        loop = asyncio.get_running_loop()
        return [loop.create_task(self._fire(kind, s)) for kind, s in self._faults]

    def now_s(self) -> float:
        """Input time now (0 before any input)."""
        return 0.0 if self.t0 is None else time.monotonic() - self.t0

    def wait_s(self, at_s: float) -> float:
        """Seconds from now until input time `at_s` (0 before any input: the origin is not known yet)."""
        return 0.0 if self.t0 is None else self.t0 + at_s - time.monotonic()
