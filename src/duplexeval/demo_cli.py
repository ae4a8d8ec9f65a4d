"""`duplexeval demo`: the main job - every FDB v1.0 stage on the built-in demo set, systems side by side."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def demo_command(
    out: Path = typer.Option(Path("duplexeval-demo"), "--out", "-o",
                             help="Folder for the trees (default ./duplexeval-demo)."),
    systems: list[str] | None = typer.Option(
        None, "--systems", "--system",
        help="Systems to compare, NAME[:key=value,...], repeatable (default: silent, turn-based, talk-over, "
             "backchannel).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or stage lines; only the table."),
    force: bool = typer.Option(False, "--force", help="Export again the trees in --out made by another run (an older "
                                                      "demo set, other parameters); without it the demo stops there."),
    no_v15: bool = typer.Option(False, "--no-v15", help="Skip the FDB v1.5 overlap part (four scenarios, "
                                                        "in-process systems)."),
) -> None:
    """Make the demo set, export it with each baseline, run ASR, official and unified scoring; print one table.
    Then the same for the FDB v1.5 overlap scenarios (in-process systems), in a second table."""
    from duplexeval.demo import DEFAULT_SYSTEMS, print_report, run_demo
    from duplexeval.progress import status_lines, table_console

    say = status_lines(None, not quiet)
    result = run_demo(out, systems or DEFAULT_SYSTEMS, progress=not quiet, say=say, force=force)
    print_report(result)
    if not no_v15:
        from duplexeval.fdb.tasks.overlap import demo as v15
        from duplexeval.systems.registry import make_system

        in_process = [s for s in (systems or v15.DEMO_SYSTEMS) if not getattr(make_system(s), "wall_clock", False)]
        v15.print_report(v15.run(out, in_process, say=say), table_console())


def register(apps: CliApps) -> None:
    """Add the top-level `duplexeval demo`."""
    apps.root.command("demo")(demo_command)
