"""Hand-computed checks of the controller replay and event metrics (spec 002) at every window edge.

Frame i is stamped at (i+1)*80 ms; all numbers below are worked out by hand from that rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.controller.format.data import Clip, ClipFrames, ClipMeta, PauseProbe, TurnProbe, UserPause
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.metrics.events import aggregate, clip_events, match_onsets
from duplexeval.controller.metrics.replay import backchannel_firings, endpoint_firings, voiced_frames, yield_firings

POL = EvaluationPolicy()
LOUD, QUIET = -20.0, -80.0


def ep_clip(score, level, turn_ends=(), pauses=(), n=None, cid="c", group="", floor_s=0.0, source=None,
            user_pauses=(), windows=None):  # fmt: skip
    score = np.asarray(score, dtype=float)
    n = score.size if n is None else n
    probes = [TurnProbe(t) if windows is None else TurnProbe(t, 0.0, windows[k]) for k, t in enumerate(turn_ends)]
    meta = ClipMeta(cid, n, group=group, source=source, floor_s=floor_s, turn_probes=probes,
                    pause_probes=[PauseProbe(a, b) for a, b in pauses], user_pauses=list(user_pauses))  # fmt: skip
    return Clip(meta, ClipFrames(n, endpoint=score, level_db=np.asarray(level, dtype=float)))


def fire_frames(score, level, policy=POL, fallback=True):
    s = np.asarray(score, dtype=float)
    v = voiced_frames(np.asarray(level, dtype=float), s.size, policy)
    return [(f.frame, f.source) for f in endpoint_firings(s, v, 0, s.size, policy, fallback)]


# ------------------------------------------------------------------ endpoint replay rules


def test_debounce_needs_two_consecutive_frames_and_fires_at_the_second():
    pol = POL.with_(warmup_frames=0, min_voiced_ms=0)
    s = np.zeros(20)
    s[[3, 5, 7]] = 0.95  # isolated frames never fire
    assert fire_frames(s, np.full(20, LOUD), pol) == []
    s[8] = 0.95  # 7, 8 consecutive -> fires at 8
    assert fire_frames(s, np.full(20, LOUD), pol) == [(8, "head")]
    s[9] = 0.91  # threshold is inclusive: still a run, but one run fires once per (re)start window
    assert fire_frames(s, np.full(20, LOUD), pol)[0] == (8, "head")
    assert fire_frames(s, np.full(20, LOUD), pol.with_(debounce_frames=3)) == [(9, "head")]


def test_warmup_ignores_the_first_six_frames():
    s = np.full(30, 0.99)
    # frames 0..5 ignored; 6 and 7 above -> fires at frame 7 (stamp 640 ms)
    assert fire_frames(s, np.full(30, LOUD))[0] == (7, "head")
    # no warmup: debounce allows frame 1, min voiced 350 ms needs 5 voiced frames -> frame 4
    assert fire_frames(s, np.full(30, LOUD), POL.with_(warmup_frames=0))[0] == (4, "head")
    assert fire_frames(s, np.full(30, LOUD), POL.with_(warmup_frames=0, min_voiced_ms=320))[0] == (3, "head")


def test_gate_is_strictly_above_minus_50_db():
    s = np.full(30, 0.99)
    assert fire_frames(s, np.full(30, -50.0), fallback=False) == []  # never voiced, min voiced never met
    assert fire_frames(s, np.full(30, -49.99), fallback=False)[0] == (7, "head")
    lv = np.full(30, -50.0)
    lv[[0, 2, 4, 6]] = -10.0  # 4 voiced frames = 320 ms < 350 ms
    assert fire_frames(s, lv, fallback=False) == []
    lv[8] = -10.0  # 5th voiced frame at 8 -> 400 ms: fires at frame 8
    assert fire_frames(s, lv, fallback=False)[0] == (8, "head")
    assert fire_frames(s, np.full(30, -80.0), POL.with_(vad_gate_db=None))[0] == (7, "head")


def test_fallback_after_1200_ms_of_silence_and_head_only():
    lv = np.full(60, LOUD)
    lv[10:] = QUIET  # silence starts at frame 10 (0.8 s); 15 silent frames end at frame 24 (stamp 2.0 s)
    s = np.zeros(60)
    assert fire_frames(s, lv)[0] == (24, "fallback")
    assert fire_frames(s, lv, POL.with_(fallback_silence_ms=1201))[0] == (25, "fallback")
    assert fire_frames(s, lv, fallback=False) == []
    c = ep_clip(s, lv, turn_ends=[0.8])
    ev = clip_events(c, POL)
    assert ev.endpoint["fallback_on"].turn_latency_us == [1_200_000]
    assert ev.endpoint["fallback_on"].turn_source == ["fallback"]
    assert ev.endpoint["head_only"].turn_source == [None]
    agg = aggregate([ev], POL)["endpoint"]
    assert agg["fallback_on"]["miss_within_deadline"]["count"] == 0  # exactly 1.2 s is within
    assert agg["head_only"]["miss_within_deadline"]["count"] == 1
    late = aggregate([clip_events(c, POL.with_(fallback_silence_ms=1280))], POL)["endpoint"]["fallback_on"]
    assert late["miss_within_deadline"]["count"] == 1  # a late endpoint is a miss
    assert late["no_endpoint"]["count"] == 0


def test_head_wins_a_tie_with_the_fallback():
    lv = np.full(60, LOUD)
    lv[10:] = QUIET
    s = np.zeros(60)
    s[23:] = 0.95
    assert fire_frames(s, lv)[0] == (24, "head")


def test_reset_after_early_endpoint_restarts_warmup_and_voiced_count():
    s = np.zeros(60)
    s[10:] = 0.95
    # first firing at 11 (stamp 0.96, early); reset at 12: 12..17 warmup, fires at 19 (1.60, early);
    # reset at 20: fires at 27 (stamp 2.24) -> final, latency 240 ms
    c = ep_clip(s, np.full(60, LOUD), turn_ends=[2.0])
    e = clip_events(c, POL).endpoint["fallback_on"]
    assert e.turn_early == [True] and e.turn_early_firings == [2]
    assert e.turn_latency_us == [240_000] and e.turn_source == ["head"]
    # a reset also restarts the voiced count: after the reset at 12 only 4 voiced frames (12..15) are heard
    lv = np.full(60, LOUD)
    lv[16:] = -60.0
    e2 = clip_events(ep_clip(s, lv, turn_ends=[2.0]), POL.with_(endpoint_mode="head_only")).endpoint["head_only"]
    assert e2.turn_early_firings == [1] and e2.turn_source == [None]


def test_endpoint_exactly_at_turn_end_is_final_with_zero_latency():
    s = np.zeros(40)
    s[23:] = 0.95  # fires at frame 24, stamp 2.00
    e = clip_events(ep_clip(s, np.full(40, LOUD), turn_ends=[2.0]), POL).endpoint["fallback_on"]
    assert e.turn_early == [False] and e.turn_latency_us == [0]
    e = clip_events(ep_clip(s, np.full(40, LOUD), turn_ends=[2.0001]), POL).endpoint["fallback_on"]
    assert e.turn_early == [True]


def test_probe_too_short_to_observe_the_deadline_is_censored():
    s = np.zeros(60)
    lv = np.full(60, LOUD)
    # turn end 0.96 s; windows end 2.08 s (1.12 s observable: censored) and 2.16 s (exactly 1.2 s: eligible)
    c = ep_clip(s, lv, turn_ends=[0.96, 0.96], windows=[2.08, 2.16])
    m = aggregate([clip_events(c, POL)], POL)["endpoint"]["head_only"]["miss_within_deadline"]
    assert (m["eligible"], m["censored"], m["count"], m["n"]) == (1, 1, 1, 1)
    # a fallback firing exactly at the deadline inside the shortest eligible window is a hit
    lv2 = lv.copy()
    lv2[12:] = QUIET  # silence from 0.96 s; 15 frames end at frame 26 (stamp 2.16)
    c2 = ep_clip(s, lv2, turn_ends=[0.96], windows=[2.16])
    m2 = aggregate([clip_events(c2, POL)], POL)["endpoint"]["fallback_on"]
    assert m2["miss_within_deadline"]["count"] == 0 and m2["latency"]["median_ms"] == 1200.0


def test_shares_sum_to_one_and_latency_stats():
    lv = np.full(100, LOUD)
    s_head = np.zeros(100)
    s_head[30:] = 0.95  # fires at 31 -> stamp 2.56 vs turn end 2.4: 160 ms
    lv_fb = lv.copy()
    lv_fb[30:] = QUIET  # fallback at frame 44 -> stamp 3.6 vs turn end 2.4: 1200 ms
    clips = [
        ep_clip(s_head, lv, turn_ends=[2.4], cid="a"),
        ep_clip(np.zeros(100), lv_fb, turn_ends=[2.4], cid="b"),
        ep_clip(np.zeros(100), lv, turn_ends=[2.4], cid="c"),
    ]
    e = aggregate([clip_events(c, POL) for c in clips], POL)["endpoint"]["fallback_on"]
    assert (e["head"]["count"], e["fallback"]["count"], e["no_endpoint"]["count"]) == (1, 1, 1)
    assert e["head"]["value"] + e["fallback"]["value"] + e["no_endpoint"]["value"] == pytest.approx(1.0)
    assert e["latency"] == {"n": 2, "mean_ms": 680.0, "median_ms": 160.0, "p90_ms": 1200.0}


def test_pause_probe_edges_and_reference_time_per_unique_source():
    s = np.zeros(100)
    lv = np.full(100, LOUD)
    s[23:] = 0.95  # fires at frame 24, stamp 2.0
    inside = ep_clip(s, lv, pauses=[(2.0, 3.0)], cid="in", source="src1", floor_s=1800.0)
    at_end = ep_clip(s, lv, pauses=[(1.0, 2.0)], cid="end", source="src1", floor_s=1800.0)
    seen: set[str] = set()
    evs = [clip_events(inside, POL, seen), clip_events(at_end, POL, seen)]
    assert evs[0].endpoint["fallback_on"].pause_false_cut == [True]  # stamp == pause start: inside
    assert evs[1].endpoint["fallback_on"].pause_false_cut == [False]  # stamp == pause end: outside
    p = aggregate(evs, POL)["endpoint"]["fallback_on"]["pause_false_endpoints"]
    assert p["count"] == 1 and p["n"] == 2
    assert p["reference_hours"] == 0.5 and p["per_hour"] == 2.0  # 1800 s counted once
    # an endpoint before the pause resets and is not the probe's false cut
    s2 = np.zeros(100)
    s2[10:12] = 0.95  # fires at 11 (0.96 s)
    e = clip_events(ep_clip(s2, lv, pauses=[(2.0, 3.0)]), POL).endpoint["head_only"]
    assert e.pause_false_cut == [False] and e.pause_pre_firings == [1]


def test_long_pause_triggers_the_fallback_only_when_on():
    lv = np.full(100, LOUD)
    lv[20:40] = QUIET  # pause 1.6 .. 3.2 s; 15 silent frames end at frame 34 (stamp 2.8)
    c = ep_clip(np.zeros(100), lv, pauses=[(1.6, 3.2)])
    ev = clip_events(c, POL)
    assert ev.endpoint["fallback_on"].pause_false_cut == [True]
    assert ev.endpoint["head_only"].pause_false_cut == [False]


def test_dense_scan_and_filler_proxy():
    s = np.zeros(200)
    s[30:32] = 0.95  # fires at 31 (2.56 s)
    s[60:62] = 0.95  # fires at 61 (4.96 s)
    s[63:65] = 0.95  # in warmup after the reset at 62: ignored
    c = ep_clip(s, np.full(200, LOUD), floor_s=36.0,
                user_pauses=[UserPause(2.5, 2.8, 0.6), UserPause(4.9, 5.5, 2.0), UserPause(8.0, 9.0, 0.2)])  # fmt: skip
    d = aggregate([clip_events(c, POL)], POL)["dense_scan"]
    assert d["user_pauses"] == 3 and d["false_endpoints"]["count"] == 2
    assert d["false_endpoints"]["per_hour"] == pytest.approx(200.0)
    assert d["filler_pauses"] == 2 and d["filler_floor_takings"]["count"] == 1  # run 0.6 s counts (<= 600 ms)


# ------------------------------------------------------------------ yield / backchannel matching


def test_match_onsets_is_greedy_one_to_one():
    assert match_onsets([1000, 1100], [1500], (0, 640)) == [500]
    assert match_onsets([1000, 1100], [1500, 1600], (0, 640)) == [500, 500]


def _head_clip(head, frames_above, onsets, n=80, listen_s=0.0):
    s = np.zeros(n)
    for f in frames_above:
        s[f - 1 : f + 1] = 0.99  # a 2-frame run ending at f: fires at f
    kw = {"yield_": s} if head == "yield" else {"backchannel": s}
    meta = ClipMeta("h", n, listen_s=listen_s,
                    **({"yield_onsets": onsets} if head == "yield" else {"backchannel_onsets": onsets}))
    return Clip(meta, ClipFrames(n, **kw))


@pytest.mark.parametrize(
    "fire_frame,matched,latency",
    [(9, True, 0), (16, True, 560_000), (17, False, None), (8, False, None)],
)
def test_yield_window_is_onset_inclusive_and_plus_640_exclusive(fire_frame, matched, latency):
    ev = clip_events(_head_clip("yield", [fire_frame], [0.8]), POL)  # onset 0.8 s = stamp of frame 9
    assert ev.yield_latency_us == ([latency] if matched else [])
    assert ev.yield_firings == 1


@pytest.mark.parametrize(
    "fire_frame,matched,latency",
    [(16, True, -640_000), (15, False, None), (27, True, 240_000), (28, False, None), (24, True, 0)],
)
def test_backchannel_window_minus_640_inclusive_plus_320_exclusive(fire_frame, matched, latency):
    ev = clip_events(_head_clip("backchannel", [fire_frame], [2.0]), POL)  # onset 2.0 s = stamp of frame 24
    assert ev.backchannel_latency_us == ([latency] if matched else [])


def test_cooldown_suppresses_15_frames_after_a_firing():
    s = np.zeros(100)
    for j in (10, 25, 26 + 15):  # runs ending at 10, 25 (15 after: suppressed), 41 (16 after 25, 31 after 10)
        s[j - 1 : j + 1] = 0.99
    assert backchannel_firings(s, 0, 100, POL).tolist() == [10, 41]
    s2 = np.zeros(100)
    for j in (10, 26):  # 16 frames apart: both kept
        s2[j - 1 : j + 1] = 0.99
    assert backchannel_firings(s2, 0, 100, POL).tolist() == [10, 26]
    assert yield_firings(s, 0, 100, POL).tolist() == [10, 25, 41]  # yield has no cooldown
    long = np.zeros(100)
    long[10:60] = 0.99  # one sustained run fires once
    assert backchannel_firings(long, 0, 100, POL).tolist() == [11]


def test_acknowledgment_rate_per_listen_hour_and_recall():
    c = _head_clip("backchannel", [10, 40], [0.8, 6.0], n=100, listen_s=72.0)
    agg = aggregate([clip_events(c, POL)], POL)["backchannel"]
    assert agg["recall"]["count"] == 1 and agg["recall"]["n"] == 2
    assert agg["firings"] == 2 and agg["acknowledgment_rate"]["per_hour"] == pytest.approx(100.0)
    assert agg["latency"]["median_ms"] == 80.0


def test_yield_false_events_per_hour_of_event_region():
    c = _head_clip("yield", [10, 40], [0.8], n=100)  # region 8 s; firing at 40 is unmatched
    agg = aggregate([clip_events(c, POL)], POL)["yield"]
    assert agg["detection"]["count"] == 1
    assert agg["false_events"]["count"] == 1 and agg["false_events"]["per_hour"] == pytest.approx(450.0)


def test_missing_scores_or_level_are_one_line_errors():
    from duplexeval.errors import InputError

    meta = ClipMeta("x", 10, turn_probes=[TurnProbe(0.4)])
    with pytest.raises(InputError, match="clip x: has turn/pause probes but no endpoint scores"):
        clip_events(Clip(meta, ClipFrames(10)), POL)
    with pytest.raises(InputError, match="level_db is missing"):
        clip_events(Clip(meta, ClipFrames(10, endpoint=np.zeros(10))), POL)


def test_clip_with_all_false_task_mask_and_no_onsets_is_left_out():
    s = np.zeros(50)
    s[10:12] = 0.99
    labelled = Clip(ClipMeta("a", 50), ClipFrames(50, yield_=s))
    unlabelled = Clip(ClipMeta("b", 50), ClipFrames(50, yield_=s, valid_yield=np.zeros(50, bool)))
    agg = aggregate([clip_events(labelled, POL), clip_events(unlabelled, POL)], POL)["yield"]
    assert agg["firings"] == 1 and agg["false_events"]["hours"] == pytest.approx(4.0 / 3600)
