"""Options every family's commands declare the same way (docs/cli.md), and what `--json PATH|-` does.

One definition each, so the spelling, the help and the behaviour cannot drift between commands.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from duplexeval.jsonio import dumps, write_json

STDOUT = "-"


def json_option(what: str = "the JSON document", annotated: bool = False) -> Any:
    """`--json PATH|-`: write `what` to PATH too, or print it on stdout instead of the tables with `-`.

    `annotated`: for a parameter declared with `Annotated[...]` (the default then goes after `=`)."""
    default = () if annotated else (None,)
    return typer.Option(*default, "--json", metavar="PATH|-",
                        help=f"Write {what} to PATH too; '-' prints it on stdout instead of the tables.")


def json_to_stdout(json_out: Path | None) -> bool:
    """True when `--json -` asks for the document on stdout (and no tables there)."""
    return json_out is not None and str(json_out) == STDOUT


def emit_json(json_out: Path | None, doc: Any) -> None:
    """What `--json` asked for: nothing, the document on stdout (`-`), or written (atomically) to the path."""
    if json_out is None:
        return
    if json_to_stdout(json_out):
        typer.echo(dumps(doc), nl=False)
    else:
        write_json(json_out, doc)  # an OS error is already one InputError line naming the file


def jobs_option(default: int | None, what: str = "Local worker processes", ray: bool = False) -> Any:
    """`--jobs N` / `-j N`: local workers for per-item work; 0 is one per available CPU.

    `default` None: for a parameter declared with `Annotated[...]` (the default then goes after `=`)."""
    tail = "; with --executor ray the cluster's size decides" if ray else ""
    first = () if default is None else (default,)
    return typer.Option(*first, "--jobs", "-j", min=0, help=f"{what} (0: one per available CPU){tail}.")


def one_per_cpu(jobs: int) -> int:
    """`--jobs N` as a number of workers: N, or for 0 the CPUs this process may use."""
    if jobs:
        return jobs
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
