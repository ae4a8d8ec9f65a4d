"""The official FDB v1.5 rules, one by one, against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval.asr.base import Word
from duplexeval.fdb.tasks.overlap import before_after as ba
from duplexeval.fdb.tasks.overlap import behavior, significance, timing


def W(text: str, s: float, e: float | None) -> Word:
    return Word(text, s, e)


# ------------------------------------------------------------------------------------------- the split


def test_split_is_the_first_word_starting_after_or_spanning_the_overlap_end():
    words = [W("a", 1.0, 1.5), W("b", 2.0, 2.6), W("c", 3.0, 3.4)]
    assert ba.split_time(2.3, words, 10.0) == 2.0  # "b" spans d
    assert ba.split_time(2.6, words, 10.0) == 3.0  # d == end of "b": not spanning (s <= d < e), "c" starts after
    assert ba.split_time(1.8, words, 10.0) == 2.0  # in a gap: the next word's start
    assert ba.split_time(5.0, words, 10.0) == 3.4  # no word after d: the last end
    assert ba.split_time(5.0, [], 10.0) == 5.0  # no words: d
    assert ba.split_time(12.0, [], 10.0) == 10.0  # clamped to the duration


def test_split_sorts_by_start_but_speech_stats_use_list_order():
    words = [W("late", 3.0, 3.5), W("early", 1.0, 1.2)]
    assert ba.split_time(0.5, words, 10.0) == 1.0
    assert ba.speech_stats(words) == (0.0, 2)  # last end 1.2 - first start 3.0 < 0: span 0
    assert ba.wpm(words) == 0.0
    assert ba.wpm([W("a", 1.0, 1.5), W("b", 1.5, 2.5)]) == pytest.approx(2 / (1.5 / 60))


def test_partition_by_word_end():
    words = [W("a", 1.0, 2.0), W("b", 1.9, 2.1), W("c", 3.0, 3.5)]
    pre, post = ba.partition(words, 2.0)
    assert [w.text for w in pre] == ["a"] and [w.text for w in post] == ["b", "c"]


def test_a_null_end_makes_the_official_script_raise():
    with pytest.raises(ba.OfficialCrash, match="null end"):
        ba.split_time(1.0, [W("a", 0.5, None)], 5.0)


def test_slice_rounds_to_samples_and_is_empty_when_reversed():
    a = np.arange(32000, dtype=np.float32)
    assert ba.slice_audio(a, 0.5, 1.0).shape[0] == 8000
    assert ba.slice_audio(a, 1.0, 0.5).shape[0] == 0
    assert ba.slice_audio(a, 1.9, 5.0).shape[0] == 1600


def test_trim_keeps_the_whole_segment_without_speech():
    a = np.ones(1600, dtype=np.float32)
    x, found = ba.trim(a, lambda audio, s: [])
    assert not found and x is a
    x, found = ba.trim(np.arange(16000, dtype=np.float32), lambda audio, s: [(100, 200), (1000, 1100)])
    assert found and x.tolist() == list(range(100, 200)) + list(range(1000, 1100))


def test_trimmed_mean_uses_numpy_percentiles_and_keeps_all_below_three_values():
    assert ba.trimmed_mean([1.0, 100.0]).value == 50.5  # n < 3: every value
    vals = [float(v) for v in range(1, 21)]  # P5 = 1.95, P95 = 19.05: 1 and 20 dropped
    tm = ba.trimmed_mean([*vals, None, math.nan])
    assert (tm.n, tm.n_used) == (20, 18)
    assert tm.value == sum(range(2, 20)) / 18
    assert ba.trimmed_mean([None, math.nan]).value is None


def test_aggregate_never_includes_clean_and_skips_missing_segments():
    def seg(v: float) -> ba.SegmentResult:
        return ba.SegmentResult({"utmosv2": None, "wpm": v}, True, None)
    s = [ba.SampleSplit(seg(1.0), seg(2.0), seg(9.0), 1, 1, 1, 1), ba.SampleSplit(None, seg(4.0), None, 1, 1, 1, 1)]
    agg = ba.aggregate(s)
    assert set(agg) == {"pre", "post"}
    assert agg["pre"]["wpm"].value == 1.0 and agg["post"]["wpm"].value == 3.0
    assert "utmosv2" not in agg["pre"]  # never computed: absent, as NaN is in the script's log


# ------------------------------------------------------------------------------------------------ timing


def test_merge_uses_the_constants_not_the_comments():
    assert timing.merge([(0.0, 1.0), (1.5, 2.0)], timing.USER_MERGE_GAP_S) == [(0.0, 2.0)]  # a 0.5 s gap merges
    assert timing.merge([(0.0, 1.0), (1.5, 2.0)], timing.MODEL_MERGE_GAP_S) == [(0.0, 2.0)]
    assert timing.merge([(0.0, 1.0), (1.61, 2.0)], timing.USER_MERGE_GAP_S) == [(0.0, 1.0), (1.61, 2.0)]
    # plain float arithmetic, as the script: 1.6 - 1.0 is 0.6000000000000001 > 0.6, so this gap is kept
    assert timing.merge([(0.0, 1.0), (1.6, 2.0)], timing.USER_MERGE_GAP_S) == [(0.0, 1.0), (1.6, 2.0)]
    assert timing.merge([(2.0, 3.0), (0.0, 2.5)], 0.0) == [(0.0, 3.0)]  # sorted first, max of ends


def test_stop_intervals_dedupe_by_end_keeping_the_shortest():
    user = [(1.0, 3.0), (2.5, 3.0)]  # two user segments ending together (not merged here on purpose)
    model = [(0.5, 4.0)]
    assert timing.stop_intervals(user, model) == [[2.5, 3.0]]
    assert timing.stop_intervals([(1.0, 2.0)], [(3.0, 4.0)]) == []
    assert timing.stop_intervals([(1.0, 2.0), (3.0, 5.0)], [(1.5, 3.5)]) == [[1.5, 2.0], [3.0, 3.5]]


def test_response_intervals_dedupe_by_model_start_keeping_the_latest_user_end():
    user = [(0.0, 1.0), (1.2, 2.0)]
    model = [(2.5, 3.0), (0.5, 0.8)]  # the first model start strictly after each user end, in list order
    assert timing.response_intervals(user, model) == [[2.0, 2.5]]
    assert timing.response_intervals([(0.0, 1.0)], [(1.0, 2.0)]) == []  # not strictly after


def test_intervals_object_from_sample_segments():
    obj = timing.intervals([(16000, 32000)], [(24000, 48000), (56000, 64000)])  # model gap 0.5 s: merged
    assert obj == {"latency_stop_list": [[1.5, 2.0]], "latency_resp_list": []}
    obj = timing.intervals([(16000, 32000)], [(24000, 40000), (56000, 64000)])  # gap 1.0 s: two segments
    assert obj == {"latency_stop_list": [[1.5, 2.0]], "latency_resp_list": [[2.0, 3.5]]}


# ------------------------------------------------------------------------------------------ significance


def test_holm_matches_the_step_down_rule():
    assert significance.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert significance.holm([0.5, 0.9]) == [1.0, 1.0]  # 0.5 * 2 caps at 1; the step-down keeps it
    assert significance.holm([]) == []


def test_paired_mad_rule_drops_outliers_of_the_difference():
    from scipy import stats

    before = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    after = before + np.array([0.1, 0.2, 0.1, 0.2, 0.15, 50.0])  # the last difference is an outlier
    t = significance.paired(before, after, "wpm", "pre_vs_post")
    assert isinstance(t, significance.PairedTest)
    assert (t.n_valid, t.n_used, t.n_dropped) == (6, 5, 1)
    ref = stats.ttest_rel(after[:5], before[:5])
    assert t.t == pytest.approx(float(ref.statistic)) and t.p == pytest.approx(float(ref.pvalue))
    assert t.mean_diff == pytest.approx(0.15)


def test_paired_needs_two_pairs_and_keeps_all_when_mad_is_zero():
    nan = math.nan
    assert isinstance(significance.paired(np.array([1.0, nan]), np.array([2.0, 3.0]), "m", "p"), significance.Skipped)
    t = significance.paired(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 9.0]), "m", "p")
    assert isinstance(t, significance.PairedTest) and t.n_used == 3  # MAD of (1, 1, 6) is 0: nothing dropped


def test_rows_need_c_respond_and_no_zero_wpm_and_masking():
    def split(pre_wpm: float, post_wpm: float, inten: float = 60.0) -> dict:
        return {"pre": {"wpm": pre_wpm, "mean_intensity": inten}, "post": {"wpm": post_wpm, "mean_intensity": 50.0},
                "clean": {"wpm": 100.0, "mean_intensity": 55.0}}
    rows = [significance.Row("2", ["C_RESPOND"], split(100, 120)),
            significance.Row("10", ["C_RESPOND"], split(110, 0)),  # a 0 wpm drops the row for every metric
            significance.Row("3", ["C_RESUME"], split(100, 90)),
            significance.Row("4", None, split(100, 90)),
            significance.Row("5", ["C_RESPOND"], split(130, 150, -200.0))]
    kept = significance.select_rows(rows)
    assert [r.sample_id for r in kept] == ["2", "5"]  # string order of folder names, "10" dropped
    tests, skipped, n = significance.run_tests(rows, metrics=("wpm", "mean_intensity"))
    by = {(t.metric, t.pair): t for t in tests}
    assert by[("wpm", "pre_vs_post")].mean_diff == pytest.approx(20.0)
    assert ("mean_intensity", "pre_vs_post") not in by  # -200 masked: one pair left
    assert any(s.metric == "mean_intensity" and s.pair == "pre_vs_post" for s in skipped)
    assert by[("wpm", "pre_vs_post")].p_holm is not None


# ------------------------------------------------------------------------------------------- behaviour


def test_extract_takes_the_first_object_holding_behaviour():
    assert (behavior.extract('x {"a": 1} {"behaviour": ["C_RESUME"]} {"behaviour": ["C_RESPOND"]}')
            == {"behaviour": ["C_RESUME"]})
    assert behavior.extract('{ broken { "behaviour": ["C_UNKNOWN"] }') == {"behaviour": ["C_UNKNOWN"]}
    assert behavior.extract("no json") is None


def test_parse_refuses_what_the_script_would_crash_on():
    assert behavior.parse_reply('{"behaviour": ["C_RESPOND"]}')[1] == ["C_RESPOND"]
    # iterated by char there
    assert behavior.parse_reply('{"behaviour": "C_RESPOND"}')[2].startswith("'behaviour' must be")
    assert "unknown label" in behavior.parse_reply('{"behaviour": ["R_RESPOND"]}')[2]  # KeyError 'R' there
    assert behavior.parse_reply('{"behaviour": []}')[1] is None


def test_ratios_are_over_tags_not_samples():
    r = behavior.official_ratios([["C_RESPOND"], ["C_RESPOND", "C_UNKNOWN"], ["C_RESUME"]])
    assert r == {"C_RESPOND": 0.5, "C_RESUME": 0.25, "C_UNKNOWN": 0.25}
    assert behavior.rounded({"C_RESPOND": 1 / 3}) == {"C_RESPOND": 0.33}
    assert behavior.official_ratios([]) == {}


def test_user_message_frame_and_compact_dumps():
    tr = {k: {"text": "é", "chunks": [{"text": "é", "timestamp": [0.5, 1.0]}]} for k, _ in behavior.TRANSCRIPTS}
    msg = behavior.user_message(tr)
    assert msg.startswith('\n        {\n            "input_clean": '
                          '{"text":"é","chunks":[{"text":"é","timestamp":[0.5,1.0]}]},\n')
    assert msg.endswith('"output_noisy": {"text":"é","chunks":[{"text":"é","timestamp":[0.5,1.0]}]}\n       '
                        ' }\n        ')
