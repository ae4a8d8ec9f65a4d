"""Conversation manifests: stereo audio, words / segments / VAD per channel, both assignments, errors, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.controller.format import data as cdata
from duplexeval.controller.labels.sources import assignments, conversation_clips, read_manifest
from duplexeval.errors import InputError
from tests.helpers.cli import run_cli


def _stereo(path, user, agent, sr=24000):
    sf.write(str(path), np.stack([user, agent], axis=1), sr, subtype="PCM_16")


def _tone(spans, T, sr=24000):
    t = np.arange(int(T * sr)) / sr
    a = np.zeros(t.size, np.float32)
    for s, e in spans:
        m = (t >= s) & (t < e)
        a[m] = 0.3 * np.sin(2 * np.pi * 200 * t[m])
    return a


@pytest.fixture()
def manifest(tmp_path):
    _stereo(tmp_path / "c1.wav", _tone([(0.5, 2.0)], 5.0), _tone([(2.4, 4.0)], 5.0))
    lines = [
        {"id": "c1", "audio": "c1.wav", "user": {"segments": [[0.5, 2.0]]},
         "agent": {"words": [["hi", 2.4, 3.0], ["there", 3.1, 4.0]]}, "assignments": "both"},
        {"id": "c2", "duration_s": 6.0, "user": {"segments": [[0.0, 1.0], [1.5, 2.5]]},
         "agent": {"segments": [[3.0, 4.0]]}},
    ]  # fmt: skip
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_manifest_assignments_and_clips(manifest):
    convs = list(read_manifest(manifest))
    assert [c.id for c in convs] == ["c1", "c2"] and convs[0].duration_s == pytest.approx(5.0)
    assert [cid for cid, _ in assignments(convs[0])] == ["c1.a", "c1.b"]
    clips = list(conversation_clips(convs))
    assert [c.meta.id for c in clips] == ["c1.a", "c1.b", "c2"]
    a, b, c2 = clips
    assert a.meta.group == b.meta.group == "c1"
    assert a.meta.turn_probes == [cdata.TurnProbe(2.0, 0.5, 4.0)] and b.meta.turn_probes == []
    assert a.frames.level_db[10] > -20 and a.frames.level_db[40] == -np.inf  # user channel, resampled from 24 kHz
    assert b.frames.level_db[40] > -20  # swapped: the agent's channel is the microphone
    assert c2.frames.level_db is None and c2.meta.pause_probes == [cdata.PauseProbe(1.0, 1.5, 0.0, 1.5)]
    assert a.meta.extra["label_source"] == "user:segments,agent:words"


def test_manifest_transcript_files(tmp_path):
    (tmp_path / "u.json").write_text(json.dumps({"text": "so yes", "chunks": [
        {"text": " so", "timestamp": [0.5, 0.9]}, {"text": " yes", "timestamp": [1.0, None]}]}))  # fmt: skip
    (tmp_path / "a.json").write_text(json.dumps({"text": "ok then", "chunks": [
        {"text": "ok", "timestamp": [1.5, 1.9]}, {"text": "then", "timestamp": [2.0, 2.8]}]}))  # fmt: skip
    (tmp_path / "m.jsonl").write_text(json.dumps(
        {"id": "t", "duration_s": 4, "user": {"transcript": "u.json"}, "agent": {"transcript": "a.json"}}) + "\n")
    (clip,) = list(conversation_clips(read_manifest(tmp_path / "m.jsonl")))
    # a null end counts as zero length at its start: the user's speech ends at 1.0 s
    assert clip.meta.turn_probes == [cdata.TurnProbe(1.0, 0.5, 3.0)]
    assert clip.meta.extra["label_source"] == "user:transcript,agent:transcript"


def test_manifest_vad_fallback(tmp_path):
    from duplexeval.tts import synthesize

    u = synthesize("can you hear me now", rate=170).audio
    ag = synthesize("yes I can hear you", voice="en-gb", rate=170).audio
    T = 1.0 + u.size / 16000 + 0.6 + ag.size / 16000 + 1.0
    user = np.zeros(int(T * 16000), np.float32)
    agent = np.zeros_like(user)
    user[16000 : 16000 + u.size] = u
    a0 = 16000 + u.size + int(0.6 * 16000)
    agent[a0 : a0 + ag.size] = ag
    _stereo(tmp_path / "v.wav", user, agent, sr=16000)
    (tmp_path / "m.json").write_text(json.dumps([{"id": "v", "audio": "v.wav"}]))
    (clip,) = list(conversation_clips(read_manifest(tmp_path / "m.json")))
    assert clip.meta.extra["label_source"] == "user:silero-vad,agent:silero-vad"
    (probe,) = clip.meta.turn_probes
    # Silero (30 ms pad) finds the user's end within 0.15 s of the true end
    assert abs(probe.turn_end_s - (1.0 + u.size / 16000)) < 0.15


@pytest.mark.parametrize(
    ("entry", "msg"),
    [
        ({"id": "../x", "duration_s": 1}, "not allowed"),
        ({"id": "x", "user": {"segments": [[0, 1]]}, "agent": {"segments": []}}, "duration_s"),
        ({"id": "x", "duration_s": 2, "user": {"segments": [[1, 0.5]]}, "agent": {"segments": []}}, "before start"),
        ({"id": "x", "duration_s": 2, "user": {"words": [["a", 0, 1, 2]]}, "agent": {"segments": []}}, "words must be"),
        ({"id": "x", "duration_s": 2, "user": {"segments": []}}, "needs 'words' or 'segments'"),
        ({"id": "x", "duration_s": 2, "user": {"segments": []}, "agent": {"segments": []}, "assignments": "x"},
         "assignments"),
        ({"id": "x", "duration_s": 2, "user": {"segments": [[0, 3]]}, "agent": {"segments": []}},
         "conversation x: user speech ends at 3"),
    ],
)
def test_manifest_errors(tmp_path, entry, msg):
    p = tmp_path / "m.jsonl"
    p.write_text(json.dumps(entry) + "\n")
    with pytest.raises(InputError, match=msg):
        list(conversation_clips(read_manifest(p)))


def test_cli_label_and_run(manifest, tmp_path, capsys):
    from duplexeval.cli import main

    out = tmp_path / "lab"
    with pytest.raises(SystemExit) as ex:
        main(["controller", "label", "--out", str(out), "--conversations", str(manifest), "--rule", "probe_tail_s=1.0"])
    assert ex.value.code == 0
    d = cdata.load_data(out)
    assert d.clips[0].turn_probes == [cdata.TurnProbe(2.0, 0.5, 3.0)] and d.info["label_rules"]["probe_tail_s"] == 1.0
    # c1.a and c2 each have a shift; floor 1.5 s (c1.a) + 1.6 s (c1.b, swapped) + 2.5 s (c2) = 5.6 s
    assert "3 clips, 2 turn probes, 1 pause probes" in capsys.readouterr().out and d.reference_s() == pytest.approx(5.6)
    with pytest.raises(SystemExit) as ex:
        main(["controller", "label", "--out", str(out), "--conversations", str(manifest), "--rule", "nope=1"])
    assert ex.value.code == 2
    with pytest.raises(SystemExit) as ex:
        main(
            ["controller", "run", "--controller", "baseline:silence", "--out", str(tmp_path / "run"), "--conversations",
             str(manifest)])
    assert ex.value.code == 2  # c2 has no audio: a controller cannot run on it
    assert "needs the user audio" in capsys.readouterr().err


def test_controller_label_takes_out_option_as_well_as_the_argument(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.controller.labels.conversations import write_conversations

    manifest = write_conversations(tmp_path / "conv", 1, seed=0, exchanges=1)
    rc, out, err = run_cli(["controller", "label", "--out", str(tmp_path / "a"), "--conversations", str(manifest)],
                           capsys)
    assert rc == 0 and "wrote" in out, err
    rc, out, err = run_cli(["controller", "label", str(tmp_path / "b"), "--conversations", str(manifest)], capsys)
    assert rc == 0 and "a positional OUT is deprecated; use --out DIR" in err
    assert (tmp_path / "a" / "clips.jsonl").read_bytes() == (tmp_path / "b" / "clips.jsonl").read_bytes()
    rc, _out, err = run_cli(["controller", "label", "--conversations", str(manifest)], capsys)
    assert rc == 2 and "--out" in err and err.count("\n") == 1
