"""manifest.json / asr.json validation, sample-id safety, and the shared file conventions."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from duplexeval import audio, jsonio
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb import tree
from duplexeval.fdb.transcript import Word, parse_output_json, to_us, transcript_json

SHA = "a" * 64


def _manifest() -> dict:
    return {
        "kind": "duplexeval.fdb.tree",
        "schema_version": 1,
        "dataset": {"name": "demo", "declared": {"candor_turn_taking": 2}},
        "system": {"name": "silent"},
        "samples": [
            {"subset": "candor_turn_taking", "id": "1", "T": 10.4, "eligible": True, "reasons": [],
             "files": {"output.wav": SHA, "turn_taking.json": SHA}},
            {"subset": "candor_turn_taking", "id": "2", "T": 10.0, "eligible": False,
             "reasons": ["missing_output"], "files": {"turn_taking.json": SHA}},
        ],
    }


def _write(tmp_path, obj, name="manifest.json"):
    (tmp_path / name).write_text(json.dumps(obj))


def test_manifest_roundtrip_keeps_extras(tmp_path):
    _write(tmp_path, _manifest())
    m, digest = tree.load_manifest(tmp_path)
    assert digest == jsonio.sha256_file(tmp_path / "manifest.json")
    assert [s.key for s in m.samples] == ["candor_turn_taking/1", "candor_turn_taking/2"]
    assert m.extra == {"system": {"name": "silent"}}
    out = tmp_path / "out"
    tree.write_manifest(out, m)
    again, _ = tree.load_manifest(out)
    assert again.to_json() == m.to_json()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda m: m.update(kind="x"), "'kind' must be"),
        (lambda m: m["samples"][0].update(id="../etc"), "sample id '../etc' is not allowed"),
        (lambda m: m["samples"][0].update(id="a/b"), "sample id 'a/b' is not allowed"),
        (lambda m: m["samples"][0].update(subset="nope"), "unknown subset 'nope'"),
        (lambda m: m["samples"][0].update(T=-1), "sample candor_turn_taking/1: 'T' must be a positive"),
        (lambda m: m["samples"][1].update(reasons=[]), "sample candor_turn_taking/2: ineligible without a reason"),
        (lambda m: m["samples"][0]["files"].pop("turn_taking.json"), "eligible sample has no turn_taking.json hash"),
        (lambda m: m["samples"][0]["files"].update({"output.wav": "XYZ"}), "must be a lowercase hex SHA-256"),
        (lambda m: m["samples"].append(copy.deepcopy(m["samples"][0])), "sample candor_turn_taking/1: listed twice"),
        (lambda m: m["dataset"]["declared"].update(candor_turn_taking=1), "2 samples selected but only 1 declared"),
    ],
)
def test_manifest_validation_messages(tmp_path, mutate, message):
    m = _manifest()
    mutate(m)
    _write(tmp_path, m)
    with pytest.raises(InputError) as exc:
        tree.load_manifest(tmp_path)
    assert message in str(exc.value)
    assert "manifest.json" in str(exc.value)


def test_missing_manifest_and_asr_are_refusals(tmp_path):
    with pytest.raises(RefusalError, match="no manifest.json"):
        tree.load_manifest(tmp_path)
    with pytest.raises(RefusalError, match="no asr.json; run `duplexeval fdb asr"):
        tree.load_asr(tmp_path)


def test_asr_roundtrip_and_checks(tmp_path):
    rec = {
        "manifest_sha256": SHA,
        "backend": {"name": "import"},
        "samples": {
            "candor_turn_taking/1": {"status": "ok", "output.json": SHA, "error": None, "audio_sha256": SHA},
            "candor_turn_taking/2": {"status": "error", "output.json": None, "error": "bad time"},
        },
    }
    _write(tmp_path, rec, "asr.json")
    a, _ = tree.load_asr(tmp_path)
    assert a.samples["candor_turn_taking/1"].extra == {"audio_sha256": SHA}
    assert a.to_json() == rec
    rec["samples"]["candor_turn_taking/2"]["error"] = None
    _write(tmp_path, rec, "asr.json")
    with pytest.raises(InputError, match="status error needs an 'error' message"):
        tree.load_asr(tmp_path)


def test_transcript_parsing_accepts_null_end_and_rejects_nan(tmp_path):
    words = parse_output_json({"text": " hi there", "chunks": [
        {"text": " hi", "timestamp": [1.0, None]}, {"text": "there", "timestamp": [1.2, 1.5]}]}, "x.json")
    assert words == [Word(" hi", 1.0, None), Word("there", 1.2, 1.5)]
    assert transcript_json(words)["text"] == "hi there"
    with pytest.raises(InputError, match="x.json: chunks\\[0\\] \\('hi'\\) has a start that is not a finite number"):
        parse_output_json({"chunks": [{"text": "hi", "timestamp": [float("nan"), 1.0]}]}, "x.json")


def test_microsecond_rounding_removes_float_noise():
    assert to_us(6.32000000000005) == to_us(6.32) == 6_320_000


def test_json_is_deterministic_and_forbids_nan(tmp_path):
    obj = {"b": 1, "a": [0.1, None]}
    h1 = jsonio.write_json(tmp_path / "x.json", obj)
    h2 = jsonio.write_json(tmp_path / "x.json", obj)
    assert h1 == h2 == jsonio.sha256_file(tmp_path / "x.json")
    with pytest.raises(ValueError):
        jsonio.dumps({"x": float("nan")})


def test_json_lines_skip_blanks_and_name_the_bad_line():
    assert jsonio.json_lines('{"a": 1}\n\n  \n[2]\n', "f.jsonl") == [(1, {"a": 1}), (4, [2])]
    with pytest.raises(InputError, match=r"^f.jsonl: line 3: invalid JSON: "):
        jsonio.json_lines('{}\n\n{bad\n', "f.jsonl")


def test_wav_roundtrip_exact_length_and_bytes(tmp_path):
    x = np.sin(np.linspace(0, 100, 16000)).astype(np.float32) * 0.5
    y = audio.fit_length(x, audio.n_samples_for(1.5))
    assert y.shape[0] == 24000
    h1 = audio.write_wav_pcm16(tmp_path / "a.wav", y)
    h2 = audio.write_wav_pcm16(tmp_path / "b.wav", y)
    assert h1 == h2
    back, sr = audio.read_audio(tmp_path / "a.wav")
    assert sr == 16000 and back.shape[0] == 24000
    up = audio.resample(back, 16000, 24000)
    assert abs(up.shape[0] - 36000) <= 1


def test_unreadable_audio_is_one_line_error(tmp_path):
    p = tmp_path / "bad.wav"
    p.write_bytes(b"not a wav")
    with pytest.raises(InputError, match="bad.wav: cannot read audio"):
        audio.read_audio(p)


def test_pcm16_read_write_roundtrip_is_exact(tmp_path):
    pcm = np.array([-32768, -20000, -1, 0, 1, 16385, 32767], dtype=np.int16)
    audio.write_wav_pcm16(tmp_path / "a.wav", pcm)
    back, _ = audio.read_audio(tmp_path / "a.wav")
    assert np.array_equal(audio.to_pcm16(back), pcm)
