"""Frame truth and events from any two-channel conversation (word timings or per-channel VAD segments).

Most users have stereo recordings with word times or VAD per channel, not frame labels. This module turns the
speech intervals of a *user* channel and an *agent* channel into the spec-002 inputs: per-frame truth states,
task masks and head labels, turn and pause probes, yield and backchannel onsets, LISTEN and user-floor time.
Every rule, with its reason, is in docs/controller-labels.md; the numbered rules (R1..R9) below refer to it.
All times are compared in integer microseconds (``data.to_us``); a frame is stamped at its end, (i+1)*80 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from duplexeval.controller.format.data import (
    STATES,
    Clip,
    ClipFrames,
    ClipMeta,
    PauseProbe,
    TurnProbe,
    UserPause,
    frames_in_window,
)
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import MAX_TIME_S, number_problem
from duplexeval.units import FRAME_US, to_us

USER, AGENT = "user", "agent"
LISTEN, HOLD, SPEAK, BACKCHANNEL = (STATES.index(s) for s in ("LISTEN", "HOLD", "SPEAK", "BACKCHANNEL"))
TICK_US = 10_000  # 10 ms raster: 8 ticks per frame, a frame takes the state of at least half its ticks (R8)
TICKS_PER_FRAME = FRAME_US // TICK_US


@dataclass(frozen=True)
class LabelRules:
    """Every threshold of the derivation (docs/controller-labels.md), recorded with the labels."""

    ipu_gap_s: float = 0.2  # R1: silences shorter than this inside one channel join its speech into one run (IPU)
    backchannel_max_s: float = 1.0  # R2: a backchannel lasts at most this long ...
    backchannel_max_words: int = 3  # ... and has at most this many words (when words are known)
    # R2: the other speaker spoke within this time before and resumes within it after
    backchannel_context_s: float = 1.0
    max_pause_s: float = 3.0  # R4: a longer silence ends the turn without a shift (a lapse), not a pause
    pause_min_s: float = 0.2  # R6: shortest silence inside a user turn that becomes a pause probe
    probe_tail_s: float = 2.0  # R5: a turn probe window ends this long after the turn end (or earlier, see R5)
    endpoint_positive_s: float = 1.2  # R9: endpoint frame labels are positive this long after a turn end
    yield_window_s: float = 0.64  # R9: yield frame labels: [onset, onset + 640 ms), the matcher's window
    backchannel_before_s: float = 0.64  # R9: backchannel frame labels: [onset - 640 ms, onset + 320 ms)
    backchannel_after_s: float = 0.32

    def to_json(self) -> dict[str, float | int]:
        """The rules as recorded in clips.jsonl ``extra.label_rules``."""
        return asdict(self)


@dataclass(frozen=True)
class Activity:
    """One channel's speech: sorted, non-overlapping intervals in seconds; words (text, start, end) if known."""

    intervals: tuple[tuple[float, float], ...]
    words: tuple[tuple[str, float, float], ...] | None = None

    @classmethod
    def from_segments(cls, segments: Sequence[Sequence[float]], where: str = "segments") -> Activity:
        """From VAD segments [(start, end), ...] (any order; overlaps are merged)."""
        iv = [_interval(s, f"{where}[{k}]") for k, s in enumerate(segments)]
        return cls(tuple(_merge(iv, 0)))

    @classmethod
    def from_words(cls, words: Sequence[object], where: str = "words") -> Activity:
        """From words: (text, start, end) tuples/lists or objects with text/start_s/end_s (or start/end)."""
        out: list[tuple[str, float, float]] = []
        for k, w in enumerate(words):
            if isinstance(w, (list, tuple)) and len(w) == 3:
                text, s, e = w
            else:
                text = getattr(w, "text", "")
                s = getattr(w, "start_s", getattr(w, "start", None))
                e = getattr(w, "end_s", getattr(w, "end", None))
                if e is None:
                    e = s
            a, b = _interval((s, e), f"{where}[{k}]")
            out.append((str(text), a, b))
        out.sort(key=lambda x: (to_us(x[1]), to_us(x[2])))
        return cls(tuple(_merge([(a, b) for _, a, b in out], 0)), tuple(out))


@dataclass(frozen=True)
class Vocalization:
    """A speech run (IPU) of one speaker and what it is: a 'turn' run, a 'backchannel', or an 'overlap' that did
    not take the floor (R2, R3)."""

    speaker: str
    start_s: float
    end_s: float
    kind: str
    n_words: int | None


@dataclass(frozen=True)
class Turn:
    """A floor holding: from the first to the last speech of one speaker's turn runs; how it ended (R3, R4)."""

    speaker: str
    start_s: float
    end_s: float
    runs: tuple[tuple[float, float], ...]
    ended_by: str  # "shift" (the other speaker took the floor), "lapse" (long silence) or "end" (conversation end)
    next_start_s: float | None  # start of the next turn (after a shift), else None


@dataclass
class DerivedLabels:
    """Everything derived for one channel assignment: frame arrays and the events of data.ClipMeta."""

    n_frames: int
    duration_s: float
    vocalizations: list[Vocalization]
    turns: list[Turn]
    truth_state: np.ndarray
    valid: dict[str, np.ndarray]
    label: dict[str, np.ndarray]
    turn_probes: list[TurnProbe]
    pause_probes: list[PauseProbe]
    yield_onsets: list[float]
    backchannel_onsets: list[float]
    user_pauses: list[UserPause]
    listen_s: float
    floor_s: float
    rules: LabelRules = field(default_factory=LabelRules)


# ---------------------------------------------------------------------------------------------- helpers


def _interval(v: object, where: str) -> tuple[float, float]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise InputError(f"{where}: expected [start_s, end_s], got {v!r}")
    a, b = v
    for x in (a, b):
        if number_problem(x, 0.0, MAX_TIME_S) is not None:
            raise InputError(f"{where}: times must be finite numbers >= 0 (at most {MAX_TIME_S:g} s), got {v!r}")
    if to_us(b) < to_us(a):
        raise InputError(f"{where}: end {b} is before start {a}")
    return float(a), float(b)


def _merge(intervals: list[tuple[float, float]], gap_us: int) -> list[tuple[float, float]]:
    """Sort and join intervals whose silence between them is shorter than gap_us (touching ones always join)."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals, key=lambda x: (to_us(x[0]), to_us(x[1]))):
        if out and to_us(a) - to_us(out[-1][1]) < max(gap_us, 1):
            if to_us(b) > to_us(out[-1][1]):
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _word_mids(words: tuple[tuple[str, float, float], ...] | None) -> np.ndarray | None:
    """Sorted word midpoints in microseconds (a word belongs to the run that holds its midpoint)."""
    if words is None:
        return None
    return np.sort(np.asarray([(to_us(s) + to_us(e)) // 2 for _, s, e in words], dtype=np.int64))


def _count_words(mids: np.ndarray | None, a: float, b: float) -> int | None:
    if mids is None:
        return None
    return int(np.searchsorted(mids, to_us(b), "right") - np.searchsorted(mids, to_us(a), "left"))


def _covers(runs: list[tuple[float, float]], t_us: int) -> bool:
    """Some run [a, b] holds t (closed at both ends: a speaker still talking at t)."""
    return any(to_us(a) <= t_us <= to_us(b) for a, b in runs)


# ---------------------------------------------------------------------------------------------- the rules


def vocalizations(user: Activity, agent: Activity, rules: LabelRules) -> list[Vocalization]:
    """R1 + R2: speech runs per channel, each marked backchannel or not (turn/overlap decided by the floor)."""
    gap = to_us(rules.ipu_gap_s)
    runs = {USER: _merge(list(user.intervals), gap), AGENT: _merge(list(agent.intervals), gap)}
    words = {USER: _word_mids(user.words), AGENT: _word_mids(agent.words)}
    items = sorted(
        ((spk, a, b) for spk in (USER, AGENT) for a, b in runs[spk]),
        key=lambda x: (to_us(x[1]), to_us(x[2]), x[0]),
    )
    ctx = to_us(rules.backchannel_context_s)
    out: list[Vocalization] = []
    is_bc: dict[tuple[str, float, float], bool] = {}
    for spk, a, b in items:
        other = AGENT if spk == USER else USER
        n_words = _count_words(words[spk], a, b)
        short = to_us(b) - to_us(a) <= to_us(rules.backchannel_max_s) and (
            n_words is None or n_words <= rules.backchannel_max_words
        )
        bc = False
        if short:
            a_us, b_us = to_us(a), to_us(b)
            # the other speaker holds the floor: a non-backchannel run of theirs started before a and was still
            # going within `ctx` before a ...
            before = any(
                to_us(oa) < a_us and to_us(ob) >= a_us - ctx and not is_bc.get((other, oa, ob), False)
                for oa, ob in runs[other]
            )
            # ... and keeps it: they are talking at b or resume within `ctx`, before this speaker speaks again.
            nxt = next((to_us(x) for x, _ in runs[spk] if to_us(x) > b_us), None)
            after = any(
                to_us(ob) > b_us and to_us(oa) <= b_us + ctx and (nxt is None or to_us(oa) < nxt)
                for oa, ob in runs[other]
            )
            bc = before and after
        is_bc[(spk, a, b)] = bc
        out.append(Vocalization(spk, a, b, "backchannel" if bc else "turn", n_words))
    return out


def turns(vocs: list[Vocalization], rules: LabelRules) -> tuple[list[Turn], list[Vocalization]]:
    """R3 + R4: the floor from the non-backchannel runs. A run of the other speaker takes the floor when the
    holder's speech begun before it has stopped by its end (it outlasts the holder); otherwise it is an
    'overlap'. A silence longer than max_pause_s before the same speaker's next run ends a turn by a lapse."""
    lapse = to_us(rules.max_pause_s)
    runs = [v for v in vocs if v.kind != "backchannel"]
    holder_runs: dict[str, list[tuple[float, float]]] = {USER: [], AGENT: []}
    for v in runs:
        holder_runs[v.speaker].append((v.start_s, v.end_s))
    out_vocs: list[Vocalization] = []
    result: list[Turn] = []
    cur_spk: str | None = None
    cur: list[tuple[float, float]] = []

    def close(ended_by: str, next_start: float | None) -> None:
        if cur_spk is not None and cur:
            result.append(
                Turn(cur_spk, cur[0][0], max(b for _, b in cur), tuple(cur), ended_by, next_start)
            )

    for v in runs:
        a_us, b_us = to_us(v.start_s), to_us(v.end_s)
        if cur_spk is None:
            cur_spk, cur = v.speaker, [(v.start_s, v.end_s)]
            out_vocs.append(v)
            continue
        if v.speaker == cur_spk:
            last_end = max(to_us(b) for _, b in cur)
            if a_us - last_end > lapse:
                close("lapse", None)
                cur = [(v.start_s, v.end_s)]
            else:
                cur.append((v.start_s, v.end_s))
            out_vocs.append(v)
            continue
        # the other speaker: a take if the holder's speech begun before this run has stopped when it ends
        if _covers([r for r in holder_runs[cur_spk] if to_us(r[0]) < a_us], b_us):
            out_vocs.append(Vocalization(v.speaker, v.start_s, v.end_s, "overlap", v.n_words))
            continue
        close("shift", v.start_s)  # however long the gap: the other speaker took the turn
        cur_spk, cur = v.speaker, [(v.start_s, v.end_s)]
        out_vocs.append(v)
    close("end", None)
    out_vocs.extend(v for v in vocs if v.kind == "backchannel")
    out_vocs.sort(key=lambda x: (to_us(x.start_s), to_us(x.end_s), x.speaker))
    return result, out_vocs


def _raster(n_ticks: int, spans: list[tuple[float, float]]) -> np.ndarray:
    m = np.zeros(n_ticks, dtype=bool)
    for a, b in spans:
        i0 = min(n_ticks, max(0, round(to_us(a) / TICK_US)))
        i1 = min(n_ticks, max(0, round(to_us(b) / TICK_US)))
        m[i0:i1] = True
    return m


def _frame_major(ticks: np.ndarray, n_frames: int) -> np.ndarray:
    return np.asarray(ticks.reshape(n_frames, TICKS_PER_FRAME).sum(axis=1) * 2 >= TICKS_PER_FRAME)


def _stamp_mask(n_frames: int, a_s: float, b_s: float) -> np.ndarray:
    """Frames whose stamp (i+1)*80 ms lies in [a, b) — the same edges the event matchers use."""
    stamps = (np.arange(n_frames, dtype=np.int64) + 1) * FRAME_US
    return (stamps >= to_us(a_s)) & (stamps < to_us(b_s))


def n_frames_for(duration_s: float) -> int:
    """Frames covering a conversation: ceil(duration / 80 ms); the last one is zero-padded by the runner."""
    return -(-to_us(duration_s) // FRAME_US)


def derive(user: Activity, agent: Activity, duration_s: float, rules: LabelRules | None = None) -> DerivedLabels:
    """Apply R1..R9 to one channel assignment (which channel is the user is the caller's choice)."""
    rules = rules or LabelRules()
    if number_problem(duration_s, 0.0, MAX_TIME_S, lo_open=True) is not None:
        raise InputError(f"conversation duration must be > 0 s (at most {MAX_TIME_S:g}), got {duration_s!r}")
    dur_us = to_us(duration_s)
    for name, act in ((USER, user), (AGENT, agent)):
        if act.intervals and to_us(act.intervals[-1][1]) > dur_us:
            raise InputError(f"{name} speech ends at {act.intervals[-1][1]} s, after the conversation end "
                             f"{duration_s} s")
    n_frames = n_frames_for(duration_s)
    n_ticks = n_frames * TICKS_PER_FRAME
    vocs = vocalizations(user, agent, rules)
    tlist, vocs = turns(vocs, rules)

    # R8: frame states by majority of 10 ms ticks.
    def spans(spk: str, kinds: tuple[str, ...]) -> list[tuple[float, float]]:
        return [(v.start_s, v.end_s) for v in vocs if v.speaker == spk and v.kind in kinds]

    agent_bc = _frame_major(_raster(n_ticks, spans(AGENT, ("backchannel",))), n_frames)
    agent_talk = _frame_major(_raster(n_ticks, spans(AGENT, ("turn", "overlap"))), n_frames)
    agent_floor = _frame_major(_raster(n_ticks, [(t.start_s, t.end_s) for t in tlist if t.speaker == AGENT]), n_frames)
    user_floor_t = _raster(n_ticks, [(t.start_s, t.end_s) for t in tlist if t.speaker == USER])
    user_floor = _frame_major(user_floor_t, n_frames)
    user_talk = _frame_major(_raster(n_ticks, spans(USER, ("turn", "overlap", "backchannel"))), n_frames)
    truth = np.full(n_frames, LISTEN, dtype=np.int8)
    truth[user_floor & ~user_talk] = HOLD
    truth[agent_floor | agent_talk] = SPEAK
    truth[agent_bc] = BACKCHANNEL

    # Events (R5, R6, R7).
    turn_probes: list[TurnProbe] = []
    pause_probes: list[PauseProbe] = []
    user_pauses: list[UserPause] = []
    yield_onsets: list[float] = []
    user_starts = sorted(to_us(v.start_s) for v in vocs if v.speaker == USER)
    agent_talk_runs = spans(AGENT, ("turn", "overlap"))
    endpoint_pos = np.zeros(n_frames, dtype=bool)
    for t in tlist:
        if t.speaker == USER:
            for (a0, b0), (a1, _b1) in zip(t.runs, t.runs[1:]):
                if to_us(a1) <= to_us(b0):
                    continue
                user_pauses.append(UserPause(b0, a1, round(b0 - a0, 6)))
                if to_us(a1) - to_us(b0) >= to_us(rules.pause_min_s):
                    pause_probes.append(PauseProbe(b0, a1, t.start_s, a1))
            if t.ended_by == "shift":
                end_us = to_us(t.end_s)
                nxt_user = next((s for s in user_starts if s > end_us), None)
                w_end_us = min(end_us + to_us(rules.probe_tail_s), dur_us, nxt_user if nxt_user is not None else dur_us)
                turn_probes.append(TurnProbe(t.end_s, t.start_s, w_end_us / 1e6))
                pos_end_us = min(end_us + to_us(rules.endpoint_positive_s),
                                 nxt_user if nxt_user is not None else dur_us)
                endpoint_pos |= _stamp_mask(n_frames, t.end_s, pos_end_us / 1e6)
        elif t.ended_by == "shift" and t.next_start_s is not None:
            # R7: a yield onset is a user take of the floor while the agent is talking at that moment
            if _covers(agent_talk_runs, to_us(t.next_start_s)) and to_us(t.next_start_s) < to_us(t.end_s):
                yield_onsets.append(t.next_start_s)
    bc_onsets = [v.start_s for v in vocs if v.speaker == AGENT and v.kind == "backchannel"]

    # R9: head labels and validity masks.
    valid_endpoint = (user_floor & (truth != SPEAK) & (truth != BACKCHANNEL)) | endpoint_pos
    label_endpoint = endpoint_pos & valid_endpoint
    yield_pos = np.zeros(n_frames, dtype=bool)
    for o in yield_onsets:
        yield_pos |= _stamp_mask(n_frames, o, o + rules.yield_window_s)
    valid_yield = (agent_floor | agent_talk) | yield_pos
    bc_pos = np.zeros(n_frames, dtype=bool)
    for o in bc_onsets:
        bc_pos |= _stamp_mask(n_frames, max(0.0, o - rules.backchannel_before_s), o + rules.backchannel_after_s)
    valid_bc = ((user_floor & ~agent_floor & ~agent_talk) | agent_bc) | bc_pos
    frame_s = FRAME_US / 1e6
    listen_s = round(float(np.count_nonzero(truth == LISTEN)) * frame_s, 6)
    floor_s = sum(to_us(t.end_s) - to_us(t.start_s) for t in tlist if t.speaker == USER) / 1e6
    return DerivedLabels(
        n_frames=n_frames,
        duration_s=duration_s,
        vocalizations=vocs,
        turns=tlist,
        truth_state=truth,
        valid={"state": np.ones(n_frames, dtype=bool), "endpoint": valid_endpoint, "yield": valid_yield,
               "backchannel": valid_bc},  # fmt: skip
        label={"endpoint": label_endpoint, "yield": yield_pos, "backchannel": bc_pos & valid_bc},
        turn_probes=turn_probes,
        pause_probes=pause_probes,
        yield_onsets=yield_onsets,
        backchannel_onsets=bc_onsets,
        user_pauses=user_pauses,
        listen_s=listen_s,
        floor_s=floor_s,
        rules=rules,
    )


def limit_events(labels: DerivedLabels, end_s: float) -> tuple[list[float], list[float]]:
    """Yield and backchannel onsets before end_s (e.g. the first 240 s of each conversation, as spec 002 does)."""
    e = to_us(end_s)
    return [o for o in labels.yield_onsets if to_us(o) < e], [o for o in labels.backchannel_onsets if to_us(o) < e]


def to_clip(
    labels: DerivedLabels,
    clip_id: str,
    *,
    group: str = "",
    source: str | None = None,
    level_db: np.ndarray | None = None,
    events_end_s: float | None = None,
    extra: JsonObject | None = None,
) -> Clip:
    """The labels as a data.Clip (truth, masks, labels, events; no controller scores yet)."""
    yo, bo = (labels.yield_onsets, labels.backchannel_onsets)
    listen_s = labels.listen_s
    if events_end_s is not None:
        yo, bo = limit_events(labels, events_end_s)
        # firings are counted only in the events region, so the acknowledgment denominator is its LISTEN time
        n_in = frames_in_window(0.0, events_end_s, labels.n_frames)[1]
        listen_s = round(float(np.count_nonzero(labels.truth_state[:n_in] == LISTEN)) * FRAME_US / 1e6, 6)
    ex = {"label_rules": labels.rules.to_json()}
    ex.update(extra or {})
    meta = ClipMeta(
        id=clip_id,
        n_frames=labels.n_frames,
        group=group,
        source=source,
        turn_probes=list(labels.turn_probes),
        pause_probes=list(labels.pause_probes),
        yield_onsets=list(yo),
        backchannel_onsets=list(bo),
        user_pauses=list(labels.user_pauses),
        listen_s=listen_s,
        floor_s=labels.floor_s,
        events_start_s=0.0,
        events_end_s=events_end_s,
        extra=ex,
    )
    frames = ClipFrames(
        n_frames=labels.n_frames,
        truth_state=labels.truth_state,
        valid_state=labels.valid["state"],
        valid_endpoint=labels.valid["endpoint"],
        valid_yield=labels.valid["yield"],
        valid_backchannel=labels.valid["backchannel"],
        label_endpoint=labels.label["endpoint"],
        label_yield=labels.label["yield"],
        label_backchannel=labels.label["backchannel"],
        level_db=level_db,
    )
    return Clip(meta, frames)
