"""The FDB task registry: lookups by name, complete built-in records, and a toy task through aggregate and render."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from duplexeval import stats
from duplexeval.errors import InputError
from duplexeval.fdb import tasks
from duplexeval.fdb.tree import (
    BACKCHANNEL,
    PAUSE_HANDLING,
    SUBSETS,
    TURN_TAKING,
    USER_INTERRUPTION,
    SampleEntry,
)
from duplexeval.fdb.unified import aggregate
from duplexeval.fdb.unified.report import block_rows, metric_rows

BUILTIN = {PAUSE_HANDLING, TURN_TAKING, USER_INTERRUPTION, BACKCHANNEL}


def test_unknown_task_is_one_line_listing_the_available_ones():
    with pytest.raises(InputError) as exc:
        tasks.get_task("pause_handlin")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("unknown FDB task 'pause_handlin'; available: ")
    listed = set(msg.split("available: ")[1].split(", "))
    assert BUILTIN <= listed


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_builtin_record_is_complete(name):
    task = tasks.get_task(name)
    assert task.name == name
    # the subsets and the annotation file agree with the tree's subset table
    assert task.subsets == tuple(s for s, info in SUBSETS.items() if info.task == name)
    assert {SUBSETS[s].annotation for s in task.subsets} == {task.annotation}
    if task.annotation is None:
        assert task.annotation_model is None
    else:
        assert issubclass(task.annotation_model, BaseModel)
    # a task is scored by the unified rules (parse and score) or counted only (neither)
    assert (task.parse is None) == (task.score is None)
    assert callable(task.aggregate) and callable(task.official)
    if task.score is None:
        assert task.metric_kinds == {} and task.paired_metrics == ()
    else:
        assert task.paired_metrics  # `fdb compare` pairs every scored task
    # what `fdb compare` pairs (and gates on) are metrics of the task
    paired = [spec.name for spec in task.paired_metrics] + ([task.paired_gate.name] if task.paired_gate else [])
    assert len(set(paired)) == len(paired) and set(paired) <= set(task.metric_kinds)
    # every metric the aggregate writes has a declared kind, and renders by it (a wrong kind misses keys)
    counts = aggregate.base_counts([], None)
    block = task.aggregate([], counts)
    assert block["task"] == name
    assert list(block["metrics"]) == list(task.metric_kinds)
    for metric, kind in task.metric_kinds.items():
        assert issubclass(kind, (stats.Share, stats.PooledRatio, stats.Latency)), (metric, kind)
        assert metric_rows(metric, block["metrics"][metric], kind)


def test_a_json_value_without_its_kind_is_refused_not_guessed():
    js = stats.Share(1, 2, 0, 2).to_json()
    with pytest.raises(ValueError, match="needs its kind"):
        metric_rows("x", js)
    assert metric_rows("x", stats.Share(1, 2, 0, 2)) == metric_rows("x", js, stats.Share)
    with pytest.raises(KeyError):
        metric_rows("x", js, stats.Latency)  # the kind decides the shape; keys are not inspected


def test_typed_values_keep_todays_json_shapes():
    # the unified.json shapes, written out: integer pooled counts, seconds for pooled times
    js = aggregate.pooled_count([1, 2], [2, 2]).to_json()
    assert (js["value"], js["numerator"], js["denominator"]) == (0.75, 3, 4)
    assert set(js) == {"value", "interval", "numerator", "denominator"}
    assert isinstance(js["numerator"], int) and isinstance(js["denominator"], int)
    sec = aggregate.pooled_seconds([500_000], [2_000_000], 1_000_000).to_json()
    assert (sec["value"], sec["numerator_s"], sec["denominator_s"]) == (0.25, 0.5, 2.0)
    assert set(sec) == {"value", "interval", "numerator_s", "denominator_s"}
    assert aggregate.share(2, 4, 1, 5).to_json() == {
        "value": 0.5,
        "count": 2,
        "n": 4,
        "interval": stats.json_interval(stats.wilson_interval(2, 4)),
        "selected_bounds": [0.4, 0.6],
    }


@dataclass(frozen=True)
class ToyRow:
    spoke: bool


def _toy_aggregate(rows: Sequence[ToyRow], counts: dict[str, Any]) -> dict[str, Any]:
    n, sel, unk = counts["eligible"], counts["selected"], counts["ineligible"]
    metrics = {
        "spoke_rate": aggregate.share(sum(r.spoke for r in rows), n, unk, sel),
        "spoke_latency_s": aggregate.latency([1_000_000 if r.spoke else float("inf") for r in rows], 1_000_000),
    }
    return {"task": "toy_task", "counts": counts, "coverage": None, "metrics": aggregate.metrics_json(metrics)}


TOY = tasks.Task(
    name="toy_task",
    subsets=("candor_pause_handling",),
    annotation=None,
    annotation_model=None,
    parse=lambda files: files,
    score=lambda inp, _segments: ToyRow(bool(inp)),
    aggregate=_toy_aggregate,
    metric_kinds={"spoke_rate": stats.Share, "spoke_latency_s": stats.Latency},
    official=lambda ctx, ready: tasks.OfficialOutcome([], {}),
)


@pytest.fixture
def toy_registered(monkeypatch):
    tasks.TASKS.names()  # built-ins first
    monkeypatch.setitem(tasks.TASKS._items, TOY.name, TOY)  # undone after the test
    return TOY


def test_a_toy_task_registered_in_a_test_flows_through_aggregate_and_render(toy_registered):
    assert "toy_task" in tasks.TASKS.names()
    assert tasks.get_task("toy_task") is TOY
    entries = [
        SampleEntry("candor_pause_handling", str(i), 10.0, eligible=i < 3, reasons=[] if i < 3 else ["x"], files={})
        for i in range(4)
    ]
    rows = [TOY.score(v, None) for v in (1, 0, 1)]
    block = aggregate.task_block("toy_task", entries, rows, 5)
    assert block["task"] == "toy_task"
    assert block["counts"]["selected"] == 4 and block["counts"]["eligible"] == 3 and block["counts"]["declared"] == 5
    share = block["metrics"]["spoke_rate"]
    assert (share["count"], share["n"], share["value"]) == (2, 3, 2 / 3)
    assert share["selected_bounds"] == [2 / 4, 3 / 4]
    lat = block["metrics"]["spoke_latency_s"]
    assert (lat["n"], lat["median"], lat["p90"], lat["p90_reached"]) == (3, 1.0, None, False)
    rendered = block_rows(block)
    assert [r[0] for r in rendered] == ["spoke_rate", "spoke_latency_s median", "spoke_latency_s p90"]
    assert rendered[0][3] == "2/3" and rendered[2][1] == stats.NOT_REACHED


def test_registering_a_builtin_name_again_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        tasks.register_task(tasks.Task(**{**TOY.__dict__, "name": PAUSE_HANDLING}))
