"""`duplexeval eot compare A B`: two detectors' predictions on the same spans, paired by turn.

Each detector keeps its own operating point at each budget (picked on its own sweep over the common spans); the
difference B - A of the cutoff rate and of the mean latency gets a paired bootstrap over whole turns through
``duplexeval.paired`` (the same resample rows applied to both), with the policies held fixed.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from duplexeval import paired
from duplexeval.artifacts import header
from duplexeval.eot import intervals as iv
from duplexeval.eot.kinds import COMPARE_KIND
from duplexeval.eot.kinds import COMPARE_SCHEMA as SCHEMA_VERSION
from duplexeval.eot.predictions import Predictions, mode_warning
from duplexeval.eot.sweep_engine import (
    CUTOFF_BUDGETS,
    LATENCY_BUDGETS,
    Selected,
    SweepConfig,
    budget_key,
    latency_key,
)
from duplexeval.eot.sweep_report import SweepResult, compute, frontier_json, sweep_signature
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.paired import PairedDifference
from duplexeval.signature import Signature
from duplexeval.stats import NO_DATA
from duplexeval.units import US_PER_S


def _keys(p: Predictions) -> np.ndarray:
    return np.asarray([f"{i}\x00{s}" for i, s in zip(p.id, p.span_index)], dtype=object)


def _restrict(p: Predictions, keep: np.ndarray) -> Predictions:
    return Predictions(p.id[keep], p.language[keep], p.span_index[keep], p.timestamp[keep], p.silence_dur[keep],
                       p.p_eot[keep], p.label[keep], p.source, p.meta)  # fmt: skip


def common_spans(a: Predictions, b: Predictions) -> tuple[Predictions, Predictions, dict[str, int]]:
    """Both tables cut to the (turn, span) pairs they share; labels must agree."""
    ka, kb = _keys(a), _keys(b)
    ua, ub = set(ka.tolist()), set(kb.tolist())
    common = ua & ub
    if not common:
        raise InputError(f"{a.source} and {b.source} share no (id, span_index) span; predict both on the same span set")
    lab_a = dict(zip(ka.tolist(), a.label.tolist()))
    lab_b = dict(zip(kb.tolist(), b.label.tolist()))
    for k in sorted(common):
        if lab_a[k] != lab_b[k]:
            tid, si = k.split("\x00")
            raise InputError(f"turn {tid!r} span {si} is {lab_a[k]} in {a.source} but {lab_b[k]} in {b.source}")
    ma = np.fromiter((k in common for k in ka.tolist()), bool, ka.size)
    mb = np.fromiter((k in common for k in kb.tolist()), bool, kb.size)
    counts = {"common_spans": len(common), "only_in_a": len(ua - common), "only_in_b": len(ub - common)}
    return _restrict(a, ma), _restrict(b, mb), counts


def _ratio(num: np.ndarray, den: np.ndarray, scale: float = 1.0) -> Callable[[np.ndarray], float | None]:
    def stat(rows: np.ndarray) -> float | None:
        d = den[rows].sum()
        return None if d == 0 else float(num[rows].sum() / d / scale)

    return stat


def compare(a: Predictions, b: Predictions, cfg: SweepConfig, sha_a: str, sha_b: str, names: tuple[str, str],
            cfg_b: SweepConfig | None = None) -> JsonObject:
    """The compare.json body: both operating points, both Pareto frontiers and the paired differences at every budget.

    `cfg_b` sweeps B its own way (a score-point model against a streaming one); by default B is swept as A is."""
    cfg_b = cfg if cfg_b is None else cfg_b
    if (cfg_b.min_hold_s, cfg_b.max_hold_s) != (cfg.min_hold_s, cfg.max_hold_s):
        raise InputError("compare: A and B must keep the same hold spans (the same --min-hold and --max-hold)")
    notes = [w for w in (mode_warning(a, cfg.score_mode, names[0]), mode_warning(b, cfg_b.score_mode, names[1])) if w]
    pa, pb, counts = common_spans(a, b)
    ra, rb = compute(pa, cfg), compute(pb, cfg_b)
    sa, sb = ra.spans, rb.spans
    if sa.turn_ids != sb.turn_ids or not np.array_equal(sa.span_index, sb.span_index):
        raise InputError(f"{a.source} and {b.source} keep different spans after the hold filter (their span durations "
                         f"differ); predict both on the same span set with the same grid")  # fmt: skip
    budgets = [(budget_key(x), "cutoff") for x in CUTOFF_BUDGETS] + [(latency_key(x), "latency")
                                                                     for x in LATENCY_BUDGETS]
    out_b: dict[str, BudgetComparison] = {}
    for key, _kind in budgets:
        p1, p2 = ra.points[key], rb.points[key]
        if p1 is None or p2 is None:
            reason = "no policy met the budget for " + " and ".join(n for n, p in zip(names, (p1, p2)) if p is None)
            out_b[key] = BudgetComparison(p1, p2, reason)
            continue
        t1, t2 = iv.turn_counts(sa, cfg, p1), iv.turn_counts(sb, cfg_b, p2)
        n = sa.n_turns
        cut = paired.paired_difference(n, _ratio(t1.cut, t1.n_hold), _ratio(t2.cut, t2.n_hold))
        lat = paired.paired_difference(n, _ratio(t1.latency_us, t1.n_eot, US_PER_S),
                                       _ratio(t2.latency_us, t2.n_eot, US_PER_S))  # fmt: skip
        out_b[key] = BudgetComparison(p1, p2, None, cut, lat)
    sig = Signature("eot-compare-1", (*_sig(ra, a, sha_a).components, *_sig(rb, b, sha_b).components),
                    {"a": sha_a, "b": sha_b}).with_bootstrap()
    out: JsonObject = header(COMPARE_KIND, SCHEMA_VERSION, sig, {"a": sha_a, "b": sha_b})
    out.update({
        "a": names[0], "b": names[1], "pairing": {**counts, "n_turns": sa.n_turns, "unit": "turn",
                                                   "n_hold_spans": int((~sa.is_eot).sum()),
                                                  "n_eot_spans": int(sa.is_eot.sum())},
        "method": "each side's own operating point; B - A with a paired bootstrap over whole turns (policies fixed)",
        "score_mode": {"a": _mode(cfg), "b": _mode(cfg_b)},
        "budgets": {k: e.to_json() for k, e in out_b.items()},
        "frontier": {"a": frontier_json(ra), "b": frontier_json(rb)},
        "notes": notes,
    })  # fmt: skip
    return out


def _mode(cfg: SweepConfig) -> str:
    return cfg.score_mode if cfg.score_point_s is None else f"{cfg.score_mode}@{cfg.score_point_s:g}"


def _sig(res: SweepResult, p: Predictions, sha: str) -> Signature:
    return sweep_signature(res, p, sha, bootstrap=False)


def _pt(p: Selected | None) -> JsonObject | None:
    if p is None:
        return None
    return {"threshold": p.threshold, "action_delay": p.action_delay, "timeout": p.timeout,
            "cutoff_rate": p.cutoff_rate, "mean_latency": p.mean_latency}  # fmt: skip


@dataclass(frozen=True)
class BudgetComparison:
    """Both sides' operating points at one budget and the paired differences B - A (cutoff rate, mean latency in
    s), or the reason there are none (a side met no policy)."""

    a: Selected | None
    b: Selected | None
    reason: str | None = None
    cutoff_rate_diff: PairedDifference | None = None
    mean_latency_diff: PairedDifference | None = None

    def to_json(self) -> JsonObject:
        entry: JsonObject = {"a": _pt(self.a), "b": _pt(self.b)}
        if self.reason is not None:
            entry["reason"] = self.reason
        if self.cutoff_rate_diff is not None:
            entry["cutoff_rate_diff"] = self.cutoff_rate_diff.to_json()
        if self.mean_latency_diff is not None:
            entry["mean_latency_diff"] = self.mean_latency_diff.to_json()
        return entry


def format_compare(c: Mapping[str, Any]) -> str:
    t = Table(title=f"paired comparison: B = {c['b']} minus A = {c['a']} ({c['pairing']['n_turns']} turns)")
    for col in ("budget", "A cutoffs / latency", "B cutoffs / latency", "cutoff diff B-A [95% CI]",
                "latency diff B-A [95% CI]"):
        t.add_column(col)

    def side(p: Mapping[str, Any] | None) -> str:
        return NO_DATA if p is None else f"{p['cutoff_rate'] * 100:.1f}% / {p['mean_latency'] * 1000:.0f} ms"

    def diff(d: Mapping[str, Any] | None, scale: float, unit: str) -> str:
        if d is None:
            return NO_DATA
        if d["diff"] is None:
            return d.get("reason") or NO_DATA
        ivs = d["interval"]
        ci = "" if not ivs else f" [{ivs[0] * scale:+.1f}, {ivs[1] * scale:+.1f}]"
        return f"{d['diff'] * scale:+.1f}{unit}{ci}"

    for key, e in c["budgets"].items():
        label = ("cutoff <= " + key.replace("pct", "%")) if key.endswith("pct") else "latency <= " + key
        t.add_row(label, side(e["a"]), side(e["b"]), diff(e.get("cutoff_rate_diff"), 100, " pts"),
                  diff(e.get("mean_latency_diff"), 1000, " ms"))
    buf = io.StringIO()
    con = Console(file=buf, width=200, no_color=True, highlight=False)
    con.print(t)
    pr = c["pairing"]
    con.print(f"paired on {pr['common_spans']} common spans ({pr['only_in_a']} only in A, {pr['only_in_b']} only in B "
              "are left out)")
    compact: str = c["signature"]["compact"]
    return buf.getvalue().rstrip("\n") + "\n" + compact
