"""The official backchannel rule's batched VAD equals the frame-by-frame path, segment for segment.

Real audio: every committed reference clip (espeak-ng speech, speech in noise, noise, silence, a one-frame
clip), long ICC-like concatenations of them, and the same speech resampled to 24 kHz (the official call takes
any rate as 16 kHz). The batched path steps all files together (`vad_batched.segment_audios`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.audio import read_audio
from duplexeval.fdb.tasks.backchannel.rules import vad_segments_s
from duplexeval.vad import OFFICIAL_SETTINGS, SCORER_SETTINGS, VadSettings, load_vad
from duplexeval.vad_batched import segment_audios
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "vad"
_WANT: dict = {}  # frame-by-frame reference segments, shared by both VAD paths' runs


def _clips() -> dict[str, np.ndarray]:
    ref = json.loads((DATA / "reference.json").read_text())
    return {name: read_audio(DATA / c["file"])[0].astype(np.float32) for name, c in sorted(ref["clips"].items())}


@pytest.fixture(scope="module")
def audios() -> list[np.ndarray]:
    import soxr

    clips = _clips()
    out = list(clips.values())
    order = ["speech_pauses", "silence", "short_words", "noise", "long_speech", "speech_noise"]
    out.append(np.concatenate([clips[k] for k in order]))  # about 60 s, ICC-like
    out.append(np.concatenate([clips[k] for k in reversed(order)] * 2))
    out.append(soxr.resample(clips["speech_pauses"], 16000, 24000).astype(np.float32))  # a 24 kHz output
    out.append(np.zeros(0, dtype=np.float32))
    return out


def test_official_vad_batched_equals_frame_by_frame(audios, vad_path):
    vad = load_vad()
    if "official_s" not in _WANT:
        _WANT["official_s"] = [vad.segments_s(a, OFFICIAL_SETTINGS, official_rounding=True) for a in audios]
    want = _WANT["official_s"]
    assert vad_segments_s(audios, jobs=2) == want
    assert vad_segments_s(audios, jobs=1) == want
    assert sum(len(w) for w in want) > 20  # the clips do hold speech


@pytest.mark.parametrize(
    "settings",
    [OFFICIAL_SETTINGS, SCORER_SETTINGS, VadSettings(max_speech_s=3.0),
     VadSettings(min_silence_ms=60, speech_pad_ms=120)],
)
def test_segment_audios_equals_per_file_segments_in_samples(audios, settings, vad_path):
    vad = load_vad()
    if settings not in _WANT:
        _WANT[settings] = [vad.segments(a, settings) for a in audios]
    want = _WANT[settings]
    assert segment_audios(audios, settings, jobs=2, batch=3) == want


def test_outputs_read_one_at_a_time_give_the_same_segments(audios, vad_path):
    """`vad_segments_s_read`: each output read when a thread gets to it, the same segments as all read first; with
    one thread on the sequence model no output read before is still held when the next is read."""
    import gc
    import weakref

    from duplexeval.fdb.tasks.backchannel.rules import vad_segments_s_read

    want = vad_segments_s(audios, jobs=1)
    held: list[weakref.ref[np.ndarray]] = []
    most = 0

    def reader(k: int):
        def read() -> np.ndarray:
            nonlocal most
            gc.collect()
            most = max(most, sum(r() is not None for r in held))
            a = audios[k].copy()
            held.append(weakref.ref(a))
            return a
        return read

    sizes = [a.size for a in audios]
    assert vad_segments_s_read([reader(k) for k in range(len(audios))], sizes, jobs=1) == want
    assert len(held) == len(audios)
    if vad_path == "sequence":
        assert most == 0
    assert vad_segments_s_read([reader(k) for k in range(len(audios))], sizes, jobs=2) == want


def test_leading_digital_silence_is_skipped_exactly(audios, vad_path):
    """Files that start with exact zeros join the batch late with the shared zero trajectory; probabilities
    and segments stay bit-identical to the frame-by-frame path. -0.0 is not silence."""
    from duplexeval import vad_batched

    vad = load_vad()
    speech_clip = audios[0]
    cases = [
        np.concatenate([np.zeros(16000 * 3 + 100, dtype=np.float32), speech_clip]),  # silence, then speech
        np.concatenate([np.zeros(512 * 7, dtype=np.float32), speech_clip, np.zeros(5000, dtype=np.float32)]),
        np.zeros(16000 * 2, dtype=np.float32),  # silence to the end: never stepped
        np.concatenate([np.full(600, -0.0, dtype=np.float32), speech_clip]),  # negative zeros: stepped
        speech_clip,
        # on a checkpoint
        np.concatenate([np.zeros(512 * 2 * vad_batched.ZERO_CHECKPOINT, dtype=np.float32), speech_clip]),
    ]
    frames, n_frames = vad_batched._frames(cases)
    starts = [vad_batched.leading_silent_frames(frames[j], n_frames[j]) for j in range(len(cases))]
    first_nonzero = [int(np.flatnonzero(c)[0]) if c.any() else None for c in cases]
    assert starts[0] == first_nonzero[0] // 512 >= (16000 * 3 + 100) // 512
    assert starts[1] == first_nonzero[1] // 512 >= 7 and starts[2] == n_frames[2]
    assert starts[3] == 0 and starts[4] == first_nonzero[4] // 512
    for probs, c in zip(vad_batched.batch_probs(vad, cases), cases):
        assert np.array_equal(probs, vad.probs(c))
    for settings in (OFFICIAL_SETTINGS, SCORER_SETTINGS):
        assert segment_audios(cases, settings, jobs=2, batch=2) == [vad.segments(c, settings) for c in cases]
    # int16 files as the scorer reads them, with early stop at a limit
    pcm = [np.round(np.clip(c, -1, 1) * 32767).astype(np.int16) for c in cases]
    limits = [16000 * 4, None, 16000, 16000 * 2, 16000, 16000 * 3]
    got = vad_batched.batch_segments(vad, pcm, limits, SCORER_SETTINGS)
    for g, c, lim in zip(got, pcm, limits):
        whole = vad.segments(c.astype(np.float32) / 32768.0, SCORER_SETTINGS)
        assert g == [(s, e) for s, e in whole if lim is None or s <= lim]
    if vad_path == "sequence":  # the sequence model's own zero trajectory and checkpoints, float and int16 input
        from duplexeval.vad import load_sequence_vad

        seq = load_sequence_vad()
        for c, p in zip(cases, pcm):
            assert np.array_equal(vad_batched.sequence_probs(seq, c), vad.probs(c))
            assert np.array_equal(vad_batched.sequence_probs(seq, p), vad.probs(p.astype(np.float32) / 32768.0))
        for g, p, lim in zip(got, pcm, limits):
            assert vad_batched.sequence_segments(seq, p, lim, SCORER_SETTINGS) == g
