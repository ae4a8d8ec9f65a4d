"""Reading the official v1.5 layout with the FDB dataset loader: every problem is one line naming the file and the
sample."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.audio import write_wav_pcm16
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.tasks.overlap import synth


def sample(root, subset="user_backchannel", sid="0", T=2.0, ts=(0.5, 0.9), clean=True):
    d = root / subset / sid
    d.mkdir(parents=True, exist_ok=True)
    write_wav_pcm16(d / "input.wav", np.zeros(int(T * 16000), np.float32))
    if clean:
        write_wav_pcm16(d / "clean_input.wav", np.zeros(int(T * 16000), np.float32))
    (d / "metadata.json").write_text(
        json.dumps({"context_text": "q", "current_turn_text": "yeah", "timestamps": list(ts)}))
    return d


def test_reads_v1_5_folder_either_depth_in_order(tmp_path):
    for sid in ("10", "2", "a"):
        sample(tmp_path / "v1_5", sid=sid)
    sample(tmp_path / "v1_5" / "talking_to_other", subset="talking_to_other", sid="1")  # doubled depth
    got = load_dataset(tmp_path).samples()
    assert [s.key for s in got] == ["user_backchannel/2", "user_backchannel/10", "user_backchannel/a",
                                    "talking_to_other/1"]
    assert got[0].record.end == 0.9 and got[0].T == 2.0 and (got[0].dir / "clean_input.wav").is_file()


@pytest.mark.parametrize("fault, message", [
    ("no_clean", "user_backchannel/0: missing clean_input.wav"),
    ("late", "overlap ends at 3.0 s, after the end of input.wav"),
    ("reversed", "overlap start 1.5 is after its end 1.0"),
    ("text", "current_turn_text"),
    ("one_time", "timestamps"),
    ("no_meta", "missing metadata.json"),
])
def test_bad_samples_are_one_line_errors(tmp_path, fault, message):
    d = sample(tmp_path, clean=fault != "no_clean",
               ts={"late": (1.0, 3.0), "reversed": (1.5, 1.0)}.get(fault, (0.5, 0.9)))
    md = json.loads((d / "metadata.json").read_text())
    if fault == "text":
        md["current_turn_text"] = 3
    if fault == "one_time":
        md["timestamps"] = [1.0]
    (d / "metadata.json").write_text(json.dumps(md))
    if fault == "no_meta":
        (d / "metadata.json").unlink()
    with pytest.raises(InputError) as exc:
        load_dataset(tmp_path).samples()
    text = str(exc.value)
    assert message in text and "\n" not in text and "user_backchannel/0" in text


def test_unsafe_id_and_near_miss_folder_are_refused(tmp_path):
    sample(tmp_path, sid="x y")
    with pytest.raises(InputError, match="not allowed"):
        load_dataset(tmp_path).samples()
    (tmp_path / "user_backchannel" / "x y").rename(tmp_path / "user_backchannel" / "0")
    (tmp_path / "User-Backchannel").mkdir()
    with pytest.raises(InputError, match="differs from the subset 'user_backchannel' only in case"):
        load_dataset(tmp_path).samples()
    with pytest.raises(InputError, match="no FDB subset folders"):
        load_dataset(tmp_path / "user_backchannel").samples()


def test_synth_is_deterministic_and_its_timestamps_are_the_event(tmp_path):
    a = synth.make_stimulus("talking_to_other", 3, seed=5)
    b = synth.make_stimulus("talking_to_other", 3, seed=5)
    assert np.array_equal(a.input, b.input) and a.metadata == b.metadata
    s, e = a.metadata.timestamps
    diff = np.nonzero(a.input != a.clean_input)[0] / 16000
    assert diff.min() <= s + 0.02 and diff.max() >= e - 0.02  # the event is exactly what input adds to clean
    assert a.input.shape == a.clean_input.shape
    level = np.abs(a.input - a.clean_input).max() / np.abs(a.clean_input).max()
    assert level < 0.7  # the aside is quieter than the user
    root = synth.write_set(tmp_path / "set", synth.small(1))
    got = load_dataset(root).samples()
    assert [s.subset for s in got] == list(synth.SUBSET_ORDER)
    assert json.loads((root / synth.DATASET_FILE).read_text())["declared"] == synth.small(1)


def test_fdb_synth_v15_command(tmp_path, capsys):
    from duplexeval.cli import main

    out = tmp_path / "v15"
    with pytest.raises(SystemExit) as ok:
        main(["fdb", "synth", "--v15", "1", "--out", str(out), "-q"])
    assert ok.value.code == 0
    assert [s.key for s in load_dataset(out).samples()] == [f"{s}/0" for s in synth.SUBSET_ORDER]
    with pytest.raises(SystemExit) as again:
        main(["fdb", "synth", "--v15", "1", "--out", str(out), "-q"])
    assert again.value.code == 2
    assert "not empty; pass --force" in capsys.readouterr().err
