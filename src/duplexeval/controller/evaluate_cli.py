"""`duplexeval controller evaluate | calibrate | compare` (spec 002 core); the comparison is imported inside its
command (it pulls scipy.stats, which every `duplexeval --help` would pay)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from duplexeval.cli_options import emit_json, json_option, json_to_stdout
from duplexeval.controller.calibration.thresholds import Targets, calibrate, targets_from_report
from duplexeval.controller.format.data import load_data
from duplexeval.controller.format.policy import EvaluationPolicy, load_policy, save_policy
from duplexeval.controller.metrics.events import ClipEvidence, evaluate_events, evidence_row
from duplexeval.controller.metrics.report import evaluate, format_report
from duplexeval.errors import InputError, RefusalError
from duplexeval.exits import Status, fail_over_option, fail_under_option, finish, gated, parse_gates
from duplexeval.jsonio import atomic_write_text, dumps_line, sha256_file
from duplexeval.schemas import check_number

if TYPE_CHECKING:  # duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def _policy(path: Path | None, mode: str | None) -> EvaluationPolicy:
    pol = load_policy(path) if path is not None else EvaluationPolicy()
    return pol.with_(endpoint_mode=mode) if mode else pol


def controller_evaluate(
    data: Path = typer.Argument(..., help="Controller data folder (dataset.json, clips.jsonl, frames/)."),
    policy: Path | None = typer.Option(None, "--policy", help="Frozen policy JSON (default: spec 002 offline operating point)."),
    mode: str | None = typer.Option(None, "--mode", help="Primary endpoint mode: head_only or fallback_on (overrides the policy)."),
    json_out: Path | None = json_option("the JSON report"),
    rows: Path | None = typer.Option(None, "--rows", help="Write per-clip evidence (one JSON line per clip) here."),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Frame metrics and replayed event metrics of a controller's outputs under a frozen policy.

    Gates name frame.* and event.* numbers of the report, e.g. --fail-under frame.state.macro_f1=0.6."""
    parse_gates(fail_under, fail_over)
    pol = _policy(policy, mode)
    evs: list[ClipEvidence] = []
    rep = evaluate(load_data(data), pol, evidence=evs)
    if not json_to_stdout(json_out):
        typer.echo(format_report(rep))
    emit_json(json_out, rep)
    if rows is not None:
        atomic_write_text(rows, "".join(dumps_line(evidence_row(e)) for e in evs))
    gated("controller evaluate", fail_under, fail_over, {"frame": rep["frame_metrics"], "event": rep["event_metrics"]},
          " in the report")


def _grid(text: str) -> list[float]:
    try:
        if ":" in text:
            a, b, step = (float(x) for x in text.split(":"))
        else:
            values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--grid: expected 'start:stop:step' or a comma list, got {text!r}") from None
    if ":" not in text:
        if not values:
            raise InputError(f"--grid: no thresholds in {text!r}")
        for v in values:
            check_number(v, "--grid", "threshold", -1e6, 1e6)
        return values
    for name, v in (("start", a), ("stop", b)):
        check_number(v, "--grid", name, -1e6, 1e6)
    check_number(step, "--grid", "step", 0.0, 1e6, lo_open=True)
    if b < a:
        raise InputError(f"--grid: stop {b:g} is below start {a:g}")
    n = int(round((b - a) / step)) + 1
    if n > 100_000:
        raise InputError(f"--grid: {n} thresholds is too many (at most 100000); use a larger step")
    return [round(a + k * step, 6) for k in range(n)]


def controller_calibrate(
    dev: Path = typer.Argument(..., help="Development data folder with the candidate controller's outputs."),
    out: Path = typer.Option(..., "--out", help="Where to write the frozen policy JSON."),
    base_policy: Path | None = typer.Option(None, "--base-policy", help="Policy whose non-threshold settings are kept."),
    reference: Path | None = typer.Option(None, "--reference", help="Reference system's outputs on the same dev clips: its event rates become the targets."),
    reference_policy: Path | None = typer.Option(None, "--reference-policy", help="Policy for the reference (default: spec 002 operating point)."),
    pause_cutin_ceiling: float | None = typer.Option(None, "--pause-cutin-ceiling", help="Max share of pause probes with a false endpoint."),
    yield_false_per_hour: float | None = typer.Option(None, "--yield-false-per-hour", help="Max yield false events per hour."),
    backchannel_ack_per_hour: float | None = typer.Option(None, "--backchannel-ack-per-hour", help="Max acknowledgments per LISTEN hour."),
    grid: str = typer.Option("0.05:0.99:0.01", "--grid", help="Thresholds to try: start:stop:step or a comma list."),
    json_out: Path | None = json_option("the calibration table"),
    force: bool = typer.Option(False, "--force", help="Replace a policy file calibrated from other data, targets or grid."),
) -> None:
    """Pick thresholds on development data by spec 002's rules and write a frozen policy for `evaluate`."""
    base = _policy(base_policy, None)
    t = Targets(pause_cutin_ceiling, yield_false_per_hour, backchannel_ack_per_hour)
    ref_info = None
    if reference is not None:
        ref = load_data(reference)
        rpol = _policy(reference_policy, base.endpoint_mode)
        _evs, agg = evaluate_events(ref.iter_clips(), rpol)
        rt = targets_from_report(agg, rpol.endpoint_mode)
        t = Targets(
            t.pause_cutin_ceiling if t.pause_cutin_ceiling is not None else rt.pause_cutin_ceiling,
            t.yield_false_per_hour if t.yield_false_per_hour is not None else rt.yield_false_per_hour,
            t.backchannel_ack_per_hour if t.backchannel_ack_per_hour is not None else rt.backchannel_ack_per_hour,
        )
        ref_info = {"path": str(reference), "clips_sha256": sha256_file(ref.root / "clips.jsonl"), "policy": rpol.to_json()}
    if t.pause_cutin_ceiling is None and t.yield_false_per_hour is None and t.backchannel_ack_per_hour is None:
        raise InputError("calibrate: give --reference or at least one target (--pause-cutin-ceiling, --yield-false-per-hour, --backchannel-ack-per-hour)")
    d = load_data(dev)
    pol, info = calibrate(d.iter_clips(), base, t, _grid(grid))
    prov = {"calibration": {"dev": str(dev), "dev_clips_sha256": sha256_file(d.root / "clips.jsonl"), "reference": ref_info,
                            "targets": info["targets"], "chosen": info["chosen"], "mode": info["mode"]}}  # fmt: skip
    _check_policy_out(out, {"evaluation_policy": pol.to_json(), **prov}, force)
    save_policy(out, pol, prov)
    if not json_to_stdout(json_out):
        for head, c in info["chosen"].items():
            typer.echo(f"{head}: threshold {c['threshold']} ({c['rule']})")
        typer.echo(f"policy written to {out}")
    emit_json(json_out, {**prov, "evaluation_policy": pol.to_json(), "table": info["table"]})
    finish("controller calibrate", Status(0, f"thresholds chosen for {len(info['chosen'])} heads"))


def _check_policy_out(out: Path, new: dict[str, Any], force: bool) -> None:
    """A policy file there is replaced only when it is this calibration's (docs/cli.md section 4) or with `force`."""
    if force or not out.exists():
        return
    try:
        old = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        old = None
    if not isinstance(old, dict) or "evaluation_policy" not in old:
        raise RefusalError(f"{out}: exists and is not a policy duplexeval wrote; pass --force to replace it (or --out elsewhere)")
    if old != json.loads(json.dumps(new)):
        what = "other data or targets" if old.get("calibration") != new.get("calibration") else "another policy"
        raise RefusalError(f"{out}: exists and holds a policy calibrated from {what}; pass --force to replace it (or --out elsewhere)")


def controller_compare(
    a: Path = typer.Argument(..., help="Data folder with controller A's outputs."),
    b: Path = typer.Argument(..., help="Data folder with controller B's outputs on the same clips."),
    policy: Path | None = typer.Option(None, "--policy", help="Frozen policy for both (default: spec 002 operating point)."),
    policy_b: Path | None = typer.Option(None, "--policy-b", help="A separate frozen policy for B."),
    mode: str | None = typer.Option(None, "--mode", help="Endpoint mode for both: head_only or fallback_on."),
    json_out: Path | None = json_option("the comparison"),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Differences B - A with a conversation-grouped paired bootstrap (same clips, labels and groups required).

    Gates judge each difference B - A, e.g. --fail-over endpoint.early_cutin_rate=0.02 (frame.* for the ROC-AUCs)."""
    parse_gates(fail_under, fail_over)
    # lazy: compare -> duplexeval.paired -> scipy.stats, 1.3 s that every `duplexeval --help` would pay
    from duplexeval.controller.metrics.compare import comparison_artifact, format_comparison

    pa = _policy(policy, mode)
    pb = _policy(policy_b, mode) if policy_b is not None else pa
    out = comparison_artifact(a, b, load_data(a), load_data(b), pa, pb)
    res = out["event_metrics"]
    if not json_to_stdout(json_out):
        typer.echo(f"B - A over {res['clips']} clips in {res['groups']} groups (95% grouped paired bootstrap):")
        typer.echo(format_comparison(res["metrics"]))
        typer.echo(f"signature: {out['signature']['compact']}")
    emit_json(json_out, out)
    gated("controller compare", fail_under, fail_over, {**res["metrics"], "frame": out["head_ranking_point_only"]},
          " in the comparison")


def register(apps: CliApps) -> None:
    """Add `controller evaluate`, `calibrate`, `compare`."""
    apps.controller.command("evaluate")(controller_evaluate)
    apps.controller.command("calibrate")(controller_calibrate)
    apps.controller.command("compare")(controller_compare)
