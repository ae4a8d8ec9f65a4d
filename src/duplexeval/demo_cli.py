"""`duplexeval demo`: the main job - every FDB v1.0 stage on the built-in demo set, systems side by side."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def demo_command(
    out: Path = typer.Option(Path("duplexeval-demo"), "--out", "-o", help="Folder for the trees (default ./duplexeval-demo)."),
    systems: list[str] | None = typer.Option(
        None, "--systems", "--system",
        help="Systems to compare, NAME[:key=value,...], repeatable (default: silent, turn-based, talk-over, backchannel).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or stage lines; only the table."),
    force: bool = typer.Option(False, "--force", help="Export again the trees in --out made by another run (an older "
                                                      "demo set, other parameters); without it the demo stops there."),
) -> None:
    """Make the demo set, export it with each baseline, run ASR, official and unified scoring; print one table."""
    from duplexeval.demo import DEFAULT_SYSTEMS, print_report, run_demo

    def say(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    result = run_demo(out, systems or DEFAULT_SYSTEMS, progress=not quiet, say=say, force=force)
    print_report(result)


def register(apps: CliApps) -> None:
    """Add the top-level `duplexeval demo`."""
    apps.root.command("demo")(demo_command)
