"""Our FDB v1.5 rules on hand-made timelines: stop and response latency tied to the window, our classes, bounds."""

from __future__ import annotations

import pytest

from duplexeval.asr.base import Word
from duplexeval.fdb.tasks.overlap import unified as u
from duplexeval.fdb.unified.aggregate import Counts

SR = 16000
T = 10_000_000  # 10 s in µs
ON, OFF = 4_000_000, 5_000_000


def seg(a: float, b: float) -> tuple[int, int]:
    return int(a * SR), int(b * SR)


def words(*items: tuple[str, float]) -> list[Word]:
    return [Word(t, s, s + 0.2) for t, s in items]


CLEAN = words(("the", 1.0), ("first", 1.3), ("step", 1.6), ("is", 1.9), ("simple", 2.2), ("and", 5.6), ("after", 5.9))


def row(segments, ws=(), clean=CLEAN, subset="user_interruption", **kw):
    return u.score(subset, "1", T, ON, OFF, segments, list(ws), clean, **kw)


def test_stop_is_the_first_long_enough_silence_after_onset():
    r = row([seg(1.0, 4.3), seg(4.5, 4.6), seg(6.0, 7.0)])  # a 0.2 s gap, then 4.6 -> 6.0 is 1.4 s
    assert r.speaking_at_onset and r.stop_reached and r.stop_us == 600_000
    assert not r.speaking_at_end and r.response_us == 1_000_000  # off 5.0 -> next onset 6.0
    r = row([seg(1.0, 9.8)])  # tail of 0.2 s to T is too short: never stopped
    assert r.stop_us is None and not r.stop_reached and r.behaviour == u.CONTINUED
    r = row([seg(1.0, 9.4)])  # tail 0.6 s >= 0.5 s: stopped at 9.4, long after the window
    assert r.stop_us == 5_400_000 and r.behaviour == u.CONTINUED
    r = row([seg(1.0, 4.3), seg(4.5, 4.6), seg(6.0, 7.0)], stop_silence_ms=100)
    assert r.stop_us == 300_000


def test_not_speaking_at_onset_has_no_stop_and_speaking_at_end_has_no_response():
    r = row([seg(1.0, 3.0), seg(5.5, 6.0)], words(("sure", 5.5)))
    assert not r.speaking_at_onset and r.stop_us is None and r.response_us == 500_000
    assert r.behaviour == u.RESPONDED
    r = row([seg(4.5, 6.0)])
    assert r.speaking_at_end and r.response_us is None and not r.response_reached


def test_classes_from_the_words_after_the_overlap():
    stopped = [seg(1.0, 4.3), seg(6.0, 7.0)]
    assert row(stopped[:1]).behaviour == u.SILENT
    assert row(stopped, words(("and", 6.0), ("after", 6.3))).behaviour == u.RESUMED  # words of the clean reply
    assert row(stopped, words(("restaurants", 6.0), ("nearby", 6.3))).behaviour == u.RESPONDED
    assert (row(stopped, words(("sorry", 6.0), ("could", 6.3), ("you", 6.5), ("repeat", 6.7))).behaviour
            == u.ASKED_TO_REPEAT)
    assert row(stopped, words(("before", 3.0))).behaviour == u.SILENT  # only words before `off` count
    r = row(stopped, words(("and", 6.0), ("pizza", 6.3)))
    assert r.resume_overlap == 0.5 and r.behaviour == u.RESUMED


def test_good_depends_on_the_scenario():
    stopped = [seg(1.0, 4.3), seg(6.0, 7.0)]
    resp = words(("restaurants", 6.0))
    assert row(stopped, resp).good and not row(stopped, resp, subset="user_backchannel").good
    assert row([seg(1.0, 9.8)], subset="user_backchannel").good


def test_aggregate_counts_every_selected_sample_and_the_judge():
    rows = [row([seg(1.0, 4.3)], judge_tags=["C_UNKNOWN"]),
            row([seg(1.0, 4.3), seg(6.0, 7.0)], words(("restaurants", 6.0)), judge_tags=["C_RESPOND"]),
            row([seg(1.0, 9.8)], judge_error="no JSON object")]
    agg = u.aggregate(rows, Counts(4, 3, 1, {"no output.json": 1}, None), not_scored={"no output.json": 1}).to_json()
    m = agg["metrics"]
    assert agg["counts"] == {"selected": 4, "eligible": 3, "ineligible": 1, "ineligible_reasons": {"no output.json": 1},
                             "declared": None, "scored": 3, "not_scored": {"no output.json": 1}, "judge_failed": 1}
    assert m["silent_rate"]["count"] == 1 and m["silent_rate"]["n"] == 3
    assert m["silent_rate"]["selected_bounds"] == [0.25, 0.5]
    assert m["judge_C_UNKNOWN_rate"]["n"] == 2 and m["judge_C_UNKNOWN_rate"]["count"] == 1
    assert m["judge_C_UNKNOWN_rate"]["selected_bounds"] == [0.25, 0.75]  # failed + unscored are the unknowns
    assert m["agreement_rate"]["value"] == 1.0
    assert m["stop_latency_s"]["n"] == 3 and m["stop_latency_s"]["median"] == pytest.approx(0.3)
    assert m["stop_latency_s"]["p90_reached"] is False  # the one that never stopped is +inf, kept in n
    assert agg["kinds"]["stop_latency_s"] == "Latency"


def test_paired_comparison_per_scenario():
    a = [u.score("user_interruption", str(i), T, ON, OFF, [seg(1.0, 4.3), seg(6.0, 7.0)], words(("new", 6.0)), CLEAN)
         for i in range(6)]
    b = [u.score("user_interruption", str(i), T, ON, OFF, [seg(1.0, 9.8)], [], CLEAN) for i in range(5)]
    c = u.compare(a, b)
    assert (c["pairs"], c["only_a"], c["only_b"]) == (5, 1, 0)
    assert c["good_rate"]["mcnemar"]["a_only"] == 5 and c["good_rate"]["mcnemar"]["b_only"] == 0
    assert c["stop_latency_median_difference_s"]["pairs"] == 5
