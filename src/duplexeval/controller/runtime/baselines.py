"""Two reference controllers that run through the same runner and replay: a silence-timeout endpointer on the
frame level (dB), and the same endpointer on Silero VAD probabilities.

Both answer "how long has the user been silent?": endpoint score = silence_s / timeout_s, capped at 1, and 0
until the user has spoken since the reset; so the replay threshold sets the effective timeout
(threshold * timeout_s). Yield score = the user's current voiced run / barge_in_s, capped at 1, while the agent
plays audio, else 0 (a barge-in detector); backchannel score is always 0 (neither baseline acknowledges). State
probabilities are one-hot:
SPEAK while the agent plays audio, LISTEN while the user speaks, HOLD in a user silence shorter than the
timeout, LISTEN after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duplexeval.controller.format.data import STATES
from duplexeval.controller.format.protocol import StepOutput
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.units import FRAME_S
from duplexeval.vad import StreamingVad, VadSettings, load_vad, model_path, vad_signature

_ONE_HOT = {s: np.eye(len(STATES), dtype=np.float64)[i] for i, s in enumerate(STATES)}


def silence_timeout_scores(voiced: np.ndarray, timeout_s: float) -> np.ndarray:
    """Endpoint scores from per-frame voicing: min(1, silent frames since the last voiced frame * 80 ms / timeout),
    0 before the first voiced frame. Vectorised twin of ``SilenceTracker`` (same numbers, frame for frame)."""
    v = np.asarray(voiced, dtype=bool)
    i = np.arange(v.size)
    last = np.maximum.accumulate(np.where(v, i, -1)) if v.size else np.zeros(0, dtype=np.int64)
    run = (i - last) * FRAME_S
    return np.where(last >= 0, np.minimum(1.0, run / timeout_s), 0.0)


def voiced_run_scores(voiced: np.ndarray, barge_in_s: float, agent_playing: np.ndarray | None = None) -> np.ndarray:
    """Yield scores: min(1, length of the current voiced run (this frame included) / barge_in_s) while the agent
    plays audio; 0 when the user is silent or the agent is not playing (there is nothing to yield)."""
    v = np.asarray(voiced, dtype=bool)
    i = np.arange(v.size)
    last_silent = np.maximum.accumulate(np.where(~v, i, -1)) if v.size else np.zeros(0, dtype=np.int64)
    on = v if agent_playing is None else v & np.asarray(agent_playing, dtype=bool)
    return np.where(on, np.minimum(1.0, (i - last_silent) * FRAME_S / barge_in_s), 0.0)


@dataclass
class SilenceTracker:
    """The streaming state both baselines share: silence and voiced runs since the reset."""

    timeout_s: float
    barge_in_s: float
    heard: bool = False
    silent_frames: int = 0
    voiced_frames: int = 0

    def update(self, voiced: bool, agent_playing: bool) -> StepOutput:
        """One frame: returns the step output (see module docstring)."""
        if voiced:
            self.heard, self.silent_frames, self.voiced_frames = True, 0, self.voiced_frames + 1
        else:
            self.silent_frames, self.voiced_frames = self.silent_frames + 1, 0
        endpoint = min(1.0, self.silent_frames * FRAME_S / self.timeout_s) if self.heard else 0.0
        yld = min(1.0, self.voiced_frames * FRAME_S / self.barge_in_s) if agent_playing else 0.0
        if agent_playing:
            state = "SPEAK"
        elif voiced or not self.heard or endpoint >= 1.0:
            state = "LISTEN"
        else:
            state = "HOLD"
        return {"state_probs": _ONE_HOT[state], "endpoint": endpoint, "yield": yld, "backchannel": 0.0}


def _level_db(frame: np.ndarray) -> float:
    ms = float(np.mean(np.square(frame, dtype=np.float64)))
    return 10.0 * np.log10(ms) if ms > 0 else float("-inf")


@dataclass
class SilenceTimeoutController:
    """Silence-timeout endpointer on the frame level: a frame is voiced when its RMS level is above gate_db."""

    timeout_s: float = 0.6
    gate_db: float = -50.0
    barge_in_s: float = 0.24
    name: str = "silence-timeout"
    _t: SilenceTracker = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check(self.timeout_s, "timeout_s")
        _check(self.barge_in_s, "barge_in_s")
        self.reset()

    def config(self) -> JsonObject:
        """Settings, recorded with the scores."""
        return {"baseline": "silence", "timeout_s": self.timeout_s, "gate_db": self.gate_db,
                "barge_in_s": self.barge_in_s}

    def reset(self) -> None:
        self._t = SilenceTracker(self.timeout_s, self.barge_in_s)

    def step(self, user: np.ndarray, agent: np.ndarray, prev_state: int) -> StepOutput:
        return self._t.update(_level_db(user) > self.gate_db, _level_db(agent) > self.gate_db)

    def weight_bytes(self) -> int:
        return 0

    def state_bytes(self) -> int:
        return 3 * 8  # heard flag, two run counters


@dataclass
class SileroController:
    """The same endpointer on Silero VAD: per 80 ms frame the highest probability of the 512-sample VAD windows
    completed in it; voiced from threshold up, silent below neg_threshold (Silero's hysteresis), else unchanged."""

    timeout_s: float = 0.6
    threshold: float = 0.5
    neg_threshold: float = 0.35
    barge_in_s: float = 0.24
    gate_db: float = -50.0  # agent playback 'playing' test for the state output only
    name: str = "silero-timeout"
    _t: SilenceTracker = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check(self.timeout_s, "timeout_s")
        _check(self.barge_in_s, "barge_in_s")
        if not 0.0 <= self.neg_threshold <= self.threshold <= 1.0:
            raise InputError(f"silero baseline: need 0 <= neg_threshold <= threshold <= 1, got {self.neg_threshold}, "
                             f"{self.threshold}")
        self._vad = StreamingVad(load_vad())
        self.reset()

    def config(self) -> JsonObject:
        """Settings and the VAD model identity, recorded with the scores."""
        sig = vad_signature(VadSettings(threshold=self.threshold, neg_threshold=self.neg_threshold))
        sig.pop("settings", None)  # segment settings do not apply: this baseline reads frame probabilities only
        return {"baseline": "silero", "timeout_s": self.timeout_s, "threshold": self.threshold,
                "neg_threshold": self.neg_threshold, "barge_in_s": self.barge_in_s, "vad": sig}  # fmt: skip

    def reset(self) -> None:
        self._vad.reset()
        self._t = SilenceTracker(self.timeout_s, self.barge_in_s)
        self._voiced = False
        self.last_prob = 0.0

    def step(self, user: np.ndarray, agent: np.ndarray, prev_state: int) -> StepOutput:
        probs = self._vad.feed(user)
        if probs.size:
            self.last_prob = float(probs.max())
        if self.last_prob >= self.threshold:
            self._voiced = True
        elif self.last_prob < self.neg_threshold:
            self._voiced = False
        return self._t.update(self._voiced, _level_db(agent) > self.gate_db)

    def weight_bytes(self) -> int:
        return model_path().stat().st_size

    def state_bytes(self) -> int:
        # Silero's LSTM state (2x1x128 float32) + its 64-sample context + the 512-sample input buffer, + tracker
        return (2 * 128 + 64 + 512) * 4 + 3 * 8


def _check(v: float, name: str) -> None:
    if not v > 0:
        raise InputError(f"baseline: {name} must be > 0, got {v}")


BASELINES: dict[str, type[SilenceTimeoutController | SileroController]] = {
    "silence": SilenceTimeoutController, "silero": SileroController}


def make(name: str, **options: Any) -> SilenceTimeoutController | SileroController:
    """A baseline by name ('silence' or 'silero') with keyword options."""
    if name not in BASELINES:
        raise InputError(f"unknown baseline {name!r} (expected {', '.join(BASELINES)})")
    try:
        return BASELINES[name](**options)
    except TypeError as exc:
        raise InputError(f"baseline {name}: {exc}") from None
