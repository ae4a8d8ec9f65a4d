"""Load a tree for the unified scorer: refusals, hash checks and time checks, into integer-µs inputs.

Every comparison in the scorer is on integers: transcript and annotation times are rounded to the
microsecond (`to_us`), and VAD sample indices are compared in half-microsecond ticks (see
`interruption.py`). A failed check raises one line naming the file, the sample and the problem.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import soundfile as sf

from duplexeval.audio import wav_truncation
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.tasks import SampleFiles, get_task
from duplexeval.fdb.transcript import parse_output_json, to_us
from duplexeval.fdb.tree import (
    ASR_FILE,
    MANIFEST_FILE,
    OUTPUT_JSON,
    SUBSETS,
    AsrRecord,
    Manifest,
    SampleEntry,
    load_asr,
    load_manifest,
)
from duplexeval.fdb.verified import read_verified
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import InterruptAnnotation, PauseAnnotation, TurnAnnotation

SAMPLE_RATE = 16000


@dataclass(frozen=True)
class Span:
    """A transcript word in integer µs; `end_us` equals `start_us` for a null end (zero-length word)."""

    start_us: int
    end_us: int


@dataclass(frozen=True)
class PauseInput:
    """A pause-handling sample: T, the model's words and the annotated pauses `[a, b]`, all in µs."""

    T_us: int
    words: tuple[Span, ...]
    pauses: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class TurnInput:
    """A turn-taking sample: T, the model's words and the reference E (end of the user's turn), in µs."""

    T_us: int
    words: tuple[Span, ...]
    E_us: int


@dataclass(frozen=True)
class InterruptionInput:
    """An interruption sample: T, words (all at or after R), S and R in µs, and the checked output.wav."""

    T_us: int
    words: tuple[Span, ...]
    S_us: int
    R_us: int
    n_samples: int
    wav_path: Path


SampleInput = PauseInput | TurnInput | InterruptionInput


@dataclass
class LoadedSample:
    """One selected sample: its manifest entry and, when eligible and scored, its checked input."""

    entry: SampleEntry
    input: Any  # the task's parsed input (a SampleInput for the built-in tasks), None when not scored


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


def _json(data: bytes, path: Path, entry: SampleEntry) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where(path, entry)}: invalid JSON: {exc}") from None


def _in_window(t_us: int, T_us: int) -> bool:
    return 0 <= t_us <= T_us


def fmt_s(us: int) -> str:
    """A µs time as seconds for messages."""
    return f"{us / 1e6:.6f}".rstrip("0").rstrip(".") + " s"


def parse_pauses(obj: Any, T_us: int, path: Path, entry: SampleEntry) -> tuple[tuple[int, int], ...]:
    """pause.json: at least one pause, each [a, b] with a <= b inside [0, T], sorted, not overlapping."""
    rec = validate(obj, PauseAnnotation, where(path, entry))
    pauses: list[tuple[int, int]] = []
    for i, item in enumerate(rec.root):
        a, b = item.timestamp
        a_us, b_us = to_us(a), to_us(b)
        if a_us > b_us:
            raise InputError(f"{where(path, entry)}: pause {i} ends before it starts ({a!r} > {b!r})")
        if not (_in_window(a_us, T_us) and _in_window(b_us, T_us)):
            raise InputError(f"{where(path, entry)}: pause {i} [{a!r}, {b!r}] is not inside [0, T={fmt_s(T_us)}]")
        if pauses and a_us < pauses[-1][1]:
            raise InputError(
                f"{where(path, entry)}: pause {i} [{a!r}, {b!r}] starts before pause {i - 1} ends "
                "(pauses must be sorted and not overlapping)"
            )
        pauses.append((a_us, b_us))
    return tuple(pauses)


def parse_turn_taking(obj: Any, T_us: int, path: Path, entry: SampleEntry) -> int:
    """turn_taking.json: E = [0].timestamp[0] inside [0, T]."""
    E = validate(obj, TurnAnnotation, where(path, entry)).root[0].timestamp[0]
    E_us = to_us(E)
    if not _in_window(E_us, T_us):
        raise InputError(f"{where(path, entry)}: E={E!r} is not inside [0, T={fmt_s(T_us)}]")
    return E_us


def parse_interrupt(obj: Any, T_us: int, path: Path, entry: SampleEntry) -> tuple[int, int]:
    """interrupt.json: [0].timestamp = [S, R] inside [0, T] with S <= R."""
    S, R = validate(obj, InterruptAnnotation, where(path, entry)).root[0].timestamp
    S_us, R_us = to_us(S), to_us(R)
    for name, v, v_us in (("S", S, S_us), ("R", R, R_us)):
        if not _in_window(v_us, T_us):
            raise InputError(f"{where(path, entry)}: {name}={v!r} is not inside [0, T={fmt_s(T_us)}]")
    if S_us > R_us:
        raise InputError(f"{where(path, entry)}: S={S!r} is after R={R!r}")
    return S_us, R_us


def sample_words(s: SampleFiles) -> tuple[Span, ...]:
    """The sample's transcript words (`parse_words` of its output.json), as every task's parser reads them."""
    return parse_words(s.transcript, s.T_us, s.transcript_path, s.entry)


def parse_words(obj: Any, T_us: int, path: Path, entry: SampleEntry) -> tuple[Span, ...]:
    """output.json words in µs; every word must start in [0, T]; a null end is zero-length at the start.

    An end before its start (never written by our ASR) is treated like a null end: the word covers no time.
    """
    words = parse_output_json(obj, f"{where(path, entry)}")
    spans: list[Span] = []
    for i, w in enumerate(words):
        s_us = to_us(w.start)
        if not _in_window(s_us, T_us):
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
    try:
        info = sf.info(io.BytesIO(data))
    except (RuntimeError, OSError) as exc:
        raise InputError(f"{where(path, entry)}: cannot read audio: {exc}") from None
    T = entry.T
    want = int(round(T * SAMPLE_RATE))
    if info.samplerate != SAMPLE_RATE:
        raise InputError(f"{where(path, entry)}: sample rate {info.samplerate} Hz, expected {SAMPLE_RATE} Hz")
    if info.channels != 1:
        raise InputError(f"{where(path, entry)}: {info.channels} channels, expected mono")
    if info.frames != want:
        raise InputError(
            f"{where(path, entry)}: {info.frames} samples, expected exactly round(T*16000) = {want} (T={T!r} s)"
        )
    return want


def load_sample(root: Path, entry: SampleEntry, asr: AsrRecord) -> Any:
    """Check one eligible sample of a scored subset (hashes first, then times) and build its input.

    The common part (annotation and transcript hashes) is here; the task's `parse` does the rest.
    """
    sdir = root / entry.subset / entry.id
    T_us = to_us(entry.T)
    ann_name = SUBSETS[entry.subset].annotation
    assert ann_name is not None
    ann_path = sdir / ann_name
    ann = _json(read_verified(ann_path, entry.files[ann_name], entry.key, MANIFEST_FILE), ann_path, entry)

    oj_path = sdir / OUTPUT_JSON
    rec = asr.samples.get(entry.key)
    if rec is None:
        raise RefusalError(f"{root / ASR_FILE}: sample {entry.key}: eligible sample is not in asr.json; rerun asr")
    if rec.status != "ok" or rec.output_json is None:
        raise RefusalError(
            f"{root / ASR_FILE}: sample {entry.key}: ASR failed ({rec.error}); rerun asr before scoring"
        )
    transcript = _json(read_verified(oj_path, rec.output_json, entry.key, ASR_FILE), oj_path, entry)

    task = get_task(entry.task)
    assert task.parse is not None
    return task.parse(SampleFiles(root, entry, rec, T_us, ann, ann_path, transcript, oj_path))


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
        if entry.eligible and get_task(entry.task).parse is not None:
            inp = load_sample(root, entry, asr)
        samples.append(LoadedSample(entry, inp))
    return LoadedTree(root, manifest, msha, asr, asha, samples)
