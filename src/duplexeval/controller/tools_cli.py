"""`duplexeval controller label | run | bench | demo`: labels from two-channel conversations or the FDB CANDOR
subsets, a streaming controller run into a data folder, the compute benchmark, and the offline demo."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from duplexeval.cli_options import emit_json, json_option, json_to_stdout
from duplexeval.controller.format.data import KIND as DATA_KIND
from duplexeval.controller.format.data import Clip, ControllerData, load_data, write_data
from duplexeval.controller.format.protocol import Controller
from duplexeval.controller.labels.derive import LabelRules
from duplexeval.controller.labels.fdb_bridge import bridge_dataset
from duplexeval.controller.labels.sources import (
    conversation_clips,
    labelled_clips,
    needs_user_audio,
    read_manifest,
)
from duplexeval.controller.runtime.bench import bench, format_bench
from duplexeval.controller.runtime.parallel import RunJob, run_clips
from duplexeval.controller.runtime.registry import controller_config
from duplexeval.controller.runtime.runner import load_controller, run
from duplexeval.errors import InputError, RefusalError
from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import Status, finish
from duplexeval.options import key_values
from duplexeval.schemas import MAX_TIME_S
from duplexeval.specs import json_values, parse_spec

if TYPE_CHECKING:  # duplexeval.cli imports this module
    from duplexeval.cli import CliApps


# parameters several commands declare the same way
_SPEC_HELP = ("NAME[:key=value,...]: silence or silero (also spelled baseline:NAME), an installed plugin's name, FILE.onnx, "
              "or package.module:factory, e.g. silence:timeout_s=0.8; values are read as JSON when they parse.")
FORCE = typer.Option(False, "--force", help="Replace a non-empty --out folder made differently (the same command's "
                     "own data folder is written again).")


def _rules(items: list[str] | None) -> LabelRules:
    opts = key_values(items, "--rule")
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


def _check_out(out: Path, force: bool, info: dict[str, Any]) -> None:
    """A non-empty --out is refused unless it is a data folder this same command wrote (the same sources, controller
    and rules: it is written again) or `force` (docs/cli.md section 4)."""
    if force or not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    try:
        old = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        old = None
    if not isinstance(old, dict) or old.get("kind") != DATA_KIND:
        raise RefusalError(f"{out}: exists, is not empty and is not a controller data folder; pass --force to replace it")
    was = {k: v for k, v in old.items() if k not in ("kind", "schema_version", "frame_s")}
    if was != json.loads(json.dumps(info)):
        key = next((k for k in sorted({*was, *info}) if was.get(k) != info.get(k)), "?")
        raise RefusalError(f"{out}: exists and holds a data folder made differently ({key} differs); "
                           "pass --force to replace it")


def _source_info(conversations: Path | None, fdb: Path | None) -> dict[str, Any]:
    """What dataset.json records about where the clips came from (one of the two sources)."""
    if (conversations is None) == (fdb is None):
        raise InputError("give exactly one of --conversations MANIFEST or --fdb DATASET")
    if conversations is not None:
        return {"conversations": str(conversations)}
    return {"fdb": str(fdb), "fdb_subsets": ["candor_turn_taking", "candor_pause_handling"]}


def _clips(conversations: Path | None, fdb: Path | None, controller: Controller | None, rules: LabelRules,
           remote: tuple[str, dict[str, Any], ExecutorSpec] | None = None) -> tuple[Iterator[Clip], dict[str, Any]]:
    """Clips with labels (and the controller's scores). `remote` = (spec, options, ExecutorSpec): run on Ray."""
    info = _source_info(conversations, fdb)
    name = getattr(controller, "name", "controller")
    if conversations is not None:
        if remote is None:
            return conversation_clips(read_manifest(conversations), controller, rules), info

        pairs = ((clip, RunJob(needs_user_audio(c), c.agent_audio, lab.n_frames, lab.truth_state, name))
                 for clip, c, lab in labelled_clips(read_manifest(conversations), rules))
        return run_clips(pairs, *remote), info

    if remote is not None:
        pairs = ((bc.clip, RunJob(bc.audio16k, None, bc.clip.meta.n_frames, None, name))
                 for bc in bridge_dataset(str(fdb)))
        return run_clips(pairs, *remote), info

    def gen() -> Iterator[Clip]:
        for bc in bridge_dataset(str(fdb)):
            if controller is not None:
                run(controller, bc.audio16k, None, bc.clip.meta.n_frames, None, name=name).apply(bc.clip.frames)
            yield bc.clip

    return gen(), info


def controller_label(
    out: Path = typer.Option(..., "--out", "-o", help="Data folder to write (dataset.json, clips.jsonl, frames/)."),
    conversations: Path | None = typer.Option(None, "--conversations", help="Conversation manifest (JSONL or JSON list; docs/controller-labels.md)."),
    fdb: Path | None = typer.Option(None, "--fdb", help="FDB v1.0 folder: bridge candor_turn_taking and candor_pause_handling."),
    rule: list[str] | None = typer.Option(None, "--rule", help="Override a derivation rule, e.g. --rule max_pause_s=2.5 (repeatable)."),
    force: bool = FORCE,
) -> None:
    """Derive frame truth, masks and events (no controller scores) from conversations or the FDB CANDOR subsets."""
    rules = _rules(rule)
    info = {**_source_info(conversations, fdb), "label_rules": rules.to_json()}
    _check_out(out, force, info)
    clips, _info = _clips(conversations, fdb, None, rules)
    write_data(out, clips, info=info)
    d = load_data(out)
    typer.echo(_summary(d, out))
    finish("controller label", Status(0, f"{len(d.clips)} clips labelled (no rule beyond bad input)"))


def _summary(d: ControllerData, out: Path) -> str:
    n_turn = sum(len(c.turn_probes) for c in d.clips)
    n_pause = sum(len(c.pause_probes) for c in d.clips)
    n_y = sum(len(c.yield_onsets) for c in d.clips)
    n_b = sum(len(c.backchannel_onsets) for c in d.clips)
    return (f"wrote {out}: {len(d.clips)} clips, {n_turn} turn probes, {n_pause} pause probes, {n_y} yield onsets, "
            f"{n_b} backchannel onsets, reference {d.reference_s() / 3600:.5f} h")  # fmt: skip


@executor_options
def controller_run(
    controller: str = typer.Option(..., "--controller", help=_SPEC_HELP),
    out: Path = typer.Option(..., "--out", "-o", help="Data folder to write, ready for `controller evaluate`."),
    conversations: Path | None = typer.Option(None, "--conversations", help="Conversation manifest with audio."),
    fdb: Path | None = typer.Option(None, "--fdb", help="FDB v1.0 folder (CANDOR turn-taking and pause subsets)."),
    rule: list[str] | None = typer.Option(None, "--rule", help="Override a derivation rule key=value (repeatable)."),
    force: bool = FORCE,
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Run a streaming controller over two-channel audio (state/yield teacher-forced, endpoint/backchannel with
    LISTEN forced) and write its scores with the derived labels. With --executor ray, one conversation per task."""
    name, params = parse_spec(controller, "--controller")
    opts = json_values(params)
    ctl = load_controller(name, opts)
    rules = _rules(rule)
    cfg = controller_config(ctl)
    info = {**_source_info(conversations, fdb), "controller": name, "controller_config": cfg, "label_rules": rules.to_json()}
    _check_out(out, force, info)
    remote = (name, opts, executor_spec) if executor_spec.kind != "local" else None
    clips, _info = _clips(conversations, fdb, ctl, rules, remote)
    write_data(out, clips, info=info)
    d = load_data(out)
    typer.echo(_summary(d, out))
    finish("controller run", Status(0, f"{len(d.clips)} clips run (a controller error is exit 2)"))


def controller_bench(
    spec: str = typer.Argument(..., metavar="SPEC", help=_SPEC_HELP),
    prefill: int = typer.Option(64, "--prefill", help="Prefill frames before the timed updates."),
    updates: int = typer.Option(200, "--updates", help="Timed one-frame updates per repeat."),
    repeats: int = typer.Option(3, "--repeats", help="Repeats."),
    json_out: Path | None = json_option("the JSON report"),
) -> None:
    """Compute cost by spec 002's protocol: batch 1, 64 prefill frames, 3 x 200 one-frame updates."""
    name, params = parse_spec(spec, "SPEC")
    rep = bench(load_controller(name, json_values(params)), prefill, updates, repeats)
    rep["controller_spec"] = name
    if not json_to_stdout(json_out):
        typer.echo(format_bench(rep))
    emit_json(json_out, rep)


DEMO_DEFAULT_OUT = Path("duplexeval-controller-demo")


def controller_demo(
    out: Path = typer.Option(DEMO_DEFAULT_OUT, "--out", "-o", help="Folder for conversations, data, reports."),
    n: int = typer.Option(4, "--conversations", help="How many conversations to make."),
    exchanges: int = typer.Option(4, "--exchanges", help="Exchanges per conversation."),
    seed: int = typer.Option(0, "--seed", help="Seed for voices, rates, gaps and event types."),
    force: bool = FORCE,
) -> None:
    """espeak-ng two-channel conversations, labels derived from them, both baselines evaluated and compared."""
    # lazy: the demo compares (duplexeval.paired -> scipy.stats, 1.3 s that every `duplexeval --help` would pay)
    from duplexeval.controller.demo import format_demo, run_demo

    if n < 1 or exchanges < 1:
        raise InputError("--conversations and --exchanges must be >= 1")
    typer.echo(format_demo(run_demo(out, n, exchanges, seed, force)))


def register(apps: CliApps) -> None:
    """Add `controller label`, `run`, `bench`, `demo`."""
    apps.controller.command("label")(controller_label)
    apps.controller.command("run")(controller_run)
    apps.controller.command("bench")(controller_bench)
    apps.controller.command("demo")(controller_demo)
