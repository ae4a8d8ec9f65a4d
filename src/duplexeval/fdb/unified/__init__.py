"""The unified Full-Duplex-Bench v1.0 scorer (spec 000): `score(tree)` writes unified.json and unified-samples.jsonl.

Stages: `load` (refusals and hash checks, then each task's `parse`: time checks, integer µs) -> each task's
`score` (pure per-sample rows; a task that asks for them gets VAD segments from `speech`) -> its `aggregate`
(metrics with their statistics, from the shared helpers in `aggregate`) -> `report` (the printed tables). The
per-task parts are looked up by name in `duplexeval.fdb.tasks` (`UnifiedRules`). Same tree in, same bytes out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval import vad_batched
from duplexeval.artifacts import header
from duplexeval.executors import ExecutorSpec
from duplexeval.fdb.sample import SampleAudio
from duplexeval.fdb.signatures import tree_inputs, unified_signature
from duplexeval.fdb.tasks import UnifiedRules, get_task
from duplexeval.fdb.tree import (
    SUBSETS,
    UNIFIED_FILE,
    UNIFIED_SAMPLES_FILE,
)
from duplexeval.fdb.unified import vad_remote
from duplexeval.fdb.unified.aggregate import Block, subset_block
from duplexeval.fdb.unified.load import LoadedSample, load_tree
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.jsonio import atomic_write_text, dumps_line, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.vad import SCORER_SETTINGS
from duplexeval.vad import vad_signature as vad_signature_of
from duplexeval.vad_batched import Segmenter, Segments

DEFINITIONS = UnifiedRules.definitions  # "fdb-v1.0-unified-4": the v1.0 tasks' rule set
UNIFIED_KIND = "duplexeval.fdb.unified"
UNIFIED_SCHEMA_VERSION = 2  # 2: the artifact header (kind, schema_version, duplexeval, signature, inputs)

__all__ = ["DEFINITIONS", "UNIFIED_KIND", "UNIFIED_SCHEMA_VERSION", "Scored", "UnifiedResult", "rows_and_blocks",
           "score", "unified_json", "vad_signature"]


@dataclass
class UnifiedResult:
    """The scorer's output: `to_json()` is unified.json, `blocks` its subset blocks as typed records (their metrics
    the `stats` values unified.json holds the JSON of), `rows` the lines of unified-samples.jsonl (each with its task's
    row record, `UnifiedRules.score`'s; None for a sample not scored).
    """

    tree: Path | None
    unified: JsonObject
    blocks: dict[str, Block] = field(default_factory=dict)
    rows: list[SampleRow[Any]] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        return self.unified

    def samples_jsonl(self) -> str:
        """unified-samples.jsonl text: one compact JSON object per selected sample of the scored subsets."""
        return "".join(dumps_line(r.to_json()) for r in self.rows)

    def subset(self, name: str) -> JsonObject:
        """A subset's block as unified.json holds it."""
        subset: JsonObject = self.unified["subsets"][name]
        return subset


# What the VAD step is handed: (audio source, last 16 kHz sample needed or None) per sample, in order; it returns
# segments. The sources hold no audio: the engine reads each one (hash-checked) when a thread gets to it.
SegmentFn = Callable[[list[tuple[SampleAudio, int | None]]], list[Any]]


def vad_signature() -> JsonObject:
    """The VAD package, version, model hash and the scorer settings, for the top of unified.json."""
    sig = vad_signature_of(SCORER_SETTINGS)
    if vad_batched.early_stop_ok(SCORER_SETTINGS):
        sig["scan"] = "each output.wav until its segments starting at or before R are final (= whole-file segments)"
    return sig


def _segments(files: list[tuple[SampleAudio, int | None]], segmenter: Segmenter | None, jobs: int | None,
              executor: ExecutorSpec | None = None) -> list[Segments]:
    """VAD segments of each (output.wav, last sample needed) (Silero unless a segmenter is injected), here or on
    `executor`."""
    if segmenter is not None:  # a stand-in that reads no audio: it is given the files' paths
        return segmenter([source.path for source, _ in files])
    sources = [source for source, _ in files]
    # Only segments up to each limit enter any quantity, so each scan may stop once they are final.
    limits: list[int | None] = [limit for _, limit in files]
    if executor is not None and executor.kind != "local":
        return vad_remote.segment_files(executor, sources, limits)
    return vad_batched.segment_files(sources, jobs, limits=limits)


@dataclass
class Scored:
    """What `rows_and_blocks` makes: the subset blocks (typed; unified.json's are their JSON) and the rows."""

    blocks: dict[str, Block]
    rows: list[SampleRow[Any]]


def rows_and_blocks(samples: list[LoadedSample], declared: Mapping[str, int], segment: SegmentFn) -> Scored:
    """Per-sample rows (unified-samples.jsonl) and per-subset blocks (unified.json), in canonical order; `segment`
    gives the VAD segments of the samples whose task asks for them (`UnifiedRules.vad`)."""
    tasks = {ls.entry.task: get_task(ls.entry.task) for ls in samples}
    wanted = [(ls, tasks[ls.entry.task].unified.vad(ls.input))  # type: ignore[union-attr]
              for ls in samples if ls.input is not None]
    vad = [(ls, want) for ls, want in wanted if want is not None]
    segs = segment([want for _, want in vad]) if vad else []
    if len(segs) != len(vad):
        raise ValueError(f"segmenter returned {len(segs)} segment lists for {len(vad)} outputs")
    seg_of = {id(ls): s for (ls, _), s in zip(vad, segs)}

    blocks: dict[str, Block] = {}
    rows: list[SampleRow[Any]] = []
    for subset in SUBSETS:
        members = [ls for ls in samples if ls.entry.subset == subset]
        if not members:
            continue
        name = SUBSETS[subset].task
        rules = tasks[name].unified
        scored = []
        for ls in members:
            if rules is None:
                continue  # counted-only task: no per-sample rows
            row = None
            if ls.input is not None:
                row = rules.score(ls.input, seg_of.get(id(ls)))
                scored.append(row)
            rows.append(SampleRow(subset, ls.entry.id, name, ls.entry.eligible, tuple(ls.entry.reasons), row))
        blocks[subset] = subset_block(subset, [ls.entry for ls in members], scored, declared.get(subset))
    return Scored(blocks, rows)


INJECTED_VAD = {"package": "injected", "note": "segments supplied by the caller"}


def unified_json(made: Scored, samples: list[LoadedSample], backend: Mapping[str, Any], vad: Mapping[str, Any],
                 manifest_sha256: str, asr_sha256: str) -> JsonObject:
    """The unified.json object: the header, the rule sets applied, the input hashes, the VAD and the subset blocks."""
    scored = {get_task(ls.entry.task) for ls in samples}
    names = sorted({t.unified.definitions for t in scored if t.unified is not None}) or [DEFINITIONS]
    definitions = "+".join(names)  # the rule sets applied (a v1.0 tree: DEFINITIONS)
    sig = unified_signature(definitions, backend, vad, manifest_sha256, asr_sha256)
    return {
        **header(UNIFIED_KIND, UNIFIED_SCHEMA_VERSION, sig, tree_inputs(manifest_sha256, asr_sha256)),
        "definitions": definitions,
        "manifest_sha256": manifest_sha256,
        "asr_sha256": asr_sha256,
        "vad": dict(vad),
        "subsets": {name: block.to_json() for name, block in made.blocks.items()},
    }


def score(
    tree: str | Path,
    *,
    write: bool = True,
    segmenter: Segmenter | None = None,
    jobs: int | None = None,
    executor: ExecutorSpec | None = None,
) -> UnifiedResult:
    """Score a tree by the unified rules; writes TREE/unified.json and TREE/unified-samples.jsonl when `write`.

    `segmenter` replaces the Silero VAD (tests); `jobs` caps the VAD threads (default: one per CPU);
    `executor` (kind ray) runs the VAD on Ray instead, with the same segments.
    """
    loaded = load_tree(tree)
    made = rows_and_blocks(loaded.samples, loaded.manifest.declared,
                           lambda files: _segments(files, segmenter, jobs, executor))
    if segmenter is None:
        vad = vad_signature()
    else:
        vad = getattr(segmenter, "signature", INJECTED_VAD)
    unified = unified_json(made, loaded.samples, loaded.asr.backend, vad, loaded.manifest_sha256, loaded.asr_sha256)
    result = UnifiedResult(loaded.root, unified, made.blocks, made.rows)
    if write:
        for name in (UNIFIED_FILE, UNIFIED_SAMPLES_FILE):
            path = loaded.root / name
            if name == UNIFIED_FILE:  # an OS error is already one InputError line naming the file (jsonio)
                write_json(path, unified)
            else:
                atomic_write_text(path, result.samples_jsonl())
    return result


