"""The end-of-turn report: spec 003's score plus counts, Wilson intervals and quantile-rule latencies."""

from __future__ import annotations

from collections.abc import Sequence

from duplexeval.eot.pairs import (
    DEFAULT_LATENCY_BANDS_MS,
    DEFAULT_TOLERANCE_MS,
    EOTPair,
    latency_s,
    score,
)
from duplexeval.stats import Quantile, wilson_interval

REPORT_KIND = "duplexeval.eot.report"
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def _share(count: int, n: int) -> dict:
    ci = wilson_interval(count, n)
    return {
        "count": count,
        "n": n,
        "rate": (count / n) if n else None,
        "wilson95": None if ci is None else [ci[0], ci[1]],
    }


def build_report(
    pairs: Sequence[EOTPair],
    *,
    latency_bands_ms: Sequence[int] = DEFAULT_LATENCY_BANDS_MS,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
    source: str | None = None,
) -> dict:
    """JSON-ready report. ``score`` is spec 003 verbatim; the rest adds evidence (empty sets give null)."""
    if tolerance_ms < 0:
        raise ValueError("tolerance_ms must be non-negative")
    if any(b < 0 for b in latency_bands_ms):
        raise ValueError("latency bands must be non-negative")
    pairs = list(pairs)
    n = len(pairs)
    base = score(pairs, latency_bands_ms=latency_bands_ms, tolerance_ms=tolerance_ms)
    lat_ms = [latency_s(p) * 1000.0 for p in pairs]
    tol_s = tolerance_ms / 1000.0
    n_early = sum(1 for p in pairs if latency_s(p) < -tol_s)
    hang = {}
    for band in latency_bands_ms:
        c = sum(1 for p in pairs if latency_s(p) > band / 1000.0)
        hang[str(band)] = _share(c, n)
    quantiles = {}
    for q in QUANTILES:
        qq = Quantile.of(lat_ms, q)
        quantiles[f"q{round(q * 100):02d}"] = qq.value
    return {
        "kind": REPORT_KIND,
        "schema_version": 1,
        "source": source,
        "settings": {"latency_bands_ms": list(latency_bands_ms), "tolerance_ms": tolerance_ms},
        "score": {
            "n": base["n"],
            "median_latency_ms": base["median_latency_ms"],
            "false_cutoff_rate": base["false_cutoff_rate"],
            "hang_rate_at_ms": {str(k): v for k, v in base["hang_rate_at_ms"].items()},
        },
        "false_cutoff": _share(n_early, n),
        "hang_at_ms": hang,
        "latency_ms": {
            "n": n,
            "rule": "Q(q) = ceil(q*N)-th smallest signed latency (commit - true end), no interpolation",
            "quantiles": quantiles,
            "min": min(lat_ms) if lat_ms else None,
            "max": max(lat_ms) if lat_ms else None,
        },
        "notes": [
            "score.* is spec 003 as defined: empty input gives 0.0, not null; the shares below give null for n = 0",
            "score.median_latency_ms interpolates for even n (statistics.median); latency_ms.quantiles never do",
        ],
    }


def format_report(rep: dict) -> str:
    """A short human-readable table of the report."""
    s = rep["score"]
    lines = [f"end-of-turn pairs: n = {s['n']}  (tolerance {rep['settings']['tolerance_ms']} ms)"]

    def fmt(sh: dict) -> str:
        if sh["rate"] is None:
            return "n/a (no pairs)"
        lo, hi = sh["wilson95"]
        return f"{sh['rate'] * 100:6.2f}%  [{lo * 100:.2f}, {hi * 100:.2f}]  ({sh['count']}/{sh['n']})"

    lines.append(f"  false cutoff      {fmt(rep['false_cutoff'])}")
    for band, sh in rep["hang_at_ms"].items():
        lines.append(f"  hang > {band:>5} ms  {fmt(sh)}")
    why = "spec 003 median" if s["n"] else "spec 003 value for no pairs"
    lines.append(f"  median latency    {s['median_latency_ms']:.1f} ms ({why})")
    qs = rep["latency_ms"]["quantiles"]
    lines.append(
        "  latency quantiles " + "  ".join(f"{k}={'n/a' if v is None else f'{v:.1f}'}" for k, v in qs.items()) + " ms"
    )
    return "\n".join(lines)
