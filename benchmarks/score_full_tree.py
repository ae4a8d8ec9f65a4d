"""Time `duplexeval fdb score` on a full-size FDB v1.0 tree (727 samples) with real speech in the outputs.

The tree is built once into a cache folder (default .cache/bench-full-tree, reused when present):
every subset at its declared size, realistic lengths (interruption about 28 s, turn-taking about
10 s, pauses 5 to 20 s, backchannel 20 to 60 s), espeak-ng speech placed in output.wav, and
output.json written from espeak's own word times (so the timing covers the scorer, not ASR).
Backchannel outputs have sound throughout: espeak backchannels ("yeah", "mm-hmm", ...) every few seconds,
now and then a sentence, over a small noise floor (no digital silence, so no VAD shortcut applies).
A cache built by an older recipe (its manifest's `bench_build` differs) is rebuilt.

    .venv/bin/python benchmarks/score_full_tree.py [--cache DIR] [--rebuild] [--jobs N]

Prints samples per second, the wall time of the CLI, and the VAD real-time factor.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from duplexeval.audio import n_samples_for, write_wav_pcm16
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.transcript import Word, transcript_bytes
from duplexeval.fdb.tree import SUBSETS as ALL_SUBSETS
from duplexeval.fdb.tree import AsrRecord, AsrSample, Manifest, SampleEntry, write_asr, write_manifest
from duplexeval.jsonio import atomic_write_bytes, dumps, sha256_bytes

SR = 16000
# FDB v1.0's subsets only: the v1.5 subsets in the table have their own layout (two sessions, metadata.json)
SUBSETS = {s: i for s, i in ALL_SUBSETS.items() if task_of(s).dataset.release == "fdb-v1.0"}
SENTENCES = [
    "Sure, I can help with that.",
    "The weather tomorrow looks sunny with a light breeze in the afternoon.",
    "Let me think about it for a moment.",
    "Once upon a time there was a small village by the sea, and the people fished every day.",
    "Okay.",
    "That is a great question, and the short answer is yes.",
    "Right, so the next step is to book the train tickets before Friday.",
    "Hmm, yeah.",
]
BACKCHANNELS = ["Yeah.", "Mm-hmm.", "Right.", "Okay.", "I see.", "Uh-huh."]
BUILD = 2  # 2: backchannel outputs with sound (backchannels and sentences over a noise floor)
NOISE_RMS = 0.0005  # backchannel noise floor, about -66 dBFS (16 LSB of PCM16)


def _speech():
    from duplexeval.tts import synthesize

    return [synthesize(s) for s in SENTENCES], [synthesize(s) for s in BACKCHANNELS]


def _backchannel_output(out: np.ndarray, words: list[Word], speech, backchannels, T: float, rng) -> None:
    """Backchannels every 2-7 s (sometimes a sentence instead) over a noise floor from the first sample."""
    t = float(rng.uniform(0.5, 3.0))
    while t < T - 1.0:
        if rng.random() < 0.15:
            _place(out, words, speech[int(rng.integers(len(speech)))], t)
        else:
            _place(out, words, backchannels[int(rng.integers(len(backchannels)))], t)
        t += float(rng.uniform(2.0, 7.0))
    out += (rng.standard_normal(out.size) * NOISE_RMS).astype(np.float32)


def _place(out: np.ndarray, words: list[Word], speech, start: float, cut: float | None = None) -> None:
    """Add an utterance at `start` s (cropped at the end of the output, or at `cut` s); collect its words."""
    i = int(round(start * SR))
    audio = speech.audio
    stop = len(out) if cut is None else min(len(out), int(round(cut * SR)))
    n = max(0, min(len(audio), stop - i))
    out[i : i + n] += audio[:n]
    for w in speech.words:
        ws = start + w.start_s
        if ws * SR < i + n:
            words.append(Word(w.text, round(ws, 3), round(min(start + w.end_s, (i + n) / SR), 3)))


def build(root: Path, seed: int = 0) -> None:
    """Write the full-size tree (manifest.json, annotations, output.wav, output.json, asr.json)."""
    rng = np.random.default_rng(seed)
    speech, backchannels = _speech()
    bc_rng = np.random.default_rng(seed + 1)  # its own stream: the other subsets stay as built before
    entries: list[SampleEntry] = []
    asr: dict[str, AsrSample] = {}
    for subset, info in SUBSETS.items():
        for k in range(info.declared):
            sid = str(k)
            if subset == "synthetic_user_interruption":
                T = round(float(rng.uniform(26.5, 29.5)), 2)
            elif subset == "candor_turn_taking":
                T = round(float(rng.uniform(9.0, 11.5)), 2)
            elif subset == "icc_backchannel":
                T = round(float(rng.uniform(20.0, 60.0)), 2)
            else:
                T = round(float(rng.uniform(5.0, 20.0)), 2)
            out = np.zeros(n_samples_for(T), dtype=np.float32)
            words: list[Word] = []
            ann = None
            cut = 0.0
            if info.task == "pause_handling":
                a = round(float(rng.uniform(1.0, T / 2)), 2)
                b = round(min(T, a + float(rng.uniform(0.3, 2.0))), 2)
                pauses = [[a, b]]
                if T > b + 3 and rng.random() < 0.4:
                    a2 = round(b + float(rng.uniform(1.0, 2.0)), 2)
                    pauses.append([a2, round(min(T, a2 + float(rng.uniform(0.3, 1.0))), 2)])
                ann = [{"text": "[PAUSE]", "timestamp": p} for p in pauses]
                if rng.random() < 0.5:
                    _place(out, words, speech[int(rng.integers(len(speech)))], float(rng.uniform(0.0, T - 0.5)))
            elif info.task == "smooth_turn_taking":
                E = round(float(rng.uniform(1.5, T - 5.0)), 2)
                ann = [{"text": "[TURN-TAKING]", "timestamp": [E, E + 0.4]}]
                if rng.random() < 0.85:
                    _place(out, words, speech[int(rng.integers(len(speech)))], E + float(rng.uniform(-0.5, 3.0)))
            elif info.task == "user_interruption":
                S = round(float(rng.uniform(9.0, 11.0)), 2)
                R = round(S + float(rng.uniform(1.5, 3.0)), 2)
                cut = R
                ann = [{"context": "tell me a story", "interrupt": "wait, what about the weather", "timestamp": [S, R]}]
                first = speech[3]
                start = S - float(rng.uniform(-1.0, first.audio.size / SR - 0.5))
                stop_at = S + float(rng.uniform(0.2, 3.5)) if rng.random() < 0.8 else None
                spoken: list[Word] = []
                _place(out, spoken, first, max(0.5, start), cut=stop_at)
                if rng.random() < 0.9:
                    _place(out, spoken, speech[int(rng.integers(len(speech)))], R + float(rng.uniform(0.2, 2.0)))
                words = [w for w in spoken if w.start >= R]
            elif info.task == "backchannel":
                _backchannel_output(out, words, speech, backchannels, T, bc_rng)
            eligible = rng.random() > 0.03
            files: dict[str, str] = {}
            d = root / subset / sid
            d.mkdir(parents=True, exist_ok=True)
            if ann is not None:
                data = dumps(ann).encode()
                atomic_write_bytes(d / info.annotation, data)
                files[info.annotation] = sha256_bytes(data)
            files["output.wav"] = write_wav_pcm16(d / "output.wav", np.clip(out, -1, 1))
            entries.append(SampleEntry(subset, sid, T, eligible, [] if eligible else ["pacing"], files))
            tb = transcript_bytes(words)
            atomic_write_bytes(d / "output.json", tb)
            asr[f"{subset}/{sid}"] = AsrSample("ok", sha256_bytes(tb), None,
                                               {"audio_sha256": files["output.wav"], "cut_s": cut})
    manifest = Manifest("bench-full", {s: i.declared for s, i in SUBSETS.items()}, entries,
                        {"system": {"name": "bench"}, "bench_build": BUILD})
    msha = write_manifest(root, manifest)
    write_asr(root, AsrRecord(msha, {"name": "espeak-word-events"}, asr))


def ensure_built(root: Path, rebuild: bool = False) -> None:
    """Build the tree into `root` unless a build of this recipe is there (an older one is removed first)."""
    import json
    import shutil

    try:
        manifest = json.loads((root / "manifest.json").read_text())
        current = (manifest.get("bench_build") == BUILD
                   and set((manifest.get("dataset") or {}).get("declared") or {}) == set(SUBSETS))
    except (OSError, ValueError):
        current = False
    if rebuild or not current or not (root / "asr.json").is_file():
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.perf_counter()
        build(root)
        print(f"built {root} in {time.perf_counter() - t0:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path(".cache/bench-full-tree"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--jobs", type=int, default=0, help="VAD threads (0: one per CPU)")
    ap.add_argument("--verify", action="store_true", help="also scan whole files and compare the segments")
    args = ap.parse_args()
    root = args.cache
    ensure_built(root, args.rebuild)
    n = sum(SUBSETS[s].declared for s in SUBSETS)

    import os

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    cmd = [sys.executable, "-m", "duplexeval", "fdb", "score", str(root), "--no-write"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    # In-process breakdown: load + checks, VAD, the rest.
    from duplexeval import vad_batched
    from duplexeval.fdb.tasks.interruption.unified import InterruptionInput, r_limit_sample
    from duplexeval.fdb.unified import score
    from duplexeval.fdb.unified.load import load_tree

    t0 = time.perf_counter()
    loaded = load_tree(root)
    t_load = time.perf_counter() - t0
    inter = [ls.input for ls in loaded.samples if isinstance(ls.input, InterruptionInput)]
    paths = [i.audio for i in inter]  # the samples' audio sources, as the scorer hands them to the VAD
    audio_s = sum(i.n_samples for i in inter) / SR
    t0, c0 = time.perf_counter(), time.process_time()
    # as the scorer does: each file scanned until its segments starting at or before R are final
    segs = vad_batched.segment_files(paths, jobs=args.jobs or None, limits=[r_limit_sample(i.R_us) for i in inter])
    t_vad, c_vad = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    score(root, write=False, segmenter=lambda ps: segs)
    t_rest = time.perf_counter() - t0  # load again + rows + statistics, VAD excluded
    print(f"samples: {n} ({len(paths)} interruption outputs, {audio_s:.0f} s of audio through VAD)")
    print(f"`duplexeval fdb score`: wall {wall:.2f} s -> {n / wall:.0f} samples/s; CPU time {cpu:.2f} s "
          f"(user+sys, all threads)")
    print(f"in process: load+checks {t_load:.2f} s, VAD wall {t_vad:.2f} s (RTF {t_vad / audio_s:.4f} of the "
          f"full outputs) CPU {c_vad:.2f} s (CPU RTF {c_vad / audio_s:.4f}), score without VAD {t_rest:.2f} s")
    from duplexeval.vad import load_sequence_vad

    model = ("silero_vad_16k_sequence.onnx (silero-vad wheel)" if load_sequence_vad()
             else "silero_vad.onnx per frame, batched")
    print(f"VAD model: {model}")
    if load_sequence_vad() is not None:  # the fallback without the silero-vad wheel, on the same files
        vad_batched.USE_SEQUENCE_MODEL = False
        t0, c0 = time.perf_counter(), time.process_time()
        segs_pf = vad_batched.segment_files(paths, jobs=args.jobs or None,
                                            limits=[r_limit_sample(i.R_us) for i in inter])
        t_pf, c_pf = time.perf_counter() - t0, time.process_time() - c0
        vad_batched.USE_SEQUENCE_MODEL = True
        print(f"VAD with the per-frame model instead (batched): wall {t_pf:.2f} s, CPU {c_pf:.2f} s; segments equal: "
              f"{segs_pf == segs}")
    # the same scan with the leading-silence skip off: what the skip saves on this tree
    vad_batched.SKIP_LEADING_SILENCE = False
    t0, c0 = time.perf_counter(), time.process_time()
    segs_noskip = vad_batched.segment_files(paths, jobs=args.jobs or None,
                                            limits=[r_limit_sample(i.R_us) for i in inter])
    t_ns, c_ns = time.perf_counter() - t0, time.process_time() - c0
    vad_batched.SKIP_LEADING_SILENCE = True
    frames_before_r = lead_before_r = 0
    for i in inter:
        a = i.audio.read_16k()
        nz = np.flatnonzero(a)
        lead = int(nz[0]) // 512 if nz.size else -(-a.size // 512)
        before_r = r_limit_sample(i.R_us) // 512 + 1
        frames_before_r += before_r
        lead_before_r += min(lead, before_r)
    print(f"leading digital silence: {lead_before_r} of the {frames_before_r} frames up to R "
          f"({lead_before_r / frames_before_r:.0%}); VAD without the silence skip: wall {t_ns:.2f} s, CPU {c_ns:.2f} "
          f"s; segments equal: {segs_noskip == segs}")
    if args.verify:
        limits = [r_limit_sample(i.R_us) for i in inter]
        t0, c0 = time.perf_counter(), time.process_time()
        full = vad_batched.segment_files(paths, jobs=args.jobs or None)
        c_full = time.process_time() - c0
        bad = sum(1 for e, f, lim in zip(segs, full, limits) if e != [(s, x) for s, x in f if s <= lim])
        print(f"whole-file VAD: wall {time.perf_counter() - t0:.2f} s, CPU {c_full:.2f} s; "
              f"{bad} of {len(paths)} files differ from the early-stopped segments")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (timings are inflated when it "
          "exceeds the CPUs)")


if __name__ == "__main__":
    main()
