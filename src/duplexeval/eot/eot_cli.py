"""`duplexeval eot score | predict | sweep | compare | demo`: a thin layer over the eot modules."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.cli_options import emit_json, jobs_option, json_option, json_to_stdout, one_per_cpu
from duplexeval.errors import InputError
from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import Status, fail_over_option, fail_under_option, finish, gated, parse_gates
from duplexeval.jsonio import (
    check_output_dir,
)
from duplexeval.specs import parse_spec

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps

DEMO_OUT = Path("duplexeval-eot-demo")


def _parse_grid(text: str | None, flag: str, default: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """'a:b:step' (inclusive) or 'x,y,z'; None keeps eot-bench's default."""
    if text is None:
        return default
    try:
        if ":" in text:
            a, b, st = (float(x) for x in text.split(":"))
            if not all(math.isfinite(v) for v in (a, b, st)) or st <= 0 or b < a or (b - a) / st > 100_000:
                raise ValueError
            vals = [round(a + i * st, 6) for i in range(math.floor((b - a) / st + 1e-9) + 1)]
        else:
            vals = [float(x) for x in text.split(",") if x.strip()]
            if not vals or not all(math.isfinite(v) for v in vals):
                raise ValueError
    except ValueError:
        raise InputError(f"{flag}: expected 'start:stop:step' (step > 0) or a comma list of finite numbers, "
                         f"got {text!r}") from None
    return tuple(vals)


def _grids(thresholds: str | None, action_delays: str | None,
           timeouts: str | None) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None, tuple[float, ...] | None]:
    """The three grid flags (thresholds, action delays, timeouts) as the API's sequences (None keeps eot-bench's)."""
    return (_parse_grid(thresholds, "--thresholds", None), _parse_grid(action_delays, "--action-delays", None),
            _parse_grid(timeouts, "--timeouts", None))  # fmt: skip


_PAIRS_HELP = ("CSV (header true_turn_end_s,detector_commit_s[,id][,conversation]) or JSONL file of pairs; "
               "an empty or null commit = the detector never fired.")


def eot_score(
    pairs: Path = typer.Argument(..., help=_PAIRS_HELP),
    json_out: Path | None = json_option("the JSON report"),
    rows_out: Path | None = typer.Option(None, "--rows",
                                         help="Write one JSON line per pair (what it contributed) here."),
    show_pairs: bool = typer.Option(False, "--show-pairs", help="Also print one line per pair."),
    bands: str = typer.Option("300,600,1200", "--bands", help="Comma-separated hang latency bands in ms."),
    tolerance_ms: int = typer.Option(50, "--tolerance-ms", help="Early-commit slack before a false cutoff, ms."),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Score end-of-turn (true end, commit) pairs: false cutoff, hang at latency bands, latency quantiles (spec 003).

    Gates name the report's `score` numbers, e.g. --fail-over false_cutoff_rate=0.05 or
    --fail-over hang_rate_at_ms.600=0.2."""
    parse_gates(fail_under, fail_over)  # a malformed gate is refused before any work
    from duplexeval.eot.api import score
    from duplexeval.eot.report import format_report

    try:
        band_list = [int(b) for b in bands.split(",") if b.strip()]
    except ValueError:
        raise InputError(f"--bands: expected comma-separated integers in ms, got {bands!r}") from None
    if any(b < 0 for b in band_list):
        raise InputError(f"--bands: bands must be non-negative, got {bands!r}")
    res = score(pairs, bands=band_list, tolerance_ms=tolerance_ms,
                json_out=None if json_to_stdout(json_out) else json_out, rows_out=rows_out)  # fmt: skip
    if not json_to_stdout(json_out):
        typer.echo(format_report(res.document, res.rows if show_pairs else None))
    else:
        emit_json(json_out, dict(res.document))
    rep = res.document
    gated("eot score", fail_under, fail_over, rep["score"], " in the report's score")


@executor_options
def eot_predict(
    detector: str = typer.Option(..., "--detector", "-d", help="NAME[:key=value,...]: silence, silero, smart-turn, or "
                                 "module.path:Class (predict_batch(items) -> list[float]), e.g. silero:window_ms=300; "
                                 "values are read as JSON when they parse."),
    spans: Path = typer.Option(..., "--spans", help="Span set: eot-bench parquet/JSONL rows, an FDB v1.0 folder, a "
                                                    "conversation manifest (.jsonl) or a synth script (.yaml)."),
    out: Path = typer.Option(..., "--out", "-o", help="Predictions file (.parquet); the same rows are written as "
                                                      ".jsonl next to it."),
    source: str = typer.Option("auto", "--source", help="auto, eot-bench, fdb, conversations or synth."),
    step: float = typer.Option(0.1, "--step", help="Seconds between scored times inside a silence span "
                                                   "(eot-bench: 0.1)."),
    transcript_lag: float = typer.Option(0.5, "--transcript-lag",
                                         help="Words are visible this many seconds after they end (eot-bench: 0.5)."),
    only_at: str | None = typer.Option(None, "--only-at", help="Score only at these silences, comma list in s (e.g. "
                                                               "0.2 for a score-point model)."),
    batch_size: int = typer.Option(16, "--batch-size", help="Items per predict_batch call."),
    jobs: int = jobs_option(1, "Local worker processes (one turn per task)", ray=True),
    force: bool = typer.Option(False, "--force", help="Redo the predictions even when the file there was made "
                                                      "the same way, or replace one made from other spans, detector "
                                                      "or settings."),
    progress: bool | None = typer.Option(None, "--progress/--no-progress",
                                         help="Show a progress bar (default: when stderr is a terminal)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (as every stage's -q; same as "
                                                            "--no-progress)."),
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Causal predictions at every grid time of every silence span, in eot-bench's columns; resumes an interrupted run."""  # noqa: E501 - typer prints this line as the summary
    from duplexeval.eot.api import predict
    from duplexeval.eot.sources import load_span_set
    from duplexeval.eot.spans import span_set_summary

    grid_at = _parse_grid(only_at, "--only-at", ()) if only_at else ()
    parse_spec(detector, "--detector")  # a malformed spec is refused before the spans are read
    ss = load_span_set(spans, source)
    info = span_set_summary(ss)
    skipped = ", ".join(f"{k} {v}" for k, v in info.skipped.items()) or "none"
    typer.echo(f"spans: {info.n_turns} turns, {info.n_hold_spans} hold + {info.n_eot_spans} eot spans "
               f"(skipped: {skipped})")
    r = predict(ss, detector=detector, out=out, step=step, transcript_lag=transcript_lag, only_at=grid_at or (),
                batch_size=batch_size, jobs=jobs, force=force, progress=False if quiet else progress,
                executor=executor_spec)  # fmt: skip
    if r.up_to_date:
        typer.echo(f"predict: {r.n_turns} turns, {r.n_predictions} rows, {r.n_scored} scored: up to date "
                   "(made from the same spans, detector and settings; --force redoes it) -> "
                   + ", ".join(str(f) for f in r.paths))
    else:
        rate = r.n_scored / r.elapsed_s if r.elapsed_s > 0 else float("inf")
        resumed = f", {r.resumed_turns} turns resumed from the journal" if r.resumed_turns else ""
        typer.echo(f"predict: {r.n_turns} turns, {r.n_predictions} rows, {r.n_scored} scored in {r.elapsed_s:.1f} s "
                   f"({rate:.1f} predictions/s{resumed}) -> " + ", ".join(str(f) for f in r.paths))  # fmt: skip
    typer.echo(r.signature.compact())
    if not quiet and not r.up_to_date:
        from duplexeval.progress import timing_line

        typer.echo(timing_line("predict", r.elapsed_s, sum(t.duration_s for t in ss.turns)), err=True)
    finish("eot predict", Status(0, f"{r.n_turns} turns, {r.n_scored} scored predictions (a detector error is exit 2)"))


_MODE_HELP = "max (a span's largest p_eot; streaming detectors) or score_point (one score at --score-point)."


def eot_sweep(
    predictions: Path = typer.Argument(..., help="Predictions (.parquet or .jsonl) in eot-bench's columns, ours or "
                                                 "eot-bench's own."),
    out: Path | None = typer.Option(None, "--out", help="Folder for summary.json, sweep.parquet, pareto.png, "
                                                        "operating_points.png."),
    score_mode: str = typer.Option("max", "--score-mode", help=_MODE_HELP),
    score_point: float | None = typer.Option(None, "--score-point",
                                             help="The score point in seconds of silence (score_point mode)."),
    thresholds: str | None = typer.Option(None, "--thresholds",
                                          help="start:stop:step or a comma list (default 0:1:0.01)."),
    action_delays: str | None = typer.Option(None, "--action-delays", help="Default 0.2:1.0:0.1 s."),
    timeouts: str | None = typer.Option(None, "--timeouts", help="Default 1.0:3.5:0.5 s."),
    min_hold: float = typer.Option(0.2, "--min-hold", help="Shortest hold span kept, s (inclusive)."),
    max_hold: float = typer.Option(5.0, "--max-hold", help="Longest hold span kept, s (inclusive)."),
    bootstrap: bool = typer.Option(True, "--bootstrap/--no-bootstrap",
                                   help="Turn-level bootstrap intervals on every operating point."),
    selection_aware: bool = typer.Option(True, "--selection-aware/--no-selection-aware",
                                         help="Also the interval that re-picks the policy per resample."),
    selection_max_turns: int = typer.Option(2000, "--selection-max-turns",
                                            help="Skip the selection-aware interval above this many turns (memory)."),
    bootstrap_max_turns: int = typer.Option(20000, "--bootstrap-max-turns",
                                            help="Skip every interval above this many turns (the 2000 x turns "
                                                 "index matrix)."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write pareto.png and operating_points.png."),
    force: bool = typer.Option(False, "--force", help="Replace a summary in --out made from other predictions "
                                                      "or settings."),
) -> None:
    """eot-bench's threshold x action-delay x timeout sweep with operating points, VAD baseline and turn intervals."""
    from duplexeval.eot.api import sweep
    from duplexeval.eot.sweep_report import format_summary

    grid_thr, grid_ad, grid_to = _grids(thresholds, action_delays, timeouts)
    res = sweep(predictions, out=out, score_mode=score_mode, score_point=score_point, thresholds=grid_thr,
                action_delays=grid_ad, timeouts=grid_to, min_hold=min_hold, max_hold=max_hold,
                bootstrap=bootstrap, selection_aware=selection_aware, selection_max_turns=selection_max_turns,
                bootstrap_max_turns=bootstrap_max_turns, plots=plots, force=force)  # fmt: skip
    for note in res.notes:
        typer.echo(note, err=True)
    typer.echo(format_summary(res.document, f"eot sweep: {predictions.name}"))
    finish("eot sweep", Status(0, "swept (no rule beyond bad input: gate the operating points with `eot compare`)"))


def eot_compare(
    a: Path = typer.Argument(..., help="Predictions of detector A (.parquet or .jsonl)."),
    b: Path = typer.Argument(..., help="Predictions of detector B on the same spans."),
    json_out: Path | None = json_option("the comparison (compare.json)"),
    score_mode: str = typer.Option("max", "--score-mode", help=_MODE_HELP),
    score_point: float | None = typer.Option(None, "--score-point",
                                             help="The score point in seconds (score_point mode)."),
    score_mode_b: str | None = typer.Option(None, "--score-mode-b",
                                            help="B's own score mode (default: --score-mode), e.g. a score-point model "
                                                 "against a streaming one."),
    score_point_b: float | None = typer.Option(None, "--score-point-b",
                                               help="B's score point in seconds (default: --score-point)."),
    min_hold: float = typer.Option(0.2, "--min-hold", help="Shortest hold span kept, s."),
    max_hold: float = typer.Option(5.0, "--max-hold", help="Longest hold span kept, s."),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Paired difference B - A at every budget (each its own operating point), bootstrap over whole turns.

    Gates name BUDGET.cutoff_rate_diff or BUDGET.mean_latency_diff (B - A), or BUDGET.a.cutoff_rate and the like,
    e.g. --fail-over cutoff_5pct.mean_latency_diff=0.05."""
    parse_gates(fail_under, fail_over)
    from duplexeval.eot.api import compare
    from duplexeval.eot.compare_stage import format_compare

    res = compare(a, b, json_out=None if json_to_stdout(json_out) else json_out, score_mode=score_mode,
                  score_point=score_point, score_mode_b=score_mode_b, score_point_b=score_point_b, min_hold=min_hold,
                  max_hold=max_hold)  # fmt: skip
    c = res.document
    for note in res.notes:
        typer.echo(note, err=True)
    if not json_to_stdout(json_out):
        typer.echo(format_compare(c))
    else:
        emit_json(json_out, dict(c))
    gated("eot compare", fail_under, fail_over, c["budgets"], " in compare.json's budgets")


def eot_demo(
    out: Path = typer.Option(DEMO_OUT, "--out", "-o", help="Folder for the demo's predictions, sweeps and comparison."),
    force: bool = typer.Option(False, "--force", help="Redo everything and replace files of other settings in --out "
                                                      "(a rerun reuses its own predictions)."),
    jobs: int = jobs_option(1, "Worker processes for prediction"),
) -> None:
    """espeak-ng turns with real pauses: silence and silero (and smart-turn if installed), swept and compared."""
    from duplexeval.eot.demo import run_demo

    check_output_dir(out, "--out folder")
    run_demo(out, force=force, echo=typer.echo, jobs=one_per_cpu(jobs))


def eot_check(
    spec: str = typer.Argument(..., metavar="SPEC", help="The detector: NAME[:key=value,...] or module.path:Class "
                                                         "(a module in the current folder is found), e.g. "
                                                         "silero:window_ms=300."),
) -> None:
    """A detector's scores on two short espeak-ng turns: at each pause (hold) and at the true end of turn.

    Exit 1 with a warning when the scores never change; a note says whether, at equal silence, the end of turn
    scores above the pauses (a silence timer's do not)."""
    from duplexeval.eot.api import check

    res = check(spec)
    for line in res.lines:
        typer.echo(line)
    found = list(res.warnings)
    finish("eot check",
           Status(1, "; ".join(found)) if found else Status(0, "its scores react to the audio (no warning)"))


def register(apps: CliApps) -> None:
    """Add `eot score | predict | sweep | compare | demo | check`."""
    apps.eot.command("score")(eot_score)
    apps.eot.command("predict")(eot_predict)
    apps.eot.command("sweep")(eot_sweep)
    apps.eot.command("compare")(eot_compare)
    apps.eot.command("demo")(eot_demo)
    apps.eot.command("check")(eot_check)
