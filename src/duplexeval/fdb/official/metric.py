"""One reported official number: value (and std where the official script prints one), n, and why it is null."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duplexeval.jsontypes import JsonObject

NO_SAMPLES = "no evaluated sample: the official script divides by zero here"
NOT_JUDGED = "not judged (--judge none): the official script always asks gpt-4-turbo"
NEEDS_JUDGE = "needs --judge"  # the printed cell of a rating that was not judged (not a bare dash)


def needs_judge(m: object) -> bool:
    """True for a summary.json metric left empty only because no judge was asked (`--judge none`)."""
    return isinstance(m, dict) and m.get("value") is None and m.get("note") == NOT_JUDGED


@dataclass(frozen=True)
class Metric:
    """`value`/`std` are None only with a `note` saying why; `n` is how many values were averaged.

    Not a `stats` value: the reference column reproduces the official scripts' printed numbers (plain means, some
    with a population std), which have no interval by definition."""

    value: float | None
    std: float | None
    n: int
    note: str | None = None

    def to_json(self) -> JsonObject:
        return {"value": self.value, "std": self.std, "n": self.n, "note": self.note}


def plain_mean(values: Sequence[float], empty_note: str, note: str | None = None) -> Metric:
    """`sum(values) / len(values)` as the pause/turn-taking/interruption scripts compute it (no std printed)."""
    if not values:
        return Metric(None, None, 0, empty_note)
    return Metric(float(sum(values) / len(values)), None, len(values), note)


def numpy_mean_std(values: Sequence[float], empty_note: str) -> Metric:
    """`np.mean` and `np.std` (population, ddof 0), as the official scripts that print a std compute them."""
    if not values:
        return Metric(None, None, 0, empty_note)
    arr = np.asarray(values, dtype=np.float64)
    return Metric(float(np.mean(arr)), float(np.std(arr)), len(values))


def null_metric(n: int, note: str) -> Metric:
    """A metric the official script cannot produce (it would crash or was not asked to)."""
    return Metric(None, None, n, note)
