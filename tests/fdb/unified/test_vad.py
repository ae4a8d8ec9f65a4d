"""The scorer's Silero VAD path on real (espeak-ng) speech: batching is exact, outcomes match the audio."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval import vad_batched
from duplexeval.fdb.unified import score
from duplexeval.tts import synthesize
from duplexeval.vad import SCORER_SETTINGS, load_vad
from tests.helpers.fdb import FixtureSample, interrupt_ann, place, write_tree

UI = "synthetic_user_interruption"


@pytest.fixture(scope="module")
def story():
    return synthesize("Once upon a time there was a small village by the sea, and the people fished every day.")


@pytest.fixture(scope="module")
def reply():
    return synthesize("Sure, what would you like to know?")


def test_batched_probabilities_equal_one_file_at_a_time(story, reply):
    vad = load_vad()
    rng = np.random.default_rng(3)
    audios = [
        place(6.0, [(0.5, story.audio)]),
        place(3.01, [(1.0, reply.audio * 0.5)]),  # not a multiple of 512 samples
        (rng.standard_normal(9000) * 0.01).astype(np.float32),
        place(1.0, []),
    ]
    batched = vad_batched.batch_probs(vad, audios)
    for a, p in zip(audios, batched):
        assert np.array_equal(p, vad.probs(a))


def test_segment_files_equals_segments_per_file(tmp_path, story, reply, vad_path):
    import soundfile as sf

    vad = load_vad()
    paths, audios = [], []
    for k, (start, T) in enumerate([(0.5, 8.0), (2.0, 9.0), (4.0, 7.5)]):
        a = place(T, [(start, story.audio), (start + 6.5, reply.audio)])
        p = tmp_path / f"{k}.wav"
        sf.write(str(p), a, 16000, subtype="PCM_16")
        paths.append(p)
        audios.append(sf.read(str(p), dtype="float32")[0])
    want = [vad.segments(a, SCORER_SETTINGS) for a in audios]
    assert vad_batched.segment_files(paths, jobs=1, batch=2) == want
    assert vad_batched.segment_files(paths, jobs=2, batch=32) == want


def test_interruption_outcomes_from_real_speech(tmp_path, story, reply, vad_path):
    # The model tells a story from 6.0 s; the user interrupts at S = 8.0 until R = 10.0.
    # r1 stops at 9.0 s (audio cut) and replies at 11.0 s; r2 keeps talking through R; r3 is silent at S.
    S, R, T = 8.0, 10.0, 20.0
    cut = story.audio[: int(3.0 * 16000)]
    r1 = place(T, [(6.0, cut), (11.0, reply.audio)])
    r2 = place(T, [(6.0, story.audio)])
    r3 = place(T, [(11.0, reply.audio)])
    words_r1 = [(w.text, 11.0 + w.start_s, 11.0 + w.end_s) for w in reply.words]
    words_r2 = [(w.text, 6.0 + w.start_s, 6.0 + w.end_s) for w in story.words if 6.0 + w.start_s >= R]
    root = write_tree(
        tmp_path / "t",
        [
            FixtureSample(UI, "r1", T, interrupt_ann(S, R), words_r1, audio=r1),
            FixtureSample(UI, "r2", T, interrupt_ann(S, R), words_r2, audio=r2),
            FixtureSample(UI, "r3", T, interrupt_ann(S, R), words_r1, audio=r3),
        ],
    )
    res = score(root, jobs=1)
    rows = {r.sample_id: r.to_json() for r in res.rows}
    assert rows["r1"]["outcome"] == "response"
    assert rows["r1"]["latency_s"] == pytest.approx(11.0 + reply.words[0].start_s - R, abs=1e-6)
    # The speech covering S ends at the last voiced sample we kept (at most 9.0 s), give or take
    # a few 32 ms VAD frames and the 100 ms minimum silence.
    true_end = 6.0 + (np.flatnonzero(np.abs(cut) > 1e-4)[-1] + 1) / 16000
    assert rows["r1"]["stop_s"] == pytest.approx(true_end - S, abs=0.15)
    assert rows["r2"]["outcome"] == "speaking_at_end" and rows["r2"]["latency_s"] is None
    assert rows["r3"]["outcome"] == "not_exercised" and rows["r3"]["speech_before_onset"] is False
    assert res.unified["vad"]["settings"]["speech_pad_ms"] == 0
    assert res.subset(UI)["metrics"]["exercised_rate"]["count"] == 2


def test_early_stop_gives_the_whole_file_segments_up_to_the_limit(tmp_path, story, reply, vad_path):
    """Stopping the scan once the segments starting at or before R are final changes none of them."""
    import soundfile as sf

    vad = load_vad()
    a = place(14.0, [(0.3, story.audio), (7.5, reply.audio), (10.0, reply.audio * 0.7)])
    p = tmp_path / "a.wav"
    sf.write(str(p), a, 16000, subtype="PCM_16")
    pcm = sf.read(str(p), dtype="float32")[0]
    full = vad.segments(pcm, SCORER_SETTINGS)
    assert len(full) >= 4
    limits = [0, 1, len(pcm) - 1, len(pcm) + 5000]
    for s, e in full:  # at, just before and just after every boundary
        limits += [s - 1, s, s + 1, e - 1, e, e + 1, (s + e) // 2]
    limits = sorted({max(0, x) for x in limits})
    got = vad_batched.segment_files([p] * len(limits), jobs=2, batch=8, limits=limits)
    for lim, segs in zip(limits, got):
        assert segs == [(s, e) for s, e in full if s <= lim], lim
