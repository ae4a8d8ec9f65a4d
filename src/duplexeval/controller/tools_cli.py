"""`duplexeval controller label | run | bench | demo`: labels from two-channel conversations or the FDB CANDOR
subsets, a streaming controller run into a data folder, the compute benchmark, and the offline demo."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from duplexeval.cli_options import emit_json, json_option, json_to_stdout
from duplexeval.errors import InputError
from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import Status, finish
from duplexeval.options import key_values

if TYPE_CHECKING:  # duplexeval.cli imports this module
    from duplexeval.cli import CliApps


# parameters several commands declare the same way
_SPEC_HELP = ("NAME[:key=value,...]: silence or silero (also spelled baseline:NAME), an installed plugin's "
              "name, FILE.onnx, or package.module:factory, e.g. silence:timeout_s=0.8; values are read as JSON "
              "when they parse.")
FORCE = typer.Option(False, "--force", help="Replace a non-empty --out folder made differently (the same command's "
                     "own data folder is written again).")


def controller_label(
    out: Path = typer.Option(..., "--out", "-o", help="Data folder to write (dataset.json, clips.jsonl, frames/)."),
    conversations: Path | None = typer.Option(None, "--conversations",
                                              help="Conversation manifest (JSONL or JSON list; "
                                                   "docs/controller-labels.md)."),
    fdb: Path | None = typer.Option(None, "--fdb", help="FDB v1.0 folder: bridge candor_turn_taking and "
                                                        "candor_pause_handling."),
    rule: list[str] | None = typer.Option(None, "--rule", help="Override a derivation rule, e.g. --rule "
                                                               "max_pause_s=2.5 (repeatable)."),
    force: bool = FORCE,
) -> None:
    """Derive frame truth, masks and events (no controller scores) from conversations or the FDB CANDOR subsets."""
    from duplexeval.controller.api import label

    d = label(out=out, conversations=conversations, fdb=fdb, rules=key_values(rule, "--rule"), force=force)
    typer.echo(_summary(d, out))
    finish("controller label", Status(0, f"{d.clips} clips labelled (no rule beyond bad input)"))


def _summary(d: Any, out: Path) -> str:
    """The line `label` and `run` print about the data folder they wrote (`controller.api.DataFolder`)."""
    return (f"wrote {out}: {d.clips} clips, {d.turn_probes} turn probes, {d.pause_probes} pause probes, "
            f"{d.yield_onsets} yield onsets, {d.backchannel_onsets} backchannel onsets, "
            f"reference {d.reference_hours:.5f} h")  # fmt: skip


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
    from duplexeval.controller.api import run

    d = run(controller=controller, out=out, conversations=conversations, fdb=fdb, rules=key_values(rule, "--rule"),
            force=force, executor=executor_spec)  # fmt: skip
    typer.echo(_summary(d, out))
    finish("controller run", Status(0, f"{d.clips} clips run (a controller error is exit 2)"))


def controller_bench(
    spec: str = typer.Argument(..., metavar="SPEC", help=_SPEC_HELP),
    prefill: int = typer.Option(64, "--prefill", help="Prefill frames before the timed updates."),
    updates: int = typer.Option(200, "--updates", help="Timed one-frame updates per repeat."),
    repeats: int = typer.Option(3, "--repeats", help="Repeats."),
    json_out: Path | None = json_option("the JSON report"),
) -> None:
    """Compute cost by spec 002's protocol: batch 1, 64 prefill frames, 3 x 200 one-frame updates."""
    from duplexeval.controller.api import bench

    rep = bench(spec, prefill=prefill, updates=updates, repeats=repeats,
                json_out=None if json_to_stdout(json_out) else json_out).document  # fmt: skip
    if not json_to_stdout(json_out):
        from duplexeval.controller.runtime.bench import format_bench

        typer.echo(format_bench(dict(rep)))
    else:
        emit_json(json_out, dict(rep))


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
