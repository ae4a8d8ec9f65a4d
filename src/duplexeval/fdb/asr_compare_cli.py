"""`duplexeval fdb asr-compare TREE_A TREE_B`: what swapping the ASR does, sample by sample."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.cli_options import emit_json, json_option, json_to_stdout

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def asr_compare_command(
    tree_a: Path = typer.Argument(..., help="A tree transcribed by `duplexeval fdb asr` (the reference, A)."),
    tree_b: Path = typer.Argument(..., help="A tree with the same audio transcribed by another ASR (B)."),
    json_out: Path | None = json_option("the comparison"),
    all_rows: bool = typer.Option(False, "--all", help="Print every sample row (default: the first 50)."),
) -> None:
    """Word disagreements and first-onset differences (B - A) between two transcript sets of the same audio.

    Refuses in one line when a sample transcribed in both trees has different audio (output.wav hash or
    interruption cut point).
    """
    from duplexeval.fdb.asr_compare import compare_trees, render

    cmp = compare_trees(tree_a, tree_b)
    body = cmp.to_json()
    emit_json(json_out, body)
    if json_to_stdout(json_out):
        return
    render(cmp, max_rows=None if all_rows else 50)


def register(apps: CliApps) -> None:
    """Add `fdb asr-compare`."""
    apps.fdb.command("asr-compare")(asr_compare_command)
