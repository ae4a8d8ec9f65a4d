"""The typed Python API of Full-Duplex-Bench: one function per stage, a reader per artifact, in-memory scoring.

Each verb runs what its `duplexeval fdb` command runs, with the command's defaults: the tree (or the stage's other
input) positional, everything else keyword-only. Each returns a frozen result naming the files it wrote, the
artifact's `Signature` where it has one, and its numbers as typed values: `duplexeval.stats` values for the unified
metrics and shares of samples, `fdb.official.metric.Metric` for the official column (the official scripts' plain
means: no interval by definition), `fdb.compare_stage.PairedMetric` for paired differences. The `read_*` functions
load what a stage wrote, kind and schema_version checked, with the CLI's one-line errors (`duplexeval.errors`).
`score_samples` scores samples of your own by the unified rules in memory, no tree needed.

Every stage module is imported inside the function that runs it, so `import duplexeval.fdb` stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplexeval.fdb.official.judge_config import JudgeConfig
from duplexeval.jsontypes import JsonObject

if TYPE_CHECKING:  # pragma: no cover - types only: these modules load numpy, pydantic and the stages
    import numpy as np

    from duplexeval.asr.base import Backend
    from duplexeval.executors import ExecutorSpec
    from duplexeval.fdb.compare_stage import PairedMetric, Pairing, TreeContext
    from duplexeval.fdb.official.metric import Metric
    from duplexeval.fdb.sample_trace import Trace
    from duplexeval.fdb.selection import DatasetArg
    from duplexeval.fdb.tree import AsrRecord, Manifest
    from duplexeval.fdb.unified import UnifiedResult
    from duplexeval.fdb.unified.aggregate import Counts, UnifiedMetric
    from duplexeval.fdb.unified.rows import SampleRow
    from duplexeval.signature import Signature
    from duplexeval.stats import Share
    from duplexeval.systems.base import System
    from duplexeval.units import TimedWord

# The defaults of the commands' options (tests/fdb/test_api.py checks each against its command and stage).
DEFAULT_ASR_BACKEND = "whisper-align"
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_BACKCHANNEL_RULES = "2025-06"
DEFAULT_SILERO = "v5"
DEFAULT_BEHAVIOR_MODEL = "gpt-4o-2024-08-06"
DEFAULT_COMPARE_OUT = "compare.json"
BACKCHANNEL_RULES = ("2025-06", "2026-02")  # the official backchannel loop as of the v1.0 table, or of HEAD


# ---- results -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportResult:
    """What `export` or `import_outputs` wrote: the tree, its manifest.json and hash, and per subset the share of
    selected samples that are eligible. manifest.json carries no signature (it holds no number)."""

    tree: Path
    manifest: Path
    manifest_sha256: str
    eligible: Mapping[str, Share]
    ran: int
    reused: int


@dataclass(frozen=True)
class AsrResult:
    """What `asr` wrote: asr.json (its hash and signature), the share of eligible samples transcribed, how many
    were resumed, and the failed samples with their reasons (also in asr.json)."""

    tree: Path
    asr_json: Path
    asr_sha256: str
    signature: Signature
    transcribed: Share
    resumed: int
    errors: tuple[tuple[str, str], ...]
    backend: Mapping[str, Any]

    @property
    def failed(self) -> bool:
        """True when any eligible sample could not be transcribed (the command exits 1)."""
        return bool(self.errors)


@dataclass(frozen=True)
class OfficialSubset:
    """One subset of summary.json: its task, counts, the share of selected samples evaluated, the official metrics,
    the judge's block (None without a judge) and the per-sample values."""

    task: str
    counts: Mapping[str, Any]
    evaluated: Share
    metrics: Mapping[str, Metric]
    judge: Mapping[str, Any] | None
    samples: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class EvaluateResult:
    """summary.json (what `evaluate` wrote, or `read_summary` read): the official rules' numbers per subset."""

    tree: Path
    summary: Path
    summary_sha256: str
    signature: Signature
    rules: Mapping[str, Any]
    subsets: Mapping[str, OfficialSubset]
    raw: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> JsonObject:
        """summary.json as written."""
        return dict(self.raw)


@dataclass(frozen=True)
class UnifiedSubset:
    """One subset scored by the unified rules: task, counts, coverage (eligible / selected) and each metric as its
    typed `stats` value (`kinds` names every metric's kind, as `UnifiedRules.metric_kinds` declares it): the block
    the task's aggregate made, whose JSON is unified.json's."""

    task: str
    counts: Counts
    coverage: float | None
    metrics: Mapping[str, UnifiedMetric]
    kinds: Mapping[str, type]


@dataclass(frozen=True)
class UnifiedSample:
    """One row of unified-samples.jsonl: the sample, its eligibility, the task's fields (`fields`, as written) and
    the task's own row record (`row`, `UnifiedRules.score`'s; None for a sample not scored)."""

    subset: str
    sample_id: str
    task: str
    eligible: bool
    reasons: tuple[str, ...]
    fields: Mapping[str, Any]
    row: Any = None


@dataclass(frozen=True)
class ScoreResult:
    """What `score` (or `score_samples`) made: unified.json and unified-samples.jsonl (their paths, None when not
    written), the signature, each subset's typed metrics and every selected sample's row."""

    tree: Path | None
    unified: Path | None
    samples_file: Path | None
    signature: Signature
    definitions: str
    subsets: Mapping[str, UnifiedSubset]
    samples: tuple[UnifiedSample, ...]
    sensitivity: Any = None
    sensitivity_file: Path | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    raw_rows: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)

    def to_json(self) -> JsonObject:
        """unified.json as written (or as it would be)."""
        return dict(self.raw)

    def samples_jsonl(self) -> str:
        """unified-samples.jsonl's text."""
        from duplexeval.jsonio import dumps_line

        return "".join(dumps_line(r) for r in self.raw_rows)


@dataclass(frozen=True)
class UnifiedFile:
    """unified.json and unified-samples.jsonl as read (`read_unified`): `subsets` are the blocks as written (each
    metric's kind in `kinds[subset]`), `metrics` their numbers by gate name (SUBSET.METRIC) read back as `stats`
    values by `duplexeval.results.metrics_of`: a share as the `Share` it was, a latency or pooled ratio as an
    `Estimate` (a file holds its JSON, not the per-sample values its interval came from; `score` and `score_samples`
    give those values' own types)."""

    path: Path
    sha256: str
    samples_file: Path
    samples_sha256: str
    signature: Signature
    definitions: str
    inputs: Mapping[str, str]
    vad: Mapping[str, Any]
    subsets: Mapping[str, Mapping[str, Any]]
    kinds: Mapping[str, Mapping[str, type]]
    metrics: Mapping[str, Any]
    samples: tuple[UnifiedSample, ...]
    raw: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> JsonObject:
        """unified.json as read."""
        return dict(self.raw)


@dataclass(frozen=True)
class PairedSubset:
    """One subset of a comparison: its task, how the samples paired (`pairing`, `pairs_over`), each tree's context
    (`context["a"]`, `["b"]`: coverage, counts, selected bounds; None without a block) and each metric's paired
    difference B - A."""

    task: str
    pairing: Pairing
    pairs_over: str
    context: Mapping[str, TreeContext | None]
    metrics: Mapping[str, PairedMetric]


@dataclass(frozen=True)
class Comparison:
    """Tree `b` against tree `a` (indexes into `CompareResult.trees`), per subset."""

    a: int
    b: int
    subsets: Mapping[str, PairedSubset]


@dataclass(frozen=True)
class CompareResult:
    """What `compare` made: compare.json (its path, None when not written), the signature, the trees compared (the
    first is A), the notes on allowed differences and each comparison's typed paired differences."""

    path: Path | None
    signature: Signature
    trees: tuple[Path, ...]
    notes: tuple[str, ...]
    comparisons: tuple[Comparison, ...]
    raw: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> JsonObject:
        """compare.json as written (or as it would be)."""
        return dict(self.raw)


@dataclass(frozen=True)
class ComparisonFile:
    """compare.json as read (`read_comparison`): the header, the trees compared, each comparison as written, and
    per comparison its differences by gate name (SUBSET.METRIC) as `stats.Estimate` values (`results.metrics_of`; a
    file holds each difference's JSON, not the pairs its interval was resampled from)."""

    path: Path
    sha256: str
    signature: Signature
    inputs: Mapping[str, str]
    trees: tuple[Mapping[str, Any], ...]
    notes: tuple[str, ...]
    comparisons: tuple[Mapping[str, Any], ...]
    metrics: tuple[Mapping[str, Any], ...]
    raw: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> JsonObject:
        """compare.json as read."""
        return dict(self.raw)


@dataclass(frozen=True)
class ReplayResult:
    """What `replay` found: how many network samples were rebuilt from their wire traces (`skipped`: without one),
    per sample key the files that changed (rewritten unless `checked`), and whether manifest.json changed. A replay
    computes no number and its files carry no signature."""

    tree: Path
    manifest: Path
    checked: bool
    replayed: int
    skipped: int
    changed: Mapping[str, tuple[str, ...]]
    manifest_changed: bool


@dataclass(frozen=True)
class SynthesizeResult:
    """What `synthesize` made: the dataset folder (espeak-ng stimuli and their annotations) and its dataset.json."""

    dataset: Path
    dataset_json: Path


# ---- the verbs ---------------------------------------------------------------------------------------------------


def _shares(counts: Mapping[str, Mapping[str, int]], part: str) -> dict[str, Share]:
    from duplexeval.stats import Share

    return {subset: Share(int(c[part]), int(c["selected"])) for subset, c in counts.items()}


def _export_result(written: Any) -> ExportResult:
    from duplexeval.fdb.tree import MANIFEST_FILE

    tree = Path(written.tree)
    return ExportResult(tree, tree / MANIFEST_FILE, written.manifest_sha256, _shares(written.counts, "eligible"),
                        written.ran, written.reused)


def synthesize(script: str | Path, out: str | Path, *, force: bool = False, progress: bool = True) -> SynthesizeResult:
    """Speak a synth script (YAML/JSON, docs/synth.md; or "demo") into an FDB-shaped dataset folder `out`."""
    from duplexeval.fdb import synth

    spec = synth.load_script(synth.DEMO_SCRIPT if str(script) == "demo" else script)
    path = Path(synth.synthesize_dataset(spec, out, force=force, progress=progress))
    return SynthesizeResult(path, path / synth.DATASET_FILE)


def export(
    system: System | str,
    dataset: DatasetArg,
    out: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    limit: int | None = None,
    force: bool = False,
    concurrency: int = 1,
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    executor: ExecutorSpec | None = None,
    progress: bool = True,
) -> ExportResult:
    """Drive `system` (a System or "NAME[:k=v,...]") over `dataset` (a folder, "demo" or a DatasetLike); write the
    tree `out`."""
    from duplexeval.fdb.export_stage import export as _export

    return _export_result(_export(system, dataset, out, subsets=subsets, limit=limit, force=force, progress=progress,
                                  concurrency=concurrency, executor=executor, call_timeout_s=call_timeout_s))


def import_outputs(
    dataset: DatasetArg,
    outputs: str | Path,
    out: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    limit: int | None = None,
    name: str = "imported",
    channel: int | str | None = None,
    ignore_output_json: bool = False,
    force: bool = False,
    progress: bool = True,
) -> ExportResult:
    """Adopt `<subset>/<id>/output.wav` files made elsewhere (under `outputs`) for `dataset`; write tree `out`."""
    from duplexeval.fdb.import_stage import import_outputs as _import

    return _export_result(_import(dataset, outputs, out, subsets=subsets, limit=limit, name=name, force=force,
                                  progress=progress, channel=channel, ignore_output_json=ignore_output_json))


def asr(
    tree: str | Path,
    *,
    backend: str | Backend = DEFAULT_ASR_BACKEND,
    model: str | Path | None = None,
    device: str = "cpu",
    jobs: int | None = None,
    declare: str | Sequence[str] | None = None,
    force: bool = False,
    executor: ExecutorSpec | None = None,
    progress: bool = True,
) -> AsrResult:
    """Transcribe every eligible sample of `tree` (output.json files, then asr.json); `jobs` None: one per core."""
    from duplexeval.fdb.asr_stage import asr as _asr
    from duplexeval.fdb.tree import ASR_FILE
    from duplexeval.stats import Share

    root = Path(tree)
    res = _asr(root, backend=backend, model=model, jobs=jobs, force=force, progress=progress,
               declare=declare if declare is None or isinstance(declare, str) else list(declare), device=device,
               executor=executor)
    record = read_asr(root)
    return AsrResult(root, root / ASR_FILE, res.asr_sha256, _signature_of(record.extra, root / ASR_FILE),
                     Share(res.n_ok, res.n_eligible), res.n_resumed, tuple(res.errors), dict(res.backend))


def evaluate(
    tree: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    judge: JudgeConfig | None = None,
    icc_gt: str | Path | None = None,
    backchannel_rules: str = DEFAULT_BACKCHANNEL_RULES,
    silero: str = DEFAULT_SILERO,
    silero_model: str | Path | None = None,
    behavior_prompt: str | Path | None = None,
    behavior_model: str = DEFAULT_BEHAVIOR_MODEL,
    force: bool = False,
    progress: bool = True,
) -> EvaluateResult:
    """Apply the official rules to a transcribed tree and write summary.json; `judge` None asks no judge (the
    ratings stay empty and say so). A summary.json made with other settings is refused unless `force`."""
    from duplexeval.errors import InputError
    from duplexeval.fdb.official import evaluate as _evaluate
    from duplexeval.fdb.official.judge import check_timeout
    from duplexeval.fdb.official.summary import check_own_settings

    root = Path(tree)
    if judge is not None:
        check_timeout(judge.timeout_s)
    if backchannel_rules not in BACKCHANNEL_RULES:
        raise InputError(f"--backchannel-rules {backchannel_rules!r}: expected one of {', '.join(BACKCHANNEL_RULES)}")
    chosen = list(subsets) if subsets else None
    if not force:
        check_own_settings(root, "none" if judge is None else "openai", (judge or JudgeConfig()).model,
                           backchannel_rules, chosen, {"behavior_model": behavior_model})
    options = {"silero": silero, "silero_model": None if silero_model is None else str(silero_model),
               "behavior_prompt": None if behavior_prompt is None else str(behavior_prompt),
               "behavior_model": behavior_model}
    _evaluate(root, subsets=chosen, judge=judge, icc_gt=icc_gt, backchannel_rules=backchannel_rules, options=options,
              progress=progress)
    return read_summary(root)


def _score_result(res: UnifiedResult, unified: Path | None, samples_file: Path | None) -> ScoreResult:
    from duplexeval.fdb.tasks import get_task
    from duplexeval.signature import Signature

    u = res.to_json()
    subsets = {}
    for name, block in res.blocks.items():
        task = get_task(block.task)
        kinds = dict(task.unified.metric_kinds) if task.unified is not None else {}
        subsets[name] = UnifiedSubset(block.task, block.counts, block.coverage, dict(block.metrics), kinds)
    samples = tuple(_sample_row(r) for r in res.rows)
    return ScoreResult(res.tree, unified, samples_file, Signature.from_json(u["signature"]), u["definitions"], subsets,
                       samples, raw=u, raw_rows=tuple(r.to_json() for r in res.rows))


def _sample_row(r: SampleRow[Any]) -> UnifiedSample:
    from duplexeval.fdb.unified.rows import HEAD

    return UnifiedSample(r.subset, r.sample_id, r.task, r.eligible, r.reasons,
                         {k: v for k, v in r.to_json().items() if k not in HEAD}, r.row)


def score(
    tree: str | Path,
    *,
    write: bool = True,
    sensitivity: bool = False,
    jobs: int | None = None,
    executor: ExecutorSpec | None = None,
) -> ScoreResult:
    """Score a transcribed tree by the unified rules (spec 000): unified.json and unified-samples.jsonl when
    `write`; with `sensitivity` also the VAD sensitivity analysis (unified-sensitivity.json)."""
    from dataclasses import replace

    from duplexeval.fdb.tree import UNIFIED_FILE, UNIFIED_SAMPLES_FILE
    from duplexeval.fdb.unified import score as _score

    root = Path(tree)
    res = _score(root, write=write, jobs=jobs, executor=executor)
    out = _score_result(res, root / UNIFIED_FILE if write else None, root / UNIFIED_SAMPLES_FILE if write else None)
    if sensitivity:
        from duplexeval.fdb.unified.sensitivity import SENSITIVITY_FILE, analyse_tree

        sens = analyse_tree(root, write, jobs)
        out = replace(out, sensitivity=sens, sensitivity_file=root / SENSITIVITY_FILE if write else None)
    return out


def compare(
    trees: Sequence[str | Path],
    *,
    allow_different_asr: bool = False,
    out: str | Path | None = DEFAULT_COMPARE_OUT,
    force: bool = False,
) -> CompareResult:
    """Paired comparison of scored trees, each against the first (B - A on the samples eligible in both); writes
    compare.json to `out` (None: nothing written). One made from other trees is refused unless `force`."""
    from duplexeval.fdb.compare_stage import check_out
    from duplexeval.fdb.compare_stage import compare as _compare
    from duplexeval.jsonio import write_json

    made = _compare(list(trees), allow_different_asr=allow_different_asr)
    raw = made.to_json()
    path = None if out is None else Path(out)
    if path is not None:
        check_out(path, raw, force)
        write_json(path, raw)  # an OS error is already one InputError line naming the file
    comparisons = tuple(
        Comparison(c.a, c.b, {name: PairedSubset(b.task, b.pairing, b.pairs_over, {"a": b.context_a, "b": b.context_b},
                                                 dict(b.metrics))
                              for name, b in c.subsets.items()})
        for c in made.comparisons)
    return CompareResult(path, made.signature, tuple(t.root for t in made.trees), tuple(made.notes), comparisons, raw)


def replay(tree: str | Path, *, check: bool = False) -> ReplayResult:
    """Rebuild every network sample's output.wav and verdict of `tree` from its wire trace (`check`: write nothing,
    and refuse any difference)."""
    from duplexeval.fdb.replay_stage import replay as _replay
    from duplexeval.fdb.tree import MANIFEST_FILE

    res = _replay(tree, check=check)
    root = Path(res.tree)
    return ReplayResult(root, root / MANIFEST_FILE, check, res.replayed, res.skipped,
                        {k: tuple(v) for k, v in res.changed.items()}, res.manifest_changed)


# ---- readers -----------------------------------------------------------------------------------------------------


def _in(path: str | Path, name: str) -> Path:
    """`path` itself, or `path/name` when `path` is a folder (a tree or a sample folder)."""
    p = Path(path)
    return p / name if p.is_dir() else p


def _signature_of(obj: Mapping[str, Any], path: Path) -> Signature:
    from duplexeval.errors import InputError
    from duplexeval.signature import Signature

    sig = obj.get("signature")
    if not isinstance(sig, Mapping):
        raise InputError(f"{path}: has no 'signature' object (made before artifacts carried one? rerun its stage)")
    return Signature.from_json(sig)


def read_manifest(path: str | Path) -> Manifest:
    """manifest.json (`path` is the file or its tree): what was run on what, and every sample's eligibility."""
    from duplexeval.fdb.tree import MANIFEST_FILE, load_manifest, parse_manifest
    from duplexeval.fdb.verified import read_json_hashed

    p = _in(path, MANIFEST_FILE)
    if p.name == MANIFEST_FILE:
        return load_manifest(p.parent)[0]
    return parse_manifest(read_json_hashed(p)[0], p)


def read_asr(path: str | Path) -> AsrRecord:
    """asr.json (`path` is the file or its tree): the backend and every eligible sample's transcript hash or error."""
    from duplexeval.fdb.tree import ASR_FILE, load_asr, parse_asr
    from duplexeval.fdb.verified import read_json_hashed

    p = _in(path, ASR_FILE)
    if p.name == ASR_FILE:
        return load_asr(p.parent)[0]
    return parse_asr(read_json_hashed(p)[0], p)


def read_words(path: str | Path) -> list[TimedWord]:
    """A transcript in the official output.json shape (`path` is the file or its sample folder), as timed words."""
    from duplexeval.fdb.transcript import parse_output_json
    from duplexeval.fdb.tree import OUTPUT_JSON
    from duplexeval.jsonio import read_json

    p = _in(path, OUTPUT_JSON)
    return parse_output_json(read_json(p), p)


def read_trace(path: str | Path) -> Trace:
    """A sample's trace.json (`path` is the file or its sample folder): what export or import did for it."""
    from duplexeval.artifacts import check_kind
    from duplexeval.fdb.sample_trace import (
        EXPORT_TRACE_KIND,
        IMPORT_TRACE_KIND,
        TRACE_FILE,
        TRACE_SCHEMA_VERSION,
        Trace,
    )
    from duplexeval.jsonio import read_json

    p = _in(path, TRACE_FILE)
    obj = read_json(p)
    kind = obj.get("kind") if isinstance(obj, dict) else None
    check_kind(obj, IMPORT_TRACE_KIND if kind == IMPORT_TRACE_KIND else EXPORT_TRACE_KIND, p, TRACE_SCHEMA_VERSION)
    return Trace.from_json(obj, p)


def read_summary(path: str | Path) -> EvaluateResult:
    """summary.json (`path` is the file or its tree): the official rules' numbers, typed."""
    from duplexeval.artifacts import check_kind
    from duplexeval.errors import InputError
    from duplexeval.fdb.official.metric import Metric
    from duplexeval.fdb.official.summary import SUMMARY_KIND, SUMMARY_SCHEMA_VERSION
    from duplexeval.fdb.tree import SUMMARY_FILE
    from duplexeval.fdb.verified import read_json_hashed
    from duplexeval.stats import Share

    p = _in(path, SUMMARY_FILE)
    raw, digest = read_json_hashed(p)
    s = check_kind(raw, SUMMARY_KIND, p, SUMMARY_SCHEMA_VERSION)
    try:
        subsets = {
            name: OfficialSubset(
                b["task"], b["counts"], Share(int(b["n_evaluated"]), int(b["counts"]["selected"])),
                {k: Metric(m["value"], m["std"], int(m["n"]), m["note"]) for k, m in b["metrics"].items()},
                b.get("judge"), tuple(b.get("samples") or ()))
            for name, b in s["subsets"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{p}: not a summary.json this duplexeval reads ({type(exc).__name__}: {exc})") from None
    return EvaluateResult(p.parent, p, digest, _signature_of(s, p), s.get("rules") or {}, subsets, s)


def read_unified(path: str | Path) -> UnifiedFile:
    """unified.json and the unified-samples.jsonl beside it (`path` is unified.json or its tree), as written."""
    from duplexeval.fdb.results import check_unified_body, read_unified_json, read_unified_rows
    from duplexeval.fdb.tasks import get_task
    from duplexeval.fdb.tree import UNIFIED_FILE, UNIFIED_SAMPLES_FILE
    from duplexeval.results import metrics_of

    p = _in(path, UNIFIED_FILE)
    u, digest = read_unified_json(p)
    check_unified_body(u, p)
    rpath = p.parent / UNIFIED_SAMPLES_FILE
    rows, rows_sha = read_unified_rows(rpath)
    kinds = {}
    for name, block in u["subsets"].items():
        task = get_task(block.get("task", ""))
        kinds[name] = dict(task.unified.metric_kinds) if task.unified is not None else {}
    samples = tuple(_sample_row(r) for by_id in rows.values() for r in by_id.values())
    metrics = metrics_of({name: block.get("metrics") or {} for name, block in u["subsets"].items()})
    return UnifiedFile(p, digest, rpath, rows_sha, _signature_of(u, p), str(u.get("definitions")),
                       u.get("inputs") or {}, u.get("vad") or {}, u["subsets"], kinds, metrics, samples, u)


def read_comparison(path: str | Path) -> ComparisonFile:
    """compare.json (as `fdb compare --out` wrote it), kind and schema_version checked."""
    from duplexeval.artifacts import check_kind
    from duplexeval.fdb.compare_stage import COMPARE_KIND, COMPARE_SCHEMA_VERSION
    from duplexeval.fdb.verified import read_json_hashed
    from duplexeval.results import metrics_of

    p = Path(path)
    raw, digest = read_json_hashed(p)
    c = check_kind(raw, COMPARE_KIND, p, COMPARE_SCHEMA_VERSION)
    comparisons = tuple(c.get("comparisons") or ())
    metrics = tuple(metrics_of({name: b.get("metrics") or {} for name, b in (comp.get("subsets") or {}).items()})
                    for comp in comparisons)
    return ComparisonFile(p, digest, _signature_of(c, p), c.get("inputs") or {}, tuple(c.get("trees") or ()),
                          tuple(c.get("notes") or ()), comparisons, metrics, c)


# ---- in memory ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One sample of your own for `score_samples`: what the unified rules need, no files.

    `subset` names its task (e.g. "candor_turn_taking"); `T` is the input's length in seconds; `annotation` the
    annotation file's JSON as FDB ships it (turn taking: [{"text": "[TURN-TAKING]", "timestamp": [E, ...]}], E the end
    of the user's turn); `words` the model's
    transcript (`units.TimedWord` or (text, start, end) in seconds); `audio` the model's output (a 16 kHz mono WAV's
    bytes, or its samples as float in [-1, 1] or int16; written as PCM16, as export writes output.wav): the tasks
    that use VAD (interruption, FDB v1.5 overlap) need it, and `segments` (16 kHz sample indices, end exclusive) stand
    in for Silero's. `transcripts` are a task's further transcripts by file name (FDB v1.5: clean_output.json). An
    ineligible sample (`eligible` False, with its `reasons`) is counted, never scored.
    """

    subset: str
    id: str
    T: float
    annotation: Any = None
    words: Sequence[TimedWord | tuple[str, float, float | None]] = ()
    audio: bytes | np.ndarray | None = None
    segments: Sequence[tuple[int, int]] | None = None
    transcripts: Mapping[str, Sequence[TimedWord | tuple[str, float, float | None]]] = field(default_factory=dict)
    eligible: bool = True
    reasons: tuple[str, ...] = ()


def _words_bytes(words: Sequence[Any]) -> bytes:
    from duplexeval.fdb.transcript import transcript_bytes
    from duplexeval.units import TimedWord

    return transcript_bytes([w if isinstance(w, TimedWord) else TimedWord(str(w[0]), float(w[1]),
                                                                           None if w[2] is None else float(w[2]))
                             for w in words])


def score_samples(samples: Sequence[Sample], *, declared: Mapping[str, int] | None = None,
                  jobs: int | None = None) -> ScoreResult:
    """Score samples held in memory by the unified rules (as `score` scores a tree, the same numbers for the same
    samples); nothing is read or written. Silero runs on `audio` unless every sample that needs VAD has `segments`;
    `declared` gives a subset's full size when the samples are a selection of it (counts' `declared`)."""
    from duplexeval.audio import wav_bytes_pcm16
    from duplexeval.errors import InputError
    from duplexeval.fdb.tasks import task_of
    from duplexeval.fdb.tree import OUTPUT_JSON, OUTPUT_WAV, SampleEntry, validate_sample_id, validate_subset
    from duplexeval.fdb.unified.memory import MemorySample, score_memory
    from duplexeval.jsonio import dumps

    opened: list[MemorySample | SampleEntry] = []
    segments: dict[str, Sequence[tuple[int, int]]] = {}
    for s in samples:
        if not isinstance(s, Sample):
            raise TypeError(f"score_samples: expected duplexeval.fdb.Sample records, got {type(s).__name__}")
        subset = validate_subset(s.subset, "score_samples")
        sid = validate_sample_id(s.id, f"score_samples: subset {subset}")
        task = task_of(subset)
        entry = SampleEntry(subset, sid, float(s.T), bool(s.eligible), list(s.reasons), {})
        if not s.eligible:
            opened.append(entry)
            continue
        files: dict[str, bytes] = {}
        if entry.annotation is not None:
            if s.annotation is None:
                raise InputError(f"score_samples: sample {entry.key}: no annotation ({entry.annotation}) given")
            ann = s.annotation.model_dump(mode="json") if hasattr(s.annotation, "model_dump") else s.annotation
            files[entry.annotation] = dumps(ann).encode("utf-8")
        files[OUTPUT_JSON] = _words_bytes(s.words)
        for name, words in s.transcripts.items():
            files[name] = _words_bytes(words)
        if s.audio is not None:
            files[OUTPUT_WAV] = s.audio if isinstance(s.audio, bytes) else wav_bytes_pcm16(s.audio)
        if s.segments is not None:
            segments[entry.key] = [(int(a), int(b)) for a, b in s.segments]
        entry.files.update(dict.fromkeys(files, ""))
        opened.append(MemorySample(entry, files, task.annotation))
    return _score_result(score_memory(opened, declared, segments, jobs), None, None)


__all__ = [
    "AsrResult", "CompareResult", "Comparison", "ComparisonFile", "EvaluateResult", "ExportResult", "JudgeConfig",
    "OfficialSubset", "PairedSubset", "ReplayResult", "Sample", "ScoreResult", "SynthesizeResult", "UnifiedFile",
    "UnifiedSample", "UnifiedSubset", "asr", "compare", "evaluate", "export", "import_outputs", "read_asr",
    "read_comparison", "read_manifest", "read_summary", "read_trace", "read_unified", "read_words", "replay",
    "score", "score_samples", "synthesize",
]
