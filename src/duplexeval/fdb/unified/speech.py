"""Silero VAD segments of interruption outputs, with the scorer settings (threshold 0.5, 250/100 ms, no pad).

Speed: the model is a recurrent net stepped once per 512-sample frame, so one file at a time spends
most of its time in per-call overhead. We step a batch of files together (the model's batch axis; each
row keeps its own state), which gives bit-identical probabilities to `SileroVad.probs` (tested), then
cut each row to its own length and apply Silero's segmentation (`duplexeval.vad.timestamps_from_probs`).
Batches run in threads (onnxruntime releases the GIL). Results do not depend on batch size or threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

Segments = list[tuple[int, int]]
Segmenter = Callable[[Sequence[Path]], list[Segments]]

BATCH_FILES = 32
WINDOW = 512
CONTEXT = 64


def _settings() -> Any:
    from duplexeval.vad import SCORER_SETTINGS

    return SCORER_SETTINGS


def signature() -> dict[str, Any]:
    """The VAD package, version, model hash and the scorer settings, for the top of unified.json."""
    from duplexeval.vad import vad_signature

    return vad_signature(_settings())


def batch_probs(vad: Any, audios: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per-frame speech probabilities of several 16 kHz signals, stepped together through the batch axis.

    Equal to `vad.probs(a)` for each signal: rows are independent, a shorter signal is zero-padded and
    its probabilities past its own last (zero-padded) frame are dropped.
    """
    n_frames = [-(-a.size // WINDOW) for a in audios]
    B, F = len(audios), max(n_frames, default=0)
    out = np.zeros((B, F), dtype=np.float32)
    if F == 0:
        return [out[j, :0] for j in range(B)]
    frames = np.zeros((B, F * WINDOW), dtype=np.float32)
    for j, a in enumerate(audios):
        frames[j, : a.size] = a
    frames = frames.reshape(B, F, WINDOW)
    x = np.zeros((B, CONTEXT + WINDOW), dtype=np.float32)
    state = np.zeros((2, B, 128), dtype=np.float32)
    for i in range(F):
        x[:, :CONTEXT] = x[:, WINDOW:]  # previous frame's last 64 samples (zeros before the first frame)
        x[:, CONTEXT:] = frames[:, i]
        prob, state = vad._run(x, state)
        out[:, i] = prob[:, 0]
    return [out[j, : n_frames[j]] for j in range(B)]


def _read(path: Path) -> np.ndarray:
    from duplexeval.audio import read_audio

    audio, sr = read_audio(path)
    if sr != 16000:  # checked on load; guards against a file changed since
        raise ValueError(f"{path}: expected 16 kHz, got {sr}")
    return audio


def _segment_batch(paths: Sequence[Path]) -> list[Segments]:
    from duplexeval.vad import load_vad, timestamps_from_probs

    audios = [_read(p) for p in paths]
    probs = batch_probs(load_vad(), audios)
    settings = _settings()
    return [[(int(s), int(e)) for s, e in timestamps_from_probs(p, a.size, settings)] for p, a in zip(probs, audios)]


def default_jobs() -> int:
    """Threads: DUPLEXEVAL_JOBS if set, else the CPUs this process may use."""
    env = os.environ.get("DUPLEXEVAL_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def segment_files(paths: Sequence[Path], jobs: int | None = None, batch: int = BATCH_FILES) -> list[Segments]:
    """VAD segments (16 kHz sample indices, end exclusive) of each file, in order."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    paths = list(paths)
    # Spread files so every thread gets work: batches of at most `batch`, at least `jobs` batches.
    size = max(1, min(batch, -(-len(paths) // jobs)))
    groups = [paths[i : i + size] for i in range(0, len(paths), size)]
    if jobs == 1 or len(groups) == 1:
        results = [_segment_batch(g) for g in groups]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_segment_batch, groups))
    return [segs for group in results for segs in group]
