"""Every command's parameters against the grammar of docs/cli.md, by walking the whole click command tree.

A rule a command does not meet yet is listed in PENDING; the walk must find exactly those, so a new
deviation fails and so does a fixed one that is still listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from duplexeval import cli

# The positional arguments docs/cli.md section 1 allows (click's parameter names).
POSITIONAL_NAMES = frozenset({
    "tree", "trees", "tree_a", "tree_b", "run", "run_a", "run_b", "data", "dev", "a", "b", "predictions",
    "pairs", "paths", "sample", "script", "spec",
})
PLUGIN_OPTIONS = ("--system", "--detector", "--controller")
# Parameters of a plugin that go into its spec (section 2), never an option of their own.
PLUGIN_PARAMETER_OPTIONS = frozenset({
    "--option", "--param", "--model", "--device", "--judge-model", "--judge-base-url", "--base-url", "--api-key-env",
    "--judge-seed", "--judge-timeout", "--attempts", "--timeout-s", "--cache-dir",
})
SHORTS = {"-q": "--quiet", "-o": "--out", "-j": "--jobs", "-v": "--verbose", "-h": "--help", "-d": "--detector"}
LONG_NAME = re.compile(r"^--[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# Commands that write a result of their own (section 4) but take no --out: they write into the tree or run they read
# (fdb score is not one: its file has no settings of its own and always follows the tree).
TREE_WRITERS = frozenset({"fdb asr", "fdb evaluate", "dialogue score"})
# Renderings of files that still exist (report.html, a PNG) are replaced, not guarded (section 4).
VIEWS = frozenset({"report", "fdb show"})
# Stages with the exit contract's --min-eligible (section 6) and the gates.
MIN_ELIGIBLE = frozenset({"fdb export", "fdb import", "fdb evaluate", "fdb score", "fdb compare"})
GATED = frozenset({"fdb score", "fdb compare", "eot score", "eot compare", "controller evaluate",
                   "controller compare", "dialogue score", "dialogue compare"})
DEMO_DEFAULTS = {"demo": "duplexeval-demo", "eot demo": "duplexeval-eot-demo",
                 "controller demo": "duplexeval-controller-demo", "dialogue demo": "duplexeval-dialogue-demo"}

# Deviations not converted yet: (command, rule). Cross one off when its command is converted.
PENDING: frozenset[tuple[str, str]] = frozenset()


def _is_argument(p: Any) -> bool:
    return getattr(p, "param_type_name", "") == "argument"


def _visible(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if not getattr(p, "hidden", False)]


def walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every visible leaf command as ("group name", command); hidden aliases are the same function."""
    subs = getattr(cmd, "commands", None)
    if isinstance(subs, dict):
        for name, sub in subs.items():
            if not getattr(sub, "hidden", False):
                yield from walk(sub, (*path, name))
        return
    yield " ".join(path), cmd


def _opts(cmd: Any) -> dict[str, Any]:
    return {o: p for p in _visible(cmd) if not _is_argument(p) for o in (*p.opts, *p.secondary_opts)}


def _int_min(p: Any) -> Any:
    return getattr(p, "min", None)


def deviations(name: str, cmd: Any) -> set[str]:
    """The rules of docs/cli.md that this command breaks."""
    bad: set[str] = set()
    params = _visible(cmd)
    opts = _opts(cmd)
    args = [p for p in params if _is_argument(p)]
    group = name.split(" ")[0]
    for o, p in opts.items():
        if o.startswith("--") and not LONG_NAME.match(o):
            bad.add(f"name {o}")
        if not o.startswith("--") and SHORTS.get(o) not in p.opts:
            bad.add(f"short {o}")
    if any(p.name not in POSITIONAL_NAMES for p in args):
        bad.add("positional names")
    has_plugin = any(o in opts for o in PLUGIN_OPTIONS)
    if has_plugin and args:
        bad.add("plugin command with positional inputs")
    plugin_params = set(opts) & PLUGIN_PARAMETER_OPTIONS
    if group == "serve":
        plugin_params.discard("--option")  # the server's protocol options, not the served system's
    if plugin_params:
        bad.add("plugin parameters outside the spec")
    if "--tree" in opts:
        bad.add("--tree option")
    if "--json" in opts and (opts["--json"].is_flag or opts["--json"].metavar != "PATH|-"):
        bad.add("--json PATH|-")
    if "--out" in opts and opts["--out"].is_flag:
        bad.add("--out value")
    if "--force" in opts and (not opts["--force"].is_flag or opts["--force"].secondary_opts or opts["--force"].default):
        bad.add("--force plain flag")
    writes = ("--out" in opts and name not in VIEWS) or name in TREE_WRITERS
    if writes and "--force" not in opts:
        bad.add("writer without --force")
    if "--jobs" in opts and ("-j" not in opts or _int_min(opts["--jobs"]) != 0):
        bad.add("--jobs -j N>=0")
    if "--concurrency" in opts and name != "fdb export":
        bad.add("--concurrency outside export")
    if "--quiet" in opts and "-q" not in opts:
        bad.add("--quiet -q")
    if name in MIN_ELIGIBLE and "--min-eligible" not in opts:
        bad.add("--min-eligible")
    if name in GATED and not {"--fail-under", "--fail-over"} <= set(opts):
        bad.add("--fail-under/--fail-over")
    if name in DEMO_DEFAULTS and str(opts["--out"].default) != DEMO_DEFAULTS[name]:
        bad.add("demo folder name")
    return bad


@pytest.fixture(scope="module")
def tree() -> Any:
    return cli.command_tree()


def test_every_command_meets_the_grammar_or_is_listed_as_pending(tree: Any) -> None:
    found = {(name, rule) for name, cmd in walk(tree) for rule in deviations(name, cmd)}
    new, fixed = sorted(found - PENDING), sorted(PENDING - found)
    assert not new, f"commands breaking docs/cli.md (fix them, or change the rule there): {new}"
    assert not fixed, f"fixed: cross these off PENDING: {fixed}"


def test_the_walk_sees_every_group(tree: Any) -> None:
    names = {name for name, _cmd in walk(tree)}
    assert {"fdb export", "fdb score", "eot predict", "controller run", "dialogue run", "serve ws-pcm",
            "report"} <= names
    assert {n.split(" ")[0] for n in names} >= set(cli.GROUPS)


def test_the_rules_catch_what_they_describe() -> None:
    """The checks themselves: a made-up command that breaks each rule is caught."""
    import typer

    app = typer.Typer()

    @app.command()
    def bad(
        tree: str = typer.Option(..., "--tree"),
        system: str = typer.Option(..., "--system"),
        param: list[str] = typer.Option([], "--param"),
        json_out: bool = typer.Option(False, "--json"),
        jobs: int = typer.Option(1, "--jobs"),
        force: bool = typer.Option(True, "--force/--no-force"),
        out: str = typer.Option("x", "--out"),
        camel: int = typer.Option(0, "--camelCase"),
        quiet: bool = typer.Option(False, "--quiet", "-x"),
    ) -> None:
        """A command that breaks the rules."""

    @app.command()
    def other(thing: str = typer.Argument(...)) -> None:
        """Another."""

    cmd = typer.main.get_command(app)
    rules = deviations("fdb bad", cmd.commands["bad"])  # type: ignore[attr-defined]
    assert rules == {"--tree option", "plugin parameters outside the spec", "--json PATH|-", "--jobs -j N>=0",
                     "--force plain flag", "name --camelCase", "short -x", "--quiet -q"}
    assert deviations("fdb other", cmd.commands["other"]) == {"positional names"}  # type: ignore[attr-defined]


def test_help_at_80_columns_cuts_nothing(tree: Any, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command's --help at 80 columns: no word cut off with an ellipsis (examples stay whole)."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "dumb")
    cut = []
    for name, _cmd in walk(tree):
        with pytest.raises(SystemExit):
            cli.main([*name.split(), "--help"])
        out = capsys.readouterr().out
        cut += [f"{name}: {line.strip()}" for line in out.splitlines() if "\u2026" in line or len(line) > 80]
    assert not cut, cut[:10]
