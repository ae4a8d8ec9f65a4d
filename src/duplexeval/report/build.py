"""`write_report`: one HTML page from scored trees, or from controller / EOT report files (by their `kind`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_text, read_json
from duplexeval.report.page import document

CONTROLLER_REPORT = "duplexeval.controller.report"
CONTROLLER_COMPARE = "duplexeval.controller.compare"
EOT_REPORT = "duplexeval.eot.report"
EOT_SWEEP = "duplexeval.eot.sweep"
EOT_COMPARE = "duplexeval.eot.compare"
FDB_COMPARE = "duplexeval.fdb.compare"
FILE_KINDS = (CONTROLLER_REPORT, CONTROLLER_COMPARE, EOT_REPORT, EOT_SWEEP, EOT_COMPARE, FDB_COMPARE)


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
            from duplexeval.controller.metrics.report import REPORT_SCHEMA_VERSION as CONTROLLER_SCHEMA

            bodies.append(other_pages.controller_body(p.name, check_kind(obj, kind, p, CONTROLLER_SCHEMA)))
        elif kind == CONTROLLER_COMPARE:
            bodies.append(other_pages.controller_compare_body(p.name, check_kind(obj, kind, p, 2)))
        elif kind == FDB_COMPARE:
            from duplexeval.fdb.compare import COMPARE_SCHEMA_VERSION
            from duplexeval.report.fdb_page import comparison_html

            bodies.append(comparison_html(check_kind(obj, kind, p, COMPARE_SCHEMA_VERSION)))
        elif kind == EOT_SWEEP:
            from duplexeval.eot.sweep_report import SCHEMA_VERSION as SWEEP_SCHEMA
            from duplexeval.report.eot_pages import sweep_body

            summary = check_kind(obj, kind, p, SWEEP_SCHEMA)
            bodies.append(_render(p, kind, partial(sweep_body, _file_label(p), summary, p)))
        elif kind == EOT_COMPARE:
            from duplexeval.eot.compare import SCHEMA_VERSION as EOT_COMPARE_SCHEMA
            from duplexeval.report.eot_pages import compare_body

            cmp = check_kind(obj, kind, p, EOT_COMPARE_SCHEMA)
            bodies.append(_render(p, kind, partial(compare_body, _file_label(p), cmp)))
        else:
            bodies.append(other_pages.eot_body(p.name, check_kind(obj, kind, p)))
    return document("duplexeval report", "".join(bodies), "Files: " + ", ".join(str(p) for p in given))


def _render(path: Path, kind: str, make: Callable[[], str]) -> str:
    """Run one page maker; a field missing or of the wrong type in the file is one line naming the file."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: malformed {kind} file: {what}") from None


def _file_label(p: Path) -> str:
    """The heading of a file's section: `DIR/summary.json` (every sweep's file has the same name), else the name."""
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def write_report(paths: Sequence[str | Path], out: str | Path, jobs: int = 1) -> Path:
    """Write the page atomically; returns its path. `jobs` processes draw the FDB timelines (same bytes)."""
    out = Path(out)
    html = render_html(paths, jobs)
    try:
        atomic_write_text(out, html)
    except OSError as exc:
        raise InputError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return out
