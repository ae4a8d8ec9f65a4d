"""`duplexeval fdb replay TREE`: rebuild output.wav and eligibility of network samples from their wire traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from duplexeval.exits import Status, finish


def replay_command(
    tree: Path = typer.Argument(..., help="A tree written by `fdb export` with a network system (samples with "
                                          "trace.jsonl)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; fail (exit 2) if a rebuilt file differs "
                                                      "from the tree."),
) -> None:
    """Rebuild every network sample's output.wav, trace.json and the manifest from trace.jsonl + trace.pcm alone."""
    from duplexeval.fdb.replay_stage import replay

    res = replay(tree, check=check)
    same = res.replayed - len(res.changed)
    verb = "checked" if check else "replayed"
    typer.echo(f"replay: {verb} {_samples(res.replayed)} from their traces: {same} identical, "
               f"{len(res.changed)} "
               f"changed{'' if not res.skipped else f', {res.skipped} without a trace left as they are'}; "
               f"manifest.json {'changed' if res.manifest_changed else 'identical'} -> {res.tree}")
    for key, files in res.changed.items():
        typer.echo(f"  {key}: {', '.join(files)}")
    finish("replay", Status(0, f"{_samples(res.replayed)} rebuilt from their traces"
                               + (" and every file matched (--check)" if check else "")))


def _samples(n: int) -> str:
    """`1 sample`, `2 samples`."""
    return f"{n} sample" if n == 1 else f"{n} samples"


def register(apps: Any) -> None:
    """Add `fdb replay`."""
    apps.fdb.command("replay")(replay_command)
