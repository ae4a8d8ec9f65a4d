"""`duplexeval fdb score --tree TREE`: the unified scorer of spec 000 (hidden alias `unified-score`)."""

from __future__ import annotations

from pathlib import Path

import typer

from duplexeval.executor_cli import executor_options
from duplexeval.executors import ExecutorSpec


@executor_options
def score_command(
    tree: Path = typer.Option(..., "--tree", help="A tree written by `fdb export`/`import` and transcribed by `fdb asr`."),
    json_out: bool = typer.Option(False, "--json", help="Print unified.json instead of the report."),
    no_write: bool = typer.Option(False, "--no-write", help="Score and print without writing unified.json / unified-samples.jsonl."),
    jobs: int = typer.Option(0, "--jobs", min=0, help="Local VAD threads (0: one per available CPU); "
                                                      "with --executor ray the cluster's size decides."),
    executor_spec: ExecutorSpec = ExecutorSpec(),
) -> None:
    """Score a tree by the unified rules: writes TREE/unified.json and TREE/unified-samples.jsonl."""
    from duplexeval.fdb.unified import score
    from duplexeval.fdb.unified.report import load_reference, render
    from duplexeval.jsonio import dumps

    result = score(tree, write=not no_write, jobs=jobs or None, executor=executor_spec)
    if json_out:
        typer.echo(dumps(result.to_json()), nl=False)
        return
    u = result.to_json()
    render(result, load_reference(tree, u["manifest_sha256"], u["asr_sha256"]))


def register(apps) -> None:  # noqa: ANN001 - CliApps, imported lazily to avoid a cycle
    """Add `fdb score` and its hidden alias `fdb unified-score`."""
    apps.fdb.command("score")(score_command)
    apps.fdb.command("unified-score", hidden=True)(score_command)
