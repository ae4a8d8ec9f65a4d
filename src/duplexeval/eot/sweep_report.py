"""`duplexeval eot sweep`: summary.json (eot-bench's key names first, then ours), sweep.parquet, the printed table.

eot-bench's own keys keep their names and meanings so its tools read our file unchanged; what we add lives under
``cutoff_at_latency_budget``, ``vad_baseline``, ``intervals``, ``filtered``, ``spec003``, ``pareto_frontier`` and
the artifact header (kind, schema_version, duplexeval, signature, inputs).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from duplexeval import stats
from duplexeval.artifacts import header
from duplexeval.eot import intervals as iv
from duplexeval.eot.kinds import SWEEP_KIND
from duplexeval.eot.kinds import SWEEP_SCHEMA as SCHEMA_VERSION
from duplexeval.eot.pairs import DEFAULT_LATENCY_BANDS_MS, DEFAULT_TOLERANCE_MS
from duplexeval.eot.predictions import Predictions
from duplexeval.eot.report import build_report
from duplexeval.eot.sweep_engine import (
    CUTOFF_BUDGETS,
    LATENCY_BUDGETS,
    Selected,
    SpanTable,
    Sweep,
    SweepConfig,
    budget_key,
    build_spans,
    classification,
    latency_budget_point,
    latency_key,
    mean_frontier_latency,
    operating_point,
    pareto_mask,
    run_sweep,
    vad_latency_point,
    vad_point,
)
from duplexeval.jsonio import atomic_write_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Component, Signature
from duplexeval.stats import NO_DATA, NOT_REACHED

SWEEP_DEFINITIONS = "eot-bench-sweep-1"


@dataclass
class SweepResult:
    """Everything one sweep computed (the summary dict is built from it)."""

    cfg: SweepConfig
    spans: SpanTable
    sweep: Sweep
    points: dict[str, Selected | None]  # "2pct".. and "300ms".. (model rows)
    vad: dict[str, Selected | None]
    pareto: np.ndarray


def compute(preds: Predictions, cfg: SweepConfig) -> SweepResult:
    """Spans, the sweep, the operating points (model and VAD) and the Pareto mask."""
    spans = build_spans(preds, cfg)
    sw = run_sweep(spans, cfg)
    points: dict[str, Selected | None] = {budget_key(b): operating_point(sw, b) for b in CUTOFF_BUDGETS}
    points.update({latency_key(b): latency_budget_point(sw, b) for b in LATENCY_BUDGETS})
    vad: dict[str, Selected | None] = {budget_key(b): vad_point(sw, b) for b in CUTOFF_BUDGETS}
    vad.update({latency_key(b): vad_latency_point(sw, b) for b in LATENCY_BUDGETS})
    return SweepResult(cfg, spans, sw, points, vad, pareto_mask(sw))


def _point_json(p: Selected | None, cfg: SweepConfig, budget: float | None = None,
                latency_budget: float | None = None) -> JsonObject | None:
    if p is None:
        return None
    out: JsonObject = {}
    if budget is not None:
        out["cutoff_budget"] = budget
    if latency_budget is not None:
        out["latency_budget"] = latency_budget
    out.update({"threshold": p.threshold, "cutoff_rate": p.cutoff_rate, "mean_latency": p.mean_latency,
                "timeout_rate": p.timeout_rate, "detect_rate": p.detect_rate, "action_delay": p.action_delay,
                "timeout": p.timeout, "score_point_s": cfg.score_point_s, "score_mode": cfg.score_mode})  # fmt: skip
    return out


def _vad_json(p: Selected | None) -> JsonObject | None:
    if p is None:
        return None
    return {"delay": p.action_delay, "cutoff_rate": p.cutoff_rate, "mean_latency": p.mean_latency}


def detector_name(preds: Predictions, fallback: str) -> str:
    """The detector's name from the predictions' own header (`silero`, `smart-turn`), else `fallback`."""
    sig = (preds.meta or {}).get("signature") or {}
    comps = sig.get("components", []) if isinstance(sig, Mapping) else []
    det = next((c for c in comps if isinstance(c, Mapping) and c.get("name") == "det"), None)
    value = str((det or {}).get("value") or "")
    return value.split(":")[0] or fallback


def frontier_json(res: SweepResult) -> list[dict[str, float]]:
    """The model's Pareto frontier, fastest first: each policy with its cutoff rate and mean latency."""
    sw = res.sweep
    fr = np.flatnonzero(res.pareto)
    fr = fr[np.argsort(sw.latency_sum_us[fr], kind="stable")]
    return [{"threshold": float(sw.threshold[k]), "action_delay": float(sw.action_delay[k]),
             "timeout": float(sw.timeout[k]), "cutoff_rate": float(sw.cutoff_rate[k]),
             "mean_latency": float(sw.mean_latency[k])} for k in fr]  # fmt: skip


def _g(values: tuple[float, ...]) -> str:
    """A grid in the compact signature: first-last x count."""
    return f"{values[0]:g}-{values[-1]:g}x{len(values)}"


def sweep_signature(res: SweepResult, preds: Predictions, preds_sha: str, bootstrap: bool) -> Signature:
    """Span set and detector (from the predictions' own header when it has one), grids, filter, mode, bootstrap."""
    meta_sig = (preds.meta or {}).get("signature") or {}
    comps = {c.get("name"): c for c in meta_sig.get("components", [])} if isinstance(meta_sig, Mapping) else {}
    spans_c = comps.get("spans") or {}
    det_c = comps.get("det") or {}
    cfg = res.cfg
    parts = [
        Component("spans", str(spans_c.get("value") or "external"), spans_c.get("hash") or preds_sha, {}),
        Component("det", str(det_c.get("value") or "external"), det_c.get("hash"), dict(det_c.get("settings") or {})),
        Component("grid", "", None, {"thr": _g(cfg.thresholds), "ad": _g(cfg.action_delays), "to": _g(cfg.timeouts)}),
        Component("hold", "", None, {"min": cfg.min_hold_s, "max": cfg.max_hold_s}),
        Component("mode", cfg.score_mode if cfg.score_point_s is None else f"{cfg.score_mode}@{cfg.score_point_s:g}"),
    ]
    sig = Signature(SWEEP_DEFINITIONS, tuple(parts), {"predictions": preds_sha})
    return sig.with_bootstrap() if bootstrap else sig


def build_summary(
    res: SweepResult,
    preds: Predictions,
    preds_sha: str,
    *,
    bootstrap: bool = True,
    selection_aware: bool = True,
    selection_max_turns: int = iv.SELECTION_MAX_TURNS,
    bootstrap_max_turns: int = iv.BOOTSTRAP_MAX_TURNS,
) -> JsonObject:
    """summary.json: header, eot-bench's keys, then our additions."""
    cfg, sw, spans = res.cfg, res.sweep, res.spans
    sig = sweep_signature(res, preds, preds_sha, bootstrap)
    out: JsonObject = header(SWEEP_KIND, SCHEMA_VERSION, sig, {"predictions": preds_sha})
    out.update(classification(spans))
    out["operating_points"] = {budget_key(b): _point_json(res.points[budget_key(b)], cfg, budget=b)
                               for b in CUTOFF_BUDGETS}
    mfl = mean_frontier_latency(sw)
    out["mean_frontier_latency_0_10"] = mfl
    out["score_mode"] = cfg.score_mode
    out["score_point_s"] = cfg.score_point_s
    out["min_hold_span_duration"] = cfg.min_hold_s
    out["max_hold_span_duration"] = cfg.max_hold_s
    out["sweep_action_delays"] = list(cfg.action_delays)
    out["sweep_timeouts"] = list(cfg.timeouts)
    out["sweep_delay_values"] = list(cfg.vad_delays)
    # ---- ours
    out["sweep_thresholds"] = list(cfg.thresholds)
    out["n_turns"] = spans.n_turns
    out["n_policies"] = int(sw.is_model.sum())
    out["cutoff_at_latency_budget"] = {latency_key(b): _point_json(res.points[latency_key(b)], cfg, latency_budget=b)
                                       for b in LATENCY_BUDGETS}
    out["vad_baseline"] = {
        "operating_points": {budget_key(b): _vad_json(res.vad[budget_key(b)]) for b in CUTOFF_BUDGETS},
        "cutoff_at_latency_budget": {latency_key(b): _vad_json(res.vad[latency_key(b)]) for b in LATENCY_BUDGETS},
    }
    out["filtered"] = {**spans.filtered, "hold_filter": [cfg.min_hold_s, cfg.max_hold_s],
                       "rule": "hold spans outside the filter are left out of every rate; eot spans are always "
                               "kept"}  # fmt: skip
    if bootstrap and spans.n_turns <= bootstrap_max_turns:
        out["intervals"] = _intervals(res, selection_aware, selection_max_turns)
    elif bootstrap:
        out["intervals"] = {"unit": "turn", "skipped": f"{spans.n_turns} turns > --bootstrap-max-turns "
                                                       f"{bootstrap_max_turns}"}
    out["spec003"] = _spec003(res)
    out["pareto_frontier"] = frontier_json(res)
    return out


def _intervals(res: SweepResult, selection: bool, max_turns: int) -> JsonObject:
    out: JsonObject = {
        "unit": "turn",
        "method": "percentile bootstrap over whole turns: 2000 resamples, default_rng(0), ranks 50 and 1950; "
        "cutoff rate and mean latency as pooled ratios of per-turn sums",
        "n_turns": res.spans.n_turns,
    }
    sel: dict[str, iv.SelectionAware] = {}
    reason = None
    if selection and res.spans.n_turns <= max_turns:
        sel = iv.selection_aware(res.spans, res.cfg, res.sweep, CUTOFF_BUDGETS, LATENCY_BUDGETS, res.points)
    elif selection:
        reason = f"skipped: {res.spans.n_turns} turns > --selection-max-turns {max_turns}"
    else:
        reason = "skipped: --no-selection-aware"
    idx = stats.bootstrap_indices(res.spans.n_turns)
    for name, p in res.points.items():
        if p is None:
            out[name] = None
            continue
        tc = iv.turn_counts(res.spans, res.cfg, p)
        entry: JsonObject = {"fixed_policy": {"label": "policy held fixed", **iv.fixed_policy_intervals(tc, idx)},
                                 "span_wilson_cutoff_rate": iv.wilson_cutoff(tc)}  # fmt: skip
        entry["selection_aware"] = sel[name].to_json() if name in sel else {"label": reason}
        out[name] = entry
    return out


def _spec003(res: SweepResult) -> JsonObject:
    """Spec 003's score of each operating point's commits (per turn: true end, first commit)."""
    out: JsonObject = {"rule": "per turn with an eot span: (true end, first commit of the policy in the turn); "
                                   "a commit inside a hold span is a false cutoff before the true end"}  # fmt: skip
    for name, p in res.points.items():
        if p is None:
            out[name] = None
            continue
        pairs, ids, no_eot = iv.commit_pairs(res.spans, res.cfg, p)
        rep = build_report(pairs, ids=ids, latency_bands_ms=DEFAULT_LATENCY_BANDS_MS, tolerance_ms=DEFAULT_TOLERANCE_MS,
                           intervals=False)
        out[name] = {"n_turns_without_eot_span": no_eot, "score": rep["score"], "false_cutoff": rep["false_cutoff"],
                     "hang_at_ms": rep["hang_at_ms"]}  # fmt: skip
    return out


def write_sweep_parquet(path: Path, res: SweepResult) -> None:
    """Every policy row (model and VAD) with eot-bench's tradeoff columns plus counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sw = res.sweep
    table = pa.table({
        "policy_type": pa.array([str(x) for x in sw.policy_type], pa.string()),
        "threshold": pa.array([None if np.isnan(x) else float(x) for x in sw.threshold], pa.float64()),
        "action_delay": pa.array(sw.action_delay, pa.float64()),
        "timeout": pa.array(sw.timeout, pa.float64()),
        "score_mode": pa.array([res.cfg.score_mode if m else "vad" for m in sw.is_model], pa.string()),
        "cutoff_rate": pa.array(sw.cutoff_rate, pa.float64()),
        "mean_latency": pa.array(sw.mean_latency, pa.float64()),
        "timeout_rate": pa.array(sw.timeout_rate, pa.float64()),
        "detect_rate": pa.array(sw.detect_rate, pa.float64()),
        "f1": pa.array(sw.f1, pa.float64()),
        "n_cutoffs": pa.array(sw.cutoff_count, pa.int64()),
        "n_detected": pa.array(sw.detect_count, pa.int64()),
        "n_hold_spans": pa.array(np.full(len(sw), sw.n_hold), pa.int64()),
        "n_eot_spans": pa.array(np.full(len(sw), sw.n_eot), pa.int64()),
        "is_pareto": pa.array(res.pareto, pa.bool_()),
    })  # fmt: skip
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    atomic_write_bytes(path, buf.getvalue())


# ------------------------------------------------------------------------------------------------ printing


def _pct(x: float | None) -> str:
    return NO_DATA if x is None else f"{x * 100:.1f}%"


def _ms(x: float | None) -> str:
    return NOT_REACHED if x is None else f"{x * 1000:.0f} ms"


def _ivs(v: list[float | None] | None, fmt: Any) -> str:
    if not v:
        return ""
    return f" [{fmt(v[0])}, {fmt(v[1])}]"


def _spec003_lines(sp: Mapping[str, Any]) -> list[str]:
    """One line per operating point: spec 003's per-turn false-cutoff and hang rates of its commits."""
    out = []
    for name, e in sp.items():
        if not isinstance(e, dict):
            continue
        sc = e["score"]
        hang = ", ".join(f">{b} ms {v * 100:.1f}%" for b, v in sc["hang_rate_at_ms"].items())
        out.append(f"spec 003 at {name} (per turn, first commit): false cutoff {sc['false_cutoff_rate'] * 100:.1f}%, "
                   f"hang {hang} ({sc['n']} turns)")
    return out


def format_summary(s: Mapping[str, Any], title: str = "") -> str:
    """The printed table: operating points (model, intervals, VAD baseline), latency budgets, counts, signature."""
    ivs = s.get("intervals") or {}
    t = Table(title=title or "end-of-turn policy sweep", show_lines=False)
    for col in ("budget", "thr / delay / timeout", "false cutoffs [CI]", "mean latency [CI]",
                "re-picked: cutoffs / latency", "detect", "VAD baseline"):  # fmt: skip
        t.add_column(col)
    rows = [(k, s["operating_points"].get(k), "cutoff <= " + k.replace("pct", "%")) for k in s["operating_points"]]
    rows += [(k, s["cutoff_at_latency_budget"].get(k), "latency <= " + k) for k in s["cutoff_at_latency_budget"]]
    vads = {**s["vad_baseline"]["operating_points"], **s["vad_baseline"]["cutoff_at_latency_budget"]}
    for key, p, label in rows:
        v = vads.get(key)
        vtxt = NO_DATA if v is None else f"{_pct(v['cutoff_rate'])} @ {_ms(v['mean_latency'])}"
        if p is None:
            t.add_row(label, "no policy met the budget", NO_DATA, NO_DATA, "", NO_DATA, vtxt)
            continue
        e = ivs.get(key) or {}
        fx = e.get("fixed_policy") or {}
        sa = e.get("selection_aware") or {}
        satxt = ""
        if "cutoff_rate" in sa:
            satxt = f"{_ivs(sa['cutoff_rate'], _pct).strip()} / {_ivs(sa['mean_latency'], _ms).strip()}"
        t.add_row(label, f"{p['threshold']:.2f} / {p['action_delay']:.1f} s / {p['timeout']:.1f} s",
                  _pct(p["cutoff_rate"]) + _ivs(fx.get("cutoff_rate"), _pct),
                  _ms(p["mean_latency"]) + _ivs(fx.get("mean_latency"), _ms), satxt, _pct(p["detect_rate"]),
                  vtxt)  # fmt: skip
    buf = io.StringIO()
    con = Console(file=buf, width=200, no_color=True, highlight=False)
    con.print(t)
    f = s["filtered"]
    auc = NO_DATA if s["auc"] is None else f"{s['auc']:.3f}"
    ap = NO_DATA if s["ap"] is None else f"{s['ap']:.3f}"
    mfl = _ms(s["mean_frontier_latency_0_10"])
    tail = [
        (f"spans: {s['n_hold_spans']} hold + {s['n_eot_spans']} eot in {s['n_turns']} turns; hold filter "
         f"[{s['min_hold_span_duration']}, {s['max_hold_span_duration']}] s removed {f['hold_too_short']} short and "
         f"{f['hold_too_long']} long; {s['n_policies']} policies; mean frontier latency (0-10%) {mfl}; "
         f"AUC {auc}, AP {ap} (diagnostics only)"),
        (f"{NOT_REACHED} = not reached, {NO_DATA} = no policy / no data; CI = 95% bootstrap over whole turns, "
         "policy fixed; re-picked = selection-aware interval (the policy chosen again in each resample)"),
        *_spec003_lines(s.get("spec003") or {}),
        s["signature"]["compact"],
    ]
    return buf.getvalue().rstrip("\n") + "\n" + "\n".join(tail)
