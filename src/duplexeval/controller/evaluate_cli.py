"""`duplexeval controller evaluate | calibrate | compare` (spec 002 core); the comparison is imported inside its
command (it pulls scipy.stats, which every `duplexeval --help` would pay)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.cli_options import emit_json, json_option, json_to_stdout
from duplexeval.controller.api import DEFAULT_GRID
from duplexeval.exits import Status, fail_over_option, fail_under_option, finish, gated, parse_gates

if TYPE_CHECKING:  # duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def controller_evaluate(
    data: Path = typer.Argument(..., help="Controller data folder (dataset.json, clips.jsonl, frames/)."),
    policy: Path | None = typer.Option(None, "--policy", help="Frozen policy JSON (default: spec 002 offline "
                                                              "operating point)."),
    mode: str | None = typer.Option(None, "--mode", help="Primary endpoint mode: head_only or fallback_on (overrides "
                                                         "the policy)."),
    json_out: Path | None = json_option("the JSON report"),
    rows: Path | None = typer.Option(None, "--rows", help="Write per-clip evidence (one JSON line per clip) here."),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Frame metrics and replayed event metrics of a controller's outputs under a frozen policy.

    Gates name frame.* and event.* numbers of the report, e.g. --fail-under frame.state.macro_f1=0.6."""
    parse_gates(fail_under, fail_over)
    from duplexeval.controller.api import evaluate
    from duplexeval.controller.metrics.report import format_report

    res = evaluate(data, policy=policy, mode=mode, json_out=None if json_to_stdout(json_out) else json_out,
                   rows_out=rows)
    rep = res.document
    if not json_to_stdout(json_out):
        typer.echo(format_report(rep))
    else:
        emit_json(json_out, dict(rep))
    gated("controller evaluate", fail_under, fail_over, {"frame": rep["frame_metrics"], "event": rep["event_metrics"]},
          " in the report")


def controller_calibrate(
    dev: Path = typer.Argument(..., help="Development data folder with the candidate controller's outputs."),
    out: Path = typer.Option(..., "--out", help="Where to write the frozen policy JSON."),
    base_policy: Path | None = typer.Option(None, "--base-policy",
                                            help="Policy whose non-threshold settings are kept."),
    reference: Path | None = typer.Option(None, "--reference",
                                          help="Reference system's outputs on the same dev clips: its event rates "
                                               "become the targets."),
    reference_policy: Path | None = typer.Option(None, "--reference-policy",
                                                 help="Policy for the reference (default: spec 002 operating point)."),
    pause_cutin_ceiling: float | None = typer.Option(None, "--pause-cutin-ceiling",
                                                     help="Max share of pause probes with a false endpoint."),
    yield_false_per_hour: float | None = typer.Option(None, "--yield-false-per-hour",
                                                      help="Max yield false events per hour."),
    backchannel_ack_per_hour: float | None = typer.Option(None, "--backchannel-ack-per-hour",
                                                          help="Max acknowledgments per LISTEN hour."),
    grid: str = typer.Option(DEFAULT_GRID, "--grid", help="Thresholds to try: start:stop:step or a comma list."),
    json_out: Path | None = json_option("the calibration table"),
    force: bool = typer.Option(False, "--force", help="Replace a policy file calibrated from other data, "
                                                      "targets or grid."),
) -> None:
    """Pick thresholds on development data by spec 002's rules and write a frozen policy for `evaluate`."""
    from duplexeval.controller.api import calibrate, threshold_grid

    res = calibrate(dev, out=out, base_policy=base_policy, reference=reference, reference_policy=reference_policy,
                    pause_cutin_ceiling=pause_cutin_ceiling, yield_false_per_hour=yield_false_per_hour,
                    backchannel_ack_per_hour=backchannel_ack_per_hour, grid=threshold_grid(grid),
                    json_out=None if json_to_stdout(json_out) else json_out, force=force)  # fmt: skip
    if not json_to_stdout(json_out):
        for head, c in res.chosen.items():
            typer.echo(f"{head}: threshold {c.threshold} ({c.rule})")
        typer.echo(f"policy written to {out}")
    else:
        emit_json(json_out, dict(res.document))
    info = res.document["calibration"]
    finish("controller calibrate", Status(0, f"thresholds chosen for {len(info['chosen'])} heads"))


def controller_compare(
    a: Path = typer.Argument(..., help="Data folder with controller A's outputs."),
    b: Path = typer.Argument(..., help="Data folder with controller B's outputs on the same clips."),
    policy: Path | None = typer.Option(None, "--policy", help="Frozen policy for both (default: spec 002 "
                                                              "operating point)."),
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
    from duplexeval.controller.api import compare
    from duplexeval.controller.metrics.compare import format_comparison

    out = compare(a, b, policy=policy, policy_b=policy_b, mode=mode,
                  json_out=None if json_to_stdout(json_out) else json_out).document  # fmt: skip
    res = out["event_metrics"]
    if not json_to_stdout(json_out):
        typer.echo(f"B - A over {res['clips']} clips in {res['groups']} groups (95% grouped paired bootstrap):")
        typer.echo(format_comparison(res["metrics"]))
        typer.echo(f"signature: {out['signature']['compact']}")
    else:
        emit_json(json_out, dict(out))
    gated("controller compare", fail_under, fail_over, {**res["metrics"], "frame": out["head_ranking_point_only"]},
          " in the comparison")


def register(apps: CliApps) -> None:
    """Add `controller evaluate`, `calibrate`, `compare`."""
    apps.controller.command("evaluate")(controller_evaluate)
    apps.controller.command("calibrate")(controller_calibrate)
    apps.controller.command("compare")(controller_compare)
