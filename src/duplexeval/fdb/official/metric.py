"""One reported official number: value (and std where the official script prints one), n, and why it is null."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

NO_SAMPLES = "no evaluated sample: the official script divides by zero here"


@dataclass(frozen=True)
class Metric:
    """`value`/`std` are None only with a `note` saying why; `n` is how many values were averaged."""

    value: float | None
    std: float | None
    n: int
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "std": self.std, "n": self.n, "note": self.note}


def plain_mean(values: Sequence[float], empty_note: str, note: str | None = None) -> Metric:
    """`sum(values) / len(values)` as the pause/turn-taking/interruption scripts compute it (no std printed)."""
    if not values:
        return Metric(None, None, 0, empty_note)
    return Metric(float(sum(values) / len(values)), None, len(values), note)


def numpy_mean_std(values: Sequence[float], empty_note: str) -> Metric:
    """`np.mean` and `np.std` (population, ddof 0) as the backchannel script prints them."""
    if not values:
        return Metric(None, None, 0, empty_note)
    arr = np.asarray(values, dtype=np.float64)
    return Metric(float(np.mean(arr)), float(np.std(arr)), len(values))


def null_metric(n: int, note: str) -> Metric:
    """A metric the official script cannot produce (it would crash or was not asked to)."""
    return Metric(None, None, n, note)
