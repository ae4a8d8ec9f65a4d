"""The official v1.5 rules over one subset folder in the official per-sample layout (the reference column).

A sample folder holds `output.wav`, `clean_output.wav`, `metadata.json` and the four transcripts. Per sample we
compute the before/after split (`general_split.json` of the official script), the timing intervals
(`latency_intervals.json`) and, with a judge, the behaviour tags (`content_tag.json`); per subset the trimmed
means, the tag ratios and the paired t-tests. Every rule is the official one except where the module that
implements it says otherwise (docs/v1.5.md lists each difference).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.asr.base import Word
from duplexeval.audio import read_audio, resample
from duplexeval.errors import InputError
from duplexeval.fdb.tasks.overlap import before_after, significance, timing
from duplexeval.fdb.tasks.overlap.behavior import TRANSCRIPTS, official_ratios
from duplexeval.fdb.tasks.overlap.judge import BehaviorJudge, Verdict
from duplexeval.fdb.tasks.overlap.layout import INPUT_FILE, METADATA_FILE, Metadata, id_key
from duplexeval.fdb.tasks.overlap.silero import SileroChoice
from duplexeval.fdb.transcript import parse_output_json
from duplexeval.jsonio import read_json
from duplexeval.schemas import validate
from duplexeval.vad import OFFICIAL_SETTINGS, SileroVad, VadSettings, timestamps_from_probs

OUTPUT_WAV = "output.wav"
CLEAN_OUTPUT_WAV = "clean_output.wav"
OUTPUT_JSON = "output.json"
CLEAN_OUTPUT_JSON = "clean_output.json"


def read_16k(path: Path) -> np.ndarray:
    """A wav as mono float32 at 16 kHz (the script reads with torchaudio, resampling with torchaudio when needed)."""
    audio, sr = read_audio(path)
    return resample(audio, sr) if sr != before_after.SR else audio


def read_words(path: Path) -> list[Word]:
    return parse_output_json(read_json(path), path)


@dataclass
class SampleResult:
    """One sample's official results (None: not computed, with `notes` saying why)."""

    id: str
    split: before_after.SampleSplit | None
    intervals: dict[str, list[list[float]]] | None
    verdict: Verdict | None = None
    notes: list[str] = field(default_factory=list)


class ClipVad:
    """Silero probabilities of known clips stepped together (`probs_many`, same values), looked up by identity."""

    def __init__(self, vad: SileroVad) -> None:
        self.vad = vad
        self._probs: dict[int, np.ndarray] = {}
        self._keep: list[np.ndarray] = []  # the clips stay alive while their ids are keys

    def prepare(self, clips: Sequence[np.ndarray]) -> None:
        todo = [c for c in clips if c.shape[0] and id(c) not in self._probs]
        for c, p in zip(todo, self.vad.probs_many(todo)):
            self._probs[id(c)] = p
            self._keep.append(c)

    def clear(self) -> None:
        self._probs.clear()
        self._keep.clear()

    def segments(self, audio: np.ndarray, settings: VadSettings) -> list[tuple[int, int]]:
        p = self._probs.get(id(audio))
        if p is None:
            p = self.vad.probs(audio)
        return timestamps_from_probs(p, int(audio.shape[0]), settings)


@dataclass
class _Loaded:
    """One sample read and planned, before any VAD runs."""

    id: str
    md: Metadata
    out: np.ndarray
    user: np.ndarray
    plan: before_after.Plan | None
    clean: tuple[np.ndarray, list[Word]] | None
    notes: list[str]

    def clips(self) -> list[np.ndarray]:
        got = [self.user, self.out]
        if self.plan is not None:
            got += [self.plan.pre_audio, self.plan.post_audio]
        if self.clean is not None:
            got.append(self.clean[0])
        return got


def _load(d: Path) -> _Loaded:
    md = validate(read_json(d / METADATA_FILE), Metadata, d / METADATA_FILE)
    out = read_16k(d / OUTPUT_WAV)
    words = read_words(d / OUTPUT_JSON)
    clean = None
    if (d / CLEAN_OUTPUT_WAV).is_file() and (d / CLEAN_OUTPUT_JSON).is_file():
        clean = (read_16k(d / CLEAN_OUTPUT_WAV), read_words(d / CLEAN_OUTPUT_JSON))
    notes: list[str] = []
    pl: before_after.Plan | None
    try:
        pl = before_after.plan(out, words, md.end)
    except before_after.OfficialCrash as exc:
        pl = None
        notes.append(str(exc))
    return _Loaded(d.name, md, out, read_16k(d / INPUT_FILE), pl, clean, notes)


def _measure(s: _Loaded, vad: ClipVad, utmos: Callable[[np.ndarray], float] | None) -> SampleResult:
    split = None
    if s.plan is not None:
        try:
            split = before_after.measure(s.plan, s.md.end, vad.segments, s.clean, utmos)
        except before_after.OfficialCrash as exc:
            s.notes.append(str(exc))
    ivs = timing.intervals(vad.segments(s.user, OFFICIAL_SETTINGS), vad.segments(s.out, OFFICIAL_SETTINGS))
    return SampleResult(s.id, split, ivs, None, s.notes)


def evaluate_sample(d: Path, vad: SileroVad, utmos: Callable[[np.ndarray], float] | None = None) -> SampleResult:
    """The before/after split and the timing intervals of one sample folder."""
    cv = ClipVad(vad)
    s = _load(d)
    cv.prepare(s.clips())
    return _measure(s, cv, utmos)


def transcripts(d: Path) -> dict[str, Any] | None:
    """The four transcripts the judge reads, as loaded (None when one is missing: the script skips the sample)."""
    out: dict[str, Any] = {}
    for key, name in TRANSCRIPTS:
        p = d / name
        if not p.is_file():
            return None
        obj = read_json(p)
        parse_output_json(obj, p)  # the shape is checked; the object is sent as it is
        out[key] = obj
    return out


@dataclass
class SubsetResult:
    """A subset's official results: per sample, the trimmed means, the tag ratios and the paired tests."""

    subset: str
    samples: list[SampleResult]
    aggregate: dict[str, dict[str, before_after.TrimmedMean]] | None
    ratios: dict[str, float] | None
    tests: list[significance.PairedTest]
    skipped_tests: list[significance.Skipped]
    notes: list[str] = field(default_factory=list)


def evaluate_subset(subset: str, sdir: Path, silero: SileroChoice, judge: BehaviorJudge | None = None,
                    ids: Sequence[str] | None = None, utmos: Callable[[np.ndarray], float] | None = None,
                    batch: int = 8) -> SubsetResult:
    """Every official rule on one subset folder (`ids`: these sample folders, else all, natural order)."""
    vad = ClipVad(silero.load())
    names = list(ids) if ids is not None else sorted((p.name for p in sdir.iterdir() if p.is_dir()), key=id_key)
    results: list[SampleResult] = []
    for g in range(0, len(names), batch):
        group = []
        for sid in names[g:g + batch]:
            d = sdir / sid
            if not (d / OUTPUT_WAV).is_file():
                raise InputError(f"{d / OUTPUT_WAV}: sample {subset}/{sid}: missing {OUTPUT_WAV}")
            group.append(_load(d))
        vad.prepare([c for s in group for c in s.clips()])
        results.extend(_measure(s, vad, utmos) for s in group)
        vad.clear()
    for r in results:
        d = sdir / r.id
        if judge is not None:
            tr = transcripts(d)
            if tr is None:
                r.notes.append("a transcript is missing: not judged (the official script skips such a sample)")
            else:
                r.verdict = judge.judge(f"{subset}/{r.id}", d, tr)
    notes: list[str] = []
    crashed = [r.id for r in results if r.split is None]
    agg = None
    if crashed:
        notes.append(f"sample {subset}/{crashed[0]}: the official before/after script raises here and writes no result")
    else:
        agg = before_after.aggregate([r.split for r in results if r.split is not None])
    ratios = None
    tests: list[significance.PairedTest] = []
    skipped: list[significance.Skipped] = []
    if judge is not None:
        tag_lists = [r.verdict.tags for r in results if r.verdict is not None and r.verdict.tags is not None]
        ratios = official_ratios(tag_lists)
        rows = [significance.Row(r.id, r.verdict.tags if r.verdict else None, r.split.official_json() if r.split else {})
                for r in results]
        tests, skipped, _ = significance.run_tests(rows)
    return SubsetResult(subset, results, agg, ratios, tests, skipped, notes)


def result_json(res: SubsetResult) -> dict[str, Any]:
    """The subset's results as plain JSON (per-sample objects in the official shapes)."""
    return json.loads(json.dumps({
        "subset": res.subset,
        "samples": {r.id: {"general_split": r.split.official_json() if r.split else None, "latency_intervals": r.intervals,
                           "content_tag": r.verdict.saved if r.verdict else None, "notes": r.notes} for r in res.samples},
        "aggregate": None if res.aggregate is None else {side: {k: v.value for k, v in m.items()} for side, m in res.aggregate.items()},
        "ratios": res.ratios,
        "tests": [t.to_json() for t in res.tests],
        "skipped_tests": [s.__dict__ for s in res.skipped_tests],
        "notes": res.notes,
    }))
