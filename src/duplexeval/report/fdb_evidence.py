"""What the FDB explorer shows of each sample, read from the files: the output's peaks, words, VAD, annotation
marks and (inline) audio per tree, and the user's input from the dataset. Run through the executor seam, one
picklable job per file, so any `--jobs` gives the same bytes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from duplexeval.audio import read_audio_16k
from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec, ItemFailure, make_executor
from duplexeval.fdb.results import ScoredTree
from duplexeval.fdb.tree import SampleEntry
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report.clips import ogg_bytes, peaks_b64
from duplexeval.report.timeline import load_view, open_sample

AUTO, INLINE, LINK, NONE = "auto", "inline", "link", "none"
AUDIO_MODES = (AUTO, INLINE, LINK, NONE)
AUTO_INLINE_MAX_S = 1800.0  # `auto` inlines up to 30 min of audio tracks (about 4 MB of Vorbis), links above


@dataclass(frozen=True)
class OutputJob:
    """One tree's sample: its files are read (hash-checked) and drawn; `inline` also encodes the audio."""

    tree: str
    entry: SampleEntry
    row: SampleRow[Any] | None
    inline: bool
    transcript_sha256: str | None = None  # asr.json's hash of output.json


@dataclass(frozen=True)
class InputJob:
    """One input file of the dataset (the user's side), shared by every tree's sample of that key."""

    path: str
    inline: bool


@dataclass(frozen=True)
class Evidence:
    """What one file gave: peaks, and for an output its words, VAD and marks; `audio` when inlined."""

    peaks: str | None
    audio: bytes | None = None
    outcome: str = ""
    words: tuple[tuple[str, float, float | None], ...] = ()
    vad: tuple[tuple[float, float], ...] = ()
    marks: tuple[tuple[str, float], ...] = ()
    spans: tuple[tuple[str, float, float], ...] = ()


def read_output(job: OutputJob) -> Evidence:
    """Load one tree sample (top level and pure, so a process pool can run it): the files the manifest and asr.json
    vouch for are read through the hash-checked reader (a missing or changed one is one line); no output.wav (an
    ineligible capture) is no peaks."""
    sample = open_sample(Path(job.tree), job.entry, job.transcript_sha256)
    view = load_view(sample, job.row)
    peaks = audio = None
    if sample.has_output:  # read once: the view's envelope and these peaks and clip share it
        a, sr = sample.output_audio
        peaks = peaks_b64(a)
        audio = ogg_bytes(a, sr) if job.inline else None
    marks = tuple((m.label, m.t) for m in view.marks)
    spans = tuple((b.label, b.start, b.end) for b in view.spans)
    return Evidence(peaks, audio, view.outcome, tuple(view.words), tuple(view.vad), marks, spans)


def read_input(job: InputJob) -> Evidence:
    a = read_audio_16k(Path(job.path))
    return Evidence(peaks_b64(a), ogg_bytes(a) if job.inline else None)


@dataclass
class FdbEvidence:
    """Every sample's evidence: `outputs[(tree index, subset, id)]`, `inputs[(subset, id)]` with their paths."""

    outputs: dict[tuple[int, str, str], Evidence] = field(default_factory=dict)
    inputs: dict[tuple[str, str], Evidence] = field(default_factory=dict)
    input_paths: dict[tuple[str, str], Path] = field(default_factory=dict)


def gather(trees: Sequence[ScoredTree], inputs: dict[tuple[str, str], Path], mode: str, jobs: int) -> FdbEvidence:
    """Read every output (and input) once, through the executor: results come back in job order."""
    keys: list[tuple[str, Any]] = []
    work: list[OutputJob | InputJob] = []
    for k, t in enumerate(trees):
        for e in t.manifest.samples:
            keys.append(("out", (k, e.subset, e.id)))
            asr = t.asr.samples.get(e.key)
            work.append(OutputJob(str(t.root), e, t.rows.get(e.subset, {}).get(e.id), mode == INLINE,
                                  asr.output_json if asr else None))
    for key, path in inputs.items():
        keys.append(("in", key))
        work.append(InputJob(str(path), mode == INLINE))
    ex = make_executor(ExecutorSpec(jobs=max(1, min(jobs, len(work) // 50 or 1))))
    out = FdbEvidence(input_paths=dict(inputs))
    try:
        for res in ex.map_ordered(_run, work):
            kind, key = keys[res.index]
            if isinstance(res, ItemFailure):
                where = f"{trees[key[0]].root}: sample {key[1]}/{key[2]}" if kind == "out" else f"{inputs[key]}"
                raise InputError(f"{where}: cannot read it for the report: {res.reason}")
            (out.outputs if kind == "out" else out.inputs)[key] = res.value
    finally:
        ex.close()
    return out


def _run(job: OutputJob | InputJob) -> Evidence:
    return read_output(job) if isinstance(job, OutputJob) else read_input(job)


def page_url(path: Path, page: Path) -> str:
    """`path` as a URL relative to the page's folder (for `--audio link`)."""
    rel = os.path.relpath(path.resolve(), page.resolve().parent)
    return quote(Path(rel).as_posix())
