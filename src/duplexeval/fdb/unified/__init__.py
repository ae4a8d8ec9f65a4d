"""The unified Full-Duplex-Bench v1.0 scorer (spec 000): `score(tree)` writes unified.json and unified-samples.jsonl.

Stages: `load` (refusals, hash and time checks, integer µs) -> `pause` / `turn_taking` / `interruption`
(pure per-sample rows; interruption also takes VAD segments from `speech`) -> `aggregate` (metrics with
their statistics) -> `report` (the printed tables). Same tree in, same bytes out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec
from duplexeval.fdb.tree import BACKCHANNEL, SUBSET_ORDER, SUBSETS, UNIFIED_FILE, UNIFIED_SAMPLES_FILE
from duplexeval.fdb.unified.aggregate import subset_block
from duplexeval.fdb.unified.interruption import r_limit_sample, score_interruption
from duplexeval.fdb.unified.load import InterruptionInput, LoadedTree, PauseInput, TurnInput, load_tree
from duplexeval.fdb.unified.pause import score_pause
from duplexeval.fdb.unified.speech import Segmenter
from duplexeval.fdb.unified.turn_taking import score_turn
from duplexeval.jsonio import atomic_write_text, dumps_line, write_json

DEFINITIONS = "fdb-v1.0-unified-4"
UNIFIED_KIND = "duplexeval.fdb.unified"
UNIFIED_SCHEMA_VERSION = 2  # 2: the artifact header (kind, schema_version, duplexeval, signature, inputs)

__all__ = ["DEFINITIONS", "UNIFIED_KIND", "UNIFIED_SCHEMA_VERSION", "UnifiedResult", "score"]


@dataclass
class UnifiedResult:
    """The scorer's output: `to_json()` is unified.json, `rows` the lines of unified-samples.jsonl."""

    tree: Path
    unified: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.unified

    def samples_jsonl(self) -> str:
        """unified-samples.jsonl text: one compact JSON object per selected sample of the scored subsets."""
        return "".join(dumps_line(r) for r in self.rows)

    def subset(self, name: str) -> dict[str, Any]:
        return self.unified["subsets"][name]


def _interruption_segments(inputs: list[InterruptionInput], segmenter: Segmenter | None, jobs: int | None,
                           executor: ExecutorSpec | None = None) -> list:
    """VAD segments of each interruption output (Silero unless a segmenter is injected), here or on `executor`."""
    from duplexeval.fdb.unified import speech

    paths = [i.wav_path for i in inputs]
    if segmenter is not None:
        return segmenter(paths)
    # Only segments starting at or before R enter any quantity, so each scan may stop once they are final.
    limits: list[int | None] = [r_limit_sample(i.R_us) for i in inputs]
    if executor is not None and executor.kind != "local":
        from duplexeval.fdb.unified import vad_remote

        return vad_remote.segment_files(executor, paths, limits)
    return speech.segment_files(paths, jobs, limits=limits)


def _rows_and_blocks(loaded: LoadedTree, segmenter: Segmenter | None, jobs: int | None,
                     executor: ExecutorSpec | None = None) -> tuple[dict, list]:
    """Per-sample rows (unified-samples.jsonl) and per-subset blocks (unified.json), in canonical order."""
    inter = [ls for ls in loaded.samples if isinstance(ls.input, InterruptionInput)]
    segs = (_interruption_segments([ls.input for ls in inter], segmenter, jobs, executor)  # type: ignore[misc]
            if inter else [])
    if len(segs) != len(inter):
        raise ValueError(f"segmenter returned {len(segs)} segment lists for {len(inter)} outputs")
    seg_of = {id(ls): s for ls, s in zip(inter, segs)}

    blocks: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for subset in SUBSET_ORDER:
        members = [ls for ls in loaded.samples if ls.entry.subset == subset]
        if not members:
            continue
        task = SUBSETS[subset].task
        scored = []
        for ls in members:
            row = None
            inp = ls.input
            if isinstance(inp, PauseInput):
                row = score_pause(inp)
            elif isinstance(inp, TurnInput):
                row = score_turn(inp)
            elif isinstance(inp, InterruptionInput):
                row = score_interruption(inp, seg_of[id(ls)])
            if row is not None:
                scored.append(row)
            if task == BACKCHANNEL:
                continue
            out = {
                "subset": subset,
                "sample_id": ls.entry.id,
                "task": task,
                "eligible": ls.entry.eligible,
                "reasons": list(ls.entry.reasons),
            }
            if row is not None:
                out.update(row.to_json())
            rows.append(out)
        blocks[subset] = subset_block(subset, [ls.entry for ls in members], scored,
                                      loaded.manifest.declared.get(subset))
    return blocks, rows


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
    blocks, rows = _rows_and_blocks(loaded, segmenter, jobs, executor)
    if segmenter is None:
        from duplexeval.fdb.unified import speech

        vad = speech.signature()
    else:
        vad = getattr(segmenter, "signature", {"package": "injected", "note": "segments supplied by the caller"})
    from duplexeval.artifacts import header
    from duplexeval.fdb.signatures import tree_inputs, unified_signature

    sig = unified_signature(DEFINITIONS, loaded.asr.backend, vad, loaded.manifest_sha256, loaded.asr_sha256)
    unified = {
        **header(UNIFIED_KIND, UNIFIED_SCHEMA_VERSION, sig, tree_inputs(loaded.manifest_sha256, loaded.asr_sha256)),
        "definitions": DEFINITIONS,
        "manifest_sha256": loaded.manifest_sha256,
        "asr_sha256": loaded.asr_sha256,
        "vad": vad,
        "subsets": blocks,
    }
    result = UnifiedResult(loaded.root, unified, rows)
    if write:
        for name in (UNIFIED_FILE, UNIFIED_SAMPLES_FILE):
            path = loaded.root / name
            try:
                if name == UNIFIED_FILE:
                    write_json(path, unified)
                else:
                    atomic_write_text(path, result.samples_jsonl())
            except OSError as exc:
                raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return result


