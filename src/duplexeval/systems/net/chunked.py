"""Input in chunks shorter than the 80 ms frame, each on its own absolute slot (carriers send 20 ms media).

A `ChunkedSession` resamples each 80 ms frame to the wire rate once and sends it as 80 / `chunk_ms`
messages, chunk j at slot + j x `chunk_ms` (sleeping on the session's clock between them), each recorded
with its own `seq` and `slot_s`, so send lateness and `input_pacing_late` are judged per chunk.
"""

from __future__ import annotations

from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.pcm import StreamResampler
from duplexeval.systems.net.session import NetSession, NetSystem
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

CHUNK_MS = (10, 20, 40, 80)  # divisors of the 80 ms frame


class ChunkedSession(NetSession):
    """A session whose input goes out as `chunk_ms` messages at `wire_rate` (subclasses encode one chunk)."""

    def __init__(self, system: NetSystem, info: SampleInfo, wire_rate: int, chunk_ms: int) -> None:
        super().__init__(system, info)
        self.wire_rate = wire_rate
        self.chunk_ms = chunk_ms
        self.resample = StreamResampler(INPUT_SAMPLE_RATE, wire_rate)
        self.chunk_bytes = wire_rate * chunk_ms // 1000 * 2

    def encode_chunk(self, pcm16: bytes) -> tuple[str, str | bytes]:
        """One chunk of PCM16 at the wire rate -> (event type for the trace, the wire message)."""
        raise NotImplementedError

    async def push_input(self, frame: bytes, t_s: float) -> None:
        if self.dead or (self.receiver is not None and self.receiver.closed.is_set()):
            self.dead = True
            return
        pcm = self.resample(frame)
        for j, off in enumerate(range(0, len(pcm), self.chunk_bytes)):
            slot = t_s + j * self.chunk_ms / 1000.0
            if j:
                await self.clock.sleep_until(slot)
            if self.dead:
                return
            seq = self.seq
            self.seq += 1
            kind, data = self.encode_chunk(pcm[off : off + self.chunk_bytes])
            await self.send(kind, data, seq=seq, slot_s=round(slot, 6))
