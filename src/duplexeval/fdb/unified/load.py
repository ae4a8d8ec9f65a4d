"""Load a tree for the unified scorer: refusals and hash checks, then each task's parse into integer-µs inputs.

Every comparison in the scorer is on integers: transcript and annotation times are rounded to the
microsecond (`to_us`), and VAD sample indices are compared in half-microsecond ticks (see
`interruption.py`). A failed check raises one line naming the file, the sample and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.audio import audio_format, wav_truncation
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.sample import OpenedSample
from duplexeval.fdb.tasks import Task, get_task
from duplexeval.fdb.transcript import parse_output_json, to_us
from duplexeval.fdb.tree import (
    ASR_FILE,
    AsrRecord,
    Manifest,
    SampleEntry,
    load_asr,
    load_manifest,
)
from duplexeval.units import SAMPLE_RATE, Span


@dataclass
class LoadedSample:
    """One selected sample: its manifest entry and, when eligible and scored, its checked input."""

    entry: SampleEntry
    input: Any  # the task's parsed input (`UnifiedRules.parse`), None when not scored


@dataclass
class LoadedTree:
    """The checked tree: the manifest, the file hashes and every selected sample in manifest order."""

    root: Path
    manifest: Manifest
    manifest_sha256: str
    asr: AsrRecord
    asr_sha256: str
    samples: list[LoadedSample]


def where(path: Path, entry: SampleEntry) -> str:
    """`PATH: sample SUBSET/ID`, the prefix of every message about one sample's file."""
    return f"{path}: sample {entry.key}"


def in_window(t_us: int, T_us: int) -> bool:
    """0 <= t <= T (integer µs)."""
    return 0 <= t_us <= T_us


def fmt_s(us: int) -> str:
    """A µs time as seconds for messages."""
    return f"{us / 1e6:.6f}".rstrip("0").rstrip(".") + " s"


def sample_words(s: OpenedSample) -> tuple[Span, ...]:
    """The sample's transcript words in µs (`parse_words` of its output.json), as every task's parser reads them."""
    return parse_words(s.transcript_raw, s.T_us, s.transcript_path, s.entry)


def parse_words(obj: Any, T_us: int, path: Path, entry: SampleEntry) -> tuple[Span, ...]:
    """output.json words in µs; every word must start in [0, T]; a null end is zero-length at the start.

    An end before its start (never written by our ASR) is treated like a null end: the word covers no time.
    """
    words = parse_output_json(obj, f"{where(path, entry)}")
    spans: list[Span] = []
    for i, w in enumerate(words):
        s_us = to_us(w.start)
        if not in_window(s_us, T_us):
            raise InputError(
                f"{where(path, entry)}: word {i} ({w.text.strip()!r}) starts at {w.start!r}, "
                f"outside [0, T={fmt_s(T_us)}]"
            )
        e_us = s_us if w.end is None else max(s_us, to_us(w.end))
        spans.append(Span(s_us, e_us))
    return tuple(spans)


def check_wav(data: bytes, path: Path, entry: SampleEntry) -> int:
    """output.wav must be mono 16 kHz with exactly round(T * 16000) samples; returns that count."""
    short = wav_truncation(data)
    if short is not None:
        raise InputError(f"{where(path, entry)}: {short}")
    frames, rate, channels = audio_format(path, data, where(path, entry))
    T = entry.T
    want = int(round(T * SAMPLE_RATE))
    if rate != SAMPLE_RATE:
        raise InputError(f"{where(path, entry)}: sample rate {rate} Hz, expected {SAMPLE_RATE} Hz")
    if channels != 1:
        raise InputError(f"{where(path, entry)}: {channels} channels, expected mono")
    if frames != want:
        raise InputError(
            f"{where(path, entry)}: {frames} samples, expected exactly round(T*16000) = {want} (T={T!r} s)"
        )
    return want


def open_sample(root: Path, entry: SampleEntry, asr: AsrRecord, task: Task) -> OpenedSample:
    """Read one eligible sample's annotation and transcript once, each checked against its recorded hash (in this
    order: the annotation, then the transcript's record in asr.json, then the transcript)."""
    opened = OpenedSample(root, entry, asr.samples.get(entry.key), task.annotation)
    opened.annotation_raw  # noqa: B018 - read now: a changed annotation is reported before the transcript
    rec = opened.asr
    if rec is None:
        raise RefusalError(f"{root / ASR_FILE}: sample {entry.key}: eligible sample is not in asr.json; rerun asr")
    if rec.status != "ok" or rec.output_json is None:
        raise RefusalError(
            f"{root / ASR_FILE}: sample {entry.key}: ASR failed ({rec.error}); rerun asr before scoring"
        )
    opened.transcript_raw  # noqa: B018 - read now, before the task's parse
    return opened


def load_tree(tree: str | Path) -> LoadedTree:
    """Load manifest.json and asr.json (refusing a tree without asr.json) and check every eligible scored sample."""
    root = Path(tree)
    manifest, msha = load_manifest(root)
    asr, asha = load_asr(root)
    if asr.manifest_sha256 != msha:
        raise RefusalError(
            f"{root / ASR_FILE}: made from a different manifest.json (recorded {asr.manifest_sha256[:12]}..., "
            f"current {msha[:12]}...); rerun asr"
        )
    samples: list[LoadedSample] = []
    for entry in manifest.samples:
        inp = None
        task = get_task(entry.task)
        if entry.eligible and task.unified is not None:
            inp = task.unified.parse(open_sample(root, entry, asr, task))
        samples.append(LoadedSample(entry, inp))
    return LoadedTree(root, manifest, msha, asr, asha, samples)
