"""Every refusal and every load-time check of the unified scorer stops with the sample id and the problem."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.unified import score
from duplexeval.jsonio import read_json, write_json
from tests.helpers.fdb import (
    FixedSegmenter,
    FixtureSample,
    interrupt_ann,
    pause_ann,
    rewrite_json,
    silence,
    turn_ann,
    write_tree,
)

P, TT, UI = "candor_pause_handling", "candor_turn_taking", "synthetic_user_interruption"


def _score(root):
    return score(root, write=False, segmenter=FixedSegmenter({}))


def _one(tmp_path, sample):
    return write_tree(tmp_path / "t", [sample])


def test_no_asr_json_is_a_refusal(tmp_path):
    root = write_tree(tmp_path / "t", [FixtureSample(P, "1", 5.0, pause_ann((1, 2)))], asr=False)
    with pytest.raises(RefusalError, match=r"asr.json: no asr.json; run `duplexeval fdb asr"):
        _score(root)


def test_no_manifest_is_a_refusal(tmp_path):
    with pytest.raises(RefusalError, match="no manifest.json"):
        _score(tmp_path)


def test_asr_from_another_manifest_is_a_refusal(tmp_path):
    root = _one(tmp_path, FixtureSample(P, "1", 5.0, pause_ann((1, 2))))
    asr = read_json(root / "asr.json")
    asr["manifest_sha256"] = "0" * 64
    write_json(root / "asr.json", asr)
    with pytest.raises(RefusalError, match="asr.json: made from a different manifest.json"):
        _score(root)


@pytest.mark.parametrize(
    "sample, name, against",
    [
        (FixtureSample(P, "7", 5.0, pause_ann((1, 2))), "pause.json", "manifest.json"),
        (FixtureSample(TT, "7", 5.0, turn_ann(1.0)), "turn_taking.json", "manifest.json"),
        (FixtureSample(UI, "7", 5.0, interrupt_ann(1.0, 2.0)), "interrupt.json", "manifest.json"),
        (FixtureSample(P, "7", 5.0, pause_ann((1, 2)), [("a", 1.0, 1.2)]), "output.json", "asr.json"),
        (FixtureSample(UI, "7", 5.0, interrupt_ann(1.0, 2.0), [("a", 2.5, 2.6)]), "output.json", "asr.json"),
    ],
)
def test_changed_annotation_or_transcript_is_a_refusal(tmp_path, sample, name, against):
    root = _one(tmp_path, sample)
    path = root / sample.subset / sample.id / name
    obj = json.loads(path.read_text())
    rewrite_json(path, obj if name != "output.json" else {"text": "", "chunks": []})
    path.write_text(path.read_text() + " ")  # any byte change counts
    with pytest.raises(RefusalError) as exc:
        _score(root)
    msg = str(exc.value)
    assert f"{name}: sample {sample.subset}/7: file differs from {against}" in msg


def test_changed_interruption_audio_is_a_refusal(tmp_path):
    root = _one(tmp_path, FixtureSample(UI, "3", 5.0, interrupt_ann(1.0, 2.0)))
    wav = root / UI / "3" / "output.wav"
    a = silence(5.0)
    a[100] = 0.5
    sf.write(str(wav), a, 16000, subtype="PCM_16")
    with pytest.raises(RefusalError, match=rf"output.wav: sample {UI}/3: file differs from manifest.json"):
        _score(root)


def test_changed_audio_of_other_tasks_is_not_read(tmp_path):
    root = _one(tmp_path, FixtureSample(TT, "3", 5.0, turn_ann(1.0)))
    (root / TT / "3" / "output.wav").write_bytes(b"not audio")
    assert _score(root).subset(TT)["counts"]["eligible"] == 1


def test_asr_of_another_audio_is_a_refusal(tmp_path):
    root = _one(tmp_path, FixtureSample(UI, "3", 5.0, interrupt_ann(1.0, 2.0)))
    asr = read_json(root / "asr.json")
    asr["samples"][f"{UI}/3"]["audio_sha256"] = "1" * 64
    write_json(root / "asr.json", asr)
    with pytest.raises(RefusalError, match=rf"sample {UI}/3: transcribed a different output.wav"):
        _score(root)


def test_eligible_sample_missing_from_asr_is_a_refusal(tmp_path):
    root = _one(tmp_path, FixtureSample(P, "4", 5.0, pause_ann((1, 2)), words=None))
    with pytest.raises(RefusalError, match=rf"sample {P}/4: eligible sample is not in asr.json"):
        _score(root)


def test_asr_error_on_eligible_sample_is_a_refusal(tmp_path):
    root = _one(tmp_path, FixtureSample(P, "4", 5.0, pause_ann((1, 2)), asr_status="error"))
    with pytest.raises(RefusalError, match=rf"sample {P}/4: ASR failed \(decoder failed\)"):
        _score(root)


def test_ineligible_samples_are_not_read(tmp_path):
    root = write_tree(
        tmp_path / "t",
        [
            FixtureSample(UI, "1", 5.0, None, words=None, eligible=False, reasons=["late_input", "error"], wav=False),
            FixtureSample(UI, "2", 5.0, interrupt_ann(1.0, 2.0), words=None, eligible=False, reasons=["error"]),
        ],
    )
    (root / UI / "2" / "interrupt.json").write_text("garbage")
    b = _score(root).subset(UI)
    assert b["counts"]["ineligible"] == 2 and b["counts"]["ineligible_reasons"] == {"error": 2, "late_input": 1}


def _check(tmp_path, sample, message):
    root = _one(tmp_path, sample)
    with pytest.raises(InputError) as exc:
        _score(root)
    assert message in str(exc.value), str(exc.value)
    assert f"sample {sample.subset}/{sample.id}" in str(exc.value)


@pytest.mark.parametrize(
    "sample, message",
    [
        (FixtureSample(P, "1", 5.0, pause_ann((1, 2)), [("a", -0.1, 0.2)]),
         "word 0 ('a') starts at -0.1, outside [0, T=5 s]"),
        (FixtureSample(P, "1", 5.0, pause_ann((1, 2)), [("a", 1, 2), ("b", 5.000001, None)]),
         "word 1 ('b') starts at 5.000001"),
        (FixtureSample(TT, "1", 5.0, turn_ann(1.0), [("a", 6.0, 6.2)]), "word 0 ('a') starts at 6.0, outside"),
        (FixtureSample(TT, "1", 5.0, turn_ann(5.5)), "E=5.5 is not inside [0, T=5 s]"),
        (FixtureSample(TT, "1", 5.0, turn_ann(-0.5)), "E=-0.5 is not inside"),
        (FixtureSample(UI, "1", 5.0, interrupt_ann(-1.0, 2.0)), "S=-1.0 is not inside [0, T=5 s]"),
        (FixtureSample(UI, "1", 5.0, interrupt_ann(1.0, 5.2)), "R=5.2 is not inside [0, T=5 s]"),
        (FixtureSample(UI, "1", 5.0, interrupt_ann(3.0, 2.0)), "S=3.0 is after R=2.0"),
        (FixtureSample(UI, "1", 5.0, interrupt_ann(1.0, 2.0), [("a", 1.99, 2.2)]),
         "word 0 starts at 1.99 s, before R=2 s"),
        (FixtureSample(P, "1", 5.0, []), "pause.json lists no pause"),
        (FixtureSample(P, "1", 5.0, pause_ann((2, 1))), "pause 0 ends before it starts (2 > 1)"),
        (FixtureSample(P, "1", 5.0, pause_ann((4, 5.5))), "pause 0 [4, 5.5] is not inside [0, T=5 s]"),
        (FixtureSample(P, "1", 5.0, pause_ann((-1, 0.5))), "pause 0 [-1, 0.5] is not inside"),
        (FixtureSample(P, "1", 5.0, pause_ann((1, 3), (2, 4))), "pause 1 [2, 4] starts before pause 0 ends"),
        (FixtureSample(P, "1", 5.0, pause_ann((3, 4), (1, 2))), "pause 1 [1, 2] starts before pause 0 ends"),
        (FixtureSample(P, "1", 5.0, [{"text": "[PAUSE]"}]), "pause 0 needs 'timestamp': [start, end]"),
        (FixtureSample(TT, "1", 5.0, []), "annotation must be a non-empty list"),
        (FixtureSample(UI, "1", 5.0, [{"timestamp": [1.0, None]}]), "interrupt.json[0] needs 'timestamp'"),
    ],
)
def test_time_checks(tmp_path, sample, message):
    _check(tmp_path, sample, message)


def test_pauses_may_touch_and_words_may_sit_on_T(tmp_path):
    root = _one(tmp_path, FixtureSample(P, "1", 5.0, pause_ann((1, 2), (2, 3), (5, 5)), [("a", 5.0, None)]))
    assert _score(root).subset(P)["counts"]["pauses"] == 3


def test_bad_json_and_missing_files(tmp_path):
    root = _one(tmp_path, FixtureSample(TT, "1", 5.0, turn_ann(1.0)))
    (root / TT / "1" / "turn_taking.json").unlink()
    with pytest.raises(InputError, match=rf"turn_taking.json: sample {TT}/1: file not found"):
        _score(root)


def test_bad_transcript_shape(tmp_path):
    root = _one(tmp_path, FixtureSample(TT, "1", 5.0, turn_ann(1.0), [("a", 1.0, "x")]))  # type: ignore[list-item]
    with pytest.raises(InputError, match=rf"sample {TT}/1: chunks\[0\] \('a'\) has an end that is neither null"):
        _score(root)


@pytest.mark.parametrize(
    "audio, sr, message",
    [
        (np.zeros(80001, np.float32), 16000, "80001 samples, expected exactly round(T*16000) = 80000"),
        (np.zeros(79999, np.float32), 16000, "79999 samples, expected exactly"),
        (np.zeros(120000, np.float32), 24000, "sample rate 24000 Hz, expected 16000 Hz"),
        (np.zeros((80000, 2), np.float32), 16000, "2 channels, expected mono"),
    ],
)
def test_interruption_audio_checks(tmp_path, audio, sr, message):
    root = _one(tmp_path, FixtureSample(UI, "9", 5.0, interrupt_ann(1.0, 2.0)))
    wav = root / UI / "9" / "output.wav"
    sf.write(str(wav), audio, sr, subtype="PCM_16")
    # Record the new file's hash so only the format check can fail.
    m = read_json(root / "manifest.json")
    from duplexeval.jsonio import sha256_file

    m["samples"][0]["files"]["output.wav"] = sha256_file(wav)
    msha = write_json(root / "manifest.json", m)
    asr = read_json(root / "asr.json")
    asr["manifest_sha256"] = msha
    asr["samples"][f"{UI}/9"]["audio_sha256"] = sha256_file(wav)
    write_json(root / "asr.json", asr)
    with pytest.raises(InputError) as exc:
        _score(root)
    assert f"output.wav: sample {UI}/9: {message}" in str(exc.value)


def test_a_wav_whose_header_claims_more_audio_than_it_holds_is_refused(tmp_path):
    """The hashes are consistent (the tree records the broken file), but its data chunk claims twice the bytes
    the file holds: libsndfile would read what is there and say nothing."""
    import hashlib

    from duplexeval.audio import read_audio

    root = _one(tmp_path, FixtureSample(UI, "3", 5.0, interrupt_ann(1.0, 2.0)))
    wav = root / UI / "3" / "output.wav"
    data = bytearray(wav.read_bytes())
    i = data.index(b"data")
    n = int.from_bytes(data[i + 4 : i + 8], "little")
    data[i + 4 : i + 8] = (2 * n).to_bytes(4, "little")
    wav.write_bytes(bytes(data))
    sha = hashlib.sha256(bytes(data)).hexdigest()
    man = read_json(root / "manifest.json")
    man["samples"][0]["files"]["output.wav"] = sha
    msha = write_json(root / "manifest.json", man)
    asr = read_json(root / "asr.json")
    asr["manifest_sha256"], asr["samples"][f"{UI}/3"]["audio_sha256"] = msha, sha
    write_json(root / "asr.json", asr)
    problem = f"truncated WAV: its header claims {2 * n} bytes of audio, the file holds {n}"
    with pytest.raises(InputError, match=rf"output.wav: sample {UI}/3: {problem}$"):
        _score(root)
    with pytest.raises(InputError, match=rf"output.wav: {problem}$"):
        read_audio(wav)
    with pytest.raises(InputError, match=rf"output.wav: {problem}$"):
        read_audio(wav, bytes(data))
