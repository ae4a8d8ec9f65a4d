"""Speech regions for ASR: Silero VAD segments, merged across short gaps and padded.

Only these regions are transcribed, so silence and noise give no words (Whisper invents
"Thank you." on silence), and the aligner gets short clips with a little silence around them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE
from duplexeval.vad import VadSettings, load_vad, vad_signature


@dataclass(frozen=True)
class RegionSettings:
    """How VAD segments become ASR regions (all in seconds unless named _ms)."""

    threshold: float = 0.5
    min_speech_ms: int = 100
    min_silence_ms: int = 100
    speech_pad_ms: int = 30
    merge_gap_s: float = 0.5
    pad_s: float = 0.2

    def to_json(self) -> JsonObject:
        return asdict(self)


def merge_regions(segments: list[tuple[int, int]], n_samples: int, merge_gap_s: float,
                  pad_s: float) -> list[tuple[int, int]]:
    """Merge sample-index segments whose gap is < merge_gap_s, pad each side by pad_s, keep inside [0, n)."""
    gap = int(round(merge_gap_s * SAMPLE_RATE))
    pad = int(round(pad_s * SAMPLE_RATE))
    merged: list[list[int]] = []
    for s, e in sorted(segments):
        if merged and s - merged[-1][1] < gap:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out: list[tuple[int, int]] = []
    prev_e = 0
    for s, e in merged:
        lo, hi = max(0, s - pad), min(n_samples, e + pad)
        if out and lo < out[-1][1]:  # padding never makes two regions overlap: meet mid-gap
            mid = (prev_e + s) // 2
            out[-1] = (out[-1][0], mid)
            lo = mid
        out.append((lo, hi))
        prev_e = e
    return [(s, e) for s, e in out if e > s]


def _vad_settings(rs: RegionSettings) -> VadSettings:
    return VadSettings(
        threshold=rs.threshold,
        min_speech_ms=rs.min_speech_ms,
        min_silence_ms=rs.min_silence_ms,
        speech_pad_ms=rs.speech_pad_ms,
    )


def vad_segments(audio16k: np.ndarray, rs: RegionSettings) -> list[tuple[int, int]]:
    """Silero VAD speech segments (sample indices) with Silero's own timestamp rules."""
    return [(int(s), int(e)) for s, e in load_vad().segments(np.asarray(audio16k, np.float32), _vad_settings(rs))]


def speech_regions(audio16k: np.ndarray, rs: RegionSettings) -> list[tuple[int, int]]:
    """The regions of `audio16k` to transcribe, as [start, end) sample indices."""
    return merge_regions(vad_segments(audio16k, rs), int(audio16k.shape[0]), rs.merge_gap_s, rs.pad_s)


def regions_signature(rs: RegionSettings) -> JsonObject:
    """VAD package/model/settings plus the merge/pad rule, for the backend signature."""
    return {"vad": vad_signature(_vad_settings(rs)), "merge_gap_s": rs.merge_gap_s, "pad_s": rs.pad_s}
