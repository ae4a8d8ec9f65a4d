"""`duplexeval fdb synth`: script validation, layouts and annotations, the backchannel rule, determinism, demo cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb import synth as S
from duplexeval.fdb.synth.parse import Voice
from duplexeval.fdb.tasks.backchannel.synth import BC_EPSILON, BC_MIN_GAP_S, backchannel_gt

SR = 16000
TOL = 2.5 / SR  # trimming to the voiced extent rounds to whole samples


def _script(samples, **top):
    return S.parse_script({"name": "t", "samples": samples, **top}, "t.yaml")


PAUSE = {"subset": "synthetic_pause_handling", "id": 1,
         "parts": ["I was thinking about", {"pause": 1.5}, "going to the beach", {"pause": 0.8}, "tomorrow."]}
TURN = {"subset": "candor_turn_taking", "id": "7", "text": "What do you think about that?", "voice": "en-gb",
        "rate": 180}
INTR = {"subset": "synthetic_user_interruption", "id": 3, "context": "Tell me a story about a dog.",
        "interrupt": "Wait, make it a cat."}
BC = {"subset": "icc_backchannel", "id": 0, "voice": "en-us+f3",
      "parts": ["We drove for hours.", {"pause": 0.7}, "Then we stopped for lunch.", {"pause": 0.3}, "It was good."]}


# ---------------------------------------------------------------- script validation


@pytest.mark.parametrize(
    "sample, match",
    [
        ({**PAUSE, "parts": [{"pause": 1.0}, "hello"]}, "start and end with speech"),
        ({**PAUSE, "parts": ["hello there"]}, "needs at least one"),
        ({**PAUSE, "parts": ["a", {"pause": -1}, "b"]}, "parts\\[1\\].pause"),
        ({**PAUSE, "colour": "red"}, "unknown key"),
        ({**TURN, "text": ""}, "'text' must be a non-empty string"),
        ({**INTR, "interrupt": None}, "'interrupt'"),
        ({k: v for k, v in INTR.items() if k != "context"}, "missing 'context'"),
        ({**BC, "id": "a1"}, "digit strings"),
        ({**TURN, "rate": 20}, "'rate'"),
        ({**TURN, "id": "../x"}, "not allowed"),
        ({**TURN, "subset": "nope"}, "unknown subset"),
    ],
)
def test_script_errors_are_one_line_and_name_the_sample(sample, match):
    with pytest.raises(InputError, match=match) as err:
        _script([sample])
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("t.yaml")


def test_unknown_voice_names_the_sample(tmp_path):
    sc = _script([{**TURN, "voice": "xx-nowhere"}])
    with pytest.raises(InputError, match=r"^t.yaml: sample candor_turn_taking/7: espeak-ng has no voice 'xx-nowhere'"):
        S.synthesize_dataset(sc, tmp_path / "o")
    assert not (tmp_path / "o").exists() and not list(tmp_path.iterdir())  # the failed build left nothing


def test_script_duplicates_and_defaults():
    with pytest.raises(InputError, match="duplicate"):
        _script([TURN, TURN])
    sc = _script([PAUSE, TURN], defaults={"voice": "en-us+m3", "rate": 150})
    pause, turn = sc.samples  # canonical order: pause subsets first
    assert pause.voice == Voice("en-us+m3", 150, 50)
    assert (turn.voice.voice, turn.voice.rate, turn.seconds("tail"), turn.seconds("partner_gap")) == ("en-gb", 180, 8.0,
                                                                                                     0.4)
    assert pause.id == "1"  # YAML integers become folder names


def test_script_hash_ignores_formatting(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text("name: t\nsamples:\n  - {subset: candor_turn_taking, id: 1, text: 'Hi   there.'}\n")
    b = tmp_path / "b.json"
    b.write_text(
        json.dumps({"name": "t", "samples": [{"subset": "candor_turn_taking", "id": "1", "text": "Hi there."}]}))
    assert S.load_script(a).sha256 == S.load_script(b).sha256
    c = tmp_path / "c.yaml"
    c.write_text("name: t\nsamples: [{subset: candor_turn_taking, id: 1, text: 'Hi there!'}]\n")
    assert S.load_script(c).sha256 != S.load_script(a).sha256


# ---------------------------------------------------------------- layouts


def test_pause_layout_is_exact():
    sc = _script([PAUSE])
    r = S.render_sample(sc.samples[0])
    assert [p["text"] for p in r.annotation] == ["[PAUSE]", "[PAUSE]"]
    (a1, b1), (a2, b2) = (p["timestamp"] for p in r.annotation)
    assert b1 - a1 == pytest.approx(1.5, abs=TOL) and b2 - a2 == pytest.approx(0.8, abs=TOL)
    assert a1 < b1 < a2 < b2 < r.T
    # The pauses are digital silence; speech right around them is not.
    for a, b in ((a1, b1), (a2, b2)):
        assert np.all(r.audio[int(np.ceil(a * SR)) + 1 : int(b * SR) - 1] == 0)
        assert np.abs(r.audio[int(a * SR) - 400 : int(a * SR)]).max() > 0.01
        assert np.abs(r.audio[int(b * SR) : int(b * SR) + 400]).max() > 0.01
    # The pause bounds are true word times: end of "about" and start of "going".
    words = r.transcription[0]["item"]
    assert [w["text"] for w in words][:5] == ["I", "was", "thinking", "about", "going"]
    assert words[3]["timestamp"][1] == a1 and words[4]["timestamp"][0] == b1
    assert r.words[0][1] == pytest.approx(0.2, abs=TOL)  # lead silence


def test_turn_taking_layout():
    r = S.render_sample(_script([TURN]).samples[0])
    (ann,) = r.annotation
    E, E2 = ann["timestamp"]
    assert ann["text"] == "[TURN-TAKING]" and E2 == pytest.approx(E + 0.4)
    assert E == r.transcription[0]["item"][-1]["timestamp"][1]
    assert r.T - E == pytest.approx(8.0, abs=TOL)
    assert np.all(r.audio[int(np.ceil(E * SR)) + 1 :] == 0)


def test_interruption_layout_matches_the_official_one():
    r = S.render_sample(_script([INTR]).samples[0])
    (ann,) = r.annotation
    assert ann["context"] == INTR["context"] and ann["interrupt"] == INTR["interrupt"]
    Sx, R = ann["timestamp"]
    words = r.words
    ctx_end = [w for w in words if w[0] == "dog"][0][2]
    assert Sx - ctx_end == pytest.approx(7.0, abs=TOL)
    assert r.T - R == pytest.approx(15.0, abs=TOL)
    assert Sx == pytest.approx(words[-5][1]) and R == pytest.approx(words[-1][2])  # "Wait, make it a cat."
    assert r.extra_wavs["interrupt.wav"].shape[0] == pytest.approx((R - Sx) * SR, abs=3)
    ctx = r.extra_wavs["context.wav"]
    start = int(round(0.2 * SR))
    assert np.array_equal(r.audio[start : start + ctx.shape[0]], ctx)


# ---------------------------------------------------------------- backchannel ground truth


def test_backchannel_gt_rule_known_answer():
    words = [("a", 0.2, 1.0), ("b", 1.1, 2.0), ("c", 2.8, 3.5), ("d", 3.9, 4.3)]
    gt = np.array(backchannel_gt(words, T=5.0))
    assert gt.shape == (26,)  # int(5.0 / 0.2) + 1
    assert gt.sum() == pytest.approx(1.0, abs=1e-12)
    raw = np.zeros(26)
    raw[10:14] += 0.8 / 4  # gap 2.0..2.8: window 2.0..2.6 -> bins 10..13, weight 0.8
    raw[17:20] += 0.4 / 3  # gap 3.5..3.9 (0.4 s): bins 17..19, weight 0.4; 1.0..1.1 is too short
    expect = (raw + BC_EPSILON) / (raw + BC_EPSILON).sum()
    assert np.allclose(gt, expect, rtol=1e-12, atol=0)
    assert gt[5] < 1e-11 and gt[10] > 0.1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 2.0), st.floats(0.01, 1.5)), min_size=1, max_size=12), st.floats(0.0, 3.0))
def test_backchannel_gt_is_a_distribution(steps, tail):
    words, t = [], 0.0
    for gap, dur in steps:
        words.append(("w", t + gap, t + gap + dur))
        t += gap + dur
    T = t + tail
    gt = np.array(backchannel_gt(words, T))
    assert gt.shape == (int(T / 0.2) + 1,)
    assert np.all(gt > 0) and abs(gt.sum() - 1.0) < 1e-12
    touched = set()
    for a, b in zip(words, words[1:]):
        g = b[1] - a[2]
        if g >= BC_MIN_GAP_S:
            touched |= {min(k, len(gt) - 1) for k in range(int(a[2] / 0.2), int((a[2] + min(g, 0.6)) / 0.2) + 1)}
    if touched:  # the mass sits in the bins right after pauses; every other bin holds only epsilon
        assert int(gt.argmax()) in touched
        assert all(gt[k] < 1e-9 for k in range(len(gt)) if k not in touched)
    else:
        assert gt.max() - gt.min() < 1e-15


def test_backchannel_gt_without_pauses_is_uniform():
    gt = backchannel_gt([("a", 0.0, 1.0), ("b", 1.1, 2.0)], T=2.0)
    assert len(gt) == 11 and max(gt) - min(gt) < 1e-15


# ---------------------------------------------------------------- datasets on disk


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_generate_twice_gives_identical_bytes(tmp_path):
    sc = _script([PAUSE, TURN, INTR, BC])
    a = S.synthesize_dataset(sc, tmp_path / "a")
    b = S.synthesize_dataset(sc, tmp_path / "b")
    ta, tb = _tree_bytes(a), _tree_bytes(b)
    assert ta == tb
    assert set(ta) == {
        "dataset.json", "icc_gt_distribution.json",
        "synthetic_pause_handling/1/input.wav", "synthetic_pause_handling/1/pause.json",
        "synthetic_pause_handling/1/transcription.json", "candor_turn_taking/7/input.wav",
        "candor_turn_taking/7/turn_taking.json", "candor_turn_taking/7/transcription.json",
        "synthetic_user_interruption/3/input.wav", "synthetic_user_interruption/3/interrupt.json",
        "synthetic_user_interruption/3/transcription.json", "synthetic_user_interruption/3/context.wav",
        "synthetic_user_interruption/3/interrupt.wav", "icc_backchannel/0/input.wav",
        "icc_backchannel/0/transcription.json",
    }  # fmt: skip
    info = json.loads(ta["dataset.json"])
    assert info["kind"] == S.SYNTH_KIND and info["script_sha256"] == sc.sha256
    assert info["generator"]["espeak_ng"] and info["generator"]["sample_rate"] == SR
    assert info["declared"] == {"synthetic_pause_handling": 1, "candor_turn_taking": 1,
                                "synthetic_user_interruption": 1, "icc_backchannel": 1}
    assert info["result_sha256"] == S.result_hash(a) and S.verify(a)
    gt = json.loads(ta["icc_gt_distribution.json"])
    assert list(gt) == ["0"] and abs(sum(gt["0"]) - 1) < 1e-12
    audio, sr = sf.read(a / "icc_backchannel/0/input.wav", dtype="int16")
    assert sr == SR and audio.ndim == 1 and len(gt["0"]) == int(len(audio) / SR / 0.2) + 1
    # Editing a file breaks the recorded hash.
    (a / "candor_turn_taking/7/turn_taking.json").write_text("[]")
    assert not S.verify(a)


def test_the_same_script_is_up_to_date_another_is_refused(tmp_path):
    sc = _script([TURN])
    out = S.synthesize_dataset(sc, tmp_path / "o")
    made = (out / "dataset.json").stat().st_mtime_ns
    assert S.synthesize_dataset(sc, out) == out and (out / "dataset.json").stat().st_mtime_ns == made  # not redone
    sc2 = _script([{**TURN, "text": "Something else entirely?"}])
    with pytest.raises(RefusalError, match="exists and was made from another script or generator; pass --force"):
        S.synthesize_dataset(sc2, out)
    S.synthesize_dataset(sc2, out, force=True)
    assert json.loads((out / "dataset.json").read_text())["script_sha256"] == sc2.sha256
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(RefusalError, match="not a duplexeval synth dataset"):
        S.synthesize_dataset(sc, other, force=True)
    assert (other / "notes.txt").read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no build folders left behind


def test_demo_cache_builds_reuses_and_repairs(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLEXEVAL_CACHE", str(tmp_path / "cache"))
    p = S.ensure_demo()
    assert p.parent == tmp_path / "cache" and p.name == f"demo-{S.demo_key()}"
    info = json.loads((p / "dataset.json").read_text())
    assert info["declared"] == {
        "candor_pause_handling": 2, "synthetic_pause_handling": 2, "candor_turn_taking": 4,
        "synthetic_user_interruption": 4, "icc_backchannel": 2,
    }  # fmt: skip
    voices = {r["voice"] for r in info["samples"]}
    rates = {r["rate"] for r in info["samples"]}
    assert len(voices) >= 3 and len(rates) >= 3
    wav = p / "candor_turn_taking/1/input.wav"
    before = wav.read_bytes()
    mtime = os.stat(p / "dataset.json").st_mtime_ns
    assert S.ensure_demo() == p and os.stat(p / "dataset.json").st_mtime_ns == mtime  # reused
    wav.write_bytes(before[:-100])  # damage: regenerated because the recorded hash no longer matches
    assert S.ensure_demo() == p
    assert wav.read_bytes() == before and S.verify(p)


# ---------------------------------------------------------------- CLI


def _cli(argv, capsys):
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as ex:
        main(argv)
    out = capsys.readouterr()
    return ex.value.code, out.out, out.err


def test_cli(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text("name: mine\nsamples:\n  - {subset: candor_turn_taking, id: 1, text: 'Are you there?'}\n")
    code, out, _ = _cli(["fdb", "synth", str(script), "--out", str(tmp_path / "o"), "-q"], capsys)
    assert code == 0 and out.strip() == str(tmp_path / "o")
    assert (tmp_path / "o/candor_turn_taking/1/turn_taking.json").is_file()
    # the same script: up to date
    code, out, err = _cli(["fdb", "synth", str(script), "--out", str(tmp_path / "o")], capsys)
    assert code == 0 and out.strip() == str(tmp_path / "o") and err.splitlines()[-1].startswith("synth: exit 0:")
    script.write_text("name: mine\nsamples:\n  - {subset: candor_turn_taking, id: 1, text: 'Is anyone there?'}\n")
    code, _, err = _cli(["fdb", "synth", str(script), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.startswith("duplexeval: error:") and "--force" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsamples:\n  - {subset: icc_backchannel, id: x1, parts: ['hello']}\n")
    code, _, err = _cli(["fdb", "synth", str(bad), "--out", str(tmp_path / "b")], capsys)
    assert code == 2 and "sample icc_backchannel/x1" in err and err.count("\n") == 1
    code, _, err = _cli(["fdb", "synth", str(script)], capsys)
    assert code == 2 and "--out" in err
