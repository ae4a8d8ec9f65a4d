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
from duplexeval.report.forest import LOWER, Estimate, ForestRow, forest_html
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
    return "—" if not isinstance(v, list) or len(v) != 2 else (f"[{_ms(v[0]).removesuffix(' ms')}, "
                                                               f"{_ms(v[1]).removesuffix(' ms')}] ms")


def policy_text(p: Mapping[str, Any]) -> str:
    """threshold / action delay / timeout; a threshold of 1.00 never fires (p_eot > threshold), so the timeout
    decides."""
    thr = float(p["threshold"])
    t = f"{thr:.2f}" + (" (never fires)" if thr >= 1.0 else "")
    return f"{t} / {p['action_delay']:.1f} s / {p['timeout']:.1f} s"


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
        vtxt = NO_DATA if v is None else (f"{_pct(v.get('cutoff_rate'))} @ {_ms(v.get('mean_latency'))} "
                                          f"({v['delay']:g} s)")
        if p is None:
            rows.append(
                [_label(key), "no policy met the budget", NO_DATA, "—", NO_DATA, "—", "—", NO_DATA, NO_DATA, vtxt])
            continue
        e = ivs.get(key) or {}
        fx = e.get("fixed_policy") or {}
        sa = e.get("selection_aware") or {}
        rows.append([
            _label(key), policy_text(p),
            f"{_pct(p.get('cutoff_rate'))} {_ci(fx.get('cutoff_rate'), _pct)}",
            _ci(e.get("span_wilson_cutoff_rate"), _pct), f"{_ms(p.get('mean_latency'))} "
                                                         f"{_ci_ms(fx.get('mean_latency'))}",
            _ci(sa.get("cutoff_rate"), _pct), _ci_ms(sa.get("mean_latency")),
            _pct(p.get("timeout_rate")), _pct(p.get("detect_rate")), vtxt,
        ])  # fmt: skip
    head = ["budget", "threshold / delay / timeout", "false cutoffs [95% CI]", "95% Wilson (spans)",
            "mean latency [95% CI]", "re-picked: cutoffs", "re-picked: latency", "timeout", "detect",
            "VAD baseline: cutoffs @ latency (delay)"]  # fmt: skip
    notes = [f"{NOT_REACHED} = not reached, {NO_DATA} = no policy / no data; CI = 95% bootstrap over whole "
             "turns with the policy held fixed; re-picked = selection-aware interval (the policy chosen again in "
             "each resample)"]
    if any(isinstance(p, Mapping) and float(p["threshold"]) >= 1.0 for _, p in _budget_rows(s)):
        notes.append("threshold 1.00 never fires (the detector fires when p_eot > threshold, and p_eot is at most 1), "
                     "so at that operating point only the timeout commits: it is a silence timer")
    if "method" in ivs:
        notes.append(str(ivs["method"]))
    if "skipped" in ivs:
        notes.append(f"intervals skipped: {ivs['skipped']}")
    for key, e in ivs.items():
        sa = e.get("selection_aware") if isinstance(e, dict) else None
        if isinstance(sa, dict) and "share_of_resamples_picking_the_same_policy" in sa:
            notes.append(f"{_label(key)}: {sa.get('n_resamples_with_a_feasible_policy')} resamples had a "
                         f"feasible policy; {float(sa['share_of_resamples_picking_the_same_policy']) * 100:.1f}% "
                         "picked the same policy")
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
        ["scored spans (hold + eot)", f"{s.get('n_scored_spans')} ({s.get('n_scored_hold_spans')} + "
                                      f"{s.get('n_scored_eot_spans')})"],
        ["missing scores (hold + eot)", f"{s.get('n_missing_scores')} ({s.get('n_missing_hold_scores')} + "
                                        f"{s.get('n_missing_eot_scores')})"],
        ["turns", str(s.get("n_turns"))],
        ["policies swept", str(s.get("n_policies"))],
        ["mean_frontier_latency_0_10", _ms(mfl)],
        ["hold filter (s)", f"[{s.get('min_hold_span_duration')}, {s.get('max_hold_span_duration')}]"],
        ["score mode",
         str(s.get("score_mode")) + ("" if s.get("score_point_s") is None else f" @ {s['score_point_s']} s")],
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
        hang = ", ".join(f"> {b} ms {_pct(h.get('value'))} {_ci(h.get('interval'), _pct)}"
                         for b, h in (e.get("hang_at_ms") or {}).items())
        med = sc.get("median_latency_ms")
        if med is None or not sc.get("median_latency_reached", True):
            med_txt = NOT_REACHED
        else:
            med_txt = f"{med:.0f} ms"
            if med < 0:  # signed: the first commit of most turns came before their end (a false cutoff)
                med_txt += (f" (most first commits came before the true end: {fc.get('count')} of {fc.get('n')} "
                            "turns cut off)")
        rows.append([_label(key), f"{_pct(fc.get('value'))} ({fc.get('count')}/{fc.get('n')})",
                     _ci(fc.get("interval"), _pct), med_txt, hang, str(e.get("n_turns_without_eot_span"))])  # fmt: skip
    rule = f'<p class="note">{esc(sp["rule"])}</p>' if "rule" in sp else ""
    rule += ('<p class="note">Spec 003\'s median latency is signed (statistics.median of commit - true end over the '
             "turns): a turn cut off in a pause commits before its end, so a policy picked for a tight latency budget, "
             "which cuts most turns off, has a negative median of about minus the time from the first pause to the "
             "end.</p>")
    head = ["operating point", "false cutoff (turns)", "95% Wilson", "median latency, commit - true end (signed)",
            "hang (95% Wilson)", "turns without eot span"]
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
            raise InputError(
                f"{parquet}: cannot read the sweep table: {str(exc).splitlines()[0] if str(exc) else exc}") from None
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


@dataclass(frozen=True)
class Detector:
    """One detector on a Pareto figure: its frontier, colour and picked operating points (budget, cutoff, latency)."""

    label: str
    color: str
    frontier: tuple[tuple[float, float], ...]
    marks: tuple[tuple[str, float, float], ...] = ()


def grouped_marks(marks: Sequence[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Budgets that picked the same policy share one marker and one label (`cutoff ≤ 2%, cutoff ≤ 5%`)."""
    out: list[tuple[list[str], float, float]] = []
    for name, cut, lat in marks:
        same = next((g for g in out if abs(g[1] - cut) < 1e-9 and abs(g[2] - lat) < 1e-9), None)
        if same is None:
            out.append(([name], cut, lat))
        else:
            same[0].append(name)
    return [(", ".join(n), c, lt) for n, c, lt in out]


def frontier_svg(detectors: Sequence[Detector], vad: Curve | None, title: str) -> str:
    """False-cutoff rate against mean latency: each detector's frontier as a step line with its picked points (one
    numbered marker per distinct point, named in the legend, so labels never overprint), and the VAD curve."""
    fig = svg.figure(7.6, 3.4)
    ax = fig.add_axes((0.08, 0.14, 0.58, 0.74))
    number = 0
    single = len(detectors) == 1
    for d in detectors:
        if d.frontier:
            xs = [p[1] for p in d.frontier]
            ys = [p[0] * 100 for p in d.frontier]
            name = MODEL_FRONTIER if single else f"{d.label}: Pareto frontier"
            ax.step(xs, ys, where="post", color=d.color, lw=1.6, marker="o", ms=2.6,
                    label=f"{name} ({len(xs)} policies)")
        if not single and d.marks:  # several detectors: their picked points unlabelled (the forest below names them)
            ax.plot([m[2] for m in d.marks], [m[1] * 100 for m in d.marks], "D", ls="none", color=d.color, mec="#111",
                    mew=0.6, ms=5.5, zorder=5, label=f"{d.label}: picked operating points")
            continue
        for names, cut, lat in grouped_marks(d.marks):
            number += 1
            ax.plot([lat], [cut * 100], "D", color=d.color, mec="#111", mew=0.6, ms=6, zorder=5,
                    label=f"{number}: picked at {names}")
            ax.annotate(str(number), (lat, cut * 100), xytext=(5, 4), textcoords="offset points", fontsize=7,
                        fontweight="bold")
    if vad is not None and vad.points:
        ax.plot([p[1] for p in vad.points], [p[0] * 100 for p in vad.points], color="#7a869a", lw=1.0, ls="--",
                marker="s", ms=2.5, label=vad.label)
    for pct in (2, 5, 10):
        ax.axhline(pct, color="#ccc", lw=0.6, ls=":", zorder=0)
    for sec in (0.3, 0.6):
        ax.axvline(sec, color="#ccc", lw=0.6, ls=":", zorder=0)
    ax.set_xlabel("mean latency (s) over eot spans")
    ax.set_ylabel("false cutoffs (% of hold spans)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_title(title, fontsize=9, loc="left", fontweight="bold")
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6.5, frameon=False)
    return svg.to_svg(fig)


def auc_note(s: Mapping[str, Any]) -> str | None:
    """A note when a high AUC and the operating points disagree: at every false-cutoff budget the picked policy never
    fires the model (threshold 1.00), so those points are the silence timer's."""
    auc = s.get("auc")
    pts = [p for p in (s.get("operating_points") or {}).values() if isinstance(p, dict)]
    if auc is None or float(auc) < 0.8 or not pts or any(float(p["threshold"]) < 1.0 for p in pts):
        return None
    return (f"AUC {float(auc):.3f} says the scores rank end-of-turn silences above hold silences, yet at every "
            "false-cutoff budget the picked policy has threshold 1.00, which never fires: those operating points are "
            "the silence timer's (the VAD baseline column), so the detector adds nothing there. AUC ranks every "
            "silence moment at once; a policy must commit inside each hold span's first moments without firing, "
            "which these scores do not allow at that cutoff rate.")


def marks_of(s: Mapping[str, Any]) -> tuple[tuple[str, float, float], ...]:
    return tuple((_label(k), float(p["cutoff_rate"]), float(p["mean_latency"])) for k, p in _budget_rows(s)
                 if isinstance(p, dict))


def sweep_body(label: str, s: Mapping[str, Any], path: Path, color: str = COLORS[0], source_name: str = "") -> str:
    """An `eot sweep` summary.json: operating points, VAD baseline, counts, spec 003, frontier figure, signature."""
    curves, source = frontier_curves(s, path.parent / "sweep.parquet")
    has_model = bool(curves) and curves[0].label == MODEL_FRONTIER
    fig = "" if has_model else ('<p class="note">no model Pareto frontier: the summary carries none and no '
                                'sweep.parquet is beside it</p>')
    if curves:
        vad_from = "sweep.parquet" if (path.parent / "sweep.parquet").is_file() else "the summary's vad_baseline points"
        caption = (f"frontier from {source}; " if has_model else "") + (f"VAD curve from {vad_from}; dotted "
                                                                        "lines: the budgets")
        det = Detector(label, color, curves[0].points if has_model else (), marks_of(s))
        vad = curves[-1] if curves[-1].label != MODEL_FRONTIER else None
        fig += ("<figure>" + frontier_svg([det], vad, f"{label}: false cutoffs against mean latency")
                + f'<figcaption class="note">{esc(caption)}</figcaption></figure>')
    notes = [n for n in (auc_note(s), *(s.get("notes") or [])) if n]
    head = f"<h2>{esc(label)} <span class=\"note\">(eot sweep, {esc(source_name or label)})</span></h2>"
    return (head + "".join(f'<p class="lead">{esc(n)}</p>' for n in notes) + _sig(s)
            + "<h3>Operating points (eot-bench sweep)</h3>" + _points_table(s)
            + "<h3>Pareto frontier</h3>" + fig
            + "<h3>Spans, turns and filter</h3>" + _counts_table(s)
            + "<h3>Spec 003 score of each operating point</h3>" + _spec003_table(s))  # fmt: skip


def _side(p: Mapping[str, Any] | None) -> str:
    if p is None:
        return NO_DATA
    thr = float(p["threshold"])
    never = " never fires" if thr >= 1.0 else ""
    return (f"{_pct(p.get('cutoff_rate'))} @ {_ms(p.get('mean_latency'))} "
            f"(thr {thr:.2f}{never}, ad {p['action_delay']:.1f} s, to {p['timeout']:.1f} s)")


def _diff_cells(d: Mapping[str, Any] | None, scale: float, unit: str) -> tuple[str, str, str]:
    if d is None:
        return NO_DATA, "—", ""
    if d.get("diff") is None:
        return d.get("reason") or NO_DATA, "—", str(d.get("n_pairs", ""))
    ci = d.get("interval")
    ci_txt = "—" if not ci else f"[{ci[0] * scale:+.1f}, {ci[1] * scale:+.1f}]{unit}"
    return f"{d['diff'] * scale:+.1f}{unit}", ci_txt, str(d.get("n_pairs", ""))


def _estimate(x: Any, iv: Any, share: bool, extra: str = "") -> Estimate | None:
    """A share (kept as a fraction, drawn in %) or a latency in s (drawn in ms) with its interval."""
    if x is None:
        return None
    k = 1.0 if share else 1000.0

    def fmt(v: float) -> str:
        return f"{v * 100:.1f}%" if share else f"{v * 1000:.0f} ms"

    if isinstance(iv, list) and len(iv) == 2 and None not in iv:
        lo, hi = float(iv[0]), float(iv[1])
        return Estimate(float(x) * k, lo * k, hi * k, f"{fmt(x)} [{fmt(lo)}, {fmt(hi)}]{extra}")
    return Estimate(float(x) * k, text=f"{fmt(x)}{extra}")


def _diff_estimate(d: Mapping[str, Any] | None, share: bool) -> Estimate | None:
    """B - A of a compare budget: cutoff rate as a fraction (drawn in points), latency in s (drawn in ms)."""
    if not isinstance(d, Mapping) or d.get("diff") is None:
        return None
    iv = d.get("interval")
    k, scale, unit = (1.0, 100, " pts") if share else (1000.0, 1000, " ms")
    txt = f"{d['diff'] * scale:+.1f}{unit}"
    if isinstance(iv, list) and len(iv) == 2 and None not in iv:
        lo, hi = float(iv[0]), float(iv[1])
        return Estimate(d["diff"] * k, lo * k, hi * k, f"{txt} [{lo * scale:+.1f}, {hi * scale:+.1f}], "
                                                       f"{d.get('n_pairs')} turns")
    return Estimate(d["diff"] * k, text=f"{txt}, {d.get('n_pairs')} turns")


BUDGET_ROWS = (("2pct", "mean latency at false cutoffs ≤ 2%"), ("5pct", "mean latency at false cutoffs ≤ 5%"),
               ("10pct", "mean latency at false cutoffs ≤ 10%"), ("300ms", "false cutoffs at mean latency ≤ 300 ms"),
               ("600ms", "false cutoffs at mean latency ≤ 600 ms"))  # fmt: skip


def operating_rows(points: Sequence[Mapping[str, Any] | None], intervals: Sequence[Mapping[str, Any]],
                   diffs: Sequence[Mapping[str, Any] | None]) -> list[ForestRow]:
    """Forest rows of the operating points: per cutoff budget the mean latency (ms), per latency budget the false
    cutoffs, each detector's point with its turn-bootstrap interval (policy fixed), and B - A when paired."""
    rows = []
    for key, label in BUDGET_ROWS:
        lat = key.endswith("pct")
        vals: list[Estimate | None] = []
        for pts, ivs in zip(points, intervals):
            p = (pts or {}).get(key) if isinstance(pts, Mapping) else None
            fx = ((ivs.get(key) or {}).get("fixed_policy") or {}) if isinstance(ivs, Mapping) else {}
            if not isinstance(p, Mapping):
                vals.append(Estimate(None, text="no policy met the budget") if pts is not None else None)
                continue
            never = " (threshold 1.00: never fires, the timeout decides)" if float(p.get("threshold", 0)) >= 1.0 else ""
            if lat:
                vals.append(_estimate(p.get("mean_latency"), fx.get("mean_latency"), False, never))
            else:
                vals.append(_estimate(p.get("cutoff_rate"), fx.get("cutoff_rate"), True, never))
        dvals: list[Estimate | None] = []
        for d in diffs:
            e = (d or {}).get(key) if isinstance(d, Mapping) else None
            dvals.append(_diff_estimate((e or {}).get("mean_latency_diff" if lat else "cutoff_rate_diff"), not lat))
        if any(v is not None for v in vals) or any(v is not None for v in dvals):
            rows.append(ForestRow("at a false-cutoff budget" if lat else "at a latency budget", label,
                                  "ms" if lat else "share", LOWER, tuple(vals), tuple(dvals)))
    return rows


def compare_body(label: str, c: Mapping[str, Any], colors: Sequence[str] = COLORS) -> str:
    """An `eot compare` file: both frontiers on one figure, the paired differences B - A per budget as a forest and a
    table, each side's operating point, the pairing and the signature."""
    rows = []
    for key, e in (c.get("budgets") or {}).items():
        cd, ld = _diff_cells(e.get("cutoff_rate_diff"), 100, " pts"), _diff_cells(
            e.get("mean_latency_diff"), 1000, " ms")
        rows.append([_label(key), _side(e.get("a")), _side(e.get("b")), cd[0], cd[1], ld[0], ld[1], cd[2] or ld[2],
                     e.get("reason") or ""])  # fmt: skip
    pr = c.get("pairing") or {}
    note = (f"A = {c.get('a')}, B = {c.get('b')}; paired on {pr.get('common_spans')} common spans "
            f"({pr.get('n_hold_spans')} hold + {pr.get('n_eot_spans')} eot) in {pr.get('n_turns')} turns; "
            f"{pr.get('only_in_a')} only in A and {pr.get('only_in_b')} only in B are left out; {c.get('method')}")
    modes = c.get("score_mode")
    if isinstance(modes, Mapping):
        note += f"; score mode A {modes.get('a')}, B {modes.get('b')}"
    head = ["budget", "A operating point", "B operating point", "false cutoffs B - A", "95% CI", "mean latency B - A",
            "95% CI", "pairs (turns)", "reason"]  # fmt: skip
    names = [str(c.get("a")), str(c.get("b"))]
    budgets = c.get("budgets") or {}
    pts = [{k: (e or {}).get(side) for k, e in budgets.items()} for side in ("a", "b")]
    forest = forest_html(names, colors, 0, operating_rows(pts, [{}, {}], [None, budgets]),
                         "Each side's own operating point per budget; right: B - A with the paired "
                         "bootstrap over whole turns (policies held fixed).")
    fr = c.get("frontier") if isinstance(c.get("frontier"), Mapping) else None
    fig = ""
    if fr:
        dets = [Detector(n, colors[k % len(colors)],
                         tuple((float(r["cutoff_rate"]), float(r["mean_latency"])) for r in fr.get(side) or []),
                         tuple((_label(key), float(p["cutoff_rate"]), float(p["mean_latency"]))
                               for key, p in pt.items() if isinstance(p, Mapping)))
                for k, (n, side, pt) in enumerate(zip(names, ("a", "b"), pts))]  # fmt: skip
        fig = ("<figure>" + frontier_svg(dets, None, f"{names[0]} and {names[1]}: Pareto frontiers on the common spans")
               + "</figure>")
    notes = "".join(f'<p class="lead">{esc(n)}</p>' for n in c.get("notes") or [])
    return (f"<h2>{esc(label)}: {esc(names[1])} against {esc(names[0])}</h2>" + notes + forest + fig + _sig(c)
            + f'<p class="note">{esc(note)}</p>'
            + "<h3>Paired differences per budget</h3>" + table(head, rows))


def eot_summary(labels: Sequence[str], colors: Sequence[str], sweeps: Sequence[tuple[Mapping[str, Any], Path]],
                baseline: int, diffs: Sequence[Mapping[str, Any] | None]) -> str:
    """The first picture of several sweeps: every detector's frontier on one figure, then the operating points as a
    forest (with B - A where a compare file pairs a detector with the baseline)."""
    dets, vad = [], None
    for k, (s, path) in enumerate(sweeps):
        curves, _ = frontier_curves(s, path.parent / "sweep.parquet")
        model = curves[0].points if curves and curves[0].label == MODEL_FRONTIER else ()
        dets.append(Detector(labels[k], colors[k % len(colors)], model, marks_of(s)))
        if vad is None and curves and curves[-1].label != MODEL_FRONTIER:
            vad = curves[-1]
    fig = ("<figure>" + frontier_svg(dets, vad, "Every detector's Pareto frontier, false cutoffs against mean latency")
           + "</figure>")
    rows = operating_rows([s.get("operating_points", {}) | (s.get("cutoff_at_latency_budget") or {})
                           for s, _ in sweeps],
                          [s.get("intervals") or {} for s, _ in sweeps], diffs)
    has_diff = any(d is not None for d in diffs)
    forest = forest_html(labels, colors, baseline if has_diff else None, rows,
                         "Each detector's own operating point per budget with the 95% bootstrap interval over "
                         "whole turns (policy held fixed)"
                         + ("; right: the paired difference from the compare file." if has_diff else "."))
    notes = "".join(f'<p class="lead">{esc(lb)}: {esc(n)}</p>' for lb, (s, _) in zip(labels, sweeps)
                    if (n := auc_note(s)))
    return ('<section class="card" id="summary"><h2>Which detector is better, and how sure are we?</h2>'
            + fig + forest + notes + "</section>")
