"""HTML reports and pictures, made from artifact files only (trees, controller and EOT reports).

`write_report(paths, out)` picks the page by what it is given: scored FDB trees (folders), or
controller / EOT report JSON files (by their `kind`). Pages are self-contained: inline CSS, inline
SVG figures drawn with matplotlib (Agg), no JavaScript and no network; the same inputs give the same bytes.
"""

from __future__ import annotations

from duplexeval.report.build import write_report

__all__ = ["write_report"]
