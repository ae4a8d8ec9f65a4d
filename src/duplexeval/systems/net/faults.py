"""Fault injection options of the loopback servers: `--fault disconnect@S|error@S|stall@S|oversize@S|malformed@S`
and `busy=N`, `jitter_ms=J`, `slow_start_ms=M`, parsed once for every protocol.

S is seconds on the server session's input timeline (0 = the first input audio packet arrived).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from duplexeval.errors import InputError

TIMED = ("disconnect", "error", "stall", "oversize", "malformed")
COUNTED = ("busy", "jitter_ms", "slow_start_ms")


@dataclass(frozen=True)
class Faults:
    """What a loopback server does wrong, and when."""

    at: tuple[tuple[str, float], ...] = ()  # (kind, S) in the order given
    busy: int = 0  # answer HTTP 503 to the first N connection attempts
    jitter_ms: float = 0.0  # delay each delivery by U(0, J) ms (order kept)
    slow_start_ms: float = 0.0  # wait this long after the upgrade before the protocol's first message

    def times(self, kind: str) -> list[float]:
        return [s for k, s in self.at if k == kind]

    def describe(self) -> str:
        parts = [f"{k}@{s:g}" for k, s in self.at]
        parts += [f"{k}={getattr(self, k):g}" for k in COUNTED if getattr(self, k)]
        return ", ".join(parts) or "none"


def parse_faults(specs: Iterable[str]) -> Faults:
    """Parse `--fault` values; one-line InputError naming the bad one."""
    at: list[tuple[str, float]] = []
    counted: dict[str, float] = {}
    for spec in specs:
        spec = spec.strip()
        if "@" in spec:
            kind, _, raw = spec.partition("@")
            if kind not in TIMED:
                raise InputError(f"--fault {spec!r}: unknown fault {kind!r} (timed: {', '.join(TIMED)})")
            try:
                s = float(raw)
            except ValueError:
                raise InputError(f"--fault {spec!r}: {raw!r} is not a time in seconds") from None
            if not math.isfinite(s) or s < 0:
                raise InputError(f"--fault {spec!r}: the time must be a finite number >= 0")
            at.append((kind, s))
        elif "=" in spec:
            kind, _, raw = spec.partition("=")
            if kind not in COUNTED:
                raise InputError(f"--fault {spec!r}: unknown option {kind!r} (options: {', '.join(COUNTED)})")
            try:
                v = float(raw)
            except ValueError:
                raise InputError(f"--fault {spec!r}: {raw!r} is not a number") from None
            if not math.isfinite(v) or v < 0 or (kind == "busy" and v != int(v)):
                raise InputError(f"--fault {spec!r}: must be a {'whole ' if kind == 'busy' else ''}number >= 0")
            counted[kind] = v
        else:
            raise InputError(f"--fault {spec!r}: expected KIND@SECONDS or OPTION=VALUE")
    return Faults(tuple(at), int(counted.get("busy", 0)), counted.get("jitter_ms", 0.0),
                  counted.get("slow_start_ms", 0.0))
