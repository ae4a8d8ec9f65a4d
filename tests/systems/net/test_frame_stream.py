"""The loopback full-duplex servers' output timeline: FIFO placement, clear_queue, one frame at a time."""

from __future__ import annotations

import numpy as np

from duplexeval.systems.base import CLEAR_QUEUE, ControlEvent, OutputChunk
from duplexeval.systems.net.frame_stream import FrameStream


def _chunk(n: int, at: float, value: int = 1000) -> OutputChunk:
    return OutputChunk(np.full(n, value, dtype="<i2").tobytes(), 16000, at)


def test_chunks_land_at_their_emission_time_and_queue_fifo():
    fs = FrameStream(frame=100)
    fs.add(_chunk(150, at=50 / 16000, value=1))
    fs.add(_chunk(20, at=0.0, value=2))  # emitted earlier but queued behind the first chunk
    frames = np.concatenate([fs.next_frame() for _ in range(3)])
    assert (frames[:50] == 0).all() and (frames[50:200] == 1).all() and (frames[200:220] == 2).all()
    assert (frames[220:] == 0).all()


def test_late_chunk_starts_in_the_current_frame_never_backdated():
    fs = FrameStream(frame=100)
    fs.next_frame()
    fs.next_frame()  # 200 samples handed out
    fs.add(_chunk(30, at=120 / 16000))
    f = fs.next_frame()
    assert (f[:30] == 1000).all() and (f[30:] == 0).all()


def test_clear_queue_drops_what_is_queued_from_its_time():
    fs = FrameStream(frame=100)
    fs.add(_chunk(1000, at=0.0))
    first = fs.next_frame()
    fs.add(ControlEvent(CLEAR_QUEUE, 130 / 16000))
    second = fs.next_frame()
    assert (first == 1000).all()
    assert (second[:30] == 1000).all() and (second[30:] == 0).all()
    assert fs.dropped_samples == 1000 - 130 and not fs.speaking
    assert (fs.next_frame() == 0).all()
