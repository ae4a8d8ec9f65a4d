"""The per-sample part of the FDB report: which samples are worst, one phrase of why, and their sections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec, ItemFailure, make_executor
from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tasks import get_task
from duplexeval.report.page import esc, link, table
from duplexeval.report.timeline import RenderedSample, SampleItem, render_item

WORST_LISTED = 10
HIDDEN_FIELDS = ("subset", "sample_id", "task", "eligible", "reasons")

def anchor(k: int, subset: str, sample_id: str) -> str:
    """The section id of a sample (ids are validated, so they are safe in HTML)."""
    return f"s{k}-{subset}-{sample_id}"


def severity(task: str, row: dict[str, Any] | None) -> tuple[int, float]:
    """Sort key, worst first: each task ranks its eligible samples (`RenderRules.severity`); the rest come last."""
    if row is None or not row.get("eligible"):
        return (9, 0.0)
    return get_task(task).render.severity(row)


def why(task: str, row: dict[str, Any] | None) -> str:
    """One phrase saying what a sample shows (`RenderRules.why` for an eligible, scored one)."""
    if row is None:
        return "counted only"
    if not row.get("eligible"):
        return "ineligible: " + ", ".join(row.get("reasons") or [])
    return get_task(task).render.why(row)


def field_text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "; ".join("[" + ", ".join(f"{x:.3f}" for x in p) + "]" if isinstance(p, list) else str(p) for p in v) or "none"
    return str(v)


def render_all(trees: Sequence[ScoredTree], jobs: int) -> dict[tuple[int, str, str], RenderedSample]:
    """Every sample's timeline, drawn through the executor seam (same bytes whatever `jobs` is)."""
    keys, items = [], []
    for k, t in enumerate(trees):
        for e in t.manifest.samples:
            keys.append((k, e.subset, e.id))
            items.append(SampleItem(str(t.root), e, t.rows.get(e.subset, {}).get(e.id)))
    ex = make_executor(ExecutorSpec(jobs=max(1, min(jobs, len(items) // 50 or 1))))
    out: dict[tuple[int, str, str], RenderedSample] = {}
    try:
        for res in ex.map_ordered(render_item, items):
            if isinstance(res, ItemFailure):
                k, subset, sid = keys[res.index]
                raise InputError(f"{trees[k].root}: sample {subset}/{sid}: cannot draw its timeline: {res.reason}")
            out[keys[res.index]] = res.value
    finally:
        ex.close()
    return out


def sample_sections(trees: Sequence[ScoredTree], subset: str, task: str,
                     drawn: dict[tuple[int, str, str], RenderedSample]) -> tuple[str, str]:
    """(worst-cases list + sample index, the per-sample sections) of one subset, worst first."""
    index_rows, sections, worst = [], [], []
    scored = get_task(task).scored
    for k, t in enumerate(trees):
        entries = t.manifest.by_subset(subset)
        rows = t.rows.get(subset, {})
        order = sorted(entries, key=lambda e: severity(task, rows.get(e.id)))
        for rank, e in enumerate(order):
            row = rows.get(e.id)
            a = anchor(k, subset, e.id)
            desc = why(task, row) if scored else "counted only" if e.eligible else "ineligible: " + ", ".join(e.reasons)
            index_rows.append([esc(t.label), link(a, e.key), esc(desc)])
            if rank < WORST_LISTED and severity(task, row)[0] <= 2 and scored:
                worst.append(f"<li>{esc(t.label)}: {link(a, e.key)}: {esc(desc)}</li>")
            view = drawn[(k, subset, e.id)]
            fields = {"T": e.T, "eligible": e.eligible, "reasons": ", ".join(e.reasons) or "none"}
            fields.update({f: v for f, v in (row or {}).items() if f not in HIDDEN_FIELDS})
            words = " ".join(f"{w}@{s:.2f}" for w, s, _ in view.words[:60]) + (" ..." if len(view.words) > 60 else "")
            body = view.svg if e.eligible else '<p class="note">ineligible capture: no timeline</p>'
            sections.append(
                f'<section class="sample" id="{esc(a)}"><h4>{esc(t.label)}: {esc(e.key)}: '
                f'<span class="{"bad" if severity(task, row)[0] <= 1 else "ok"}">{esc(view.outcome)}</span></h4>'
                f"<p class=\"note\">{esc(desc)}</p><figure>{body}</figure>"
                + '<div class="fields">' + "".join(f"<span><b>{esc(f)}</b> {esc(field_text(v))}</span>" for f, v in fields.items())
                + "</div>"
                + (f'<p class="note">ASR words: {esc(words)}</p>' if view.words else "")
                + "</section>"
            )
    head = ""
    if worst:
        head += "<h4>Worst cases</h4><ul>" + "".join(worst) + "</ul>"
    head += "<details><summary>All samples (worst first)</summary>" + table(["tree", "sample", "what"], index_rows, raw=True) + "</details>"
    return head, "".join(sections)
