"""`duplexeval fdb score TREE`: the unified scorer of spec 000 (hidden alias `unified-score`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.cli_options import emit_json, jobs_option, json_option, json_to_stdout
from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import (
    check_gates,
    combine,
    eligibility,
    fail_over_option,
    fail_under_option,
    finish,
    metric_values,
    min_eligible_option,
    parse_gates,
)
from duplexeval.jsontypes import JsonObject

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


@executor_options
def score_command(
    tree: Path = typer.Argument(..., help="A tree written by `fdb export`/`import` and transcribed by `fdb asr`."),
    json_out: Path | None = json_option("unified.json (with --sensitivity: {unified, sensitivity})"),
    no_write: bool = typer.Option(False, "--no-write", help="Score and print without writing unified.json / "
                                                            "unified-samples.jsonl."),
    jobs: int = jobs_option(0, "Local VAD threads", ray=True),
    sensitivity: bool = typer.Option(
        False,
        "--sensitivity",
        help="Also run spec 000's VAD sensitivity analysis of the interruption metrics (thresholds 0.3-0.7, "
        "minimum silence 50-500 ms; whole-file scans) and flag samples whose S is within 200 ms of a segment "
        "edge; writes TREE/unified-sensitivity.json. The headline numbers keep spec 000's rule.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No timing line on stderr."),
    min_eligible: float | None = min_eligible_option(),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Score a tree by the unified rules: writes TREE/unified.json and TREE/unified-samples.jsonl.

    Gates name SUBSET.METRIC as unified.json does, e.g. --fail-under candor_turn_taking.response_rate_1s=0.8
    or --fail-over candor_turn_taking.response_latency_s=1.2 (its median; .p90 for the 90th percentile)."""
    from duplexeval.fdb.tree import tree_audio_s
    from duplexeval.fdb.unified import score
    from duplexeval.fdb.unified.report import load_reference, render
    from duplexeval.fdb.unified.sensitivity import analyse_tree
    from duplexeval.progress import StageClock, table_console

    gates = parse_gates(fail_under, fail_over)
    clock = StageClock("score")
    result = score(tree, write=not no_write, jobs=jobs or None, executor=executor_spec)
    sens = analyse_tree(tree, not no_write, jobs or None) if sensitivity else None
    u = result.to_json()
    emit_json(json_out, u if sens is None else {"unified": u, "sensitivity": sens.to_json()})
    status = combine(eligibility(unified_counts(u), min_eligible),
                     check_gates(gates, unified_values(u), " in unified.json"))
    if not json_to_stdout(json_out):
        console = table_console()  # the terminal's width, or wide when piped: tables never wrap in a log
        render(result, load_reference(tree, u["manifest_sha256"], u["asr_sha256"]), console)
        if sens is not None:
            from duplexeval.fdb.unified.sensitivity import render as render_sensitivity

            render_sensitivity(sens, console)
    if not quiet:
        clock.say(tree_audio_s(tree))
    finish("score", status)



def unified_values(u: JsonObject) -> dict[str, float | None]:
    """The numbers a gate may name in unified.json: SUBSET.METRIC (and SUBSET.METRIC.p90 for latencies)."""
    return metric_values({name: sub.get("metrics", {}) for name, sub in u["subsets"].items()})


def unified_counts(u: JsonObject) -> dict[str, tuple[int, int]]:
    """(eligible, selected) per subset of unified.json, for --min-eligible."""
    return {name: (sub["counts"]["eligible"], sub["counts"]["selected"]) for name, sub in u["subsets"].items()}


def register(apps: CliApps) -> None:
    """Add `fdb score` and its hidden alias `fdb unified-score`."""
    apps.fdb.command("score")(score_command)
    apps.fdb.command("unified-score", hidden=True)(score_command)
