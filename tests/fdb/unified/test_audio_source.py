"""The unified VAD reads each output through its opened sample's audio source: hash-checked when read, not by path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from duplexeval import audio
from duplexeval.fdb import unified
from duplexeval.fdb.sample import SampleAudio
from duplexeval.fdb.tasks.interruption.unified import InterruptionInput
from duplexeval.fdb.unified.load import load_tree
from duplexeval.fdb.verified import VerifyError
from duplexeval.jsonio import read_json
from tests.helpers.fdb import FixtureSample, interrupt_ann, place, turn_ann, write_tree

UI, TT = "synthetic_user_interruption", "candor_turn_taking"


def _tree(root: Path) -> Path:
    rng = np.random.default_rng(7)
    noise = (rng.standard_normal(16000) * 0.05).astype(np.float32)
    return write_tree(root, [
        FixtureSample(UI, "i1", 6.0, interrupt_ann(2.0, 3.0), [("ok", 3.5, 3.8)], audio=place(6.0, [(1.0, noise)])),
        FixtureSample(UI, "i2", 5.0, interrupt_ann(1.5, 2.5), [("so", 2.6, 2.9)]),
        FixtureSample(TT, "t1", 5.0, turn_ann(2.0), [("yes", 2.5, 2.8)]),
    ])


def test_the_vad_gets_its_audio_through_the_opened_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "tree")
    manifest = read_json(root / "manifest.json")
    recorded = {f"{e['subset']}/{e['id']}": e["files"]["output.wav"] for e in manifest["samples"]}
    loaded = load_tree(root)
    inputs = [ls.input for ls in loaded.samples if isinstance(ls.input, InterruptionInput)]
    # the opened sample hands on a source (a path and the hash manifest.json records), not audio
    assert [(i.audio.path, i.audio.sha256) for i in inputs] == [
        (root / UI / k / "output.wav", recorded[f"{UI}/{k}"]) for k in ("i1", "i2")]
    reads: list[Path] = []
    real = SampleAudio.read_16k

    def read_16k(self: SampleAudio) -> np.ndarray:
        reads.append(self.path)
        return real(self)

    monkeypatch.setattr(SampleAudio, "read_16k", read_16k)
    stored: list[Path] = []
    monkeypatch.setattr(audio, "read_audio_16k_stored",
                        lambda path, raw=None: stored.append(Path(path)) or _decode(path, raw))
    unified.score(root, write=False, jobs=1)
    # each interruption output read once, by its source, and decoded from the bytes the source checked
    assert sorted(reads) == [root / UI / "i1" / "output.wav", root / UI / "i2" / "output.wav"]
    assert sorted(stored) == sorted(reads)


def _decode(path: str | Path, raw: bytes | None) -> np.ndarray:
    assert raw is not None, f"{path}: read by path, not from the source's checked bytes"
    data, sr = audio.read_audio_channels(path, raw)
    assert sr == 16000 and data.shape[1] == 1
    return audio.to_pcm16(data[:, 0])


def test_an_output_changed_after_opening_is_refused_by_the_vad(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    loaded = load_tree(root)  # opened: output.wav checked against manifest.json here
    wav = root / UI / "i2" / "output.wav"
    audio.write_wav_pcm16(wav, place(5.0, [(0.5, np.full(800, 0.1, np.float32))]))  # same length, other bytes
    with pytest.raises(VerifyError, match=rf"{wav}: sample {UI}/i2: file differs from manifest.json"):
        unified.rows_and_blocks(loaded.samples, loaded.manifest.declared,
                                lambda files: unified._segments(files, None, 1))
