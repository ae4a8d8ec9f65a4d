"""Threshold calibration on development data (spec 002): endpoint = lowest replay latency under a pause cut-in
ceiling; yield = the lowest threshold whose false-event rate does not exceed a target; backchannel = the lowest
threshold whose acknowledgment rate does not exceed a target. The result is a frozen policy for ``evaluate``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from duplexeval.controller.format.data import Clip
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.metrics.events import ClipEvidence, EventMetrics, clip_events, event_metrics
from duplexeval.errors import RefusalError
from duplexeval.jsontypes import JsonObject
from duplexeval.stats import quantile_rule

DEFAULT_GRID: tuple[float, ...] = tuple(round(0.05 + 0.01 * k, 2) for k in range(95))  # 0.05 .. 0.99


@dataclass(frozen=True)
class Targets:
    """What the thresholds must match; None leaves that head at the base policy's threshold."""

    pause_cutin_ceiling: float | None = None  # share of pause probes with a false endpoint
    yield_false_per_hour: float | None = None
    backchannel_ack_per_hour: float | None = None

    def to_json(self) -> dict[str, float | None]:
        """JSON object."""
        return {
            "pause_cutin_ceiling": self.pause_cutin_ceiling,
            "yield_false_per_hour": self.yield_false_per_hour,
            "backchannel_ack_per_hour": self.backchannel_ack_per_hour,
        }


def targets_from_report(events: EventMetrics, mode: str) -> Targets:
    """Targets equal to a reference system's development event metrics (its pause cut-in share, false yields and
    acknowledgments per hour)."""
    ep = events.endpoint.modes.get(mode) if events.endpoint is not None else None
    pause = ep.pause_false_endpoints.value if ep is not None else None
    y = events.yield_.rate_count.per_hour if events.yield_ is not None else None
    b = events.backchannel.rate_count.per_hour if events.backchannel is not None else None
    return Targets(pause, y, b)


@dataclass(frozen=True)
class GridRow:
    """One grid threshold's development numbers (a head's numbers only when the data has that head)."""

    threshold: float
    has_endpoint: bool = False
    endpoint_median_latency_all_ms: float | None = None
    pause_cutin: float | None = None
    early_cutin: float | None = None
    no_endpoint: float | None = None
    has_yield: bool = False
    yield_detection: float | None = None
    yield_false_per_hour: float | None = None
    has_backchannel: bool = False
    backchannel_recall: float | None = None
    backchannel_ack_per_hour: float | None = None

    def to_json(self) -> JsonObject:
        row: JsonObject = {"threshold": self.threshold}
        if self.has_endpoint:
            row.update({"endpoint_median_latency_all_ms": self.endpoint_median_latency_all_ms,
                        "pause_cutin": self.pause_cutin, "early_cutin": self.early_cutin,
                        "no_endpoint": self.no_endpoint})  # fmt: skip
        if self.has_yield:
            row.update({"yield_detection": self.yield_detection, "yield_false_per_hour": self.yield_false_per_hour})
        if self.has_backchannel:
            row.update({"backchannel_recall": self.backchannel_recall,
                        "backchannel_ack_per_hour": self.backchannel_ack_per_hour})  # fmt: skip
        return row


@dataclass(frozen=True)
class Chosen:
    """A head's calibrated threshold and the rule that picked it."""

    threshold: float
    rule: str

    def to_json(self) -> JsonObject:
        return {"threshold": self.threshold, "rule": self.rule}


@dataclass(frozen=True)
class CalibrationTable:
    """What `calibrate` decided and from what: the targets, the grid, each head's choice, every grid row, the mode."""

    targets: Targets
    grid: list[float]
    chosen: dict[str, Chosen]
    table: list[GridRow]
    mode: str

    def chosen_json(self) -> JsonObject:
        return {head: c.to_json() for head, c in self.chosen.items()}

    def table_json(self) -> list[JsonObject]:
        return [r.to_json() for r in self.table]


def endpoint_latency_key(evs: Sequence[ClipEvidence], mode: str) -> float:
    """Replay latency for selection: quantile-rule median over *all* turn probes, a missing endpoint counting as
    +inf, so a threshold cannot win by rarely firing. +inf when the median is not reached."""
    lat = [(math.inf if x is None else x / 1000.0) for e in evs for x in e.endpoint[mode].turn_latency_us]
    v = quantile_rule(lat, 0.5)
    return math.inf if v is None else v


def sweep(clips: Iterable[Clip], base: EvaluationPolicy,
          grid: Sequence[float]) -> list[tuple[float, list[ClipEvidence]]]:
    """Replay every clip at every grid threshold (all three heads set to it; the heads are independent)."""
    per: list[list[ClipEvidence]] = [[] for _ in grid]
    seen: list[set[str]] = [set() for _ in grid]
    for clip in clips:
        for k, t in enumerate(grid):
            pol = base.with_(endpoint_threshold=t, yield_threshold=t, backchannel_threshold=t)
            per[k].append(clip_events(clip, pol, seen[k], modes=(base.endpoint_mode,), dense=False))
    return list(zip(grid, per))


def calibrate(clips: Iterable[Clip], base: EvaluationPolicy, targets: Targets,
              grid: Sequence[float] = DEFAULT_GRID) -> tuple[EvaluationPolicy, CalibrationTable]:
    """Pick thresholds by the rules above; returns the frozen policy and a table of every grid point."""
    grid = sorted({float(t) for t in grid})
    if not grid:
        raise RefusalError("calibrate: empty threshold grid")
    mode = base.endpoint_mode
    table: list[GridRow] = []
    for t, evs in sweep(clips, base, grid):
        pol = base.with_(endpoint_threshold=t, yield_threshold=t, backchannel_threshold=t)
        agg = event_metrics(evs, pol)
        e = agg.endpoint.modes[mode] if agg.endpoint is not None else None
        y, bc = agg.yield_, agg.backchannel
        table.append(GridRow(
            t, e is not None, _f(endpoint_latency_key(evs, mode)) if e is not None else None,
            e.pause_false_endpoints.value if e else None, e.early_cutin.value if e else None,
            e.no_endpoint.value if e else None,
            y is not None, y.matched_share.value if y else None, y.rate_count.per_hour if y else None,
            bc is not None, bc.matched_share.value if bc else None, bc.rate_count.per_hour if bc else None,
        ))  # fmt: skip
    chosen: dict[str, Chosen] = {}
    changes: dict[str, float] = {}
    if targets.pause_cutin_ceiling is not None:
        ceiling = targets.pause_cutin_ceiling
        ok = [r for r in table if r.pause_cutin is not None and r.pause_cutin <= ceiling + 1e-12]
        if not ok:
            raise RefusalError("calibrate: no grid threshold keeps the pause cut-in share <= "
                               f"{targets.pause_cutin_ceiling} (or the data has no pause probes)")

        def latency_then_higher_threshold(r: GridRow) -> tuple[float, float]:
            lat = r.endpoint_median_latency_all_ms
            return (math.inf if lat is None else lat, -r.threshold)

        best = min(ok, key=latency_then_higher_threshold)
        changes["endpoint_threshold"] = best.threshold
        chosen["endpoint"] = Chosen(best.threshold, "lowest median replay latency (no endpoint = +inf) with pause "
                                                    "cut-in share <= ceiling; ties: higher threshold")
    for task, key, target, what, rule in (
        ("yield", "yield_false_per_hour", targets.yield_false_per_hour, "yield false events", "false events per hour"),
        ("backchannel", "backchannel_ack_per_hour", targets.backchannel_ack_per_hour, "acknowledgments",
         "acknowledgments per LISTEN hour"),
    ):
        if target is None:
            continue
        found = lowest_threshold_within(table, key, target)
        if found is None:
            raise RefusalError(f"calibrate: no grid threshold keeps {what} <= {target}/h (or no {task} data)")
        changes[f"{task}_threshold"] = found
        chosen[task] = Chosen(found, f"lowest threshold with {rule} <= target")
    policy = base.with_(**changes, notes=(base.notes + " " if base.notes else "") + "calibrated on development data")
    return policy, CalibrationTable(targets, grid, chosen, table, mode)


def lowest_threshold_within(table: Sequence[GridRow], key: str, target: float) -> float | None:
    """The lowest grid threshold whose rate `key` (a `GridRow` field) is at most `target` (rows without it skipped)."""
    ok = [r.threshold for r in table if getattr(r, key) is not None and getattr(r, key) <= target + 1e-9]
    return min(ok) if ok else None


def _f(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)
