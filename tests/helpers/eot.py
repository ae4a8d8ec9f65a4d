"""Shared inputs of the eot tests: random prediction rows on eot-bench's grid, a small eot-bench span file, and a
tone-and-silence span set of two turns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from duplexeval.eot.spans import SpanSet, make_turn
from duplexeval.units import SAMPLE_RATE

DURATIONS = (0.1, 0.2, 0.25, 0.4, 0.5, 0.7, 1.0, 1.5, 2.2, 3.5, 5.0, 6.0)


def random_rows(seed: int, n_turns: int) -> list[dict]:
    """Turns of 1-4 spans (the last eot) with p_eot rising faster in eot spans; a few null scores in holds."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    for t in range(n_turns):
        ns = int(rng.integers(1, 5))
        t0 = 0.5
        for s in range(ns):
            eot = s == ns - 1
            d = 3.5 if eot else float(rng.choice(DURATIONS))
            n = math.floor(d / 0.1 + 1e-6)
            grid = [round(i * 0.1, 6) for i in range(n + 1)]
            if grid[-1] < d - 1e-6:
                grid.append(round(d, 6))
            slope = rng.uniform(0.5, 2.0) if eot else rng.uniform(0.0, 0.8)
            for sd in grid:
                p = (None if (not eot and rng.random() < 0.03)
                     else round(float(np.clip(rng.normal(0.1, 0.1) + slope * sd, 0, 1)), 4))
                rows.append({"id": f"t{t:02d}", "language": "en", "span_index": s, "timestamp": round(t0 + sd, 6),
                             "silence_dur": sd, "p_eot": p, "label": "eot" if eot else "hold"})  # fmt: skip
            t0 += d + 1.0
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_eotbench_spans(path: Path, n: int = 3) -> Path:
    """n turns of tone / pause / tone / tail at 16 kHz in eot-bench's dataset schema (JSONL, audio arrays)."""
    sr = 16000
    rows = []
    for k in range(n):
        t = np.arange(int(0.6 * sr)) / sr
        tone = (0.3 * np.sin(2 * np.pi * (200 + 20 * k) * t)).astype(np.float32)
        pause = 0.3 + 0.4 * k
        audio = np.concatenate([tone, np.zeros(int(pause * sr), np.float32), tone, np.zeros(int(2.0 * sr), np.float32)])
        rows.append({"id": f"turn{k}", "language": "en",
                     "audio": {"array": np.round(audio, 5).tolist(), "sampling_rate": sr},
                     "silence_spans": [{"start": 0.6, "end": round(0.6 + pause, 6)},
                                       {"start": round(1.2 + pause, 6), "end": round(3.2 + pause, 6)}]})  # fmt: skip
    return write_jsonl(path, rows)


def tone(seconds: float, sr: int = SAMPLE_RATE, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (amp * np.sin(2 * np.pi * 220 * t)).astype(np.float32)

def one_turn_set() -> SpanSet:
    audio = (
        np.concatenate(
            [tone(1.0), np.zeros(int(0.6 * SAMPLE_RATE), np.float32), tone(0.8),
             np.zeros(2 * SAMPLE_RATE, np.float32)]))
    t = make_turn("t1", audio, [(1.0, 1.6, "hold"), (2.4, 4.4, "eot")])
    t2 = make_turn("t2", audio, [(1.0, 1.6, "hold"), (2.4, 4.4, "eot")])
    return SpanSet("tiny", "test", [t, t2])
