"""A full-duplex server's output: an in-process system's chunks laid on one continuous timeline, 80 ms at a time.

Moshi and native full-duplex servers send exactly one output frame per input frame, silence when the
model is quiet. The loopback servers get timed chunks and `clear_queue` events from an in-process
system, so this places them FIFO on a 16 kHz sample timeline (a chunk starts at the later of its
emission time and the end of what is queued; a clear drops everything queued from its time on) and
hands out the timeline frame by frame. Audio placed before the frame being handed out starts in that
frame (never backdated into a frame already sent). Also here: the client-side silence rule
(`is_silent`) and `FullDuplexOutput`, the servers' driver hooks onto a FrameStream.
"""

from __future__ import annotations

import numpy as np

from duplexeval.audio import from_pcm16, resample, to_pcm16
from duplexeval.systems.base import (
    CLEAR_QUEUE,
    FRAME_SAMPLES,
    ControlEvent,
    OutputChunk,
    Received,
)
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

# A full-duplex stream sends silence frames while the model is quiet. A client that queued them all
# would fall behind for good after one late frame (each frame is exactly 80 ms, so a FIFO never catches
# up); a client catches up on silence instead: frames whose peak is at most this many LSB (-84 dBFS,
# Opus's decoded silence) are recorded but not queued.
SILENCE_PEAK = 2


def is_silent(pcm16: bytes) -> bool:
    """True for PCM16 whose peak is at most SILENCE_PEAK (a silence frame of a full-duplex stream)."""
    a = np.frombuffer(pcm16, dtype="<i2")
    return a.size == 0 or int(np.max(np.abs(a.astype(np.int32)))) <= SILENCE_PEAK


class FrameStream:
    """Timeline of output samples at 16 kHz; `next_frame()` returns the next `frame` samples (int16)."""

    def __init__(self, frame: int = FRAME_SAMPLES) -> None:
        self.frame = frame
        self.base = 0  # timeline index of the next sample to hand out
        self._buf = np.zeros(0, dtype=np.int16)  # samples from `base` on that are already placed
        self.queue_end = 0  # timeline index where the placed audio ends
        self.placed_samples = 0
        self.dropped_samples = 0

    def add(self, item: Received) -> None:
        """Place one chunk or apply one clear_queue, at its emission time."""
        at = round(item.emitted_at_s * INPUT_SAMPLE_RATE)
        if isinstance(item, OutputChunk):
            pcm = np.frombuffer(item.pcm16, dtype="<i2").astype(np.int16)
            if item.sample_rate != INPUT_SAMPLE_RATE:
                pcm = to_pcm16(resample(from_pcm16(pcm), item.sample_rate, INPUT_SAMPLE_RATE))
            start = max(at, self.queue_end, self.base)
            end = start + pcm.shape[0]
            need = end - self.base
            if need > self._buf.shape[0]:
                self._buf = np.concatenate([self._buf, np.zeros(need - self._buf.shape[0], dtype=np.int16)])
            self._buf[start - self.base : end - self.base] = pcm
            self.queue_end = end
            self.placed_samples += pcm.shape[0]
        elif isinstance(item, ControlEvent) and item.kind == CLEAR_QUEUE:
            cut = max(at, self.base)
            if self.queue_end > cut:
                self.dropped_samples += self.queue_end - cut
                self._buf = self._buf[: cut - self.base]
                self.queue_end = cut

    def next_frame(self, samples: int | None = None) -> np.ndarray:
        """The next `frame` samples (or `samples`) of the timeline (silence where nothing is placed)."""
        size = self.frame if samples is None else int(samples)
        out = np.zeros(size, dtype=np.int16)
        n = min(size, self._buf.shape[0])
        out[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        self.base += size
        self.queue_end = max(self.queue_end, self.base)
        return out

    @property
    def speaking(self) -> bool:
        """True while placed audio remains past the frames handed out."""
        return self.queue_end > self.base and bool(np.any(self._buf))


class FullDuplexOutput:
    """The server-side output of a full-duplex model: the driver's callbacks onto a FrameStream."""

    def __init__(self) -> None:
        self.stream = FrameStream()

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.stream.add(OutputChunk(pcm16k, INPUT_SAMPLE_RATE, at_s))

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        self.stream.add(ControlEvent(CLEAR_QUEUE, at_s, dict(event.detail)))
