"""`duplexeval systems check SPEC` and `duplexeval systems list`: try a system on one sample before a whole run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from duplexeval.exits import Status, finish
from duplexeval.specs import known_params, parse_spec

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def check_command(
    spec: str = typer.Argument(..., metavar="SPEC", help="The system: NAME[:key=value,...] or "
                                                         "module.path:Class[:key=value,...] (a module in the current "
                                                         "folder is found), e.g. "
                                                         "'openai-realtime:url=ws://127.0.0.1:8000/v1/realtime'."),
    dataset: str = typer.Option("demo", "--dataset", help="An FDB v1.0 folder, a synth folder, or 'demo' (the "
                                                          "built-in set)."),
    sample: str = typer.Option("candor_turn_taking/1", "--sample", help="The sample to run, SUBSET/ID (default: a user "
                                                                         "turn of 3 s followed by silence)."),
    backend: str = typer.Option("whisper-align", "--backend",
                                help="The ASR that listens, NAME[:model=...,device=...] as in "
                                                                   "`fdb asr` (the one you will score with)."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", min=0.001, max=86400,
                                       help="Seconds each call into the system may take."),
) -> None:
    """Run one sample through a system and report what it produced: onset, duration, level, speech, words.

    Exit 1 with a warning when the output would score misleadingly: no sound, sound but no speech, or words
    the ASR heard in audio the VAD calls non-speech (a tone, noise). A network system runs in real time."""
    from duplexeval.fdb.asr_cli import BACKEND_PARAMS
    from duplexeval.fdb.system_check import check_system, format_check

    name, params = parse_spec(backend, "--backend")
    known_params("--backend", backend, params, BACKEND_PARAMS)
    res = check_system(spec, dataset, sample, name, params.get("model"), params.get("device", "cpu"), call_timeout)
    for line in format_check(res):
        typer.echo(line)
    warnings = res.warnings()
    finish("systems check", Status(1, "; ".join(warnings)) if warnings else
           Status(0, "the system answered with speech the ASR transcribed (no warning)"))


def list_command() -> None:
    """The systems a SPEC may name: built-in baselines and network adapters, and installed plugins."""
    from duplexeval.systems.baselines import BASELINES
    from duplexeval.systems.registry import DEFERRED_IN_PROCESS, NETWORK_SYSTEMS, SYSTEMS, system_names

    for name in system_names():
        kind = ("network adapter" if name in NETWORK_SYSTEMS
                else "in-process" if name in BASELINES or name in DEFERRED_IN_PROCESS
                else f"installed plugin, entry point {SYSTEMS.entry_point_group}")
        typer.echo(f"{name}  ({kind})")
    typer.echo("module.path:Class  (your own System dataclass; examples/in_process_system.py)")


def register(apps: CliApps) -> None:
    """Add `systems check` and `systems list`."""
    apps.systems.command("check")(check_command)
    apps.systems.command("list")(list_command)
