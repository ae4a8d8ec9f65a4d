"""`write_report`: one HTML page from scored trees, or from controller / EOT report files (by their `kind`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_text, read_json
from duplexeval.report.page import document

CONTROLLER_REPORT = "duplexeval.controller.report"
CONTROLLER_COMPARE = "duplexeval.controller.compare"
EOT_REPORT = "duplexeval.eot.report"
FDB_COMPARE = "duplexeval.fdb.compare"
FILE_KINDS = (CONTROLLER_REPORT, CONTROLLER_COMPARE, EOT_REPORT, FDB_COMPARE)


def render_html(paths: Sequence[str | Path], jobs: int = 1) -> str:
    """The page for `paths`: all folders (FDB trees) or all report files; a mix is refused."""
    from duplexeval.artifacts import check_kind

    if not paths:
        raise InputError("report: give at least one tree or report file")
    given = [Path(p) for p in paths]
    dirs = [p for p in given if p.is_dir()]
    if dirs and len(dirs) != len(given):
        raise InputError("report: give either scored trees (folders) or report files, not both")
    if dirs:
        from duplexeval.fdb.results import load_scored
        from duplexeval.report.fdb_page import fdb_body

        trees = [load_scored(p) for p in given]
        labels = [t.label for t in trees]
        if len(set(labels)) != len(labels):
            raise InputError(f"report: two trees have the same folder name ({', '.join(labels)}); rename one")
        title = "duplexeval report: Full-Duplex-Bench v1.0 (unified rules)"
        return document(title, fdb_body(trees, jobs), "Trees: " + ", ".join(str(t.root) for t in trees))
    from duplexeval.report import other_pages

    bodies = []
    for p in given:
        if not p.is_file():
            raise InputError(f"{p}: not found (expected a scored tree folder or a report JSON file)")
        obj = read_json(p)
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if not isinstance(kind, str) or kind not in FILE_KINDS:
            check_kind(obj, CONTROLLER_REPORT if kind is None else f"one of {', '.join(FILE_KINDS)}", p)
            raise AssertionError("unreachable: check_kind refused the file")
        if kind == CONTROLLER_REPORT:
            bodies.append(other_pages.controller_body(p.name, check_kind(obj, kind, p, 2)))
        elif kind == CONTROLLER_COMPARE:
            bodies.append(other_pages.controller_compare_body(p.name, check_kind(obj, kind, p, 2)))
        elif kind == FDB_COMPARE:
            from duplexeval.fdb.compare import COMPARE_SCHEMA_VERSION
            from duplexeval.report.fdb_page import comparison_html

            bodies.append(comparison_html(check_kind(obj, kind, p, COMPARE_SCHEMA_VERSION)))
        else:
            bodies.append(other_pages.eot_body(p.name, check_kind(obj, kind, p)))
    return document("duplexeval report", "".join(bodies), "Files: " + ", ".join(str(p) for p in given))


def write_report(paths: Sequence[str | Path], out: str | Path, jobs: int = 1) -> Path:
    """Write the page atomically; returns its path. `jobs` processes draw the FDB timelines (same bytes)."""
    out = Path(out)
    html = render_html(paths, jobs)
    try:
        atomic_write_text(out, html)
    except OSError as exc:
        raise InputError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return out
