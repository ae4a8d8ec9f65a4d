"""Pause handling by hand: every flag, the owned intervals, pause coverage and their boundaries (spec 000)."""

from __future__ import annotations

import pytest

from duplexeval.fdb.tasks.pause.unified import PauseInput, score_pause, union_length_inside
from duplexeval.fdb.transcript import to_us
from duplexeval.units import Span


def _inp(T, pauses, words):
    spans = tuple(Span(to_us(s), to_us(s) if e is None else max(to_us(s), to_us(e))) for s, e in words)
    return PauseInput(to_us(T), spans, tuple((to_us(a), to_us(b)) for a, b in pauses))


def test_several_pauses_worked_by_hand():
    # Pauses [3, 4] and [6, 6.5]; pause 1 owns [3, 6), pause 2 owns [6, 10].
    # "hi" before the pauses; "so" carries over 3.0; "yes" inside pause 2; "ok" (null end) at 9.0.
    row = score_pause(_inp(10.0, [(3.0, 4.0), (6.0, 6.5)], [(1.0, 1.5), (2.8, 3.2), (6.2, 6.4), (9.0, None)]))
    assert row.pause_intrusion and row.intrusion_words == 2  # onsets 6.2 and 9.0
    assert row.inside_pause_onset  # 6.2 in [6.0, 6.5)
    assert row.pre_pause_speech and row.carry_in
    assert row.any_speech
    assert (row.n_pauses, row.pauses_intruded) == (2, 1)  # nothing starts in [3, 6)
    assert row.pause_us == 1_500_000
    assert row.covered_us == 400_000  # [3.0, 3.2] of pause 1 plus [6.2, 6.4] of pause 2
    js = row.to_json()
    assert js["intrusion_s"] == 0.4 and js["pause_s"] == 1.5 and js["pauses"] == [[3.0, 4.0], [6.0, 6.5]]


def test_word_exactly_at_pause_start_with_float_noise():
    # 6.32000000000005 and 6.32 round to the same microsecond: the onset is at the pause start.
    row = score_pause(_inp(10.0, [(6.32000000000005, 7.0)], [(6.32, 6.6)]))
    assert row.pause_intrusion and row.inside_pause_onset
    assert not row.pre_pause_speech and not row.carry_in
    assert row.covered_us == 280_000


def test_word_just_before_pause_start_is_pre_pause_not_intrusion():
    row = score_pause(_inp(10.0, [(3.0, 4.0)], [(2.999999, 3.5)]))
    assert not row.pause_intrusion and row.intrusion_words == 0
    assert row.pre_pause_speech and row.carry_in
    assert row.pauses_intruded == 0
    assert row.covered_us == 500_000  # a carried-in word still covers pause time


def test_word_at_pause_end_intrudes_but_is_not_inside():
    row = score_pause(_inp(10.0, [(3.0, 4.0)], [(4.0, 4.2)]))
    assert row.pause_intrusion and not row.inside_pause_onset
    assert row.pauses_intruded == 1 and row.covered_us == 0


def test_word_at_T_counts_in_the_last_owned_interval():
    row = score_pause(_inp(5.0, [(1.0, 2.0), (3.0, 3.5)], [(5.0, None)]))
    assert row.pause_intrusion and row.intrusion_words == 1
    assert row.pauses_intruded == 1  # the last pause owns [3.0, 5.0] including T
    assert not row.inside_pause_onset and row.covered_us == 0


def test_owned_interval_end_is_open_before_the_next_pause():
    # A word exactly at the second pause start belongs to pause 2, not pause 1.
    row = score_pause(_inp(10.0, [(1.0, 2.0), (5.0, 6.0)], [(5.0, 5.1)]))
    assert row.pauses_intruded == 1 and row.inside_pause_onset
    row = score_pause(_inp(10.0, [(1.0, 2.0), (5.0, 6.0)], [(3.0, 3.1), (7.0, 7.1)]))
    assert row.pauses_intruded == 2 and not row.inside_pause_onset


def test_zero_length_pause():
    # [2, 2]: no pause seconds; an onset at 2.0 is at or after the first pause start but not inside [2, 2).
    row = score_pause(_inp(5.0, [(2.0, 2.0)], [(2.0, 2.5)]))
    assert row.pause_intrusion and not row.inside_pause_onset
    assert row.pause_us == 0 and row.covered_us == 0 and row.pauses_intruded == 1


def test_null_end_and_zero_length_words_cover_nothing():
    row = score_pause(_inp(5.0, [(1.0, 3.0)], [(1.5, None), (2.0, 2.0)]))
    assert row.inside_pause_onset and row.intrusion_words == 2
    assert row.covered_us == 0
    assert not row.carry_in


def test_null_end_before_the_pause_does_not_carry_in():
    row = score_pause(_inp(5.0, [(1.0, 3.0)], [(0.5, None)]))
    assert row.pre_pause_speech and not row.carry_in and not row.pause_intrusion


def test_coverage_is_by_the_union_of_word_spans():
    # Overlapping words [3.1, 3.6] and [3.4, 3.8] cover 0.7 s of [3, 4], not 0.9 s.
    row = score_pause(_inp(10.0, [(3.0, 4.0)], [(3.1, 3.6), (3.4, 3.8)]))
    assert row.covered_us == 700_000
    # A word running over two pauses covers only pause time.
    row = score_pause(_inp(10.0, [(1.0, 2.0), (3.0, 4.0)], [(1.5, 3.5)]))
    assert row.covered_us == 1_000_000


def test_no_words():
    row = score_pause(_inp(5.0, [(1.0, 2.0)], []))
    assert not any([row.pause_intrusion, row.inside_pause_onset, row.pre_pause_speech, row.carry_in, row.any_speech])
    assert row.pauses_intruded == 0 and row.covered_us == 0 and row.pause_us == 1_000_000


@pytest.mark.parametrize(
    "spans, windows, want",
    [
        ([(0, 10)], ((5, 20),), 5),
        ([(0, 10), (10, 12)], ((0, 100),), 12),
        ([(5, 5)], ((0, 10),), 0),
        ([(0, 4), (2, 8), (20, 30)], ((1, 3), (6, 25)), 2 + 2 + 5),
        ([], ((0, 10),), 0),
    ],
)
def test_union_length_inside(spans, windows, want):
    assert union_length_inside(spans, windows) == want
