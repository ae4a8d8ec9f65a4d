"""`fdb score --sensitivity`: the analysis of how a task's unified metrics depend on the scorer's settings.

The analysis itself belongs to the task (`UnifiedRules.sensitivity`; spec 000's VAD sweep of the interruption
metrics is the one built in); this module finds the task that offers one and runs it.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from duplexeval.errors import InputError
from duplexeval.fdb.tasks import all_tasks
from duplexeval.fdb.tasks.base import Analysis
from duplexeval.fdb.unified.load import LoadedTree, load_tree
from duplexeval.jsonio import write_json

SENSITIVITY_FILE = "unified-sensitivity.json"


def analyse(loaded: LoadedTree, jobs: int | None = None) -> Analysis:
    """The sensitivity analysis of the tree (an object with `to_json()` and `render(console)`)."""
    found = [(t.name, r) for t in all_tasks() if t.unified is not None
             and (r := t.unified.sensitivity(loaded, jobs)) is not None]
    if not found:
        raise InputError(f"{loaded.root}: no registered FDB task has a sensitivity analysis")
    if len(found) > 1:
        raise InputError(f"{loaded.root}: several tasks have a sensitivity analysis "
                         f"({', '.join(n for n, _ in found)}); "
                         "unified-sensitivity.json holds one")
    return found[0][1]


def analyse_tree(tree: str | Path, write: bool = True, jobs: int | None = None) -> Analysis:
    """`analyse` of a tree (`fdb score --sensitivity`), written to TREE/unified-sensitivity.json when `write`."""
    sens = analyse(load_tree(tree), jobs or None)
    if write:
        write_json(Path(tree) / SENSITIVITY_FILE, sens.to_json())  # an OS error is already one InputError line
    return sens


def render(sens: Analysis, console: Console | None = None) -> None:
    """Print the analysis."""
    sens.render(console)
