"""`fdb export`: exact lengths, byte-copied annotations, manifest, resume, refusals, determinism."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.cli import main
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.sample_trace import TRACE_FILE
from duplexeval.fdb.tree import load_manifest
from duplexeval.fdb.tree_writer import RUN_RECORD
from duplexeval.systems.base import SampleInfo
from tests.helpers.systems import Dataset, add_sample, interruption, small_dataset, turn_taking

ENERGY = "turn-based:vad=energy"


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return small_dataset(tmp_path_factory.mktemp("dataset"))


def digest(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tree.rglob("*")) if p.is_file()}


def test_export_writes_an_exact_tree(ds: Dataset, tmp_path: Path) -> None:
    res = export(ENERGY, ds, tmp_path / "t", progress=False)
    manifest, msha = load_manifest(tmp_path / "t")
    assert res.manifest_sha256 == msha and res.ran == 5 and res.reused == 0
    assert manifest.extra["system"]["name"] == "turn-based"
    assert manifest.extra["system"]["params"]["vad"] == "energy"
    assert manifest.extra["system"]["params"]["silence_ms"] == 500
    assert manifest.extra["export"]["counts"]["candor_turn_taking"] == {"selected": 2, "eligible": 2}
    icc = (tmp_path / "t" / "icc_gt_distribution.json").read_bytes()
    assert icc == (ds.root / "icc_gt_distribution.json").read_bytes()
    assert manifest.extra["icc_gt_distribution"] == hashlib.sha256(icc).hexdigest()
    for s in ds.rows:
        entry = next(e for e in manifest.samples if (e.subset, e.id) == (s.subset, s.id))
        assert entry.eligible and entry.T == s.T
        wav = tmp_path / "t" / s.subset / s.id / "output.wav"
        info = sf.info(str(wav))
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert info.frames == round(s.T * 16000)
        assert entry.files["output.wav"] == hashlib.sha256(wav.read_bytes()).hexdigest()
        if s.annotation_path is not None:
            copy = tmp_path / "t" / s.subset / s.id / s.annotation_path.name
            assert copy.read_bytes() == s.annotation_path.read_bytes()
        trace = json.loads((wav.parent / TRACE_FILE).read_text())
        assert trace["result"]["files"] == entry.files and trace["playout"]["played_s"] >= 0
        assert entry.extra["export"]["clock"] == "virtual"
    # the turn-based system answered each turn-taking sample
    tt = [e for e in manifest.samples if e.subset == "candor_turn_taking"]
    assert all(e.extra["export"]["first_playout_s"] is not None for e in tt)


def test_export_twice_gives_the_same_bytes_and_resumes(ds: Dataset, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    export(ENERGY, ds, a, progress=False)
    export(ENERGY, ds, b, progress=False)
    assert digest(a) == digest(b)
    before = digest(a)
    # an interrupted run: one sample's journal entry and the manifest are gone, another's wav was damaged
    (a / "manifest.json").unlink()
    (a / "candor_turn_taking" / "1" / TRACE_FILE).unlink()
    (a / "synthetic_pause_handling" / "1" / "output.wav").write_bytes(b"junk")
    res = export(ENERGY, ds, a, progress=False)
    assert (res.ran, res.reused) == (2, 3)
    assert digest(a) == before


def test_export_refuses_a_tree_made_by_another_system_unless_forced(ds: Dataset, tmp_path: Path) -> None:
    export("silent", ds, tmp_path / "t", subsets=["candor_turn_taking"], limit=1, progress=False)
    with pytest.raises(RefusalError, match="made by a different system"):
        export(ENERGY, ds, tmp_path / "t", subsets=["candor_turn_taking"], limit=1, progress=False)
    res = export(ENERGY, ds, tmp_path / "t", subsets=["candor_turn_taking"], limit=1, force=True, progress=False)
    assert res.ran == 1
    assert json.loads((tmp_path / "t" / RUN_RECORD).read_text())["system"]["name"] == "turn-based"


def test_selection_by_subset_and_limit(ds: Dataset, tmp_path: Path) -> None:
    res = export("silent", ds, tmp_path / "t", subsets=["candor_turn_taking"], limit=1, progress=False)
    manifest, _ = load_manifest(tmp_path / "t")
    assert [(e.subset, e.id) for e in manifest.samples] == [("candor_turn_taking", "1")]
    assert res.counts == {"candor_turn_taking": {"selected": 1, "eligible": 1}}
    with pytest.raises(InputError, match="unknown subset 'nope'"):
        export("silent", ds, tmp_path / "u", subsets=["nope"], progress=False)


class Crashing:
    name = "crashing"

    def params(self) -> dict:
        return {}

    def version(self) -> str:
        return "test"

    async def open_session(self, info: SampleInfo):  # noqa: ANN201
        class S:
            async def push_input(self, frame: bytes, t_s: float) -> None:
                if t_s > 1.0:
                    raise ValueError("out of memory")

            async def poll_output(self, t_s: float) -> list:
                return []

            async def close(self) -> None:
                pass

        return S()


def test_a_system_error_makes_the_sample_ineligible_not_the_run_fail(ds: Dataset, tmp_path: Path) -> None:
    export(Crashing(), ds, tmp_path / "t", subsets=["candor_turn_taking"], progress=False)
    manifest, _ = load_manifest(tmp_path / "t")
    assert [e.reasons for e in manifest.samples] == [["system_error"], ["system_error"]]
    assert all("output.wav" not in e.files for e in manifest.samples)
    assert "ValueError: out of memory" in manifest.samples[0].extra["export"]["error"]


def test_inputs_at_24k_give_outputs_of_exactly_T(tmp_path: Path) -> None:
    d = Dataset("rates", tmp_path / "ds")
    turn_taking(d, "7", "Is it going to rain today?", tail_s=2.0)
    from tests.helpers.systems import add_sample

    audio = d.rows[0].read_input_16k()
    s = add_sample(d, "candor_turn_taking", "8", audio[:-7], None, sr=24000)
    s.annotation_path = d.rows[0].annotation_path
    export(ENERGY, d, tmp_path / "t", progress=False)
    for row in d.rows:
        n = sf.info(str(tmp_path / "t" / row.subset / row.id / "output.wav")).frames
        assert n == round(row.T * 16000)


def test_cli_export_and_alias_and_errors(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.export_stage as ex

    monkeypatch.setattr(ex, "resolve_dataset", lambda d: ds)  # the CLI takes a path; serve the fixture set
    with pytest.raises(SystemExit) as ok:
        main(["fdb", "reference-export", "--system", "silent", "--dataset", "x", "--out", str(tmp_path / "t"),
              "--subset", "candor_turn_taking", "-q"])
    assert ok.value.code == 0
    out = capsys.readouterr().out
    assert "export: 2/2 samples eligible" in out
    with pytest.raises(SystemExit) as err:
        main(["fdb", "export", "--system", "turn-based:silence=5", "--dataset", "x", "--out", str(tmp_path / "u")])
    assert err.value.code == 2
    assert "has no parameter 'silence'" in capsys.readouterr().err


def test_interruption_export_records_the_barge_in(tmp_path: Path) -> None:
    d = Dataset("int", tmp_path / "ds")
    S, R = interruption(d, "1", "Tell me about the history of Rome.", "Sorry, can you speak more slowly?")
    export(ENERGY, d, tmp_path / "t", progress=False)
    trace = json.loads((tmp_path / "t" / "synthetic_user_interruption" / "1" / TRACE_FILE).read_text())
    clears = [i for i in trace["items"] if i["kind"] == "clear_queue"]
    assert len(clears) == 1 and S <= clears[0]["detail"]["detected_at_s"] <= S + 0.3
    audio, _ = sf.read(str(tmp_path / "t" / "synthetic_user_interruption" / "1" / "output.wav"), dtype="int16")
    stop = int(round(clears[0]["received_at_s"] * 16000))
    assert np.any(audio[int(S * 16000) : stop]) and not np.any(audio[stop : int(R * 16000)])


class EchoSystem:
    """Plays every input frame back as soon as the frame has ended (80 ms later)."""

    name = "echo"

    def params(self) -> dict:
        return {}

    def version(self) -> str:
        return "test"

    async def open_session(self, info: SampleInfo):  # noqa: ANN201
        from duplexeval.systems.base import OutputChunk

        class S:
            def __init__(self) -> None:
                self.q: list = []

            async def push_input(self, frame: bytes, t_s: float) -> None:
                self.q.append(OutputChunk(frame, 16000, t_s + 0.08))

            async def poll_output(self, t_s: float) -> list:
                ready = [c for c in self.q if c.emitted_at_s <= t_s]
                self.q = [c for c in self.q if c.emitted_at_s > t_s]
                return ready

            async def close(self) -> None:
                pass

        return S()


def test_the_system_hears_the_input_sample_for_sample(tmp_path: Path) -> None:
    from tests.helpers.systems import add_sample

    d = Dataset("echo", tmp_path / "ds")
    x = (0.95 * np.sin(2 * np.pi * 220 * np.arange(40000) / 16000)).astype(np.float32)
    s = add_sample(d, "candor_turn_taking", "1", x, [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.5]}])
    export(EchoSystem(), d, tmp_path / "t", progress=False)
    inp, _ = sf.read(str(s.input_path), dtype="int16")
    out, _ = sf.read(str(tmp_path / "t" / "candor_turn_taking" / "1" / "output.wav"), dtype="int16")
    assert len(out) == len(inp) == 40000
    assert np.array_equal(out[1280:], inp[:-1280]) and not np.any(out[:1280])


def test_a_journal_entry_copied_from_another_sample_with_its_input_is_redone(tmp_path: Path) -> None:
    """Sample 1's folder copied over sample 2's (its trace renamed to sample 2) and sample 1's input put in sample 2's
    place: the entry names this run, sample 2 and this input, but it was made from another annotation: redone."""
    ds = Dataset("copy", tmp_path / "ds")
    for sid, E in (("1", 1.0), ("2", 1.5)):
        add_sample(ds, "candor_turn_taking", sid, np.zeros(3 * 16000, np.float32),
                   [{"text": "[TURN-TAKING]", "timestamp": [E, E + 0.2]}])
    tree = tmp_path / "t"
    export("silent", ds, tree, progress=False)
    one, two = tree / "candor_turn_taking" / "1", tree / "candor_turn_taking" / "2"
    for f in one.iterdir():
        shutil.copy(f, two / f.name)
    trace = json.loads((two / TRACE_FILE).read_text())
    trace["id"] = trace["result"]["id"] = "2"
    (two / TRACE_FILE).write_text(json.dumps(trace))
    shutil.copy(ds.rows[0].input_path, ds.rows[1].input_path)
    res = export("silent", ds, tree, progress=False)
    assert (res.ran, res.reused) == (1, 1)
    assert (two / "turn_taking.json").read_bytes() == ds.rows[1].annotation_path.read_bytes()  # type: ignore[union-attr]
