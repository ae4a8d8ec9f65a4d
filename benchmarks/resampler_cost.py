"""CPU per 80 ms frame of the exact-frame stream resampler (`resample_stream.StreamResampler`) at each rate pair a
client or server uses, against its definition computed the long way (every upsampled sample of every phase, then
every `down`-th kept: what `process` did before it computed only the kept samples). Both in one run, same input.

    .venv/bin/python benchmarks/resampler_cost.py [--frames 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.helpers

from duplexeval.systems.net.resample_stream import StreamResampler
from tests.helpers.resampling import full_polyphase  # the definition, as the equivalence test holds it

PAIRS = [(16000, 24000), (24000, 16000), (16000, 22050), (22050, 16000), (16000, 48000), (48000, 16000), (8000, 16000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=200, help="80 ms frames per rate pair (default 200: 16 s of audio)")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("rates | process ms/frame | long way ms/frame | ratio | identical float32")
    for a, b in PAIRS:
        rng = np.random.default_rng(0)
        chunks = [rng.standard_normal(a * 80 // 1000).astype(np.float32) * 0.3 for _ in range(args.frames)]
        r = StreamResampler(a, b)
        t0 = time.process_time()
        got = np.concatenate([r.process(c) for c in chunks])
        t1 = time.process_time()
        want = full_polyphase(StreamResampler(a, b), chunks)
        t2 = time.process_time()
        new, old = (t1 - t0) / args.frames * 1000, (t2 - t1) / args.frames * 1000
        print(f"{a} -> {b} | {new:.3f} | {old:.3f} | {old / new:.1f}x | {np.array_equal(got, want)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
