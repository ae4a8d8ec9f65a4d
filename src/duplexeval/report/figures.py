"""The summary figures of the FDB report: response curves F(t), outcome bars, stop latencies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from duplexeval.report import svg
from duplexeval.report.svg import COLORS

CURVE_CAPTION = ("F(t): the share of samples that responded within t. The bar at the right edge is the "
                 "share that never responded in the window; dots mark the 1, 2 and 5 s rates, a diamond the median "
                 "(none when F never reaches 1/2).")


def response_curve(title: str, series: Sequence[tuple[str, Sequence[float | None]]], horizon: float | None = None,
                   colors: Sequence[str] = COLORS, xlabel: str = "seconds after the reference") -> str:
    """F(t): the share of samples that responded by t, one step line per tree; latency None = never.

    The not-responded mass is drawn as a bar at the right edge; dots mark the 1, 2 and 5 s rates and
    a diamond the median (where F reaches 1/2; none when it never does).
    """
    fig = svg.figure(7.2, 2.9)
    ax = fig.add_axes((0.08, 0.16, 0.78, 0.74))
    finite = [v for _, vals in series for v in vals if v is not None]
    xmax = max([5.5, *(v * 1.05 for v in finite)]) if horizon is None else horizon
    for k, (label, vals) in enumerate(series):
        c = colors[k % len(colors)]
        n = len(vals)
        if n == 0:
            continue
        lat = np.sort(np.array([v for v in vals if v is not None], dtype=float))
        xs = np.concatenate([[0.0], lat, [xmax]])
        ys = np.concatenate([[0.0], np.arange(1, lat.size + 1) / n, [lat.size / n]])
        ax.step(xs, ys, where="post", color=c, lw=1.6, label=f"{label} (n={n})")
        for t in (1, 2, 5):
            ax.plot([t], [np.searchsorted(lat, t, side="right") / n], "o", color=c, ms=3.5)
        rank = math.ceil(n / 2)
        if rank <= lat.size:
            ax.plot([lat[rank - 1]], [rank / n], "D", color=c, ms=5)
        never = 1 - lat.size / n
        x0 = xmax * (1.015 + 0.025 * k)
        ax.bar([x0], [never], bottom=[lat.size / n], width=xmax * 0.02, color=c, alpha=0.45, align="edge",
               clip_on=False)
    for t in (1, 2, 5):
        ax.axvline(t, color="#ccc", lw=0.6, zorder=0)
    ax.axhline(0.5, color="#ccc", lw=0.6, ls="--", zorder=0)
    ax.set_xlim(0, xmax)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("F(t): share that responded by t")
    ax.set_title(title, fontsize=9, loc="left", fontweight="bold")
    if ax.get_legend_handles_labels()[0]:  # no series with samples: no legend (and no matplotlib warning)
        ax.legend(loc="lower right", fontsize=7, frameon=False)
    else:
        ax.text(0.5, 0.5, "no samples to draw", transform=ax.transAxes, ha="center", color="#888")
    return svg.to_svg(fig)


def _strip_axes(n_rows: int, right: float) -> tuple[Any, Any]:
    """A figure with one horizontal band per tree: fixed margins in inches (0.5 below, 0.15 above)."""
    band, bottom, top = 0.45, 0.5, 0.15
    h = bottom + top + band * max(1, n_rows)
    fig = svg.figure(7.2, h)
    return fig, fig.add_axes((0.2, bottom / h, right - 0.2, band * max(1, n_rows) / h))


def outcome_bars(rows: Sequence[tuple[str, dict[str, int]]], colors: dict[str, str], title: str) -> str:
    """Outcomes per tree as one stacked horizontal bar each (counts over selected samples), in the order and
    colours of `colors` (outcome -> colour)."""
    fig, ax = _strip_axes(len(rows), right=0.8)
    for i, (_label, counts) in enumerate(rows):
        left = 0
        for name, color in colors.items():
            v = counts.get(name, 0)
            if v:
                ax.barh([i], [v], left=[left], color=color, height=0.6, label=name if i == 0 else None)
                ax.text(left + v / 2, i, str(v), ha="center", va="center", fontsize=7)
            left += v
    ax.set_yticks(range(len(rows)), [label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("selected samples")
    ax.set_title(title, fontsize=9, loc="left", fontweight="bold")
    from matplotlib.patches import Patch  # lazy: matplotlib is loaded only when a figure is drawn

    handles = [Patch(color=c, label=n) for n, c in colors.items()]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=6.5, frameon=False)
    return svg.to_svg(fig)


def stop_latencies(series: Sequence[tuple[str, Sequence[float | None]]], colors: Sequence[str] = COLORS) -> str:
    """Stop latency (end of the segment covering S, minus S) per exercised sample, one strip per tree.

    None (the segment runs to the end of the file: no observed stop) is drawn at the right edge.
    """
    fig, ax = _strip_axes(len(series), right=0.94)
    finite = [v for _, vals in series for v in vals if v is not None]
    xmax = max([1.0, *(v * 1.08 for v in finite)])
    rng = np.random.default_rng(0)  # fixed jitter: the same picture every time
    for i, (_label, vals) in enumerate(series):
        xs = [v if v is not None else xmax for v in vals]
        ys = i + rng.uniform(-0.18, 0.18, size=len(xs))
        cs = [colors[i % len(colors)] if v is not None else "#999" for v in vals]
        ax.scatter(xs, ys, s=9, c=cs, lw=0)
        never = sum(1 for v in vals if v is None)
        if never:
            ax.text(xmax * 0.97, i, f"{never} no stop", fontsize=6.5, ha="right", va="center", color="#555")
        med = sorted(v if v is not None else math.inf for v in vals)[math.ceil(len(vals) / 2) - 1] if vals else None
        if med is not None and math.isfinite(med):
            ax.plot([med, med], [i - 0.3, i + 0.3], color="#111", lw=1.2)
    ax.set_yticks(range(len(series)), [label for label, _ in series])
    ax.invert_yaxis()
    ax.set_xlim(0, xmax * 1.02)
    ax.set_title("How long did each system keep talking after the user cut in?", fontsize=9, loc="left",
                 fontweight="bold")
    ax.set_xlabel("stop latency (s) of exercised samples; | = median; grey at the right = no observed stop")
    return svg.to_svg(fig)
