"""A command under one group registers only that group's modules: the table that says which modules those
are must match what each module registers, so no command goes missing from a group-only command tree."""

from __future__ import annotations

import importlib
from pathlib import Path

import typer

from duplexeval import cli


def _fresh_apps() -> cli.CliApps:
    return cli.CliApps(*(typer.Typer() for _ in range(1 + len(cli.GROUPS))))


def test_each_module_registers_exactly_the_groups_the_table_names() -> None:
    for module_name, groups in cli.COMMAND_GROUPS.items():
        apps = _fresh_apps()
        importlib.import_module(module_name).register(apps)
        used = {name for name in ("root", *cli.GROUPS)
                if getattr(apps, name).registered_commands or getattr(apps, name).registered_groups}
        assert used == set(groups), module_name


def _commands(app: typer.Typer, group: str) -> set[str]:
    cmd = typer.main.get_command(app)
    return set(cmd.commands[group].commands)  # type: ignore[attr-defined]


def test_a_group_only_tree_has_every_command_of_its_group() -> None:
    full = cli._make_app()
    for group in cli.GROUPS:
        assert _commands(cli._make_app(group), group) == _commands(full, group), group


def test_the_group_is_the_first_word_that_is_not_an_option() -> None:
    assert cli._group_of(["fdb", "score", "x"]) == "fdb"
    assert cli._group_of(["--version"]) == "root"
    assert cli._group_of(["demo", "--out", "fdb"]) == "root"
    assert cli._group_of(["report", "tree"]) == "root"
    assert cli._group_of(["-h"]) == "root"


def test_the_root_tree_lists_every_group_and_the_root_commands() -> None:
    full, root = typer.main.get_command(cli._make_app()), typer.main.get_command(cli._make_app("root"))
    assert set(root.commands) == set(full.commands)  # type: ignore[attr-defined]
    for group in cli.GROUPS:
        assert root.commands[group].help == full.commands[group].help  # type: ignore[attr-defined]


def test_one_cli_layout_every_module_that_adds_commands_is_a_star_cli_module() -> None:
    """Each family adds its commands from `*_cli.py` modules (no `cli/` packages, no bare `cli.py` below the root)."""
    import duplexeval

    root = Path(duplexeval.__file__).parent
    for module_name in cli.COMMAND_GROUPS:
        assert module_name.rsplit(".", 1)[-1].endswith("_cli"), module_name
    adders = {str(p.relative_to(root)) for p in root.rglob("*.py")
              if "def register(apps" in p.read_text(encoding="utf-8")}
    listed = {m.removeprefix("duplexeval.").replace(".", "/") + ".py" for m in cli.COMMAND_GROUPS}
    assert adders == listed
    assert not [p for p in root.rglob("cli") if p.is_dir()] and not [p for p in root.rglob("cli.py")
                                                                     if p.parent != root]
