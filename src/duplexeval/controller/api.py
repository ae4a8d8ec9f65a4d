"""The typed Python API of the turn-taking controller family (spec 002): what `duplexeval controller label | run |
evaluate | calibrate | compare | bench` do.

Each verb is the function its command calls: the input positional (where the command has one), every setting
keyword-only with the command's default, and a frozen result holding the paths it wrote, its `Signature` and its
numbers as `stats` values (`results.Metric`, named as the command's gates name them: ``frame.state.macro_f1``,
``event.endpoint.early_cutin_rate``, ...). `read_*` reads each artifact back, and `score_samples` scores clips of
your own in memory. The stages are imported inside the functions, so ``import duplexeval.controller`` stays cheap.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from duplexeval.controller.kinds import BENCH_KIND, COMPARE_KIND, COMPARE_SCHEMA, REPORT_KIND, REPORT_SCHEMA
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsontypes import JsonObject
from duplexeval.results import artifact, frozen, metrics_of, read_artifact

if TYPE_CHECKING:  # the stage types; importing them at the top would load numpy, onnxruntime and the controllers
    from duplexeval.controller.calibration.thresholds import Chosen
    from duplexeval.controller.format.data import Clip, ControllerData
    from duplexeval.controller.format.policy import EvaluationPolicy
    from duplexeval.controller.format.protocol import Controller
    from duplexeval.controller.labels.derive import LabelRules
    from duplexeval.controller.metrics.events import ClipEvidence
    from duplexeval.executors import ExecutorSpec
    from duplexeval.results import Metric
    from duplexeval.signature import Signature

DEFAULT_GRID = "0.05:0.99:0.01"  # `controller calibrate --grid`'s default (the command reads it from here)


# ---------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class DataFolder:
    """A controller data folder `label` / `run` wrote: its paths, how many clips, probes and onsets, its reference
    hours, and what dataset.json records about how it was made (no signature: `evaluate` signs its numbers)."""

    paths: tuple[Path, ...]
    clips: int
    turn_probes: int
    pause_probes: int
    yield_onsets: int
    backchannel_onsets: int
    reference_hours: float
    info: Mapping[str, Any]


@dataclass(frozen=True)
class ControllerReport:
    """Frame and event metrics under a frozen policy (`controller evaluate`'s report, or in memory): every number by
    gate name (``frame.state.macro_f1``, ``event.endpoint.fallback_on.early_cutin_rate``, ...) as a `stats` value,
    the per-clip evidence (``to_json()``: an `evaluate --rows` line), the paths written (none in memory)."""

    signature: Signature | None
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    rows: tuple[ClipEvidence, ...] = ()
    paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Calibration:
    """The frozen policy `calibrate` chose and wrote, each head's chosen threshold and rule, and the table."""

    paths: tuple[Path, ...]
    policy: EvaluationPolicy
    chosen: Mapping[str, Chosen]
    document: Mapping[str, Any]


@dataclass(frozen=True)
class CompareResult:
    """B - A with a conversation-grouped paired bootstrap: each difference by gate name (`Estimate`), the paths."""

    signature: Signature | None
    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class BenchResult:
    """Compute cost by spec 002's protocol (times in ms; the wall-time median as an `Estimate` with its p90)."""

    metrics: Mapping[str, Metric]
    document: Mapping[str, Any]
    paths: tuple[Path, ...] = ()


# ---------------------------------------------------------------------------------------------------------------
# shared pieces


def policy_of(policy: str | Path | EvaluationPolicy | None, mode: str | None = None) -> EvaluationPolicy:
    """A policy: a file, an `EvaluationPolicy`, or None (spec 002's offline operating point); `mode` overrides its
    primary endpoint mode (head_only or fallback_on)."""
    from duplexeval.controller.format.policy import EvaluationPolicy, load_policy

    if policy is None:
        pol = EvaluationPolicy()
    elif isinstance(policy, EvaluationPolicy):
        pol = policy
    else:
        pol = load_policy(policy)
    return pol.with_(endpoint_mode=mode) if mode else pol


def threshold_grid(text: str) -> list[float]:
    """`--grid`: 'start:stop:step' (inclusive) or a comma list of thresholds, checked."""
    from duplexeval.schemas import check_number

    try:
        if ":" in text:
            a, b, step = (float(x) for x in text.split(":"))
        else:
            values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--grid: expected 'start:stop:step' or a comma list, got {text!r}") from None
    if ":" not in text:
        if not values:
            raise InputError(f"--grid: no thresholds in {text!r}")
        for v in values:
            check_number(v, "--grid", "threshold", -1e6, 1e6)
        return values
    for name, v in (("start", a), ("stop", b)):
        check_number(v, "--grid", name, -1e6, 1e6)
    check_number(step, "--grid", "step", 0.0, 1e6, lo_open=True)
    if b < a:
        raise InputError(f"--grid: stop {b:g} is below start {a:g}")
    n = int(round((b - a) / step)) + 1
    if n > 100_000:
        raise InputError(f"--grid: {n} thresholds is too many (at most 100000); use a larger step")
    return [round(a + k * step, 6) for k in range(n)]


def label_rules(overrides: Mapping[str, Any] | None) -> LabelRules:
    """The derivation rules with `overrides` (`--rule key=value`): known keys only, finite seconds >= 0."""
    from dataclasses import fields

    from duplexeval.controller.labels.derive import LabelRules
    from duplexeval.schemas import MAX_TIME_S

    opts = dict(overrides or {})
    names = {f.name for f in fields(LabelRules)}
    bad = sorted(set(opts) - names)
    if bad:
        raise InputError(f"--rule: unknown rule(s) {', '.join(bad)} (known: {', '.join(sorted(names))})")
    for k, v in opts.items():
        if isinstance(v, str) and v.strip().lower() in ("nan", "inf", "infinity", "-inf", "-infinity"):
            v = float(v)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v > MAX_TIME_S:
            raise InputError(f"--rule {k}: must be a finite number >= 0 (seconds, at most {MAX_TIME_S:g}), got {v!r}")
    return LabelRules(**opts)


def _check_out(out: Path, force: bool, info: Mapping[str, Any]) -> None:
    """A non-empty `out` is refused unless it is a data folder this same command wrote (the same sources, controller
    and rules: it is written again) or `force` (docs/cli.md section 4)."""
    from duplexeval.controller.format.data import KIND as DATA_KIND

    if force or not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    try:
        old = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        old = None
    if not isinstance(old, dict) or old.get("kind") != DATA_KIND:
        raise RefusalError(f"{out}: exists, is not empty and is not a controller data folder; "
                           "pass --force to replace it")
    was = {k: v for k, v in old.items() if k not in ("kind", "schema_version", "frame_s")}
    if was != json.loads(json.dumps(info)):
        key = next((k for k in sorted({*was, *info}) if was.get(k) != info.get(k)), "?")
        raise RefusalError(f"{out}: exists and holds a data folder made differently ({key} differs); "
                           "pass --force to replace it")


def _source_info(conversations: str | Path | None, fdb: str | Path | None) -> JsonObject:
    """What dataset.json records about where the clips came from (one of the two sources)."""
    if (conversations is None) == (fdb is None):
        raise InputError("give exactly one of --conversations MANIFEST or --fdb DATASET")
    if conversations is not None:
        return {"conversations": str(conversations)}
    from duplexeval.controller.labels.fdb_bridge import BRIDGED_SUBSETS

    return {"fdb": str(fdb), "fdb_subsets": list(BRIDGED_SUBSETS)}


def _clips(conversations: str | Path | None, fdb: str | Path | None, controller: Controller | None, rules: LabelRules,
           remote: tuple[str, JsonObject, ExecutorSpec] | None = None) -> Iterator[Clip]:  # fmt: skip
    """Clips with labels (and the controller's scores). `remote` = (spec, options, ExecutorSpec): run on Ray."""
    from duplexeval.controller.labels.fdb_bridge import bridge_dataset
    from duplexeval.controller.labels.sources import conversation_clips, labelled_clips, needs_user_audio, read_manifest
    from duplexeval.controller.runtime.parallel import RunJob, run_clips
    from duplexeval.controller.runtime.runner import run as run_controller

    name = getattr(controller, "name", "controller")
    if conversations is not None:
        if remote is None:
            return conversation_clips(read_manifest(Path(conversations)), controller, rules)
        pairs = ((clip, RunJob(needs_user_audio(c), c.agent_audio, lab.n_frames, lab.truth_state, name))
                 for clip, c, lab in labelled_clips(read_manifest(Path(conversations)), rules))  # fmt: skip
        return run_clips(pairs, *remote)
    if remote is not None:
        fpairs = ((bc.clip, RunJob(bc.audio16k, None, bc.clip.meta.n_frames, None, name))
                  for bc in bridge_dataset(str(fdb)))
        return run_clips(fpairs, *remote)

    def gen() -> Iterator[Clip]:
        for bc in bridge_dataset(str(fdb)):
            if controller is not None:
                scores = run_controller(controller, bc.audio16k, None, bc.clip.meta.n_frames, None, name=name)
                scores.apply(bc.clip.frames)
            yield bc.clip

    return gen()


def read_data(path: str | Path) -> ControllerData:
    """A controller data folder (dataset.json, clips.jsonl, frames/): clip metadata checked, frames read on demand."""
    from duplexeval.controller.format.data import load_data

    return load_data(path)


def _data_folder(out: Path) -> DataFolder:
    d = read_data(out)
    paths = (out / "dataset.json", out / "clips.jsonl", out / "frames")
    return DataFolder(
        paths, len(d.clips), sum(len(c.turn_probes) for c in d.clips), sum(len(c.pause_probes) for c in d.clips),
        sum(len(c.yield_onsets) for c in d.clips), sum(len(c.backchannel_onsets) for c in d.clips),
        d.reference_s() / 3600, frozen(d.info),
    )


# ---------------------------------------------------------------------------------------------------------------
# in memory


def score_samples(clips: Iterable[Clip], *, policy: str | Path | EvaluationPolicy | None = None,
                  mode: str | None = None) -> ControllerReport:  # fmt: skip
    """Frame and event metrics of clips of your own (`format.data.Clip`: metadata, labels and the controller's
    scores) under a policy, in memory: what `evaluate` reports for a data folder, without its header."""
    from duplexeval.controller.metrics.events import aggregate
    from duplexeval.controller.metrics.report import run_clips

    pol = policy_of(policy, mode)
    evs, frames = run_clips(clips, pol)
    doc = {"evaluation_policy": pol.to_json(), "frame_metrics": frames, "event_metrics": aggregate(evs, pol)}
    mets = metrics_of({"frame": doc["frame_metrics"], "event": doc["event_metrics"]})
    return ControllerReport(None, MappingProxyType(mets), frozen(doc), tuple(evs))


# ---------------------------------------------------------------------------------------------------------------
# verbs


def label(
    *,
    out: str | Path,
    conversations: str | Path | None = None,
    fdb: str | Path | None = None,
    rules: Mapping[str, float] | None = None,
    force: bool = False,
) -> DataFolder:
    """`controller label`: derive frame truth, masks and events (no controller scores) from a conversation manifest
    or the FDB CANDOR subsets (exactly one) into the data folder `out`."""
    from duplexeval.controller.format.data import write_data

    lr = label_rules(rules)
    info = {**_source_info(conversations, fdb), "label_rules": lr.to_json()}
    _check_out(Path(out), force, info)
    write_data(out, _clips(conversations, fdb, None, lr), info=info)
    return _data_folder(Path(out))


def run(
    *,
    controller: str,
    out: str | Path,
    conversations: str | Path | None = None,
    fdb: str | Path | None = None,
    rules: Mapping[str, float] | None = None,
    force: bool = False,
    executor: ExecutorSpec | None = None,
    info: JsonObject | None = None,
) -> DataFolder:
    """`controller run`: a streaming controller (`NAME[:key=value,...]`, FILE.onnx or `module:factory`) over two-channel
    audio (state/yield teacher-forced, endpoint/backchannel with LISTEN forced), its scores written with the derived
    labels into `out`; with a Ray executor, one conversation per task. `info`: what dataset.json records about how
    the folder was made (default: the source, the controller spec and config, the label rules)."""
    from duplexeval.controller.format.data import write_data
    from duplexeval.controller.runtime.registry import controller_config
    from duplexeval.controller.runtime.runner import load_controller
    from duplexeval.specs import json_values, parse_spec

    name, params = parse_spec(controller, "--controller")
    opts = json_values(params)
    ctl = load_controller(name, opts)
    lr = label_rules(rules)
    cfg = controller_config(ctl)
    if info is None:
        info = {**_source_info(conversations, fdb), "controller": name, "controller_config": cfg,
                "label_rules": lr.to_json()}
    _check_out(Path(out), force, info)
    remote = (name, opts, executor) if executor is not None and executor.kind != "local" else None
    write_data(out, _clips(conversations, fdb, ctl, lr, remote), info=info)
    return _data_folder(Path(out))


def _report(doc: Mapping[str, Any], path: str | Path, rows: Sequence[ClipEvidence] = (),
            paths: tuple[Path, ...] = ()) -> ControllerReport:  # fmt: skip
    rec = artifact(doc, path, {"frame": doc.get("frame_metrics"), "event": doc.get("event_metrics")})
    return ControllerReport(rec.signature, rec.metrics, rec.document, tuple(rows), paths)


def evaluate(
    data: str | Path,
    *,
    policy: str | Path | EvaluationPolicy | None = None,
    mode: str | None = None,
    json_out: str | Path | None = None,
    rows_out: str | Path | None = None,
    label: str | None = None,
) -> ControllerReport:
    """`controller evaluate DATA`: frame metrics and replayed event metrics of a controller's outputs under a frozen
    policy (default: spec 002's offline operating point); writes the report / per-clip rows if asked (`label`: the
    report's name for the data, by default its path)."""
    from duplexeval.controller.metrics.report import evaluate as evaluate_report
    from duplexeval.jsonio import atomic_write_text, dumps_line, write_json

    pol = policy_of(policy, mode)
    evs: list[ClipEvidence] = []
    doc = evaluate_report(read_data(data), pol, data_label=label, evidence=evs)
    written: list[Path] = []
    if json_out is not None:
        write_json(json_out, doc)
        written.append(Path(json_out))
    if rows_out is not None:
        atomic_write_text(rows_out, "".join(dumps_line(e.to_json()) for e in evs))
        written.append(Path(rows_out))
    return _report(doc, json_out or data, evs, tuple(written))


def _check_policy_out(out: Path, new: JsonObject, force: bool) -> None:
    """A policy file there is replaced only when it is this calibration's (docs/cli.md section 4) or with `force`."""
    if force or not out.exists():
        return
    try:
        old = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        old = None
    if not isinstance(old, dict) or "evaluation_policy" not in old:
        raise RefusalError(f"{out}: exists and is not a policy duplexeval wrote; "
                           "pass --force to replace it (or --out elsewhere)")
    if old != json.loads(json.dumps(new)):
        what = "other data or targets" if old.get("calibration") != new.get("calibration") else "another policy"
        raise RefusalError(f"{out}: exists and holds a policy calibrated from {what}; "
                           "pass --force to replace it (or --out elsewhere)")


def calibrate(
    dev: str | Path,
    *,
    out: str | Path,
    base_policy: str | Path | EvaluationPolicy | None = None,
    reference: str | Path | None = None,
    reference_policy: str | Path | EvaluationPolicy | None = None,
    pause_cutin_ceiling: float | None = None,
    yield_false_per_hour: float | None = None,
    backchannel_ack_per_hour: float | None = None,
    grid: Sequence[float] | None = None,
    json_out: str | Path | None = None,
    force: bool = False,
) -> Calibration:
    """`controller calibrate DEV`: pick thresholds on development data by spec 002's rules (targets given, or the
    reference system's event rates) and write the frozen policy to `out` (`grid` None: 0.05 to 0.99 by 0.01)."""
    from duplexeval.controller.calibration.thresholds import Targets, targets_from_report
    from duplexeval.controller.calibration.thresholds import calibrate as pick
    from duplexeval.controller.format.policy import save_policy
    from duplexeval.controller.metrics.events import evaluate_events
    from duplexeval.jsonio import sha256_file, write_json

    base = policy_of(base_policy)
    t = Targets(pause_cutin_ceiling, yield_false_per_hour, backchannel_ack_per_hour)
    ref_info = None
    if reference is not None:
        ref = read_data(reference)
        rpol = policy_of(reference_policy, base.endpoint_mode)
        _evs, agg = evaluate_events(ref.iter_clips(), rpol)
        rt = targets_from_report(agg, rpol.endpoint_mode)
        t = Targets(
            t.pause_cutin_ceiling if t.pause_cutin_ceiling is not None else rt.pause_cutin_ceiling,
            t.yield_false_per_hour if t.yield_false_per_hour is not None else rt.yield_false_per_hour,
            t.backchannel_ack_per_hour if t.backchannel_ack_per_hour is not None else rt.backchannel_ack_per_hour,
        )
        ref_info = {"path": str(reference), "clips_sha256": sha256_file(ref.root / "clips.jsonl"),
                    "policy": rpol.to_json()}
    if t.pause_cutin_ceiling is None and t.yield_false_per_hour is None and t.backchannel_ack_per_hour is None:
        raise InputError("calibrate: give --reference or at least one target (--pause-cutin-ceiling, "
                         "--yield-false-per-hour, --backchannel-ack-per-hour)")
    d = read_data(dev)
    thresholds = threshold_grid(DEFAULT_GRID) if grid is None else [float(g) for g in grid]
    pol, info = pick(d.iter_clips(), base, t, thresholds)
    prov = {"calibration": {"dev": str(dev), "dev_clips_sha256": sha256_file(d.root / "clips.jsonl"),
                            "reference": ref_info, "targets": info.targets.to_json(), "chosen": info.chosen_json(),
                            "mode": info.mode}}  # fmt: skip
    _check_policy_out(Path(out), {"evaluation_policy": pol.to_json(), **prov}, force)
    save_policy(out, pol, prov)
    doc = {**prov, "evaluation_policy": pol.to_json(), "table": info.table_json()}
    written = [Path(out)]
    if json_out is not None:
        write_json(json_out, doc)
        written.append(Path(json_out))
    return Calibration(tuple(written), pol, MappingProxyType(dict(info.chosen)), frozen(doc))


def _compare(doc: Mapping[str, Any], path: str | Path, paths: tuple[Path, ...] = ()) -> CompareResult:
    res = doc.get("event_metrics") or {}
    rec = artifact(doc, path, {**(res.get("metrics") or {}), "frame": doc.get("head_ranking_point_only") or {}})
    return CompareResult(rec.signature, rec.metrics, rec.document, paths)


def compare(
    a: str | Path,
    b: str | Path,
    *,
    policy: str | Path | EvaluationPolicy | None = None,
    policy_b: str | Path | EvaluationPolicy | None = None,
    mode: str | None = None,
    json_out: str | Path | None = None,
    labels: tuple[str, str] | None = None,
) -> CompareResult:
    """`controller compare A B`: differences B - A with a conversation-grouped paired bootstrap (same clips, labels and
    groups required); `policy_b` None: B under A's policy. Writes the comparison to `json_out` if given (`labels`:
    its names for the two sides, by default their paths)."""
    from duplexeval.controller.metrics import compare as compare_metrics
    from duplexeval.jsonio import write_json

    pa = policy_of(policy, mode)
    pb = policy_of(policy_b, mode) if policy_b is not None else pa
    la, lb = labels if labels is not None else (a, b)
    doc = compare_metrics.compare(la, lb, read_data(a), read_data(b), pa, pb)
    written: tuple[Path, ...] = ()
    if json_out is not None:
        write_json(json_out, doc)
        written = (Path(json_out),)
    return _compare(doc, json_out or "<compare>", written)


def bench(spec: str, *, prefill: int = 64, updates: int = 200, repeats: int = 3,
          json_out: str | Path | None = None) -> BenchResult:  # fmt: skip
    """`controller bench SPEC`: compute cost by spec 002's protocol (batch 1, `prefill` frames, `repeats` x `updates`
    one-frame updates); writes the report to `json_out` if given."""
    from duplexeval.controller.runtime.bench import bench as run_bench
    from duplexeval.controller.runtime.runner import load_controller
    from duplexeval.jsonio import write_json
    from duplexeval.specs import json_values, parse_spec

    name, params = parse_spec(spec, "SPEC")
    doc = run_bench(load_controller(name, json_values(params)), prefill, updates, repeats)
    doc["controller_spec"] = name
    written: tuple[Path, ...] = ()
    if json_out is not None:
        write_json(json_out, doc)
        written = (Path(json_out),)
    return BenchResult(MappingProxyType(metrics_of(doc)), frozen(doc), written)


# ---------------------------------------------------------------------------------------------------------------
# readers


def read_policy(path: str | Path) -> EvaluationPolicy:
    """A frozen policy file (a bare policy, a calibration's, or any report's ``evaluation_policy``), checked."""
    from duplexeval.controller.format.policy import load_policy

    return load_policy(path)


def read_report(path: str | Path) -> ControllerReport:
    """An `evaluate --json` report read back: kind and schema checked, the numbers typed (no per-clip rows)."""
    rec = read_artifact(path, REPORT_KIND, REPORT_SCHEMA)
    return _report(rec.document, path)


def read_compare(path: str | Path) -> CompareResult:
    """A `compare --json` file (or the demo's) read back: kind and schema checked, the differences typed."""
    rec = read_artifact(path, COMPARE_KIND, COMPARE_SCHEMA)
    return _compare(rec.document, path)


def read_bench(path: str | Path) -> BenchResult:
    """A `bench --json` report read back (kind checked)."""
    rec = read_artifact(path, BENCH_KIND)
    return BenchResult(MappingProxyType(metrics_of(rec.document)), rec.document)
