"""`duplexeval fdb asr` on the command line: the timing line, `-q`, and `--declare` per subset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.fdb import FixtureSample, pause_ann, turn_ann, write_tree


def _two_subset_tree(root: Path) -> Path:
    return write_tree(root, [
        FixtureSample("candor_turn_taking", "1", 3.0, annotation=turn_ann(1.0), words=[("fine", 1.5, 1.8)]),
        FixtureSample("synthetic_pause_handling", "1", 4.0, annotation=pause_ann((1.0, 2.0)), words=[("ok", 2.5, 2.9)]),
    ], asr=False)

def test_asr_quiet_and_timing_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _two_subset_tree(tmp_path / "t")
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x"], capsys)
    assert rc == 0, err
    assert "asr: done in " in err and "7.0 s of audio" in err and "x real time" in err
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x", "-q", "--force"], capsys)
    quiet_err = "asr: exit 0: 2 eligible samples' transcriptions, none failed\n"  # -q keeps only the status line
    assert rc == 0 and err == quiet_err and "2 ok" in out
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x", "--quiet", "--force"],
                           capsys)
    assert rc == 0 and err == quiet_err

def test_declare_per_subset_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _two_subset_tree(tmp_path / "t")
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q",
                             "--declare", "candor_turn_taking=parakeet-tdt-0.6b-v2", "--declare", "whisperx"], capsys)
    assert rc == 0, err
    backend = json.loads((tree / "asr.json").read_text())["backend"]
    assert backend["per_subset"] == {"candor_turn_taking": "parakeet-tdt-0.6b-v2",
                                     "synthetic_pause_handling": "whisperx"}
    assert backend["name"] == "candor_turn_taking=parakeet-tdt-0.6b-v2; synthetic_pause_handling=whisperx"
    # one name for every subset keeps the plain signature
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q", "--force", "--declare", "whisperx"],
                            capsys)
    backend = json.loads((tree / "asr.json").read_text())["backend"]
    assert rc == 0 and backend["name"] == "whisperx" and "per_subset" not in backend

def test_declare_per_subset_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.fdb.asr_declare import parse_declare

    tree = _two_subset_tree(tmp_path / "t")
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q",
                             "--declare", "candor_turn_taking=parakeet"], capsys)
    assert rc == 2 and "no ASR named for subset synthetic_pause_handling" in err and err.count("\n") == 1
    assert not (tree / "asr.json").exists()
    with pytest.raises(InputError, match="unknown subset 'candor'"):
        parse_declare(["candor=x"])
    with pytest.raises(InputError, match="two names"):
        parse_declare(["a", "b"])
