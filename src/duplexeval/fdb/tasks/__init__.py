"""The FDB task registry: one `Task` record per task package (`fdb/tasks/<task>/`), looked up by name.

The interface is `fdb.tasks.base` (re-exported here). The built-in packages are registered on first lookup; a
task of your own is one package whose `TASK` is published under the entry-point group `duplexeval.fdb_tasks`
(the entry point's name is the task's name) or registered with `register_task`. Registering a task adds its
rows to the subset table (`schemas.fdb_names.SUBSETS`), so every stage sees its subsets.
"""

from __future__ import annotations

import importlib
from importlib import metadata

from duplexeval.errors import InputError
from duplexeval.fdb.tasks.base import (
    ASR,
    DATASET,
    EVALUATE,
    EXPORT,
    HIGHER,
    LOWER,
    NEITHER,
    AsrRules,
    Band,
    DatasetFile,
    DatasetRules,
    Figure,
    Headline,
    Mark,
    MetricSpec,
    OfficialContext,
    OfficialOutcome,
    OfficialRules,
    OpenedSample,
    PairedSpec,
    Ready,
    RenderRules,
    SampleFile,
    SampleLayout,
    Session,
    SubsetInfo,
    SynthRecipe,
    Task,
    UnifiedRules,
    one_output_layout,
)
from duplexeval.registry import Registry
from duplexeval.schemas.fdb_names import SUBSETS

BUILTIN_MODULES = (
    "duplexeval.fdb.tasks.pause",
    "duplexeval.fdb.tasks.turn_taking",
    "duplexeval.fdb.tasks.interruption",
    "duplexeval.fdb.tasks.backchannel",
    "duplexeval.fdb.tasks.overlap",
)


def _add(task: Task) -> Task:
    if not isinstance(task, Task):
        raise InputError(f"FDB task plugin: expected a duplexeval.fdb.tasks.Task, got {type(task).__name__}")
    TASKS.register(task.name, task)
    for s in task.subsets:
        SUBSETS.add(s)
    return task


def _register_builtins() -> None:
    for mod_name in BUILTIN_MODULES:
        _add(importlib.import_module(mod_name).TASK)


TASKS: Registry[Task] = Registry("FDB task", _register_builtins)


def _load_plugin(name: str) -> Task:
    task = TASKS.get(name)  # loads an entry point on first get
    if not isinstance(task, Task):
        raise InputError(f"FDB task {name!r}: its entry point gives a {type(task).__name__}, not a "
                         "duplexeval.fdb.tasks.Task")
    if task.name != name:
        raise InputError(f"FDB task {name!r}: its entry point gives the task {task.name!r}; publish it under "
                         "its own name")
    return _add(task)


def _load_plugins() -> None:
    """Register every installed plugin task (entry points), so that their subsets are in the table."""
    for name in TASKS.names():
        item = TASKS._items.get(name)
        if isinstance(item, metadata.EntryPoint):
            _load_plugin(name)


SUBSETS.set_loader(_load_plugins)


def get_task(name: str) -> Task:
    """The task registered as `name` (or `module.path:NAME`); unknown names list the available ones."""
    task = TASKS.get(name)
    if not isinstance(task, Task):  # an entry point's object, or a module:NAME spec
        task = _load_plugin(name) if ":" not in name else _add(task)
    return task


def task_of(subset: str) -> Task:
    """The task that owns `subset` (a name in the subset table)."""
    return get_task(SUBSETS[subset].task)


def all_tasks() -> list[Task]:
    """Every registered task: the built-ins in their order, then plugins by name."""
    names = TASKS.names()
    builtin = [n for n in (SUBSETS[s].task for s in SUBSETS) if n in names]
    ordered = list(dict.fromkeys(builtin + names))
    return [get_task(n) for n in ordered]


def register_task(task: Task) -> Task:
    """Make `task` available by its name (a plugin's own task, or a test's), with its subsets."""
    TASKS.names()  # registers the built-ins first, so a plugin cannot take a built-in's name unnoticed
    return _add(task)


__all__ = [
    "ASR", "BUILTIN_MODULES", "DATASET", "EVALUATE", "EXPORT", "HIGHER", "LOWER", "NEITHER", "TASKS", "AsrRules",
    "Band", "DatasetFile", "DatasetRules", "Figure", "Headline", "Mark", "MetricSpec", "OfficialContext",
    "OfficialOutcome", "OfficialRules", "OpenedSample", "PairedSpec", "Ready", "RenderRules", "SampleFile",
    "SampleLayout", "Session", "SubsetInfo", "SynthRecipe", "Task", "UnifiedRules", "all_tasks", "get_task",
    "one_output_layout", "register_task", "task_of",
]
