"""Silero's sequence ONNX model (`silero_vad_16k_sequence.onnx`, shipped only in the `silero-vad` wheel, installed
with --no-deps as the Makefile does) against our per-frame model on the committed reference audio.

The VAD uses it when it is installed and its SHA-256 is 6.2.3's (`vad.load_sequence_vad`), because its
probabilities are bit-identical; these tests prove that and run wherever the file is found: the installed
`silero_vad` package's data folder, or SILERO_SEQUENCE_ONNX=<path>.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from duplexeval import vad as vadmod
from duplexeval.audio import read_audio
from duplexeval.vad import CONTEXT_SAMPLES, WINDOW_SAMPLES, SileroSequenceVad, load_vad
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "vad"


def _sequence_model() -> Path | None:
    env = os.environ.get("SILERO_SEQUENCE_ONNX")
    return Path(env) if env else vadmod.sequence_model_path()


SEQ = _sequence_model()
needs_file = pytest.mark.skipif(SEQ is None, reason="silero_vad_16k_sequence.onnx not found (silero-vad wheel or "
                                                    "SILERO_SEQUENCE_ONNX)")


def _rows(audio: np.ndarray) -> np.ndarray:
    n = -(-audio.size // WINDOW_SAMPLES)
    padded = np.zeros(n * WINDOW_SAMPLES, dtype=np.float32)
    padded[: audio.size] = audio
    frames = padded.reshape(n, WINDOW_SAMPLES)
    ctx = np.zeros((n, CONTEXT_SAMPLES), dtype=np.float32)
    ctx[1:] = frames[:-1, -CONTEXT_SAMPLES:]
    return np.concatenate([ctx, frames], axis=1)


def _clips() -> dict[str, np.ndarray]:
    ref = json.loads((DATA / "reference.json").read_text())
    return {name: read_audio(DATA / c["file"])[0].astype(np.float32) for name, c in sorted(ref["clips"].items())}


@needs_file
def test_sequence_model_probabilities_equal_the_per_frame_model():
    assert SEQ is not None
    seq = SileroSequenceVad(SEQ.read_bytes())
    zero = np.zeros((2, 1, 128), dtype=np.float32)
    for name, audio in _clips().items():
        probs, _ = seq.run(_rows(audio), zero)
        assert np.array_equal(probs, load_vad().probs(audio)), name


@needs_file
def test_chunked_calls_and_a_hand_over_from_the_per_frame_state_are_exact():
    """The scorer runs a file in chunks, and may start it from a state of the per-frame model (h then c)."""
    assert SEQ is not None
    seq = SileroSequenceVad(SEQ.read_bytes())
    audio = _clips()["speech_pauses"]
    want = load_vad().probs(audio)
    rows = _rows(audio)
    state = np.zeros((2, 1, 128), dtype=np.float32)
    got = []
    for lo in range(0, len(rows), 37):
        p, state = seq.run(rows[lo : lo + 37], state)
        got.append(p)
    assert np.array_equal(np.concatenate(got), want)
    k = 50  # per-frame model for k frames, then the sequence model from its state
    per_frame = load_vad()
    state = np.zeros((2, 1, 128), dtype=np.float32)
    for i in range(k):
        _, state = per_frame.step(rows[i : i + 1], state)
    assert np.array_equal(seq.run(rows[k:], state)[0], want[k:])


def test_a_different_file_is_not_used(tmp_path, monkeypatch):
    """Only the 6.2.3 file (by SHA-256) is used; anything else means the per-frame model, not an error."""
    fake = tmp_path / "silero_vad_16k_sequence.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(vadmod, "sequence_model_path", lambda: fake)
    monkeypatch.setattr(vadmod, "_SEQ_CACHE", {})
    assert vadmod.load_sequence_vad() is None
    monkeypatch.setattr(vadmod, "sequence_model_path", lambda: None)
    monkeypatch.setattr(vadmod, "_SEQ_CACHE", {})
    assert vadmod.load_sequence_vad() is None
