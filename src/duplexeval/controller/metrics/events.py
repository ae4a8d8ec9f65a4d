"""Event metrics of spec 002 from the offline replay: per-clip evidence records, then aggregates with counts.

``clip_events`` replays one clip into a ``ClipEvidence`` (plain numbers and lists, no arrays); ``aggregate`` turns
any list of them into the report section. ``compare`` resamples conversation groups of the same records.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from duplexeval.controller.format.data import Clip, ClipFrames, frame_end_us, frames_in_window
from duplexeval.controller.format.policy import MODES, EvaluationPolicy
from duplexeval.controller.metrics.replay import (
    HEAD,
    EndpointReplayer,
    backchannel_firings,
    replay_pause,
    replay_turn,
    voiced_frames,
    yield_firings,
)
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.stats import Quantile, Share
from duplexeval.units import to_us

YIELD_WINDOW_US = (0, 640_000)  # [onset, onset + 640 ms)
BACKCHANNEL_WINDOW_US = (-640_000, 320_000)  # [onset - 640 ms, onset + 320 ms)
FILLER_RUN_MAX_US = 600_000
HOUR_US = 3_600_000_000


@dataclass
class EndpointEvidence:
    """Turn and pause probe outcomes of one clip under one endpoint mode."""

    turn_early: list[bool] = field(default_factory=list)
    turn_early_firings: list[int] = field(default_factory=list)
    turn_source: list[str | None] = field(default_factory=list)  # head / fallback / None (no endpoint)
    turn_latency_us: list[int | None] = field(default_factory=list)
    turn_observe_us: list[int] = field(default_factory=list)
    pause_false_cut: list[bool] = field(default_factory=list)
    pause_pre_firings: list[int] = field(default_factory=list)


@dataclass
class ClipEvidence:
    """Everything the event metrics need from one clip (no arrays)."""

    clip_id: str
    group: str
    source: str
    floor_us: int  # this clip's share of reference time (0 if its source was already counted)
    endpoint: dict[str, EndpointEvidence]
    yield_onsets: int = 0
    yield_latency_us: list[int] = field(default_factory=list)
    yield_firings: int = 0
    yield_region_us: int = 0
    backchannel_onsets: int = 0
    backchannel_latency_us: list[int] = field(default_factory=list)
    backchannel_firings: int = 0
    listen_us: int = 0
    onsets_outside_region: int = 0
    dense_pauses: int = 0
    dense_firings_in_pauses: int = 0
    filler_pauses: int = 0
    filler_floor_takings: int = 0
    has_endpoint: bool = False
    has_yield: bool = False
    has_backchannel: bool = False
    state_confusion: list[list[int]] | None = None  # this clip's 4x4 state confusion (set by report.run_clips)
    labels_sha256: str = ""  # digest of the clip's truth, masks and frame labels (compare checks A and B agree)

    def to_json(self) -> JsonObject:
        """The per-clip evidence row (`evaluate --rows`): what each probe and onset contributed, in ms."""
        return evidence_row(self)


def match_onsets(onsets_us: Sequence[int], firings_us: Sequence[int], window_us: tuple[int, int]) -> list[int]:
    """Greedy one-to-one matcher: each onset (in time order) takes the earliest unused firing f with
    lo <= f - onset < hi. Returns the latencies (f - onset) of the matched onsets."""
    lo, hi = window_us
    fir = sorted(firings_us)
    used = [False] * len(fir)
    out: list[int] = []

    for o in sorted(onsets_us):
        k = bisect.bisect_left(fir, o + lo)
        while k < len(fir) and fir[k] - o < hi:
            if not used[k]:
                used[k] = True
                out.append(fir[k] - o)
                break
            k += 1
    return out


LABEL_ARRAYS = ("truth_state", "valid_state", "valid_endpoint", "valid_yield", "valid_backchannel",
                "label_endpoint", "label_yield", "label_backchannel")  # fmt: skip


def labels_digest(fr: ClipFrames) -> str:
    """SHA-256 over the clip's label arrays (name, dtype-normalised bytes); absent arrays hash as absent."""
    h = hashlib.sha256()
    for name in LABEL_ARRAYS:
        arr = fr.get(name)
        h.update(name.encode() + (b"-" if arr is None else b"+"))
        if arr is not None:
            h.update(np.ascontiguousarray(np.asarray(arr).astype(np.int8)).tobytes())
    return h.hexdigest()


def _window(clip: Clip, ws: float, we: float | None) -> tuple[int, int]:
    return frames_in_window(ws, clip.meta.duration_s if we is None else we, clip.meta.n_frames)


def clip_events(
    clip: Clip, policy: EvaluationPolicy, counted_sources: set[str] | None = None, modes: Sequence[str] = MODES,
    dense: bool = True,
) -> ClipEvidence:  # fmt: skip
    """Replay one clip under ``policy`` (the given endpoint modes, by default both) and collect its evidence."""
    m, fr = clip.meta, clip.frames
    n = m.n_frames
    where = f"clip {m.id}"
    src = m.source_id
    floor_us = to_us(m.floor_s)
    if counted_sources is not None:
        if src in counted_sources:
            floor_us = 0
        counted_sources.add(src)
    ev = ClipEvidence(m.id, m.group_id, src, floor_us, {mode: EndpointEvidence() for mode in MODES})
    ev.labels_sha256 = labels_digest(fr)
    needs_endpoint = bool(m.turn_probes or m.pause_probes or m.user_pauses)
    if needs_endpoint:
        if fr.endpoint is None:
            raise InputError(f"{where}: has turn/pause probes but no endpoint scores")
        try:
            voiced = voiced_frames(fr.level_db, n, policy)
        except ValueError:
            raise InputError(f"{where}: level_db is missing; the voice-activity gate needs it (or set "
                             "vad_gate_db to null)") from None
        ev.has_endpoint = True
        rp = EndpointReplayer(fr.endpoint, voiced, policy)
        for mode in modes:
            fb = mode == "fallback_on"
            e = ev.endpoint[mode]
            for p in m.turn_probes:
                we_us = to_us(m.duration_s if p.window_end_s is None else p.window_end_s)
                o = replay_turn(fr.endpoint, voiced, n, p.turn_end_s, _window(clip, p.window_start_s, p.window_end_s),
                                policy, fb, rp, we_us)
                e.turn_early.append(o.early > 0)
                e.turn_early_firings.append(o.early)
                e.turn_source.append(None if o.final is None else o.final.source)
                e.turn_latency_us.append(o.latency_us)
                e.turn_observe_us.append(o.observe_us)
            for q in m.pause_probes:
                o2 = replay_pause(fr.endpoint, voiced, q.pause_start_s, q.pause_end_s,
                                  _window(clip, q.window_start_s, q.window_end_s), policy, fb, rp)
                e.pause_false_cut.append(o2.false_cut)
                e.pause_pre_firings.append(o2.pre_pause)
        if m.user_pauses and dense:
            fb = policy.endpoint_mode == "fallback_on"
            fir = rp.firings(0, n, fb)
            stamps = np.asarray([f.t_us for f in fir], dtype=np.int64)
            in_any = np.zeros(stamps.size, dtype=bool)  # a firing inside overlapping pauses counts once
            for up in m.user_pauses:
                a, b = to_us(up.start_s), to_us(up.end_s)
                inside_pause = (stamps >= a) & (stamps < b)
                in_any |= inside_pause
                ev.dense_pauses += 1
                if to_us(up.run_s) <= FILLER_RUN_MAX_US:
                    ev.filler_pauses += 1
                    ev.filler_floor_takings += int(bool(inside_pause.any()))
            ev.dense_firings_in_pauses = int(in_any.sum())
    rs, re_ = to_us(m.events_start_s), to_us(m.duration_s if m.events_end_s is None else m.events_end_s)
    region_us = max(0, re_ - rs)

    def in_region(t_us: int) -> bool:
        # one interval for firings and onsets: [events_start_s, events_end_s), or with no events_end_s every time
        # from events_start_s on, the clip's end included (its last frame's firing, an onset at the clip end)
        return t_us >= rs and (m.events_end_s is None or t_us < re_)

    def counted(frames: np.ndarray) -> np.ndarray:
        # the heads run over the whole clip (a debounce run or cooldown may start before the region); only
        # firings stamped inside the region count
        t = np.asarray(frame_end_us(frames), dtype=np.int64)
        keep = t >= rs if m.events_end_s is None else (t >= rs) & (t < re_)
        return t[keep]

    def inside(onsets: list[float]) -> list[int]:
        us = [to_us(o) for o in onsets]
        keep = [o for o in us if in_region(o)]
        ev.onsets_outside_region += len(us) - len(keep)
        return keep

    def takes_part(onsets: list[float], score: object, mask: np.ndarray | None) -> bool:
        # a clip whose task mask is present and all False (e.g. bridged FDB clips for yield/backchannel) has no
        # labels for that task: its firings would be false events of nothing, so it is left out unless it has onsets
        return bool(onsets) or (score is not None and (mask is None or bool(mask.any())))

    def onset_head(head: str, onsets: list[float], score: np.ndarray | None, mask: np.ndarray | None,
                   firings: Callable[[np.ndarray, int, int, EvaluationPolicy], np.ndarray],
                   window_us: tuple[int, int]) -> tuple[int, list[int], int] | None:
        """(onsets in the region, matched latencies, firings) of the yield or backchannel head; None if it takes no
        part."""
        if not takes_part(onsets, score, mask):
            return None
        if score is None:
            raise InputError(f"{where}: has {head} onsets but no {head} scores")
        on = inside(onsets)
        fired = counted(firings(score, 0, n, policy))
        return len(on), match_onsets(on, fired.tolist(), window_us), int(fired.size)

    yh = onset_head("yield", m.yield_onsets, fr.yield_, fr.valid_yield, yield_firings, YIELD_WINDOW_US)
    if yh is not None:
        ev.has_yield = True
        ev.yield_onsets, ev.yield_latency_us, ev.yield_firings = yh
        ev.yield_region_us = region_us
    bh = onset_head("backchannel", m.backchannel_onsets, fr.backchannel, fr.valid_backchannel, backchannel_firings,
                    BACKCHANNEL_WINDOW_US)
    if bh is not None:
        ev.has_backchannel = True
        ev.backchannel_onsets, ev.backchannel_latency_us, ev.backchannel_firings = bh
        ev.listen_us = to_us(m.listen_s)
    return ev


def evidence_row(ev: ClipEvidence) -> JsonObject:
    """One per-clip evidence row (for ``--rows``): what each probe and onset contributed, in ms."""
    def ms(x: float | None) -> float | None:
        return None if x is None else x / 1000.0

    row: JsonObject = {"clip": ev.clip_id, "group": ev.group, "source": ev.source, "reference_s": ev.floor_us / 1e6}
    if ev.has_endpoint:
        for mode in MODES:
            e = ev.endpoint[mode]
            row[mode] = {
                "turns": [
                    {"early_firings": k, "final": s, "latency_ms": ms(lt), "observed_after_end_ms": ms(o)}
                    for k, s, lt, o in zip(e.turn_early_firings, e.turn_source, e.turn_latency_us, e.turn_observe_us)
                ],
                "pauses": [{"false_cut": fc, "pre_pause_firings": k}
                           for fc, k in zip(e.pause_false_cut, e.pause_pre_firings)],
            }
        row["dense"] = {"user_pauses": ev.dense_pauses, "firings_in_pauses": ev.dense_firings_in_pauses,
                        "filler_pauses": ev.filler_pauses, "filler_floor_takings": ev.filler_floor_takings}  # fmt: skip
    if ev.has_yield:
        row["yield"] = {"onsets": ev.yield_onsets, "matched_latency_ms": [ms(x) for x in ev.yield_latency_us],
                        "firings": ev.yield_firings, "region_s": ev.yield_region_us / 1e6}  # fmt: skip
    if ev.has_backchannel:
        row["backchannel"] = {"onsets": ev.backchannel_onsets,
                              "matched_latency_ms": [ms(x) for x in ev.backchannel_latency_us],
                              "firings": ev.backchannel_firings, "listen_s": ev.listen_us / 1e6}  # fmt: skip
    return row


# ---------------------------------------------------------------- aggregation


def share(count: int, n: int) -> dict[str, object]:
    """count/n with its Wilson 95% interval in the one share shape (``stats.Share.to_json``: value, count, n,
    interval); value and interval null when n is 0."""
    return Share(count, n).to_json()


class PerHour(TypedDict):
    """A count over a reference duration, as the report writes it."""

    count: int
    hours: float
    per_hour: float | None


class LatencySummary(TypedDict):
    """A latency section of the report, in ms (nulls for an empty set)."""

    n: int
    mean_ms: float | None
    median_ms: float | None
    p90_ms: float | None


def per_hour(count: int, den_us: int) -> PerHour:
    """count per hour of ``den_us``; null when the denominator is 0."""
    return {"count": count, "hours": den_us / HOUR_US, "per_hour": (count * HOUR_US / den_us) if den_us > 0 else None}


def latency_summary(values_us: Sequence[int]) -> LatencySummary:
    """n, mean, median (Q50) and p90 (Q90) by the shared quantile rule, in ms; nulls for an empty set."""
    ms = [v / 1000.0 for v in values_us]
    return {
        "n": len(ms),
        "mean_ms": (sum(ms) / len(ms)) if ms else None,
        "median_ms": Quantile.of(ms, 0.5).value,
        "p90_ms": Quantile.of(ms, 0.9).value,
    }


def endpoint_summary(evs: Sequence[ClipEvidence], mode: str, policy: EvaluationPolicy) -> JsonObject:
    """Turn-probe and pause-probe endpoint metrics under one mode."""
    early, src, lat, obs, pf, pre = [], [], [], [], [], []
    for ev in evs:
        e = ev.endpoint[mode]
        early += e.turn_early
        src += e.turn_source
        lat += e.turn_latency_us
        obs += e.turn_observe_us
        pf += e.pause_false_cut
        pre += e.pause_pre_firings
    n = len(src)
    deadline = policy.miss_deadline_ms * 1000
    eligible = [o >= deadline for o in obs]
    n_elig = sum(eligible)
    miss = sum(1 for el, lt in zip(eligible, lat) if el and (lt is None or lt > deadline))
    ref_us = sum(ev.floor_us for ev in evs)
    return {
        "turn_probes": n,
        "latency": latency_summary([x for x in lat if x is not None]),
        "early_cutin": share(sum(early), n),
        "early_cutin_firings": sum(sum(ev.endpoint[mode].turn_early_firings) for ev in evs),
        "no_endpoint": share(sum(1 for s in src if s is None), n),
        "head": share(sum(1 for s in src if s == HEAD), n),
        "fallback": share(sum(1 for s in src if s == "fallback"), n),
        "miss_within_deadline": {
            "deadline_ms": policy.miss_deadline_ms,
            "eligible": n_elig,
            "censored": n - n_elig,
            **share(miss, n_elig),
        },
        "pause_probes": len(pf),
        "pause_false_endpoints": {**share(sum(pf), len(pf)),
                                  **{"per_hour": per_hour(sum(pf), ref_us)["per_hour"],
                                     "reference_hours": ref_us / HOUR_US}},
        "pause_pre_pause_firings": sum(pre),
    }


def _onset_section(window_us: tuple[int, int], matched: str,
                   clips: Iterable[tuple[int, Sequence[int], int]]) -> tuple[JsonObject, int, int]:
    """An onset head's section (yield, backchannel) from per-clip (onsets, matched latencies, firings): the matching
    window, the share of onsets matched by a firing (named ``matched``), the latencies and the firings; also
    (matched onsets, firings) for the head's rate."""
    n_on, n_fire = 0, 0
    lat: list[int] = []
    for onsets, latencies_us, firings in clips:
        n_on += onsets
        lat += latencies_us
        n_fire += firings
    sec = {
        "window_ms": [window_us[0] // 1000, window_us[1] // 1000],
        matched: share(len(lat), n_on),
        "latency": latency_summary(lat),
        "firings": n_fire,
    }
    return sec, len(lat), n_fire


def aggregate(evs: Sequence[ClipEvidence], policy: EvaluationPolicy) -> JsonObject:
    """The event-metric section of the report (every metric with its counts and denominators)."""
    out: JsonObject = {"clips": len(evs), "groups": len({e.group for e in evs})}
    if any(e.has_endpoint for e in evs):
        out["endpoint"] = {"primary_mode": policy.endpoint_mode}
        for mode in MODES:
            out["endpoint"][mode] = endpoint_summary(evs, mode, policy)
        floor = sum(e.floor_us for e in evs)
        dense_n = sum(e.dense_firings_in_pauses for e in evs)
        fill_n = sum(e.filler_floor_takings for e in evs)
        out["dense_scan"] = {
            "mode": policy.endpoint_mode,
            "user_pauses": sum(e.dense_pauses for e in evs),
            "false_endpoints": per_hour(dense_n, floor),
            "filler_pauses": sum(e.filler_pauses for e in evs),
            "filler_floor_takings": per_hour(fill_n, floor),
            "filler_run_max_ms": FILLER_RUN_MAX_US // 1000,
        }
    if any(e.has_yield for e in evs):
        sec, hits, fired = _onset_section(YIELD_WINDOW_US, "detection",
                                          ((e.yield_onsets, e.yield_latency_us, e.yield_firings) for e in evs))
        out["yield"] = {**sec, "false_events": per_hour(fired - hits, sum(e.yield_region_us for e in evs))}
    if any(e.has_backchannel for e in evs):
        sec, _hits, fired = _onset_section(BACKCHANNEL_WINDOW_US, "recall",
                                           ((e.backchannel_onsets, e.backchannel_latency_us, e.backchannel_firings)
                                            for e in evs))
        out["backchannel"] = {**sec, "acknowledgment_rate": per_hour(fired, sum(e.listen_us for e in evs))}
    out["onsets_outside_event_region"] = sum(e.onsets_outside_region for e in evs)
    return out


def evaluate_events(clips: Iterable[Clip], policy: EvaluationPolicy) -> tuple[list[ClipEvidence], JsonObject]:
    """Replay every clip (an iterable of Clip) and aggregate; returns the per-clip evidence too."""
    seen: set[str] = set()
    evs = [clip_events(c, policy, seen) for c in clips]
    return evs, aggregate(evs, policy)
