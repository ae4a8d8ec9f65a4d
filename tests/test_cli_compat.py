"""Old spellings of the command line still work for one release: each is rewritten to the new grammar with a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duplexeval import cli
from duplexeval.cli_compat import DEPRECATED, rewrite


@pytest.fixture(scope="module")
def tree() -> Any:
    return cli.command_tree()


def test_the_tree_option_becomes_the_positional(tree: Any) -> None:
    args, notes = rewrite(["fdb", "score", "--tree", "T", "-q"], tree)
    assert args == ["fdb", "score", "--quiet", "T"]
    assert notes == ["--tree is deprecated; use the positional TREE, e.g. `duplexeval fdb score TREE`"]
    assert rewrite(["fdb", "asr", "--tree=T"], tree)[0] == ["fdb", "asr", "T"]


def test_the_new_grammar_is_left_alone(tree: Any) -> None:
    for line in (["fdb", "score", "T", "--json", "-"], ["fdb", "compare", "A", "B", "--json", "c.json"],
                 ["dialogue", "run", "--system", "half-duplex:delay_ms=800", "--cases", "c", "--out", "r"],
                 ["--version"], ["fdb", "--help"], ["demo", "-q"]):
        assert rewrite(line, tree) == (line, [])


def test_a_bare_json_flag_prints_on_stdout(tree: Any, tmp_path: Path) -> None:
    assert rewrite(["fdb", "score", "T", "--json"], tree)[0] == ["fdb", "score", "--json", "-", "T"]
    assert rewrite(["fdb", "score", "--json", "-q", "T"], tree)[0] == ["fdb", "score", "--json", "-", "--quiet", "T"]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    args, notes = rewrite(["fdb", "compare", "--json", str(a), str(b)], tree)  # a tree follows: the old flag
    assert args == ["fdb", "compare", "--json", "-", str(a), str(b)] and notes == [
        "--json without a value is deprecated; use --json -"]
    args, _ = rewrite(["fdb", "asr-compare", str(a), str(b), "--out", "x.json"], tree)
    assert args == ["fdb", "asr-compare", "--json", "x.json", str(a), str(b)]


def test_separate_parameter_options_join_the_spec(tree: Any) -> None:
    args, notes = rewrite(["dialogue", "run", "--system", "half-duplex", "--param", "delay_ms=800", "--param", "x=1"],
                          tree)
    assert args == ["dialogue", "run", "--system", "half-duplex:delay_ms=800,x=1"]
    assert notes == ["--param is deprecated; use --system NAME:key=value,..."]
    args, _ = rewrite(["eot", "predict", "spans.jsonl", "-d", "silero:window_ms=300", "--option", "x=2", "--out", "p"],
                      tree)
    # the detector was given with -d, its short form: the old --option still finds it
    assert args == ["eot", "predict", "--spans", "spans.jsonl", "--detector", "silero:window_ms=300,x=2", "--out", "p"]


def test_asr_model_and_device_join_the_backend(tree: Any) -> None:
    args, _ = rewrite(["fdb", "asr", "T", "--model", "/m", "--device", "cuda"], tree)
    assert args == ["fdb", "asr", "--backend", "whisper-align:model=/m,device=cuda", "T"]
    args, _ = rewrite(["fdb", "asr", "T", "--backend", "parakeet", "--model", "x.nemo"], tree)
    assert args == ["fdb", "asr", "--backend", "parakeet:model=x.nemo", "T"]


def test_judge_settings_join_the_judge_or_are_dropped_where_they_did_nothing(tree: Any) -> None:
    args, _ = (
        rewrite(["fdb", "evaluate", "T", "--judge", "openai", "--base-url", "http://h:8000/v1", "--judge-model", "m"],
                tree))
    assert args == ["fdb", "evaluate", "--judge", "openai:model=m,base_url=http://h:8000/v1", "T"]
    args, notes = rewrite(["fdb", "evaluate", "T", "--judge-model", "m"], tree)
    assert args == ["fdb", "evaluate", "T"] and notes == [
        "--judge-model is deprecated; use --judge openai:model=... (ignored: it had no effect without --judge)"]


def test_positional_controller_and_out_become_options(tree: Any) -> None:
    args, notes = (
        rewrite(["controller", "run", "silence", "data", "--conversations", "m.jsonl", "--option", "timeout_s=0.8"],
                tree))
    assert args == ["controller", "run", "--controller", "silence:timeout_s=0.8", "--out", "data", "--conversations",
                    "m.jsonl"]
    assert len(notes) == 3
    assert rewrite(["controller", "demo", "d"], tree)[0] == ["controller", "demo", "--out", "d"]
    args, _ = rewrite(["controller", "bench", "silero", "--option", "threshold=0.6"], tree)
    assert args == ["controller", "bench", "silero:threshold=0.6"]


def test_a_flag_that_now_does_nothing_is_dropped(tree: Any) -> None:
    args, notes = rewrite(["eot", "demo", "--no-force", "--out", "d"], tree)
    assert args == ["eot", "demo", "--out", "d"] and notes == [
        "--no-force is deprecated; use nothing (a rerun reuses its own files; --force redoes them)"]


def test_every_old_spelling_names_a_command_that_exists(tree: Any) -> None:
    names = set()
    for group_name, group in tree.commands.items():
        for name in getattr(group, "commands", {}) or {}:
            names.add(f"{group_name} {name}")
        names.add(group_name)
    for old in DEPRECATED:
        assert set(old.commands) <= names, old


def test_main_prints_the_note_and_runs_the_new_spelling(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["fdb", "replay", "--tree", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.splitlines()[0] == ("duplexeval: note: --tree is deprecated; use the positional TREE, e.g. `duplexeval "
                                   "fdb score TREE`")
    assert "missing" in err.splitlines()[1]
