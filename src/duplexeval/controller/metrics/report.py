"""`controller evaluate`: one pass over a data folder gives frame metrics, event metrics and the policy used."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from duplexeval.artifacts import header
from duplexeval.controller.format.data import Clip, ControllerData
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.kinds import REPORT_KIND
from duplexeval.controller.kinds import REPORT_SCHEMA as REPORT_SCHEMA_VERSION
from duplexeval.controller.metrics.events import ClipEvidence, aggregate, clip_events
from duplexeval.controller.metrics.frame_metrics import FrameAccumulator
from duplexeval.jsonio import dumps, sha256_bytes, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Component, Signature
from duplexeval.stats import NO_DATA, NOT_REACHED

DEFINITIONS = "controller-spec002-1"


def _policy_component(policy: EvaluationPolicy, name: str = "policy") -> Component:
    pj = policy.to_json()
    return Component(name, str(policy.endpoint_mode), sha256_bytes(dumps(pj).encode("utf-8")), {}, pj)


def signature(
    policy: EvaluationPolicy, inputs: dict[str, str], bootstrap: bool = False, policy_b: EvaluationPolicy | None = None
) -> Signature:
    """What made a controller number: the definitions, the frozen policy (primary mode, hash), the input hashes."""
    comps = (_policy_component(policy),) + ((_policy_component(policy_b, "policy_b"),) if policy_b is not None else ())
    sig = Signature(DEFINITIONS, comps, inputs)
    return sig.with_bootstrap() if bootstrap else sig


def run_clips(clips: Iterable[Clip], policy: EvaluationPolicy) -> tuple[list[ClipEvidence], JsonObject]:
    """Replay and frame-score every clip in one pass (one clip's arrays in memory at a time)."""
    acc = FrameAccumulator()
    seen: set[str] = set()
    evs: list[ClipEvidence] = []
    for clip in clips:
        cm = acc.add(clip.frames)
        ev = clip_events(clip, policy, seen)
        ev.state_confusion = cm
        evs.append(ev)
    return evs, acc.result()


def evaluate(
    data: ControllerData, policy: EvaluationPolicy, *, data_label: str | None = None,
    evidence: list[ClipEvidence] | None = None
) -> JsonObject:
    """The full JSON report for a loaded data folder under a policy (per-clip evidence appended to ``evidence``)."""
    evs, frames = run_clips(data.iter_clips(), policy)
    if evidence is not None:
        evidence.extend(evs)
    clips_sha = sha256_file(data.root / "clips.jsonl")
    inputs = {"clips.jsonl": clips_sha}
    return {
        **header(REPORT_KIND, REPORT_SCHEMA_VERSION, signature(policy, inputs), inputs),
        "data": {
            "path": data_label if data_label is not None else str(data.root),
            "clips_sha256": clips_sha,
            "clips": len(data.clips),
            "groups": len({c.group_id for c in data.clips}),
            "reference_hours": data.reference_s() / 3600.0,
        },
        "evaluation_policy": policy.to_json(),
        "frame_metrics": frames,
        "event_metrics": aggregate(evs, policy),
    }


def _pct(sh: JsonObject | None) -> str:
    if not sh or sh.get("value") is None:
        return NO_DATA if not sh else f"{NO_DATA} (0/{sh.get('n', 0)})"
    return f"{sh['value'] * 100:.1f}% ({sh['count']}/{sh['n']})"


def _ms(v: float | None, n: int = 0) -> str:
    """A latency in ms; `n/r` when samples exist but the quantile is not reached, `-` when there are none."""
    if v is None:
        return NOT_REACHED if n else NO_DATA
    return f"{v:.0f} ms"


def _rate(v: float | None) -> str:
    return NO_DATA if v is None else f"{v:.2f}/h"


def _num(v: float | None) -> str:
    return NO_DATA if v is None else f"{v:.3f}"


def format_report(rep: Mapping[str, Any]) -> str:
    """A compact text summary of a report."""
    lines = [f"controller report: {rep['data']['clips']} clips, {rep['data']['groups']} groups"]
    fm = rep["frame_metrics"]
    if fm.get("state"):
        s = fm["state"]
        lines.append(f"  state macro-F1 {_num(s['macro_f1'])} over {s['scored']} frames ({s['masked']} masked)")
    for h in ("endpoint", "yield", "backchannel"):
        r = fm.get(h)
        if r and "scored" in r:
            lines.append(f"  {h:<11} ROC-AUC {_num(r['roc_auc'])}  AP {_num(r['average_precision'])}  "
                         f"({r['positives']} pos / {r['scored']} frames)")
    em = rep["event_metrics"]
    if "endpoint" in em:
        for mode in ("head_only", "fallback_on"):
            e = em["endpoint"][mode]
            star = "*" if mode == em["endpoint"]["primary_mode"] else " "
            lat = e["latency"]
            lines.append(
                f" {star}endpoint[{mode}] latency mean {_ms(lat['mean_ms'])} median {_ms(lat['median_ms'], lat['n'])} "
                f"p90 {_ms(lat['p90_ms'], lat['n'])} (n={lat['n']}); early {_pct(e['early_cutin'])}; none "
                f"{_pct(e['no_endpoint'])}; miss<=1.2s {_pct(e['miss_within_deadline'])} "
                f"({e['miss_within_deadline']['censored']} censored); head {_pct(e['head'])} fallback "
                f"{_pct(e['fallback'])}; pause false {_pct(e['pause_false_endpoints'])} = "
                f"{_rate(e['pause_false_endpoints']['per_hour'])}"
            )
        d = em["dense_scan"]
        if d["user_pauses"]:
            lines.append(
                f"  dense scan: false endpoints {_rate(d['false_endpoints']['per_hour'])}, "
                f"filler floor-takings {_rate(d['filler_floor_takings']['per_hour'])} "
                f"({d['filler_floor_takings']['count']})"
            )
    if "yield" in em:
        y = em["yield"]
        lines.append(
            f"  yield detection {_pct(y['detection'])}, median latency "
            f"{_ms(y['latency']['median_ms'], y['latency']['n'])}, false events {_rate(y['false_events']['per_hour'])}"
        )
    if "backchannel" in em:
        b = em["backchannel"]
        lines.append(
            f"  backchannel recall {_pct(b['recall'])}, median latency "
            f"{_ms(b['latency']['median_ms'], b['latency']['n'])}, acknowledgments "
            f"{_rate(b['acknowledgment_rate']['per_hour'])} per LISTEN hour"
        )
    if "endpoint" in em:
        lines.append(f"  * = the primary endpoint mode ({em['endpoint']['primary_mode']}, from the evaluation policy): "
                     "the one calibrate and compare use; the other mode is shown for reference")
    lines.append(f"  {NOT_REACHED} = not reached, {NO_DATA} = no data (empty denominator)")
    if "signature" in rep:
        lines.append(f"signature: {rep['signature']['compact']}")
    return "\n".join(lines)
