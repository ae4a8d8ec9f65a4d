"""Turn-taking outcomes and the subset block by hand, with every boundary the spec names (spec 000)."""

from __future__ import annotations

import pytest

from duplexeval.fdb.tasks.turn_taking import unified as tt
from duplexeval.fdb.tasks.turn_taking.unified import TurnInput
from duplexeval.fdb.transcript import to_us
from duplexeval.fdb.unified import aggregate
from duplexeval.units import Span


def _turn(E, starts, T=10.0):
    return TurnInput(to_us(T), tuple(Span(to_us(s), to_us(s)) for s in starts), to_us(E))

@pytest.mark.parametrize(
    "E, starts, outcome, latency_us",
    [
        (2.0, [1.9, 2.5], tt.EARLY_START, None),  # an early acknowledgment then an answer: early start
        (2.0, [2.5, 1.9], tt.EARLY_START, None),  # word order in the file does not matter
        (2.0, [2.0], tt.RESPONSE, 0),  # exactly at E
        (6.32000000000005, [6.32], tt.RESPONSE, 0),  # float noise
        (2.0, [3.0, 4.0], tt.RESPONSE, 1_000_000),
        (2.0, [10.0], tt.RESPONSE, 8_000_000),  # a word at T
        (2.0, [], tt.NO_RESPONSE, None),
    ],
)
def test_turn_outcomes(E, starts, outcome, latency_us):
    row = tt.score_turn(_turn(E, starts))
    assert row.outcome == outcome
    assert row.latency_us == latency_us

def test_turn_block_by_hand():
    rows = [
        tt.score_turn(_turn(2.0, [1.9])),  # early start
        tt.score_turn(_turn(2.0, [2.0])),  # 0 s
        tt.score_turn(_turn(2.0, [3.0])),  # 1 s exactly: inside the 1 s rate
        tt.score_turn(_turn(2.0, [5.0])),  # 3 s
        tt.score_turn(_turn(2.0, [])),  # no response
    ]
    counts = aggregate.Counts(selected=6, eligible=5, ineligible=1, ineligible_reasons={}, declared=None)
    b = tt.turn_block(rows, counts).to_json()
    m = b["metrics"]
    assert b["counts"]["early_start"] == 1 and b["counts"]["response"] == 3 and b["counts"]["no_response"] == 1
    assert (m["response_rate_1s"]["count"], m["response_rate_2s"]["count"], m["response_rate_5s"]["count"]) == (2, 2, 3)
    assert m["response_rate_1s"]["value"] == 2 / 5
    assert m["response_rate_1s"]["selected_bounds"] == [2 / 6, 3 / 6]
    assert m["early_start_rate"]["value"] == 1 / 5 and m["no_response_rate"]["count"] == 1
    # Latencies with +inf for the early start and the silent sample: [0, 1, 3, inf, inf].
    lat = m["response_latency_s"]
    assert lat["n"] == 5 and lat["median"] == 3.0  # ceil(2.5) = 3rd smallest
    assert lat["p90"] is None and lat["p90_reached"] is False  # ceil(4.5) = 5th: not reached
    assert b["min_observable_s"] == 8.0
