"""The turn-taking controller page (spec 002): the forest plot of every controller's event and frame metrics against
the baseline (with the grouped paired bootstrap of `controller compare` files), the numbers folded, and one card
per clip: the conversation's two channels and words, each controller's endpoint probability with its commits, and
what each turn and pause probe gave.

Per-clip evidence comes from the data folder a report names (`data.path`, found beside the report file or from the
current folder, and only used when its clips.jsonl has the hash the report records), replayed under the report's
own frozen policy: the same replay `controller evaluate` summed."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.controller.format.data import ControllerData, load_data
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.labels.sources import Conversation, read_manifest
from duplexeval.controller.metrics.events import ClipEvidence, EndpointEvidence
from duplexeval.controller.metrics.report import run_clips
from duplexeval.errors import DuplexEvalError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.report import other_pages
from duplexeval.report.clips import ogg_bytes, peaks_b64
from duplexeval.report.explorer import Item, PageData, Track, Verdict, explorer_html
from duplexeval.report.fdb_evidence import AUTO, AUTO_INLINE_MAX_S, INLINE, NONE
from duplexeval.report.forest import HIGHER, LOWER, Estimate, ForestRow, forest_html
from duplexeval.report.page import esc, signature_line
from duplexeval.report.samples import INPUT_COLOR

AGENT_COLOR = "#6b7280"


@dataclass
class Controller:
    """One evaluate report, its data folder (when found and current) and the per-clip evidence by clip id."""

    path: Path
    report: JsonObject
    data: ControllerData | None
    rows: dict[str, ClipEvidence]
    note: str

    @property
    def mode(self) -> str:
        return str((self.report.get("evaluation_policy") or {}).get("endpoint_mode") or "fallback_on")

    @property
    def name(self) -> str:
        if self.data is not None and isinstance(self.data.info.get("controller"), str):
            return str(self.data.info["controller"]).removeprefix("baseline:")
        return self.path.stem


def find_data(report_path: Path, report: JsonObject) -> tuple[ControllerData | None, str]:
    """The data folder the report was made from: beside the report, else from here; its clips.jsonl must match."""
    d = report.get("data") or {}
    rel = d.get("path")
    if not isinstance(rel, str):
        return None, f"{report_path.name}: names no data folder"
    for cand in (report_path.parent / rel, Path(rel)):
        if (cand / "clips.jsonl").is_file():
            if sha256_file(cand / "clips.jsonl") != d.get("clips_sha256"):
                return None, f"{cand}: clips.jsonl changed since {report_path.name} was made"
            try:
                return load_data(cand), ""
            except DuplexEvalError as exc:
                return None, str(exc)
    return None, f"{report_path.name}: its data folder {rel} is not beside it or here"


def load_controller(path: Path, report: JsonObject) -> Controller:
    data, note = find_data(path, report)
    rows: dict[str, ClipEvidence] = {}
    if data is not None:
        policy = EvaluationPolicy.from_json(report.get("evaluation_policy"), f"{path}: evaluation_policy")
        evs, _ = run_clips(data.iter_clips(), policy)
        rows = {e.clip_id: e for e in evs}
    return Controller(path, report, data, rows, note)


def _share(m: Any) -> Estimate | None:
    if not isinstance(m, dict) or "value" not in m:
        return None
    if m.get("value") is None:
        return Estimate(None, text=f"no data (0/{m.get('n', 0)})")
    lo, hi = (m.get("interval") or [None, None])[:2]
    return Estimate(float(m["value"]), lo, hi, f"{m['value'] * 100:.1f}% [{(lo or 0) * 100:.1f}, "
                                               f"{(hi or 0) * 100:.1f}] ({m.get('count')}/{m.get('n')})")


def _point(x: Any, fmt: str) -> Estimate | None:
    return None if x is None else Estimate(float(x), text=fmt.format(x))


# (label, group, unit, better, value from a report, compare metric key)
def _metrics(c: Controller) -> dict[str, Estimate | None]:
    r = c.report
    ev = r.get("event_metrics") or {}
    ep = (ev.get("endpoint") or {}).get(c.mode) or {}
    fm = r.get("frame_metrics") or {}
    return {
        "endpoint.early_cutin_rate": _share(ep.get("early_cutin")),
        "endpoint.no_endpoint_rate": _share(ep.get("no_endpoint")),
        "endpoint.miss_within_deadline_rate": _share(ep.get("miss_within_deadline")),
        "endpoint.pause_false_endpoint_rate": _share(ep.get("pause_false_endpoints")),
        "yield.detection": _share((ev.get("yield") or {}).get("detection")),
        "backchannel.recall": _share((ev.get("backchannel") or {}).get("recall")),
        "state.macro_f1": _point((fm.get("state") or {}).get("macro_f1"), "{:.3f}"),
        "endpoint.roc_auc": _point((fm.get("endpoint") or {}).get("roc_auc"), "{:.3f}"),
        "endpoint.latency_median_ms": _point((ep.get("latency") or {}).get("median_ms"), "{:.0f} ms"),
        "yield.latency_median_ms": _point(((ev.get("yield") or {}).get("latency") or {}).get("median_ms"), "{:.0f} ms"),
    }


ROWS: tuple[tuple[str, str, str, str, int], ...] = (
    ("endpoint.early_cutin_rate", "endpoint", "early cut-in (fired before the turn ended)", "share", LOWER),
    ("endpoint.no_endpoint_rate", "endpoint", "no endpoint in the turn's window", "share", LOWER),
    ("endpoint.miss_within_deadline_rate", "endpoint", "missed the deadline", "share", LOWER),
    ("endpoint.pause_false_endpoint_rate", "endpoint", "false endpoint in a user pause", "share", LOWER),
    ("yield.detection", "yield", "yield detected", "share", HIGHER),
    ("backchannel.recall", "backchannel", "backchannel recall", "share", HIGHER),
    ("state.macro_f1", "frame heads", "state macro F1", "score", HIGHER),
    ("endpoint.roc_auc", "frame heads", "endpoint head ROC AUC", "score", HIGHER),
    ("endpoint.latency_median_ms", "latency", "endpoint latency (median)", "ms", LOWER),
    ("yield.latency_median_ms", "latency", "yield latency (median)", "ms", LOWER),
)


def _diff(m: Any, unit: str) -> Estimate | None:
    if not isinstance(m, dict) or m.get("diff_b_minus_a") is None:
        return None
    ci = m.get("ci95")
    d = float(m["diff_b_minus_a"])
    fmt: Callable[[float], str] = ((lambda v: f"{v * 100:+.1f} pts") if unit == "share"
                                   else (lambda v: f"{v:+.0f} ms") if unit == "ms"
                                   else (lambda v: f"{v:+.3f}"))
    txt = fmt(d) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "")
    if m.get("resamples_skipped"):
        txt += f", {m['resamples_skipped']} resamples skipped"
    return Estimate(d, None if not ci else float(ci[0]), None if not ci else float(ci[1]), txt)


def _compare_for(comps: Sequence[JsonObject], a: Controller, b: Controller) -> JsonObject | None:
    """The compare file whose A and B are these two reports' data folders (matched by folder name)."""
    def folder(c: Controller) -> str:
        return Path(str((c.report.get("data") or {}).get("path") or "")).name

    for cmp in comps:
        pa, pb = Path(str((cmp.get("a") or {}).get("path") or "")).name, Path(
            str((cmp.get("b") or {}).get("path") or "")).name
        if (pa, pb) == (folder(a), folder(b)):
            return cmp
    return None


def forest_rows(ctls: Sequence[Controller], comps: Sequence[JsonObject], baseline: int) -> list[ForestRow]:
    values = [_metrics(c) for c in ctls]
    paired = [_compare_for(comps, ctls[baseline], c) if k != baseline else None for k, c in enumerate(ctls)]
    rows = []
    for key, group, label, unit, better in ROWS:
        vals = tuple(v.get(key) for v in values)
        diffs = []
        for p in paired:
            metrics = ((p or {}).get("event_metrics") or {}).get("metrics") or {}
            m = metrics.get(key) or ((p or {}).get("head_ranking_point_only") or {}).get(key)
            diffs.append(_diff(m, unit) if p is not None else None)
        if any(v is not None for v in vals) or any(d is not None for d in diffs):
            rows.append(ForestRow(group, label, "score01" if unit == "score" else unit, better, vals, tuple(diffs)))
    return rows


def compare_only_rows(cmp: JsonObject) -> list[ForestRow]:
    """A compare file on its own: A and B per metric (points) and B - A with the grouped paired interval."""
    metrics = ((cmp.get("event_metrics") or {}).get("metrics")) or {}
    rows = []
    for key, group, label, unit, better in ROWS:
        m = metrics.get(key) or (cmp.get("head_ranking_point_only") or {}).get(key)
        if not isinstance(m, dict):
            continue
        fmt = "{:.1%}" if unit == "share" else "{:.0f} ms" if unit == "ms" else "{:.3f}"
        vals = (_point(m.get("a"), fmt), _point(m.get("b"), fmt))
        rows.append(
            ForestRow(group, label, "score01" if unit == "score" else unit, better, vals, (None, _diff(m, unit))))
    return rows


def _endpoint(ev: ClipEvidence, mode: str) -> EndpointEvidence:
    """The clip's turn and pause outcomes under `mode` (none when it has no endpoint probes)."""
    found = ev.endpoint.get(mode) if ev.has_endpoint else None
    return EndpointEvidence() if found is None else found


def _why(ev: ClipEvidence, mode: str) -> tuple[str, str, str]:
    """(outcome, class, why) of one clip under one controller, from its evidence."""
    ep = _endpoint(ev, mode)
    n_turns, n_pauses = len(ep.turn_source), len(ep.pause_false_cut)
    early = sum(1 for k in ep.turn_early_firings if k)
    none = sum(1 for s in ep.turn_source if s is None)
    cuts = sum(1 for fc in ep.pause_false_cut if fc)
    lats = sorted(lt / 1000.0 for lt in ep.turn_latency_us if lt is not None)
    med = f"; median endpoint latency {lats[(len(lats) - 1) // 2]:.0f} ms" if lats else ""
    parts = [f"early cut-in on {early} of {n_turns} turns", f"false endpoint in {cuts} of {n_pauses} pauses"]
    if none:
        parts.append(f"no endpoint on {none}")
    bad = early or cuts or none
    outcome = "early_cutin" if early else "false_endpoint" if cuts else "no_endpoint" if none else "clean"
    return outcome, "bad" if bad else "ok", ", ".join(parts) + med


def _curve_b64(x: np.ndarray) -> str:
    return base64.b64encode(
        np.round(np.clip(np.nan_to_num(np.asarray(x, dtype=np.float64)), 0, 1) * 255).astype(np.uint8).tobytes()
    ).decode("ascii")


def clip_items(ctls: Sequence[Controller], labels: Sequence[str], colors: Sequence[str], data: PageData,
               audio: str) -> list[Item]:
    """One card per clip of the first controller whose data folder was found."""
    ref = next((c for c in ctls if c.data is not None), None)
    if ref is None or ref.data is None:
        return []
    conversations = _conversations(ref.data)
    if audio == AUTO:  # the two channels of every clip inline up to the same limit as the FDB page; none above it
        audio = INLINE if 2 * sum(m.duration_s for m in ref.data.clips) <= AUTO_INLINE_MAX_S else NONE
    items = []
    for n, meta in enumerate(ref.data.clips):
        tracks: list[Track] = []
        conv = conversations.get(meta.source or meta.id)
        if conv is not None:
            for who, a, words, color in (("user", conv.user_audio, conv.user.words, INPUT_COLOR),
                                         ("agent", conv.agent_audio, conv.agent.words, AGENT_COLOR)):
                if a is None:
                    continue
                ref_id = None
                if audio == INLINE:
                    ref_id = f"au-{who}-{meta.id}"
                    data.audio[ref_id] = ("audio/ogg", ogg_bytes(a))
                    ref_id = "#" + ref_id
                tracks.append(Track(-1 if who == "user" else -2, f"{who} (channel)", color, peaks_b64(a),
                                    words=tuple((w, float(s), float(e)) for w, s, e in (words or ())), audio=ref_id))
        verdicts = []
        for k, c in enumerate(ctls):
            row = c.rows.get(meta.id)
            if row is None or c.data is None:
                continue
            outcome, cls, why = _why(row, c.mode)
            verdicts.append(Verdict(k, outcome, cls, why, f"k{k}-{meta.id}"))
            cm = next((m for m in c.data.clips if m.id == meta.id), None)
            if cm is None:
                continue
            frames = c.data.load_frames(cm)
            thr = float((c.report.get("evaluation_policy") or {}).get("endpoint_threshold") or 0.5)
            commits = tuple(t.turn_end_s + (lt / 1000.0) / 1000
                            for t, lt in zip(meta.turn_probes, _endpoint(row, c.mode).turn_latency_us)
                            if lt is not None)
            curve = None if frames.endpoint is None else _curve_b64(frames.endpoint)
            tracks.append(Track(k, labels[k], colors[k % len(colors)], None, curve=curve, level=thr, ticks=commits,
                                note="endpoint probability" if curve else "no endpoint head"))
        marks = [("E", t.turn_end_s) for t in meta.turn_probes]
        spans = [("pause", p.pause_start_s, p.pause_end_s) for p in meta.pause_probes]
        rank = min((0 if v.cls == "bad" else 1 for v in verdicts), default=2)
        item = Item(f"k-{meta.id}", str(meta.group), meta.id, verdicts, float(meta.duration_s), tracks, marks, spans,
                    text=" ".join(w for t in tracks for w, _, _ in t.words))
        items.append(((rank, n), item))
    items.sort(key=lambda x: x[0])
    return [i for _, i in items]


def _conversations(data: ControllerData) -> dict[str, Conversation]:
    """The conversations the data folder was made from (dataset.json `conversations`), by id; none when not found."""
    rel = data.info.get("conversations")
    if not isinstance(rel, str):
        return {}
    for cand in (data.root / rel, data.root.parent / rel):
        if cand.is_file():
            try:
                return {c.id: c for c in read_manifest(cand)}
            except DuplexEvalError:
                return {}
    return {}


def controller_body(ctls: Sequence[Controller], comps: Sequence[tuple[Path, JsonObject]], labels: Sequence[str],
                    colors: Sequence[str], baseline: int, data: PageData, audio: str) -> str:
    """The controller section: forest, numbers, compare tables, clip cards."""
    parts = []
    if ctls:
        rows = forest_rows(ctls, [c for _, c in comps], baseline)
        caption = ("Left: each controller's share with its 95% Wilson interval (frame-head scores and latencies "
                   "are points). Right: B minus the baseline from a `controller compare` file of the same two data "
                   "folders: the conversation-grouped paired bootstrap; 'better' or 'worse' when it excludes 0.")
        parts.append('<section class="card" id="summary"><h2>Which controller is better, and how sure are we?</h2>'
                     + forest_html(labels, colors, baseline if len(ctls) > 1 else None, rows, caption, legend=False)
                     + "".join(f'<p class="note">{esc(c.note)}</p>' for c in ctls if c.note) + "</section>")
    for path, cmp in comps:
        if ctls and any(_compare_for([cmp], ctls[baseline], c) for c in ctls):
            continue  # drawn in the forest above
        names = [Path(str((cmp.get(s) or {}).get("path") or s)).name for s in ("a", "b")]
        parts.append(f'<section class="card"><h2>{esc(path.name)}: {esc(names[1])} against {esc(names[0])}</h2>'
                     + forest_html(names, colors, 0, compare_only_rows(cmp),
                                   "A and B as the file gives them; right: B - A with the grouped paired bootstrap "
                                   "interval.") + "</section>")
    details = "".join(other_pages.controller_body(f"{lb} ({c.path.name})", c.report) for lb, c in zip(labels, ctls))
    details += "".join(other_pages.controller_compare_body(p.name, cmp) for p, cmp in comps)
    parts.append(f'<section class="card"><details><summary>All numbers</summary>{details}</details>'
                 + "".join(signature_line(f"{lb}: {c.report['signature']['compact']}") for lb, c in zip(labels, ctls)
                           if isinstance(c.report.get("signature"), dict)) + "</section>")
    items = clip_items(ctls, labels, colors, data, audio)
    data.add(items)
    parts.append('<h2 id="samples">Clips</h2>')
    if items:
        data.legend = data.legend or [("user channel", INPUT_COLOR), ("agent channel", AGENT_COLOR),
                                      ("commit (endpoint)", "#2f9e44"), ("words", "#3b6fd4"), ("user pause", "#ffe08a")]
        parts.append(explorer_html(items, labels, colors, "conversation"))
    else:
        parts.append('<p class="note">No data folder found beside the reports, so no per-clip cards.</p>')
    return "".join(parts)
