"""The one command line, `duplexeval`: a thin layer over the Python API.

Each feature module exposes ``register(apps)`` and adds its commands to the sub-apps below; heavy
imports (onnxruntime, faster-whisper, ...) stay inside the command functions so `--help` is fast.
"""

from __future__ import annotations

import importlib
import os
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from duplexeval import __version__, children, cli_paths, overwrite, redaction
from duplexeval.cli_compat import rewrite
from duplexeval.errors import DuplexEvalError, cap_line
from duplexeval.jsonio import check_output_dir, check_output_file, check_output_path
from duplexeval.plugins import DEBUG_ENV, PluginError, debug_enabled, print_traceback


@dataclass(frozen=True)
class CliApps:
    """The command groups feature modules register into."""

    root: typer.Typer
    fdb: typer.Typer
    eot: typer.Typer
    controller: typer.Typer
    dialogue: typer.Typer
    serve: typer.Typer
    systems: typer.Typer


def _make_app(group: str | None = None) -> typer.Typer:
    """The whole command tree; with `group`, only that group's commands are registered (faster start)."""
    root = typer.Typer(
        name="duplexeval",
        help="Measure how voice agents take turns: Full-Duplex-Bench v1.0, end-of-turn detectors, "
        "turn-taking controllers.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    subs = {name: typer.Typer(help=text, no_args_is_help=True) for name, text in GROUP_HELP.items()}
    for name, sub in subs.items():
        root.add_typer(sub, name=name)

    @root.callback(invoke_without_command=True)
    def _root(
        version: bool = typer.Option(False, "--version", help="Print the version and exit."),
        debug: bool = typer.Option(False, "--debug", help=f"Print the traceback behind an error line (anywhere on the "
                                   f"command line; or set {DEBUG_ENV}=1)."),
    ) -> None:
        if version:
            typer.echo(f"duplexeval {__version__}")
            raise typer.Exit(0)

    apps = CliApps(root=root, **subs)
    for module_name, groups in COMMAND_GROUPS.items():
        if group is None or group in groups:
            importlib.import_module(module_name).register(apps)
    return root


# Feature modules that add commands (each owns its file), with the groups each registers into: a command
# under one group imports only that group's modules (`fdb score` skips the controller, eot, dialogue and
# server modules), and the root (`--help`, `demo`, `report`) only the root's; each group's help text is set
# here, so the root help lists every group without importing it.
# tests/test_cli_groups.py checks the table against what each module registers.
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "duplexeval.fdb.score_cli": ("fdb",),
    "duplexeval.fdb.asr_cli": ("fdb",),
    "duplexeval.fdb.asr_compare_cli": ("fdb",),
    "duplexeval.fdb.synth_cli": ("fdb",),
    "duplexeval.fdb.export_cli": ("fdb",),
    "duplexeval.fdb.evaluate_cli": ("fdb",),
    "duplexeval.fdb.compare_cli": ("fdb",),
    "duplexeval.report.report_cli": ("fdb", "root"),
    "duplexeval.eot.eot_cli": ("eot",),
    "duplexeval.controller.evaluate_cli": ("controller",),
    "duplexeval.controller.tools_cli": ("controller",),
    "duplexeval.dialogue.dialogue_cli": ("dialogue",),
    "duplexeval.demo_cli": ("root",),
    "duplexeval.systems.net.serve_cli": ("serve",),
    "duplexeval.fdb.replay_cli": ("fdb",),
    "duplexeval.fdb.check_cli": ("systems",),
}
# The command groups under the root, with the help text `duplexeval --help` shows for each.
GROUP_HELP: dict[str, str] = {
    "fdb": "Full-Duplex-Bench v1.0: synth, export/import, asr, evaluate, score.",
    "eot": "End-of-turn detectors: predict on real pauses, eot-bench's policy sweep with intervals, paired compare, "
    "spec 003 pairs.",
    "controller": "Streaming turn-taking controller evaluation (spec 002).",
    "dialogue": "Duplex dialogue managers (spec 004): synth, run, score, demo.",
    "serve": "Serve an in-process system over a real protocol on 127.0.0.1 (reference servers, fault injection).",
    "systems": "Systems under test: try one on a single sample before a run (check), list the names (list).",
}
GROUPS: tuple[str, ...] = tuple(GROUP_HELP)


def _group_of(argv: list[str]) -> str:
    """The command group `argv` runs a command of (its first word), or "root" (root commands and `--help`)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in GROUPS else "root"


# `duplexeval fdb --help` lists the stages in pipeline order; unknown names keep their place after these.
FDB_PIPELINE: tuple[str, ...] = ("synth", "export", "import", "asr", "evaluate", "score")

# Output paths, checked before a command runs: one line and exit 2 for a file where a folder should go (or
# the reverse), or a place that cannot be written. `--json` / `--rows` paths are files; an `out` option or
# argument is the folder or file these tables say; any other command's `out` gets the checks valid for both.
OUTPUT_FILE_FLAGS: tuple[str, ...] = ("--json", "--rows")
OUTPUT_DIRS: frozenset[tuple[str, str]] = frozenset(  # the commands whose `out` is a folder (cli_paths says which)
    where for where, folders in cli_paths.FOLDER_OUTPUTS.items() if "out" in folders
)
OUTPUT_FILES: frozenset[tuple[str, str]] = frozenset({
    ("controller", "calibrate"), ("duplexeval", "report"), ("fdb", "compare"), ("fdb", "show"),
})


def _output_check(kind: str, flag: str, inner: Callable[..., Any] | None) -> Callable[..., Any]:
    check = {"file": check_output_file, "dir": check_output_dir, "any": check_output_path}[kind]

    def callback(ctx: Any, param: Any, value: Any) -> Any:
        if inner is not None:
            value = inner(ctx, param, value)
        if value is not None and str(value) not in ("", "-"):  # "-": stdout (`--json -`)
            check(value, flag)
        return value

    return callback


def _no_metavar(param: Any) -> Any:
    """Flags take no value, so their help shows no `<bool>` type."""
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""
    return param


def _is_path(param: Any) -> bool:
    """True for a parameter typed `Path` / `Path | None` (typer >= 0.29 keeps the annotation; older: click.Path)."""
    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if ann is not None:
        return ann is Path or Path in typing.get_args(ann)
    return type(getattr(param, "type", None)).__name__ == "Path"


def _guard_outputs(cmd: Any, group: str) -> None:
    """Before the command's body runs: refuse an output that is (or is inside) an input; then guard its writes."""
    body = cmd.callback
    if body is None:
        return
    where = (group, cmd.name or "")

    def guarded(**values: Any) -> Any:
        outputs, inputs = cli_paths.roles(where, cmd.params, values, _is_path)
        overwrite.check_outputs(outputs, inputs)
        with overwrite.protect(inputs):
            return body(**values)

    cmd.callback = guarded


def _polish(cmd: Any, group: str = "") -> None:
    """One pass over every command: output-path checks, no metavar on flags, fdb stages in pipeline order."""
    commands = getattr(cmd, "commands", None)
    if isinstance(commands, dict):
        if cmd.name == "fdb":
            order = {name: i for i, name in enumerate(FDB_PIPELINE)}
            cmd.commands = dict(sorted(commands.items(), key=lambda kv: order.get(kv[0], len(order))))
        for sub in cmd.commands.values():
            _polish(sub, cmd.name or "duplexeval")
    else:
        _guard_outputs(cmd, group)
    help_option = getattr(cmd, "get_help_option", None)
    if help_option is not None:
        cmd.get_help_option = lambda ctx, _get=help_option: _no_metavar(_get(ctx))
    for param in cmd.params:
        _no_metavar(param)
        if not _is_path(param):
            continue
        flags = [o for o in param.opts if o.startswith("-")]
        if any(f in OUTPUT_FILE_FLAGS for f in flags):
            kind = "file"
        elif param.name == "out":
            where = (group, cmd.name or "")
            kind = "dir" if where in OUTPUT_DIRS else "file" if where in OUTPUT_FILES else "any"
        else:
            continue
        flag = flags[0] if flags else (param.name or "out").upper()
        param.callback = _output_check(kind, flag, param.callback)


def _fold_long_words_in_help() -> None:
    """typer's rich help cuts a word longer than its column with an ellipsis ("'turn-based:silence_ms=…" at 80
    columns, an example made useless); fold such words onto the next line instead, so nothing of a help is lost."""
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    if getattr(rich_utils, "_duplexeval_folds", False):
        return
    columns = rich_utils.Columns  # type: ignore[attr-defined]  # typer's, imported from rich, not re-exported

    class FoldingTable(Table):
        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*renderables, **kwargs)
            for column in self.columns:
                column.overflow = "fold"

    def folding_columns(items: Any, *args: Any, **kwargs: Any) -> Any:
        for item in items:
            if isinstance(item, Text):
                item.overflow = "fold"
        return columns(items, *args, **kwargs)

    # typer.rich_utils' own names for rich's Table and Columns (imported there, not re-exported), patched here
    rich_utils.Table = FoldingTable  # type: ignore[attr-defined]
    rich_utils.Columns = folding_columns  # type: ignore[attr-defined,assignment]
    rich_utils._duplexeval_folds = True  # type: ignore[attr-defined]


def command_tree(group: str | None = None) -> Any:
    """The click command tree `duplexeval` runs (every group, or only `group`'s), with the output checks attached."""
    _fold_long_words_in_help()
    cmd = typer.main.get_command(_make_app(group))
    _polish(cmd)
    return cmd


def _kind(exc: BaseException) -> str:
    """Which command-line-library exception this is, by class name (typer vendors click from 0.29 on)."""
    names = {c.__name__ for c in type(exc).__mro__}
    for name in ("NoArgsIsHelpError", "UsageError", "ClickException", "Exit", "Abort"):
        if name in names:
            return name
    return ""


def _usage_line(exc: Any) -> str:
    """A usage error as one line with a pointer to the command's --help."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "duplexeval"
    msg = cap_line(" ".join(exc.format_message().split()))
    return f"duplexeval: error: {msg} (see '{where} --help')"


def _take_debug(args: list[str]) -> list[str]:
    """`args` without `--debug` (accepted anywhere before a `--`), which turns tracebacks on for this run and its
    workers."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:end]:
        return args
    os.environ[DEBUG_ENV] = "1"
    return [a for a in args[:end] if a != "--debug"] + args[end:]


def main(argv: list[str] | None = None) -> None:
    """Entry point: user mistakes print one line on stderr and exit non-zero, never a traceback.

    Everything the command prints goes through the redaction of known secrets (`redaction.guard_streams`);
    a credential inside a URL on the command line is known before anything is parsed.
    """
    args = _take_debug(list(sys.argv[1:] if argv is None else argv))
    children.watch_parent()  # a child of another duplexeval process exits when that process dies
    for arg in args:
        redaction.register_url_credentials(arg)
    with redaction.guard_streams():
        _run(args)


def _run(args: list[str]) -> None:
    cmd = command_tree(_group_of(args))
    args, notes = rewrite(args, cmd)
    for note in notes:
        print(f"duplexeval: note: {note}", file=sys.stderr)
    try:
        rc = cmd.main(args=args, prog_name="duplexeval", standalone_mode=False)
    except DuplexEvalError as exc:
        print_traceback(exc)
        hint = " (--debug shows the traceback)" if isinstance(exc, PluginError) and not debug_enabled() else ""
        print(f"duplexeval: error: {exc}{hint}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("duplexeval: interrupted; finished work is kept, rerun to resume", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:  # a last resort: a file the checks did not foresee, still one line
        name = f"{exc.filename}: " if exc.filename else ""
        print(f"duplexeval: error: {cap_line(name + str(exc.strerror or exc))}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        kind = _kind(exc)
        if kind == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if kind == "UsageError":
            print(_usage_line(exc), file=sys.stderr)
            sys.exit(2)
        if kind == "ClickException":
            print(f"duplexeval: error: {cap_line(' '.join(exc.format_message().split()))}",  # type: ignore[attr-defined]
                  file=sys.stderr)
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if kind == "Exit":
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if kind == "Abort":
            print("duplexeval: aborted", file=sys.stderr)
            sys.exit(1)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)  # as click's standalone mode: always a SystemExit
