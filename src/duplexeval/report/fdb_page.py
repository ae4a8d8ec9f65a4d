"""The FDB report body: the forest plot of the headline metrics first (every system against the baseline),
then per subset its figures and, folded, every number (counts, metrics, reference column, paired tables), then
the sample explorer and the signatures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval.errors import DuplexEvalError
from duplexeval.fdb.compare_stage import compare
from duplexeval.fdb.compare_text import metric_cells, pairing_line
from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tasks import get_task, task_of
from duplexeval.fdb.tree import SUBSETS
from duplexeval.fdb.unified.report import load_reference, metric_rows
from duplexeval.jsontypes import JsonObject
from duplexeval.report.explorer import Item, explorer_html
from duplexeval.report.forest import HIGHER, LOWER, NEITHER, Estimate, ForestRow, forest_html
from duplexeval.report.page import esc, link, signature_line, table
from duplexeval.report.samples import Lineup, worst_cases
from duplexeval.report.svg import COLORS

BETTER = {"lower": LOWER, "higher": HIGHER, "neither": NEITHER}


def headline() -> list[tuple[str, str, str, int]]:
    """(subset, metric, label, better) of the forest plot, in its order: each subset's task's `headline`."""
    return [(subset, h.metric, h.label, BETTER[h.better]) for subset in SUBSETS for h in task_of(subset).headline]


def group_name(subset: str) -> str:
    """The subset's heading for readers (`SubsetInfo.title`)."""
    return SUBSETS[subset].heading if subset in SUBSETS else subset


def _num(x: Any, d: int = 3) -> str:
    return "—" if x is None else f"{x:.{d}f}"


def _value(m: JsonObject | None) -> Estimate | None:
    """A unified metric (share or latency) as a forest point; a latency's open upper end is not reached."""
    if not isinstance(m, dict):
        return None
    if "median" in m:
        n = m.get("n") or 0
        if m.get("median") is None:
            return Estimate(None, text=f"not reached (n={n})" if n else "no data (n=0)")
        lo, hi = (m.get("median_interval") or [None, None])[:2]
        iv = f" [{_num(lo, 2)}, {'n/r' if hi is None else _num(hi, 2)}]" if lo is not None else ""
        return Estimate(float(m["median"]), lo, hi, f"{m['median']:.2f} s{iv} (n={n})",
                        hi_open=lo is not None and hi is None)
    if m.get("value") is None:
        return Estimate(None, text=f"no data (0/{m.get('n', 0)})")
    lo, hi = (m.get("interval") or [None, None])[:2]
    count = f" ({m['count']}/{m['n']})" if "count" in m else ""
    return Estimate(float(m["value"]), lo, hi, f"{m['value'] * 100:.0f}% [{_num(lo, 2)}, {_num(hi, 2)}]{count}")


def _diff(m: JsonObject | None, unit: str) -> Estimate | None:
    """A compared metric's B - A with its paired interval (null endpoints: not reached)."""
    if not isinstance(m, dict):
        return None
    if m.get("diff") is None:
        return Estimate(None, text=f"no difference: {m.get('reason') or 'no pairs'}")
    iv = m.get("interval") or [None, None]
    lo, hi = iv[0], iv[1]
    scale, u = (100, " pts") if unit == "share" else (1, " s")
    txt = (f"{m['diff'] * scale:+.1f}{u} [" + ", ".join("n/r" if x is None else f"{x * scale:+.1f}" for x in (lo, hi))
           + f"], {m['n_pairs']} pairs")
    if m.get("mcnemar"):
        txt += f", McNemar p={m['mcnemar']['p_value']:.3g}"
    return Estimate(float(m["diff"]), lo, hi, txt, hi_open=lo is not None and hi is None)


def forest_rows(trees: Sequence[ScoredTree], comp: JsonObject | None, baseline: int) -> list[ForestRow]:
    """Every headline metric some tree has, with each tree's value and its paired difference from the baseline."""
    by_b = {c["b"]: c for c in (comp or {}).get("comparisons", [])}
    rows = []
    for subset, metric, label, better in headline():
        vals = [_value(((t.unified["subsets"].get(subset) or {}).get("metrics") or {}).get(metric)) for t in trees]
        if all(v is None for v in vals):
            continue
        unit = "s" if metric.endswith("latency_s") else "share"
        diffs: list[Estimate | None] = []
        for k in range(len(trees)):
            c = by_b.get(k) if k != baseline else None
            block = ((c or {}).get("subsets") or {}).get(subset) or {}
            diffs.append(_diff((block.get("metrics") or {}).get(metric), unit) if c else None)
        rows.append(ForestRow(group_name(subset), label, unit, better, tuple(vals), tuple(diffs)))
    return rows


def _metrics_table(trees: Sequence[ScoredTree], labels: Sequence[str], subset: str) -> str:
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
    heads = ["metric", *(f"{lb}: value [95% interval] (count)" for lb in labels)]
    return table(heads, rows, raw=True)


def _count_text(v: Any) -> str:
    if isinstance(v, dict):  # ineligible reasons
        return ", ".join(f"{a} {n}" for a, n in v.items()) or "none"
    if isinstance(v, float):
        return _num(v)
    return "—" if v is None else str(v)


def _counts_table(trees: Sequence[ScoredTree], labels: Sequence[str], subset: str) -> str:
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
    return table(["count", *labels], rows)


def _counts_line(trees: Sequence[ScoredTree], lineup: Lineup, subset: str) -> str:
    """One sentence per subset: how many samples each tree had and how many of them were scored."""
    parts = []
    for k, t in enumerate(trees):
        c = (t.unified["subsets"].get(subset) or {}).get("counts") or {}
        entries = t.manifest.by_subset(subset)
        sel, elig = c.get("selected", len(entries)), c.get("eligible", sum(1 for e in entries if e.eligible))
        dot = f'<span class="dot" style="background:{lineup.color(k)}"></span>'
        parts.append(f'{dot} {esc(lineup.labels[k])}: {elig} of {sel} eligible')
    return '<p class="note">' + " &nbsp; ".join(parts) + "</p>"


def _reference(trees: Sequence[ScoredTree], labels: Sequence[str], subset: str) -> str:
    """The official numbers from summary.json (value ± std (n)), for each tree whose summary has the same input
    hashes."""
    refs = [load_reference(t.root, t.manifest_sha256, t.asr_sha256) for t in trees]
    notes = "".join(f'<p class="note">{esc(lb)}: {esc(r.message)}</p>' for lb, r in zip(labels, refs)
                    if r.subsets is None)
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
    for lb, b in zip(labels, blocks):
        judge = ((b or {}).get("judge") or {}).get("label")
        heads.append(f"{lb}"
                     + (f" ({b.get('n_evaluated', '?')} evaluated" + (f"; judge: {judge})" if judge else ")") if b
                        else ""))
    heads.append("note")
    return ("<h4>Reference column: official rules (summary.json, same manifest.json and asr.json)</h4>"
            + table(heads, rows) + notes)


def _figures(trees: Sequence[ScoredTree], lineup: Lineup, subset: str, task: str) -> str:
    """The task's summary figures of one subset (`RenderRules.figures`), from each tree's rows, with their captions."""
    series = [(lb, list(t.rows.get(subset, {}).values())) for lb, t in zip(lineup.labels, trees)]
    return "".join(f"<figure>{f.svg}" + (f"<figcaption>{esc(f.caption)}</figcaption>" if f.caption else "")
                   + "</figure>"
                   for f in get_task(task).render.figures(series, lineup.colors))


def comparison_html(comp: JsonObject, labels: Sequence[str] | None = None) -> str:
    """A compare.json object (made here from the trees, or read from `fdb compare --out`) as tables."""
    names = [str(t["label"]) for t in comp["trees"]] if labels is None else list(labels)
    base = names[comp["comparisons"][0]["a"]] if comp["comparisons"] else names[0]
    out = [f'<h3 id="compare">Paired comparison tables (B - A, every system against {esc(base)})</h3>']
    out += [f'<p class="note">note: {esc(n)}</p>' for n in comp["notes"]]
    for c in comp["comparisons"]:
        out.append(f"<h4>A = {esc(names[c['a']])}, B = {esc(names[c['b']])}</h4>")
        for subset, block in c["subsets"].items():
            out.append(f"<p><b>{esc(subset)}</b> <span class=\"note\">{esc(pairing_line(block))}</span></p>")
            rows = [[n + (" median" if m["kind"] == "median" else ""), *metric_cells(m)]
                    for n, m in block["metrics"].items()]
            out.append(table(["metric", "A", "B", "B - A", "95% interval", "pairs", "McNemar A-only/B-only"], rows))
    out.append(signature_line(comp["signature"]["compact"]))
    return "".join(out)


def compare_file_body(label: str, comp: JsonObject) -> str:
    """An `fdb compare --out` file on its own: the forest plot of its differences, then its tables."""
    trees = comp["trees"]
    names = [str(t["label"]) for t in trees]
    base = comp["comparisons"][0]["a"] if comp["comparisons"] else 0
    by_b = {c["b"]: c for c in comp["comparisons"]}
    rows = []
    for subset, metric, mlabel, better in headline():
        unit = "s" if metric.endswith("latency_s") else "share"
        diffs: list[Estimate | None] = []
        vals: list[Estimate | None] = []
        for k in range(len(trees)):
            c = by_b.get(k)
            m = ((((c or {}).get("subsets") or {}).get(subset) or {}).get("metrics") or {}).get(metric)
            diffs.append(_diff(m, unit) if c is not None else None)
            vals.append(None)
        if any(d is not None for d in diffs):
            rows.append(ForestRow(group_name(subset), mlabel, unit, better, tuple(vals), tuple(diffs)))
    head = (f'<section class="card"><h2>{esc(label)}: which system is better than {esc(names[base])}?</h2>'
            + forest_html(names, COLORS, base, rows, "Paired differences from the file (its own values are in the "
                                                     "tables below).")
            + "</section>")
    return head + '<section class="card">' + comparison_html(comp) + "</section>"


def _signatures(trees: Sequence[ScoredTree], labels: Sequence[str]) -> str:
    lines = [t.unified["signature"]["compact"] for t in trees]
    if len(set(lines)) == 1:
        return signature_line(lines[0] + ("" if len(trees) == 1 else "  (every tree)"))
    return "".join(signature_line(f"{lb}: {c}") for lb, c in zip(labels, lines))


def fdb_body(trees: Sequence[ScoredTree], lineup: Lineup, items: Sequence[Item],
             explorer_note: str = "") -> tuple[str, list[tuple[str, str]]]:
    """The whole FDB report body and its section menu; `items` are the explorer's cards (samples.fdb_items)."""
    labels = lineup.labels
    baseline = lineup.baseline if lineup.baseline is not None else 0
    subsets = [s for s in SUBSETS if any(t.manifest.by_subset(s) for t in trees)]
    comp: JsonObject | None = None
    why_not = ""
    if len(trees) > 1:
        order = [baseline, *(k for k in range(len(trees)) if k != baseline)]
        try:
            raw = compare([trees[k] for k in order]).to_json()
        except DuplexEvalError as exc:
            why_not = str(exc)
        else:  # back to the page's tree indices
            for c in raw["comparisons"]:
                c["a"], c["b"] = order[c["a"]], order[c["b"]]
            raw["trees"] = [raw["trees"][order.index(k)] for k in range(len(trees))]
            comp = raw
    nav = [("summary", "summary"), *((f"subset-{s}", group_name(s)) for s in subsets), ("samples", "samples"),
           ("provenance", "provenance")]
    rows = forest_rows(trees, comp, baseline)
    caption = ("Left: each system's value with its 95% interval (Wilson for shares, bootstrap for medians; "
               "a dashed bar runs on where the upper end is not reached). Right: the system minus the baseline on the "
               "samples both can be scored on, with the paired bootstrap interval; 'better' or 'worse' when that "
               "interval excludes 0. Hover a dot for the exact numbers.")
    if len(trees) > 1 and comp is None:
        caption += f" No paired differences: {why_not}"
    parts = ['<section class="card" id="summary"><h2>Which system is better, and how sure are we?</h2>'
             + forest_html(labels, lineup.colors, baseline if len(trees) > 1 else None, rows, caption, legend=False)]
    worst = worst_cases(items, labels)
    if worst:
        parts.append("<h3>Worst cases</h3><ul>" + "".join(
            f"<li>{esc(lb)}: {link(a, w)}</li>" for lb, a, w in worst) + "</ul>")
    parts.append("</section>")
    for subset in subsets:
        task = SUBSETS[subset].task
        parts.append(f'<section class="card" id="subset-{esc(subset)}"><h2>{esc(group_name(subset))} '
                     f'<span class="note">({esc(subset)}, {esc(task)})</span></h2>')
        parts.append(_counts_line(trees, lineup, subset))
        scored = get_task(task).scored
        if not scored:
            parts.append('<p class="note">Counted only: no unified metric; '
                         f'{esc(get_task(task).render.counted_note)}.</p>')
        parts.append(_figures(trees, lineup, subset, task))
        numbers = _counts_table(trees, labels, subset)
        if scored:
            numbers += _metrics_table(trees, labels, subset)
        numbers += _reference(trees, labels, subset)
        parts.append("<details><summary>All numbers of "
                     f"{esc(subset)}</summary>{numbers}{_signatures(trees, labels)}</details>")
        parts.append("</section>")
    if comp is not None:
        parts.append('<section class="card"><details><summary>Paired comparison '
                     f'tables</summary>{comparison_html(comp, labels)}'
                     "</details></section>")
    parts.append('<h2 id="samples">Samples</h2>')
    parts.append(explorer_html(items, labels, lineup.colors, "subset", explorer_note))
    parts.append(_provenance(trees, labels))
    return "".join(parts), nav


def _provenance(trees: Sequence[ScoredTree], labels: Sequence[str]) -> str:
    rows = [[lb, str(t.root), str((t.manifest.extra.get("system") or {}).get("name", "?")), t.manifest.dataset_name,
             str(len(t.manifest.samples)), t.unified["signature"]["compact"]] for lb, t in zip(labels, trees)]
    return ('<section class="card" id="provenance"><h2>Provenance</h2>'
            + table(["label", "tree", "system", "dataset", "samples", "signature"], rows)
            + '<p class="note">n/r = not reached: the quantile falls on a sample that never responded (or never '
            "stopped). Shares are over eligible samples (interruption: exercised); selected bounds count unknown "
            "outcomes as no, then yes. Intervals cover dataset sampling only.</p></section>")
