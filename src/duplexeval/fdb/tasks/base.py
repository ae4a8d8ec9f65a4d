"""The FDB task interface: everything the task-agnostic stages ask of a task, in one `Task` record.

A task package (`fdb/tasks/<task>/`) builds one `Task` from parts, one per stage that needs to know about it:

- `subsets`, `annotation` and `layout`: its rows of the subset table, its typed annotation model, and the files
  one sample has and which stage makes each (`SampleLayout`); `dataset_files`: files beside the samples;
- `dataset` (`DatasetRules`): the checks of a dataset sample against its input (`fdb.dataset`);
- `asr` (`AsrRules`): where a transcript starts (the ASR stage);
- `unified` (`UnifiedRules`, None for a task that is counted but not scored): parse an opened sample into the
  task's input, the VAD it needs, the per-sample row, the unified.json block and the kind of each metric;
- `official` (`OfficialRules`): the official rule of the reference column, an optional `prepare` that starts
  work before any subset is evaluated, its options and its part of summary.json's rules block;
- `paired` (`PairedSpec`, None: not compared): what `fdb compare` pairs;
- `render` (`RenderRules`): the report's "why" line, severity, outcome, timeline marks and figures;
- `synth` (`SynthRecipe`, None: not synthesized): how `fdb synth` renders a sample of the task;
- `headline`: the unified metrics shown first (the report's forest plot, the demo table), with their labels.

Every hook has a default, so a task overrides only what it does. The stages look a task up by name
(`fdb.tasks.get_task`) and never branch on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from duplexeval.fdb.sample import OpenedSample, SampleAudio
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.fdb_names import INPUT_WAV, OUTPUT_JSON, OUTPUT_WAV, SubsetInfo
from duplexeval.signature import Component

if TYPE_CHECKING:  # types only: the stages import this module
    import numpy as np
    from rich.console import Console

    from duplexeval.fdb.official.judge_config import JudgeConfig
    from duplexeval.fdb.official.metric import Metric
    from duplexeval.fdb.protocols import SampleKey
    from duplexeval.fdb.synth.parse import SampleSpec
    from duplexeval.fdb.synth.render import SampleTiming, Timeline, Utterance
    from duplexeval.fdb.tree import AsrRecord, Manifest, SampleEntry
    from duplexeval.fdb.unified.aggregate import Block, Counts
    from duplexeval.fdb.unified.load import LoadedTree
    from duplexeval.fdb.unified.rows import SampleRow

InputT = TypeVar("InputT")
RowT = TypeVar("RowT")

# The stages that make a sample's files (`SampleFile.made_by`).
DATASET = "dataset"  # copied byte for byte from the dataset by export / import (hash in manifest.json)
EXPORT = "export"  # made by playing a dataset input to the system (or imported from outside)
ASR = "asr"  # a transcript of one of the sample's audio files (hash in asr.json)
EVALUATE = "evaluate"  # per-sample evidence of the official rules
STAGES = (DATASET, EXPORT, ASR, EVALUATE)


@dataclass(frozen=True)
class SampleFile:
    """One file of a sample folder: its name, the stage that makes it, and what it is made from.

    `source` is, for an export file, the dataset input played to the system; for an ASR file, the audio file of
    the sample it transcribes.
    """

    name: str
    made_by: str
    source: str | None = None

    def __post_init__(self) -> None:
        if self.made_by not in STAGES:
            raise ValueError(f"{self.name}: made_by must be one of {', '.join(STAGES)}, got {self.made_by!r}")


@dataclass(frozen=True)
class SampleLayout:
    """The files of one sample of a task, in the order the stages make them."""

    files: tuple[SampleFile, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError(f"a sample layout names a file twice: {names}")
        plays = self.made_by(EXPORT)
        if plays and (plays[0].name, plays[0].source) != (OUTPUT_WAV, INPUT_WAV):
            raise ValueError(f"the first export file must be {OUTPUT_WAV} played from {INPUT_WAV}, got {plays[0]}")
        for f in self.files:
            if f.made_by in (EXPORT, ASR) and not f.source:
                raise ValueError(f"{f.name}: an {f.made_by} file needs its source")

    def made_by(self, stage: str) -> tuple[SampleFile, ...]:
        return tuple(f for f in self.files if f.made_by == stage)

    def names(self, stage: str) -> tuple[str, ...]:
        return tuple(f.name for f in self.made_by(stage))

    def sessions(self) -> tuple[Session, ...]:
        """The playbacks of `fdb export`, the first (input.wav -> output.wav) first; one session each."""
        return tuple(Session(str(f.source), f.name, session_prefix(f.name) if i else "")
                     for i, f in enumerate(self.made_by(EXPORT)))

    def transcripts(self) -> tuple[tuple[str, str], ...]:
        """(audio file, transcript file) of every transcript the ASR stage makes, in layout order."""
        return tuple((str(f.source), f.name) for f in self.made_by(ASR))


@dataclass(frozen=True)
class Session:
    """One playback of `fdb export`: the dataset input played (`source`) and the output written from what the
    system sent (`output`); the session's other files (a network system's wire trace) are named `prefix` + their
    usual name (the first session: no prefix, the v1.0 tree exactly)."""

    source: str
    output: str
    prefix: str


def session_prefix(output: str) -> str:
    """The prefix of a further session's files: `clean_output.wav` -> `clean_` (the official v1.5 naming)."""
    stem = output[: -len(OUTPUT_WAV)] if output.endswith(OUTPUT_WAV) else output.rsplit(".", 1)[0] + "_"
    return stem if stem.endswith("_") else stem + "_"


def one_output_layout(annotation: str | None, *evidence: str) -> SampleLayout:
    """The FDB v1.0 sample: the annotation (if any) copied, input.wav played into output.wav, output.wav transcribed
    into output.json, and any per-sample `evidence` files of the official rules."""
    files = [SampleFile(annotation, DATASET)] if annotation else []
    files += [SampleFile(OUTPUT_WAV, EXPORT, INPUT_WAV), SampleFile(OUTPUT_JSON, ASR, OUTPUT_WAV)]
    files += [SampleFile(name, EVALUATE) for name in evidence]
    return SampleLayout(tuple(files))


@dataclass(frozen=True)
class DatasetFile:
    """A file beside the samples that export and import copy from the dataset's root into the tree, when present;
    manifest.json records its hash under `manifest_key`."""

    name: str
    manifest_key: str


# ---------------------------------------------------------------- the parts


class DatasetRules:
    """How `fdb.dataset` checks a sample of the task (after the shared checks of its id, input and annotation shape)."""

    def check_id(self, subset: str, sample_id: str, where: str) -> None:
        """Refuse an id the task cannot use (InputError); `where` names the sample folder."""

    def check_annotation(self, record: Any, T: float, where: str) -> None:
        """Check the typed annotation against the input's length T in seconds (InputError naming `where`)."""

    # The published dataset the task's subsets belong to: a real folder's name in the manifest, and which subsets'
    # declared sizes it carries (those of every task of the same release).
    release: str = "fdb-v1.0"
    # Folders under a dataset root that may hold the task's subset folders (a published archive's own top folder).
    folders: tuple[str, ...] = ()

    def dataset_files(self, root: Path, samples: Sequence[SampleKey]) -> dict[str, Path]:
        """The task's files beside the samples that this dataset has, checked against its samples ({name: path})."""
        return {}


class AsrRules:
    """Where the ASR stage starts each transcript (`reads_annotation`: the start comes from the annotation)."""

    reads_annotation: bool = False

    def start_s(self, record: Any, T: float, path: Path) -> float:
        """The time the transcript starts at: audio before it is cut, and word times shifted back by it."""
        return 0.0


class Analysis(Protocol):
    """A task's sensitivity analysis: `to_json()` is unified-sensitivity.json, `render` prints it."""

    def to_json(self) -> JsonObject: ...

    def render(self, console: Console | None = None) -> None: ...


class UnifiedRules(Generic[InputT, RowT]):
    """The unified rules of a scored task: parse, the VAD it needs, the per-sample row and the subset block.

    `metric_kinds` names the typed value (`stats.Share`, `stats.Latency`, a `stats.PooledRatio`) of every metric
    the block holds, so renderers dispatch on the kind and never guess from keys.
    """

    metric_kinds: Mapping[str, type] = {}
    definitions: str = "fdb-v1.0-unified-4"  # the rule set's name and version (unified.json's definitions, signature)

    def parse(self, sample: OpenedSample) -> InputT:
        """The task's input of one opened sample, after the checks against T (InputError naming file and sample)."""
        raise NotImplementedError

    def vad(self, inp: InputT) -> tuple[SampleAudio, int | None] | None:
        """(audio source, last 16 kHz sample needed or None for all) when `score` needs its VAD segments, else None;
        the source is the opened sample's (`OpenedSample.audio_source`), which the VAD reads when it gets to it."""
        return None

    def score(self, inp: InputT, segments: Sequence[tuple[int, int]] | None) -> RowT:
        """The per-sample row (with `to_json()`, the unified-samples.jsonl fields); `segments` from `vad`."""
        raise NotImplementedError

    def row_from_json(self, js: JsonObject) -> RowT:
        """The row back from its unified-samples.jsonl line (the inverse of its `to_json()`; the line's sample fields
        are ignored): what `fdb compare` and the report read."""
        raise NotImplementedError

    def aggregate(self, rows: Sequence[RowT], counts: Counts) -> Block:
        """The block of one subset from its eligible rows and base counts (`unified.aggregate.Block`: its typed
        metrics are what the Python API's `ScoreResult` hands out, its `to_json()` is unified.json's block)."""
        raise NotImplementedError

    def sensitivity(self, loaded: LoadedTree, jobs: int | None) -> Analysis | None:
        """An optional analysis of how the metrics depend on the scorer's settings (`fdb score --sensitivity`);
        None when the task has none."""
        return None


class JsonRecord(Protocol):
    """A typed record that becomes one JSON object of an artifact (`to_json()`, keys in the artifact's order)."""

    def to_json(self) -> JsonObject: ...


class SummaryRow(Protocol):
    """One row of a subset's `samples` in summary.json: an evaluated sample of the task's rule, or `NotEvaluated`."""

    @property
    def id(self) -> str: ...

    def to_json(self) -> JsonObject: ...


@dataclass(frozen=True)
class NotEvaluated:
    """A selected sample the official rule did not evaluate, and why (counted, never dropped)."""

    id: str
    reason: str

    def to_json(self) -> JsonObject:
        return {"id": self.id, "evaluated": False, "reason": self.reason}


@dataclass
class OfficialContext:
    """What an official rule may use besides its samples: the tree, the run's options, and its `prepare` result."""

    tree: Path
    subset: str
    manifest: Manifest
    asr: AsrRecord
    options: Mapping[str, Any]  # every task's official options (`OfficialRules.options`), as given
    judge_mode: str  # "none" or "openai"
    judge_config: JudgeConfig
    rows: list[SummaryRow]  # the subset's summary rows; a rule may add not-evaluated rows
    say: Callable[[str], None]
    prepared: Any = None


@dataclass
class OfficialOutcome:
    """An official rule's result for one subset: evaluated samples, metrics and optional extra blocks.

    `judge` is the subset's judge block, `counts` the rule's own counts (after the shared ones), `rules_info` what
    the rule found out that its `rules_block` and `signature_components` report (the last outcome's), `extra` the
    further keys of the subset's block (before its samples)."""

    done: Sequence[SummaryRow]
    metrics: Mapping[str, Metric]
    judge: JsonRecord | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    rules_info: JsonRecord | None = None
    extra: JsonRecord | None = None


# every eligible, transcribed sample of a subset, its transcript read (words and text)
Ready = list[OpenedSample]


class OfficialRules:
    """The official rule of the reference column (`fdb evaluate`).

    `options` are the task's own options of `evaluate` with their defaults; `uses_judge` says the rule can ask
    a judge (`--judge openai`).
    """

    uses_judge: bool = False
    options: Mapping[str, Any] = {}
    rules_name: str = "fdb-v1.0-official"  # the rule set it reproduces (summary.json's rules name and signature)

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Refuse a bad option value (InputError) before anything is read."""

    def prepare(self, ctx: OfficialContext, entries: Sequence[SampleEntry]) -> Any:
        """Runs for every chosen subset before any is evaluated: check what the rule needs, start work that can run
        alongside the other subsets; the result comes back as `ctx.prepared`."""
        return None

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        """The subset's evaluated samples and printed metrics."""
        raise NotImplementedError

    def rules_block(self, options: Mapping[str, Any], info: JsonRecord | None) -> JsonObject:
        """The task's entries of summary.json's `rules` block, as written (`info`: the last outcome's `rules_info`)."""
        return {}

    def signature_components(self, options: Mapping[str, Any], info: JsonRecord | None) -> tuple[Component, ...]:
        """What else the numbers depend on, for summary.json's signature (a model and its hash, a library's
        version); `info` as for `rules_block`, None when none of the task's subsets was evaluated."""
        return ()

    def rules_note(self, rules: Mapping[str, Any]) -> str | None:
        """What `fdb evaluate`'s first line says about this task's rules after the rule set's name (from
        summary.json's `rules`), when one of its subsets was evaluated; None: nothing beyond the name."""
        return None


@dataclass(frozen=True)
class MetricSpec(Generic[RowT]):
    """How one unified metric is compared, from the task's typed rows: a 0/1 share, a pooled ratio or a median (in
    integer time units)."""

    name: str
    kind: str  # "share" | "ratio" | "median"
    value: Callable[[RowT], Any]  # share: bool; ratio: (num, den); median: whole time units or +inf
    per_second: int = 1
    # Pair only the samples for which this holds in both trees (a latency that exists only after an event);
    # None: every pair of the spec's samples.
    within: Callable[[RowT], bool] | None = None


def time_units(units: int | None) -> float:
    """A row's time (a whole number of its units: µs, ticks) for pairing; None (never) is +inf."""
    return math.inf if units is None else float(units)


@dataclass(frozen=True)
class PairedSpec(Generic[RowT]):
    """What `fdb compare` pairs: `metrics` over the samples eligible in both trees, or (with a `gate`, a share)
    over those passing the gate in both, the gate itself over eligible in both; `over` says which in words."""

    metrics: tuple[MetricSpec[RowT], ...]
    gate: MetricSpec[RowT] | None = None
    over: str = "samples eligible in both"


@dataclass(frozen=True)
class Mark:
    """A time mark on a sample's timeline (E, S, R ...)."""

    label: str
    t: float
    color: str = "#333"


@dataclass(frozen=True)
class Band:
    """A shaded time span on a sample's timeline (a pause, the interruption ...)."""

    label: str
    start: float
    end: float
    color: str = "#f3d1f4"


@dataclass(frozen=True)
class Figure:
    """One summary figure of the report: inline SVG and an optional caption under it."""

    svg: str
    caption: str | None = None


class RenderRules(Generic[RowT]):
    """How the report shows the task's eligible, scored samples, from their typed rows (`UnifiedRules.score`'s; the
    shared wrapper handles the rest).

    `vad_lane`: the timeline always has a VAD lane; `bad` / `neutral`: the outcome keys (`outcome_key`) the report
    marks as bad (what the metrics count against) or neutral (not scored), the rest being ok; `counted_note`: what
    to say for a task without unified metrics.
    """

    vad_lane: bool = False
    bad: frozenset[str] = frozenset()
    neutral: frozenset[str] = frozenset()
    counted_note: str = "no reference either"

    def why(self, row: RowT) -> str:
        """One phrase saying what the sample shows."""
        return str(getattr(row, "outcome", ""))

    def severity(self, row: RowT) -> tuple[int, float]:
        """Sort key, worst first (rank 0-2: a listed worst case)."""
        return (8, 0.0)

    def outcome(self, row: RowT) -> str:
        """The outcome words of the sample's heading."""
        return str(getattr(row, "outcome"))  # noqa: B009 - a row without one is a task that must override this

    def outcome_key(self, row: RowT) -> str:
        """The outcome as a filter value (an identifier)."""
        return str(getattr(row, "outcome", "unknown"))

    def vad_segments(self, row: RowT) -> list[tuple[float, float]]:
        """The VAD segments (seconds) the row keeps, drawn on the sample's timeline; none by default."""
        return []

    def marks(self, record: Any) -> tuple[list[Mark], list[Band]]:
        """Timeline marks and bands from the typed annotation."""
        return [], []

    def reference(self, record: Any) -> float | None:
        """When the user's turn ends (seconds), from the typed annotation: what `systems check` measures the onset of
        an answer from; None when the task has no such moment."""
        return None

    def figures(self, series: Sequence[tuple[str, Sequence[SampleRow[Any]]]], colors: Sequence[str]) -> list[Figure]:
        """Summary figures of one subset from each tree's (label, rows: every selected sample, `row` None when not
        scored), tree k drawn in colors[k]."""
        return []


LOWER, NEITHER, HIGHER = "lower", "neither", "higher"  # which way a headline metric is better


@dataclass(frozen=True)
class Headline:
    """A unified metric the report's forest plot and the demo table show first: its reader's label and which way
    is better (LOWER, HIGHER or NEITHER)."""

    metric: str
    label: str
    better: str


class SynthRecipe:
    """How `fdb synth` renders a sample of the task (layouts in docs/synth.md).

    `keys` are the script keys a sample may have besides subset, id, voice, rate and pitch, with their defaults
    (None: required; `parts` is a list of speech and `{pause: s}` items, any other required key a text, the
    rest numbers of seconds); `parts_need_pause`: `parts` must hold a pause.
    """

    keys: Mapping[str, Any] = {}
    parts_need_pause: bool = False

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        """Place the sample's speech on the timeline `tl` after the lead silence, `speak(text)` giving each
        utterance (`spec.text(key)`, `spec.seconds(key)`, `spec.parts`: its values of `keys`)."""
        raise NotImplementedError

    def dataset_files(self, rendered: Sequence[SampleTiming]) -> dict[str, JsonObject]:
        """Files beside the samples made from the task's rendered samples (subset, id, T, word times); {name: the
        JSON object written}."""
        return {}


@dataclass(frozen=True)
class Rendered:
    """What a recipe made of one sample: its annotation file's JSON (None: the task has none) and any extra WAVs
    ({file name: 16 kHz float32 audio})."""

    annotation: list[JsonObject] | None = None
    extra_wavs: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """One FDB task: its subsets and files, and its part of each stage (see the module docstring)."""

    name: str
    subsets: tuple[SubsetInfo, ...]
    official: OfficialRules
    annotation: type | None = None
    layout: SampleLayout = field(default_factory=lambda: one_output_layout(None))
    dataset_files: tuple[DatasetFile, ...] = ()
    dataset: DatasetRules = field(default_factory=DatasetRules)
    asr: AsrRules = field(default_factory=AsrRules)
    unified: UnifiedRules[Any, Any] | None = None
    paired: PairedSpec[Any] | None = None
    render: RenderRules[Any] = field(default_factory=RenderRules)
    synth: SynthRecipe | None = None
    headline: tuple[Headline, ...] = ()  # the metrics shown first (report forest plot, demo table)

    def __post_init__(self) -> None:
        for s in self.subsets:
            if s.task != self.name:
                raise ValueError(f"FDB task {self.name!r}: subset {s.name!r} belongs to task {s.task!r}")
        names = {s.annotation for s in self.subsets}
        if len(names) > 1:
            raise ValueError(f"FDB task {self.name!r}: its subsets name different annotation files "
                             f"{sorted(map(str, names))}")
        ann = next(iter(names), None)
        model_file = getattr(self.annotation, "file", None)
        if (self.annotation is None) != (ann is None) or (ann is not None and model_file != ann):
            raise ValueError(f"FDB task {self.name!r}: its annotation model ({model_file}) does not match its subsets' "
                             f"annotation file ({ann})")

    @property
    def annotation_file(self) -> str | None:
        """The dataset file every sample of the task has (None: no annotation)."""
        return self.subsets[0].annotation if self.subsets else None

    @property
    def scored(self) -> bool:
        """True when the unified rules score it (else its samples are only counted)."""
        return self.unified is not None


__all__ = [
    "ASR", "DATASET", "EVALUATE", "EXPORT", "HIGHER", "LOWER", "NEITHER", "STAGES", "Analysis", "AsrRules", "Band",
    "DatasetFile",
    "DatasetRules", "Figure", "Headline", "Mark",
    "MetricSpec", "OfficialContext", "OfficialOutcome", "OfficialRules", "OpenedSample", "PairedSpec", "Ready",
    "RenderRules", "SampleFile", "SampleLayout", "Session", "SubsetInfo", "SynthRecipe", "Task", "UnifiedRules",
    "one_output_layout", "time_units",
    "JsonRecord", "NotEvaluated", "Rendered", "SummaryRow",
]
