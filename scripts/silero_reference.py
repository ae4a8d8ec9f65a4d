#!/usr/bin/env python3
"""Make the VAD reference data in tests/data/vad/: fixture audio, then segments from the official Silero package.

Two steps, two environments (the official package needs torch, which the project venv must not hold):

    .venv/bin/python scripts/silero_reference.py audio          # espeak-ng clips -> tests/data/vad/*.flac
    python3 -m venv /tmp/silero-ref
    /tmp/silero-ref/bin/pip install torch==2.13.0 silero-vad==6.2.3 onnxruntime soundfile numpy
    /tmp/silero-ref/bin/python scripts/silero_reference.py reference   # -> tests/data/vad/reference.json

`reference` reads the committed FLAC files back as float32 (as duplexeval.audio.read_audio does) and runs
`load_silero_vad()` (the JIT model, the spec's choice) with `get_speech_timestamps` for every clip and
settings set below. It also stores the per-frame probabilities of the JIT model and of
`load_silero_vad(onnx=True)` (Silero's own OnnxWrapper around the same silero_vad.onnx we run).
It does not import duplexeval, so it runs in a venv that has only torch + silero-vad.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "vad"
SR = 16000

# Settings sets, as keyword arguments of silero_vad.get_speech_timestamps (6.2.3 names).
SETTINGS: dict[str, dict] = {
    "scorer": {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100, "speech_pad_ms": 0},
    "official_defaults": {},
    "official_seconds": {"return_seconds": True},
    "scorer_seconds_res3": {
        "threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100, "speech_pad_ms": 0,
        "return_seconds": True, "time_resolution": 3,
    },
    "high_threshold": {"threshold": 0.8, "speech_pad_ms": 30},
    "low_threshold": {"threshold": 0.2, "speech_pad_ms": 30},
    "neg_threshold_045": {"threshold": 0.5, "neg_threshold": 0.45, "speech_pad_ms": 0},
    "wide_pad_short_silence": {"min_silence_duration_ms": 60, "min_speech_duration_ms": 100, "speech_pad_ms": 120},
    "long_min_silence": {"min_silence_duration_ms": 600, "min_speech_duration_ms": 500, "speech_pad_ms": 30},
    "max_speech_3s": {"max_speech_duration_s": 3.0, "speech_pad_ms": 30},
    "max_speech_1s_nopad": {"max_speech_duration_s": 1.0, "speech_pad_ms": 0, "min_silence_duration_ms": 300},
    "max_speech_4s_min_silence_500": {"max_speech_duration_s": 4.0, "min_silence_duration_ms": 500,
                                      "speech_pad_ms": 30},
    "max_speech_3s_legacy": {
        "max_speech_duration_s": 3.0, "min_silence_duration_ms": 400, "speech_pad_ms": 30,
        "use_max_poss_sil_at_max_speech": False,
    },
    "max_speech_2s_seconds": {"max_speech_duration_s": 2.0, "return_seconds": True, "time_resolution": 2},
}


# ---------------------------------------------------------------------------------------------------
# step 1: audio (project venv)


def _speech(text: str, voice: str = "en-us", rate: int = 160, pitch: int = 50) -> np.ndarray:
    from duplexeval.tts import synthesize

    return synthesize(text, voice=voice, rate=rate, pitch=pitch).audio


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


def _noise(rng: np.random.Generator, n: int, dbfs: float) -> np.ndarray:
    return (rng.standard_normal(n) * 10 ** (dbfs / 20)).astype(np.float32)


def make_clips() -> dict[str, tuple[np.ndarray, str]]:
    """The fixture clips: name -> (float32 16 kHz audio, one-line description)."""
    rng = np.random.default_rng(20261130)
    clips: dict[str, tuple[np.ndarray, str]] = {}

    # Sentences separated by pauses around the 100 ms minimum silence and longer ones.
    lines = [
        ("Good morning, thanks for calling.", "en-us", 160, 50),
        ("Could you tell me your account number please?", "en", 175, 40),
        ("Sure, it is four five seven two nine.", "en-us+f3", 150, 60),
        ("Great. One moment while I look that up.", "en-us", 200, 50),
        ("Okay, I found it.", "en", 130, 70),
        ("Your order shipped yesterday afternoon.", "en-us+m3", 165, 45),
    ]
    pauses = [0.06, 0.11, 0.2, 0.45, 1.3, 0.3]
    parts = [_silence(0.4)]
    for (text, voice, rate, pitch), gap in zip(lines, pauses):
        parts += [_speech(text, voice, rate, pitch), _silence(gap)]
    clips["speech_pauses"] = (np.concatenate(parts),
                              "six espeak sentences, 4 voices, rates 130-200, pauses 60 ms-1.3 s")

    # Short words and backchannels between pauses: min-speech filtering.
    parts = [_silence(0.3)]
    for word, gap in [("yes", 0.5), ("mm-hmm", 0.7), ("no", 0.25), ("right", 0.9), ("okay", 0.15), ("uh", 0.6),
                      ("I see what you mean", 0.5)]:
        parts += [_speech(word, "en-us", 170), _silence(gap)]
    clips["short_words"] = (np.concatenate(parts), "single words and backchannels with 0.15-0.9 s pauses")

    # Speech in white noise (about 10 dB SNR) and in louder noise.
    sp = np.concatenate([_silence(0.5),
                         _speech("The weather today will be cloudy with a chance of rain in the evening.", "en-us",
                                 160),
                         _silence(0.8), _speech("Please bring an umbrella.", "en", 150), _silence(0.5)])
    clips["speech_noise"] = (sp + _noise(rng, sp.size, -30.0), "two sentences plus white noise at -30 dBFS")
    sp2 = np.concatenate([_silence(0.3), _speech("Can you hear me over all this noise?", "en-us", 160), _silence(0.6)])
    clips["speech_loud_noise"] = (sp2 + _noise(rng, sp2.size, -18.0), "a sentence plus white noise at -18 dBFS")

    clips["noise"] = (_noise(rng, int(3.0 * SR), -24.0), "3 s of white noise at -24 dBFS, no speech")
    clips["silence"] = (_silence(2.0), "2 s of digital silence")

    # Long continuous speech (only short pauses) to exercise max-speech splitting.
    long_text = (
        "So what I was trying to say is that the project has several parts, and each part has its own team, "
        "its own schedule and its own problems, but in the end all of them have to fit together, "
        "which is why we meet every week and talk about what changed and what is still missing."
    )
    clips["long_speech"] = (np.concatenate([_silence(0.2), _speech(long_text, "en-us", 190), _silence(0.2)]),
                            "about 15 s of fast continuous speech, only short pauses")

    # Speech running to the very end, length not a multiple of 512 (end-of-audio segment).
    tail = np.concatenate([_silence(0.7), _speech("And that is all I have to say about it", "en-us", 160)])
    cut = tail.size - int(0.25 * SR)
    cut -= cut % 512
    cut += 301
    clips["speech_to_end"] = (tail[:cut], "speech cut mid-word at the end; length % 512 == 301")

    # Shorter than one frame, and a clip that starts with speech at sample 0.
    clips["tiny"] = (_noise(rng, 300, -20.0), "300 samples of noise, shorter than one frame")
    start = _speech("Hello, who is this?", "en", 170)
    start = start[np.flatnonzero(np.abs(start) > 0.01)[0]:]
    clips["speech_at_start"] = (np.concatenate([start, _silence(0.6)]), "speech from sample 0, then silence")
    return clips


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(audio.astype(np.float64) * 32767.0), -32768, 32767).astype(np.int16)


def cmd_audio() -> None:
    import soundfile as sf

    from duplexeval.tts import espeak_version

    OUT.mkdir(parents=True, exist_ok=True)
    clips = make_clips()
    index = {"espeak_ng": espeak_version(), "sample_rate": SR, "clips": {}}
    for name, (audio, desc) in clips.items():
        path = OUT / f"{name}.flac"
        sf.write(str(path), to_pcm16(audio), SR, format="FLAC", subtype="PCM_16")
        index["clips"][name] = {"file": path.name, "description": desc}
        print(f"{path.relative_to(ROOT)}: {audio.size} samples ({audio.size / SR:.2f} s)")
    (OUT / "clips.json").write_text(json.dumps(index, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------------
# step 2: reference (torch venv)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _frame_probs(model, audio) -> list[float]:
    """Per-frame probabilities exactly as get_speech_timestamps computes them (reset, zero-padded last frame)."""
    import torch

    model.reset_states()
    x = torch.from_numpy(audio)
    out = []
    for i in range(0, x.shape[0], 512):
        chunk = x[i : i + 512]
        if chunk.shape[0] < 512:
            chunk = torch.nn.functional.pad(chunk, (0, 512 - chunk.shape[0]))
        out.append(model(chunk, SR).item())
    return out


def cmd_reference() -> None:
    import importlib.metadata

    import soundfile as sf
    import torch
    from silero_vad import get_speech_timestamps, load_silero_vad

    torch.set_num_threads(1)
    index = json.loads((OUT / "clips.json").read_text())
    import silero_vad

    data_dir = Path(silero_vad.__file__).parent / "data"
    jit = load_silero_vad()
    onnx = load_silero_vad(onnx=True)
    ref: dict = {
        "kind": "duplexeval.vad.reference",
        "schema_version": 1,
        "generator": {
            "script": "scripts/silero_reference.py reference",
            "silero_vad": importlib.metadata.version("silero-vad"),
            "torch": torch.__version__,
            "model": "load_silero_vad() -> silero_vad.jit",
            "silero_vad_jit_sha256": _sha256(data_dir / "silero_vad.jit"),
            "silero_vad_onnx_sha256": _sha256(data_dir / "silero_vad.onnx"),
            "espeak_ng": index["espeak_ng"],
        },
        "settings": SETTINGS,
        "clips": {},
    }
    for name, meta in index["clips"].items():
        path = OUT / meta["file"]
        audio, sr = sf.read(str(path), dtype="float32", always_2d=True)
        assert sr == SR
        audio = np.ascontiguousarray(audio[:, 0])
        entry = {
            "file": meta["file"],
            "sha256": _sha256(path),
            "description": meta["description"],
            "n_samples": int(audio.size),
            "probs_jit": _frame_probs(jit, audio),
            "probs_onnx": _frame_probs(onnx, audio),
            "segments": {},
        }
        for sname, kwargs in SETTINGS.items():
            ts = get_speech_timestamps(torch.from_numpy(audio), jit, sampling_rate=SR, **kwargs)
            entry["segments"][sname] = [[d["start"], d["end"]] for d in ts]
        ref["clips"][name] = entry
        print(f"{name}: {len(entry['segments']['scorer'])} scorer segments, "
              "max |jit-onnx| = "
              f"{max((abs(a - b) for a, b in zip(entry['probs_jit'], entry['probs_onnx'])), default=0):.2e}")
    text = json.dumps(ref, indent=1) + "\n"
    tmp = OUT / ".reference.json.tmp"
    tmp.write_text(text)
    os.replace(tmp, OUT / "reference.json")
    print(f"wrote {(OUT / 'reference.json').relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["audio", "reference"])
    args = ap.parse_args(argv)
    if args.step == "audio":
        cmd_audio()
    else:
        cmd_reference()
    return 0


if __name__ == "__main__":
    sys.exit(main())
