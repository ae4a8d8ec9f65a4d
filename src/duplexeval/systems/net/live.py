"""What the client has played so far, per output item: the FIFO playout rule, run live.

A realtime client must truncate an interrupted assistant item at the audio actually PLAYED, not at
the wall-clock time since its first delta (queued audio and gaps make those differ). `LivePlayout`
applies exactly the arithmetic of `systems.playout.playout` (16 kHz sample positions, each chunk
resampled on its own, start = max(receipt, end of the queue), clear cuts at its receipt), so the
offset it reports equals what the offline playout of the same trace plays.
"""

from __future__ import annotations

from dataclasses import dataclass

from duplexeval.audio import resampled_length
from duplexeval.systems.playout import SR


@dataclass
class _Placed:
    key: str
    start: int
    end: int


class LivePlayout:
    """Incremental FIFO playout positions (no audio kept): add chunks, clear, ask what was played."""

    def __init__(self) -> None:
        self.queue_end = 0
        self.placed: list[_Placed] = []

    def add(self, key: str, pcm16: bytes, rate: int, received_at_s: float) -> None:
        # the chunk's 16 kHz length, as the offline playout resamples it
        n = resampled_length(len(pcm16) // 2, rate, SR)
        at = round(received_at_s * SR)
        start = max(at, self.queue_end)
        self.placed.append(_Placed(key, start, start + n))
        self.queue_end = start + n

    def played_samples(self, key: str, t_s: float) -> int:
        """16 kHz samples of item `key` played before `t_s`."""
        at = round(t_s * SR)
        return sum(max(0, min(p.end, at) - p.start) for p in self.placed if p.key == key)

    def received_samples(self, key: str) -> int:
        return sum(p.end - p.start for p in self.placed if p.key == key)

    def playing_at(self, t_s: float) -> str | None:
        """The item whose audio is playing or still queued at `t_s` (None when the queue is empty)."""
        at = round(t_s * SR)
        for p in self.placed:
            if p.end > at:
                return p.key
        return None

    def busy(self, t_s: float) -> bool:
        return self.queue_end > round(t_s * SR)

    def clear(self, t_s: float) -> None:
        """Drop everything queued after `t_s` (cut the playing chunk there)."""
        at = round(t_s * SR)
        if self.queue_end <= at:
            return
        for p in self.placed:
            if p.end > at:
                p.start = min(p.start, at)  # a chunk queued after `at` never plays
                p.end = at
        self.queue_end = at


def played_ms(samples_16k: int) -> int:
    """Whole milliseconds in `samples_16k` samples at 16 kHz (rounded down: never more than was played)."""
    return (samples_16k * 1000) // SR
