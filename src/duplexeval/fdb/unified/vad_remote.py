"""Silero VAD of the interruption outputs through the executor seam (``fdb score --executor ray``).

The files go out as their samples' audio sources (a path and the hash recorded when the sample was opened; the
worker reads and checks each one), in chunks (one task per chunk, at most ``vad_batched.BATCH_FILES`` files, about
four chunks per worker) because the scorer steps several files through the model together; each worker loads
Silero once, and the segments come back per file in the tree's order, equal to the in-process scan's (each file's
segments do not depend on which files share its batch: tested in vad_batched).
"""

from __future__ import annotations

from typing import Any

from duplexeval import vad_batched
from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec, ItemFailure, StatefulWork, make_executor
from duplexeval.fdb.sample import SampleAudio
from duplexeval.vad import load_vad

Chunk = tuple[tuple[SampleAudio, "int | None"], ...]
CHUNKS_PER_WORKER = 4


def _load(_: Any) -> None:
    """The worker's model load: Silero into this process's cache (vad_batched reads it from there)."""
    load_vad()


def _segment_chunk(_state: None, chunk: Chunk) -> list[vad_batched.Segments]:
    return vad_batched.segment_files([source for source, _ in chunk], 1, limits=[lim for _, lim in chunk])


def chunks(sources: list[SampleAudio], limits: list[int | None], workers: int) -> list[Chunk]:
    """Consecutive chunks of (source, limit), about CHUNKS_PER_WORKER per worker, at most BATCH_FILES each."""
    items = [(s.resolved(), lim) for s, lim in zip(sources, limits)]  # workers may run in another folder
    if not items:
        return []
    size = min(vad_batched.BATCH_FILES, max(1, -(-len(items) // (max(1, workers) * CHUNKS_PER_WORKER))))
    return [tuple(items[i : i + size]) for i in range(0, len(items), size)]


def segment_files(spec: ExecutorSpec, sources: list[SampleAudio],
                  limits: list[int | None]) -> list[vad_batched.Segments]:
    """VAD segments of each source, in order, computed on the executor `spec` names; a failed chunk is an
    InputError."""
    ex = make_executor(spec)
    try:
        work = StatefulWork(_load, None, _segment_chunk)
        parts = chunks(sources, limits, ex.parallelism)
        out: list[vad_batched.Segments] = []
        for res in ex.map_stateful(work, parts):
            if isinstance(res, ItemFailure):
                first = parts[res.index][0][0].path
                raise InputError(f"VAD of {len(parts[res.index])} files from {first} failed: {res.reason}")
            out.extend(res.value)
        return out
    finally:
        ex.close()
