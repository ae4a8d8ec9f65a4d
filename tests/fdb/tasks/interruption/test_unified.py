"""Interruption outcomes and the subset block by hand, with every boundary the spec names (spec 000)."""

from __future__ import annotations

import pytest

from duplexeval.fdb.tasks.interruption import unified as intr
from duplexeval.fdb.tasks.interruption.unified import InterruptionInput
from duplexeval.fdb.transcript import to_us
from duplexeval.fdb.unified.aggregate import Counts
from duplexeval.units import Span


def _intr(S, R, words=(), T=28.0, n=None):
    return InterruptionInput(
        to_us(T), tuple(Span(to_us(w), to_us(w)) for w in words), to_us(S), to_us(R),
        n if n is not None else int(round(T * 16000)), None,  # type: ignore[arg-type]
    )


S, R = 10.0, 12.0  # samples 160000 and 192000


@pytest.mark.parametrize(
    "segments, words, outcome, latency_us, stop_s",
    [
        ([(150000, 170000)], [12.5], intr.RESPONSE, 500_000, 0.625),  # stopped at 10.625 s, answered 0.5 s after R
        ([(150000, 170000)], [], intr.NO_RESPONSE, None, 0.625),
        ([(150000, 200000)], [12.5], intr.SPEAKING_AT_END, None, 2.5),  # carried over R: no latency
        ([(160000, 170000)], [12.0], intr.RESPONSE, 0, 0.625),  # a segment starting exactly at S covers S
        ([(150000, 192000)], [12.0], intr.RESPONSE, 0, 2.0),  # a segment ending exactly at R does not carry over
        ([(150000, 170000), (192000, 200000)], [12.0], intr.RESPONSE, 0, 0.625),  # reply exactly at R
        ([(150000, 160000)], [12.5], intr.NOT_EXERCISED, None, None),  # ends exactly at S
        ([(100000, 150000), (170000, 200000)], [12.5], intr.NOT_EXERCISED, None, None),  # silent at S, talks past R
        ([(150000, 448000)], [], intr.SPEAKING_AT_END, None, None),  # runs to T: no observed stop
        ([], [], intr.NOT_EXERCISED, None, None),
    ],
)
def test_interruption_outcomes(segments, words, outcome, latency_us, stop_s):
    row = intr.score_interruption(_intr(S, R, words), segments)
    assert row.outcome == outcome
    assert row.latency_us == latency_us
    assert row.to_json()["stop_s"] == stop_s


def test_not_exercised_keeps_speech_at_end_and_before_onset():
    row = intr.score_interruption(_intr(S, R, [12.5]), [(100000, 150000), (170000, 200000)])
    assert not row.speech_at_onset and row.speech_at_end and row.speech_before_onset
    assert row.restarts == 1  # 170000 is inside (S, R)
    assert row.speech_in_interruption_ticks == (192000 - 170000) * 125


def test_restarts_speech_seconds_and_open_interval():
    # covering segment to 10.5 s, a restart at 11 s to 11.5 s, one starting exactly at R (not a restart).
    segs = [(150000, 168000), (176000, 184000), (192000, 200000)]
    row = intr.score_interruption(_intr(S, R, [12.0]), segs)
    assert row.restarts == 1 and row.outcome == intr.RESPONSE
    assert row.speech_in_interruption_ticks / intr.TICKS_PER_S == 0.5 + 0.5
    assert row.to_json()["speech_in_interruption_s"] == 1.0
    assert not intr.score_interruption(_intr(S, R), [(0, 100)]).speech_at_onset


def test_sample_indices_are_compared_exactly_not_rounded_to_microseconds():
    # Sample 160001 starts at 10.0000625 s. Rounded half-to-even to the microsecond it would be
    # 10.000062 and cover S = 10.000062; exactly, it starts 0.5 µs after S.
    row = intr.score_interruption(_intr(10.000062, R), [(160001, 170000)])
    assert not row.speech_at_onset and row.outcome == intr.NOT_EXERCISED
    row = intr.score_interruption(_intr(10.000063, R), [(160001, 170000)])
    assert row.speech_at_onset


def test_stop_latency_in_ticks_is_exact():
    row = intr.score_interruption(_intr(10.000001, R), [(150000, 160001)])
    assert row.stop_ticks == 160001 * 125 - 10_000_001 * 2  # 61.5 µs, not representable in whole µs
    assert row.to_json()["stop_s"] == 0.0000615


def test_segment_outside_the_output_is_a_bug():
    with pytest.raises(ValueError, match="not inside"):
        intr.score_interruption(_intr(S, R, n=1000), [(0, 2000)])


def test_interruption_block_denominators_and_bounds_by_hand():
    segs_by_row = [
        ([(150000, 170000)], [12.5]),  # response 0.5 s, stop 0.625 s
        ([(150000, 200000)], [12.5]),  # speaking at end, stop 2.5 s
        ([(150000, 170000)], []),  # no response, stop 0.625
        ([(150000, 448000)], []),  # speaking at end, runs to T
        ([(100000, 150000)], [13.0]),  # not exercised
    ]
    rows = [intr.score_interruption(_intr(S, R, w), s) for s, w in segs_by_row]
    counts = Counts(7, 5, 2, {"x": 2}, 200)
    b = intr.interruption_block(rows, counts).to_json()
    m, c = b["metrics"], b["counts"]
    assert ((c["exercised"], c["not_exercised"], c["speaking_at_end"], c["response"], c["no_response"])
            == (4, 1, 2, 1, 1))
    # exercised_rate: over eligible, only the ineligible are unknown.
    assert m["exercised_rate"]["value"] == 4 / 5 and m["exercised_rate"]["selected_bounds"] == [4 / 7, 6 / 7]
    # the rest: over exercised; unknown = 2 ineligible + 1 not exercised.
    assert m["speaking_at_end_rate"]["value"] == 2 / 4
    assert m["speaking_at_end_rate"]["selected_bounds"] == [2 / 7, 5 / 7]
    assert m["response_rate_1s"]["count"] == 1 and m["response_rate_1s"]["n"] == 4
    assert m["no_response_rate"]["value"] == 1 / 4
    # latencies over exercised [0.5, inf, inf, inf]: median = 2nd smallest = inf.
    assert m["response_latency_s"]["median"] is None and m["response_latency_s"]["median_reached"] is False
    # stops [0.625, 2.5, 0.625, inf]: median = 2nd smallest = 0.625; p90 = 4th = inf.
    assert m["stop_latency_s"]["median"] == 0.625 and m["stop_latency_s"]["p90"] is None
    # speech inside [S, R]: 0.625 + 2.0 + 0.625 + 2.0 over 4 * 2.0 s.
    sp = m["speech_s_per_interruption_s"]
    assert sp["numerator_s"] == 5.25 and sp["denominator_s"] == 8.0 and sp["value"] == 5.25 / 8.0
    assert m["restart_rate"]["count"] == 0
    assert b["min_observable_s"] == 16.0


def test_silent_everywhere_gives_unmeasured_bounds():
    rows = [intr.score_interruption(_intr(S, R), []) for _ in range(3)]
    counts = Counts(3, 3, 0, {}, 3)
    m = intr.interruption_block(rows, counts).to_json()["metrics"]
    assert m["exercised_rate"]["value"] == 0.0 and m["exercised_rate"]["interval"][0] == 0.0
    for name in ("speaking_at_end_rate", "response_rate_2s", "no_response_rate", "restart_rate"):
        assert m[name]["value"] is None and m[name]["interval"] is None
        assert m[name]["selected_bounds"] == [0.0, 1.0]
    assert m["response_latency_s"]["n"] == 0 and m["response_latency_s"]["median"] is None
    assert m["speech_s_per_interruption_s"]["value"] is None


def test_zero_length_interruption_and_a_word_exactly_at_S_equals_R():
    # S == R == 10 s: a segment from before S carries over R; one starting exactly at S covers S but not R.
    row = intr.score_interruption(_intr(10.0, 10.0, [10.0]), [(150000, 170000)])
    assert row.speech_at_onset and row.speech_at_end and row.outcome == intr.SPEAKING_AT_END
    row = intr.score_interruption(_intr(10.0, 10.0, [10.0]), [(160000, 170000)])
    assert row.speech_at_onset and not row.speech_at_end
    assert row.outcome == intr.RESPONSE and row.latency_us == 0 and row.restarts == 0
    assert row.speech_in_interruption_ticks == 0
    counts = Counts(1, 1, 0, {}, 1)
    m = intr.interruption_block([row], counts).to_json()["metrics"]
    assert m["speech_s_per_interruption_s"]["value"] is None  # no interruption time at all
    assert m["speech_s_per_interruption_s"]["interval"] is None
