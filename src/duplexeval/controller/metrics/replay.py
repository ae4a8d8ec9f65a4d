"""Offline replay of a controller's per-frame scores into events, by the rules of docs/controller.md section 2.

Pure functions on numpy arrays. The endpoint replay indexes a clip once (vectorised run lengths and cumulative
sums) and then finds each firing with binary searches; the only Python loops are over firings (a restart after
each early endpoint, one step per backchannel candidate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duplexeval.controller.format.data import frame_end_us
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.units import FRAME_US, to_us

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


def _run_lengths(flags: np.ndarray) -> np.ndarray:
    """Length of the run of True ending at each frame (0 where False)."""
    r = np.arange(flags.size)
    last_false = np.maximum.accumulate(np.where(flags, -1, r)) if flags.size else r
    return r - last_false


class EndpointReplayer:
    """Endpoint replay of one clip, indexed once so that each (re)start costs O(log n).

    After a (re)start at frame s (warmup W, debounce D, voiced minimum K frames, fallback F silent frames):

    - the head can fire at j when the above-threshold run ending at j, counted from s+W on, is >= D, i.e. the
      clip-wide run at j is >= D and j >= s+W+D-1;
    - the fallback can fire at j when the unvoiced run counted from s is >= F, i.e. the clip-wide unvoiced run at
      j is >= F and j >= s+F-1, and j >= s+W;
    - either needs >= K voiced frames in [s, j], i.e. j >= the first frame where the voiced count since s reaches K.

    So the first firing is a ``searchsorted`` in three precomputed index arrays. ``tests/test_controller_core_props``
    checks this against a frame-by-frame state machine.
    """

    def __init__(self, score: np.ndarray, voiced: np.ndarray, policy: EvaluationPolicy,
                 above: np.ndarray | None = None) -> None:
        if above is None:
            above = np.asarray(score, dtype=float) >= float(policy.endpoint_threshold)
        voiced = np.asarray(voiced, dtype=bool)
        self.policy = policy
        self.n = int(voiced.size)
        self.warm = policy.warmup_frames
        self.deb = policy.debounce_frames
        self.need_voiced = -(-policy.min_voiced_ms * 1000 // FRAME_US)  # voiced frames needed (ceil)
        self.fb_frames = -(-policy.fallback_silence_ms * 1000 // FRAME_US)  # silent frames needed (ceil)
        self.cum_voiced = np.cumsum(voiced, dtype=np.int64)
        self.head_at = np.flatnonzero(_run_lengths(np.asarray(above, dtype=bool)) >= self.deb)
        self.fb_at = np.flatnonzero(_run_lengths(~voiced) >= self.fb_frames)

    def _voiced_ready(self, s: int) -> int:
        """First frame j >= s with at least ``need_voiced`` voiced frames in [s, j] (n if never)."""
        if self.need_voiced <= 0:
            return s
        base = int(self.cum_voiced[s - 1]) if s > 0 else 0
        return int(np.searchsorted(self.cum_voiced, base + self.need_voiced, side="left"))

    @staticmethod
    def _first_at_or_after(idx: np.ndarray, lo: int) -> int | None:
        k = int(np.searchsorted(idx, lo, side="left"))
        return int(idx[k]) if k < idx.size else None

    def first(self, start: int, stop: int, fallback: bool) -> Firing | None:
        """First firing in [start, stop) after a fresh (re)start at ``start``."""
        if start >= stop:
            return None
        ready = self._voiced_ready(start)
        h = self._first_at_or_after(self.head_at, max(start + self.warm + self.deb - 1, ready))
        f = None
        if fallback:
            f = self._first_at_or_after(self.fb_at, max(start + self.fb_frames - 1, start + self.warm, ready))
        if h is not None and h < stop and (f is None or h <= f):
            return Firing(h, int(frame_end_us(h)), HEAD)
        if f is not None and f < stop:
            return Firing(f, int(frame_end_us(f)), FALLBACK)
        return None

    def firings(self, start: int, stop: int, fallback: bool, until_us: int | None = None) -> list[Firing]:
        """Every firing in [start, stop), resetting after each; stops after the first stamped >= ``until_us``."""
        out: list[Firing] = []
        s = start
        while s < stop:
            f = self.first(s, stop, fallback)
            if f is None:
                break
            out.append(f)
            if until_us is not None and f.t_us >= until_us:
                break
            s = f.frame + 1
        return out


def endpoint_firings(
    score: np.ndarray,
    voiced: np.ndarray,
    start: int,
    stop: int,
    policy: EvaluationPolicy,
    fallback: bool,
    until_us: int | None = None,
    above: np.ndarray | None = None,
    replayer: EndpointReplayer | None = None,
) -> list[Firing]:
    """Every firing in [start, stop), resetting after each (warmup, debounce, voiced and silence counters restart).

    Stops after the first firing stamped at or after ``until_us`` (the final endpoint) when it is given. Pass a
    ``replayer`` built once per clip to replay many probes of one clip cheaply.
    """
    rp = replayer if replayer is not None else EndpointReplayer(score, voiced, policy, above)
    return rp.firings(start, stop, fallback, until_us)


@dataclass(frozen=True)
class TurnOutcome:
    """Endpoint replay of one turn probe."""

    early: int  # firings stamped before the turn end (each followed by a reset)
    final: Firing | None  # first firing at or after the turn end
    latency_us: int | None
    observe_us: int  # window end minus turn end: how long after the turn end the probe's window runs


def replay_turn(
    score: np.ndarray, voiced: np.ndarray, n_frames: int, turn_end_s: float, window: tuple[int, int],
    policy: EvaluationPolicy, fallback: bool, replayer: EndpointReplayer | None = None,
    window_end_us: int | None = None,
) -> TurnOutcome:  # fmt: skip
    """Replay one turn probe over its frame window; early endpoints reset the replay, which goes on.

    The observation time is ``window_end_us`` (the probe's window end as written, default the end of the last
    whole frame) minus the turn end: a deadline inside the window is observable even when the window ends
    inside a frame, since every stamp up to the deadline belongs to a whole frame of the window.
    """
    te = to_us(turn_end_s)
    i0, i1 = window
    fir = endpoint_firings(score, voiced, i0, i1, policy, fallback, until_us=te, replayer=replayer)
    early = sum(1 for f in fir if f.t_us < te)
    final = fir[-1] if fir and fir[-1].t_us >= te else None
    observe = (i1 * FRAME_US if window_end_us is None else window_end_us) - te
    return TurnOutcome(early, final, None if final is None else final.t_us - te, observe)


@dataclass(frozen=True)
class PauseOutcome:
    """Endpoint replay of one pause probe: a binary false cut inside [pause_start, pause_end)."""

    false_cut: bool
    pre_pause: int  # firings before the pause (cut-ins during speech; each reset)
    firing: Firing | None  # the firing inside the pause


def replay_pause(
    score: np.ndarray, voiced: np.ndarray, a_s: float, b_s: float, window: tuple[int, int],
    policy: EvaluationPolicy, fallback: bool, replayer: EndpointReplayer | None = None,
) -> PauseOutcome:  # fmt: skip
    """Replay from the window start to the pause end; a firing stamped in [a, b) is the probe's false cut."""
    a, b = to_us(a_s), to_us(b_s)
    i0, i1 = window
    stop = min(i1, -(-b // FRAME_US))  # up to the frame whose audio holds b; stamps >= b are not false cuts
    fir = endpoint_firings(score, voiced, i0, stop, policy, fallback, until_us=a, replayer=replayer)
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
