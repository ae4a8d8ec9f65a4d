"""First-word onset bias of an ASR backend on every real sample at hand, against the audio and the official files.

Samples:

- every committed reference clip with speech (`tests/data/vad/`, espeak-ng speech, some in noise);
- with `--official DIR` (a local checkout of the official Full-Duplex-Bench repository, CC BY-NC, never
  copied into this project): its three `example_data` samples. For each `output.wav` (the interruption one
  cut at R = interrupt.json timestamp[1], as the official asr.py does) the first word of our backend is
  compared with the first word of the official `output.json` (Parakeet for the interruption example; the
  pause and turn-taking examples hold older CrisperWhisper output) and with the acoustic onset. The
  turn-taking example's `input.wav` (a Candor user turn) is compared with its `transcription.json`.

Acoustic onset, two readings: the start of the first Silero segment at the scorer's settings (threshold 0.5,
no padding) after the cut, and the first 10 ms frame after the cut whose RMS is within 30 dB of the file's
loudest 10 ms frame (the energy onset). Differences are ASR - reference in ms; negative = the ASR starts
earlier.

    .venv/bin/python benchmarks/asr_timing_bias.py [--official DIR] [--backend whisper-align] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SR = 16000
EXAMPLES = ("pause_handling_example", "smooth_turn_taking_example", "user_interruption_example")


@dataclass
class Item:
    name: str
    audio: np.ndarray  # 16 kHz mono float32, the whole file
    cut_s: float  # transcribe from here on (interruption: R)
    reference: str | None  # which transcript the reference first word comes from
    reference_first_s: float | None


def _read16k(path: Path) -> np.ndarray:
    import soundfile as sf
    import soxr

    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    mono = data.mean(axis=1).astype(np.float32)
    return mono if sr == SR else soxr.resample(mono, sr, SR).astype(np.float32)


def _first_chunk(path: Path) -> float | None:
    chunks = json.loads(path.read_text()).get("chunks", [])
    starts = [c["timestamp"][0] for c in chunks if c.get("timestamp") and c["timestamp"][0] is not None]
    return min(starts) if starts else None


def items(official: Path | None) -> list[Item]:
    ref = json.loads((ROOT / "tests/data/vad/reference.json").read_text())
    out: list[Item] = []
    for name, clip in sorted(ref["clips"].items()):
        if not ref["clips"][name]["segments"]["scorer"]:
            continue  # noise, silence, tiny: nothing to transcribe
        out.append(
            Item(f"tests/data/vad/{clip['file']}", _read16k(ROOT / "tests/data/vad" / clip["file"]), 0.0, None, None))
    if official is None:
        return out
    base = next(
        (official / d / "evaluation/example_data" for d in ("", "v1_v1.5")
         if (official / d / "evaluation/example_data").is_dir()), None)
    if base is None:
        sys.exit(f"{official}: no evaluation/example_data folder")
    for ex in EXAMPLES:
        d = base / ex / "1"
        cut = 0.0
        if (d / "interrupt.json").is_file():
            cut = float(json.loads((d / "interrupt.json").read_text())[0]["timestamp"][1])
        asr = "Parakeet" if ex == "user_interruption_example" else "CrisperWhisper (older example file)"
        out.append(Item(f"example {ex}/output.wav", _read16k(d / "output.wav"), cut, f"official output.json ({asr})",
                        _first_chunk(d / "output.json")))
        if (d / "transcription.json").is_file():
            tr = json.loads((d / "transcription.json").read_text())
            tt = json.loads((d / "turn_taking.json").read_text())[0]["timestamp"][0]
            user = [w["timestamp"][0] for s in tr for w in s["item"] if w["timestamp"][0] < tt]
            audio = _read16k(d / "input.wav")
            out.append(Item(f"example {ex}/input.wav (Candor user turn)", audio[: round(tt * SR)], 0.0,
                            "transcription.json (Candor)", min(user) if user else None))
    return out


def vad_onset(audio: np.ndarray, cut_s: float) -> float | None:
    from duplexeval.vad import SCORER_SETTINGS, load_vad

    c = round(cut_s * SR)
    segs = [s for s, e in load_vad().segments(audio, SCORER_SETTINGS) if s >= c or e > c]
    return None if not segs else max(segs[0], c) / SR


def energy_onset(audio: np.ndarray, cut_s: float, vad_s: float | None, below_peak_db: float = 30.0,
                 above_floor_db: float = 10.0, lookback_s: float = 0.3) -> float | None:
    """First 10 ms frame, searching from `lookback_s` before the VAD onset (not before the cut), whose RMS is
    within `below_peak_db` of the loudest frame after the cut and `above_floor_db` over the noise floor (the
    10th-percentile frame after the cut)."""
    if vad_s is None:
        return None
    hop = SR // 100
    n = audio.size // hop
    db = 20 * np.log10(np.sqrt(np.mean(audio[: n * hop].reshape(n, hop).astype(np.float64) ** 2, axis=1)) + 1e-10)
    first = -(-round(cut_s * SR) // hop)
    after = db[first:]
    level = max(after.max() - below_peak_db, float(np.percentile(after, 10)) + above_floor_db)
    lo = max(first, int((vad_s - lookback_s) * 100))
    above = np.flatnonzero(db[lo:] >= level)
    return None if above.size == 0 else (lo + int(above[0])) * hop / SR


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official", type=Path, help="a local checkout of the official Full-Duplex-Bench repository")
    ap.add_argument("--backend", default="whisper-align")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    from duplexeval.asr.registry import make_backend

    be = make_backend(args.backend)
    be.load()
    rows = []
    for it in items(args.official):
        c = int(np.ceil(it.cut_s * SR))
        words = be.transcribe(it.audio[c:], offset_s=c / SR)
        first = min((w.start for w in words), default=None)
        v = vad_onset(it.audio, it.cut_s)
        e = energy_onset(it.audio, it.cut_s, v)
        d = lambda a, b: None if a is None or b is None else round((a - b) * 1000, 1)
        rows.append({
            "sample": it.name, "cut_s": it.cut_s, "asr_first_s": first, "vad_onset_s": v, "energy_onset_s": e,
            "reference": it.reference, "reference_first_s": it.reference_first_s,
            "asr_minus_vad_ms": d(first, v), "asr_minus_energy_ms": d(first, e),
            "asr_minus_reference_ms": d(first, it.reference_first_s),
            "reference_minus_vad_ms": d(it.reference_first_s, v),
            "reference_minus_energy_ms": d(it.reference_first_s, e), "words": " ".join(w.text for w in words)[:80],
        })
    keys = ("asr_minus_vad_ms", "asr_minus_energy_ms", "asr_minus_reference_ms", "reference_minus_vad_ms",
            "reference_minus_energy_ms")
    print(f"backend {args.backend}; differences in ms (negative = earlier)")
    f = lambda x: "—" if x is None else f"{x:.3f}"
    print("| sample | ASR first s | VAD onset s | energy onset s | reference first s | " + " | ".join(keys) + " |")
    for r in rows:
        print(f"| {r['sample']} | {f(r['asr_first_s'])} | {f(r['vad_onset_s'])} | {f(r['energy_onset_s'])} | "
              f"{f(r['reference_first_s'])} | " + " | ".join("—" if r[k] is None else f"{r[k]:+.1f}" for k in keys)
              + " |")
    for k in keys:
        vals = sorted(r[k] for r in rows if r[k] is not None)
        if vals:
            print(f"{k}: n {len(vals)}, median (ceil(N/2)-th) {vals[-(-len(vals) // 2) - 1]:+.1f}, min {vals[0]:+.1f}, "
                  f"max {vals[-1]:+.1f}")
    if args.json:
        args.json.write_text(json.dumps({"backend": args.backend, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
