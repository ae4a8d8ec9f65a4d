"""Controller (`controller evaluate` / `compare`) and end-of-turn reports in the same page style as the FDB report."""

from __future__ import annotations

from typing import Any

from duplexeval.jsontypes import JsonObject
from duplexeval.report.page import esc, signature_line, table


def _flat(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Leaf values of a nested report object as (dotted.path, text) rows, in the file's order."""
    if isinstance(obj, dict):
        out: list[tuple[str, str]] = []
        for k, v in obj.items():
            out += _flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(obj, list) and not any(isinstance(x, (dict, list)) for x in obj):
        return [(prefix, "[" + ", ".join(_text(x) for x in obj) + "]")]
    if isinstance(obj, list):
        return [r for i, x in enumerate(obj) for r in _flat(x, f"{prefix}[{i}]")]
    return [(prefix, _text(obj))]


def _text(x: Any) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _sig(rep: JsonObject) -> str:
    sig = rep.get("signature")
    return signature_line(sig["compact"]) if isinstance(sig, dict) and "compact" in sig else ""


def controller_body(label: str, rep: JsonObject) -> str:
    """A controller evaluate report: data, frame metrics, event metrics and the policy, as tables."""
    parts = [f"<h2>{esc(label)}</h2>", _sig(rep)]
    for key, title in (("data", "Data"), ("frame_metrics", "Frame metrics"), ("event_metrics", "Event metrics"),
                       ("evaluation_policy", "Evaluation policy")):
        if key in rep:
            parts.append(f"<h3>{title}</h3>" + table(["metric", "value"], _flat(rep[key])))
    return "".join(parts)


def controller_compare_body(label: str, rep: JsonObject) -> str:
    """A controller compare file: B - A per metric with the grouped paired-bootstrap interval."""
    em = rep.get("event_metrics") or {}
    rows = []
    for name, m in (em.get("metrics") or {}).items():
        ci = m.get("ci95")
        rows.append([name, _text(m.get("a")), _text(m.get("b")), _text(m.get("diff_b_minus_a")),
                     "—" if ci is None else f"[{ci[0]:+.4g}, {ci[1]:+.4g}]", _text(m.get("resamples_skipped"))])
    return (f"<h2>{esc(label)}</h2>" + _sig(rep)
            + f"<p class=\"note\">A = {esc((rep.get('a') or {}).get('path'))}, B = "
            f"{esc((rep.get('b') or {}).get('path'))}; {esc(em.get('clips'))} clips in {esc(em.get('groups'))} groups; "
            f"{esc(em.get('method'))}</p>"
            + table(["metric", "A", "B", "B - A", "95% interval", "resamples skipped"], rows))


def eot_body(label: str, rep: JsonObject) -> str:
    """An end-of-turn report: spec 003's score, the shares with their intervals, the latency quantiles."""
    def share(sh: JsonObject) -> list[str]:  # the stats.Share shape: value, count, n, interval
        ci = sh.get("interval")
        return [_text(sh.get("value")), "—" if ci is None or None in ci else f"[{ci[0]:.4f}, {ci[1]:.4f}]",
                f"{sh.get('count')}/{sh.get('n')}"]

    method = (rep.get("false_cutoff") or {}).get("interval_method", "wilson")

    rows = [["false cutoff", *share(rep["false_cutoff"])]] if "false_cutoff" in rep else []
    rows += [[f"hang > {band} ms", *share(sh)] for band, sh in (rep.get("hang_at_ms") or {}).items()]
    lat = rep.get("latency_ms") or {}
    return (f"<h2>{esc(label)}</h2>" + _sig(rep)
            + "<h3>Score (spec 003)</h3>" + table(["field", "value"], _flat(rep.get("score") or {}))
            + "<h3>Shares</h3>" + table(["metric", "share", f"95% interval ({method})", "count/n"], rows)
            + "<h3>Latency (ms)</h3>" + table(["quantile", "value"], _flat(lat.get("quantiles") or {}))
            + f"<p class=\"note\">{esc(lat.get('rule'))}</p>"
            + "".join(f"<p class=\"note\">{esc(n)}</p>" for n in rep.get("notes") or []))
