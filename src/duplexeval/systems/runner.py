"""Drive one session over one input: push 80 ms frames on a clock, poll output, record a trace.

FDB feeds only the input: after the last frame the runner keeps polling until T and then closes
the session; nothing received after T is observed. An exception inside the system is recorded
in the trace (the sample becomes ineligible with reason `system_error`), never raised.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import (
    EVENT_KINDS,
    FRAME_SAMPLES,
    ControlEvent,
    OutputChunk,
    ProtocolViolation,
    SampleInfo,
    System,
)
from duplexeval.systems.clock import Clock, VirtualClock, WallClock
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

# A wall-clock send later than this past its slot makes the sample ineligible (`input_pacing_late`).
MAX_SEND_LATENESS_S = 0.080
# Every await of a session method (open_session, push_input, poll_output, close) must return within this many
# seconds, or the sample fails with `system_error`. Network adapters bound their own waits well below it.
DEFAULT_CALL_TIMEOUT_S = 120.0


class CallTimeout(Exception):
    """A system's async method did not return within the per-call timeout."""


class PluginExit(Exception):
    """A system's method called ``sys.exit``: an error of that sample, not the end of the run."""


@dataclass
class ReceivedItem:
    """One item as received: audio (`pcm` int16 at `sample_rate`) or a control event."""

    kind: str  # "audio" or a ControlEvent kind
    emitted_at_s: float
    received_at_s: float
    sample_rate: int = 0
    pcm: np.ndarray | None = None
    detail: JsonObject = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return 0 if self.pcm is None else int(self.pcm.shape[0])


@dataclass
class SessionTrace:
    """Everything observed in one session, in receipt order, plus input pacing and any error."""

    clock: str
    n_frames: int
    pad_samples: int
    max_send_lateness_s: float
    items: list[ReceivedItem]
    error: str | None = None
    error_at_s: float | None = None
    sends: list[tuple[float, float, float]] = field(default_factory=list)  # wall clock: (slot, start, done)
    wire: Any = None  # a network session's WireTrace (systems.net.trace), when the session keeps one

    def input_json(self) -> JsonObject:
        return {
            "frames": self.n_frames,
            "frame_samples": FRAME_SAMPLES,
            "last_frame_padding_samples": self.pad_samples,
            "max_send_lateness_s": round(self.max_send_lateness_s, 6),
        }


def _frames(pcm: np.ndarray) -> tuple[list[bytes], int]:
    """Split int16 PCM into 1280-sample frames, zero-padding the last one; returns (frames, padding)."""
    n = int(pcm.shape[0])
    n_frames = max(1, math.ceil(n / FRAME_SAMPLES))
    pad = n_frames * FRAME_SAMPLES - n
    padded = np.concatenate([pcm.astype("<i2"), np.zeros(pad, dtype="<i2")]) if pad else pcm.astype("<i2")
    data = padded.tobytes()
    step = FRAME_SAMPLES * 2
    return [data[i * step : (i + 1) * step] for i in range(n_frames)], pad


def _to_item(obj: object, received_at: float) -> ReceivedItem:
    if isinstance(obj, OutputChunk):
        if not isinstance(obj.pcm16, (bytes, bytearray)) or len(obj.pcm16) % 2:
            raise ProtocolViolation("output chunk is not whole PCM16 samples")
        if not isinstance(obj.sample_rate, int) or obj.sample_rate <= 0:
            raise ProtocolViolation(f"output chunk has a bad sample rate {obj.sample_rate!r}")
        pcm = np.frombuffer(bytes(obj.pcm16), dtype="<i2").astype(np.int16)
        return ReceivedItem("audio", float(obj.emitted_at_s), received_at, obj.sample_rate, pcm)
    if isinstance(obj, ControlEvent):
        if obj.kind not in EVENT_KINDS:
            raise ProtocolViolation(f"unknown control event {obj.kind!r}")
        return ReceivedItem(obj.kind, float(obj.emitted_at_s), received_at, detail=dict(obj.detail))
    raise ProtocolViolation(f"poll_output returned {type(obj).__name__}, expected OutputChunk or ControlEvent")


_TIMEOUT = getattr(asyncio, "timeout", None)  # Python 3.11+: a deadline inside this task, no task per call


async def _bounded(method: str, awaitable: Any, timeout_s: float) -> Any:
    """Await one call into the system, at most `timeout_s` seconds; its ``sys.exit`` becomes a ``PluginExit``."""

    async def guarded() -> Any:
        try:
            return await awaitable
        except SystemExit as exc:  # caught where it is raised: a SystemExit leaving a task stops the event loop
            raise PluginExit(f"{method} called sys.exit({exc.code!r})") from None

    try:
        if _TIMEOUT is not None:
            async with _TIMEOUT(timeout_s):
                return await guarded()
        return await asyncio.wait_for(guarded(), timeout_s)  # Python 3.10
    except asyncio.TimeoutError:
        raise CallTimeout(f"{method} did not return within {timeout_s:g} s (--call-timeout)") from None


async def run_session_async(system: System, pcm16: np.ndarray, info: SampleInfo, clock: Clock | None = None,
                            call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SessionTrace:
    """Feed `pcm16` (int16, 16 kHz) to a new session frame by frame on `clock`; poll after every frame and at T.

    Each call into the system is bounded by `call_timeout_s` (wall-clock seconds)."""
    clk: Clock = clock or VirtualClock()
    frames, pad = _frames(pcm16)
    T = info.T
    items: list[ReceivedItem] = []
    trace = SessionTrace(getattr(clk, "name", type(clk).__name__), len(frames), pad, 0.0, items)
    prev_poll = 0.0
    last_received = 0.0

    async def poll(t: float) -> None:
        nonlocal prev_poll, last_received
        assert session is not None  # polled only once the session is open
        got = await _bounded("poll_output", session.poll_output(t), call_timeout_s)
        now = clk.now()
        for obj in got:
            emitted = float(getattr(obj, "emitted_at_s", math.nan))
            if not math.isfinite(emitted):
                raise ProtocolViolation("emitted_at_s is not a finite number")
            if clk.exact_receipt:
                if emitted > now + 1e-9:
                    raise ProtocolViolation(f"item emitted at {emitted:.6f} s returned by a poll at {now:.6f} s")
                received = min(max(emitted, prev_poll), now)
            else:  # wall clock: the arrival stamp of the adapter's receive task, else (no stamp) the poll time
                stamp = getattr(obj, "received_at_s", None)
                received = now if stamp is None else min(float(stamp), now)
            received = max(received, last_received)
            last_received = received
            items.append(_to_item(obj, received))
        prev_poll = now

    session = None
    try:
        session = await _bounded("open_session", system.open_session(info), call_timeout_s)
        # A network session owns its clock (input slot 0 = the end of its handshake); a wall-clock
        # system without one gets a WallClock started now.
        own = getattr(session, "clock", None)
        if own is not None:
            clk = own
        elif getattr(system, "wall_clock", False) and clk.exact_receipt:
            wall = WallClock()
            wall.start()
            clk = wall
        trace.clock = getattr(clk, "name", type(clk).__name__)
        trace.wire = getattr(session, "wire", None)
        for i, frame in enumerate(frames):
            t = i * FRAME_SAMPLES / INPUT_SAMPLE_RATE
            await clk.sleep_until(t)
            start = clk.now()
            trace.max_send_lateness_s = max(trace.max_send_lateness_s, start - t)
            await _bounded("push_input", session.push_input(frame, t), call_timeout_s)
            if not clk.exact_receipt:
                trace.sends.append((t, start, clk.now()))
            await poll(t)
        await clk.sleep_until(T)
        await poll(T)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken system is a recorded outcome, not a crash
        trace.error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
        trace.error_at_s = round(clk.now(), 6)
        if trace.wire is None:
            trace.wire = getattr(exc, "wire", None)
    finally:
        if session is not None:
            try:
                await _bounded("close", session.close(), call_timeout_s)
            except (Exception, SystemExit) as exc:  # noqa: BLE001
                if trace.error is None:
                    trace.error = f"close: {type(exc).__name__}: {exc}"[:500]
                    trace.error_at_s = round(clk.now(), 6)
    return trace


def run_session(system: System, pcm16: np.ndarray, info: SampleInfo, clock: Clock | None = None) -> SessionTrace:
    """Synchronous wrapper around `run_session_async` (one event loop per call)."""
    return asyncio.run(run_session_async(system, pcm16, info, clock))
