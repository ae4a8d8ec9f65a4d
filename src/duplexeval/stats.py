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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95% normal quantile
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
# The 95% endpoints as exact fractions: (1 - 0.95) / 2 in floating point is 0.025000000000000022,
# whose quantile rank over 2000 resamples would be 51, not 50.
LOWER_95 = Fraction(1, 40)
UPPER_95 = Fraction(39, 40)


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


def quantile_rank(q: float | Fraction, n: int) -> int:
    """1-based rank ceil(q*n) of the quantile-rule order statistic (at least 1), computed exactly.

    A float q is read through its decimal repr so that 0.9 * 10 is exactly 9, not 9.000000000000002;
    a Fraction is used as it is.
    """
    frac = q if isinstance(q, Fraction) else Fraction(repr(float(q)))
    if not 0 < frac <= 1:
        raise ValueError(f"quantile level must be in (0, 1], got {q}")
    if n <= 0:
        raise ValueError("quantile of an empty set")
    return max(1, math.ceil(frac * n))


def quantile_rule(values: Sequence[float] | np.ndarray, q: float | Fraction) -> float | None:
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


def interval_levels(confidence: float | Fraction = CONFIDENCE) -> tuple[Fraction, Fraction]:
    """The lower and upper quantile levels of a two-sided interval, as exact fractions (0.95 -> 1/40, 39/40)."""
    conf = confidence if isinstance(confidence, Fraction) else Fraction(repr(float(confidence)))
    if not 0 < conf < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = (1 - conf) / 2
    return alpha, 1 - alpha


def percentile_interval(stats: np.ndarray, confidence: float | Fraction = CONFIDENCE) -> tuple[float, float] | None:
    """Endpoints of the percentile interval by the quantile rule over the finite-or-inf resample statistics.

    NaN entries mark resamples without a statistic and are skipped; None if none remain. With 2000
    resamples the 95% endpoints are the 50th and 1950th smallest statistics.
    """
    s = np.asarray(stats, dtype=float)
    s = s[~np.isnan(s)]
    if s.size == 0:
        return None
    lo_q, hi_q = interval_levels(confidence)
    lo = quantile_rule(s, lo_q)
    hi = quantile_rule(s, hi_q)
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


# ---------------------------------------------------------------------------------------------
# Typed values: one shape per kind of number, one ``to_json`` each, so every family writes a number alike.
# ---------------------------------------------------------------------------------------------


def json_interval(iv: tuple[float, float] | None) -> list[float | None] | None:
    """An interval as a JSON pair; an infinite endpoint (not reached) becomes null."""
    if iv is None:
        return None
    return [None if math.isinf(v) else float(v) for v in iv]


@dataclass(frozen=True)
class Share:
    """count/n with its Wilson 95% interval, and optionally the bounds over every selected unit.

    ``unknown`` / ``selected``: units that could not be judged and all units selected, so the
    worst-case completions [count/selected, (count+unknown)/selected] can be reported.
    """

    count: int
    n: int
    unknown: int | None = None
    selected: int | None = None

    def __post_init__(self) -> None:
        if self.n < 0 or self.count < 0 or self.count > self.n:
            raise ValueError(f"Share: need 0 <= count <= n, got count={self.count}, n={self.n}")

    @property
    def value(self) -> float | None:
        return self.count / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.count, self.n)

    @property
    def bounds(self) -> tuple[float, float] | None:
        if self.selected is None:
            return None
        return selected_bounds(self.count, self.unknown or 0, self.selected)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "value": self.value,
            "count": self.count,
            "n": self.n,
            "interval": json_interval(self.interval),
        }
        if self.selected is not None:
            out["selected_bounds"] = json_interval(self.bounds)
        return out


@dataclass(frozen=True)
class PooledRatio:
    """sum(numerators)/sum(denominators) over units, with a whole-unit bootstrap interval."""

    numerators: tuple[float, ...]
    denominators: tuple[float, ...]

    @classmethod
    def of(cls, numerators: Sequence[float], denominators: Sequence[float]) -> PooledRatio:
        if len(numerators) != len(denominators):
            raise ValueError("PooledRatio: numerators and denominators differ in length")
        return cls(tuple(float(v) for v in numerators), tuple(float(v) for v in denominators))

    @property
    def value(self) -> float | None:
        den = sum(self.denominators)
        return sum(self.numerators) / den if den > 0 else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return bootstrap_ratio_interval(np.asarray(self.numerators), np.asarray(self.denominators))

    def to_json(self) -> dict[str, object]:
        return {
            "value": self.value,
            "interval": json_interval(self.interval),
            "numerator": sum(self.numerators),
            "denominator": sum(self.denominators),
        }


@dataclass(frozen=True)
class PooledCount(PooledRatio):
    """A pooled ratio of summed integer counts (pauses intruded per pause); its JSON keeps the sums as integers."""

    def to_json(self) -> dict[str, object]:
        n_sum, d_sum = int(sum(self.numerators)), int(sum(self.denominators))
        return {
            "value": n_sum / d_sum if d_sum > 0 else None,
            "interval": json_interval(self.interval),
            "numerator": n_sum,
            "denominator": d_sum,
        }


@dataclass(frozen=True)
class PooledSeconds(PooledRatio):
    """A pooled ratio of summed times, kept in integer units of 1/per_second s and reported in seconds."""

    per_second: int = 1

    def to_json(self) -> dict[str, object]:
        n_sum, d_sum = int(sum(self.numerators)), int(sum(self.denominators))
        return {
            "value": n_sum / d_sum if d_sum > 0 else None,
            "interval": json_interval(self.interval),
            "numerator_s": n_sum / self.per_second,
            "denominator_s": d_sum / self.per_second,
        }


def pooled_seconds(num: Sequence[int], den: Sequence[int], per_second: int) -> PooledSeconds:
    """A ratio of summed times over units (integer time units), with a whole-unit bootstrap interval."""
    base = PooledRatio.of(num, den)
    return PooledSeconds(base.numerators, base.denominators, per_second)


def pooled_count(num: Sequence[int], den: Sequence[int]) -> PooledCount:
    """A ratio of summed counts over units, with a whole-unit bootstrap interval."""
    base = PooledRatio.of(num, den)
    return PooledCount(base.numerators, base.denominators)


@dataclass(frozen=True)
class Latency:
    """A latency distribution: quantile-rule median (with its bootstrap interval) and p90.

    +inf stands for "never happened" and stays in the denominator; a quantile landing on it is
    reported as not reached (null plus ``*_reached: false``). ``scale`` divides every reported value
    (1e6 for integer microseconds -> seconds).
    """

    values: tuple[float, ...]
    scale: float = 1.0

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray, scale: float = 1.0) -> Latency:
        return cls(tuple(float(v) for v in np.asarray(values, dtype=float)), scale)

    @property
    def n(self) -> int:
        return len(self.values)

    def quantile(self, q: float) -> Quantile:
        return Quantile.of(self.values, q)

    @property
    def median_interval(self) -> tuple[float, float] | None:
        iv = bootstrap_median_interval(self.values) if self.values else None
        return None if iv is None else (iv[0] / self.scale, iv[1] / self.scale)

    def to_json(self) -> dict[str, object]:
        med, p90 = self.quantile(0.5), self.quantile(0.9)
        return {
            "n": self.n,
            "median": None if med.value is None else med.value / self.scale,
            "median_interval": json_interval(self.median_interval),
            "p90": None if p90.value is None else p90.value / self.scale,
            "median_reached": med.reached if self.n else None,
            "p90_reached": p90.reached if self.n else None,
        }


@dataclass(frozen=True)
class Estimate:
    """A value whose interval its metric computes itself (a derived rate, a stratified mean of rates), with the fields
    that say what it is; ``to_json()`` is {"value", "interval", **fields}."""

    value: float | None
    interval: tuple[float, float] | None
    fields: Mapping[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "interval": json_interval(self.interval), **self.fields}


NOT_REACHED = "n/r"  # the one printed symbol for a quantile that lands on "never happened"
NO_DATA = "-"  # the one printed symbol for an empty set


def format_share(value: object) -> str:
    """A Share (or its JSON) as 'rate [lo, hi] (count/n)' for tables; '-' when n is 0."""
    js = value.to_json() if isinstance(value, Share) else value
    if not isinstance(js, dict) or js.get("value") is None:
        n = js.get("n") if isinstance(js, dict) else None
        return f"{NO_DATA} (0/{n})" if n is not None else NO_DATA
    iv = js.get("interval") or [None, None]
    return f"{js['value']:.3f} [{iv[0]:.3f}, {iv[1]:.3f}] ({js['count']}/{js['n']})"
