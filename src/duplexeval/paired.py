"""Paired comparison of two systems on the same units: bootstrap differences and McNemar's exact test.

One module for every family (FDB compare, controller compare, EOT compare). Units are paired by the
caller (same sample ids, eligible in both); here they are aligned arrays. The bootstrap follows the
shared conventions (stats.py): one index matrix from a fresh ``default_rng(0)`` per interval, the
same rows applied to A and B, quantile-rule endpoints at ranks 50 and 1950 of 2000.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from duplexeval import stats


@dataclass(frozen=True)
class McNemar:
    """Discordant pairs (A yes / B no = ``a_only``; A no / B yes = ``b_only``) and the exact two-sided p."""

    a_only: int
    b_only: int
    p_value: float

    def to_json(self) -> dict[str, object]:
        return {"a_only": self.a_only, "b_only": self.b_only, "p_value": self.p_value}


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """McNemar's exact test: a two-sided binomial test of the discordant pairs at p = 1/2 (p = 1 with none)."""
    if len(a) != len(b):
        raise ValueError("mcnemar_exact: a and b differ in length")
    a_only = sum(1 for x, y in zip(a, b) if x and not y)
    b_only = sum(1 for x, y in zip(a, b) if y and not x)
    n = a_only + b_only
    # scipy.stats takes about 0.9 s to import and only this test needs it: imported here, not at the top,
    # so that every `fdb score` / `fdb evaluate` start does not pay for it (benchmarks/README.md)
    from scipy.stats import binomtest

    p = 1.0 if n == 0 else float(binomtest(min(a_only, b_only), n, 0.5).pvalue)
    return McNemar(a_only, b_only, min(1.0, p))


@dataclass(frozen=True)
class PairedDifference:
    """B - A of one statistic over paired units, with its paired-bootstrap 95% interval.

    ``diff`` None with ``reason`` when there are no pairs, or when a quantile is not reached on
    either side (not reached stays not reached: it is never turned into a number).
    """

    a: float | None
    b: float | None
    diff: float | None
    interval: tuple[float, float] | None
    n_pairs: int
    reason: str | None = None
    skipped: int | None = None  # resamples without a statistic on either side (only reported when counted)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "a": self.a,
            "b": self.b,
            "diff": self.diff,
            "interval": stats.json_interval(self.interval),
            "n_pairs": self.n_pairs,
            "reason": self.reason,
        }
        if self.skipped is not None:
            out["resamples_skipped"] = self.skipped
        return out


def _diff_of(a: float | None, b: float | None) -> float:
    """B - A for one resample; +/-inf when only one side is not reached, NaN (skipped) when neither has a value."""
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(a) and math.isinf(b):
        return math.nan
    return b - a


def paired_difference(
    n: int,
    statistic_a: Callable[[np.ndarray], float | None],
    statistic_b: Callable[[np.ndarray], float | None],
) -> PairedDifference:
    """Generic paired bootstrap: each statistic gets the same index rows; +inf means not reached."""
    if n == 0:
        return PairedDifference(None, None, None, None, 0, "no unit is in both")
    full = np.arange(n)
    a, b = statistic_a(full), statistic_b(full)
    idx = stats.bootstrap_indices(n)
    diffs = np.array([_diff_of(statistic_a(row), statistic_b(row)) for row in idx], dtype=float)
    iv = stats.percentile_interval(diffs)
    point = _diff_of(a, b)
    reason = None
    diff: float | None = point
    if math.isnan(point) or math.isinf(point):
        diff, reason = None, "not reached"
    a_out = None if a is None or math.isinf(a) else a
    b_out = None if b is None or math.isinf(b) else b
    return PairedDifference(a_out, b_out, diff, iv, n, reason)


def paired_mean_difference(a: Sequence[float], b: Sequence[float]) -> PairedDifference:
    """B - A of the mean (a share when the values are 0/1), vectorised."""
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if av.shape != bv.shape:
        raise ValueError("paired_mean_difference: a and b differ in length")
    n = int(av.size)
    if n == 0:
        return PairedDifference(None, None, None, None, 0, "no unit is in both")
    idx = stats.bootstrap_indices(n)
    diffs = bv[idx].mean(axis=1) - av[idx].mean(axis=1)
    am, bm = float(av.mean()), float(bv.mean())
    return PairedDifference(am, bm, bm - am, stats.percentile_interval(diffs), n)


def paired_quantile_difference(a: Sequence[float], b: Sequence[float], q: float = 0.5) -> PairedDifference:
    """B - A of the quantile-rule Q(q) (the difference of the resample quantiles); +inf = never happened."""
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if av.shape != bv.shape:
        raise ValueError("paired_quantile_difference: a and b differ in length")
    n = int(av.size)
    if n == 0:
        return PairedDifference(None, None, None, None, 0, "no unit is in both")
    k = stats.quantile_rank(q, n)
    idx = stats.bootstrap_indices(n)
    qa = np.sort(av[idx], axis=1)[:, k - 1]
    qb = np.sort(bv[idx], axis=1)[:, k - 1]
    with np.errstate(invalid="ignore"):
        diffs = np.where(np.isinf(qa) & np.isinf(qb), np.nan, qb - qa)
    pa, pb = stats.quantile_rule(av, q), stats.quantile_rule(bv, q)
    assert pa is not None and pb is not None
    point = _diff_of(pa, pb)
    ok = math.isfinite(point)
    return PairedDifference(
        None if math.isinf(pa) else pa,
        None if math.isinf(pb) else pb,
        point if ok else None,
        stats.percentile_interval(diffs),
        n,
        None if ok else "not reached",
    )


def resample_differences(boot_a: np.ndarray, boot_b: np.ndarray) -> np.ndarray:
    """B - A per resample; NaN (skipped) where either side has no statistic or both are not reached."""
    ra, rb = np.asarray(boot_a, dtype=float), np.asarray(boot_b, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(ra) & np.isinf(rb) & (ra == rb), np.nan, rb - ra)


def from_resamples(
    a: float | None, b: float | None, boot_a: np.ndarray, boot_b: np.ndarray, n_pairs: int
) -> PairedDifference:
    """A paired difference from point values and per-resample statistics the caller computed on the same rows.

    For statistics that are not a function of a plain unit index row (e.g. grouped sums over conversations):
    draw the rows with ``stats.bootstrap_indices`` and pass the two statistic arrays here. NaN = no
    statistic in that resample (skipped and counted); the point difference is None when either side has none.
    """
    diffs = resample_differences(boot_a, boot_b)
    skipped = int(np.isnan(diffs).sum())
    point = _diff_of(a, b)
    if not math.isfinite(point):
        a_out = None if a is None or not math.isfinite(a) else a
        b_out = None if b is None or not math.isfinite(b) else b
        return PairedDifference(a_out, b_out, None, None, n_pairs, "undefined on one side", skipped)
    return PairedDifference(a, b, point, stats.percentile_interval(diffs), n_pairs, None, skipped)


def paired_ratio_difference(
    num_a: Sequence[float], den_a: Sequence[float], num_b: Sequence[float], den_b: Sequence[float]
) -> PairedDifference:
    """B - A of a pooled ratio sum(num) / sum(den) over paired units; resamples with a zero denominator are skipped."""
    na, da, nb, db = (np.asarray(x, dtype=float) for x in (num_a, den_a, num_b, den_b))
    n = int(na.size)
    if not (da.size == nb.size == db.size == n):
        raise ValueError("paired_ratio_difference: arrays differ in length")
    if n == 0:
        return PairedDifference(None, None, None, None, 0, "no unit is in both")
    idx = stats.bootstrap_indices(n)

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        d = den[idx].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d > 0, num[idx].sum(axis=1) / np.where(d > 0, d, 1.0), np.nan)

    pa = float(na.sum() / da.sum()) if da.sum() > 0 else None
    pb = float(nb.sum() / db.sum()) if db.sum() > 0 else None
    out = from_resamples(pa, pb, ratio(na, da), ratio(nb, db), n)
    if out.diff is None:
        return PairedDifference(pa, pb, None, None, n, "no pause or interruption time on one side", out.skipped)
    return out
