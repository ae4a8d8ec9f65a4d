"""EOT sweep (`eot sweep --out DIR`: summary.json) and `eot compare` pages, in the same style as the other reports.

The sweep page shows the operating points at every cutoff and latency budget with their intervals, the VAD
baseline, the counts and filter, spec 003's score of each point and the Pareto frontier as an inline SVG drawn
from the summary's own frontier (or, for a summary without one, from the ``sweep.parquet`` beside it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.report import svg
from duplexeval.report.page import esc, signature_line, table
from duplexeval.report.svg import COLORS
from duplexeval.stats import NO_DATA, NOT_REACHED

MODEL_FRONTIER = "model Pareto frontier"


@dataclass(frozen=True)
class Curve:
    """Points of one line in the frontier figure: (cutoff rate, mean latency in s), in drawing order."""

    label: str
    points: tuple[tuple[float, float], ...]


def _pct(x: Any) -> str:
    return NO_DATA if x is None else f"{float(x) * 100:.1f}%"


def _ms(x: Any) -> str:
    return NOT_REACHED if x is None else f"{float(x) * 1000:.0f} ms"


def _ci(v: Any, fmt: Any) -> str:
    return "—" if not isinstance(v, list) or len(v) != 2 else f"[{fmt(v[0])}, {fmt(v[1])}]"


def _ci_ms(v: Any) -> str:
    """A latency interval in ms with the unit once: `[200, 450] ms`."""
    return "—" if not isinstance(v, list) or len(v) != 2 else f"[{_ms(v[0]).removesuffix(' ms')}, {_ms(v[1]).removesuffix(' ms')}] ms"


def _label(key: str) -> str:
    return "cutoff ≤ " + key.replace("pct", "%") if key.endswith("pct") else "latency ≤ " + key


def _sig(rep: Mapping[str, Any]) -> str:
    sig = rep.get("signature")
    return signature_line(sig["compact"]) if isinstance(sig, dict) and "compact" in sig else ""


def _budget_rows(s: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    """(key, point) for every cutoff budget, then every latency budget, in the file's order."""
    rows = list((s.get("operating_points") or {}).items())
    return rows + list((s.get("cutoff_at_latency_budget") or {}).items())


def _points_table(s: Mapping[str, Any]) -> str:
    ivs = s.get("intervals") or {}
    vb = s.get("vad_baseline") or {}
    vads = {**(vb.get("operating_points") or {}), **(vb.get("cutoff_at_latency_budget") or {})}
    rows = []
    for key, p in _budget_rows(s):
        v = vads.get(key)
        vtxt = NO_DATA if v is None else f"{_pct(v.get('cutoff_rate'))} @ {_ms(v.get('mean_latency'))} ({v['delay']:g} s)"
        if p is None:
            rows.append([_label(key), "no policy met the budget", NO_DATA, "—", NO_DATA, "—", "—", NO_DATA, NO_DATA, vtxt])
            continue
        e = ivs.get(key) or {}
        fx = e.get("fixed_policy") or {}
        sa = e.get("selection_aware") or {}
        rows.append([
            _label(key), f"{p['threshold']:.2f} / {p['action_delay']:.1f} s / {p['timeout']:.1f} s",
            f"{_pct(p.get('cutoff_rate'))} {_ci(fx.get('cutoff_rate'), _pct)}", _ci(e.get("span_wilson_cutoff_rate"), _pct),
            f"{_ms(p.get('mean_latency'))} {_ci_ms(fx.get('mean_latency'))}",
            _ci(sa.get("cutoff_rate"), _pct), _ci_ms(sa.get("mean_latency")),
            _pct(p.get("timeout_rate")), _pct(p.get("detect_rate")), vtxt,
        ])  # fmt: skip
    head = ["budget", "threshold / delay / timeout", "false cutoffs [95% CI]", "95% Wilson (spans)",
            "mean latency [95% CI]", "re-picked: cutoffs", "re-picked: latency", "timeout", "detect",
            "VAD baseline: cutoffs @ latency (delay)"]  # fmt: skip
    notes = [f"{NOT_REACHED} = not reached, {NO_DATA} = no policy / no data; CI = 95% bootstrap over whole turns with the "
             "policy held fixed; re-picked = selection-aware interval (the policy chosen again in each resample)"]
    if "method" in ivs:
        notes.append(str(ivs["method"]))
    if "skipped" in ivs:
        notes.append(f"intervals skipped: {ivs['skipped']}")
    for key, e in ivs.items():
        sa = e.get("selection_aware") if isinstance(e, dict) else None
        if isinstance(sa, dict) and "share_of_resamples_picking_the_same_policy" in sa:
            notes.append(f"{_label(key)}: {sa.get('n_resamples_with_a_feasible_policy')} resamples had a feasible policy; "
                         f"{float(sa['share_of_resamples_picking_the_same_policy']) * 100:.1f}% picked the same policy")
        elif isinstance(sa, dict) and "label" in sa and "cutoff_rate" not in sa:
            notes.append(f"{_label(key)}: selection-aware interval {sa['label']}")
    return table(head, rows) + "".join(f'<p class="note">{esc(n)}</p>' for n in notes)


def _counts_table(s: Mapping[str, Any]) -> str:
    f = s.get("filtered") or {}
    mfl = s.get("mean_frontier_latency_0_10")

    def num(x: Any) -> str:
        return NO_DATA if x is None else f"{x:.3f}"

    rows = [
        ["spans (hold + eot)", f"{s.get('n_spans')} ({s.get('n_hold_spans')} + {s.get('n_eot_spans')})"],
        ["scored spans (hold + eot)", f"{s.get('n_scored_spans')} ({s.get('n_scored_hold_spans')} + {s.get('n_scored_eot_spans')})"],
        ["missing scores (hold + eot)", f"{s.get('n_missing_scores')} ({s.get('n_missing_hold_scores')} + {s.get('n_missing_eot_scores')})"],
        ["turns", str(s.get("n_turns"))],
        ["policies swept", str(s.get("n_policies"))],
        ["mean_frontier_latency_0_10", _ms(mfl)],
        ["hold filter (s)", f"[{s.get('min_hold_span_duration')}, {s.get('max_hold_span_duration')}]"],
        ["score mode", str(s.get("score_mode")) + ("" if s.get("score_point_s") is None else f" @ {s['score_point_s']} s")],
        ["AUC / AP (diagnostics only)", f"{num(s.get('auc'))} / {num(s.get('ap'))}"],
    ]  # fmt: skip
    rows += [[f"filtered.{k}", str(v)] for k, v in f.items() if k != "rule"]
    rule = f'<p class="note">{esc(f["rule"])}</p>' if "rule" in f else ""
    return table(["count", "value"], rows) + rule


def _spec003_table(s: Mapping[str, Any]) -> str:
    sp = s.get("spec003") or {}
    rows = []
    for key, e in sp.items():
        if key == "rule":
            continue
        if not isinstance(e, dict):
            rows.append([_label(key), NO_DATA, "—", NO_DATA, NO_DATA, NO_DATA])
            continue
        sc, fc = e.get("score") or {}, e.get("false_cutoff") or {}
        hang = ", ".join(f"> {b} ms {_pct(h.get('value'))} {_ci(h.get('interval'), _pct)}" for b, h in (e.get("hang_at_ms") or {}).items())
        med = sc.get("median_latency_ms")
        rows.append([_label(key), f"{_pct(fc.get('value'))} ({fc.get('count')}/{fc.get('n')})", _ci(fc.get("interval"), _pct),
                     NOT_REACHED if med is None or not sc.get("median_latency_reached", True) else f"{med:.0f} ms", hang,
                     str(e.get("n_turns_without_eot_span"))])  # fmt: skip
    rule = f'<p class="note">{esc(sp["rule"])}</p>' if "rule" in sp else ""
    head = ["operating point", "false cutoff (turns)", "95% Wilson", "median latency (commit - true end)", "hang (95% Wilson)", "turns without eot span"]
    return table(head, rows) + rule


def frontier_curves(s: Mapping[str, Any], parquet: Path | None) -> tuple[list[Curve], str]:
    """The model's Pareto frontier (summary first, else sweep.parquet) and the VAD curve; plus where it came from."""
    rows: list[tuple[float, float]] = []
    vad: list[tuple[float, float]] = []
    source = ""
    fr = s.get("pareto_frontier")
    if isinstance(fr, list) and fr:
        rows = [(float(r["cutoff_rate"]), float(r["mean_latency"])) for r in fr]
        source = "the summary's pareto_frontier"
    if parquet is not None and parquet.is_file():
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            d = pq.read_table(parquet, columns=["policy_type", "cutoff_rate", "mean_latency", "is_pareto"]).to_pydict()
        except (OSError, ValueError, KeyError, pa.ArrowException) as exc:  # a broken file or one without these columns
            raise InputError(f"{parquet}: cannot read the sweep table: {str(exc).splitlines()[0] if str(exc) else exc}") from None
        table_rows = list(zip(d["policy_type"], d["cutoff_rate"], d["mean_latency"], d["is_pareto"]))
        if not rows:
            rows = sorted((float(c), float(m)) for t, c, m, p in table_rows if t == "model" and p)
            rows.sort(key=lambda r: (r[1], r[0]))
            source = f"{parquet.name} (is_pareto rows)"
        vad = sorted(((float(c), float(m)) for t, c, m, _p in table_rows if t == "vad"), key=lambda r: (r[1], r[0]))
    if not vad:
        vb = s.get("vad_baseline") or {}
        pts = {**(vb.get("operating_points") or {}), **(vb.get("cutoff_at_latency_budget") or {})}
        vad = sorted({(float(v["cutoff_rate"]), float(v["mean_latency"])) for v in pts.values() if isinstance(v, dict)},
                     key=lambda r: (r[1], r[0]))  # fmt: skip
    curves = [Curve(MODEL_FRONTIER, tuple(rows))] if rows else []
    if vad:
        curves.append(Curve("VAD baseline (silence timer)", tuple(vad)))
    return curves, source


def frontier_svg(curves: Sequence[Curve], marks: Sequence[tuple[str, float, float]], title: str) -> str:
    """False-cutoff rate against mean latency: the frontier as a step line, the VAD curve, the picked points."""
    fig = svg.figure(7.2, 3.2)
    ax = fig.add_axes((0.08, 0.14, 0.62, 0.76))
    for k, c in enumerate(curves):
        xs = [p[1] for p in c.points]
        ys = [p[0] * 100 for p in c.points]
        if k == 0:
            ax.step(xs, ys, where="post", color=COLORS[0], lw=1.6, marker="o", ms=3, label=f"{c.label} ({len(xs)} policies)")
        else:
            ax.plot(xs, ys, color="#7a869a", lw=1.0, ls="--", marker="s", ms=2.5, label=c.label)
    for k, (name, cut, lat) in enumerate(marks):
        ax.plot([lat], [cut * 100], "D", color=COLORS[(k + 1) % len(COLORS)], ms=5.5, label=f"picked at {name}")
    for pct in (2, 5, 10):
        ax.axhline(pct, color="#ccc", lw=0.6, ls=":", zorder=0)
    for sec in (0.3, 0.6):
        ax.axvline(sec, color="#ccc", lw=0.6, ls=":", zorder=0)
    ax.set_xlabel("mean latency (s) over eot spans")
    ax.set_ylabel("false cutoffs (% of hold spans)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_title(title, fontsize=7.5, loc="left")
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6.5, frameon=False)
    return svg.to_svg(fig)


def sweep_body(label: str, s: Mapping[str, Any], path: Path) -> str:
    """An `eot sweep` summary.json: operating points, VAD baseline, counts, spec 003, frontier figure, signature."""
    curves, source = frontier_curves(s, path.parent / "sweep.parquet")
    marks = [(_label(k), float(p["cutoff_rate"]), float(p["mean_latency"])) for k, p in _budget_rows(s) if isinstance(p, dict)]
    has_model = bool(curves) and curves[0].label == MODEL_FRONTIER
    fig = "" if has_model else '<p class="note">no model Pareto frontier: the summary carries none and no sweep.parquet is beside it</p>'
    if curves:
        vad_from = "sweep.parquet" if (path.parent / "sweep.parquet").is_file() else "the summary's vad_baseline points"
        caption = (f"frontier from {source}; " if has_model else "") + f"VAD curve from {vad_from}"
        fig += ("<figure>" + frontier_svg(curves, marks, "Pareto frontier: false cutoffs against mean latency; dotted = budgets")
                + f'<figcaption class="note">{esc(caption)}</figcaption></figure>')
    return (f"<h2>{esc(label)}</h2>" + _sig(s)
            + "<h3>Operating points (eot-bench sweep)</h3>" + _points_table(s)
            + "<h3>Pareto frontier</h3>" + fig
            + "<h3>Spans, turns and filter</h3>" + _counts_table(s)
            + "<h3>Spec 003 score of each operating point</h3>" + _spec003_table(s))  # fmt: skip


def compare_body(label: str, c: Mapping[str, Any]) -> str:
    """An `eot compare` file: each side's operating point per budget and the paired difference B - A with its interval."""
    def side(p: Mapping[str, Any] | None) -> str:
        if p is None:
            return NO_DATA
        return f"{_pct(p.get('cutoff_rate'))} @ {_ms(p.get('mean_latency'))} (thr {p['threshold']:.2f}, ad {p['action_delay']:.1f} s, to {p['timeout']:.1f} s)"

    def diff(d: Mapping[str, Any] | None, scale: float, unit: str) -> tuple[str, str, str]:
        if d is None:
            return NO_DATA, "—", ""
        if d.get("diff") is None:
            return d.get("reason") or NO_DATA, "—", str(d.get("n_pairs", ""))
        ci = d.get("interval")
        ci_txt = "—" if not ci else f"[{ci[0] * scale:+.1f}, {ci[1] * scale:+.1f}]{unit}"
        return f"{d['diff'] * scale:+.1f}{unit}", ci_txt, str(d.get("n_pairs", ""))

    rows = []
    for key, e in (c.get("budgets") or {}).items():
        cd, ld = diff(e.get("cutoff_rate_diff"), 100, " pts"), diff(e.get("mean_latency_diff"), 1000, " ms")
        rows.append([_label(key), side(e.get("a")), side(e.get("b")), cd[0], cd[1], ld[0], ld[1], cd[2] or ld[2],
                     e.get("reason") or ""])  # fmt: skip
    pr = c.get("pairing") or {}
    note = (f"A = {c.get('a')}, B = {c.get('b')}; paired on {pr.get('common_spans')} common spans "
            f"({pr.get('n_hold_spans')} hold + {pr.get('n_eot_spans')} eot) in {pr.get('n_turns')} turns; "
            f"{pr.get('only_in_a')} only in A and {pr.get('only_in_b')} only in B are left out; {c.get('method')}")
    head = ["budget", "A operating point", "B operating point", "false cutoffs B - A", "95% CI", "mean latency B - A", "95% CI",
            "pairs (turns)", "reason"]  # fmt: skip
    return (f"<h2>{esc(label)}</h2>" + _sig(c) + f'<p class="note">{esc(note)}</p>'
            + "<h3>Paired differences per budget</h3>" + table(head, rows))
