"""How fast `duplexeval fdb export` drives each baseline over the demo set (virtual clock, real Silero VAD).

Reports, per system: wall seconds, samples per second and how many times faster than real time the
input audio was processed. The demo set is built (or found in the cache) first and not timed.

    .venv/bin/python benchmarks/export_speed.py                      # every baseline, demo set
    .venv/bin/python benchmarks/export_speed.py --systems turn-based --repeat 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", nargs="+", default=["silent", "turn-based", "talk-over", "backchannel"])
    ap.add_argument("--repeat", type=int, default=1, help="export the set this many times per system (fresh "
                                                          "tree each time)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    from duplexeval.fdb.dataset import load_dataset
    from duplexeval.fdb.export_stage import export
    from duplexeval.systems.baselines import _speech_pcm
    from duplexeval.systems.registry import make_system

    ds = load_dataset("demo")
    samples = ds.samples()
    audio_s = sum(s.T for s in samples)
    results = []
    for spec in args.systems:
        system = make_system(spec)
        if hasattr(system, "text"):
            _speech_pcm(system.text, system.voice, system.rate)  # warm the TTS cache and load the VAD (not timed)
        times = []
        for _ in range(args.repeat):
            tmp = Path(tempfile.mkdtemp(prefix="export-bench-"))
            try:
                t0 = time.perf_counter()
                export(system, ds, tmp / "tree", progress=False)
                times.append(time.perf_counter() - t0)
            finally:
                shutil.rmtree(tmp)
        best = min(times)
        row = {"system": spec, "samples": len(samples), "audio_s": round(audio_s, 1), "seconds": round(best, 2),
               "samples_per_s": round(len(samples) / best, 2), "x_real_time": round(audio_s / best, 1)}
        results.append(row)
        print(f"{spec:>12}: {len(samples)} samples, {audio_s:.1f} s of input in {best:.2f} s "
              f"= {row['samples_per_s']:.1f} samples/s, {row['x_real_time']:.0f}x real time", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
