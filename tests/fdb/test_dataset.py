"""Dataset loading: real FDB v1.0 folders at both nesting depths, own sample rates, validation errors, synth/demo
sets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tasks.backchannel.groundtruth import ICC_GT_FILE, read_icc_gt
from duplexeval.fdb.tree import SUBSETS


def _wav(path: Path, seconds: float, sr: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(round(seconds * sr))) / sr
    sf.write(path, (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sr, subtype="PCM_16")


def _json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def make_fdb(root: Path, nested: bool) -> Path:
    """A tiny FDB v1.0-like folder: one or two samples per subset, inputs at 16/24/48 kHz."""

    def sdir(subset: str, sid: str) -> Path:
        return root / subset / subset / sid if nested else root / subset / sid

    d = sdir("candor_pause_handling", "1")
    _wav(d / "input.wav", 4.72, 48000)
    _json(d / "pause.json", [{"text": "[PAUSE]", "timestamp": [3.32, 4.0]}])
    d = sdir("synthetic_pause_handling", "2")
    _wav(d / "input.wav", 6.0, 24000)
    _json(d / "pause.json",
          [{"text": "[PAUSE]", "timestamp": [1.0, 2.0]}, {"text": "[PAUSE]", "timestamp": [3.0, 3.5]}])
    for sid in ("10", "2"):
        d = sdir("candor_turn_taking", sid)
        _wav(d / "input.wav", 10.4, 16000)
        _json(d / "turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [2.01, 2.40]}])
    d = sdir("synthetic_user_interruption", "1")
    _wav(d / "input.wav", 28.16, 16000)
    _json(d / "interrupt.json", [{"context": "tell me", "interrupt": "wait", "timestamp": [10.53, 13.14]}])
    for sid in ("0", "1"):
        _wav(sdir("icc_backchannel", sid) / "input.wav", 3.0, 16000)
    _json(root / "icc_gt_distribution.json", {"0": [0.25, 0.75], "1": [0.5, 0.5]})
    return root


@pytest.mark.parametrize("nested", [False, True])
def test_real_layout_either_depth(tmp_path, nested):
    ds = load_dataset(make_fdb(tmp_path / "fdb", nested))
    assert ds.kind == "fdb-v1.0"
    assert ds.declared == {k: v.declared for k, v in SUBSETS.items() if task_of(k).dataset.release == "fdb-v1.0"}
    assert [s.key for s in ds.samples()] == [
        "candor_pause_handling/1", "synthetic_pause_handling/2", "candor_turn_taking/2", "candor_turn_taking/10",
        "synthetic_user_interruption/1", "icc_backchannel/0", "icc_backchannel/1",
    ]  # fmt: skip
    p48 = ds.samples("candor_pause_handling")[0]
    assert (p48.sr, p48.T, p48.n_samples) == (48000, pytest.approx(4.72), 226560)
    assert p48.annotation[0]["timestamp"] == [3.32, 4.0] and p48.annotation_path.name == "pause.json"
    p24 = ds.samples("synthetic_pause_handling")[0]
    assert (p24.sr, p24.T) == (24000, 6.0)
    x = p24.read_input_16k()
    assert x.dtype == np.float32 and x.shape == (96000,)
    bc = ds.samples("icc_backchannel")
    assert all(s.annotation_path is None for s in bc)
    assert read_icc_gt(ds.file(ICC_GT_FILE)) == {"0": [0.25, 0.75], "1": [0.5, 0.5]}
    assert ds.samples("synthetic_pause_handling")[0].dir.parent.name == "synthetic_pause_handling"
    assert ds.subsets() == [k for k in SUBSETS if task_of(k).dataset.release == "fdb-v1.0"]


def _edit(root: Path, rel: str, obj) -> Path:
    p = root / rel
    p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return p


@pytest.mark.parametrize(
    "rel, content, match",
    [
        ("candor_pause_handling/1/pause.json", [{"text": "[PAUSE]"}], "item 0 has no 'timestamp'"),
        ("candor_pause_handling/1/pause.json", [{"text": "[PAUSE]", "timestamps": [1, 2]}], "found 'timestamps'"),
        ("candor_pause_handling/1/pause.json", [{"text": "[PAUSE]", "timestamp": [4.0, 3.32]}],
         "start 4.0 after end 3.32"),
        ("synthetic_pause_handling/2/pause.json",
         [{"text": "[PAUSE]", "timestamp": [3.0, 3.5]}, {"text": "[PAUSE]", "timestamp": [1.0, 2.0]}], "not sorted"),
        ("synthetic_pause_handling/2/pause.json", [{"text": "[PAUSE]", "timestamp": [1.0, "2"]}], "finite numbers"),
        ("synthetic_pause_handling/2/pause.json", [{"text": "[PAUSE]", "timestamp": [1.0, 7.0]}],
         "after the input's end"),
        ("synthetic_pause_handling/2/pause.json", [], "non-empty JSON list"),
        ("synthetic_pause_handling/2/pause.json", "{not json", "invalid JSON"),
        ("candor_turn_taking/2/turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [11.0, 11.4]}],
         "after the input's end"),
        ("candor_turn_taking/2/turn_taking.json", [{"timestamp": [1, 2]}, {"timestamp": [3, 4]}], "exactly one"),
        ("synthetic_user_interruption/1/interrupt.json", [{"interrupt": "wait", "timestamp": [10.5, 13.1]}],
         "'context'"),
        ("synthetic_user_interruption/1/interrupt.json",
         [{"context": "a", "interrupt": "b", "timestamp": [13.1, 10.5]}], "after end"),
    ],
)
def test_bad_annotation_one_line_naming_file_and_sample(tmp_path, rel, content, match):
    root = make_fdb(tmp_path / "fdb", nested=False)
    path = _edit(root, rel, content)
    with pytest.raises(InputError, match=match) as err:
        load_dataset(root)
    msg = str(err.value)
    subset, sid = rel.split("/")[:2]
    assert "\n" not in msg and str(path) in msg and f"sample {subset}/{sid}" in msg


def test_structural_errors(tmp_path):
    root = make_fdb(tmp_path / "a", nested=True)
    (root / "candor_turn_taking/candor_turn_taking/2/input.wav").unlink()
    with pytest.raises(InputError, match=r"candor_turn_taking/2.*missing input.wav"):
        load_dataset(root)

    root = make_fdb(tmp_path / "b", nested=False)
    (root / "candor_pause_handling/1/pause.json").unlink()
    with pytest.raises(InputError, match=r"sample candor_pause_handling/1: missing pause.json"):
        load_dataset(root)

    root = make_fdb(tmp_path / "c", nested=False)
    _wav(root / "icc_backchannel/x7/input.wav", 1.0, 16000)
    with pytest.raises(InputError, match="digit strings"):
        load_dataset(root)

    root = make_fdb(tmp_path / "d", nested=False)
    _wav(root / "icc_backchannel/5/input.wav", 1.0, 16000)
    with pytest.raises(InputError, match=r"no ground truth for sample icc_backchannel/5"):
        load_dataset(root)

    root = make_fdb(tmp_path / "e", nested=False)
    _json(root / "icc_gt_distribution.json", {"0": [0.5, float("nan")], "1": [1.0]})
    with pytest.raises(InputError, match="icc_backchannel/0"):
        load_dataset(root)

    root = make_fdb(tmp_path / "f", nested=False)
    _wav(root / "candor_turn_taking/bad id/input.wav", 1.0, 16000)
    with pytest.raises(InputError, match="not allowed"):
        load_dataset(root)

    root = make_fdb(tmp_path / "g", nested=False)
    (root / "candor_pause_handling/1/input.wav").write_bytes(b"RIFF junk")
    with pytest.raises(InputError, match="cannot read audio"):
        load_dataset(root)

    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no FDB subset folders"):
        load_dataset(tmp_path / "empty")
    with pytest.raises(InputError, match="not found"):
        load_dataset(tmp_path / "nowhere")


def test_synth_set_declares_what_dataset_json_says(tmp_path):
    from duplexeval.fdb import synth as S

    sc = S.parse_script(
        {
            "name": "mini",
            "samples": [
                {"subset": "candor_turn_taking", "id": 1, "text": "Are you there?"},
                {"subset": "synthetic_pause_handling", "id": 4, "parts": ["So I was", {"pause": 1.0}, "thinking."]},
            ],
        },
        "mini.yaml",
    )
    root = S.synthesize_dataset(sc, tmp_path / "mini")
    ds = load_dataset(root)
    assert (ds.name, ds.kind) == ("mini", "synth")
    assert ds.declared == {"synthetic_pause_handling": 1, "candor_turn_taking": 1}
    (tt,) = ds.samples("candor_turn_taking")
    assert tt.sr == 16000 and tt.T == pytest.approx(json.loads((root / "dataset.json").read_text())["samples"][1]["T"],
                                                    abs=1e-6)
    assert ds.samples("icc_backchannel") == [] and ds.file(ICC_GT_FILE) is None
    with pytest.raises(InputError, match="unknown subset"):
        ds.samples("nope")


def test_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))
    ds = load_dataset("demo")
    assert ds.name == "demo" and ds.kind == "synth"
    assert sum(ds.declared.values()) == len(ds.samples()) == 14
    assert ds.root.parent == tmp_path / "cache"
    gt = read_icc_gt(ds.file(ICC_GT_FILE))
    assert set(gt) == {s.id for s in ds.samples("icc_backchannel")}
    for s in ds.samples("synthetic_user_interruption"):
        (ann,) = s.annotation
        assert s.T - ann["timestamp"][1] == pytest.approx(15.0, abs=1e-3)
