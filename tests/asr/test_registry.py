"""`--backend` by name through the shared registry: built-ins, `module.path:Class`, entry points, and the errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duplexeval.asr.registry import ASR_BACKENDS, backend_names, make_backend
from duplexeval.cli import main
from duplexeval.errors import InputError
from duplexeval.units import SAMPLE_RATE
from tests.helpers.fdb import FixtureSample, turn_ann, write_tree
from tests.helpers.plugins import declare_entry_point, plugin_module

# A user's own backend: one word "loud" over the samples above a level (times from the audio itself).
PLUGIN = '''
import numpy as np
from duplexeval.asr.base import Word

class LevelBackend:
    name = "level"

    def __init__(self, threshold=0.1):
        self.threshold = threshold

    def signature(self):
        return {"name": self.name, "options": {"threshold": self.threshold}}

    def transcribe(self, audio16k, offset_s=0.0):
        loud = np.flatnonzero(np.abs(audio16k) > self.threshold)
        if loud.size == 0:
            return []
        return [Word("loud", offset_s + loud[0] / 16000, offset_s + (loud[-1] + 1) / 16000)]

class NotABackend:
    pass
'''


def _tree(tmp_path: Path) -> Path:
    T = 2.0
    audio = np.zeros(int(T * SAMPLE_RATE), np.float32)
    audio[8000:16000] = 0.5  # loud from 0.5 s to 1.0 s
    samples = [FixtureSample("candor_turn_taking", "1", T, annotation=turn_ann(0.5), words=None, audio=audio)]
    return write_tree(tmp_path / "tree", samples, asr=False)


@pytest.fixture()
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return plugin_module(tmp_path, monkeypatch, "my_asr_plugin", PLUGIN)


def test_builtins_and_import_are_registered() -> None:
    assert {"whisper-align", "pocketsphinx", "faster-whisper", "parakeet", "import"} <= set(backend_names())


def test_unknown_backend_lists_what_is_available() -> None:
    with pytest.raises(InputError, match=r"^unknown ASR backend 'nope'; available: faster-whisper, import, parakeet, "
                                         r"pocketsphinx, whisper-align"):
        make_backend("nope")
    with pytest.raises(InputError, match="builds no backend"):
        make_backend("import")


def test_model_for_a_backend_without_one_is_refused(plugin_dir: Path) -> None:
    with pytest.raises(InputError,
                       match=r"model= is not used by the pocketsphinx backend \(its model is in the wheel\)"):
        make_backend("pocketsphinx", model="x")
    with pytest.raises(InputError, match="model= is not used by the my_asr_plugin:LevelBackend backend"):
        make_backend("my_asr_plugin:LevelBackend", model="x")


def test_user_class_by_import_path(plugin_dir: Path) -> None:
    b = make_backend("my_asr_plugin:LevelBackend", device="cpu", threads=2)
    assert b.name == "level" and b.threshold == 0.1
    with pytest.raises(InputError, match="needs a name, signature"):
        make_backend("my_asr_plugin:NotABackend")
    with pytest.raises(InputError, match="has no attribute 'Missing'"):
        make_backend("my_asr_plugin:Missing")


def test_fdb_asr_runs_a_user_backend(tmp_path: Path, plugin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr", str(tree), "--backend", "my_asr_plugin:LevelBackend", "--jobs", "1", "-q"])
    assert e.value.code == 0
    assert "1 ok" in capsys.readouterr().out
    out = json.loads((tree / "candor_turn_taking" / "1" / "output.json").read_text())
    assert out["chunks"] == [{"text": "loud", "timestamp": [0.5, 1.0]}]
    assert json.loads((tree / "asr.json").read_text())["backend"]["name"] == "level"


def test_fdb_asr_unknown_backend_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr", str(tree), "--backend", "nope", "-q"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip().splitlines() == [
        "duplexeval: error: unknown ASR backend 'nope'; available: faster-whisper, import, parakeet, pocketsphinx, "
        "whisper-align"
    ]


def test_entry_point_of_an_installed_package(tmp_path: Path, plugin_dir: Path) -> None:
    """A package that declares `[duplexeval.asr_backends] level = my_asr_plugin:LevelBackend` is usable by name."""
    env = declare_entry_point(plugin_dir, "my-asr-plugin", "duplexeval.asr_backends", "level",
                              "my_asr_plugin:LevelBackend")
    assert ASR_BACKENDS.entry_point_group == "duplexeval.asr_backends"
    tree = _tree(tmp_path)
    run = subprocess.run([sys.executable, "-m", "duplexeval", "fdb", "asr", str(tree), "--backend", "level",
                          "--jobs", "1", "-q"], check=False, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    out = json.loads((tree / "candor_turn_taking" / "1" / "output.json").read_text())
    assert out["chunks"] == [{"text": "loud", "timestamp": [0.5, 1.0]}]
