"""`eot sweep` end to end: read predictions, sweep, summarise, write the four files, print the table.

Shared by the `duplexeval eot sweep` command and the eot demo (which must not import the CLI module).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from duplexeval.eot.kinds import SWEEP_KIND
from duplexeval.eot.plots import plot_operating_points, plot_pareto
from duplexeval.eot.predictions import mode_warning, read_predictions
from duplexeval.eot.sweep_engine import SweepConfig
from duplexeval.eot.sweep_report import (
    build_summary,
    compute,
    detector_name,
    format_summary,
    write_sweep_parquet,
)
from duplexeval.errors import RefusalError
from duplexeval.jsonio import check_output_dir, sha256_file, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.reruns import NOT_OURS, check_replace, read_header


def _check_out_dir(out: Path, force: bool) -> None:
    """Before any work: a summary.json there that is not a sweep's is refused (another sweep's is checked once
    this one's header is known, docs/cli.md section 4)."""
    check_output_dir(out, "--out folder")
    old = read_header(out / "summary.json")
    if old is not None and not force and old.get("kind") != SWEEP_KIND:
        raise RefusalError(f"{out / 'summary.json'}: exists and holds {old.get('kind') or NOT_OURS}, not an eot sweep; "
                           "pass --force to replace it (or write elsewhere with --out)")


def sweep(
    predictions: Path, out: Path | None, cfg: SweepConfig, *, force: bool = False, bootstrap: bool = True,
    selection_aware: bool = True, selection_max_turns: int = 2000, bootstrap_max_turns: int = 20000, plots: bool = True,
    echo: Callable[[str], Any] | None = typer.echo,
    title: str = "",
) -> JsonObject:  # fmt: skip
    """Read, sweep, summarise, write ``out/{summary.json, sweep.parquet, pareto.png, operating_points.png}``, print
    (``echo`` None: print nothing, not even the warning, which the summary's ``notes`` hold)."""

    if out is not None:
        _check_out_dir(out, force)
    preds = read_predictions(predictions)
    sha = sha256_file(predictions)
    warning = mode_warning(preds, cfg.score_mode, str(predictions))
    if warning and echo is not None:
        typer.echo(warning, err=True)
    res = compute(preds, cfg)
    summary = build_summary(res, preds, sha, bootstrap=bootstrap, selection_aware=selection_aware,
                            selection_max_turns=selection_max_turns,
                            bootstrap_max_turns=bootstrap_max_turns)  # fmt: skip
    if warning:
        summary["notes"] = [warning]
    if out is not None:
        check_replace(out / "summary.json", summary, force)
        out.mkdir(parents=True, exist_ok=True)
        write_sweep_parquet(out / "sweep.parquet", res)
        if plots:
            name = title or f"{detector_name(preds, predictions.stem)}: end-of-turn policy sweep"
            plot_pareto(out / "pareto.png", res, name)
            plot_operating_points(out / "operating_points.png", summary, name)
        write_json(out / "summary.json", summary)
    if echo is not None:
        echo(format_summary(summary, title or f"eot sweep: {predictions.name}"))
    return summary
