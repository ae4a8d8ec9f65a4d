"""What every task's unified.json block is made of: counts, coverage, shares, pooled ratios and latencies.

Statistics follow DESIGN.md section 3 through `duplexeval.stats`: Wilson 95% for shares (n = eligible,
or exercised for interruption), whole-sample percentile bootstrap for pooled ratios and the median, the
ceil(qN) quantile rule with +inf for samples that never responded, and selected bounds with unknowns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from duplexeval import stats
from duplexeval.fdb.tasks import MetricSpec, get_task
from duplexeval.fdb.tasks.base import time_units
from duplexeval.fdb.tree import SUBSETS, SampleEntry
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


class MetricsJson(dict[str, Any]):
    """The unified.json `metrics` object (a plain dict of each value's JSON, so it is written as one) that keeps the
    typed `stats` values it was made from in `typed`: the Python API hands those out, the files get the JSON."""

    typed: dict[str, Any]


def metrics_json(metrics: dict[str, Any]) -> MetricsJson:
    """The unified.json `metrics` object: each typed value's one JSON shape, in order (the values kept in `.typed`)."""
    out = MetricsJson((name, value.to_json()) for name, value in metrics.items())
    out.typed = dict(metrics)
    return out


def base_counts(entries: Sequence[SampleEntry], declared: int | None) -> dict[str, Any]:
    """selected / eligible / ineligible (with reason counts; a sample may have several reasons) / declared."""
    reasons: Counter[str] = Counter()
    for e in entries:
        if not e.eligible:
            reasons.update(set(e.reasons))
    eligible = sum(1 for e in entries if e.eligible)
    return {
        "selected": len(entries),
        "eligible": eligible,
        "ineligible": len(entries) - eligible,
        "ineligible_reasons": {k: reasons[k] for k in sorted(reasons)},
        "declared": declared,
    }


def coverage(counts: dict[str, Any]) -> float | None:
    """eligible / selected (None without a selected sample)."""
    return counts["eligible"] / counts["selected"] if counts["selected"] else None


def response_metrics(latencies_us: Sequence[int | None], no_response: int, n: int, unk: int,
                     sel: int) -> dict[str, Any]:
    """The RESPONSE_KINDS metrics: response within k s, no response, and the latency (+inf without a response)."""
    out: dict[str, Any] = {}
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


def counted_block(task: str, counts: dict[str, Any]) -> dict[str, Any]:
    """The block of a task that is counted but not scored: its counts and coverage, no metric."""
    return {"task": task, "counts": counts, "coverage": coverage(counts), "metrics": {}}


def subset_block(subset: str, entries: Sequence[SampleEntry], rows: Sequence[Any],
                 declared: int | None) -> dict[str, Any]:
    """The unified.json block of one subset from its selected entries and the rows of its eligible samples."""
    return task_block(SUBSETS[subset].task, entries, rows, declared)


def task_block(task: str, entries: Sequence[SampleEntry], rows: Sequence[Any], declared: int | None) -> dict[str, Any]:
    """The block of `task`'s aggregate over the base counts of `entries` (the task looked up by name)."""
    t = get_task(task)
    counts = base_counts(entries, declared)
    return counted_block(t.name, counts) if t.unified is None else t.unified.aggregate(rows, counts)
