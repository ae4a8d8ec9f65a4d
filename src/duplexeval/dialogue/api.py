"""The typed Python API of the duplex dialogue family (spec 004): what `duplexeval dialogue synth | run | score |
compare` do.

Each verb is the function its command calls: the input positional, every setting keyword-only with the command's
default, and a frozen result holding the paths it wrote, its `Signature` and its numbers as `stats` values
(`results.Metric`, named as the command's gates name them: ``MiU.precision``, ``UiM.PRRavg``, ...). `read_*` reads
each artifact back, and `score_samples` computes spec 004's metrics of your own evidence in memory. The stages are
imported inside the functions, so ``import duplexeval.dialogue`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from duplexeval.dialogue.kinds import CASES_KIND as CASES_KIND
from duplexeval.dialogue.kinds import COMPARE_KIND, JUDGEMENTS_KIND, REPORT_KIND, SCHEMA
from duplexeval.dialogue.kinds import DECISIONS_KIND as DECISIONS_KIND
from duplexeval.errors import InputError, RefusalError
from duplexeval.results import artifact, frozen, metrics_of, read_artifact

if TYPE_CHECKING:  # the stage types; importing them at the top would load numpy, pydantic and the simulator
    from duplexeval.dialogue.judges import Judge, Judgement, JudgeSettings
    from duplexeval.dialogue.load import CaseSet
    from duplexeval.dialogue.metrics import MiUItem, UiMItem
    from duplexeval.dialogue.rows import CaseRow
    from duplexeval.results import Metric
    from duplexeval.signature import Signature
    from duplexeval.stats import Share


# `judge="openai:k=v,..."`: each parameter, the field of `JudgeSettings` it sets and how its text is read.
JUDGE_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "model": ("model", str), "base_url": ("base_url", str), "api_key_env": ("api_key_env", str),
    "cache_dir": ("cache_dir", Path), "attempts": ("max_attempts", int), "timeout_s": ("timeout_s", float),
}  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class SynthResult:
    """The case set `synth` wrote: its path and how many cases of each family."""

    paths: tuple[Path, ...]
    n_miu: int
    n_uim: int


@dataclass(frozen=True)
class RunRecord:
    """A run (`run`'s result, or `read_run` of its folder): the paths, signature, header (as read), one typed row per
    case (`MiURow`, `UiMRow`, or `ErrorRow` where the system failed), and the share of each family's cases the system
    did not fail (`Share`, by family: MiU, UiM)."""

    paths: tuple[Path, ...]
    signature: Signature
    head: Mapping[str, Any]
    rows: tuple[CaseRow, ...]
    failures: int
    eligible: Mapping[str, Share]


@dataclass(frozen=True)
class DialogueScore:
    """Spec 004's metrics: ``metrics["MiU.precision"]``, ``metrics["UiM.PRRavg"]``, ``metrics["MiU.FTED_s"]`` (an
    `Estimate` of the median with its interval) and the rest by gate name; `document` is dialogue.json (in memory:
    its MiU and UiM blocks), `paths` what was written (none in memory)."""

    signature: Signature | None
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()

    @property
    def judge(self) -> str | None:
        """The label of the judge whose verdicts the judged numbers rest on."""
        js = self.document.get("judge")
        return js.get("label") if isinstance(js, Mapping) else None


@dataclass(frozen=True)
class Judgements:
    """A run's judgements.jsonl: the header's signature and judge record (as read), and each case's `Judgement` (its
    verdict None: not judged)."""

    path: Path
    signature: Signature | None
    judge: Mapping[str, Any]
    rows: tuple[Judgement, ...]


@dataclass(frozen=True)
class CompareResult:
    """B - A of two scored runs: ``metrics["MiU.difference"]`` / ``["UiM.difference"]`` (`Estimate`, paired
    bootstrap interval) and the McNemar tests in `document`; both runs' signatures; the paths written."""

    signatures: Mapping[str, str]
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()


# ---------------------------------------------------------------------------------------------------------------
# in memory


def score_samples(miu: Iterable[MiUItem] = (), uim: Iterable[UiMItem] = ()) -> DialogueScore:
    """Spec 004's metrics of evidence of your own (`MiUItem` / `UiMItem` per case), in memory, as `score` computes
    them from a run's judged rows."""
    from duplexeval.dialogue.metrics import miu_metrics, uim_metrics

    mi, ui = list(miu), list(uim)
    if not mi and not ui:
        raise InputError("score_samples: give at least one MiU or UiM item")
    doc = {"MiU": miu_metrics(mi).to_json() if mi else None, "UiM": uim_metrics(ui).to_json() if ui else None}
    return DialogueScore(None, MappingProxyType(metrics_of(doc)), frozen(doc))


def judge_settings(spec: str) -> tuple[str, JudgeSettings]:
    """A judge spec's name and its settings (those it does not set keep their defaults)."""
    from dataclasses import replace

    from duplexeval.dialogue.judges import JudgeSettings
    from duplexeval.specs import known_params, parse_spec, typed_params

    name, raw = parse_spec(spec, "--judge")
    known_params("--judge", spec, raw, JUDGE_PARAMS if name == "openai" else ())
    typed = typed_params("--judge", spec, raw, {k: kind for k, (_kw, kind) in JUDGE_PARAMS.items()})
    return name, replace(JudgeSettings(), **{JUDGE_PARAMS[k][0]: v for k, v in typed.items()})


def _eligible(rows: Sequence[CaseRow]) -> dict[str, Share]:
    from duplexeval.dialogue.metrics import ERROR
    from duplexeval.stats import Share

    counts: dict[str, tuple[int, int]] = {}
    for row in rows:
        ok, n = counts.get(row.family, (0, 0))
        counts[row.family] = (ok + (row.outcome != ERROR), n + 1)
    return {fam: Share(ok, n) for fam, (ok, n) in counts.items()}


# ---------------------------------------------------------------------------------------------------------------
# verbs


def synth(
    *,
    out: str | Path,
    seed: int = 0,
    n_miu: int = 400,
    n_uim: int = 100,
    progress: bool = False,
    force: bool = False,
) -> SynthResult:
    """`dialogue synth`: write the built-in synthetic case set (ours, from templates; not the paper's data)."""
    from duplexeval.dialogue.synth_stage import caseset_header, caseset_text, check_caseset_out, check_counts
    from duplexeval.jsonio import atomic_write_text

    check_counts(n_miu, n_uim)
    check_caseset_out(Path(out), caseset_header(seed, n_miu, n_uim), force)
    atomic_write_text(out, caseset_text(seed, n_miu, n_uim, progress=progress))
    return SynthResult((Path(out),), n_miu, 4 * n_uim)


def run(
    cases: str | Path | CaseSet,
    *,
    system: str,
    out: str | Path,
    asr_chunk_ms: int = 640,
    first_token_ms: int = 300,
    per_token_ms: int = 60,
    endpoint_ms: int = 0,
    horizon_ms: int = 10000,
    jobs: int = 1,
    force: bool = False,
) -> RunRecord:
    """`dialogue run`: replay every case (a case file, or a `CaseSet`) against a dialogue manager (`NAME[:k=v,...]`
    or `module:Class`) on the virtual clock; writes decisions.jsonl and cases.jsonl into `out`."""
    from duplexeval.cli_options import one_per_cpu
    from duplexeval.dialogue import run_stage
    from duplexeval.dialogue.load import CaseSet, load_cases
    from duplexeval.dialogue.simulator import Clock
    from duplexeval.executors import ExecutorSpec
    from duplexeval.specs import parse_spec

    name, params = parse_spec(system, "--system")
    cs = cases if isinstance(cases, CaseSet) else load_cases(cases)
    clock = Clock(asr_chunk_ms, first_token_ms, per_token_ms, endpoint_ms, horizon_ms)
    res = run_stage.run(cs, name, params, clock, Path(out), ExecutorSpec(jobs=one_per_cpu(jobs)), force=force)
    return read_run(res.out_dir)


def _check_judge(path: Path, label: str) -> None:
    """Before any judging: a dialogue.json judged by another judge is refused (docs/cli.md section 4); one by the
    same judge is replaced (the run's cases may have changed since)."""
    from duplexeval.jsonio import read_json
    from duplexeval.reruns import read_header

    old = read_header(path)
    if old is None:
        return
    was = ((read_json(path) if old else {}).get("judge") or {}).get("label")
    if was != label:
        raise RefusalError(f"{path}: exists and was judged by another judge ({was or 'unknown'} there, {label} now); "
                           "pass --force to replace it")


def score(run: str | Path, *, judge: str | Judge = "expected", force: bool = False) -> DialogueScore:
    """`dialogue score RUN`: judge a run (`expected`, offline, from the cases' labels; `openai:model=M,base_url=URL,
    ...`; or a `Judge`), compute spec 004's metrics and write judgements.jsonl and dialogue.json."""
    from duplexeval.dialogue import score_stage

    if isinstance(judge, str):
        name, settings = judge_settings(judge)
        j = settings.make(name, Path(run))
    else:
        j = judge
    if not force:
        _check_judge(Path(run) / score_stage.REPORT_FILE, j.label)
    doc = score_stage.score(Path(run), j)
    paths = (Path(run) / score_stage.JUDGEMENTS_FILE, Path(run) / score_stage.REPORT_FILE)
    return _dialogue_score(doc, paths[1], paths)


def _dialogue_score(doc: Mapping[str, Any], path: Path, paths: tuple[Path, ...] = ()) -> DialogueScore:
    rec = artifact(doc, path, {"MiU": doc.get("MiU"), "UiM": doc.get("UiM")})
    return DialogueScore(rec.signature, rec.metrics, rec.document, paths)


def compare(run_a: str | Path, run_b: str | Path, *, json_out: str | Path | None = None) -> CompareResult:
    """`dialogue compare RUN_A RUN_B`: B - A on the same cases with a paired bootstrap interval and McNemar's exact
    test; writes the comparison to `json_out` if given."""
    from duplexeval.dialogue import compare_stage
    from duplexeval.jsonio import write_json

    doc = compare_stage.compare(Path(run_a), Path(run_b))
    written: tuple[Path, ...] = ()
    if json_out is not None:
        write_json(json_out, doc)
        written = (Path(json_out),)
    return _compare(doc, written)


def _compare(doc: Mapping[str, Any], paths: tuple[Path, ...] = ()) -> CompareResult:
    mets = metrics_of({fam: {"difference": (doc.get(fam) or {}).get("difference")} for fam in ("MiU", "UiM")})
    sigs = MappingProxyType(dict(doc.get("signatures") or {}))
    return CompareResult(sigs, MappingProxyType(mets), frozen(doc), paths)


# ---------------------------------------------------------------------------------------------------------------
# readers


def read_cases(path: str | Path) -> CaseSet:
    """A case file (our JSONL, or the reproduction's tape JSON array) as validated cases."""
    from duplexeval.dialogue.load import load_cases

    return load_cases(path)


def _folder_file(path: str | Path, name: str) -> Path:
    p = Path(path)
    return p / name if p.is_dir() else p


def read_run(path: str | Path) -> RunRecord:
    """A run folder (or its cases.jsonl): the header (kind and schema checked), its signature and one row per case."""
    from duplexeval.dialogue import score_stage
    from duplexeval.dialogue.run_stage import CASES_FILE, DECISIONS_FILE

    p = _folder_file(path, CASES_FILE)
    head, rows, _sha = score_stage.read_run(p.parent)
    sig = artifact(head, p).signature
    if sig is None:
        raise InputError(f"{p}: the header has no signature")
    failures = int(head.get("failures") or 0)
    paths = (p, p.parent / DECISIONS_FILE)
    eligible = MappingProxyType(_eligible(rows))
    return RunRecord(paths, sig, frozen(head), tuple(rows), failures, eligible)


def read_judgements(path: str | Path) -> Judgements:
    """A scored run's judgements.jsonl (or its folder): the header (kind and schema checked) and each verdict."""
    from duplexeval.artifacts import check_kind
    from duplexeval.dialogue.judges import Judgement
    from duplexeval.dialogue.score_stage import JUDGEMENTS_FILE
    from duplexeval.jsonio import json_lines, read_text

    p = _folder_file(path, JUDGEMENTS_FILE)
    items = json_lines(read_text(p), p)
    if not items:
        raise InputError(f"{p}: empty; score the run first")
    head = check_kind(items[0][1], JUDGEMENTS_KIND, p, SCHEMA)
    rows = [Judgement.from_json(obj, f"{p}: line {lineno}") for lineno, obj in items[1:]]
    return Judgements(p, artifact(head, p).signature, frozen(head.get("judge") or {}), tuple(rows))


def read_report(path: str | Path) -> DialogueScore:
    """A scored run's dialogue.json (or its folder) read back: kind and schema checked, the numbers typed."""
    from duplexeval.dialogue.score_stage import REPORT_FILE

    p = _folder_file(path, REPORT_FILE)
    rec = read_artifact(p, REPORT_KIND, SCHEMA)
    return _dialogue_score(rec.document, p)


def read_compare(path: str | Path) -> CompareResult:
    """A `dialogue compare --json` file read back (kind and schema checked)."""
    rec = read_artifact(path, COMPARE_KIND, SCHEMA)
    return _compare(rec.document)
