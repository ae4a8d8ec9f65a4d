"""The FDB task registry: one `Task` record per task, looked up by name, so a new task is one file.

A record holds everything the stages need to know about a task: its subsets, its annotation file and
model, how the unified scorer parses and scores a sample, how the per-sample rows aggregate into a
unified.json block (and the kind of each metric, for the renderer), and the official rule. The
built-in tasks live in this package (one module each) and are registered on first lookup, which keeps
this module free of imports from the stages that use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from duplexeval.registry import Registry

if TYPE_CHECKING:  # types only: the stages import this registry
    from duplexeval.fdb.official.judge import Judge
    from duplexeval.fdb.transcript import Word
    from duplexeval.fdb.tree import AsrSample, SampleEntry

BUILTIN_MODULES = (
    "duplexeval.fdb.tasks.pause",
    "duplexeval.fdb.tasks.turn_taking",
    "duplexeval.fdb.tasks.interruption",
    "duplexeval.fdb.tasks.backchannel",
)


@dataclass(frozen=True)
class SampleFiles:
    """One eligible sample's checked files for the unified parser: annotation and transcript JSON, in µs."""

    root: Path
    entry: SampleEntry
    asr: AsrSample  # this sample's asr.json record
    T_us: int
    annotation: Any
    annotation_path: Path
    transcript: Any
    transcript_path: Path


@dataclass
class OfficialContext:
    """What an official rule may use besides its samples: the tree, the judge, the backchannel inputs."""

    tree: Path
    subset: str
    judge: Judge | None
    icc_gt: tuple[dict[str, list[float]], dict[str, Any]] | None
    backchannel_rules: str
    rows: list[dict[str, Any]]  # the subset's summary rows; a rule may add not-evaluated rows
    say: Callable[[str], None]


@dataclass
class OfficialOutcome:
    """An official rule's result for one subset: evaluated samples, metrics and optional extra blocks."""

    done: Sequence[Any]
    metrics: dict[str, Any]
    judge: dict[str, Any] | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    rules_info: dict[str, Any] | None = None  # summary.json's rules block entry (backchannel)


# (tree context, [(entry, words, text)]) -> outcome
OfficialRule: TypeAlias = "Callable[[OfficialContext, list[tuple[SampleEntry, list[Word], str]]], OfficialOutcome]"


@dataclass(frozen=True)
class Task:
    """One FDB task. `parse`/`score` are None for a counted-only task (backchannel in the unified scorer).

    `segments` (when set) gives (output.wav path, last sample needed) of a parsed input: the scorer runs
    the VAD on those files and passes each input's segments to `score`; otherwise `score` gets None.
    `paired_metrics` (empty: not compared) are what `fdb compare` pairs, over `paired_over`.
    `metric_kinds` names the typed value (`stats.Share`, `stats.Latency`, a `stats.PooledRatio`) of every
    unified metric the aggregate writes, so renderers dispatch on the kind and never guess from keys.
    """

    name: str
    subsets: tuple[str, ...]
    annotation: str | None
    annotation_model: type | None
    parse: Callable[[SampleFiles], Any] | None
    score: Callable[[Any, Any], Any] | None
    aggregate: Callable[[Sequence[Any], dict[str, Any]], dict[str, Any]]
    metric_kinds: Mapping[str, type]
    official: OfficialRule
    segments: Callable[[Any], tuple[Path, int]] | None = None
    uses_judge: bool = False
    paired_metrics: tuple[Any, ...] = ()  # fdb.compare.MetricSpec of each metric `fdb compare` pairs
    paired_gate: Any = None  # a share MetricSpec: pairs are the samples passing it in both trees
    paired_over: str = "samples eligible in both"


def _score_without_segments(score: Callable[[Any], Any], inp: Any, _segments: None) -> Any:
    return score(inp)


def without_segments(score: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """`Task.score` for a task without VAD segments: `score(input)`, ignoring the None segments (picklable)."""
    return partial(_score_without_segments, score)


def _register_builtins() -> None:
    for mod_name in BUILTIN_MODULES:
        task = importlib.import_module(mod_name).TASK
        TASKS.register(task.name, task)


TASKS: Registry[Task] = Registry("FDB task", _register_builtins)


def get_task(name: str) -> Task:
    """The task registered as `name` (or `module.path:NAME`); unknown names list the available ones."""
    return TASKS.get(name)


def register_task(task: Task) -> Task:
    """Make `task` available by its name (a plugin's own task, or a test's)."""
    TASKS.names()  # registers the built-ins first, so a plugin cannot take a built-in's name unnoticed
    return TASKS.register(task.name, task)


__all__ = ["TASKS", "OfficialContext", "OfficialOutcome", "SampleFiles", "Task", "get_task", "register_task", "without_segments"]
