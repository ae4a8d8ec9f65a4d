"""unified-samples.jsonl rows read back as typed records: each task row's from_json inverts its to_json."""

from __future__ import annotations

import pytest

from duplexeval.errors import InputError
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tasks.interruption.unified import InterruptionRow
from duplexeval.fdb.tasks.overlap.unified import OverlapRow
from duplexeval.fdb.tasks.pause.unified import PauseRow
from duplexeval.fdb.tasks.turn_taking.unified import TurnRow
from duplexeval.fdb.unified.rows import SampleRow

ROWS = [
    ("candor_pause_handling", PauseRow(True, False, True, False, True, 3, 2, 1, 1_234_567, 345_679, 2_000_001,
                                       ((2_000_001, 3_000_000), (5_100_000, 5_334_568)), 7)),
    ("candor_turn_taking", TurnRow("response", 4_123_457, 20_000_000, 5_000_001, 876_544, 4)),
    ("candor_turn_taking", TurnRow("no_response", 4_123_457, 20_000_000, None, None, 0)),
    ("synthetic_user_interruption", InterruptionRow("response", 3_000_001, 5_500_003, 30_000_000, True, False, True,
                                                    1_234_567, 3_333_335, 2, 6_000_001, 500_000, 9,
                                                    ((1, 48_013), (52_001, 88_888)))),
    ("synthetic_user_interruption", InterruptionRow("not_exercised", 3_000_001, 5_500_003, 30_000_000, False, False,
                                                    False, None, 0, 0, None, None, 0, ())),
]


@pytest.mark.parametrize(("subset", "row"), ROWS)
def test_a_task_row_reads_back_from_its_line(subset, row):
    task = get_task(_task(subset))
    line = SampleRow(subset, "7", task.name, True, (), row).to_json()
    back = SampleRow.from_json(line, "unified-samples.jsonl", 1)
    assert back.row == row and back.to_json() == line


def _task(subset):
    from duplexeval.fdb.tasks import task_of

    return task_of(subset).name


def test_an_overlap_row_reads_back():
    from duplexeval.fdb.tasks.overlap.scenarios import SCENARIOS

    subset = next(iter(SCENARIOS))
    row = OverlapRow(subset, "3", 12_345_679, 2_000_001, 3_500_000, True, False, 700_001, True, None, False, 5, 0.4,
                     "responded", ("C_RESPOND",), None)
    line = SampleRow(subset, "3", _task(subset), True, (), row).to_json()
    back = SampleRow.from_json(line, "x", 1)
    assert back.row == row and back.to_json() == line


def test_an_ineligible_line_has_no_task_row_and_a_bad_line_is_one_error():
    bare = SampleRow("candor_turn_taking", "1", _task("candor_turn_taking"), False, ("output_too_short",))
    line = bare.to_json()
    assert SampleRow.from_json(line, "x", 1) == bare
    with pytest.raises(InputError, match="x: line 3: not a unified row"):
        SampleRow.from_json({**line, "eligible": True, "outcome": "response"}, "x", 3)
