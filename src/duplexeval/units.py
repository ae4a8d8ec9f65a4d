"""The shared vocabulary: sample rates, frames, time units, and the small types every family uses.

The one home of these constants (other modules import them from here). Times inside the scorers are integer
microseconds, so every comparison is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLE_RATE = 16000  # Hz: every internal waveform (VAD, ASR, scoring) is 16 kHz mono
FRAME_MS = 80  # the streaming frame of systems and controllers
FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000  # 1280
FRAME_S = FRAME_MS / 1000
US_PER_S = 1_000_000
FRAME_US = FRAME_MS * 1000


def to_us(seconds: float) -> int:
    """Seconds to integer microseconds, rounded (spec 000: times are rounded before any comparison)."""
    return int(round(float(seconds) * US_PER_S))


def to_s(us: int) -> float:
    """Integer microseconds back to seconds."""
    return us / US_PER_S


@dataclass(frozen=True)
class TimedWord:
    """One word with absolute start and end times in seconds (end None when a file has a null end).

    The one timed-word type: ASR output (`asr.base.Word` is this class), transcripts, EOT turn words.
    """

    text: str
    start: float
    end: float | None


@dataclass(frozen=True)
class Span:
    """A time span in integer microseconds (a transcript word in the scorers: `end_us` equals `start_us` for a word
    with a null end)."""

    start_us: int
    end_us: int


def merge_spans(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of [start, end) intervals, sorted and merged where they touch or overlap."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out
