"""The end-of-turn pair report (`eot score`): spec 003's ``score`` kept as it is, plus counts with intervals,
quantile-rule latencies, missed commits and per-pair rows.

- A missed commit (the detector never fired) is a commit at +inf: a hang at every band, never a false cutoff,
  and a never-responded latency in the quantiles (a quantile that lands on it is *not reached*).
- The printed median is the quantile rule's Q(0.5), as in every other family; spec 003's interpolating
  ``median_latency_ms`` stays in the JSON under ``score``, by its name.
- Intervals: Wilson per pair, or, when pairs carry a ``conversation``, a bootstrap over whole conversations.
- JSON times are rounded to the microsecond (ms values to 3 decimals); rates are not rounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval import stats
from duplexeval.artifacts import header
from duplexeval.eot.kinds import REPORT_KIND
from duplexeval.eot.kinds import REPORT_SCHEMA as SCHEMA_VERSION
from duplexeval.eot.pairs import (
    DEFAULT_LATENCY_BANDS_MS,
    DEFAULT_TOLERANCE_MS,
    EOTPair,
    latency_s,
    score,
)
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Component, Signature
from duplexeval.stats import NO_DATA, NOT_REACHED, Quantile, Share

DEFINITIONS = "eot-pairs-spec003-1"
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def _ms(x: float | None) -> float | None:
    """A time in ms rounded to the microsecond; None for none / never."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), 3)


def _s(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)


def report_signature(latency_bands_ms: Sequence[int], tolerance_ms: int, inputs: Mapping[str, str] | None) -> Signature:
    comp = Component("pairs", "spec003", None,
                     {"tol": tolerance_ms, "bands": "/".join(str(b) for b in latency_bands_ms)})
    return Signature(DEFINITIONS, (comp,), dict(inputs or {})).with_bootstrap()


def _share_json(count: int, n: int, interval: tuple[float, float] | None, method: str) -> JsonObject:
    """The one share shape (``stats.Share.to_json``); a grouped bootstrap interval replaces the Wilson one."""
    js: JsonObject = dict(Share(count, n).to_json())
    if method != "wilson":
        js["interval"] = stats.json_interval(interval)
    js["interval_method"] = method
    return js


def build_report(
    pairs: Sequence[EOTPair],
    *,
    ids: Sequence[str | None] | None = None,
    conversations: Sequence[str | None] | None = None,
    latency_bands_ms: Sequence[int] = DEFAULT_LATENCY_BANDS_MS,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
    source: str | None = None,
    inputs: Mapping[str, str] | None = None,
    intervals: bool = True,
) -> JsonObject:
    """JSON-ready report. ``score`` is spec 003's dict; the rest adds evidence (empty sets give null).

    ``intervals=False`` leaves out the bootstrap interval of the median (the sweep has its own turn intervals).
    """
    if tolerance_ms < 0:
        raise ValueError("tolerance_ms must be non-negative")
    if any(b < 0 for b in latency_bands_ms):
        raise ValueError("latency bands must be non-negative")
    pairs = list(pairs)
    n = len(pairs)
    base = score(pairs, latency_bands_ms=latency_bands_ms, tolerance_ms=tolerance_ms)
    lat_ms = np.array([latency_s(p) * 1000.0 for p in pairs], dtype=float)
    tol_s = tolerance_ms / 1000.0
    early = np.array([latency_s(p) < -tol_s for p in pairs], dtype=bool)
    hang = {b: np.array([latency_s(p) > b / 1000.0 for p in pairs], dtype=bool) for b in latency_bands_ms}
    missed = int(np.isinf(lat_ms).sum()) if n else 0
    grouped = conversations is not None and any(c is not None for c in conversations)
    if grouped:
        assert conversations is not None
        keys = [c if c is not None else f"<pair {k + 1}>" for k, c in enumerate(conversations)]
        uniq, code = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
        per = np.bincount(code, minlength=uniq.size).astype(float)
        method = "bootstrap over conversations"

        def ratio(mask: np.ndarray) -> tuple[float, float] | None:
            return stats.bootstrap_ratio_interval(np.bincount(code, weights=mask.astype(float), minlength=uniq.size),
                                                  per)

        members = [np.flatnonzero(code == g) for g in range(uniq.size)]

        def med(rows: np.ndarray) -> float | None:
            vals = np.concatenate([lat_ms[members[g]] for g in rows])
            return stats.quantile_rule(vals, 0.5)

        med_iv = stats.bootstrap_statistic_interval(int(uniq.size), med) if n and intervals else None
        fc = _share_json(int(early.sum()), n, ratio(early) if n else None, method)
        hg = {str(b): _share_json(int(h.sum()), n, ratio(h) if n else None, method) for b, h in hang.items()}
        unit = {"unit": "conversation", "n_units": int(uniq.size)}
    else:
        method = "wilson"
        fc = _share_json(int(early.sum()), n, None, method)
        hg = {str(b): _share_json(int(h.sum()), n, None, method) for b, h in hang.items()}
        med_iv = stats.bootstrap_median_interval(lat_ms) if n and intervals else None
        unit = {"unit": "pair", "n_units": n}
    quantiles: dict[str, float | None] = {}
    reached: dict[str, bool | None] = {}
    for q in QUANTILES:
        qq = Quantile.of(lat_ms, q)
        quantiles[f"q{round(q * 100):02d}"] = _ms(qq.value)
        reached[f"q{round(q * 100):02d}"] = qq.reached if n else None
    median = Quantile.of(lat_ms, 0.5)
    finite = lat_ms[np.isfinite(lat_ms)]
    spec_median = base["median_latency_ms"]
    sig = report_signature(latency_bands_ms, tolerance_ms, inputs)
    out: JsonObject = header(REPORT_KIND, SCHEMA_VERSION, sig, inputs or {})
    out.update({
        "source": source,
        "settings": {"latency_bands_ms": list(latency_bands_ms), "tolerance_ms": tolerance_ms},
        "score": {
            "n": base["n"],
            "median_latency_ms": _ms(spec_median),
            "median_latency_reached": bool(math.isfinite(spec_median)),
            "false_cutoff_rate": base["false_cutoff_rate"],
            "hang_rate_at_ms": {str(k): v for k, v in base["hang_rate_at_ms"].items()},
        },
        "n_missed_commits": missed,
        "grouping": unit,
        "false_cutoff": fc,
        "hang_at_ms": hg,
        "latency_ms": {
            "n": n,
            "rule": "Q(q) = ceil(q*N)-th smallest signed latency (commit - true end), no interpolation; "
                    "a missed commit is +inf (not reached)",
            "median": _ms(median.value),
            "median_reached": median.reached if n else None,
            "median_interval": stats.json_interval(None if med_iv is None else (float(med_iv[0]), float(med_iv[1]))),
            "median_interval_method": "bootstrap over conversations" if grouped else "bootstrap over pairs",
            "quantiles": quantiles,
            "reached": reached,
            "min": _ms(float(finite.min())) if finite.size else None,
            "max": _ms(float(finite.max())) if finite.size else None,
        },
        "notes": [
            "score.* is spec 003 as defined: empty input gives 0.0, not null; the shares below give null for n = 0",
            "score.median_latency_ms interpolates for even n (statistics.median); latency_ms.median never does",
        ],
    })  # fmt: skip
    if out["latency_ms"]["median_interval"] is not None:
        out["latency_ms"]["median_interval"] = [_ms(v) if v is not None else None
                                                for v in out["latency_ms"]["median_interval"]]
    return out


@dataclass(frozen=True)
class PairContribution:
    """What one pair contributed (`eot score --rows`, one JSON line each): its times (s, to the microsecond; None for
    a missed commit), its signed latency (ms; None when missed), false cutoff, hang at each band (ms, as text)."""

    pair: int
    id: str | None
    conversation: str | None
    grouped: bool  # the pairs carry conversations: the row names its own
    true_turn_end_s: float | None
    detector_commit_s: float | None
    missed: bool
    latency_ms: float | None
    false_cutoff: bool
    hang_at_ms: tuple[tuple[str, bool], ...]

    def to_json(self) -> JsonObject:
        row: JsonObject = {"pair": self.pair, "id": self.id}
        if self.grouped:
            row["conversation"] = self.conversation
        row.update({"true_turn_end_s": self.true_turn_end_s, "detector_commit_s": self.detector_commit_s,
                    "missed": self.missed, "latency_ms": self.latency_ms, "false_cutoff": self.false_cutoff,
                    "hang_at_ms": dict(self.hang_at_ms)})  # fmt: skip
        return row


def pair_rows(
    pairs: Sequence[EOTPair], ids: Sequence[str | None], conversations: Sequence[str | None] | None,
    latency_bands_ms: Sequence[int], tolerance_ms: int,
) -> list[PairContribution]:
    """One row per pair: what it contributed (latency, false cutoff, hang at each band, missed)."""
    out = []
    for k, p in enumerate(pairs):
        lat = latency_s(p)
        out.append(PairContribution(
            k + 1, ids[k] if k < len(ids) else None, conversations[k] if conversations is not None else None,
            conversations is not None, _s(p.true_turn_end_s), _s(p.detector_commit_s), math.isinf(lat),
            _ms(lat * 1000.0), bool(lat < -tolerance_ms / 1000.0),
            tuple((str(b), bool(lat > b / 1000.0)) for b in latency_bands_ms),
        ))  # fmt: skip
    return out


def _fmt_share(sh: Mapping[str, Any]) -> str:
    if sh["value"] is None:
        return f"{NO_DATA} (0/{sh['n']})"
    lo, hi = sh["interval"] or [None, None]
    ci = "" if lo is None else f"  [{lo * 100:.2f}, {hi * 100:.2f}]"
    return f"{sh['value'] * 100:6.2f}%{ci}  ({sh['count']}/{sh['n']})"


def format_report(rep: Mapping[str, Any], rows: Sequence[PairContribution] | None = None) -> str:
    """The printed report: one line per rate, one median (the quantile rule's), quantiles, per-pair rows if given."""
    s = rep["score"]
    g = rep["grouping"]
    lines = [f"end-of-turn pairs: n = {s['n']} (missed commits: {rep['n_missed_commits']})  tolerance "
             f"{rep['settings']['tolerance_ms']} ms  intervals: {rep['false_cutoff']['interval_method']}"
             + (f" ({g['n_units']} conversations)" if g["unit"] == "conversation" else "")]  # fmt: skip
    lines.append(f"  false cutoff      {_fmt_share(rep['false_cutoff'])}")
    for band, sh in rep["hang_at_ms"].items():
        lines.append(f"  hang > {band:>5} ms  {_fmt_share(sh)}")
    lat = rep["latency_ms"]
    med = NOT_REACHED if lat["n"] and not lat["median_reached"] else (NO_DATA if lat["median"] is None
                                                                      else f"{lat['median']:.1f} ms")
    miv = lat["median_interval"]
    ivs = "" if not miv else (f"  [{NOT_REACHED if miv[0] is None else f'{miv[0]:.1f}'}, "
                              f"{NOT_REACHED if miv[1] is None else f'{miv[1]:.1f}'}]")
    lines.append(f"  median latency    {med}{ivs}  (quantile rule, Q(0.5))")
    qs = lat["quantiles"]
    reached = lat["reached"]
    parts = []
    for k, v in qs.items():
        parts.append(f"{k}={NO_DATA if reached[k] is None else (NOT_REACHED if not reached[k] else f'{v:.1f}')}")
    lines.append("  latency quantiles " + "  ".join(parts) + " ms")
    if rows:
        lines.append("  pairs:")
        w = max(len(str(r.id or r.pair)) for r in rows)
        for r in rows:
            name = str(r.id or r.pair)
            latxt = NOT_REACHED if r.missed else f"{r.latency_ms:+.1f} ms"
            flags = ("false cutoff" if r.false_cutoff else "") + (" missed" if r.missed else "")
            lines.append(f"    {name:<{w}}  {latxt:>12}  {flags.strip()}")
    lines.append(f"  {NOT_REACHED} = not reached (a missed commit is a latency that never happened), "
                 f"{NO_DATA} = no data")
    lines.append(rep["signature"]["compact"])
    return "\n".join(lines)
