"""Deterministic inline SVG from matplotlib: Agg-free vector output with a fixed hash salt and no date.

Text stays text (`svg.fonttype: none`), so figure labels are part of the page's text and the SVGs stay small.
"""

from __future__ import annotations

import io
import re
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STYLE: Any = {
    "svg.hashsalt": "duplexeval",  # element ids from content, not from a random salt
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
# One colour per system, the same in every figure and chip of a page (green and red stay free for verdicts).
COLORS = ("#3b6fd4", "#e07b39", "#8e5cc4", "#1f9e89", "#c9487a", "#8c6d31", "#4c9be8", "#5f6b7a")
_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_DECIMALS = re.compile(r"(\d\.\d{2})\d+")  # coordinates to 1/100 pt: invisible, a third of the bytes
_FONT_LIST = re.compile(r"font-family: [^;\"]*")
_NO_ROTATE = re.compile(r' transform="rotate\(-?0 [^)]*\)"')
_PATH_BREAKS = re.compile(r"\s*\n\s*(?=[LMCQz])")


def compact(svg_text: str) -> str:
    """Shrink matplotlib's SVG without changing the picture: shorter numbers, font lists and path breaks."""
    out = _DECIMALS.sub(r"\1", svg_text)
    out = _FONT_LIST.sub("font-family: sans-serif", out)
    out = _NO_ROTATE.sub("", out)
    return _PATH_BREAKS.sub(" ", out)


def _matplotlib() -> ModuleType:
    """matplotlib on the Agg backend, imported on first use (a quarter second that `--help` need not pay)."""
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib


def figure(width_in: float, height_in: float) -> Figure:
    """A new figure (not registered with pyplot, so nothing global is kept)."""
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(width_in, height_in), dpi=100)


def to_svg(fig: Figure) -> str:
    """The figure as an inline <svg> element: no XML prolog, no date, ids stable across runs."""
    matplotlib = _matplotlib()
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buf = io.StringIO()
    with matplotlib.rc_context(STYLE):
        FigureCanvasSVG(fig)
        # the tight box: nothing drawn outside the axes (long tick labels, legends beside them) is cut off
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.04,
                    metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return compact(_PROLOG.sub("", buf.getvalue(), count=1).strip())


def to_png(fig: Figure, path: Any) -> None:
    """Write the figure as a PNG (for `fdb show`) without the software/date text chunks."""
    matplotlib = _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with matplotlib.rc_context(STYLE):
        FigureCanvasAgg(fig).print_png(path, metadata={"Software": None})
