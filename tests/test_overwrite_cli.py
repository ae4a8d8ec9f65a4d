"""Every command that writes: each output tried against each input (the same file, a hard link, a symlink, a path
through `..`, a file inside an input folder, an input inside an output folder) is refused before any work, in one
line naming the option, the output and the input, and the input is left as it was; so is a hard link of a file
inside an input folder. The commands are found by
walking the CLI, so a new command is tried too."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from duplexeval import cli, cli_paths
from duplexeval.overwrite import Input, Output, check_outputs

CONTENT = b"an input that must survive\n"


@dataclass(frozen=True)
class Cmd:
    group: str
    name: str
    command: Any

    @property
    def where(self) -> tuple[str, str]:
        return (self.group, self.name)

    @property
    def argv_head(self) -> list[str]:
        return [self.name] if self.group == "duplexeval" else [self.group, self.name]


def _commands() -> Iterator[Cmd]:
    root = typer.main.get_command(cli._make_app())
    cli._polish(root)
    for gname, group in root.commands.items():
        if isinstance(getattr(group, "commands", None), dict):
            for name, cmd in group.commands.items():
                yield Cmd(gname, name, cmd)
        else:
            yield Cmd("duplexeval", gname, group)


COMMANDS = list(_commands())


def _is_bool(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False))


def _outputs(c: Cmd) -> list[Any]:
    folders = cli_paths.FOLDER_OUTPUTS.get(c.where, {})
    return [p for p in c.command.params if cli._is_path(p) and (cli_paths.is_output(p) or p.name in folders)]


def _inputs(c: Cmd) -> list[Any]:
    outs = {p.name for p in _outputs(c)}
    texts = cli_paths.PATH_TEXT_INPUTS
    return [p for p in c.command.params if p.name not in outs and (cli._is_path(p) or p.name in texts)]


def _argv(c: Cmd, values: dict[str, str], tmp: Path) -> list[str]:
    """The command line with `values` for some parameters and a harmless value for every other required one."""
    argv = list(c.argv_head)
    args: list[str] = []
    for p in c.command.params:
        value = values.get(p.name or "")
        if value is None and getattr(p, "required", False):
            value = str(tmp / f"unused-{p.name}") if cli._is_path(p) else "x"
        if value is None:
            continue
        if p.param_type_name == "argument":
            args.append(value)
        else:
            argv += [next(o for o in p.opts if o.startswith("--")), value]
    return argv + args


def _refused(c: Cmd, values: dict[str, str], tmp: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    with pytest.raises(SystemExit) as ex:
        cli.main(_argv(c, values, tmp))
    err = capsys.readouterr().err
    assert ex.value.code == 2, (c.where, values, err)
    assert err.count("\n") == 1 and err.startswith("duplexeval: error: "), err
    for n in needles:
        assert n in err, (c.where, n, err)


WRITING = [c for c in COMMANDS if _outputs(c)]
PAIRS = [(c, o, i) for c in WRITING for o in _outputs(c) for i in _inputs(c)]


def test_the_walk_finds_the_writing_commands() -> None:
    where = {c.where for c in WRITING}
    for expected in (("fdb", "compare"), ("duplexeval", "report"), ("eot", "compare"), ("eot", "predict"),
                     ("eot", "sweep"), ("fdb", "export"), ("fdb", "import"), ("fdb", "show"), ("fdb", "asr-compare"),
                     ("controller", "evaluate"), ("controller", "calibrate"), ("dialogue", "run"),
                     ("dialogue", "compare"), ("duplexeval", "demo"), ("fdb", "synth")):
        assert expected in where, expected
    assert len(PAIRS) >= 40
    assert {(c.where, i.name) for c, _o, i in PAIRS} >= {(("duplexeval", "report"), "dataset"),
                                                         (("fdb", "synth"), "script")}


def test_every_parameter_that_names_an_output_is_a_path() -> None:
    """A new `--out`/`--json` typed as text would escape the check: every output-like parameter is a path or a flag."""
    for c in COMMANDS:
        for p in c.command.params:
            if cli_paths.is_output(p) and not _is_bool(p):
                assert cli._is_path(p), (c.where, p.name)


@pytest.mark.parametrize(("c", "out", "inp"), PAIRS, ids=[f"{c.group}-{c.name}-{o.name}-{i.name}" for c, o, i in PAIRS])
def test_an_output_that_is_an_input_is_refused(c: Cmd, out: Any, inp: Any, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    olabel, ilabel = cli_paths.option_label(out), cli_paths.option_label(inp)
    src = tmp_path / "data" / "input.json"
    src.parent.mkdir()
    src.write_bytes(CONTENT)
    (tmp_path / "link").mkdir()
    os.link(src, tmp_path / "link" / "hard.json")
    (tmp_path / "link" / "soft.json").symlink_to(src)
    folders = cli_paths.FOLDER_OUTPUTS.get(c.where, {})
    if out.name in folders:  # an output folder: the input folder itself, through a symlink, through `..`
        (tmp_path / "link" / "dir").symlink_to(src.parent)
        for same in (src.parent, tmp_path / "link" / "dir", tmp_path / "link" / ".." / "data"):
            _refused(c, {inp.name: str(src.parent), out.name: str(same)}, tmp_path, capsys, olabel, ilabel,
                     "is the input")
    else:
        for same in (src, tmp_path / "link" / "hard.json", tmp_path / "link" / "soft.json",
                     tmp_path / "link" / ".." / "data" / "input.json"):
            _refused(c, {inp.name: str(src), out.name: str(same)}, tmp_path, capsys, olabel, ilabel, "is the input")
    # an output inside an input folder the command only reads
    owned = cli_paths.OWNED_INPUTS.get(c.where, {}).get(inp.name)
    if owned is None:
        _refused(c, {inp.name: str(src.parent), out.name: str(src.parent / "new")}, tmp_path, capsys,
                 olabel, ilabel, "lies inside the input")
        if out.name not in folders:  # a hard link, outside the folder, of a file inside it
            _refused(c, {inp.name: str(src.parent), out.name: str(tmp_path / "link" / "hard.json")}, tmp_path, capsys,
                     olabel, ilabel, "is a hard link of", "input.json")
    # an input inside an output folder (anywhere when the command writes it whole, else at a name it writes)
    if out.name in folders:
        writes = folders[out.name]
        inner = src if writes is None else src.parent / writes[0]
        inner.write_bytes(CONTENT)
        _refused(c, {inp.name: str(inner), out.name: str(src.parent)}, tmp_path, capsys,
                 olabel, ilabel, "lies inside this output folder")
        assert inner.read_bytes() == CONTENT
    assert src.read_bytes() == CONTENT and not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))


def test_an_owned_tree_takes_outputs_but_not_an_input_at_a_name_it_writes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "summary.json").write_text("{}")
    owned = cli_paths.OWNED_INPUTS[("fdb", "evaluate")]["tree"]
    check_outputs([], [Input("--tree", tree, owned), Input("--icc-gt", tree / "icc_gt_distribution.json")])
    with pytest.raises(Exception, match="--reference-source .*summary.json: lies inside --tree"):
        check_outputs([], [Input("--tree", tree, owned), Input("--reference-source", tree / "summary.json")])
    check_outputs([Output("--cache-dir", tree / "cache", True)], [Input("RUN", tree, ("dialogue.json",))])


def test_eot_sweep_may_write_beside_its_predictions_but_not_over_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "pred.parquet").write_bytes(b"x")
    writes = cli_paths.FOLDER_OUTPUTS[("eot", "sweep")]["out"]
    check_outputs([Output("--out", run, True, writes)], [Input("PREDICTIONS", run / "pred.parquet")])
    (run / "sweep.parquet").write_bytes(b"x")
    with pytest.raises(Exception, match="PREDICTIONS .*sweep.parquet lies inside this output folder"):
        check_outputs([Output("--out", run, True, writes)], [Input("PREDICTIONS", run / "sweep.parquet")])


def test_eot_sweep_s_declared_files_are_the_ones_it_writes() -> None:
    from duplexeval.eot.kinds import SWEEP_FILES

    assert cli_paths.FOLDER_OUTPUTS[("eot", "sweep")]["out"] == SWEEP_FILES


def test_the_write_guard_refuses_an_input_the_declaration_missed(tmp_path: Path) -> None:
    from duplexeval import overwrite
    from duplexeval.errors import InputError
    from duplexeval.jsonio import atomic_write_text, write_json

    src = tmp_path / "in.json"
    src.write_bytes(CONTENT)
    with overwrite.protect([Input("--thing", src)]):
        with pytest.raises(InputError, match="is the input --thing"):
            write_json(tmp_path / "x" / ".." / "in.json", {})
        atomic_write_text(tmp_path / "other.json", "{}")
    write_json(src, {})  # outside a command: no guard
    assert src.read_text() == "{}\n"


def test_the_tables_name_existing_commands_and_parameters() -> None:
    params = {c.where: {p.name for p in c.command.params} for c in COMMANDS}
    for table in (cli_paths.FOLDER_OUTPUTS, cli_paths.OWNED_INPUTS, cli_paths.COMPANIONS):
        for where, names in table.items():
            assert where in params, where
            assert set(names) <= params[where], (where, set(names) - params[where])
    assert all(any(name in p for p in params.values()) for name in cli_paths.PATH_TEXT_INPUTS)


def test_fdb_show_s_default_png_is_refused_inside_the_tree_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    monkeypatch.chdir(tree)
    with pytest.raises(SystemExit) as ex:
        cli.main(["fdb", "show", ".", "candor_turn_taking/1"])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and err == ("duplexeval: error: --out (default) candor_turn_taking-1.png: lies inside "
                                          "the input TREE ., which this command only reads; write the output "
                                          "outside it\n")
    assert list(tree.iterdir()) == []
