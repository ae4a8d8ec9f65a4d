"""Hand-computed checks of the official take-turn, pause, turn-taking and interruption rules."""

from __future__ import annotations

import pytest

from duplexeval.fdb.official.judge import Rating
from duplexeval.fdb.official.rules import CRASH_NULL_LAST_END, clamp_latency, take_turn
from duplexeval.fdb.tasks.interruption import official as ui
from duplexeval.fdb.tasks.pause import official as pause
from duplexeval.fdb.tasks.turn_taking import official as turn_taking
from duplexeval.fdb.transcript import Word


def W(*spans: tuple[float, float | None]) -> list[Word]:
    return [Word(f"w{i}", s, e) for i, (s, e) in enumerate(spans)]


# ---- the shared take-turn rule -------------------------------------------------------------------


def test_empty_transcript_is_no_takeover():
    t = take_turn([], null_last_end_uses_start=True)
    assert (t.tor, t.n_words, t.span_s) == (0, 0, None)


def test_span_of_exactly_one_second_takes_the_turn():
    # 2 words, 2.0 -> 3.0: span 1.0 is not < 1, so a takeover however few the words
    assert take_turn(W((2.0, 2.5), (2.5, 3.0)), null_last_end_uses_start=True).tor == 1
    # one word spanning exactly 1 s
    assert take_turn(W((4.0, 5.0)), null_last_end_uses_start=True).tor == 1


def test_just_under_one_second_depends_on_word_count():
    three = W((2.0, 2.2), (2.3, 2.5), (2.6, 2.99))
    four = W((2.0, 2.2), (2.3, 2.5), (2.6, 2.8), (2.85, 2.99))
    assert take_turn(three, null_last_end_uses_start=True).tor == 0  # exactly 3 words: not > 3
    assert take_turn(four, null_last_end_uses_start=True).tor == 1  # 4 words: > 3


def test_span_is_first_start_to_last_end_not_sum_of_words():
    # two short words 5 s apart: span 5.1 s
    t = take_turn(W((1.0, 1.1), (6.0, 6.1)), null_last_end_uses_start=True)
    assert t.tor == 1 and t.span_s == pytest.approx(5.1)


def test_float_arithmetic_as_written_no_microsecond_rounding():
    # 2.3 - 1.3 == 0.9999999999999998 in binary floats: the official scripts see < 1 s
    t = take_turn(W((1.3, 1.5), (1.6, 1.9), (2.0, 2.3)), null_last_end_uses_start=True)
    assert t.span_s < 1 and t.tor == 0


def test_null_last_end_pause_uses_last_start():
    # span = last start - first start = 0.5 s, 2 words -> 0
    assert take_turn(W((1.0, 1.2), (1.5, None)), null_last_end_uses_start=True).tor == 0
    # last start 2.0 -> span exactly 1.0 -> 1
    t = take_turn(W((1.0, 1.2), (2.0, None)), null_last_end_uses_start=True)
    assert t.tor == 1 and t.null_last_end


def test_null_last_end_elsewhere_is_an_official_crash():
    t = take_turn(W((1.0, 1.2), (2.0, None)), null_last_end_uses_start=False)
    assert t.tor is None and t.crash == CRASH_NULL_LAST_END


def test_null_end_in_the_middle_does_not_matter():
    assert take_turn(W((1.0, None), (1.2, 1.4)), null_last_end_uses_start=False).tor == 0


def test_clamp_latency():
    assert clamp_latency(-0.5) == 0.0
    assert clamp_latency(0.25) == 0.25


# ---- pause handling ------------------------------------------------------------------------------


def test_pause_average_take_turn():
    samples = [
        pause.pause_sample("a", []),  # 0
        pause.pause_sample("b", W((0.5, 0.7))),  # 0: one short word
        pause.pause_sample("c", W((0.1, 0.3), (3.5, 3.9))),  # 1: span 3.8 s, speech before the pause counts
        pause.pause_sample("d", W((1.0, 1.2), (1.5, None))),  # 0 (null-end fallback)
    ]
    m = pause.pause_metrics(samples)["Average take turn"]
    assert (m.value, m.n, m.std, m.note) == (0.25, 4, None, None)


def test_pause_no_samples_is_null_with_reason():
    m = pause.pause_metrics([])["Average take turn"]
    assert m.value is None and "divides by zero" in m.note


# ---- smooth turn-taking --------------------------------------------------------------------------


def test_official_turn_taking_example_latency_1_35():
    # notes: the example's first output word starts at 3.36 s, the user's turn ends at 2.01 s
    s = turn_taking.turn_taking_sample("1", W((3.36, 3.6), (3.7, 4.1), (4.2, 4.9)), 2.01)
    assert s.turn.tor == 1
    assert s.latency_clamped_s == pytest.approx(1.35, abs=1e-12)
    m = turn_taking.turn_taking_metrics([s])
    assert m["Average take turn"].value == 1.0
    assert m["Average latency"].value == pytest.approx(1.35, abs=1e-12)


def test_negative_latency_is_clamped_and_still_averaged():
    a = turn_taking.turn_taking_sample("a", W((2.5, 4.0)), 3.0)  # started 0.5 s before the turn end
    b = turn_taking.turn_taking_sample("b", W((4.0, 5.5)), 3.0)  # 1.0 s
    c = turn_taking.turn_taking_sample("c", W((4.0, 4.2)), 3.0)  # no takeover: not in latency
    assert a.latency_s == pytest.approx(-0.5) and a.latency_clamped_s == 0.0
    assert c.turn.tor == 0 and c.latency_s is None
    m = turn_taking.turn_taking_metrics([a, b, c])
    assert m["Average take turn"].value == pytest.approx(2 / 3)
    assert m["Average latency"].value == pytest.approx(0.5)  # (0 + 1.0) / 2
    assert m["Average latency"].n == 2


def test_turn_taking_no_takeover_latency_is_null():
    s = [turn_taking.turn_taking_sample("a", [], 2.0), turn_taking.turn_taking_sample("b", W((4.0, 4.2)), 2.0)]
    m = turn_taking.turn_taking_metrics(s)
    assert m["Average latency"].value is None
    assert m["Average latency"].note.startswith("no takeover: the official script divides by zero")
    assert m["Average take turn"].value == 0.0
    assert "crashes before printing" in m["Average take turn"].note


def test_turn_taking_null_last_end_makes_the_subset_null():
    s = [turn_taking.turn_taking_sample("a", W((3.0, 4.5)), 2.0),
         turn_taking.turn_taking_sample("b", W((3.0, None)), 2.0)]
    m = turn_taking.turn_taking_metrics(s)
    assert m["Average take turn"].value is None and "sample b" in m["Average take turn"].note
    assert s[1].to_json()["official_crash"] == CRASH_NULL_LAST_END


# ---- user interruption ---------------------------------------------------------------------------


def _ui(sid, words, R=13.144):
    return ui.interruption_sample(sid, words, " ".join(w.text for w in words), R, "ctx", "intr")


def test_official_interruption_example_latency_4_08():
    # notes: first word after the cut at 17.224 s, interrupt end R = 13.144 s, judge rating 4
    s = _ui("1", W((17.224, 17.5), (17.6, 18.0), (18.1, 19.3)))
    assert s.turn.tor == 1 and s.latency_clamped_s == pytest.approx(4.08, abs=1e-12)
    s.judge = Rating(4, "fine", 1)
    m = ui.interruption_metrics([s], judged=True)
    assert m["Average rating"].value == 4.0
    assert m["Average take turn"].value == 1.0
    assert m["Average latency"].value == pytest.approx(4.08, abs=1e-12)
    assert list(m) == ["Average rating", "Average take turn", "Average latency"]  # printed order


def test_interruption_not_judged_and_averages():
    a = _ui("a", W((13.0, 14.5)))  # word starts before R: latency -0.144 -> 0
    b = _ui("b", W((14.144, 15.5)))  # 1.0 s
    c = _ui("c", [])  # no takeover
    m = ui.interruption_metrics([a, b, c], judged=False)
    assert m["Average rating"].value is None and m["Average rating"].note.startswith("not judged")
    assert m["Average take turn"].value == pytest.approx(2 / 3)
    assert m["Average latency"].value == pytest.approx(0.5)


def test_interruption_rating_over_rated_takeovers_only():
    a, b, c = _ui("a", W((14.0, 15.5))), _ui("b", W((14.0, 15.5))), _ui("c", W((14.0, 15.5)))
    a.judge, b.judge, c.judge = Rating(5, "x", 1), Rating(2, "y", 2), Rating(None, None, 3, "HTTP 500: boom")
    m = ui.interruption_metrics([a, b, c, _ui("d", [])], judged=True)
    assert m["Average rating"].value == 3.5 and m["Average rating"].n == 2
    assert "1 takeover sample(s) got no parsable rating" in m["Average rating"].note
    assert m["Average take turn"].value == 0.75  # the failed one is not counted twice (official retry bug)
    assert m["Average latency"].n == 3


def test_interruption_no_takeover():
    m = ui.interruption_metrics([_ui("a", []), _ui("b", W((14.0, 14.2)))], judged=True)
    assert m["Average rating"].value is None and "no takeover" in m["Average rating"].note
    assert m["Average latency"].value is None and "divides by zero" in m["Average latency"].note
    assert m["Average take turn"].value == 0.0
