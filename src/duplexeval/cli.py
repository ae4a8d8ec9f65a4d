"""The one command line, `duplexeval`: a thin layer over the Python API.

Each feature module exposes ``register(apps)`` and adds its commands to the sub-apps below; heavy
imports (onnxruntime, faster-whisper, ...) stay inside the command functions so `--help` is fast.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

import typer

from duplexeval import __version__
from duplexeval.errors import DuplexEvalError


@dataclass(frozen=True)
class CliApps:
    """The command groups feature modules register into."""

    root: typer.Typer
    fdb: typer.Typer
    eot: typer.Typer
    controller: typer.Typer
    dialogue: typer.Typer
    serve: typer.Typer


def _make_app() -> typer.Typer:
    root = typer.Typer(
        name="duplexeval",
        help="Measure how voice agents take turns: Full-Duplex-Bench v1.0, end-of-turn detectors, "
        "turn-taking controllers.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    fdb = typer.Typer(help="Full-Duplex-Bench v1.0: synth, export/import, asr, evaluate, score.", no_args_is_help=True)
    eot = typer.Typer(help="End-of-turn detector scoring from (true end, commit) pairs (spec 003).", no_args_is_help=True)
    controller = typer.Typer(help="Streaming turn-taking controller evaluation (spec 002).", no_args_is_help=True)
    dialogue = typer.Typer(help="Duplex dialogue managers (spec 004): synth, run, score, demo.", no_args_is_help=True)
    serve = typer.Typer(
        help="Serve an in-process system over a real protocol on 127.0.0.1 (reference servers, fault injection).",
        no_args_is_help=True,
    )
    root.add_typer(fdb, name="fdb")
    root.add_typer(eot, name="eot")
    root.add_typer(controller, name="controller")
    root.add_typer(dialogue, name="dialogue")
    root.add_typer(serve, name="serve")

    @root.callback(invoke_without_command=True)
    def _root(
        version: bool = typer.Option(False, "--version", help="Print the version and exit."),
    ) -> None:
        if version:
            typer.echo(f"duplexeval {__version__}")
            raise typer.Exit(0)

    apps = CliApps(root=root, fdb=fdb, eot=eot, controller=controller, dialogue=dialogue, serve=serve)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(apps)
    return root


# Feature modules that add commands; each owns its file.
COMMAND_MODULES: tuple[str, ...] = (
    "duplexeval.fdb.score_cli",
    "duplexeval.fdb.asr_cli",
    "duplexeval.fdb.synth_cli",
    "duplexeval.fdb.export_cli",
    "duplexeval.fdb.evaluate_cli",
    "duplexeval.eot.cli",
    "duplexeval.controller.cli",
    "duplexeval.controller.tools_cli",
    "duplexeval.demo_cli",
    "duplexeval.systems.net.serve_cli",
    "duplexeval.fdb.replay_cli",
)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user mistakes print one line on stderr and exit non-zero, never a traceback."""
    app = _make_app()
    try:
        app(args=argv, prog_name="duplexeval", standalone_mode=True)
    except DuplexEvalError as exc:
        print(f"duplexeval: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("duplexeval: interrupted; finished work is kept, rerun to resume", file=sys.stderr)
        sys.exit(130)
