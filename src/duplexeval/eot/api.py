"""The typed Python API of the end-of-turn family: what `duplexeval eot score | predict | sweep | compare | check` do.

Each verb is the function its command calls: the input positional, every setting keyword-only with the command's
default, and a frozen result holding the paths it wrote, its `Signature` and its numbers as `stats` values
(`results.Metric`, named as the command's gates name them). `read_*` reads each artifact back, and `score_pairs` /
`sweep_predictions` score data of your own in memory. The stages are imported inside the functions, so
``import duplexeval.eot`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from duplexeval.eot.kinds import (
    COMPARE_KIND,
    COMPARE_SCHEMA,
    REPORT_KIND,
    REPORT_SCHEMA,
    SWEEP_FILES,
    SWEEP_KIND,
    SWEEP_SCHEMA,
)
from duplexeval.eot.pairs import DEFAULT_LATENCY_BANDS_MS, DEFAULT_TOLERANCE_MS, EOTPair
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.results import Artifact, artifact, metric, metrics_of, read_artifact

if TYPE_CHECKING:  # the stage types; importing them at the top would load numpy, pyarrow and the detectors
    from duplexeval.eot.check_stage import SpanScores
    from duplexeval.eot.intervals import SelectionAware
    from duplexeval.eot.io import PairRow
    from duplexeval.eot.predictions import Predictions
    from duplexeval.eot.report import PairContribution
    from duplexeval.eot.spans import SpanSet, SpanSetSummary
    from duplexeval.eot.sweep_engine import SweepConfig
    from duplexeval.executors import ExecutorSpec
    from duplexeval.results import Metric
    from duplexeval.signature import Signature
    from duplexeval.stats import Estimate, Latency



# ---------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class PairScore:
    """Spec 003's pair score with its evidence: false cutoffs and hangs per band (`Share`, or an `Estimate` with a
    bootstrap over conversations), the signed latencies (`Latency`, seconds, a missed commit +inf), the report."""

    n: int
    n_missed: int
    false_cutoff: Metric
    hang: Mapping[int, Metric]
    latency: Latency
    signature: Signature
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    rows: tuple[PairContribution, ...] = ()
    paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class PredictResult:
    """What `predict` wrote (the .parquet and its .jsonl copy), its signature, and what it computed."""

    paths: tuple[Path, ...]
    signature: Signature
    n_turns: int
    n_predictions: int
    n_scored: int
    elapsed_s: float
    resumed_turns: int
    up_to_date: bool
    spans: SpanSetSummary


@dataclass(frozen=True)
class OperatingPoint:
    """One budget's chosen policy: its settings, cutoff rate and mean latency (`Estimate`: the point value with the
    turn-bootstrap interval, the policy held fixed), and the selection-aware intervals when they were computed."""

    name: str
    threshold: float
    action_delay: float
    timeout: float
    cutoff_rate: Estimate
    mean_latency: Estimate
    timeout_rate: float | None
    detect_rate: float | None
    selection_aware: SelectionAware | None = None


@dataclass(frozen=True)
class SweepSummary:
    """A sweep (summary.json): every budget's operating point (None: no policy met it), its numbers by gate name,
    the paths written (none in memory) and the whole document."""

    signature: Signature | None
    points: Mapping[str, OperatingPoint | None]
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings about the predictions (e.g. a score mode that does not fit them)."""
        return tuple(self.document.get("notes") or ())


@dataclass(frozen=True)
class CompareResult:
    """B - A at every budget (compare.json): the paired differences by gate name (`Estimate`), the paths written."""

    signature: Signature | None
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """Warnings about either side's predictions."""
        return tuple(self.document.get("notes") or ())


@dataclass(frozen=True)
class CheckResult:
    """A detector's scores on the check turns, with the warnings (exit 1 on the command line) and notes."""

    spec: str
    spans: tuple[SpanScores, ...]
    warnings: tuple[str, ...]
    lines: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------------------------------------------------------
# in memory


def _check_bands(bands: Sequence[int], tolerance_ms: int) -> list[int]:
    band_list = [int(b) for b in bands]
    if not band_list:
        raise InputError("--bands: give at least one band")
    if any(b < 0 for b in band_list):
        raise InputError(f"--bands: bands must be non-negative, got {','.join(str(b) for b in band_list)!r}")
    if tolerance_ms < 0:
        raise InputError(f"--tolerance-ms must be non-negative, got {tolerance_ms}")
    return band_list


def _pair_score(doc: JsonObject, latency: Latency, rows: Sequence[PairContribution] = (),
                paths: tuple[Path, ...] = (), path: str | Path = "<pairs>") -> PairScore:  # fmt: skip
    rec = artifact(doc, path, {k: doc[k] for k in ("score", "false_cutoff", "hang_at_ms", "latency_ms") if k in doc})
    assert rec.signature is not None
    hang = {int(b): metric(v) for b, v in (doc.get("hang_at_ms") or {}).items()}
    return PairScore(int(doc["score"]["n"]), int(doc.get("n_missed_commits") or 0), metric(doc.get("false_cutoff")),
                     MappingProxyType(hang), latency, rec.signature, rec.metrics, rec.document,
                     tuple(rows), paths)  # fmt: skip


def _scored(
    plist: list[EOTPair],
    ids: Sequence[str | None],
    convs: Sequence[str | None] | None,
    band_list: list[int],
    tolerance_ms: int,
    *,
    source: str | None = None,
    inputs: Mapping[str, str] | None = None,
) -> tuple[JsonObject, list[PairContribution], Latency]:
    """Spec 003's report, the per-pair rows and the signed latencies of pairs from a file (`score`) or your own."""
    from duplexeval.eot.pairs import latency_s
    from duplexeval.eot.report import build_report, pair_rows
    from duplexeval.stats import Latency

    doc = build_report(plist, ids=ids, conversations=convs, latency_bands_ms=band_list, tolerance_ms=tolerance_ms,
                       source=source, inputs=inputs)  # fmt: skip
    return doc, pair_rows(plist, ids, convs, band_list, tolerance_ms), Latency.of([latency_s(p) for p in plist])


def score_pairs(
    pairs: Iterable[EOTPair],
    *,
    ids: Sequence[str | None] | None = None,
    conversations: Sequence[str | None] | None = None,
    bands: Sequence[int] = DEFAULT_LATENCY_BANDS_MS,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
) -> PairScore:
    """Score (true end, commit) pairs of your own in memory, as `eot score` does a file (a never-fired commit: +inf)."""
    band_list = _check_bands(bands, tolerance_ms)
    plist = list(pairs)
    id_list = list(ids) if ids is not None else [None] * len(plist)
    convs = list(conversations) if conversations is not None and any(c is not None for c in conversations) else None
    doc, rows, latency = _scored(plist, id_list, convs, band_list, tolerance_ms)
    return _pair_score(doc, latency, rows)


def sweep_config(
    *,
    score_mode: str = "max",
    score_point: float | None = None,
    thresholds: Sequence[float] | None = None,
    action_delays: Sequence[float] | None = None,
    timeouts: Sequence[float] | None = None,
    min_hold: float = 0.2,
    max_hold: float = 5.0,
) -> SweepConfig:
    """The sweep's grids, hold filter and score mode (None keeps eot-bench's grid), checked as `eot sweep` does."""
    from duplexeval.eot import sweep_engine as sw

    return sw.SweepConfig(
        thresholds=tuple(thresholds) if thresholds is not None else sw.DEFAULT_THRESHOLDS,
        action_delays=tuple(action_delays) if action_delays is not None else sw.DEFAULT_ACTION_DELAYS,
        timeouts=tuple(timeouts) if timeouts is not None else sw.DEFAULT_TIMEOUTS,
        min_hold_s=min_hold, max_hold_s=max_hold, score_mode=score_mode, score_point_s=score_point,
    )  # fmt: skip


def _estimate(value: Any, interval: Any) -> Estimate:
    from duplexeval.stats import Estimate

    bounds: tuple[float, float] | None = None
    if isinstance(interval, list) and len(interval) == 2:
        lo, hi = (float("inf") if v is None else float(v) for v in interval)
        bounds = (lo, hi)
    return Estimate(None if value is None else float(value), bounds)


def _selection_aware(js: Any) -> SelectionAware | None:
    from duplexeval.eot.intervals import SelectionAware

    if not isinstance(js, Mapping) or "n_resamples_with_a_feasible_policy" not in js:
        return None
    return SelectionAware(js.get("cutoff_rate"), js.get("mean_latency"), int(js["n_resamples_with_a_feasible_policy"]),
                          js.get("share_of_resamples_picking_the_same_policy"))  # fmt: skip


def _points(doc: Mapping[str, Any]) -> dict[str, OperatingPoint | None]:
    out: dict[str, OperatingPoint | None] = {}
    ivs = doc.get("intervals") or {}
    for group in ("operating_points", "cutoff_at_latency_budget"):
        for name, p in (doc.get(group) or {}).items():
            if p is None:
                out[name] = None
                continue
            iv = ivs.get(name) if isinstance(ivs, Mapping) else None
            fixed = (iv or {}).get("fixed_policy") or {}
            out[name] = OperatingPoint(
                name, float(p["threshold"]), float(p["action_delay"]), float(p["timeout"]),
                _estimate(p.get("cutoff_rate"), fixed.get("cutoff_rate")),
                _estimate(p.get("mean_latency"), fixed.get("mean_latency")),
                p.get("timeout_rate"), p.get("detect_rate"), _selection_aware((iv or {}).get("selection_aware")),
            )  # fmt: skip
    return out


def _sweep_summary(doc: Mapping[str, Any], path: str | Path, paths: tuple[Path, ...] = ()) -> SweepSummary:
    points = _points(doc)
    mets: dict[str, Metric] = {}
    for name, p in points.items():
        if p is not None:
            mets[f"{name}.cutoff_rate"] = p.cutoff_rate
            mets[f"{name}.mean_latency"] = p.mean_latency
    if doc.get("mean_frontier_latency_0_10") is not None:
        mets["mean_frontier_latency_0_10"] = float(doc["mean_frontier_latency_0_10"])
    rec = artifact(doc, path, {})
    return SweepSummary(rec.signature, MappingProxyType(points), MappingProxyType(mets), rec.document, paths)


def sweep_predictions(
    predictions: Predictions,
    *,
    config: SweepConfig | None = None,
    bootstrap: bool = True,
    selection_aware: bool = True,
    selection_max_turns: int = 2000,
    bootstrap_max_turns: int = 20000,
) -> SweepSummary:
    """Sweep predictions of your own in memory (`Predictions.from_rows(...)`), as `eot sweep` does a file."""
    from duplexeval.eot.sweep_report import build_summary, compute
    from duplexeval.jsonio import sha256_bytes

    res = compute(predictions, config or sweep_config())
    columns = [predictions.id.tolist(), predictions.span_index.tolist(), predictions.timestamp.tolist(),
               predictions.silence_dur.tolist(), predictions.p_eot.tolist(), predictions.label.tolist()]
    sha = sha256_bytes(repr(columns).encode("utf-8"))  # no file: the hash of the columns stands for it
    doc = build_summary(res, predictions, sha, bootstrap=bootstrap, selection_aware=selection_aware,
                        selection_max_turns=selection_max_turns, bootstrap_max_turns=bootstrap_max_turns)  # fmt: skip
    return _sweep_summary(doc, "<predictions>")


# ---------------------------------------------------------------------------------------------------------------
# verbs


def score(
    pairs: str | Path,
    *,
    bands: Sequence[int] = DEFAULT_LATENCY_BANDS_MS,
    tolerance_ms: int = DEFAULT_TOLERANCE_MS,
    json_out: str | Path | None = None,
    rows_out: str | Path | None = None,
) -> PairScore:
    """`eot score PAIRS`: read a pairs file (CSV or JSONL), score it and write the report / per-pair rows if asked."""
    from duplexeval.eot.io import read_pair_rows
    from duplexeval.jsonio import atomic_write_text, dumps_line, sha256_file, write_json

    if not isinstance(pairs, (str, Path)):
        raise TypeError("eot.score reads a pairs file; score EOTPair values in memory with eot.score_pairs "
                        "(spec 003's dict-returning score is duplexeval.eot.pairs.score)")
    band_list = _check_bands(bands, tolerance_ms)
    rows = read_pair_rows(pairs)
    plist = [r.pair for r in rows]
    ids = [r.id for r in rows]
    convs = [r.conversation for r in rows] if any(r.conversation is not None for r in rows) else None
    doc, prow, latency = _scored(plist, ids, convs, band_list, tolerance_ms, source=str(pairs),
                                 inputs={"pairs": sha256_file(pairs)})  # fmt: skip
    written: list[Path] = []
    if json_out is not None:
        write_json(json_out, doc)
        written.append(Path(json_out))
    if rows_out is not None:
        atomic_write_text(rows_out, "".join(dumps_line(r.to_json()) for r in prow))
        written.append(Path(rows_out))
    return _pair_score(doc, latency, prow, tuple(written), pairs)


def predict(
    spans: str | Path | SpanSet,
    *,
    detector: str,
    out: str | Path,
    source: str = "auto",
    step: float = 0.1,
    transcript_lag: float = 0.5,
    only_at: Sequence[float] = (),
    batch_size: int = 16,
    jobs: int = 1,
    force: bool = False,
    progress: bool | None = None,
    executor: ExecutorSpec | None = None,
) -> PredictResult:
    """`eot predict`: the detector (`NAME[:key=value,...]` or `module:Class`) at every grid time of every silence span
    of a span set (a path of any source, or a `SpanSet`); writes OUT (.parquet) and its .jsonl copy, resumes."""
    from duplexeval.cli_options import one_per_cpu
    from duplexeval.eot import predict_stage
    from duplexeval.eot.sources import load_span_set
    from duplexeval.eot.spans import SpanSet, span_set_summary
    from duplexeval.executors import ExecutorSpec
    from duplexeval.specs import json_values, parse_spec

    settings = predict_stage.PredictSettings(step, transcript_lag, batch_size, tuple(float(a) for a in only_at))
    spec = replace(executor or ExecutorSpec(), jobs=one_per_cpu(jobs))
    name, params = parse_spec(detector, "--detector")
    ss = spans if isinstance(spans, SpanSet) else load_span_set(spans, source)
    r = predict_stage.predict(ss, name, json_values(params), out, settings=settings, executor=spec, force=force,
                              progress=progress)  # fmt: skip
    return PredictResult(tuple(r.files), r.signature, r.n_turns, r.n_predictions, r.n_scored, r.elapsed_s,
                         r.resumed_turns, r.up_to_date, span_set_summary(ss))  # fmt: skip


def sweep(
    predictions: str | Path,
    *,
    out: str | Path | None = None,
    score_mode: str = "max",
    score_point: float | None = None,
    thresholds: Sequence[float] | None = None,
    action_delays: Sequence[float] | None = None,
    timeouts: Sequence[float] | None = None,
    min_hold: float = 0.2,
    max_hold: float = 5.0,
    bootstrap: bool = True,
    selection_aware: bool = True,
    selection_max_turns: int = 2000,
    bootstrap_max_turns: int = 20000,
    plots: bool = True,
    title: str = "",
    force: bool = False,
) -> SweepSummary:
    """`eot sweep PREDICTIONS`: eot-bench's threshold x action-delay x timeout sweep; with `out`, writes summary.json,
    sweep.parquet and (with `plots`) pareto.png and operating_points.png there (`title`: the plots' title, by
    default the detector's name)."""
    from duplexeval.eot import sweep_stage

    cfg = sweep_config(score_mode=score_mode, score_point=score_point, thresholds=thresholds,
                       action_delays=action_delays, timeouts=timeouts, min_hold=min_hold, max_hold=max_hold)
    doc = sweep_stage.sweep(Path(predictions), None if out is None else Path(out), cfg, force=force,
                            bootstrap=bootstrap, selection_aware=selection_aware,
                            selection_max_turns=selection_max_turns, bootstrap_max_turns=bootstrap_max_turns,
                            plots=plots, echo=None, title=title)
    written: tuple[Path, ...] = ()
    if out is not None:
        written = tuple(Path(out) / f for f in SWEEP_FILES if plots or not f.endswith(".png"))
    return _sweep_summary(doc, Path(out) / "summary.json" if out is not None else predictions, written)


def compare(
    a: str | Path,
    b: str | Path,
    *,
    json_out: str | Path | None = None,
    score_mode: str = "max",
    score_point: float | None = None,
    score_mode_b: str | None = None,
    score_point_b: float | None = None,
    min_hold: float = 0.2,
    max_hold: float = 5.0,
) -> CompareResult:
    """`eot compare A B`: the paired difference B - A at every budget (each side at its own operating point), with a
    bootstrap over whole turns; writes compare.json to `json_out` if given."""
    from duplexeval.eot import compare_stage
    from duplexeval.eot.predictions import read_predictions
    from duplexeval.jsonio import sha256_file, write_json

    cfg = sweep_config(score_mode=score_mode, score_point=score_point, min_hold=min_hold, max_hold=max_hold)
    mode_b = score_mode_b or score_mode
    point_b = score_point_b if score_point_b is not None else score_point if mode_b == score_mode else None
    cfg_b = sweep_config(score_mode=mode_b, score_point=point_b, min_hold=min_hold, max_hold=max_hold)
    pa, pb = read_predictions(a), read_predictions(b)
    doc = compare_stage.compare(pa, pb, cfg, sha256_file(a), sha256_file(b), (Path(a).stem, Path(b).stem), cfg_b)
    written: tuple[Path, ...] = ()
    if json_out is not None:
        write_json(json_out, doc)
        written = (Path(json_out),)
    rec = artifact(doc, json_out or "<compare>", doc.get("budgets") or {})
    return CompareResult(rec.signature, rec.metrics, rec.document, written)


def check(spec: str) -> CheckResult:
    """`eot check SPEC`: a detector's scores on two short espeak-ng turns, at each pause and at the true end."""
    from duplexeval.eot import check_stage
    from duplexeval.specs import json_values, parse_spec

    name, params = parse_spec(spec, "SPEC")
    spans = check_stage.check(name, json_values(params))
    found = tuple(check_stage.warnings(spans))
    return CheckResult(spec, tuple(spans), found, tuple(check_stage.format_check(spec, spans)))


# ---------------------------------------------------------------------------------------------------------------
# readers


def read_pairs(path: str | Path) -> list[PairRow]:
    """A pairs file (CSV or JSONL) as typed rows (pair, id, conversation); one line naming file and line otherwise."""
    from duplexeval.eot.io import read_pair_rows

    return read_pair_rows(path)


def read_predictions(path: str | Path) -> Predictions:
    """A predictions file (.parquet or .jsonl, ours or eot-bench's) as column arrays, every row checked."""
    from duplexeval.eot.predictions import read_predictions as _read

    return _read(path)


def read_report(path: str | Path) -> PairScore:
    """An `eot score --json` report read back (kind and schema checked); its latency holds no values (not stored)."""
    from duplexeval.artifacts import check_kind
    from duplexeval.jsonio import read_json
    from duplexeval.stats import Latency

    doc = check_kind(read_json(path), REPORT_KIND, path, REPORT_SCHEMA)
    if not isinstance(doc.get("score"), Mapping) or "n" not in doc["score"]:
        raise InputError(f"{path}: malformed {REPORT_KIND} file: missing field 'score.n'")
    return _pair_score(doc, Latency(()), (), (), path)


def read_sweep(path: str | Path) -> SweepSummary:
    """A sweep's summary.json (or its folder) read back: operating points and numbers typed, kind and schema checked."""
    p = Path(path)
    if p.is_dir():
        p = p / "summary.json"
    rec = read_artifact(p, SWEEP_KIND, SWEEP_SCHEMA)
    try:
        return _sweep_summary(rec.document, p)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{p}: malformed {SWEEP_KIND} file: missing field {e}") from None


def read_compare(path: str | Path) -> CompareResult:
    """An `eot compare --json` file read back (kind and schema checked)."""
    rec: Artifact = read_artifact(path, COMPARE_KIND, COMPARE_SCHEMA)
    return CompareResult(rec.signature, metrics_of(rec.document.get("budgets") or {}), rec.document)
