"""Properties of the unified metrics (hypothesis): one response curve, bounds and intervals hold the value."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import example, given, settings
from hypothesis import strategies as st

from duplexeval.fdb.tasks.interruption import unified as intr
from duplexeval.fdb.tasks.interruption.unified import InterruptionInput
from duplexeval.fdb.tasks.pause import unified as pause
from duplexeval.fdb.tasks.pause.unified import PauseInput, score_pause
from duplexeval.fdb.tasks.turn_taking import unified as tt
from duplexeval.fdb.unified import aggregate
from duplexeval.units import Span

US = 1_000_000
T_US = 10 * US
# Latency in µs, concentrated near the 1/2/5 s rate thresholds so the boundaries are exercised.
latency_us = st.one_of(
    st.integers(0, 8 * US),
    st.sampled_from([0, US - 1, US, US + 1, 2 * US, 5 * US, 5 * US + 1]),
)
turn_row = st.one_of(
    latency_us.map(lambda lat: tt.TurnRow(tt.RESPONSE, 2 * US, T_US, 2 * US + lat, lat, 1)),
    st.just(tt.TurnRow(tt.EARLY_START, 2 * US, T_US, US, None, 1)),
    st.just(tt.TurnRow(tt.NO_RESPONSE, 2 * US, T_US, None, None, 0)),
)


def _counts(eligible: int, ineligible: int) -> aggregate.Counts:
    return aggregate.Counts(eligible + ineligible, eligible, ineligible, {"x": ineligible} if ineligible else {},
                            eligible + ineligible)


def _shares(block):
    return [m for m in block["metrics"].values() if "selected_bounds" in m]


@settings(max_examples=60, deadline=None)
@given(st.lists(turn_row, min_size=1, max_size=40), st.integers(0, 5))
def test_turn_quantiles_and_rates_are_one_curve(rows, ineligible):
    b = tt.turn_block(rows, _counts(len(rows), ineligible)).to_json()
    m = b["metrics"]
    lat = m["response_latency_s"]
    for q, key in ((Fraction(1, 2), "median"), (Fraction(9, 10), "p90")):
        for k in aggregate.RESPONSE_KS:
            rate = m[f"response_rate_{k}s"]
            reached_by_k = lat[key] is not None and lat[key] <= k
            assert reached_by_k == (Fraction(rate["count"], rate["n"]) >= q)
    _check_shares_and_intervals(b)


def _check_shares_and_intervals(block):
    for m in _shares(block):
        if m["n"] == 0:
            assert m["value"] is None and m["interval"] is None
            continue
        lo, hi = m["selected_bounds"]
        assert lo <= m["value"] <= hi
        assert m["interval"][0] <= m["value"] <= m["interval"][1]
    for m in block["metrics"].values():
        if "median" in m and m["median"] is not None:
            lo, hi = m["median_interval"]
            assert lo <= m["median"] and (hi is None or m["median"] <= hi)
        if "median" in m and m["median"] is None and m["n"]:
            assert m["median_interval"][1] is None  # the upper end of a not-reached median is not reached
        if "numerator_s" in m and m["value"] is not None:
            assert m["interval"][0] <= m["value"] <= m["interval"][1]


S_SAMPLE, R_SAMPLE, N = 160000, 192000, 448000
boundary = st.sampled_from([0, S_SAMPLE - 1, S_SAMPLE, S_SAMPLE + 1, R_SAMPLE - 1, R_SAMPLE, R_SAMPLE + 1, N])
point = st.one_of(st.integers(0, N), boundary)


@st.composite
def segments(draw):
    cuts = sorted(set(draw(st.lists(point, max_size=8))))
    segs = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
    return segs


@st.composite
def interruption_row(draw):
    words = draw(st.lists(st.integers(12 * US, 28 * US), max_size=3))
    inp = InterruptionInput(28 * US, tuple(Span(w, w) for w in words), 10 * US, 12 * US, N, None)  # type: ignore[arg-type]
    return intr.score_interruption(inp, draw(segments()))


@settings(max_examples=60, deadline=None)
@given(st.lists(interruption_row(), min_size=1, max_size=30), st.integers(0, 4))
def test_interruption_curve_bounds_and_intervals(rows, ineligible):
    b = intr.interruption_block(rows, _counts(len(rows), ineligible)).to_json()
    m = b["metrics"]
    lat = m["response_latency_s"]
    for k in aggregate.RESPONSE_KS:
        rate = m[f"response_rate_{k}s"]
        if rate["n"]:
            assert (lat["median"] is not None and lat["median"] <= k) == (2 * rate["count"] >= rate["n"])
    c = b["counts"]
    assert c["exercised"] + c["not_exercised"] == c["eligible"]
    assert c["speaking_at_end"] + c["response"] + c["no_response"] == c["exercised"]
    _check_shares_and_intervals(b)


@st.composite
def pause_input(draw):
    T = draw(st.integers(1, 20)) * US
    cuts = sorted(draw(st.lists(st.integers(0, T), min_size=2, max_size=8)))
    pauses = tuple((cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2))
    starts = draw(st.lists(st.one_of(st.integers(0, T), st.sampled_from(cuts)), max_size=6))
    words = tuple(Span(s, draw(st.integers(s, s + 2 * US))) for s in starts)
    return PauseInput(T, words, pauses)


@settings(max_examples=80, deadline=None)
@given(st.lists(pause_input(), min_size=1, max_size=20), st.integers(0, 3))
def test_pause_flags_are_consistent(inputs, ineligible):
    rows = [score_pause(i) for i in inputs]
    for r in rows:
        assert r.pause_intrusion == (r.intrusion_words > 0) == (r.pauses_intruded > 0)
        assert not r.inside_pause_onset or r.pause_intrusion
        assert not r.carry_in or r.pre_pause_speech
        assert r.any_speech == (r.pre_pause_speech or r.pause_intrusion)
        assert 0 <= r.covered_us <= r.pause_us and r.pauses_intruded <= r.n_pauses
    _check_shares_and_intervals(pause.pause_block(rows, _counts(len(rows), ineligible)).to_json())


probs_seq = st.lists(st.sampled_from([0.02, 0.34, 0.36, 0.49, 0.5, 0.51, 0.97]), min_size=1, max_size=160)


def test_a_settled_prefix_gives_the_whole_file_segments():
    """The VAD early stop: whenever a prefix settles, it equals the whole file's segments up to the limit.

    The property is vacuous if no prefix ever settles, so the test also asserts that settled prefixes
    (with and without speech segments) occurred among the generated examples.
    """
    import numpy as np

    from duplexeval.vad import SCORER_SETTINGS, timestamps_from_probs
    from duplexeval.vad_batched import settled

    seen = {"settled": 0, "settled_with_speech": 0}

    @settings(max_examples=150, deadline=None, database=None, derandomize=True)
    @given(probs_seq, st.integers(0, 160 * 512), st.integers(0, 511))
    @example([0.97] * 20 + [0.02] * 40, 0, 0)  # speech, then silence long enough to settle before the end
    @example([0.02] * 10 + [0.97] * 30 + [0.02] * 60, 5 * 512, 100)
    def prop(probs, limit, short):
        p = np.asarray(probs, dtype=np.float32)
        n_samples = len(p) * 512 - short  # the last frame may be partial
        want = [(s, e) for s, e in timestamps_from_probs(p, n_samples, SCORER_SETTINGS) if s <= limit]
        for k in range(1, len(p)):  # every prefix of whole frames
            got = settled(p[:k], limit, SCORER_SETTINGS)
            if got is not None:
                seen["settled"] += 1
                seen["settled_with_speech"] += bool(got)
                assert got == want, (k, got, want)

    prop()
    assert seen["settled"] > 0, "no generated prefix settled: the property checked nothing"
    assert seen["settled_with_speech"] > 0, "no settled prefix had speech segments"


def test_settled_examples():
    import numpy as np

    from duplexeval.vad import SCORER_SETTINGS
    from duplexeval.vad_batched import settled

    speech_then_silence = np.asarray([0.97] * 20 + [0.02] * 10, dtype=np.float32)  # speech 0..10240, closes later
    assert settled(speech_then_silence[:15], 0, SCORER_SETTINGS) is None  # still open at the prefix end
    assert settled(speech_then_silence, 0, SCORER_SETTINGS) == [(0, 20 * 512)]
    assert settled(speech_then_silence, 30 * 512 - 4000, SCORER_SETTINGS) is None  # within 250 ms of the limit
    assert settled(speech_then_silence, 30 * 512 - 4001, SCORER_SETTINGS) == [(0, 20 * 512)]
