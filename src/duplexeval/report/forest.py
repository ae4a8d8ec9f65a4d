"""The first picture of every family: a forest plot of the headline metrics, one dot and 95% interval per system,
and beside it each system's paired difference from the baseline with its interval, coloured by what it shows.

The plot is an HTML grid: the metric labels are HTML text (they wrap, so they are never cut off) and every cell is a
small inline SVG whose coordinates are percentages of its width, with a `<title>` giving the exact numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from duplexeval.report.page import esc

LOWER, NEITHER, HIGHER = -1, 0, 1
WIN, LOSS, UNCLEAR = "win", "loss", "unclear"
VERDICT_COLORS = {WIN: "#1a7f37", LOSS: "#c62828", UNCLEAR: "#8a8f98"}
_PAD = 4.0  # percent of the strip kept free at each end


@dataclass(frozen=True)
class Estimate:
    """A point with its 95% interval; `text` is the exact reading (tooltip); an open end was not reached."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    text: str = ""
    hi_open: bool = False


@dataclass(frozen=True)
class ForestRow:
    """One metric: its group (subset, family part), unit (rows of one unit share an axis) and better direction."""

    group: str
    label: str
    unit: str
    better: int
    values: tuple[Estimate | None, ...]
    diffs: tuple[Estimate | None, ...] = ()


@dataclass(frozen=True)
class Unit:
    """How a unit's numbers read: the axis format and the fixed range, when it has one (shares: 0 to 1)."""

    name: str
    fmt: Callable[[float], str]
    fixed: tuple[float, float] | None = None


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _pts(x: float) -> str:
    return f"{x * 100:+.0f} pts" if x else "0"


UNITS: dict[str, Unit] = {
    "share": Unit("share (95% interval)", _pct, (0.0, 1.0)),
    "s": Unit("seconds", lambda x: f"{x:g} s"),
    "ms": Unit("milliseconds", lambda x: f"{x:g} ms"),
    "per hour": Unit("events per hour", lambda x: f"{x:g}/h"),
    "score": Unit("score", lambda x: f"{x:g}"),
    "score01": Unit("score (0 to 1)", lambda x: f"{x:g}", (0.0, 1.0)),
}


def verdict(row: ForestRow, d: Estimate | None) -> str:
    """win / loss when the paired interval excludes 0 on the better / worse side; unclear otherwise."""
    if d is None or d.value is None or d.lo is None or d.hi is None or row.better == NEITHER:
        return UNCLEAR
    if d.lo > 0 or d.hi < 0:
        return WIN if (d.lo > 0) == (row.better == HIGHER) else LOSS
    return UNCLEAR


def nice_ceiling(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least x (x > 0)."""
    e = math.floor(math.log10(x))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10**e >= x * (1 - 1e-9):
            return float(m * 10**e)
    return float(10 ** (e + 1))


def _ticks(lo: float, hi: float) -> list[float]:
    step = nice_ceiling((hi - lo) / 4) if hi > lo else 1.0
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    t = first
    while t <= hi + 1e-9 * step:
        out.append(round(t, 10) + 0.0)
        t += step
    return out


def _range(points: Sequence[Estimate], unit: Unit) -> tuple[float, float]:
    if unit.fixed is not None:
        return unit.fixed
    xs = [v for p in points for v in (p.value, p.lo, p.hi) if v is not None and math.isfinite(v)]
    if not xs:
        return 0.0, 1.0
    lo, hi = min(0.0, min(xs)), max(xs)
    return lo, nice_ceiling(hi) if hi > 0 else 1.0


def _diff_range(points: Sequence[Estimate], unit: Unit) -> tuple[float, float]:
    xs = [abs(v) for p in points for v in (p.value, p.lo, p.hi) if v is not None and math.isfinite(v)]
    m = max(xs, default=0.0)
    m = nice_ceiling(m) if m > 0 else 0.1
    if unit.fixed is not None:
        m = min(m, unit.fixed[1] - unit.fixed[0])
    return -m, m


class _Scale:
    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi

    def __call__(self, x: float) -> float:
        f = (x - self.lo) / (self.hi - self.lo) if self.hi > self.lo else 0.5
        return round(_PAD + min(1.0, max(0.0, f)) * (100 - 2 * _PAD), 2)


def _axis(scale: _Scale, fmt: Callable[[float], str], zero: bool = False) -> str:
    parts = []
    for t in _ticks(scale.lo, scale.hi):
        x = scale(t)
        parts.append(f'<line x1="{x}%" x2="{x}%" y1="13" y2="18" stroke="#9aa1ab"/>'
                     f'<text x="{x}%" y="10" text-anchor="middle">{esc(fmt(t))}</text>')
    if zero:
        parts.append(f'<line x1="{scale(0)}%" x2="{scale(0)}%" y1="13" y2="18" stroke="#39404a"/>')
    return f'<svg class="ax" height="19" role="img" aria-hidden="true">{"".join(parts)}</svg>'


def _strip(points: Sequence[tuple[int, Estimate | None]], scale: _Scale, colors: Sequence[str], labels: Sequence[str],
           n_slots: int, grid: Sequence[float], zero: bool, row: ForestRow | None, skip_none: bool = False) -> str:
    """One cell: a whisker and a dot per system, on a faint grid; `zero` draws the no-difference line."""
    h = 8 + 10 * max(1, n_slots)
    parts = [f'<line x1="{scale(t)}%" x2="{scale(t)}%" y1="0" y2="{h}" stroke="#eef0f3"/>' for t in grid]
    if zero:
        parts.append(f'<line x1="{scale(0)}%" x2="{scale(0)}%" y1="0" y2="{h}" stroke="#39404a" stroke-width="1"/>')
    for k, p in points:
        y = 9 + 10 * k  # a system keeps its row in both columns
        if p is None and not zero and skip_none:
            continue
        c = colors[k % len(colors)]
        if zero and (p is None or p.value is None):  # no paired difference here: the values column says why
            continue
        title = f"{labels[k]}: {p.text if p is not None else 'no data'}"
        if p is None or p.value is None:
            parts.append(f'<text x="{_PAD}%" y="{y + 3.5}" font-size="10" fill="#8a8f98"><title>{esc(title)}</title>'
                         f"{esc(labels[k])}: {esc(p.text if p is not None and p.text else 'no data')}</text>")
            continue
        v = verdict(row, p) if row is not None else UNCLEAR
        wc = VERDICT_COLORS[v] if row is not None and v != UNCLEAR else c
        if p.lo is not None and (p.hi is not None or p.hi_open):
            x1 = scale(p.lo)
            x2 = 100 - _PAD if p.hi_open or p.hi is None else scale(p.hi)
            dash = ' stroke-dasharray="3 2"' if p.hi_open else ""
            parts.append(f'<line x1="{x1}%" x2="{x2}%" y1="{y}" y2="{y}" stroke="{wc}" stroke-width="2"{dash}/>')
        cls = (f' class="{v}" stroke-width="2.2"' if row is not None and v != UNCLEAR
               else ' stroke="#fff" stroke-width="1"')
        cx = scale(p.value)
        parts.append(f'<circle cx="{cx}%" cy="{y}" r="4.2" fill="{c}"{cls}><title>{esc(title)}</title></circle>')
        if row is not None and v != UNCLEAR:  # say it in words too: colour alone is not enough
            right = cx < 80
            if right:
                tx = max(cx, 100 - _PAD if p.hi_open or p.hi is None else scale(p.hi))
            else:
                tx = min(cx, scale(p.lo) if p.lo is not None else cx)
            parts.append(f'<text x="{tx}%" y="{y + 3.5}" dx="{7 if right else -7}" font-size="10" font-weight="600" '
                         f'fill="{VERDICT_COLORS[v]}" text-anchor="{"start" if right else "end"}">'
                         f'{"better" if v == WIN else "worse"}</text>')
    return f'<svg height="{h}" role="img" aria-label="{esc(row.label if row else "")}">{"".join(parts)}</svg>'


def system_chips(systems: Sequence[str], colors: Sequence[str], baseline: int | None) -> str:
    """One chip per system in its colour, the baseline tagged (none when there is one system)."""
    return " ".join(
        f'<span class="sys"><i style="background:{colors[k % len(colors)]}"></i>{esc(s)}'
        + ('<span class="tag">baseline</span>' if k == baseline and len(systems) > 1 else "")
        + "</span>"
        for k, s in enumerate(systems)
    )


def forest_html(systems: Sequence[str], colors: Sequence[str], baseline: int | None, rows: Sequence[ForestRow],
                caption: str = "", legend: bool = True) -> str:
    """The forest plot of `rows` (blocks by unit, in order of first appearance), its legend (unless the page
    header has it), scoreboard and caption."""
    if not rows:
        return '<p class="note">No headline metric to draw.</p>'
    has_diff = baseline is not None and any(any(d is not None for d in r.diffs) for r in rows)
    others = [k for k in range(len(systems)) if k != baseline]
    chips = "".join(
        f'<span class="sys"><i style="background:{colors[k % len(colors)]}"></i>{esc(s)}'
        + ('<span class="tag">baseline</span>' if k == baseline else "") + "</span>"
        for k, s in enumerate(systems)
    )
    out = [f'<div class="chips" style="margin:2px 0 8px">{chips}</div>'] if legend else []
    if has_diff and baseline is not None:
        out.append(_scoreboard(systems, colors, baseline, rows))
    def missing(r: ForestRow, k: int) -> bool:
        v = r.values[k] if k < len(r.values) else None
        return v is None or v.value is None

    empty = [k for k in range(len(systems)) if all(missing(r, k) for r in rows)]
    if empty:  # a system with no value anywhere (every sample ineligible, say): one line, not a "no data" per row
        out.append('<p class="note">No value to draw for ' + ", ".join(esc(systems[k]) for k in empty)
                   + ": every headline metric is empty (see its counts below).</p>")
        rows = [ForestRow(r.group, r.label, r.unit, r.better,
                          tuple(None if k in empty else v for k, v in enumerate(r.values)),
                          tuple(None if k in empty else d for k, d in enumerate(r.diffs))) for r in rows]
    grid = [f'<div class="forest{"" if has_diff else " nodiff"}">', '<div class="fh">metric</div>',
            '<div class="fh">value, 95% interval</div>']
    if has_diff and baseline is not None:
        grid.append(f'<div class="fh">difference from {esc(systems[baseline])}, paired 95% interval</div>')
    units: list[str] = []
    for r in rows:
        if r.unit not in units:
            units.append(r.unit)
    for u in units:
        unit = UNITS.get(u, Unit(u, lambda x: f"{x:g}"))
        block = [r for r in rows if r.unit == u]
        vs = _Scale(*_range([p for r in block for p in r.values if p is not None], unit))
        ds = _Scale(*_diff_range([p for r in block for p in r.diffs if p is not None], unit))
        dfmt = _pts if u == "share" else (lambda x: f"{x:+g}" if x else "0") if u == "score01" else unit.fmt
        grid.append(f'<div class="fl"><small>{esc(unit.name)}</small></div><div>{_axis(vs, unit.fmt)}</div>')
        if has_diff:
            grid.append(f"<div>{_axis(ds, dfmt, zero=True)}</div>")
        vgrid, dgrid = _ticks(vs.lo, vs.hi), _ticks(ds.lo, ds.hi)
        group = None
        for r in block:
            if r.group != group:
                group = r.group
                grid.append(f'<div class="fg">{esc(group)}</div>')
            better = {LOWER: "lower is better", HIGHER: "higher is better"}.get(r.better, "")
            grid.append(f'<div class="fl">{esc(r.label)}' + (f"<small>{better}</small>" if better else "") + "</div>")
            grid.append("<div>" + _strip(list(enumerate(r.values)), vs, colors, systems, len(systems), vgrid, False,
                                         None, skip_none=bool(empty)) + "</div>")
            if has_diff:
                pts = [(k, r.diffs[k] if k < len(r.diffs) else None) for k in others]
                grid.append("<div>" + _strip(pts, ds, colors, systems, len(systems), dgrid, True, r) + "</div>")
    grid.append("</div>")
    out.append("".join(grid))
    if caption:
        out.append(f'<p class="note">{esc(caption)}</p>')
    return "<figure>" + "".join(out) + "</figure>"


def _scoreboard(systems: Sequence[str], colors: Sequence[str], baseline: int, rows: Sequence[ForestRow]) -> str:
    """Per system: on how many headline metrics it is better, worse or not clearly different from the baseline."""
    cells = []
    for k in range(len(systems)):
        if k == baseline:
            continue
        tally = {WIN: 0, LOSS: 0, UNCLEAR: 0}
        for r in rows:
            d = r.diffs[k] if k < len(r.diffs) else None
            if d is None or d.value is None or r.better == NEITHER:
                continue
            tally[verdict(r, d)] += 1
        n = sum(tally.values())
        if not n:
            continue
        cells.append(f'<div><span class="dot" style="background:{colors[k % len(colors)]}"></span> '
                     f'<b>{esc(systems[k])}</b> vs {esc(systems[baseline])}: <span class="w">better on '
                     f'{tally[WIN]}</span>, <span class="l">worse on {tally[LOSS]}</span>, <span class="u">not clearly '
                     f'different on {tally[UNCLEAR]}</span> '
                     f"of {n}</div>")
    return f'<div class="score">{"".join(cells)}</div>' if cells else ""
