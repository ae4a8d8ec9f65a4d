#!/usr/bin/env python3
"""Speed of duplexeval.vad on 28 s clips (the FDB output length), one onnxruntime thread.

    .venv/bin/python benchmarks/vad_speed.py [--files 16] [--seconds 28]

Clips are the committed VAD fixtures (tests/data/vad) concatenated and cut to length, each file starting at a
different offset. Prints x real time for `probs` one file at a time, for `probs_many` (files stepped as one
batch), for Silero's sequence model one call per file when the silero-vad wheel is installed, and for the
segmentation alone; wall and CPU (process) time, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from duplexeval.audio import read_audio
from duplexeval.vad import SCORER_SETTINGS, load_sequence_vad, load_vad, timestamps_from_probs
from duplexeval.vad_batched import sequence_probs

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "vad"


def make_files(n_files: int, seconds: float) -> list[np.ndarray]:
    pool = np.concatenate([read_audio(p)[0] for p in sorted(DATA.glob("*.flac"))])
    n = int(seconds * 16000)
    pool = np.tile(pool, int(np.ceil((n + n_files * 7919) / pool.size)) + 1)
    return [np.ascontiguousarray(pool[k * 7919 : k * 7919 + n]) for k in range(n_files)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=28.0)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    files = make_files(args.files, args.seconds)
    audio_s = sum(f.size for f in files) / 16000
    vad = load_vad()
    vad.probs(files[0][:16000])  # warm-up

    t0, c0 = time.perf_counter(), time.process_time()
    single = [vad.probs(f) for f in files]
    t_single, c_single = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    many = vad.probs_many(files, batch=args.batch)
    t_many, c_many = time.perf_counter() - t0, time.process_time() - c0

    seq = load_sequence_vad()
    if seq is not None:
        sequence_probs(seq, files[0][:16000])  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        by_seq = [sequence_probs(seq, f) for f in files]
        t_seq, c_seq = time.perf_counter() - t0, time.process_time() - c0

    t0 = time.perf_counter()
    segs = [timestamps_from_probs(p, f.size, SCORER_SETTINGS) for p, f in zip(single, files)]
    t_seg = time.perf_counter() - t0

    same = all(np.array_equal(a, b) for a, b in zip(single, many))
    print(f"{args.files} files x {args.seconds:g} s = {audio_s:.0f} s of audio, {sum(map(len, segs))} scorer segments")
    print(f"probs, one file at a time : {t_single:6.2f} s wall {audio_s / t_single:6.0f} x real time; "
          f"CPU {c_single:6.2f} s {audio_s / c_single:6.0f} x")
    print(f"probs_many, batch {args.batch:<3d}     : {t_many:6.2f} s wall {audio_s / t_many:6.0f} x real time; "
          f"CPU {c_many:6.2f} s {audio_s / c_many:6.0f} x  (identical to probs: {same})")
    if seq is not None:
        same_seq = all(np.array_equal(a, b) for a, b in zip(single, by_seq))
        print(f"sequence model, per file  : {t_seq:6.2f} s wall {audio_s / t_seq:6.0f} x real time; "
              f"CPU {c_seq:6.2f} s {audio_s / c_seq:6.0f} x  (identical to probs: {same_seq})")
    else:
        print("sequence model            : not installed (pip install --no-deps silero-vad==6.2.3)")
    print(f"timestamps_from_probs     : {t_seg:6.3f} s  {audio_s / t_seg:7.0f} x real time")


if __name__ == "__main__":
    main()
