"""The FDB task registry: lookups by name, complete built-in records, and a toy task through aggregate and render."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest
from pydantic import BaseModel

from duplexeval import stats
from duplexeval.errors import InputError
from duplexeval.fdb import tasks
from duplexeval.fdb.tree import SUBSETS, SampleEntry, SubsetInfo
from duplexeval.fdb.unified import aggregate
from duplexeval.fdb.unified.report import block_rows, metric_rows

BUILTIN = {info.task for info in SUBSETS.values() if info.name in (
    "candor_pause_handling", "synthetic_pause_handling", "candor_turn_taking", "synthetic_user_interruption",
    "icc_backchannel")}


def test_unknown_task_is_one_line_listing_the_available_ones():
    with pytest.raises(InputError) as exc:
        tasks.get_task("pause_handlin")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("unknown FDB task 'pause_handlin'; available: ")
    listed = set(msg.split("available: ")[1].split(", "))
    assert BUILTIN <= listed and len(BUILTIN) == 4


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_builtin_record_is_complete(name):
    task = tasks.get_task(name)
    assert task.name == name
    # the subsets and the annotation file agree with the subset table
    assert task.subsets == SUBSETS.of_task(name) and task.subsets
    assert {s.annotation for s in task.subsets} == {task.annotation_file}
    if task.annotation_file is None:
        assert task.annotation is None
    else:
        assert issubclass(task.annotation, BaseModel) and task.annotation.file == task.annotation_file
        assert task.layout.names(tasks.DATASET) == (task.annotation_file,)
    assert task.layout.names(tasks.EXPORT) == ("output.wav",) and task.layout.names(tasks.ASR) == ("output.json",)
    assert isinstance(task.official, tasks.OfficialRules) and task.synth is not None
    # a task is scored by the unified rules (and compared) or counted only (neither)
    assert (task.unified is None) == (task.paired is None) == (not task.headline)
    if task.unified is None:
        return
    kinds = task.unified.metric_kinds
    # what `fdb compare` pairs (and gates on) and what the demo shows are metrics of the task
    paired = [spec.name for spec in task.paired.metrics] + ([task.paired.gate.name] if task.paired.gate else [])
    assert len(set(paired)) == len(paired) and set(paired) <= set(kinds)
    assert {h.metric for h in task.headline} <= set(kinds)
    assert all(h.better in (tasks.LOWER, tasks.HIGHER, tasks.NEITHER) for h in task.headline)
    # every metric the aggregate writes has a declared kind, and renders by it (a wrong kind misses keys)
    block = task.unified.aggregate([], aggregate.base_counts([], None)).to_json()
    assert block["task"] == name
    assert list(block["metrics"]) == list(kinds)
    for metric, kind in kinds.items():
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
    js = stats.pooled_count([1, 2], [2, 2]).to_json()
    assert (js["value"], js["numerator"], js["denominator"]) == (0.75, 3, 4)
    assert set(js) == {"value", "interval", "numerator", "denominator"}
    assert isinstance(js["numerator"], int) and isinstance(js["denominator"], int)
    sec = stats.pooled_seconds([500_000], [2_000_000], 1_000_000).to_json()
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


class ToyUnified(tasks.UnifiedRules[int, ToyRow]):
    metric_kinds = {"spoke_rate": stats.Share, "spoke_latency_s": stats.Latency}

    def score(self, inp: int, segments: Sequence[tuple[int, int]] | None) -> ToyRow:
        return ToyRow(bool(inp))

    def aggregate(self, rows: Sequence[ToyRow], counts: aggregate.Counts) -> aggregate.Block:
        n, sel, unk = counts.eligible, counts.selected, counts.ineligible
        return aggregate.Block("toy_task", counts, {
            "spoke_rate": aggregate.share(sum(r.spoke for r in rows), n, unk, sel),
            "spoke_latency_s": aggregate.latency([1_000_000 if r.spoke else float("inf") for r in rows], 1_000_000),
        })


TOY = tasks.Task(
    name="toy_task",
    subsets=(SubsetInfo("toy_subset", "toy_task", None, 5),),
    unified=ToyUnified(),
    official=tasks.OfficialRules(),
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
        SampleEntry("toy_subset", str(i), 10.0, eligible=i < 3, reasons=[] if i < 3 else ["x"], files={})
        for i in range(4)
    ]
    rows = [TOY.unified.score(v, None) for v in (1, 0, 1)]
    block = aggregate.task_block("toy_task", entries, rows, 5).to_json()
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
    name = sorted(BUILTIN)[0]
    with pytest.raises(ValueError, match="already registered"):
        tasks.register_task(replace(TOY, name=name, subsets=SUBSETS.of_task(name)))


def test_a_task_whose_subsets_or_annotation_disagree_is_refused():
    with pytest.raises(ValueError, match="belongs to task"):
        replace(TOY, subsets=(SubsetInfo("toy_subset", "other", None, 5),))
    with pytest.raises(ValueError, match="annotation model"):
        replace(TOY, subsets=(SubsetInfo("toy_subset", "toy_task", "toy.json", 5),))
    with pytest.raises(ValueError, match="already defined"):
        SUBSETS.add(SubsetInfo("candor_pause_handling", "toy_task", None, 1))
