"""What every task's unified.json block is made of: counts, coverage, shares, pooled ratios and latencies.

Statistics follow DESIGN.md section 3 through `duplexeval.stats`: Wilson 95% for shares (n = eligible,
or exercised for interruption), whole-sample percentile bootstrap for pooled ratios and the median, the
ceil(qN) quantile rule with +inf for samples that never responded, and selected bounds with unknowns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeAlias, TypeVar

from duplexeval import stats
from duplexeval.fdb.tasks import MetricSpec, get_task
from duplexeval.fdb.tasks.base import time_units
from duplexeval.fdb.tree import SUBSETS, SampleEntry
from duplexeval.jsontypes import JsonObject
from duplexeval.units import US_PER_S

RESPONSE_KS = (1, 2, 5)
# The kinds of the response metrics every block with responses writes (`response_metrics`).
RESPONSE_KINDS: dict[str, type] = {
    **{f"response_rate_{k}s": stats.Share for k in RESPONSE_KS},
    "no_response_rate": stats.Share,
    "response_latency_s": stats.Latency,
}


def share(count: int, n: int, unknown: int, selected: int) -> stats.Share:
    """A share of samples: value, count, n, Wilson 95% interval and bounds over all selected samples."""
    return stats.Share(count, n, unknown, selected)




def latency(values: Sequence[float], per_second: int) -> stats.Latency:
    """Median (with its bootstrap interval) and p90 by the quantile rule; +inf = never, not reached = null."""
    return stats.Latency.of(values, per_second)


# A unified metric: a share of samples, a pooled ratio (counts or seconds) or a latency distribution.
UnifiedMetric: TypeAlias = stats.Share | stats.PooledRatio | stats.Latency
# A task's own count beside the base counts: a number, or numbers by name (overlap's not_scored reasons).
TaskCount: TypeAlias = int | Mapping[str, int]


@dataclass(frozen=True)
class Counts:
    """A subset block's `counts`: selected / eligible / ineligible (with reason counts; a sample may have several
    reasons) / declared, then the task's own counts (`extra`, in the order the block writes them)."""

    selected: int
    eligible: int
    ineligible: int
    ineligible_reasons: Mapping[str, int]
    declared: int | None
    extra: Mapping[str, TaskCount] = field(default_factory=dict)

    @property
    def coverage(self) -> float | None:
        """eligible / selected (None without a selected sample)."""
        return self.eligible / self.selected if self.selected else None

    def count(self, name: str) -> int:
        """One of the task's own counts that is a number (`count("exercised")`)."""
        v = self.extra[name]
        if not isinstance(v, int):
            raise TypeError(f"count {name!r} is counts by name, not a number")
        return v

    def adding(self, **more: TaskCount) -> Counts:
        """These counts with the task's counts `more` after the ones already there."""
        return replace(self, extra={**self.extra, **more})

    def to_json(self) -> JsonObject:
        return {
            "selected": self.selected,
            "eligible": self.eligible,
            "ineligible": self.ineligible,
            "ineligible_reasons": dict(self.ineligible_reasons),
            "declared": self.declared,
            **{k: v if isinstance(v, int) else dict(v) for k, v in self.extra.items()},
        }


@dataclass(frozen=True)
class Block:
    """A task's unified.json block of one subset: its counts, coverage and typed metrics (`metrics`, the `stats`
    values the Python API hands out); `to_json()` is the block as written, each metric as its value's JSON.

    `min_observable_s` (with `observable`, for a task whose samples have an observable window after the reference)
    is written between coverage and metrics; a task with further keys subclasses this and extends `to_json`.
    """

    task: str
    counts: Counts
    metrics: Mapping[str, UnifiedMetric] = field(default_factory=dict)
    observable: bool = False
    min_observable_s: float | None = None

    @property
    def coverage(self) -> float | None:
        return self.counts.coverage

    def metrics_json(self) -> JsonObject:
        """The block's `metrics` object: each typed value's one JSON shape, in order."""
        return {name: value.to_json() for name, value in self.metrics.items()}

    def to_json(self) -> JsonObject:
        out: JsonObject = {"task": self.task, "counts": self.counts.to_json(), "coverage": self.coverage}
        if self.observable:
            out["min_observable_s"] = self.min_observable_s
        out["metrics"] = self.metrics_json()
        return out


def base_counts(entries: Sequence[SampleEntry], declared: int | None) -> Counts:
    """selected / eligible / ineligible (with reason counts; a sample may have several reasons) / declared."""
    reasons: Counter[str] = Counter()
    for e in entries:
        if not e.eligible:
            reasons.update(set(e.reasons))
    eligible = sum(1 for e in entries if e.eligible)
    return Counts(len(entries), eligible, len(entries) - eligible, {k: reasons[k] for k in sorted(reasons)}, declared)


def response_metrics(latencies_us: Sequence[int | None], no_response: int, n: int, unk: int,
                     sel: int) -> dict[str, UnifiedMetric]:
    """The RESPONSE_KINDS metrics: response within k s, no response, and the latency (+inf without a response)."""
    out: dict[str, UnifiedMetric] = {}
    for k in RESPONSE_KS:
        c = sum(1 for v in latencies_us if v is not None and v <= k * US_PER_S)
        out[f"response_rate_{k}s"] = share(c, n, unk, sel)
    out["no_response_rate"] = share(no_response, n, unk, sel)
    out["response_latency_s"] = latency([math.inf if v is None else v for v in latencies_us], US_PER_S)
    return out


class Responding(Protocol):
    """A row with a response: its outcome and, for a response, the latency in µs."""

    @property
    def outcome(self) -> str: ...

    @property
    def latency_us(self) -> int | None: ...


R = TypeVar("R", bound=Responding)


def response_specs(response: str, no_response: str) -> tuple[MetricSpec[R], ...]:
    """What `fdb compare` pairs of the RESPONSE_KINDS metrics, for rows whose `outcome` is `response` (with
    `latency_us`) or `no_response`."""

    def within(k: int) -> Callable[[R], bool]:
        return lambda r: r.outcome == response and r.latency_us is not None and r.latency_us <= k * US_PER_S

    return (
        *(MetricSpec[R](f"response_rate_{k}s", "share", within(k)) for k in RESPONSE_KS),
        MetricSpec[R]("no_response_rate", "share", lambda r: r.outcome == no_response),
        MetricSpec[R]("response_latency_s", "median", lambda r: time_units(r.latency_us), US_PER_S),
    )


def counted_block(task: str, counts: Counts) -> Block:
    """The block of a task that is counted but not scored: its counts and coverage, no metric."""
    return Block(task, counts)


def subset_block(subset: str, entries: Sequence[SampleEntry], rows: Sequence[Any], declared: int | None) -> Block:
    """The unified.json block of one subset from its selected entries and the rows of its eligible samples."""
    return task_block(SUBSETS[subset].task, entries, rows, declared)


def task_block(task: str, entries: Sequence[SampleEntry], rows: Sequence[Any], declared: int | None) -> Block:
    """The block of `task`'s aggregate over the base counts of `entries` (the task looked up by name)."""
    t = get_task(task)
    counts = base_counts(entries, declared)
    return counted_block(t.name, counts) if t.unified is None else t.unified.aggregate(rows, counts)
