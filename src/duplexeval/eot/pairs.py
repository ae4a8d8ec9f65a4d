"""End-of-turn pair scoring (spec 003): false-cutoff and hang rates from (true turn end, detector commit) pairs.

The public surface and its edge behaviour follow spec 003 exactly: an empty corpus gives 0.0 for every rate and
for the median (checked *before* the arguments, as the spec does), a negative tolerance or budget on a
non-empty corpus raises ValueError, a false cutoff is ``commit < true_end - tolerance`` and a hang is
``commit > true_end + budget`` (both strict). Counts, intervals and quantiles live in ``report.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_LATENCY_BANDS_MS: tuple[int, ...] = (300, 600, 1200)
DEFAULT_TOLERANCE_MS = 50


@dataclass(frozen=True)
class EOTPair:
    """One aligned datum: the second the speaker released the floor and the second the detector committed."""

    true_turn_end_s: float
    detector_commit_s: float


def latency_s(pair: EOTPair) -> float:
    """Signed latency: positive = the detector fired after the true end, negative = a premature cutoff."""
    return pair.detector_commit_s - pair.true_turn_end_s


def false_cutoff_rate(pairs: Sequence[EOTPair], *, tolerance_s: float) -> float:
    """Share of pairs whose commit is more than ``tolerance_s`` before the true end; 0.0 for no pairs."""
    if not pairs:
        return 0.0
    if tolerance_s < 0:
        raise ValueError("tolerance_s must be non-negative")
    n_early = sum(1 for p in pairs if latency_s(p) < -tolerance_s)
    return n_early / len(pairs)


def hang_rate(pairs: Sequence[EOTPair], *, latency_budget_s: float) -> float:
    """Share of pairs whose commit is more than ``latency_budget_s`` after the true end; 0.0 for no pairs."""
    if not pairs:
        return 0.0
    if latency_budget_s < 0:
        raise ValueError("latency_budget_s must be non-negative")
    n_hang = sum(1 for p in pairs if latency_s(p) > latency_budget_s)
    return n_hang / len(pairs)


def median_latency_s(pairs: Sequence[EOTPair]) -> float:
    """Median signed latency (``statistics.median``: mean of the two middle values for even n); 0.0 for no pairs.

    Spec 003's ``score`` multiplies this by 1000 unconditionally, so an empty corpus must give a number; like the
    rates it is vacuously 0.0. The report adds quantile-rule latencies that never interpolate.
    """
    if not pairs:
        return 0.0
    return float(statistics.median(latency_s(p) for p in pairs))


def score(
    pairs: Iterable[EOTPair],
    *,
    latency_bands_ms: Sequence[int] = DEFAULT_LATENCY_BANDS_MS,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
) -> dict[str, Any]:
    """LiveKit-style breakdown: ``{"n", "median_latency_ms", "false_cutoff_rate", "hang_rate_at_ms": {band: rate}}``."""
    pairs = list(pairs)
    return {
        "n": len(pairs),
        "median_latency_ms": median_latency_s(pairs) * 1000.0,
        "false_cutoff_rate": false_cutoff_rate(pairs, tolerance_s=tolerance_ms / 1000.0),
        "hang_rate_at_ms": {band: hang_rate(pairs, latency_budget_s=band / 1000.0) for band in latency_bands_ms},
    }
