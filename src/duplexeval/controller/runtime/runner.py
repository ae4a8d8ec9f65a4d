"""Run a streaming Python controller over two-channel audio at 80 ms frames, with spec 002's forcing conventions.

A controller is any object with ``reset()`` and ``step(user, agent, prev_state)`` (see ``Controller``). The
runner makes two passes over a conversation (docs/controller-labels.md, "Running a controller"):

- state pass: the real agent playback, previous state teacher-forced to the true state of the frame before
  (LISTEN before the first frame); gives ``state_probs`` and ``yield``;
- listen pass: previous state forced to LISTEN and the agent playback silent (a listening agent plays nothing,
  and the recorded partner's reply must not leak into the endpoint); gives ``endpoint`` and ``backchannel``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval.controller.format.data import STATES, ClipFrames
from duplexeval.controller.format.protocol import Controller
from duplexeval.controller.runtime.registry import load_controller
from duplexeval.errors import InputError
from duplexeval.units import FRAME_SAMPLES

# `Controller` and `load_controller` live in `protocol` and `registry`; re-exported for callers of this module.
__all__ = ["LISTEN", "OUTPUT_KEYS", "Controller", "RunResult", "frame_level_db", "load_controller", "run",
           "split_frames"]

LISTEN = STATES.index("LISTEN")
OUTPUT_KEYS = ("state_probs", "endpoint", "yield", "backchannel")


def frame_level_db(audio: np.ndarray, n_frames: int | None = None) -> np.ndarray:
    """RMS level of each 80 ms frame in dBFS (full-scale RMS 1.0 = 0 dB); ``-inf`` for digital silence.

    The audio is zero-padded to n_frames * 1280 samples (default: ceil(len / 1280)).
    """
    frames = split_frames(audio, n_frames)
    ms = np.mean(np.square(frames, dtype=np.float64), axis=1)
    with np.errstate(divide="ignore"):
        return np.asarray(10.0 * np.log10(ms), dtype=np.float64)


def split_frames(audio: np.ndarray, n_frames: int | None = None) -> np.ndarray:
    """(n_frames, 1280) float32 view of mono 16 kHz audio, zero-padded or cropped to n_frames."""
    a = np.asarray(audio, dtype=np.float32).reshape(-1)
    n = -(-a.size // FRAME_SAMPLES) if n_frames is None else int(n_frames)
    out = np.zeros(n * FRAME_SAMPLES, dtype=np.float32)
    k = min(a.size, out.size)
    out[:k] = a[:k]
    return out.reshape(n, FRAME_SAMPLES)


@dataclass(frozen=True)
class StepScores:
    """One step's output, checked: the state probabilities (4 floats) and each head's score (None: not given)."""

    state_probs: np.ndarray | None = None
    endpoint: float | None = None
    yield_: float | None = None
    backchannel: float | None = None

    def get(self, key: str) -> np.ndarray | float | None:
        """A head by its output key (``yield`` is ``yield_``)."""
        if key == "state_probs":
            return self.state_probs
        if key == "endpoint":
            return self.endpoint
        return self.yield_ if key == "yield" else self.backchannel


def _output(out: Any, where: str) -> StepScores:
    """Validate one step's output; a controller's mistake is an InputError naming the frame."""
    if not isinstance(out, Mapping):
        raise InputError(f"{where}: step() must return a mapping with {', '.join(OUTPUT_KEYS)}, got "
                         f"{type(out).__name__}")
    probs: np.ndarray | None = None
    heads: dict[str, float] = {}
    for key in OUTPUT_KEYS:
        if key not in out or out[key] is None:
            continue
        if key == "state_probs":
            p = np.asarray(out[key], dtype=np.float64).reshape(-1)
            if p.shape != (len(STATES),) or not np.isfinite(p).all():
                raise InputError(f"{where}: state_probs must be {len(STATES)} finite numbers, got {out[key]!r}")
            probs = p
        else:
            try:
                v = float(out[key])
            except (TypeError, ValueError):
                raise InputError(f"{where}: {key} must be a number, got {out[key]!r}") from None
            if not math.isfinite(v):
                raise InputError(f"{where}: {key} is not finite ({v})")
            heads[key] = v
    return StepScores(probs, heads.get("endpoint"), heads.get("yield"), heads.get("backchannel"))


@dataclass
class RunResult:
    """Scores of one conversation: arrays of length n_frames (None when the controller never gave them)."""

    state_probs: np.ndarray | None
    endpoint: np.ndarray | None
    yield_: np.ndarray | None
    backchannel: np.ndarray | None

    def apply(self, frames: ClipFrames) -> ClipFrames:
        """Put the scores into a clip's frames (in place) and return it."""
        frames.state_probs = self.state_probs
        frames.endpoint = self.endpoint
        frames.yield_ = self.yield_
        frames.backchannel = self.backchannel
        return frames


def _collect(rows: list[StepScores], key: str, n: int, where: str) -> np.ndarray | None:
    have = [r.get(key) is not None for r in rows]
    if not any(have):
        return None
    if not all(have):
        i = have.index(False)
        raise InputError(f"{where}: frame {i}: step() gave no {key} (it gave one on other frames)")
    if key == "state_probs":
        probs = [r.state_probs for r in rows if r.state_probs is not None]  # every row has them (checked above)
        return np.stack(probs).astype(np.float32) if n else np.zeros((0, len(STATES)), np.float32)
    return np.asarray([r.get(key) for r in rows], dtype=np.float32)


def run(
    controller: Controller,
    user: np.ndarray,
    agent: np.ndarray | None,
    n_frames: int,
    truth_state: np.ndarray | None = None,
    *,
    name: str = "controller",
) -> RunResult:
    """Both passes over one conversation (16 kHz mono arrays). Without truth states (e.g. FDB clips, which have no
    agent channel) only the listen pass runs, so there are no state or yield scores."""
    u = split_frames(user, n_frames)
    silent = np.zeros(FRAME_SAMPLES, dtype=np.float32)
    rows_state: list[StepScores] = []
    if truth_state is not None:
        if len(truth_state) != n_frames:
            raise InputError(f"{name}: truth_state has {len(truth_state)} frames, audio has {n_frames}")
        a = split_frames(agent, n_frames) if agent is not None else np.zeros_like(u)
        controller.reset()
        for i in range(n_frames):
            prev = LISTEN if i == 0 else int(truth_state[i - 1])
            if prev < 0:  # unlabelled frame: nothing to force, LISTEN is the neutral choice (documented)
                prev = LISTEN
            rows_state.append(_output(controller.step(u[i], a[i], prev), f"{name}: state pass frame {i}"))
    controller.reset()
    rows_listen = [
        _output(controller.step(u[i], silent, LISTEN), f"{name}: listen pass frame {i}") for i in range(n_frames)
    ]
    return RunResult(
        state_probs=_collect(rows_state, "state_probs", n_frames, f"{name}: state pass"),
        endpoint=_collect(rows_listen, "endpoint", n_frames, f"{name}: listen pass"),
        yield_=_collect(rows_state, "yield", n_frames, f"{name}: state pass"),
        backchannel=_collect(rows_listen, "backchannel", n_frames, f"{name}: listen pass"),
    )
