"""`fdb replay` on a wire trace that is broken (non-finite times, an audio rate of 0, a folder where the trace
belongs): one line naming the file, the line and the problem, exit 2; never a traceback, never a pass."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from duplexeval.cli import main
from duplexeval.errors import InputError
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.replay_stage import replay
from tests.helpers.net import SERVED, user_turn
from tests.helpers.systems import Dataset, add_sample

LOOP = "loopback:protocol=ws-pcm,serve=" + SERVED.replace(",", ";") + ",in_process=true"
SAMPLE = Path("candor_turn_taking") / "1"


@pytest.fixture(scope="module")
def network_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    ds = Dataset("replay-test", root / "ds")
    pcm = user_turn(2.4, ((0.2, 0.8),)).astype("float32") / 32768.0
    add_sample(ds, "candor_turn_taking", "1", pcm, [{"text": "[TURN-TAKING]", "timestamp": [0.8, 1.2]}])
    tree = root / "tree"
    export(LOOP, ds, tree, progress=False)
    replay(tree, check=True)  # the good tree replays byte for byte
    return tree


def _copy(tree: Path, tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "tree"
    shutil.copytree(tree, out)
    return out, out / SAMPLE / "trace.jsonl"


def _edit_first(path: Path, direction: str, pattern: str, repl: str) -> int:
    """Edit the first record of `direction` whose text matches `pattern`; returns its line number."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if f'"dir":"{direction}"' in line and re.search(pattern, line):
            lines[i] = re.sub(pattern, repl, line, count=1)
            path.write_text("\n".join(lines) + "\n")
            return i + 1
    raise AssertionError(f"no {direction} record matches {pattern}")


@pytest.mark.parametrize(("direction", "pattern", "repl", "problem"), [
    ("recv", r'"t":[-0-9.e]+', '"t":NaN', "NaN is not a number JSON allows"),
    ("recv", r'"t":[-0-9.e]+', '"t":Infinity', "Infinity is not a number JSON allows"),
    ("send", r'"t_done":[-0-9.e]+', '"t_done":-Infinity', "-Infinity is not a number JSON allows"),
    ("recv", r'"t":[-0-9.e]+', '"t":1e300', "t must be a finite number of seconds, got 1e+300"),
    ("recv", r'"audio":\[(\d+),(\d+),\d+\]', r'"audio":[\1,\2,0]', "audio rate 0 Hz is not in 1..768000"),
    ("recv", r'"audio":\[(\d+),(\d+),\d+\]', r'"audio":[\1,\2,16000.5]', "is not [offset, bytes, rate] integers"),
])
def test_a_broken_wire_trace_is_one_line(network_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         direction: str, pattern: str, repl: str, problem: str) -> None:
    tree, wire = _copy(network_tree, tmp_path)
    lineno = _edit_first(wire, direction, pattern, repl)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    for check in (["--check"], []):
        with pytest.raises(SystemExit) as exc:
            main(["fdb", "replay", str(tree), *check])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"duplexeval: error: {wire}: line {lineno}: ") and problem in err and err.count("\n") == 1
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before  # nothing written


@pytest.mark.parametrize("replace", ["folder", "missing"])
def test_a_network_sample_without_a_readable_trace_fails_the_check(network_tree: Path, tmp_path: Path,
                                                                   replace: str) -> None:
    tree, wire = _copy(network_tree, tmp_path)
    wire.unlink()
    if replace == "folder":
        wire.mkdir()
    what = "not a readable file" if replace == "folder" else "missing"
    with pytest.raises(InputError, match=rf"trace.jsonl: {what} \(sample candor_turn_taking/1 of a network export"):
        replay(tree, check=True)


@pytest.mark.parametrize("name", ["../../outside.pcm", "/etc/passwd", "sub/trace.pcm", "..", 7])
def test_a_trace_header_cannot_name_a_sidecar_outside_its_folder(network_tree: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 name: object) -> None:
    tree, wire = _copy(network_tree, tmp_path)
    (tmp_path / "outside.pcm").write_bytes((tree / SAMPLE / "trace.pcm").read_bytes())  # a readable file out there
    lines = wire.read_text().splitlines()
    lines[0] = re.sub(r'"pcm":"[^"]*"', '"pcm":' + json.dumps(name), lines[0], count=1)
    assert '"pcm":' + json.dumps(name) in lines[0]
    wire.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["fdb", "replay", str(tree), "--check"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"duplexeval: error: {wire}: line 1: audio sidecar name ") and err.count("\n") == 1
