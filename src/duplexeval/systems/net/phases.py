"""Spread the input-slot phases of the network sessions running on one event loop across the 80 ms frame.

Every session sends packet i at `origin + i * 80 ms` (absolute). N sessions whose handshakes end
together would all send in the same few milliseconds of every frame and queue behind each other on
the one loop thread (`benchmarks/network_capture.py` measured that as the send-deviation tail). The
planner gives a new session an origin at most one frame after its handshake whose phase
(origin mod 80 ms) is the middle of the widest gap between the phases of the sessions still running
on the same loop. A session alone on its loop starts at once, so a sequential run is unchanged; the
input timeline of every session still starts at its own slot 0, so nothing measured moves.
"""

from __future__ import annotations

import asyncio
import weakref

from duplexeval.units import FRAME_S


class PhasePlanner:
    """Origins for new sessions, each in the widest free phase gap of the sessions still open."""

    def __init__(self, period_s: float = FRAME_S, enabled: bool = True) -> None:
        self.period_s = period_s
        self.enabled = enabled
        self._phases: dict[int, float] = {}
        self._next = 0

    def claim(self, now: float) -> tuple[int, float]:
        """(token, origin) for a session ready at `now`: now <= origin < now + period (monotonic seconds)."""
        period = self.period_s
        origin = now
        if self.enabled and self._phases:
            ph = sorted(self._phases.values())
            gap, mid = -1.0, 0.0
            for a, b in zip(ph, [*ph[1:], ph[0] + period]):
                if b - a > gap:
                    gap, mid = b - a, (a + b) / 2
            origin = now + (mid - now) % period
        token = self._next
        self._next += 1
        self._phases[token] = origin % period
        return token, origin

    def release(self, token: int) -> None:
        """The session ended: its phase is free again."""
        self._phases.pop(token, None)

    def phases(self) -> list[float]:
        """The phases (seconds into the frame) of the sessions holding a claim, sorted."""
        return sorted(self._phases.values())


_PLANNERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PhasePlanner] = weakref.WeakKeyDictionary()
_SPREAD = [True]


def planner() -> PhasePlanner:
    """The planner of the running event loop (one per loop; a new loop starts with no claims)."""
    loop = asyncio.get_running_loop()
    p = _PLANNERS.get(loop)
    if p is None:
        p = _PLANNERS[loop] = PhasePlanner(enabled=_SPREAD[0])
    return p


def set_spread(enabled: bool) -> None:
    """Turn phase spreading on or off for loops created from now on (benchmarks compare both)."""
    _SPREAD[0] = bool(enabled)
