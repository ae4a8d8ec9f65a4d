"""The official v1.5 rules over one subset folder in the official per-sample layout (the reference column).

A sample folder holds `output.wav`, `clean_output.wav`, `metadata.json` and the four transcripts. Per sample we
compute the before/after split (`general_split.json` of the official script), the timing intervals
(`latency_intervals.json`) and, with a judge, the behaviour tags (`content_tag.json`); per subset the trimmed
means, the tag ratios and the paired t-tests. Every rule is the official one except where the module that
implements it says otherwise (docs/v1.5.md lists each difference).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.asr.base import Word
from duplexeval.audio import read_audio, resample
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import id_key
from duplexeval.fdb.official.metric import Metric, null_metric
from duplexeval.fdb.official.summary import NOT_JUDGED as NOT_JUDGED_BLOCK
from duplexeval.fdb.tasks.base import JsonRecord, OfficialContext, OfficialOutcome, OfficialRules, Ready
from duplexeval.fdb.tasks.overlap import before_after, significance, timing
from duplexeval.fdb.tasks.overlap import silero as silero_choice
from duplexeval.fdb.tasks.overlap.annotation import INPUT_FILE, INTERVALS_FILE, METADATA_FILE, SPLIT_FILE, Metadata
from duplexeval.fdb.tasks.overlap.behavior import (
    LABELS,
    OFFICIAL_FIRST_SEED,
    OFFICIAL_MODEL,
    TRANSCRIPTS,
    load_prompt,
    official_ratios,
    rounded,
)
from duplexeval.fdb.tasks.overlap.judge import BehaviorJudge, Verdict, behavior_config
from duplexeval.fdb.tasks.overlap.prosody import praat_signature
from duplexeval.fdb.tasks.overlap.silero import SileroChoice
from duplexeval.fdb.transcript import parse_output_json
from duplexeval.fdb.tree import SampleEntry
from duplexeval.fdb.verified import parse_json
from duplexeval.jsonio import read_json, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.signature import Component
from duplexeval.units import SAMPLE_RATE
from duplexeval.vad import OFFICIAL_SETTINGS, SileroVad, VadSettings, timestamps_from_probs

OUTPUT_WAV = "output.wav"
CLEAN_OUTPUT_WAV = "clean_output.wav"
OUTPUT_JSON = "output.json"
CLEAN_OUTPUT_JSON = "clean_output.json"


# How the rules read a sample's file: (sample folder, file name) -> bytes (the stage passes a hash-checked reader).
Reader = Callable[[Path, str], bytes]


def read_file(d: Path, name: str) -> bytes:
    """The plain reader (a folder of the official layout, not a tree with recorded hashes)."""
    path = d / name
    if not path.is_file():
        raise InputError(f"{path}: missing {name}")
    return path.read_bytes()


def read_16k(path: Path, raw: bytes | None = None) -> np.ndarray:
    """A wav as mono float32 at 16 kHz (the script reads with torchaudio, resampling with torchaudio when needed)."""
    audio, sr = read_audio(path, raw)
    return resample(audio, sr) if sr != SAMPLE_RATE else audio


def read_words(path: Path, raw: bytes | None = None) -> list[Word]:
    return parse_output_json(read_json(path) if raw is None else parse_json(raw, str(path)), path)


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


def _load(d: Path, read: Reader = read_file) -> _Loaded:
    md = validate(parse_json(read(d, METADATA_FILE), str(d / METADATA_FILE)), Metadata, d / METADATA_FILE)
    out = read_16k(d / OUTPUT_WAV, read(d, OUTPUT_WAV))
    words = read_words(d / OUTPUT_JSON, read(d, OUTPUT_JSON))
    clean = None
    if (d / CLEAN_OUTPUT_WAV).is_file() and (d / CLEAN_OUTPUT_JSON).is_file():
        clean = (read_16k(d / CLEAN_OUTPUT_WAV, read(d, CLEAN_OUTPUT_WAV)),
                 read_words(d / CLEAN_OUTPUT_JSON, read(d, CLEAN_OUTPUT_JSON)))
    notes: list[str] = []
    pl: before_after.Plan | None
    try:
        pl = before_after.plan(out, words, md.end)
    except before_after.OfficialCrash as exc:
        pl = None
        notes.append(str(exc))
    return _Loaded(d.name, md, out, read_16k(d / INPUT_FILE, read(d, INPUT_FILE)), pl, clean, notes)


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


def transcripts(d: Path, read: Reader = read_file) -> dict[str, JsonObject] | None:
    """The four transcripts the judge reads, as loaded (None when one is missing: the script skips the sample)."""
    out: dict[str, JsonObject] = {}
    for key, name in TRANSCRIPTS:
        p = d / name
        if not p.is_file():
            return None
        obj = parse_json(read(d, name), str(p))
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
                    batch: int = 8, read: Reader = read_file) -> SubsetResult:
    """Every official rule on one subset folder (`ids`: these sample folders, else all, natural order); `read`
    reads each file (the tree stage's checks each one against its recorded hash)."""
    vad = ClipVad(silero.load())
    names = list(ids) if ids is not None else sorted((p.name for p in sdir.iterdir() if p.is_dir()), key=id_key)
    results: list[SampleResult] = []
    for g in range(0, len(names), batch):
        group = []
        for sid in names[g:g + batch]:
            d = sdir / sid
            if not (d / OUTPUT_WAV).is_file():
                raise InputError(f"{d / OUTPUT_WAV}: sample {subset}/{sid}: missing {OUTPUT_WAV}")
            group.append(_load(d, read))
        vad.prepare([c for s in group for c in s.clips()])
        results.extend(_measure(s, vad, utmos) for s in group)
        vad.clear()
    for r in results:
        d = sdir / r.id
        if judge is not None:
            tr = transcripts(d, read)
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
        rows = [significance.Row(r.id, r.verdict.tags if r.verdict else None,
                                 r.split.official_json() if r.split else {})
                for r in results]
        tests, skipped, _ = significance.run_tests(rows)
    return SubsetResult(subset, results, agg, ratios, tests, skipped, notes)


def result_json(res: SubsetResult) -> JsonObject:
    """The subset's results as plain JSON (per-sample objects in the official shapes)."""
    out: JsonObject = json.loads(json.dumps({
        "subset": res.subset,
        "samples": {r.id: {"general_split": r.split.official_json() if r.split else None,
                           "latency_intervals": r.intervals,
                           "content_tag": r.verdict.saved if r.verdict else None, "notes": r.notes}
                    for r in res.samples},
        "aggregate": None if res.aggregate is None else {
            side: {k: v.value for k, v in m.items()} for side, m in res.aggregate.items()},
        "ratios": res.ratios,
        "tests": [t.to_json() for t in res.tests],
        "skipped_tests": [s.__dict__ for s in res.skipped_tests],
        "notes": res.notes,
    }))
    return out


# ------------------------------------------------------------------------------------------ the `fdb evaluate` rule

NOT_JUDGED = f"not judged (--judge none): the official script always asks {OFFICIAL_MODEL}"
NO_VALUE = "no sample has a value (the official log leaves the metric out)"
OPTIONS: dict[str, str | int | None] = {"silero": silero_choice.DEFAULT, "silero_model": None, "behavior_prompt": None,
                           "behavior_model": OFFICIAL_MODEL, "behavior_seed": OFFICIAL_FIRST_SEED}


@dataclass(frozen=True)
class OfficialRow:
    """One evaluated sample of summary.json: the official per-sample files' contents and our notes."""

    result: SampleResult

    @property
    def id(self) -> str:
        return self.result.id

    def to_json(self) -> JsonObject:
        r = self.result
        return {"id": r.id, "evaluated": True, "general_split": r.split.official_json() if r.split else None,
                "latency_intervals": r.intervals, "content_tag": r.verdict.saved if r.verdict else None,
                "judge": r.verdict.to_json() if r.verdict else None, "notes": list(r.notes)}


def _metrics(res: SubsetResult, judged: bool) -> dict[str, Metric]:
    """The printed numbers: the trimmed means per side and metric (the general log), then the tag ratios (the
    behaviour log, unrounded; the log rounds to 2 places)."""
    out: dict[str, Metric] = {}
    for side in ("pre", "post"):
        for k in before_after.METRIC_ORDER:
            tm = (res.aggregate or {}).get(side, {}).get(k)
            if res.aggregate is None:
                out[f"{side}_{k}"] = null_metric(0, res.notes[0] if res.notes else NO_VALUE)
            elif tm is None:
                out[f"{side}_{k}"] = null_metric(0, before_after.UTMOS_NOT_COMPUTED if k == "utmosv2" else NO_VALUE)
            else:
                out[f"{side}_{k}"] = Metric(tm.value, None, tm.n_used, None if tm.n_used == tm.n else
                                            f"mean of {tm.n_used} of {tm.n} values within [P5, P95]")
    n_tags = sum(len(r.verdict.tags) for r in res.samples if r.verdict is not None and r.verdict.tags)
    for lab in LABELS:
        if not judged:
            out[f"behavior_{lab}_ratio"] = null_metric(0, NOT_JUDGED)
        else:
            ratio = (res.ratios or {}).get(lab)
            out[f"behavior_{lab}_ratio"] = Metric(float(ratio) if ratio is not None else (0.0 if n_tags else None),
                                                  None, n_tags, None if n_tags else "no sample tagged")
    return out


@dataclass(frozen=True)
class OverlapExtra:
    """A v1.5 subset's keys after its judge block: the paired tests run and skipped, notes, the logged tag ratios."""

    tests: list[significance.PairedTest]
    skipped_tests: list[significance.Skipped]
    notes: list[str]
    ratios_log: dict[str, float] | None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"tests": [t.to_json() for t in self.tests],
                           "skipped_tests": [vars(s) for s in self.skipped_tests], "notes": list(self.notes)}
        if self.ratios_log is not None:
            out["ratios_log"] = self.ratios_log
        return out


@dataclass(frozen=True)
class OverlapInfo:
    """What the v1.5 rules ran with (their `rules_info`): the Silero model and the Praat that measured prosody."""

    silero: JsonObject
    praat: JsonObject

    def to_json(self) -> JsonObject:
        return {"silero": self.silero, "praat": self.praat}


class OverlapOfficial(OfficialRules):
    """The official v1.5 scripts' rules (behaviour judge, before/after, timing, paired t-test) per subset.

    Options: `silero` (v5, the published numbers' model, or v6.2) and `silero_model` (its file); the behaviour
    judge's prompt (`behavior_prompt`, else `instruction/behavior.txt` of `--reference-source`), model and first
    seed. The judge's endpoint, key variable, timeout and attempts are `--judge openai`'s.
    """

    uses_judge = True
    options: Mapping[str, Any] = OPTIONS
    rules_name = "fdb-v1.5-official"

    def check_options(self, options: Mapping[str, Any]) -> None:
        if options.get("silero", silero_choice.DEFAULT) not in (silero_choice.V5, silero_choice.V6_2):
            raise InputError(f"--silero {options.get('silero')!r}: expected {silero_choice.V5} (the model behind the "
                             f"published v1.5 numbers) or {silero_choice.V6_2}")
        seed = options.get("behavior_seed", OFFICIAL_FIRST_SEED)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(f"--behavior-seed must be an integer, got {seed!r}")

    def prepare(self, ctx: OfficialContext,
                entries: Sequence[SampleEntry]) -> tuple[silero_choice.SileroChoice, BehaviorJudge | None] | None:
        """The Silero model (found and named before any work) and, with `--judge openai`, the behaviour judge with
        the prompt read and its key found (before any request is paid for)."""
        if not any(e.eligible for e in entries):
            return None
        opts = ctx.options
        choice = silero_choice.choose(str(opts.get("silero", silero_choice.DEFAULT)), opts.get("silero_model"))
        if ctx.judge_mode == "none":
            return choice, None
        source = opts.get("behavior_prompt") or ctx.judge_config.reference_source
        if source is None:
            raise InputError("the v1.5 behaviour judge needs the official prompt: give --reference-source (a "
                             "checkout of the official repository) or --behavior-prompt FILE (its text is CC BY-NC and "
                             "not shipped)")
        cfg = ctx.judge_config
        settings = behavior_config(model=str(opts.get("behavior_model", OFFICIAL_MODEL)), base_url=cfg.base_url,
                                 api_key_env=cfg.api_key_env, seed=int(opts.get("behavior_seed", OFFICIAL_FIRST_SEED)),
                                 timeout_s=float(cfg.timeout_s), max_attempts=int(cfg.max_attempts))
        return choice, BehaviorJudge.create(settings, load_prompt(source), ctx.tree)

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        judged = ctx.judge_mode != "none"
        if not ready:
            return OfficialOutcome([], _metrics(SubsetResult(ctx.subset, [], None, None, [], [], [NO_VALUE]), judged))
        assert ctx.prepared is not None  # prepared whenever the subset has an eligible sample
        choice, judge = ctx.prepared
        by_id = {s.entry.id: s for s in ready}

        def read(d: Path, name: str) -> bytes:
            return by_id[d.name].recorded(name)

        ctx.say(
            f"{ctx.subset}: before/after, timing{' and behaviour judge' if judge else ''} on {len(ready)} sample(s)")
        res = evaluate_subset(ctx.subset, ctx.tree / ctx.subset, choice, judge, list(by_id), read=read)
        for r in res.samples:  # the official per-sample files, in their shapes
            d = ctx.tree / ctx.subset / r.id
            if r.split is not None:
                write_json(d / SPLIT_FILE, r.split.official_json())
            if r.intervals is not None:
                write_json(d / INTERVALS_FILE, r.intervals)
        extra = OverlapExtra(list(res.tests), list(res.skipped_tests), list(res.notes),
                             rounded(res.ratios) if res.ratios is not None else None)
        judge_block: JsonRecord = judge.block() if judge is not None else NOT_JUDGED_BLOCK
        info = OverlapInfo(choice.signature(OFFICIAL_SETTINGS), praat_signature())
        return OfficialOutcome([OfficialRow(r) for r in res.samples], _metrics(res, judge is not None), judge_block,
                               counts={"judge_failed": sum(1 for r in res.samples if r.verdict is not None
                                                           and r.verdict.tags is None)},
                               rules_info=info, extra=extra)

    def rules_block(self, options: Mapping[str, Any], info: JsonRecord | None) -> JsonObject:
        if not isinstance(info, OverlapInfo):  # no v1.5 subset evaluated: the v1.0 summaries keep their bytes
            return {}
        return {"overlap": {"reproduces": REPRODUCES,
                            "trim": "silero 0.5, min speech 60 ms, min silence 50 ms, pad 30 ms",
                            "timing_merge_gaps_s": {"user": timing.USER_MERGE_GAP_S, "model": timing.MODEL_MERGE_GAP_S},
                            "aggregate": "mean within [P5, P95] when n >= 3", **info.to_json()}}

    def rules_note(self, rules: Mapping[str, Any]) -> str | None:
        overlap = rules.get("overlap")
        return (f"reproduces {overlap['reproduces']}" if isinstance(overlap, Mapping) and "reproduces" in overlap
                else None)

    def signature_components(self, options: Mapping[str, Any], info: JsonRecord | None) -> tuple[Component, ...]:
        if not isinstance(info, OverlapInfo):
            return ()
        s, p = info.silero, info.praat
        return (Component("silero", str(s["silero"]), str(s["model_sha256"]), {}, s),
                Component("praat", str(p["praat"]), None, {}, p))


REPRODUCES = "DanielLin94144/Full-Duplex-Bench v1_v1.5/evaluation at d7336bd (= 72cb72a, 2025-08-14)"
