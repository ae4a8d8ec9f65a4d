"""Clocks that pace a session: a virtual clock (instant, exact) now; a wall clock for network systems."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """What the session runner needs of a clock: now, a wait until a time, and whether receipt is exact."""

    exact_receipt: bool

    def now(self) -> float: ...

    async def sleep_until(self, t_s: float) -> None: ...


class VirtualClock:
    """Time moves only when the runner says so: faster than real time and exactly reproducible.

    An in-process system reports when it emitted each item; with no transport in between, that is
    also when it was received (clamped to the polling interval it was returned in).
    """

    exact_receipt = True
    name = "virtual"

    def __init__(self) -> None:
        self._now = 0.0

    def now(self) -> float:
        return self._now

    async def sleep_until(self, t_s: float) -> None:
        if t_s > self._now:
            self._now = t_s


class WallClock:
    """Real time since `start()`; receipt time is when an item arrived (for network adapters)."""

    exact_receipt = False
    name = "wall"

    def __init__(self) -> None:
        self._t0: float | None = None

    def start(self) -> None:
        self._t0 = time.monotonic()

    def now(self) -> float:
        if self._t0 is None:
            self.start()
        assert self._t0 is not None
        return time.monotonic() - self._t0

    async def sleep_until(self, t_s: float) -> None:
        delay = t_s - self.now()
        if delay > 0:
            await asyncio.sleep(delay)
