"""What a live baseline hears: per-32 ms speech probabilities → user speech onsets and silence length.

A streaming version of Silero's hysteresis: a candidate run of frames at or above `threshold`
becomes user speech once it lasts `min_speech_ms`; speech continues while probabilities stay at
or above `threshold - 0.15`; after `release_ms` below that the user is no longer speaking (a new
run is a new onset, which is what barge-in reacts to).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from duplexeval.units import SAMPLE_RATE

VAD_FRAME = 512  # samples per Silero frame at 16 kHz
VAD_FRAME_S = VAD_FRAME / SAMPLE_RATE


@dataclass
class Onset:
    """User speech confirmed at `detected_at_s`; the run started at `start_s`."""

    start_s: float
    detected_at_s: float


class UserSpeech:
    """Track the user's speech from one probability per 32 ms frame (pure; no audio, no model)."""

    def __init__(self, threshold: float = 0.5, min_speech_ms: float = 160.0, release_ms: float = 100.0) -> None:
        self.threshold = threshold
        self.neg_threshold = max(threshold - 0.15, 0.01)
        self.min_speech_s = min_speech_ms / 1000.0
        self.release_s = release_ms / 1000.0
        self.speaking = False
        self._candidate: float | None = None
        self.last_voice_end: float | None = None  # end time of the last voiced frame of confirmed speech
        self.frames = 0

    def update(self, prob: float) -> Onset | None:
        """Consume the next frame's probability; returns an Onset when user speech is confirmed."""
        start = self.frames * VAD_FRAME_S
        self.frames += 1
        end = self.frames * VAD_FRAME_S
        if self.speaking:
            if prob >= self.neg_threshold:
                self.last_voice_end = end
            elif self.last_voice_end is not None and end - self.last_voice_end >= self.release_s:
                self.speaking = False
                self._candidate = None
            return None
        if prob >= self.threshold:
            if self._candidate is None:
                self._candidate = start
            if end - self._candidate >= self.min_speech_s - 1e-9:
                self.speaking = True
                self.last_voice_end = end
                return Onset(self._candidate, end)
        elif prob < self.neg_threshold:
            self._candidate = None
        return None

    def silence_s(self, now_s: float) -> float:
        """Seconds since the last voiced frame of confirmed speech (inf if the user has not spoken)."""
        if self.last_voice_end is None:
            return float("inf")
        return now_s - self.last_voice_end


class FrameProbs:
    """Buffer arbitrary-length 16 kHz audio into 512-sample frames and score each with `score`."""

    def __init__(self, score: Callable[[np.ndarray], float]) -> None:
        self._score = score
        self._buf = np.zeros(0, dtype=np.float32)

    def feed(self, audio: np.ndarray) -> list[float]:
        self._buf = np.concatenate([self._buf, np.asarray(audio, dtype=np.float32)])
        n = self._buf.shape[0] // VAD_FRAME
        out = [float(self._score(self._buf[i * VAD_FRAME : (i + 1) * VAD_FRAME])) for i in range(n)]
        self._buf = self._buf[n * VAD_FRAME :]
        return out


def energy_prob(frame: np.ndarray) -> float:
    """A crude, deterministic speech probability from frame RMS (-50 dBFS → 0, -30 dBFS → 1); for fast tests."""
    rms = float(np.sqrt(np.mean(np.square(frame.astype(np.float64))))) if frame.size else 0.0
    db = 20.0 * np.log10(max(rms, 1e-10))
    return float(np.clip((db + 50.0) / 20.0, 0.0, 1.0))
