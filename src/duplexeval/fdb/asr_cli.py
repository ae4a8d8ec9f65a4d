"""`duplexeval fdb asr` (alias `reference-asr`): word timestamps for every eligible sample of a tree."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import failures, finish
from duplexeval.specs import known_params, parse_spec

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps

BACKEND_PARAMS = ("model", "device")  # what `--backend NAME:k=v` passes to the backend's factory


@executor_options
def asr_command(
    tree: Path = typer.Argument(..., help="The tree written by `duplexeval fdb export` or `import`."),
    backend: str = typer.Option(
        "whisper-align", "--backend",
        help="NAME[:model=...,device=...]: whisper-align (default, offline) | pocketsphinx | faster-whisper | "
             "parakeet | import, an installed plugin's name, or module.path:Class for your own backend (docs/asr.md). "
             "model: a CTranslate2 model folder (faster-whisper, whisper-align) or a .nemo file / hub id (parakeet); "
             "device: cpu or cuda (parakeet).",
    ),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Local worker processes (0: one per core); "
                                                           "with --executor ray the cluster's size decides."),
    force: bool = typer.Option(False, "--force", help="Transcribe again even if asr.json or other outputs exist."),
    declare: list[str] | None = typer.Option(
        None, "--declare",
        help="With --backend import: the ASR that made the files, NAME for every subset or SUBSET=NAME "
             "(repeatable), e.g. --declare candor_turn_taking=parakeet-tdt-0.6b-v2; recorded in asr.json.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no timing line."),
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Transcribe each eligible sample's output.wav into output.json, then write asr.json.

    Exits 1 with a summary if any sample failed (its reason is in asr.json); the others are kept.
    """
    from duplexeval.fdb.asr_stage import asr
    from duplexeval.fdb.tree import tree_audio_s
    from duplexeval.progress import StageClock

    clock = StageClock("asr")
    name, params = parse_spec(backend, "--backend")
    known_params("--backend", backend, params, BACKEND_PARAMS)
    result = asr(tree, backend=name, model=params.get("model"), jobs=jobs or None, force=force, progress=not quiet,
                 declare=declare, device=params.get("device", "cpu"), executor=executor_spec)
    typer.echo(result.summary())
    if not quiet:  # no real-time factor when nothing was transcribed (the run was finished already)
        clock.say(tree_audio_s(tree) if result.n_resumed < result.n_eligible else None)
    if result.failed:
        for _key, reason in result.errors[:20]:
            typer.echo(f"  failed: {reason}", err=True)
        if len(result.errors) > 20:
            typer.echo(f"  ... and {len(result.errors) - 20} more (see {tree / 'asr.json'})", err=True)
    finish("asr", failures(result.n_error, result.n_eligible, "eligible samples' transcriptions"))


def register(apps: CliApps) -> None:
    """Add `fdb asr` and its hidden alias `fdb reference-asr`."""
    apps.fdb.command("asr")(asr_command)
    apps.fdb.command("reference-asr", hidden=True)(asr_command)
