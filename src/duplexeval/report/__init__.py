"""HTML reports and pictures, made from artifact files only (trees, controller and EOT reports).

`report.build.write_report(paths, out)` picks the page by what it is given: scored FDB trees (folders), or
controller / EOT report JSON files (by their `kind`). Pages are self-contained: inline CSS, inline
SVG figures drawn with matplotlib (Agg), no JavaScript and no network; the same inputs give the same bytes.
The package itself imports nothing, so `duplexeval --help` (which loads `report.report_cli`) does not load the page
builders.
"""
