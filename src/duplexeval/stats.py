"""Statistics shared by every evaluation family (DESIGN.md section 3).

- Wilson 95% intervals for shares, with endpoints exactly 0 at a count of 0 and exactly 1 at n.
- The quantile rule: Q(q) is the ceil(q*N)-th smallest value, no interpolation; +inf stands for
  "never happened" and a quantile that lands on it is *not reached*.
- The percentile bootstrap over whole samples: 2000 resamples, ``numpy.random.default_rng(0)``
  made afresh for each interval, indices drawn as one ``rng.integers(0, n, size=(2000, n))``
  matrix; each resample's statistic and the interval endpoints use the quantile rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% normal quantile
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95


def wilson_interval(count: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """95% Wilson score interval for count/n; None when n is 0; exact 0 / 1 at the extremes."""
    if n < 0 or count < 0 or count > n:
        raise ValueError(f"wilson_interval: need 0 <= count <= n, got count={count}, n={n}")
    if n == 0:
        return None
    p = count / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    lo = 0.0 if count == 0 else max(0.0, centre - half)
    hi = 1.0 if count == n else min(1.0, centre + half)
    return (lo, hi)


def quantile_rank(q: float, n: int) -> int:
    """1-based rank ceil(q*n) of the quantile-rule order statistic (at least 1), computed exactly.

    q is read through its decimal repr so that 0.9 * 10 is exactly 9, not 9.000000000000002.
    """
    if not 0.0 < q <= 1.0:
        raise ValueError(f"quantile level must be in (0, 1], got {q}")
    if n <= 0:
        raise ValueError("quantile of an empty set")
    return max(1, math.ceil(Fraction(repr(float(q))) * n))


def quantile_rule(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """Q(q) = the ceil(q*N)-th smallest value (may be +inf: not reached); None for an empty set."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    if np.isnan(arr).any():
        raise ValueError("quantile_rule: NaN in values")
    k = quantile_rank(q, arr.size)
    return float(np.partition(arr, k - 1)[k - 1])


@dataclass(frozen=True)
class Quantile:
    """A reported quantile: ``value`` is None when the set is empty or the quantile is not reached."""

    value: float | None
    reached: bool

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray, q: float) -> Quantile:
        """Apply the quantile rule and split +inf into (None, reached=False)."""
        v = quantile_rule(values, q)
        if v is None:
            return cls(None, False)
        if math.isinf(v):
            return cls(None, False)
        return cls(v, True)


def bootstrap_indices(n: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """The (resamples, n) index matrix from a fresh ``default_rng(seed)``; identical for every interval of size n."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(resamples, n))


def percentile_interval(stats: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Endpoints of the percentile interval by the quantile rule over the finite-or-inf resample statistics.

    NaN entries mark resamples without a statistic and are skipped; None if none remain.
    """
    s = np.asarray(stats, dtype=float)
    s = s[~np.isnan(s)]
    if s.size == 0:
        return None
    alpha = (1.0 - confidence) / 2.0
    lo = quantile_rule(s, alpha)
    hi = quantile_rule(s, 1.0 - alpha)
    assert lo is not None and hi is not None
    return (lo, hi)


def bootstrap_median_interval(values: Sequence[float] | np.ndarray) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the quantile-rule median; +inf endpoints mean not reached."""
    return bootstrap_quantile_interval(values, 0.5)


def bootstrap_quantile_interval(values: Sequence[float] | np.ndarray, q: float) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the quantile-rule Q(q) over whole-sample resamples (vectorised)."""
    arr = np.asarray(values, dtype=float)
    n = arr.size
    if n == 0:
        return None
    idx = bootstrap_indices(n)
    k = quantile_rank(q, n)
    samples = np.sort(arr[idx], axis=1)[:, k - 1]
    return percentile_interval(samples)


def bootstrap_ratio_interval(
    numerators: Sequence[float] | np.ndarray, denominators: Sequence[float] | np.ndarray
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of sum(num)/sum(den), resampling whole samples.

    A resample whose denominator is 0 has no ratio and is skipped (DESIGN.md 3, spec 000).
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.shape != den.shape:
        raise ValueError("bootstrap_ratio_interval: numerators and denominators differ in length")
    n = num.size
    if n == 0:
        return None
    idx = bootstrap_indices(n)
    nsum = num[idx].sum(axis=1)
    dsum = den[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dsum > 0, nsum / np.where(dsum > 0, dsum, 1.0), np.nan)
    return percentile_interval(ratio)


def bootstrap_statistic_interval(
    n: int, statistic: Callable[[np.ndarray], float | None]
) -> tuple[float, float] | None:
    """General percentile bootstrap: ``statistic(index_row)`` per resample (None skips the resample)."""
    if n == 0:
        return None
    idx = bootstrap_indices(n)
    out = np.empty(idx.shape[0], dtype=float)
    for i, row in enumerate(idx):
        v = statistic(row)
        out[i] = np.nan if v is None else v
    return percentile_interval(out)


def selected_bounds(count: int, unknown: int, selected: int) -> tuple[float, float] | None:
    """Worst-case completions over all selected samples: [count/selected, (count+unknown)/selected]."""
    if selected == 0:
        return None
    if count < 0 or unknown < 0 or count + unknown > selected:
        raise ValueError(f"selected_bounds: count={count} unknown={unknown} selected={selected}")
    lo = count / selected
    hi = (count + unknown) / selected
    return (lo, hi)
