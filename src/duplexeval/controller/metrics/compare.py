"""Two controllers on the same clips: metric differences (B - A) with a conversation-grouped paired bootstrap.

The per-resample statistics are grouped sums computed here; the differences, skipping and interval come
from ``duplexeval.paired.from_resamples``, the one paired module every family uses.

Groups (conversations) are resampled whole, with the ``duplexeval.stats`` conventions (2000 resamples, a fresh
``default_rng(0)``, one ``integers(0, G, (2000, G))`` matrix, percentile endpoints by the quantile rule); the same
resampled groups are used for A and B, so the interval is for the paired difference. Resamples where either
side's metric is undefined (empty denominator) are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from duplexeval.artifacts import header
from duplexeval.controller.format.data import ControllerData
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.kinds import COMPARE_KIND
from duplexeval.controller.kinds import COMPARE_SCHEMA as COMPARE_SCHEMA_VERSION
from duplexeval.controller.metrics.events import HOUR_US, ClipEvidence
from duplexeval.controller.metrics.frame_metrics import macro_f1_from_confusion
from duplexeval.controller.metrics.report import run_clips, signature
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.paired import from_resamples
from duplexeval.progress import text_table
from duplexeval.stats import NO_DATA, bootstrap_indices

# name -> (numerator column, denominator column, scale); ratios of sums over resampled groups
_COLS = (
    "turns", "early", "none", "eligible", "miss", "pauses", "pause_false", "floor_us",
    "y_on", "y_match", "y_fire_false", "y_region_us", "b_on", "b_match", "b_fire", "listen_us",
)  # fmt: skip
RATIO_METRICS: dict[str, tuple[str, str, float]] = {
    "endpoint.early_cutin_rate": ("early", "turns", 1.0),
    "endpoint.no_endpoint_rate": ("none", "turns", 1.0),
    "endpoint.miss_within_deadline_rate": ("miss", "eligible", 1.0),
    "endpoint.pause_false_endpoint_rate": ("pause_false", "pauses", 1.0),
    "endpoint.pause_false_endpoints_per_hour": ("pause_false", "floor_us", float(HOUR_US)),
    "yield.detection": ("y_match", "y_on", 1.0),
    "yield.false_events_per_hour": ("y_fire_false", "y_region_us", float(HOUR_US)),
    "backchannel.recall": ("b_match", "b_on", 1.0),
    "backchannel.acknowledgments_per_listen_hour": ("b_fire", "listen_us", float(HOUR_US)),
}
LATENCY_METRICS = ("endpoint.latency_median_ms", "endpoint.latency_mean_ms", "yield.latency_median_ms",
                   "backchannel.latency_median_ms")  # fmt: skip


STATE_METRIC = "state.macro_f1"
ALL_METRICS = (STATE_METRIC, *RATIO_METRICS, *LATENCY_METRICS)


class _Groups:
    """Per-group sums and latency lists of one system."""

    def __init__(self, evs: Sequence[ClipEvidence], groups: list[str], policy: EvaluationPolicy) -> None:
        gi = {g: k for k, g in enumerate(groups)}
        G = len(groups)
        self.M = np.zeros((G, len(_COLS)), dtype=np.float64)
        self.lat: dict[str, list[list[float]]] = {k: [[] for _ in range(G)]
                                                  for k in ("endpoint", "yield", "backchannel")}
        c = {name: k for k, name in enumerate(_COLS)}
        mode = policy.endpoint_mode
        deadline = policy.miss_deadline_ms * 1000
        for ev in evs:
            g = gi[ev.group]
            row = self.M[g]
            e = ev.endpoint[mode]
            row[c["turns"]] += len(e.turn_source)
            row[c["early"]] += sum(e.turn_early)
            row[c["none"]] += sum(1 for s in e.turn_source if s is None)
            for obs, lt in zip(e.turn_observe_us, e.turn_latency_us):
                if obs >= deadline:
                    row[c["eligible"]] += 1
                    row[c["miss"]] += int(lt is None or lt > deadline)
            row[c["pauses"]] += len(e.pause_false_cut)
            row[c["pause_false"]] += sum(e.pause_false_cut)
            row[c["floor_us"]] += ev.floor_us
            row[c["y_on"]] += ev.yield_onsets
            row[c["y_match"]] += len(ev.yield_latency_us)
            row[c["y_fire_false"]] += ev.yield_firings - len(ev.yield_latency_us)
            row[c["y_region_us"]] += ev.yield_region_us
            row[c["b_on"]] += ev.backchannel_onsets
            row[c["b_match"]] += len(ev.backchannel_latency_us)
            row[c["b_fire"]] += ev.backchannel_firings
            row[c["listen_us"]] += ev.listen_us
            self.lat["endpoint"][g] += [x / 1000.0 for x in e.turn_latency_us if x is not None]
            self.lat["yield"][g] += [x / 1000.0 for x in ev.yield_latency_us]
            self.lat["backchannel"][g] += [x / 1000.0 for x in ev.backchannel_latency_us]
        self.col = c
        self.cm = np.zeros((G, 16), dtype=np.float64)
        self.has_states = False
        for ev in evs:
            if ev.state_confusion is not None:
                self.cm[gi[ev.group]] += np.asarray(ev.state_confusion, dtype=np.float64).ravel()
                self.has_states = True

    def macro_f1(self, counts: np.ndarray) -> np.ndarray:
        """State macro-F1 from the resampled groups' summed confusion matrices (NaN when none)."""
        if not self.has_states:
            return np.full(counts.shape[0], np.nan)
        return macro_f1_from_confusion((counts @ self.cm).reshape(-1, 4, 4))

    def ratios(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Every ratio metric for each row of group draw counts (NaN where the denominator is 0)."""
        S = counts @ self.M
        out = {}
        for name, (num, den, scale) in RATIO_METRICS.items():
            n, d = S[..., self.col[num]], S[..., self.col[den]]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[name] = np.where(d > 0, n * scale / np.where(d > 0, d, 1.0), np.nan)
        return out

    def point_counts(self) -> dict[str, dict[str, float | int]]:
        """What each point value is made of: a share's count and n, a rate's events and hours, a latency's n."""
        S = self.M.sum(axis=0)
        out: dict[str, dict[str, float | int]] = {}
        for name, (num, den, scale) in RATIO_METRICS.items():
            n, d = S[self.col[num]], S[self.col[den]]
            out[name] = ({"count": int(n), "n": int(d)} if scale == 1.0
                         else {"events": int(n), "hours": round(float(d) / HOUR_US, 6)})
        for key in ("endpoint", "yield", "backchannel"):
            n_lat = sum(len(g) for g in self.lat[key])
            out[f"{key}.latency_median_ms"] = {"n": n_lat}
            if key == "endpoint":
                out["endpoint.latency_mean_ms"] = {"n": n_lat}
        return out

    def latencies(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Latency metrics for each row of group draw counts: quantile-rule median (and mean for endpoint)."""
        out = {}
        R = counts.shape[0]
        for key in ("endpoint", "yield", "backchannel"):
            vals = np.asarray([v for g in self.lat[key] for v in g], dtype=float)
            gid = np.asarray([k for k, g in enumerate(self.lat[key]) for _ in g], dtype=np.int64)
            med = np.full(R, np.nan)
            mean = np.full(R, np.nan)
            if vals.size:
                order = np.argsort(vals, kind="stable")
                vals, gid = vals[order], gid[order]
                block = max(1, 2_000_000 // vals.size)  # bound the (rows, L) weight matrix in memory
                for r0 in range(0, R, block):
                    w = counts[r0 : r0 + block, gid]  # multiplicity of each latency in each resample
                    cw = np.cumsum(w, axis=1)
                    n = cw[:, -1]
                    ok = n > 0
                    k = np.ceil(0.5 * n)
                    pos = np.array([np.searchsorted(cw[r], k[r]) if ok[r] else 0 for r in range(w.shape[0])])
                    med[r0 : r0 + block] = np.where(ok, vals[np.minimum(pos, vals.size - 1)], np.nan)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        mean[r0 : r0 + block] = np.where(ok, (w @ vals) / np.where(ok, n, 1.0), np.nan)
            out[f"{key}.latency_median_ms"] = med
            if key == "endpoint":
                out["endpoint.latency_mean_ms"] = mean
        return out


def group_counts(idx: np.ndarray, G: int) -> np.ndarray:
    """(R, G) matrix: how often each group is drawn in each resample row of ``idx``."""
    R = idx.shape[0]
    flat = (idx + np.arange(R)[:, None] * G).ravel()
    return np.bincount(flat, minlength=R * G).reshape(R, G).astype(np.float64)


def _nn(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def paired_bootstrap(
    evs_a: Sequence[ClipEvidence], evs_b: Sequence[ClipEvidence], policy_a: EvaluationPolicy, policy_b: EvaluationPolicy
) -> JsonObject:
    """Point values of A and B, their difference B - A, and its grouped paired-bootstrap 95% interval."""
    if [e.clip_id for e in evs_a] != [e.clip_id for e in evs_b] or [e.group for e in evs_a] != [e.group for e in evs_b]:
        raise ValueError("compare: A and B must cover the same clips and groups in the same order")
    for x, y in zip(evs_a, evs_b):
        if x.labels_sha256 != y.labels_sha256:
            raise InputError(f"compare: clip {x.clip_id}: A and B have different frame labels or masks")
    groups = sorted({e.group for e in evs_a})
    A, B = _Groups(evs_a, groups, policy_a), _Groups(evs_b, groups, policy_b)
    G = len(groups)
    one = np.ones((1, G))
    point_a = {k: float(v[0]) for k, v in {**A.ratios(one), **A.latencies(one), STATE_METRIC: A.macro_f1(one)}.items()}
    point_b = {k: float(v[0]) for k, v in {**B.ratios(one), **B.latencies(one), STATE_METRIC: B.macro_f1(one)}.items()}
    ra: dict[str, np.ndarray] = {}
    rb: dict[str, np.ndarray] = {}
    if G:
        counts = group_counts(bootstrap_indices(G), G)
        ra = {**A.ratios(counts), **A.latencies(counts), STATE_METRIC: A.macro_f1(counts)}
        rb = {**B.ratios(counts), **B.latencies(counts), STATE_METRIC: B.macro_f1(counts)}
    empty = np.zeros(0)
    metrics = {}
    made_a, made_b = A.point_counts(), B.point_counts()
    for k in ALL_METRICS:
        d = from_resamples(_nn(point_a[k]), _nn(point_b[k]), ra.get(k, empty), rb.get(k, empty), G)
        ok = d.diff is not None and G > 0
        metrics[k] = {
            "a": d.a,
            "b": d.b,
            "diff_b_minus_a": d.diff,
            "ci95": None if not ok or d.interval is None else [float(d.interval[0]), float(d.interval[1])],
            "resamples_skipped": d.skipped if ok else None,
            **({"made_of_a": made_a[k], "made_of_b": made_b[k]} if k in made_a else {}),
        }
    return {
        "method": "conversation-grouped paired percentile bootstrap, 2000 resamples, default_rng(0), "
                  "quantile-rule endpoints",
        "groups": G,
        "clips": len(evs_a),
        "endpoint_mode_a": policy_a.endpoint_mode,
        "endpoint_mode_b": policy_b.endpoint_mode,
        "metrics": metrics,
    }


def compare(a: str | Path, b: str | Path, da: ControllerData, db: ControllerData,
            pa: EvaluationPolicy, pb: EvaluationPolicy) -> JsonObject:
    """The compare file (header first) of two data folders on the same clips: what `controller compare --json` and
    `controller demo` write; `a` and `b` are the labels recorded for the two sides (their paths)."""
    ja = [{k: v for k, v in c.to_json().items() if k != "extra"} for c in da.clips]
    jb = [{k: v for k, v in c.to_json().items() if k != "extra"} for c in db.clips]
    if ja != jb:
        bad = next((x["id"] for x, y in zip(ja, jb) if x != y), None) if len(ja) == len(jb) else None
        what = f"clip {bad} differs" if bad else f"{len(ja)} vs {len(jb)} clips"
        raise InputError(f"compare: {a} and {b} must hold the same clips, events and groups ({what})")
    ea, fa = run_clips(da.iter_clips(), pa)
    eb, fb = run_clips(db.iter_clips(), pb)
    res = paired_bootstrap(ea, eb, pa, pb)
    frame = {}
    for head in ("endpoint", "yield", "backchannel"):
        va, vb = (fa.get(head) or {}).get("roc_auc"), (fb.get(head) or {}).get("roc_auc")
        frame[f"{head}.roc_auc"] = {"a": va, "b": vb, "diff_b_minus_a": None if va is None or vb is None else vb - va}
    inputs = {"a:clips.jsonl": sha256_file(da.root / "clips.jsonl"),
              "b:clips.jsonl": sha256_file(db.root / "clips.jsonl")}
    sig = signature(pa, inputs, bootstrap=True, policy_b=pb if pb != pa else None)
    return {
        **header(COMPARE_KIND, COMPARE_SCHEMA_VERSION, sig, inputs),
        "a": {"path": str(a), "evaluation_policy": pa.to_json()},
        "b": {"path": str(b), "evaluation_policy": pb.to_json()},
        "event_metrics": res,
        "head_ranking_point_only": frame,
    }


def format_comparison(metrics: JsonObject) -> str:
    """The B - A table (metric, A, B, B - A, 95% interval), each side with what its value is made of (count/n,
    events in hours, n latencies); `-` = no data on that side. Shares and AUCs to 3 decimals, rates per hour to 2,
    milliseconds to 1, as every family's tables."""

    def digits(name: str) -> int:
        return 1 if name.endswith("_ms") else 2 if name.endswith("per_hour") or name.endswith("per_listen_hour") else 3

    def num(v: float | None, d: int, signed: bool = False) -> str:
        if v is None:
            return NO_DATA
        return f"{v + 0.0:+.{d}f}" if signed else f"{v:.{d}f}"

    def made(m: JsonObject | None) -> str:
        if not m:
            return ""
        if "count" in m:
            return f" ({m['count']}/{m['n']})"
        if "events" in m:
            return f" ({m['events']} in {m['hours']:.4g} h)"
        return f" (n={m['n']})"

    rows = []
    for k, m in metrics.items():
        if m["a"] is None and m["b"] is None:
            continue
        d = digits(k)
        ci = NO_DATA if m["ci95"] is None else f"[{num(m['ci95'][0], d, True)}, {num(m['ci95'][1], d, True)}]"
        rows.append([k, num(m["a"], d) + made(m.get("made_of_a")), num(m["b"], d) + made(m.get("made_of_b")),
                     num(m["diff_b_minus_a"], d, True), ci])
    return text_table(["metric", "A", "B", "B - A", "95% interval"], rows, right={1, 2, 3})
