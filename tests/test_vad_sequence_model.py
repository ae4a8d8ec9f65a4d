"""Silero's sequence ONNX model (`silero_vad_16k_sequence.onnx`, shipped only in the `silero-vad` wheel, which
requires torch) against our per-frame model on the committed reference audio.

duplexeval does not use it: the only wheel holding it depends on torch. This check says whether it could be
used (bit-identical probabilities) and runs wherever the file is found: the installed `silero_vad` package's
data folder, or SILERO_SEQUENCE_ONNX=<path>. Measured 2026-12-01 with silero-vad 6.2.3's file: identical on
all 10 reference clips (see benchmarks/README.md, "Silero VAD speed").
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

from duplexeval.audio import read_audio
from duplexeval.vad import CONTEXT_SAMPLES, WINDOW_SAMPLES, load_vad

DATA = Path(__file__).parent / "data" / "vad"


def _sequence_model() -> Path | None:
    env = os.environ.get("SILERO_SEQUENCE_ONNX")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad_16k_sequence.onnx"
    return p if p.is_file() else None


SEQ = _sequence_model()


@pytest.mark.skipif(SEQ is None, reason="silero_vad_16k_sequence.onnx not found (silero-vad wheel or SILERO_SEQUENCE_ONNX)")
def test_sequence_model_probabilities_equal_the_per_frame_model():
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(SEQ), opts, providers=["CPUExecutionProvider"])
    ref = json.loads((DATA / "reference.json").read_text())
    for name, clip in sorted(ref["clips"].items()):
        audio = read_audio(DATA / clip["file"])[0].astype(np.float32)
        n = -(-audio.size // WINDOW_SAMPLES)
        padded = np.zeros(n * WINDOW_SAMPLES, dtype=np.float32)
        padded[: audio.size] = audio
        frames = padded.reshape(n, WINDOW_SAMPLES)
        ctx = np.zeros((n, CONTEXT_SAMPLES), dtype=np.float32)
        ctx[1:] = frames[:-1, -CONTEXT_SAMPLES:]
        zero = np.zeros((1, 1, 128), dtype=np.float32)
        seq = sess.run(None, {"input": np.concatenate([ctx, frames], axis=1), "h": zero, "c": zero})[0]
        assert np.array_equal(seq, load_vad().probs(audio)), name
