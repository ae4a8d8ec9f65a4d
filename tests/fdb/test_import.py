"""`fdb import`: adopt outputs made elsewhere - missing, too short, 24 kHz, output.json carried along."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.import_stage import import_outputs
from duplexeval.fdb.tree import load_manifest
from tests.helpers.cli import run_cli
from tests.helpers.systems import Dataset, small_dataset


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return small_dataset(tmp_path_factory.mktemp("dataset"))


def tone(seconds: float, sr: int, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(round(seconds * sr))) / sr
    return (amp * np.sin(2 * np.pi * 300 * t)).astype(np.float32)


def make_outputs(ds: Dataset, root: Path) -> Path:
    """pause/1: 24 kHz, 50 ms long; tt/1: 16 kHz exact + output.json; tt/2: 0.5 s short; int/1: missing;
    backchannel/1: 16 kHz, 30 ms short."""
    by = {(s.subset, s.id): s for s in ds.rows}

    def put(key: tuple[str, str], audio: np.ndarray, sr: int) -> Path:
        d = root / key[0] / key[1]
        d.mkdir(parents=True, exist_ok=True)
        sf.write(str(d / "output.wav"), audio, sr, subtype="PCM_16")
        return d

    p = by[("synthetic_pause_handling", "1")]
    put(("synthetic_pause_handling", "1"), tone(p.T + 0.05, 24000), 24000)
    t1 = by[("candor_turn_taking", "1")]
    d = put(("candor_turn_taking", "1"), tone(t1.T, 16000, amp=0.95), 16000)  # loud: exposes any rescaling
    (d / "output.json").write_bytes(b'{"text": "hi", "chunks": [{"text": "hi", "timestamp": [1.0, 1.2]}]}\n')
    put(("candor_turn_taking", "2"), tone(by[("candor_turn_taking", "2")].T - 0.5, 16000), 16000)
    put(("icc_backchannel", "1"), tone(by[("icc_backchannel", "1")].T - 0.03, 16000), 16000)
    return root


def test_import_keeps_every_sample_with_its_reason(ds: Dataset, tmp_path: Path) -> None:
    outputs = make_outputs(ds, tmp_path / "outputs")
    res = import_outputs(ds, outputs, tmp_path / "t", name="my-model", progress=False)
    manifest, msha = load_manifest(tmp_path / "t")
    assert msha == res.manifest_sha256
    got = {(e.subset, e.id): e for e in manifest.samples}
    assert len(got) == len(ds.rows)  # nothing dropped
    assert got[("synthetic_user_interruption", "1")].reasons == ["missing_output"]
    assert got[("candor_turn_taking", "2")].reasons == ["length_mismatch"]
    assert got[("candor_turn_taking", "2")].extra["import"]["length_fix_samples"] == 8000
    for key in [("synthetic_pause_handling", "1"), ("candor_turn_taking", "1"), ("icc_backchannel", "1")]:
        e = got[key]
        assert e.eligible, e.reasons
        wav = tmp_path / "t" / key[0] / key[1] / "output.wav"
        info = sf.info(str(wav))
        assert (info.samplerate, info.frames, info.subtype) == (16000, round(e.T * 16000), "PCM_16")
        assert e.files["output.wav"] == hashlib.sha256(wav.read_bytes()).hexdigest()
    # the 24 kHz file was resampled (not reinterpreted) and cropped by 50 ms
    e = got[("synthetic_pause_handling", "1")]
    assert e.extra["import"]["source_sample_rate"] == 24000
    assert e.extra["import"]["length_fix_samples"] == -800
    audio, _ = sf.read(str(tmp_path / "t" / "synthetic_pause_handling" / "1" / "output.wav"), dtype="float32")
    ref = soxr.resample(tone(e.T + 0.05, 24000), 24000, 16000, quality="HQ")[: len(audio)]
    assert np.max(np.abs(audio[100:-100] - ref[100:-100])) < 2e-4
    # a 16 kHz PCM16 output of the right length passes through sample for sample
    a, _ = sf.read(str(outputs / "candor_turn_taking" / "1" / "output.wav"), dtype="int16")
    b, _ = sf.read(str(tmp_path / "t" / "candor_turn_taking" / "1" / "output.wav"), dtype="int16")
    assert np.array_equal(a, b)
    # output.json comes along byte for byte; annotations too
    src = outputs / "candor_turn_taking" / "1" / "output.json"
    assert (tmp_path / "t" / "candor_turn_taking" / "1" / "output.json").read_bytes() == src.read_bytes()
    assert got[("candor_turn_taking", "1")].extra["import"]["output_json"] is True
    ann = ds.samples("candor_turn_taking")[1].annotation_path
    assert (tmp_path / "t" / "candor_turn_taking" / "2" / "turn_taking.json").read_bytes() == ann.read_bytes()
    assert manifest.extra["system"] == {"name": "import", "params": {"outputs": "outputs", "label": "my-model"},
                                        "version": manifest.extra["system"]["version"]}


def test_import_is_deterministic_resumable_and_refuses_other_runs(ds: Dataset, tmp_path: Path) -> None:
    outputs = make_outputs(ds, tmp_path / "outputs")
    import_outputs(ds, outputs, tmp_path / "a", progress=False)
    import_outputs(ds, outputs, tmp_path / "b", progress=False)
    files = lambda t: {str(p.relative_to(t)): p.read_bytes() for p in sorted(t.rglob("*")) if p.is_file()}  # noqa: E731
    assert files(tmp_path / "a") == files(tmp_path / "b")
    # the missing output arrives: only that sample is redone
    d = outputs / "synthetic_user_interruption" / "1"
    d.mkdir(parents=True)
    T = ds.samples("synthetic_user_interruption")[0].T
    sf.write(str(d / "output.wav"), tone(T, 16000), 16000, subtype="PCM_16")
    res = import_outputs(ds, outputs, tmp_path / "a", progress=False)
    assert (res.ran, res.reused) == (1, 4)
    manifest, _ = load_manifest(tmp_path / "a")
    assert all(e.eligible for e in manifest.samples if e.subset == "synthetic_user_interruption")
    with pytest.raises(RefusalError, match="different system"):
        import_outputs(ds, outputs, tmp_path / "a", name="other", progress=False)
    with pytest.raises(InputError, match="must be a folder"):
        import_outputs(ds, tmp_path / "nowhere", tmp_path / "c", progress=False)
    json.loads((tmp_path / "a" / "manifest.json").read_text())


def test_outputs_written_inside_the_dataset_folders_are_found(tmp_path: Path) -> None:
    ds = small_dataset(tmp_path / "ds")
    s = ds.samples("candor_turn_taking")[0]
    # official scripts: next to input.wav
    sf.write(str(s.dir / "output.wav"), tone(s.T, 24000), 24000, subtype="PCM_16")
    res = import_outputs(ds, ds.root, tmp_path / "t", subsets=["candor_turn_taking"], progress=False)
    assert res.counts == {"candor_turn_taking": {"selected": 2, "eligible": 1}}
    manifest, _ = load_manifest(tmp_path / "t")
    assert [e.reasons for e in manifest.samples] == [[], ["missing_output"]]


def test_no_output_at_all_is_a_wrong_folder_not_a_tree_of_missing_samples(ds: Dataset, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no output.wav for any of the 5 selected samples"):
        import_outputs(ds, tmp_path / "empty", tmp_path / "t", progress=False)
    assert not (tmp_path / "t").exists()


def test_cli_import(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.import_stage as imp
    from duplexeval.cli import main

    monkeypatch.setattr(imp, "resolve_dataset", lambda d: ds)
    outputs = make_outputs(ds, tmp_path / "outputs")
    with pytest.raises(SystemExit) as ok:
        main(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "t"), "-q",
              "--min-eligible", "0"])
    assert ok.value.code == 0
    assert "import: 3/5 samples eligible" in capsys.readouterr().out
    with pytest.raises(SystemExit) as err:
        main(["fdb", "import", "--dataset", "x", "--outputs", str(tmp_path / "nope"), "--out", str(tmp_path / "u")])
    assert err.value.code == 2
    assert capsys.readouterr().err.startswith("duplexeval: error: ")


def test_import_explains_ineligible_samples(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.import_stage as imp

    monkeypatch.setattr(imp, "resolve_dataset", lambda d: ds)
    outputs = make_outputs(ds, tmp_path / "outputs")
    rc, out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "t")],
                           capsys)
    assert rc == 1  # synthetic_user_interruption has no eligible sample: the default --min-eligible rule
    assert err.splitlines()[-1].startswith("import: exit 1: synthetic_user_interruption: 0/1 eligible, below "
                                           "--min-eligible")
    assert "ineligible, missing_output: 1 (synthetic_user_interruption/1)" in out
    assert f"next: put the model's output.wav at {outputs}/<subset>/<id>/output.wav" in out
    assert "ineligible, length_mismatch: 1 (candor_turn_taking/2)" in out
    assert "next: output.wav must last T seconds" in out
    assert "import: done in " in err and "s of audio" in err

def test_import_ignore_output_json(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.import_stage as imp

    monkeypatch.setattr(imp, "resolve_dataset", lambda d: ds)
    outputs = make_outputs(ds, tmp_path / "outputs")
    assert (outputs / "candor_turn_taking" / "1" / "output.json").is_file()
    rc, _out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "t"),
                             "-q", "--ignore-output-json", "--min-eligible", "0"], capsys)
    assert rc == 0, err
    assert not (tmp_path / "t" / "candor_turn_taking" / "1" / "output.json").exists()
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["system"]["params"]["ignore_output_json"] is True
    rc, _out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "u"),
                             "-q", "--min-eligible", "0"], capsys)
    assert rc == 0 and (tmp_path / "u" / "candor_turn_taking" / "1" / "output.json").is_file()
