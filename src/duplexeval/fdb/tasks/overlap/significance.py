"""The official v1.5 paired t-test (`significance_test.py`), exactly, plus the Holm-adjusted p-values it drops.

Rows: samples whose judge tag list holds `C_RESPOND` (no tag: excluded), in the script's order (sample folder
names sorted as strings); rows where any `*wpm` value is 0 are dropped for every metric (NaN survives). Values
are masked to missing: 0 for wpm, speech_dur_s, mean_pitch, std_pitch, std_intensity; mean_intensity <= -190.
Pairs (pre, post) and (clean, post) per metric: d = after - before, NaN pairs removed, at least 2 needed; outliers
by MAD on d (|d - median| <= 3.5 * 1.4826 * MAD, none removed when MAD is 0); then `scipy.stats.ttest_rel`
(two-sided), the mean difference with its 95% t interval and Cohen's d_z. Holm's step-down adjustment runs over
every test that ran, as the script computes it (then never writes it); we report both. The script's "reliable"
wording uses the raw p < 0.05 whatever `--alpha` says; `--alpha` only sets the interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval.jsontypes import JsonObject

README_METRICS = ("utmosv2", "wpm", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity")
PAIRS = (("pre", "post"), ("clean", "post"))
ZERO_MASKED = frozenset({"wpm", "speech_dur_s", "mean_pitch", "std_pitch", "std_intensity"})
INTENSITY_SENTINEL_DB = -190.0
MAD_K = 3.5
MAD_SCALE = 1.4826
ALPHA = 0.05
REQUIRED_TAG = "C_RESPOND"


@dataclass(frozen=True)
class Row:
    """One sample for the test: its id, its tag list (None: no tag file) and its `general_split` object."""

    sample_id: str
    tags: Sequence[str] | None
    split: Mapping[str, Any]


@dataclass(frozen=True)
class PairedTest:
    """One paired t-test of the official script, with the Holm-adjusted p-value beside the raw one."""

    metric: str
    pair: str  # "pre_vs_post" or "clean_vs_post"
    n_raw: int
    n_valid: int
    n_used: int
    n_dropped: int
    mean_before: float
    mean_after: float
    mean_diff: float
    ci95_low: float
    ci95_high: float
    t: float | None
    df: int
    p: float | None
    p_holm: float | None
    cohen_dz: float | None

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Skipped:
    """A test the script skips, and its reason (the message it prints)."""

    metric: str
    pair: str
    reason: str


def _num(x: Any) -> float:
    if x is None:
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def responding(rows: Sequence[Row]) -> list[Row]:
    """The rows the script loads, in its order: a tag list holding C_RESPOND and a non-empty split."""
    kept = [r for r in rows if r.tags is not None and REQUIRED_TAG in r.tags and r.split]
    return sorted(kept, key=lambda r: r.sample_id)


def select_rows(rows: Sequence[Row]) -> list[Row]:
    """The rows the script tests: `responding` ones without a `*wpm` value equal to 0."""

    def wpm_ok(r: Row) -> bool:
        return all(_num(r.split.get(side, {}).get("wpm")) != 0 for side in ("pre", "post", "clean"))

    return [r for r in responding(rows) if wpm_ok(r)]


def _column(rows: Sequence[Row], side: str, metric: str) -> np.ndarray:
    vals = np.array([_num(r.split.get(side, {}).get(metric)) for r in rows], dtype=float)
    if metric in ZERO_MASKED:
        vals[vals == 0.0] = np.nan
    if metric == "mean_intensity":
        vals[vals <= INTENSITY_SENTINEL_DB] = np.nan
    return vals


def _present(rows: Sequence[Row], metric: str) -> bool:
    """Whether the script's table has the metric's columns (some loaded row holds it on some side)."""
    keys: set[str] = set()
    for r in rows:
        for s in ("pre", "post", "clean"):
            keys |= set(r.split.get(s, {}))
    return metric in keys


def paired(before: np.ndarray, after: np.ndarray, metric: str, pair: str, alpha: float = ALPHA) -> PairedTest | Skipped:
    """One test of `paired_compare(outlier_rule='mad', outlier_on='diff')`."""
    from scipy import stats  # about 0.9 s to import: only when a test runs

    mask = ~np.isnan(before) & ~np.isnan(after)
    b0, a0 = before[mask], after[mask]
    if b0.size < 2:
        return Skipped(metric, pair, "fewer than 2 valid pairs")
    diff = a0 - b0
    med = np.median(diff)
    mad = np.median(np.abs(diff - med))
    scale = MAD_SCALE * mad if mad > 0 else 0.0
    keep = np.ones(b0.size, dtype=bool) if scale == 0 else (diff >= med - MAD_K * scale) & (diff <= med + MAD_K * scale)
    b1, a1 = b0[keep], a0[keep]
    n = int(b1.size)
    if n < 2:
        return Skipped(metric, pair, "all data flagged as outliers")
    d = a1 - b1
    mean_d = d.mean()
    sd_d = d.std(ddof=1)
    se_d = sd_d / np.sqrt(n)
    t_stat, p_t = stats.ttest_rel(a1, b1)
    tcrit = stats.t.ppf(1 - alpha / 2, df=n - 1)
    return PairedTest(metric, pair, int(before.size), int(b0.size), n, int(b0.size) - n, float(b1.mean()),
                      float(a1.mean()), float(mean_d), float(mean_d - tcrit * se_d), float(mean_d + tcrit * se_d),
                      _none_if_nan(float(t_stat)), n - 1, _none_if_nan(float(p_t)), None,
                      _none_if_nan(float(mean_d / sd_d)) if sd_d > 0 else None)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (as statsmodels' `multipletests(method='holm')` gives them)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p)
    adj_sorted = np.minimum(np.maximum.accumulate(p[order] * np.arange(m, 0, -1)), 1.0)
    out = np.empty(m)
    out[order] = adj_sorted
    return [float(x) for x in out]


def run_tests(rows: Sequence[Row], metrics: Sequence[str] = README_METRICS, alpha: float = ALPHA
              ) -> tuple[list[PairedTest], list[Skipped], int]:
    """Every test of the script on these rows: (tests with Holm p, skipped tests, rows used)."""
    loaded = responding(rows)
    kept = select_rows(rows)
    done: list[PairedTest] = []
    skipped: list[Skipped] = []
    for m in metrics:
        for before, after in PAIRS:
            name = f"{before}_vs_{after}"
            if not _present(loaded, m):
                skipped.append(Skipped(m, name, f"columns {before}_{m}/{after}_{m} missing"))
                continue
            res = paired(_column(kept, before, m), _column(kept, after, m), m, name, alpha)
            (done if isinstance(res, PairedTest) else skipped).append(res)  # type: ignore[arg-type]
    # Holm over the tests with a p-value; a NaN p (zero variance) propagates as the script's would.
    pvals = [t.p if t.p is not None else math.nan for t in done]
    adj = holm(pvals)
    done = [PairedTest(**{**t.to_json(), "p_holm": _none_if_nan(a)}) for t, a in zip(done, adj)]
    return done, skipped, len(kept)
