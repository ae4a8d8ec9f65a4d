"""The per-sample part of the FDB report: how bad a sample is, one phrase of why, its verdict class, and the
explorer cards (one per sample key, every tree's reading side by side, worst first)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tree import SampleEntry, subset_order
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report.explorer import Item, Track, Verdict
from duplexeval.report.fdb_evidence import FdbEvidence

HIDDEN_FIELDS = ("subset", "sample_id", "task", "eligible", "reasons", "vad_segments")
INPUT_COLOR = "#b0773c"


def anchor(k: int, subset: str, sample_id: str) -> str:
    """The anchor of one tree's reading of a sample (ids are validated, so they are safe in HTML)."""
    return f"s{k}-{subset}-{sample_id}"


def severity(task: str, row: SampleRow[Any] | None) -> tuple[int, float]:
    """Sort key, worst first: each task ranks its eligible samples (`RenderRules.severity`); the rest come last."""
    if row is None or not row.eligible or row.row is None:
        return (9, 0.0)
    return get_task(task).render.severity(row.row)


def why(task: str, row: SampleRow[Any] | None) -> str:
    """One phrase saying what a sample shows (`RenderRules.why` for an eligible, scored one)."""
    if row is None:
        return "counted only"
    if not row.eligible or row.row is None:
        return "ineligible: " + ", ".join(row.reasons)
    return get_task(task).render.why(row.row)


def outcome_of(task: str, entry: SampleEntry, row: SampleRow[Any] | None) -> str:
    """The filter value: the task's outcome of the row (`RenderRules.outcome_key`), ineligible, or counted_only."""
    if not entry.eligible or (row is not None and not row.eligible):
        return "ineligible"
    if not get_task(task).scored or row is None or row.row is None:
        return "counted_only"
    return get_task(task).render.outcome_key(row.row)


def verdict_class(task: str, outcome: str) -> str:
    """bad (the behaviour the metric counts against: `RenderRules.bad`), ok, or neutral (not scored: ineligible,
    counted only, or one of the task's `RenderRules.neutral` outcomes such as not exercised)."""
    rules = get_task(task).render
    if outcome in ("ineligible", "counted_only", "unknown") or outcome in rules.neutral:
        return "neutral"
    if outcome in rules.bad:
        return "bad"
    return "ok"


def field_label(name: str) -> str:
    """`latency_s` -> `latency`; the unit goes with the value."""
    return (name[:-2] if name.endswith("_s") and len(name) > 2 else name).replace("_", " ")


def field_text(name: str, v: Any) -> str:
    """A row value as a reader wants it: yes / no, seconds with their unit, spans as a-b s, and no Python literals."""
    seconds = name.endswith("_s") or name in ("E", "S", "R", "T")
    if name == "outcome" and isinstance(v, str):
        return v.replace("_", " ")
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        return f"{v:.2f} s" if seconds else f"{v:.4g}"
    if isinstance(v, int):
        return f"{v} s" if seconds else str(v)
    if isinstance(v, (list, tuple)):
        if not v:
            return "none"
        if all(isinstance(p, (list, tuple)) and len(p) == 2 for p in v):
            return "; ".join(f"{float(a):.2f}–{float(b):.2f} s" for a, b in v)
        return ", ".join(field_text(name, x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {field_text(k, x)}" for k, x in v.items()) or "none"
    return str(v)


@dataclass(frozen=True)
class Lineup:
    """The systems on the page: their labels, colours and the baseline's index."""

    labels: tuple[str, ...]
    colors: tuple[str, ...]
    baseline: int | None

    def color(self, k: int) -> str:
        return self.colors[k % len(self.colors)]


def _same_input(entries: Sequence[SampleEntry]) -> bool:
    first = entries[0]
    ann = first.annotation
    return all(e.T == first.T and (not ann or e.files.get(ann) == first.files.get(ann)) for e in entries)


def fdb_items(trees: Sequence[ScoredTree], lineup: Lineup, ev: FdbEvidence,
              audio_ref: dict[tuple[Any, ...], str]) -> list[Item]:
    """One card per sample key (per tree when the trees' inputs differ there), worst first within each subset.

    `audio_ref` maps ("in", subset, id) and ("out", k, subset, id) to the player's source ("#element-id" or a URL).
    """
    by_key: dict[tuple[str, str], list[tuple[int, SampleEntry]]] = {}
    for k, t in enumerate(trees):
        for e in t.manifest.samples:
            by_key.setdefault((e.subset, e.id), []).append((k, e))
    groups: list[tuple[str, str, list[tuple[int, SampleEntry]], bool]] = []
    for (subset, sid), members in by_key.items():
        if _same_input([e for _, e in members]):
            groups.append((subset, sid, members, False))
        else:  # the same key on other inputs (trees of different datasets): one card per tree
            groups.extend((subset, sid, [m], True) for m in members)
    items: list[tuple[tuple[Any, ...], Item]] = []
    order_of = subset_order()
    for subset, sid, members, split in groups:
        task = members[0][1].task
        scored = get_task(task).scored
        verdicts, tracks, worst = [], [], (99, 0.0)
        key = (subset, sid)
        if key in ev.inputs:
            inp = ev.inputs[key]
            tracks.append(Track(-1, "user (input)", INPUT_COLOR, inp.peaks, audio=audio_ref.get(("in", subset, sid))))
        marks: list[tuple[str, float]] = []
        spans: list[tuple[str, float, float]] = []
        said, names, cols = [], [], []
        for k, e in members:
            row = trees[k].rows.get(subset, {}).get(sid)
            out = outcome_of(task, e, row)
            desc = why(task, row) if scored else "counted only" if e.eligible else "ineligible: " + ", ".join(e.reasons)
            verdicts.append(Verdict(k, out, verdict_class(task, out), desc, anchor(k, subset, sid)))
            worst = min(worst, severity(task, row))
            got = ev.outputs[(k, subset, sid)]
            marks = marks or list(got.marks)
            spans = spans or list(got.spans)
            note = "" if got.peaks else "no output.wav" + (" (ineligible capture)" if not e.eligible else "")
            tracks.append(Track(k, lineup.labels[k], lineup.color(k), got.peaks, got.vad, got.words,
                                audio_ref.get(("out", k, subset, sid)) if got.peaks else None, note))
            said.append((lineup.labels[k] + " said", " ".join(w for w, _, _ in got.words)))
            names.append(lineup.labels[k])
            fields = {"T": e.T, "eligible": e.eligible, "ineligible because": ", ".join(e.reasons) or None}
            fields.update({f: v for f, v in (row.to_json() if row else {}).items() if f not in HIDDEN_FIELDS})
            cols.append(fields)
        order: list[str] = []
        for c in cols:
            order += [f for f in c if f not in order]
        rows = [(field_label(f), [field_text(f, c.get(f)) if f in c else "—" for c in cols]) for f in order]
        rows = [r for r in rows if any(v != "—" for v in r[1])]
        card_id = f"x{members[0][0]}-{subset}-{sid}" if split else f"x-{subset}-{sid}"
        item = Item(card_id, subset, f"{subset}/{sid}", verdicts, members[0][1].T, tracks, marks, spans, said,
                    field_head=names, field_rows=rows, text=" ".join(s for _, s in said))
        items.append(((order_of.index(subset), worst, _natural(sid)), item))
    items.sort(key=lambda x: x[0])
    return [i for _, i in items]


def _natural(sid: str) -> tuple[int, int, str]:
    return (0, int(sid), "") if sid.isdigit() else (1, 0, sid)


def worst_cases(items: Sequence[Item], labels: Sequence[str], limit: int = 10) -> list[tuple[str, str, str]]:
    """(label, anchor, why) of the first `limit` problem readings, in the cards' order."""
    out: list[tuple[str, str, str]] = []
    for i in items:
        for v in i.verdicts:
            if v.cls == "bad" and len(out) < limit:
                out.append((labels[v.sys], v.anchor, f"{i.title}: {v.why}"))
    return out
