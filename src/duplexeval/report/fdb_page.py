"""The FDB report body: per subset metric tables (with the reference column), the figures, the paired
comparison when there are two or more trees, and one section per sample, worst cases first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.errors import DuplexEvalError
from duplexeval.fdb.compare import compare_trees
from duplexeval.fdb.compare_cli import metric_cells, pairing_line
from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tasks import get_task, task_of
from duplexeval.fdb.tree import SUBSETS
from duplexeval.fdb.unified.report import load_reference, metric_rows
from duplexeval.report.page import esc, link, signature_line, table
from duplexeval.report.samples import render_all, sample_sections
from duplexeval.report.timeline import LEGEND


def _num(x: Any, d: int = 3) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def _metrics_table(trees: Sequence[ScoredTree], subset: str) -> str:
    """Rows = metrics (latencies as median and p90), one column per tree: value, interval, count and bounds."""
    names: list[str] = []
    for t in trees:
        for n in (t.unified["subsets"].get(subset) or {}).get("metrics", {}):
            if n not in names:
                names.append(n)
    rows = []
    rules = task_of(subset).unified
    kinds = rules.metric_kinds if rules is not None else {}
    for name in names:
        per_tree = []
        for t in trees:
            m = ((t.unified["subsets"].get(subset) or {}).get("metrics") or {}).get(name)
            per_tree.append(metric_rows(name, m, kinds.get(name)) if m else [])
        for i in range(max(len(r) for r in per_tree)):
            cells = [esc(next(r[i][0] for r in per_tree if len(r) > i))]
            for r in per_tree:
                if len(r) <= i:
                    cells.append("—")
                    continue
                _, value, iv, count, bounds = r[i]
                extra = f"{esc(iv)} ({esc(count)})" if iv else f"({esc(count)})"
                if bounds:
                    extra += f"<br>bounds {esc(bounds)}"
                cells.append(f'<b>{esc(value)}</b> <span class="note">{extra}</span>')
            rows.append(cells)
    heads = ["metric", *(f"{t.label}: value [95% interval] (count)" for t in trees)]
    return table(heads, rows, raw=True)


def _count_text(v: Any) -> str:
    if isinstance(v, dict):  # ineligible reasons
        return ", ".join(f"{a} {n}" for a, n in v.items()) or "none"
    if isinstance(v, float):
        return _num(v)
    return "—" if v is None else str(v)


def _counts_table(trees: Sequence[ScoredTree], subset: str) -> str:
    keys: list[str] = []
    for t in trees:
        for k in ((t.unified["subsets"].get(subset) or {}).get("counts") or {}):
            if k not in keys and k != "ineligible_reasons":
                keys.append(k)
    rows = []
    for k in [*keys, "ineligible_reasons", "coverage", "min_observable_s"]:
        cells = [k]
        for t in trees:
            b = t.unified["subsets"].get(subset) or {}
            v = b.get(k) if k in ("coverage", "min_observable_s") else (b.get("counts") or {}).get(k)
            cells.append(_count_text(v))
        rows.append(cells)
    return table(["count", *(t.label for t in trees)], rows)


def _reference(trees: Sequence[ScoredTree], subset: str) -> str:
    """The official numbers from summary.json (value ± std (n)), for each tree whose summary has the same input hashes."""
    refs = [load_reference(t.root, t.manifest_sha256, t.asr_sha256) for t in trees]
    notes = "".join(f'<p class="note">{esc(t.label)}: {esc(r.message)}</p>' for t, r in zip(trees, refs) if r.subsets is None)
    blocks = [(r.subsets or {}).get(subset) for r in refs]
    blocks = [b if isinstance(b, dict) else None for b in blocks]
    names: list[str] = []
    for b in blocks:
        for n in (b or {}).get("metrics") or {}:
            if n not in names:
                names.append(n)
    if not names:
        return notes
    rows = []
    for n in names:
        cells, seen = [n], []
        for b in blocks:
            m = ((b or {}).get("metrics") or {}).get(n)
            if not isinstance(m, dict):
                cells.append("—")
                continue
            std = "" if m.get("std") is None else f" ± {_num(m['std'])}"
            cells.append(f"{_num(m.get('value'))}{std} (n={m.get('n', '?')})")
            if m.get("note") and m["note"] not in seen:
                seen.append(str(m["note"]))
        rows.append([*cells, " / ".join(seen)])
    heads = ["official metric"]
    for t, b in zip(trees, blocks):
        judge = ((b or {}).get("judge") or {}).get("label")
        heads.append(f"{t.label}" + (f" ({b.get('n_evaluated', '?')} evaluated" + (f"; judge: {judge})" if judge else ")") if b else ""))
    heads.append("note")
    return "<h4>Reference column: official rules (summary.json, same manifest.json and asr.json)</h4>" + table(heads, rows) + notes


def _signatures(trees: Sequence[ScoredTree]) -> str:
    """The signature line(s) under a subset: once when every tree has the same one."""
    lines = [t.unified["signature"]["compact"] for t in trees]
    if len(set(lines)) == 1:
        return signature_line(lines[0] + ("" if len(trees) == 1 else "  (every tree)"))
    return "".join(signature_line(f"{t.label}: {c}") for t, c in zip(trees, lines))


def _figures(trees: Sequence[ScoredTree], subset: str, task: str) -> str:
    """The task's summary figures of one subset (`RenderRules.figures`), from each tree's rows."""
    out = get_task(task).render.figures([(t.label, list(t.rows.get(subset, {}).values())) for t in trees])
    return "".join(f"<figure>{s}</figure>" for s in out)


def _comparison(trees: Sequence[ScoredTree]) -> str:
    try:
        comp = compare_trees(list(trees)).to_json()
    except DuplexEvalError as exc:
        return f"<h2 id=\"compare\">Paired comparison</h2><p class=\"note\">Not compared: {esc(exc)}</p>"
    return comparison_html(comp)


def comparison_html(comp: dict[str, Any]) -> str:
    """A compare.json object (made here from the trees, or read from `fdb compare --out`) as tables."""
    out = ['<h2 id="compare">Paired comparison (B - A, every tree against the first)</h2>']
    out += [f'<p class="note">note: {esc(n)}</p>' for n in comp["notes"]]
    for c in comp["comparisons"]:
        a, b = comp["trees"][c["a"]]["label"], comp["trees"][c["b"]]["label"]
        out.append(f"<h3>A = {esc(a)}, B = {esc(b)}</h3>")
        for subset, block in c["subsets"].items():
            out.append(f"<h4>{esc(subset)}</h4><p class=\"note\">{esc(pairing_line(block))}</p>")
            rows = [[n + (" median" if m["kind"] == "median" else ""), *metric_cells(m)] for n, m in block["metrics"].items()]
            out.append(table(["metric", "A", "B", "B - A", "95% interval", "pairs", "McNemar A-only/B-only"], rows))
    out.append(signature_line(comp["signature"]["compact"]))
    return "".join(out)


def fdb_body(trees: Sequence[ScoredTree], jobs: int = 1) -> str:
    """The whole FDB report body; `jobs` worker processes draw the timelines."""
    subsets = [s for s in SUBSETS if any(t.manifest.by_subset(s) for t in trees)]
    toc = "".join(link(f"subset-{s}", s) for s in subsets) + (link("compare", "paired comparison") if len(trees) > 1 else "")
    parts = [f'<nav class="toc">{toc}</nav>']
    parts.append(table(["tree", "system", "dataset", "samples", "signature"], [
        [t.label, str((t.manifest.extra.get("system") or {}).get("name", "?")), t.manifest.dataset_name,
         str(len(t.manifest.samples)), t.unified["signature"]["compact"]] for t in trees]))
    drawn = render_all(trees, jobs)
    samples_html = []
    for subset in subsets:
        task = SUBSETS[subset].task
        parts.append(f'<h2 id="subset-{esc(subset)}">{esc(subset)} ({esc(task)})</h2>')
        parts.append(_counts_table(trees, subset))
        if get_task(task).scored:
            parts.append(_metrics_table(trees, subset))
        else:
            parts.append(f'<p class="note">Counted only: no unified metric; {esc(get_task(task).render.counted_note)}.</p>')
        parts.append(_reference(trees, subset))
        parts.append(_figures(trees, subset, task))
        head, sections = sample_sections(trees, subset, task, drawn)
        parts.append(head)
        samples_html.append(f'<h3 id="samples-{esc(subset)}">{esc(subset)}: samples, worst first</h3>'
                            f'<p class="note">{esc(LEGEND)}</p>{sections}')
        parts.append(_signatures(trees))
    if len(trees) > 1:
        parts.append(_comparison(trees))
    parts.append('<h2 id="samples">Per-sample evidence</h2>' + "".join(samples_html))
    parts.append('<p class="note">n/r = not reached: the quantile falls on a sample that never responded (or never '
                 "stopped). Shares are over eligible samples (interruption: exercised); selected bounds count unknown "
                 "outcomes as no, then yes. Intervals cover dataset sampling only.</p>")
    return "".join(parts)
