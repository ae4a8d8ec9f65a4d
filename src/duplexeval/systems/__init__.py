"""Systems under test: the session interface, clocks, the runner, FIFO playout, baselines and the registry.

See docs/systems.md. Heavy parts (VAD, TTS) load only when a baseline session starts.
"""

from __future__ import annotations

from duplexeval.systems.base import CLEAR_QUEUE, ControlEvent, OutputChunk, SampleInfo, Session, System
from duplexeval.systems.registry import make_system, register_system, system_names

__all__ = [
    "CLEAR_QUEUE",
    "ControlEvent",
    "OutputChunk",
    "SampleInfo",
    "Session",
    "System",
    "make_system",
    "register_system",
    "system_names",
]
