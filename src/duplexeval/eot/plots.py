"""Sweep figures with matplotlib's Agg backend: the Pareto frontier and the operating-point bars (PNG)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from duplexeval.jsonio import atomic_write_bytes

if TYPE_CHECKING:  # sweep_report's callers import this module
    from duplexeval.eot.sweep_report import SweepResult


def _save(fig: Any, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    atomic_write_bytes(path, buf.getvalue())


def grouped_points(points: Mapping[str, Any]) -> list[tuple[list[str], float, float]]:
    """(budget names, mean latency, cutoff rate) of each distinct operating point, in the budgets' order."""
    out: list[tuple[list[str], float, float]] = []
    for name, p in points.items():
        if p is None:
            continue
        lat, cut = (p["mean_latency"], p["cutoff_rate"]) if isinstance(p, Mapping) else (p.mean_latency, p.cutoff_rate)
        same = next((g for g in out if abs(g[1] - lat) < 1e-9 and abs(g[2] - cut) < 1e-9), None)
        if same is None:
            out.append(([name], float(lat), float(cut)))
        else:
            same[0].append(name)
    return out


def plot_pareto(path: Path, res: SweepResult, title: str) -> None:
    """Every model policy (grey), the frontier (line), the VAD baseline and the operating points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sw = res.sweep
    m = sw.is_model
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(sw.mean_latency[m] * 1000, sw.cutoff_rate[m] * 100, s=4, c="0.8", label="policies")
    fr = np.flatnonzero(res.pareto)
    fr = fr[np.argsort(sw.latency_sum_us[fr], kind="stable")]
    ax.step(sw.mean_latency[fr] * 1000, sw.cutoff_rate[fr] * 100, where="post", c="C0", label="Pareto frontier")
    v = np.flatnonzero(~m)
    ax.plot(sw.mean_latency[v] * 1000, sw.cutoff_rate[v] * 100, "s--", c="C3", ms=3, label="VAD baseline")
    for k, (names, lat, cut) in enumerate(grouped_points(res.points), 1):
        # one numbered marker per distinct point (budgets that pick the same policy share it), named in the legend,
        # so labels never overprint one another
        ax.plot(lat * 1000, cut * 100, "o", c="C1", ms=5, label=f"{k}: picked at {', '.join(names)}")
        ax.annotate(str(k), (lat * 1000, cut * 100), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set_xlabel("mean latency after the true end (ms)")
    ax.set_ylabel("false cutoffs (% of hold spans)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_operating_points(path: Path, summary: Mapping[str, Any], title: str) -> None:
    """Latency at each cutoff budget and cutoffs at each latency budget, model vs VAD baseline, turn intervals as
    bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.5))
    ivs = summary.get("intervals") or {}
    for ax, group, metric, scale, ylabel, vad_group in (
        (a1, summary["operating_points"], "mean_latency", 1000, "mean latency (ms)",
         summary["vad_baseline"]["operating_points"]),
        (a2, summary["cutoff_at_latency_budget"], "cutoff_rate", 100, "false cutoffs (%)",
         summary["vad_baseline"]["cutoff_at_latency_budget"]),
    ):
        keys = list(group)
        x = np.arange(len(keys))
        mv = [np.nan if group[k] is None else group[k][metric] * scale for k in keys]
        vv = [np.nan if vad_group[k] is None else vad_group[k][metric] * scale for k in keys]
        err = np.zeros((2, len(keys)))
        for i, k in enumerate(keys):
            fx = ((ivs.get(k) or {}).get("fixed_policy") or {}).get(metric)
            if fx and group[k] is not None and None not in fx:
                err[0, i] = mv[i] - fx[0] * scale
                err[1, i] = fx[1] * scale - mv[i]
        ax.bar(x - 0.2, mv, 0.4, yerr=err, capsize=3, label="detector", color="C0")
        ax.bar(x + 0.2, vv, 0.4, label="VAD baseline", color="C3")
        ax.set_xticks(x, keys)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
