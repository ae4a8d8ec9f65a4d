"""Offline replay of a controller's per-frame scores into events, by the rules of docs/controller.md section 2.

Pure functions on numpy arrays; each call scans a frame range with vectorised cumulative sums, and the only
Python loop is over firings (a restart after each early endpoint, one step per backchannel candidate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duplexeval.controller.data import FRAME_US, frame_end_us, to_us
from duplexeval.controller.policy import EvaluationPolicy

HEAD, FALLBACK = "head", "fallback"


@dataclass(frozen=True)
class Firing:
    """An endpoint firing: frame index, its stamp (frame end) in microseconds, and what fired (head/fallback)."""

    frame: int
    t_us: int
    source: str


def voiced_frames(level_db: np.ndarray | None, n: int, policy: EvaluationPolicy) -> np.ndarray:
    """Frames whose user level is strictly above the gate; all True when the gate is disabled."""
    if policy.vad_gate_db is None:
        return np.ones(n, dtype=bool)
    if level_db is None:
        raise ValueError("level_db is needed by the voice-activity gate")
    return np.asarray(level_db, dtype=float) > float(policy.vad_gate_db)


def _first_from(
    above: np.ndarray, voiced: np.ndarray, start: int, stop: int, policy: EvaluationPolicy, fallback: bool
) -> Firing | None:
    """First endpoint firing in [start, stop) after a fresh (re)start at ``start``; scans growing horizons."""
    warm = policy.warmup_frames
    deb = policy.debounce_frames
    min_voiced = policy.min_voiced_ms * 1000
    fb_frames = -(-policy.fallback_silence_ms * 1000 // FRAME_US)  # frames of silence needed (ceil)
    horizon = 256
    while True:
        end = min(stop, start + horizon)
        if end <= start:
            return None
        ab = above[start:end].copy()
        ab[: min(warm, ab.size)] = False  # warmup frames' scores are ignored
        v = voiced[start:end]
        r = np.arange(end - start)
        cv = np.cumsum(v)
        ok_voiced = cv.astype(np.int64) * FRAME_US >= min_voiced
        # length of the above-threshold run ending at each frame
        lastbelow = np.maximum.accumulate(np.where(ab, -1, r))
        run = r - lastbelow
        cand = (run >= deb) & ok_voiced & (r >= warm)
        head_idx = np.flatnonzero(cand)
        fb_idx = np.empty(0, dtype=np.int64)
        if fallback:
            lastvoiced = np.maximum.accumulate(np.where(v, r, -1))
            silence = r - lastvoiced
            fb = (silence >= fb_frames) & ok_voiced & (r >= warm)
            fb_idx = np.flatnonzero(fb)
        h = int(head_idx[0]) if head_idx.size else None
        f = int(fb_idx[0]) if fb_idx.size else None
        if h is not None and (f is None or h <= f):
            j = start + h
            return Firing(j, int(frame_end_us(j)), HEAD)
        if f is not None:
            j = start + f
            return Firing(j, int(frame_end_us(j)), FALLBACK)
        if end >= stop:
            return None
        horizon *= 4


def endpoint_firings(
    score: np.ndarray,
    voiced: np.ndarray,
    start: int,
    stop: int,
    policy: EvaluationPolicy,
    fallback: bool,
    until_us: int | None = None,
    above: np.ndarray | None = None,
) -> list[Firing]:
    """Every firing in [start, stop), resetting after each (warmup, debounce, voiced and silence counters restart).

    Stops after the first firing stamped at or after ``until_us`` (the final endpoint) when it is given.
    ``above`` (score >= threshold, precomputed per clip) saves recomputing it for every probe.
    """
    if above is None:
        above = np.asarray(score, dtype=float) >= float(policy.endpoint_threshold)
    out: list[Firing] = []
    s = start
    while s < stop:
        f = _first_from(above, voiced, s, stop, policy, fallback)
        if f is None:
            break
        out.append(f)
        if until_us is not None and f.t_us >= until_us:
            break
        s = f.frame + 1
    return out


@dataclass(frozen=True)
class TurnOutcome:
    """Endpoint replay of one turn probe."""

    early: int  # firings stamped before the turn end (each followed by a reset)
    final: Firing | None  # first firing at or after the turn end
    latency_us: int | None
    observe_us: int  # window end minus turn end: how long after the turn end the replay could look


def replay_turn(
    score: np.ndarray, voiced: np.ndarray, n_frames: int, turn_end_s: float, window: tuple[int, int],
    policy: EvaluationPolicy, fallback: bool, above: np.ndarray | None = None,
) -> TurnOutcome:  # fmt: skip
    """Replay one turn probe over its frame window; early endpoints reset the replay, which goes on."""
    te = to_us(turn_end_s)
    i0, i1 = window
    fir = endpoint_firings(score, voiced, i0, i1, policy, fallback, until_us=te, above=above)
    early = sum(1 for f in fir if f.t_us < te)
    final = fir[-1] if fir and fir[-1].t_us >= te else None
    observe = i1 * FRAME_US - te
    return TurnOutcome(early, final, None if final is None else final.t_us - te, observe)


@dataclass(frozen=True)
class PauseOutcome:
    """Endpoint replay of one pause probe: a binary false cut inside [pause_start, pause_end)."""

    false_cut: bool
    pre_pause: int  # firings before the pause (cut-ins during speech; each reset)
    firing: Firing | None  # the firing inside the pause


def replay_pause(
    score: np.ndarray, voiced: np.ndarray, a_s: float, b_s: float, window: tuple[int, int],
    policy: EvaluationPolicy, fallback: bool, above: np.ndarray | None = None,
) -> PauseOutcome:  # fmt: skip
    """Replay from the window start to the pause end; a firing stamped in [a, b) is the probe's false cut."""
    a, b = to_us(a_s), to_us(b_s)
    i0, i1 = window
    stop = min(i1, -(-b // FRAME_US))  # frames stamped <= b; a stamp == b is outside [a, b)
    fir = endpoint_firings(score, voiced, i0, stop, policy, fallback, until_us=a, above=above)
    pre = sum(1 for f in fir if f.t_us < a)
    last = fir[-1] if fir else None
    if last is not None and a <= last.t_us < b:
        return PauseOutcome(True, pre, last)
    return PauseOutcome(False, pre, None)


def debounced_onsets(score: np.ndarray, threshold: float, start: int, stop: int, debounce: int) -> np.ndarray:
    """Frames in [start, stop) where an above-threshold run reaches ``debounce`` frames (one firing per run)."""
    ab = np.asarray(score[start:stop], dtype=float) >= float(threshold)
    if ab.size == 0:
        return np.empty(0, dtype=np.int64)
    r = np.arange(ab.size)
    lastbelow = np.maximum.accumulate(np.where(ab, -1, r))
    run = r - lastbelow
    return np.flatnonzero(run == debounce) + start


def yield_firings(score: np.ndarray, start: int, stop: int, policy: EvaluationPolicy) -> np.ndarray:
    """Yield firings (frame indices): the debounce frame of each above-threshold run; no cooldown."""
    return debounced_onsets(score, policy.yield_threshold, start, stop, policy.debounce_frames)


def backchannel_firings(score: np.ndarray, start: int, stop: int, policy: EvaluationPolicy) -> np.ndarray:
    """Backchannel firings: debounced run onsets, dropping any within ``cooldown`` frames after a kept firing."""
    cand = debounced_onsets(score, policy.backchannel_threshold, start, stop, policy.debounce_frames)
    cd = policy.backchannel_cooldown_frames
    kept: list[int] = []
    last = -(10**12)
    for j in cand.tolist():
        if j - last > cd:
            kept.append(j)
            last = j
    return np.asarray(kept, dtype=np.int64)
