"""The system-under-test interface: sessions that take 80 ms input frames and emit timed output audio.

It is async so that network adapters (WebSocket realtime APIs, paced on a wall clock) implement the
same protocol as in-process systems, which run on a virtual clock (see runner.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from duplexeval.jsontypes import JsonObject
from duplexeval.units import FRAME_S as FRAME_S
from duplexeval.units import FRAME_SAMPLES as FRAME_SAMPLES
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE  # systems take 16 kHz input in 80 ms frames


@dataclass(frozen=True)
class SampleInfo:
    """What a session is told about the input it will receive (never the annotation)."""

    subset: str | None
    sample_id: str | None
    T: float
    n_samples: int
    sample_rate: int = INPUT_SAMPLE_RATE
    frame_samples: int = FRAME_SAMPLES


@dataclass(frozen=True)
class OutputChunk:
    """Output audio: mono PCM16 little-endian bytes at `sample_rate`, emitted at `emitted_at_s` (input time)."""

    pcm16: bytes
    sample_rate: int
    emitted_at_s: float
    received_at_s: float | None = None  # set by network adapters: stamped on arrival by their receive task

    @property
    def n_samples(self) -> int:
        return len(self.pcm16) // 2

    @property
    def duration_s(self) -> float:
        return self.n_samples / self.sample_rate


# Control events a system (or a protocol adapter) can send along with its audio.
CLEAR_QUEUE = "clear_queue"  # stop playback now and drop everything queued (realtime "speech_started")
EVENT_KINDS = (CLEAR_QUEUE,)


@dataclass(frozen=True)
class ControlEvent:
    """A timed control message, e.g. `clear_queue` when the user starts speaking over the output."""

    kind: str
    emitted_at_s: float
    detail: JsonObject = field(default_factory=dict)
    received_at_s: float | None = None  # set by network adapters: stamped on arrival by their receive task


Received = OutputChunk | ControlEvent


@runtime_checkable
class Session(Protocol):
    """One conversation over one input. Times are seconds on the input window [0, T]."""

    async def push_input(self, frame: bytes, t_s: float) -> None:
        """Receive one input frame (1280 PCM16 samples at 16 kHz) that starts at `t_s`."""

    async def poll_output(self, t_s: float) -> list[Received]:
        """Everything emitted up to `t_s` not yet returned, in emission order (emitted_at_s <= t_s)."""

    async def close(self) -> None:
        """End the session; nothing more is observed."""


@runtime_checkable
class System(Protocol):
    """A system under test: a name, its parameters (recorded in the manifest) and a session factory."""

    name: str

    def params(self) -> JsonObject:
        """Every parameter that affects the output, JSON-serializable."""

    def version(self) -> str:
        """A version string for the manifest (package version plus tool versions it depends on)."""

    async def open_session(self, info: SampleInfo) -> Session:
        """Start a session for one input."""


class ProtocolViolation(Exception):
    """A system broke a rule of the protocol (e.g. emitted in the future, odd-length PCM)."""
