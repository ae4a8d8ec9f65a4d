"""The unified rules on samples held in memory (no tree, no files): what `duplexeval.fdb.score_samples` runs.

Each sample becomes a `MemorySample`, an `OpenedSample` whose files are bytes in memory instead of a tree's
hash-checked files, so every task's own `parse` reads it exactly as it reads a tree sample (the same checks against
T, the same one-line errors, naming `<memory>/SUBSET/ID/FILE`). The rows, blocks and unified.json object are made by
the same code as `fdb score` (`unified.rows_and_blocks`, `unified.unified_json`): the same samples in a tree and in
memory give the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval import vad_batched
from duplexeval.errors import InputError
from duplexeval.fdb.sample import OpenedSample, SampleAudio
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tree import ASR_FILE, MANIFEST_FILE, AsrSample, SampleEntry
from duplexeval.fdb.unified import INJECTED_VAD, UnifiedResult, rows_and_blocks, unified_json, vad_signature
from duplexeval.fdb.unified.load import LoadedSample
from duplexeval.schemas.fdb_names import OUTPUT_JSON, OUTPUT_WAV

MEMORY = Path("<memory>")  # the folder every in-memory sample's file names start with (messages only)
CALLER_ASR = {"name": "caller", "source": "memory", "note": "words supplied by the caller"}
NO_FILE = "in memory"  # the manifest and asr.json hashes of an in-memory run: there are no such files


@dataclass(frozen=True)
class MemoryAudio(SampleAudio):
    """An in-memory sample's audio: the bytes it was given (no file, no hash)."""

    data: bytes = b""

    def read_bytes(self) -> bytes:
        return self.data


class MemorySample(OpenedSample):
    """A sample whose files (`files`: name -> bytes) are in memory; read as a tree sample's, without hash checks."""

    def __init__(self, entry: SampleEntry, files: Mapping[str, bytes], annotation_model: type | None) -> None:
        transcripts = {name: NO_FILE for name in files if name.endswith(".json") and name != entry.annotation}
        transcripts.pop(OUTPUT_JSON, None)
        asr = AsrSample("ok", NO_FILE if OUTPUT_JSON in files else None, None, {"transcripts": transcripts})
        super().__init__(MEMORY, entry, asr, annotation_model)
        self.files = dict(files)

    def read(self, name: str, sha256: str | None = None, recorded_in: str = MANIFEST_FILE) -> bytes:
        """The file's bytes as given; a file the sample was not given is one line naming it."""
        if name not in self.files:
            raise InputError(f"{self.where(self.dir / name)}: no {name} given for this sample")
        return self.files[name]

    def recorded(self, name: str) -> bytes:
        return self.read(name, None, ASR_FILE)

    def audio_source(self, name: str = OUTPUT_WAV) -> SampleAudio:
        return MemoryAudio(self.dir / name, None, self.key, data=self.read(name))


def score_memory(samples: Sequence[MemorySample | SampleEntry], declared: Mapping[str, int] | None = None,
                 segments: Mapping[str, Sequence[tuple[int, int]]] | None = None,
                 jobs: int | None = None) -> UnifiedResult:
    """Score in-memory samples by the unified rules. A `SampleEntry` is a selected, ineligible sample (counted);
    `segments[key]` are the caller's VAD segments of a sample (16 kHz sample indices, end exclusive): given for
    every sample whose task needs VAD, Silero does not run; given for none, it runs on the samples' output.wav bytes."""
    given = dict(segments or {})
    loaded: list[LoadedSample] = []
    seen: set[str] = set()
    for s in samples:
        entry = s.entry if isinstance(s, MemorySample) else s
        if entry.key in seen:
            raise InputError(f"score_samples: sample {entry.key} given twice")
        seen.add(entry.key)
        task = get_task(entry.task)
        inp = task.unified.parse(s) if isinstance(s, MemorySample) and task.unified is not None else None
        loaded.append(LoadedSample(entry, inp))
    needs: list[str] = []

    def segment(files: list[tuple[SampleAudio, int | None]]) -> list[Any]:
        keys = [source.sample for source, _ in files]
        needs.extend(keys)
        have = [k for k in keys if k in given]
        if have and len(have) != len(keys):
            missing = next(k for k in keys if k not in given)
            raise InputError(f"score_samples: sample {missing} needs VAD segments: give segments for every sample "
                             "that needs them, or for none (then Silero runs on each one's audio)")
        if have:
            return [list(given[k]) for k in keys]
        return vad_batched.segment_files([source for source, _ in files], jobs, limits=[lim for _, lim in files])

    made = rows_and_blocks(loaded, dict(declared or {}), segment)
    unused = sorted(set(given) - set(needs))
    if unused:
        raise InputError(f"score_samples: segments given for sample {unused[0]}, whose task does not use VAD "
                         "(or which is not eligible)")
    vad = INJECTED_VAD if given else vad_signature()
    return UnifiedResult(None, unified_json(made, loaded, CALLER_ASR, vad, NO_FILE, NO_FILE), made.blocks, made.rows)


__all__ = ["CALLER_ASR", "MEMORY", "NO_FILE", "MemorySample", "score_memory"]
