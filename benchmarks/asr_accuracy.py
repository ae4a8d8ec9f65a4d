"""ASR accuracy and speed on espeak-ng speech with exact word times, in FDB-like layouts.

    .venv/bin/python benchmarks/asr_accuracy.py [--backends whisper-align,faster-whisper,pocketsphinx]
                                                [--quick] [--threads 2] [--json out.json]

Layouts (each at several voices and rates, clip lengths like FDB's): a reply after silence
(turn-taking, >= 10.4 s), a long reply cut at R in a pause between sentences (interruption, 28 s;
only words from R on count, as in the official ASR), a short acknowledgment alone (10 s), three
acknowledgments spread over 20 s (ICC-like backchannels), and sentences with numbers (10 s). Truth comes from
espeak-ng's WORD events (duplexeval.tts). Reported per backend: first-word onset error (median, p90,
max of |error|, plus the signed median), all-word onset error of matched words, WER, real-time
factor, and how often the take-turn rule (> 3 words or >= 1 s span) differs from the truth.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from dataclasses import dataclass

import numpy as np

from duplexeval.asr.base import Word
from duplexeval.asr.numbers import readings
from duplexeval.asr.registry import make_backend
from duplexeval.tts import synthesize

SR = 16000

REPLIES = [
    "Sure, I can help you with that. What time would you like to meet?",
    "That sounds like a great plan. Let me check the calendar for next week.",
    "I think the best option is the second one, because it is cheaper.",
    "Of course. The train leaves from platform three in about ten minutes.",
]
NUMBERS = [
    "The total comes to 4572 dollars and 30 cents.",
    "Your flight is at 7 fifteen, gate 23, seat 14 B.",
    "We counted 1250 people in 2019, up 12 percent.",
    "Call me back on the 3rd of May, around 2:30.",
]
ACKS = ["Yeah.", "Okay.", "Right.", "Sure thing.", "Mm-hmm.", "I see."]
LONG = ("Well, let me tell you a story about the old lighthouse by the sea. Every night the keeper climbed "
        "the stairs and lit the lamp. One winter a storm came and the ships could not find the harbor.")


@dataclass
class Item:
    """One test clip: audio, its true words (absolute times), the cut R and layout name."""

    layout: str
    audio: np.ndarray
    truth: list[Word]
    cut: float = 0.0
    voice: str = ""
    rate: int = 0


def _place(T: float, pieces: list[tuple[float, np.ndarray]]) -> np.ndarray:
    out = np.zeros(int(round(T * SR)), np.float32)
    for start, a in pieces:
        i = int(round(start * SR))
        n = min(len(a), len(out) - i)
        out[i:i + n] += a[:n]
    return out


def _words(speech, at: float) -> list[Word]:  # noqa: ANN001
    return [Word(w.text, at + w.start_s, at + w.end_s) for w in speech.words]


def build_items(quick: bool) -> list[Item]:
    """Deterministic clips: layouts x voices x rates."""
    voices = ["en-us", "en-us+f3"] if quick else ["en-us", "en-us+f3", "en-gb", "en-us+m3"]
    rates = [160] if quick else [140, 175, 210]
    items: list[Item] = []
    k = 0
    for voice in voices:
        for rate in rates:
            k += 1
            # 1. reply after silence (user turn ended at 2.0 s; the system answers 0.4-1.2 s later)
            text = REPLIES[k % len(REPLIES)]
            sp = synthesize(text, voice=voice, rate=rate)
            at = 2.0 + 0.2 * (k % 5)
            T = max(10.4, at + sp.duration_s + 1.0)  # FDB turn-taking clips are ~10 s
            items.append(Item("reply", _place(T, [(at, sp.audio)]), _words(sp, at)))
            # 2. interruption: a long reply cut at R, in the pause after word j
            sp = synthesize(LONG, voice=voice, rate=rate)
            at = 1.0
            ws = _words(sp, at)
            ends = [i for i, t in enumerate(LONG.split()[:-1]) if t.endswith(".")]  # sentence ends: real pauses
            assert len(ws) == len(LONG.split()), "espeak merged words; pick another text"
            j = ends[k % len(ends)]
            R = round(ws[j + 1].start - 0.1, 3)  # inside the ~0.35 s pause before the next sentence
            T = max(28.0, at + sp.duration_s + 1.0)  # FDB interruption clips are ~28 s
            items.append(Item("interrupt-cut", _place(T, [(at, sp.audio)]), [w for w in ws if w.start >= R], cut=R))
            # 3. a short acknowledgment alone
            sp = synthesize(ACKS[k % len(ACKS)], voice=voice, rate=rate)
            at = 1.5 + 0.3 * (k % 3)
            items.append(Item("ack", _place(10.0, [(at, sp.audio)]), _words(sp, at)))
            # 3b. backchannels through a user's monologue (ICC-like): three acks, 20 s
            acks = [synthesize(ACKS[(k + i) % len(ACKS)], voice=voice, rate=rate) for i in range(3)]
            starts = [3.0 + 0.1 * k, 9.0, 15.0 - 0.1 * k]
            items.append(Item("backchannels", _place(20.0, list(zip(starts, [a.audio for a in acks]))),
                              [w for a, st in zip(acks, starts) for w in _words(a, st)]))
            # 4. numbers
            sp = synthesize(NUMBERS[k % len(NUMBERS)], voice=voice, rate=rate)
            at = 1.0
            items.append(Item("numbers", _place(max(10.0, at + sp.duration_s + 1.0), [(at, sp.audio)]), _words(sp, at)))
            for it in items:
                if not it.voice:
                    it.voice, it.rate = voice, rate
    # silence and noise: any word is a false alarm
    rng = np.random.default_rng(0)
    items.append(Item("silence", np.zeros(10 * SR, np.float32), []))
    items.append(Item("noise", (rng.standard_normal(10 * SR) * 0.01).astype(np.float32), []))
    return items


def spoken(text: str) -> list[str]:
    """A written word in spoken form ("12%" -> twelve percent, "Mm-hmm." -> mm hmm), as WER compares it."""
    r = readings(text)
    return r[0] if r else []


def tokens(words: list[Word]) -> list[tuple[str, Word]]:
    """Spoken-form tokens, each carrying the word it came from (one word may give several tokens)."""
    out: list[tuple[str, Word]] = []
    for w in words:
        for t in spoken(w.text):
            out.append((t, w))
    return out


def wer_counts(ref: list[str], hyp: list[str]) -> tuple[int, int]:
    """(word edits, reference length): Levenshtein distance on tokens."""
    return lattice_edits(ref, [[[t]] for t in hyp]), len(ref)


def lattice_edits(ref: list[str], hyp_readings: list[list[list[str]]]) -> int:
    """Fewest word edits from `ref` to any choice of one reading per hypothesis word.

    A written word can stand for several spoken forms ("715": "seven hundred fifteen" or "seven
    fifteen"); this scores the one nearest the reference, so a number written another way is not an
    error. Edit distance from a string to a chain of alternatives, one DP row per node.
    """
    cur = list(range(len(ref) + 1))
    for alts in hyp_readings:
        if not alts:
            continue
        best: list[int] | None = None
        for reading in alts:
            row = cur
            for tok in reading:
                new = [row[0] + 1]
                for i in range(1, len(ref) + 1):
                    new.append(min(row[i] + 1, new[i - 1] + 1, row[i - 1] + (ref[i - 1] != tok)))
                row = new
            best = row if best is None else [min(a, b) for a, b in zip(best, row)]
        cur = best  # type: ignore[assignment]
    return cur[len(ref)]


def takes_turn(words: list[Word]) -> bool:
    """The official take-turn rule: a span >= 1 s, or more than 3 words."""
    if not words:
        return False
    end = words[-1].end if words[-1].end is not None else words[-1].start
    return (end - words[0].start) >= 1.0 or len(words) > 3


def evaluate(backend_name: str, items: list[Item], threads: int, verbose: bool = False,
             model: str | None = None) -> dict:
    be = make_backend(backend_name, model=model, threads=threads)
    t0 = time.perf_counter()
    be.load()
    load_s = time.perf_counter() - t0
    first_err: list[float] = []
    all_err: list[float] = []
    edits = ref_len = 0
    edits_any = 0
    tor_diff = 0
    missed_first = spurious = 0
    proc_s = audio_s = cpu_s = 0.0
    per_layout: dict[str, list[float]] = {}
    wer_by: dict[str, list[int]] = {}
    for it in items:
        audio = it.audio[int(it.cut * SR):]
        t = time.perf_counter()
        c = time.process_time()
        hyp = be.transcribe(audio, offset_s=it.cut)
        proc_s += time.perf_counter() - t
        cpu_s += time.process_time() - c
        if verbose:
            print(f"[{it.layout}] truth: {' '.join(w.text for w in it.truth)}\n    hyp: {' '.join(w.text for w in hyp)}"
                  f"\n    first: {it.truth[0].start if it.truth else None} vs {hyp[0].start if hyp else None}",
                  file=sys.stderr)
        audio_s += audio.shape[0] / SR
        if takes_turn(hyp) != takes_turn(it.truth):
            tor_diff += 1
        if not it.truth:
            spurious += bool(hyp)
            continue
        if not hyp:
            missed_first += 1
        else:
            e = hyp[0].start - it.truth[0].start
            first_err.append(e)
            per_layout.setdefault(it.layout, []).append(e)
        rt, ht = tokens(it.truth), tokens(hyp)
        ed, n = wer_counts([t for t, _ in rt], [t for t, _ in ht])
        edits += ed
        ref_len += n
        edits_any += lattice_edits([t for t, _ in rt], [readings(w.text) for w in hyp])
        for key in (f"voice {it.voice}", f"rate {it.rate}", f"layout {it.layout}"):
            acc = wer_by.setdefault(key, [0, 0])
            acc[0] += ed
            acc[1] += n
        sm = difflib.SequenceMatcher(a=[t for t, _ in rt], b=[t for t, _ in ht], autojunk=False)
        seen: set[int] = set()
        for blk in sm.get_matching_blocks():
            for i in range(blk.size):
                rw, hw = rt[blk.a + i][1], ht[blk.b + i][1]
                if id(rw) in seen:  # a multi-token word counts once
                    continue
                seen.add(id(rw))
                all_err.append(hw.start - rw.start)
    fe = np.abs(np.array(first_err)) * 1000
    ae = np.abs(np.array(all_err)) * 1000
    return {
        "backend": backend_name,
        "items": len(items),
        "audio_s": round(audio_s, 1),
        "first_word_ms": {"n": int(fe.size), "median": _r(np.median(fe)), "p90": _r(np.percentile(fe, 90)),
                          "max": _r(fe.max()), "signed_median": _r(np.median(np.array(first_err)) * 1000)},
        "first_word_missed": missed_first,
        "all_words_ms": {"n": int(ae.size), "median": _r(np.median(ae)), "p90": _r(np.percentile(ae, 90)),
                         "max": _r(ae.max()), "signed_median": _r(np.median(np.array(all_err)) * 1000)},
        "wer": round(edits / max(1, ref_len), 4),
        "wer_any_reading": round(edits_any / max(1, ref_len), 4),
        "rtf": round(proc_s / audio_s, 4),
        "cpu_s_per_audio_s": round(cpu_s / audio_s, 4),
        "load_s": round(load_s, 2),
        "takeover_rule_differs": tor_diff,
        "words_on_silence_or_noise": spurious,
        "first_word_ms_by_layout": {k: _r(np.median(np.abs(v)) * 1000) for k, v in sorted(per_layout.items())},
        "wer_by": {k: round(e / max(1, n), 3) for k, (e, n) in sorted(wer_by.items())},
    }


def _r(x: float) -> float:
    return round(float(x), 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="whisper-align,faster-whisper,pocketsphinx")
    ap.add_argument("--quick", action="store_true", help="2 voices x 1 rate instead of 4 x 3")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--model", default=None, help="model directory for the Whisper backends (default: the bundled one)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every transcript")
    args = ap.parse_args(argv)
    items = build_items(args.quick)
    print(f"{len(items)} clips, {sum(i.audio.shape[0] for i in items) / SR:.1f} s of audio", file=sys.stderr)
    results = [evaluate(b, items, args.threads, args.verbose, args.model) for b in args.backends.split(",")]
    print("| backend | first-word onset error ms: median / p90 / max (signed median) | all-word onset error ms: median "
          "/ p90 (signed median) | WER (first reading / any reading) | RTF (wall) | CPU s per audio s | take-turn rule "
          "differs | words on silence/noise |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        f, a = r["first_word_ms"], r["all_words_ms"]
        print(f"| {r['backend']} | {f['median']} / {f['p90']} / {f['max']} ({f['signed_median']:+}) | "
              f"{a['median']} / {a['p90']} ({a['signed_median']:+}) | {100 * r['wer']:.1f}% / "
              f"{100 * r['wer_any_reading']:.1f}% | {r['rtf']:.3f} | {r['cpu_s_per_audio_s']:.3f} | "
              f"{r['takeover_rule_differs']}/{r['items']} | {r['words_on_silence_or_noise']}/2 |")
    for r in results:
        print(f"{r['backend']}: first-word |error| median by layout (ms) {r['first_word_ms_by_layout']}; "
              f"missed first words {r['first_word_missed']}; load {r['load_s']} s; WER by {r['wer_by']}",
              file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
