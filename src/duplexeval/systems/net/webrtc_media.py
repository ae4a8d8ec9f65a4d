"""The aiortc pieces both WebRTC ends share: paced audio tracks, a jitter buffer that says what it held, frames <->
PCM16.

- `PacedTrack`: an outgoing audio track of 20 ms frames on an absolute schedule, fed from a queue of
  PCM16 (silence when it is empty, as a live microphone or pipecat's `RawAudioTrack` sends); `on_frame`
  hears when each frame went to the encoder.
- `StampingJitterBuffer`: aiortc's own receive jitter buffer (the same class and settings aiortc uses
  for audio: capacity 16, prefetch 4, so a frame is released when the 4 frames after it are in) that
  also stamps when the first packet of each RTP timestamp arrived; the receiver reads it back by the
  decoded frame's `pts` (its RTP timestamp), so every received frame carries the time the buffer held it.
- `mono_pcm16(frame)`: a decoded frame (aiortc decodes Opus to 48 kHz stereo s16) as mono PCM16 bytes.

aiortc's audio jitter buffer settings are private to its `RTCRtpReceiver` (`JitterBuffer(capacity=16,
prefetch=4)`); the receiver's buffer is replaced the way pipecat's SmallWebRTC replaces the video one.
"""

from __future__ import annotations

import asyncio
import fractions
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.mediastreams import MediaStreamTrack
from aiortc.rtp import RtpPacket
from av import AudioFrame

from duplexeval.jsontypes import JsonObject

PTIME_S = 0.020
@dataclass(frozen=True)
class HoldStats:
    """How long a receive jitter buffer held its frames: count, median, p90 and max seconds (None: no frame)."""

    frames: int
    held_median_s: float | None = None
    held_p90_s: float | None = None
    held_max_s: float | None = None

    @classmethod
    def of(cls, held: list[float]) -> HoldStats:
        if not held:
            return cls(0)
        arr = np.asarray(held)
        return cls(int(arr.size), round(float(np.median(arr)), 6), round(float(np.quantile(arr, 0.9)), 6),
                   round(float(arr.max()), 6))

    def to_json(self) -> JsonObject:
        if not self.frames:
            return {"frames": 0}
        return {"frames": self.frames, "held_median_s": self.held_median_s, "held_p90_s": self.held_p90_s,
                "held_max_s": self.held_max_s}


JB_CAPACITY = 16
JB_PREFETCH = 4  # aiortc's audio jitter buffer (RTCRtpReceiver): a frame leaves when 4 more are in


class PacedTrack(MediaStreamTrack):
    """20 ms PCM16 frames at `rate`, frame n due at `start + n x 20 ms` (monotonic); silence when nothing is queued.

    `put(pcm, tag)` queues exactly one frame; `on_frame(tag, monotonic)` runs as each queued frame goes to the
    encoder (silence has no tag). `anchor(t)` moves the schedule so that the next frame is due at monotonic `t`;
    while `waiting` is set, a frame that is due finds the queue empty only after a bounded wait (`wait_s`),
    so a frame queued at its due time is never replaced by silence.
    """

    kind = "audio"

    def __init__(self, rate: int, on_frame: Callable[[Any, float], None] | None = None, wait_s: float = 0.02) -> None:
        super().__init__()
        self.rate = rate
        self.samples = int(rate * PTIME_S)
        self.queue: deque[tuple[bytes, Any]] = deque()
        self.start: float | None = None
        self.n = 0
        self.on_frame = on_frame
        self.waiting = False
        self.wait_s = wait_s
        self.stalled = False  # a stalled sender stops the stream (the connection stays up)
        self.jitter_s = 0.0
        self.rng: Any = None
        self._put = asyncio.Event()

    def put(self, pcm16: bytes, tag: Any = None) -> None:
        if len(pcm16) != self.samples * 2:
            raise ValueError(f"a frame is {self.samples} samples, got {len(pcm16) // 2}")
        self.queue.append((pcm16, tag))
        self._put.set()

    def clear(self) -> None:
        self.queue.clear()

    def anchor(self, at_mono: float) -> None:
        self.start = at_mono - self.n * PTIME_S

    async def recv(self) -> AudioFrame:
        if self.start is None:
            self.start = time.monotonic()
        while True:
            wait = self.start + self.n * PTIME_S - time.monotonic()
            if wait > 0.0005:
                await asyncio.sleep(min(wait, PTIME_S))
                continue
            if self.stalled:
                await asyncio.sleep(PTIME_S)
                self.anchor(time.monotonic())
                continue
            break
        if not self.queue and self.waiting:
            self._put.clear()
            try:
                await asyncio.wait_for(self._put.wait(), timeout=self.wait_s)
            except asyncio.TimeoutError:
                pass
        if self.jitter_s and self.rng is not None:
            await asyncio.sleep(self.rng.uniform(0.0, self.jitter_s))
        pcm, tag = self.queue.popleft() if self.queue else (bytes(self.samples * 2), None)
        frame = AudioFrame.from_ndarray(np.frombuffer(pcm, dtype="<i2").reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self.rate
        frame.pts = self.n * self.samples
        frame.time_base = fractions.Fraction(1, self.rate)
        if tag is not None and self.on_frame is not None:
            self.on_frame(tag, time.monotonic())
        self.n += 1
        return frame


class StampingJitterBuffer(JitterBuffer):
    """aiortc's audio jitter buffer that stamps each frame's arrival and release (monotonic).

    aiortc hands a released frame to its decoder with the RTP timestamp rebased to the first one
    (`TimestampMapper`), which is the decoded frame's `pts`; `held(pts)` returns that frame's
    (arrival of its first packet, release from the buffer).
    """

    def __init__(self) -> None:
        super().__init__(capacity=JB_CAPACITY, prefetch=JB_PREFETCH)
        self._arrived: dict[int, float] = {}
        self._held: dict[int, tuple[float, float]] = {}
        self._ts_origin: int | None = None  # (JitterBuffer has its own _origin: a sequence number)

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        now = time.monotonic()
        self._arrived.setdefault(packet.timestamp, now)
        pli, frame = super().add(packet)
        if frame is not None:
            if self._ts_origin is None:
                self._ts_origin = frame.timestamp
            mapped = (frame.timestamp - self._ts_origin) % (1 << 32)
            arrived = self._arrived.pop(frame.timestamp, now)
            self._held[mapped] = (arrived, now)
        for store in (self._arrived, self._held):  # bounded: frames never asked for are dropped
            if len(store) > 4096:
                for key in list(store)[:2048]:
                    del store[key]
        return pli, frame

    def held(self, pts: int) -> tuple[float, float] | None:
        return self._held.pop(pts, None)


def install_stamping_buffer(receiver: Any) -> StampingJitterBuffer:
    """Put a `StampingJitterBuffer` in an audio `RTCRtpReceiver` (before any packet arrives)."""
    jb = StampingJitterBuffer()
    receiver._RTCRtpReceiver__jitter_buffer = jb
    return jb


def mono_pcm16(frame: AudioFrame) -> bytes:
    """A decoded s16 frame (packed, any channel count) as mono PCM16 (channels averaged)."""
    arr = frame.to_ndarray()
    channels = len(frame.layout.channels)
    x = arr.reshape(-1, channels) if arr.ndim == 2 and arr.shape[0] == 1 else arr.T
    mono = x.astype(np.int32).mean(axis=1) if channels > 1 else x[:, 0]
    return bytes(np.clip(np.rint(mono), -32768, 32767).astype("<i2").tobytes())
