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


@dataclass(frozen=True)
class PerHourCount:
    """A count over a reference duration (us): its rate per hour, None when the duration is 0."""

    count: int
    den_us: int

    @property
    def per_hour(self) -> float | None:
        return per_hour(self.count, self.den_us)["per_hour"]

    def to_json(self) -> PerHour:
        return per_hour(self.count, self.den_us)


@dataclass(frozen=True)
class EndpointSummary:
    """Turn-probe and pause-probe endpoint metrics under one mode (counts, shares, latencies in us)."""

    turn_probes: int
    latency_us: tuple[int, ...]
    early_cutin: Share
    early_cutin_firings: int
    no_endpoint: Share
    head: Share
    fallback: Share
    deadline_ms: float
    eligible: int
    miss_within_deadline: Share
    pause_probes: int
    pause_false_endpoints: Share
    pause_false_per_hour: PerHourCount
    pause_pre_pause_firings: int

    def to_json(self) -> JsonObject:
        ref_us = self.pause_false_per_hour.den_us
        return {
            "turn_probes": self.turn_probes,
            "latency": latency_summary(self.latency_us),
            "early_cutin": self.early_cutin.to_json(),
            "early_cutin_firings": self.early_cutin_firings,
            "no_endpoint": self.no_endpoint.to_json(),
            "head": self.head.to_json(),
            "fallback": self.fallback.to_json(),
            "miss_within_deadline": {
                "deadline_ms": self.deadline_ms,
                "eligible": self.eligible,
                "censored": self.turn_probes - self.eligible,
                **self.miss_within_deadline.to_json(),
            },
            "pause_probes": self.pause_probes,
            "pause_false_endpoints": {**self.pause_false_endpoints.to_json(),
                                      **{"per_hour": self.pause_false_per_hour.per_hour,
                                         "reference_hours": ref_us / HOUR_US}},
            "pause_pre_pause_firings": self.pause_pre_pause_firings,
        }


def endpoint_summary(evs: Sequence[ClipEvidence], mode: str, policy: EvaluationPolicy) -> EndpointSummary:
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
    return EndpointSummary(
        n, tuple(x for x in lat if x is not None), Share(sum(early), n),
        sum(sum(ev.endpoint[mode].turn_early_firings) for ev in evs), Share(sum(1 for s in src if s is None), n),
        Share(sum(1 for s in src if s == HEAD), n), Share(sum(1 for s in src if s == "fallback"), n),
        policy.miss_deadline_ms, n_elig, Share(miss, n_elig), len(pf), Share(sum(pf), len(pf)),
        PerHourCount(sum(pf), ref_us), sum(pre),
    )  # fmt: skip


@dataclass(frozen=True)
class EndpointSection:
    """The endpoint head under both modes; `primary_mode` is the policy's (the one calibrate and compare use)."""

    primary_mode: str
    modes: dict[str, EndpointSummary]

    def to_json(self) -> JsonObject:
        return {"primary_mode": self.primary_mode, **{m: e.to_json() for m, e in self.modes.items()}}


@dataclass(frozen=True)
class DenseScan:
    """Firings inside every user pause of the primary mode, per hour of reference time, and filler floor-takings."""

    mode: str
    user_pauses: int
    false_endpoints: PerHourCount
    filler_pauses: int
    filler_floor_takings: PerHourCount

    def to_json(self) -> JsonObject:
        return {"mode": self.mode, "user_pauses": self.user_pauses, "false_endpoints": self.false_endpoints.to_json(),
                "filler_pauses": self.filler_pauses, "filler_floor_takings": self.filler_floor_takings.to_json(),
                "filler_run_max_ms": FILLER_RUN_MAX_US // 1000}  # fmt: skip


@dataclass(frozen=True)
class OnsetSection:
    """An onset head (yield, backchannel): its matching window, the share of onsets a firing matched (named
    `matched`: detection or recall), the matched latencies (us), the firings and the head's rate (named `rate`)."""

    window_us: tuple[int, int]
    matched: str
    matched_share: Share
    latency_us: tuple[int, ...]
    firings: int
    rate: str
    rate_count: PerHourCount

    def to_json(self) -> JsonObject:
        return {"window_ms": [self.window_us[0] // 1000, self.window_us[1] // 1000],
                self.matched: self.matched_share.to_json(), "latency": latency_summary(self.latency_us),
                "firings": self.firings, self.rate: self.rate_count.to_json()}  # fmt: skip


def _onset_section(window_us: tuple[int, int], matched: str, rate: str,
                   clips: Iterable[tuple[int, Sequence[int], int]],
                   rate_of: Callable[[int, int], tuple[int, int]]) -> OnsetSection:  # fmt: skip
    """An onset head's section from per-clip (onsets, matched latencies, firings); `rate_of(matched onsets, firings)`
    gives the (count, reference us) of the head's rate."""
    n_on, n_fire = 0, 0
    lat: list[int] = []
    for onsets, latencies_us, firings in clips:
        n_on += onsets
        lat += latencies_us
        n_fire += firings
    count, den_us = rate_of(len(lat), n_fire)
    return OnsetSection(window_us, matched, Share(len(lat), n_on), tuple(lat), n_fire, rate,
                        PerHourCount(count, den_us))


@dataclass(frozen=True)
class EventMetrics:
    """The event-metric section of a report: every metric with its counts and denominators (None: no clip has
    that head)."""

    clips: int
    groups: int
    endpoint: EndpointSection | None
    dense_scan: DenseScan | None
    yield_: OnsetSection | None
    backchannel: OnsetSection | None
    onsets_outside_event_region: int

    def to_json(self) -> JsonObject:
        out: JsonObject = {"clips": self.clips, "groups": self.groups}
        if self.endpoint is not None:
            out["endpoint"] = self.endpoint.to_json()
        if self.dense_scan is not None:
            out["dense_scan"] = self.dense_scan.to_json()
        if self.yield_ is not None:
            out["yield"] = self.yield_.to_json()
        if self.backchannel is not None:
            out["backchannel"] = self.backchannel.to_json()
        out["onsets_outside_event_region"] = self.onsets_outside_event_region
        return out


def event_metrics(evs: Sequence[ClipEvidence], policy: EvaluationPolicy) -> EventMetrics:
    """The event metrics of clips' evidence under a policy, typed (`aggregate` is their JSON)."""
    endpoint = dense = yld = bc = None
    if any(e.has_endpoint for e in evs):
        endpoint = EndpointSection(policy.endpoint_mode, {mode: endpoint_summary(evs, mode, policy) for mode in MODES})
        floor = sum(e.floor_us for e in evs)
        fillers = PerHourCount(sum(e.filler_floor_takings for e in evs), floor)
        dense = DenseScan(policy.endpoint_mode, sum(e.dense_pauses for e in evs),
                          PerHourCount(sum(e.dense_firings_in_pauses for e in evs), floor),
                          sum(e.filler_pauses for e in evs), fillers)
    if any(e.has_yield for e in evs):
        region = sum(e.yield_region_us for e in evs)
        yld = _onset_section(YIELD_WINDOW_US, "detection", "false_events",
                             ((e.yield_onsets, e.yield_latency_us, e.yield_firings) for e in evs),
                             lambda hits, fired: (fired - hits, region))
    if any(e.has_backchannel for e in evs):
        listen = sum(e.listen_us for e in evs)
        bc = _onset_section(BACKCHANNEL_WINDOW_US, "recall", "acknowledgment_rate",
                            ((e.backchannel_onsets, e.backchannel_latency_us, e.backchannel_firings) for e in evs),
                            lambda _hits, fired: (fired, listen))
    return EventMetrics(len(evs), len({e.group for e in evs}), endpoint, dense, yld, bc,
                        sum(e.onsets_outside_region for e in evs))


def aggregate(evs: Sequence[ClipEvidence], policy: EvaluationPolicy) -> JsonObject:
    """The event-metric section of the report as JSON (every metric with its counts and denominators)."""
    return event_metrics(evs, policy).to_json()


def evaluate_events(clips: Iterable[Clip], policy: EvaluationPolicy) -> tuple[list[ClipEvidence], EventMetrics]:
    """Replay every clip (an iterable of Clip) and aggregate; returns the per-clip evidence too."""
    seen: set[str] = set()
    evs = [clip_events(c, policy, seen) for c in clips]
    return evs, event_metrics(evs, policy)
