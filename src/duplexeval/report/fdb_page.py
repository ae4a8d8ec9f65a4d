"""The FDB v1.0 report body: per subset metric tables (with the reference column), the figures, the paired
comparison when there are two or more trees, and one section per sample, worst cases first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tree import BACKCHANNEL, PAUSE_HANDLING, SUBSET_ORDER, SUBSETS, TURN_TAKING, USER_INTERRUPTION
from duplexeval.fdb.unified.report import load_reference, metric_rows
from duplexeval.report import figures
from duplexeval.report.page import esc, link, signature_line, table
from duplexeval.report.timeline import TimelineSVG, load_view

WORST_LISTED = 10


def anchor(k: int, subset: str, sample_id: str) -> str:
    """The section id of a sample (ids are validated, so they are safe in HTML)."""
    return f"s{k}-{subset}-{sample_id}"


def _num(x: Any, d: int = 3) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def severity(task: str, row: dict[str, Any] | None) -> tuple[int, float]:
    """Sort key, worst first: early starts, intrusions, speaking through, no response, then the longest latencies."""
    if row is None or not row.get("eligible"):
        return (9, 0.0)
    if task == PAUSE_HANDLING:
        return (0, -float(row["intrusion_s"])) if row["pause_intrusion"] else (5, 0.0)
    if task == TURN_TAKING:
        if row["outcome"] == "early_start":
            return (0, -float(row["first_word_s"] or 0) + float(row["E"]))
        if row["outcome"] == "no_response":
            return (1, 0.0)
        return (2, -float(row["latency_s"]))
    if task == USER_INTERRUPTION:
        rank = {"speaking_at_end": 0, "no_response": 1, "response": 2, "not_exercised": 4}[row["outcome"]]
        stop = row.get("stop_s")
        return (rank, -(float(stop) if stop is not None else 1e9) - float(row.get("latency_s") or 0))
    return (8, 0.0)


def why(task: str, row: dict[str, Any] | None) -> str:
    """One phrase saying what a sample shows."""
    if row is None:
        return "counted only"
    if not row.get("eligible"):
        return "ineligible: " + ", ".join(row.get("reasons") or [])
    if task == PAUSE_HANDLING:
        if row["pause_intrusion"]:
            return f"intrusion: {row['intrusion_words']} onset(s), {row['intrusion_s']:.2f} s of {row['pause_s']:.2f} s pause covered"
        return "no word after the first pause"
    if task == TURN_TAKING:
        if row["outcome"] == "early_start":
            return f"early start: first word {row['E'] - row['first_word_s']:.2f} s before E"
        if row["outcome"] == "response":
            return f"response after {row['latency_s']:.2f} s"
        return "no response"
    stop = "no observed stop" if row.get("stop_s") is None else f"stop after {row['stop_s']:.2f} s"
    if row["outcome"] == "not_exercised":
        return "not exercised: silent at S"
    if row["outcome"] == "response":
        return f"{stop}; response {row['latency_s']:.2f} s after R"
    return f"{row['outcome']}; {stop}"


def _metrics_table(trees: Sequence[ScoredTree], subset: str) -> str:
    names: list[str] = []
    for t in trees:
        for n in (t.unified["subsets"].get(subset) or {}).get("metrics", {}):
            if n not in names:
                names.append(n)
    rows = []
    for name in names:
        per_tree = []
        for t in trees:
            m = ((t.unified["subsets"].get(subset) or {}).get("metrics") or {}).get(name)
            per_tree.append(metric_rows(name, m) if m else [])
        width = max(len(r) for r in per_tree)
        for i in range(width):
            label = next(r[i][0] for r in per_tree if len(r) > i)
            cells = [label]
            for r in per_tree:
                if len(r) > i:
                    _, value, iv, count, bounds = r[i]
                    cells.append(f"{value} {iv} ({count})" + (f"; bounds {bounds}" if bounds else ""))
                else:
                    cells.append("—")
            rows.append(cells)
    return table(["metric", *(f"{t.label}: value [95% interval] (count); selected bounds" for t in trees)], rows)


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
            cells.append(", ".join(f"{a} {n}" for a, n in v.items()) or "none" if isinstance(v, dict) else
                         _num(v) if isinstance(v, float) else "—" if v is None else str(v))
        rows.append(cells)
    return table(["count", *(t.label for t in trees)], rows)


def _reference(trees: Sequence[ScoredTree], subset: str) -> str:
    """The official numbers from summary.json, for each tree whose summary was made from the same inputs."""
    parts = []
    for t in trees:
        ref = load_reference(t.root, t.manifest_sha256, t.asr_sha256)
        if ref.subsets is None:
            parts.append(f'<p class="note">{esc(t.label)}: {esc(ref.message)}</p>')
            continue
        block = ref.subsets.get(subset)
        if not isinstance(block, dict):
            continue
        judge = (block.get("judge") or {}).get("label")
        rows = [[n, _num(m.get("value")), _num(m.get("std")), str(m.get("n", "")), str(m.get("note") or "")]
                for n, m in (block.get("metrics") or {}).items() if isinstance(m, dict)]
        head = f"<h4>Reference column ({esc(t.label)}): official rules, summary.json, {block.get('n_evaluated', '?')} evaluated"
        head += f"; judge: {esc(judge)}</h4>" if judge else "</h4>"
        parts.append(head + table(["official metric", "value", "std", "n", "note"], rows))
    return "".join(parts)


def _figures(trees: Sequence[ScoredTree], subset: str, task: str) -> str:
    out = []
    if task == TURN_TAKING:
        series = [(t.label, [r["latency_s"] for r in t.rows.get(subset, {}).values() if r["eligible"]]) for t in trees]
        out.append(figures.response_curve("turn-taking, eligible samples", series))
    if task == USER_INTERRUPTION:
        ex = [(t.label, [r for r in t.rows.get(subset, {}).values() if r["eligible"] and r["outcome"] != "not_exercised"])
              for t in trees]
        out.append(figures.response_curve("interruption, exercised samples", [(lb, [r["latency_s"] for r in rs]) for lb, rs in ex]))
        bars = []
        for t in trees:
            rows = list(t.rows.get(subset, {}).values())
            counts = {"ineligible": sum(1 for r in rows if not r["eligible"])}
            for r in rows:
                if r["eligible"]:
                    counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
            bars.append((t.label, counts))
        out.append(figures.outcome_bars(bars))
        out.append(figures.stop_latencies([(lb, [r["stop_s"] for r in rs]) for lb, rs in ex]))
    return "".join(f"<figure>{s}</figure>" for s in out)


def _field(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "; ".join("[" + ", ".join(f"{x:.3f}" for x in p) + "]" if isinstance(p, list) else str(p) for p in v) or "none"
    return str(v)


def _sample_sections(trees: Sequence[ScoredTree], subset: str, task: str, renderer: TimelineSVG) -> tuple[str, str]:
    """(worst-cases list + sample index, the per-sample sections) of one subset, worst first."""
    index_rows, sections, worst = [], [], []
    for k, t in enumerate(trees):
        entries = t.manifest.by_subset(subset)
        rows = t.rows.get(subset, {})
        order = sorted(entries, key=lambda e: severity(task, rows.get(e.id)))
        for rank, e in enumerate(order):
            row = rows.get(e.id)
            a = anchor(k, subset, e.id)
            desc = why(task, row) if task != BACKCHANNEL else ("counted only" if e.eligible else "ineligible: " + ", ".join(e.reasons))
            index_rows.append([esc(t.label), link(a, e.key), esc(desc)])
            if rank < WORST_LISTED and severity(task, row)[0] <= 2 and task != BACKCHANNEL:
                worst.append(f"<li>{esc(t.label)}: {link(a, e.key)}: {esc(desc)}</li>")
            view = load_view(t.root, e, row)
            fields = {"T": e.T, "eligible": e.eligible, "reasons": ", ".join(e.reasons) or "none"}
            fields.update({f: v for f, v in (row or {}).items() if f not in ("subset", "sample_id", "task", "eligible", "reasons")})
            words = " ".join(f"{w}@{s:.2f}" for w, s, _ in view.words[:60]) + (" ..." if len(view.words) > 60 else "")
            body = renderer.render(view) if e.eligible else '<p class="note">ineligible capture: no timeline</p>'
            sections.append(
                f'<section class="sample" id="{esc(a)}"><h4>{esc(t.label)}: {esc(e.key)}: '
                f'<span class="{"bad" if severity(task, row)[0] <= 1 else "ok"}">{esc(view.outcome)}</span></h4>'
                f"<p class=\"note\">{esc(desc)}</p><figure>{body}</figure>"
                + table(["field", "value"], [[f, _field(v)] for f, v in fields.items()])
                + (f'<p class="note">ASR words: {esc(words)}</p>' if view.words else "")
                + "</section>"
            )
    head = ""
    if worst:
        head += "<h4>Worst cases</h4><ul>" + "".join(worst) + "</ul>"
    head += "<details><summary>All samples (worst first)</summary>" + table(["tree", "sample", "what"], index_rows, raw=True) + "</details>"
    return head, "".join(sections)


def _comparison(trees: Sequence[ScoredTree]) -> str:
    from duplexeval.errors import DuplexEvalError
    from duplexeval.fdb.compare import compare_trees
    from duplexeval.fdb.compare_cli import metric_cells, pairing_line

    try:
        comp = compare_trees(list(trees)).to_json()
    except DuplexEvalError as exc:
        return f"<h2 id=\"compare\">Paired comparison</h2><p class=\"note\">Not compared: {esc(exc)}</p>"
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


def fdb_body(trees: Sequence[ScoredTree]) -> str:
    """The whole FDB report body."""
    subsets = [s for s in SUBSET_ORDER if any(t.manifest.by_subset(s) for t in trees)]
    toc = "".join(link(f"subset-{s}", s) for s in subsets) + (link("compare", "paired comparison") if len(trees) > 1 else "")
    parts = [f'<nav class="toc">{toc}</nav>']
    parts.append(table(["tree", "system", "dataset", "samples", "signature"], [
        [t.label, str((t.manifest.extra.get("system") or {}).get("name", "?")), t.manifest.dataset_name,
         str(len(t.manifest.samples)), t.unified["signature"]["compact"]] for t in trees]))
    renderer = TimelineSVG()
    samples_html = []
    for subset in subsets:
        task = SUBSETS[subset].task
        parts.append(f'<h2 id="subset-{esc(subset)}">{esc(subset)} ({esc(task)})</h2>')
        parts.append(_counts_table(trees, subset))
        if task != BACKCHANNEL:
            parts.append(_metrics_table(trees, subset))
        else:
            parts.append('<p class="note">Counted only: no unified metric; the official frequency and JSD are the reference.</p>')
        parts.append(_reference(trees, subset))
        parts.append(_figures(trees, subset, task))
        head, sections = _sample_sections(trees, subset, task, renderer)
        parts.append(head)
        samples_html.append(f'<h3 id="samples-{esc(subset)}">{esc(subset)}: samples, worst first</h3>{sections}')
        for t in trees:
            parts.append(signature_line(f"{t.label}: {t.unified['signature']['compact']}"))
    if len(trees) > 1:
        parts.append(_comparison(trees))
    parts.append('<h2 id="samples">Per-sample evidence</h2>' + "".join(samples_html))
    parts.append('<p class="note">n/r = not reached: the quantile falls on a sample that never responded (or never '
                 "stopped). Shares are over eligible samples (interruption: exercised); selected bounds count unknown "
                 "outcomes as no, then yes. Intervals cover dataset sampling only.</p>")
    return "".join(parts)
