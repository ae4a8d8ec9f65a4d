"""Controller replay rules at the edges docs/controller.md section 2 settles, each worked out by hand.

- a turn probe is eligible for "miss within 1.2 s" when window end - turn end >= 1.2 s (the window end as
  written, not the end of its last whole frame);
- ROC-AUC / AP use the scores at full precision (scikit-learn on the same float64 arrays);
- the yield and backchannel heads run over the whole clip; only firings stamped in [events_start_s,
  events_end_s) count;
- a dense false endpoint inside overlapping user pauses counts once;
- the controller comparison's interval endpoints are the 50th and 1950th of 2000 resample statistics.
"""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.controller.format.data import Clip, ClipFrames, ClipMeta, TurnProbe, UserPause
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.metrics.compare import paired_bootstrap
from duplexeval.controller.metrics.events import aggregate, clip_events
from duplexeval.controller.metrics.frame_metrics import frame_metrics
from duplexeval.stats import bootstrap_indices

POL = EvaluationPolicy()
LOUD = -20.0


def test_probe_with_deadline_inside_an_unaligned_window_is_eligible():
    # the smallest case: 40 frames, probe [1.0, 0.0, 2.2], endpoint all 0, level -20 dB. The window's last
    # whole frame ends at 2.16 s, but every stamp up to the deadline (2.2 s) is a whole frame of the window.
    meta = ClipMeta("c", 40, turn_probes=[TurnProbe(1.0, 0.0, 2.2)])
    clip = Clip(meta, ClipFrames(40, endpoint=np.zeros(40), level_db=np.full(40, LOUD)))
    agg = aggregate([clip_events(clip, POL)], POL)["endpoint"]
    for mode in ("head_only", "fallback_on"):
        m = agg[mode]["miss_within_deadline"]
        assert (m["eligible"], m["censored"], m["count"], m["value"]) == (1, 0, 1, 1.0)
    # 1 us less of window: censored
    meta2 = ClipMeta("c", 40, turn_probes=[TurnProbe(1.0, 0.0, 2.199999)])
    clip2 = Clip(meta2, ClipFrames(40, endpoint=np.zeros(40), level_db=np.full(40, LOUD)))
    m2 = aggregate([clip_events(clip2, POL)], POL)["endpoint"]["head_only"]["miss_within_deadline"]
    assert (m2["eligible"], m2["censored"], m2["value"]) == (0, 1, None)


def test_head_auc_and_ap_use_full_precision_scores():
    from sklearn.metrics import average_precision_score, roc_auc_score

    s = np.array([0.5, 0.5 + 1e-12, 0.2, 0.9])
    y = np.array([0, 1, 0, 1], dtype=bool)
    fr = ClipFrames(4, endpoint=s, label_endpoint=y)
    row = frame_metrics([fr])["endpoint"]
    assert row["roc_auc"] == roc_auc_score(y, s) == 1.0
    assert row["average_precision"] == average_precision_score(y, s) == 1.0


def _runs(n: int, ends: list[int]) -> np.ndarray:
    s = np.zeros(n)
    for f in ends:
        s[f - 1 : f + 1] = 0.99  # a 2-frame run ending at f: fires at f
    return s


def test_yield_debounce_run_that_starts_before_the_region_fires_inside_it():
    # region [0.8, 8.0) s; run on frames 9-10 fires at frame 10 (stamp 0.88 s): counted, matched to onset 0.8
    s = _runs(100, [10])
    meta = ClipMeta("y", 100, yield_onsets=[0.8], events_start_s=0.8, events_end_s=8.0)
    ev = clip_events(Clip(meta, ClipFrames(100, yield_=s)), POL)
    assert ev.yield_firings == 1 and ev.yield_latency_us == [80_000]
    assert ev.yield_region_us == 7_200_000


def test_yield_firing_stamped_at_the_region_end_is_not_counted():
    meta = ClipMeta("y", 100, events_start_s=0.8, events_end_s=4.0)
    # the firing of frame 9 is stamped 0.8 s: inside [0.8, 4.0) (its audio starts at 0.72 s: the head heard it)
    assert clip_events(Clip(meta, ClipFrames(100, yield_=_runs(100, [9]))), POL).yield_firings == 1
    # frame 49 is stamped 4.0 s: not inside [0.8, 4.0), though its audio is
    assert clip_events(Clip(meta, ClipFrames(100, yield_=_runs(100, [49]))), POL).yield_firings == 0
    # with no events_end_s the region runs to the clip end and the last frame's firing counts
    s2 = _runs(100, [99])  # stamp 8.0 s = the clip end
    ev2 = clip_events(Clip(ClipMeta("y", 100), ClipFrames(100, yield_=s2)), POL)
    assert ev2.yield_firings == 1 and ev2.yield_region_us == 8_000_000


def test_backchannel_cooldown_that_starts_before_the_region_still_suppresses():
    # firing at frame 5 (before the region), a second run ending at frame 15 is within the 15-frame cooldown
    s = _runs(100, [5, 15, 40])
    meta = ClipMeta("b", 100, backchannel_onsets=[1.2], events_start_s=0.8, listen_s=7.2)
    ev = clip_events(Clip(meta, ClipFrames(100, backchannel=s)), POL)
    assert ev.backchannel_firings == 1  # only frame 40 (stamp 3.28 s): 15 was suppressed by 5's cooldown
    assert ev.backchannel_latency_us == []


def test_dense_false_endpoint_inside_overlapping_pauses_counts_once():
    s = np.zeros(50)
    s[20:22] = 0.99  # head fires at frame 21, stamp 1.76 s (warmup and 400 ms voiced long met)
    pauses = [UserPause(1.0, 2.0, 1.0), UserPause(1.5, 2.5, 0.4)]
    meta = ClipMeta("d", 50, floor_s=3.6, user_pauses=pauses)
    ev = clip_events(Clip(meta, ClipFrames(50, endpoint=s, level_db=np.full(50, LOUD))), POL)
    assert ev.dense_pauses == 2
    assert ev.dense_firings_in_pauses == 1
    assert (ev.filler_pauses, ev.filler_floor_takings) == (1, 1)
    dense = aggregate([ev], POL)["dense_scan"]
    assert dense["false_endpoints"]["count"] == 1 and dense["false_endpoints"]["per_hour"] == pytest.approx(1000.0)


def _group_clip(cid: str, early: bool) -> Clip:
    s = np.zeros(40)
    if early:
        s[10:12] = 0.99  # fires at frame 11 (stamp 0.96 s) before the turn end 2.0 s
    meta = ClipMeta(cid, 40, turn_probes=[TurnProbe(2.0)])
    return Clip(meta, ClipFrames(40, endpoint=s, level_db=np.full(40, LOUD)))


def test_compare_interval_takes_resample_ranks_50_and_1950():
    # A never cuts in; B cuts in on clips k where pattern[k]: the paired difference in early cut-in share is
    # B's share, computed here by hand from the same index matrix.
    pattern = [k % 3 == 0 for k in range(12)]
    evs_a = [clip_events(_group_clip(f"c{k}", False), POL) for k in range(12)]
    evs_b = [clip_events(_group_clip(f"c{k}", p), POL) for k, p in enumerate(pattern)]
    out = paired_bootstrap(evs_a, evs_b, POL, POL)["metrics"]["endpoint.early_cutin_rate"]
    # compare sorts groups by name
    names = sorted(f"c{k}" for k in range(12))
    flags = np.asarray([pattern[int(n[1:])] for n in names], dtype=float)
    idx = bootstrap_indices(12)
    stats = np.sort(flags[idx].mean(axis=1))
    assert out["ci95"] == [float(stats[49]), float(stats[1949])]
    assert out["diff_b_minus_a"] == pytest.approx(4 / 12)


def test_eot_latency_quantiles_take_the_exact_ceil_rank():
    # 40 pairs with latencies 1..40 ms: q10 is the 4th smallest, q25 the 10th, q95 the 38th (ceil(q*N) exactly;
    # 0.1*40, 0.25*40 and 0.95*40 must not round up to the next rank in floating point)
    from duplexeval.eot import EOTPair
    from duplexeval.eot.report import build_report

    pairs = [EOTPair(10.0, 10.0 + k / 1000) for k in range(40, 0, -1)]
    q = build_report(pairs)["latency_ms"]["quantiles"]
    assert q["q10"] == pytest.approx(4.0) and q["q25"] == pytest.approx(10.0) and q["q50"] == pytest.approx(20.0)
    assert q["q90"] == pytest.approx(36.0) and q["q95"] == pytest.approx(38.0)


def test_with_no_events_end_an_onset_at_the_clip_end_is_inside_as_its_firing_is():
    """events_end_s null: the region is every time from events_start_s to the clip's end, the end included, for the
    onsets as for the firings (the same interval); with events_end_s set it is [start, end) for both."""
    s = _runs(100, [99])  # a yield firing stamped 8.0 s, the clip end
    ev = clip_events(Clip(ClipMeta("y", 100, yield_onsets=[8.0]), ClipFrames(100, yield_=s)), POL)
    assert (ev.yield_onsets, ev.onsets_outside_region, ev.yield_firings, ev.yield_latency_us) == (1, 0, 1, [0])
    bc = _runs(100, [96])  # a backchannel firing stamped 7.76 s, inside the onset's [-640, +320) ms window
    ev = clip_events(Clip(ClipMeta("b", 100, backchannel_onsets=[8.0], listen_s=8.0), ClipFrames(100, backchannel=bc)),
                     POL)
    assert (ev.backchannel_onsets, ev.onsets_outside_region, ev.backchannel_latency_us) == (1, 0, [-240_000])
    ended = ClipMeta("y", 100, yield_onsets=[8.0], events_end_s=8.0)  # a set end excludes its own instant, both
    ev = clip_events(Clip(ended, ClipFrames(100, yield_=s)), POL)
    assert (ev.yield_onsets, ev.onsets_outside_region, ev.yield_firings) == (0, 1, 0)
