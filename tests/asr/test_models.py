"""Real models on short espeak-ng speech (all shipped in wheels): words, times, cut at R, silence, noise.

Tolerances come from benchmarks/asr_accuracy.py (first-word onset error p90 ~35 ms, max ~150 ms on
espeak speech); each test's margin is a few times the error measured on its own clip.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplexeval.asr.numbers import readings
from duplexeval.errors import RefusalError
from duplexeval.fdb import asr_stage
from duplexeval.fdb.transcript import transcript_bytes
from duplexeval.fdb.tree import load_asr
from duplexeval.tts import synthesize
from tests.helpers.fdb import FixtureSample, interrupt_ann, place, write_tree

SR = 16000
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def whisper_align():
    from duplexeval.asr.whisper_align import WhisperAlignBackend

    be = WhisperAlignBackend(threads=2)
    be.load()
    return be


@pytest.fixture(scope="module")
def reply():
    """A reply that starts 1.2 s into a 5 s output."""
    sp = synthesize("Sure, I can help you with that.", rate=170)
    at = 1.2
    return place(5.0, [(at, sp.audio)]), [(w.text, at + w.start_s) for w in sp.words]


def _spoken(text: str) -> str:
    r = readings(text)
    return " ".join(r[0]) if r else ""


def test_words_and_times_on_a_reply(whisper_align, reply) -> None:
    audio, truth = reply
    words = whisper_align.transcribe(audio)
    assert [_spoken(w.text) for w in words] == [_spoken(t) for t, _ in truth]
    assert abs(words[0].start - truth[0][1]) < 0.06  # measured on this clip: ~20 ms
    errs = [abs(w.start - t) for w, (_, t) in zip(words, truth)]
    assert max(errs) < 0.12
    assert all(w.start <= w.end for w in words)
    assert all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))
    assert whisper_align.last_stats["unaligned"] == 0


def test_same_audio_same_bytes_whatever_came_before(whisper_align, reply) -> None:
    # pocketsphinx keeps state between utterances; the backend resets it per sample so that the
    # result does not depend on which samples a worker process happened to see first (--jobs).
    from duplexeval.asr.whisper_align import WhisperAlignBackend

    audio, _ = reply
    a = transcript_bytes(whisper_align.transcribe(audio))
    whisper_align.transcribe(place(6.0, [(0.5, synthesize("The total comes to 4572 dollars.", voice="en-gb").audio)]))
    b = transcript_bytes(whisper_align.transcribe(audio.copy()))
    fresh = WhisperAlignBackend(threads=1)
    c = transcript_bytes(fresh.transcribe(audio))
    assert a == b == c


def test_no_words_on_silence_or_noise(whisper_align) -> None:
    rng = np.random.default_rng(3)
    assert whisper_align.transcribe(np.zeros(4 * SR, np.float32)) == []
    assert whisper_align.transcribe((rng.standard_normal(4 * SR) * 0.01).astype(np.float32)) == []


def test_stage_cuts_at_R_and_shifts_back(tmp_path: Path) -> None:
    first = synthesize("Let me tell you about the weather.", rate=170)
    second = synthesize("Okay, I will stop now.", rate=170)
    a1, a2 = 0.5, 0.5 + first.duration_s + 1.0
    T = a2 + second.duration_s + 1.0
    R = round(a2 - 0.4, 3)  # the user's interrupt ends in the pause before the second sentence
    audio = place(T, [(a1, first.audio), (a2, second.audio)])
    s = FixtureSample("synthetic_user_interruption", "3", round(T, 4), annotation=interrupt_ann(a1 + 0.5, R),
                      words=None, audio=audio)
    tree = write_tree(tmp_path / "t", [s], asr=False)
    res = asr_stage.asr(tree, jobs=1, progress=False)
    assert res.n_ok == 1, res.errors
    out = json.loads((tree / "synthetic_user_interruption" / "3" / "output.json").read_text())
    texts = [_spoken(c["text"]) for c in out["chunks"]]
    assert texts == [_spoken(w.text) for w in second.words]  # nothing from before R
    starts = [c["timestamp"][0] for c in out["chunks"]]
    assert min(starts) >= R
    assert abs(starts[0] - (a2 + second.words[0].start_s)) < 0.06
    rec, _ = load_asr(tree)
    assert rec.samples["synthetic_user_interruption/3"].extra["cut_s"] == R
    assert rec.backend["name"] == "whisper-align"
    assert rec.backend["model"]["sha256"].startswith("1a5afae06a4db91c")


def test_pocketsphinx_backend_times(reply) -> None:
    from duplexeval.asr.pocketsphinx_free import PocketsphinxBackend

    audio, truth = reply
    words = PocketsphinxBackend().transcribe(audio)
    assert len(words) >= 3  # free decoding gets words wrong, but it finds speech where it is
    assert abs(words[0].start - truth[0][1]) < 0.1
    assert PocketsphinxBackend().transcribe(np.zeros(3 * SR, np.float32)) == []


def test_bundled_model_hash_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval.asr import whisper_align

    assert (whisper_align.bundled_model_dir() / "model.bin").is_file()
    monkeypatch.setattr(whisper_align, "BUNDLED_MODEL_SHA256", "0" * 64)
    with pytest.raises(RefusalError, match="not the pinned"):
        whisper_align.bundled_model_dir()


def test_faster_whisper_backend_uses_whisper_times(reply, tmp_path: Path) -> None:
    from duplexeval.asr.faster_whisper_backend import FasterWhisperBackend
    from duplexeval.asr.whisper_align import bundled_model_dir
    from duplexeval.errors import InputError

    audio, truth = reply
    be = FasterWhisperBackend(model=bundled_model_dir(), threads=2)
    sig = be.signature()
    assert sig["name"] == "faster-whisper" and "aligner" not in sig["options"]
    assert sig["model"]["source"] == "local directory" and sig["model"]["files"]["model.bin"].startswith("1a5afae0")
    words = be.transcribe(audio)
    assert [_spoken(w.text) for w in words] == [_spoken(t) for t, _ in truth]
    assert abs(words[0].start - truth[0][1]) < 0.4  # Whisper's own times: the benchmark shows ~0.2 s errors
    with pytest.raises(InputError, match="model directory"):
        FasterWhisperBackend(model=tmp_path).signature()


def test_separate_regions_share_one_whisper_pass(whisper_align) -> None:
    a = synthesize("Yeah.", rate=170)
    b = synthesize("Okay, got it.", rate=170)
    starts = [1.0, 6.0]
    audio = place(9.0, [(starts[0], a.audio), (starts[1], b.audio)])
    words = whisper_align.transcribe(audio)
    assert whisper_align.last_stats["regions"] == 2
    truth = [(w.text, st + w.start_s) for sp, st in ((a, starts[0]), (b, starts[1])) for w in sp.words]
    assert [_spoken(w.text) for w in words] == [_spoken(t) for t, _ in truth]
    for w, (_, t) in zip(words, truth):
        assert abs(w.start - t) < 0.08, (w, t)


def test_repeated_one_word_regions_each_keep_their_word(whisper_align) -> None:
    """Four "yeah"s in 20 s: before words went to regions by Whisper's loose times, 8.0 was lost and 16.2 doubled."""
    sp = synthesize("yeah", rate=170)
    starts = [3.6, 8.0, 12.0, 16.2]
    words = whisper_align.transcribe(place(20.0, [(t, sp.audio) for t in starts]))
    assert whisper_align.last_stats["regions"] == 4
    assert [_spoken(w.text) for w in words] == ["yeah"] * 4
    for w, t in zip(words, starts):
        assert abs(w.start - t) < 0.06, (w, t)  # measured: ~25 ms early on each


def test_a_region_the_packed_pass_leaves_empty_gets_its_own_pass(whisper_align) -> None:
    """The demo's backchannel output: five "yeah"s, one cut short by a barge-in; tiny.en wrote four for five."""
    sp = synthesize("yeah", rate=170)
    cut = sp.audio[: int(0.182 * SR)]
    starts = [3.648, 5.696, 8.064, 12.032, 16.0]
    audio = place(20.08, [(t, cut if k == 1 else sp.audio) for k, t in enumerate(starts)])
    words = whisper_align.transcribe(audio)
    assert whisper_align.last_stats["regions"] == 5
    assert whisper_align.last_stats["second_passes"] == 1  # the packed pass wrote four words for the five
    assert [_spoken(w.text) for w in words] == ["yeah"] * 5
    for w, t in zip(words, starts):
        assert abs(w.start - t) < 0.06, (w, t)
