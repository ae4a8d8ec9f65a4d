"""Per-sample rows to unified.json subset blocks: counts, coverage, shares, pooled ratios and latencies.

Statistics follow DESIGN.md section 3 through `duplexeval.stats`: Wilson 95% for shares (n = eligible,
or exercised for interruption), whole-sample percentile bootstrap for pooled ratios and the median, the
ceil(qN) quantile rule with +inf for samples that never responded, and selected bounds with unknowns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from duplexeval import stats
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tree import (
    BACKCHANNEL,
    PAUSE_HANDLING,
    SUBSETS,
    TURN_TAKING,
    USER_INTERRUPTION,
    SampleEntry,
)
from duplexeval.fdb.unified import interruption as intr
from duplexeval.fdb.unified import turn_taking as tt
from duplexeval.fdb.unified.pause import PauseRow

RESPONSE_KS = (1, 2, 5)
# The kinds of the response metrics every block with responses writes (`_response_metrics`).
RESPONSE_KINDS: dict[str, type] = {
    **{f"response_rate_{k}s": stats.Share for k in RESPONSE_KS},
    "no_response_rate": stats.Share,
    "response_latency_s": stats.Latency,
}
US_PER_S = 1_000_000


def share(count: int, n: int, unknown: int, selected: int) -> stats.Share:
    """A share of samples: value, count, n, Wilson 95% interval and bounds over all selected samples."""
    return stats.Share(count, n, unknown, selected)


@dataclass(frozen=True)
class PooledCount(stats.PooledRatio):
    """A ratio of summed counts over samples (pauses); its JSON keeps the sums as integers."""

    def to_json(self) -> dict[str, object]:
        n_sum, d_sum = int(sum(self.numerators)), int(sum(self.denominators))
        return {
            "value": n_sum / d_sum if d_sum > 0 else None,
            "interval": stats.json_interval(self.interval),
            "numerator": n_sum,
            "denominator": d_sum,
        }


@dataclass(frozen=True)
class PooledSeconds(stats.PooledRatio):
    """A ratio of summed times over samples, kept in integer units of 1/per_second s, reported in seconds."""

    per_second: int = 1

    def to_json(self) -> dict[str, object]:
        n_sum, d_sum = int(sum(self.numerators)), int(sum(self.denominators))
        return {
            "value": n_sum / d_sum if d_sum > 0 else None,
            "interval": stats.json_interval(self.interval),
            "numerator_s": n_sum / self.per_second,
            "denominator_s": d_sum / self.per_second,
        }


def pooled_seconds(num: Sequence[int], den: Sequence[int], per_second: int) -> PooledSeconds:
    """A ratio of summed seconds over samples (integer time units), with a whole-sample bootstrap interval."""
    base = stats.PooledRatio.of(num, den)
    return PooledSeconds(base.numerators, base.denominators, per_second)


def pooled_count(num: Sequence[int], den: Sequence[int]) -> PooledCount:
    """A ratio of summed counts over samples (pauses), with a whole-sample bootstrap interval."""
    base = stats.PooledRatio.of(num, den)
    return PooledCount(base.numerators, base.denominators)


def latency(values: Sequence[float], per_second: int) -> stats.Latency:
    """Median (with its bootstrap interval) and p90 by the quantile rule; +inf = never, not reached = null."""
    return stats.Latency.of(values, per_second)


def metrics_json(metrics: dict[str, Any]) -> dict[str, Any]:
    """The unified.json `metrics` object: each typed value's one JSON shape, in order."""
    return {name: value.to_json() for name, value in metrics.items()}


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


def _coverage(counts: dict[str, Any]) -> float | None:
    return counts["eligible"] / counts["selected"] if counts["selected"] else None


def pause_block(rows: Sequence[PauseRow], counts: dict[str, Any]) -> dict[str, Any]:
    """Pause-handling metrics over eligible samples; pooled ratios over their pauses and pause seconds."""
    n, sel, unk = counts["eligible"], counts["selected"], counts["ineligible"]
    counts = dict(counts, pauses=sum(r.n_pauses for r in rows))

    def flag(name: str) -> stats.Share:
        return share(sum(1 for r in rows if getattr(r, name)), n, unk, sel)

    metrics = {
        "pause_intrusion_rate": flag("pause_intrusion"),
        "pause_intrusion_per_pause": pooled_count([r.pauses_intruded for r in rows], [r.n_pauses for r in rows]),
        "intrusion_s_per_pause_s": pooled_seconds([r.covered_us for r in rows], [r.pause_us for r in rows], US_PER_S),
        "inside_pause_onset_rate": flag("inside_pause_onset"),
        "pre_pause_speech_rate": flag("pre_pause_speech"),
        "carry_in_rate": flag("carry_in"),
        "any_speech_rate": flag("any_speech"),
    }
    return {"task": PAUSE_HANDLING, "counts": counts, "coverage": _coverage(counts), "metrics": metrics_json(metrics)}


def _response_metrics(latencies_us: Sequence[int | None], no_response: int, n: int, unk: int, sel: int) -> dict[str, Any]:
    """The RESPONSE_KINDS metrics: response within k s, no response, and the latency (+inf without a response)."""
    out: dict[str, Any] = {}
    for k in RESPONSE_KS:
        c = sum(1 for v in latencies_us if v is not None and v <= k * US_PER_S)
        out[f"response_rate_{k}s"] = share(c, n, unk, sel)
    out["no_response_rate"] = share(no_response, n, unk, sel)
    out["response_latency_s"] = latency([math.inf if v is None else v for v in latencies_us], US_PER_S)
    return out


def turn_block(rows: Sequence[tt.TurnRow], counts: dict[str, Any]) -> dict[str, Any]:
    """Turn-taking metrics over eligible samples; a sample without a response has latency +inf."""
    n, sel, unk = counts["eligible"], counts["selected"], counts["ineligible"]
    oc = Counter(r.outcome for r in rows)
    counts = dict(counts, **{o: oc[o] for o in tt.TURN_OUTCOMES})
    lat = [r.latency_us for r in rows]
    metrics: dict[str, Any] = {"early_start_rate": share(oc[tt.EARLY_START], n, unk, sel)}
    metrics.update(_response_metrics(lat, oc[tt.NO_RESPONSE], n, unk, sel))
    return {
        "task": TURN_TAKING,
        "counts": counts,
        "coverage": _coverage(counts),
        "min_observable_s": min(((r.T_us - r.E_us) / 1e6 for r in rows), default=None),
        "metrics": metrics_json(metrics),
    }


def interruption_block(rows: Sequence[intr.InterruptionRow], counts: dict[str, Any]) -> dict[str, Any]:
    """Interruption metrics: exercised_rate over eligible, everything else over exercised samples.

    Unknown outcomes in the selected bounds: the ineligible, plus not_exercised for all but exercised_rate.
    """
    n_elig, sel, inel = counts["eligible"], counts["selected"], counts["ineligible"]
    oc = Counter(r.outcome for r in rows)
    ex = [r for r in rows if r.exercised]
    n_ex = len(ex)
    unk = inel + oc[intr.NOT_EXERCISED]
    counts = dict(counts, exercised=n_ex, **{o: oc[o] for o in intr.INTERRUPTION_OUTCOMES})
    lat = [r.latency_us for r in ex]
    metrics: dict[str, Any] = {
        "exercised_rate": share(n_ex, n_elig, inel, sel),
        "speaking_at_end_rate": share(oc[intr.SPEAKING_AT_END], n_ex, unk, sel),
    }
    metrics.update(_response_metrics(lat, oc[intr.NO_RESPONSE], n_ex, unk, sel))
    metrics["stop_latency_s"] = latency(
        [math.inf if r.stop_ticks is None else r.stop_ticks for r in ex], intr.TICKS_PER_S
    )
    metrics["speech_s_per_interruption_s"] = pooled_seconds(
        [r.speech_in_interruption_ticks for r in ex],
        [(r.R_us - r.S_us) * intr.TICKS_PER_US for r in ex],
        intr.TICKS_PER_S,
    )
    metrics["restart_rate"] = share(sum(1 for r in ex if r.restarts > 0), n_ex, unk, sel)
    return {
        "task": USER_INTERRUPTION,
        "counts": counts,
        "coverage": _coverage(counts),
        "min_observable_s": min(((r.T_us - r.R_us) / 1e6 for r in rows), default=None),
        "metrics": metrics_json(metrics),
    }


def backchannel_block(counts: dict[str, Any]) -> dict[str, Any]:
    """icc_backchannel is counted, not scored: the official frequency and JSD are the reference."""
    return {"task": BACKCHANNEL, "counts": counts, "coverage": _coverage(counts), "metrics": {}}


def subset_block(subset: str, entries: Sequence[SampleEntry], rows: Sequence[Any], declared: int | None) -> dict[str, Any]:
    """The unified.json block of one subset from its selected entries and the rows of its eligible samples."""
    return task_block(SUBSETS[subset].task, entries, rows, declared)


def task_block(task: str, entries: Sequence[SampleEntry], rows: Sequence[Any], declared: int | None) -> dict[str, Any]:
    """The block of `task`'s aggregate over the base counts of `entries` (the task looked up by name)."""
    return get_task(task).aggregate(rows, base_counts(entries, declared))
