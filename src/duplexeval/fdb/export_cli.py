"""`duplexeval fdb export` (alias `reference-export`) and `duplexeval fdb import`: write an FDB v1.0 tree."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec


def _summary(kind: str, result) -> None:  # noqa: ANN001 - ExportResult
    sel = sum(c["selected"] for c in result.counts.values())
    elig = sum(c["eligible"] for c in result.counts.values())
    typer.echo(f"{kind}: {elig}/{sel} samples eligible ({result.ran} run, {result.reused} reused) -> {result.tree}")
    for subset, c in result.counts.items():
        typer.echo(f"  {subset}: {c['eligible']}/{c['selected']} eligible")


@executor_options
def export_command(
    system: str = typer.Option(..., "--system", help="NAME[:key=value,...], e.g. 'turn-based:silence_ms=700' (see docs/systems.md)."),
    dataset: str = typer.Option(..., "--dataset", help="An FDB v1.0 folder, a synth folder, or 'demo'."),
    out: Path = typer.Option(..., "--out", help="Tree folder to write (resumes an interrupted export of the same run)."),
    subset: Optional[list[str]] = typer.Option(None, "--subset", help="Only this subset (repeatable)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N samples of each subset."),
    force: bool = typer.Option(False, "--force", help="Write into a tree made by another system/dataset, redoing every sample."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Drive a system over a dataset: output.wav (FIFO playout, exactly T), annotations, trace.json, manifest.json.

    With --executor ray the sessions run on Ray workers, one sample per task (the tree must be on a shared path)."""
    from duplexeval.fdb.export import export

    result = export(system, dataset, out, subsets=subset or None, limit=limit, force=force, progress=not quiet,
                    executor=executor_spec)
    _summary("export", result)


def import_command(
    dataset: str = typer.Option(..., "--dataset", help="The FDB v1.0 folder (or 'demo') the outputs were made from."),
    outputs: Path = typer.Option(..., "--outputs", help="Folder with <subset>/<id>/output.wav (16 or 24 kHz; output.json optional); may be the dataset folder itself."),
    out: Path = typer.Option(..., "--out", help="Tree folder to write."),
    subset: Optional[list[str]] = typer.Option(None, "--subset", help="Only this subset (repeatable)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N samples of each subset."),
    name: str = typer.Option("imported", "--name", help="A label for the system that made the outputs (recorded in the manifest)."),
    channel: Optional[str] = typer.Option(None, "--channel", help="For multi-channel output.wav files: the model's channel (0-based N) or 'mean'; recorded. Without it such files are refused."),
    force: bool = typer.Option(False, "--force", help="Write into a tree made by another run, redoing every sample."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Adopt output.wav files made elsewhere: resample to 16 kHz, fix lengths within 80 ms, hash, write manifest.json."""
    from duplexeval.fdb.import_outputs import import_outputs, parse_channel

    result = import_outputs(dataset, outputs, out, subsets=subset or None, limit=limit, name=name, force=force,
                            progress=not quiet, channel=parse_channel(channel))
    _summary("import", result)


def register(apps) -> None:  # noqa: ANN001 - CliApps, imported lazily to avoid a cycle
    """Add `fdb export` (+ hidden alias `reference-export`) and `fdb import`."""
    apps.fdb.command("export")(export_command)
    apps.fdb.command("reference-export", hidden=True)(export_command)
    apps.fdb.command("import")(import_command)
