"""The ASR stage with stand-in backends: validation, cut at R, resume, refusals, import, parakeet path, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplexeval.asr.base import Word
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb import asr_stage
from duplexeval.fdb.tree import load_asr
from duplexeval.jsonio import sha256_file
from tests.helpers.fdb import FixtureSample, interrupt_ann, turn_ann, write_tree

SR = 16000


class ScriptedBackend:
    """Returns preset words per audio length (samples), recording what it was given."""

    name = "scripted"

    def __init__(self, by_len: dict[int, list[Word]] | None = None, default: list[Word] | None = None,
                 stop_after: int | None = None) -> None:
        self.by_len = by_len or {}
        self.default = default if default is not None else [Word("hello", 0.1, 0.3)]
        self.calls: list[tuple[int, float]] = []
        self.stop_after = stop_after

    def signature(self) -> dict[str, Any]:
        return {"name": self.name, "packages": {}, "options": {"v": 1}}

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt  # a user pressing Ctrl-C in the middle of a run
        self.calls.append((int(audio16k.shape[0]), offset_s))
        words = self.by_len.get(int(audio16k.shape[0]), self.default)
        return [Word(w.text, w.start + offset_s, None if w.end is None else w.end + offset_s) for w in words]


def _tone(T: float) -> np.ndarray:
    t = np.arange(int(round(T * SR))) / SR
    return (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def _tree(tmp_path: Path, n: int = 4, lengths: list[float] | None = None) -> Path:
    lengths = lengths or [2.0 + 0.5 * i for i in range(n)]
    samples = [FixtureSample("candor_turn_taking", str(i), T, annotation=turn_ann(0.5), words=None, audio=_tone(T))
               for i, T in enumerate(lengths)]
    return write_tree(tmp_path / "tree", samples, asr=False)


def test_good_words_written_in_official_shape(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 2)
    res = asr_stage.asr(tree, backend=ScriptedBackend(default=[Word(" Hello,", 0.1, 0.25), Word("there", 0.3, 0.6)]),
                        jobs=1, progress=False)
    assert (res.n_ok, res.n_error, res.failed) == (2, 0, False)
    out = json.loads((tree / "candor_turn_taking" / "0" / "output.json").read_text())
    assert out == {"text": "Hello, there", "chunks": [{"text": "Hello,", "timestamp": [0.1, 0.25]},
                                                      {"text": "there", "timestamp": [0.3, 0.6]}]}
    rec, _ = load_asr(tree)
    s0 = rec.samples["candor_turn_taking/0"]
    assert s0.status == "ok" and s0.output_json == sha256_file(tree / "candor_turn_taking" / "0" / "output.json")
    assert s0.extra["audio_sha256"] == sha256_file(tree / "candor_turn_taking" / "0" / "output.wav")
    assert s0.extra["cut_s"] == 0.0
    assert rec.backend["name"] == "scripted"
    assert not (tree / asr_stage.JOURNAL_DIR).exists()
    raw = json.loads((tree / "asr.json").read_text())  # the artifact header leads, then the record
    assert list(raw)[:6] == ["kind", "schema_version", "duplexeval", "signature", "inputs", "manifest_sha256"]
    assert (raw["kind"], raw["schema_version"]) == ("duplexeval.fdb.asr", 2)
    assert raw["inputs"] == {"manifest.json": rec.manifest_sha256}
    assert raw["signature"]["compact"].startswith("fdb-v1.0-asr-1|asr:scripted")


def test_asr_json_of_another_kind_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 1)
    asr_stage.asr(tree, backend=ScriptedBackend(default=[Word("hi", 0.1, 0.2)]), jobs=1, progress=False)
    raw = json.loads((tree / "asr.json").read_text())
    (tree / "asr.json").write_text(json.dumps({**raw, "kind": "duplexeval.fdb.unified"}))
    with pytest.raises(InputError, match="asr.json: is a 'duplexeval.fdb.unified' file, expected kind "
                                         "'duplexeval.fdb.asr'"):
        load_asr(tree)
    (tree / "asr.json").write_text(json.dumps({**raw, "schema_version": 3}))
    with pytest.raises(InputError, match="schema_version 3 is newer than this duplexeval reads"):
        load_asr(tree)


def test_bad_times_fail_only_their_samples_with_reasons(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 4)  # lengths 2.0, 2.5, 3.0, 3.5 s
    bad = {
        int(2.0 * SR): [Word("a", 0.5, 0.4)],                 # reversed
        int(2.5 * SR): [Word("b", float("nan"), 0.4)],        # NaN start
        int(3.0 * SR): [Word("c", 2.9, 3.2)],                 # ends after T
    }
    res = asr_stage.asr(tree, backend=ScriptedBackend(by_len=bad), jobs=1, progress=False)
    assert (res.n_ok, res.n_error) == (1, 3) and res.failed
    rec, _ = load_asr(tree)
    errs = {k: s.error for k, s in rec.samples.items() if s.status == "error"}
    assert "ends before it starts" in errs["candor_turn_taking/0"]
    assert "not a finite number" in errs["candor_turn_taking/1"]
    assert "after T=3.0" in errs["candor_turn_taking/2"]
    assert rec.samples["candor_turn_taking/3"].status == "ok"
    for i in range(3):  # nothing is clipped and no transcript is left for a failed sample
        assert not (tree / "candor_turn_taking" / str(i) / "output.json").exists()
    assert all(e.startswith("sample candor_turn_taking/") for e in errs.values())


def test_backend_exception_fails_sample_and_run_goes_on(tmp_path: Path) -> None:
    class Crashy(ScriptedBackend):
        def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
            if audio16k.shape[0] == int(2.0 * SR):
                raise RuntimeError("decoder exploded")
            return super().transcribe(audio16k, offset_s)

    tree = _tree(tmp_path, 2)
    res = asr_stage.asr(tree, backend=Crashy(), jobs=1, progress=False)
    assert res.n_error == 1 and "RuntimeError: decoder exploded" in res.errors[0][1]


def test_cut_at_R_and_shift_back(tmp_path: Path) -> None:
    T, S, R = 6.0, 2.0, 3.25
    s = FixtureSample("synthetic_user_interruption", "7", T, annotation=interrupt_ann(S, R), words=None, audio=_tone(T))
    tree = write_tree(tmp_path / "t", [s], asr=False)
    be = ScriptedBackend(default=[Word("ok", 0.5, 0.75)])
    asr_stage.asr(tree, backend=be, jobs=1, progress=False)
    n_after_cut = int(T * SR) - int(R * SR)
    assert be.calls == [(n_after_cut, R)]
    out = json.loads((tree / "synthetic_user_interruption" / "7" / "output.json").read_text())
    assert out["chunks"][0]["timestamp"] == [R + 0.5, R + 0.75]
    rec, _ = load_asr(tree)
    assert rec.samples["synthetic_user_interruption/7"].extra["cut_s"] == R


def test_changed_annotation_or_audio_fails_sample(tmp_path: Path) -> None:
    T = 4.0
    s = FixtureSample("synthetic_user_interruption", "1", T, annotation=interrupt_ann(1.0, 2.0), words=None,
                      audio=_tone(T))
    tree = write_tree(tmp_path / "t", [s], asr=False)
    (tree / "synthetic_user_interruption" / "1" / "interrupt.json").write_text(json.dumps(interrupt_ann(1.0, 9.0)))
    res = asr_stage.asr(tree, backend=ScriptedBackend(), jobs=1, progress=False)
    assert res.n_error == 1 and "differs from manifest.json" in res.errors[0][1]


def test_an_existing_asr_json_is_up_to_date_or_refused_unless_force(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 1)
    asr_stage.asr(tree, backend=ScriptedBackend(), jobs=1, progress=False)
    first = (tree / "asr.json").read_bytes()
    again = asr_stage.asr(tree, backend=ScriptedBackend(), jobs=1, progress=False)  # the same run: nothing to redo
    assert again.n_resumed == again.n_ok == 1 and (tree / "asr.json").read_bytes() == first

    class Other(ScriptedBackend):
        def signature(self) -> dict[str, Any]:
            return {**super().signature(), "options": {"v": 2}}

    with pytest.raises(RefusalError, match="exists and was made with other settings.*--force"):
        asr_stage.asr(tree, backend=Other(), jobs=1, progress=False)
    res = asr_stage.asr(tree, backend=ScriptedBackend(default=[]), jobs=1, progress=False, force=True)
    assert res.n_ok == 1
    assert json.loads((tree / "candor_turn_taking" / "0" / "output.json").read_text()) == {"text": "", "chunks": []}


def test_refuses_foreign_output_json(tmp_path: Path) -> None:
    s = FixtureSample("candor_turn_taking", "0", 2.0, annotation=turn_ann(0.5), words=[("hi", 0.1, 0.2)])
    tree = write_tree(tmp_path / "t", [s], asr=False)
    with pytest.raises(RefusalError, match="--backend import"):
        asr_stage.asr(tree, backend=ScriptedBackend(), jobs=1, progress=False)


def test_resume_after_interrupted_run(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 5)
    with pytest.raises(KeyboardInterrupt):
        asr_stage.asr(tree, backend=ScriptedBackend(stop_after=2), jobs=1, progress=False)
    assert not (tree / "asr.json").exists()
    done = sorted(p.name for p in (tree / asr_stage.JOURNAL_DIR).glob("candor*"))
    assert len(done) == 2
    # A different backend must not mix into the half-finished run.
    class Other(ScriptedBackend):
        name = "other"

    with pytest.raises(RefusalError, match="different backend"):
        asr_stage.asr(tree, backend=Other(), jobs=1, progress=False)
    be = ScriptedBackend()
    res = asr_stage.asr(tree, backend=be, jobs=1, progress=False)
    assert (res.n_resumed, res.n_ok, len(be.calls)) == (2, 5, 3)


def test_resume_redoes_sample_whose_output_changed(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 3)
    with pytest.raises(KeyboardInterrupt):
        asr_stage.asr(tree, backend=ScriptedBackend(stop_after=2), jobs=1, progress=False)
    (tree / "candor_turn_taking" / "0" / "output.json").write_text("{}")
    be = ScriptedBackend()
    res = asr_stage.asr(tree, backend=be, jobs=1, progress=False)
    assert (res.n_resumed, len(be.calls)) == (1, 2)


def test_ineligible_samples_are_left_alone(tmp_path: Path) -> None:
    samples = [
        FixtureSample("candor_turn_taking", "0", 2.0, annotation=turn_ann(0.5), words=None, audio=_tone(2.0)),
        FixtureSample("candor_turn_taking", "1", 2.0, annotation=turn_ann(0.5), words=None, wav=False,
                      eligible=False, reasons=["capture failed"]),
    ]
    tree = write_tree(tmp_path / "t", samples, asr=False)
    res = asr_stage.asr(tree, backend=ScriptedBackend(), jobs=1, progress=False)
    rec, _ = load_asr(tree)
    assert list(rec.samples) == ["candor_turn_taking/0"] and res.n_eligible == 1


def test_jobs_process_pool_matches_single_process(tmp_path: Path) -> None:
    t1 = _tree(tmp_path / "a", 3)
    t2 = _tree(tmp_path / "b", 3)
    asr_stage.asr(t1, backend=ScriptedBackend(), jobs=1, progress=False)
    asr_stage.asr(t2, backend=ScriptedBackend(), jobs=2, progress=False)
    assert (t1 / "asr.json").read_bytes() == (t2 / "asr.json").read_bytes()


# -- import -----------------------------------------------------------------------------------------
def test_import_official_and_crisperwhisper_files(tmp_path: Path) -> None:
    samples = [
        # CrisperWhisper-era: leading spaces, a null end, a filler token
        FixtureSample("candor_pause_handling", "1", 4.72, annotation=[{"text": "[PAUSE]", "timestamp": [3.32, 4.0]}],
                      words=[(" So", 0.3, 0.5), (" [UH]", 0.6, None), (" yeah", 4.1, None)]),
        # Parakeet-era interruption file: words from R on
        FixtureSample("synthetic_user_interruption", "2", 28.16, annotation=interrupt_ann(10.53, 13.14),
                      words=[("One,", 13.9, 14.2), ("two.", 14.3, 14.6)]),
        # Out of range: a word after T
        FixtureSample("candor_turn_taking", "3", 10.4, annotation=turn_ann(2.01), words=[("late", 10.2, 10.9)]),
    ]
    tree = write_tree(tmp_path / "t", samples, asr=False)
    before = {p: p.read_bytes() for p in tree.rglob("output.json")}
    with pytest.raises(InputError, match="--declare"):
        asr_stage.asr(tree, backend="import", jobs=1, progress=False)
    res = asr_stage.asr(tree, backend="import", declare="parakeet-tdt-0.6b-v2", jobs=1, progress=False)
    assert (res.n_ok, res.n_error) == (2, 1)
    assert {p: p.read_bytes() for p in tree.rglob("output.json")} == before  # adopted, not rewritten
    rec, _ = load_asr(tree)
    assert rec.backend["name"] == "parakeet-tdt-0.6b-v2" and rec.backend["source"] == "import"
    cw = rec.samples["candor_pause_handling/1"]
    assert cw.status == "ok" and cw.extra["null_ends"] == 2
    assert cw.output_json == sha256_file(tree / "candor_pause_handling" / "1" / "output.json")
    pk = rec.samples["synthetic_user_interruption/2"]
    assert pk.extra["cut_s"] == 13.14 and pk.extra["words_before_cut"] == 0
    bad = rec.samples["candor_turn_taking/3"]
    assert bad.status == "error" and "after T=10.4" in (bad.error or "")
    assert (tree / "candor_turn_taking" / "3" / "output.json").exists()  # import never deletes a user's file


def test_import_missing_and_malformed_files(tmp_path: Path) -> None:
    samples = [
        FixtureSample("candor_turn_taking", "1", 3.0, annotation=turn_ann(1.0), words=None),
        FixtureSample("candor_turn_taking", "2", 3.0, annotation=turn_ann(1.0), words=[("x", 0.1, 0.2)]),
    ]
    tree = write_tree(tmp_path / "t", samples, asr=False)
    (tree / "candor_turn_taking" / "2" / "output.json").write_text('{"text": "x", "chunks": [{"text": "x", '
                                                                   '"timestamp": ["a", 1]}]}')
    res = asr_stage.asr(tree, backend="import", declare="whisperx", jobs=1, progress=False)
    reasons = dict(res.errors)
    assert "no output.json to import" in reasons["candor_turn_taking/1"]
    assert "not a finite number" in reasons["candor_turn_taking/2"]


# -- parakeet code path with a stand-in NeMo model ---------------------------------------------------
class FakeHyp:
    def __init__(self, words: list[dict[str, Any]]) -> None:
        self.text = " ".join(w["word"] for w in words)
        self.timestamp = {"word": words, "segment": [], "char": []}


class FakeNemo:
    """Same `transcribe(list_of_audio, timestamps=True)` interface as a NeMo ASRModel."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def transcribe(self, audio: list[np.ndarray], timestamps: bool = False) -> list[FakeHyp]:
        assert timestamps is True and len(audio) == 1
        self.seen.append(int(audio[0].shape[0]))
        if audio[0].shape[0] == int(2.0 * SR):
            return [FakeHyp([{"word": "bad", "start": 1.0, "end": 0.5, "start_offset": 12, "end_offset": 6}])]
        return [FakeHyp([{"word": "Hello,", "start": 0.24, "end": 0.56, "start_offset": 3, "end_offset": 7},
                         {"word": "world.", "start": 0.64, "end": 0.96, "start_offset": 8, "end_offset": 12}])]


def test_parakeet_backend_with_stand_in_model(tmp_path: Path) -> None:
    from duplexeval.asr.parakeet import ParakeetBackend

    ckpt = tmp_path / "parakeet-tdt-0.6b-v2.nemo"
    ckpt.write_bytes(b"not really a checkpoint")
    fake = FakeNemo()
    loaded: list[tuple[Path, str]] = []

    def loader(path: Path, device: str) -> FakeNemo:
        loaded.append((path, device))
        return fake

    be = ParakeetBackend(model=ckpt, device="cpu", loader=loader)
    T, R = 5.0, 1.5
    samples = [
        FixtureSample("candor_turn_taking", "0", 2.0, annotation=turn_ann(0.5), words=None, audio=_tone(2.0)),
        FixtureSample("synthetic_user_interruption", "1", T, annotation=interrupt_ann(0.5, R), words=None,
                      audio=_tone(T)),
    ]
    tree = write_tree(tmp_path / "t", samples, asr=False)
    res = asr_stage.asr(tree, backend=be, jobs=1, progress=False)
    assert loaded == [(ckpt, "cpu")]
    assert res.n_ok == 1 and "ends before it starts" in res.errors[0][1]
    rec, _ = load_asr(tree)
    assert rec.backend["model"]["sha256"] == sha256_file(ckpt) and rec.backend["options"]["device"] == "cpu"
    out = json.loads((tree / "synthetic_user_interruption" / "1" / "output.json").read_text())
    assert [c["timestamp"] for c in out["chunks"]] == [[R + 0.24, R + 0.56], [R + 0.64, R + 0.96]]
    assert out["text"] == "Hello, world."
    assert fake.seen == [int(2.0 * SR), int(T * SR) - int(R * SR)]


def test_parakeet_rejects_bad_device_and_missing_file(tmp_path: Path) -> None:
    from duplexeval.asr.parakeet import ParakeetBackend

    with pytest.raises(InputError, match="cpu or cuda"):
        ParakeetBackend(device="tpu")
    with pytest.raises(InputError, match="not a .nemo file"):
        ParakeetBackend(model=tmp_path / "missing.nemo").signature()


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.cli import main

    samples = [
        FixtureSample("candor_turn_taking", "1", 3.0, annotation=turn_ann(1.0), words=[("fine", 0.1, 0.2)]),
        FixtureSample("candor_turn_taking", "2", 3.0, annotation=turn_ann(1.0), words=[("late", 2.5, 3.5)]),
    ]
    tree = write_tree(tmp_path / "t", samples, asr=False)
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x", "-q"])
    assert e.value.code == 1
    out = capsys.readouterr()
    assert "1 ok, 1 failed of 2" in out.out and "after T=3.0" in out.err
    with pytest.raises(SystemExit) as e:  # asr.json of this same run: resumed, its failed sample retried (and failing)
        main(["fdb", "reference-asr", str(tree), "--backend", "import", "--declare", "x", "-q"])
    assert e.value.code == 1 and "1 ok, 1 failed of 2 eligible samples (1 resumed)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:  # asr.json of another run: refused
        main(["fdb", "asr", str(tree), "--backend", "import", "--declare", "y", "-q"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "asr.json: exists and was made with other settings" in err and "--force" in err
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr", str(tree), "--backend", "nope", "--force", "-q"])
    assert e.value.code == 2


def test_check_words_rules() -> None:
    from duplexeval.asr.base import check_words

    assert check_words([Word("a", 0.0, 1.0), Word("b", 1.0, 2.0)], 2.0) is None
    assert "no end time" in (check_words([Word("a", 0.0, None)], 2.0) or "")
    assert check_words([Word("a", 0.0, None)], 2.0, allow_null_end=True) is None
    assert "outside [0" in (check_words([Word("a", -0.001, 0.1)], 2.0) or "")
    assert "not a finite" in (check_words([Word("a", 0.0, math.inf)], 2.0) or "")
    assert "empty text" in (check_words([Word("  ", 0.0, 0.1)], 2.0) or "")
